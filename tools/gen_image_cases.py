#!/usr/bin/env python3
"""gen_image_cases.py - writes tests/unit/image_cases.h: image resize kernel cases with TensorFlow's answers.

Each case is one op (ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic, ResizeArea) between
Placeholders, exported as a MetaGraphDef (stripped default attrs, as TF2 exports do, with the OpDefs
in stripped_op_list) and run by TensorFlow's own Session on inputs the C test rebuilds from the same
formula (im_input_value in test_ops_image.c). Error cases record the substring our message must
contain (checked here against TF's message too).
Run: /work/main/build/venv/bin/python tools/gen_image_cases.py > tests/unit/image_cases.h
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_nn_cases as g  # noqa: E402  (its main writes the header: same layout, our cases)

tf.compat.v1.disable_eager_execution()

DT = {"float32": (tf.float32, "SM_FLOAT"), "float64": (tf.float64, "SM_DOUBLE"),
      "float16": (tf.float16, "SM_HALF"), "bfloat16": (tf.bfloat16, "SM_BFLOAT16"),
      "int8": (tf.int8, "SM_INT8"), "uint8": (tf.uint8, "SM_UINT8"), "int16": (tf.int16, "SM_INT16"),
      "uint16": (tf.uint16, "SM_UINT16"), "int32": (tf.int32, "SM_INT32"), "uint32": (tf.uint32, "SM_UINT32"),
      "int64": (tf.int64, "SM_INT64"), "uint64": (tf.uint64, "SM_UINT64")}


def is_int(dt):
    return "int" in dt


def value(kind, seed, n, dtype, lit=None):
    """Same formula as im_input_value() in tests/unit/test_ops_image.c."""
    if kind == "lit":
        return np.array(lit, dtype=dtype)
    i = np.arange(n, dtype=np.int64)
    v = (i * 37 + seed * 11) % 19
    v = v - 9 if kind == "s" else v + 1
    if is_int(dtype):
        return v.astype(dtype)
    return (v.astype(np.float64) / 8.0).astype(dtype)


F = "float32"
CASES = []


def case(name, op, inputs, attrs=None, outs=(0,), err=None):
    CASES.append((name, op, inputs, attrs or {}, outs, err))


def img(shape, dt=F):
    return ("images", dt, shape, "p" if dt.startswith("uint") else "s")


def size(h, w):
    return ("size", "int32", [2], "lit", [h, w])


OPS = {"bilinear": "ResizeBilinear", "nearest": "ResizeNearestNeighbor", "bicubic": "ResizeBicubic",
       "area": "ResizeArea"}
SHAPES = [  # (tag, image shape, out h, out w)
    ("up", [1, 3, 4, 2], 5, 7), ("down", [2, 7, 9, 3], 3, 4), ("mixed", [1, 4, 5, 1], 8, 2),
    ("same", [1, 3, 3, 2], 3, 3), ("to1", [1, 4, 4, 1], 1, 1), ("from1", [1, 1, 1, 2], 3, 2),
    ("odd", [1, 5, 3, 4], 2, 7), ("big_down", [1, 11, 13, 2], 4, 3), ("row1", [2, 1, 6, 1], 1, 4),
]
for tag, op in OPS.items():
    combos = [("", {}), ("_ac", {"align_corners": True})]
    if op != "ResizeArea":
        combos.append(("_hpc", {"half_pixel_centers": True}))
    for sname, shape, oh, ow in SHAPES:
        for cname, attrs in combos:
            case("%s_%s%s" % (tag, sname, cname), op, [img(shape), size(oh, ow)], attrs)
    for dt in ["float64", "float16", "bfloat16", "int8", "uint8", "int16", "uint16", "int32", "int64"]:
        case("%s_%s" % (tag, dt), op, [img([1, 3, 4, 2], dt), size(5, 3)],
             {"half_pixel_centers": True} if op != "ResizeArea" else {})
    case("%s_empty_batch" % tag, op, [img([0, 3, 4, 2]), size(5, 5)])
    case("%s_large" % tag, op, [img([1, 16, 16, 3]), size(40, 37)], combos[-1][1])
    case("%s_err_rank" % tag, op, [img([3, 4, 2]), size(5, 5)], err="input must be 4-dimensional")
    case("%s_err_size_n" % tag, op, [img([1, 3, 4, 2]), ("size", "int32", [3], "lit", [2, 2, 2])],
         err="shape_t must have two elements")
    case("%s_err_size_rank" % tag, op, [img([1, 3, 4, 2]), ("size", "int32", [1, 2], "lit", [2, 2])],
         err="shape_t must be 1-dimensional")
    case("%s_err_size0" % tag, op, [img([1, 3, 4, 2]), size(0, 3)], err="output dimensions must be positive")
    case("%s_err_size_neg" % tag, op, [img([1, 3, 4, 2]), size(3, -1)], err="output dimensions must be positive")
    case("%s_err_chan0" % tag, op, [img([1, 3, 4, 0]), size(3, 3)], err="image must have at least one channel")
    case("%s_err_h0" % tag, op, [img([1, 0, 4, 1]), size(3, 3)], err="input image must be of non-zero size")
    if op != "ResizeArea":
        case("%s_err_ac_hpc" % tag, op, [img([1, 3, 4, 2]), size(5, 5)],
             {"align_corners": True, "half_pixel_centers": True},
             err="If half_pixel_centers is True, align_corners must be False.")


def fmt(v, dt):
    if is_int(dt):
        return str(int(v))
    if np.isnan(v):
        return "NAN"
    return repr(float(v))


def main():
    g.main(cases=CASES, prefix="im", header="image_cases.h", generator="tools/gen_image_cases.py", value_fn=value,
           dtypes=DT, fmt_fn=fmt)


if __name__ == "__main__":
    main()
