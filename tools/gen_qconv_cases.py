#!/usr/bin/env python3
"""gen_qconv_cases.py - writes tests/unit/qconv_cases.h: the uniform quantized convolutions
(src/ops/uniform_quant_conv.c) against TensorFlow 2.21's CPU kernels (eager tf.raw_ops):
UniformQuantizedConvolution and UniformQuantizedConvolutionHybrid over every attr (window_strides,
padding VALID / SAME / EXPLICIT, lhs / rhs dilation, feature and batch groups, dimension_numbers),
1-D, 2-D and 3-D, per-tensor and per-channel rhs and output, zero-point and range extremes, empty
tensors, and TF's errors. Uses tools/gen_array_cases.py's case() machinery through
tools/gen_e7_cases.py's case() and Q().
Run: build/venv/bin/python tools/gen_qconv_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import gen_e7_cases as e7  # noqa: E402  (registers the quantized dtypes; its case() and Q())
import tensorflow as tf  # noqa: E402
from tensorflow.core.util.quantization import uniform_quant_ops_attr_pb2 as pb  # noqa: E402

A = g.A
f32, i32 = np.float32, np.int32
rng = np.random.default_rng(23)
I32 = (-2**31, 2**31 - 1)
case, Q, SKIPPED = e7.case, e7.Q, e7.SKIPPED


def dn_bytes(ib, if_, isp, kif, kof, ksp, ob, of, osp):
    return pb.UniformQuantizedConvolutionDimensionNumbersAttr(
        input_batch_dimension=ib, input_feature_dimension=if_, input_spatial_dimensions=isp,
        kernel_input_feature_dimension=kif, kernel_output_feature_dimension=kof, kernel_spatial_dimensions=ksp,
        output_batch_dimension=ob, output_feature_dimension=of, output_spatial_dimensions=osp).SerializeToString()


def esc(b):
    return "".join("\\%03o" % c for c in b)


NHWC = dn_bytes(0, 3, [1, 2], 2, 3, [0, 1], 0, 3, [1, 2])  # TF's usual layouts: NHWC, HWIO
ODD = dn_bytes(2, 0, [1, 3], 3, 1, [2, 0], 1, 2, [3, 0])   # everything moved


def layout(dn, rank):
    if dn is None:
        return 0, 1, list(range(2, rank)), 1, 0, list(range(2, rank)), 0, 1, list(range(2, rank))
    try:
        m = pb.UniformQuantizedConvolutionDimensionNumbersAttr.FromString(dn)
    except Exception:  # a malformed one (an error case)
        return layout(None, rank)
    return (m.input_batch_dimension, m.input_feature_dimension, list(m.input_spatial_dimensions),
            m.kernel_input_feature_dimension, m.kernel_output_feature_dimension, list(m.kernel_spatial_dimensions),
            m.output_batch_dimension, m.output_feature_dimension, list(m.output_spatial_dimensions))


def conv_attrs(strides, padding, pads, ldil, rdil, fgc, bgc, dn):
    a = {"window_strides": list(strides), "padding": padding, "explicit_padding": list(pads),
         "lhs_dilation": list(ldil), "rhs_dilation": list(rdil), "feature_group_count": fgc,
         "batch_group_count": bgc}
    tfa = {}
    if dn is not None:
        a["dimension_numbers"] = esc(dn)
        tfa["dimension_numbers"] = dn
    return a, tfa


def QI8(shape, lo=-128, hi=127):
    return Q(rng.integers(lo, hi, shape, endpoint=True), tf.qint8)


def CONV(name, lshape, rshape, rax=-1, oax=-1, strides=(), padding="VALID", pads=(), ldil=(), rdil=(), fgc=1, bgc=1,
         dn=None, lp=None, rp=None, op_=None, lo=I32[0], hi=I32[1], lax=-1, l=None, r=None, out_features=None):
    lay = layout(dn, len(lshape))
    l = QI8(lshape) if l is None else l
    r = QI8(rshape) if r is None else r
    of = out_features if out_features is not None else (rshape[lay[4]] if len(rshape) > lay[4] else 1)
    lsc, lzp = lp or (A(rng.uniform(0.01, 0.5)), A(int(rng.integers(-128, 128)), i32))
    if rp is None:
        rp = (A(rng.uniform(0.01, 0.5)), A(int(rng.integers(-128, 128)), i32)) if rax < 0 else \
             (rng.uniform(0.01, 0.5, of).astype(f32), rng.integers(-128, 128, of).astype(i32))
    if op_ is None:
        op_ = (A(rng.uniform(0.5, 20)), A(int(rng.integers(-50, 50)), i32)) if oax < 0 else \
              (rng.uniform(0.5, 20, of).astype(f32), rng.integers(-50, 50, of).astype(i32))
    attrs, tfa = conv_attrs(strides, padding, pads, ldil, rdil, fgc, bgc, dn)
    attrs.update({"lhs_quantization_axis": lax, "lhs_quantization_min_val": -128, "lhs_quantization_max_val": 127,
                  "rhs_quantization_axis": rax, "rhs_quantization_min_val": -128, "rhs_quantization_max_val": 127,
                  "output_quantization_axis": oax, "output_quantization_min_val": lo, "output_quantization_max_val": hi,
                  "Tout": tf.qint32})
    case("UniformQuantizedConvolution " + name, "UniformQuantizedConvolution",
         [("lhs", l), ("rhs", r), ("lhs_scales", lsc), ("lhs_zero_points", lzp), ("rhs_scales", rp[0]),
          ("rhs_zero_points", rp[1]), ("output_scales", op_[0]), ("output_zero_points", op_[1])], attrs, tf_attrs=tfa)


def HY(name, lshape, rshape, rax=-1, strides=(), padding="VALID", pads=(), ldil=(), rdil=(), fgc=1, bgc=1, dn=None,
       rp=None, l=None, r=None):
    lay = layout(dn, len(lshape))
    l = (rng.integers(-32, 33, lshape) / 8).astype(f32) if l is None else l  # short decimal texts
    r = QI8(rshape) if r is None else r
    if rp is None:
        of = rshape[lay[4]] if len(rshape) > lay[4] else 1
        rp = (A(rng.uniform(0.01, 0.5)), A(int(rng.integers(-128, 128)), i32)) if rax < 0 else \
             (rng.uniform(0.01, 0.5, of).astype(f32), rng.integers(-128, 128, of).astype(i32))
    attrs, tfa = conv_attrs(strides, padding, pads, ldil, rdil, fgc, bgc, dn)
    attrs.update({"rhs_quantization_axis": rax, "rhs_quantization_min_val": -128, "rhs_quantization_max_val": 127,
                  "Tout": tf.float32})
    case("UniformQuantizedConvolutionHybrid " + name, "UniformQuantizedConvolutionHybrid",
         [("lhs", l), ("rhs", r), ("rhs_scales", rp[0]), ("rhs_zero_points", rp[1])], attrs, tf_attrs=tfa)


def geometry(F):
    """the attrs, each op the same way (F is CONV or HY; rax/oax per-channel on the default layout)"""
    pc = {"rax": 0} if F is HY else {"rax": 0, "oax": 1}
    for pad in ("VALID", "SAME"):
        F("2d %s" % pad, [2, 3, 5, 6], [4, 3, 3, 2], padding=pad)
        F("2d %s per-channel" % pad, [2, 3, 5, 6], [4, 3, 3, 2], padding=pad, **pc)
        F("2d %s strides" % pad, [1, 2, 7, 6], [3, 2, 3, 3], padding=pad, strides=(2, 3), **pc)
        F("2d %s lhs_dilation" % pad, [1, 2, 4, 3], [2, 2, 2, 3], padding=pad, ldil=(2, 3))
        F("2d %s rhs_dilation" % pad, [1, 2, 7, 6], [2, 2, 3, 2], padding=pad, rdil=(2, 3), **pc)
        F("2d %s all" % pad, [2, 2, 6, 7], [3, 2, 2, 3], padding=pad, strides=(2, 1), ldil=(1, 2), rdil=(2, 1), **pc)
    F("2d explicit", [2, 3, 4, 5], [2, 3, 3, 3], padding="EXPLICIT", pads=(1, 2, 0, 3), **pc)
    F("2d explicit all", [1, 2, 4, 4], [3, 2, 2, 2], padding="EXPLICIT", pads=(2, 0, 1, 1), strides=(2, 2), ldil=(2, 1),
      rdil=(1, 2))
    F("2d explicit zero", [1, 1, 3, 3], [1, 1, 3, 3], padding="EXPLICIT", pads=(0, 0, 0, 0))
    F("feature groups 3", [2, 6, 4, 4], [6, 2, 2, 2], fgc=3, **pc)
    F("feature groups depthwise", [1, 4, 5, 5], [8, 1, 3, 3], fgc=4, padding="SAME", **pc)
    F("batch groups 2", [4, 3, 4, 4], [4, 3, 2, 2], bgc=2, **pc)
    F("batch groups 3 strided", [6, 2, 5, 5], [6, 2, 3, 3], bgc=3, strides=(2, 2), padding="SAME")
    F("1d", [3, 4, 9], [5, 4, 3], padding="SAME", strides=(2,), **pc)
    F("1d rhs_dilation", [2, 2, 10], [3, 2, 4], rdil=(3,))
    # explicit strides: TF caches the kernel per attrs, and its first call ("2d SAME") filled the empty list for rank 4
    F("3d", [1, 2, 4, 3, 5], [3, 2, 2, 2, 3], padding="SAME", strides=(1, 1, 1), **pc)
    F("3d strides dilation", [2, 1, 5, 4, 4], [2, 1, 2, 2, 2], strides=(2, 1, 2), ldil=(1, 2, 1), rdil=(2, 1, 1))
    F("1x1", [2, 5, 3, 3], [7, 5, 1, 1], **pc)
    F("kernel larger than input VALID", [1, 2, 2, 2], [1, 2, 3, 3])
    F("kernel larger than input SAME", [1, 2, 2, 2], [2, 2, 3, 3], padding="SAME")
    F("nhwc", [2, 5, 6, 3], [3, 2, 3, 4], dn=NHWC, padding="SAME", **({"rax": 3} if F is HY else {"rax": 3, "oax": 3}))
    F("nhwc groups", [1, 4, 4, 4], [2, 2, 2, 6], dn=NHWC, fgc=2, rax=3)
    F("odd layout", [3, 2, 2, 4], [2, 3, 4, 2], dn=ODD, padding="SAME", strides=(2, 1))
    F("odd layout per-channel", [2, 5, 1, 4], [2, 3, 5, 1], dn=ODD, **({"rax": 1} if F is HY else {"rax": 1, "oax": 2}))
    # empty tensors
    F("empty batch", [0, 2, 3, 3], [2, 2, 2, 2])
    F("empty spatial", [1, 2, 0, 3], [2, 2, 1, 1])
    F("empty out features", [1, 2, 3, 3], [0, 2, 2, 2])
    # an lhs feature size of 0 (so rhs input features 0): TF dies of SIGFPE; the C test checks it is refused


def conv():
    geometry(CONV)
    x, w = [2, 3, 4, 4], [2, 3, 2, 2]
    # edge values: the ranges' ends, zero point extremes, output clamps, int32 wrapping
    ends = Q(np.resize([-128, 127], 2 * 3 * 4 * 4).reshape(x), tf.qint8)
    wends = Q(np.resize([127, -128, -128], 2 * 3 * 2 * 2).reshape(w), tf.qint8)
    CONV("ends zp 127 -128", x, w, l=ends, r=wends, lp=(A(0.5), A(127, i32)), rp=(A(0.25), A(-128, i32)),
         op_=(A(1.0), A(0, i32)))
    CONV("ends zp -128 127", x, w, l=ends, r=wends, lp=(A(0.5), A(-128, i32)), rp=(A(0.25), A(127, i32)),
         op_=(A(3.0), A(-7, i32)))
    CONV("ends per-channel", x, w, rax=0, oax=1, l=ends, r=wends, lp=(A(0.5), A(-128, i32)),
         rp=(A([0.25, 1e-3]), A([127, -128], i32)), op_=(A([1.0, 1e-4]), A([0, 100], i32)))
    CONV("output clamp", x, w, rax=0, lo=-100, hi=250)
    CONV("output clamp qint8 range", x, w, lo=-128, hi=127, op_=(A(0.01), A(3, i32)))
    CONV("huge zero points wrap", x, w, lp=(A(1.0), A(2**31 - 1, i32)), rp=(A(1.0), A(-2**31, i32)),
         op_=(A(1.0), A(0, i32)))
    CONV("per-channel rhs, per-tensor output", x, w, rax=0, oax=-1)
    CONV("tiny multiplier", x, w, lp=(A(1e-10), A(0, i32)), rp=(A(1e-10), A(0, i32)), op_=(A(1.0), A(0, i32)))
    CONV("big multiplier", x, w, lp=(A(1e4), A(0, i32)), rp=(A(1e4), A(0, i32)), op_=(A(1e-3), A(0, i32)))
    # errors
    CONV("err lhs axis", x, w, lax=0)
    CONV("err lhs scale 0", x, w, lp=(A(0.0), A(0, i32)))
    CONV("err rhs scale negative", x, w, rax=0, rp=(A([1.0, -1.0]), A([0, 0], i32)))
    CONV("err output scale 0", x, w, op_=(A(0.0), A(0, i32)))
    CONV("err lhs scales vector", x, w, lp=(A([1.0]), A([0], i32)))
    CONV("err rhs axis 1", x, w, rax=1, rp=(A([1.0] * 3), A([0] * 3, i32)))
    CONV("err rhs scales size", x, w, rax=0, rp=(A([1.0] * 3), A([0] * 3, i32)))
    CONV("err rhs zero points shape", x, w, rp=(A(1.0), A([0], i32)))
    CONV("err output axis 2", x, w, rax=0, oax=2, op_=(A([1.0] * 3), A([0] * 3, i32)))
    CONV("err output scales size", x, w, rax=0, oax=1, op_=(A([1.0] * 3), A([0] * 3, i32)))
    CONV("err rhs per-tensor output per-channel", x, w, rax=-1, oax=1)
    CONV("multiplier past 2^30 clamps", x, w, lp=(A(3e38), A(0, i32)), rp=(A(3e38), A(0, i32)), op_=(A(1.0), A(0, i32)))
    errors(CONV)


def errors(F):
    x, w = [2, 3, 2, 2], [2, 3, 1, 1]
    F("err ranks differ", x, [2, 3, 2])
    F("err rank 2", [2, 3], [2, 3])
    F("err padding", x, w, padding="FULL")
    F("err explicit_padding with SAME", x, w, padding="SAME", pads=(1, 1, 1, 1))
    F("err explicit_padding size", x, w, padding="EXPLICIT", pads=(1, 1))
    F("err explicit_padding negative", x, w, padding="EXPLICIT", pads=(1, -1, 0, 0))
    F("err strides size", x, w, strides=(1,))
    F("err strides 0", x, w, strides=(1, 0))
    F("err lhs_dilation size", x, w, ldil=(1, 1, 1))
    F("err lhs_dilation 0", x, w, ldil=(0, 1))
    F("err rhs_dilation -1", x, w, rdil=(-1, 1))
    F("err feature groups 0", x, w, fgc=0)
    F("err feature groups divide", x, w, fgc=2)
    F("err rhs in features divide", x, [2, 2, 1, 1])
    F("err groups in features", [2, 6, 2, 2], [3, 3, 1, 1], fgc=3)
    F("err out features multiple of groups", [2, 6, 2, 2], [4, 2, 1, 1], fgc=3)
    F("err batch groups 0", x, w, bgc=0)
    F("err batch groups divide batch", [3, 3, 2, 2], [3, 3, 1, 1], bgc=2)
    F("err batch groups out features", [4, 3, 2, 2], [3, 3, 1, 1], bgc=2)
    F("err dn batch dim", x, w, dn=dn_bytes(4, 1, [2, 3], 1, 0, [2, 3], 0, 1, [2, 3]))
    F("err dn kernel feature", x, w, dn=dn_bytes(0, 1, [2, 3], 1, -1, [2, 3], 0, 1, [2, 3]))
    F("err dn spatial size", x, w, dn=dn_bytes(0, 1, [2], 1, 0, [2, 3], 0, 1, [2, 3]))
    F("err dn kernel spatial range", x, w, dn=dn_bytes(0, 1, [2, 3], 1, 0, [2, 7], 0, 1, [2, 3]))
    F("err dn output spatial size", x, w, dn=dn_bytes(0, 1, [2, 3], 1, 0, [2, 3], 0, 1, [2, 3, 1]))
    F("err dn output batch", x, w, dn=dn_bytes(0, 1, [2, 3], 1, 0, [2, 3], 9, 1, [2, 3]))
    F("err dn garbage", x, w, dn=b"\x0f\xff")
    F("output size 0 strided", [1, 3, 2, 2], [2, 3, 5, 2], strides=(2, 1))
    F("err negative output size", [1, 3, 2, 2], [2, 3, 5, 2])


def hybrid():
    geometry(HY)
    x, w = [2, 3, 4, 4], [2, 3, 2, 2]
    rows = np.zeros(x, f32)
    rows[0] = rng.uniform(1, 9, x[1:])  # all positive
    rows[1] = rng.uniform(-9, -1, x[1:])  # all negative
    HY("positive and negative batches", x, w, l=rows, padding="SAME")
    z = np.zeros(x, f32)
    z[1, 0, 0, 0] = 1e-30
    HY("zero and tiny batches", x, w, l=z, padding="SAME", rax=0)
    big = rng.uniform(-1e30, 1e30, [1, 3, 3, 3]).astype(f32)
    HY("huge values", [1, 3, 3, 3], w, l=big, rax=0)
    HY("zp extremes", x, w, rax=0, rp=(A([0.1, 1e-5]), A([-128, 127], i32)))
    HY("err rhs axis 1", x, w, rax=1, rp=(A([1.0] * 3), A([0] * 3, i32)))
    HY("err rhs scale 0", x, w, rp=(A(0.0), A(0, i32)))
    HY("err rhs scales shapes", x, w, rp=(A(1.0), A([0], i32)))
    errors(HY)


def resize():
    def RS(name, x, size, mn=-1.0, mx=2.0, ac=False, hpc=False):
        case("QuantizedResizeBilinear %s %s" % (x.dtype.name, name), "QuantizedResizeBilinear",
             [("images", x), ("size", A(size, i32)), ("min", A(mn)), ("max", A(mx))],
             {"align_corners": ac, "half_pixel_centers": hpc})
    for dt in (tf.quint8, tf.qint32, tf.float32):
        def R(shape, lo=None, hi=None):
            if dt == tf.float32:
                return tf.constant((rng.integers(-40, 41, shape) / 8).astype(f32))
            return e7.R(shape, dt, lo, hi)
        for ac, hpc in ((False, False), (True, False), (False, True)):
            m = " ac%d hpc%d" % (ac, hpc)
            RS("up" + m, R([2, 3, 4, 3]), [7, 9], ac=ac, hpc=hpc)
            RS("down" + m, R([1, 8, 7, 2]), [3, 4], ac=ac, hpc=hpc)
            RS("mixed c1" + m, R([1, 5, 3, 1]), [2, 11], ac=ac, hpc=hpc)
            RS("c3 wide" + m, R([1, 4, 4, 3]), [6, 17], ac=ac, hpc=hpc)
            RS("to 1x1" + m, R([1, 4, 5, 2]), [1, 1], ac=ac, hpc=hpc)
            RS("from 1x1" + m, R([2, 1, 1, 3]), [3, 4], ac=ac, hpc=hpc)
        RS("same size", R([1, 3, 4, 2]), [3, 4])
        RS("ends", Q(np.resize([0, 255] if dt == tf.quint8 else [-2**31, 2**31 - 1], 2 * 3 * 3 * 1).reshape(2, 3, 3, 1), dt)
           if dt != tf.float32 else tf.constant(np.resize([-3e38, 3e38, 0], 18).reshape(2, 3, 3, 1).astype(f32)), [5, 4])
        RS("empty batch", R([0, 3, 3, 2]), [4, 4])
        RS("min max any", R([1, 2, 2, 1]), [3, 3], mn=5.0, mx=-7.0)
        RS("err rank", R([3, 3, 2]), [4, 4])
        RS("err size 3", R([1, 3, 3, 2]), [4, 4, 4])
        RS("err size 0", R([1, 3, 3, 2]), [0, 4])
        RS("err empty image", R([1, 0, 3, 2]), [4, 4])
        RS("err no channels", R([1, 3, 3, 0]), [4, 4])
        RS("err align and half", R([1, 3, 3, 2]), [4, 4], ac=True, hpc=True)
        case("QuantizedResizeBilinear %s err min vector" % dt.name, "QuantizedResizeBilinear",
             [("images", R([1, 2, 2, 1])), ("size", A([3, 3], i32)), ("min", A([0.0])), ("max", A(1.0))],
             {"align_corners": False, "half_pixel_centers": False})


def batch_norm():
    def BN(name, x, m, v, b, gm, eps=1e-3, sa=True, ranges=None):
        rg = ranges or [(-1.0, 2.0), (-0.5, 1.5), (0.0, 3.0), (-2.0, 1.0), (0.25, 4.0)]
        ins = []
        for (nm, t), (lo, hi) in zip((("t", x), ("m", m), ("v", v), ("beta", b), ("gamma", gm)), rg):
            ins += [(nm, t), (nm + "_min", A(lo)), (nm + "_max", A(hi))]
        case("QuantizedBatchNormWithGlobalNormalization " + name, "QuantizedBatchNormWithGlobalNormalization", ins,
             {"out_type": tf.qint32, "variance_epsilon": eps, "scale_after_normalization": sa})
    u = tf.quint8
    R = lambda shape: e7.R(shape, u)  # noqa: E731
    for sa in (True, False):
        for eps in (1e-3, 0.0, 10.0):
            BN("c4 sa%d eps%g" % (sa, eps), R([2, 3, 2, 4]), R([4]), R([4]), R([4]), R([4]), eps, sa)
        BN("c2 sa%d" % sa, R([1, 3, 3, 2]), R([2]), R([2]), R([2]), R([2]), sa=sa)
        BN("wide ranges sa%d" % sa, R([1, 2, 3, 5]), R([5]), R([5]), R([5]), R([5]), sa=sa,
           ranges=[(-100.0, 100.0), (-50.0, 50.0), (0.0, 1e-3), (-1e3, 1e3), (-5.0, 5.0)])
        BN("ends sa%d" % sa, Q(np.resize([0, 255], 24).reshape(1, 2, 3, 4), u), Q([0, 255, 0, 255], u), Q([0, 0, 255, 255], u),
           Q([255, 0, 0, 255], u), Q([255, 255, 0, 0], u), sa=sa)
        BN("equal ranges sa%d" % sa, R([1, 2, 2, 3]), R([3]), R([3]), R([3]), R([3]), sa=sa,
           ranges=[(1.0, 1.0), (0.0, 0.0), (2.0, 2.0), (-1.0, -1.0), (0.5, 0.5)])
    BN("var 0 eps 0: inf scale", R([1, 2, 2, 3]), R([3]), Q([0, 0, 5], u), R([3]), R([3]), eps=0.0,
       ranges=[(-1.0, 1.0), (-1.0, 1.0), (0.0, 1.0), (-1.0, 1.0), (-1.0, 1.0)])
    BN("var 0 eps 0 no gamma: inf scale", R([1, 2, 2, 3]), R([3]), Q([0, 0, 5], u), R([3]), R([3]), eps=0.0, sa=False,
       ranges=[(-1.0, 1.0), (-1.0, 1.0), (0.0, 1.0), (-1.0, 1.0), (-1.0, 1.0)])
    BN("negative var: NaN scale", R([2, 2, 2, 3]), R([3]), R([3]), R([3]), R([3]),
       ranges=[(-1.0, 1.0), (-1.0, 1.0), (-1.0, -0.5), (-1.0, 1.0), (-1.0, 1.0)])
    BN("err c1", R([1, 3, 3, 1]), R([1]), R([1]), R([1]), R([1]))
    BN("err mean not last dim", R([1, 2, 3, 4]), R([2]), R([2]), R([2]), R([2]))
    BN("err longer var", R([1, 2, 2, 3]), R([3]), R([5]), R([3]), R([3]))
    BN("err shorter beta", R([1, 2, 2, 3]), R([3]), R([3]), R([2]), R([3]))
    BN("err longer gamma", R([1, 2, 2, 3]), R([3]), R([3]), R([3]), R([4]))
    BN("err input_min vector", R([1, 2, 2, 3]), R([3]), R([3]), R([3]), R([3]), ranges=[([-1.0, 0.0], 1.0)] + [(-1.0, 1.0)] * 4)
    BN("err gamma_max empty", R([1, 2, 2, 3]), R([3]), R([3]), R([3]), R([3]), ranges=[(-1.0, 1.0)] * 4 + [(-1.0, np.zeros([0], f32))])
    BN("input_min [1]", R([1, 2, 2, 3]), R([3]), R([3]), R([3]), R([3]), ranges=[([-1.0], 1.0)] + [(-1.0, 1.0)] * 4)
    BN("empty input", R([0, 2, 2, 3]), R([3]), R([3]), R([3]), R([3]))
    BN("err input rank", R([2, 3, 4]), R([4]), R([4]), R([4]), R([4]))
    BN("err mean rank", R([1, 2, 2, 4]), R([1, 4]), R([4]), R([4]), R([4]))
    BN("err gamma rank", R([1, 2, 2, 4]), R([4]), R([4]), R([4]), R([]))


_fmt = g.fmt_values


def short_fmt(t):
    """float32 values in their shortest round-trip text (the C side compares floats within 1e-6 anyway)"""
    if t.dtype == tf.float32:
        return " ".join(str(np.float32(v)) for v in np.asarray(t).reshape(-1))
    return _fmt(t)


def instance_norm():
    def IN(name, x, mn=-1.0, mx=2.0, **attrs):
        case("QuantizedInstanceNorm " + name, "QuantizedInstanceNorm", [("x", x), ("x_min", A(mn)), ("x_max", A(mx))], attrs)
    u = tf.quint8
    R = lambda shape: e7.R(shape, u)  # noqa: E731
    for shape in ([1, 3, 4, 1], [2, 4, 3, 2], [1, 5, 5, 3], [2, 2, 3, 5], [1, 1, 1, 2], [1, 6, 7, 8], [1, 3, 3, 16]):
        IN("%s" % shape, R(shape))
    IN("eps 1", R([2, 3, 3, 2]), variance_epsilon=1.0)
    IN("eps 0", R([2, 3, 3, 2]), variance_epsilon=0.0)
    IN("constant image, min_separation", Q(np.full([1, 3, 3, 2], 7), u))
    IN("min_separation 10", R([1, 3, 3, 2]), min_separation=10.0)
    IN("given range", R([2, 3, 3, 2]), output_range_given=True, given_y_min=-1.0, given_y_max=2.0)
    IN("given narrow range", R([1, 4, 4, 3]), output_range_given=True, given_y_min=-0.25, given_y_max=0.5)
    IN("given range under min_separation", R([1, 2, 2, 2]), output_range_given=True, given_y_min=0.0, given_y_max=1e-4,
       min_separation=0.5)
    IN("ends", Q(np.resize([0, 255, 255, 0, 128], 2 * 3 * 3 * 2).reshape(2, 3, 3, 2), u), mn=-1e3, mx=1e3)
    IN("tiny range", R([1, 3, 3, 2]), mn=0.0, mx=1e-6)
    IN("empty batch", R([0, 3, 3, 2]))
    IN("err min not below max", R([1, 2, 2, 2]), mn=2.0, mx=2.0)
    IN("err x_min vector", R([1, 2, 2, 2]), mn=[0.0])
    IN("err given range", R([1, 2, 2, 2]), output_range_given=True, given_y_min=1.0, given_y_max=0.0)


def main():
    g.fmt_values = short_fmt
    conv()
    hybrid()
    resize()
    batch_norm()
    instance_norm()
    print("skipped (no TF CPU kernel): %s" % SKIPPED, file=sys.stderr)
    wide = [c for c in g.CASES if len(c[2]) > 8]  # the batch norm's 15 inputs: tests/unit/qbn_cases.h
    g.CASES[:] = [c for c in g.CASES if len(c[2]) <= 8]
    g.write_unit_header("qconv_cases")
    write_wide(wide)


def write_wide(cases):
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit", "qbn_cases.h"))
    lines = ["/* qbn_cases.h - GENERATED by tools/gen_qconv_cases.py from TensorFlow %s; do not edit. */" % tf.__version__,
             "#ifndef SM_TEST_QBN_CASES_H", "#define SM_TEST_QBN_CASES_H", '#include "array_case.h"',
             "typedef struct {", "  const char *name, *node;", "  int nin;", "  tc_tensor in[15];", "  int nout;",
             "  tc_tensor out[3];", "  const char *err;", "} qbn_case;", "static const qbn_case qbn_cases[] = {"]
    for name, node, flat, outs, err in cases:
        assert len(flat) == 15 and len(outs) <= 3
        lines.append("    {%s, %s, %d, {%s}, %d, {%s}, %s}," % (
            g.c_str(name), g.c_str(node), len(flat), ", ".join(g.c_tensor(t) for t in flat), len(outs),
            ", ".join(g.c_tensor(t) for t in outs) or "{0}", g.c_str(err) if err else "NULL"))
    lines += ["};", "#endif", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("wrote %d cases to %s" % (len(cases), path))


if __name__ == "__main__":
    main()
