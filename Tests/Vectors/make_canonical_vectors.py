"""The inputs of Tests/Vectors/canonical-text.json (Tests/TidewayJSONTests/CanonicalVectorTests.swift):
hand-picked edge cases of RFC 8259 and of the parser's limits, then seeded random documents
written with random whitespace, key order and escapes, then some of those truncated or with a
byte changed. The inputs are written to stdout, each as its length (4 bytes, little-endian)
and its bytes; the expected outputs (the
canonical text, or the error's kind and message) were made from these inputs by the parser and
serializer as they were before the nineteenth round (main at aae6c36, through
Bench/json_cpu/cpu.swift's `vectors` mode; docs/performance/round-19.md), so that any
later change to either keeps every output byte.

    python3 Tests/Vectors/make_canonical_vectors.py > inputs.bin
    json-cpu vectors inputs.bin Tests/Vectors/canonical-text.json"""
import random
import sys

EDGE = [
    b"0", b"-0", b"-0.0", b"0.0", b"1.0", b"1E2", b"1e+2", b"1e-2", b"1e400", b"-1e400", b"1e-400", b"-1e-400",
    b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808", b"-9223372036854775809",
    b"123456789012345678901234567890", b"0.1", b"1.5e308", b"2.2250738585072014e-308", b"4.9e-324", b"5e-324",
    b"1e16", b"10000000000000000", b"12345678901234567.0", b"0.30000000000000004", b"100", b"-100e-2",
    b"00", b"01", b"-", b"--1", b"1.", b".5", b"1e", b"1e+", b"+1", b"0x10", b"1.e5", b"NaN", b"Infinity", b"-Infinity",
    b"true", b"false", b"null", b"tru", b"nul", b"fals", b"True", b"nulll", b"", b" ", b"\t\n\r 1 \n",
    b'"\\u00e9"', b'"\\u00E9"', b'"\\ud83d\\udc1f"', b'"\\ud83d"', b'"\\udc1f"', b'"\\ud83d\\u0041"', b'"\\ud83dx"',
    b'"\\u0000"', b'"\\u001f"', b'"\\/"', b'"\\b\\f\\n\\r\\t\\"\\\\"', b'"\\x"', b'"\\u12"', b'"\\u12g4"', b'"\\',
    b'"a\x01b"', b'"a\x7fb"', b'"tab\there"', b'"\xc3\xa9"', b'"\xc0\x80"', b'"\xed\xa0\x80"', b'"\xf5\x80\x80\x80"',
    b'"\xff"', b'"\xe2\x82"', b'\xef\xbb\xbf{}', b'"unterminated', b'"caf\\u00e9 \xf0\x9f\x90\x9f"',
    b'{"a":1,"a":2}', b'{"a":1,"b":2,"a":3}', b'{"a":1,"a":2,}', b'{"a":1,"a":2', b'{"a":[1,2,],"a":1}',
    b'{"b":{"x":1,"x":2},"a":1}', b'{"\\u0061":1,"a":2}', b"[1,2,]", b"[,1]", b"[1 2]", b"{,}", b'{"a" 1}',
    b'{"a":1,}', b'{1:2}', b"[", b"]", b"{", b"}", b"[]", b"{}", b"[[]]", b"[{}]", b" [ 1 , 2 ] ", b"[1]x", b"{} {}",
    '{"é":1,"z":2,"Z":3,"e\u0301":4,"\U0001F41F":5,"\uFFFF":6,"":7," ":8,"a":9,"aa":10,"a\u0000":11}'.encode().replace(b"\x00", b"\\u0000"),
    '{"\u00e9":1,"e\u0301":2,"\\u00e9x":3}'.encode(),
    b"[" * 32 + b"]" * 32, b"[" * 33 + b"]" * 33, b'{"a":' * 32 + b"1" + b"}" * 32, b'{"a":' * 33 + b"1" + b"}" * 33,
    b"[" * 200, b'"' + b"x" * 300 + b'"', b"[1e309,1]", b"[-0,0,-0.0,0.0]", b"[1,1.0,1e0,10e-1]",
]


def random_string(rng):
    pieces = []
    for _ in range(rng.randint(0, 12)):
        kind = rng.random()
        if kind < 0.5:
            pieces.append(rng.choice("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 _-:./"))
        elif kind < 0.6:
            pieces.append(rng.choice(["é", "中", "🐟", "ñ", "e\u0301", "\u2028", "ß", "Ω"]))
        elif kind < 0.75:
            pieces.append(rng.choice(['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]))
        else:
            code = rng.choice([rng.randint(1, 0x7F), rng.randint(0x80, 0xD7FF), rng.randint(0xE000, 0xFFFF), rng.randint(0x10000, 0x10FFFF)])
            if code >= 0x10000:
                high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
                pieces.append(f"\\u{high:04x}\\u{low:04X}")
            else:
                pieces.append(f"\\u{code:04x}" if rng.random() < 0.5 else f"\\u{code:04X}")
    return '"' + "".join(pieces) + '"'


def random_number(rng):
    kind = rng.random()
    if kind < 0.3:
        return str(rng.randint(-10**6, 10**6))
    if kind < 0.4:
        return str(rng.choice([1, -1]) * rng.randint(0, 10**25))
    if kind < 0.7:
        return repr(rng.uniform(-180, 180))
    if kind < 0.8:
        return f"{rng.randint(-999, 999)}.{rng.randint(0, 10**rng.randint(1, 20))}"
    mantissa = f"{rng.randint(0, 9)}" + (f".{rng.randint(0, 99999)}" if rng.random() < 0.5 else "")
    return f"{'-' if rng.random() < 0.3 else ''}{mantissa}{rng.choice('eE')}{rng.choice(['', '+', '-'])}{rng.randint(0, 400)}"


def ws(rng):
    return "".join(rng.choice(" \t\n\r") for _ in range(rng.choice([0, 0, 0, 1, 2])))


def random_value(rng, depth):
    kind = rng.random()
    if depth > 3 or kind < 0.5:
        return rng.choice([random_string, random_string, random_number])(rng) if rng.random() < 0.9 else rng.choice(["true", "false", "null"])
    if kind < 0.7:
        return "[" + ws(rng) + ("," + ws(rng)).join(random_value(rng, depth + 1) + ws(rng) for _ in range(rng.randint(0, 5))) + "]"
    keys = [random_string(rng) for _ in range(rng.randint(0, 6))]
    if keys and rng.random() < 0.05:
        keys.append(rng.choice(keys))  # a duplicate key
    return "{" + ws(rng) + ("," + ws(rng)).join(f"{k}{ws(rng)}:{ws(rng)}{random_value(rng, depth + 1)}{ws(rng)}" for k in keys) + "}"


def main():
    rng = random.Random(19)
    inputs = list(EDGE)
    documents = [random_value(rng, 0).encode() for _ in range(600)]
    inputs += documents
    for text in rng.sample(documents, 200):
        mutated = bytearray(text)
        choice = rng.random()
        if choice < 0.4 and len(mutated) > 1:
            del mutated[rng.randint(1, len(mutated) - 1):]
        elif mutated:
            at = rng.randint(0, len(mutated) - 1)
            byte = rng.choice([0x00, 0x01, 0x22, 0x2C, 0x3A, 0x5C, 0x5D, 0x7D, 0x80, 0xC3, 0xFF, rng.randint(0, 255)])
            if choice < 0.7:
                mutated[at] = byte
            else:
                mutated.insert(at, byte)
        inputs.append(bytes(mutated))
    for text in inputs:
        sys.stdout.buffer.write(len(text).to_bytes(4, "little") + text)


main()
