#!/usr/bin/env python3
"""gen_unique_cases.py - writes tests/unit/unique_cases.h: Unique, UniqueV2, UniqueWithCounts(V2),
Bincount, DenseBincount (src/ops/unique.c) and CTCGreedyDecoder (src/ops/ctc.c) against
TensorFlow, exactly.

Uses the machinery of tools/gen_array_cases.py (eager tf.raw_ops, TF's CPU kernels; literal
inputs); the header holds TF's outputs or error text.
Run: /work/main/build/venv/bin/python tools/gen_unique_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
nan = float("nan")
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64


def A(v, dt):
    return np.array(v, dtype=dt)


def unique():
    vals = {"float32": A([3, 1, 3, 0.0, -0.0, nan, nan, 1, 2.5], f32), "float64": A([2, 2, -1, 7, -1], f64),
            "int32": A([5, 5, 5], i32), "int64": A([9, -3, 9, 4, -3, 0], i64), "uint8": A([1, 200, 1], np.uint8),
            "int8": A([-1, 1, -1], np.int8), "bool": A([True, False, True], np.bool_),
            "string": np.array([b"b", b"a", b"b", b"c"], dtype=object), "half": tf.constant([1.5, -0.0, 0.0, 1.5], tf.float16)}
    for name, x in vals.items():
        for op in ("Unique", "UniqueWithCounts"):
            case("%s %s" % (op, name), op, [("x", x)])
    case("Unique out_idx int64", "Unique", [("x", vals["int64"])], {"out_idx": tf.int64})
    case("UniqueWithCounts out_idx int64", "UniqueWithCounts", [("x", vals["float64"])], {"out_idx": tf.int64})
    case("Unique empty", "Unique", [("x", A([], f32))])
    case("Unique err rank", "Unique", [("x", A([[1, 2]], i32))])
    m = A([[1, 2, 1], [3, 4, 3], [1, 2, 1], [0, 0, 0]], i32)
    for op in ("UniqueV2", "UniqueWithCountsV2"):
        for ax in ([0], [1], [-1], [-2], []):
            for adt in (i32, i64):
                x = m if ax else A([4, 1, 4, 2], i32)
                case("%s axis %s %s" % (op, ax, np.dtype(adt).name), op, [("x", x), ("axis", A(ax, adt))])
        case(op + " 3-D axis 1", op, [("x", A(np.arange(24) % 5, f32).reshape(2, 4, 3)[:, [0, 1, 0, 3], :]),
                                      ("axis", A([1], i64))])
        case(op + " string axis 0", op, [("x", np.array([[b"a", b"b"], [b"a", b"b"], [b"a", b"c"]], dtype=object)),
                                         ("axis", A([0], i32))])
        case(op + " nan rows", op, [("x", A([[nan, 1], [nan, 1], [0, 1], [-0.0, 1]], f32)), ("axis", A([0], i32))])
        case(op + " empty axis", op, [("x", np.zeros([0, 3], f32)), ("axis", A([0], i32))])
        case(op + " err axis range", op, [("x", m), ("axis", A([2], i32))])
        case(op + " err axis 2 elems", op, [("x", m), ("axis", A([0, 1], i32))])
        case(op + " err no axis 2-D", op, [("x", m), ("axis", A([], i32))])


def bincount():
    arr = A([1, 1, 3, 0, 7, 3, 3], i32)
    for dt in (f32, f64, i32, i64):
        w = A([0.5, 2, 1, 4, 8, -1, 3], dt)
        case("Bincount %s" % np.dtype(dt).name, "Bincount", [("arr", arr), ("size", A(5, i32)), ("weights", w)])
        case("Bincount %s no weights" % np.dtype(dt).name, "Bincount",
             [("arr", arr), ("size", A(4, i32)), ("weights", A([], dt))])
    case("Bincount size 0", "Bincount", [("arr", arr), ("size", A(0, i32)), ("weights", A([], f32))])
    case("Bincount empty", "Bincount", [("arr", A([], i32)), ("size", A(3, i32)), ("weights", A([], f32))])
    case("Bincount err negative", "Bincount", [("arr", A([1, -1], i32)), ("size", A(3, i32)), ("weights", A([], f32))])
    case("Bincount err size", "Bincount", [("arr", arr), ("size", A(-2, i32)), ("weights", A([], f32))])
    case("Bincount err weights", "Bincount", [("arr", arr), ("size", A(3, i32)), ("weights", A([1, 2], f32))])
    for idt in (i32, i64):
        for binary in (False, True):
            for dt in (f32, i64):
                x1 = A([2, 0, 2, 5, 1], idt)
                x2 = A([[0, 1, 1], [3, 3, 9], [2, 2, 2]], idt)
                tag = "%s %s bin=%d" % (np.dtype(idt).name, np.dtype(dt).name, binary)
                case("DenseBincount 1-D " + tag, "DenseBincount",
                     [("input", x1), ("size", A(4, idt)), ("weights", A([1, 2, 3, 4, 5], dt))], {"binary_output": binary})
                case("DenseBincount 2-D " + tag, "DenseBincount",
                     [("input", x2), ("size", A(5, idt)), ("weights", A([], dt))], {"binary_output": binary})
    case("DenseBincount 2-D weights", "DenseBincount",
         [("input", A([[0, 1, 1], [3, 3, 0]], i32)), ("size", A(4, i32)), ("weights", A([[1, 2, 3], [4, 5, 6]], f64))])
    case("DenseBincount err negative", "DenseBincount", [("input", A([1, -1], i32)), ("size", A(3, i32)),
                                                         ("weights", A([], f32))])
    case("DenseBincount err weights", "DenseBincount", [("input", A([1, 1], i32)), ("size", A(3, i32)),
                                                        ("weights", A([1, 2, 3], f32))])
    case("DenseBincount err rank", "DenseBincount", [("input", A([[[1]]], i32)), ("size", A(3, i32)),
                                                     ("weights", A([], f32))])


def ctc():
    rng = np.random.RandomState(7)
    x = rng.randn(6, 3, 5).astype(f32)
    x[2, 0] = x[1, 0]  # a repeat
    x[3, 1, :] = 0  # ties: the first class wins
    L = A([6, 4, 0], i32)
    for merge in (True, False):
        for blank in (-1, 0, 2, -5):
            case("CTCGreedyDecoder merge=%d blank=%d" % (merge, blank), "CTCGreedyDecoder",
                 [("inputs", x), ("sequence_length", L)], {"merge_repeated": merge, "blank_index": blank})
    case("CTCGreedyDecoder double", "CTCGreedyDecoder", [("inputs", x.astype(f64)), ("sequence_length", A([5, 5, 5], i32))])
    case("CTCGreedyDecoder all blank", "CTCGreedyDecoder", [("inputs", np.tile(A([0, 0, 1], f32), (4, 2, 1))),
                                                            ("sequence_length", A([4, 2], i32))])
    case("CTCGreedyDecoder err length", "CTCGreedyDecoder", [("inputs", x), ("sequence_length", A([7, 1, 1], i32))])
    case("CTCGreedyDecoder err blank", "CTCGreedyDecoder", [("inputs", x), ("sequence_length", L)], {"blank_index": 5})
    case("CTCGreedyDecoder err batch", "CTCGreedyDecoder", [("inputs", x), ("sequence_length", A([1, 1], i32))])


def main():
    unique()
    bincount()
    ctc()
    g.write_unit_header("unique_cases")


if __name__ == "__main__":
    main()
