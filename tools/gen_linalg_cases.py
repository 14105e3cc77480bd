#!/usr/bin/env python3
"""gen_linalg_cases.py - writes tests/unit/linalg_cases.h: the bitwise ops (src/ops/math_bitwise.c:
BitwiseAnd/Or/Xor, LeftShift, RightShift with TF's clamped shift counts, Invert, PopulationCount;
every integer dtype, broadcasting) and the matrix ops (src/ops/linalg.c: MatrixBandPart,
MatrixSolve, MatrixInverse, MatrixDeterminant; batches, adjoint, singular and bad shapes;
MatrixDiag/MatrixDiagPart/MatrixSetDiag V1-V3 with every align; Cholesky, MatrixTriangularSolve, Qr) and src/ops/array_roll.c's Roll
(several axes, negative and large shifts) and Bitcast (every width change), and src/ops/segment.c
(UnsortedSegment* and Segment* reductions) and src/ops/array_search.c (LowerBound, UpperBound,
Cross) against
TensorFlow. Keras exports them: RandomPosterization and RandAugment shift, RandomElasticTransform
ORs, MultiHeadAttention's causal mask is a MatrixBandPart, RandomPerspective solves.

Uses the machinery of tools/gen_array_cases.py (eager tf.raw_ops, TF's CPU kernels; literal
inputs). test_ops_linalg compares integers bit for bit, floats within 1e-5 (double 1e-9) relative.
Run: /work/main/build/venv/bin/python tools/gen_linalg_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


def ints(shape, dt, seed):
    """Values spread over dt's whole range (both signs), with 0, -1 and the extremes."""
    info = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    special = np.array([0, info.max, info.min, 1] + ([-1] if info.min < 0 else [7]), dtype=dt)
    v[:min(n, len(special))] = special[:n]
    return v.reshape(shape)


def bitwise():
    for dt in INTS:
        nm = np.dtype(dt).name
        bits = np.iinfo(dt).bits
        a, b = ints([3, 4], dt, 1), ints([4], dt, 2)
        for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            case("%s %s" % (op, nm), op, [("x", a), ("y", b)])
        # shift counts below 0, inside, at and past the width
        sh = np.array([0, 1, 3, bits - 1, bits, bits + 5, 2, 5, 100 if bits > 8 else 9, 7, 1, 0], np.int64)
        if np.iinfo(dt).min < 0:
            sh[10:] = [-1, -70 if bits > 8 else -9]
        sh = sh.astype(dt).reshape([3, 4])
        for op in ("LeftShift", "RightShift"):
            case("%s %s" % (op, nm), op, [("x", a), ("y", sh)])
            case("%s %s scalar" % (op, nm), op, [("x", a), ("y", np.array(3, dt))])
        case("Invert %s" % nm, "Invert", [("x", a)])
        case("PopulationCount %s" % nm, "PopulationCount", [("x", a)])
    case("BitwiseOr broadcast", "BitwiseOr", [("x", ints([2, 1, 3], np.int32, 3)), ("y", ints([4, 1], np.int32, 4))])
    case("BitwiseAnd empty", "BitwiseAnd", [("x", np.zeros([0, 3], np.int32)), ("y", ints([3], np.int32, 5))])
    case("BitwiseXor err shapes", "BitwiseXor", [("x", ints([2, 3], np.int32, 3)), ("y", ints([4], np.int32, 4))])
    case("Invert scalar", "Invert", [("x", np.array(5, np.int64))])


def mats(shape, dt, seed, cond=True):
    """Random matrices; made diagonally heavy (well conditioned) when cond."""
    rng = np.random.default_rng(seed)
    m = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        m = m + 1j * rng.standard_normal(shape)
    if cond and len(shape) >= 2 and shape[-1] == shape[-2]:
        m = m + 2.0 * np.eye(shape[-1])
    return m.astype(dt)


def linalg():
    x = mats([2, 4, 5], np.float32, 1, cond=False)
    for lo, hi in ((-1, -1), (0, 0), (1, 0), (0, 2), (-1, 0), (0, -1), (2, 1), (4, 5), (3, -1)):
        case("MatrixBandPart %d %d" % (lo, hi), "MatrixBandPart",
             [("input", x), ("num_lower", np.array(lo, np.int64)), ("num_upper", np.array(hi, np.int64))])
    case("MatrixBandPart int32 index", "MatrixBandPart",
         [("input", ints([3, 3], np.int32, 2)), ("num_lower", np.array(1, np.int32)), ("num_upper", np.array(0, np.int32))])
    case("MatrixBandPart bool", "MatrixBandPart",
         [("input", np.ones([2, 3, 2], np.bool_)), ("num_lower", np.array(0, np.int64)),
          ("num_upper", np.array(-1, np.int64))])
    case("MatrixBandPart double wide", "MatrixBandPart",
         [("input", mats([3, 7], np.float64, 2)), ("num_lower", np.array(1, np.int64)), ("num_upper", np.array(2, np.int64))])
    case("MatrixBandPart empty", "MatrixBandPart",
         [("input", np.zeros([0, 3, 3], np.float32)), ("num_lower", np.array(1, np.int64)),
          ("num_upper", np.array(1, np.int64))])
    case("MatrixBandPart err rank", "MatrixBandPart",
         [("input", np.zeros([3], np.float32)), ("num_lower", np.array(0, np.int64)), ("num_upper", np.array(0, np.int64))])
    case("MatrixBandPart err lower", "MatrixBandPart",
         [("input", x), ("num_lower", np.array(5, np.int64)), ("num_upper", np.array(0, np.int64))])
    case("MatrixBandPart err upper", "MatrixBandPart",
         [("input", x), ("num_lower", np.array(0, np.int64)), ("num_upper", np.array(6, np.int64))])
    case("MatrixBandPart err scalar", "MatrixBandPart",
         [("input", x), ("num_lower", np.array([0], np.int64)), ("num_upper", np.array(0, np.int64))])

    for dt in (np.float32, np.float64, np.complex64, np.complex128):
        nm = np.dtype(dt).name
        for n, k in ((1, 1), (3, 2), (5, 1), (8, 3)):
            a, r = mats([2, n, n], dt, n), mats([2, n, k], dt, n + 10, cond=False)
            case("MatrixSolve %s %dx%d k%d" % (nm, n, n, k), "MatrixSolve", [("matrix", a), ("rhs", r)])
        a, r = mats([3, 4, 4], dt, 7), mats([3, 4, 2], dt, 8, cond=False)
        case("MatrixSolve %s adjoint" % nm, "MatrixSolve", [("matrix", a), ("rhs", r)], {"adjoint": True})
        for n in (1, 2, 4, 6):
            case("MatrixInverse %s %d" % (nm, n), "MatrixInverse", [("input", mats([2, n, n], dt, 20 + n))])
            case("MatrixDeterminant %s %d" % (nm, n), "MatrixDeterminant", [("input", mats([3, n, n], dt, 30 + n))])
        case("MatrixInverse %s adjoint" % nm, "MatrixInverse", [("input", mats([4, 4], dt, 3))], {"adjoint": True})
    # no pivot-free path: a zero leading entry needs the row swap
    p = np.array([[0, 1, 2], [1, 0, 3], [4, -3, 8]], np.float32)
    case("MatrixSolve pivot", "MatrixSolve", [("matrix", p), ("rhs", np.array([[1], [2], [3]], np.float32))])
    case("MatrixInverse pivot", "MatrixInverse", [("input", p)])
    case("MatrixDeterminant pivot", "MatrixDeterminant", [("input", p)])
    sing = np.array([[1, 2], [2, 4]], np.float32)
    case("MatrixSolve err singular", "MatrixSolve", [("matrix", sing), ("rhs", np.ones([2, 1], np.float32))])
    case("MatrixInverse err singular", "MatrixInverse", [("input", sing)])
    case("MatrixDeterminant singular", "MatrixDeterminant", [("input", sing.astype(np.float64))])
    case("MatrixSolve err square", "MatrixSolve", [("matrix", np.ones([2, 3], np.float32)), ("rhs", np.ones([2, 1], np.float32))])
    case("MatrixSolve err rhs rows", "MatrixSolve", [("matrix", mats([3, 3], np.float32, 1)),
                                                     ("rhs", np.ones([2, 1], np.float32))])
    case("MatrixSolve err batch", "MatrixSolve", [("matrix", mats([2, 3, 3], np.float32, 1)),
                                                  ("rhs", np.ones([3, 3, 1], np.float32))])
    case("MatrixSolve err rank", "MatrixSolve", [("matrix", np.ones([3], np.float32)), ("rhs", np.ones([3], np.float32))])
    case("MatrixInverse err square", "MatrixInverse", [("input", np.ones([2, 3], np.float32))])
    case("MatrixDeterminant err rank", "MatrixDeterminant", [("input", np.ones([3], np.float32))])
    case("MatrixSolve empty batch", "MatrixSolve", [("matrix", np.zeros([0, 3, 3], np.float32)),
                                                    ("rhs", np.zeros([0, 3, 2], np.float32))])
    case("MatrixSolve empty rhs", "MatrixSolve", [("matrix", mats([3, 3], np.float32, 4)),
                                                  ("rhs", np.zeros([3, 0], np.float32))])
    case("MatrixInverse empty", "MatrixInverse", [("input", np.zeros([2, 0, 0], np.float32))])
    case("MatrixDeterminant empty", "MatrixDeterminant", [("input", np.zeros([2, 0, 0], np.float32))])
    case("MatrixSolve big", "MatrixSolve", [("matrix", mats([24, 24], np.float64, 5)),
                                            ("rhs", mats([24, 3], np.float64, 6, cond=False))])


def diag():
    i32 = lambda v: np.array(v, np.int32)  # noqa: E731
    d1 = mats([2, 4], np.float32, 40, cond=False)
    case("MatrixDiag", "MatrixDiag", [("diagonal", d1)])
    case("MatrixDiagPart", "MatrixDiagPart", [("input", mats([2, 3, 4], np.float32, 41, cond=False))])
    case("MatrixSetDiag", "MatrixSetDiag", [("input", mats([2, 4, 3], np.float32, 42, cond=False)),
                                            ("diagonal", mats([2, 3], np.float32, 43, cond=False))])
    for align in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
        for k, shape, nr, nc in ((0, [2, 3], -1, -1), (1, [3], -1, -1), (-2, [3], -1, 6), ([-1, 2], [2, 4, 4], -1, -1),
                                 ([-2, 0], [3, 3], 5, -1), ([1, 3], [3, 3], 3, 6)):
            case("MatrixDiagV3 %s k%s %s %dx%d" % (align, k, shape, nr, nc), "MatrixDiagV3",
                 [("diagonal", mats(shape, np.float32, 44, cond=False)), ("k", i32(k)), ("num_rows", i32(nr)),
                  ("num_cols", i32(nc)), ("padding_value", np.array(9.5, np.float32))], {"align": align})
        for k in (0, 2, -1, [-1, 1], [-3, 0], [0, 4], [1, 2]):
            x = mats([2, 4, 5], np.float32, 45, cond=False)
            case("MatrixDiagPartV3 %s k%s" % (align, k), "MatrixDiagPartV3",
                 [("input", x), ("k", i32(k)), ("padding_value", np.array(-7, np.float32))], {"align": align})
            part = tf.raw_ops.MatrixDiagPartV3(input=x, k=i32(k), padding_value=np.float32(0), align=align).numpy()
            case("MatrixSetDiagV3 %s k%s" % (align, k), "MatrixSetDiagV3",
                 [("input", x), ("diagonal", part * 0 + mats(part.shape, np.float32, 46, cond=False)), ("k", i32(k))],
                 {"align": align})
    case("MatrixDiagV2 band", "MatrixDiagV2", [("diagonal", mats([2, 3], np.float64, 47)), ("k", i32([0, 1])),
                                               ("num_rows", i32(-1)), ("num_cols", i32(-1)),
                                               ("padding_value", np.array(0, np.float64))])
    case("MatrixDiagPartV2 band", "MatrixDiagPartV2", [("input", mats([3, 4], np.float64, 48)), ("k", i32([-1, 1])),
                                                       ("padding_value", np.array(1, np.float64))])
    case("MatrixSetDiagV2", "MatrixSetDiagV2", [("input", mats([3, 4], np.float64, 48)),
                                                ("diagonal", mats([2, 3], np.float64, 49)), ("k", i32([0, 1]))])
    case("MatrixDiagV3 int32", "MatrixDiagV3", [("diagonal", ints([2, 3], np.int32, 1)), ("k", i32(0)),
                                                ("num_rows", i32(-1)), ("num_cols", i32(-1)),
                                                ("padding_value", np.array(5, np.int32))])
    case("MatrixDiagV3 bool eye", "MatrixDiagV3", [("diagonal", np.ones([3], np.bool_)), ("k", i32(0)),
                                                   ("num_rows", i32(4)), ("num_cols", i32(3)),
                                                   ("padding_value", np.array(False))])
    case("MatrixDiagV3 err long", "MatrixDiagV3", [("diagonal", np.ones([4], np.bool_)), ("k", i32(0)),
                                                   ("num_rows", i32(4)), ("num_cols", i32(3)),
                                                   ("padding_value", np.array(False))])
    case("MatrixDiagV3 empty", "MatrixDiagV3", [("diagonal", np.zeros([0, 3], np.float32)), ("k", i32(0)),
                                                ("num_rows", i32(-1)), ("num_cols", i32(-1)),
                                                ("padding_value", np.array(0, np.float32))])
    case("MatrixDiagPartV3 empty", "MatrixDiagPartV3", [("input", np.zeros([2, 0, 3], np.float32)), ("k", i32(0)),
                                                        ("padding_value", np.array(0, np.float32))])
    z = np.array(0, np.float32)
    case("MatrixDiagV3 err k order", "MatrixDiagV3", [("diagonal", d1), ("k", i32([2, 1])), ("num_rows", i32(-1)),
                                                      ("num_cols", i32(-1)), ("padding_value", z)])
    case("MatrixDiagV3 err k size", "MatrixDiagV3", [("diagonal", d1), ("k", i32([0, 1, 2])), ("num_rows", i32(-1)),
                                                     ("num_cols", i32(-1)), ("padding_value", z)])
    case("MatrixDiagV3 err rows", "MatrixDiagV3", [("diagonal", d1), ("k", i32(0)), ("num_rows", i32(2)),
                                                   ("num_cols", i32(-1)), ("padding_value", z)])
    case("MatrixDiagV3 err cols", "MatrixDiagV3", [("diagonal", d1), ("k", i32(1)), ("num_rows", i32(-1)),
                                                   ("num_cols", i32(3)), ("padding_value", z)])
    case("MatrixDiagV3 err num diags", "MatrixDiagV3", [("diagonal", mats([2, 3, 4], np.float32, 1)),
                                                        ("k", i32([0, 1])), ("num_rows", i32(-1)),
                                                        ("num_cols", i32(-1)), ("padding_value", z)])
    case("MatrixDiagPartV3 err rank", "MatrixDiagPartV3", [("input", np.zeros([3], np.float32)), ("k", i32(0)),
                                                           ("padding_value", z)])
    case("MatrixDiagPartV3 err bound", "MatrixDiagPartV3", [("input", np.zeros([3, 4], np.float32)), ("k", i32(4)),
                                                            ("padding_value", z)])
    case("MatrixDiagPartV3 err pad", "MatrixDiagPartV3", [("input", np.zeros([3, 4], np.float32)), ("k", i32(0)),
                                                          ("padding_value", np.zeros([2], np.float32))])


def roll_bitcast():
    i32, i64 = (lambda v: np.array(v, np.int32)), (lambda v: np.array(v, np.int64))  # noqa: E731
    x = np.arange(24, dtype=np.float32).reshape([2, 3, 4])
    for sh, ax in ((1, 0), (-1, 2), (5, 1), ([1, -2], [0, 2]), ([2, 3], [1, 1]), (0, 1), ([7, -9, 13], [0, 1, 2]),
                   (-4, -1), ([1, 1], [-1, 2])):
        case("Roll %s %s" % (sh, ax), "Roll", [("input", x), ("shift", i32(sh)), ("axis", i32(ax))])
    case("Roll int64 shift", "Roll", [("input", ints([5, 2], np.int8, 1)), ("shift", i64([3])), ("axis", i64([0]))])
    case("Roll string", "Roll", [("input", np.array([b"a", b"bc", b"", b"d"], dtype=object)), ("shift", i32(1)),
                                 ("axis", i32(0))])
    case("Roll empty", "Roll", [("input", np.zeros([0, 3], np.float32)), ("shift", i32(2)), ("axis", i32(1))])
    case("Roll err axis", "Roll", [("input", x), ("shift", i32(1)), ("axis", i32(3))])
    case("Roll err sizes", "Roll", [("input", x), ("shift", i32([1, 2])), ("axis", i32([0]))])
    case("Roll err rank", "Roll", [("input", np.array(1.0, np.float32)), ("shift", i32(1)), ("axis", i32(0))])
    case("Roll err shift rank", "Roll", [("input", x), ("shift", i32([[1]])), ("axis", i32([[0]]))])
    f = np.array([1.5, -2.0, 0.0, np.inf, 3.25, -0.0], np.float32)
    for dst in (tf.int32, tf.uint32, tf.uint8, tf.int16, tf.float32):
        case("Bitcast float32 to %s" % dst.name, "Bitcast", [("input", f)], {"type": dst})
    case("Bitcast float32 to float64", "Bitcast", [("input", f.reshape([3, 2]))], {"type": tf.float64})
    case("Bitcast uint8 to int32", "Bitcast", [("input", ints([3, 4], np.uint8, 2))], {"type": tf.int32})
    case("Bitcast int64 to complex64", "Bitcast", [("input", ints([2], np.int64, 3))], {"type": tf.complex64})
    case("Bitcast half to uint16", "Bitcast", [("input", tf.constant([1.5, -2.25, 65504], tf.float16))],
         {"type": tf.uint16})
    case("Bitcast err last dim", "Bitcast", [("input", ints([3, 3], np.uint8, 4))], {"type": tf.int32})
    case("Bitcast err scalar", "Bitcast", [("input", np.array(7, np.uint8))], {"type": tf.int16})


def segment():
    for dt in (np.float32, np.float64, np.int32, np.int64):
        nm = np.dtype(dt).name
        data = (mats([6, 3], np.float64, 60, cond=False) * 10).astype(dt)
        ids = np.array([0, 3, -1, 0, 1, 3], np.int32)
        for red in ("Sum", "Max", "Min", "Prod"):
            case("UnsortedSegment%s %s" % (red, nm), "UnsortedSegment" + red,
                 [("data", data), ("segment_ids", ids), ("num_segments", np.array(5, np.int32))])
        sids = np.array([0, 0, 2, 2, 2, 5], np.int64)
        for red in ("Sum", "Mean", "Max", "Min", "Prod"):
            case("Segment%s %s" % (red, nm), "Segment" + red, [("data", data), ("segment_ids", sids)])
    d3 = mats([2, 3, 2], np.float32, 61, cond=False)
    case("UnsortedSegmentSum 2-D ids", "UnsortedSegmentSum",
         [("data", d3), ("segment_ids", np.array([[1, 0, 1], [2, 2, 0]], np.int64)), ("num_segments", np.array(4, np.int64))])
    case("UnsortedSegmentSum int wrap", "UnsortedSegmentSum",
         [("data", np.array([2**31 - 1, 5], np.int32)), ("segment_ids", np.array([0, 0], np.int32)),
          ("num_segments", np.array(1, np.int32))])
    case("UnsortedSegmentMax empty data", "UnsortedSegmentMax",
         [("data", np.zeros([0, 2], np.float32)), ("segment_ids", np.zeros([0], np.int32)),
          ("num_segments", np.array(2, np.int32))])
    case("UnsortedSegmentSum err range", "UnsortedSegmentSum",
         [("data", np.ones([3, 2], np.float32)), ("segment_ids", np.array([0, 5, 1], np.int32)),
          ("num_segments", np.array(3, np.int32))])
    case("UnsortedSegmentSum err prefix", "UnsortedSegmentSum",
         [("data", np.ones([3, 2], np.float32)), ("segment_ids", np.array([0, 1], np.int32)),
          ("num_segments", np.array(3, np.int32))])
    case("UnsortedSegmentSum err negative", "UnsortedSegmentSum",
         [("data", np.ones([3, 2], np.float32)), ("segment_ids", np.array([0, 1, 1], np.int32)),
          ("num_segments", np.array(-1, np.int32))])
    case("SegmentSum err order", "SegmentSum", [("data", np.ones([3], np.float32)),
                                                ("segment_ids", np.array([1, 0, 2], np.int32))])
    case("SegmentSum err size", "SegmentSum", [("data", np.ones([3], np.float32)),
                                               ("segment_ids", np.array([0, 1], np.int32))])
    case("SegmentMax empty", "SegmentMax", [("data", np.zeros([0, 3], np.float32)),
                                            ("segment_ids", np.zeros([0], np.int32))])


def chol_tri():
    for dt in (np.float32, np.float64, np.complex64, np.complex128):
        nm = np.dtype(dt).name
        for n in (1, 3, 5):
            a = mats([2, n, n], dt, 70 + n, cond=False)
            spd = np.matmul(a, np.conj(np.swapaxes(a, -1, -2))) + n * np.eye(n)
            spd = spd + np.triu(mats([n, n], dt, 9, cond=False), 1)  # an upper part Cholesky ignores
            case("Cholesky %s %d" % (nm, n), "Cholesky", [("input", spd.astype(dt))])
        for lower in (True, False):
            for adj in (False, True):
                case("MatrixTriangularSolve %s lower=%s adjoint=%s" % (nm, lower, adj), "MatrixTriangularSolve",
                     [("matrix", mats([2, 4, 4], dt, 80)), ("rhs", mats([2, 4, 3], dt, 81, cond=False))],
                     {"lower": lower, "adjoint": adj})
    case("MatrixTriangularSolve broadcast", "MatrixTriangularSolve",
         [("matrix", mats([3, 3], np.float32, 82)), ("rhs", mats([2, 2, 3, 1], np.float32, 83, cond=False))])
    case("MatrixTriangularSolve broadcast both", "MatrixTriangularSolve",
         [("matrix", mats([2, 1, 3, 3], np.float64, 84)), ("rhs", mats([3, 3, 2], np.float64, 85, cond=False))],
         {"lower": False})
    # not positive definite: NaN, no error (1 x 1: TF leaves a larger one's upper triangle unwritten)
    case("Cholesky not pd", "Cholesky", [("input", np.array([[[-1]], [[4]]], np.float32))])
    case("Cholesky err square", "Cholesky", [("input", np.ones([2, 3], np.float32))])
    case("Cholesky empty", "Cholesky", [("input", np.zeros([2, 0, 0], np.float32))])
    for dt in (np.float32, np.float64, np.complex64, np.complex128):
        for shape in ([4, 4], [2, 5, 3], [3, 5], [1, 1], [6, 2]):
            for full in (False, True):
                case("Qr %s %s full=%s" % (np.dtype(dt).name, shape, full), "Qr",
                     [("input", mats(shape, dt, 90 + len(shape), cond=False))], {"full_matrices": full})
    case("Qr zero column", "Qr", [("input", np.array([[0, 1], [0, 2], [0, 3]], np.float32))])
    case("Qr empty", "Qr", [("input", np.zeros([2, 0, 3], np.float32))])
    case("MatrixTriangularSolve err rows", "MatrixTriangularSolve",
         [("matrix", mats([3, 3], np.float32, 1)), ("rhs", np.ones([2, 1], np.float32))])


def search_cross():
    nan = float("nan")
    for dt in (np.float32, np.float64, np.int32, np.int64):
        srt = np.sort((mats([3, 7], np.float64, 100, cond=False) * 4).astype(dt), axis=-1)
        srt[0, 2:4] = srt[0, 2]  # duplicates: lower and upper differ
        vals = np.concatenate([srt[:, ::2], (mats([3, 5], np.float64, 101, cond=False) * 5).astype(dt)], axis=-1)
        for op in ("LowerBound", "UpperBound"):
            for out in (tf.int32, tf.int64):
                case("%s %s %s" % (op, np.dtype(dt).name, out.name), op,
                     [("sorted_inputs", srt), ("values", vals)], {"out_type": out})
    f = np.array([[1.0, 2.0, nan, 4.0]], np.float32)
    for op in ("LowerBound", "UpperBound"):
        case("%s nan" % op, op, [("sorted_inputs", f), ("values", np.array([[nan, 2.0, 5.0, -1.0]], np.float32))])
        case("%s empty sorted" % op, op, [("sorted_inputs", np.zeros([2, 0], np.float32)),
                                           ("values", np.ones([2, 3], np.float32))])
    case("LowerBound err leading", "LowerBound", [("sorted_inputs", np.zeros([2, 3], np.float32)),
                                                  ("values", np.ones([3, 3], np.float32))])
    for dt in (np.float32, np.float64):
        case("Cross %s" % np.dtype(dt).name, "Cross", [("a", mats([2, 4, 3], dt, 102, cond=False)),
                                                       ("b", mats([2, 4, 3], dt, 103, cond=False))])
    case("Cross err size", "Cross", [("a", np.ones([2, 4], np.float32)), ("b", np.ones([2, 4], np.float32))])
    case("Cross err shape", "Cross", [("a", np.ones([2, 3], np.float32)), ("b", np.ones([3, 3], np.float32))])


def main():
    bitwise()
    linalg()
    diag()
    roll_bitcast()
    segment()
    chol_tri()
    search_cross()
    g.write_unit_header("linalg_cases")


if __name__ == "__main__":
    main()
