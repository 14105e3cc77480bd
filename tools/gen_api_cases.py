#!/usr/bin/env python3
"""gen_api_cases.py - writes tests/unit/api_cases.h: the ops added in session 17 (k4) after
tools/sweep_ops.py found them missing from what TF's public Python API emits, against TensorFlow
(eager tf.raw_ops, TF's CPU kernels): the array_extra family (HistogramFixedWidth,
ReverseSequence, DynamicPartition, DynamicStitch / ParallelDynamicStitch, Diag / DiagPart,
UnravelIndex, InvertPermutation, GuaranteeConst, ConjugateTranspose, DepthToSpace /
SpaceToDepth), the nn_loss family (L2Loss, SoftmaxCrossEntropyWithLogits,
SparseSoftmaxCrossEntropyWithLogits, InTopK / InTopKV2, LRN) and the unary math ops over complex
inputs (complex.c). Every dtype the CPU kernels register that matters, edge values and TF's
error messages for bad input.

Uses the machinery of tools/gen_array_cases.py. test_ops_api compares floats within 1e-5
relative. Run: build/venv/bin/python tools/gen_api_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
A = g.A
nan, inf = float("nan"), float("inf")
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
rng = np.random.default_rng(17)


def U(*shape, dt=f32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dt)


def array_extra():
    # HistogramFixedWidth: every value dtype, both out dtypes, clipping below/above, bad input
    vals = [-1.0, 0.0, 0.5, 1.0, 2.49, 2.5, 4.99, 5.0, 100.0, -100.0]
    for dt in (f32, f64):
        for odt in (tf.int32, tf.int64):
            case("HistogramFixedWidth %s %s" % (np.dtype(dt).name, odt.name), "HistogramFixedWidth",
                 [("values", A(vals, dt)), ("value_range", A([0.0, 5.0], dt)), ("nbins", A(5, i32))], {"dtype": odt})
    for dt in (i32, i64):
        case("HistogramFixedWidth %s" % np.dtype(dt).name, "HistogramFixedWidth",
             [("values", A([-3, 0, 1, 2, 3, 9, 10, 11, 4], dt)), ("value_range", A([0, 10], dt)), ("nbins", A(4, i32))],
             {"dtype": tf.int32})
    case("HistogramFixedWidth 2-D", "HistogramFixedWidth",
         [("values", U(3, 4, lo=-1, hi=6)), ("value_range", A([0.0, 5.0])), ("nbins", A(3, i32))], {"dtype": tf.int32})
    case("HistogramFixedWidth empty", "HistogramFixedWidth",
         [("values", np.zeros([0], f32)), ("value_range", A([0.0, 5.0])), ("nbins", A(3, i32))], {"dtype": tf.int32})
    case("HistogramFixedWidth err nbins", "HistogramFixedWidth",
         [("values", A([1.0])), ("value_range", A([0.0, 5.0])), ("nbins", A(0, i32))], {"dtype": tf.int32})
    case("HistogramFixedWidth err range", "HistogramFixedWidth",
         [("values", A([1.0])), ("value_range", A([5.0, 5.0])), ("nbins", A(2, i32))], {"dtype": tf.int32},
         err_needle="value_range should satisfy value_range[0] < value_range[1]")

    # ReverseSequence
    x = np.arange(3 * 5 * 2).reshape(3, 5, 2).astype(f32)
    for ldt in (i32, i64):
        case("ReverseSequence seq1 batch0 %s" % np.dtype(ldt).name, "ReverseSequence",
             [("input", x), ("seq_lengths", A([2, 5, 0], ldt))], {"seq_dim": 1, "batch_dim": 0})
    case("ReverseSequence seq0 batch2", "ReverseSequence",
         [("input", np.arange(24).reshape(4, 3, 2).astype(i64)), ("seq_lengths", A([3, 4], i64))], {"seq_dim": 0, "batch_dim": 2})
    case("ReverseSequence string", "ReverseSequence",
         [("input", np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]], dtype=object)), ("seq_lengths", A([3, 1], i32))],
         {"seq_dim": 1, "batch_dim": 0})
    case("ReverseSequence err len>dim", "ReverseSequence", [("input", x), ("seq_lengths", A([2, 6, 0], i32))],
         {"seq_dim": 1, "batch_dim": 0})
    case("ReverseSequence err negative", "ReverseSequence", [("input", x), ("seq_lengths", A([2, -1, 0], i32))],
         {"seq_dim": 1, "batch_dim": 0})
    case("ReverseSequence err count", "ReverseSequence", [("input", x), ("seq_lengths", A([2, 1], i32))],
         {"seq_dim": 1, "batch_dim": 0})
    case("ReverseSequence err same dim", "ReverseSequence", [("input", x), ("seq_lengths", A([2, 1, 1], i32))],
         {"seq_dim": 0, "batch_dim": 0})

    # DynamicPartition / DynamicStitch
    case("DynamicPartition 1-D", "DynamicPartition",
         [("data", A([10, 20, 30, 40, 50], i32)), ("partitions", A([0, 2, 1, 0, 2], i32))], {"num_partitions": 4})
    case("DynamicPartition rows", "DynamicPartition",
         [("data", U(5, 3)), ("partitions", A([1, 1, 0, 1, 0], i32))], {"num_partitions": 2})
    case("DynamicPartition 2-D partitions", "DynamicPartition",
         [("data", U(2, 3, 2, dt=f64)), ("partitions", A([[0, 1, 1], [1, 0, 0]], i32))], {"num_partitions": 2})
    case("DynamicPartition string", "DynamicPartition",
         [("data", np.array([b"x", b"y", b"z"], dtype=object)), ("partitions", A([1, 0, 1], i32))], {"num_partitions": 2})
    case("DynamicPartition err range", "DynamicPartition",
         [("data", A([1, 2, 3], i32)), ("partitions", A([0, 3, 1], i32))], {"num_partitions": 2})
    case("DynamicPartition err shape", "DynamicPartition",
         [("data", A([1, 2, 3], i32)), ("partitions", A([0, 1], i32))], {"num_partitions": 2})
    case("DynamicStitch", "DynamicStitch",
         [("indices", [A([0, 2], i32), A([1, 3, 2], i32)]), ("data", [U(2, 2), U(3, 2)])])
    case("DynamicStitch scalar idx", "DynamicStitch",
         [("indices", [A(1, i32), A([0, 2], i32)]), ("data", [A([7, 8], i64), A([[1, 2], [3, 4]], i64)])])
    case("ParallelDynamicStitch", "ParallelDynamicStitch",
         [("indices", [A([0, 2], i32), A([1, 3], i32)]), ("data", [U(2), U(2)])])
    case("DynamicStitch err shape", "DynamicStitch",
         [("indices", [A([0, 2], i32), A([1], i32)]), ("data", [U(2, 2), U(2, 2)])])

    # Diag / DiagPart
    for dt in (f32, f64, i32, i64):
        case("Diag %s" % np.dtype(dt).name, "Diag", [("diagonal", A([[1, 2], [3, 4]], dt))])
        case("DiagPart %s" % np.dtype(dt).name, "DiagPart", [("input", np.arange(16).reshape(2, 2, 2, 2).astype(dt))])
    case("Diag complex", "Diag", [("diagonal", np.array([1 + 2j, 3 - 1j], np.complex64))])
    case("Diag err scalar", "Diag", [("diagonal", A(1.0))])
    case("DiagPart err odd", "DiagPart", [("input", U(2, 2, 2))], err_needle="even and positive, got shape [2,2,2]")
    case("DiagPart err mismatch", "DiagPart", [("input", U(2, 3))])

    # UnravelIndex / InvertPermutation
    for dt in (i32, i64):
        case("UnravelIndex %s" % np.dtype(dt).name, "UnravelIndex", [("indices", A([0, 5, 11, 7], dt)), ("dims", A([3, 4], dt))])
        case("UnravelIndex scalar %s" % np.dtype(dt).name, "UnravelIndex", [("indices", A(22, dt)), ("dims", A([2, 3, 4], dt))])
        case("InvertPermutation %s" % np.dtype(dt).name, "InvertPermutation", [("x", A([3, 4, 0, 2, 1], dt))])
    case("UnravelIndex err bounds", "UnravelIndex", [("indices", A([12], i32)), ("dims", A([3, 4], i32))],
         err_needle="index out of bounds")
    case("InvertPermutation err dup", "InvertPermutation", [("x", A([0, 0, 1], i32))])
    case("InvertPermutation err range", "InvertPermutation", [("x", A([0, 3, 1], i32))])
    case("InvertPermutation err rank", "InvertPermutation", [("x", A([[0]], i32))])
    case("InvertPermutation empty", "InvertPermutation", [("x", np.zeros([0], i32))])

    case("GuaranteeConst", "GuaranteeConst", [("input", U(2, 3))])
    for dt in (tf.float32, tf.int64, tf.string):
        case("Empty init %s" % dt.name, "Empty", [("shape", A([2, 3], i32))], {"dtype": dt, "init": True})
    case("Empty scalar", "Empty", [("shape", np.zeros([0], i32))], {"dtype": tf.float32, "init": True})
    case("Empty zero dim", "Empty", [("shape", A([0, 4], i32))], {"dtype": tf.float32})
    for dt in (np.complex64, np.complex128):
        z = (U(2, 3, 2, dt=f64) + 1j * U(2, 3, 2, dt=f64)).astype(dt)
        case("ConjugateTranspose %s" % np.dtype(dt).name, "ConjugateTranspose", [("x", z), ("perm", A([2, 0, 1], i32))])
        case("ConjugateTranspose identity %s" % np.dtype(dt).name, "ConjugateTranspose", [("x", z), ("perm", A([0, 1, 2], i64))])
    case("ConjugateTranspose float", "ConjugateTranspose", [("x", U(2, 3)), ("perm", A([1, 0], i32))])
    case("ConjugateTranspose err perm", "ConjugateTranspose", [("x", U(2, 3)), ("perm", A([1, 2], i32))],
         err_needle="out of range")

    # DepthToSpace / SpaceToDepth
    for dt in (f32, i32, np.uint8, f64):
        case("DepthToSpace bs2 %s" % np.dtype(dt).name, "DepthToSpace",
             [("input", np.arange(2 * 2 * 3 * 8).reshape(2, 2, 3, 8).astype(dt))], {"block_size": 2})
        case("SpaceToDepth bs2 %s" % np.dtype(dt).name, "SpaceToDepth",
             [("input", np.arange(2 * 4 * 6 * 3).reshape(2, 4, 6, 3).astype(dt))], {"block_size": 2})
    case("DepthToSpace bs3", "DepthToSpace", [("input", U(1, 2, 2, 18))], {"block_size": 3})
    case("SpaceToDepth bs3", "SpaceToDepth", [("input", U(1, 3, 6, 2))], {"block_size": 3})
    case("DepthToSpace string", "DepthToSpace",
         [("input", np.array([b"a", b"b", b"c", b"d"], dtype=object).reshape(1, 1, 1, 4))], {"block_size": 2})
    case("DepthToSpace err depth", "DepthToSpace", [("input", U(1, 2, 2, 6))], {"block_size": 2})
    case("SpaceToDepth err size", "SpaceToDepth", [("input", U(1, 3, 4, 2))], {"block_size": 2})
    case("DepthToSpace err rank", "DepthToSpace", [("input", U(2, 2, 8))], {"block_size": 2})


def nn_loss():
    for dt in (f32, f64, np.float16):
        case("L2Loss %s" % np.dtype(dt).name, "L2Loss", [("t", U(3, 4, dt=dt))])
    case("L2Loss bfloat16", "L2Loss", [("t", tf.constant(U(5), tf.bfloat16))])
    case("L2Loss empty", "L2Loss", [("t", np.zeros([0, 3], f32))])
    for dt in (f32, f64):
        lab = np.abs(U(3, 5, dt=dt))
        lab /= lab.sum(1, keepdims=True)
        case("SoftmaxCrossEntropyWithLogits %s" % np.dtype(dt).name, "SoftmaxCrossEntropyWithLogits",
             [("features", U(3, 5, dt=dt, lo=-5, hi=5)), ("labels", lab)])
    case("SoftmaxCrossEntropyWithLogits half", "SoftmaxCrossEntropyWithLogits",
         [("features", U(2, 4, dt=np.float16)), ("labels", A([[0, 1, 0, 0], [0.5, 0.5, 0, 0]], np.float16))])
    case("SoftmaxCrossEntropyWithLogits broadcast", "SoftmaxCrossEntropyWithLogits",
         [("features", U(3, 4)), ("labels", A([[0.25, 0.25, 0.5, 0.0]]))])
    case("SoftmaxCrossEntropyWithLogits large", "SoftmaxCrossEntropyWithLogits",
         [("features", A([[1000.0, -1000.0, 0.0]])), ("labels", A([[0.0, 1.0, 0.0]]))])
    case("SoftmaxCrossEntropyWithLogits err 1-D", "SoftmaxCrossEntropyWithLogits",
         [("features", U(4)), ("labels", U(4))])
    case("SoftmaxCrossEntropyWithLogits err shapes", "SoftmaxCrossEntropyWithLogits",
         [("features", U(3, 4)), ("labels", U(3, 5))])
    for dt in (f32, f64):
        for ldt in (i32, i64):
            case("SparseSoftmaxCrossEntropyWithLogits %s %s" % (np.dtype(dt).name, np.dtype(ldt).name),
                 "SparseSoftmaxCrossEntropyWithLogits", [("features", U(4, 5, dt=dt, lo=-3, hi=3)), ("labels", A([0, 4, 2, 2], ldt))])
    case("SparseSoftmaxCrossEntropyWithLogits err label", "SparseSoftmaxCrossEntropyWithLogits",
         [("features", U(3, 4)), ("labels", A([1, 5, 0], i32))])
    case("SparseSoftmaxCrossEntropyWithLogits err negative", "SparseSoftmaxCrossEntropyWithLogits",
         [("features", U(3, 4)), ("labels", A([1, -1, 0], i64))])
    case("SparseSoftmaxCrossEntropyWithLogits err rank", "SparseSoftmaxCrossEntropyWithLogits",
         [("features", U(3)), ("labels", A([1, 1, 0], i32))])
    case("SparseSoftmaxCrossEntropyWithLogits err batch", "SparseSoftmaxCrossEntropyWithLogits",
         [("features", U(3, 4)), ("labels", A([1, 1], i32))])
    p = A([[0.1, 0.3, 0.3, 0.2], [nan, 0.5, 0.1, 0.0], [0.4, 0.4, 0.4, 0.4], [1.0, inf, 0.0, -1.0]])
    for k in (1, 2, 4):
        case("InTopKV2 k%d" % k, "InTopKV2", [("predictions", p), ("targets", A([1, 1, 3, 0], i32)), ("k", A(k, i32))])
    case("InTopKV2 int64 out of range", "InTopKV2",
         [("predictions", p), ("targets", A([1, 4, -1, 1], i64)), ("k", A(2, i64))])
    case("InTopKV2 nan target", "InTopKV2", [("predictions", p), ("targets", A([0, 0, 0, 0], i32)), ("k", A(3, i32))])
    case("InTopK", "InTopK", [("predictions", p), ("targets", A([2, 1, 0, 3], i32))], {"k": 2})
    case("InTopKV2 k0", "InTopKV2", [("predictions", p), ("targets", A([1, 1, 3, 0], i32)), ("k", A(0, i32))])
    case("InTopKV2 err batch", "InTopKV2", [("predictions", p), ("targets", A([1, 1], i32)), ("k", A(1, i32))],
         err_needle="must match length of targets")
    x = U(2, 3, 4, 7)
    case("LRN defaults", "LRN", [("input", x)])
    case("LRN r2", "LRN", [("input", x)], {"depth_radius": 2, "bias": 0.5, "alpha": 0.3, "beta": 0.75})
    case("LRN r0", "LRN", [("input", x)], {"depth_radius": 0, "bias": 2.0, "alpha": 1.0, "beta": 1.0})
    case("LRN half", "LRN", [("input", U(1, 2, 2, 5, dt=np.float16))], {"depth_radius": 1})
    case("LRN err rank", "LRN", [("input", U(3, 4))])


def complex_unary():
    z = np.array([0.5 + 0.25j, -1.0 + 2.0j, 0.0 + 0.0j, 3.0 - 1.5j, -0.2 - 0.7j, 1e-4 + 1e-4j], np.complex128)
    for op in ("Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Expm1", "Log", "Log1p", "Reciprocal", "Inv", "Sign", "Sin", "Cos",
               "Tan", "Sinh", "Cosh", "Tanh", "Sigmoid", "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh"):
        for dt in (np.complex64, np.complex128):
            zz = z if op not in ("Rsqrt", "Log", "Reciprocal", "Inv") else z[[0, 1, 3, 4, 5]]
            case("%s %s" % (op, np.dtype(dt).name), op, [("x", zz.astype(dt))])


def sparse():
    x = U(5, 3)
    for op in ("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"):
        for dt in (f32, f64):
            for idt in (i32, i64):
                case("%s %s %s" % (op, np.dtype(dt).name, np.dtype(idt).name), op,
                     [("data", x.astype(dt)), ("indices", A([0, 2, 2, 4, 1], idt)), ("segment_ids", A([0, 0, 2, 2, 3], idt))])
        case("%s empty" % op, op, [("data", x), ("indices", np.zeros([0], i32)), ("segment_ids", np.zeros([0], i32))])
        case("%s 3-D" % op, op, [("data", U(4, 2, 3)), ("indices", A([3, 1], i32)), ("segment_ids", A([1, 1], i32))])
        case("%s WithNumSegments" % op, op + "WithNumSegments",
             [("data", x), ("indices", A([0, 2, 4], i64)), ("segment_ids", A([0, 0, 2], i32)), ("num_segments", A(5, i32))])
        case("%s err unsorted" % op, op, [("data", x), ("indices", A([0, 2], i32)), ("segment_ids", A([1, 0], i32))])
        case("%s err index" % op, op, [("data", x), ("indices", A([0, 7], i32)), ("segment_ids", A([0, 1], i32))])
        case("%s err sizes" % op, op, [("data", x), ("indices", A([0, 1, 2], i32)), ("segment_ids", A([0, 1], i32))])
    case("SparseSegmentSum int32", "SparseSegmentSum",
         [("data", A([[1, 2], [3, 4], [5, 6]], i32)), ("indices", A([0, 2, 1], i32)), ("segment_ids", A([0, 0, 1], i32))])
    case("SparseSegmentMean half", "SparseSegmentMean",
         [("data", U(3, 2, dt=np.float16)), ("indices", A([0, 2, 1], i32)), ("segment_ids", A([0, 0, 1], i32))])
    ind = A([[0, 1], [2, 0], [0, 0], [3, 2], [2, 2]], i64)
    shape = A([5, 3], i64)
    case("SparseReorder", "SparseReorder", [("input_indices", ind), ("input_values", A([1, 2, 3, 4, 5], f32)),
                                              ("input_shape", shape)])
    case("SparseReorder string", "SparseReorder",
         [("input_indices", ind), ("input_values", np.array([b"a", b"b", b"c", b"d", b"e"], dtype=object)), ("input_shape", shape)])
    case("SparseReorder 3-D", "SparseReorder", [("input_indices", A([[1, 0, 1], [0, 2, 0], [1, 0, 0]], i64)),
                                                  ("input_values", A([1, 2, 3], i32)), ("input_shape", A([2, 3, 2], i64))])
    case("SparseReorder err bounds", "SparseReorder",
         [("input_indices", A([[0, 1], [5, 0]], i64)), ("input_values", A([1, 2], f32)), ("input_shape", shape)],
         err_needle="is out of bounds")
    sind = A([[0, 1], [0, 2], [2, 0], [4, 2]], i64)
    for ns in ([15], [3, 5], [-1, 5], [5, 1, 3], [3, -1]):
        case("SparseReshape %s" % ns, "SparseReshape", [("input_indices", sind), ("input_shape", shape), ("new_shape", A(ns, i64))])
    case("SparseReshape err size", "SparseReshape", [("input_indices", sind), ("input_shape", shape), ("new_shape", A([4, 4], i64))])
    case("SparseReshape err two -1", "SparseReshape",
         [("input_indices", sind), ("input_shape", shape), ("new_shape", A([-1, -1], i64))], err_needle="only one")
    case("SparseReshape err multiple", "SparseReshape",
         [("input_indices", sind), ("input_shape", shape), ("new_shape", A([-1, 4], i64))],
         err_needle="Input to reshape is a SparseTensor with 15 dense values, but the requested shape requires a multiple of 4")
    fi = A([[0, 1], [2, 0], [2, 2], [4, 1]], i64)
    for dt in (f32, i64):
        case("SparseFillEmptyRows %s" % np.dtype(dt).name, "SparseFillEmptyRows",
             [("indices", fi), ("values", A([1, 2, 3, 4], dt)), ("dense_shape", A([6, 3], i64)), ("default_value", A(-1, dt))])
    case("SparseFillEmptyRows string", "SparseFillEmptyRows",
         [("indices", fi), ("values", np.array([b"a", b"b", b"c", b"d"], dtype=object)), ("dense_shape", A([5, 3], i64)),
          ("default_value", np.array(b"?", dtype=object))])
    case("SparseFillEmptyRows unordered", "SparseFillEmptyRows",
         [("indices", A([[3, 0], [1, 1], [1, 0]], i64)), ("values", A([1, 2, 3], f32)), ("dense_shape", A([4, 2], i64)),
          ("default_value", A(0, f32))])
    case("SparseFillEmptyRows empty", "SparseFillEmptyRows",
         [("indices", np.zeros([0, 2], i64)), ("values", np.zeros([0], f32)), ("dense_shape", A([3, 2], i64)),
          ("default_value", A(7, f32))])
    case("SparseFillEmptyRows err row", "SparseFillEmptyRows",
         [("indices", A([[0, 0], [9, 0]], i64)), ("values", A([1, 2], f32)), ("dense_shape", A([4, 2], i64)),
          ("default_value", A(0, f32))], err_needle="indices(1, 0) is invalid")
    mi = A([[0, 1], [1, 0], [1, 2], [0, 1]], i64)
    for dt in (f32, f64, i32):
        for aa in (False, True):
            for ab in (False, True):
                b = (U(4, 3) * 3).astype(dt) if dt != i32 else I(4, 3)
                shape_a = A([3, 3] if not aa else [3, 3], i64)
                bb = b[:3] if not ab else b[:3].T.copy()
                case("SparseTensorDenseMatMul %s adj %d%d" % (np.dtype(dt).name, aa, ab), "SparseTensorDenseMatMul",
                     [("a_indices", mi), ("a_values", A([1, 2, 3, 4], dt)), ("a_shape", shape_a), ("b", bb)],
                     {"adjoint_a": aa, "adjoint_b": ab})
    case("SparseTensorDenseMatMul int32 idx", "SparseTensorDenseMatMul",
         [("a_indices", mi.astype(i32)), ("a_values", A([1, 2, 3, 4], f32)), ("a_shape", A([2, 4], i64)), ("b", U(4, 5))])
    case("SparseTensorDenseMatMul err inner", "SparseTensorDenseMatMul",
         [("a_indices", mi), ("a_values", A([1, 2, 3, 4], f32)), ("a_shape", A([2, 3], i64)), ("b", U(4, 5))],
         err_needle="Cannot multiply A and B because inner dimension does not match: 3 vs. 4")
    case("SparseTensorDenseMatMul err index", "SparseTensorDenseMatMul",
         [("a_indices", A([[0, 1], [5, 0]], i64)), ("a_values", A([1, 2], f32)), ("a_shape", A([2, 4], i64)), ("b", U(4, 5))],
         err_needle="out of bounds")
    for dt in (f32, f64, i32, i64):
        b = (U(3, 4) * 4).astype(dt)
        case("SparseTensorDenseAdd %s" % np.dtype(dt).name, "SparseTensorDenseAdd",
             [("a_indices", A([[0, 1], [2, 3], [0, 1]], i64)), ("a_values", A([1, 2, 3], dt)), ("a_shape", A([3, 4], i64)),
              ("b", b)])
    case("SparseTensorDenseAdd int32 idx", "SparseTensorDenseAdd",
         [("a_indices", A([[1], [0]], i32)), ("a_values", A([1.5, 2], f32)), ("a_shape", A([3], i32)), ("b", U(3))])
    ci = A([[0, 1, 0], [1, 0, 2], [1, 2, 1], [0, 0, 0]], i64)
    cshape = A([2, 3, 3], i64)
    for op in ("SparseDenseCwiseMul", "SparseDenseCwiseDiv", "SparseDenseCwiseAdd"):
        for dt in (f32, f64):
            for dshape in ((2, 3, 3), (3,), (3, 1), ()):
                case("%s %s dense%s" % (op, np.dtype(dt).name, dshape), op,
                     [("sp_indices", ci), ("sp_values", A([1, -2, 3, 4], dt)), ("sp_shape", cshape),
                      ("dense", (U(*dshape, lo=1, hi=3) if dshape else A(2.5)).astype(dt))])
        case("%s int32" % op, op, [("sp_indices", ci), ("sp_values", A([7, -9, 3, 4], i32)), ("sp_shape", cshape),
                                    ("dense", A([2, -3, 1], i32))])
        case("%s err shape" % op, op, [("sp_indices", ci), ("sp_values", A([1, 2, 3, 4], f32)), ("sp_shape", cshape),
                                        ("dense", U(4))])
    ri = A([[0, 1, 0], [1, 0, 2], [1, 2, 1], [0, 0, 0], [1, 0, 1]], i64)
    rv = A([1.5, -2.0, 3.0, -4.0, -0.5])
    for op in ("SparseReduceSum", "SparseReduceMax"):
        for axes, keep in (([1], False), ([0, 2], True), ([-1], False), ([0, 1, 2], False), ([2], True)):
            case("%s %s keep%d" % (op, axes, keep), op, [("input_indices", ri), ("input_values", rv), ("input_shape", cshape),
                                                        ("reduction_axes", A(axes, i32))], {"keep_dims": keep})
        case("%s int64" % op, op, [("input_indices", ri), ("input_values", A([1, 5, -3, 2, 7], i64)), ("input_shape", cshape),
                                   ("reduction_axes", A([0], i32))], {"keep_dims": False})
        case("%s err axis" % op, op, [("input_indices", ri), ("input_values", rv), ("input_shape", cshape),
                                      ("reduction_axes", A([3], i32))], {"keep_dims": False}, err_needle="Invalid reduction dimension 3")
    case("SparseTensorDenseAdd err shape", "SparseTensorDenseAdd",
         [("a_indices", A([[0, 1]], i64)), ("a_values", A([1.0], f32)), ("a_shape", A([3, 5], i64)), ("b", U(3, 4))],
         err_needle="Dimension mismatch")


def string_format():
    def F(name, inputs, tpl="x={} y={}", summarize=3, ph="{}"):
        case("StringFormat " + name, "StringFormat", [("inputs", inputs)],
             {"template": tpl, "placeholder": ph, "summarize": summarize})
    F("scalars", [A(1.5), A(7, i64)])
    F("floats", [A([0.1, 1e-7, 123456789.0, -2.5, 1.0 / 3], f32), A([0.1, 1.0 / 3, 1e300, -0.0], f64)])
    F("nan inf", [A([nan, inf, -inf], f32), A([1, 2], i32)])
    F("2-D", [np.arange(6).reshape(2, 3).astype(i32), A([[1.5, 2.0]], f32)])
    F("3-D", [np.arange(24).reshape(2, 3, 4).astype(i64), A(0, i32)])
    F("summarized", [np.arange(20).astype(i32), np.arange(100).reshape(10, 10).astype(f32)])
    F("summarize 1", [np.arange(5).astype(i32), np.arange(12).reshape(3, 4).astype(i32)], summarize=1)
    F("summarize all", [np.arange(12).astype(i32), A(True, bool)], summarize=-1)
    F("bool", [A([True, False], bool), A(False, bool)])
    F("strings", [np.array([b"a", b"b c", b"q\"uote"], dtype=object), np.array(b"tab\there", dtype=object)])
    F("ints", [A([-128, 127], np.int8), A([255, 0], np.uint8)])
    F("half", [A([0.1, 2.5], np.float16), A([1, 2], np.uint64)])
    F("empty", [np.zeros([0], f32), np.zeros([2, 0], i32)])
    F("one", [A([1.0])], tpl="{}")
    F("custom placeholder", [A([1, 2], i32), A([3], i32)], tpl="a %s b %s c", ph="%s")
    F("no inputs", [], tpl="just text")
    F("err count", [A([1, 2], i32)], tpl="{} and {}")


def math_extra():
    a = A([1.0, nan, inf, -2.0, 0.0, 3.0])
    b = A([0.0, 0.0, 0.0, 2.0, 5.0, -0.0])
    for dt in (f32, f64, np.float16):
        case("MulNoNan %s" % np.dtype(dt).name, "MulNoNan", [("x", a.astype(dt)), ("y", b.astype(dt))])
    case("MulNoNan broadcast", "MulNoNan", [("x", U(3, 4)), ("y", A([0.0, 1.5, -2.0, 0.0]))])
    case("MulNoNan complex", "MulNoNan", [("x", np.array([1 + 1j, np.nan + 0j], np.complex64)),
                                          ("y", np.array([2 - 1j, 0j], np.complex64))])
    case("MulNoNan err shapes", "MulNoNan", [("x", U(3)), ("y", U(4))])
    x = U(2, 3, 4, lo=-3, hi=3)
    for ax, keep in (([1], False), ([0, 2], True), ([-1], False), ([], False), ([0, 1, 2], False)):
        case("EuclideanNorm %s keep%d" % (ax, keep), "EuclideanNorm", [("input", x), ("reduction_indices", A(ax, i32))],
             {"keep_dims": keep})
    for dt in (f64, i32, i64, np.float16):
        case("EuclideanNorm %s" % np.dtype(dt).name, "EuclideanNorm",
             [("input", (x * 3).astype(dt)), ("reduction_indices", A(1, i64))], {"keep_dims": False})
    case("EuclideanNorm err axis", "EuclideanNorm", [("input", x), ("reduction_indices", A([3], i32))], {"keep_dims": False})
    for ex in (False, True):
        for rv in (False, True):
            case("CumulativeLogsumexp ex%d rev%d" % (ex, rv), "CumulativeLogsumexp",
                 [("x", U(3, 5, lo=-5, hi=5)), ("axis", A(1, i32))], {"exclusive": ex, "reverse": rv})
    case("CumulativeLogsumexp f64 axis0", "CumulativeLogsumexp", [("x", U(4, 2, dt=f64)), ("axis", A(-2, i64))])
    case("CumulativeLogsumexp half", "CumulativeLogsumexp", [("x", U(5, dt=np.float16)), ("axis", A(0, i32))])
    case("CumulativeLogsumexp inf", "CumulativeLogsumexp", [("x", A([-inf, -inf, 1.0, inf])), ("axis", A(0, i32))])
    case("CumulativeLogsumexp err axis", "CumulativeLogsumexp", [("x", U(3)), ("axis", A(1, i32))],
         err_needle="Expected scan axis in the range [-1, 1), but got 1")
    v = [0.0, -0.5, 1.0, 2.5, -7.0, 20.0, 80.0, inf, -inf, nan]
    for op in ("BesselI0", "BesselI1"):
        for dt in (f32, f64):
            case("%s %s" % (op, np.dtype(dt).name), op, [("x", A(v, dt))])
        case("%s half" % op, op, [("x", A([0.0, 1.0, -2.0, 5.0], np.float16))])


def nms():
    r = np.random.default_rng(5)
    ctr = r.uniform(0, 1, (12, 2))
    hw = r.uniform(0.1, 0.4, (12, 2))
    boxes = np.concatenate([ctr - hw / 2, ctr + hw / 2], 1).astype(f32)
    boxes[3] = boxes[3][[2, 3, 0, 1]]  # corners the other way round
    boxes[5] = boxes[1] + 0.01  # a near-duplicate
    boxes[7, 2] = boxes[7, 0]  # no area
    scores = r.permutation(12).astype(f32) / 12 + 0.01
    S = lambda v: A(v, f32)  # noqa: E731
    for k, thr in ((5, 0.5), (12, 0.3), (3, 0.0), (0, 0.5), (20, 1.0)):
        case("NonMaxSuppressionV2 k%d iou%g" % (k, thr), "NonMaxSuppressionV2",
             [("boxes", boxes), ("scores", scores), ("max_output_size", A(k, i32)), ("iou_threshold", S(thr))])
    case("NonMaxSuppression v1", "NonMaxSuppression", [("boxes", boxes), ("scores", scores), ("max_output_size", A(6, i32))],
         {"iou_threshold": 0.4})
    for st in (-inf, 0.3, 0.9):
        case("NonMaxSuppressionV3 score%g" % st, "NonMaxSuppressionV3",
             [("boxes", boxes), ("scores", scores), ("max_output_size", A(8, i32)), ("iou_threshold", S(0.4)),
              ("score_threshold", S(st))])
    case("NonMaxSuppressionV3 half", "NonMaxSuppressionV3",
         [("boxes", boxes.astype(np.float16)), ("scores", scores.astype(np.float16)), ("max_output_size", A(8, i32)),
          ("iou_threshold", A(0.4, np.float16)), ("score_threshold", A(0.2, np.float16))])
    for pad in (False, True):
        case("NonMaxSuppressionV4 pad%d" % pad, "NonMaxSuppressionV4",
             [("boxes", boxes), ("scores", scores), ("max_output_size", A(9, i32)), ("iou_threshold", S(0.3)),
              ("score_threshold", S(0.2))], {"pad_to_max_output_size": pad})
    for sigma in (0.0, 0.5, 0.1):
        for pad in (False, True):
            case("NonMaxSuppressionV5 sigma%g pad%d" % (sigma, pad), "NonMaxSuppressionV5",
                 [("boxes", boxes), ("scores", scores), ("max_output_size", A(7, i32)), ("iou_threshold", S(0.5)),
                  ("score_threshold", S(0.05)), ("soft_nms_sigma", S(sigma))], {"pad_to_max_output_size": pad})
    for thr in (0.1, 0.3):
        case("NonMaxSuppressionV5 soft iou%g" % thr, "NonMaxSuppressionV5",
             [("boxes", boxes), ("scores", scores), ("max_output_size", A(10, i32)), ("iou_threshold", S(thr)),
              ("score_threshold", S(-inf)), ("soft_nms_sigma", S(0.5))], {"pad_to_max_output_size": False})
    ov = r.uniform(0, 1, (6, 6)).astype(f32)
    case("NonMaxSuppressionWithOverlaps", "NonMaxSuppressionWithOverlaps",
         [("overlaps", ov), ("scores", scores[:6]), ("max_output_size", A(4, i32)), ("overlap_threshold", S(0.6)),
          ("score_threshold", S(0.1))])
    case("NonMaxSuppressionV3 empty", "NonMaxSuppressionV3",
         [("boxes", np.zeros([0, 4], f32)), ("scores", np.zeros([0], f32)), ("max_output_size", A(3, i32)),
          ("iou_threshold", S(0.5)), ("score_threshold", S(0.0))])
    case("NonMaxSuppressionV3 err iou", "NonMaxSuppressionV3",
         [("boxes", boxes), ("scores", scores), ("max_output_size", A(3, i32)), ("iou_threshold", S(1.5)),
          ("score_threshold", S(0.0))])
    case("NonMaxSuppressionV3 err scores", "NonMaxSuppressionV3",
         [("boxes", boxes), ("scores", scores[:5]), ("max_output_size", A(3, i32)), ("iou_threshold", S(0.5)),
          ("score_threshold", S(0.0))])
    case("NonMaxSuppressionV3 err columns", "NonMaxSuppressionV3",
         [("boxes", boxes[:, :3].copy()), ("scores", scores), ("max_output_size", A(3, i32)), ("iou_threshold", S(0.5)),
          ("score_threshold", S(0.0))])
    case("NonMaxSuppressionV5 err sigma", "NonMaxSuppressionV5",
         [("boxes", boxes), ("scores", scores), ("max_output_size", A(3, i32)), ("iou_threshold", S(0.5)),
          ("score_threshold", S(0.0)), ("soft_nms_sigma", S(-1.0))], {"pad_to_max_output_size": False})


def patches():
    im = np.arange(2 * 5 * 7 * 3).reshape(2, 5, 7, 3).astype(f32)
    for k, st, r, pad in (([2, 2], [2, 2], [1, 1], "VALID"), ([3, 3], [1, 1], [1, 1], "SAME"), ([3, 2], [2, 3], [1, 1], "SAME"),
                          ([2, 2], [1, 2], [2, 1], "VALID"), ([2, 3], [3, 1], [2, 2], "SAME"), ([1, 1], [1, 1], [1, 1], "VALID"),
                          ([6, 2], [1, 1], [1, 1], "VALID")):
        case("ExtractImagePatches k%s s%s r%s %s" % (k, st, r, pad), "ExtractImagePatches", [("images", im)],
             {"ksizes": [1] + k + [1], "strides": [1] + st + [1], "rates": [1] + r + [1], "padding": pad})
    for dt in (i32, np.uint8, f64, i64):
        case("ExtractImagePatches %s" % np.dtype(dt).name, "ExtractImagePatches", [("images", im.astype(dt))],
             {"ksizes": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "rates": [1, 1, 1, 1], "padding": "SAME"})
    case("ExtractImagePatches err ksizes", "ExtractImagePatches", [("images", im)],
         {"ksizes": [2, 2, 2, 1], "strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "VALID"},
         err_needle="Only support ksizes across space.")
    vol = np.arange(1 * 4 * 5 * 3 * 2).reshape(1, 4, 5, 3, 2).astype(f32)
    for k, st, pad in (([2, 2, 2], [1, 2, 1], "VALID"), ([3, 2, 2], [2, 2, 2], "SAME"), ([1, 1, 1], [1, 1, 1], "SAME")):
        case("ExtractVolumePatches k%s s%s %s" % (k, st, pad), "ExtractVolumePatches", [("input", vol)],
             {"ksizes": [1] + k + [1], "strides": [1] + st + [1], "padding": pad})


def pool_argmax():
    x = U(2, 5, 6, 3, lo=-2, hi=2)
    x[0, 0, 0, 0] = x[0, 0, 1, 0] = 5.0  # equal maxima: the first wins
    for k, st, pad, wb in (([2, 2], [2, 2], "VALID", False), ([3, 3], [2, 2], "SAME", True), ([2, 3], [1, 2], "SAME", False),
                           ([1, 1], [1, 1], "VALID", True), ([5, 6], [1, 1], "VALID", False)):
        case("MaxPoolWithArgmax k%s s%s %s batch%d" % (k, st, pad, wb), "MaxPoolWithArgmax", [("input", x)],
             {"ksize": [1] + k + [1], "strides": [1] + st + [1], "padding": pad, "include_batch_in_index": wb,
              "Targmax": tf.int64})
    for dt in (f64, i32, np.float16, np.uint8):
        case("MaxPoolWithArgmax %s" % np.dtype(dt).name, "MaxPoolWithArgmax", [("input", (x * 10).astype(dt))],
             {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "SAME", "Targmax": tf.int64})
    case("MaxPoolWithArgmax err batch pool", "MaxPoolWithArgmax", [("input", x)],
         {"ksize": [2, 2, 2, 1], "strides": [1, 1, 1, 1], "padding": "VALID", "Targmax": tf.int64},
         err_needle="Pooling is not yet supported on the batch nor depth dimension.")


def fake_quant():
    x = np.concatenate([U(20, lo=-8, hi=8), A([0.0, -6.0, 6.0, 0.0234375, -0.0234375, nan])]).astype(f32)
    for mn, mx, bits, narrow in ((-6.0, 6.0, 8, False), (-1.0, 1.0, 8, True), (0.0, 3.0, 4, False), (0.5, 2.0, 8, False),
                                 (-3.0, -0.5, 5, True), (-0.3, 5.1, 16, False), (-10.0, 1.5, 2, False)):
        case("FakeQuantWithMinMaxArgs [%g,%g] b%d n%d" % (mn, mx, bits, narrow), "FakeQuantWithMinMaxArgs",
             [("inputs", x)], {"min": mn, "max": mx, "num_bits": bits, "narrow_range": narrow})
        case("FakeQuantWithMinMaxVars [%g,%g] b%d n%d" % (mn, mx, bits, narrow), "FakeQuantWithMinMaxVars",
             [("inputs", x.reshape(2, 13)), ("min", A(mn)), ("max", A(mx))], {"num_bits": bits, "narrow_range": narrow})
    case("FakeQuantWithMinMaxVars zero range", "FakeQuantWithMinMaxVars", [("inputs", x), ("min", A(0.0)), ("max", A(0.0))])
    case("FakeQuantWithMinMaxArgs err range", "FakeQuantWithMinMaxArgs", [("inputs", x)], {"min": 1.0, "max": 1.0},
         err_needle="min has to be smaller than max")
    case("FakeQuantWithMinMaxArgs err bits", "FakeQuantWithMinMaxArgs", [("inputs", x)], {"num_bits": 1},
         err_needle="num_bits must be between 2 and 16, inclusive")
    for narrow in (False, True):
        case("FakeQuantWithMinMaxVarsPerChannel n%d" % narrow, "FakeQuantWithMinMaxVarsPerChannel",
             [("inputs", U(4, 3, lo=-3, hi=3)), ("min", A([-1.0, -2.5, 0.0])), ("max", A([1.0, 0.7, 0.0]))],
             {"num_bits": 6, "narrow_range": narrow})
    case("FakeQuantWithMinMaxVarsPerChannel 1-D", "FakeQuantWithMinMaxVarsPerChannel",
         [("inputs", U(3, lo=-3, hi=3)), ("min", A([-1.0, -2.5, 0.2])), ("max", A([1.0, 0.7, 1.0]))])


def codecs():
    o = lambda *v: np.array(v, dtype=object)  # noqa: E731
    words = o(b"", b"f", b"fo", b"foo", b"foob", b"\xff\xfe\x00\x10", b"hello world?>")
    for pad in (False, True):
        case("EncodeBase64 pad%d" % pad, "EncodeBase64", [("input", words)], {"pad": pad})
    case("DecodeBase64", "DecodeBase64", [("input", o(b"", b"Zg", b"Zm8=", b"Zm9v", b"Zm9vYg==", b"__4AEA", b"aGVsbG8gd29ybGQ_Pg"))])
    case("DecodeBase64 2-D", "DecodeBase64", [("input", o(b"YQ", b"YWI", b"YWJj", b"YWJjZA").reshape(2, 2))])
    case("DecodeBase64 err char", "DecodeBase64", [("input", o(b"Zm9v+g=="))])
    case("DecodeBase64 err length", "DecodeBase64", [("input", o(b"Zm9vY"))])
    raw = o(np.arange(8, dtype="<i4").tobytes()[:8], np.array([-1, 7], "<i4").tobytes())
    for dt in (tf.int32, tf.uint8, tf.float32, tf.int16, tf.float16, tf.int64, tf.float64, tf.uint16, tf.int8):
        for little in (True, False):
            case("DecodeRaw %s le%d" % (dt.name, little), "DecodeRaw", [("bytes", raw)], {"out_type": dt, "little_endian": little})
    case("DecodeRaw complex64 be", "DecodeRaw", [("bytes", o(np.arange(4, dtype="<f4").tobytes()))],
         {"out_type": tf.complex64, "little_endian": False})
    case("DecodeRaw scalar", "DecodeRaw", [("bytes", np.array(b"abcd", dtype=object))], {"out_type": tf.uint8})
    case("DecodeRaw err sizes", "DecodeRaw", [("bytes", o(b"abcd", b"ab"))], {"out_type": tf.uint8})
    case("DecodeRaw err multiple", "DecodeRaw", [("bytes", o(b"abc"))], {"out_type": tf.int16},
         err_needle="Input to DecodeRaw has length 3 that is not a multiple of 2")
    for dt in (tf.uint8, tf.int16, tf.float32):
        for little in (True, False):
            case("DecodePaddedRaw %s le%d" % (dt.name, little), "DecodePaddedRaw",
                 [("input_bytes", o(b"abcdef", b"", b"xyz")), ("fixed_length", A(4, i32))], {"out_type": dt, "little_endian": little})
    case("DecodePaddedRaw err length", "DecodePaddedRaw", [("input_bytes", o(b"abc")), ("fixed_length", A(3, i32))],
         {"out_type": tf.int16}, err_needle="must be a multiple of the size of out_type")
    for dt in (i32, i64, f32):
        for idt in (tf.int32, tf.int64):
            case("ListDiff %s %s" % (np.dtype(dt).name, idt.name), "ListDiff",
                 [("x", A([5, 1, 3, 5, 7, 2], dt)), ("y", A([5, 2, 9], dt))], {"out_idx": idt})
    case("ListDiff string", "ListDiff", [("x", o(b"a", b"b", b"c")), ("y", o(b"b"))], {"out_idx": tf.int32})
    case("ListDiff empty", "ListDiff", [("x", np.zeros([0], i32)), ("y", A([1], i32))], {"out_idx": tf.int32})


def lu():
    m = U(2, 4, 4, lo=-2, hi=2)
    m[1, :, 0] = [0.1, -3.0, 3.0, 1.0]  # a tie of |pivot|: the first wins
    sing = A([[1.0, 2.0], [2.0, 4.0]])
    for dt in (f32, f64):
        case("LogMatrixDeterminant %s" % np.dtype(dt).name, "LogMatrixDeterminant", [("input", m.astype(dt))])
        for idt in (tf.int32, tf.int64):
            case("Lu %s %s" % (np.dtype(dt).name, idt.name), "Lu", [("input", m.astype(dt))], {"output_idx_type": idt})
    case("LogMatrixDeterminant complex", "LogMatrixDeterminant",
         [("input", (U(3, 3) + 1j * U(3, 3)).astype(np.complex64))])
    case("Lu complex128", "Lu", [("input", (U(3, 3, dt=f64) + 1j * U(3, 3, dt=f64)))], {"output_idx_type": tf.int32})
    case("LogMatrixDeterminant singular", "LogMatrixDeterminant", [("input", sing)])
    case("LogMatrixDeterminant empty", "LogMatrixDeterminant", [("input", np.zeros([2, 0, 0], f32))])
    case("Lu singular", "Lu", [("input", sing)], {"output_idx_type": tf.int32})
    case("Lu err square", "Lu", [("input", U(2, 3))], {"output_idx_type": tf.int32}, err_needle="must be square")
    case("LogMatrixDeterminant err square", "LogMatrixDeterminant", [("input", U(2, 3))])


def values_only():
    """keep only output 0 of the case just added (TF's u / v without compute_uv are uninitialized scalars)"""
    name, node, flat, outs, err = g.CASES[-1]
    g.CASES[-1] = (name, node, flat, outs[:1], err)


def eig_svd():
    """values only against TF (vectors are fixed up to sign: test_ops_api checks them by identities)"""
    a = U(3, 4, 4, dt=f64)
    sym = a + np.swapaxes(a, 1, 2)
    for dt in (f32, f64):
        case("SelfAdjointEigV2 values %s" % np.dtype(dt).name, "SelfAdjointEigV2", [("input", sym.astype(dt))],
             {"compute_v": False})
        values_only()
    case("SelfAdjointEigV2 lower triangle only", "SelfAdjointEigV2", [("input", np.tril(sym[0]) + np.triu(U(4, 4, dt=f64), 1))],
         {"compute_v": False})
    values_only()
    case("SelfAdjointEigV2 repeated", "SelfAdjointEigV2", [("input", np.diag([2.0, 1.0, 2.0, -1.0]))], {"compute_v": False})
    values_only()
    case("SelfAdjointEigV2 err square", "SelfAdjointEigV2", [("input", U(2, 3))], {"compute_v": False})
    for shape in ((4, 3), (3, 5), (2, 3, 3), (5, 1), (1, 4)):
        for dt in (f32, f64):
            case("Svd values %s %s" % (shape, np.dtype(dt).name), "Svd", [("input", U(*shape, dt=dt))],
                 {"compute_uv": False, "full_matrices": False})
            values_only()
    case("Svd rank deficient", "Svd", [("input", A([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]))],
         {"compute_uv": False, "full_matrices": False})
    values_only()
    case("Svd zero", "Svd", [("input", np.zeros([3, 2], f32))], {"compute_uv": False, "full_matrices": False})
    values_only()


def G(*shape, dt=f32, lo=-1.0, hi=1.0):
    """uniform values on a 1/16 grid: exact in float32 and short in the fixture"""
    return (np.round(rng.uniform(lo, hi, shape) * 16) / 16).astype(dt)


def hashes():
    # session 18 (a4): StringToHashBucket (TF's legacy Hash64) and Fingerprint (farmhash64 rows)
    o = lambda *v: np.array(v, dtype=object)  # noqa: E731
    words = o(b"", b"a", b"ab", b"abcdefg", b"abcdefgh", b"abcdefghi", b"hello world, longer than 16",
              "\u00e9t\u00e9 \u4e2d\u6587".encode(), b"\x00\xff\x80")
    for nb in (1, 7, 1 << 40):
        case("StringToHashBucket %d" % nb, "StringToHashBucket", [("string_tensor", words)], {"num_buckets": nb})
    case("StringToHashBucket 2-D", "StringToHashBucket", [("string_tensor", words[:6].reshape(2, 3))], {"num_buckets": 1000})
    case("StringToHashBucket err buckets", "StringToHashBucket", [("string_tensor", words[:2])], {"num_buckets": 0},
         err_needle="num_buckets")
    m = o(b"farmhash64").reshape(())
    case("Fingerprint string", "Fingerprint", [("data", words), ("method", m)])
    case("Fingerprint string 2-D", "Fingerprint", [("data", words[:6].reshape(2, 3)), ("method", m)])
    case("Fingerprint string 3-D", "Fingerprint", [("data", words[:8].reshape(2, 2, 2)), ("method", m)])
    case("Fingerprint string [n,1]", "Fingerprint", [("data", words[:4].reshape(4, 1)), ("method", m)])
    case("Fingerprint int32", "Fingerprint", [("data", A([[1, 2], [3, -4], [0, 2 ** 31 - 1]], i32)), ("method", m)])
    case("Fingerprint int64 1-D", "Fingerprint", [("data", A([5, -6, 7], i64)), ("method", m)])
    case("Fingerprint float32", "Fingerprint", [("data", U(2, 3, 2)), ("method", m)])
    case("Fingerprint float64", "Fingerprint", [("data", U(4, 1, dt=f64)), ("method", m)])
    case("Fingerprint uint8", "Fingerprint", [("data", A([[1, 2, 3, 4, 5, 6, 7, 8, 9]], np.uint8)), ("method", m)])
    case("Fingerprint bool", "Fingerprint", [("data", np.array([[True, False], [False, False]])), ("method", m)])
    case("Fingerprint empty rows", "Fingerprint", [("data", np.zeros([3, 0], f32)), ("method", m)])
    case("Fingerprint no rows", "Fingerprint", [("data", np.zeros([0, 4], f32)), ("method", m)])
    case("Fingerprint err scalar", "Fingerprint", [("data", A(1.0)), ("method", m)],
         err_needle="`data` should have at least one dimension")
    case("Fingerprint err method", "Fingerprint", [("data", A([1.0])), ("method", o(b"md5").reshape(()))],
         err_needle="Unsupported fingerprint method: md5")


def _png_chunk(kind, data):
    import struct
    import zlib
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)


def _png(width, height, depth, ctype, rows, plte=None, trns=None):
    """A PNG written by hand (TF's encoder makes no palette or sub-byte images): rows are the
    filtered scanlines' bytes without the filter byte (filter 0)."""
    import struct
    import zlib
    raw = b"".join(b"\x00" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, ctype, 0, 0, 0))
    if plte:
        out += _png_chunk(b"PLTE", plte)
    if trns:
        out += _png_chunk(b"tRNS", trns)
    return out + _png_chunk(b"IDAT", zlib.compress(raw)) + _png_chunk(b"IEND", b"")


def image_codecs():
    # session 18 (a4): DecodeJpeg / DecodePng / DecodeImage / EncodePng / EncodeJpeg (image_codec.c)
    o = lambda v: np.array(v, dtype=object).reshape(())  # noqa: E731  a scalar string
    u8 = lambda *shape: rng.integers(0, 256, shape).astype(np.uint8)  # noqa: E731
    rgb, gray, ga, rgba = u8(4, 5, 3), u8(3, 4, 1), u8(3, 4, 2), u8(3, 3, 4)
    smooth = np.stack(np.meshgrid(np.arange(11) * 23, np.arange(9) * 28), -1)
    smooth = np.concatenate([smooth, (smooth[..., :1] + smooth[..., 1:]) // 2], -1).astype(np.uint8)  # 9x11x3
    w16 = rng.integers(0, 65536, (2, 3, 3)).astype(np.uint16)
    # EncodePng: every channel count, both depths, compression levels, a batch
    for nm, im in (("gray", gray), ("ga", ga), ("rgb", rgb), ("rgba", rgba), ("u16", w16)):
        case("EncodePng %s" % nm, "EncodePng", [("image", im)], {"compression": -1})
    for lv in (0, 1, 9):
        case("EncodePng level %d" % lv, "EncodePng", [("image", smooth)], {"compression": lv})
    case("EncodePng batch", "EncodePng", [("image", u8(2, 3, 2, 3))], {"compression": -1})
    case("EncodePng err rank", "EncodePng", [("image", u8(3, 4))], {"compression": -1})
    case("EncodePng err channels", "EncodePng", [("image", u8(2, 2, 5))], {"compression": -1})
    # EncodeJpeg: the attrs
    case("EncodeJpeg rgb", "EncodeJpeg", [("image", smooth)])
    case("EncodeJpeg gray", "EncodeJpeg", [("image", gray)])
    case("EncodeJpeg q50 progressive", "EncodeJpeg", [("image", smooth)], {"quality": 50, "progressive": True})
    case("EncodeJpeg optimize no-chroma", "EncodeJpeg", [("image", rgb)], {"optimize_size": True, "chroma_downsampling": False})
    case("EncodeJpeg density xmp", "EncodeJpeg", [("image", rgb)],
         {"density_unit": "cm", "x_density": 72, "y_density": 96, "xmp_metadata": "<x>hi</x>"})
    case("EncodeJpeg format rgb", "EncodeJpeg", [("image", rgb)], {"format": "rgb"})
    case("EncodeJpeg err format", "EncodeJpeg", [("image", rgb)], {"format": "grayscale"})
    case("EncodeJpeg err channels", "EncodeJpeg", [("image", rgba)])
    # DecodePng: TF's own PNGs into every channel count and dtype
    for nm, im in (("gray", gray), ("ga", ga), ("rgb", rgb), ("rgba", rgba), ("u16", w16)):
        png = o(tf.io.encode_png(im).numpy())
        for ch in (0, 1, 2, 3, 4):
            for dt in (tf.uint8, tf.uint16):
                case("DecodePng %s ch%d %s" % (nm, ch, dt.name), "DecodePng", [("contents", png)], {"channels": ch, "dtype": dt})
        for ch in (0, 3):
            case("DecodeImage png %s ch%d float32" % (nm, ch), "DecodeImage", [("contents", png)],
                 {"channels": ch, "dtype": tf.float32, "expand_animations": True})
    # hand-written PNGs: palette (+tRNS), 1/4-bit gray, gray + tRNS
    plte = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30])
    pal = _png(4, 2, 8, 3, [bytes([0, 1, 2, 3]), bytes([3, 2, 1, 0])], plte=plte)
    palt = _png(4, 2, 2, 3, [bytes([0b00011011]), bytes([0b11100100])], plte=plte, trns=bytes([0, 128]))
    g1 = _png(9, 2, 1, 0, [bytes([0b10110011, 0b10000000]), bytes([0b01010101, 0])])
    g4 = _png(3, 2, 4, 0, [bytes([0x1f, 0x80]), bytes([0x00, 0xf0])])
    gt = _png(3, 1, 8, 0, [bytes([5, 7, 9])], trns=bytes([0, 7]))
    for nm, png in (("palette", pal), ("palette trns 2-bit", palt), ("gray 1-bit", g1), ("gray 4-bit", g4), ("gray trns", gt)):
        for ch in (0, 1, 3, 4):
            case("DecodePng %s ch%d" % (nm, ch), "DecodePng", [("contents", o(png))], {"channels": ch, "dtype": tf.uint8})
        case("DecodePng %s u16" % nm, "DecodePng", [("contents", o(png))], {"channels": 0, "dtype": tf.uint16})
    # DecodeJpeg: TF's JPEGs, every channels / ratio / upscaling / dct choice
    jpg = o(tf.io.encode_jpeg(smooth).numpy())
    jpg_noisy = o(tf.io.encode_jpeg(rgb, quality=80).numpy())
    jpg_gray = o(tf.io.encode_jpeg(gray).numpy())
    jpg_prog = o(tf.io.encode_jpeg(smooth, progressive=True, chroma_downsampling=False).numpy())
    for nm, j in (("smooth", jpg), ("noisy", jpg_noisy), ("gray", jpg_gray), ("progressive", jpg_prog)):
        for ch in (0, 1, 3):
            case("DecodeJpeg %s ch%d" % (nm, ch), "DecodeJpeg", [("contents", j)], {"channels": ch})
    for r in (2, 4, 8):
        case("DecodeJpeg ratio %d" % r, "DecodeJpeg", [("contents", jpg)], {"ratio": r})
    case("DecodeJpeg no fancy", "DecodeJpeg", [("contents", jpg)], {"fancy_upscaling": False})
    case("DecodeJpeg accurate", "DecodeJpeg", [("contents", jpg_noisy)], {"dct_method": "INTEGER_ACCURATE"})
    case("DecodeJpeg fast", "DecodeJpeg", [("contents", jpg_noisy)], {"dct_method": "INTEGER_FAST"})
    for dt in (tf.uint8, tf.uint16, tf.float32):
        case("DecodeImage jpeg %s" % dt.name, "DecodeImage", [("contents", jpg_noisy)],
             {"channels": 0, "dtype": dt, "expand_animations": True})
    case("DecodePng of a jpeg", "DecodePng", [("contents", jpg)], {"channels": 3, "dtype": tf.uint8})
    case("DecodeJpeg of a png", "DecodeJpeg", [("contents", o(tf.io.encode_png(rgb).numpy()))], {"channels": 0})
    # bad input
    case("DecodeJpeg err ch4", "DecodeJpeg", [("contents", jpg)], {"channels": 4})
    case("DecodeImage err ch2", "DecodeImage", [("contents", jpg)], {"channels": 2, "dtype": tf.uint8, "expand_animations": True})
    case("DecodeImage err junk", "DecodeImage", [("contents", o(b"hello world"))], {"channels": 0, "dtype": tf.uint8, "expand_animations": True})
    case("DecodeJpeg err empty", "DecodeJpeg", [("contents", o(b""))], {"channels": 0})
    case("DecodeJpeg err truncated", "DecodeJpeg", [("contents", o(jpg[()][:len(jpg[()]) // 2]))], {"channels": 0})
    case("DecodeJpeg err header only", "DecodeJpeg", [("contents", o(jpg[()][:40]))], {"channels": 0})
    png = tf.io.encode_png(rgb).numpy()
    case("DecodePng err truncated", "DecodePng", [("contents", o(png[:len(png) // 2]))], {"channels": 0, "dtype": tf.uint8})
    bad = bytearray(png)
    bad[40] ^= 0xff
    case("DecodePng err crc", "DecodePng", [("contents", o(bytes(bad)))], {"channels": 0, "dtype": tf.uint8})
    case("DecodePng err vector", "DecodePng", [("contents", np.array([png], dtype=object))], {"channels": 0, "dtype": tf.uint8})


def text_math():
    # session 18 (a4): StringSplit (v1), NextAfter, Bessel J0/J1/Y0/Y1/K0/K1/K0e/K1e
    o = lambda *v: np.array(v, dtype=object)  # noqa: E731
    sc = lambda v: np.array(v, dtype=object).reshape(())  # noqa: E731
    words = o(b"a b  c", b"", b" lead", b"trail,", b"x,y;z", "h\u00e9".encode(), b",,")
    for d in (b"", b" ", b",;", b"  "):
        for skip in (True, False):
            case("StringSplit %r skip%d" % (d.decode(), skip), "StringSplit",
                 [("input", words), ("delimiter", sc(d))], {"skip_empty": skip})
    case("StringSplit empty batch", "StringSplit", [("input", o()), ("delimiter", sc(b" "))], {"skip_empty": True})
    case("StringSplit err rank", "StringSplit", [("input", words[:4].reshape(2, 2)), ("delimiter", sc(b" "))],
         {"skip_empty": True}, err_needle="input must be a vector")
    case("StringSplit err delim", "StringSplit", [("input", words), ("delimiter", o(b" "))],
         {"skip_empty": True}, err_needle="delimiter must be a scalar")
    for dt in (f32, f64):
        a = A([0.0, -0.0, 1.0, 1.0, -1.0, 1e-30, np.finfo(dt).max, inf, -inf, nan, 2.0, np.finfo(dt).tiny], dt)
        b = A([1.0, -1.0, 2.0, 0.0, -2.0, 0.0, inf, 0.0, 0.0, 1.0, nan, 0.0], dt)
        case("NextAfter %s" % np.dtype(dt).name, "NextAfter", [("x1", a), ("x2", b)])
        case("NextAfter %s bcast" % np.dtype(dt).name, "NextAfter", [("x1", U(3, 4, dt=dt)), ("x2", A([10.0], dt))])
    xs = [0.0, 1e-8, 1e-3, 0.1, 0.5, 1.0, 2.0, 2.404825557695773, 3.0, 5.0, 8.0, 12.0, 30.0, 100.0, 700.0, 1000.0,
          -0.5, -3.0, inf, -inf, nan]
    for op in ("BesselJ0", "BesselJ1", "BesselY0", "BesselY1", "BesselK0", "BesselK1", "BesselK0e", "BesselK1e"):
        for dt in (f32, f64):
            case("%s %s" % (op, np.dtype(dt).name), op, [("x", A(xs, dt))])
        case("%s random" % op, op, [("x", U(4, 5, dt=f64, lo=0.01, hi=20))])


def combined_nms():
    # session 18 (a4): CombinedNonMaxSuppression: q = 1 and q = classes, thresholds, pad_per_class, clip
    # values on a 1/64 grid (exact in float32, short in the fixture)
    def boxes(*shape):
        y = rng.integers(-13, 64, shape + (2,))
        x = rng.integers(-13, 64, shape + (2,))
        h = rng.integers(3, 32, shape + (2,))
        return (np.stack([y[..., 0], x[..., 0], y[..., 0] + h[..., 0], x[..., 0] + h[..., 1]], -1) / 64).astype(f32)
    # distinct scores (TF's heap and sort leave ties unordered), k / 128
    def scores(*shape):
        return ((rng.permutation(int(np.prod(shape))) + 1) / 128).reshape(shape).astype(f32)
    sc = lambda v, dt=f32: np.array(v, dtype=dt)  # noqa: E731
    b1, s1 = boxes(2, 12, 1), scores(2, 12, 3)
    bq, sq = boxes(2, 10, 4), scores(2, 10, 4)
    for nm, b, s_ in (("q1", b1, s1), ("qC", bq, sq)):
        for per, tot, iou, thr in ((3, 5, 0.5, 0.0), (2, 20, 0.3, 0.2), (10, 4, 0.0, 0.1), (5, 30, 1.0, 0.6)):
            for pad, clip in ((False, True), (True, True), (False, False)):
                if per in (10, 5) and not (pad is False and clip is True):
                    continue
                if True:
                    case("CombinedNMS %s per%d tot%d iou%g thr%g pad%d clip%d" % (nm, per, tot, iou, thr, pad, clip),
                         "CombinedNonMaxSuppression",
                         [("boxes", b), ("scores", s_), ("max_output_size_per_class", sc(per, i32)),
                          ("max_total_size", sc(tot, i32)), ("iou_threshold", sc(iou)), ("score_threshold", sc(thr))],
                         {"pad_per_class": pad, "clip_boxes": clip})
    args = lambda b, s_, per=3, tot=5, iou=0.5, thr=0.0: [  # noqa: E731
        ("boxes", b), ("scores", s_), ("max_output_size_per_class", sc(per, i32)), ("max_total_size", sc(tot, i32)),
        ("iou_threshold", sc(iou)), ("score_threshold", sc(thr))]
    at = {"pad_per_class": False, "clip_boxes": True}
    case("CombinedNMS no boxes", "CombinedNonMaxSuppression", args(np.zeros([2, 0, 1, 4], f32), np.zeros([2, 0, 3], f32)), at)
    case("CombinedNMS err per", "CombinedNonMaxSuppression", args(b1, s1, per=0), at)
    case("CombinedNMS err tot", "CombinedNonMaxSuppression", args(b1, s1, tot=0), at)
    case("CombinedNMS err iou", "CombinedNonMaxSuppression", args(b1, s1, iou=1.5), at)
    case("CombinedNMS err q", "CombinedNonMaxSuppression", args(boxes(2, 12, 2), s1), at,
         err_needle="third dimension of boxes must be either 1 or")
    case("CombinedNMS err scores", "CombinedNonMaxSuppression", args(b1, scores(2, 11, 3)), at,
         err_needle="scores has incompatible shape")


def decode_csv():
    # session 18 (a4): DecodeCSV: every OUT_TYPE, defaults, quotes, select_cols, na_value, delimiters, errors
    o = lambda *v: np.array(v, dtype=object)  # noqa: E731
    d1 = lambda v, dt: np.array([v], dtype=dt)  # noqa: E731  a default
    d0 = lambda dt: np.zeros([0], dtype=dt)  # noqa: E731  no default: required
    recs = o(b'1,2.5,hello,7,1e3', b',,,,', b' -3 , -0.5 ,"a,b", 9,inf', b'4,5,"say ""hi""",-1,NaN',
             b'2147483647,1.5e-7,x\r\n,0,-inf')
    defs = [d1(-1, i32), d1(0.25, f32), d1(b"dflt", object), d1(-9, i64), d1(0.125, f64)]
    case("DecodeCSV all types", "DecodeCSV", [("records", recs), ("record_defaults", defs)])
    case("DecodeCSV 2-D records", "DecodeCSV", [("records", recs[:4].reshape(2, 2)), ("record_defaults", defs)])
    case("DecodeCSV na_value", "DecodeCSV", [("records", o(b"NA,1,NA", b"2,NA,z")),
         ("record_defaults", [d1(5, i32), d1(6, i64), d1(b"q", object)])], {"na_value": "NA"})
    case("DecodeCSV no quote", "DecodeCSV", [("records", o(b'"a",b', b'x"y,z')),
         ("record_defaults", [d1(b"", object), d1(b"", object)])], {"use_quote_delim": False})
    case("DecodeCSV delim", "DecodeCSV", [("records", o(b"1|2|3", b"4||6")),
         ("record_defaults", [d1(0, i32), d1(0, i32), d1(0, i32)])], {"field_delim": "|"})
    case("DecodeCSV tab", "DecodeCSV", [("records", o(b"1\t2", b"3\t")), ("record_defaults", [d1(0, i32), d1(7, i32)])],
         {"field_delim": "\t"})
    case("DecodeCSV select_cols", "DecodeCSV", [("records", o(b"a,1,b,2,c", b"d,3,e,4,f")),
         ("record_defaults", [d1(0, i32), d1(b"", object), d1(b"", object)])], {"select_cols": [1, 2, 4]})
    case("DecodeCSV select_cols trailing", "DecodeCSV", [("records", o(b"a,1,", b"d,3,x")),
         ("record_defaults", [d1(0, i32), d1(b"dd", object)])], {"select_cols": [1, 2]})
    case("DecodeCSV empty batch", "DecodeCSV", [("records", o()), ("record_defaults", [d1(0, i32)])])
    case("DecodeCSV required", "DecodeCSV", [("records", o(b"1,2", b"3,")), ("record_defaults", [d0(i32), d0(i32)])])
    case("DecodeCSV scalar default", "DecodeCSV", [("records", o(b"1,", b",2")),
         ("record_defaults", [np.array(7, i32), np.array(8.5, f32)])])
    case("DecodeCSV numbers", "DecodeCSV", [("records", o(b"+5,0x10,1e3,.5", b"007,-0,5.,-.25e-2", b" 8,9 ,  3.25 ,1E+2")),
         ("record_defaults", [d1(0, i32), d1(0, f32), d1(0, f64), d1(0, f32)])])
    # errors
    case("DecodeCSV err missing", "DecodeCSV", [("records", o(b"1,")), ("record_defaults", [d0(i32), d0(i32)])])
    case("DecodeCSV err count", "DecodeCSV", [("records", o(b"1,2,3")), ("record_defaults", [d1(0, i32), d1(0, i32)])])
    case("DecodeCSV err empty record", "DecodeCSV", [("records", o(b"")), ("record_defaults", [d1(0, i32)])])
    case("DecodeCSV err int", "DecodeCSV", [("records", o(b"1.5")), ("record_defaults", [d1(0, i32)])])
    case("DecodeCSV err int32 range", "DecodeCSV", [("records", o(b"2147483648")), ("record_defaults", [d1(0, i32)])])
    case("DecodeCSV err float", "DecodeCSV", [("records", o(b"1.5x")), ("record_defaults", [d1(0, f32)])])
    case("DecodeCSV long numbers", "DecodeCSV", [("records", o(b"1.00000000000000000000000000000000001,"
                                                                  b"2.50000000000000000000000000000000001")),
         ("record_defaults", [d1(0, f64), d1(0, f32)])])
    case("DecodeCSV err quote", "DecodeCSV", [("records", o(b'"abc"d,1')), ("record_defaults", [d1(b"", object), d1(0, i32)])])
    case("DecodeCSV err unquoted", "DecodeCSV", [("records", o(b'ab"c,1')), ("record_defaults", [d1(b"", object), d1(0, i32)])])
    case("DecodeCSV err unterminated", "DecodeCSV", [("records", o(b'"abc')), ("record_defaults", [d1(b"", object)])])
    case("DecodeCSV err default rank", "DecodeCSV", [("records", o(b"1")), ("record_defaults", [np.zeros([1, 1], i32)])])
    case("DecodeCSV err two defaults", "DecodeCSV", [("records", o(b"1")), ("record_defaults", [np.zeros([2], i32)])])


def dilation():
    # session 18 (a4): Dilation2D: strides, rates, SAME / VALID, both float dtypes, errors
    for dt in (f32, f64):
        x, w = G(2, 7, 6, 2, dt=dt), G(3, 2, 2, dt=dt)
        for st in ([1, 1, 1, 1], [1, 2, 3, 1]):
            for rt in ([1, 1, 1, 1], [1, 2, 1, 1]):
                for pad in ("SAME", "VALID"):
                    case("Dilation2D %s s%d%d r%d%d %s" % (np.dtype(dt).name, st[1], st[2], rt[1], rt[2], pad), "Dilation2D",
                         [("input", x), ("filter", w)], {"strides": st, "rates": rt, "padding": pad})
    x = G(1, 4, 4, 2)
    case("Dilation2D big filter SAME", "Dilation2D", [("input", x), ("filter", U(6, 5, 2))],
         {"strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "SAME"})
    case("Dilation2D err depth", "Dilation2D", [("input", x), ("filter", U(2, 2, 3))],
         {"strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "SAME"})
    case("Dilation2D valid empty", "Dilation2D", [("input", x), ("filter", U(5, 2, 2))],
         {"strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "VALID"})
    case("Dilation2D err valid", "Dilation2D", [("input", x), ("filter", U(6, 2, 2))],
         {"strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "VALID"}, err_needle="Computed output size would be negative")


def draw_boxes():
    # session 18 (a4): DrawBoundingBoxes (V1, V2 with colors): partial, inverted, outside boxes
    bx = A([[[0.1, 0.2, 0.8, 0.9], [-0.3, -0.2, 0.5, 0.6], [0.5, 0.5, 1.4, 1.3], [0.7, 0.1, 0.2, 0.9],
             [1.2, 0.0, 1.5, 0.5], [0.0, 0.0, 1.0, 1.0], [0.3, 0.3, 0.3, 0.3], [0.2, 0.9, 0.6, 0.95],
             [0.05, 0.05, 0.4, 0.45], [0.6, 0.6, 0.9, 0.7], [0.25, 0.1, 0.75, 0.5]],
            [[0.4, 0.4, 0.6, 0.6], [-1.0, -1.0, -0.5, -0.5], [0.0, 0.5, 0.5, 1.0], [0.1, 0.1, 0.9, 0.2],
             [0.2, 0.3, 0.4, 0.5], [0.5, 0.0, 0.9, 0.4], [0.8, 0.8, 0.95, 0.99], [0.0, 0.0, 0.1, 0.1],
             [0.3, 0.6, 0.7, 0.7], [0.45, 0.05, 0.55, 0.95], [0.15, 0.35, 0.85, 0.65]]])
    for c in (1, 3, 4):
        im = G(2, 7, 8, c, lo=0, hi=1)
        case("DrawBoundingBoxes c%d" % c, "DrawBoundingBoxes", [("images", im), ("boxes", bx)])
        case("DrawBoundingBoxesV2 c%d" % c, "DrawBoundingBoxesV2",
             [("images", im), ("boxes", bx), ("colors", A([[0.1, 0.2, 0.3, 0.4, 0.5], [0.9, 0.8, 0.7, 0.6, 0.5], [1, 0, 1, 0, 1]]))])
    case("DrawBoundingBoxes half", "DrawBoundingBoxes", [("images", U(2, 5, 6, 3, lo=0, hi=1).astype(np.float16)), ("boxes", bx)])
    case("DrawBoundingBoxesV2 err colors", "DrawBoundingBoxesV2",
         [("images", U(2, 5, 6, 3)), ("boxes", bx), ("colors", A([[0.1, 0.2]]))])
    case("DrawBoundingBoxes err depth", "DrawBoundingBoxes", [("images", U(2, 5, 6, 2)), ("boxes", bx)])
    case("DrawBoundingBoxes err batch", "DrawBoundingBoxes", [("images", U(1, 5, 6, 3)), ("boxes", bx)])


def zeta_polygamma():
    # session 18 (a4): Zeta (Hurwitz) and Polygamma, with their poles and NaN domains
    for dt in (f32, f64):
        x = A([1.0, 0.5, 1.5, 2.0, 2.0, 3.0, 4.5, 10.0, 2.0, 3.0, 2.5, 2.0, 30.0, 2.0, nan, inf], dt)
        q = A([1.0, 1.0, 1.0, 1.0, 0.5, 2.5, 7.0, 0.1, 1e9, -1.5, -1.5, -2.0, 1.0, 1e-6, 1.0, 2.0], dt)
        case("Zeta %s edges" % np.dtype(dt).name, "Zeta", [("x", x), ("q", q)])
        case("Zeta %s random" % np.dtype(dt).name, "Zeta", [("x", U(3, 4, dt=dt, lo=1.1, hi=6)), ("q", U(4, dt=dt, lo=0.1, hi=20))])
        n = A([0.0, 1.0, 2.0, 3.0, 1.5, -1.0, 1.0, 2.0, 4.0, 0.0, 1.0, 5.0], dt)
        xv = A([0.5, 0.5, 1.5, 2.0, 1.0, 1.0, -0.5, -1.0, 10.0, -2.0, 1e-3, 3.0], dt)
        case("Polygamma %s edges" % np.dtype(dt).name, "Polygamma", [("a", n), ("x", xv)])
        case("Polygamma %s random" % np.dtype(dt).name, "Polygamma",
             [("a", np.floor(U(3, 4, dt=dt, lo=0, hi=4))), ("x", U(4, dt=dt, lo=0.2, hi=8))])


def edit_distance():
    # session 18 (a4): EditDistance: groups in both / one / neither, normalize, strings, rank 3, errors
    def sp(rows, shape, dt=i64):
        idx = np.array([r[0] for r in rows], np.int64).reshape(-1, len(shape))
        vals = np.array([r[1] for r in rows], dtype=dt)
        return [idx, vals, np.array(shape, np.int64)]
    hyp = sp([((0, 0), 1), ((0, 1), 2), ((0, 2), 3), ((1, 0), 4), ((2, 0), 5), ((2, 1), 6), ((3, 0), 7)], [4, 3])
    tru = sp([((0, 0), 1), ((0, 1), 3), ((2, 0), 5), ((2, 1), 6), ((2, 2), 9), ((4, 0), 1), ((4, 1), 2)], [5, 3])
    for norm in (True, False):
        case("EditDistance int64 norm%d" % norm, "EditDistance",
             [("hypothesis_indices", hyp[0]), ("hypothesis_values", hyp[1]), ("hypothesis_shape", hyp[2]),
              ("truth_indices", tru[0]), ("truth_values", tru[1]), ("truth_shape", tru[2])], {"normalize": norm})
    o = lambda *v: np.array(v, dtype=object)  # noqa: E731
    hs = [np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 1, 0], [1, 1, 1], [1, 1, 2]], np.int64),
          o(b"a", b"b", b"c", b"k", b"i", b"t"), np.array([2, 2, 4], np.int64)]
    ts = [np.array([[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0], [1, 1, 0], [1, 1, 1], [1, 1, 2], [1, 1, 3]], np.int64),
          o(b"a", b"c", b"d", b"z", b"s", b"i", b"t", b"s"), np.array([2, 2, 5], np.int64)]
    for norm in (True, False):
        case("EditDistance string rank3 norm%d" % norm, "EditDistance",
             [("hypothesis_indices", hs[0]), ("hypothesis_values", hs[1]), ("hypothesis_shape", hs[2]),
              ("truth_indices", ts[0]), ("truth_values", ts[1]), ("truth_shape", ts[2])], {"normalize": norm})
    fh = sp([((0, 0), 0.0), ((0, 1), nan), ((1, 0), -0.0)], [2, 2], f32)
    ft = sp([((0, 0), -0.0), ((0, 1), nan), ((1, 0), 0.0)], [2, 2], f32)
    case("EditDistance float", "EditDistance",
         [("hypothesis_indices", fh[0]), ("hypothesis_values", fh[1]), ("hypothesis_shape", fh[2]),
          ("truth_indices", ft[0]), ("truth_values", ft[1]), ("truth_shape", ft[2])], {"normalize": False})
    e = sp([], [3, 2])
    case("EditDistance empty", "EditDistance",
         [("hypothesis_indices", e[0]), ("hypothesis_values", e[1]), ("hypothesis_shape", e[2]),
          ("truth_indices", tru[0][:2]), ("truth_values", tru[1][:2]), ("truth_shape", np.array([3, 2], np.int64))],
         {"normalize": True})
    case("EditDistance err rank", "EditDistance",
         [("hypothesis_indices", np.zeros([1, 1], np.int64)), ("hypothesis_values", A([1], i64)), ("hypothesis_shape", A([3], i64)),
          ("truth_indices", np.zeros([1, 1], np.int64)), ("truth_values", A([1], i64)), ("truth_shape", A([3], i64))],
         {"normalize": True})
    case("EditDistance err values", "EditDistance",
         [("hypothesis_indices", hyp[0]), ("hypothesis_values", hyp[1][:3]), ("hypothesis_shape", hyp[2]),
          ("truth_indices", tru[0]), ("truth_values", tru[1]), ("truth_shape", tru[2])], {"normalize": True})
    case("EditDistance err zero output", "EditDistance",
         [("hypothesis_indices", e[0]), ("hypothesis_values", e[1]), ("hypothesis_shape", A([0, 2], i64)),
          ("truth_indices", e[0]), ("truth_values", e[1]), ("truth_shape", A([0, 2], i64))], {"normalize": True})


def einsum_ellipsis():
    # session 18 (b3): Einsum with an ellipsis: broadcast batch dims (right-aligned, size 1 against any
    # size), an ellipsis in the middle, on one operand only, over zero dims, traces, every dtype;
    # TF's messages for a short rank, dims that do not broadcast, an output without "...", a
    # named label of two sizes
    E = lambda name, eq, xs, **kw: case("Einsum " + name, "Einsum", [("inputs", xs)], {"equation": eq}, **kw)  # noqa: E731
    E("... batch matmul", "...ij,...jk->...ik", [U(2, 3, 4), U(2, 4, 5)])
    E("... broadcast", "...ij,...jk->...ik", [U(2, 1, 3, 4), U(5, 4, 2)])
    E("... broadcast rank", "...ij,...jk->...ik", [U(3, 4), U(7, 4, 2)])
    E("... size-1 vs n", "...ij,...jk->...ik", [U(2, 3, 4), U(1, 4, 5)])
    E("... one operand", "...ij,jk->...ik", [U(2, 3, 3, 4), U(4, 5)])
    E("... empty ellipsis", "...ij,...jk->...ik", [U(3, 4), U(4, 2)])
    E("... output ellipsis only", "ij,jk->...ik", [U(3, 4), U(4, 5)])
    E("... transpose", "...ij->...ji", [U(2, 3, 4)])
    E("... diagonal", "...ii->...i", [U(2, 3, 3)])
    E("... middle", "i...j->j...i", [U(2, 3, 4, 5)])
    E("... dot", "...i,...i->...", [U(2, 3), U(3)])
    E("... trailing", "ab...,b...->a...", [U(2, 3, 4), U(3, 4)])
    E("... output middle", "...ij,...jk->i...k", [U(2, 3, 4), U(2, 4, 5)])
    E("... float64", "...ij,...jk->...ik", [U(2, 3, 4, dt=f64), U(1, 4, 2, dt=f64)])
    E("... int32", "...ij,...jk->...ik", [I(2, 3, 4), I(4, 2)])
    E("... int64", "b...,b...->...", [I(3, 2, 2, dt=i64), I(3, 1, 2, dt=i64)])
    E("... empty dim", "...ij,...jk->...ik", [U(0, 3, 4), U(1, 4, 2)])
    E("... attention", "...qhd,...khd->...hqk", [U(2, 5, 2, 3), U(2, 4, 2, 3)])
    E("err ... rank", "...ij,...jk->...ik", [U(3), U(3, 4)])
    E("err ... broadcast", "...ij,...jk->...ik", [U(2, 3, 4), U(3, 4, 5)])
    E("err ... no output ellipsis", "...ij,...jk->ik", [U(2, 3, 4), U(2, 4, 5)])
    E("err ... reduce all", "...->", [U(2, 3)])
    E("err label size", "bij,bjk->bik", [U(1, 3, 4), U(2, 4, 5)],
      err_needle="Expected dimension 1 at axis 0 of the input shaped [2,4,5] but got dimension 2")


def bf16_matmul():
    # session 18 (b3): TF's bfloat16 MatMul / BatchMatMul[V2] on CPU: float products, the result
    # truncated to bfloat16 (not rounded); half is rounded. Conv2D and BiasAdd bfloat16: rounded.
    # "[exact]": compared bit for bit (test_ops_api otherwise allows two bfloat16 ulps)
    bf = lambda x: tf.cast(tf.constant(x), tf.bfloat16)  # noqa: E731
    for ta, tb in ((False, False), (True, False), (False, True)):
        a = U(7, 9) if not ta else U(9, 7)
        b = U(9, 5) if not tb else U(5, 9)
        case("MatMul bfloat16 ta%d tb%d [exact]" % (ta, tb), "MatMul", [("a", bf(a)), ("b", bf(b))],
             {"transpose_a": ta, "transpose_b": tb})
    case("MatMul bfloat16 K=64 [exact]", "MatMul", [("a", bf(U(6, 64))), ("b", bf(U(64, 4)))])
    case("MatMul bfloat16 inf nan [exact]", "MatMul",
         [("a", bf(A([[1.0, inf], [nan, 1.0], [1e38, 1e38]]))), ("b", bf(A([[1.0, 2.0], [3.0, -1.0]])))])
    case("MatMul half [exact]", "MatMul", [("a", tf.constant(U(7, 9, dt=np.float16))), ("b", tf.constant(U(9, 5, dt=np.float16)))])
    case("BatchMatMulV2 bfloat16 [exact]", "BatchMatMulV2", [("x", bf(U(2, 5, 7))), ("y", bf(U(7, 3)))])
    case("BatchMatMulV2 bfloat16 adj [exact]", "BatchMatMulV2", [("x", bf(U(2, 7, 5))), ("y", bf(U(1, 3, 7)))],
         {"adj_x": True, "adj_y": True})
    case("BatchMatMul bfloat16 [exact]", "BatchMatMul", [("x", bf(U(2, 5, 7))), ("y", bf(U(2, 7, 3)))])
    case("Conv2D bfloat16 [exact]", "Conv2D", [("input", bf(U(1, 6, 6, 3))), ("filter", bf(U(3, 3, 3, 4)))],
         {"strides": [1, 1, 1, 1], "padding": "SAME"})


def ctc_loss():
    # session 18 (b3): CTCLoss (loss and gradient): attrs, repeats, null labels ending a sequence,
    # short sequences, ignore_longer, double, TF's messages for bad labels and shapes
    def lab(rows):  # rows: per batch entry a list of labels -> indices, values
        idx = [(b, j) for b, r in enumerate(rows) for j in range(len(r))]
        return np.array(idx, np.int64).reshape(-1, 2), np.array([v for r in rows for v in r], np.int32)
    def C(name, x, rows, sl, attrs=None, dt=f32, **kw):
        ix, v = lab(rows) if not isinstance(rows, tuple) else rows
        case("CTCLoss " + name, "CTCLoss", [("inputs", x.astype(dt)), ("labels_indices", ix), ("labels_values", v),
                                            ("sequence_length", A(sl, i32))], attrs or {}, **kw)
    x = U(6, 3, 5, lo=-2, hi=2)
    rows = [[0, 1, 1], [2], [3, 0, 3, 2]]
    for collapse in (False, True):
        for merge in (False, True):
            C("collapse%d merge%d" % (collapse, merge), x, rows, [6, 4, 5],
              {"preprocess_collapse_repeated": collapse, "ctc_merge_repeated": merge})
    C("double [f32 tol]", x, rows, [6, 4, 5], dt=f64)  # TF's log-sum-exp is in float for double too
    C("null label ends", x, [[1, 4, 4], [2, 4], [0]], [6, 3, 2])
    C("tight time", x, [[0, 1, 2, 3, 0, 1], [1], [1, 1, 1]], [6, 1, 3])
    C("impossible path", x, [[1, 1, 1, 1], [2], [3]], [4, 6, 6])  # repeats need blanks between: no path
    C("zero length ignored", x, [[1, 2], [1, 2, 3, 0], [0]], [0, 2, 6], {"ignore_longer_outputs_than_inputs": True})
    C("large logits", U(5, 2, 4, lo=-60, hi=60), [[0, 1], [2, 2]], [5, 5])
    C("one class+blank", U(4, 2, 2), [[0, 0], [0]], [4, 3])
    C("err not enough time", x, rows, [2, 4, 5])
    ix, v = lab([[1], [2]])
    C("err no labels for entry", x, (ix, v), [6, 6, 6])
    C("err negative label", x, [[1, -1], [2], [0]], [6, 6, 6])
    C("err label after null", x, [[1, 4, 2], [2], [0]], [6, 6, 6])
    C("err seq too long", x, rows, [7, 4, 5])
    C("err seq negative", x, rows, [6, -1, 5])
    C("err seq count", x, rows, [6, 4])
    C("err rows", x, (lab(rows)[0], lab(rows)[1][:-1]), [6, 4, 5])
    C("err rank", x[0], rows, [6, 4, 5])
    ix, v = lab(rows)
    C("err order", x, (ix[[1, 0, 2, 3, 4, 5, 6, 7]], v), [6, 4, 5], err_needle="label SparseTensor is not valid: indices[1] = [0,0] is out of order")
    C("err repeated", x, (ix[[0, 0, 2, 3, 4, 5, 6, 7]], v), [6, 4, 5], err_needle="label SparseTensor is not valid: indices[1] = [0,0] is repeated")
    bad = ix.copy()
    bad[7, 0] = 3
    C("err batch index", x, (bad, v), [6, 4, 5], err_needle="label SparseTensor is not valid: indices[7] = [3,3] is out of bounds: need 0 <= index < [3,4]")


def sets():
    # session 18 (b3): tf.sets: SetSize, DenseToDense / DenseToSparse / SparseToSparse set
    # operations, every op, every dtype, rank 3, empty groups and results, repeats, bad input
    o = lambda *v: np.array(v, dtype=object)  # noqa: E731
    def sp(rows, shape, dt=i64):
        idx = np.array([r[0] for r in rows], np.int64).reshape(-1, len(shape))
        return [idx, np.array([r[1] for r in rows], dtype=dt), np.array(shape, np.int64)]
    a2 = A([[1, 2, 2, 5], [3, 3, 3, 3], [9, 8, 7, 1]], i32)
    b2 = A([[2, 5, 6], [4, 4, 3], [0, 0, 0]], i32)
    ops = ("a-b", "b-a", "intersection", "union")
    for op in ops + ("UNION",):
        case("DenseToDenseSetOperation %s" % op, "DenseToDenseSetOperation", [("set1", a2), ("set2", b2)], {"set_operation": op})
    for dt in (np.int8, np.int16, i64, np.uint8, np.uint16):
        case("DenseToDenseSetOperation %s" % np.dtype(dt).name, "DenseToDenseSetOperation",
             [("set1", a2.astype(dt)), ("set2", b2.astype(dt))], {"set_operation": "union"})
    sa = o([b"b", b"a", b""], [b"zz", b"z", b"z"])
    sb = o([b"a", b"c"], [b"z", b"\xff"])
    for op in ops:
        case("DenseToDenseSetOperation string %s" % op, "DenseToDenseSetOperation", [("set1", sa), ("set2", sb)], {"set_operation": op})
    a3 = I(2, 3, 4, lo=0, hi=5)
    b3 = I(2, 3, 2, lo=0, hi=5)
    for op in ops:
        case("DenseToDenseSetOperation rank3 %s" % op, "DenseToDenseSetOperation", [("set1", a3), ("set2", b3)], {"set_operation": op})
    case("DenseToDenseSetOperation empty result", "DenseToDenseSetOperation", [("set1", a2), ("set2", a2)], {"set_operation": "a-b"})
    case("DenseToDenseSetOperation err shape", "DenseToDenseSetOperation", [("set1", a2), ("set2", b2[:2])], {"set_operation": "union"})
    case("DenseToDenseSetOperation err rank", "DenseToDenseSetOperation", [("set1", a2[0]), ("set2", b2[0])], {"set_operation": "union"})
    case("DenseToDenseSetOperation err op", "DenseToDenseSetOperation", [("set1", a2), ("set2", b2)], {"set_operation": "xor"})
    # sparse operands: rows 0 and 2 present, row 1 missing; a rank-3 one
    s2 = sp([((0, 0), 2), ((0, 1), 7), ((0, 2), 2), ((2, 0), 1), ((2, 3), 0)], [3, 4])
    for op in ops:
        case("DenseToSparseSetOperation %s" % op, "DenseToSparseSetOperation",
             [("set1", a2.astype(i64)), ("set2_indices", s2[0]), ("set2_values", s2[1]), ("set2_shape", s2[2])],
             {"set_operation": op})
    s1 = sp([((0, 1), 5), ((0, 2), 2), ((1, 0), 3), ((1, 1), 4)], [3, 3])
    for op in ops:
        case("SparseToSparseSetOperation %s" % op, "SparseToSparseSetOperation",
             [("set1_indices", s1[0]), ("set1_values", s1[1]), ("set1_shape", s1[2]),
              ("set2_indices", s2[0]), ("set2_values", s2[1]), ("set2_shape", s2[2])], {"set_operation": op})
    ss1 = sp([((0, 0, 0), b"x"), ((0, 0, 1), b"y"), ((1, 1, 0), b"x")], [2, 2, 2], dt=object)
    ss2 = sp([((0, 0, 0), b"y"), ((1, 0, 0), b"q"), ((1, 1, 3), b"w")], [2, 2, 4], dt=object)
    for op in ops:
        case("SparseToSparseSetOperation string rank3 %s" % op, "SparseToSparseSetOperation",
             [("set1_indices", ss1[0]), ("set1_values", ss1[1]), ("set1_shape", ss1[2]),
              ("set2_indices", ss2[0]), ("set2_values", ss2[1]), ("set2_shape", ss2[2])], {"set_operation": op})
    bad = sp([((0, 1), 5), ((0, 0), 2)], [3, 3])
    case("SparseToSparseSetOperation err order", "SparseToSparseSetOperation",
         [("set1_indices", bad[0]), ("set1_values", bad[1]), ("set1_shape", bad[2]),
          ("set2_indices", s2[0]), ("set2_values", s2[1]), ("set2_shape", s2[2])], {"set_operation": "union"})
    case("SparseToSparseSetOperation err shape", "SparseToSparseSetOperation",
         [("set1_indices", s1[0]), ("set1_values", s1[1]), ("set1_shape", A([4, 3], i64)),
          ("set2_indices", s2[0]), ("set2_values", s2[1]), ("set2_shape", s2[2])], {"set_operation": "union"})
    oob = sp([((0, 1), 5), ((3, 0), 2)], [3, 3])
    case("DenseToSparseSetOperation err bounds", "DenseToSparseSetOperation",
         [("set1", a2.astype(i64)), ("set2_indices", oob[0]), ("set2_values", oob[1]), ("set2_shape", A([3, 4], i64))],
         {"set_operation": "union"})
    rep = sp([((0, 1), 5), ((0, 1), 2)], [3, 4])
    case("DenseToSparseSetOperation err repeated", "DenseToSparseSetOperation",
         [("set1", a2.astype(i64)), ("set2_indices", rep[0]), ("set2_values", rep[1]), ("set2_shape", rep[2])],
         {"set_operation": "union"})
    # SetSize
    for nm, (ix, v, shp) in (("int64", s2), ("rank3 string", ss2)):
        case("SetSize %s" % nm, "SetSize", [("set_indices", ix), ("set_values", v), ("set_shape", shp)])
    case("SetSize int32 repeats", "SetSize", [("set_indices", s2[0]), ("set_values", s2[1].astype(i32)), ("set_shape", s2[2])])
    case("SetSize no validate", "SetSize", [("set_indices", bad[0]), ("set_values", bad[1]), ("set_shape", bad[2])],
         {"validate_indices": False})
    case("SetSize err order", "SetSize", [("set_indices", bad[0]), ("set_values", bad[1]), ("set_shape", bad[2])])
    case("SetSize err rank", "SetSize", [("set_indices", np.zeros([1, 1], np.int64)), ("set_values", A([1], i64)),
                                         ("set_shape", A([3], i64))])
    case("SetSize err rows", "SetSize", [("set_indices", s2[0]), ("set_values", s2[1][:2]), ("set_shape", s2[2])])
    case("SetSize empty", "SetSize", [("set_indices", np.zeros([0, 2], np.int64)), ("set_values", np.zeros([0], i64)),
                                      ("set_shape", A([2, 5], i64))])


def sparse_sparse_ragged():
    # session 18 (b3): SparseAdd, SparseSparseMaximum / Minimum, RaggedTensorToSparse
    def sp(rows, shape, dt=f32):
        idx = np.array([r[0] for r in rows], np.int64).reshape(-1, len(shape))
        return [idx, np.array([r[1] for r in rows], dtype=dt), np.array(shape, np.int64)]
    a = sp([((0, 0), 1.5), ((0, 2), -2.0), ((1, 1), 3.0), ((2, 3), -1.0)], [3, 4])
    b = sp([((0, 0), -1.5), ((0, 1), 4.0), ((1, 1), -2.5), ((2, 0), -7.0), ((2, 3), 2.0)], [3, 4])
    def args(x, y, pre=("a", "b")):
        return [(pre[0] + "_indices", x[0]), (pre[0] + "_values", x[1]), (pre[0] + "_shape", x[2]),
                (pre[1] + "_indices", y[0]), (pre[1] + "_values", y[1]), (pre[1] + "_shape", y[2])]
    for th in (0.0, 0.6, 1.0):
        case("SparseAdd thresh %g" % th, "SparseAdd", args(a, b) + [("thresh", A(th, f32))])
    for dt in (f64, i32, i64):
        ai = [a[0], (a[1] * 2).astype(dt), a[2]]
        bi = [b[0], (b[1] * 2).astype(dt), b[2]]
        case("SparseAdd %s" % np.dtype(dt).name, "SparseAdd", args(ai, bi) + [("thresh", A(1, dt))])
    case("SparseAdd empty", "SparseAdd", args([np.zeros([0, 2], np.int64), np.zeros([0], f32), a[2]], b) + [("thresh", A(0.0, f32))])
    case("SparseAdd err shapes", "SparseAdd", args(a, [b[0], b[1], A([3, 5], i64)]) + [("thresh", A(0.0, f32))])
    case("SparseAdd err values", "SparseAdd", args(a, [b[0], b[1][:3], b[2]]) + [("thresh", A(0.0, f32))])
    case("SparseAdd err thresh", "SparseAdd", args(a, b) + [("thresh", A([0.0], f32))])
    for op in ("SparseSparseMaximum", "SparseSparseMinimum"):
        case(op, op, args(a, b))
        for dt in (f64, i32, i64):
            case("%s %s" % (op, np.dtype(dt).name), op, args([a[0], (a[1] * 2).astype(dt), a[2]], [b[0], (b[1] * 2).astype(dt), b[2]]))
        case(op + " err ranks", op, args(a, [b[0][:, :1], b[1], A([3], i64)]))
        case(op + " err shapes", op, args(a, [b[0], b[1], A([3, 5], i64)]))
    # RaggedTensorToSparse: one and two ragged levels, inner dims, empty rows, int32 splits, strings
    R2S = lambda name, splits, vals: case("RaggedTensorToSparse " + name, "RaggedTensorToSparse",  # noqa: E731
                                          [("rt_nested_splits", splits), ("rt_dense_values", vals)])
    R2S("1 level", [A([0, 2, 2, 5], i64)], A([1, 2, 3, 4, 5], f32))
    R2S("int32 splits", [A([0, 1, 4], i32)], A([7, 8, 9, 10], i64))
    R2S("2 levels", [A([0, 2, 3], i64), A([0, 1, 1, 4], i64)], A([1, 2, 3, 4], i32))
    R2S("inner dims", [A([0, 1, 3], i64)], np.arange(18, dtype=np.float32).reshape(3, 3, 2))
    R2S("strings", [A([0, 0, 2], i64)], np.array([b"x", b"yz"], dtype=object))
    R2S("empty", [A([0, 0, 0], i64)], np.zeros([0], f32))
    R2S("err first", [A([1, 2], i64)], A([1.0, 2.0], f32))
    R2S("err decreasing", [A([0, 2, 1], i64)], A([1.0], f32))
    R2S("err final", [A([0, 2, 3], i64)], A([1.0, 2.0], f32))
    R2S("err nested final", [A([0, 2, 3], i64), A([0, 1, 2], i64)], A([1.0, 2.0], f32))
    R2S("err empty splits", [np.zeros([0], np.int64)], A([1.0], f32))


def ctc_beam():
    # session 18 (b3): CTCBeamSearchDecoder: beam widths, several paths, merge_repeated, short and
    # empty sequences, double, peaked logits (repeats), TF's messages
    def D(name, x, sl, width, top, merge=True, dt=f32, **kw):
        case("CTCBeamSearchDecoder " + name, "CTCBeamSearchDecoder", [("inputs", x.astype(dt)), ("sequence_length", A(sl, i32))],
             {"beam_width": width, "top_paths": top, "merge_repeated": merge}, **kw)
    x = U(7, 3, 5, lo=-3, hi=3)
    for width, top in ((1, 1), (3, 1), (4, 2), (10, 2)):  # test_ops_api: at most 8 outputs (3 top + 1)
        for merge in (True, False):
            D("w%d top%d merge%d" % (width, top, merge), x, [7, 4, 6], width, top, merge)
    D("double", x, [7, 4, 6], 5, 2, dt=f64)
    D("zero length", x, [7, 0, 6], 3, 1)
    peaked = np.full((6, 2, 4), -5.0, np.float32)
    for t, c in enumerate([0, 0, 3, 0, 1, 1]):
        peaked[t, 0, c] = 4.0
        peaked[t, 1, (c + 1) % 4] = 4.0
    D("peaked", peaked, [6, 6], 4, 2)
    D("peaked no merge", peaked, [6, 6], 4, 2, False)
    D("two classes", U(5, 2, 2), [5, 3], 3, 2)
    D("err top > width", x, [7, 4, 6], 2, 3)
    D("err leaves", x, [7, 0, 6], 3, 2)
    D("err seq", x, [8, 4, 6], 3, 1)
    D("err batch", x, [7, 4], 3, 1)


def I(*shape, lo=-5, hi=6, dt=i32):
    return rng.integers(lo, hi, shape).astype(dt)


def main():
    array_extra()
    nn_loss()
    complex_unary()
    sparse()
    string_format()
    math_extra()
    nms()
    patches()
    pool_argmax()
    fake_quant()
    codecs()
    lu()
    eig_svd()
    hashes()
    image_codecs()
    text_math()
    combined_nms()
    decode_csv()
    dilation()
    draw_boxes()
    zeta_polygamma()
    edit_distance()
    einsum_ellipsis()
    bf16_matmul()
    ctc_loss()
    sets()
    sparse_sparse_ragged()
    ctc_beam()
    g.write_unit_header("api_cases")


if __name__ == "__main__":
    main()
