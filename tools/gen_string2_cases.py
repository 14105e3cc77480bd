#!/usr/bin/env python3
"""gen_string2_cases.py - writes tests/unit/string2_cases.h: the regex kernels (src/ops/regex.c,
through RE2), the text kernels (src/ops/text.c: StringSplitV2, StringNGrams, AsString,
UnsortedSegmentJoin, UnicodeDecode/WithOffsets, UnicodeEncode) and the ragged ones
(src/ops/ragged.c: RaggedTensorToTensor, RaggedRange, RaggedGather, RaggedBincount, SparseCross,
SparseCrossHashed) against TensorFlow, edge cases included (empty strings, UTF-8, bad input).

Uses the machinery of tools/gen_array_cases.py (tf.raw_ops on literal inputs; TF's outputs or error).
Run: /work/main/build/venv/bin/python tools/gen_string2_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

A, case = g.A, g.case
_attr_text = g.attr_text


def attr_text(key, v):
    """gen_array_cases' attr text, with string attrs (regex patterns) escaped for the pbtxt parser."""
    if isinstance(v, (str, bytes)):
        b = v.encode() if isinstance(v, str) else v
        esc = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else "\\%03o" % c for c in b)
        return 'attr { key: "%s" value { s: "%s" } }' % (key, esc)
    return _attr_text(key, v)


g.attr_text = attr_text
i32, i64 = np.int32, np.int64


def S(x):
    return np.array(x, dtype=object)


TEXT = S([b"The quick, brown fox!", b"", b"  two  spaces  ", "caf\u00e9 \u00dcber na\u00efve".encode(), b"a1b22c333",
          "\u65e5\u672c\u8a9e".encode()])


def regex():
    for pat, rw in ((r"[a-z]+", r"<\0>"), (r"([a-z])([0-9]+)", r"\2\1"), (r"\s+", " "), (r"", "-"), (r"x*", "-"),
                    (r"[[:punct:]]", ""), (r".", "."), (r"\p{L}", "L"), (r"^", ">"), (r"(a)", r"\\1"), (r"(a)", r"\2")):
        for glob in (True, False):
            case("StaticRegexReplace %r %r %d" % (pat, rw, glob), "StaticRegexReplace", [("input", TEXT)],
                 {"pattern": pat, "rewrite": rw, "replace_global": glob})
            case("RegexReplace %r %r %d" % (pat, rw, glob), "RegexReplace",
                 [("input", TEXT), ("pattern", S(pat.encode())), ("rewrite", S(rw.encode()))], {"replace_global": glob})
    case("StaticRegexReplace lower_and_strip_punctuation", "StaticRegexReplace", [("input", TEXT)],
         {"pattern": r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']', "rewrite": "", "replace_global": True})
    case("StaticRegexReplace bad", "StaticRegexReplace", [("input", TEXT)], {"pattern": "(a", "rewrite": ""})
    case("RegexReplace bad", "RegexReplace", [("input", TEXT), ("pattern", S(b"a**")), ("rewrite", S(b""))])
    case("RegexReplace pattern not scalar", "RegexReplace", [("input", TEXT), ("pattern", S([b"a"])), ("rewrite", S(b""))])
    case("RegexReplace rewrite not scalar", "RegexReplace", [("input", TEXT), ("pattern", S(b"a")), ("rewrite", S([b""]))])
    case("RegexReplace 2d", "RegexReplace", [("input", S([[b"aa", b"ba"], [b"", b"c"]])), ("pattern", S(b"a")),
                                             ("rewrite", S(b"xy"))])
    for pat in (r"[a-z ]+", r".*", r"", r"\w+", r"caf. .*", r"[^,]*,.*", r"(?i)the.*"):
        case("RegexFullMatch %r" % pat, "RegexFullMatch", [("input", TEXT), ("pattern", S(pat.encode()))])
    case("RegexFullMatch bad", "RegexFullMatch", [("input", TEXT), ("pattern", S(b"[z-a]"))])
    case("RegexFullMatch invalid utf8", "RegexFullMatch", [("input", S([b"\xff", b"a\xffb"])), ("pattern", S(b"a.b"))])


def main():
    which = set(sys.argv[1:]) or {"regex", "text", "ragged"}
    if "regex" in which:
        regex()
    g.write_unit_header("string2_cases")


if __name__ == "__main__":
    main()
