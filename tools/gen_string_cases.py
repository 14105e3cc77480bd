#!/usr/bin/env python3
"""gen_string_cases.py - writes tests/unit/string_cases.h: the string kernels of src/ops/string_ops.c
(StringLower/Upper, StringStrip, Substr, StringToNumber, ReduceJoin, StringToHashBucketFast/Strong)
against TensorFlow, with empty strings, spaces and UTF-8 bytes (written %XX-escaped).

Uses the machinery of tools/gen_array_cases.py (tf.raw_ops on literal inputs; TF's outputs or error).
Run: /work/main/build/venv/bin/python tools/gen_string_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

A, case = g.A, g.case
i32, i64 = np.int32, np.int64


def S(x):
    return np.array(x, dtype=object)


WORDS = S([b"Hello World", b"", b"  padded\t\n", b"MiXeD 123 _!", "\u00c9t\u00e9 \u00dcber".encode(),
           "\u0391\u03b2\u0393 \u0416\u0436".encode(), "\u65e5\u672c".encode(), b"\xff\xfe bad"])


def maps():
    for op in ("StringLower", "StringUpper"):
        case("%s ascii" % op, op, [("input", WORDS)])
        case("%s utf8" % op, op, [("input", WORDS)], {"encoding": "utf-8"})
        case("%s 2d" % op, op, [("input", S([[b"aB", b"Cd"], [b"", b"Z"]]))])
    case("StringStrip", "StringStrip", [("input", WORDS)])
    case("StringStrip all space", "StringStrip", [("input", S([b" \t\v\f\r\n ", b"x", b" a b "]))])


def substr():
    s = S([b"Hello", b"", b"abcdef"])
    u = S(["h\u00e9llo".encode(), "\u65e5\u672c\u8a9e".encode(), b"abc"])
    for dt in (i32, i64):
        n = "int64" if dt == i64 else "int32"
        case("Substr scalar " + n, "Substr", [("input", s), ("pos", A(0, dt)), ("len", A(3, dt))])
        case("Substr neg pos " + n, "Substr", [("input", S([b"Hello", b"abcdef"])), ("pos", A(-3, dt)), ("len", A(2, dt))])
        case("Substr elementwise " + n, "Substr", [("input", s), ("pos", A([1, 0, 5], dt)), ("len", A([10, 0, -1], dt))])
    case("Substr pos end", "Substr", [("input", S([b"abc"])), ("pos", A(3, i32)), ("len", A(2, i32))])
    case("Substr pos past", "Substr", [("input", S([b"ab", b"abc"])), ("pos", A(3, i32)), ("len", A(1, i32))])
    case("Substr neg past", "Substr", [("input", S([b"abc"])), ("pos", A(-4, i32)), ("len", A(1, i32))])
    case("Substr bcast 1d", "Substr", [("input", S([b"abcdef"])), ("pos", A([0, 2, 4], i32)), ("len", A([1, 2, 3], i32))])
    case("Substr bcast 2d", "Substr", [("input", S([[b"abcdef"], [b"ghijkl"]])), ("pos", A([0, 1, 2], i32)),
                                       ("len", A([2, 2, 2], i32))])
    case("Substr bcast 2d error", "Substr", [("input", S([[b"ab"], [b"cdefgh"]])), ("pos", A([0, 3], i32)),
                                             ("len", A([1, 1], i32))])
    case("Substr bcast bad", "Substr", [("input", S([b"a", b"b"])), ("pos", A([0, 1, 2], i32)), ("len", A([1, 1, 1], i32))])
    case("Substr shape mismatch", "Substr", [("input", S([b"a"])), ("pos", A([0, 1], i32)), ("len", A([1], i32))])
    for pos, ln in ((0, 2), (1, 10), (-2, 1), (-3, 5), (2, -1), (3, 1)):
        case("Substr utf8 %d %d" % (pos, ln), "Substr", [("input", u), ("pos", A(pos, i32)), ("len", A(ln, i32))],
             {"unit": "UTF8_CHAR"})
    case("Substr utf8 neg past", "Substr", [("input", u), ("pos", A(-4, i32)), ("len", A(1, i32))], {"unit": "UTF8_CHAR"})
    case("Substr utf8 past", "Substr", [("input", u), ("pos", A(4, i32)), ("len", A(1, i32))], {"unit": "UTF8_CHAR"})


def to_number():
    good_f = S([b"1.5", b" -2e3 ", b"inf", b"-Infinity", b"nan", b"0", b"+7", b".5", b"1e-40", b"3.4028236e38"])
    for dt in (tf.float32, tf.float64):
        case("StringToNumber %s" % dt.name, "StringToNumber", [("string_tensor", good_f)], {"out_type": dt})
    case("StringToNumber int32", "StringToNumber", [("string_tensor", S([b"12", b" -7 ", b"+3", b"2147483647", b"-2147483648"]))],
         {"out_type": tf.int32})
    case("StringToNumber int64", "StringToNumber", [("string_tensor", S([b"9223372036854775807", b"-9223372036854775808", b"0"]))],
         {"out_type": tf.int64})
    for bad, dt in ((b"abc", tf.float32), (b"", tf.float32), (b"1.5x", tf.float64), (b"0x10", tf.float32),
                    (b"2147483648", tf.int32), (b"1.0", tf.int32), (b"", tf.int64), (b"9223372036854775808", tf.int64),
                    (b"1 2", tf.int64), (b"- 1", tf.int32)):
        case("StringToNumber bad %r %s" % (bad, dt.name), "StringToNumber", [("string_tensor", S([b"1", bad]))], {"out_type": dt})


def reduce_join():
    x = S([[b"a", b"b", b"c"], [b"d", b"", b"f"]])
    for axes in ([0], [1], [-1], [0, 1], [1, 0], []):
        for keep in (False, True):
            case("ReduceJoin %s keep%d" % (axes, keep), "ReduceJoin", [("inputs", x), ("reduction_indices", A(axes, i32))],
                 {"keep_dims": keep, "separator": "--"})
    x3 = S([[[b"%d%d%d" % (i, j, k) for k in range(2)] for j in range(3)] for i in range(2)])
    case("ReduceJoin 3d mid", "ReduceJoin", [("inputs", x3), ("reduction_indices", A([1], i32))])
    case("ReduceJoin 3d outer", "ReduceJoin", [("inputs", x3), ("reduction_indices", A([0, 2], i32))], {"separator": " "})
    case("ReduceJoin scalar axis", "ReduceJoin", [("inputs", x), ("reduction_indices", A(1, i32))])
    case("ReduceJoin empty dim", "ReduceJoin", [("inputs", S(np.zeros((2, 0), dtype=object))),
                                                ("reduction_indices", A([1], i32))])
    case("ReduceJoin bad axis", "ReduceJoin", [("inputs", x), ("reduction_indices", A([2], i32))])
    case("ReduceJoin dup axis", "ReduceJoin", [("inputs", x), ("reduction_indices", A([1, -1], i32))])


def hashes():
    x = S([b"", b"a", b"hello world", b"x" * 17, b"y" * 40, b"z" * 70, b"The quick brown fox jumps over the lazy dog",
           "\u65e5\u672c".encode()])
    for b in (1, 7, 1000, 2 ** 62):
        case("StringToHashBucketFast %d" % b, "StringToHashBucketFast", [("input", x)], {"num_buckets": b})
        case("StringToHashBucketStrong %d" % b, "StringToHashBucketStrong", [("input", x)],
             {"num_buckets": b, "key": [1, 2]})
    case("StringToHashBucketStrong big key", "StringToHashBucketStrong", [("input", x)],
         {"num_buckets": 97, "key": [2 ** 62 + 12345, -99]})


def main():
    maps()
    substr()
    to_number()
    reduce_join()
    hashes()
    g.write_unit_header("string_cases")


if __name__ == "__main__":
    main()
