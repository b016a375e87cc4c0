#!/usr/bin/env python3
"""The layers of Package.swift, checked: every target sits on a layer, depends only on
targets of lower layers, and the worker links none of the command-line tool's code.
(The compiler already refuses an import that is not a declared dependency: the Makefile
builds with --explicit-target-dependency-import-check error.)  Run by `make test`;
reads `swift package dump-package`, so it needs no build."""
import json
import os
import subprocess
import sys

LAYERS = {
    0: {"CFastCGI", "CLibPQ", "CSodium", "CCurl", "CZlib"},
    1: {"FastCGI", "Database", "TidewayJSON", "Support", "TidewayModels"},
    2: {"Schema", "Mail", "Drawing", "TidewayClient"},
    3: {"Web"},
    4: {"Accounts", "Sync"},
    5: {"Events", "Blobs", "Chat", "Dashboards", "Administration", "Teams"},
    6: {"Boardings", "Patrol", "EventPublisher", "Operations", "Demo", "TidewayImport", "Backup"},
    7: {"tideway-worker", "tideway", "tideway-device"},
}
# Code only the operator's tool runs: never linked into the worker.
CLI_ONLY = {"Patrol", "EventPublisher", "Operations", "Demo", "TidewayImport", "Backup"}
# The client stack an app links (issue 16): apart from the C shim for libcurl, it depends on
# no server target, and no server target depends on it.
CLIENT = {"TidewayModels", "TidewayClient", "tideway-device"}
CLIENT_MAY_USE = CLIENT | {"CCurl"}


def layer_of(name):
    return next((n for n, names in LAYERS.items() if name in names), None)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    package = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=root, check=True,
                                        capture_output=True, text=True).stdout)
    problems = []
    deps = {}
    for target in package["targets"]:
        name = target["name"]
        local = [d["byName"][0] for d in target.get("dependencies", []) if "byName" in d]
        deps[name] = local
        if target["type"] == "test":
            if not name.endswith("Tests"):
                problems.append(f"test target {name}: name it after the target it tests (<Target>Tests)")
            continue
        layer = layer_of(name)
        if layer is None:
            problems.append(f"{name}: not on a layer; add it to Package.swift's picture and to LAYERS here")
            continue
        for dep in local:
            dep_layer = layer_of(dep)
            if dep_layer is not None and dep_layer >= layer:
                problems.append(f"{name} (layer {layer}) depends on {dep} (layer {dep_layer}): imports point down only")
    for name, local in deps.items():
        if name in CLIENT:
            for dep in local:
                if dep not in CLIENT_MAY_USE:
                    problems.append(f"client target {name} depends on server target {dep}")
        elif not name.endswith("Tests"):
            for dep in local:
                if dep in CLIENT:
                    problems.append(f"server target {name} depends on client target {dep}")
    for folder in sorted(os.listdir(os.path.join(root, "Sources"))):
        if folder not in deps:
            problems.append(f"Sources/{folder}: a folder that is no target")
    seen, stack = set(), ["tideway-worker"]
    while stack:
        for dep in deps.get(stack.pop(), []):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    for name in sorted(seen & CLI_ONLY):
        problems.append(f"tideway-worker links {name}, which only the command-line tool uses")
    for problem in problems:
        print("LAYERS:", problem)
    if problems:
        return 1
    print(f"layers: {sum(1 for t in package['targets'] if t['type'] != 'test')} targets on {len(LAYERS)} layers, "
          f"imports point down, the worker links no CLI-only code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
