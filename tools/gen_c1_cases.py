#!/usr/bin/env python3
"""gen_c1_cases.py - writes tests/unit/c1_cases.h: the ops added in session 19 (c1) against
TensorFlow (eager tf.raw_ops, TF's CPU kernels): the audio family (DecodeWav, EncodeWav,
AudioSpectrogram, Mfcc: every attribute, hostile WAV bytes and TF's error texts) and the io parsing
ops (DecodeCompressed, ParseTensor, SerializeTensor, ParseSingleExample, DecodeJSONExample); and
tests/unit/c1_seq_cases.h: ParseSequenceExampleV2, ParseSequenceExample and ParseSingleSequenceExample
(more than 8 inputs and outputs: its own struct).

Uses the machinery of tools/gen_array_cases.py. test_ops_c1 compares floats within 1e-5 relative.
Run: build/venv/bin/python tools/gen_c1_cases.py
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
# gen_array_cases.case catches InvalidArgument/OutOfRange/Unimplemented/FailedPrecondition; DecodeCompressed
# fails with DataLoss too: within this generator the last name stands for every OpError.
tf.errors.FailedPreconditionError = tf.errors.OpError
_attr_text = g.attr_text


def attr_text(key, v):
    """gen_array_cases.attr_text plus list(string) and list(shape) attrs (lists of str / of dim lists)."""
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return 'attr { key: "%s" value { list { %s } } }' % (key, " ".join('s: "%s"' % x for x in v))
    if isinstance(v, list) and v and all(isinstance(x, (list, tuple)) for x in v):
        return 'attr { key: "%s" value { list { %s } } }' % (
            key, " ".join("shape { %s }" % " ".join("dim { size: %d }" % d for d in x) for x in v))
    return _attr_text(key, v)


g.attr_text = attr_text
nan, inf = float("nan"), float("inf")
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
rng = np.random.default_rng(19)


def S(b):
    return np.array(b, dtype=object)


def wav(samples, rate=16000, channels=1, fmt_size=16, audio_format=1, bits=16, bps=None, bpsec=None, pre=b"",
        post=b"", data_size=None, riff=b"RIFF", wave=b"WAVE", extra_fmt=b""):
    data = np.asarray(samples, dtype="<i2").tobytes()
    bps = channels * 2 if bps is None else bps
    bpsec = bps * rate if bpsec is None else bpsec
    fmt = struct.pack("<HHIIHH", audio_format, channels, rate, bpsec & 0xffffffff, bps, bits) + extra_fmt
    body = wave + pre + b"fmt " + struct.pack("<I", fmt_size) + fmt + b"data" + \
        struct.pack("<I", len(data) if data_size is None else data_size) + data + post
    return riff + struct.pack("<I", len(body)) + body


def audio():
    t = np.arange(400)
    mono = (np.sin(t * 0.07) * 12000 + np.cos(t * 0.31) * 5000).astype(np.int16)
    st = np.stack([mono, (mono // 3)], 1).reshape(-1)
    edge = np.array([-32768, 32767, 0, -1, 1, 16384], np.int16)

    def D(name, b, **attrs):
        case("DecodeWav " + name, "DecodeWav", [("contents", S(b))], attrs)
    D("mono", wav(mono))
    D("stereo", wav(st, 44100, 2))
    D("edge values", wav(edge, 8000))
    for ch in (0, 1, 2, 3):
        D("stereo ch%d" % ch, wav(st, 22050, 2), desired_channels=ch)
    for n in (0, 5, 200, 500):
        D("mono samples%d" % n, wav(mono, 16000), desired_samples=n)
    D("mono ch2 samples450", wav(mono), desired_channels=2, desired_samples=450)
    D("empty data", wav([], 16000))
    D("empty data samples3", wav([], 16000), desired_samples=3)
    D("fmt 18", wav(edge, fmt_size=18, extra_fmt=b"\0\0"))
    D("JUNK before fmt", wav(edge, pre=b"JUNK" + struct.pack("<I", 4) + b"abcd"))
    D("bext and LIST", wav(edge, pre=b"bext" + struct.pack("<I", 2) + b"xy", post=b"LIST" + struct.pack("<I", 4) + b"info"))
    D("odd data size", wav(edge, data_size=11, post=b"\0"))
    D("trailing chunk", wav(edge, post=b"fact" + struct.pack("<I", 4) + b"\0\0\0\0"))
    D("chunk past end", wav(edge, post=b"fact" + struct.pack("<I", 1000)))
    # hostile input
    good = wav(edge)
    D("err empty", b"")
    D("err truncated header", good[:10])
    D("err truncated fmt", good[:30])
    D("err truncated data", good[:-3])
    D("err not riff", b"RIFX" + good[4:])
    D("err not wave", wav(edge, wave=b"WAVX"))
    D("err unexpected field", wav(edge, pre=b"LIST" + struct.pack("<I", 0)))
    D("err junk too big", wav(edge, pre=b"JUNK" + struct.pack("<I", 0x7fffffff)))
    D("err fmt size", wav(edge, fmt_size=20))
    D("err format code", wav(edge, audio_format=3))
    D("err channels 0", wav([], channels=0, bps=0))
    D("err bits 8", wav(edge, bits=8))
    D("err bytes per sample", wav(edge, bps=4))
    D("err bytes per second", wav(edge, bpsec=12345))
    D("err huge data chunk", wav(edge, data_size=0x80000000))
    D("err data size past end", wav(edge, data_size=0x10000000))
    D("err two data chunks", wav(edge, post=b"data" + struct.pack("<I", 2) + b"\0\0"))
    D("err no data", good[:36])
    D("err chunk header cut", wav(edge, post=b"fa"))
    D("err desired_channels", good, desired_channels=-2)
    D("err desired_samples", good, desired_samples=-5)

    # EncodeWav: rounding, clamping, NaN/Inf, channels
    x = np.array([[0.0, 0.5], [-0.5, 1.0], [-1.0, 1.5], [-2.0, 0.3333], [1e-5, -1e-5], [0.00001526, -0.00001526],
                  [nan, inf], [-inf, 0.99998]], f32)
    for rate in (16000, 44100, 1):
        case("EncodeWav rate%d" % rate, "EncodeWav", [("audio", x), ("sample_rate", A(rate, i32))])
    case("EncodeWav mono", "EncodeWav", [("audio", x[:, :1]), ("sample_rate", A(8000, i32))])
    case("EncodeWav empty frames", "EncodeWav", [("audio", np.zeros([0, 2], f32)), ("sample_rate", A(8000, i32))])
    case("EncodeWav err no channels", "EncodeWav", [("audio", np.zeros([3, 0], f32)), ("sample_rate", A(8000, i32))])
    case("EncodeWav err rate 0", "EncodeWav", [("audio", x), ("sample_rate", A(0, i32))])
    case("EncodeWav err rate negative", "EncodeWav", [("audio", x), ("sample_rate", A(-1, i32))])
    case("EncodeWav err rank", "EncodeWav", [("audio", x.reshape(-1)), ("sample_rate", A(8000, i32))])
    case("EncodeWav err rate rank", "EncodeWav", [("audio", x), ("sample_rate", A([8000], i32))])

    # AudioSpectrogram
    sig = (np.sin(np.arange(300) * 0.2) + 0.3 * np.cos(np.arange(300) * 1.3)).astype(f32).reshape(-1, 1)
    sig2 = rng.uniform(-1, 1, (130, 2)).astype(f32)
    for w, s in ((16, 8), (20, 7), (64, 32), (100, 100), (37, 50), (2, 1)):
        for sq in (False, True):
            case("AudioSpectrogram w%d s%d sq%d" % (w, s, sq), "AudioSpectrogram", [("input", sig)],
                 {"window_size": w, "stride": s, "magnitude_squared": sq})
    case("AudioSpectrogram stereo", "AudioSpectrogram", [("input", sig2)], {"window_size": 30, "stride": 10})
    case("AudioSpectrogram short", "AudioSpectrogram", [("input", sig[:10])], {"window_size": 16, "stride": 8})
    case("AudioSpectrogram no channels", "AudioSpectrogram", [("input", np.zeros([50, 0], f32))],
         {"window_size": 16, "stride": 8})
    case("AudioSpectrogram nan", "AudioSpectrogram", [("input", np.where(np.arange(40) == 5, nan, 0.5).astype(f32).reshape(-1, 1))],
         {"window_size": 8, "stride": 8})
    case("AudioSpectrogram err window", "AudioSpectrogram", [("input", sig)], {"window_size": 1, "stride": 8})
    case("AudioSpectrogram err stride", "AudioSpectrogram", [("input", sig)], {"window_size": 8, "stride": 0})
    case("AudioSpectrogram err rank", "AudioSpectrogram", [("input", sig.reshape(-1))], {"window_size": 8, "stride": 4})

    # Mfcc over TF's own spectrograms
    spec = tf.raw_ops.AudioSpectrogram(input=tf.constant(rng.uniform(-1, 1, (2000, 1)).astype(f32)), window_size=480,
                                       stride=160, magnitude_squared=True).numpy()
    spec2 = tf.raw_ops.AudioSpectrogram(input=tf.constant(sig2), window_size=30, stride=10, magnitude_squared=True).numpy()

    def M(name, sp, rate, **attrs):
        case("Mfcc " + name, "Mfcc", [("spectrogram", sp), ("sample_rate", A(rate, i32))], attrs)
    M("defaults", spec, 16000)
    M("dct 40", spec, 16000, dct_coefficient_count=40)
    M("filters 20 dct 10", spec, 16000, filterbank_channel_count=20, dct_coefficient_count=10)
    M("limits", spec, 16000, lower_frequency_limit=100.0, upper_frequency_limit=7600.0)
    M("limits 0", spec, 16000, lower_frequency_limit=0.0, upper_frequency_limit=8000.0)
    M("rate 8000", spec, 8000, upper_frequency_limit=3999.0)
    M("upper above nyquist", spec, 8000)
    M("stereo small", spec2, 16000, filterbank_channel_count=8, dct_coefficient_count=4)
    M("many channels", spec2, 16000, filterbank_channel_count=30, dct_coefficient_count=30)
    M("zeros", np.zeros([1, 3, 257], f32), 16000)
    M("no frames", np.zeros([1, 0, 257], f32), 16000)
    M("err dct > filters", spec, 16000, filterbank_channel_count=10, dct_coefficient_count=11)
    M("err rate", spec, 0)
    M("err limits", spec, 16000, lower_frequency_limit=500.0, upper_frequency_limit=500.0)
    M("err lower negative", spec, 16000, lower_frequency_limit=-1.0)
    M("err bins", np.zeros([1, 3, 1], f32), 16000)
    M("err rank", spec[0], 16000)
    case("Mfcc err rate rank", "Mfcc", [("spectrogram", spec), ("sample_rate", A([16000], i32))])


def io_codecs():
    import gzip
    import zlib
    text = b"the quick brown fox jumps over the lazy dog " * 20
    z = zlib.compress(text)
    gz = gzip.compress(text, mtime=0)
    gz2 = gzip.compress(b"abc", mtime=0) + gzip.compress(b"defg", mtime=0)

    def C(name, vals, ct, shape=None):
        a = S(vals)
        if shape:
            a = a.reshape(shape)
        case("DecodeCompressed " + name, "DecodeCompressed", [("bytes", a)], {"compression_type": ct})
    C("zlib", [z, zlib.compress(b""), zlib.compress(b"x", 9)], "ZLIB")
    C("gzip", [gz, gzip.compress(b"", mtime=0)], "GZIP")
    C("gzip members", [gz2], "GZIP")
    C("none", [b"abc", b""], "")
    C("zlib 2-D", [z, z[:0] + zlib.compress(b"12"), zlib.compress(b"3"), zlib.compress(b"")], "ZLIB", [2, 2])
    C("zlib scalar", z, "ZLIB")
    C("zlib trailing bytes", [z + b"garbage"], "ZLIB")
    C("zlib truncated", [z[:len(z) // 2]], "ZLIB")
    C("gzip truncated", [gz[:len(gz) // 2]], "GZIP")
    C("zlib empty input", [b""], "ZLIB")
    C("err zlib bad header", [b"not zlib at all"], "ZLIB")
    C("err gzip bad header", [b"not gzip at all"], "GZIP")
    C("err gzip given zlib", [z], "GZIP")
    C("err gzip trailing garbage", [gz + b"xyzw"], "GZIP")
    bad = bytearray(z)
    bad[len(bad) // 2] ^= 0xff
    C("err zlib corrupt", [bytes(bad)], "ZLIB")
    C("err type", [z], "LZMA")
    # ZSTD, compressed by the zstd tool (from a file: the frame records its size; from a pipe: not)
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t")
        with open(src, "wb") as f:
            f.write(text)
        zs = subprocess.run(["zstd", "-q", "-c", src], stdout=subprocess.PIPE, check=True).stdout
        with open(src, "wb") as f:
            f.write(b"")
        zs0 = subprocess.run(["zstd", "-q", "-c", src], stdout=subprocess.PIPE, check=True).stdout
    zpipe = subprocess.run(["zstd", "-q", "-c"], input=text, stdout=subprocess.PIPE, check=True).stdout
    C("zstd", [zs, zs0], "ZSTD")
    C("err zstd no size", [zpipe], "ZSTD")
    C("err zstd garbage", [b"not zstd"], "ZSTD")
    C("err zstd truncated", [zs[:len(zs) - 5]], "ZSTD")

    # SerializeTensor: every dtype TF registers, shapes with zeros, empty strings
    for dt, v in ((f32, [[1.5, -0.0], [nan, inf]]), (f64, [1e300, -2.5]), (i32, [[1, -2, 3]]), (i64, [2 ** 40, -1]),
                  (np.uint8, [0, 255]), (np.int8, [-128, 5]), (np.uint16, [65535]), (np.int16, [-300]),
                  (np.uint32, [4000000000]), (np.uint64, [2 ** 63]), (np.bool_, [True, False, True]),
                  (np.float16, [0.5, -2.0]), (np.complex64, [1 + 2j]), (np.complex128, [[-1 - 0.5j]])):
        case("SerializeTensor %s" % np.dtype(dt).name, "SerializeTensor", [("tensor", np.array(v, dt))])
    case("SerializeTensor bfloat16", "SerializeTensor", [("tensor", tf.constant([1.0, -3.5], tf.bfloat16))])
    case("SerializeTensor scalar", "SerializeTensor", [("tensor", A(3.25))])
    case("SerializeTensor empty", "SerializeTensor", [("tensor", np.zeros([2, 0, 3], f32))])
    case("SerializeTensor string", "SerializeTensor", [("tensor", S([[b"a", b""], [b"xyz", b"\x00\xff"]]))])
    case("SerializeTensor string scalar", "SerializeTensor", [("tensor", S(b"hello"))])
    case("SerializeTensor string empty", "SerializeTensor", [("tensor", S([]).reshape(0))])
    big = np.arange(300, dtype=i64).reshape(3, 100)
    case("SerializeTensor big dims", "SerializeTensor", [("tensor", big)])

    # ParseTensor: TF's own serializations and hand-made protos
    def P(name, proto_bytes, out):
        case("ParseTensor " + name, "ParseTensor", [("serialized", S(proto_bytes))], {"out_type": out})
    for dt, v in ((f32, [[1.5, -0.0], [nan, inf]]), (i64, [2 ** 40, -1]), (np.bool_, [True, False]),
                  (np.float16, [0.5]), (np.complex128, [1 - 1j]), (np.uint8, np.zeros([0, 3]))):
        ser = tf.io.serialize_tensor(tf.constant(np.array(v, dt))).numpy()
        P(np.dtype(dt).name, ser, tf.as_dtype(dt))
    P("string", tf.io.serialize_tensor(tf.constant([[b"a", b""], [b"bc", b"d"]])).numpy(), tf.string)
    P("scalar", tf.io.serialize_tensor(tf.constant(7, tf.int32)).numpy(), tf.int32)
    tp = tf.make_tensor_proto([1.0, 2.0, 3.0], dtype=tf.float32)
    tp.ClearField("tensor_content")
    tp.float_val.extend([1.0, 2.0, 3.0])
    P("float_val", tp.SerializeToString(), tf.float32)
    tp2 = tf.make_tensor_proto(0, dtype=tf.int32, shape=[2, 3])
    P("int_val repeated", tp2.SerializeToString(), tf.int32)
    P("err type mismatch", tf.io.serialize_tensor(tf.constant([1.0])).numpy(), tf.float64)
    P("err garbage", b"\xff\xff\xff", tf.float32)
    case("ParseTensor err rank", "ParseTensor", [("serialized", S([b""]))], {"out_type": tf.float32})
    case("ParseTensor err content size", "ParseTensor", [("serialized", S(b"\x08\x01\x12\x04\x12\x02\x08\x03\x22\x04abcd"))],
         {"out_type": tf.float32}, err_needle="Cannot parse tensor from proto")
    P("err garbage 2", b"\x08\x01\x12", tf.float32)


def feat(**kw):
    f = tf.train.Feature
    if "i" in kw:
        return f(int64_list=tf.train.Int64List(value=kw["i"]))
    if "f" in kw:
        return f(float_list=tf.train.FloatList(value=kw["f"]))
    if "b" in kw:
        return f(bytes_list=tf.train.BytesList(value=kw["b"]))
    return f()


def example(d):
    e = tf.train.Example()
    for k, v in d.items():
        e.features.feature[k].CopyFrom(v)
    return e.SerializeToString(deterministic=True)


def single_example():
    ex = example({"a": feat(i=[1, 2, 3]), "b": feat(f=[0.5, nan]), "s": feat(b=[b"x", b"yz"]), "e": feat(),
                  "one": feat(i=[7])})

    def P(name, ser, dense=(), sparse=(), **kw):
        dk = [d[0] for d in dense]
        sk = [x[0] for x in sparse]
        attrs = {"num_sparse": len(sk), "dense_keys": dk, "sparse_keys": sk,
                 "sparse_types": [x[1] for x in sparse], "dense_shapes": [d[2] for d in dense]}
        if not sparse:
            attrs["sparse_types"] = []
        case("ParseSingleExample " + name, "ParseSingleExample",
             [("serialized", S(ser)), ("dense_defaults", [d[1] for d in dense])], attrs, **kw)
    P("dense int64", ex, [("a", np.zeros([0], i64), [3])])
    P("dense default used", ex, [("zz", A([4, 5], i64), [2])])
    P("dense scalar default", ex, [("zz", A(9.5, f32), [])])
    P("dense varlen", ex, [("a", A(0, i64), [-1])])
    P("dense string", ex, [("s", A([b"", b""], object), [2])])
    P("sparse", ex, [], [("a", tf.int64), ("s", tf.string)])
    P("sparse empty and missing", ex, [], [("e", tf.float32), ("missing", tf.float32)])
    P("mixed", ex, [("one", A(0, i64), [1]), ("b", np.zeros([0], f32), [2])], [("s", tf.string)])
    P("empty serialized", b"", [("zz", A([1.0], f32), [1])], [("a", tf.int64)])
    P("err missing required", ex, [("zz", np.zeros([0], f32), [1])])
    P("err type", ex, [("a", np.zeros([0], f32), [3])])
    P("err count", ex, [("a", np.zeros([0], i64), [2])])
    P("err garbage", b"\x0a\x05\x0a\x03", [("a", np.zeros([0], i64), [3])],
      err_needle="Could not parse example input, value: '")
    P("err count float", ex, [("b", np.zeros([0], f32), [3])])
    P("err count bytes", ex, [("s", A([b""], object), [1])])
    case("ParseSingleExample err rank", "ParseSingleExample", [("serialized", S([ex])), ("dense_defaults", [A([0], i64)])],
         {"num_sparse": 0, "dense_keys": ["one"], "sparse_keys": [], "sparse_types": [], "dense_shapes": [[1]]})


def seq_example(ctx, fl):
    se = tf.train.SequenceExample()
    for k, v in ctx.items():
        se.context.feature[k].CopyFrom(v)
    for k, steps in fl.items():
        lst = se.feature_lists.feature_list[k]
        for st in steps:
            lst.feature.add().CopyFrom(st)
    return se.SerializeToString(deterministic=True)


def keys(ks):
    return tf.constant(list(ks), tf.string) if ks else tf.constant([], tf.string)


def seq_case(name, ser, names=None, cdense=(), csparse=(), cragged=(), fdense=(), fsparse=(), fragged=(), **kw):
    """cdense: (key, default, shape); csparse: (key, dtype); cragged: (key, dtype, split dtype); fdense:
    (key, dtype, shape, missing_ok); fsparse: (key, dtype); fragged: (key, dtype, split dtype)."""
    ser = np.array(ser, dtype=object)
    if names is None:
        names = np.array([], dtype=object) if ser.ndim else np.array(b"", dtype=object)
    inputs = [("serialized", ser), ("debug_name", tf.constant(names, tf.string)),
              ("context_sparse_keys", keys(k for k, _ in csparse)), ("context_dense_keys", keys(d[0] for d in cdense)),
              ("context_ragged_keys", keys(r[0] for r in cragged)), ("feature_list_sparse_keys", keys(k for k, _ in fsparse)),
              ("feature_list_dense_keys", keys(d[0] for d in fdense)), ("feature_list_ragged_keys", keys(r[0] for r in fragged)),
              ("feature_list_dense_missing_assumed_empty", tf.constant([d[3] for d in fdense], tf.bool)),
              ("context_dense_defaults", [d[1] for d in cdense])]
    attrs = {"Ncontext_sparse": len(csparse), "context_sparse_types": [t for _, t in csparse],
             "context_ragged_value_types": [r[1] for r in cragged], "context_ragged_split_types": [r[2] for r in cragged],
             "context_dense_shapes": [list(d[2]) for d in cdense], "Nfeature_list_sparse": len(fsparse),
             "Nfeature_list_dense": len(fdense), "feature_list_dense_types": [d[1] for d in fdense],
             "feature_list_sparse_types": [t for _, t in fsparse], "feature_list_ragged_value_types": [r[1] for r in fragged],
             "feature_list_ragged_split_types": [r[2] for r in fragged],
             "feature_list_dense_shapes": [list(d[2]) for d in fdense]}
    if not cdense:
        attrs["Tcontext_dense"] = []
    case("ParseSequenceExampleV2 " + name, "ParseSequenceExampleV2", inputs, attrs, **kw)


def sequence_examples():
    e1 = seq_example({"c": feat(i=[5]), "cs": feat(f=[1.0, 2.0]), "cb": feat(b=[b"hi"])},
                     {"d": [feat(f=[1.0, 2.0]), feat(f=[3.0, 4.0])], "s": [feat(i=[1, 2, 3]), feat(), feat(i=[4])],
                      "r": [feat(b=[b"a"]), feat(b=[b"b", b"c"])], "di": [feat(i=[1]), feat(i=[2]), feat(i=[3])]})
    e2 = seq_example({"cs": feat(f=[7.0])}, {"d": [feat(f=[5.0, 6.0])], "s": [feat(i=[9])], "di": []})
    e3 = seq_example({}, {})
    full = dict(cdense=[("c", A([0], i64), [1])], csparse=[("cs", tf.float32)], fdense=[("d", tf.float32, [2], False)],
                fsparse=[("s", tf.int64)], fragged=[("r", tf.string, tf.int64)])
    seq_case("all kinds batch", [e1, e2], **full)
    # a scalar input's ragged outer splits are a scalar TF leaves unset: no ragged feature list here
    seq_case("all kinds scalar", e1, **dict(full, fragged=[]))
    seq_case("names", [e1, e2], names=[b"first", b"second"], cdense=[("cb", A([b"dflt"], object), [1])])
    seq_case("context only", [e1, e2, e3], cdense=[("c", A([-1], i64), [1]), ("cb", A([b"zz"], object), [1])],
             csparse=[("cs", tf.float32)])
    seq_case("context ragged", [e1, e2, e3], cragged=[("cs", tf.float32, tf.int32), ("cb", tf.string, tf.int64)])
    seq_case("fl dense missing ok", [e1, e3], fdense=[("d", tf.float32, [2], True), ("di", tf.int64, [], True)])
    seq_case("fl dense scalar steps", [e1, e2], fdense=[("di", tf.int64, [], False)])
    seq_case("fl dense 2-D steps", [seq_example({}, {"m": [feat(f=[1, 2, 3, 4, 5, 6])]}), e3],
             fdense=[("m", tf.float32, [2, 3], True)])
    seq_case("fl sparse types", [e1, e2, e3], fsparse=[("s", tf.int64), ("d", tf.float32), ("r", tf.string)])
    seq_case("fl ragged int32", [e1, e2, e3], fragged=[("s", tf.int64, tf.int32), ("d", tf.float32, tf.int64)])
    seq_case("empty batch", np.array([], dtype=object), **full)
    seq_case("empty strings", [b"", b""], fsparse=[("s", tf.int64)], fdense=[("d", tf.float32, [2], True)])
    seq_case("no keys", [e1])
    # errors
    seq_case("err fl dense missing", [e1, e3], fdense=[("d", tf.float32, [2], False)])
    seq_case("err fl dense count", [e1], fdense=[("d", tf.float32, [3], False)])
    seq_case("err fl type", [e1], fsparse=[("s", tf.float32)])
    seq_case("err fl dense type", [e1], fdense=[("d", tf.int64, [2], False)])
    seq_case("err context missing", [e2], cdense=[("c", np.zeros([0], i64), [1])])
    seq_case("err context type", [e1], cdense=[("c", A([0.0], f32), [1])])
    seq_case("err context count", [e1], cdense=[("cs", A([0.0], f32), [1])])
    seq_case("err garbage", [b"\x12\x05\x0a\x03"], fsparse=[("s", tf.int64)])
    seq_case("err context garbage", [b"\x0a\x05\x0a\x03"], csparse=[("s", tf.int64)])
    seq_case("err both sparse and dense", [e1], fdense=[("s", tf.int64, [], True)], fsparse=[("s", tf.int64)])
    seq_case("err context both", [e1], csparse=[("cs", tf.float32)], cragged=[("cs", tf.float32, tf.int32)])


def seq_v1_case(name, ser, cdense=(), csparse=(), fdense=(), fsparse=(), missing=(), **kw):
    """ParseSequenceExample (keys and missing-ok names as attrs)."""
    ser = np.array(ser, dtype=object)
    inputs = [("serialized", ser), ("debug_name", tf.constant(np.array([], dtype=object), tf.string)),
              ("context_dense_defaults", [d[1] for d in cdense])]
    attrs = {"feature_list_dense_missing_assumed_empty": list(missing), "context_sparse_keys": [k for k, _ in csparse],
             "context_dense_keys": [d[0] for d in cdense], "feature_list_sparse_keys": [k for k, _ in fsparse],
             "feature_list_dense_keys": [d[0] for d in fdense], "Ncontext_sparse": len(csparse), "Ncontext_dense": len(cdense),
             "Nfeature_list_sparse": len(fsparse), "Nfeature_list_dense": len(fdense),
             "context_sparse_types": [t for _, t in csparse], "feature_list_dense_types": [d[1] for d in fdense],
             "context_dense_shapes": [list(d[2]) for d in cdense], "feature_list_sparse_types": [t for _, t in fsparse],
             "feature_list_dense_shapes": [list(d[2]) for d in fdense]}
    if not cdense:
        attrs["Tcontext_dense"] = []
    case("ParseSequenceExample " + name, "ParseSequenceExample", inputs, attrs, **kw)


def seq_single_case(name, ser, cdense=(), csparse=(), fdense=(), fsparse=(), missing=(), **kw):
    """ParseSingleSequenceExample (a scalar; keys as scalar inputs, missing-ok names as a vector)."""
    inputs = [("serialized", S(ser)), ("feature_list_dense_missing_assumed_empty", keys(missing)),
              ("context_sparse_keys", [S(k.encode()) for k, _ in csparse]),
              ("context_dense_keys", [S(d[0].encode()) for d in cdense]),
              ("feature_list_sparse_keys", [S(k.encode()) for k, _ in fsparse]),
              ("feature_list_dense_keys", [S(d[0].encode()) for d in fdense]),
              ("context_dense_defaults", [d[1] for d in cdense]), ("debug_name", S(b""))]
    attrs = {"context_sparse_types": [t for _, t in csparse], "feature_list_dense_types": [d[1] for d in fdense],
             "context_dense_shapes": [list(d[2]) for d in cdense], "feature_list_sparse_types": [t for _, t in fsparse],
             "feature_list_dense_shapes": [list(d[2]) for d in fdense]}
    if not cdense:
        attrs["Tcontext_dense"] = []
    case("ParseSingleSequenceExample " + name, "ParseSingleSequenceExample", inputs, attrs, **kw)


def sequence_examples_v1():
    e1 = seq_example({"c": feat(i=[5]), "cs": feat(f=[1.0, 2.0])},
                     {"d": [feat(f=[1.0, 2.0]), feat(f=[3.0, 4.0])], "s": [feat(i=[1, 2, 3]), feat(), feat(i=[4])]})
    e2 = seq_example({"cs": feat(f=[7.0])}, {"d": [feat(f=[5.0, 6.0])], "s": [feat(i=[9])]})
    e3 = seq_example({}, {})
    full = dict(cdense=[("c", A([0], i64), [1])], csparse=[("cs", tf.float32)], fdense=[("d", tf.float32, [2])],
                fsparse=[("s", tf.int64)])
    seq_v1_case("all kinds", [e1, e2], **full)
    seq_v1_case("missing ok", [e1, e3], fdense=[("d", tf.float32, [2])], missing=["d"])
    seq_v1_case("context only", [e1, e2, e3], cdense=[("c", A([-1], i64), [1])], csparse=[("cs", tf.float32)])
    seq_v1_case("err missing", [e1, e3], fdense=[("d", tf.float32, [2])])
    seq_single_case("all kinds", e1, **full)
    seq_single_case("missing ok", e3, fdense=[("d", tf.float32, [2])], fsparse=[("s", tf.int64)], missing=["d"])
    seq_single_case("context default", e2, cdense=[("c", A([-1], i64), [1])])
    seq_single_case("err missing", e3, fdense=[("d", tf.float32, [2])])
    seq_single_case("err type", e1, fsparse=[("s", tf.float32)],
                    err_needle="Name: , Feature List: s, Index: 0.  Data types don't match. Expected type: float")


def write_seq_header(cases):
    """tests/unit/c1_seq_cases.h: ParseSequenceExampleV2 cases (more than 8 inputs and outputs)."""
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit", "c1_seq_cases.h"))
    lines = ["/* c1_seq_cases.h - GENERATED by tools/gen_c1_cases.py from TensorFlow %s; do not edit. */" % tf.__version__,
             "#ifndef SM_TEST_C1_SEQ_CASES_H", "#define SM_TEST_C1_SEQ_CASES_H", '#include "array_case.h"',
             "typedef struct {", "  const char *name, *node;", "  int nin;", "  tc_tensor in[16];", "  int nout;",
             "  tc_tensor out[24];", "  const char *err;", "} c1_seq_case;", "static const c1_seq_case c1_seq_cases[] = {"]
    for name, node, flat, outs, err in cases:
        assert len(flat) <= 16 and len(outs) <= 24
        ins = ", ".join(g.c_tensor(t) for t in flat) or "{0}"
        os_ = ", ".join(g.c_tensor(t) for t in outs) or "{0}"
        lines.append("    {%s, %s, %d, {%s}, %d, {%s}, %s}," % (
            g.c_str(name), g.c_str(node), len(flat), ins, len(outs), os_, g.c_str(err) if err else "NULL"))
    lines += ["};", "#endif", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("wrote %d cases to %s" % (len(cases), path))


def json_examples():
    ok = ['{"features": {"feature": {"b": {"int64List": {"value": ["1", 2, "-3"]}}, "a": {"floatList": {"value": [0.5, "NaN", "-Infinity", 1e-40]}}}}}',
          '{"features": {"feature": {"s": {"bytes_list": {"value": ["aGk=", "", "_-8", "aGk"]}}, "e": {}, "z": {"int64List": {}}}}}',
          '{}', '{"features": {}}', '{"features": null}', ' { "features" : { "feature" : { } } } ',
          '{"features": {"feature": {"a": {"int64List": {"value": []}}}}}',
          '{"features": {"feature": {"a": {"int64List": {"value": ["9223372036854775807", -9223372036854775808]}}}}}',
          '{"features": {"feature": {"a": {"int64List": {"value": [9007199254740993]}}}}}',
          '{"features": {"feature": {"a": {"floatList": {"value": [0.1, -0.0, 3, "2.5", 3.4028234e38]}}}}}',
          '{"features": {"feature": {"k\\u00e9y\\n": {"bytesList": {"value": null}}, "n": null}}}',
          '{"features": {"feature": {"a": {"int64List": {"value": [1]}, "floatList": null}}}}']
    for i, x in enumerate(ok):
        case("DecodeJSONExample ok %d" % i, "DecodeJSONExample", [("json_examples", S([x.encode()]))])
    case("DecodeJSONExample 2-D", "DecodeJSONExample", [("json_examples", S([[b"{}", ok[0].encode()], [ok[6].encode(), b"{}"]]))])
    case("DecodeJSONExample scalar", "DecodeJSONExample", [("json_examples", S(ok[1].encode()))])
    bad = ['{"features": {"feature": {"a": {"floatList": {"value": [1e39]}}}}}',
           '{"features": {"feature": {"a": {"int64List": {"value": [1.5]}}}}}',
           '{"features": {"feature": {"a": {"int64List": {"value": ["9223372036854775808"]}}}}}',
           '{"featurez": {}}', 'not json', '', '{"features": {"feature": {"a": {"bytesList": {"value": ["!!"]}}}}}',
           '{"features": {"feature": {"a": {"int64List": {"value": [1]}, "floatList": {"value": [1]}}}}}',
           '{"features": {"feature": {"a": {"int64List": {"value": [1]}}}}', '{"features": {}} x',
           '{"features": {"feature": {"a": {"int64List": {"value": [true]}}}}}',
           '{"features": {"feature": {"a": {"int64List": {"valuez": [1]}}}}}', '[1]',
           '{"features": {"feature": {"a": {"int64List": {"value": [1]}}, "a": {"int64List": {"value": [2]}}}}}']
    for i, b in enumerate(bad):
        case("DecodeJSONExample err %d" % i, "DecodeJSONExample", [("json_examples", S([b.encode()]))],
             err_needle="Error while parsing JSON")


def main():
    audio()
    json_examples()
    io_codecs()
    single_example()
    n = len(g.CASES)
    sequence_examples()
    sequence_examples_v1()
    seq = g.CASES[n:]
    del g.CASES[n:]
    write_seq_header(seq)
    g.write_unit_header("c1_cases")


if __name__ == "__main__":
    main()
