#!/usr/bin/env python3
"""gen_f2_cases.py - writes tests/unit/f2_cases.h: the forward ops of TF's public API added in
session 21 (f2) against TensorFlow (eager tf.raw_ops, TF's CPU kernels): the generic N-d Conv
(every dtype its CPU kernel registers, batch_dims, paddings incl. EXPLICIT, strides, dilations,
empty tensors and TF's error messages).

Uses the machinery of tools/gen_array_cases.py. test_ops_f2 compares floats within 1e-5 relative
(half/bfloat16 at their own precision). Run: build/venv/bin/python tools/gen_f2_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
A = g.A
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
rng = np.random.default_rng(21)


def U(*shape, dt=f32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dt)


def I(*shape, lo=-5, hi=6):
    return rng.integers(lo, hi, shape).astype(i32)


def conv():
    def c(name, x, f, strides, padding, **attrs):
        a = {"strides": strides, "padding": padding}
        a.update(attrs)
        case("Conv " + name, "Conv", [("input", x), ("filter", f)], a)

    # 2-D, every dtype
    for dt in (f32, f64, np.float16):
        c("2d %s same" % np.dtype(dt).name, U(2, 5, 6, 3, dt=dt), U(3, 3, 3, 4, dt=dt), [1, 1, 1, 1], "SAME")
    bx, bf = U(2, 5, 6, 3), U(3, 3, 3, 4)
    c("2d bfloat16", tf.cast(bx, tf.bfloat16), tf.cast(bf, tf.bfloat16), [1, 1, 1, 1], "VALID")
    c("2d int32", I(2, 5, 6, 3), I(3, 3, 3, 4), [1, 1, 1, 1], "SAME")
    c("2d int32 wraps", A([[[[2**30]], [[3]]]], i32).reshape(1, 2, 1, 1), A([[[[4]]], [[[2**30 + 1]]]], i32), [1, 1, 1, 1],
      "VALID")
    # strides, dilations, paddings
    x, f = U(2, 9, 8, 3), U(3, 2, 3, 5)
    c("2d stride 2,3 same", x, f, [1, 2, 3, 1], "SAME")
    c("2d stride 2,3 valid", x, f, [1, 2, 3, 1], "VALID")
    c("2d dilation 2,1 same", x, f, [1, 1, 1, 1], "SAME", dilations=[1, 2, 1, 1])
    c("2d dilation 2,3 stride 2 valid", x, f, [1, 2, 1, 1], "VALID", dilations=[1, 2, 3, 1])
    c("2d explicit", x, f, [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[0, 0, 1, 2, 0, 3, 0, 0])
    c("2d explicit stride dil", x, f, [1, 2, 2, 1], "EXPLICIT", explicit_paddings=[0, 0, 2, 0, 1, 1, 0, 0], dilations=[1, 2, 2, 1])
    c("2d explicit f64", x.astype(f64), f.astype(f64), [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[0, 0, 0, 1, 2, 0, 0, 0])
    c("2d explicit int32", I(1, 4, 4, 2), I(2, 2, 2, 3), [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[0, 0, 1, 1, 1, 1, 0, 0])
    c("2d 1x1", x, U(1, 1, 3, 4), [1, 1, 1, 1], "VALID")
    c("2d full window", x, U(9, 8, 3, 2), [1, 1, 1, 1], "VALID")
    c("2d CHANNELS_LAST named", x, f, [1, 1, 1, 1], "SAME", data_format="CHANNELS_LAST")
    c("2d int32 dilation stride", I(1, 7, 7, 2), I(2, 3, 2, 2), [1, 2, 1, 1], "SAME", dilations=[1, 1, 2, 1])
    # batch_dims
    c("2d batch_dims 2", U(2, 3, 5, 5, 2), U(3, 3, 2, 3), [1, 1, 1, 1], "SAME", batch_dims=2)
    c("2d batch_dims 3", U(2, 1, 2, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", batch_dims=3)
    c("2d batch_dims 0", U(4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", batch_dims=0)
    c("3d batch_dims 2", U(2, 2, 4, 3, 4, 2), U(2, 2, 2, 2, 3), [1, 1, 1, 1, 1], "SAME", batch_dims=2)
    # 3-D
    for dt in (f32, f64, np.float16):
        c("3d %s valid" % np.dtype(dt).name, U(2, 4, 5, 4, 3, dt=dt), U(2, 3, 2, 3, 4, dt=dt), [1, 1, 1, 1, 1], "VALID")
    c("3d bfloat16", tf.cast(U(1, 4, 4, 4, 2), tf.bfloat16), tf.cast(U(2, 2, 2, 2, 3), tf.bfloat16), [1, 1, 1, 1, 1], "SAME")
    c("3d int32", I(1, 4, 4, 4, 2), I(2, 2, 2, 2, 3), [1, 1, 1, 1, 1], "SAME")
    c("3d stride same", U(1, 5, 4, 6, 2), U(3, 2, 3, 2, 3), [1, 2, 1, 3, 1], "SAME")
    c("3d stride valid", U(2, 5, 4, 6, 2), U(3, 2, 3, 2, 3), [1, 2, 2, 2, 1], "VALID")
    c("3d dilations 1", U(1, 4, 4, 4, 2), U(2, 2, 2, 2, 3), [1, 1, 1, 1, 1], "VALID", dilations=[1, 1, 1, 1, 1])
    # empty
    c("2d empty batch", U(0, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "SAME")
    c("2d empty output", U(1, 1, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID")
    c("2d empty input explicit pad", U(1, 0, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[0, 0, 1, 1, 0, 0, 0, 0])
    c("2d empty out channels", U(1, 4, 4, 2), U(2, 2, 2, 0), [1, 1, 1, 1], "SAME")
    c("2d empty batch dims", U(2, 0, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "SAME", batch_dims=2)
    c("2d empty output batch_dims 0", U(1, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", batch_dims=0)
    c("2d empty input batch_dims 2", U(2, 3, 0, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "EXPLICIT", batch_dims=2,
      explicit_paddings=[0, 0, 2, 1, 0, 0, 0, 0])
    c("3d empty input batch_dims 2", U(2, 1, 2, 0, 3, 2), U(2, 2, 2, 2, 3), [1, 1, 1, 1, 1], "SAME", batch_dims=2)
    c("nchw empty", U(0, 2, 4, 4), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", data_format="CHANNELS_FIRST")
    # errors
    c("nchw 2d", U(1, 2, 4, 4), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", data_format="CHANNELS_FIRST")
    c("nchw 3d", U(1, 2, 4, 4, 4), U(2, 2, 2, 2, 3), [1, 1, 1, 1, 1], "VALID", data_format="CHANNELS_FIRST")
    c("nchw depth", U(1, 0, 4, 4), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", data_format="CHANNELS_FIRST")
    c("3d dilated", U(1, 4, 4, 4, 2), U(2, 2, 2, 2, 3), [1, 1, 1, 1, 1], "VALID", dilations=[1, 2, 1, 1, 1])
    c("1 spatial dim", U(2, 5, 3), U(3, 3, 4), [1, 1, 1], "VALID")
    c("4 spatial dims", U(1, 3, 3, 3, 3, 2), U(2, 2, 2, 2, 2, 2), [1] * 6, "VALID")
    c("batch_dims -1", U(2, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", batch_dims=-1)
    c("empty filter", U(1, 4, 4, 2), U(2, 0, 2, 3), [1, 1, 1, 1], "VALID")
    c("depth mismatch", U(1, 4, 4, 2), U(2, 2, 3, 3), [1, 1, 1, 1], "VALID")
    c("depth grouped", U(1, 4, 4, 4), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID")
    c("strides length", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1], "VALID")
    c("strides batch", U(1, 4, 4, 2), U(2, 2, 2, 3), [2, 1, 1, 1], "VALID")
    c("strides depth", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 2], "VALID")
    c("strides zero", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 0, 1, 1], "VALID")
    c("strides negative", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, -1, 1], "VALID")
    c("dilations length", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", dilations=[1, 1, 1])
    c("dilations depth", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", dilations=[1, 1, 1, 2])
    c("dilations zero", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", dilations=[1, 0, 1, 1])
    c("explicit length", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[0, 0, 1, 1, 1, 1])
    c("explicit negative", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[0, 0, -1, 1, 1, 1, 0, 0])
    c("explicit depth", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[0, 0, 1, 1, 1, 1, 0, 1])
    c("explicit batch", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "EXPLICIT", explicit_paddings=[1, 0, 1, 1, 1, 1, 0, 0])
    c("explicit with SAME", U(1, 4, 4, 2), U(2, 2, 2, 3), [1, 1, 1, 1], "SAME", explicit_paddings=[0, 0, 1, 1, 1, 1, 0, 0])
    c("window too big", U(1, 2, 4, 2), U(3, 2, 2, 3), [1, 1, 1, 1], "VALID", dilations=[1, 2, 1, 1])
    c("groups 2", U(1, 4, 4, 4), U(2, 2, 2, 3), [1, 1, 1, 1], "VALID", groups=2)
    c("filter rank 3", U(1, 4, 4, 2), U(2, 2, 2), [1, 1, 1, 1], "VALID")


def sparse_bincount():
    def c(name, ix, vals, shape, size, w, **attrs):
        vals = np.asarray(vals)
        tid = i64 if vals.dtype == np.int64 else i32
        case("SparseBincount " + name, "SparseBincount",
             [("indices", A(ix, i64).reshape(len(ix), -1) if np.size(ix) else np.zeros((0, len(shape)), i64)), ("values", vals.astype(tid)),
              ("dense_shape", A(shape, i64)), ("size", A(size, tid)), ("weights", w)], attrs)

    ix = [[0, 0], [0, 3], [1, 1], [1, 2], [2, 0], [2, 4], [0, 5]]
    vals = [1, 3, 1, 0, 4, 4, 1]
    for tid in (i32, i64):
        for dt in (f32, f64, i32, i64):
            n = "%s/%s" % (np.dtype(tid).name, np.dtype(dt).name)
            c("2d count " + n, ix, A(vals, tid), [3, 6], 5, np.zeros(0, dt))
            c("2d weights " + n, ix, A(vals, tid), [3, 6], 5, A([1.5, -2, 3, 4.25, 5, 6, 7], dt))
            c("2d binary " + n, ix, A(vals, tid), [3, 6], 5, A([1.5, -2, 3, 4.25, 5, 6, 7], dt), binary_output=True)
            c("1d weights " + n, [[i] for i in range(7)], A(vals, tid), [7], 4, A([1.5, -2, 3, 4.25, 5, 6, 7], dt))
    c("1d count drops big", [[0], [1], [2], [3], [4]], A([0, 1, 9, 2, 2], i32), [5], 3, np.zeros(0, f32))
    c("1d binary", [[0], [1], [2], [3], [4]], A([0, 1, 9, 2, 2], i64), [5], 3, np.zeros(0, i64), binary_output=True)
    c("1d size 0", [[0], [1]], A([0, 1], i32), [2], 0, np.zeros(0, f32))
    c("2d more weights", [[0, 1]], A([1], i32), [2, 2], 3, A([1.5, 2], f32))
    c("1d empty", [], A([], i32), [0], 3, np.zeros(0, f32))
    c("2d empty", [], A([], i64), [2, 4], 3, np.zeros(0, f64))
    c("2d zero rows", [], A([], i32), [0, 4], 3, np.zeros(0, f32))
    c("2d size 0 empty", [], A([], i32), [2, 4], 0, np.zeros(0, f32))
    c("3d dense_shape", [[0, 1, 2], [1, 0, 0]], A([2, 1], i32), [2, 2, 3], 3, A([0.5, 2], f32))
    c("1d negative", [[0], [1]], A([0, -1], i32), [2], 3, np.zeros(0, f32))
    c("index negative", [[0, -1]], A([1], i32), [2, 2], 3, np.zeros(0, f32))
    c("dense_shape negative", [[0, 1]], A([1], i32), [-1, 2], 3, np.zeros(0, f32))
    c("values count", [[0, 1], [1, 1]], A([1], i32), [2, 2], 3, np.zeros(0, f32))
    c("index rank", [[0, 1]], A([1], i32), [2, 2, 2], 3, np.zeros(0, f32))
    c("size negative", ix, A(vals, i32), [3, 6], -1, np.zeros(0, f32))
    c("batch out of range", ix, A(vals, i32), [2, 6], 5, np.zeros(0, f32))
    c("bin out of range", ix, A(vals, i32), [3, 6], 4, np.zeros(0, f32))
    case("SparseBincount size rank 1", "SparseBincount", [("indices", np.zeros((0, 2), i64)), ("values", A([], i32)),
         ("dense_shape", A([2, 3], i64)), ("size", A([3], i32)), ("weights", np.zeros(0, f32))])


def jpeg():
    img = rng.integers(0, 256, (5, 7, 3)).astype(np.uint8)
    gray = rng.integers(0, 256, (9, 4, 1)).astype(np.uint8)
    j3, j1 = tf.io.encode_jpeg(img), tf.io.encode_jpeg(gray)
    big = tf.io.encode_jpeg(np.zeros((300, 1, 3), np.uint8), progressive=True)
    for name, j in (("rgb", j3), ("gray", j1), ("progressive tall", big)):
        case("ExtractJpegShape " + name, "ExtractJpegShape", [("contents", j)])
        case("ExtractJpegShape %s int64" % name, "ExtractJpegShape", [("contents", j)], {"output_type": tf.int64})
    for name, b in (("empty", b""), ("not jpeg", b"abc"), ("truncated", j3.numpy()[:20]), ("png", tf.io.encode_png(img).numpy())):
        case("ExtractJpegShape " + name, "ExtractJpegShape", [("contents", np.array(b, dtype=object))])
    case("ExtractJpegShape vector", "ExtractJpegShape", [("contents", np.array([j3.numpy()], dtype=object))])
    for q in (0, 1, 50, 75, 95, 100):
        case("EncodeJpegVariableQuality rgb q%d" % q, "EncodeJpegVariableQuality", [("images", img), ("quality", A(q, i32))])
    case("EncodeJpegVariableQuality gray", "EncodeJpegVariableQuality", [("images", gray), ("quality", A(33, i32))])
    for q in (-1, 101):
        case("EncodeJpegVariableQuality q%d" % q, "EncodeJpegVariableQuality", [("images", img), ("quality", A(q, i32))])
    case("EncodeJpegVariableQuality 2 channels", "EncodeJpegVariableQuality", [("images", img[:, :, :2]), ("quality", A(50, i32))])
    case("EncodeJpegVariableQuality rank 2", "EncodeJpegVariableQuality", [("images", img[0]), ("quality", A(50, i32))])
    case("EncodeJpegVariableQuality quality vector", "EncodeJpegVariableQuality", [("images", img), ("quality", A([50], i32))])


def main():
    conv()
    sparse_bincount()
    jpeg()
    g.write_unit_header("f2_cases")


if __name__ == "__main__":
    main()
