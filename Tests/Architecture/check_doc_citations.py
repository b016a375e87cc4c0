#!/usr/bin/env python3
"""Citations of the docs, checked: wherever code, tests, benches, migrations, deployment
files or docs cite a file of docs/ or Deploy/README.md (the path, a comma, the section's
title in double quotes, the title perhaps wrapped over comment lines), that file must exist
and have a heading, or a paragraph's bold lead, that contains the title. The performance log
moves between files as it grows (docs/performance.md became a summary, each round a file of
its own), other docs get sections renamed, and a comment's "why" would otherwise point at
nothing. A path cited without a title must exist. The summary's relative links into the
log are checked too. Run by `make test`; needs no build."""
import os
import re
import sys

SEARCHED = ["Sources", "Tests", "Bench", "Migrations", "Deploy", "docs", "README.md", "Makefile"]
TEXT = (".swift", ".py", ".sh", ".sql", ".md", ".template", ".conf", ".yaml", ".yml", ".c", ".h",
        ".service", ".txt", "Makefile")
# A line break inside a title, with the next line's comment marker (Swift, SQL, shell/Python).
BREAK = r"\n[ \t]*(?:///|//|--|#)?[ \t]*"
# After the path: a comma or an opening parenthesis, then the title in double quotes.
TITLE = r"(?:,?(?:[ \t]|" + BREAK + r")*\(?\"((?:[^\"\n]|" + BREAK + r"){1,200}?)\")?"
# The path from the repository's root, or a Markdown link to it.
CITATION = re.compile(r"((?:docs/[\w/.-]+|Deploy/README)\.md)(?:\]\([\w./-]+\))?" + TITLE)
# A Markdown link relative to the citing file (the summary's "[round-07](performance/…)").
LINK = re.compile(r"\]\(((?:\.\./)?(?:performance/)?[\w.-]+\.md)\)" + TITLE)
LOG = os.path.join("docs", "performance")


def headings(path, cache={}):
    """The file's headings and its paragraphs' bold leads (operations.md names its
    settings that way: "**nchan**", "**nginx runs one worker process**")."""
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        cache[path] = [line.lstrip("#").strip() for line in text.splitlines() if re.match(r"#+ ", line)] + \
            re.findall(r"\*\*([^*\n]+)\*\*", text)
    return cache[path]


def files(root):
    for top in SEARCHED:
        start = os.path.join(root, top)
        if os.path.isfile(start):
            yield start
        for folder, dirs, names in os.walk(start):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in names:
                if name.endswith(TEXT):
                    yield os.path.join(folder, name)


def problems(root):
    found = []
    for path in files(root):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        links = [(m, os.path.relpath(os.path.normpath(os.path.join(os.path.dirname(path), m.group(1))), root))
                 for m in LINK.finditer(text)]
        for m, cited in [(m, m.group(1)) for m in CITATION.finditer(text)] + \
                [(m, c) for m, c in links if c == LOG + ".md" or c.startswith(LOG + os.sep)]:
            title = m.group(2)
            where = f"{os.path.relpath(path, root)}:{text.count(chr(10), 0, m.start()) + 1}"
            target = os.path.join(root, cited)
            if not os.path.isfile(target):
                found.append(f"{where}: {cited} does not exist")
            elif title is not None:
                title = re.sub(r"\s*" + BREAK, " ", title)
                if not any(title in h for h in headings(target)):
                    found.append(f'{where}: {cited} has no heading containing "{title}"')
    return found


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = problems(root)
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"{len(found)} citation(s) point at no section", file=sys.stderr)
        return 1
    print("doc citations: every cited section exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
