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


def main():
    elementwise()
    bias_add_grad()
    for extra in EXTRAS:
        extra()
    g.write_unit_header("e1_cases")


EXTRAS = []

if __name__ == "__main__":
    main()
