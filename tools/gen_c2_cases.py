#!/usr/bin/env python3
"""gen_c2_cases.py - writes tests/unit/c2_cases.h: the sparse and ragged ops of session 19 (c2)
that tools/sweep_ops.py found missing, against TensorFlow (eager tf.raw_ops, TF's CPU kernels):
SparseConcat, SparseSlice, SparseSplit, SparseSoftmax, SparseReduceSumSparse / MaxSparse
(src/ops/sparse_more.c), the count family DenseCountSparseOutput / SparseCountSparseOutput /
RaggedCountSparseOutput, ComputeAccidentalHits, RaggedCross (src/ops/cross.c) and
RaggedTensorToVariant / RaggedTensorFromVariant round trips (src/ops/ragged_variant.c). Every dtype
the CPU kernels register that matters, every attribute, edge values and TF's error messages.

Uses the machinery of tools/gen_array_cases.py. test_ops_c2 compares floats within 1e-5
relative. Run: build/venv/bin/python tools/gen_c2_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
g.TF_ENUM[tf.variant] = "DT_VARIANT"  # node attrs of the chain cases (GatherV2 over variants)
A = g.A
nan, inf = float("nan"), float("inf")
f16, f32, f64, i8, i16, i32, i64, u8, u16 = np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16
c64, c128 = np.complex64, np.complex128
rng = np.random.default_rng(19)
S = lambda x: np.array(x, dtype=object)  # noqa: E731  strings


def sp(rows, shape, dt=f32):
    idx = np.array([r[0] for r in rows], np.int64).reshape(-1, len(shape))
    return [idx, np.array([r[1] for r in rows], dtype=dt), np.array(shape, np.int64)]


def sparse_family():
    a = sp([((0, 0), 1.5), ((0, 2), -2.0), ((1, 1), 3.0), ((2, 3), -1.0)], [3, 4])
    b = sp([((0, 1), 4.0), ((1, 0), -2.5), ((1, 2), 7.0)], [3, 2])
    c = sp([((0, 1), 5.0), ((1, 0), 6.0)], [2, 4])

    def CAT(name, xs, dim, **kw):
        case("SparseConcat " + name, "SparseConcat", [("indices", [x[0] for x in xs]), ("values", [x[1] for x in xs]),
                                                     ("shapes", [x[2] for x in xs])], {"concat_dim": dim}, **kw)
    CAT("dim1", [a, b], 1)
    CAT("dim -1", [a, b], -1)
    CAT("dim0", [a, c], 0)
    CAT("one input", [a], 1)
    for dt in (f64, i32, i64, u8, i8, i16, u16, f16, c64):
        CAT("dim1 %s" % np.dtype(dt).name, [[a[0], a[1].astype(dt), a[2]], [b[0], b[1].astype(dt), b[2]]], 1)
    CAT("string", [[a[0], S([b"w", b"x", b"y", b"z"]), a[2]], [b[0], S([b"p", b"q", b""]), b[2]]], 1)
    CAT("bool", [[a[0], A([1, 0, 1, 1], bool), a[2]], [b[0], A([0, 1, 1], bool), b[2]]], 1)
    a3 = sp([((0, 0, 1), 1.0), ((0, 1, 0), 2.0), ((1, 0, 0), 3.0)], [2, 2, 2])
    b3 = sp([((0, 0, 0), 4.0), ((1, 1, 0), 5.0)], [2, 2, 1])
    CAT("3-D dim2", [a3, b3], 2)
    CAT("3-D dim1", [a3, sp([((1, 0, 1), 9.0)], [2, 1, 2])], 1)
    CAT("empty", [[np.zeros([0, 2], i64), np.zeros([0], f32), A([3, 4], i64)], b], 1)
    CAT("unsorted dim0", [sp([((1, 1), 1.0), ((0, 0), 2.0)], [2, 2]), sp([((1, 0), 3.0), ((0, 1), 4.0)], [2, 2])], 0)
    CAT("unsorted dim1", [sp([((1, 1), 1.0), ((0, 0), 2.0)], [2, 2]), sp([((1, 0), 3.0), ((0, 1), 4.0)], [2, 2])], 1)
    CAT("err dim", [a, b], 2)
    CAT("err dim neg", [a, b], -3)
    CAT("err shapes", [a, c], 1)
    CAT("err ranks", [a, a3], 1)
    CAT("err indices", [[a[0].reshape(-1), a[1], a[2]], b], 1)
    CAT("err values", [a, [b[0], b[1].reshape(3, 1), b[2]]], 1)
    CAT("err values count", [a, [b[0], b[1][:2], b[2]]], 1)
    CAT("err index rank", [a, [b[0][:, :1], b[1], b[2]]], 1)
    CAT("out of bounds", [a, sp([((0, 7), 1.0)], [3, 2])], 1)
    CAT("out of bounds dim0", [sp([((5, 0), 1.0), ((0, 1), 2.0)], [2, 2]), sp([((0, 0), 3.0)], [2, 2])], 0)

    def SL(name, x, start, size, **kw):
        case("SparseSlice " + name, "SparseSlice", [("indices", x[0]), ("values", x[1]), ("shape", x[2]),
                                                   ("start", A(start, i64)), ("size", A(size, i64))], **kw)
    SL("inside", a, [0, 1], [2, 2])
    SL("overhang", a, [1, 1], [5, 5])
    SL("outside", a, [3, 0], [1, 4])
    SL("whole", a, [0, 0], [3, 4])
    SL("zero size", a, [0, 0], [0, 4])
    for dt in (f64, i32, i64, u8, f16, c128, bool):
        SL(np.dtype(dt).name, [a[0], a[1].astype(dt), a[2]], [0, 0], [2, 3])
    SL("string", [a[0], S([b"w", b"x", b"y", b"z"]), a[2]], [1, 1], [2, 3])
    SL("3-D", a3, [0, 0, 1], [2, 2, 1])
    SL("unsorted", sp([((1, 1), 1.0), ((0, 0), 2.0), ((1, 0), 3.0)], [2, 2]), [0, 0], [2, 1])
    SL("empty", [np.zeros([0, 2], i64), np.zeros([0], f32), A([3, 4], i64)], [0, 0], [2, 2])
    SL("err start len", a, [0], [2, 2])
    SL("err size len", a, [0, 0], [2])
    SL("err values", [a[0], a[1][:3], a[2]], [0, 0], [2, 2])
    SL("err rank", [a[0], a[1], A([3, 4, 5], i64)], [0, 0, 0], [2, 2, 2])
    SL("err neg shape", [a[0], a[1], A([3, -4], i64)], [0, 0], [2, 2])
    SL("err neg size", a, [0, 0], [-1, 2])
    SL("negative start", a, [-1, 0], [3, 10])
    SL("out of bounds", [A([[0, 9]], i64), A([1.0], f32), A([2, 2], i64)], [0, 0], [2, 20])

    def SPL(name, x, dim, num, **kw):
        case("SparseSplit " + name, "SparseSplit", [("split_dim", A(dim, i64)), ("indices", x[0]), ("values", x[1]),
                                                   ("shape", x[2])], {"num_split": num}, **kw)
    wide = sp([((0, 0), 1.0), ((0, 4), 2.0), ((1, 2), 3.0), ((1, 3), 4.0), ((2, 1), 5.0), ((2, 4), 6.0)], [3, 5])
    SPL("dim1 2", wide, 1, 2)
    SPL("dim0 2", wide, 0, 2)
    SPL("dim -1", wide, -1, 2)
    SPL("one", wide, 1, 1)
    SPL("even", a, 1, 2)
    for dt in (f64, i32, i64, i8, u16, f16, c64, bool):
        SPL(np.dtype(dt).name, [wide[0], wide[1].astype(dt), wide[2]], 1, 2)
    SPL("string", [wide[0], S([b"a", b"b", b"c", b"d", b"e", b"f"]), wide[2]], 1, 2)
    SPL("3-D", a3, 2, 2)
    SPL("empty", [np.zeros([0, 2], i64), np.zeros([0], f32), A([4, 4], i64)], 0, 2)
    SPL("err num > dim", a, 0, 4)
    SPL("err dim", a, 2, 2)
    SPL("err dim neg", a, -3, 2)
    SPL("err index", [A([[0, 9]], i64), A([1.0], f32), A([3, 4], i64)], 1, 2)
    SPL("err negative index", [A([[-1, 0]], i64), A([1.0], f32), A([3, 4], i64)], 0, 2)
    SPL("unsorted", sp([((2, 1), 1.0), ((0, 3), 2.0), ((1, 0), 3.0), ((0, 0), 4.0)], [3, 4]), 1, 2)
    SPL("err rank", [A([[0, 1]], i64), A([1.0], f32), A([4], i64)], 0, 2)
    SPL("err empty shape", [np.zeros([0, 0], i64), np.zeros([0], f32), np.zeros([0], i64)], 0, 2)
    SPL("err values", [a[0], a[1][:2], a[2]], 1, 2)

    def SM(name, x, **kw):
        case("SparseSoftmax " + name, "SparseSoftmax", [("sp_indices", x[0]), ("sp_values", x[1]), ("sp_shape", x[2])], **kw)
    SM("2-D", a)
    SM("double", [a[0], a[1].astype(f64), a[2]])
    rows = [((i, j), float(rng.uniform(-3, 3))) for i in range(4) for j in range(5) if (i * 5 + j) % 3]
    SM("dense rows", sp(rows, [4, 5]))
    SM("3-D", sp([((0, 0, 1), 1.0), ((0, 0, 2), 2.0), ((0, 1, 0), 3.0), ((1, 1, 1), -1.0), ((1, 1, 3), 0.5)], [2, 2, 4]))
    SM("unsorted", sp([((1, 1), 1.0), ((0, 2), 2.0), ((0, 0), 3.0), ((1, 0), -4.0)], [2, 3]))
    SM("large", sp([((0, 0), 1000.0), ((0, 1), 999.0), ((1, 0), -1e30)], [2, 2]))
    SM("inf", sp([((0, 0), inf), ((0, 1), 1.0), ((1, 0), -inf), ((1, 1), 2.0)], [2, 2]))
    SM("empty", [np.zeros([0, 2], i64), np.zeros([0], f32), A([3, 4], i64)])
    SM("half", [a[0], a[1].astype(f16), a[2]])
    SM("bfloat16", [a[0], tf.constant(a[1], tf.bfloat16), a[2]])
    SM("nan", sp([((0, 0), nan), ((0, 1), 1.0), ((1, 0), 2.0), ((1, 1), nan), ((2, 2), 1.0)], [3, 3]))
    SM("out of bounds", sp([((0, 9), 1.0), ((0, 1), 2.0)], [2, 2]))
    SM("err rank mismatch", [a[0], a[1], A([3, 4, 5], i64)])
    SM("err values count", [a[0], a[1][:3], a[2]])
    SM("err negative shape", [a[0], a[1], A([3, -4], i64)])
    SM("err rank 1", [A([[0], [1]], i64), A([1.0, 2.0], f32), A([3], i64)])
    SM("err indices", [A([0, 1], i64), A([1.0, 2.0], f32), A([3, 3], i64)])
    SM("err values", [a[0], a[1].reshape(2, 2), a[2]])

    def RED(op, name, x, axes, keep=False, **kw):
        case("%s %s" % (op, name), op, [("input_indices", x[0]), ("input_values", x[1]), ("input_shape", x[2]),
                                        ("reduction_axes", A(axes, i32))], {"keep_dims": keep}, **kw)
    x3 = sp([((0, 0, 1), 1.5), ((0, 1, 0), 2.0), ((0, 1, 1), -3.0), ((1, 0, 0), 4.0), ((1, 1, 1), 0.25), ((1, 0, 1), 8.0)], [2, 2, 2])
    for op in ("SparseReduceSumSparse", "SparseReduceMaxSparse"):
        for axes in ([1], [0], [2], [-1], [0, 2], [1, 0], [0, 1, 2], []):
            for keep in (False, True):
                RED(op, "axes %s keep %d" % (axes, keep), x3, axes, keep)
        RED(op, "scalar axis", x3, 1)
        for dt in (f64, i32, i64, i8, u8, i16, u16, f16):
            RED(op, np.dtype(dt).name, [x3[0], (x3[1] * 4).astype(dt), x3[2]], [1])
        RED(op, "unsorted", sp([((1, 1), 1.0), ((0, 2), 2.0), ((0, 0), 3.0), ((1, 0), -4.0)], [2, 3]), [1])
        RED(op, "empty", [np.zeros([0, 2], i64), np.zeros([0], f32), A([3, 4], i64)], [1])
        RED(op, "err axis", x3, [3])
        RED(op, "err axis neg", x3, [-4])
        RED(op, "err shape", [x3[0], x3[1], A([[2, 2, 2]], i64)], [1])
        RED(op, "err values", [x3[0], x3[1][:4], x3[2]], [1])
    RED("SparseReduceSumSparse", "complex64", [x3[0], (x3[1] * (1 + 2j)).astype(c64), x3[2]], [1])
    RED("SparseReduceSumSparse", "complex128", [x3[0], (x3[1] * (1 - 1j)).astype(c128), x3[2]], [0, 1])
    RED("SparseReduceMaxSparse", "negatives", sp([((0, 0), -1.0), ((0, 1), -2.0), ((1, 1), -0.5)], [2, 2]), [1])
    RED("SparseReduceMaxSparse", "nan", sp([((0, 0), nan), ((0, 1), 2.0), ((1, 0), 2.0), ((1, 1), nan), ((2, 0), -inf)], [3, 2]), [1])
    RED("SparseReduceMaxSparse", "-inf double", sp([((0, 0), -inf)], [3, 2], f64), [1])
    RED("SparseReduceMaxSparse", "int8 min", sp([((0, 0), -128), ((1, 1), 5)], [3, 2], i8), [1])
    RED("SparseReduceSumSparse", "int32 wrap", sp([((0, 0), 2**31 - 1), ((0, 1), 5)], [3, 2], i32), [1])
    RED("SparseReduceSumSparse", "out of bounds", sp([((0, 9), 1.0), ((0, 1), 2.0)], [2, 2]), [1])
    RED("SparseReduceSumSparse", "err rank mismatch", [x3[0], x3[1], A([2, 2], i64)], [1])
    RED("SparseReduceSumSparse", "err negative shape", [x3[0], x3[1], A([2, -2, 2], i64)], [1])
    RED("SparseReduceSumSparse", "err axes rank", x3, [[1]])


def counts():
    def D(name, x, w, **attrs):
        at = {"minlength": -1, "maxlength": -1, "binary_output": False}
        at.update(attrs)
        case("DenseCountSparseOutput " + name, "DenseCountSparseOutput", [("values", x), ("weights", w)], at)
    x2 = A([[1, 2, 2, 5], [0, 0, 7, 4], [3, 3, 3, 3]], i32)
    for vdt in (i32, i64):
        for wdt in (i32, i64, f32, f64):
            D("%s %s" % (np.dtype(vdt).name, np.dtype(wdt).name), x2.astype(vdt), np.zeros([0], wdt))
            D("weights %s %s" % (np.dtype(vdt).name, np.dtype(wdt).name), x2.astype(vdt), (np.arange(12).reshape(3, 4) * 0.5 + 0.25).astype(wdt))
    D("1-D", A([4, 1, 1, 0, 9, 3], i64), np.zeros([0], f32))
    D("1-D weights", A([4, 1, 1, 0, 9, 3], i64), A([0.5, 1, 2, 3, 4, 5], f32))
    D("err negative", A([[1, -2]], i32), np.zeros([0], i32))
    D("err negative before weights", A([[1, -2]], i32), np.ones([3], f32))
    D("err minlength", x2, np.zeros([0], i32), minlength=-2)
    D("err maxlength", x2, np.zeros([0], i32), maxlength=-5)
    D("binary", x2, np.zeros([0], i64), binary_output=True)
    D("binary weights", x2, np.ones([3, 4], f32) * 3, binary_output=True)
    D("minlength", x2, np.zeros([0], i32), minlength=10)
    D("minlength small", x2, np.zeros([0], i32), minlength=2)
    D("maxlength", x2, np.zeros([0], i32), maxlength=3)
    D("maxlength and min", x2, np.zeros([0], f32), maxlength=4, minlength=9)
    D("empty 1-D", np.zeros([0], i32), np.zeros([0], i32))
    D("err rank", np.zeros([2, 2, 2], i32), np.zeros([0], i32))
    D("err weights", x2, np.ones([3, 3], f32))
    D("err zero batch", np.zeros([0, 3], i32), np.zeros([0], i32))

    def SPC(name, x, w, **attrs):
        at = {"minlength": -1, "maxlength": -1, "binary_output": False}
        at.update(attrs)
        case("SparseCountSparseOutput " + name, "SparseCountSparseOutput",
             [("indices", x[0]), ("values", x[1]), ("dense_shape", x[2]), ("weights", w)], at)
    s2 = sp([((0, 0), 3), ((0, 2), 1), ((0, 3), 3), ((2, 1), 0), ((2, 2), 8), ((3, 0), 2)], [4, 5], i64)
    for vdt in (i32, i64):
        for wdt in (i32, i64, f32, f64):
            SPC("%s %s" % (np.dtype(vdt).name, np.dtype(wdt).name), [s2[0], s2[1].astype(vdt), s2[2]], np.zeros([0], wdt))
            SPC("weights %s %s" % (np.dtype(vdt).name, np.dtype(wdt).name), [s2[0], s2[1].astype(vdt), s2[2]],
                A([0.5, 1.5, 2, 3, 4, 5], wdt))
    SPC("binary", s2, np.zeros([0], f32), binary_output=True)
    SPC("minlength", s2, np.zeros([0], i64), minlength=12)
    SPC("maxlength", s2, np.zeros([0], i64), maxlength=4)
    SPC("1-D", sp([((1,), 2), ((3,), 2), ((4,), 0)], [6], i64), np.zeros([0], i64))
    SPC("unsorted rows", sp([((2, 0), 1), ((0, 0), 1), ((2, 1), 4)], [3, 2], i64), np.zeros([0], i64))
    SPC("empty", [np.zeros([0, 2], i64), np.zeros([0], i64), A([2, 3], i64)], np.zeros([0], i64))
    SPC("err index", [A([[0, 0], [5, 1]], i64), A([1, 2], i64), A([4, 4], i64)], np.zeros([0], i64))
    SPC("err values", [s2[0], s2[1][:3], s2[2]], np.zeros([0], i64))
    SPC("err negative", [s2[0], -s2[1], s2[2]], np.zeros([0], i64))
    SPC("err negative before weights", [s2[0], -s2[1], s2[2]], np.ones([2], f32))
    SPC("err weights", s2, A([1.0, 2.0], f32))
    SPC("err shape rank", [s2[0], s2[1], A([4, 5, 6], i64)], np.zeros([0], i64))
    SPC("err zero batch", [np.zeros([0, 2], i64), np.zeros([0], i64), A([0, 3], i64)], np.zeros([0], i64))

    def RC(name, splits, vals, w, **attrs):
        at = {"minlength": -1, "maxlength": -1, "binary_output": False}
        at.update(attrs)
        case("RaggedCountSparseOutput " + name, "RaggedCountSparseOutput",
             [("splits", A(splits, i64)), ("values", vals), ("weights", w)], at)
    rv = A([1, 1, 4, 0, 2, 2, 2, 5, 6], i64)
    for vdt in (i32, i64):
        for wdt in (i32, i64, f32, f64):
            RC("%s %s" % (np.dtype(vdt).name, np.dtype(wdt).name), [0, 3, 3, 7, 9], rv.astype(vdt), np.zeros([0], wdt))
            RC("weights %s %s" % (np.dtype(vdt).name, np.dtype(wdt).name), [0, 3, 3, 7, 9], rv.astype(vdt),
               (np.arange(9) * 0.5 + 0.25).astype(wdt))
    RC("binary", [0, 3, 3, 7, 9], rv, np.zeros([0], f32), binary_output=True)
    RC("minlength", [0, 3, 3, 7, 9], rv, np.zeros([0], i64), minlength=11)
    RC("maxlength", [0, 3, 3, 7, 9], rv, np.zeros([0], i64), maxlength=2)
    RC("err splits start", [1, 3, 9], rv, np.zeros([0], i64))
    RC("err splits end", [0, 3, 8], rv, np.zeros([0], i64))
    RC("err splits short", [0], rv[:0], np.zeros([0], i64))
    RC("splits out of order", [0, 5, 3, 9], rv, np.zeros([0], i64))
    RC("err negative", [0, 3, 3, 7, 9], -rv, np.zeros([0], i64))
    RC("err weights", [0, 3, 3, 7, 9], rv, A([1.0], f32))

    def H(name, tc, sc, nt, **kw):
        case("ComputeAccidentalHits " + name, "ComputeAccidentalHits", [("true_classes", A(tc, i64)), ("sampled_candidates", A(sc, i64))],
             {"num_true": nt, "seed": 0, "seed2": 0}, **kw)
    H("one true", [[1], [5], [3], [8]], [5, 3, 9, 1, 0], 1)
    H("two true", [[1, 4], [5, 5], [0, 2]], [4, 5, 1, 7], 2)
    H("repeated samples", [[2, 3], [3, 9]], [3, 2, 3, 3, 7], 2)
    H("no hits", [[10], [11]], [1, 2, 3], 1)
    H("no samples", [[1], [2]], np.zeros([0], i64), 1)
    H("seed attrs", [[1, 2]], [2, 1], 2)
    H("err num_true", [[1, 2]], [2, 1], 3)
    H("err sampled rank", [[1, 2]], [[2, 1]], 2)


def ragged_cross():
    def RX(name, order, rag=(), sparse=(), dense=(), hashed=False, buckets=0, key=0, sdt=tf.int64, **kw):
        ins = [("ragged_values", [r[0] for r in rag]), ("ragged_row_splits", [r[1] for r in rag]),
               ("sparse_indices", [x[0] for x in sparse]), ("sparse_values", [x[1] for x in sparse]),
               ("sparse_shape", [x[2] for x in sparse]), ("dense_inputs", list(dense))]
        case("RaggedCross " + name, "RaggedCross", ins,
             {"input_order": order, "hashed_output": hashed, "num_buckets": buckets, "hash_key": key,
              "out_values_type": tf.int64 if hashed else tf.string, "out_row_splits_type": sdt}, **kw)
    r1 = (S([b"a", b"b", b"c", b"d", b"e"]), A([0, 2, 2, 5], i64))
    r2 = (A([7, 8, 9, 10], i64), A([0, 1, 3, 4], i64))
    r2i = (r2[0], r2[1].astype(i32))  # TF reads ragged splits as out_row_splits_type (other types crash it)
    d1 = S([[b"x"], [b"y"], [b"z"]])
    d2 = A([[1, 2], [3, 4], [5, 6]], i64)
    s1 = [A([[0, 0], [1, 0], [1, 1], [2, 0]], i64), S([b"p", b"q", b"r", b"s"]), A([3, 2], i64)]
    s2 = [A([[0, 0], [2, 0], [2, 3]], i64), A([11, 12, 13], i64), A([3, 4], i64)]
    for hashed in (False, True):
        h = " hashed" if hashed else ""
        RX("RR" + h, "RR", rag=[r1, r2], hashed=hashed)
        RX("RD" + h, "RD", rag=[r1], dense=[d1], hashed=hashed)
        RX("DR" + h, "DR", rag=[r2], dense=[d2], hashed=hashed)
        RX("RSD" + h, "RSD", rag=[r1], sparse=[s1], dense=[d2], hashed=hashed)
        RX("SDR" + h, "SDR", rag=[r2], sparse=[s2], dense=[d1], hashed=hashed)
        RX("SS" + h, "SS", sparse=[s1, s2], hashed=hashed)
        RX("DD" + h, "DD", dense=[d1, d2], hashed=hashed)
        RX("one ragged" + h, "R", rag=[r1], hashed=hashed)
        RX("int32 splits" + h, "RD", rag=[r2i], dense=[d1], hashed=hashed, sdt=tf.int32)
    for buckets, key in ((0, 0), (10, 0), (0, 42), (1000, 7), (3, -1)):
        RX("hash buckets %d key %d" % (buckets, key), "RDS", rag=[r1], sparse=[s2], dense=[d2], hashed=True, buckets=buckets, key=key)
    RX("empty batch", "RD", rag=[(S([]), A([0], i64))], dense=[np.zeros([0, 2], i64)])
    RX("empty rows", "RR", rag=[(S([b"a"]), A([0, 0, 1, 1], i64)), (A([1, 2], i64), A([0, 1, 1, 2], i64))])
    RX("unicode", "RD", rag=[(S(["é".encode(), b""]), A([0, 1, 2], i64))], dense=[S([[b"1"], [b"2"]])])
    RX("err batch", "RD", rag=[r1], dense=[d1[:2]])
    RX("err batch sparse", "RS", rag=[r1], sparse=[[s2[0], s2[1], A([4, 4], i64)]])
    RX("err rank ragged", "R", rag=[(S([[b"a"]]), A([0, 1], i64))])
    RX("err rank dense", "D", dense=[S([b"a"])])
    RX("err rank sparse", "S", sparse=[[A([[0, 0, 0]], i64), A([1], i64), A([1, 1, 1], i64)]])
    RX("err splits start", "R", rag=[(S([b"a", b"b"]), A([1, 2], i64))])
    RX("err splits decreasing", "R", rag=[(S([b"a", b"b"]), A([0, 2, 1, 2], i64))])
    RX("err splits end", "R", rag=[(S([b"a", b"b"]), A([0, 1], i64))])
    RX("err splits empty", "R", rag=[(S([]), np.zeros([0], i64))])
    RX("err order length", "RR", rag=[r1])
    RX("err order char", "X", rag=[r1])
    RX("err order too many R", "RR", rag=[r1], dense=[d1])


def chain(name, feeds, nodes, fn):
    """A graph of several nodes (test_ops_c2's chain cases): placeholders i0.. fed with `feeds`, nodes
    n0.. each (op, input names, attrs), the last one's outputs fetched; TF's answer from fn(*feeds)
    (eager raw_ops: variants cannot be fed or written, so the ragged variant ops are checked by what
    comes out of their round trips)."""
    flat = [tf.convert_to_tensor(x) for x in feeds]
    err, outs = None, []
    try:
        r = fn(*flat)
        outs = [o for x in (r if isinstance(r, (list, tuple)) else [r]) for o in (x if isinstance(x, list) else [x])]
    except (tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError, tf.errors.UnimplementedError) as e:
        err = g.tf_error_text(e)
    text = "|".join(" ".join('input: "%s"' % i for i in ins) + ' op: "%s" ' % op +
                    " ".join(g.attr_text(k, v) for k, v in sorted(attrs.items())) for op, ins, attrs in nodes)
    g.CASES.append((name, text, flat, outs, err))


def ragged_variants():
    R = tf.raw_ops

    def TO(splits, values, batched, ins=None):
        ins = ins or ["i%d" % k for k in range(len(splits) + 1)]
        return ("RaggedTensorToVariant", ins, {"RAGGED_RANK": len(splits), "Tvalues": tf.as_dtype(values.dtype),
                                               "Tsplits": tf.as_dtype(splits[0].dtype) if splits else tf.int64,
                                               "batched_input": batched})

    def FROM(src, in_rank, out_rank, tv, ts=tf.int64):
        return ("RaggedTensorFromVariant", [src], {"input_ragged_rank": in_rank, "output_ragged_rank": out_rank, "Tvalues": tv, "Tsplits": ts})

    def RT(name, splits, values, in_rank, out_rank, batched=True, tv=None, ts=None, mid=None):
        """ToVariant(splits, values) [-> mid] -> FromVariant."""
        tv = tv or tf.as_dtype(values.dtype)
        ts = ts or (tf.as_dtype(splits[0].dtype) if splits else tf.int64)
        nodes = [TO(splits, values, batched)]
        src = "n0"
        if mid:
            nodes.append(mid[0])
            src = "n1"
        nodes.append(FROM(src, in_rank, out_rank, tv, ts))

        def fn(*xs):
            e = R.RaggedTensorToVariant(rt_nested_splits=list(xs[:len(splits)]), rt_dense_values=xs[len(splits)], batched_input=batched)
            if mid:
                e = mid[1](e)
            return R.RaggedTensorFromVariant(encoded_ragged=e, input_ragged_rank=in_rank, output_ragged_rank=out_rank, Tvalues=tv, Tsplits=ts)
        chain("ragged variant " + name, list(splits) + [values], nodes, fn)

    sp1 = A([0, 2, 2, 5], i64)
    v5 = np.arange(5, dtype=f32) * 1.5
    RT("batched rank 1", [sp1], v5, 0, 1)
    RT("batched rank 1 infer", [sp1], v5, -1, 1)
    for dt in (f64, i32, i64, u8, bool, f16):
        RT("batched %s" % np.dtype(dt).name, [sp1], (np.arange(5) % 3).astype(dt), 0, 1)
    RT("batched string", [sp1], S([b"a", b"bc", b"", b"d", b"e"]), 0, 1)
    RT("batched int32 splits", [sp1.astype(i32)], v5, 0, 1)
    RT("batched inner dims", [sp1], np.arange(10, dtype=f32).reshape(5, 2), 0, 1)
    sp0, sp2 = A([0, 1, 3], i64), A([0, 2, 2, 5], i64)
    RT("batched rank 2", [sp0, sp2], v5, 1, 2)
    RT("batched rank 2 infer", [sp0, sp2], v5, -1, 2)
    RT("batched rank 2 int32", [sp0.astype(i32), sp2.astype(i32)], np.arange(10, dtype=f32).reshape(5, 2), 1, 2)
    RT("batched rank 0", [], np.arange(6, dtype=i32).reshape(3, 2), 0, 1)
    RT("batched empty rows", [A([0, 0, 0], i64)], np.zeros([0], f32), 0, 1)
    RT("batched no rows", [A([0], i64)], np.zeros([0], f32), 0, 1)
    RT("unbatched", [sp1], v5, 1, 1, batched=False)
    RT("unbatched infer", [sp1], v5, -1, 1, batched=False)
    RT("unbatched rank 2", [sp0, sp2], v5, 2, 2, batched=False)
    RT("unbatched dense", [], v5, 0, 0, batched=False)
    RT("unbatched scalar", [], np.float32(3.5), 0, 0, batched=False)
    # a row picked out of the batched vector (what map_fn's loop body decodes)
    nodes = [TO([sp1], v5, True), ("GatherV2", ["n0", "i2", "i3"], {"Tparams": tf.variant, "Tindices": tf.int32, "Taxis": tf.int32, "batch_dims": 0}),
             FROM("n1", 0, 0, tf.float32)]
    for row in (0, 1, 2):
        chain("ragged variant row %d" % row, [sp1, v5, A(row, i32), A(0, i32)], nodes,
              lambda s_, v_, r_, a_: R.RaggedTensorFromVariant(encoded_ragged=tf.gather(R.RaggedTensorToVariant(
                  rt_nested_splits=[s_], rt_dense_values=v_, batched_input=True), r_), input_ragged_rank=0, output_ragged_rank=0,
                  Tvalues=tf.float32, Tsplits=tf.int64))
    nodes2 = [TO([sp0, sp2], v5, True), nodes[1], FROM("n1", 1, 1, tf.float32)]
    chain("ragged variant rank 2 row 1", [sp0, sp2, v5, A(1, i32), A(0, i32)], [(nodes2[0][0], ["i0", "i1", "i2"], nodes2[0][2]),
                                                                              ("GatherV2", ["n0", "i3", "i4"], nodes[1][2]), nodes2[2]],
          lambda a_, b_, v_, r_, x_: R.RaggedTensorFromVariant(encoded_ragged=tf.gather(R.RaggedTensorToVariant(
              rt_nested_splits=[a_, b_], rt_dense_values=v_, batched_input=True), r_), input_ragged_rank=1, output_ragged_rank=1,
              Tvalues=tf.float32, Tsplits=tf.int64))
    # a [2, 2] variant tensor: two uniform levels
    sp4 = A([0, 1, 1, 3, 4], i64)
    chain("ragged variant 2-D", [sp4, A([1, 2, 3, 4], i64), A([2, 2], i32)],
          [TO([sp4], A([1, 2, 3, 4], i64), True), ("Reshape", ["n0", "i2"], {"T": tf.variant, "Tshape": tf.int32}),
           FROM("n1", 0, 2, tf.int64)],
          lambda s_, v_, sh: R.RaggedTensorFromVariant(encoded_ragged=tf.reshape(R.RaggedTensorToVariant(
              rt_nested_splits=[s_], rt_dense_values=v_, batched_input=True), sh), input_ragged_rank=0, output_ragged_rank=2,
              Tvalues=tf.int64, Tsplits=tf.int64))
    # two batched encodings stacked: inner shapes must agree
    e3, e2 = np.arange(6, dtype=f32).reshape(2, 3), np.arange(4, dtype=f32).reshape(2, 2)
    spl = A([0, 1, 2], i64)
    for name, w in (("stack", e3), ("err stack inner dims", e2)):
        chain("ragged variant " + name, [spl, e3, spl, w, A(0, i32), A(0, i32)],
              [TO([spl], e3, True, ["i0", "i1"]), TO([spl], w, True, ["i2", "i3"]),
               ("GatherV2", ["n0", "i4", "i5"], {"Tparams": tf.variant, "Tindices": tf.int32, "Taxis": tf.int32, "batch_dims": 0}),
               ("GatherV2", ["n1", "i4", "i5"], {"Tparams": tf.variant, "Tindices": tf.int32, "Taxis": tf.int32, "batch_dims": 0}),
               ("Pack", ["n2", "n3"], {"T": tf.variant, "N": 2, "axis": 0}), FROM("n4", 0, 1, tf.float32)],
              lambda s1, v1, s2, v2, k, x: R.RaggedTensorFromVariant(encoded_ragged=tf.stack([
                  R.RaggedTensorToVariant(rt_nested_splits=[s1], rt_dense_values=v1, batched_input=True)[0],
                  R.RaggedTensorToVariant(rt_nested_splits=[s2], rt_dense_values=v2, batched_input=True)[0]]),
                  input_ragged_rank=0, output_ragged_rank=1, Tvalues=tf.float32, Tsplits=tf.int64))
    # variant vectors through the array ops that move elements (each shares the objects)
    def MOVE(name, extra, mid_nodes, tfop, out_rank):
        nodes = [TO([sp1], v5, True)] + mid_nodes + [FROM("n%d" % len(mid_nodes), 0, out_rank, tf.float32)]
        chain("ragged variant through " + name, [sp1, v5] + extra, nodes,
              lambda s_, v_, *xs: R.RaggedTensorFromVariant(encoded_ragged=tfop(R.RaggedTensorToVariant(
                  rt_nested_splits=[s_], rt_dense_values=v_, batched_input=True), *xs), input_ragged_rank=0, output_ragged_rank=out_rank,
                  Tvalues=tf.float32, Tsplits=tf.int64))
    V = tf.variant
    MOVE("Tile", [A([2], i32)], [("Tile", ["n0", "i2"], {"T": V, "Tmultiples": tf.int32})], lambda e, m_: tf.tile(e, m_), 1)
    MOVE("Transpose", [A([3, 1], i32), A([1, 0], i32)],
         [("Reshape", ["n0", "i2"], {"T": V, "Tshape": tf.int32}), ("Transpose", ["n1", "i3"], {"T": V, "Tperm": tf.int32})],
         lambda e, sh, pm: tf.transpose(tf.reshape(e, sh), pm), 2)
    MOVE("StridedSlice", [A([2], i32), A([-4], i32), A([-1], i32)],
         [("StridedSlice", ["n0", "i2", "i3", "i4"], {"T": V, "Index": tf.int32, "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
                                                      "new_axis_mask": 0, "shrink_axis_mask": 0})],
         lambda e, b_, e_, st_: tf.strided_slice(e, b_, e_, st_), 1)
    # TF's messages
    RT("err splits end", [A([0, 2, 9], i64)], v5, 0, 1)
    RT("err splits start", [A([1, 2, 5], i64)], v5, 0, 1)
    RT("err splits order", [A([0, 3, 2, 5], i64)], v5, 0, 1)
    RT("err splits empty", [np.zeros([0], i64)], v5, 0, 1)
    RT("err unbatched splits", [A([0, 2, 9], i64)], v5, 1, 1, batched=False)
    RT("err Tvalues", [sp1], v5, 0, 1, tv=tf.int32)
    RT("err input rank", [sp1], v5, 1, 2)
    RT("err output rank", [sp1], v5, 0, 2)
    RT("err infer", [sp1], v5, -1, 0)
    RT("err scalar values", [], v5, 0, 1)


def main():
    sparse_family()
    counts()
    ragged_cross()
    g.write_unit_header("c2_cases")
    g.CASES.clear()
    ragged_variants()
    g.write_unit_header("c2_chain_cases")
    return


if __name__ == "__main__":
    main()
