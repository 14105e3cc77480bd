#!/usr/bin/env python3
"""gen_e1_cases.py - writes tests/unit/e1_cases.h: the gradient ops of session 20 (e1) against
TensorFlow (eager tf.raw_ops, TF's CPU kernels): the elementwise activation and y/dy gradients
(ReluGrad ... InvGrad) over every dtype TF's CPU kernels register (found by trying each), NaN/inf
and boundary values, shape errors; BiasAddGrad NHWC/NCHW over ranks 2-5 and every dtype; and the
array, sparse and image gradients (StridedSliceGrad, MirrorPadGrad, ConcatOffset, TileGrad,
SparseSegment*Grad(V2), Resize*Grad, CropAndResizeGrad*, FakeQuant*Gradient, ...) where present.

Uses the machinery of tools/gen_array_cases.py. test_ops_e1 compares floats within 1e-5 relative
(half 2e-3, bfloat16 1.6e-2). Run: build/venv/bin/python tools/gen_e1_cases.py"""
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
ALL_REAL = (tf.float32, tf.float64, tf.float16, tf.bfloat16, tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8,
            tf.uint16, tf.uint32, tf.uint64)
CPLX = (tf.complex64, tf.complex128)


def U(*shape, dt=f32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dt)


def T(x, dt):
    return tf.cast(tf.constant(x), dt)


def registered(op, dt, args):
    try:
        getattr(tf.raw_ops, op)(**args)
        return True
    except tf.errors.NotFoundError:
        return False
    except tf.errors.InvalidArgumentError as e:  # the OpDef's type list, or a real error (registered)
        return "is not in the list of allowed values" not in str(e)


def dname(dt):
    return dt.name


def elementwise():
    feat = A([-3.0, -1.0, -0.5, -1e-30, 0.0, 1e-30, 0.25, 0.5, 1.0, 5.0, 6.0, 6.5, 10.0, inf, -inf, nan] +
             list(U(20, lo=-8, hi=8)))
    grad = A(list(U(16, lo=-2, hi=2)) + [nan, inf, -inf, 0.0] + list(U(16, lo=-2, hi=2)))
    feat_int = A([-3, -1, 0, 1, 2, 5, 6, 7, 100, -100, 3, 4], i64)
    grad_int = A([1, 2, 3, -4, 5, 6, 7, 8, 9, 10, -11, 12], i64)
    for op, a_name, b_name in (("ReluGrad", "gradients", "features"), ("Relu6Grad", "gradients", "features"),
                               ("LeakyReluGrad", "gradients", "features"), ("EluGrad", "gradients", "outputs"),
                               ("SeluGrad", "gradients", "outputs"), ("SoftplusGrad", "gradients", "features"),
                               ("SoftsignGrad", "gradients", "features")):
        for dt in ALL_REAL + CPLX:
            if not registered(op, dt, {a_name: T([1.0], dt), b_name: T([1.0], dt)}):
                continue
            if dt.is_integer:
                ga, fb = grad_int, feat_int
                if dt.is_unsigned:
                    ga, fb = np.abs(ga), np.abs(fb)
            else:
                ga, fb = grad, feat
                if op in ("EluGrad", "SeluGrad"):  # outputs: Elu's range (> -1)
                    fb = np.where(np.isfinite(feat), np.tanh(feat), feat).astype(f32)
            case("%s %s" % (op, dname(dt)), op, [(a_name, T(ga, dt)), (b_name, T(fb, dt))])
        if op == "LeakyReluGrad":
            for alpha in (0.0, 0.01, 1.0, 2.5, -0.3):
                for dt in (tf.float32, tf.float64, tf.float16):
                    case("%s alpha %g %s" % (op, alpha, dname(dt)), op, [(a_name, T(grad, dt)), (b_name, T(feat, dt))],
                         {"alpha": alpha})
        case("%s 3-D" % op, op, [(a_name, U(2, 3, 4)), (b_name, U(2, 3, 4, lo=-0.9, hi=3))])
        case("%s empty" % op, op, [(a_name, np.zeros([0, 3], f32)), (b_name, np.zeros([0, 3], f32))])
        case("%s scalar" % op, op, [(a_name, A(1.5)), (b_name, A(0.5))])
        case("%s err shapes" % op, op, [(a_name, U(2)), (b_name, U(3))],
             err_needle="must have the same size and shape.  Input 0: [2] != input 1: [3]")
        case("%s err same count" % op, op, [(a_name, U(2, 3)), (b_name, U(6))],
             err_needle="must have the same size and shape.  Input 0: [2,3] != input 1: [6]")
    ys = {"SigmoidGrad": A([0.0, 1e-6, 0.1, 0.5, 0.9, 0.999, 1.0, nan] + list(U(16, lo=0, hi=1))),
          "TanhGrad": A([-1.0, -0.999, -0.5, 0.0, 0.5, 0.999, 1.0, nan] + list(U(16))),
          "SqrtGrad": A([0.0, 1e-20, 0.1, 1.0, 2.0, 100.0, inf, nan] + list(U(16, lo=0.01, hi=5))),
          "RsqrtGrad": A([0.0, 1e-10, 0.1, 1.0, 2.0, 100.0, inf, nan] + list(U(16, lo=0.01, hi=5))),
          "ReciprocalGrad": A([0.0, 1e-10, -0.1, 1.0, -2.0, 100.0, inf, nan] + list(U(16, lo=-5, hi=5))),
          "InvGrad": A([0.0, 1e-10, -0.1, 1.0, -2.0, 100.0, inf, nan] + list(U(16, lo=-5, hi=5)))}
    dy = A([1.0, -2.0, 0.5, 3.0, -1.0, 2.0, 0.0, 1.0] + list(U(16, lo=-3, hi=3)))
    for op, y in ys.items():
        for dt in ALL_REAL + CPLX:
            if not registered(op, dt, {"y": T([1.0], dt), "dy": T([1.0], dt)}):
                continue
            if dt.is_complex:
                yc = tf.complex(T(y[8:], dt.real_dtype), T(U(16, lo=-1, hi=1), dt.real_dtype))
                dyc = tf.complex(T(dy[8:], dt.real_dtype), T(U(16, lo=-1, hi=1), dt.real_dtype))
                case("%s %s" % (op, dname(dt)), op, [("y", yc), ("dy", dyc)])
            else:
                case("%s %s" % (op, dname(dt)), op, [("y", T(y, dt)), ("dy", T(dy, dt))])
        case("%s shapes differ, same count" % op, op, [("y", U(2, 3, lo=0.1, hi=0.9)), ("dy", U(6))])
        case("%s empty" % op, op, [("y", np.zeros([2, 0], f32)), ("dy", np.zeros([0], f32))])
        case("%s err count" % op, op, [("y", U(2)), ("dy", U(3))])


def bias_add_grad():
    for dt in ALL_REAL + CPLX:
        if not registered("BiasAddGrad", dt, {"out_backprop": T([[1.0]], dt)}):
            continue
        if dt.is_complex:
            x = tf.complex(T(U(3, 4, 5), dt.real_dtype), T(U(3, 4, 5), dt.real_dtype))
        elif dt.is_integer:
            x = T(rng.integers(0 if dt.is_unsigned else -50, 50, (3, 4, 5)), dt)
        else:
            x = T(U(3, 4, 5, lo=-2, hi=2), dt)
        for fmt in ("NHWC", "NCHW"):
            case("BiasAddGrad %s %s" % (dname(dt), fmt), "BiasAddGrad", [("out_backprop", x)], {"data_format": fmt})
    for shape in ((7, 3), (2, 3, 4, 5), (2, 3, 2, 2, 3), (1, 1), (4, 1, 3), (0, 3), (3, 0), (2, 0, 4)):
        for fmt in ("NHWC", "NCHW"):
            case("BiasAddGrad %s %s" % (shape, fmt), "BiasAddGrad", [("out_backprop", U(*shape))], {"data_format": fmt})
    case("BiasAddGrad big sum", "BiasAddGrad", [("out_backprop", U(300, 7, lo=0, hi=100))])
    case("BiasAddGrad int8 wraps", "BiasAddGrad", [("out_backprop", np.full([20, 2], 100, np.int8))])
    case("BiasAddGrad half many", "BiasAddGrad", [("out_backprop", U(64, 3, dt=np.float16, lo=0, hi=2))])
    case("BiasAddGrad no attr", "BiasAddGrad", [("out_backprop", U(2, 3))])
    case("BiasAddGrad err 1-D", "BiasAddGrad", [("out_backprop", U(3))])
    case("BiasAddGrad err scalar", "BiasAddGrad", [("out_backprop", A(1.0))])


def strided_slice_grad():
    def S(name, shape, b, e, st, dy_shape=None, dt=f32, idx=i32, **masks):
        at = {k: masks.get(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")}
        if dy_shape is None:  # the forward slice's shape, from TF itself
            x = np.zeros(shape, f32)
            dy_shape = tf.raw_ops.StridedSlice(input=x, begin=A(b, idx), end=A(e, idx), strides=A(st, idx), **at).shape
        dy = arange_dt(dy_shape, dt)
        case("StridedSliceGrad " + name, "StridedSliceGrad",
             [("shape", A(shape, idx)), ("begin", A(b, idx)), ("end", A(e, idx)), ("strides", A(st, idx)), ("dy", dy)], at)

    S("1-D", [10], [2], [8], [2])
    S("1-D negative stride", [10], [8], [1], [-3])
    S("2-D", [4, 6], [1, 0], [3, 6], [1, 2])
    S("begin/end masks", [4, 6], [3, 5], [0, 1], [1, -1], begin_mask=1, end_mask=2)
    S("shrink", [4, 6], [2, 0], [3, 6], [1, 1], shrink_axis_mask=1)
    S("shrink negative", [4, 6], [-1, 1], [0, 5], [1, 2], shrink_axis_mask=1)
    S("new axis", [4, 6], [0, 1, 0], [0, 3, 6], [1, 1, 1], new_axis_mask=1)
    S("ellipsis", [2, 3, 4, 5], [0, 1], [0, 3], [1, 1], ellipsis_mask=1)
    S("ellipsis new axis shrink", [2, 3, 4], [0, 0, 2], [0, 0, 3], [1, 1, 1], ellipsis_mask=1, new_axis_mask=2,
      shrink_axis_mask=4)
    S("empty slice", [5, 3], [3, 0], [1, 3], [1, 1])
    S("int64", [6, 4], [1, 1], [5, 4], [2, 1], idx=i64)
    S("clamped", [5], [-100], [100], [1])
    S("identity", [3, 2], [0, 0], [3, 2], [1, 1])
    for dt in (f64, np.float16, tf.bfloat16, i32, i64, np.int8, np.uint8, np.complex64, np.bool_):
        S("dtype %s" % getattr(dt, "name", None) or np.dtype(dt).name, [5, 4], [1, 3], [4, 0], [1, -2], dt=dt)
    S("err dy shape", [4, 6], [1, 0], [3, 6], [1, 2], dy_shape=[2, 2])
    S("err stride 0", [4], [0], [4], [0], dy_shape=[4])
    S("err shrink out of range", [4], [7], [8], [1], dy_shape=[], shrink_axis_mask=1)
    S("err begin size", [4, 5], [0], [4, 5], [1, 1], dy_shape=[4, 5])


def arange_dt(shape, dt):
    n = int(np.prod(shape)) if len(shape) else 1
    v = (np.arange(n) % 7 - 2).reshape(shape)
    if dt is tf.bfloat16:
        return tf.cast(v.astype(f32), tf.bfloat16)
    if dt is np.bool_:
        return (v > 0)
    return v.astype(dt)


def mirror_pad_grad():
    for mode in ("REFLECT", "SYMMETRIC"):
        for shape, pads in (([7], [[2, 3]]), ([5, 6], [[1, 2], [0, 2]]), ([4, 5, 6], [[1, 1], [2, 0], [1, 2]]), ([3], [[0, 0]]),
                            ([2, 0], [[0, 0], [0, 0]])):
            pads = [[min(p, s // 2 - (1 if mode == "REFLECT" else 0)) for p in pr] for pr, s in zip(pads, shape)]
            pads = [[max(p, 0) for p in pr] for pr in pads]
            case("MirrorPadGrad %s %s %s" % (mode, shape, pads), "MirrorPadGrad",
                 [("input", U(*shape, lo=-2, hi=2)), ("paddings", A(pads, i32))], {"mode": mode})
        for dt in (f64, np.float16, tf.bfloat16, i32, i64, np.complex64):
            x = arange_dt([6, 5], dt)
            case("MirrorPadGrad %s %s" % (mode, getattr(dt, "name", None) or np.dtype(dt).name), "MirrorPadGrad",
                 [("input", x), ("paddings", A([[1, 2], [1, 1]], i64))], {"mode": mode})
        case("MirrorPadGrad %s max pads" % mode, "MirrorPadGrad", [("input", U(9)), ("paddings", A([[3, 3]] if mode == "REFLECT"
                                                                                                   else [[3, 3]], i32))],
             {"mode": mode})
        case("MirrorPadGrad %s err pads too big" % mode, "MirrorPadGrad", [("input", U(5)), ("paddings", A([[2, 2]], i32))],
             {"mode": mode})
        case("MirrorPadGrad %s err total" % mode, "MirrorPadGrad", [("input", U(5)), ("paddings", A([[2, 3]], i32))],
             {"mode": mode})
        case("MirrorPadGrad %s err huge" % mode, "MirrorPadGrad", [("input", U(5)), ("paddings", A([[2**62, 2**62]], i64))],
             {"mode": mode})
        case("MirrorPadGrad %s err rank 6" % mode, "MirrorPadGrad", [("input", U(1, 1, 1, 1, 1, 2)), ("paddings", np.zeros([6, 2], i32))],
             {"mode": mode})
        case("MirrorPadGrad %s err negative" % mode, "MirrorPadGrad", [("input", U(5)), ("paddings", A([[-1, 0]], i32))],
             {"mode": mode})
        case("MirrorPadGrad %s err rank" % mode, "MirrorPadGrad", [("input", U(5, 2)), ("paddings", A([[1, 1]], i32))],
             {"mode": mode})
        case("MirrorPadGrad %s err columns" % mode, "MirrorPadGrad", [("input", U(5)), ("paddings", A([[1, 1, 1]], i32))],
             {"mode": mode})


def concat_offset():
    for idx in (i32, i64):
        case("ConcatOffset axis 1 %s" % np.dtype(idx).name, "ConcatOffset",
             [("concat_dim", A(1, i32)), ("shape", [A([2, 3, 5], idx), A([2, 7, 5], idx), A([2, 0, 5], idx), A([2, 1, 5], idx)])])
    case("ConcatOffset axis 0", "ConcatOffset", [("concat_dim", A(0, i32)), ("shape", [A([2, 3], i32), A([4, 3], i32)])])
    case("ConcatOffset axis -1", "ConcatOffset", [("concat_dim", A(-1, i32)), ("shape", [A([2, 3], i32), A([2, 4], i32)])])
    case("ConcatOffset one", "ConcatOffset", [("concat_dim", A(0, i32)), ("shape", [A([5], i32), A([6], i32)])])
    case("ConcatOffset err axis", "ConcatOffset", [("concat_dim", A(2, i32)), ("shape", [A([2, 3], i32), A([2, 4], i32)])])
    case("ConcatOffset err axis neg", "ConcatOffset", [("concat_dim", A(-3, i32)), ("shape", [A([2, 3], i32), A([2, 4], i32)])])
    case("ConcatOffset err mismatch", "ConcatOffset", [("concat_dim", A(1, i32)), ("shape", [A([2, 3], i32), A([3, 4], i32)])])
    case("ConcatOffset err count", "ConcatOffset", [("concat_dim", A(1, i32)), ("shape", [A([2, 3], i32), A([2, 4, 1], i32)])])


def fake_quant_grad():
    x = A([-7.0, -6.0, -5.99, -3.0, -0.02, 0.0, 0.01, 1.0, 2.9, 5.9, 6.0, 6.03, 7.5, 100.0, -inf, inf, nan] + list(U(15, lo=-8, hi=8)))
    gr = U(32, lo=-2, hi=2)
    for lo, hi, bits, narrow in ((-6.0, 6.0, 8, False), (-6.0, 6.0, 8, True), (0.0, 1.0, 4, False), (-0.1, 3.0, 2, False),
                                 (0.5, 2.0, 16, False), (-3.0, -1.0, 5, True)):
        at = {"num_bits": bits, "narrow_range": narrow}
        case("FakeQuantWithMinMaxArgsGradient [%g,%g] %d %d" % (lo, hi, bits, narrow), "FakeQuantWithMinMaxArgsGradient",
             [("gradients", gr), ("inputs", x)], dict(at, min=lo, max=hi))
        case("FakeQuantWithMinMaxVarsGradient [%g,%g] %d %d" % (lo, hi, bits, narrow), "FakeQuantWithMinMaxVarsGradient",
             [("gradients", gr), ("inputs", x), ("min", A(lo)), ("max", A(hi))], at)
    case("FakeQuantWithMinMaxVarsGradient zero range", "FakeQuantWithMinMaxVarsGradient",
         [("gradients", gr), ("inputs", x), ("min", A(0.0)), ("max", A(0.0))])
    case("FakeQuantWithMinMaxArgsGradient default attrs 2-D", "FakeQuantWithMinMaxArgsGradient",
         [("gradients", U(4, 8)), ("inputs", U(4, 8, lo=-8, hi=8))])
    case("FakeQuantWithMinMaxArgsGradient empty", "FakeQuantWithMinMaxArgsGradient",
         [("gradients", np.zeros([0, 2], f32)), ("inputs", np.zeros([0, 2], f32))])
    xc = U(5, 4, lo=-3, hi=3)
    for narrow in (False, True):
        case("FakeQuantWithMinMaxVarsPerChannelGradient narrow%d" % narrow, "FakeQuantWithMinMaxVarsPerChannelGradient",
             [("gradients", U(5, 4)), ("inputs", xc), ("min", A([-1.0, 0.0, -2.5, 0.0])), ("max", A([1.0, 2.0, 0.5, 0.0]))],
             {"num_bits": 6, "narrow_range": narrow})
    case("FakeQuantWithMinMaxVarsPerChannelGradient 1-D", "FakeQuantWithMinMaxVarsPerChannelGradient",
         [("gradients", U(3)), ("inputs", A([-2.0, 0.5, 3.0])), ("min", A([-1.0, -1.0, -1.0])), ("max", A([1.0, 1.0, 1.0]))])
    case("FakeQuantWithMinMaxVarsPerChannelGradient err min", "FakeQuantWithMinMaxVarsPerChannelGradient",
         [("gradients", U(5, 4)), ("inputs", xc), ("min", A([-1.0, 0.0])), ("max", A([1.0, 2.0, 0.5, 0.0]))])
    case("FakeQuantWithMinMaxVarsGradient err shapes", "FakeQuantWithMinMaxVarsGradient",
         [("gradients", U(3)), ("inputs", U(4)), ("min", A(-1.0)), ("max", A(1.0))])
    case("FakeQuantWithMinMaxArgsGradient err shapes", "FakeQuantWithMinMaxArgsGradient",
         [("gradients", U(3)), ("inputs", U(4))], err_needle="must have the same size and shape.  Input 0: [3] != input 1: [4]")
    case("FakeQuantWithMinMaxArgsGradient err bits", "FakeQuantWithMinMaxArgsGradient",
         [("gradients", U(3)), ("inputs", U(3))], {"num_bits": 1})


def sparse_segment_grad():
    for red in ("Sum", "Mean", "SqrtN"):
        for v2 in (False, True):
            op = "SparseSegment%sGrad%s" % (red, "V2" if v2 else "")
            last = "dense_output_dim0" if v2 else "output_dim0"
            for dt in (f32, f64, np.float16, tf.bfloat16):
                g0 = U(4, 3, lo=-2, hi=2)
                gv = tf.cast(g0, tf.bfloat16) if dt is tf.bfloat16 else g0.astype(dt)
                case("%s %s" % (op, getattr(dt, "name", None) or np.dtype(dt).name), op,
                     [("grad", gv), ("indices", A([0, 2, 2, 5, 1, 0], i32)), ("segment_ids", A([0, 0, 1, 1, 3, 3], i32)),
                      (last, A(7, i32))])
            for ti, ts in ((i64, i32), (i32, i64), (i64, i64)):
                case("%s index types %s %s" % (op, np.dtype(ti).name, np.dtype(ts).name), op,
                     [("grad", U(3, 2, 2)), ("indices", A([4, 1, 4, 3], ti)), ("segment_ids", A([0, 1, 1, 2], ts)),
                      (last, A(6, i32))])
            case("%s 1-D" % op, op, [("grad", U(3)), ("indices", A([0, 1, 2, 1], i32)), ("segment_ids", A([0, 0, 0, 2], i32)),
                                     (last, A(3, i32))])
            if v2:  # V1's output is left uninitialised by TF here (test_ops_e1.c checks the zeros by hand)
                case("%s empty" % op, op, [("grad", np.zeros([2, 3], f32)), ("indices", np.zeros([0], i32)),
                                           ("segment_ids", np.zeros([0], i32)), (last, A(4, i32))])
            case("%s err index" % op, op, [("grad", U(2, 3)), ("indices", A([0, 9], i32)), ("segment_ids", A([0, 1], i32)),
                                           (last, A(4, i32))])
            case("%s err segment" % op, op, [("grad", U(2, 3)), ("indices", A([0, 1], i32)), ("segment_ids", A([0, 2], i32)),
                                             (last, A(4, i32))])
            case("%s err sizes" % op, op, [("grad", U(2, 3)), ("indices", A([0, 1, 2], i32)), ("segment_ids", A([0, 1], i32)),
                                           (last, A(4, i32))])
            case("%s err negative index" % op, op, [("grad", U(2, 3)), ("indices", A([0, -1], i32)),
                                                    ("segment_ids", A([0, 1], i32)), (last, A(4, i32))])


def resize_grad():
    modes = ((False, False), (True, False), (False, True))
    for op in ("ResizeBilinearGrad", "ResizeBicubicGrad"):
        for (oh, ow), (h, w) in (((6, 8), (3, 4)), ((3, 4), (6, 8)), ((5, 7), (4, 3)), ((1, 1), (3, 3)), ((4, 4), (1, 1)),
                                 ((4, 5), (4, 5))):
            for ac, hp in modes:
                case("%s %dx%d <- %dx%d ac%d hp%d" % (op, h, w, oh, ow, ac, hp), op,
                     [("grads", U(2, oh, ow, 3, lo=-2, hi=2)), ("original_image", np.zeros([2, h, w, 3], f32))],
                     {"align_corners": ac, "half_pixel_centers": hp})
        for dt in (f64, np.float16, tf.bfloat16) if op == "ResizeBilinearGrad" else (f64,):
            orig = tf.zeros([1, 5, 4, 2], dt)
            # bicubic double: TF's products round differently in the last float bits ([f32 tol])
            case("%s %s%s" % (op, dt.name if hasattr(dt, "name") and not isinstance(dt, type) else np.dtype(dt).name,
                               " [f32 tol]" if op == "ResizeBicubicGrad" else ""), op,
                 [("grads", U(1, 7, 9, 2, lo=-2, hi=2)), ("original_image", orig)], {"half_pixel_centers": True})
        case("%s err both" % op, op, [("grads", U(1, 2, 2, 1)), ("original_image", np.zeros([1, 3, 3, 1], f32))],
             {"align_corners": True, "half_pixel_centers": True})
        case("%s err grads rank" % op, op, [("grads", U(2, 2, 1)), ("original_image", np.zeros([1, 3, 3, 1], f32))])
        case("%s err original rank" % op, op, [("grads", U(1, 2, 2, 1)), ("original_image", np.zeros([3, 3, 1], f32))])
        case("%s empty batch" % op, op, [("grads", np.zeros([0, 2, 2, 1], f32)), ("original_image", np.zeros([0, 3, 3, 1], f32))])
    op = "ResizeNearestNeighborGrad"
    for (oh, ow), (h, w) in (((6, 8), (3, 4)), ((3, 4), (6, 8)), ((5, 7), (4, 3)), ((1, 1), (3, 3)), ((4, 4), (1, 1))):
        for ac, hp in modes:
            case("%s %dx%d <- %dx%d ac%d hp%d" % (op, h, w, oh, ow, ac, hp), op,
                 [("grads", U(2, oh, ow, 2, lo=-2, hi=2)), ("size", A([h, w], i32))], {"align_corners": ac, "half_pixel_centers": hp})
    for dt in (f64, np.float16, tf.bfloat16, np.int8, np.uint8, i32):
        gr = tf.cast(U(1, 6, 5, 2, lo=-50, hi=100), dt)
        case("%s %s" % (op, gr.dtype.name), op, [("grads", gr), ("size", A([4, 3], i32))])
    case("%s err size" % op, op, [("grads", U(1, 2, 2, 1)), ("size", A([1, 2, 3], i32))])
    case("%s err size rank" % op, op, [("grads", U(1, 2, 2, 1)), ("size", A([[1, 2]], i32))])
    case("%s err rank" % op, op, [("grads", U(2, 2, 1)), ("size", A([1, 2], i32))])
    case("%s err both" % op, op, [("grads", U(1, 2, 2, 1)), ("size", A([3, 3], i32))], {"align_corners": True, "half_pixel_centers": True})
    case("%s zero size" % op, op, [("grads", U(1, 2, 2, 1)), ("size", A([0, 3], i32))])


def case_if(*args, **kw):
    """case(), skipped where TF's CPU has no kernel for the dtype."""
    try:
        case(*args, **kw)
    except tf.errors.NotFoundError:
        pass


def sparse_grads():
    I = lambda rows: np.array(rows, dtype=i64).reshape(-1, 2)  # noqa: E731
    a = I([[0, 0], [0, 2], [1, 1], [3, 0]])
    b = I([[0, 1], [0, 2], [2, 2], [3, 0], [3, 3]])
    sm = I([[0, 0], [0, 1], [0, 2], [1, 1], [2, 2], [3, 0], [3, 3]])
    for dt in (f32, f64, i32, i64, np.complex64, np.float16):
        case_if("SparseAddGrad %s" % np.dtype(dt).name, "SparseAddGrad",
             [("backprop_val_grad", (np.arange(7) + 1).astype(dt)), ("a_indices", a), ("b_indices", b), ("sum_indices", sm)])
    case("SparseAddGrad sum dropped", "SparseAddGrad", [("backprop_val_grad", A([1.0, 2.0, 3.0])), ("a_indices", a), ("b_indices", b),
                                                         ("sum_indices", I([[0, 0], [0, 2], [3, 3]]))])
    case("SparseAddGrad empty a", "SparseAddGrad", [("backprop_val_grad", A([1.0, 2.0, 3.0, 4.0, 5.0])),
                                                    ("a_indices", np.zeros([0, 2], i64)), ("b_indices", b), ("sum_indices", b)])
    case("SparseAddGrad err rank", "SparseAddGrad", [("backprop_val_grad", A([[1.0]])), ("a_indices", a), ("b_indices", b),
                                                     ("sum_indices", sm)])
    case("SparseAddGrad err dims", "SparseAddGrad", [("backprop_val_grad", A([1.0])), ("a_indices", a),
                                                     ("b_indices", np.zeros([1, 3], i64)), ("sum_indices", sm)])
    # SparseSliceGrad
    ii = I([[0, 0], [0, 3], [1, 1], [2, 0], [2, 4], [3, 2]])
    for dt in (f32, f64, i64, np.float16):
        case_if("SparseSliceGrad %s" % np.dtype(dt).name, "SparseSliceGrad",
             [("backprop_val_grad", A([5, 6, 7], dt)), ("input_indices", ii), ("input_start", A([1, 0], i64)),
              ("output_indices", I([[0, 1], [1, 0], [1, 4]]))])
    case("SparseSliceGrad none", "SparseSliceGrad", [("backprop_val_grad", np.zeros([0], f32)), ("input_indices", ii),
                                                    ("input_start", A([0, 0], i64)), ("output_indices", np.zeros([0, 2], i64))])
    # an output index no input matches: TF's InternalError (test_ops_e1.c checks it by hand)
    case("SparseSliceGrad err count", "SparseSliceGrad", [("backprop_val_grad", A([5.0])), ("input_indices", ii),
                                                         ("input_start", A([1, 0], i64)), ("output_indices", I([[0, 1], [1, 0]]))])
    case("SparseSliceGrad err ndims", "SparseSliceGrad", [("backprop_val_grad", A([5.0])), ("input_indices", ii),
                                                         ("input_start", A([1, 0], i64)), ("output_indices", np.zeros([1, 3], i64))])
    # SparseFillEmptyRowsGrad
    for dt in (f32, f64, i32, i64, np.float16, np.complex128):
        case_if("SparseFillEmptyRowsGrad %s" % np.dtype(dt).name, "SparseFillEmptyRowsGrad",
             [("reverse_index_map", A([0, 2, 3, 6], i64)), ("grad_values", (np.arange(8) * 1.5 + 1).astype(dt))])
    case("SparseFillEmptyRowsGrad all kept", "SparseFillEmptyRowsGrad", [("reverse_index_map", A([1, 0], i64)),
                                                                         ("grad_values", A([3.0, 4.0]))])
    case("SparseFillEmptyRowsGrad empty map", "SparseFillEmptyRowsGrad", [("reverse_index_map", np.zeros([0], i64)),
                                                                          ("grad_values", A([3.0, 4.0]))])
    case("SparseFillEmptyRowsGrad err index", "SparseFillEmptyRowsGrad", [("reverse_index_map", A([0, 5], i64)),
                                                                          ("grad_values", A([3.0, 4.0]))])
    case("SparseFillEmptyRowsGrad err rank", "SparseFillEmptyRowsGrad", [("reverse_index_map", A([[0]], i64)),
                                                                         ("grad_values", A([3.0, 4.0]))])


EXTRAS = [sparse_grads, resize_grad, sparse_segment_grad, fake_quant_grad, strided_slice_grad, mirror_pad_grad, concat_offset]


def main():
    elementwise()
    bias_add_grad()
    for extra in EXTRAS:
        extra()
    g.write_unit_header("e1_cases")

if __name__ == "__main__":
    main()
