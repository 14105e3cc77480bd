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


def uniform():
    ATT = lambda lo, hi, ax=-1, p="": {p + "quantization_min_val": lo, p + "quantization_max_val": hi, p + "quantization_axis": ax}  # noqa: E731
    x = A([0.0, 0.1, -0.1, 0.25, -0.25, 0.75, 1.0, -1.0, 2.5, -2.5, 3.5, 1e6, -1e6, 127.3, -64.2, 0.125] +
          list(rng.uniform(-20, 20, 20)))
    x46 = rng.uniform(-10, 10, (4, 6)).astype(f32)
    for tout, (lo, hi) in ((tf.qint8, (-128, 127)), (tf.qint8, (-127, 127)), (tf.qint32, (-2**31, 2**31 - 1)), (tf.qint32, (-1000, 1000))):
        for sc, zp in ((0.5, 0), (0.25, 3), (0.1, -7), (3.0, 100), (1e-3, 0)):
            case("UniformQuantize %s [%d,%d] s%g z%d" % (tout.name, lo, hi, sc, zp), "UniformQuantize",
                 [("input", x), ("scales", A(sc)), ("zero_points", A(zp, i32))], dict(ATT(lo, hi), Tout=tout))
        for ax, n in ((0, 4), (1, 6), (-1, None)):
            if n is None:
                continue
            sc = rng.uniform(0.05, 2, n).astype(f32)
            zp = rng.integers(-5, 5, n).astype(i32)
            case("UniformQuantize %s per-axis %d [%d,%d]" % (tout.name, ax, lo, hi), "UniformQuantize",
                 [("input", x46), ("scales", sc), ("zero_points", zp)], dict(ATT(lo, hi, ax), Tout=tout))
        q = Q(rng.integers(max(lo, -2**31), min(hi, 2**31 - 1), 30, endpoint=True), tout)
        for sc, zp in ((0.5, 0), (0.1, -7), (3.0, 100)):
            case("UniformDequantize %s [%d,%d] s%g z%d" % (tout.name, lo, hi, sc, zp), "UniformDequantize",
                 [("input", q), ("scales", A(sc)), ("zero_points", A(zp, i32))], dict(ATT(lo, hi), Tout=tf.float32))
        q46 = Q(rng.integers(lo, hi, (4, 6), endpoint=True), tout)
        for ax, n in ((0, 4), (1, 6)):
            case("UniformDequantize %s per-axis %d" % (tout.name, ax), "UniformDequantize",
                 [("input", q46), ("scales", rng.uniform(0.05, 2, n).astype(f32)), ("zero_points", rng.integers(-5, 5, n).astype(i32))],
                 dict(ATT(lo, hi, ax), Tout=tf.float32))
    # UniformRequantize: every Tin/Tout pair TF registers
    for tin in (tf.qint8, tf.qint32):
        for tout in (tf.qint8, tf.qint32):
            lo, hi = QRANGE[tin]
            v = Q([lo, hi, 0, 1, -1, 5, -5] + list(rng.integers(lo, hi, 20, endpoint=True)), tin)
            olo, ohi = QRANGE[tout]
            for isc, izp, osc, ozp in ((0.5, 0, 0.25, 3), (0.1, -3, 0.7, 1), (2.0, 1, 2.0, 1), (1e-4, 0, 1.0, 0), (3.0, 0, 1e-3, -2),
                                       (1.0, 0, 1e-12, 0)):
                case("UniformRequantize %s->%s %g %d %g %d" % (tin.name, tout.name, isc, izp, osc, ozp), "UniformRequantize",
                     [("input", v), ("input_scales", A(isc)), ("input_zero_points", A(izp, i32)), ("output_scales", A(osc)),
                      ("output_zero_points", A(ozp, i32))],
                     dict(ATT(lo, hi, -1, "input_"), **ATT(olo, ohi, -1, "output_"), Tout=tout))
            v46 = Q(rng.integers(lo, hi, (4, 6), endpoint=True), tin)
            for iax, oax in ((1, 1), (-1, 1), (1, -1), (0, 0)):
                n = 6 if max(iax, oax) == 1 else 4
                isc = rng.uniform(0.05, 2, n).astype(f32) if iax >= 0 else A(0.3)
                izp = rng.integers(-5, 5, n).astype(i32) if iax >= 0 else A(2, i32)
                osc = rng.uniform(0.05, 2, n).astype(f32) if oax >= 0 else A(0.6)
                ozp = rng.integers(-5, 5, n).astype(i32) if oax >= 0 else A(-1, i32)
                case("UniformRequantize %s->%s axes %d %d" % (tin.name, tout.name, iax, oax), "UniformRequantize",
                     [("input", v46), ("input_scales", isc), ("input_zero_points", izp), ("output_scales", osc), ("output_zero_points", ozp)],
                     dict(ATT(lo, hi, iax, "input_"), **ATT(olo, ohi, oax, "output_"), Tout=tout))
    # UniformQuantizedClipByValue
    for qt in (tf.qint32,):  # the only T its OpDef allows
        lo, hi = QRANGE[qt]
        v = Q(rng.integers(-300, 300, 20), qt)
        case("UniformQuantizedClipByValue %s" % qt.name, "UniformQuantizedClipByValue",
             [("operand", v), ("min", Q(-50, qt)), ("max", Q(70, qt)), ("scales", A(0.5)), ("zero_points", A(1, i32))], ATT(lo, hi))
        v46 = Q(rng.integers(-100, 100, (4, 6)), qt)
        case("UniformQuantizedClipByValue %s per-axis" % qt.name, "UniformQuantizedClipByValue",
             [("operand", v46), ("min", Q(rng.integers(-60, 0, 6), qt)), ("max", Q(rng.integers(0, 60, 6), qt)),
              ("scales", A([0.5] * 6)), ("zero_points", A([1] * 6, i32))], ATT(lo, hi, 1))
    # errors
    UQ = lambda name, inp, sc, zp, **at: case("UniformQuantize err " + name, "UniformQuantize",  # noqa: E731
                                              [("input", inp), ("scales", sc), ("zero_points", zp)],
                                              dict(ATT(at.pop("lo", -128), at.pop("hi", 127), at.pop("ax", -1)), Tout=tf.qint8, **at))
    UQ("scales vector per-tensor", x46, A([0.5, 0.5]), A(0, i32))
    UQ("scales rank 1 per-tensor", x46, A([0.5]), A([0], i32))
    UQ("scales rank 2 per-axis", x46, A([[0.5] * 4]), A([[0] * 4], i32), ax=0)
    UQ("zero_points vector per-tensor", x46, A(0.5), A([0, 0], i32))
    UQ("axis out of range", x46, A([0.5] * 4), A([0] * 4, i32), ax=2)
    UQ("axis size", x46, A([0.5] * 5), A([0] * 5, i32), ax=0)
    UQ("zero_points size", x46, A([0.5] * 4), A([0] * 3, i32), ax=0)
    UQ("scale 0", x46, A(0.0), A(0, i32))
    UQ("scale negative", x46, A(-1.0), A(0, i32))
    UQ("zero_point out of range", x46, A(0.5), A(200, i32))
    UQ("min > max", x46, A(0.5), A(0, i32), lo=10, hi=-10)
    UQ("min below dtype", x46, A(0.5), A(0, i32), lo=-1000, hi=127)
    UD = lambda name, sc, zp, **at: case("UniformDequantize err " + name, "UniformDequantize",  # noqa: E731
                                         [("input", Q(np.zeros([4, 6]), tf.qint8)), ("scales", sc), ("zero_points", zp)],
                                         dict(ATT(-128, 127, at.pop("ax", -1)), Tout=tf.float32))
    UD("scales vector per-tensor", A([0.5, 0.5]), A(0, i32))
    UD("axis size", A([0.5] * 5), A([0] * 5, i32), ax=0)
    UR = lambda name, isc, osc, **at: case("UniformRequantize err " + name, "UniformRequantize",  # noqa: E731
                                           [("input", Q(np.zeros([4, 6]), tf.qint8)), ("input_scales", isc), ("input_zero_points", A(0, i32)),
                                            ("output_scales", osc), ("output_zero_points", A(0, i32))],
                                           dict(ATT(-128, 127, -1, "input_"), **ATT(-128, 127, -1, "output_"), Tout=tf.qint8))
    UR("input scale 0", A(0.0), A(1.0))
    UR("output scale negative", A(1.0), A(-1.0))
    UR("output scale tiny", A(1.0), A(1e-30))
    UR("scales vector per-tensor", A([1.0, 2.0]), A(1.0))
    case("UniformRequantize err axes differ", "UniformRequantize",
         [("input", Q(np.zeros([4, 6]), tf.qint8)), ("input_scales", A([1.0] * 4)), ("input_zero_points", A([0] * 4, i32)),
          ("output_scales", A([1.0] * 6)), ("output_zero_points", A([0] * 6, i32))],
         dict(ATT(-128, 127, 0, "input_"), **ATT(-128, 127, 1, "output_"), Tout=tf.qint8))
    case("UniformQuantizedClipByValue err min shape", "UniformQuantizedClipByValue",
         [("operand", Q(np.zeros([4, 6]), tf.qint32)), ("min", Q([1, 2], tf.qint32)), ("max", Q(7, tf.qint32)), ("scales", A(0.5)),
          ("zero_points", A(1, i32))], ATT(-2**31, 2**31 - 1))
    case("UniformQuantizedClipByValue min > max", "UniformQuantizedClipByValue",
         [("operand", Q([-5, 0, 5, 10], tf.qint32)), ("min", Q(7, tf.qint32)), ("max", Q(-2, tf.qint32)), ("scales", A(0.5)),
          ("zero_points", A(1, i32))], ATT(-2**31, 2**31 - 1))


def mul():
    def M(name, x, y, a=-1.0, b=1.0, c=-2.0, d=0.5):
        case("QuantizedMul " + name, "QuantizedMul", [("x", x), ("y", y), ("min_x", A(a)), ("max_x", A(b)), ("min_y", A(c)),
                                                      ("max_y", A(d))], {"Toutput": tf.qint32})
    u = tf.quint8
    for (a, b), (c, d) in (((-1.0, 1.0), (-2.0, 0.5)), ((0.0, 6.0), (1.0, 3.0)), ((-3.0, -1.0), (-1e3, 1e3))):
        r = "[%g,%g] [%g,%g]" % (a, b, c, d)
        M("same " + r, R([3, 4], u), R([3, 4], u), a, b, c, d)
        M("scalar x " + r, R([], u), R([3, 4], u), a, b, c, d)
        M("scalar y " + r, R([2, 5], u), R([1], u), a, b, c, d)
        M("row " + r, R([3, 4], u), R([4], u), a, b, c, d)
        M("row x " + r, R([4], u), R([2, 3, 4], u), a, b, c, d)
    M("[1,1] x [3]", R([1, 1], u), R([3], u))
    M("empty", R([0, 4], u), R([0, 4], u))
    M("err shapes", R([2, 3], u), R([4], u))
    M("err 3 groups", R([2, 3, 4], u), R([3, 1], u))
    M("err max_x", R([3], u), R([3], u), a=1.0, b=1.0)
    M("err max_y", R([3], u), R([3], u), c=1.0, d=0.0)
    M("err min_x vector", R([3], u), R([3], u), a=[-1.0])


def main():
    mul()
    uniform()
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
