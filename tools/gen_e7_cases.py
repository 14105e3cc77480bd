#!/usr/bin/env python3
"""gen_e7_cases.py - writes tests/unit/e7_cases.h: TF1's quantized arithmetic ops (quantized_nn.c)
against TensorFlow 2.21's CPU kernels (eager tf.raw_ops): Requantize, RequantizationRange,
QuantizeDownAndShrinkRange, QuantizedRelu / Relu6 / ReluX, QuantizedBiasAdd, QuantizedMatMul,
QuantizedConv2D, QuantizedMaxPool / AvgPool and QuantizedReshape, over every dtype combination TF
registers for them, every attr, empty tensors, ranges that do not hold zero, and TF's errors.

A combination TF registers no CPU kernel for is skipped (TF raises NotFoundError); the C test
checks those are refused. Uses tools/gen_array_cases.py's case() machinery (quantized dtypes added
as tools/gen_c5_cases.py does). Run: build/venv/bin/python tools/gen_e7_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

for _d in (tf.qint8, tf.quint8, tf.qint16, tf.quint16, tf.qint32):
    g.SM_DTYPE[_d] = "SM_" + _d.name.upper()
    g.TF_ENUM[_d] = "DT_" + _d.name.upper()

A = g.A
f32, i32, i64 = np.float32, np.int32, np.int64
rng = np.random.default_rng(20)
QRANGE = {tf.qint8: (-128, 127), tf.quint8: (0, 255), tf.qint16: (-32768, 32767), tf.quint16: (0, 65535),
          tf.qint32: (-2**31, 2**31 - 1)}
SKIPPED = []


def case(name, op, inputs, attrs=None, **kw):
    try:
        g.case(name, op, inputs, attrs, **kw)
    except tf.errors.NotFoundError:
        SKIPPED.append(name)


def Q(vals, qt):
    return tf.constant(np.array(vals, dtype=np.int64).astype(qt.as_numpy_dtype), dtype=qt)


def R(shape, qt, lo=None, hi=None):
    a, b = QRANGE[qt]
    return Q(rng.integers(a if lo is None else lo, b if hi is None else hi, shape, endpoint=True), qt)


RANGES = [(-1.0, 1.0), (0.0, 6.0), (-3.5, 0.25), (1.0, 2.0), (-2.0, -1.0), (0.0, 0.0), (-1e-6, 1e-6), (-1e4, 3e4)]


def requantize():
    x = Q([0, 1, -1, 100, -100, 2**20, -2**20, 2**30, -2**30, 2**31 - 1, -2**31, 12345678, -7654321] +
          list(rng.integers(-2**31, 2**31 - 1, 20)), tf.qint32)
    for out in (tf.quint8, tf.qint8, tf.qint16, tf.quint16, tf.qint32):
        for imn, imx in ((-1.0, 1.0), (-100.0, 100.0), (0.0, 6.0), (-5e3, 2.5e3), (3.0, 3.0)):
            for omn, omx in ((-1.0, 1.0), (0.0, 6.0), (-0.5, 0.0), (-3.0, 7.5), (0.0, 0.0)):
                case("Requantize %s in[%g,%g] out[%g,%g]" % (out.name, imn, imx, omn, omx), "Requantize",
                     [("input", x), ("input_min", A(imn)), ("input_max", A(imx)), ("requested_output_min", A(omn)),
                      ("requested_output_max", A(omx))], {"out_type": out})
    for src in (tf.qint8, tf.quint8):
        case("Requantize from %s" % src.name, "Requantize", [("input", R([4], src)), ("input_min", A(-1.0)), ("input_max", A(1.0)),
             ("requested_output_min", A(-1.0)), ("requested_output_max", A(1.0))], {"out_type": tf.quint8})
    case("Requantize empty", "Requantize", [("input", Q(np.zeros([0, 3]), tf.qint32)), ("input_min", A(-1.0)), ("input_max", A(1.0)),
         ("requested_output_min", A(-1.0)), ("requested_output_max", A(1.0))], {"out_type": tf.quint8})
    RE = lambda name, a, b, c, d: case("Requantize err " + name, "Requantize",  # noqa: E731
                                       [("input", x), ("input_min", A(a)), ("input_max", A(b)), ("requested_output_min", A(c)),
                                        ("requested_output_max", A(d))], {"out_type": tf.quint8})
    RE("out min > 0", -1.0, 1.0, 0.5, 1.0)
    RE("out max < 0", -1.0, 1.0, -1.0, -0.5)
    RE("min vector", [-1.0, 0.0], 1.0, -1.0, 1.0)
    RE("max vector", -1.0, [1.0], -1.0, 1.0)
    RE("out min vector", -1.0, 1.0, [-1.0], 1.0)
    RE("out max vector", -1.0, 1.0, -1.0, [1.0, 2.0])

    for imn, imx in ((-1.0, 1.0), (-100.0, 100.0), (0.0, 6.0), (2.0, 2.0), (-7.0, 30.0)):
        for vals in (x, Q([5, 7, 100], tf.qint32), Q([-5, -7], tf.qint32), Q(np.zeros([0]), tf.qint32)):
            n = int(np.prod(vals.shape))
            case("RequantizationRange [%g,%g] n%d %d" % (imn, imx, n, int(vals.numpy().reshape(-1)[0]) if n else 0),
                 "RequantizationRange", [("input", vals), ("input_min", A(imn)), ("input_max", A(imx))])
            for out in (tf.quint8, tf.qint8, tf.quint16, tf.qint16):
                case("QuantizeDownAndShrinkRange %s [%g,%g] n%d %d" % (out.name, imn, imx, n,
                     int(vals.numpy().reshape(-1)[0]) if n else 0), "QuantizeDownAndShrinkRange",
                     [("input", vals), ("input_min", A(imn)), ("input_max", A(imx))], {"out_type": out})
    case("RequantizationRange err min vector", "RequantizationRange", [("input", x), ("input_min", A([-1.0, 1])), ("input_max", A(1.0))])
    case("RequantizationRange err max vector", "RequantizationRange", [("input", x), ("input_min", A(-1.0)), ("input_max", A([1.0, 2]))])
    case("QuantizeDownAndShrinkRange err min vector", "QuantizeDownAndShrinkRange",
         [("input", x), ("input_min", A([-1.0, 1])), ("input_max", A(1.0))], {"out_type": tf.quint8})


def relu():
    for qt in (tf.quint8, tf.qint8, tf.qint32, tf.quint16, tf.qint16):
        a, b = QRANGE[qt]
        x = Q([a, a + 1, 0, 1, b - 1, b] + list(rng.integers(a, b, 14, endpoint=True)), qt)
        for mn, mx in RANGES:
            for op in ("QuantizedRelu", "QuantizedRelu6"):
                case("%s %s [%g,%g]" % (op, qt.name, mn, mx), op, [("features", x), ("min_features", A(mn)), ("max_features", A(mx))],
                     {"out_type": qt})
            for mv in (0.5, 6.0, -1.0):
                case("QuantizedReluX %s [%g,%g] %g" % (qt.name, mn, mx, mv), "QuantizedReluX",
                     [("features", x), ("max_value", A(mv)), ("min_features", A(mn)), ("max_features", A(mx))], {"out_type": qt})
    x = Q([1, 2, 200], tf.quint8)
    case("QuantizedRelu out_type differs", "QuantizedRelu", [("features", x), ("min_features", A(-1.0)), ("max_features", A(1.0))],
         {"out_type": tf.qint32})
    case("QuantizedRelu empty", "QuantizedRelu", [("features", Q(np.zeros([2, 0]), tf.quint8)), ("min_features", A(-1.0)),
         ("max_features", A(1.0))], {"out_type": tf.quint8})
    for op in ("QuantizedRelu", "QuantizedRelu6"):
        case(op + " err min vector", op, [("features", x), ("min_features", A([-1.0, 1.0])), ("max_features", A(1.0))], {"out_type": tf.quint8})
        case(op + " err max vector", op, [("features", x), ("min_features", A(-1.0)), ("max_features", A([1.0, 2.0]))], {"out_type": tf.quint8})
        case(op + " err min > max", op, [("features", x), ("min_features", A(2.0)), ("max_features", A(1.0))], {"out_type": tf.quint8})
    case("QuantizedReluX err max_value vector", "QuantizedReluX", [("features", x), ("max_value", A([1.0, 2.0])), ("min_features", A(-1.0)),
         ("max_features", A(1.0))], {"out_type": tf.quint8})


def bias_add():
    for t1 in (tf.quint8, tf.qint8):
        for t2 in (tf.quint8, tf.qint8):
            for out in (tf.qint32, tf.quint8):
                for (a, b), (c, d) in (((-1.0, 1.0), (-2.0, 0.5)), ((0.0, 6.0), (-0.1, 0.1)), ((1.0, 3.0), (0.0, 0.0)),
                                       ((-1e3, 1e3), (-1e-3, 2e-3)), ((0.0, 0.0), (0.0, 0.0))):
                    case("QuantizedBiasAdd %s %s %s [%g,%g] [%g,%g]" % (t1.name, t2.name, out.name, a, b, c, d), "QuantizedBiasAdd",
                         [("input", R([3, 2, 5], t1)), ("bias", R([5], t2)), ("min_input", A(a)), ("max_input", A(b)),
                          ("min_bias", A(c)), ("max_bias", A(d))], {"out_type": out})
    B = lambda name, x, bias, **kw: case("QuantizedBiasAdd " + name, "QuantizedBiasAdd",  # noqa: E731
                                         [("input", x), ("bias", bias), ("min_input", A(kw.get("a", -1.0))), ("max_input", A(1.0)),
                                          ("min_bias", A(-1.0)), ("max_bias", A(1.0))], {"out_type": tf.qint32})
    B("2-D", R([4, 3], tf.quint8), R([3], tf.quint8))
    B("empty rows", R([0, 3], tf.quint8), R([3], tf.quint8))
    B("err 1-D input", R([3], tf.quint8), R([3], tf.quint8))
    B("err bias 2-D", R([2, 3], tf.quint8), R([1, 3], tf.quint8))
    B("err bias size", R([2, 3], tf.quint8), R([2], tf.quint8))
    B("err no bias", R([2, 0], tf.quint8), R([0], tf.quint8))
    B("err min vector", R([2, 3], tf.quint8), R([3], tf.quint8), a=[-1.0, 0.0])


def matmul():
    for t1 in (tf.quint8, tf.qint8):
        for t2 in (tf.quint8, tf.qint8):
            for ta in (False, True):
                for tb in (False, True):
                    for (a, b), (c, d) in (((-1.0, 1.0), (-2.0, 0.5)), ((0.0, 6.0), (-0.1, 0.1)), ((1.0, 3.0), (-3.0, -1.0))):
                        sa = [7, 5] if ta else [5, 7]
                        sb = [3, 7] if tb else [7, 3]
                        case("QuantizedMatMul %s %s ta%d tb%d [%g,%g] [%g,%g]" % (t1.name, t2.name, ta, tb, a, b, c, d),
                             "QuantizedMatMul", [("a", R(sa, t1)), ("b", R(sb, t2)), ("min_a", A(a)), ("max_a", A(b)),
                                                 ("min_b", A(c)), ("max_b", A(d))],
                             {"transpose_a": ta, "transpose_b": tb, "Toutput": tf.qint32})
    M = lambda name, x, y, a=-1.0, b=1.0, c=-1.0, d=1.0, **at: case(  # noqa: E731
        "QuantizedMatMul " + name, "QuantizedMatMul", [("a", x), ("b", y), ("min_a", A(a)), ("max_a", A(b)), ("min_b", A(c)),
                                                        ("max_b", A(d))], dict({"Toutput": tf.qint32}, **at))
    M("big k", R([3, 2100], tf.quint8), R([2100, 2], tf.quint8))
    M("Tactivation", R([2, 3], tf.quint8), R([3, 2], tf.quint8), Tactivation=tf.qint32)
    M("empty m", R([0, 3], tf.quint8), R([3, 2], tf.quint8))  # (empty k: TF returns uninitialized memory)
    M("err a 1-D", R([3], tf.quint8), R([3, 2], tf.quint8))
    M("err b 3-D", R([2, 3], tf.quint8), R([1, 3, 2], tf.quint8))
    M("err k", R([2, 3], tf.quint8), R([4, 2], tf.quint8))
    M("err max_a <= min_a", R([2, 3], tf.quint8), R([3, 2], tf.quint8), a=1.0, b=1.0)
    M("err max_b <= min_b", R([2, 3], tf.quint8), R([3, 2], tf.quint8), c=2.0, d=1.0)
    M("err min_a vector", R([2, 3], tf.quint8), R([3, 2], tf.quint8), a=[-1.0, 0.0])


def conv():
    # quint8 x qint8 has only a oneDNN kernel, which gives empty outputs when run alone
    for t1 in (tf.quint8, tf.qint8):
        for t2 in (tf.quint8,):
            for pad in ("SAME", "VALID"):
                for st in (1, 2, 3):
                    for (a, b), (c, d) in (((-1.0, 1.0), (-2.0, 0.5)), ((1.0, 3.0), (0.0, 6.0))):
                        case("QuantizedConv2D %s %s %s s%d [%g,%g] [%g,%g]" % (t1.name, t2.name, pad, st, a, b, c, d),
                             "QuantizedConv2D", [("input", R([2, 7, 6, 3], t1)), ("filter", R([3, 2, 3, 4], t2)),
                                                 ("min_input", A(a)), ("max_input", A(b)), ("min_filter", A(c)),
                                                 ("max_filter", A(d))],
                             {"strides": [1, st, st, 1], "padding": pad, "out_type": tf.qint32})
    C = lambda name, x, w, a=-1.0, **at: case(  # noqa: E731
        "QuantizedConv2D " + name, "QuantizedConv2D", [("input", x), ("filter", w), ("min_input", A(a)), ("max_input", A(1.0)),
                                                        ("min_filter", A(-1.0)), ("max_filter", A(1.0))],
        dict({"strides": [1, 1, 1, 1], "padding": "SAME", "out_type": tf.qint32}, **at))
    x, w = R([1, 5, 5, 2], tf.quint8), R([2, 2, 2, 3], tf.quint8)
    C("strides 1 2", x, w, strides=[1, 1, 2, 1])
    C("strides 2 1 valid", x, w, strides=[1, 2, 1, 1], padding="VALID")
    C("1x1", x, R([1, 1, 2, 3], tf.quint8))
    C("1x1 stride 2", x, R([1, 1, 2, 3], tf.quint8), strides=[1, 2, 2, 1])
    C("filter bigger same", x, R([6, 7, 2, 1], tf.quint8))
    C("empty batch", R([0, 5, 5, 2], tf.quint8), w)
    C("dilations 1", x, w, dilations=[1, 1, 1, 1])
    C("err dilations", x, w, dilations=[1, 2, 2, 1])
    C("err strides batch", x, w, strides=[2, 1, 1, 1])
    C("err strides depth", x, w, strides=[1, 1, 1, 2])
    C("err strides 3", x, w, strides=[1, 1, 1])
    C("err input 3-D", R([5, 5, 2], tf.quint8), w)
    C("err filter 3-D", x, R([2, 2, 2], tf.quint8))
    C("err depth", x, R([2, 2, 3, 3], tf.quint8))
    C("err min vector", x, w, a=[-1.0, 0.0])


def pool():
    for qt in (tf.quint8, tf.qint8, tf.qint32, tf.quint16, tf.qint16):
        x = R([2, 6, 7, 3], qt)
        for op in ("QuantizedMaxPool", "QuantizedAvgPool"):
            for pad in ("SAME", "VALID"):
                for k, s in (((2, 2), (2, 2)), ((3, 3), (1, 1)), ((3, 2), (2, 3)), ((1, 1), (1, 1)), ((7, 8), (1, 1))):
                    case("%s %s %s k%s s%s" % (op, qt.name, pad, k, s), op,
                         [("input", x), ("min_input", A(-1.0)), ("max_input", A(1.0))],
                         {"ksize": [1, k[0], k[1], 1], "strides": [1, s[0], s[1], 1], "padding": pad})
    x = R([1, 4, 4, 2], tf.quint8)
    for op in ("QuantizedMaxPool", "QuantizedAvgPool"):
        P = lambda name, x, k=[1, 2, 2, 1], s=[1, 1, 1, 1], pad="VALID", mn=-1.0: case(  # noqa: E731
            op + " " + name, op, [("input", x), ("min_input", A(mn)), ("max_input", A(1.0))], {"ksize": k, "strides": s, "padding": pad})
        P("empty batch", R([0, 4, 4, 2], tf.quint8))
        P("err ksize batch", x, k=[2, 2, 2, 1])
        P("err ksize 3", x, k=[1, 2, 2])
        P("err strides batch", x, s=[2, 1, 1, 1])
        P("err input 3-D", R([4, 4, 2], tf.quint8))
        P("err window too big valid", x, k=[1, 5, 1, 1])
        P("err min vector", x, mn=[-1.0, 1.0])
        P("err depth window", x, k=[1, 1, 1, 2], s=[1, 1, 1, 2])


def reshape():
    for qt in (tf.quint8, tf.qint8, tf.qint32, tf.quint16, tf.qint16):
        x = R([2, 6], qt)
        for shp in ([3, 4], [-1], [4, -1], [12, 1, 1]):
            case("QuantizedReshape %s %s" % (qt.name, shp), "QuantizedReshape",
                 [("tensor", x), ("shape", A(shp, i32)), ("input_min", A(-1.0)), ("input_max", A(2.0))])
    x = R([2, 6], tf.quint8)
    case("QuantizedReshape int64 shape", "QuantizedReshape", [("tensor", x), ("shape", A([6, 2], i64)), ("input_min", A(-1.0)),
                                                              ("input_max", A(2.0))])
    case("QuantizedReshape scalar", "QuantizedReshape", [("tensor", Q([7], tf.quint8)), ("shape", np.zeros([0], i32)),
                                                         ("input_min", A(-1.0)), ("input_max", A(2.0))])
    case("QuantizedReshape err size", "QuantizedReshape", [("tensor", x), ("shape", A([5], i32)), ("input_min", A(-1.0)),
                                                           ("input_max", A(2.0))])
    case("QuantizedReshape err min vector", "QuantizedReshape", [("tensor", x), ("shape", A([12], i32)),
                                                                 ("input_min", A([-1.0, 2])), ("input_max", A(2.0))])


def main():
    requantize()
    relu()
    bias_add()
    matmul()
    conv()
    pool()
    reshape()
    print("skipped (no TF CPU kernel): %d" % len(SKIPPED), file=sys.stderr)
    with open("/tmp/e7/skipped.txt", "w") as f:
        f.write("\n".join(SKIPPED) + "\n")
    g.write_unit_header("e7_cases")


if __name__ == "__main__":
    main()
