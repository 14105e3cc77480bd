#!/usr/bin/env python3
"""make_decode_seeds.py - writes the seed corpora of the one-op fuzz targets: fuzz/seeds/fuzz_media/
(fuzz/fuzz_media.c: WAV, GIF, BMP, WebP, JPEG incl. CMYK / YCCK, PNG) and fuzz/seeds/fuzz_records/
(fuzz/fuzz_records.c: JSON Example, Example, SequenceExample, serialized TensorProto, raw / zlib /
gzip / zstd bytes). Each seed's first byte is the target's case index (the tables in those files).

TensorFlow writes what it can (PNG, JPEG, WAV, protos, TensorProtos); GIF and BMP come from the
hand-written encoders of tools/gen_c4_cases.py, WebP from the system libwebp (ctypes, as there),
CMYK JPEG from gen_c4_cases's small libjpeg program, WAV variants from tools/gen_c1_cases.py.
Seeds stay small (a few hundred bytes to a few KiB) so that every execution is fast.
Run: build/venv/bin/python tools/make_decode_seeds.py
"""
import gzip
import os
import shutil
import subprocess
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_c1_cases as c1  # noqa: E402
import gen_c4_cases as c4  # noqa: E402
import tensorflow as tf  # noqa: E402

ROOT = os.path.dirname(HERE)
rng = np.random.default_rng(2)

# case indices: keep in step with fmedia_cases / frec_cases
WAV, WAV_CH2, GIF, BMP, BMP4, WEBP, WEBP3, JPEG, JPEG_OPTS, PNG16, CROP, IMAGE, IMAGE_F = range(13)
JSON, SINGLE, SEQ, PT_F32, PT_STR, PT_I64, PT_BOOL, PT_HALF, PT_C128, PT_U8, RAW, ZLIB, GZIP, ZSTD = range(14)


def write(target, name, case, data):
    d = os.path.join(ROOT, "fuzz", "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes([case]) + data)


def u8(*shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


def media():
    t = "fuzz_media"
    mono = (np.sin(np.arange(120) * 0.2) * 9000).astype(np.int16)
    write(t, "wav_mono", WAV, c1.wav(mono))
    write(t, "wav_stereo", WAV_CH2, c1.wav(np.stack([mono, -mono], 1).reshape(-1), channels=2, rate=8000))
    write(t, "wav_trailing_chunk", WAV, c1.wav(mono[:20], post=b"LIST" + (4).to_bytes(4, "little") + b"INFO"))
    write(t, "tf_wav", WAV, tf.audio.encode_wav(tf.constant(np.linspace(-1, 1, 64, dtype=np.float32).reshape(32, 2)),
                                                16000).numpy())
    gct = [(0, 0, 0), (255, 0, 0), (0, 255, 0), (0, 0, 255)]
    fr1 = {"idx": rng.integers(0, 4, (6, 5)), "interlace": True}
    fr2 = {"idx": rng.integers(0, 2, (3, 2)), "left": 1, "top": 2, "transparent": 2, "disposal": 2,
           "lct": [(9, 9, 9), (200, 100, 50)], "lct_bits": 1}
    g = c4.gif(5, 6, [fr1, fr2], gct=gct)
    write(t, "gif_two_frames", GIF, g)
    write(t, "image_gif", IMAGE, g)
    write(t, "image_f_gif", IMAGE_F, c4.gif(3, 3, [{"idx": rng.integers(0, 4, (3, 3))}], gct=gct))
    write(t, "bmp24", BMP, c4.bmp(u8(3, 5, 3)))
    write(t, "bmp32_top_down", BMP4, c4.bmp(u8(4, 3, 4), top_down=True))
    write(t, "bmp8", BMP, c4.bmp(u8(2, 6, 1)))
    write(t, "image_bmp", IMAGE, c4.bmp(u8(2, 2, 3)))
    smooth = np.clip(np.add.outer(np.arange(8) * 20, np.arange(8) * 10)[..., None] + np.array([0, 40, 80]), 0,
                     255).astype(np.uint8)
    write(t, "webp_lossy", WEBP, c4._webp(smooth))
    write(t, "webp_lossless_rgba", WEBP3, c4._webp(u8(4, 5, 3), True))
    write(t, "webp_anim", WEBP, c4._webp_anim([u8(4, 4, 4), u8(4, 4, 4)]))
    write(t, "image_webp", IMAGE, c4._webp(u8(3, 3, 3), True))
    rgb = tf.constant(smooth)
    write(t, "jpeg_rgb", JPEG, tf.io.encode_jpeg(rgb, quality=70).numpy())
    write(t, "jpeg_progressive", JPEG_OPTS, tf.io.encode_jpeg(rgb, progressive=True, chroma_downsampling=False).numpy())
    write(t, "jpeg_gray_crop", CROP, tf.io.encode_jpeg(tf.constant(u8(8, 8, 1))).numpy())
    cmyk = np.concatenate([smooth, smooth[..., :1]], -1)
    write(t, "jpeg_cmyk_adobe", JPEG, c4._cmyk_jpeg(cmyk, True, False))
    write(t, "jpeg_ycck", JPEG, c4._cmyk_jpeg(cmyk, True, True))
    write(t, "image_jpeg_cmyk", IMAGE_F, c4._cmyk_jpeg(cmyk[:4, :4], False, False))
    write(t, "png16", PNG16, tf.io.encode_png(tf.constant(rng.integers(0, 65536, (3, 4, 2)).astype(np.uint16))).numpy())
    write(t, "png_rgba", IMAGE, tf.io.encode_png(tf.constant(u8(4, 3, 4))).numpy())
    write(t, "png_gray", IMAGE_F, tf.io.encode_png(tf.constant(u8(5, 2, 1)), compression=9).numpy())


def records():
    t = "fuzz_records"
    for i, j in enumerate([
            '{"features": {"feature": {"b": {"int64List": {"value": ["1", 2, "-3"]}}, '
            '"a": {"floatList": {"value": [0.5, "NaN", "-Infinity", 1e-40]}}}}}',
            '{"features": {"feature": {"s": {"bytes_list": {"value": ["aGk=", "", "_-8"]}}, "e": {}}}}',
            '{"features": {"feature": {"k\\u00e9y\\n": {"bytesList": {"value": null}}, "n": null}}}']):
        write(t, "json_%d" % i, JSON, j.encode())
    F = tf.train.Feature

    def fl(*v):
        return F(float_list=tf.train.FloatList(value=v))

    def il(*v):
        return F(int64_list=tf.train.Int64List(value=v))

    def bl(*v):
        return F(bytes_list=tf.train.BytesList(value=v))

    ex = tf.train.Example(features=tf.train.Features(feature={
        "sp": il(3, -1, 1 << 40), "ss": bl(b"a", b""), "f": fl(1.5, -2), "s": bl(b"str"), "v": fl(1, 2, 3)}))
    write(t, "single_full", SINGLE, ex.SerializeToString(deterministic=True))
    ex2 = tf.train.Example(features=tf.train.Features(feature={"f": fl(0, 1), "sp": il()}))
    write(t, "single_min", SINGLE, ex2.SerializeToString(deterministic=True))
    se = c1.seq_example({"cs": il(5, 6), "cd": fl(1, 2), "cr": bl(b"x", b"yz")},
                        {"fs": [bl(b"p"), bl(), bl(b"q", b"r")], "fd": [il(1, 2), il(3, 4)], "fr": [fl(0.5), fl(), fl(1, 2)]})
    write(t, "seq_full", SEQ, se)
    write(t, "seq_ctx_only", SEQ, c1.seq_example({"cd": fl(3, 4)}, {}))
    ser = tf.io.serialize_tensor
    write(t, "pt_f32", PT_F32, ser(tf.constant(rng.standard_normal((2, 3)).astype(np.float32))).numpy())
    from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2
    vals = tensor_pb2.TensorProto(dtype=tf.float32.as_datatype_enum, float_val=[1.0, 2.0],
                                  tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[{"size": 2}]))
    write(t, "pt_f32_vals", PT_F32, vals.SerializeToString())  # float_val, not tensor_content
    write(t, "pt_str", PT_STR, ser(tf.constant([[b"ab", b""], [b"\x00\xff", b"xyz"]])).numpy())
    write(t, "pt_i64", PT_I64, ser(tf.constant([1 << 62, -5], tf.int64)).numpy())
    write(t, "pt_bool", PT_BOOL, ser(tf.constant([True, False, True])).numpy())
    write(t, "pt_half", PT_HALF, ser(tf.constant([1.5, -0.0, np.inf], tf.float16)).numpy())
    write(t, "pt_c128", PT_C128, ser(tf.constant([1 + 2j, -3j], tf.complex128)).numpy())
    write(t, "pt_u8_scalar", PT_U8, ser(tf.constant(7, tf.uint8)).numpy())
    write(t, "pt_u8_empty", PT_U8, ser(tf.zeros((0, 3), tf.uint8)).numpy())
    text = b"the quick brown fox " * 8
    write(t, "raw", RAW, text)
    write(t, "zlib", ZLIB, zlib.compress(text))
    write(t, "gzip", GZIP, gzip.compress(text, mtime=0))
    if shutil.which("zstd"):
        import tempfile
        with tempfile.NamedTemporaryFile() as f:  # from a file, so the frame records its content size
            f.write(text)
            f.flush()
            write(t, "zstd", ZSTD, subprocess.run(["zstd", "-q", "-c", f.name], stdout=subprocess.PIPE, check=True).stdout)


if __name__ == "__main__":
    media()
    records()
