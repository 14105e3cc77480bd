#!/usr/bin/env python3
"""gen_f1_cases.py - writes tests/unit/f1_cases.h: the gradient ops added in session 21 (f1) against
TensorFlow (eager tf.raw_ops, TF's CPU kernels): IgammaGradA and RandomGammaGrad (float, double,
broadcasting, both of Eigen's branches, edge values), CholeskyGrad (batched, only lower triangles
read), QuantizeAndDequantizeV4Grad (per tensor and per axis), CropAndResizeGradImage (bilinear and
nearest, T float/half/double) and CropAndResizeGradBoxes (every image dtype), with TF's error text
for bad input. StridedSliceAssign and the ScatterNd dtypes are variable cases in gen_e3_cases.py.

Uses the machinery of tools/gen_array_cases.py. test_ops_f1 compares floats within 1e-5 relative.
Run: build/venv/bin/python tools/gen_f1_cases.py
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
f32, f64, i32 = np.float32, np.float64, np.int32
rng = np.random.default_rng(21)


def igamma():
    a = [0.1, 0.5, 1.0, 2.0, 3.5, 10.0, 50.0, 0.5, 2.0, 7.0, 1.0, 100.0, 0.01, 3.0]
    x = [0.05, 0.3, 1.0, 0.5, 5.0, 12.0, 40.0, 2.0, 1.5, 6.0, 0.0, 120.0, 3.0, 30.0]
    for dt in (f32, f64):
        for op in ("IgammaGradA", "RandomGammaGrad"):
            n1, n2 = ("a", "x") if op == "IgammaGradA" else ("alpha", "sample")
            case("%s %s values" % (op, dt.__name__), op, [(n1, np.array(a, dt)), (n2, np.array(x, dt))])
            case("%s %s random" % (op, dt.__name__), op,
                 [(n1, rng.uniform(0.05, 20, 40).astype(dt)), (n2, rng.uniform(0.01, 30, 40).astype(dt))])
            case("%s %s edges" % (op, dt.__name__), op,
                 [(n1, np.array([-1, 0, 1, nan, 1, 2, inf, 1e-3], dt)), (n2, np.array([1, 1, -1, 1, nan, inf, 3, 1e-4], dt))])
            case("%s %s broadcast" % (op, dt.__name__), op,
                 [(n1, np.array([[0.5], [2.0], [6.0]], dt)), (n2, np.array([0.2, 1.0, 3.0, 9.0], dt))])
            case("%s %s scalar" % (op, dt.__name__), op, [(n1, np.array(1.5, dt)), (n2, np.array([0.5, 2.5], dt))])
            case("%s %s empty" % (op, dt.__name__), op, [(n1, np.zeros([0, 2], dt)), (n2, np.zeros([2], dt))])
        case("IgammaGradA %s no broadcast" % dt.__name__, "IgammaGradA", [("a", np.ones([2, 3], dt)), ("x", np.ones([4], dt))])


def cholesky():
    for dt in (f32, f64):
        for shape in ((1, 1), (2, 2), (5, 5), (3, 4, 4), (2, 1, 3, 3)):
            n = shape[-1]
            m = rng.normal(size=shape)
            a = m @ np.swapaxes(m, -1, -2) + n * np.eye(n)
            l = np.linalg.cholesky(a) + np.triu(rng.normal(size=shape), 1)  # the upper triangle is ignored
            case("CholeskyGrad %s %s" % (dt.__name__, shape), "CholeskyGrad",
                 [("l", l.astype(dt)), ("grad", rng.normal(size=shape).astype(dt))])
        case("CholeskyGrad %s empty" % dt.__name__, "CholeskyGrad", [("l", np.zeros([0, 3, 3], dt)), ("grad", np.zeros([0, 3, 3], dt))])
        case("CholeskyGrad %s 0x0" % dt.__name__, "CholeskyGrad", [("l", np.zeros([2, 0, 0], dt)), ("grad", np.zeros([2, 0, 0], dt))])
    case("CholeskyGrad rank 1", "CholeskyGrad", [("l", np.ones([3], f32)), ("grad", np.ones([3], f32))])
    case("CholeskyGrad not square", "CholeskyGrad", [("l", np.ones([2, 3], f32)), ("grad", np.ones([2, 3], f32))])
    case("CholeskyGrad shapes differ", "CholeskyGrad", [("l", np.eye(3, dtype=f32)), ("grad", np.ones([2, 2], f32))])


def qdq():
    for dt in (f32, f64):
        x = np.array([-2, -1, -0.5, 0, 0.5, 1, 1.5, nan, inf, -inf], dt)
        gr = np.arange(1, 11).astype(dt)
        case("QuantizeAndDequantizeV4Grad %s" % dt.__name__, "QuantizeAndDequantizeV4Grad",
             [("gradients", gr), ("input", x), ("input_min", np.array(-1, dt)), ("input_max", np.array(1, dt))])
        x2 = rng.uniform(-3, 3, (2, 3, 4)).astype(dt)
        for axis in (0, 1, 2):
            d = x2.shape[axis]
            case("QuantizeAndDequantizeV4Grad %s axis %d" % (dt.__name__, axis), "QuantizeAndDequantizeV4Grad",
                 [("gradients", np.ones_like(x2)), ("input", x2), ("input_min", -rng.uniform(0, 2, d).astype(dt)),
                  ("input_max", rng.uniform(0, 2, d).astype(dt))], {"axis": axis})
    z = np.zeros([0, 3], f32)
    case("QuantizeAndDequantizeV4Grad empty", "QuantizeAndDequantizeV4Grad",
         [("gradients", z), ("input", z), ("input_min", A(-1.0)), ("input_max", A(1.0))])
    x = np.ones([2, 3], f32)
    case("QuantizeAndDequantizeV4Grad shapes differ", "QuantizeAndDequantizeV4Grad",
         [("gradients", np.ones([3, 2], f32)), ("input", x), ("input_min", A(-1.0)), ("input_max", A(1.0))])
    case("QuantizeAndDequantizeV4Grad axis too big", "QuantizeAndDequantizeV4Grad",
         [("gradients", x), ("input", x), ("input_min", A([-1.0])), ("input_max", A([1.0]))], {"axis": 2})
    case("QuantizeAndDequantizeV4Grad min not scalar", "QuantizeAndDequantizeV4Grad",
         [("gradients", x), ("input", x), ("input_min", A([-1.0])), ("input_max", A(1.0))])
    case("QuantizeAndDequantizeV4Grad axis min size", "QuantizeAndDequantizeV4Grad",
         [("gradients", x), ("input", x), ("input_min", A([-1.0, 0.0])), ("input_max", A([1.0, 2.0, 3.0]))], {"axis": 1})


BOXES = np.array([[0.1, 0.2, 0.8, 0.9], [0.0, 0.0, 1.0, 1.0], [0.9, 0.7, 0.2, 0.1], [-0.3, 0.4, 1.2, 1.5], [0.5, 0.5, 0.5, 0.5]], f32)


def crop():
    bi = np.array([0, 1, 1, 0, 1], i32)
    for ch, cw in ((3, 4), (1, 1), (1, 3), (5, 2)):
        gr = rng.normal(size=(5, ch, cw, 2)).astype(f32)
        for method in ("bilinear", "nearest"):
            for t in (tf.float32, tf.float64, tf.float16):
                if t != tf.float32 and (ch, cw) != (3, 4):
                    continue
                case("CropAndResizeGradImage %s %s %dx%d" % (method, t.name, ch, cw), "CropAndResizeGradImage",
                     [("grads", gr), ("boxes", BOXES), ("box_ind", bi), ("image_size", np.array([2, 6, 7, 2], i32))],
                     {"T": t, "method": method})
        for dt in (np.float32, np.float64, np.float16, np.uint8, np.int8, np.int16, np.uint16, np.int32, np.int64):
            if dt != np.float32 and (ch, cw) != (3, 4):
                continue
            img = (rng.uniform(0, 100, (2, 6, 7, 2))).astype(dt)
            case("CropAndResizeGradBoxes %s %dx%d" % (np.dtype(dt).name, ch, cw), "CropAndResizeGradBoxes",
                 [("grads", gr), ("image", img), ("boxes", BOXES), ("box_ind", bi)])
    gr = np.ones((5, 2, 2, 2), f32)
    S = np.array([2, 6, 7, 2], i32)
    case("CropAndResizeGradImage bad box_ind", "CropAndResizeGradImage",
         [("grads", gr), ("boxes", BOXES), ("box_ind", np.array([0, 1, 2, 0, 0], i32)), ("image_size", S)], {"T": tf.float32})
    case("CropAndResizeGradImage depth mismatch", "CropAndResizeGradImage",
         [("grads", gr), ("boxes", BOXES), ("box_ind", bi), ("image_size", np.array([2, 6, 7, 3], i32))], {"T": tf.float32})
    case("CropAndResizeGradImage image_size 3", "CropAndResizeGradImage",
         [("grads", gr), ("boxes", BOXES), ("box_ind", bi), ("image_size", np.array([2, 6, 7], i32))], {"T": tf.float32})
    case("CropAndResizeGradImage grads 3-D", "CropAndResizeGradImage",
         [("grads", np.ones((5, 2, 2), f32)), ("boxes", BOXES), ("box_ind", bi), ("image_size", S)], {"T": tf.float32})
    case("CropAndResizeGradImage no boxes", "CropAndResizeGradImage",
         [("grads", np.ones((0, 2, 2, 2), f32)), ("boxes", np.zeros((0, 4), f32)), ("box_ind", np.zeros(0, i32)),
          ("image_size", S)], {"T": tf.float32})
    case("CropAndResizeGradImage box count", "CropAndResizeGradImage",
         [("grads", gr), ("boxes", BOXES[:3]), ("box_ind", bi[:3]), ("image_size", S)], {"T": tf.float32})
    img = np.ones((2, 6, 7, 2), f32)
    case("CropAndResizeGradBoxes bad box_ind", "CropAndResizeGradBoxes",
         [("grads", gr), ("image", img), ("boxes", BOXES), ("box_ind", np.array([0, -1, 0, 0, 0], i32))])
    case("CropAndResizeGradBoxes depth mismatch", "CropAndResizeGradBoxes",
         [("grads", gr), ("image", np.ones((2, 6, 7, 3), f32)), ("boxes", BOXES), ("box_ind", bi)])
    case("CropAndResizeGradBoxes image 3-D", "CropAndResizeGradBoxes",
         [("grads", gr), ("image", np.ones((6, 7, 2), f32)), ("boxes", BOXES), ("box_ind", bi)])
    case("CropAndResizeGradBoxes boxes 3 columns", "CropAndResizeGradBoxes",
         [("grads", gr), ("image", img), ("boxes", BOXES[:, :3]), ("box_ind", bi)])


def scale_translate():
    kinds = ("lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle", "keyscubic", "mitchellcubic")
    img = rng.uniform(0, 1, (2, 7, 9, 3)).astype(f32)
    for kind in kinds:
        for aa in (True, False):
            for (oh, ow), sc, tr in (((4, 5), (4 / 7, 5 / 9), (0.0, 0.0)), ((12, 14), (12 / 7, 14 / 9), (0.3, -0.7)),
                                     ((5, 9), (0.6, 1.3), (1.5, 0.25))):
                if not aa and sc[0] > 1:
                    continue
                case("ScaleAndTranslateGrad %s aa=%d %dx%d" % (kind, aa, oh, ow), "ScaleAndTranslateGrad",
                     [("grads", rng.normal(size=(2, oh, ow, 3)).astype(f32)), ("original_image", img),
                      ("scale", np.array(sc, f32)), ("translation", np.array(tr, f32))], {"kernel_type": kind, "antialias": aa})
    g4 = np.ones((2, 4, 5, 3), f32)
    sc, tr = np.array([0.5, 0.5], f32), np.zeros(2, f32)
    case("ScaleAndTranslateGrad batch from grads", "ScaleAndTranslateGrad",
         [("grads", np.ones((1, 4, 5, 3), f32)), ("original_image", img), ("scale", sc), ("translation", tr)])
    case("ScaleAndTranslateGrad grads 3-D", "ScaleAndTranslateGrad",
         [("grads", np.ones((4, 5, 3), f32)), ("original_image", img), ("scale", sc), ("translation", tr)])
    case("ScaleAndTranslateGrad scale 0", "ScaleAndTranslateGrad",
         [("grads", g4), ("original_image", img), ("scale", np.array([0, 1], f32)), ("translation", tr)])
    case("ScaleAndTranslateGrad bad kernel", "ScaleAndTranslateGrad",
         [("grads", g4), ("original_image", img), ("scale", sc), ("translation", tr)], {"kernel_type": "cubic"})


def main():
    scale_translate()
    igamma()
    cholesky()
    qdq()
    crop()
    g.write_unit_header("f1_cases")


if __name__ == "__main__":
    main()
