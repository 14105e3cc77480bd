#!/usr/bin/env python3
"""gen_c5_cases.py - writes tests/unit/c5_cases.h: the ops added in session 19 (c5) against
TensorFlow (eager tf.raw_ops, TF's CPU kernels): the quantize family (QuantizeV2, Dequantize,
QuantizeAndDequantizeV2/V3/V4 over every quantized dtype, mode, round mode, narrow_range, axis and
ensure_minimum_range), UnicodeScript, UnicodeTranscode, IsotonicRegression, SobolSample and
ApproxTopK. Every dtype the CPU kernels register, edge values and TF's error messages.

Uses the machinery of tools/gen_array_cases.py (the quantized dtypes added to its tables here).
test_ops_c5 compares floats within 1e-5 relative. Run: build/venv/bin/python tools/gen_c5_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

for _d in (tf.qint8, tf.quint8, tf.qint16, tf.quint16, tf.qint32):
    g.SM_DTYPE[_d] = "SM_" + _d.name.upper()
    g.TF_ENUM[_d] = "DT_" + _d.name.upper()

case = g.case
A = g.A
nan, inf = float("nan"), float("inf")
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
rng = np.random.default_rng(19)
QTYPES = (tf.qint8, tf.quint8, tf.qint16, tf.quint16, tf.qint32)
QRANGE = {tf.qint8: (-128, 127), tf.quint8: (0, 255), tf.qint16: (-32768, 32767), tf.quint16: (0, 65535),
          tf.qint32: (-2**31, 2**31 - 1)}


def U(*shape, dt=f32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dt)


def Q(vals, qt):
    return tf.constant(np.array(vals, dtype=qt.as_numpy_dtype), dtype=qt)


def quantize():
    x = A([-10, -1.0, -0.5, 0, 0.3, 0.5, 1.0, 2.5, 6.0, 100, inf, -inf, 1e30, 3.25, -0.75, 2.0] + list(U(21, lo=-2, hi=7)))
    ranges = [(-1.0, 6.0), (0.0, 1.0), (-3.0, -1.0), (2.0, 5.0), (0.0, 0.0), (-1e-5, 1e-5), (-100.0, 100.0)]
    for qt in QTYPES:
        for mode in ("MIN_COMBINED", "MIN_FIRST", "SCALED"):
            for lo, hi in ranges:
                case("QuantizeV2 %s %s [%g,%g]" % (qt.name, mode, lo, hi), "QuantizeV2",
                     [("input", x), ("min_range", A(lo)), ("max_range", A(hi))], {"T": qt, "mode": mode})
        case("QuantizeV2 %s SCALED narrow" % qt.name, "QuantizeV2", [("input", x), ("min_range", A(-1.0)), ("max_range", A(6.0))],
             {"T": qt, "mode": "SCALED", "narrow_range": True})
        case("QuantizeV2 %s SCALED half even" % qt.name, "QuantizeV2",
             [("input", A([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 126.5, -127.5])), ("min_range", A(-128.0)), ("max_range", A(127.0))],
             {"T": qt, "mode": "SCALED", "round_mode": "HALF_TO_EVEN"})
        case("QuantizeV2 %s SCALED half away" % qt.name, "QuantizeV2",
             [("input", A([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 126.5, -127.5])), ("min_range", A(-128.0)), ("max_range", A(127.0))],
             {"T": qt, "mode": "SCALED", "round_mode": "HALF_AWAY_FROM_ZERO"})
        for mode in ("MIN_COMBINED", "SCALED"):
            case("QuantizeV2 %s %s axis 1" % (qt.name, mode), "QuantizeV2",
                 [("input", U(3, 4, 2, lo=-3, hi=5)), ("min_range", A([-1.0, -3.0, 0.0, 0.5])), ("max_range", A([1.0, 5.0, 2.0, 0.5]))],
                 {"T": qt, "mode": mode, "axis": 1})
            case("QuantizeV2 %s %s axis 0" % (qt.name, mode), "QuantizeV2",
                 [("input", U(2, 5, lo=-3, hi=5)), ("min_range", A([-1.0, -3.0])), ("max_range", A([1.0, 5.0]))],
                 {"T": qt, "mode": mode, "axis": 0, "narrow_range": True})
    for emr in (0.0, 0.5, 1e-6):
        for mode in ("MIN_COMBINED", "MIN_FIRST", "SCALED"):
            case("QuantizeV2 ensure_minimum_range %g %s" % (emr, mode), "QuantizeV2",
                 [("input", A([0.0, 1e-7, 2e-7, -1e-7, 0.5])), ("min_range", A(0.0)), ("max_range", A(1e-7))],
                 {"T": tf.qint8, "mode": mode, "ensure_minimum_range": emr})
    case("QuantizeV2 MIN_FIRST axis of size 1", "QuantizeV2", [("input", U(3, 1)), ("min_range", A([-1.0])), ("max_range", A([1.0]))],
         {"T": tf.quint8, "mode": "MIN_FIRST", "axis": 1})
    case("QuantizeV2 scalar", "QuantizeV2", [("input", A(2.0)), ("min_range", A(-1.0)), ("max_range", A(6.0))], {"T": tf.qint8})
    case("QuantizeV2 empty", "QuantizeV2", [("input", np.zeros([0, 3], f32)), ("min_range", A(-1.0)), ("max_range", A(6.0))],
         {"T": tf.quint8})
    case("QuantizeV2 empty axis", "QuantizeV2", [("input", np.zeros([0, 3], f32)), ("min_range", A([-1.0] * 3)),
                                                 ("max_range", A([6.0] * 3))], {"T": tf.qint8, "axis": 1})
    case("QuantizeV2 axis of size 0", "QuantizeV2", [("input", np.zeros([0, 3], f32)), ("min_range", np.zeros([0], f32)),
                                                     ("max_range", np.zeros([0], f32))], {"T": tf.qint8, "axis": 0})
    case("QuantizeV2 [1] range", "QuantizeV2", [("input", U(5)), ("min_range", A([-1.0])), ("max_range", A([1.0]))], {"T": tf.qint8})
    case("QuantizeV2 NaN MIN_FIRST", "QuantizeV2", [("input", A([nan, 1.0])), ("min_range", A(-1.0)), ("max_range", A(6.0))],
         {"T": tf.qint8, "mode": "MIN_FIRST"})
    for qt in (tf.quint8, tf.quint16, tf.qint32):
        case("QuantizeV2 NaN %s" % qt.name, "QuantizeV2", [("input", A([nan, 1.0])), ("min_range", A(-1.0)), ("max_range", A(6.0))],
             {"T": qt})
    x34 = U(3, 4)
    E = lambda name, mn, mx, **at: case("QuantizeV2 err " + name, "QuantizeV2",  # noqa: E731
                                        [("input", x34), ("min_range", A(mn)), ("max_range", A(mx))], dict({"T": tf.qint8}, **at))
    E("axis", [-1.0] * 4, [6.0] * 4, axis=2)
    E("min_first axis", [-1.0] * 4, [6.0] * 4, axis=1, mode="MIN_FIRST")
    E("min count", [-1.0] * 3, [6.0] * 4, axis=1)
    E("max count", [-1.0] * 4, [6.0] * 3, axis=1)
    E("scalar range with axis", -1.0, 6.0, axis=1)
    E("two ranges", [-1.0, 2.0], [6.0, 3.0])
    E("min > max", 2.0, 1.0)
    E("min > max channel", [-1.0, -1, 2, -1], [6.0, 6, 1, 6], axis=1)
    E("half even", -1.0, 6.0, round_mode="HALF_TO_EVEN")

    # Dequantize
    for qt in QTYPES:
        lo, hi = QRANGE[qt]
        vals = [lo, lo + 1, -1 if lo < 0 else 1, 0, 1, 2, 100 % (hi + 1), hi - 1, hi] + list(rng.integers(lo, hi, 15, endpoint=True))
        q = Q(vals, qt)
        for mode in ("MIN_COMBINED", "MIN_FIRST", "SCALED"):
            for mn, mx in ((-1.0, 6.0), (0.0, 1.0), (-3.0, -1.0), (2.5, 2.5), (-1e4, 3e4)):
                case("Dequantize %s %s [%g,%g]" % (qt.name, mode, mn, mx), "Dequantize",
                     [("input", q), ("min_range", A(mn)), ("max_range", A(mx))], {"mode": mode})
        case("Dequantize %s SCALED narrow" % qt.name, "Dequantize", [("input", q), ("min_range", A(-1.0)), ("max_range", A(6.0))],
             {"mode": "SCALED", "narrow_range": True})
        case("Dequantize %s bfloat16" % qt.name, "Dequantize", [("input", q), ("min_range", A(-1.0)), ("max_range", A(6.0))],
             {"dtype": tf.bfloat16})
        q34 = Q(rng.integers(lo, hi, (3, 4), endpoint=True), qt)
        for mode in ("MIN_COMBINED", "SCALED"):
            case("Dequantize %s %s axis 1" % (qt.name, mode), "Dequantize",
                 [("input", q34), ("min_range", A([-1.0, -2.0, 0.0, -5.0])), ("max_range", A([1.0, 6.0, 3.0, -1.0]))],
                 {"mode": mode, "axis": 1})
        case("Dequantize %s axis 0 bfloat16" % qt.name, "Dequantize",
             [("input", q34), ("min_range", A([-1.0, -2.0, 0.0])), ("max_range", A([1.0, 6.0, 3.0]))], {"axis": 0, "dtype": tf.bfloat16})
    q = Q(np.arange(12).reshape(3, 4), tf.qint8)
    case("Dequantize scalar range [1]", "Dequantize", [("input", q), ("min_range", A([-1.0])), ("max_range", A([6.0]))])
    case("Dequantize min > max", "Dequantize", [("input", q), ("min_range", A(6.0)), ("max_range", A(-1.0))])
    case("Dequantize empty", "Dequantize", [("input", Q(np.zeros([0, 2]), tf.quint8)), ("min_range", A(-1.0)), ("max_range", A(6.0))])
    case("Dequantize MIN_FIRST axis of size 1", "Dequantize", [("input", Q([[1], [2]], tf.quint8)), ("min_range", A([-1.0])),
                                                              ("max_range", A([6.0]))], {"mode": "MIN_FIRST", "axis": 1})
    D = lambda name, mn, mx, **at: case("Dequantize err " + name, "Dequantize",  # noqa: E731
                                        [("input", q), ("min_range", A(mn)), ("max_range", A(mx))], at)
    D("axis", [-1.0] * 4, [6.0] * 4, axis=2)
    D("min count", [-1.0] * 3, [6.0] * 4, axis=1)
    D("max count", [-1.0] * 4, [6.0] * 3, axis=1)
    D("min_first axis", [-1.0] * 4, [6.0] * 4, axis=1, mode="MIN_FIRST")
    D("bfloat16 min_first", -1.0, 6.0, mode="MIN_FIRST", dtype=tf.bfloat16)
    D("axis -2", [-1.0] * 4, [6.0] * 4, axis=-2)

    # QuantizeAndDequantizeV2 / V3 / V4
    xs = A([-3.0, -1.5, -0.7, -0.25, 0.0, 0.25, 0.3, 0.5, 1.0, 1.7, 2.5, 4.0] + list(U(13, lo=-4, hi=5)))
    for op in ("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4", "QuantizeAndDequantizeV3"):
        for dt in (f32, f64):
            for signed in (True, False):
                for given, (mn, mx) in ((False, (0.0, 0.0)), (True, (-1.0, 2.0)), (True, (0.0, 3.0)), (True, (-2.0, 0.0)),
                                        (True, (0.0, 0.0)), (True, (1.0, 3.0))):
                    for narrow in (False, True):
                        rounds = ("HALF_TO_EVEN", "HALF_UP") if op != "QuantizeAndDequantizeV3" else (None,)
                        for rm in rounds:
                            for bits in (8, 3) if not narrow else (4,):
                                ins = [("input", xs.astype(dt)), ("input_min", A(mn, dt)), ("input_max", A(mx, dt))]
                                at = {"signed_input": signed, "range_given": given, "narrow_range": narrow}
                                if op == "QuantizeAndDequantizeV3":
                                    ins.append(("num_bits", A(bits, i32)))
                                else:
                                    at.update(num_bits=bits, round_mode=rm)
                                case("%s %s signed%d given%d [%g,%g] narrow%d %s bits%d" % (
                                    op, np.dtype(dt).name, signed, given, mn, mx, narrow, rm, bits), op, ins, at)
        x3 = U(2, 3, 4, lo=-3, hi=4)
        for axis in (0, 1, 2):
            d = x3.shape[axis]
            for given in (False, True):
                ins = [("input", x3), ("input_min", A(np.linspace(-2, 0, d))), ("input_max", A(np.linspace(0.5, 3, d)))]
                at = {"axis": axis, "range_given": given}
                if op == "QuantizeAndDequantizeV3":
                    ins.append(("num_bits", A(5, i32)))
                else:
                    at["num_bits"] = 5
                case("%s axis %d given%d" % (op, axis, given), op, ins, at)
        nb = [("num_bits", A(8, i32))] if op == "QuantizeAndDequantizeV3" else []
        case("%s empty" % op, op, [("input", np.zeros([0, 2], f32)), ("input_min", A(0.0)), ("input_max", A(0.0))] + nb,
             {"range_given": False})
        case("%s large bits" % op, op, [("input", xs.astype(f64)), ("input_min", A(0.0, f64)), ("input_max", A(0.0, f64))] +
             ([("num_bits", A(40, i32))] if nb else []), {} if nb else {"num_bits": 40})
        case("%s err range" % op, op, [("input", xs), ("input_min", A(2.0)), ("input_max", A(1.0))] + nb, {"range_given": True})
        case("%s err axis" % op, op, [("input", x3), ("input_min", A([0.0] * 2)), ("input_max", A([1.0] * 2))] + nb, {"axis": 3})
        case("%s err min size" % op, op, [("input", x3), ("input_min", A([0.0] * 2)), ("input_max", A([1.0] * 3))] + nb,
             {"axis": 1, "range_given": True})
        case("%s err max size" % op, op, [("input", x3), ("input_min", A([0.0] * 3)), ("input_max", A([1.0] * 2))] + nb,
             {"axis": 1, "range_given": True})
        if nb:
            case("%s err bits" % op, op, [("input", xs), ("input_min", A(0.0)), ("input_max", A(1.0)), ("num_bits", A(0, i32))])
            case("%s err bits 62" % op, op, [("input", xs), ("input_min", A(0.0)), ("input_max", A(1.0)), ("num_bits", A(62, i32))])
        else:
            case("%s err bits" % op, op, [("input", xs), ("input_min", A(0.0)), ("input_max", A(1.0))], {"num_bits": 0})
            case("%s err bits 63 unsigned" % op, op, [("input", xs), ("input_min", A(0.0)), ("input_max", A(1.0))],
                 {"num_bits": 63, "signed_input": False})


def quantized_concat():
    for qt in (tf.quint8, tf.qint32):
        lo, hi = QRANGE[qt]
        a = Q(rng.integers(lo, hi, (2, 3), endpoint=True), qt)
        b = Q(rng.integers(lo, hi, (2, 2), endpoint=True), qt)
        for (m1, x1), (m2, x2) in (((-1.0, 1.0), (-1.0, 1.0)), ((0.0, 6.0), (-2.0, 3.0)), ((1.0, 2.0), (-5.0, -1.0)),
                                   ((0.5, 0.5), (-3.0, 10.0)), ((-1e-3, 2e-3), (-100.0, 1e4))):
            case("QuantizedConcat %s [%g,%g] [%g,%g]" % (qt.name, m1, x1, m2, x2), "QuantizedConcat",
                 [("concat_dim", A(1, i32)), ("values", [a, b]), ("input_mins", [A(m1), A(m2)]), ("input_maxes", [A(x1), A(x2)])])
        case("QuantizedConcat %s dim 0" % qt.name, "QuantizedConcat",
             [("concat_dim", A(0, i32)), ("values", [a, Q(rng.integers(lo, hi, (4, 3), endpoint=True), qt)]),
              ("input_mins", [A(-1.0), A(0.0)]), ("input_maxes", [A(1.0), A(4.0)])])
    a = Q([[1, 2], [3, 4]], tf.quint8)
    E = lambda name, d, vals: case("QuantizedConcat err " + name, "QuantizedConcat",  # noqa: E731
                                   [("concat_dim", A(d, i32)), ("values", vals), ("input_mins", [A(0.0)] * len(vals)),
                                    ("input_maxes", [A(1.0)] * len(vals))])
    E("dim", 2, [a, a])
    E("dim negative", -1, [a, a])
    E("shape", 0, [a, Q([[1, 2, 3]], tf.quint8)])
    E("rank", 0, [a, Q([1, 2], tf.quint8)])


def unicode():
    # UnicodeScript: a sweep of the code space, the edges, invalid values
    # TF's bundled ICU is older than the system's (72 here): characters assigned since Unicode 13 are
    # Unknown (103) there, so the sweep keeps the code points TF knows plus some unassigned ones.
    sweep = A(list(range(0, 0x30000, 61)) + list(range(0xE0000, 0x110000, 251)), i32)
    known = sweep[tf.raw_ops.UnicodeScript(input=sweep).numpy() != 103]
    cps = list(known) + [0x378, 0x2FE0, 0xFFFF, 0xE000, 0xF8FF, 0x10FFFF, -100, -1, 0x110000, 0xFFFFFF, 2**31 - 1, -2**31,
                         0x41, 0x411, 0x82B8, 0x2C, 0x1F600, 0x0E01, 0x05D0]
    case("UnicodeScript sweep", "UnicodeScript", [("input", A(cps, i32))])
    case("UnicodeScript 2-D", "UnicodeScript", [("input", A([[0x41, 0x3B1], [0x627, 0x915]], i32))])
    case("UnicodeScript empty", "UnicodeScript", [("input", np.zeros([0], i32))])
    case("UnicodeScript scalar", "UnicodeScript", [("input", A(0x10A0, i32))])

    texts = ["", "abc", "h\u00e9llo w\u00f6rld", "\u65e5\u672c\u8a9e", "\U0001F600 emoji \U0001F680", "tab\there\x01\x1f end",
             "\u0410\u0411 \u03b1\u03b2", "\x00nul", "mixed \u00ff\u0100\uffff\U0010FFFF"]
    S = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    encs = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be", "UTF-16LE": "utf-16-le",
            "UTF-32LE": "utf-32-le", "UTF-16": "utf-16", "UTF-32": "utf-32"}
    outs = ("UTF-8", "UTF-16-BE", "UTF-32-BE")
    for name, codec in encs.items():
        ins = S([t.encode(codec) if codec not in ("utf-16", "utf-32") or t else b"" for t in texts])
        for out in outs:
            case("UnicodeTranscode %s -> %s" % (name, out), "UnicodeTranscode", [("input", ins)],
                 {"input_encoding": name, "output_encoding": out, "errors": "replace", "replacement_char": 0xFFFD,
                  "replace_control_characters": False})
    latin = S([t.encode("latin-1") for t in ["caf\u00e9", "\u00ff\u00a0x", "plain"]])
    for name in ("ISO-8859-1", "latin1", "US-ASCII", "windows-1252", "KOI8-R", "ISO-8859-5"):
        case("UnicodeTranscode %s" % name, "UnicodeTranscode", [("input", latin)],
             {"input_encoding": name, "output_encoding": "UTF-8", "errors": "replace", "replacement_char": 0xFFFD,
              "replace_control_characters": False})
    case("UnicodeTranscode Shift_JIS", "UnicodeTranscode", [("input", S(["\u65e5\u672c abc".encode("shift_jis"), b"\x82"]))],
         {"input_encoding": "Shift_JIS", "output_encoding": "UTF-16-BE", "errors": "replace", "replacement_char": 0x3F,
          "replace_control_characters": False})
    case("UnicodeTranscode UTF-16 BOMs", "UnicodeTranscode",
         [("input", S(["ab".encode("utf-16-le"), b"\xff\xfea\x00b\x00", b"\x00c\x00d", b"\xfe\xff\x00e"]))],
         {"input_encoding": "UTF-16", "output_encoding": "UTF-8", "errors": "replace", "replacement_char": 0xFFFD,
          "replace_control_characters": False})
    bad = S([b"a\xffb", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80x", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98", b"ok\x01\x7f",
             b"\xe2\x28\xa1", b"\x80\x80"])
    for errors in ("replace", "ignore", "strict"):
        for rc in (False, True):
            for sub in (0xFFFD, 0x3F, 0xD800, 0):
                if sub != 0xFFFD and errors != "replace":
                    continue
                for out in outs:
                    case("UnicodeTranscode bad UTF-8 %s ctl%d sub%x -> %s" % (errors, rc, sub, out), "UnicodeTranscode",
                         [("input", bad)], {"input_encoding": "UTF-8", "output_encoding": out, "errors": errors,
                                            "replacement_char": sub, "replace_control_characters": rc})
    bad16 = S([b"\xd8\x00\x00a", b"\xdc\x00", b"\x00a\x00", b"\xd8\x3d\xde\x00", b"\xd8\x3d"])
    bad32 = S([b"\x00\x00\xd8\x00", b"\x00\x11\x00\x00", b"\x00\x00\x00a\x00", b"\x00\x01\xf6\x00"])
    for errors in ("replace", "ignore", "strict"):
        case("UnicodeTranscode bad UTF-16-BE %s" % errors, "UnicodeTranscode", [("input", bad16)],
             {"input_encoding": "UTF-16-BE", "output_encoding": "UTF-8", "errors": errors, "replacement_char": 0xFFFD,
              "replace_control_characters": False})
        case("UnicodeTranscode bad UTF-32-BE %s" % errors, "UnicodeTranscode", [("input", bad32)],
             {"input_encoding": "UTF-32-BE", "output_encoding": "UTF-16-BE", "errors": errors, "replacement_char": 0xFFFD,
              "replace_control_characters": False})
        case("UnicodeTranscode bad US-ASCII %s" % errors, "UnicodeTranscode", [("input", S([b"ab\x80c", b"\xff"]))],
             {"input_encoding": "US-ASCII", "output_encoding": "UTF-8", "errors": errors, "replacement_char": 0xFFFD,
              "replace_control_characters": False})
        case("UnicodeTranscode bad UTF-16LE %s" % errors, "UnicodeTranscode", [("input", S([b"\x00\xd8a\x00", b"a"]))],
             {"input_encoding": "UTF-16LE", "output_encoding": "UTF-32-BE", "errors": errors, "replacement_char": 0xFFFD,
              "replace_control_characters": False})
    case("UnicodeTranscode 2-D", "UnicodeTranscode", [("input", S([[b"a", b"\xc3\xa9"], [b"", b"\xff"]]))],
         {"input_encoding": "UTF-8", "output_encoding": "UTF-16-BE", "errors": "replace", "replacement_char": 0xFFFD,
          "replace_control_characters": False})
    case("UnicodeTranscode scalar", "UnicodeTranscode", [("input", S(b"x\xe2\x82\xac"))],
         {"input_encoding": "UTF-8", "output_encoding": "UTF-32-BE", "errors": "replace", "replacement_char": 0xFFFD,
          "replace_control_characters": False})
    T = lambda name, **at: case("UnicodeTranscode err " + name, "UnicodeTranscode", [("input", S([b"a"]))],  # noqa: E731
                                dict({"input_encoding": "UTF-8", "output_encoding": "UTF-8", "errors": "replace",
                                      "replacement_char": 0xFFFD, "replace_control_characters": False}, **at))
    T("input encoding", input_encoding="no-such-encoding")
    T("replacement_char", replacement_char=0x110000)
    T("replacement_char negative", replacement_char=-1)
    # UnicodeDecode over ICU's encodings (the built-in ones are tested in test_ops_string*)
    for name, codec in (("UTF-16LE", "utf-16-le"), ("UTF-16", "utf-16"), ("windows-1252", "cp1252")):
        ins = S([t.encode(codec) for t in ["ab\u00e9", "\u20ac x", "z"]])
        case("UnicodeDecodeWithOffsets %s" % name, "UnicodeDecodeWithOffsets", [("input", ins)],
             {"input_encoding": name, "errors": "replace", "replacement_char": 0xFFFD, "replace_control_characters": False,
              "Tsplits": tf.int64})


def isotonic():
    x = A([[3.0, 1.0, 2.0, 5.0, 4.0, 4.0, -1.0, 0.5], [1, 2, 3, 4, 5, 6, 7, 8], [8, 7, 6, 5, 4, 3, 2, 1]])
    for dt in (np.float16, tf.bfloat16, f32, f64):
        v = tf.constant(x, dt) if dt is tf.bfloat16 else x.astype(dt)
        case("IsotonicRegression %s" % (dt.name if dt is tf.bfloat16 else np.dtype(dt).name), "IsotonicRegression",
             [("input", v)], {"output_dtype": tf.bfloat16 if dt is tf.bfloat16 else tf.as_dtype(dt)})
    for dt, odt in ((np.int8, tf.float32), (np.int16, tf.float32), (i32, tf.float64), (i64, tf.float64)):
        case("IsotonicRegression %s" % np.dtype(dt).name, "IsotonicRegression",
             [("input", rng.integers(-50, 50, (4, 9)).astype(dt))], {"output_dtype": odt})
    case("IsotonicRegression int64 huge", "IsotonicRegression", [("input", A([2**62, 3, 2**53 + 1, -2**63], i64))],
         {"output_dtype": tf.float64})
    for shape in ((5, 3, 7), (11,), (), (0, 4), (3, 0), (2, 1)):
        case("IsotonicRegression shape %s" % (shape,), "IsotonicRegression", [("input", U(*shape, lo=-3, hi=3))],
             {"output_dtype": tf.float32})
    case("IsotonicRegression long", "IsotonicRegression", [("input", U(3, 200, dt=f64, lo=-3, hi=3))], {"output_dtype": tf.float64})
    case("IsotonicRegression NaN inf", "IsotonicRegression", [("input", A([[1.0, nan, 2.0, 3.0], [inf, 1.0, -inf, 2.0]]))],
         {"output_dtype": tf.float32})
    case("IsotonicRegression ties", "IsotonicRegression", [("input", A([[2.0, 2.0, 2.0, 3.0, 3.0, 1.0]]))], {"output_dtype": tf.float32})


def approx_topk():
    # TF's CPU kernel: the exact sorted TopKV2, last dimension, max only (approx_min_k and other
    # reduction dimensions have no CPU kernel in TF; test_ops_c5.c checks ours by hand)
    x = U(3, 10)
    for dt in (f32, np.float16, tf.bfloat16):
        v = tf.constant(x, dt) if dt is tf.bfloat16 else x.astype(dt)
        for k in (0, 1, 3, 9, 10):
            case("ApproxTopK %s k%d" % (getattr(dt, "name", None) or np.dtype(dt).name, k), "ApproxTopK", [("input", v)],
                 {"k": k, "reduction_dimension": -1, "is_max_k": True, "recall_target": 0.95,
                  "reduction_input_size_override": -1, "aggregate_to_topk": True})
    base = {"reduction_dimension": -1, "is_max_k": True, "recall_target": 0.9, "reduction_input_size_override": -1,
            "aggregate_to_topk": True}
    case("ApproxTopK ties", "ApproxTopK", [("input", A([[1.0, 3.0, 3.0, 2.0, 3.0, 1.0]]))], dict(base, k=4))
    case("ApproxTopK 1-D", "ApproxTopK", [("input", U(17))], dict(base, k=5))
    case("ApproxTopK 3-D", "ApproxTopK", [("input", U(2, 3, 40))], dict(base, k=7))
    case("ApproxTopK NaN k1", "ApproxTopK", [("input", A([[nan, 1.0, 2.0], [nan, nan, nan]]))], dict(base, k=1))
    case("ApproxTopK inf", "ApproxTopK", [("input", A([[-inf, 1.0, inf, 0.0]]))], dict(base, k=2))
    case("ApproxTopK empty rows", "ApproxTopK", [("input", np.zeros([0, 4], f32))], dict(base, k=2))
    case("ApproxTopK err k", "ApproxTopK", [("input", U(2, 3))], dict(base, k=4))


def sobol():
    for dt in (tf.float32, tf.float64):
        for dim, num, skip in ((1, 20, 0), (3, 33, 0), (7, 17, 5), (40, 9, 1000), (1111, 3, 0), (1111, 2, 123456), (2, 4, 2**29),
                               (5, 3, 2**30 - 10), (13, 100, 77)):
            case("SobolSample %s dim%d n%d skip%d [exact]" % (dt.name, dim, num, skip), "SobolSample",
                 [("dim", A(dim, i32)), ("num_results", A(num, i32)), ("skip", A(skip, i32))], {"dtype": dt})
    S = lambda name, d, n, k: case("SobolSample err " + name, "SobolSample",  # noqa: E731
                                   [("dim", A(d, i32)), ("num_results", A(n, i32)), ("skip", A(k, i32))], {"dtype": tf.float32})
    S("dim 0", 0, 1, 0)
    S("dim big", 21201, 1, 0)
    S("num 0", 2, 0, 0)
    S("skip", 2, 1, -1)
    S("overflow", 2, 2**31 - 10, 100)
    S("dim vector", [3], 4, 0)


def main():
    quantize()
    quantized_concat()
    unicode()
    isotonic()
    approx_topk()
    sobol()
    g.write_unit_header("c5_cases")


if __name__ == "__main__":
    main()
