#!/usr/bin/env python3
"""gen_image2_cases.py - writes tests/unit/image2_cases.h: the colour and geometric image kernels
(src/ops/image_adjust.c, src/ops/image_transform.c) with TensorFlow's answers.

Ops: RGBToHSV, HSVToRGB, AdjustContrastv2, AdjustHue, AdjustSaturation, ImageProjectiveTransformV3 (and V2)
(every interpolation x fill_mode, perspective rows, a transform whose denominator is 0 on a pixel),
CropAndResize (boxes inside, partly and wholly outside, flipped, a 1x1 crop, extrapolation_value),
ScaleAndTranslate (every kernel_type, antialias on and off, down/up/shifted, degenerate scales),
over the dtypes TF's CPU kernels take, empty inputs, and TF's error cases. Same machinery and layout as
gen_image_cases.py (tools/gen_nn_cases.py main: one op between Placeholders, run by TF's Session);
inputs come from value() below, which test_ops_image2.c repeats (i2_input_value).
Run: /work/main/build/venv/bin/python tools/gen_image2_cases.py > tests/unit/image2_cases.h
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_image_cases as gi  # noqa: E402  (dtype table, number format; disables eager)
import gen_nn_cases as g  # noqa: E402

CASES = []


def value(kind, seed, n, dtype, lit=None):
    """Same formula as i2_input_value() in tests/unit/test_ops_image2.c: 's' signed [-1.125, 1.125],
    'p' positive, 'u' in [0, 1] (k/18), 'b' bytes 0..255; integer dtypes take 's'/'p' unscaled."""
    if kind == "lit":
        return np.array(lit, dtype=dtype)
    i = np.arange(n, dtype=np.int64)
    if kind == "b":
        return ((i * 37 + seed * 11) % 256).astype(dtype)
    v = (i * 37 + seed * 11) % 19
    if kind == "u":
        return (v.astype(np.float64) / 18.0).astype(dtype)
    v = v - 9 if kind == "s" else v + 1
    if gi.is_int(dtype):
        return v.astype(dtype)
    return (v.astype(np.float64) / 8.0).astype(dtype)


def case(name, op, inputs, attrs=None, err=None):
    CASES.append((name, op, inputs, attrs or {}, (0,), err))


def T(arg, shape, dt="float32", kind="s"):
    return (arg, dt, shape, kind)


def L(arg, dt, shape, vals):
    return (arg, dt, shape, "lit", list(vals))


def colour():
    for dt in ("float32", "float64", "float16", "bfloat16"):
        for kind in ("u", "s"):
            case("rgb2hsv_%s_%s" % (dt, kind), "RGBToHSV", [T("images", [4, 5, 3], dt, kind)])
            case("hsv2rgb_%s_%s" % (dt, kind), "HSVToRGB", [T("images", [4, 5, 3], dt, kind)])
    case("rgb2hsv_grey", "RGBToHSV", [L("images", "float32", [3, 3], [0.5, 0.5, 0.5, 0, 0, 0, 1, 1, 0.25])])
    case("rgb2hsv_1d", "RGBToHSV", [T("images", [3], "float32", "u")])
    case("rgb2hsv_empty", "RGBToHSV", [T("images", [0, 2, 3], "float32", "u")])
    case("hsv2rgb_empty", "HSVToRGB", [T("images", [2, 0, 3], "float32", "u")])
    case("rgb2hsv_err_channels", "RGBToHSV", [T("images", [2, 4], "float32", "u")],
         err="input must have 3 channels but input only has 4 channels.")
    case("hsv2rgb_err_channels", "HSVToRGB", [T("images", [2, 2], "float32", "u")],
         err="input must have 3 channels but input only has 2 channels.")

    for shape in ([1, 4, 5, 3], [2, 7, 3, 1], [3, 1, 1, 2], [5, 5, 70], [2, 9, 13, 3]):
        for f in (1.7, -0.5, 0.0):
            case("contrast_%s_%g" % ("x".join(map(str, shape)), f), "AdjustContrastv2",
                 [T("images", shape, "float32", "s"), L("contrast_factor", "float32", [], [f])])
    case("contrast_empty", "AdjustContrastv2", [T("images", [0, 2, 2, 3]), L("contrast_factor", "float32", [], [2])])
    case("contrast_err_rank", "AdjustContrastv2", [T("images", [4, 3]), L("contrast_factor", "float32", [], [2])],
         err="input must be at least 3-D")
    case("contrast_err_factor", "AdjustContrastv2", [T("images", [1, 2, 2, 3]),
                                                     L("contrast_factor", "float32", [2], [2, 2])],
         err="contrast_factor must be scalar")
    case("contrast_err_half", "AdjustContrastv2", [T("images", [1, 2, 2, 3], "float16"),
                                                   L("contrast_factor", "float32", [], [2])], err="!not supported")

    for d in (0.3, -0.7, 1.0, 2.5, -13.25, 1000.0, 0.0):
        for kind in ("u", "s"):
            case("hue_%g_%s" % (d, kind), "AdjustHue", [T("images", [2, 4, 5, 3], "float32", kind),
                                                         L("delta", "float32", [], [d])])
    case("hue_grey", "AdjustHue", [L("images", "float32", [1, 2, 3], [0.5, 0.5, 0.5, 0, 0, 1]), L("delta", "float32", [], [0.5])])
    case("hue_empty", "AdjustHue", [T("images", [0, 4, 3], "float32"), L("delta", "float32", [], [0.5])])
    case("hue_err_channels", "AdjustHue", [T("images", [1, 2, 2, 4]), L("delta", "float32", [], [0.1])],
         err="input must have 3 channels but instead has 4 channels.")
    case("hue_err_delta", "AdjustHue", [T("images", [1, 2, 2, 3]), L("delta", "float32", [1], [0.1])],
         err="delta must be scalar")
    for sc in (0.0, 0.5, 2.0, 10.0, -1.0):
        for kind in ("u", "s"):
            case("sat_%g_%s" % (sc, kind), "AdjustSaturation", [T("images", [2, 4, 5, 3], "float32", kind),
                                                                 L("scale", "float32", [], [sc])])
    case("sat_err_channels", "AdjustSaturation", [T("images", [1, 2, 2, 2]), L("scale", "float32", [], [0.1])],
         err="input must have 3 channels but instead has 2 channels.")
    case("sat_err_rank", "AdjustSaturation", [T("images", [2, 3]), L("scale", "float32", [], [0.1])],
         err="input must be at least 3-D")


def rot(a, cx, cy):
    c, s = np.cos(a), np.sin(a)
    return [c, -s, cx - c * cx + s * cy, s, c, cy - s * cx - c * cy, 0, 0]


TRANSFORMS = {
    "rot": rot(0.6, 2.5, 2.0) + rot(-2.1, 1.0, 3.0),
    "zoom": [1.7, 0, -2.3, 0, 0.6, 1.1, 0, 0, 0.4, 0, 0.9, 0, 0.45, -0.2, 0, 0],
    "shift": [1, 0, -7.5, 0, 1, 3.25, 0, 0, 1, 0, 13.5, 0, 1, -11.75, 0, 0],
    "persp": [1.1, 0.2, -0.5, 0.1, 0.9, 0.3, 0.05, -0.08, 0.8, -0.3, 2, 0.2, 1.2, -1, -0.1, 0.15],
    "k0": [1, 0, 0, 0, 1, 0, -0.5, 0, 1, 0, 0, 0, 1, 0, 0, -0.25],
}


def projective():
    op = "ImageProjectiveTransformV3"
    for tname, tv in TRANSFORMS.items():
        for interp in ("NEAREST", "BILINEAR"):
            for mode in ("REFLECT", "WRAP", "CONSTANT", "NEAREST"):
                case("proj_%s_%s_%s" % (tname, interp, mode), op,
                     [T("images", [2, 5, 6, 2]), L("transforms", "float32", [2, 8], tv),
                      L("output_shape", "int32", [2], [5, 6]), L("fill_value", "float32", [], [0.75])],
                     {"interpolation": interp, "fill_mode": mode})
    for dt, kind in (("uint8", "b"), ("int32", "s"), ("int64", "p"), ("float16", "s"), ("float64", "s"),
                     ("bfloat16", "s")):
        for interp in ("NEAREST", "BILINEAR"):
            case("proj_%s_%s" % (dt, interp), op,
                 [T("images", [2, 5, 6, 2], dt, kind), L("transforms", "float32", [2, 8], TRANSFORMS["persp"]),
                  L("output_shape", "int32", [2], [6, 4]), L("fill_value", "float32", [], [3.7])],
                 {"interpolation": interp, "fill_mode": "CONSTANT"})
    for interp in ("NEAREST", "BILINEAR"):
        case("proj_v2_%s" % interp, "ImageProjectiveTransformV2",
             [T("images", [2, 5, 6, 2]), L("transforms", "float32", [2, 8], TRANSFORMS["rot"]),
              L("output_shape", "int32", [2], [4, 7])], {"interpolation": interp, "fill_mode": "REFLECT"})
    case("proj_bcast_resize", op, [T("images", [3, 4, 4, 1]), L("transforms", "float32", [1, 8], TRANSFORMS["zoom"][:8]),
                                   L("output_shape", "int32", [2], [7, 3]), L("fill_value", "float32", [], [0])],
         {"interpolation": "BILINEAR", "fill_mode": "REFLECT"})
    case("proj_len1", op, [T("images", [1, 1, 4, 1]), L("transforms", "float32", [1, 8], TRANSFORMS["shift"][:8]),
                           L("output_shape", "int32", [2], [3, 4]), L("fill_value", "float32", [], [0])],
         {"interpolation": "BILINEAR", "fill_mode": "WRAP"})
    case("proj_default_mode", op, [T("images", [1, 3, 3, 1]), L("transforms", "float32", [1, 8], TRANSFORMS["rot"][:8]),
                                   L("output_shape", "int32", [2], [3, 3]), L("fill_value", "float32", [], [0])],
         {"interpolation": "NEAREST"})
    case("proj_empty", op, [T("images", [0, 3, 3, 1]), L("transforms", "float32", [1, 8], TRANSFORMS["rot"][:8]),
                            L("output_shape", "int32", [2], [2, 2]), L("fill_value", "float32", [], [0])],
         {"interpolation": "NEAREST"})
    case("proj_err_transform", op, [T("images", [2, 3, 3, 1]), L("transforms", "float32", [3, 8], [0] * 24),
                                    L("output_shape", "int32", [2], [2, 2]), L("fill_value", "float32", [], [0])],
         {"interpolation": "NEAREST"}, err="Input transform should be num_images x 8 or 1 x 8")
    case("proj_err_shape", op, [T("images", [1, 3, 3, 1]), L("transforms", "float32", [1, 8], [0] * 8),
                                L("output_shape", "int32", [2], [0, 2]), L("fill_value", "float32", [], [0])],
         {"interpolation": "NEAREST"}, err="output dimensions must be positive")
    case("proj_err_rank", op, [T("images", [3, 3, 1]), L("transforms", "float32", [1, 8], [0] * 8),
                               L("output_shape", "int32", [2], [2, 2]), L("fill_value", "float32", [], [0])],
         {"interpolation": "NEAREST"}, err="Input images must have rank 4")


BOXES = {
    "inside": [0.1, 0.2, 0.8, 0.9, 0, 0, 1, 1],
    "partly_out": [-0.3, 0.4, 0.6, 1.5, 0.5, -0.2, 1.2, 0.7],
    "flipped": [0.9, 0.8, 0.1, 0.05, 1, 1, 0, 0],
    "all_out": [1.5, 1.2, 2.5, 3, -2, -1, -1.5, -0.2],
    "degenerate": [0.4, 0.4, 0.4, 0.4, 0.25, 0.75, 0.25, 0.5],
}


def crop():
    op = "CropAndResize"
    for bname, bv in BOXES.items():
        for method in ("bilinear", "nearest"):
            for ch, cw in ((4, 5), (1, 1), (1, 3)):
                case("crop_%s_%s_%dx%d" % (bname, method, ch, cw), op,
                     [T("image", [2, 6, 7, 3]), L("boxes", "float32", [2, 4], bv), L("box_ind", "int32", [2], [1, 0]),
                      L("crop_size", "int32", [2], [ch, cw])], {"method": method, "extrapolation_value": 0.5})
    for dt, kind in (("uint8", "b"), ("int32", "s"), ("float16", "s"), ("float64", "s"), ("int8", "s"),
                     ("uint16", "p"), ("int16", "s"), ("int64", "p")):
        case("crop_%s" % dt, op, [T("image", [2, 6, 7, 3], dt, kind), L("boxes", "float32", [2, 4], BOXES["partly_out"]),
                                  L("box_ind", "int32", [2], [1, 1]), L("crop_size", "int32", [2], [3, 4])])
    case("crop_no_boxes", op, [T("image", [1, 3, 3, 1]), L("boxes", "float32", [0, 4], []), L("box_ind", "int32", [0], []),
                               L("crop_size", "int32", [2], [2, 2])])
    case("crop_err_index", op, [T("image", [2, 3, 3, 1]), L("boxes", "float32", [1, 4], [0, 0, 1, 1]),
                                L("box_ind", "int32", [1], [2]), L("crop_size", "int32", [2], [2, 2])],
         err="box_index has values outside [0, batch_size)")
    case("crop_err_inf", op, [T("image", [2, 3, 3, 1]), L("boxes", "float32", [1, 4], [0, 0, 1e39, 1]),
                              L("box_ind", "int32", [1], [0]), L("crop_size", "int32", [2], [2, 2])],
         err="Boxes contains at least one element that is not finite")
    case("crop_err_cols", op, [T("image", [2, 3, 3, 1]), L("boxes", "float32", [1, 3], [0, 0, 1]),
                               L("box_ind", "int32", [1], [0]), L("crop_size", "int32", [2], [2, 2])],
         err="boxes must have 4 columns")
    case("crop_err_size", op, [T("image", [2, 3, 3, 1]), L("boxes", "float32", [1, 4], [0, 0, 1, 1]),
                               L("box_ind", "int32", [1], [0]), L("crop_size", "int32", [2], [0, 2])],
         err="crop dimensions must be positive")
    case("crop_err_image", op, [T("image", [2, 0, 3, 1]), L("boxes", "float32", [1, 4], [0, 0, 1, 1]),
                                L("box_ind", "int32", [1], [0]), L("crop_size", "int32", [2], [2, 2])],
         err="image dimensions must be positive")


def scale_translate():
    op = "ScaleAndTranslate"
    geoms = {"down": ([3, 4], [3 / 7, 4 / 9], [0, 0]), "up": ([11, 13], [11 / 7, 13 / 9], [0, 0]),
             "shift": ([6, 8], [0.9, 1.3], [-1.5, 2.25]), "mixed": ([9, 5], [1.2, 0.55], [0.3, -0.4])}
    for kt in ("lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle", "keyscubic", "mitchellcubic"):
        for gname, (sz, sc, tr) in geoms.items():
            for aa in (True, False):
                if not aa and gname in ("up", "shift"):
                    continue
                case("sat_%s_%s_%s" % (kt, gname, "aa" if aa else "noaa"), op,
                     [T("images", [2, 7, 9, 3]), L("size", "int32", [2], sz), L("scale", "float32", [2], sc),
                      L("translation", "float32", [2], tr)], {"kernel_type": kt, "antialias": aa})
    for gname, sc, tr in (("tiny_scale", [1e-3, 2e-3], [0, 0]), ("huge_scale", [1e3, 500], [0, 0]),
                          ("far_shift", [1, 1], [40, -50])):
        case("sat_%s" % gname, op, [T("images", [1, 5, 6, 2]), L("size", "int32", [2], [4, 3]),
                                     L("scale", "float32", [2], sc), L("translation", "float32", [2], tr)])
    for dt, kind in (("uint8", "b"), ("int32", "s"), ("float16", "s"), ("float64", "s"), ("int64", "p"),
                     ("bfloat16", "s"), ("int8", "s"), ("uint16", "p"), ("int16", "s")):
        case("sat_%s" % dt, op, [T("images", [1, 7, 9, 2], dt, kind), L("size", "int32", [2], [4, 5]),
                                  L("scale", "float32", [2], [4 / 7, 5 / 9]), L("translation", "float32", [2], [0, 0])],
             {"kernel_type": "triangle"})
    case("sat_default_attrs", op, [T("images", [1, 6, 6, 1]), L("size", "int32", [2], [3, 4]),
                                   L("scale", "float32", [2], [0.5, 4 / 6]), L("translation", "float32", [2], [0, 0])])
    case("sat_empty_batch", op, [T("images", [0, 6, 6, 1]), L("size", "int32", [2], [3, 4]),
                                 L("scale", "float32", [2], [0.5, 0.5]), L("translation", "float32", [2], [0, 0])])
    case("sat_err_scale", op, [T("images", [1, 6, 6, 1]), L("size", "int32", [2], [3, 4]),
                               L("scale", "float32", [2], [0, 0.5]), L("translation", "float32", [2], [0, 0])],
         err="Scale must be greater than zero.")
    case("sat_err_size", op, [T("images", [1, 6, 6, 1]), L("size", "int32", [2], [0, 4]),
                              L("scale", "float32", [2], [1, 0.5]), L("translation", "float32", [2], [0, 0])],
         err="output dimensions must be positive")
    case("sat_err_rank", op, [T("images", [6, 6, 1]), L("size", "int32", [2], [3, 4]),
                              L("scale", "float32", [2], [1, 0.5]), L("translation", "float32", [2], [0, 0])],
         err="input must be 4-dimensional")
    case("sat_err_kernel", op, [T("images", [1, 6, 6, 1]), L("size", "int32", [2], [3, 4]),
                                L("scale", "float32", [2], [1, 0.5]), L("translation", "float32", [2], [0, 0])],
         {"kernel_type": "cubic"}, err="Unrecognized kernel type: cubic")


def main():
    colour()
    projective()
    crop()
    scale_translate()
    g.main(cases=CASES, prefix="i2", header="image2_cases.h", generator="tools/gen_image2_cases.py", value_fn=value,
           dtypes=gi.DT, fmt_fn=gi.fmt)


if __name__ == "__main__":
    main()
