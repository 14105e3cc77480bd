#!/usr/bin/env python3
"""gen_e6_cases.py - writes tests/unit/e6_cases.h: the remaining forward ops of tf.raw_ops added in
session 20 (e6) against TensorFlow (eager tf.raw_ops, TF's CPU kernels): LinSpace, Mod, TopK (V1),
Reverse (V1), SpaceToBatch / BatchToSpace (V1), InplaceAdd / InplaceSub / InplaceUpdate,
DataFormatDimMap, DataFormatVecPermute, CheckNumericsV2, ApproximateEqual, ParallelConcat,
DeepCopy, ToBool, SparseMatMul, NthElement, TensorStridedSliceUpdate, MatrixSolveLs and
RaggedFillEmptyRows. Every dtype
the CPU kernels register, every attr, empty tensors, edge values and TF's error messages.

Uses the machinery of tools/gen_array_cases.py. test_ops_e6 compares floats within 1e-5 relative.
Run: build/venv/bin/python tools/gen_e6_cases.py
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
rng = np.random.default_rng(20)
REAL = (tf.float32, tf.float64, tf.float16, tf.bfloat16, tf.int8, tf.uint8, tf.int16, tf.uint16, tf.int32, tf.uint32,
        tf.int64, tf.uint64)
ALL = REAL + (tf.bool, tf.complex64, tf.complex128, tf.string)


def T(vals, dt):
    """a tensor of dtype dt from numbers (strings: their text; bool: nonzero)"""
    a = np.asarray(vals)
    if dt == tf.string:
        return tf.constant(np.vectorize(lambda v: ("s%d" % v).encode())(a).astype(object) if a.size else
                           np.zeros(a.shape, object), dtype=tf.string)
    if dt == tf.bool:
        return tf.constant(a % 2 == 1)
    return tf.cast(tf.constant(a.astype(np.float64)), dt)


def U(*shape, dt=f32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dt)


def linspace():
    for dt in (f32, f64):
        for it in (i32, i64):
            for a, b, n in ((0.0, 1.0, 5), (-3.5, 2.25, 1), (1.0, -1.0, 7), (10.0, 10.0, 3), (0.0, 1.0, 2), (1e-3, 1e6, 11)):
                case("LinSpace %s %s %g %g %d" % (np.dtype(dt).name, np.dtype(it).name, a, b, n), "LinSpace",
                     [("start", A(a, dt)), ("stop", A(b, dt)), ("num", A(n, it))])
    case("LinSpace err num 0", "LinSpace", [("start", A(0.0)), ("stop", A(1.0)), ("num", A(0, i32))])
    case("LinSpace err num -1", "LinSpace", [("start", A(0.0)), ("stop", A(1.0)), ("num", A(-1, i32))])
    case("LinSpace err start vector", "LinSpace", [("start", A([0.0])), ("stop", A(1.0)), ("num", A(3, i32))])
    case("LinSpace err stop vector", "LinSpace", [("start", A(0.0)), ("stop", A([1.0])), ("num", A(3, i32))])
    case("LinSpace err num vector", "LinSpace", [("start", A(0.0)), ("stop", A(1.0)), ("num", A([3], i32))])
    case("LinSpace nan", "LinSpace", [("start", A(nan)), ("stop", A(1.0)), ("num", A(3, i32))])


def mod():
    for dt in (i32, i64):
        x = A([7, -7, 7, -7, 0, 5, -2**31 + 1, 2**31 - 1, 3], dt)
        y = A([3, 3, -3, -3, 4, 1, 7, -5, 3], dt)
        case("Mod %s" % np.dtype(dt).name, "Mod", [("x", x), ("y", y)])
        case("Mod %s broadcast" % np.dtype(dt).name, "Mod", [("x", A([[7, -8, 9], [1, 2, -3]], dt)), ("y", A([4, -3, 2], dt))])
        case("Mod %s err zero" % np.dtype(dt).name, "Mod", [("x", A([1, 2], dt)), ("y", A([1, 0], dt))])
    for dt in (f32, f64):
        x = A([7.5, -7.5, 7.5, -7.5, 0.0, inf, 1.0, nan, 5.0, -0.0], dt)
        y = A([2.0, 2.0, -2.0, -2.0, 3.0, 2.0, inf, 1.0, 0.0, 3.0], dt)
        case("Mod %s" % np.dtype(dt).name, "Mod", [("x", x), ("y", y)])
        case("Mod %s scalar" % np.dtype(dt).name, "Mod", [("x", U(2, 3, dt=dt, lo=-9, hi=9)), ("y", A(1.5, dt))])
    case("Mod empty", "Mod", [("x", np.zeros([0, 3], f32)), ("y", A([1.0, 2.0, 3.0]))])
    case("Mod err shapes", "Mod", [("x", A([1.0, 2.0])), ("y", A([1.0, 2.0, 3.0]))])


def topk_v1(name, x, k, **attrs):
    """TopK (V1, k an attr): TF 2.21 has no CPU kernel that matches its OpDef (the one registered
    wants TopKV2's index_type), so TF's answer is TopKV2's with k as an input"""
    case(name, "TopKV2", [("input", x), ("k", A(k, i32))], attrs)
    n, node, flat, outs, err = g.CASES[-1]
    node = 'op: "TopK" %s' % " ".join(g.attr_text(a, v) for a, v in sorted(dict(attrs, T=flat[0].dtype, k=k).items()))
    g.CASES[-1] = (n, node, flat[:1], outs, err)


def topk():
    x = A([[3, 1, 4, 1, 5, 9, 2, 6], [5, 3, 5, 8, 9, 7, 9, 3]])
    for dt in REAL:
        for k in (0, 1, 3, 8):
            topk_v1("TopK %s k%d" % (dt.name, k), T(x, dt), k)
        for k in (1, 8):  # 1 < k < n unsorted: TF's heap order (a known gap of TopKV2, gen_scatter_cases.py)
            topk_v1("TopK %s unsorted k%d" % (dt.name, k), T(x, dt), k, sorted=False)
    topk_v1("TopK float nan", A([1.0, nan, 3.0, -inf, inf]), 3)
    topk_v1("TopK 3-D", U(2, 3, 5), 2)
    topk_v1("TopK empty rows", np.zeros([0, 4], f32), 2)
    topk_v1("TopK err k", x, 9)
    topk_v1("TopK err scalar", A(1.0), 0)


def reverse():
    x = np.arange(24).reshape(2, 3, 4)
    for dt in ALL:
        case("Reverse %s" % dt.name, "Reverse", [("tensor", T(x, dt)), ("dims", A([True, False, True], bool))])
    for dims in ([False, False, False], [True, True, True], [False, True, False], [False, False, True]):
        case("Reverse dims %s" % dims, "Reverse", [("tensor", A(x, i32)), ("dims", A(dims, bool))])
    case("Reverse 1-D", "Reverse", [("tensor", A([1.0, 2, 3])), ("dims", A([True], bool))])
    case("Reverse scalar", "Reverse", [("tensor", A(5.0)), ("dims", np.zeros([0], bool))])
    case("Reverse empty", "Reverse", [("tensor", np.zeros([2, 0], f32)), ("dims", A([True, True], bool))])
    case("Reverse 6-D", "Reverse", [("tensor", np.arange(64).reshape(2, 2, 2, 2, 2, 2).astype(f32)),
                                     ("dims", A([True, False, True, False, False, True], bool))])
    case("Reverse err dims size", "Reverse", [("tensor", A(x, f32)), ("dims", A([True, False], bool))])
    case("Reverse err dims rank", "Reverse", [("tensor", A(x, f32)), ("dims", A([[True, False, True]], bool))])


def space_batch():
    x = np.arange(2 * 4 * 6 * 3).reshape(2, 4, 6, 3)
    for dt in REAL:
        case("SpaceToBatch %s" % dt.name, "SpaceToBatch", [("input", T(x, dt)), ("paddings", A([[0, 0], [0, 0]], i32))],
             {"block_size": 2})
        case("BatchToSpace %s" % dt.name, "BatchToSpace", [("input", T(np.arange(8 * 2 * 3 * 1).reshape(8, 2, 3, 1), dt)),
                                                           ("crops", A([[0, 0], [0, 0]], i32))], {"block_size": 2})
    for it in (i32, i64):
        case("SpaceToBatch pad %s" % np.dtype(it).name, "SpaceToBatch",
             [("input", A(x, f32)), ("paddings", A([[1, 1], [2, 1]], it))], {"block_size": 3})
        case("BatchToSpace crop %s" % np.dtype(it).name, "BatchToSpace",
             [("input", A(np.arange(18 * 2 * 2 * 2).reshape(18, 2, 2, 2), f32)), ("crops", A([[1, 2], [0, 1]], it))],
             {"block_size": 3})
    case("SpaceToBatch empty", "SpaceToBatch", [("input", np.zeros([0, 2, 2, 1], f32)), ("paddings", A([[0, 0], [0, 0]], i32))],
         {"block_size": 2})
    case("SpaceToBatch err divisible", "SpaceToBatch", [("input", A(x, f32)), ("paddings", A([[0, 1], [0, 0]], i32))],
         {"block_size": 2})
    case("SpaceToBatch err pad negative", "SpaceToBatch", [("input", A(x, f32)), ("paddings", A([[-2, 0], [0, 0]], i32))],
         {"block_size": 2})
    case("SpaceToBatch err rank", "SpaceToBatch", [("input", A(np.zeros([4, 4, 3]), f32)), ("paddings", A([[0, 0], [0, 0]], i32))],
         {"block_size": 2})
    case("SpaceToBatch err paddings shape", "SpaceToBatch", [("input", A(x, f32)), ("paddings", A([[0, 0]], i32))],
         {"block_size": 2})
    case("BatchToSpace err batch", "BatchToSpace", [("input", A(np.zeros([6, 2, 2, 1]), f32)), ("crops", A([[0, 0], [0, 0]], i32))],
         {"block_size": 2})
    case("BatchToSpace err crop", "BatchToSpace", [("input", A(np.zeros([4, 2, 2, 1]), f32)), ("crops", A([[3, 3], [0, 0]], i32))],
         {"block_size": 2})
    case("BatchToSpace err rank", "BatchToSpace", [("input", A(np.zeros([4, 2, 2]), f32)), ("crops", A([[0, 0], [0, 0]], i32))],
         {"block_size": 2})


def inplace_case(name, op, inputs):
    """TF's inplace kernels write their input x: the case keeps a copy of x as it was"""
    x0 = tf.constant(np.array(inputs[0][1].numpy() if hasattr(inputs[0][1], "numpy") else inputs[0][1]))
    case(name, op, inputs)
    n, node, flat, outs, err = g.CASES[-1]
    g.CASES[-1] = (n, node, [x0] + flat[1:], outs, err)


def inplace():
    x = np.arange(12).reshape(4, 3)
    v = np.arange(6).reshape(2, 3) * 10 + 1
    for dt in REAL + (tf.complex64, tf.complex128):
        for op in ("InplaceAdd", "InplaceSub", "InplaceUpdate"):
            inplace_case("%s %s" % (op, dt.name), op, [("x", T(x, dt)), ("i", A([3, 1], i32)), ("v", T(v, dt))])
    for dt in (tf.bool, tf.string):
        inplace_case("InplaceUpdate %s" % dt.name, "InplaceUpdate", [("x", T(x, dt)), ("i", A([3, 1], i32)), ("v", T(v, dt))])
    for op in ("InplaceAdd", "InplaceSub", "InplaceUpdate"):
        inplace_case("%s repeated index" % op, op, [("x", A(x, f32)), ("i", A([2, 2], i32)), ("v", A(v, f32))])
        inplace_case("%s 1-D" % op, op, [("x", A([1.0, 2, 3, 4])), ("i", A([0, 3], i32)), ("v", A([10.0, 20]))])
        inplace_case("%s 3-D" % op, op, [("x", U(3, 2, 2)), ("i", A([1], i32)), ("v", U(1, 2, 2))])
        inplace_case("%s empty i" % op, op, [("x", A(x, f32)), ("i", np.zeros([0], i32)), ("v", np.zeros([0, 3], f32))])
        inplace_case("%s err v rows" % op, op, [("x", A(x, f32)), ("i", A([0], i32)), ("v", A(v, f32))])
        inplace_case("%s err v cols" % op, op, [("x", A(x, f32)), ("i", A([0, 1], i32)), ("v", np.zeros([2, 2], f32))])
        inplace_case("%s err i rank" % op, op, [("x", A(x, f32)), ("i", A([[0, 1]], i32)), ("v", A(v, f32))])
        inplace_case("%s err v rank" % op, op, [("x", A(x, f32)), ("i", A([0, 1], i32)), ("v", A(v.reshape(-1), f32))])


def data_format():
    for dt in (i32, i64):
        x = A([0, 1, 2, 3, -1, -2, -3, -4], dt)
        for src, dst in (("NHWC", "NCHW"), ("NCHW", "NHWC"), ("NHWC", "NHWC"), ("NHWC", "HWNC"), ("NHWC", "WHCN"),
                         ("NDHWC", "NCDHW"), ("NCDHW", "NDHWC")):
            xx = A(list(range(len(src))) + [-i - 1 for i in range(len(src))], dt)
            case("DataFormatDimMap %s %s->%s" % (np.dtype(dt).name, src, dst), "DataFormatDimMap", [("x", xx)],
                 {"src_format": src, "dst_format": dst})
        case("DataFormatDimMap %s 2-D" % np.dtype(dt).name, "DataFormatDimMap", [("x", x.reshape(2, 4))])
        case("DataFormatDimMap %s scalar" % np.dtype(dt).name, "DataFormatDimMap", [("x", A(1, dt))])
        for src, dst in (("NHWC", "NCHW"), ("NCHW", "NHWC"), ("NHWC", "HWNC"), ("NDHWC", "NCDHW"), ("NCDHW", "NDHWC")):
            n = len(src)
            case("DataFormatVecPermute %s %s->%s" % (np.dtype(dt).name, src, dst), "DataFormatVecPermute",
                 [("x", A(np.arange(n) + 10, dt))], {"src_format": src, "dst_format": dst})
            case("DataFormatVecPermute %s %s->%s 2-D" % (np.dtype(dt).name, src, dst), "DataFormatVecPermute",
                 [("x", A(np.arange(2 * n).reshape(n, 2) + 10, dt))], {"src_format": src, "dst_format": dst})
            case("DataFormatVecPermute %s %s->%s spatial" % (np.dtype(dt).name, src, dst), "DataFormatVecPermute",
                 [("x", A(np.arange(n - 2) + 10, dt))], {"src_format": src, "dst_format": dst})
            case("DataFormatVecPermute %s %s->%s spatial 2-D" % (np.dtype(dt).name, src, dst), "DataFormatVecPermute",
                 [("x", A(np.arange(2 * (n - 2)).reshape(n - 2, 2) + 10, dt))], {"src_format": src, "dst_format": dst})
    case("DataFormatDimMap err format length", "DataFormatDimMap", [("x", A([0], i32))], {"src_format": "NHWC", "dst_format": "NCDHW"})
    case("DataFormatDimMap err format letters", "DataFormatDimMap", [("x", A([0], i32))], {"src_format": "NHWC", "dst_format": "NHWD"})
    case("DataFormatVecPermute err size", "DataFormatVecPermute", [("x", A([1, 2, 3], i32))])
    case("DataFormatVecPermute err 2-D shape", "DataFormatVecPermute", [("x", A(np.zeros([4, 3]), i32))])
    case("DataFormatVecPermute err rank", "DataFormatVecPermute", [("x", A(np.zeros([2, 2, 1]), i32))])
    case("DataFormatVecPermute err scalar", "DataFormatVecPermute", [("x", A(1, i32))])
    case("DataFormatVecPermute err format", "DataFormatVecPermute", [("x", A([1, 2, 3, 4], i32))],
         {"src_format": "NHWC", "dst_format": "NHCQ"})


def check_numerics():
    for dt in (tf.float32, tf.float64, tf.float16, tf.bfloat16):
        case("CheckNumericsV2 %s ok" % dt.name, "CheckNumericsV2", [("tensor", tf.cast(A([1.0, -2.0, 0.0, 65000.0]), dt))],
             {"message": "hi"})
        for bad in ([1.0, nan], [inf, 1.0], [-inf, 2.0], [nan, inf], [nan, -inf], [inf, -inf], [nan, inf, -inf]):
            case("CheckNumericsV2 %s %s" % (dt.name, bad), "CheckNumericsV2", [("tensor", tf.cast(A(bad), dt))],
                 {"message": "msg x"})
    case("CheckNumericsV2 empty", "CheckNumericsV2", [("tensor", np.zeros([0, 2], f32))], {"message": ""})


def approx_equal():
    for dt in (f32, f64):
        x = A([1.0, 1.0, 1.0, nan, inf, inf, -inf, 0.0], dt)
        y = A([1.0, 1.000001, 1.1, nan, inf, -inf, -inf, 1e-6], dt)
        case("ApproximateEqual %s" % np.dtype(dt).name, "ApproximateEqual", [("x", x), ("y", y)])
        case("ApproximateEqual %s tol" % np.dtype(dt).name, "ApproximateEqual", [("x", x), ("y", y)], {"tolerance": 0.2})
        case("ApproximateEqual %s tol 0" % np.dtype(dt).name, "ApproximateEqual", [("x", x), ("y", y)], {"tolerance": 0.0})
    case("ApproximateEqual empty", "ApproximateEqual", [("x", np.zeros([0], f32)), ("y", np.zeros([0], f32))])
    case("ApproximateEqual err shape", "ApproximateEqual", [("x", A([1.0, 2.0])), ("y", A([1.0]))])


def parallel_concat():
    for dt in ALL:
        vals = [T(np.arange(3).reshape(1, 3) + 3 * i, dt) for i in range(3)]
        case("ParallelConcat %s" % dt.name, "ParallelConcat", [("values", vals)], {"shape": ("shape", [3, 3])})
    case("ParallelConcat one", "ParallelConcat", [("values", [A([[1.0, 2.0]])])], {"shape": ("shape", [1, 2])})
    case("ParallelConcat 3-D", "ParallelConcat", [("values", [U(1, 2, 2), U(1, 2, 2)])], {"shape": ("shape", [2, 2, 2])})
    case("ParallelConcat 1-D", "ParallelConcat", [("values", [A([1.0]), A([2.0])])], {"shape": ("shape", [2])})
    case("ParallelConcat empty", "ParallelConcat", [("values", [np.zeros([1, 0], f32), np.zeros([1, 0], f32)])],
         {"shape": ("shape", [2, 0])})
    case("ParallelConcat err first dim", "ParallelConcat", [("values", [A([[1.0], [2.0]]), A([[1.0], [2.0]])])],
         {"shape": ("shape", [4, 1])})
    case("ParallelConcat err shapes", "ParallelConcat", [("values", [A([[1.0, 2.0]]), A([[1.0, 2.0, 3.0]])])],
         {"shape": ("shape", [2, 2])})


def copies():
    for dt in ALL:
        case("DeepCopy %s" % dt.name, "DeepCopy", [("x", T(np.arange(6).reshape(2, 3), dt))])
    case("DeepCopy empty", "DeepCopy", [("x", np.zeros([0, 2], f32))])
    case("DeepCopy scalar", "DeepCopy", [("x", A(2.5))])
    for dt in REAL + (tf.bool, tf.string, tf.complex64):
        for v in ([0], [1], 0, 3, [0, 0], np.zeros([0])):
            a = np.asarray(v)
            if dt == tf.string and a.ndim == 0:
                case("ToBool %s %s" % (dt.name, v), "ToBool", [("input", tf.constant(b"" if v == 0 else b"abc"))])
                continue
            case("ToBool %s %s" % (dt.name, list(a.reshape(-1)) if a.ndim else v), "ToBool", [("input", T(a, dt))])


def sparse_matmul():
    for ta in (tf.float32, tf.bfloat16):
        for tb in (tf.float32, tf.bfloat16):
            for tra in (False, True):
                for trb in (False, True):
                    a = U(*((4, 3) if tra else (3, 4)))
                    a[a < 0] = 0
                    b = U(*((5, 4) if trb else (4, 5)))
                    case("SparseMatMul %s %s %d%d" % (ta.name, tb.name, tra, trb), "SparseMatMul",
                         [("a", tf.cast(a, ta)), ("b", tf.cast(b, tb))],
                         {"transpose_a": tra, "transpose_b": trb, "a_is_sparse": tra, "b_is_sparse": trb})
    case("SparseMatMul empty", "SparseMatMul", [("a", np.zeros([2, 0], f32)), ("b", np.zeros([0, 3], f32))])
    case("SparseMatMul empty rows", "SparseMatMul", [("a", np.zeros([0, 2], f32)), ("b", np.zeros([2, 3], f32))])
    case("SparseMatMul err inner", "SparseMatMul", [("a", U(2, 3)), ("b", U(2, 3))])
    case("SparseMatMul err rank", "SparseMatMul", [("a", U(2, 3, 1)), ("b", U(3, 3))])


def nth_element():
    x = A([[3, 1, 4, 1, 5, 9, 2, 6], [5, 3, 5, 8, 9, 7, 9, 3]])
    for dt in REAL:
        for n in (0, 3, 7):
            for rev in (False, True):
                case("NthElement %s n%d rev%d" % (dt.name, n, rev), "NthElement", [("input", T(x, dt)), ("n", A(n, i32))],
                     {"reverse": rev})
    case("NthElement 1-D", "NthElement", [("input", A([2.0, -1.0, 7.0])), ("n", A(1, i32))])
    case("NthElement 3-D", "NthElement", [("input", U(2, 3, 4)), ("n", A(2, i32))])
    case("NthElement empty", "NthElement", [("input", np.zeros([0, 4], f32)), ("n", A(2, i32))])
    case("NthElement err n", "NthElement", [("input", x), ("n", A(8, i32))])
    case("NthElement err negative n", "NthElement", [("input", x), ("n", A(-1, i32))])
    case("NthElement err n vector", "NthElement", [("input", x), ("n", A([1], i32))])
    case("NthElement err scalar", "NthElement", [("input", A(1.0)), ("n", A(0, i32))])


def ss_update():
    x = np.arange(24).reshape(2, 3, 4)
    i = lambda v: A(v, i32)  # noqa: E731
    for dt in ALL:
        case("TensorStridedSliceUpdate %s" % dt.name, "TensorStridedSliceUpdate",
             [("input", T(x, dt)), ("begin", i([0, 1, 0])), ("end", i([2, 3, 4])), ("strides", i([1, 1, 2])),
              ("value", T(np.arange(8).reshape(2, 2, 2) + 100, dt))])
    U_ = lambda name, b, e, s, v, it=i32, **m: case("TensorStridedSliceUpdate " + name, "TensorStridedSliceUpdate",  # noqa: E731
                                                   [("input", A(x, f32)), ("begin", A(b, it)), ("end", A(e, it)),
                                                    ("strides", A(s, it)), ("value", A(v, f32))], m)
    U_("negative stride", [1, 2, 3], [0, 0, 0], [-1, -1, -2], np.arange(4).reshape(1, 2, 2) + 100.0)
    U_("int64", [0, 0, 0], [1, 1, 4], [1, 1, 1], np.arange(4).reshape(1, 1, 4) + 100.0, it=i64)
    U_("shrink", [1, 0, 2], [2, 3, 3], [1, 1, 1], [100.0, 101, 102], shrink_axis_mask=5)
    U_("masks", [1, 1, 1], [0, 0, 0], [1, 1, 1], np.arange(24).reshape(2, 3, 4) + 100.0, begin_mask=7, end_mask=7)
    U_("ellipsis", [0, 1], [0, 3], [1, 1], np.arange(12).reshape(2, 3, 2) + 100.0, ellipsis_mask=1)
    U_("empty slice", [1, 0, 0], [1, 3, 4], [1, 1, 1], np.zeros([0, 3, 4]))
    U_("clamped", [-10, 0, 0], [10, 1, 1], [1, 1, 1], np.arange(2).reshape(2, 1, 1) + 100.0)
    U_("broadcast", [0, 0, 0], [1, 1, 4], [1, 1, 1], np.arange(4).reshape(1, 4) + 100.0)
    U_("broadcast scalar", [0, 1, 0], [2, 3, 4], [1, 1, 3], A(7.0))
    U_("broadcast rows", [0, 0, 0], [2, 3, 4], [1, 2, 1], A([[1.0], [2.0]]))
    U_("broadcast leading ones", [0, 0, 0], [2, 3, 4], [1, 1, 1], np.arange(4).reshape(1, 1, 1, 4) + 100.0)
    U_("err value shape", [0, 0, 0], [2, 3, 4], [1, 1, 1], np.zeros([3]))
    U_("err value rank", [0, 0, 0], [2, 3, 4], [1, 1, 1], np.zeros([2, 3, 4, 1]))
    U_("err stride 0", [0, 0, 0], [1, 1, 4], [1, 0, 1], np.zeros([1, 1, 4]))
    U_("err begin size", [0, 0], [1, 1, 4], [1, 1, 1], np.zeros([1, 1, 4]))
    U_("err shrink out of range", [5, 0, 0], [6, 1, 4], [1, 1, 1], np.zeros([1, 4]), shrink_axis_mask=1)


def solve_ls():
    C = lambda *sh: (rng.uniform(-1, 1, sh) + 1j * rng.uniform(-1, 1, sh))  # noqa: E731
    for dt in (f32, f64, np.complex64, np.complex128):
        R = (lambda *sh: C(*sh).astype(dt)) if dt in (np.complex64, np.complex128) else (lambda *sh: U(*sh, dt=dt))
        for m, n, k in ((4, 3, 2), (3, 3, 1), (2, 4, 3), (6, 2, 1)):
            a, b = R(2, m, n), R(2, m, k)
            for fast in (True, False):
                for l2 in ((0.0, 0.5) if fast else (0.0,)):
                    case("MatrixSolveLs %s %dx%dx%d fast%d l2 %g" % (np.dtype(dt).name, m, n, k, fast, l2), "MatrixSolveLs",
                         [("matrix", a), ("rhs", b), ("l2_regularizer", A(l2, f64))], {"fast": fast})
        rd = np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1], [0, 2, 2]], dt)  # rank 2
        case("MatrixSolveLs %s rank deficient" % np.dtype(dt).name, "MatrixSolveLs",
             [("matrix", rd), ("rhs", A([[1], [2], [3], [4]], dt)), ("l2_regularizer", A(0.0, f64))], {"fast": False})
        case("MatrixSolveLs %s rank deficient wide" % np.dtype(dt).name, "MatrixSolveLs",
             [("matrix", rd.T.copy()), ("rhs", A([[1], [2], [3]], dt)), ("l2_regularizer", A(0.0, f64))], {"fast": False})
        case("MatrixSolveLs %s rank deficient fast" % np.dtype(dt).name, "MatrixSolveLs",
             [("matrix", rd), ("rhs", A([[1], [2], [3], [4]], dt)), ("l2_regularizer", A(0.0, f64))], {"fast": True})
    case("MatrixSolveLs zero matrix", "MatrixSolveLs", [("matrix", np.zeros([3, 2], f32)), ("rhs", U(3, 1)),
                                                        ("l2_regularizer", A(0.0, f64))], {"fast": False})
    case("MatrixSolveLs empty rows", "MatrixSolveLs", [("matrix", np.zeros([0, 2], f32)), ("rhs", np.zeros([0, 3], f32)),
                                                       ("l2_regularizer", A(0.0, f64))])
    case("MatrixSolveLs empty batch", "MatrixSolveLs", [("matrix", np.zeros([0, 3, 2], f32)), ("rhs", np.zeros([0, 3, 1], f32)),
                                                        ("l2_regularizer", A(0.0, f64))])
    case("MatrixSolveLs err rows", "MatrixSolveLs", [("matrix", U(3, 2)), ("rhs", U(4, 1)), ("l2_regularizer", A(0.0, f64))])
    case("MatrixSolveLs err rank", "MatrixSolveLs", [("matrix", U(3)), ("rhs", U(3, 1)), ("l2_regularizer", A(0.0, f64))])
    case("MatrixSolveLs err batch", "MatrixSolveLs", [("matrix", U(2, 3, 2)), ("rhs", U(3, 3, 1)), ("l2_regularizer", A(0.0, f64))])
    case("MatrixSolveLs err l2 shape", "MatrixSolveLs", [("matrix", U(3, 2)), ("rhs", U(3, 1)), ("l2_regularizer", A([0.0], f64))])


def ragged_fill():
    ids = A([2, 0, 2, 0, 5], i64)
    for dt in ALL:
        case("RaggedFillEmptyRows %s" % dt.name, "RaggedFillEmptyRows",
             [("value_rowids", ids), ("values", T([1, 2, 3, 4, 5], dt)), ("nrows", A(7, i64)), ("default_value", T(9, dt))])
    R = lambda name, ids, vals, nrows, d: case("RaggedFillEmptyRows " + name, "RaggedFillEmptyRows",  # noqa: E731
                                               [("value_rowids", A(ids, i64)), ("values", A(vals, f32)), ("nrows", A(nrows, i64)),
                                                ("default_value", A(d, f32))])
    R("sorted", [0, 0, 2, 2, 4], [1, 2, 3, 4, 5], 6, -1)
    R("no values", np.zeros([0], i64), np.zeros([0], f32), 3, -1)
    R("no rows", np.zeros([0], i64), np.zeros([0], f32), 0, -1)
    R("full", [0, 1, 2], [1, 2, 3], 3, -1)
    R("err row", [0, 7], [1, 2], 4, -1)
    R("err negative row", [0, -1], [1, 2], 4, -1)
    R("err lengths", [0, 1], [1, 2, 3], 4, -1)
    R("err default", [0, 1], [1, 2], 4, [-1])
    R("err nrows", [0, 1], [1, 2], [4], -1)
    R("err rowids rank", [[0, 1]], [1, 2], 4, -1)
    R("err nrows negative", [0, 1], [1, 2], -1, -1)
    R("err values rank", [0, 0, 2], [[1, 2], [3, 4], [5, 6]], 4, -1)


def main():
    linspace()
    mod()
    topk()
    reverse()
    space_batch()
    inplace()
    data_format()
    check_numerics()
    approx_equal()
    parallel_concat()
    copies()
    sparse_matmul()
    nth_element()
    ss_update()
    solve_ls()
    ragged_fill()
    g.write_unit_header("e6_cases")


if __name__ == "__main__":
    main()
