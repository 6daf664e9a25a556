#!/usr/bin/python3
"""Write the seed corpora of the fuzz targets under tests/fuzz/corpus/.

Seeds are named after what they exercise. The reference and method seeds
come from the test vectors (tests/vectors/); the others are every command,
every error and the calls of the spec. Run it again after changing it: it
rewrites its own seeds (named seed-*) and leaves every other file (the
regression seeds of crashes found, named crash-*) alone.

    /usr/bin/python3 tests/fuzz/make_corpus.py
"""

import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
D = "\u2020"                     # the dagger


def j(value):
    return json.dumps(value, ensure_ascii=False)


SEEN = set()


def write(target, name, content):
    """One seed; a content already written for the target is skipped."""
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    if (target, content) in SEEN:
        return
    SEEN.add((target, content))
    with open(os.path.join(folder, "seed-" + name), "wb") as handle:
        handle.write(content)


def clear(target):
    folder = os.path.join(HERE, "corpus", target)
    if os.path.isdir(folder):
        for name in os.listdir(folder):
            if name.startswith("seed-"):
                os.unlink(os.path.join(folder, name))


def vectors(name):
    with open(os.path.join(ROOT, "tests", "vectors", name)) as handle:
        return json.load(handle)


# ---------------------------------------------------------------------------
# fuzz_reference: expressions

def references():
    clear("fuzz_reference")
    count = 0
    for case in vectors("references.json"):
        write("fuzz_reference", "vector-%02d" % count, case["expr"])
        count += 1
    for case in vectors("resolve.json"):
        for op in case["ops"]:
            for key in ("resolve", "output"):
                if key in op:
                    write("fuzz_reference", "resolve-%02d" % count, op[key])
                    count += 1
    extra = {
        "escaped": D + D + "state.x",
        "quoted-escape": D + 'state["a\\"b"].c',
        "quoted-unicode": D + 'state["\\u00e9t\\u00e9"]',
        "quoted-empty": D + 'state[""]',
        "quoted-empty-nested": D + 'state[""].a[""]',
        "key-nbsp": D + "state.a\u00a0b",
        "key-ideographic-space": D + "state.a\u3000",
        "key-line-separator-before-or": D + "state.a\u2028|| " + D + "b",
        "quoted-nbsp": D + 'state["a\u00a0b"]',
        "key-zero-width-space": D + "state.a\u200bb",
        "quoted-nul": D + 'state["a\\u0000b"]',
        "index-huge": D + "state.items[99999999999999999999999]",
        "index-dotted-huge": D + "state.items.18446744073709551616",
        "leading-zero-key": D + "state.007",
        "zero-key": D + "state.0",
        "instance-read": D + "user || " + D + "state.user.name",
        "gate": D + "state.user && " + D + "data.list.1",
        "append-output": D + "state.items.-.title",
        "synonyms": D + "state.a <|> " + D + "state.b *> " + D + "state.c",
        "no-space": D + "state.a||" + D + "state.b&&" + D + "state.c",
        "tabs": D + "state.a\t||\t" + D + "state.b",
        "trailing-space": D + "state.a ",
        "leading-space": " " + D + "state.a",
        "weird-key": D + 'state["weird key"].x',
        "utf8-key": D + "state.caf\u00e9.\u00fc",
        "bad-utf8": (D + "state.").encode() + b"\xff\xfe",
        "many-segments": D + "state" + ".a" * 64,
        "too-many-segments": D + "state" + ".a" * 65,
        "many-operands": " && ".join([D + "s.a"] * 64),
        "too-many-operands": " || ".join([D + "s.a"] * 65),
        "dagger-in-key": D + "state.a" + D + "b",
        "half-dagger": b"\xe2\x80",
        "kind-dash": D + "_k-1.x",
        "bracket-dot": D + "state[0].-",
        "star": D + "state.a *",
        "lt": D + "state.a < " + D + "state.b",
    }
    for name, text in extra.items():
        write("fuzz_reference", name, text)


# ---------------------------------------------------------------------------
# fuzz_call: calls

def calls():
    clear("fuzz_call")
    seeds = {
        "fire-and-forget": {"_tool": "search", "query": "weather"},
        "output": {"_tool": "summarize", "_outputPath": D + "state.user.summary",
                   "text": D + "state.user.bio"},
        "alternatives": {"_tool": "verify", "_outputPath": D + "state.user.verified || " + D + "state.user.failed"},
        "fan-out": {"_tool": "t", "_outputPath": D + "state.user.summary && " + D + "state.audit.summary"},
        "synonyms": {"_tool": "t", "_outputPath": D + "state.ok <|> " + D + "state.err *> " + D + "state.log"},
        "push": {"_tool": "t", "_outputPath": D + "state.items.-", "_outputMethod": "push"},
        "every-meta": {"_tool": "t", "_outputPath": D + "data.x", "_outputMethod": "merge",
                       "_instance": "i1", "_id": "key-1", "_timeout": 5000,
                       "_retry": {"max_attempts": 5, "initial_ms": 10, "backoff": 1.5, "max_ms": 100}},
        "nested-refs": {"_tool": "t", "a": {"b": [D + "state.user.name", {"c": D + "data.x"}]},
                        "d": D + "state.items[1] || " + D + "state.none"},
        "escaped": {"_tool": "t", "literal": D + D + "state.x", "plain": "x" + D},
        "unresolved": {"_tool": "t", "a": D + "state.missing"},
        "gate": {"_tool": "t", "a": D + "state.user && " + D + "state.items.0"},
        "instance-read": {"_tool": "t", "_instance": "i1", "a": D + "user.name", "b": D + "state.user"},
        "meta-nested-not-meta": {"_tool": "t", "x": {"_tool": 5, "_outputPath": 7}},
        "bad-no-tool": {"query": "x"},
        "bad-tool-type": {"_tool": 7},
        "bad-tool-empty": {"_tool": ""},
        "bad-tool-long": {"_tool": "t" * 257},
        "bad-method": {"_tool": "t", "_outputPath": D + "s.a", "_outputMethod": "replace"},
        "bad-method-type": {"_tool": "t", "_outputMethod": 1},
        "bad-output-path": {"_tool": "t", "_outputPath": "state.a"},
        "bad-output-type": {"_tool": "t", "_outputPath": ["x"]},
        "bad-reference": {"_tool": "t", "a": D + "state..a"},
        "bad-reference-deep": {"_tool": "t", "a": [{"b": D + "1x"}]},
        "bad-instance": {"_tool": "t", "_instance": ""},
        "bad-id": {"_tool": "t", "_id": "k" * 129},
        "bad-timeout": {"_tool": "t", "_timeout": -5},
        "bad-timeout-type": {"_tool": "t", "_timeout": "5"},
        "bad-retry": {"_tool": "t", "_retry": {"max_attempts": 0}},
        "bad-retry-type": {"_tool": "t", "_retry": [1]},
        "bad-retry-backoff": {"_tool": "t", "_retry": {"backoff": 0.5, "max_ms": -1}},
        "append-in-params": {"_tool": "t", "a": D + "state.items.-"},
        "trace": {"_tool": "t", "_trace": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
        "bad-trace-upper": {"_tool": "t", "_trace": "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"},
        "bad-trace-zero": {"_tool": "t", "_trace": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"},
        "bad-trace-type": {"_tool": "t", "_trace": 1},
    }
    for name, call in seeds.items():
        write("fuzz_call", name, j(call))
    raw = {
        "not-object": b"[1, 2]",
        "scalar": b"42",
        "deep": b"[" * 64 + b"]" * 64,
        "too-deep": b"[" * 65 + b"]" * 65,
        "duplicate-keys": b'{"_tool": "a", "_tool": "b"}',
        "bad-utf8": b'{"_tool": "\xff"}',
        "nul": b'{"_tool": "a\\u0000b"}',
        "big-int": b'{"_tool": "t", "n": 18446744073709551616}',
        "min-int": b'{"_tool": "t", "n": -9223372036854775808}',
        "big-ints-strings-error": b'{"_tool": "t", "n": [99999999999999999999, "\\"9",'
                                  b' -99999999999999999999999], "x": }',
        "int-beyond-double": b'{"_tool": "t", "n": 1' + b"0" * 400 + b'}',
        "reals": b'{"_tool": "t", "n": [1e308, -0.0, 1.5e-300]}',
        "surrogates": b'{"_tool": "t", "s": "\\ud83d\\ude00", "lone": "\\ud800"}',
        "trailing": b'{"_tool": "t"} x',
        "empty": b"",
        "trace-nul": b'{"_tool": "t", "_trace": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\\u0000"}',
    }
    for name, data in raw.items():
        write("fuzz_call", name, data)

# ---------------------------------------------------------------------------
# fuzz_scan: JSON texts, for act_scan against act_json_parse

def c_literals(path):
    """Every C string literal in a file (adjacent ones joined), as bytes."""
    text = open(path, encoding="utf-8").read()
    found = []
    for match in re.finditer(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*', text):
        pieces = re.findall(r'"((?:[^"\\\n]|\\.)*)"', match.group(0))
        raw = "".join(pieces).encode()
        value = re.sub(rb'\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)', c_escape, raw)
        found.append(value)
    return found


def c_escape(match):
    code = match.group(1)
    if code[:1] == b"x":
        return bytes([int(code[1:], 16)])
    if code[:1].isdigit():
        return bytes([int(code, 8) & 0xFF])
    return {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"f": b"\f", b"b": b"\b",
            b"a": b"\a", b"v": b"\v", b"0": b"\0"}.get(code, code)


def scan_edge_cases():
    """Hand-made texts at every rule of jansson's that act_scan mirrors."""
    depth = 64                  # ACT_MAX_JSON_DEPTH
    cases = {
        "empty": b"", "spaces": b" \t\r\n", "formfeed": b"\f1", "nbsp": b"\xc2\xa01",
        "bom": b"\xef\xbb\xbf{}", "bom-string": b'"\xef\xbb\xbf"',
        "trailing": b"{} x", "two-values": b"1 2", "trailing-comma": b"[1,]",
        "trailing-comma-object": b'{"a":1,}', "missing-colon": b'{"a" 1}',
        "number-key": b"{1:2}", "unclosed": b'{"a":[1,{"b":', "closed-twice": b"[1]]",
        "nul-after-number": b"1\0", "nul-after-true": b"[true\0,false\0,null\0]",
        "nul-after-real": b'{"a":-1.5e-3\0}', "two-nuls": b"1\0\0", "nul-after-space": b"1 \0",
        "nul-after-string": b'"a"\0', "nul-after-array": b"[1]\0", "nul-in-string": b'"a\0b"',
        "nul-alone": b"\0", "nul-between-digits": b"[1\0" b"2]",
    }
    numbers = [b"0", b"-0", b"-0.0", b"0e0", b"1E+2", b"1e-2", b"1e400", b"-1e400", b"1e-400",
               b"-1e-400", b"9223372036854775807", b"9223372036854775808",
               b"-9223372036854775808", b"-9223372036854775809", b"18446744073709551616",
               b"01", b"-01", b"00", b"1.", b"1.e5", b".5", b"+1", b"-", b"1e", b"1e+",
               b"0x10", b"1-2", b"1.5.3", b"1e308", b"1.7976931348623157e308",
               b"1.7976931348623159e308", b"0.0001797693134862316e312", b"1e0000000000308",
               b"0.0e999999999999999999999", b"123456789012345678901234567890e280",
               b"-" + b"9" * 400, b"0." + b"0" * 400 + b"1e400", b"NaN", b"Infinity", b"-Infinity"]
    for index, number in enumerate(numbers):
        cases["number-%02d" % index] = number
        cases["number-in-array-%02d" % index] = b"[" + number + b"]"
    escapes = [b'\\"', b"\\\\", b"\\/", b"\\b", b"\\f", b"\\n", b"\\r", b"\\t", b"\\u0041",
               b"\\u00e9", b"\\u20AC", b"\\u2020", b"\\uFFFF", b"\\u0000", b"\\ud83d\\ude00",
               b"\\uD83D\\uDE00", b"\\ud800", b"\\udc00", b"\\udc00\\ud800", b"\\ud800\\ud800",
               b"\\ud800\\u0041", b"\\ud800x", b"\\u12", b"\\u12g4", b"\\a", b"\\x41", b"\\'",
               b"\\ ", b"\\"]
    for index, escape in enumerate(escapes):
        cases["escape-%02d" % index] = b'"' + escape + b'"'
        cases["escape-key-%02d" % index] = b'{"' + escape + b'":1}'
        cases["escape-dagger-%02d" % index] = b'["\\u2020' + escape + b'"]'
    utf8 = [b"\xc3\xa9", b"\xe2\x80\xa0", b"\xf0\x9f\x98\x80", b"\x7f", b"\xc0\xaf", b"\xc1\xbf",
            b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
            b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\x80", b"\xff", b"\xe2\x80", b"\xc3"]
    for index, chars in enumerate(utf8):
        cases["utf8-%02d" % index] = b'"' + chars + b'"'
        cases["utf8-key-%02d" % index] = b'{"' + chars + b'":"' + D.encode() + chars + b'"}'
        cases["utf8-outside-%02d" % index] = b"[1," + chars + b"]"
    for byte in range(0x20):
        cases["control-%02x" % byte] = b'"a' + bytes([byte]) + b'"'
    for name, (open_, inner, close) in {"arrays": (b"[", b"", b"]"),
                                        "objects": (b'{"a":', b"1", b"}"),
                                        "mixed": (b'[{"k":', b'"' + D.encode() + b'x"', b"}]"),
                                        "dup-at-depth": (b'{"k":1,"j":', b'{"d":1,"d":2}', b"}")}.items():
        for level in (depth - 1, depth, depth + 1, 2049):
            cases["depth-%s-%d" % (name, level)] = open_ * level + inner + close * level
    many = ",".join('"k%d":%d' % (i, i) for i in range(20))
    cases.update({
        "dup": b'{"a":1,"a":2}', "dup-escaped": b'{"a":1,"\\u0061":2}',
        "dup-deep": b'{"x":[{"y":{"k":1,"k":null}}]}', "dup-siblings-ok": b'{"a":{"k":1},"b":{"k":1}}',
        "dup-large": ("{" + many + ',"k\\u0031\\u0037":0}').encode(),
        "large-ok": ("{" + many + "}").encode(),
        "dagger-key-only": ('{"' + D + 'k":1}').encode(),
        "dagger-literal": j({"_tool": "t", "a": D + D + "x", "b": "x" + D, "c": [D, D + "s"]}).encode(),
        "dagger-top-string": ('"' + D + 'state.x"').encode(),
        "literals": b"[true,false,null,truex,nul]", "literal-case": b"True",
    })
    return cases


def scans():
    clear("fuzz_scan")
    target = "fuzz_scan"
    for name in ("references.json", "resolve.json"):
        for index, case in enumerate(vectors(name)):
            write(target, "%s-%02d" % (name[:-5], index), j(case))
            write(target, "%s-%02d-ascii" % (name[:-5], index), json.dumps(case, indent=1))
            if "expr" in case:
                write(target, "%s-%02d-call" % (name[:-5], index),
                      j({"_tool": "t", "_outputPath": case["expr"], "p": [case["expr"]]}))
    literals = []
    for name in ("test_bad_input.c", "bad_input_support.h", "test_bad_input_calls.c",
                 "test_bad_input_contexts.c"):
        literals += c_literals(os.path.join(ROOT, "tests", "unit", name))
    for index, literal in enumerate(literals):
        write(target, "bad-input-%03d" % index, literal)
    for name, text in scan_edge_cases().items():
        write(target, name, text)


# ---------------------------------------------------------------------------
# fuzz_schema: a schema's line, then an instance (the suite's cases, ours)

def schemas():
    clear("fuzz_schema")
    sources = [os.path.join(ROOT, "tests", "schema", "2020-12", name)
               for name in sorted(os.listdir(os.path.join(ROOT, "tests", "schema", "2020-12")))]
    suite = "/usr/share/json-schema-test-suite/tests/draft7"
    for name in ("properties", "required", "enum", "const", "uniqueItems", "pattern",
                 "patternProperties", "additionalProperties", "type", "multipleOf"):
        if os.path.exists(os.path.join(suite, name + ".json")):
            sources.append(os.path.join(suite, name + ".json"))
    for source in sources:
        base = os.path.basename(source)[:-5]
        for group_index, group in enumerate(json.load(open(source, encoding="utf-8"))):
            for index, test in enumerate(group["tests"]):
                schema = j(group["schema"])
                write("fuzz_schema", "%s-%02d-%02d" % (base, group_index, index),
                      schema + "\n" + json.dumps(test["data"], indent=1, ensure_ascii=False))
    # Params holding references (checked with them unknown, then resolved)
    # and "††" literals: for each keyword's rule a call that some
    # resolution makes valid (a check that judged the reference as a value
    # would refuse it), and calls refused whatever the references are
    lit = D + D
    weather = {"type": "object", "properties": {"city": {"type": "string"},
                                                "days": {"type": "integer", "minimum": 1}},
               "required": ["city"], "additionalProperties": False}
    if_k = {"if": {"properties": {"k": {"const": "x"}}}, "then": {"required": ["x"]},
            "else": {"required": ["y"]}}
    partial = [
        ({"properties": {"a": {"type": "integer", "minimum": 0, "multipleOf": 2}}},
         {"a": D + "in.a"}),
        ({"properties": {"a": {"not": {"type": "string"}}}}, {"a": D + "in.a"}),
        ({"properties": {"a": {"oneOf": [{"type": "string"}, {"minLength": 2}]}}},
         {"a": D + "in.a"}),
        (if_k, {"k": D + "in.k", "y": 1}),
        ({"properties": {"a": {"enum": [[0, 0], 1]}, "b": {"const": {"k": 0}}}},
         {"a": [0, D + "in.a"], "b": {"k": D + "in.k || " + D + "in.j"}}),
        ({"properties": {"a": {"uniqueItems": True, "items": {"$ref": "#"}}}},
         {"a": [D + "in.a", D + "in.b", {"a": [1, D + "in.c"]}]}),
        ({"properties": {"city": {"type": "string"}}}, {"city": 5, "note": D + "in.n"}),
        (weather, {"days": D + "in.n"}),
        (weather, {"city": D + "in.c", "extra": {"x": D + "in.n"}}),
        (weather, {"city": lit + "x", "days": D + "in.d"}),
        ({"properties": {"a": {"maxItems": 1, "prefixItems": [{"const": D + "x"}]}}},
         {"a": [lit + "x", D + "in.b"]}),
        # As text: daggers written as \u2020 escapes
        ({"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
         '{"x1": "\\u2020in.x", "y": "\\u2020in.y", "x2": "\\u2020\\u2020x"}'),
    ]
    for index, (schema, instance) in enumerate(partial):
        write("fuzz_schema", "references-%02d" % index, j(schema) + "\n"
              + (instance if isinstance(instance, str) else j(instance)))


# ---------------------------------------------------------------------------
# fuzz_methods: write sequences

def methods():
    clear("fuzz_methods")
    for index, case in enumerate(vectors("resolve.json")):
        lines = []
        for op in case["ops"]:
            if "append" in op:
                message = dict(op["append"], type="data")
                lines.append("A\t" + j(message))
            elif "output" in op:
                lines.append("%s\t%s\t%s\t%s" % (op["output"], op.get("method", "set"),
                                                 j(op["value"]), op.get("instance", "")))
            elif "resolve" in op:
                lines.append("R\t%s\t%s" % (op["resolve"], op.get("instance", "")))
        write("fuzz_methods", "vector-%02d" % index, "\n".join(lines) + "\n")
    s = D + "state"
    extra = {
        "every-method": [
            "%s.a\tset\t{\"x\": 1}" % s, "%s.a\tmerge\t{\"y\": null, \"z\": {\"w\": 2}}" % s,
            "%s.a\tassign\t{\"x\": null}" % s, "%s.list\tpush\t1" % s, "%s.list\tconcat\t[2, 3]" % s,
            "%s.name\tconcat\t\"ab\"" % s, "%s.name\tconcat\t\"cd\"" % s, "%s.a.x\terase\tnull" % s,
            "R\t%s" % s],
        "mismatches": [
            "%s.a\tset\t1" % s, "%s.a\tpush\t1" % s, "%s.a\tassign\t{}" % s, "%s.a\tconcat\t[1]" % s,
            "%s.a\tassign\t[1]" % s, "%s.a\tconcat\t5" % s, "R\t%s.a" % s],
        "indices": [
            "%s.l\tset\t[0, 1]" % s, "%s.l.2\tset\t2" % s, "%s.l[5]\tset\t5" % s, "%s.l.-\tset\t3" % s,
            "%s.l.0\terase\tnull" % s, "%s.l.0.k\tset\t1" % s, "R\t%s.l" % s],
        "instances": [
            "%s.u\tset\t{\"n\": \"g\"}" % s, "%s.u.n\tset\t\"i\"\ti1" % s, "%s.u\tset\t\"scalar\"" % s,
            "%s.u.m\tpush\t1\ti1" % s, "R\t%s.u\ti1" % s, "R\t%s.u\ti2" % s, "R\t%s.u" % s],
        "instance-skip": [
            "%s.a\tset\t[]" % s, "%s.a\tpush\t1\ti1" % s, "%s.a\tset\t{}" % s, "R\t%s.a\ti1" % s],
        "fan-out": [
            "%s.a && %s.b\tset\t1" % (s, s), "%s.a && %s.a.b\tset\t{\"c\": 1}" % (s, s),
            "%s.l && %s.l\tpush\t1" % (s, s), "%s.x || %s.y\tset\t2\t\t1" % (s, s),
            "%s.x <|> %s.y *> %s.z\tset\t3\ti1\t1" % (s, s, s)],
        "appends": [
            "A\t{\"type\": \"data\", \"kind\": \"user\", \"data\": {\"name\": \"J\"}}",
            "A\t{\"type\": \"data\", \"kind\": \"user\", \"data\": {\"age\": 3}, \"schema\": {\"type\": \"object\"}, \"description\": \"d\"}",
            "A\t{\"type\": \"data\", \"kind\": \"user\", \"_instance\": \"i1\", \"data\": [1], \"_outputMethod\": \"set\"}",
            "A\t{\"type\": \"data\", \"kind\": \"user\", \"_outputMethod\": \"push\", \"data\": 1}",
            "A\t{\"type\": \"data\", \"kind\": \"bad kind\", \"data\": 1}",
            "A\t{\"type\": \"data\", \"_seq\": 4, \"data\": 1}",
            "A\t{\"type\": \"data\"}",
            "A\t{\"type\": \"text\", \"text\": \"hi\"}",
            "A\t{\"type\": \"data\", \"data\": null, \"_outputMethod\": \"erase\"}",
            "R\t" + D + "user\ti1"],
        "quoted": [
            "%s[\"a.b\"].c\tset\t1" % s, "%s.007\tset\t7" % s, "%s.0\tset\t0" % s,
            "R\t%s[\"a.b\"]" % s, "R\t%s[0]" % s],
        "deep": ["%s%s\tset\t1" % (s, ".k" * 60), "%s%s\tmerge\t{\"x\": {\"y\": 2}}" % (s, ".k" * 30),
                 "R\t%s%s" % (s, ".k" * 30)],
        "root-writes": ["%s\tset\t{\"a\": 1}" % s, "%s\tmerge\t{\"b\": 2}" % s, "%s\terase\tnull" % s,
                        "%s\tpush\t1" % s, "R\t%s" % s],
    }
    for name, lines in extra.items():
        write("fuzz_methods", name, "\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# fuzz_client_frames: client commands (fuzz_broker.h: one message a line)

def client_line(command, request, *args):
    fields = [command, request] + [a if isinstance(a, str) else j(a) for a in args]
    return "\t".join(fields)


def clients():
    clear("fuzz_client_frames")
    s = D + "state"
    c = client_line
    seeds = {
        "ping": [c("PING", "r1")],
        "stats": [c("STATS", "r1")],
        "call-output": [c("CALL", "r1", "ctx", {"_tool": "t", "_outputPath": s + ".a", "x": 1}),
                        c("RESOLVE", "r2", "ctx", s + ".a"), c("STATUS", "r3", "$C0")],
        "call-fire-and-forget": [c("CALL", "r1", "ctx", {"_tool": "u", "q": "x"}), c("STATUS", "r2", "$C0")],
        "call-dependency": [
            c("CALL", "r1", "dep", {"_tool": "slow", "_outputPath": s + ".a"}),
            c("CALL", "r2", "dep", {"_tool": "t", "_outputPath": s + ".b", "in": s + ".a"}),
            c("STATUS", "r3", "$C0"), c("CANCEL", "r4", "$C1"), c("STATUS", "r5", "$C0")],
        "call-unresolved": [c("CALL", "r1", "ctx", {"_tool": "t", "in": s + ".nothing"})],
        "call-alternatives": [c("CALL", "r1", "alt", {"_tool": "t", "_outputPath": s + ".ok || " + s + ".err"}),
                              c("CALL", "r2", "alt", {"_tool": "t", "in": s + ".ok || " + s + ".err"})],
        "call-fan-out": [c("CALL", "r1", "fan", {"_tool": "v", "_outputPath": s + ".a && " + s + ".b",
                                                 "_outputMethod": "push"})],
        "call-instance": [c("CALL", "r1", "ins", {"_tool": "t", "_outputPath": s + ".a", "_instance": "i1"}),
                          c("RESOLVE", "r2", "ins", s + ".a", "i1")],
        "call-idempotent": [c("CALL", "r1", "idem", {"_tool": "t", "_outputPath": s + ".a", "_id": "k"}),
                            c("CALL", "r2", "idem", {"_tool": "t", "_outputPath": s + ".a", "_id": "k"})],
        "call-timeout": [c("CALL", "r1", "tmo", {"_tool": "lonely", "_outputPath": s + ".a"}),
                         c("CALL", "r2", "tmo", {"_tool": "fast", "_outputPath": s + ".b || " + s + ".c",
                                                 "_timeout": 1})],
        "call-busy": [c("CALL", "r%d" % i, "busy", {"_tool": "lonely"}) for i in range(4)],
        "call-retry": [c("CALL", "r1", "re", {"_tool": "t", "_outputPath": s + ".a",
                                               "_retry": {"max_attempts": 4, "initial_ms": 0}})] * 3,
        "call-bad-json": [c("CALL", "r1", "ctx", "{\"_tool\": ")],
        "call-bad-context": [c("CALL", "r1", "bad ctx", {"_tool": "t"}), c("CALL", "r2", "", {"_tool": "t"}),
                             c("CALL", "r3", "x" * 129, {"_tool": "t"})],
        "call-bad-call": [c("CALL", "r1", "ctx", {"tool": "t"}), c("CALL", "r2", "ctx", [1])],
        "call-bad-reference": [c("CALL", "r1", "ctx", {"_tool": "t", "a": D + "state..a"})],
        "call-bad-method": [c("CALL", "r1", "ctx", {"_tool": "t", "_outputPath": s + ".a", "_outputMethod": "x"})],
        "call-too-large": [c("CALL", "r1", "ctx", "$L")],
        "plan": [c("PLAN", "r1", "plan", [{"_tool": "t", "_outputPath": s + ".x"},
                                          {"_tool": "u", "_outputPath": s + ".y", "in": s + ".x"},
                                          {"_tool": "v", "in": s + ".y"}])],
        "plan-bad": [c("PLAN", "r1", "plan", []), c("PLAN", "r2", "plan", {"_tool": "t"}),
                     c("PLAN", "r3", "plan", [{"_tool": "t"}, {"x": 1}]),
                     c("PLAN", "r4", "plan", [{"_tool": "t", "_id": "a"}, {"_tool": "t", "_id": "a"}])],
        "append": [c("APPEND", "r1", "app", {"type": "data", "kind": "user", "data": {"name": "J"}}),
                   c("APPEND", "r2", "app", {"type": "data", "kind": "user", "data": {"age": 3}}),
                   c("RESOLVE", "r3", "app", D + "user"), c("VIEW", "r4", "app"), c("VIEW", "r5", "app", "text"),
                   c("HISTORY", "r6", "app", "1", "10")],
        "append-errors": [c("APPEND", "r1", "app", {"type": "data", "kind": "user", "data": 1,
                                                     "_outputMethod": "set"}),
                          c("APPEND", "r2", "app", {"type": "data", "kind": "user", "data": [1],
                                                     "_outputMethod": "assign"}),
                          c("APPEND", "r3", "app", {"type": "data", "kind": "1bad", "data": 1}),
                          c("APPEND", "r4", "app", {"type": "data", "_seq": 1, "data": 1}),
                          c("APPEND", "r5", "app", {"data": 1}), c("APPEND", "r6", "app", "[]"),
                          c("APPEND", "r7", "app", {"type": "text", "text": "hi"})],
        "resolve-errors": [c("RESOLVE", "r1", "nope", s), c("RESOLVE", "r2", "app", "state"),
                           c("RESOLVE", "r3", "app", s + ".x", ""), c("RESOLVE", "r4", "app", D + D + "x"),
                           c("RESOLVE", "r5", "app", s + ".-")],
        "view-errors": [c("VIEW", "r1", "nope"), c("VIEW", "r2", "app", "xml")],
        "history-errors": [c("HISTORY", "r1", "nope", "1", "10"), c("HISTORY", "r2", "app", "x", "10"),
                           c("HISTORY", "r3", "app", "1", "1001"), c("HISTORY", "r4", "app", "0", "0"),
                           c("HISTORY", "r5", "app", "99999999999999999999", "1")],
        "status-errors": [c("STATUS", "r1", "0"), c("STATUS", "r2", "abc"), c("STATUS", "r3", "999999"),
                          c("CANCEL", "r4", "12345678901234567890"), c("CANCEL", "r5", "$C0")],
        "frame-errors": [c("PING", ""), c("PING", "r" * 256), c("PING", "r1", "extra"), c("CALL", "r1", "ctx"),
                         c("NOPE", "r1"), "!ACTC02\tPING\tr1", "!ACTC01\tPING", "!", "!ACTC01"],
        "worker-socket": [">READY\t" + j({"activities": ["w"], "capacity": 2}),
                          c("CALL", "r1", "wk", {"_tool": "w", "_outputPath": s + ".a"}),
                          ">RESULT\t$T0\t{\"done\": true}", c("RESOLVE", "r2", "wk", s + ".a")],
        "two-clients": ["@1" + c("CALL", "r1", "two", {"_tool": "t", "_outputPath": s + ".a", "_id": "x"}),
                        "@2" + c("CALL", "r1", "two", {"_tool": "t", "_outputPath": s + ".a", "_id": "x"})],
        "many-contexts": [c("APPEND", "r%d" % i, "c%d" % i, {"type": "data", "data": i}) for i in range(10)]
                         + [c("RESOLVE", "r99", "c0", D + "data")],
    }
    for name, lines in seeds.items():
        write("fuzz_client_frames", name, "\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# fuzz_worker_frames: worker messages

def workers():
    clear("fuzz_worker_frames")
    ready = "READY\t" + j({"activities": ["t", "u", "echo"], "capacity": 2, "name": "w", "lang": "c"})
    seeds = {
        "result": [ready, "RESULT\t$T0\t{\"x\": 1}", "RESULT\t$T1\t[1]"],
        "result-branch": [ready, "RESULT\t$T0\t\"ok\"\t1", "RESULT\t$T0\t\"ok\"\t7"],
        "result-bad": [ready, "RESULT\t$T0\t{bad", "RESULT\t$T0\t1\tx", "RESULT\t$T0\t$L"],
        "fail": [ready, "FAIL\t$T0\t" + j({"message": "m", "code": "e1", "retryable": False, "extra": 1}),
                 "FAIL\t$T0\t" + j({"message": "again"}), "FAIL\t$T0\tnot json"],
        "progress": [ready, "PROGRESS\t$T0\t{\"pct\": 10}", "PROGRESS\t$T0\tbad", "RESULT\t$T0\tnull"],
        "heartbeat": [ready, "HEARTBEAT", "DISCONNECT"],
        "unknown-task": [ready, "RESULT\t99.1\t1", ready],
        "not-ready": ["HEARTBEAT", "RESULT\t1.1\t1", "@1DISCONNECT"],
        "ready-twice": [ready, ready],
        "ready-bad": ["READY\t{}", "@1READY\t" + j({"activities": []}),
                      "@2READY\t" + j({"activities": ["t"], "capacity": 0}),
                      "@3READY\t" + j({"activities": ["t"], "capacity": 100001}),
                      "@4READY\t" + j({"activities": [""], "name": "n" * 300}),
                      "@5READY\t" + j({"activities": ["t"], "lang": 5}), "READY", "READY\t{}\t{}"],
        "wrong-frames": [ready, "RESULT\t$T0", "FAIL\t$T0\t{}\t{}", "PROGRESS", "NOPE"],
        "mdp2": ["!MDPW02\t\x01\techo", "!MDPW02\t\x05", "!MDPW02\t\x03\t$T0\t\t{\"p\": 1}",
                 "!MDPW02\t\x04\t$T0\t\t{\"r\": 1}", "!MDPW02\t\x06"],
        "mdp1": ["!\tMDPW01\t\x01\techo", "!\tMDPW01\t\x04", "!\tMDPW01\t\x03\t$T0\t\t{\"r\": 2}",
                 "!\tMDPW01\t\x05"],
        "mdp-bad": ["!MDPW02\t\x01", "!MDPW02\t\x01\t", "!MDPW02\t\x09", "@1!MDPW02\t\x01\techo",
                    "@1!MDPW02\t\x04\t$T0", "@1!MDPW02\t\x04\tnope\t\tx", "!\tMDPW01"],
        "no-header": ["!XYZ\tREADY", "!", "!ACTW01"],
        "two-workers": [ready, "@1" + ready, "@1RESULT\t$T0\t2", "RESULT\t$T0\t1", "@1DISCONNECT"],
        "client-too": [ready, ">CALL\tr1\tw9\t" + j({"_tool": "t", "_outputPath": D + "state.q"}),
                       "RESULT\t$T0\t5", ">STATUS\tr2\t$C0", ">CANCEL\tr3\t$C0"],
        "cancel-running": [ready, ">CANCEL\tr1\t$C0", "RESULT\t$T0\t1"],
    }
    for name, lines in seeds.items():
        write("fuzz_worker_frames", name, "\n".join(lines) + "\n")


if __name__ == "__main__":
    references()
    calls()
    scans()
    schemas()
    methods()
    clients()
    workers()
    for target in sorted(os.listdir(os.path.join(HERE, "corpus"))):
        print("%-20s %d seeds" % (target, len(os.listdir(os.path.join(HERE, "corpus", target)))))
