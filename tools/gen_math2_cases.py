#!/usr/bin/env python3
"""gen_math2_cases.py - writes tests/unit/math2_cases.h: the math ops added for issue 21 against
TensorFlow: every unary function TF has beyond test_ops_math's (Sin ... Atanh, Lgamma, Digamma,
Erfinv, Ndtri, Rint, IsInf, Inv, BesselI0e/I1e), the binary Atan2, Xlogy/Xdivy/Xlog1py,
TruncateDiv/TruncateMod, Igamma/Igammac, and BroadcastArgs / BroadcastGradientArgs; each in
every dtype TF registers on CPU, with edge values (0, -0, inf, NaN, out-of-domain inputs).

Uses the machinery of tools/gen_array_cases.py (eager tf.raw_ops, TF's CPU kernels; literal
inputs). test_ops_math2 compares floats within 1e-5 relative (1e-9 for double, an ulp or two for
half and bfloat16): TF's float kernels use Eigen's own polynomial sin/log/..., not libm.
Run: /work/main/build/venv/bin/python tools/gen_math2_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
nan, inf = float("nan"), float("inf")
F16, BF16, F32, F64 = tf.float16, tf.bfloat16, tf.float32, tf.float64
ALL = (F16, BF16, F32, F64)
NOBF = (F16, F32, F64)


def T(v, dt):
    return tf.constant(v, dtype=dt)


WIDE = [0.0, -0.0, 0.5, -1.25, 3.0, -7.5, 100.0, inf, -inf, nan]
UNIT = [0.0, -0.0, 0.25, -0.5, 0.999, -1.0, 1.0, 1.5, -2.0, nan, inf]
POS = [0.0, 1e-3, 0.5, 1.0, 2.5, 10.0, 1e4, inf, -1.0, nan]
GAMMA = [1.0, 2.0, 0.5, 1e-4, 3.7, 25.5, 150.0, -0.5, -2.5, -3.0, 0.0, -0.0, inf, -inf, nan]
PROB = [0.0, 1e-300, 1e-20, 1e-5, 0.02, 0.3, 0.5, 0.7, 0.97, 1 - 1e-9, 1.0, -0.1, 1.1, nan]
ERFIN = [0.0, -0.0, 1e-8, 0.3, -0.5, 0.9, -0.999, 0.999999, 1.0, -1.0, 1.5, nan]
BESSEL = [0.0, 1e-3, -0.5, 1.0, -2.75, 7.0, 15.0, 29.5, 30.5, -60.0, 500.0, inf, -inf, nan]

UNARY = [
    ("Sin", ALL, WIDE + [1e4, 3.14159265]), ("Cos", ALL, WIDE + [1e4, 1.5707963]), ("Tan", ALL, WIDE + [1.5]),
    ("Asin", ALL, UNIT), ("Acos", ALL, UNIT), ("Atan", ALL, WIDE), ("Sinh", ALL, WIDE[:6] + [20.0, inf, -inf, nan]),
    ("Cosh", ALL, WIDE[:6] + [20.0, inf, -inf, nan]), ("Asinh", ALL, WIDE), ("Acosh", ALL, POS + [1e10]),
    ("Atanh", ALL, UNIT), ("Lgamma", NOBF, GAMMA), ("Digamma", NOBF, GAMMA + [1.4616321, 1e10]),
    ("Erfinv", (F32, F64), ERFIN), ("Ndtri", (F32, F64), PROB), ("Rint", (F32, F64), [0.5, 1.5, 2.5, -0.5, -2.5,
                                                                                     2.4, -3.7, 1e20, -0.0, inf, nan]),
    ("IsInf", ALL, WIDE), ("Inv", ALL, WIDE), ("BesselI0e", NOBF, BESSEL), ("BesselI1e", NOBF, BESSEL),
]


def unary():
    for op, dts, vals in UNARY:
        for dt in dts:
            v = vals
            if dt == F16:  # half: keep within its range
                v = [x if not np.isfinite(x) or abs(x) < 6e4 else np.sign(x) * 6e4 for x in vals]
                v = [x if x == 0 or not np.isfinite(x) or abs(x) > 1e-7 else 1e-3 for x in v]
            case("%s %s" % (op, dt.name), op, [("x", T(v, dt))])
        case("%s empty" % op, op, [("x", T(np.zeros([0, 3]), dts[-1]))])
        case("%s 2-D" % op, op, [("x", T(np.array(vals[:6], dtype=np.float64).reshape(2, 3), dts[-1]))])


def binary():
    a = [0.0, 0.0, 1.0, -2.5, 3.0, -0.0, inf, nan, 1.0, 4.0]
    b = [0.0, nan, 0.0, -1.5, 0.5, -1.0, 2.0, 1.0, -inf, -1.0]
    for op, dts in (("Atan2", ALL), ("Xlogy", ALL), ("Xdivy", ALL), ("Xlog1py", ALL), ("TruncateDiv", ALL),
                    ("TruncateMod", (F32, F64))):
        for dt in dts:
            x, y = ("y", "x") if op == "Atan2" else ("x", "y")
            case("%s %s" % (op, dt.name), op, [(x, T(a, dt)), (y, T(b, dt))])
        case(op + " broadcast", op, [("x" if op != "Atan2" else "y", T([[1.0], [-2.0], [0.0]], F32)),
                                     ("y" if op != "Atan2" else "x", T([0.5, 3.0, -4.0, 0.0], F32))])
        case(op + " err shapes", op, [("x" if op != "Atan2" else "y", T([1.0, 2.0], F32)),
                                      ("y" if op != "Atan2" else "x", T([1.0, 2.0, 3.0], F32))])
    for dt in (tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8, tf.uint16, tf.uint32, tf.uint64):
        sgn = dt.min < 0
        x = [7, 7, 0, 9, 100] + ([-7, -7, dt.min, dt.min] if sgn else [250, 1, dt.max, dt.max])
        y = [2, 3, 5, 9, 7] + ([2, -2, -3, 1] if sgn else [3, 250, 1, 2])
        case("TruncateDiv %s" % dt.name, "TruncateDiv", [("x", T(x, dt)), ("y", T(y, dt))])
        if dt in (tf.int32, tf.int64):
            case("TruncateMod %s" % dt.name, "TruncateMod", [("x", T(x, dt)), ("y", T(y, dt))])
        # An integer divisor of 0: TF 2.21 fails with an InternalError ("Unexpected error in binary
        # operator"); ours says "Integer division by zero" (test_ops_math2's hand check).
    ga = [0.5, 1.0, 2.0, 3.5, 10.0, 0.1, 30.0, 1.0, -1.0, 0.0, nan, 2.0, 100.0]
    gx = [0.2, 1.0, 0.5, 5.0, 9.0, 2.0, 25.0, 0.0, 1.0, 1.0, 1.0, inf, 120.0]
    for op in ("Igamma", "Igammac"):
        for dt in (F32, F64):
            case("%s %s" % (op, dt.name), op, [("a", T(ga, dt)), ("x", T(gx, dt))])


def broadcast_args():
    i32, i64 = np.int32, np.int64
    A = lambda v, dt=i32: np.array(v, dtype=dt)  # noqa: E731
    for name, s0, s1 in (("same", [2, 3], [2, 3]), ("expand", [2, 1, 4], [3, 1]), ("scalar", [], [5, 2]),
                         ("zero", [0, 1], [1, 3]), ("ones", [1], [1, 1, 1]), ("rank diff", [7], [4, 2, 1]),
                         ("bad", [2, 3], [4, 3])):
        for dt in (i32, i64):
            case("BroadcastArgs %s %s" % (name, dt.__name__), "BroadcastArgs", [("s0", A(s0, dt)), ("s1", A(s1, dt))])
            case("BroadcastGradientArgs %s %s" % (name, dt.__name__), "BroadcastGradientArgs",
                 [("s0", A(s0, dt)), ("s1", A(s1, dt))])
    case("BroadcastArgs err rank", "BroadcastArgs", [("s0", A([[2]])), ("s1", A([2]))])


def main():
    unary()
    binary()
    broadcast_args()
    g.write_unit_header("math2_cases")


if __name__ == "__main__":
    main()
