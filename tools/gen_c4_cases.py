#!/usr/bin/env python3
"""gen_c4_cases.py - writes tests/unit/c4_cases.h: the ops session 19 (c4) added, against
TensorFlow (eager tf.raw_ops, TF's CPU kernels): DecodeGif / DecodeBmp and GIF / BMP through
DecodeImage, DecodeJpeg, DecodePng (image_codec.c), with GIFs and BMPs written here by hand (no
PIL in the venv): several frames, local colour tables, frames smaller than the canvas, transparent
indices, interlacing, 8/24/32-bit BMPs top-down and bottom-up, and TF's errors for bad input.

Uses the machinery of tools/gen_array_cases.py (as gen_api_cases.py does). test_ops_c4 compares
floats within 1e-5 relative. Run: build/venv/bin/python tools/gen_c4_cases.py
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
A = g.A
_attr_text = g.attr_text


def _attr_text_floats(key, v):
    """gen_array_cases writes every list as ints: list(float) attrs (pooling_ratio, area_range) as f"""
    if isinstance(v, list) and v and all(isinstance(x, float) for x in v):
        return 'attr { key: "%s" value { list { %s } } }' % (key, " ".join("f: %r" % x for x in v))
    return _attr_text(key, v)


g.attr_text = _attr_text_floats
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
rng = np.random.default_rng(19)


def o(b):
    """a scalar string tensor value"""
    return np.array(b, dtype=object).reshape(())


# ---- GIF writer ------------------------------------------------------------------------------

def _lzw(indices, mcs):
    """GIF LZW data that never grows its code width: a clear code every few codes, each pixel
    its own literal code (valid for every decoder, just not small)."""
    clear, eoi = 1 << mcs, (1 << mcs) + 1
    width = mcs + 1
    codes = []
    run = (1 << mcs) - 3
    for i, v in enumerate(indices):
        if i % run == 0:
            codes.append(clear)
        codes.append(int(v))
    codes.append(eoi)
    bits, nbits, out = 0, 0, bytearray()
    for c in codes:
        bits |= c << nbits
        nbits += width
        while nbits >= 8:
            out.append(bits & 0xff)
            bits >>= 8
            nbits -= 8
    if nbits:
        out.append(bits & 0xff)
    blocks = bytearray([mcs])
    for k in range(0, len(out), 255):
        chunk = out[k:k + 255]
        blocks += bytes([len(chunk)]) + chunk
    return bytes(blocks + b"\x00")


def _ctab(colors, bits):
    t = bytearray()
    for c in colors:
        t += bytes(c)
    return bytes(t + b"\x00" * (3 * (1 << bits) - len(t)))


def gif(width, height, frames, gct=None, gct_bits=2, bg=0, version=b"GIF89a", trailer=True):
    """frames: dicts with idx (h x w array of indices), left, top, lct (colours) + lct_bits,
    transparent (index or None), interlace."""
    out = bytearray(version + struct.pack("<HH", width, height))
    flags = (0x80 | (gct_bits - 1) | ((gct_bits - 1) << 4)) if gct is not None else 0
    out += bytes([flags, bg, 0])
    if gct is not None:
        out += _ctab(gct, gct_bits)
    for fr in frames:
        idx = np.asarray(fr["idx"])
        h, w = idx.shape
        if fr.get("transparent") is not None or fr.get("gce"):
            t = fr.get("transparent")
            out += b"\x21\xf9\x04" + bytes([(1 if t is not None else 0) | (fr.get("disposal", 0) << 2)]) + \
                struct.pack("<H", 5) + bytes([t or 0, 0])
        lf = 0
        if fr.get("lct") is not None:
            lf |= 0x80 | (fr["lct_bits"] - 1)
        rows = list(range(h))
        if fr.get("interlace"):
            lf |= 0x40
            rows = list(range(0, h, 8)) + list(range(4, h, 8)) + list(range(2, h, 4)) + list(range(1, h, 2))
        out += b"\x2c" + struct.pack("<HHHH", fr.get("left", 0), fr.get("top", 0), w, h) + bytes([lf])
        if fr.get("lct") is not None:
            out += _ctab(fr["lct"], fr["lct_bits"])
        bits = fr.get("lct_bits", gct_bits)
        out += _lzw(idx[rows].reshape(-1), fr.get("mcs", max(2, bits)))
    if trailer:
        out += b"\x3b"
    return bytes(out)


# ---- BMP writer ------------------------------------------------------------------------------

def bmp(img, top_down=False, extra=0, header=54):
    """an uncompressed BMP of img (h x w x c, c = 1 (8-bit, no palette), 3 or 4) in BGR(A) order"""
    h, w, c = img.shape
    row = (c * w + 3) // 4 * 4
    data = bytearray()
    order = range(h) if top_down else range(h - 1, -1, -1)
    for i in order:
        r = img[i]
        if c >= 3:
            r = np.concatenate([r[:, 2::-1], r[:, 3:]], 1)
        b = r.astype(np.uint8).tobytes()
        data += b + b"\x00" * (row - len(b))
    size = header + len(data) + extra
    hdr = b"BM" + struct.pack("<IHHI", size, 0, 0, header)
    dib = struct.pack("<IiiHHIIiiII", 40, w, -h if top_down else h, 1, 8 * c, 0, len(data), 2835, 2835, 0, 0)
    pad = b"\x00" * (header - 14 - len(dib))
    return bytes(hdr + dib + pad + data + b"\x00" * extra)


def image_decode():
    pal4 = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (10, 20, 30)]
    idx = rng.integers(0, 4, (5, 7))
    one = gif(7, 5, [{"idx": idx}], gct=pal4)
    # animated: frame 2 a local colour table, frame 3 smaller than the canvas and offset, frame 4
    # with a transparent index, frame 5 interlaced
    lct = [(i * 15, 255 - i * 15, (i * 77) % 256) for i in range(16)]
    anim = gif(6, 9, [
        {"idx": rng.integers(0, 4, (9, 6))},
        {"idx": rng.integers(0, 16, (9, 6)), "lct": lct, "lct_bits": 4},
        {"idx": rng.integers(0, 4, (3, 4)), "left": 1, "top": 2},
        {"idx": rng.integers(0, 4, (9, 6)), "transparent": 2},
        {"idx": rng.integers(0, 4, (9, 6)), "interlace": True},
    ], gct=pal4)
    # the first frame smaller than the canvas, and transparent pixels in the first frame
    small_first = gif(8, 8, [{"idx": rng.integers(0, 4, (4, 5)), "left": 2, "top": 3, "transparent": 1},
                             {"idx": rng.integers(0, 4, (6, 3)), "left": 0, "top": 0}], gct=pal4)
    # frames of different sizes: the canvas is the largest frame (TF ignores the screen size)
    grow = gif(3, 3, [{"idx": rng.integers(0, 4, (3, 3))}, {"idx": rng.integers(0, 4, (5, 2))}], gct=pal4)
    interlaced = gif(5, 11, [{"idx": rng.integers(0, 4, (11, 5)), "interlace": True}], gct=pal4)
    gif87 = gif(4, 3, [{"idx": rng.integers(0, 4, (3, 4))}], gct=pal4, version=b"GIF87a")
    no_trailer = gif(4, 3, [{"idx": rng.integers(0, 4, (3, 4))}], gct=pal4, trailer=False)
    for nm, gb in (("one", one), ("anim", anim), ("small first", small_first), ("grow", grow), ("interlaced", interlaced),
                   ("87a", gif87), ("no trailer", no_trailer)):
        case("DecodeGif %s" % nm, "DecodeGif", [("contents", o(gb))])
        for dt in (tf.uint8, tf.uint16, tf.float32):
            for ex in (True, False):
                case("DecodeImage gif %s %s expand%d" % (nm, dt.name, ex), "DecodeImage", [("contents", o(gb))],
                     {"channels": 0, "dtype": dt, "expand_animations": ex})
        case("DecodeImage gif %s ch3" % nm, "DecodeImage", [("contents", o(gb))],
             {"channels": 3, "dtype": tf.uint8, "expand_animations": True})
        case("DecodePng gif %s" % nm, "DecodePng", [("contents", o(gb))], {"channels": 0, "dtype": tf.uint8})
        case("DecodeJpeg gif %s" % nm, "DecodeJpeg", [("contents", o(gb))], {"channels": 3})
    # index outside the colour map (a 4-colour table, indices up to 7 with a 3-bit code size)
    bad_idx = gif(3, 2, [{"idx": np.array([[0, 1, 7], [2, 3, 5]]), "mcs": 3}], gct=pal4, gct_bits=2)
    no_map = gif(3, 2, [{"idx": rng.integers(0, 4, (2, 3))}], gct=None, gct_bits=2)
    hdr_only = one[:13]
    truncated = anim[:len(anim) * 2 // 3]  # cut before frame 4's raster: TF (and we) give frames 1-3
    case("DecodeGif truncated between frames", "DecodeGif", [("contents", o(truncated))])
    for nm, gb in (("index range", bad_idx), ("no colour map", no_map), ("header only", hdr_only),
                   ("not gif", b"GIF8zzzzzzzzzzzzzzzzzzzz")):
        case("DecodeGif err %s" % nm, "DecodeGif", [("contents", o(gb))])
    case("DecodeImage gif err ch1", "DecodeImage", [("contents", o(one))], {"channels": 1, "dtype": tf.uint8, "expand_animations": True})
    case("DecodeImage gif err ch4", "DecodeImage", [("contents", o(one))], {"channels": 4, "dtype": tf.uint8, "expand_animations": True})
    case("DecodeBmp err gif", "DecodeBmp", [("contents", o(one))], {"channels": 0})
    # JPEG and PNG through DecodeGif: [1, h, w, c]
    rgb = rng.integers(0, 256, (4, 5, 3)).astype(np.uint8)
    case("DecodeGif png", "DecodeGif", [("contents", o(tf.io.encode_png(rgb).numpy()))])
    case("DecodeGif jpeg", "DecodeGif", [("contents", o(tf.io.encode_jpeg(rgb).numpy()))])
    case("DecodeBmp err png", "DecodeBmp", [("contents", o(tf.io.encode_png(rgb).numpy()))], {"channels": 0})
    case("DecodeBmp err jpeg", "DecodeBmp", [("contents", o(tf.io.encode_jpeg(rgb).numpy()))], {"channels": 0})

    # BMP: 8/24/32-bit, odd widths (row padding), top-down and bottom-up, every channels value
    ims = {"gray": rng.integers(0, 256, (3, 5, 1)), "rgb": rng.integers(0, 256, (4, 3, 3)),
           "rgba": rng.integers(0, 256, (2, 7, 4)), "rgb wide": rng.integers(0, 256, (1, 9, 3))}
    for nm, im in ims.items():
        for td in (False, True):
            b = bmp(im, top_down=td)
            for ch in (0, 3, 4):
                case("DecodeBmp %s td%d ch%d" % (nm, td, ch), "DecodeBmp", [("contents", o(b))], {"channels": ch})
            # TF 2.21 crashes (SIGSEGV) decoding a top-down BMP into uint16 or float32: uint8 only there
            for dt in (tf.uint8, tf.uint16, tf.float32)[:1 if td else 3]:
                case("DecodeImage bmp %s td%d %s" % (nm, td, dt.name), "DecodeImage", [("contents", o(b))],
                     {"channels": 0, "dtype": dt, "expand_animations": True})
    b = bmp(ims["rgb"])
    case("DecodeBmp big header", "DecodeBmp", [("contents", o(bmp(ims["rgb"], header=70)))], {"channels": 0})
    case("DecodeBmp err ch1", "DecodeBmp", [("contents", o(b))], {"channels": 1})
    case("DecodePng err bmp", "DecodePng", [("contents", o(b))], {"channels": 0, "dtype": tf.uint8})
    case("DecodeJpeg err bmp", "DecodeJpeg", [("contents", o(b))], {"channels": 0})
    case("DecodeGif err bmp", "DecodeGif", [("contents", o(b))])
    case("DecodeBmp err short", "DecodeBmp", [("contents", o(b[:31]))], {"channels": 0})
    case("DecodeBmp err extra", "DecodeBmp", [("contents", o(b + b"\x00\x00"))], {"channels": 0})
    case("DecodeBmp err truncated", "DecodeBmp", [("contents", o(b[:-5]))], {"channels": 0})

    def patch(b, off, fmt, v):
        b = bytearray(b)
        struct.pack_into(fmt, b, off, v)
        return bytes(b)
    case("DecodeBmp err 16-bit", "DecodeBmp", [("contents", o(patch(b, 28, "<h", 16)))], {"channels": 0})
    case("DecodeBmp err width", "DecodeBmp", [("contents", o(patch(b, 18, "<i", 0)))], {"channels": 0})
    case("DecodeBmp err height", "DecodeBmp", [("contents", o(patch(b, 22, "<i", 0)))], {"channels": 0})
    case("DecodeBmp err header", "DecodeBmp", [("contents", o(patch(b, 10, "<i", -4)))], {"channels": 0})
    case("DecodeBmp err huge", "DecodeBmp", [("contents", o(patch(patch(b, 18, "<i", 1 << 20), 22, "<i", 1 << 20)))], {"channels": 0})
    case("DecodeBmp err huge width", "DecodeBmp", [("contents", o(patch(b, 18, "<i", 60000000)))], {"channels": 0})
    case("DecodeBmp err negative huge", "DecodeBmp", [("contents", o(patch(b, 22, "<i", -(1 << 24))))], {"channels": 0})


def fractional_pools():
    x = rng.uniform(-1, 1, (2, 11, 9, 3)).astype(f32)
    for op in ("FractionalMaxPool", "FractionalAvgPool"):
        for ratio in ([1.0, 1.44, 1.73, 1.0], [1.0, 2.0, 2.0, 1.0], [1.0, 1.5, 3.2, 1.0], [1.0, 1.0, 1.0, 1.0],
                      [1.0, 11.0, 4.5, 1.0]):
            for pseudo in (False, True):
                for ov in (False, True):
                    case("%s %s pseudo%d ov%d [exact]" % (op, ratio, pseudo, ov), op, [("value", x)],
                         {"pooling_ratio": ratio, "pseudo_random": pseudo, "overlapping": ov, "deterministic": True,
                          "seed": 7, "seed2": 3})
        for dt in (f64, i32, i64):
            v = (rng.uniform(-50, 50, (1, 7, 10, 2))).astype(dt)
            for pseudo in (False, True):
                case("%s %s pseudo%d [exact]" % (op, np.dtype(dt).name, pseudo), op, [("value", v)],
                     {"pooling_ratio": [1.0, 1.6, 1.3, 1.0], "pseudo_random": pseudo, "overlapping": True,
                      "deterministic": True, "seed": 123456789, "seed2": 0})
        case("%s deterministic second run [run2]" % op, op, [("value", x)],
             {"pooling_ratio": [1.0, 1.3, 1.7, 1.0], "pseudo_random": False, "overlapping": True, "deterministic": True,
              "seed": 11, "seed2": 12})
        case("%s seed2 only" % op, op, [("value", x)],
             {"pooling_ratio": [1.0, 1.4, 1.4, 1.0], "pseudo_random": True, "overlapping": False, "deterministic": True,
              "seed": 0, "seed2": 99})
        big = rng.uniform(-1, 1, (1, 61, 37, 1)).astype(f32)
        for pseudo in (False, True):
            case("%s big pseudo%d" % (op, pseudo), op, [("value", big)],
                 {"pooling_ratio": [1.0, 1.9, 1.23, 1.0], "pseudo_random": pseudo, "overlapping": True,
                  "deterministic": True, "seed": -5, "seed2": 1 << 40})
        xn = x.copy()
        xn[0, :3, :3, 0] = np.nan
        xn[1, 2, 2, :] = np.inf
        xn[1, 3, 3, 1] = -np.inf
        case("%s nan inf" % op, op, [("value", xn)],
             {"pooling_ratio": [1.0, 1.5, 1.5, 1.0], "pseudo_random": False, "overlapping": False, "deterministic": True,
              "seed": 1, "seed2": 2})
        at = {"pseudo_random": False, "overlapping": False, "deterministic": True, "seed": 1, "seed2": 2}
        case("%s err ratio len" % op, op, [("value", x)], dict(at, pooling_ratio=[1.0, 1.5, 1.0]))
        case("%s err ratio small" % op, op, [("value", x)], dict(at, pooling_ratio=[1.0, 0.5, 1.5, 1.0]))
        case("%s err ratio channel" % op, op, [("value", x)], dict(at, pooling_ratio=[1.0, 1.5, 1.5, 2.0]))
        case("%s err ratio big" % op, op, [("value", x)], dict(at, pooling_ratio=[1.0, 12.0, 1.5, 1.0]))
        case("%s err rank" % op, op, [("value", x[0])], dict(at, pooling_ratio=[1.0, 1.5, 1.5, 1.0]))
        case("%s err empty" % op, op, [("value", x[:, :0])], dict(at, pooling_ratio=[1.0, 1.5, 1.5, 1.0]))
        case("%s err seed not deterministic" % op, op, [("value", x)],
             dict(at, pooling_ratio=[1.0, 1.5, 1.5, 1.0], deterministic=False))


def bbox_samplers():
    boxes = np.array([[[0.1, 0.2, 0.5, 0.6], [0.3, 0.3, 0.9, 0.8]]], f32)
    one = np.array([[[0.0, 0.0, 1.0, 1.0]]], f32)
    none = np.zeros([1, 0, 4], f32)
    variants = [({}, 0.1), ({"aspect_ratio_range": [0.5, 2.0], "area_range": [0.1, 0.9]}, 0.3),
                ({"aspect_ratio_range": [1.0, 1.0], "area_range": [0.5, 0.5], "max_attempts": 3}, 0.0),
                ({"aspect_ratio_range": [0.2, 5.0], "area_range": [0.01, 1.0], "max_attempts": 1000}, 0.9),
                ({"area_range": [0.9, 1.0], "max_attempts": 2}, 1.0)]
    sizes = [(480, 640, 3), (37, 23, 1), (1, 1, 3), (1000, 17, 3)]
    sn = [0]
    for vi, (attrs, mc) in enumerate(variants):
        for hw in sizes:
            for bn, bx in (("boxes", boxes), ("whole", one), ("none", none)):
                at = dict(attrs, use_image_if_no_bounding_boxes=True)
                for sd in ([7, 11], [-3, 2 ** 40]):
                    case("StatelessSDBB v%d %s %s seed%s" % (vi, hw, bn, sd), "StatelessSampleDistortedBoundingBox",
                         [("image_size", A(hw, i32)), ("bounding_boxes", bx), ("min_object_covered", A(mc, f32)),
                          ("seed", A(sd, i64))], at)
                # stateful: eager TF keeps one kernel (one generator) per distinct attrs, so every case
                # has seeds of its own, and its "[run2]" twin (TF's second call) follows it at once
                sn[0] += 1
                for nm in ("", " second run [run2]"):
                    case("SDBV2 v%d %s %s%s" % (vi, hw, bn, nm), "SampleDistortedBoundingBoxV2",
                         [("image_size", A(hw, i32)), ("bounding_boxes", bx), ("min_object_covered", A(mc, f32))],
                         dict(at, seed=5 + sn[0], seed2=9))
                case("SDB v1 v%d %s %s" % (vi, hw, bn), "SampleDistortedBoundingBox",
                     [("image_size", A(hw, i32)), ("bounding_boxes", bx)], dict(at, seed=0, seed2=4 + sn[0], min_object_covered=mc))
    for dt in (np.uint8, np.int8, np.int16, i64):
        case("StatelessSDBB %s" % np.dtype(dt).name, "StatelessSampleDistortedBoundingBox",
             [("image_size", A([100, 60, 3], dt)), ("bounding_boxes", boxes), ("min_object_covered", A(0.2, f32)),
              ("seed", A([1, 2], i32))], {"use_image_if_no_bounding_boxes": False})
    sl = lambda isz, bx=boxes, mc=0.1, sd=(1, 2), **at: case(  # noqa: E731
        "StatelessSDBB err %s" % at.pop("nm"), "StatelessSampleDistortedBoundingBox",
        [("image_size", isz), ("bounding_boxes", bx), ("min_object_covered", A(mc, f32)), ("seed", A(sd, i64))], at)
    sl(A([10, 10, 3], i32), nm="no boxes", bx=none)
    sl(A([10, 10], i32), nm="size 2")
    sl(A([[10, 10, 3]], i32), nm="size rank")
    sl(A([10, 10, 3], i32), nm="box rank", bx=boxes[0])
    sl(A([10, 10, 3], i32), nm="box coords", bx=np.zeros([1, 2, 3], f32))
    sl(A([10, 10, 3], i32), nm="box range", bx=np.array([[[0.1, 0.2, 1.5, 0.6]]], f32))
    sl(A([10, 10, 3], i32), nm="box nan", bx=np.array([[[0.1, np.nan, 0.5, 0.6]]], f32))
    sl(A([10, 10, 3], i32), nm="min covered", mc=-0.5)
    sl(A([10, 10, 3], i32), nm="seed shape", sd=(1, 2, 3))
    sl(A([-1, 10, 3], i32), nm="negative height")
    sl(A([10, 2 ** 31 - 1, 3], i64), nm="huge width")
    sl(A([10, 10, 3], i32), nm="aspect", aspect_ratio_range=[0.0, 1.0])
    sl(A([10, 10, 3], i32), nm="area", area_range=[0.1, 1.5])
    sl(A([10, 10, 3], i32), nm="area zero", area_range=[0.0, 0.5])
    sl(A([10, 10, 3], i32), nm="attempts", max_attempts=0)
    sl(A([10, 10, 3], i32), nm="area len", area_range=[0.1, 0.5, 0.7])


def glimpses():
    img = rng.uniform(-1, 1, (2, 9, 12, 3)).astype(f32)
    offs = np.array([[0.1, -0.2], [-0.5, 0.4]], f32)
    for op in ("ExtractGlimpse", "ExtractGlimpseV2"):
        # glimpses that stay inside the image (no noise) for every centered / normalized choice
        for cen in (True, False):
            for nor in (True, False):
                if nor and cen:
                    o = offs
                elif nor:
                    o = np.array([[0.2, 0.3], [0.05, 0.1]], f32)
                elif cen:
                    o = np.array([[-1.5, 0.7], [1.2, -2.0]], f32)
                else:
                    o = np.array([[2.0, 3.0], [1.4, 4.9]], f32)
                for size in ([3, 4], [1, 1], [5, 2]):
                    case("%s cen%d nor%d %s" % (op, cen, nor, size), op,
                         [("input", img), ("size", A(size, i32)), ("offsets", o)],
                         {"centered": cen, "normalized": nor, "uniform_noise": False, "noise": "zero"})
        # partly or wholly outside: zero noise is deterministic
        out = np.array([[0.9, -0.95], [-1.0, 1.0]], f32)
        for size in ([6, 8], [9, 12], [20, 30], [2, 2]):
            case("%s outside zero %s" % (op, size), op, [("input", img), ("size", A(size, i32)), ("offsets", out)],
                 {"centered": True, "normalized": True, "uniform_noise": False, "noise": "zero"})
        case("%s far outside zero" % op, op, [("input", img), ("size", A([3, 3], i32)),
                                              ("offsets", np.array([[50.0, 50.0], [-50.0, -60.0]], f32))],
             {"centered": False, "normalized": False, "uniform_noise": False, "noise": "zero"})
        case("%s empty size" % op, op, [("input", img), ("size", A([0, 4], i32)), ("offsets", offs)],
             {"centered": True, "normalized": True, "uniform_noise": False, "noise": "zero"})
        case("%s empty batch" % op, op, [("input", img[:0]), ("size", A([2, 4], i32)), ("offsets", offs[:0])],
             {"centered": True, "normalized": True, "uniform_noise": True, "noise": ""})
        at = {"centered": True, "normalized": True, "uniform_noise": True, "noise": ""}
        case("%s err rank" % op, op, [("input", img[0]), ("size", A([2, 2], i32)), ("offsets", offs)], at)
        case("%s err size" % op, op, [("input", img), ("size", A([2, 2, 2], i32)), ("offsets", offs)], at)
        case("%s err negative size" % op, op, [("input", img), ("size", A([-2, 2], i32)), ("offsets", offs)], at)
        case("%s err offsets rank" % op, op, [("input", img), ("size", A([2, 2], i32)), ("offsets", offs[0])], at)
        case("%s err offsets batch" % op, op, [("input", img), ("size", A([2, 2], i32)), ("offsets", offs[:1])], at)
        case("%s err offsets width" % op, op, [("input", img), ("size", A([2, 2], i32)), ("offsets", np.zeros([2, 3], f32))], at)
        case("%s err noise both" % op, op, [("input", img), ("size", A([2, 2], i32)), ("offsets", offs)],
             dict(at, noise="zero"))
        case("%s err noise name" % op, op, [("input", img), ("size", A([2, 2], i32)), ("offsets", offs)],
             dict(at, uniform_noise=False, noise="pink"))


def truncated_normal():
    op = "StatelessParameterizedTruncatedNormal"
    inf = float("inf")

    def c(nm, shape, seed, m, sd, lo, hi, dt=f32, sdt=i64):
        case("%s %s [exact]" % (op, nm), op, [("shape", A(shape, i32)), ("seed", A(seed, sdt)), ("means", A(m, dt)),
                                      ("stddevs", A(sd, dt)), ("minvals", A(lo, dt)), ("maxvals", A(hi, dt))])
    for dt in (np.float16, f32, f64):
        n = np.dtype(dt).name
        # each sampler: randn (wide bounds), uniform (narrow), exponential (one-sided far tail), reversed
        c("%s randn" % n, [20], [1, 2], 0.0, 1.0, -2.0, 2.0, dt)
        c("%s uniform" % n, [20], [3, 4], 0.5, 2.0, 0.0, 1.0, dt)
        c("%s exponential" % n, [20], [5, 6], 0.0, 1.0, 2.5, inf, dt)
        c("%s exponential bounded" % n, [12], [5, 7], 0.0, 1.0, 2.0, 3.0, dt)
        c("%s lower tail" % n, [15], [7, 8], 1.0, 0.5, -inf, -1.0, dt)
        c("%s above mean" % n, [15], [9, 1], 0.0, 1.0, -inf, -3.0, dt)
        c("%s one-sided" % n, [10], [9, 2], 0.0, 1.0, -0.5, inf, dt)
        # per-batch parameters, broadcast, sample dims in front
        c("%s batches" % n, [4, 3], [11, 12], [0.0, 1.0, -1.0], [1.0, 0.1, 3.0], [-1.0, 0.9, 0.0], [1.0, 1.1, inf], dt)
        c("%s bcast" % n, [2, 2, 3], [13, -14], [[0.0], [5.0]], [1.0, 2.0, 0.5], -1.0, [[2.0, 3.0, 4.0]], dt)
        c("%s scalar params" % n, [3, 5], [2 ** 40, 7], 2.0, 3.0, 1.0, 9.0, dt)
    c("int32 seed", [6], [1, 2], 0.0, 1.0, -1.0, 1.0, sdt=i32)
    c("empty", [0, 3], [1, 2], [0.0, 0.0, 0.0], 1.0, -1.0, 1.0)
    c("err params", [4], [1, 2], 0.0, -1.0, -1.0, 1.0)
    c("err bounds", [4], [1, 2], 0.0, 1.0, 1.0, -1.0)
    c("err infinite", [4], [1, 2], 0.0, 1.0, -inf, inf)
    c("err seed", [4], [1, 2, 3], 0.0, 1.0, -1.0, 1.0)
    c("err bcast", [4, 3], [1, 2], [0.0, 1.0], [1.0, 1.0, 1.0], -1.0, 1.0)
    c("err ends", [4, 2], [1, 2], [0.0, 1.0, 2.0], 1.0, -1.0, 1.0)
    c("err shape rank", [[4, 2]], [1, 2], 0.0, 1.0, -1.0, 1.0)


def _webp(img, lossless=False, q=80.0):
    """a still WebP of img (h x w x 3 or 4, uint8) through the system's libwebp (ctypes)"""
    import ctypes
    W = ctypes.CDLL("libwebp.so.7")
    h, w, c = img.shape
    out = ctypes.POINTER(ctypes.c_uint8)()
    buf = np.ascontiguousarray(img, np.uint8)
    p = buf.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
    if lossless:
        n = (W.WebPEncodeLosslessRGBA if c == 4 else W.WebPEncodeLosslessRGB)(p, w, h, w * c, ctypes.byref(out))
    else:
        n = (W.WebPEncodeRGBA if c == 4 else W.WebPEncodeRGB)(p, w, h, w * c, ctypes.c_float(q), ctypes.byref(out))
    b = ctypes.string_at(out, n)
    W.WebPFree(out)
    return b


def _webp_anim(frames):
    """an animated lossless WebP of RGBA frames through libwebpmux's WebPAnimEncoder (ctypes; the
    structs are zeroed buffers the library's Init functions fill, the few fields set by offset)"""
    import ctypes
    W = ctypes.CDLL("libwebp.so.7")
    M = ctypes.CDLL("libwebpmux.so.3")
    M.WebPAnimEncoderNewInternal.restype = ctypes.c_void_p
    h, w, _ = frames[0].shape
    opts = ctypes.create_string_buffer(256)
    assert M.WebPAnimEncoderOptionsInitInternal(opts, 0x0108)
    enc = M.WebPAnimEncoderNewInternal(w, h, opts, 0x0108)
    cfg = ctypes.create_string_buffer(512)
    assert W.WebPConfigInitInternal(cfg, 0, ctypes.c_float(75.0), 0x020f)
    struct.pack_into("<i", cfg, 0, 1)  # lossless
    for k, fr in enumerate(frames):
        pic = ctypes.create_string_buffer(1024)
        assert W.WebPPictureInitInternal(pic, 0x020f)
        struct.pack_into("<iiii", pic, 0, 1, 0, w, h)  # use_argb, colorspace, width, height
        buf = np.ascontiguousarray(fr, np.uint8)
        assert W.WebPPictureImportRGBA(pic, buf.ctypes.data_as(ctypes.c_void_p), w * 4)
        assert M.WebPAnimEncoderAdd(ctypes.c_void_p(enc), pic, 100 * k, cfg)
        W.WebPPictureFree(pic)
    M.WebPAnimEncoderAdd(ctypes.c_void_p(enc), None, 100 * len(frames), None)
    data = (ctypes.c_void_p * 2)()
    assert M.WebPAnimEncoderAssemble(ctypes.c_void_p(enc), data)
    b = ctypes.string_at(data[0], data[1])
    W.WebPFree(ctypes.c_void_p(data[0]))
    M.WebPAnimEncoderDelete(ctypes.c_void_p(enc))
    return b


def webp():
    u8 = lambda *shape: rng.integers(0, 256, shape).astype(np.uint8)  # noqa: E731
    smooth = np.stack(np.meshgrid(np.arange(13) * 19, np.arange(9) * 28), -1)
    smooth = np.concatenate([smooth, (smooth[..., :1] + smooth[..., 1:]) // 2], -1).astype(np.uint8)  # 9x13x3
    rgba = np.concatenate([smooth, u8(9, 13, 1)], -1)
    stills = {"lossy rgb": _webp(smooth), "lossy noisy": _webp(u8(6, 5, 3), q=30.0), "lossless rgb": _webp(u8(4, 7, 3), True),
              "lossy rgba": _webp(rgba), "lossless rgba": _webp(rgba, True)}
    frames = [np.concatenate([u8(5, 6, 3), np.full((5, 6, 1), 255, np.uint8)], -1) for _ in range(3)]
    frames[1][1:3, 2:5, 3] = 0  # a transparent patch: the canvas keeps the previous frame there
    anim = _webp_anim(frames)
    for nm, b in list(stills.items()) + [("anim", anim)]:
        case("DecodeWebP %s" % nm, "DecodeWebP", [("contents", o(b))], {"channels": 0})
        for ch in (3, 4):
            case("DecodeWebP %s ch%d" % (nm, ch), "DecodeWebP", [("contents", o(b))], {"channels": ch})
        for ex in (True, False):
            case("DecodeImage webp %s expand%d" % (nm, ex), "DecodeImage", [("contents", o(b))],
                 {"channels": 0, "dtype": tf.uint8, "expand_animations": ex})
        case("DecodeJpeg webp %s" % nm, "DecodeJpeg", [("contents", o(b))], {"channels": 0})
        case("DecodePng webp %s" % nm, "DecodePng", [("contents", o(b))], {"channels": 0, "dtype": tf.uint8})
    b = stills["lossy rgb"]
    case("DecodeImage webp err float", "DecodeImage", [("contents", o(b))], {"channels": 0, "dtype": tf.float32, "expand_animations": True})
    case("DecodeImage webp err ch1", "DecodeImage", [("contents", o(b))], {"channels": 1, "dtype": tf.uint8, "expand_animations": True})
    case("DecodeWebP err truncated", "DecodeWebP", [("contents", o(b[:len(b) // 2]))], {"channels": 0})
    case("DecodeWebP err header", "DecodeWebP", [("contents", o(b[:20]))], {"channels": 0})
    case("DecodeWebP err junk", "DecodeWebP", [("contents", o(b"RIFF\x10\x00\x00\x00WEBPjunkjunkjunk"))], {"channels": 0})
    case("DecodeWebP err anim truncated", "DecodeWebP", [("contents", o(anim[:len(anim) * 3 // 4]))], {"channels": 0})


_CMYK_WRITER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
/* argv: width height adobe(0/1) ycck(0/1); stdin: CMYK pixels; stdout: the JPEG */
int main(int argc, char **argv) {
  if (argc < 5) return 2;
  int w = atoi(argv[1]), h = atoi(argv[2]);
  unsigned char *px = malloc((size_t)w * h * 4);
  if (!px || fread(px, 4, (size_t)w * h, stdin) != (size_t)w * h) return 3;
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr err;
  ci.err = jpeg_std_error(&err);
  jpeg_create_compress(&ci);
  jpeg_stdio_dest(&ci, stdout);
  ci.image_width = w, ci.image_height = h, ci.input_components = 4, ci.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&ci);
  jpeg_set_colorspace(&ci, atoi(argv[4]) ? JCS_YCCK : JCS_CMYK);
  ci.write_Adobe_marker = atoi(argv[3]) ? TRUE : FALSE;
  jpeg_set_quality(&ci, 90, TRUE);
  jpeg_start_compress(&ci, TRUE);
  while (ci.next_scanline < ci.image_height) {
    JSAMPROW row = px + (size_t)ci.next_scanline * w * 4;
    jpeg_write_scanlines(&ci, &row, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  return 0;
}
"""


def _cmyk_jpeg(px, adobe, ycck):
    """a CMYK (or YCCK) JPEG of px (h x w x 4) by a small libjpeg program built here (TF writes none)"""
    import subprocess
    import tempfile
    d = tempfile.mkdtemp()
    src, exe = os.path.join(d, "w.c"), os.path.join(d, "w")
    with open(src, "w") as f:
        f.write(_CMYK_WRITER)
    subprocess.check_call(["cc", "-O1", "-o", exe, src, "-ljpeg"])
    h, w, _ = px.shape
    return subprocess.run([exe, str(w), str(h), str(int(adobe)), str(int(ycck))], input=px.astype(np.uint8).tobytes(),
                          stdout=subprocess.PIPE, check=True).stdout


def cmyk_jpeg():
    px = np.concatenate([np.stack(np.meshgrid(np.arange(11) * 23, np.arange(9) * 28), -1),
                         rng.integers(0, 256, (9, 11, 2))], -1).astype(np.uint8)
    for adobe in (True, False):
        for ycck in (False, True):
            if ycck and not adobe:
                continue  # YCCK needs the Adobe marker to be recognised
            j = _cmyk_jpeg(px, adobe, ycck)
            nm = "%s%s" % ("adobe" if adobe else "plain", " ycck" if ycck else "")
            for ch in (0, 1, 3):
                case("DecodeJpeg cmyk %s ch%d" % (nm, ch), "DecodeJpeg", [("contents", o(j))], {"channels": ch})
            case("DecodeImage cmyk %s float32" % nm, "DecodeImage", [("contents", o(j))],
                 {"channels": 0, "dtype": tf.float32, "expand_animations": True})
            case("DecodeJpeg cmyk %s accurate no-fancy ratio2" % nm, "DecodeJpeg", [("contents", o(j))],
                 {"channels": 3, "dct_method": "INTEGER_ACCURATE", "fancy_upscaling": False, "ratio": 2})


def crop_jpeg():
    big = np.stack(np.meshgrid(np.arange(37) * 7, np.arange(29) * 8), -1)
    big = np.concatenate([big, rng.integers(0, 256, (29, 37, 1))], -1).astype(np.uint8)
    js = {"420": tf.io.encode_jpeg(big).numpy(), "444": tf.io.encode_jpeg(big, chroma_downsampling=False).numpy(),
          "gray": tf.io.encode_jpeg(big[..., :1]).numpy(),
          "progressive": tf.io.encode_jpeg(big, progressive=True).numpy(),
          "cmyk": _cmyk_jpeg(np.concatenate([big, big[..., :1]], -1), True, False)}
    wins = [[0, 0, 29, 37], [3, 5, 10, 12], [8, 17, 21, 20], [16, 16, 8, 8], [28, 36, 1, 1], [1, 9, 5, 7]]
    for nm, j in js.items():
        for win in wins:
            for ch in (0, 1, 3) if nm == "420" and win == [3, 5, 10, 12] else (0,):
                case("DecodeAndCropJpeg %s %s ch%d" % (nm, win, ch), "DecodeAndCropJpeg",
                     [("contents", o(j)), ("crop_window", A(win, i32))], {"channels": ch})
    j = js["420"]
    for at in ({"ratio": 2}, {"ratio": 4}, {"fancy_upscaling": False}, {"dct_method": "INTEGER_ACCURATE"}):
        case("DecodeAndCropJpeg %s" % at, "DecodeAndCropJpeg", [("contents", o(j)), ("crop_window", A([2, 3, 5, 6], i32))],
             dict(at, channels=3))
    for win in ([0, 0, 30, 37], [-1, 0, 5, 5], [0, 0, 0, 5], [5, 30, 4, 8], [0, 0, 5, -2]):
        case("DecodeAndCropJpeg err %s" % win, "DecodeAndCropJpeg", [("contents", o(j)), ("crop_window", A(win, i32))], {"channels": 0})
    case("DecodeAndCropJpeg err window rank", "DecodeAndCropJpeg", [("contents", o(j)), ("crop_window", A([[0, 0, 1, 1]], i32))], {"channels": 0})
    case("DecodeAndCropJpeg err window size", "DecodeAndCropJpeg", [("contents", o(j)), ("crop_window", A([0, 0, 1], i32))], {"channels": 0})
    case("DecodeAndCropJpeg err png", "DecodeAndCropJpeg",
         [("contents", o(tf.io.encode_png(big).numpy())), ("crop_window", A([0, 0, 1, 1], i32))], {"channels": 0})
    case("DecodeAndCropJpeg err ch4", "DecodeAndCropJpeg", [("contents", o(j)), ("crop_window", A([0, 0, 1, 1], i32))], {"channels": 4})


def main():
    image_decode()
    cmyk_jpeg()
    crop_jpeg()
    webp()
    fractional_pools()
    bbox_samplers()
    glimpses()
    truncated_normal()
    g.write_unit_header("c4_cases")


if __name__ == "__main__":
    main()
