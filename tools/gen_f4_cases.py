#!/usr/bin/env python3
"""gen_f4_cases.py - writes tests/unit/f4_cases.h: the ops added in session 21 (f4) against
TensorFlow (eager tf.raw_ops, TF's CPU kernels): the tfdbg ops (DebugIdentity/V2/V3,
DebugNanCount, DebugNumericSummary with its bounds, DebugNumericSummaryV2 in every
tensor_debug_mode and output dtype), Copy, CopyHost, DebugGradientIdentity; the TF1 summary ops
that return serialized Summary protos (ScalarSummary, HistogramSummary, TensorSummaryV2,
MergeSummary: byte for byte); FusedPadConv2D and FusedResizeAndPadConv2D. Every dtype the CPU
kernels register, empty tensors, edge values and TF's error messages.

Uses the machinery of tools/gen_array_cases.py. Run: build/venv/bin/python tools/gen_f4_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

NO_KERNEL = []


def case(name, op, inputs, attrs=None, **kw):
    """g.case, with ops TF has no CPU kernel for at these dtypes listed (not written)."""
    try:
        g.case(name, op, inputs, attrs, **kw)
    except tf.errors.NotFoundError:
        NO_KERNEL.append(name)
A = g.A
nan, inf = float("nan"), float("inf")
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
rng = np.random.default_rng(21)
FLOATS = (tf.float32, tf.float64, tf.float16, tf.bfloat16)
INTS = (tf.int8, tf.uint8, tf.int16, tf.uint16, tf.int32, tf.uint32, tf.int64, tf.uint64)


def U(*shape, dt=f32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dt)


def T(vals, dt):
    return tf.cast(tf.constant(np.array(vals, dtype=np.float64)), dt) if dt != tf.bool else tf.constant(np.array(vals) != 0)


TN = {"tensor_name": "x:0"}
SPECIAL = [1.5, -2.0, 0.0, nan, inf, -inf, 3.0, -0.0, 7.25, nan]


def debug():
    x = U(2, 3)
    case("DebugIdentity", "DebugIdentity", [("input", x)], dict(TN, gated_grpc=False))
    case("DebugIdentity string", "DebugIdentity", [("input", np.array([b"a", b"bc"], dtype=object))], TN)
    case("DebugIdentityV2", "DebugIdentityV2", [("input", x)], {"tensor_debug_mode": 2, "op_name": "x"})
    case("DebugIdentityV3", "DebugIdentityV3", [("input", A([1, 2], i64))], {"tensor_name": "t:0"})
    case("CopyHost", "CopyHost", [("input", x)])
    case("Copy", "Copy", [("input", A([True, False], bool))])
    case("DebugGradientIdentity", "DebugGradientIdentity", [("input", x)])
    for dt in FLOATS:
        case("DebugNanCount %s" % dt.name, "DebugNanCount", [("input", T(SPECIAL, dt))], TN)
        case("DebugNumericSummary %s" % dt.name, "DebugNumericSummary", [("input", tf.reshape(T(SPECIAL, dt), [2, 5]))], TN)
        for mode in (2, 3, 4, 5, 8):
            for od in (tf.float32, tf.float64):
                case("DebugNumericSummaryV2 %s mode%d %s" % (dt.name, mode, od.name), "DebugNumericSummaryV2",
                     [("input", tf.reshape(T(SPECIAL, dt), [5, 2]))], {"tensor_debug_mode": mode, "output_dtype": od,
                                                                      "tensor_id": 7})
    for dt in INTS + (tf.bool,):
        v = [1, 0, 3, 1, 0, 2] if dt == tf.bool or dt.is_unsigned else [1, -3, 0, 5, -7, 2]
        case("DebugNanCount %s" % dt.name, "DebugNanCount", [("input", T(v, dt))], TN)
        case("DebugNumericSummary %s" % dt.name, "DebugNumericSummary", [("input", T(v, dt))], TN)
    for mode in (2, 3, 4, 5, 8):
        case("DebugNumericSummaryV2 healthy mode%d" % mode, "DebugNumericSummaryV2", [("input", U(3, 1, 2))],
             {"tensor_debug_mode": mode, "output_dtype": tf.float64, "tensor_id": 3})
        case("DebugNumericSummaryV2 empty mode%d" % mode, "DebugNumericSummaryV2", [("input", np.zeros([0, 3], f32))],
             {"tensor_debug_mode": mode, "output_dtype": tf.float32, "tensor_id": -1})
    case("DebugNumericSummaryV2 rank 8", "DebugNumericSummaryV2", [("input", np.zeros([1, 2, 1, 3, 1, 2, 1, 4], f32))],
         {"tensor_debug_mode": 5, "output_dtype": tf.float32, "tensor_id": 1})
    case("DebugNumericSummaryV2 scalar", "DebugNumericSummaryV2", [("input", A(nan))],
         {"tensor_debug_mode": 4, "output_dtype": tf.float32, "tensor_id": 1})
    case("DebugNumericSummaryV2 big id f32", "DebugNumericSummaryV2", [("input", A([1.0]))],
         {"tensor_debug_mode": 2, "output_dtype": tf.float32, "tensor_id": 2**24 + 1})
    case("DebugNumericSummaryV2 id 2^24", "DebugNumericSummaryV2", [("input", A([1.0]))],
         {"tensor_debug_mode": 2, "output_dtype": tf.float32, "tensor_id": 2**24})
    case("DebugNumericSummaryV2 bad mode", "DebugNumericSummaryV2", [("input", A([1.0]))],
         {"tensor_debug_mode": 6, "output_dtype": tf.float32, "tensor_id": 1})
    for dt in INTS + (tf.bool,):
        case("DebugNumericSummaryV2 %s" % dt.name, "DebugNumericSummaryV2", [("input", T([1, 0, 2], dt))],
             {"tensor_debug_mode": 4, "output_dtype": tf.float32, "tensor_id": 1})
    case("DebugNumericSummary empty", "DebugNumericSummary", [("input", np.zeros([2, 0], f32))], TN)
    case("DebugNumericSummary scalar", "DebugNumericSummary", [("input", A(2.5, f64))], TN)
    case("DebugNumericSummary bounds", "DebugNumericSummary", [("input", A([-5, -1, 0, 1, 2, 5, nan, 3]))],
         dict(TN, lower_bound=-1.0, upper_bound=2.0))
    case("DebugNumericSummary all nan", "DebugNumericSummary", [("input", A([nan, inf, -inf]))], TN)


def S(x):
    return np.array(x, dtype=object)


def summaries():
    REAL = (tf.float32, tf.float64, tf.float16, tf.bfloat16) + INTS
    for dt in REAL:
        v = [1, 0, 3, 250] if dt.is_unsigned else [1.5, -2.0, 0.0, 1e4]
        case("ScalarSummary %s" % dt.name, "ScalarSummary", [("tags", S([b"a", b"b/c", b"", b"d"])), ("values", T(v, dt))])
        case("HistogramSummary %s" % dt.name, "HistogramSummary", [("tag", S(b"h")), ("values", T(v + [3, 3, 7], dt))])
    case("ScalarSummary scalar", "ScalarSummary", [("tags", S(b"loss")), ("values", A(0.25))])
    case("ScalarSummary specials", "ScalarSummary", [("tags", S([b"a", b"b", b"c", b"d"])), ("values", A([nan, inf, -inf, -0.0]))])
    case("ScalarSummary 2-D", "ScalarSummary", [("tags", S([[b"a", b"b"], [b"c", b"d"]])), ("values", A([[1, 2], [3, 4]], f64))])
    case("ScalarSummary empty", "ScalarSummary", [("tags", S([]).reshape(0)), ("values", np.zeros([0], f32))])
    case("ScalarSummary big int64", "ScalarSummary", [("tags", S([b"a", b"b"])), ("values", A([2**62 + 12345, -(2**40) - 1], i64))])
    case("ScalarSummary err shape", "ScalarSummary", [("tags", S([b"a", b"b"])), ("values", A([1.0, 2.0, 3.0]))])
    case("ScalarSummary err scalar tag", "ScalarSummary", [("tags", S(b"t")), ("values", A([1.0, 2.0]))])
    case("HistogramSummary random", "HistogramSummary", [("tag", S(b"w")), ("values", U(200, lo=-3, hi=3))])
    case("HistogramSummary wide", "HistogramSummary",
         [("tag", S(b"w")), ("values", A([1e-13, -1e-13, 0.0, -0.0, 1e-12, 1.1e-12, 5e19, -5e19, 1e21, 1.7e308, -1.7e308], f64))])
    case("HistogramSummary empty", "HistogramSummary", [("tag", S(b"e")), ("values", np.zeros([0, 2], f32))])
    case("HistogramSummary zeros", "HistogramSummary", [("tag", S(b"z")), ("values", np.zeros([3], f32))])
    case("HistogramSummary negatives", "HistogramSummary", [("tag", S(b"n")), ("values", A([-1.0, -2.0, -3.5]))])
    case("HistogramSummary err nan", "HistogramSummary", [("tag", S(b"n")), ("values", A([1.0, nan]))],
         err_needle="Nan in summary histogram for: ")
    case("HistogramSummary err inf", "HistogramSummary", [("tag", S(b"n")), ("values", A([1.0, -inf]))],
         err_needle="Infinity in Histogram for: ")
    case("HistogramSummary err tag", "HistogramSummary", [("tag", S([b"a"])), ("values", A([1.0]))])
    md = tf.compat.v1.SummaryMetadata(display_name="d", summary_description="desc")
    md.plugin_data.plugin_name = "scalars"
    md.plugin_data.content = b"\x08\x01"
    mds = md.SerializeToString()
    for dt in REAL + (tf.bool,):
        case("TensorSummaryV2 %s" % dt.name, "TensorSummaryV2",
             [("tag", S(b"t")), ("tensor", T([[1, 0, 3], [2, 5, 0]], dt)), ("serialized_summary_metadata", S(mds))])
    case("TensorSummaryV2 string", "TensorSummaryV2",
         [("tag", S(b"txt")), ("tensor", S([b"hello", b"", b"w"])), ("serialized_summary_metadata", S(b""))])
    case("TensorSummaryV2 scalar", "TensorSummaryV2",
         [("tag", S(b"")), ("tensor", A(3.5)), ("serialized_summary_metadata", S(mds))])
    case("TensorSummaryV2 empty", "TensorSummaryV2",
         [("tag", S(b"e")), ("tensor", np.zeros([2, 0, 3], f32)), ("serialized_summary_metadata", S(mds))])
    case("TensorSummaryV2 complex", "TensorSummaryV2",
         [("tag", S(b"c")), ("tensor", np.array([1 + 2j, -3j], np.complex64)), ("serialized_summary_metadata", S(b""))])
    a = tf.raw_ops.ScalarSummary(tags=[b"a", b"b"], values=[1.0, 2.0]).numpy()
    h = tf.raw_ops.HistogramSummary(tag=b"h", values=[1.0, 2.0]).numpy()
    t = tf.raw_ops.TensorSummaryV2(tag=b"", tensor=[1.0], serialized_summary_metadata=b"").numpy()
    b = tf.raw_ops.ScalarSummary(tags=[b"c"], values=[3.0]).numpy()
    dup = tf.raw_ops.ScalarSummary(tags=[b"b"], values=[9.0]).numpy()
    # TensorSummary writes its node's name: TF in a graph whose node is "y", as the test names it
    for name, val in (("float", A([[1.5, -2.0]])), ("string", S([b"ab", b""])), ("int64 empty", np.zeros([0], i64))):
        gr = tf.Graph()
        with gr.as_default():
            ph = tf.compat.v1.placeholder(tf.as_dtype(val.dtype) if val.dtype != object else tf.string, name="i0")
            y = tf.raw_ops.TensorSummary(tensor=ph, description="d", display_name="n", name="y")
            with tf.compat.v1.Session(graph=gr) as sess:
                out = sess.run(y, {ph: val})
        dt = tf.string if val.dtype == object else tf.as_dtype(val.dtype)
        g.CASES.append(("TensorSummary " + name, 'op: "TensorSummary" %s' % g.attr_text("T", dt), [tf.constant(val, dt)],
                        [tf.constant(out)], None))
    case("MergeSummary", "MergeSummary", [("inputs", [S(a), S([h, t]), S([b, t])])])
    case("MergeSummary one", "MergeSummary", [("inputs", [S(a)])])
    case("MergeSummary empty strings", "MergeSummary", [("inputs", [S([b"", b""]), S(np.zeros([0], object))])])
    case("MergeSummary err dup", "MergeSummary", [("inputs", [S(a), S([b, dup])])])
    case("MergeSummary err dup in one", "MergeSummary", [("inputs", [S([b, b])])])
    case("MergeSummary err parse", "MergeSummary", [("inputs", [S(a), S(b"\x0a\x05ab")])])
    case("MergeSummary err garbage", "MergeSummary", [("inputs", [S(b"\xff\xff\xff")])])
    case("MergeSummary err bad utf8 tag", "MergeSummary", [("inputs", [S(b"\x0a\x04\x0a\x02\xc3\x28")])])


def unfused(x, size, paddings, w, mode, strides, padding, align):
    """What the fused ops stand for: (resize,) MirrorPad, Conv2D, each TF's own op."""
    t = tf.constant(x)
    if size is not None:
        t = tf.cast(tf.raw_ops.ResizeBilinear(images=t, size=size, align_corners=align), t.dtype)
    t = tf.raw_ops.MirrorPad(input=t, paddings=paddings, mode=mode)
    return tf.raw_ops.Conv2D(input=t, filter=w, strides=strides, padding=padding)


def ref_case(name, op, inputs, attrs, ref):
    """A case whose expected output is `ref` (TF's unfused ops) rather than the fused op's: TF 2.21's
    FusedPadConv2D / FusedResizeAndPadConv2D give batch 0's result for every batch (checked here)."""
    case(name, op, inputs, attrs)
    nm, node, flat, outs, err = g.CASES[-1]
    got = outs[0].numpy()
    assert np.array_equal(got, np.broadcast_to(got[:1], got.shape)), "TF's fused op no longer repeats batch 0"
    g.CASES[-1] = (nm + " [unfused ref]", node, flat, [ref], err)


def pad_conv():
    P = lambda a: A(a, i32)  # noqa: E731
    for dt in (f32, f64, np.float16):
        x, w = U(1, 5, 6, 3, dt=dt), U(3, 2, 3, 4, dt=dt)
        for mode in ("REFLECT", "SYMMETRIC"):
            for padding, strides in (("VALID", [1, 1, 1, 1]), ("SAME", [1, 2, 1, 1]), ("SAME", [1, 2, 3, 1])):
                nm = "%s %s %s s%d%d" % (np.dtype(dt).name, mode, padding, strides[1], strides[2])
                case("FusedPadConv2D " + nm, "FusedPadConv2D",
                     [("input", x), ("paddings", P([[0, 0], [1, 2], [2, 1], [0, 0]])), ("filter", w)],
                     {"mode": mode, "strides": strides, "padding": padding})
                if dt == np.float16:  # TF's half kernel sums in half: the float op's result, rounded, is the reference
                    r = tf.raw_ops.FusedPadConv2D(input=x.astype(f32), paddings=P([[0, 0], [1, 2], [2, 1], [0, 0]]), filter=w.astype(f32),
                                                  mode=mode, strides=strides, padding=padding)
                    nm_, node, flat, outs, err = g.CASES[-1]
                    g.CASES[-1] = (nm_ + " [f32 ref]", node, flat, [tf.cast(r, tf.float16)], err)
                for align in (False, True):
                    case("FusedResizeAndPadConv2D %s align%d" % (nm, align), "FusedResizeAndPadConv2D",
                         [("input", x), ("size", P([7, 4])), ("paddings", P([[0, 0], [2, 1], [1, 3], [0, 0]])), ("filter", w)],
                         {"mode": mode, "strides": strides, "padding": padding, "resize_align_corners": align})
                    if dt == np.float16:
                        r = tf.raw_ops.FusedResizeAndPadConv2D(
                            input=x.astype(f32), size=P([7, 4]), paddings=P([[0, 0], [2, 1], [1, 3], [0, 0]]), filter=w.astype(f32),
                            mode=mode, strides=strides, padding=padding, resize_align_corners=align)
                        nm_, node, flat, outs, err = g.CASES[-1]
                        g.CASES[-1] = (nm_ + " [f32 ref]", node, flat, [tf.cast(r, tf.float16)], err)
    x, w = U(1, 4, 4, 2), U(2, 2, 2, 3)
    base = {"mode": "REFLECT", "strides": [1, 1, 1, 1], "padding": "VALID"}
    xb, wb = U(3, 5, 6, 3), U(3, 2, 3, 4)
    pads = [[0, 0], [1, 2], [2, 1], [0, 0]]
    for mode in ("REFLECT", "SYMMETRIC"):
        attrs = {"mode": mode, "strides": [1, 2, 1, 1], "padding": "SAME"}
        ref_case("FusedPadConv2D batch 3 " + mode, "FusedPadConv2D", [("input", xb), ("paddings", P(pads)), ("filter", wb)], attrs,
                 unfused(xb, None, pads, wb, mode, [1, 2, 1, 1], "SAME", False))
        for align in (False, True):
            ref_case("FusedResizeAndPadConv2D batch 3 %s align%d" % (mode, align), "FusedResizeAndPadConv2D",
                     [("input", xb), ("size", P([7, 4])), ("paddings", P(pads)), ("filter", wb)],
                     dict(attrs, resize_align_corners=align), unfused(xb, [7, 4], pads, wb, mode, [1, 2, 1, 1], "SAME", align))
    case("FusedPadConv2D no pad", "FusedPadConv2D", [("input", x), ("paddings", P([[0, 0]] * 4)), ("filter", w)], base)
    case("FusedPadConv2D empty batch", "FusedPadConv2D", [("input", np.zeros([0, 4, 4, 2], f32)), ("paddings", P([[0, 0]] * 4)),
                                                          ("filter", w)], base)
    case("FusedPadConv2D filter too big", "FusedPadConv2D", [("input", x), ("paddings", P([[0, 0]] * 4)), ("filter", U(6, 2, 2, 3))], base)
    case("FusedPadConv2D err reflect", "FusedPadConv2D", [("input", x), ("paddings", P([[0, 0], [4, 0], [0, 0], [0, 0]])), ("filter", w)], base)
    case("FusedPadConv2D err symmetric", "FusedPadConv2D", [("input", x), ("paddings", P([[0, 0], [0, 0], [0, 5], [0, 0]])),
                                                            ("filter", w)], dict(base, mode="SYMMETRIC"))
    case("FusedPadConv2D symmetric full", "FusedPadConv2D", [("input", x), ("paddings", P([[0, 0], [4, 4], [0, 4], [0, 0]])),
                                                             ("filter", w)], dict(base, mode="SYMMETRIC"))
    case("FusedPadConv2D err negative", "FusedPadConv2D", [("input", x), ("paddings", P([[0, 0], [-1, 0], [0, 0], [0, 0]])),
                                                           ("filter", w)], base)
    case("FusedPadConv2D err depth", "FusedPadConv2D", [("input", x), ("paddings", P([[0, 0]] * 4)), ("filter", U(2, 2, 3, 3))], base)
    case("FusedResizeAndPadConv2D upscale", "FusedResizeAndPadConv2D",
         [("input", x), ("size", P([9, 10])), ("paddings", P([[0, 0], [3, 3], [2, 2], [0, 0]])), ("filter", w)],
         dict(base, resize_align_corners=True))
    case("FusedResizeAndPadConv2D downscale", "FusedResizeAndPadConv2D",
         [("input", U(1, 9, 7, 2)), ("size", P([3, 2])), ("paddings", P([[0, 0], [1, 1], [1, 1], [0, 0]])), ("filter", w)],
         dict(base, resize_align_corners=False))


def main():
    debug()
    summaries()
    pad_conv()
    g.write_unit_header("f4_cases")
    print("no TF CPU kernel:", ", ".join(NO_KERNEL))


if __name__ == "__main__":
    main()
