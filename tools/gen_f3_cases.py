#!/usr/bin/env python3
"""gen_f3_cases.py - writes tests/unit/f3_cases.h: the uniform quantized arithmetic ops
(src/ops/quantize_uniform.c) against TensorFlow 2.21's CPU kernels (eager tf.raw_ops):
UniformQuantizedAdd, UniformQuantizedDot and UniformQuantizedDotHybrid, and
(src/ops/quantize_per_channel.c) RequantizationRangePerChannel and RequantizePerChannel, and
(src/ops/quantized_nn.c) QuantizedAdd; per-tensor and per-axis,
broadcasting, extreme zero points and values, empty tensors, and TF's errors.

Cases where TF aborts the process (UniformQuantizedAdd with a per-tensor lhs and a per-axis output,
RequantizePerChannel of an empty input)
are not generated; the C test checks those are refused. Uses tools/gen_array_cases.py's case()
machinery through tools/gen_e7_cases.py's case() and Q().
Run: build/venv/bin/python tools/gen_f3_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import gen_e7_cases as e7  # noqa: E402  (registers the quantized dtypes; its case() and Q())
import tensorflow as tf  # noqa: E402

A = g.A
f32, i32 = np.float32, np.int32
rng = np.random.default_rng(21)
I32 = (-2**31, 2**31 - 1)
case, Q, SKIPPED = e7.case, e7.Q, e7.SKIPPED


def ATT(p, lo, hi, ax=-1):
    return {p + "quantization_min_val": lo, p + "quantization_max_val": hi, p + "quantization_axis": ax}


def params(shape, ax, lo_s=0.05, hi_s=3.0, zlo=-20, zhi=20):
    if ax < 0:
        return A(rng.uniform(lo_s, hi_s)), A(int(rng.integers(zlo, zhi)), i32)
    n = shape[ax]
    return rng.uniform(lo_s, hi_s, n).astype(f32), rng.integers(zlo, zhi, n).astype(i32)


def add():
    def ADD(name, l, r, la, ra, oa, oshape=None, lo=I32[0], hi=I32[1], lp=None, rp=None, op_=None):
        oshape = oshape if oshape is not None else np.broadcast_shapes(l.shape, r.shape)
        lsc, lzp = lp or params(l.shape, la)
        rsc, rzp = rp or params(r.shape, ra)
        osc, ozp = op_ or params(oshape, oa)
        case("UniformQuantizedAdd " + name, "UniformQuantizedAdd",
             [("lhs", l), ("rhs", r), ("lhs_scales", lsc), ("lhs_zero_points", lzp), ("rhs_scales", rsc),
              ("rhs_zero_points", rzp), ("output_scales", osc), ("output_zero_points", ozp)],
             dict(ATT("lhs_", *I32, la), **ATT("rhs_", *I32, ra), **ATT("output_", lo, hi, oa)))
    R = lambda shape, a=-1000, b=1000: Q(rng.integers(a, b, shape), tf.qint32)  # noqa: E731
    for ls, rs in (([2, 3], [2, 3]), ([2, 3], [3]), ([2, 3], []), ([], [2, 3]), ([4, 1, 3], [2, 1]), ([1], [2, 3]),
                   ([2, 0], [1]), ([3, 4], [3, 1])):
        ADD("pt %s %s" % (ls, rs), R(ls), R(rs), -1, -1, -1)
    # per-axis lhs / rhs into a per-tensor output, per-axis everything
    ADD("lhs ax1 out pt", R([2, 3]), R([2, 3]), 1, -1, -1)
    ADD("lhs ax0 out pt", R([4, 3]), R([3]), 0, -1, -1)
    ADD("rhs ax0 out pt", R([2, 3]), R([3]), -1, 0, -1)
    ADD("all ax1", R([2, 3]), R([2, 3]), 1, 1, 1)
    ADD("all ax last 3-D", R([2, 3, 4]), R([4]), 2, 0, 2)
    ADD("lhs ax1 rhs pt out ax1", R([2, 3]), R([2, 3]), 1, -1, 1)
    ADD("lhs ax0 rhs pt same rank out ax0", R([4, 3]), R([1, 3]), 0, -1, 0)
    ADD("lhs bcast 1 on axis", R([2, 1]), R([2, 5]), 1, 1, 1, lp=(A([0.5]), A([3], i32)))
    ADD("output clamp", R([3, 4], -10**6, 10**6), R([3, 4], -10**6, 10**6), -1, -1, -1, lo=-100, hi=100)
    ADD("output clamp per-axis", R([3, 4], -10**6, 10**6), R([3, 4]), 1, 1, 1, lo=-5000, hi=7000)
    ext = Q([2**31 - 1, -2**31, 2**31 - 64, 2**30, -2**30, 0, 1, -1], tf.qint32)
    ADD("extremes scale 1", ext, ext, -1, -1, -1, lp=(A(1.0), A(0, i32)), rp=(A(1.0), A(0, i32)), op_=(A(1.0), A(0, i32)))
    ADD("extremes zp", ext, ext, -1, -1, -1, lp=(A(0.7), A(2**31 - 1, i32)), rp=(A(3.0), A(-2**31, i32)), op_=(A(0.2), A(5, i32)))
    ADD("tiny multiplier", ext, ext, -1, -1, -1, lp=(A(1e-12), A(0, i32)), rp=(A(1.0), A(0, i32)), op_=(A(1.0), A(0, i32)))
    ADD("big multiplier", ext, ext, -1, -1, -1, lp=(A(1e9), A(0, i32)), rp=(A(1.0), A(0, i32)), op_=(A(1e-3), A(0, i32)))
    # errors
    x = R([2, 3])
    ADD("err shapes", x, R([4]), -1, -1, -1, oshape=[2, 3])
    ADD("err lhs scales vector per-tensor", x, x, -1, -1, -1, lp=(A([1.0, 2.0]), A(0, i32)))
    ADD("err lhs axis size", x, x, 1, -1, -1, lp=(A([1.0, 2.0]), A([0, 0], i32)))
    ADD("err rhs axis out of range", x, x, -1, 2, -1, rp=(A([1.0, 2.0]), A([0, 0], i32)))
    ADD("err output axis size", x, x, 1, 1, 1, op_=(A([1.0, 2.0]), A([0, 0], i32)))
    ADD("err lhs and output axes", R([2, 3]), R([3, 2, 3]), 1, -1, 1, oshape=[3, 2, 3], op_=(A([1.0] * 2), A([0] * 2, i32)))
    ADD("err rhs and output axes", R([3, 3]), R([3, 3]), 1, 0, 1)
    ADD("err lhs scale 0", x, x, -1, -1, -1, lp=(A(0.0), A(0, i32)))
    ADD("err output scale negative", x, x, -1, -1, -1, op_=(A(-1.0), A(0, i32)))
    ADD("err multiplier inf", x, x, -1, -1, -1, lp=(A(3e38), A(0, i32)), op_=(A(1e-30), A(0, i32)))
    ADD("err zero_points shape", x, x, -1, -1, -1, rp=(A(1.0), A([0], i32)))
    ADD("err axis -2", x, x, -2, -1, -1)


def dot():
    def DOT(name, l, r, rax, oax, lp=None, rp=None, op_=None, lo=I32[0], hi=I32[1], lax=-1, rshape=None):
        lsc, lzp = lp or params(l.shape, -1, zlo=-128, zhi=127)
        rsc, rzp = rp or params(r.shape, rax, zlo=-128, zhi=127)
        oshape = [l.shape[0] if len(l.shape) else 0, r.shape[-1] if len(r.shape) else 0]
        osc, ozp = op_ or params(oshape, oax, lo_s=1.0, hi_s=50.0)
        case("UniformQuantizedDot " + name, "UniformQuantizedDot",
             [("lhs", l), ("rhs", r), ("lhs_scales", lsc), ("lhs_zero_points", lzp), ("rhs_scales", rsc),
              ("rhs_zero_points", rzp), ("output_scales", osc), ("output_zero_points", ozp)],
             dict(ATT("lhs_", -128, 127, lax), **ATT("rhs_", -128, 127, rax), **ATT("output_", lo, hi, oax),
                  Tout=tf.qint32))
    R = lambda shape: Q(rng.integers(-128, 127, shape, endpoint=True), tf.qint8)  # noqa: E731
    for b, k, c in ((2, 3, 4), (1, 1, 1), (5, 17, 3), (3, 0, 2), (0, 4, 3), (2, 4, 0)):
        for rax, oax in ((-1, -1), (1, -1), (1, 1)):
            DOT("%dx%dx%d r%d o%d" % (b, k, c, rax, oax), R([b, k]), R([k, c]), rax, oax)
    # long contraction: the per-tensor path accumulates through float (past 2^24 it rounds)
    big = Q(np.full([2, 700], 127), tf.qint8)
    bigr = Q(np.full([700, 3], -128), tf.qint8)
    for rax in (-1, 1):
        DOT("long k zp extreme r%d" % rax, big, bigr, rax, rax,
            lp=(A(0.5), A(-128, i32)), rp=(A(0.25), A(127, i32)) if rax < 0 else (A([0.25] * 3), A([127, 100, -5], i32)),
            op_=(A(100.0), A(3, i32)) if rax < 0 else (A([100.0, 1.0, 7.0]), A([3, 0, -3], i32)))
        DOT("long k random r%d" % rax, R([3, 1000]), R([1000, 4]), rax, -1, lp=(A(0.01), A(-128, i32)),
            rp=(A(0.02), A(127, i32)) if rax < 0 else (A([0.02] * 4), A([127, -128, 0, 5], i32)), op_=(A(1.0), A(0, i32)))
    DOT("output clamp", R([3, 5]), R([5, 4]), 1, 1, lo=-20, hi=30)
    DOT("huge zp wraps", R([2, 3]), R([3, 2]), -1, -1, lp=(A(1.0), A(2**31 - 1, i32)), rp=(A(1.0), A(-2**31, i32)),
        op_=(A(1.0), A(0, i32)))
    x, w = R([2, 3]), R([3, 4])
    DOT("err lhs axis", x, w, -1, -1, lax=0)
    DOT("err rhs axis", x, w, 0, -1, rp=(A(1.0), A(0, i32)))
    DOT("err output axis", x, w, -1, 0, op_=(A(1.0), A(0, i32)))
    DOT("err lhs scale 0", x, w, -1, -1, lp=(A(0.0), A(0, i32)))
    DOT("err rhs scale negative", x, w, 1, -1, rp=(A([1.0, -1.0, 1.0, 1.0]), A([0] * 4, i32)))
    DOT("err output scale 0", x, w, -1, -1, op_=(A(0.0), A(0, i32)))
    DOT("err lhs rank", R([2, 3, 1]), w, -1, -1)
    DOT("err rhs rank", x, R([3]), -1, -1)
    DOT("err k", x, R([4, 4]), -1, -1)
    DOT("err lhs scales vector", x, w, -1, -1, lp=(A([1.0]), A([0], i32)))
    DOT("err rhs scales size", x, w, 1, -1, rp=(A([1.0] * 3), A([0] * 3, i32)))
    DOT("err rhs per-tensor output per-channel", x, w, -1, 1, op_=(A([1.0] * 4), A([0] * 4, i32)))
    DOT("err multiplier inf", x, w, -1, -1, lp=(A(3e38), A(0, i32)), rp=(A(3e38), A(0, i32)), op_=(A(1.0), A(0, i32)))
    # dtypes TF registers no kernel for
    DOT("qint32 operands", Q([[1, 2]], tf.qint32), Q([[1], [2]], tf.qint32), -1, -1)


def hybrid():
    def HY(name, l, r, rax, rp=None):
        rsc, rzp = rp or params(r.shape, rax, zlo=-128, zhi=127)
        case("UniformQuantizedDotHybrid " + name, "UniformQuantizedDotHybrid",
             [("lhs", l), ("rhs", r), ("rhs_scales", rsc), ("rhs_zero_points", rzp)],
             dict(ATT("rhs_", -128, 127, rax), Tout=tf.float32))
    R = lambda shape: Q(rng.integers(-128, 127, shape, endpoint=True), tf.qint8)  # noqa: E731
    for b, k, c in ((2, 3, 4), (1, 1, 1), (4, 33, 5), (3, 0, 2), (0, 4, 3)):
        for rax in (-1, 1):
            HY("%dx%dx%d r%d" % (b, k, c, rax), rng.uniform(-5, 5, [b, k]).astype(f32), R([k, c]), rax)
    w = R([4, 3])
    rows = A([[0, 0, 0, 0], [1, 2, 3, 4], [-1, -2, -3, -4], [0.5, -0.25, 1e-3, 7], [1e-30, 0, 0, 0], [1e30, -1e30, 3, 0],
              [100, 100, 100, 100], [-3.5, 0, 0, 0], [2e-38, -1e-38, 0, 1e-39]])
    for rax in (-1, 1):
        HY("edge rows r%d" % rax, rows, w, rax)
        HY("positive rows r%d" % rax, rng.uniform(1, 9, [3, 4]).astype(f32), w, rax)
        HY("negative rows r%d" % rax, rng.uniform(-9, -1, [3, 4]).astype(f32), w, rax)
    HY("zp extremes", rng.uniform(-5, 5, [3, 4]).astype(f32), w, 1, rp=(A([0.1, 2.0, 1e-5]), A([-128, 127, 0], i32)))
    x = rng.uniform(-1, 1, [2, 4]).astype(f32)
    HY("err rhs axis 0", x, w, 0, rp=(A(1.0), A(0, i32)))
    HY("err lhs rank", rng.uniform(-1, 1, [4]).astype(f32), w, -1)
    HY("err k", rng.uniform(-1, 1, [2, 5]).astype(f32), w, -1)
    HY("err rhs scales size", x, w, 1, rp=(A([1.0, 2.0]), A([0, 0], i32)))
    HY("err scale 0", x, w, -1, rp=(A(0.0), A(0, i32)))
    HY("err scales shapes differ", x, w, -1, rp=(A(1.0), A([0], i32)))


def per_channel():
    def RR(name, x, mn, mx, clip=1e30):
        case("RequantizationRangePerChannel " + name, "RequantizationRangePerChannel",
             [("input", x), ("input_min", A(mn)), ("input_max", A(mx))], {"clip_value_max": clip})

    def RP(name, x, mn, mx, rmn, rmx, out=tf.quint8):
        case("RequantizePerChannel %s %s" % (out.name, name), "RequantizePerChannel",
             [("input", x), ("input_min", A(mn)), ("input_max", A(mx)), ("requested_output_min", A(rmn)),
              ("requested_output_max", A(rmx))], {"out_type": out})
    R = lambda shape, a=-2**31, b=2**31 - 1: Q(rng.integers(a, b, shape, endpoint=True), tf.qint32)  # noqa: E731
    x = R([2, 3, 2, 4])
    mn, mx = [-1.0, -2.5, 0.0, -6.0], [1.0, 0.5, 3.0, 6.0]
    for clip in (1e30, 6.0, 1.0, 0.0):
        RR("clip %g" % clip, x, mn, mx, clip)
    RR("non-negative", R([1, 2, 2, 3], 0), [-1.0, -2.0, -3.0], [1.0, 2.0, 3.0])
    RR("extremes", Q(np.array([-2**31, 2**31 - 1, 0, 5, -2**31, 0, 0, 0]).reshape(1, 1, 2, 4), tf.qint32), mn, mx)
    RR("all zero", Q(np.zeros([1, 2, 1, 4]), tf.qint32), mn, mx)
    RR("zero ranges", x, [0.0] * 4, [0.0] * 4, 6.0)
    RR("one channel", R([3, 1, 2, 1]), [-2.0], [2.0])
    RR("err min size", x, [1.0] * 3, [1.0] * 4)
    RR("err max 2-D", x, [1.0] * 4, [[1.0] * 4])
    RR("err empty", R([0, 2, 2, 4]), mn, mx)
    RR("err rank", R([2, 4]), mn, mx)
    RR("err channels", R([1, 2, 2, 3]), mn, mx)
    for out in (tf.quint8, tf.qint8):
        for rmn, rmx in ((-1.0, 1.0), (-6.0, 6.0), (-0.001, 0.5), (-200.0, 3.0)):
            RP("[%g,%g]" % (rmn, rmx), x, mn, mx, rmn, rmx, out)
        RP("small values", R([1, 3, 3, 4], -3 * 10**7, 3 * 10**7), [-1.0] * 4, [1.0] * 4, -1.0, 1.0, out)
        RP("halves", Q((np.arange(-40, 40) * 2**24 + 2**23).reshape(1, 2, 10, 4), tf.qint32), [1.0] * 4, [1.0] * 4, -1.0, 1.0, out)
        RP("extra ranges", x, mn + [9.0], mx + [9.0], -1.0, 1.0, out)
        # an empty input: TF dies of SIGFPE (oneDNN divides by the zero size); the C test checks it is refused
        RP("ranges 2-D", x, [mn], [mx], -1.0, 1.0, out)
        RP("err max size", x, mn, mx[:3], -1.0, 1.0, out)
        RP("err requested min vector", x, mn, mx, [-1.0, 0.0], 1.0, out)
        RP("err rank 2", R([2, 4]), mn, mx, -1.0, 1.0, out)
        RP("err rank 5", R([1, 2, 2, 2, 4]), mn, mx, -1.0, 1.0, out)
    RP("err min not negative", x, mn, mx, 0.0, 1.0, tf.qint8)
    RP("min 0", x, mn, mx, 0.0, 1.0, tf.quint8)
    RP("requested min [1]", x, mn, mx, [-2.0], 1.0, tf.quint8)


def qadd():
    def M(name, x, y, a=-1.0, b=1.0, c=-2.0, d=0.5):
        case("QuantizedAdd " + name, "QuantizedAdd", [("x", x), ("y", y), ("min_x", A(a)), ("max_x", A(b)), ("min_y", A(c)),
                                                      ("max_y", A(d))], {"Toutput": tf.qint32})
    u = tf.quint8
    R = lambda shape: Q(rng.integers(0, 255, shape, endpoint=True), u)  # noqa: E731
    for (a, b), (c, d) in (((-1.0, 1.0), (-2.0, 0.5)), ((0.0, 6.0), (1.0, 3.0)), ((-3.0, -1.0), (-1e3, 1e3)),
                           ((-1e-4, 2e-4), (5.0, 5.5)), ((-1e30, 1e30), (0.0, 1.0))):
        r = "[%g,%g] [%g,%g]" % (a, b, c, d)
        M("same " + r, R([3, 4]), R([3, 4]), a, b, c, d)
        M("scalar x " + r, R([]), R([3, 4]), a, b, c, d)
        M("scalar y " + r, R([2, 5]), R([1]), a, b, c, d)
        M("row " + r, R([3, 4]), R([4]), a, b, c, d)
        M("row x " + r, R([4]), R([2, 3, 4]), a, b, c, d)
    M("ends", Q([0, 255, 1, 254], u), Q([255, 0, 128, 127], u))
    M("[1,1] x [3]", R([1, 1]), R([3]))
    M("empty", R([0, 4]), R([0, 4]))
    M("empty tensor row", R([0, 4]), R([4]))
    M("err shapes", R([2, 3]), R([4]))
    M("err 3 groups", R([2, 3, 4]), R([3, 1]))
    M("err max_x", R([3]), R([3]), a=1.0, b=1.0)
    M("err max_y", R([3]), R([3]), c=1.0, d=0.0)
    M("err min_x vector", R([3]), R([3]), a=[-1.0])
    M("err max_y vector", R([3]), R([3]), d=[1.0, 2.0])
    case("QuantizedAdd qint8", "QuantizedAdd", [("x", Q([1, 2], tf.qint8)), ("y", Q([1, 2], tf.qint8)), ("min_x", A(-1.0)),
         ("max_x", A(1.0)), ("min_y", A(-1.0)), ("max_y", A(1.0))], {"Toutput": tf.qint32})


def main():
    qadd()
    per_channel()
    add()
    dot()
    hybrid()
    print("skipped (no TF CPU kernel): %s" % SKIPPED, file=sys.stderr)
    g.write_unit_header("f3_cases")


if __name__ == "__main__":
    main()
