#!/usr/bin/env python3
"""gen_fft_cases.py - writes tests/unit/fft_cases.h: complex basics (Complex, Real, Imag, ComplexAbs,
Angle, Conj, Cast to and from complex) and the transforms (FFT, IFFT, RFFT, IRFFT in 1-3 D, any
length: powers of two, odd, prime) against TensorFlow.

Uses the machinery of tools/gen_array_cases.py (eager tf.raw_ops, TF's CPU kernels; literal
inputs). test_ops_fft compares within 1e-5 (1e-9 for double) relative, for transforms relative
to the largest |value| of the expected output.
Run: /work/main/build/venv/bin/python tools/gen_fft_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
nan, inf = float("nan"), float("inf")
C64, C128 = np.complex64, np.complex128


def sig(shape, dt, seed=0):
    """A deterministic signal with values of order 1."""
    n = int(np.prod(shape)) if shape else 1
    i = np.arange(n, dtype=np.float64)
    re = np.sin(0.7 * i + seed) + 0.25 * np.cos(2.3 * i * i + seed)
    if np.dtype(dt).kind == "c":
        im = np.cos(1.3 * i - seed) - 0.5 * np.sin(0.37 * i * i)
        return (re + 1j * im).astype(dt).reshape(shape)
    return re.astype(dt).reshape(shape)


def basics():
    re = np.array([1.5, -2.0, 0.0, -0.0, 3.25, nan, inf, -1e-3], np.float32)
    im = np.array([0.5, 4.0, -0.0, 0.0, -7.0, 1.0, 2.0, -inf], np.float32)
    for dt in (np.float32, np.float64):
        case("Complex %s" % np.dtype(dt).name, "Complex", [("real", re.astype(dt)), ("imag", im.astype(dt))],
             {"Tout": tf.complex64 if dt == np.float32 else tf.complex128})
    case("Complex broadcast", "Complex", [("real", np.array([[1.0], [2.0]], np.float32)),
                                          ("imag", np.array([3.0, 4.0, 5.0], np.float32))], {"Tout": tf.complex64})
    case("Complex err shapes", "Complex", [("real", np.array([1.0, 2.0], np.float32)),
                                           ("imag", np.array([3.0, 4.0, 5.0], np.float32))], {"Tout": tf.complex64})
    for dt, rt in ((C64, tf.float32), (C128, tf.float64)):
        z = (re.astype(np.float64) + 1j * im.astype(np.float64)).astype(dt)
        for op in ("Real", "Imag", "ComplexAbs", "Angle"):
            case("%s %s" % (op, np.dtype(dt).name), op, [("input" if op != "ComplexAbs" else "x", z)], {"Tout": rt})
        case("Conj %s" % np.dtype(dt).name, "Conj", [("input", z)])
        case("Real %s 2-D" % np.dtype(dt).name, "Real", [("input", sig([2, 3], dt))], {"Tout": rt})
        case("Conj empty %s" % np.dtype(dt).name, "Conj", [("input", np.zeros([0, 2], dt))])
    z = sig([6], C64)
    for dst in (tf.float32, tf.float64, tf.int32, tf.int64, tf.complex128, tf.float16, tf.bool):
        case("Cast complex64 to %s" % dst.name, "Cast", [("x", z)], {"DstT": dst})
    zb = np.array([0, 1j, 2, -0.0], C64)
    case("Cast complex64 to bool zeros", "Cast", [("x", zb)], {"DstT": tf.bool})
    case("Cast complex128 to complex64", "Cast", [("x", sig([5], C128))], {"DstT": tf.complex64})
    for src in (np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_):
        x = sig([5], np.float64) * 100
        x = x.astype(src) if src != np.bool_ else (x > 0)
        for dst in (tf.complex64, tf.complex128):
            case("Cast %s to %s" % (np.dtype(src).name, dst.name), "Cast", [("x", x)], {"DstT": dst})
    case("Cast half to complex64", "Cast", [("x", tf.constant([1.5, -2.25], tf.float16))], {"DstT": tf.complex64})
    # complex arithmetic (math_binary.c)
    for dt in (C64, C128):
        # No zero divisor: TF's result then depends on Eigen's vector layout (NaN from its packet
        # path, C's infinities from the scalar tail); ours is always the packet path's NaN.
        a, b = sig([2, 5], dt, 1), sig([5], dt, 2)
        for op in ("AddV2", "Add", "Sub", "Mul", "RealDiv", "Div", "Equal", "NotEqual"):
            case("%s %s" % (op, np.dtype(dt).name), op, [("x", a), ("y", b)])
        case("Equal %s same" % np.dtype(dt).name, "Equal", [("x", a), ("y", a[:, ::-1].copy() * 0 + a)])
    case("Mul complex64 inf nan", "Mul", [("x", np.array([complex(inf, 0), complex(nan, 1), 1 + 1j], C64)),
                                          ("y", np.array([complex(0, 1), 2 + 0j, complex(inf, inf)], C64))])


def transforms():
    for n in (1, 2, 4, 5, 8, 12, 15, 17, 31, 64, 97, 100):
        for dt in (C64, C128):
            nm = np.dtype(dt).name
            case("FFT %d %s" % (n, nm), "FFT", [("input", sig([2, n], dt, n))])
            case("IFFT %d %s" % (n, nm), "IFFT", [("input", sig([n], dt, n + 1))])
        for dt in (np.float32, np.float64):
            nm = np.dtype(dt).name
            L = np.array([n], np.int32)
            ct = tf.complex64 if dt == np.float32 else tf.complex128
            case("RFFT %d %s" % (n, nm), "RFFT", [("input", sig([3, n], dt, n)), ("fft_length", L)], {"Tcomplex": ct})
            case("IRFFT %d %s" % (n, nm), "IRFFT",
                 [("input", sig([2, n // 2 + 1], C64 if dt == np.float32 else C128, n)), ("fft_length", L)],
                 {"Treal": tf.float32 if dt == np.float32 else tf.float64})
    # crop (TF refuses to pad: an input shorter than fft_length, fft_length/2+1 for IRFFT's last axis)
    x = sig([2, 10], np.float32, 3)
    # fft_length 0: TF 2.21's DUCC aborts the process ("axis length mismatch"); test_ops_fft checks ours.
    for n in (6, 16, 7):
        case("RFFT len %d of 10" % n, "RFFT", [("input", x), ("fft_length", np.array([n], np.int32))])
        case("IRFFT len %d of 10" % n, "IRFFT", [("input", sig([2, 10], C64, 5)), ("fft_length", np.array([n], np.int32))])
    case("IRFFT odd len 9 of 5", "IRFFT", [("input", sig([5], C64, 1)), ("fft_length", np.array([9], np.int32))])
    case("RFFT empty batch", "RFFT", [("input", np.zeros([0, 8], np.float32)), ("fft_length", np.array([8], np.int32))])
    case("FFT empty", "FFT", [("input", np.zeros([3, 0], C64))])
    case("FFT err rank", "FFT", [("input", np.array(1 + 2j, C64))])
    case("RFFT err length shape", "RFFT", [("input", x), ("fft_length", np.array([4, 4], np.int32))])
    case("RFFT2D err rank", "RFFT2D", [("input", np.zeros([5], np.float32)), ("fft_length", np.array([2, 2], np.int32))])
    # 2-D and 3-D
    for shp in ([4, 4], [3, 5], [2, 6, 7], [1, 9, 2]):
        case("FFT2D %s" % shp, "FFT2D", [("input", sig(shp, C64, 2))])
        case("IFFT2D %s" % shp, "IFFT2D", [("input", sig(shp, C128, 4))])
        fl = np.array(shp[-2:], np.int32)
        case("RFFT2D %s" % shp, "RFFT2D", [("input", sig(shp, np.float32, 1)), ("fft_length", fl)])
        half = list(shp[:-1]) + [shp[-1] // 2 + 1]
        case("IRFFT2D %s" % shp, "IRFFT2D", [("input", sig(half, C64, 6)), ("fft_length", fl)])
    case("RFFT2D crop", "RFFT2D", [("input", sig([2, 5, 6], np.float64, 1)), ("fft_length", np.array([4, 4], np.int32))],
         {"Tcomplex": tf.complex128})
    case("IRFFT2D crop", "IRFFT2D", [("input", sig([6, 5], C128, 9)), ("fft_length", np.array([4, 6], np.int32))],
         {"Treal": tf.float64})
    case("RFFT err types", "RFFT", [("input", sig([4], np.float64, 1)), ("fft_length", np.array([4], np.int32))])
    case("IRFFT err types", "IRFFT", [("input", sig([4], C128, 1)), ("fft_length", np.array([4], np.int32))])
    case("RFFT2D err pad", "RFFT2D", [("input", sig([2, 5, 6], np.float64, 1)), ("fft_length", np.array([7, 4], np.int32))])
    case("IRFFT2D err pad", "IRFFT2D", [("input", sig([6, 3], C128, 9)), ("fft_length", np.array([4, 8], np.int32))])
    case("FFT3D", "FFT3D", [("input", sig([2, 3, 4, 5], C64, 3))])
    case("IFFT3D", "IFFT3D", [("input", sig([3, 4, 2], C128, 3))])
    case("RFFT3D", "RFFT3D", [("input", sig([3, 4, 5], np.float32, 3)), ("fft_length", np.array([3, 4, 4], np.int32))])
    case("RFFT3D err short", "RFFT3D", [("input", sig([3, 4, 5], np.float32, 3)),
                                        ("fft_length", np.array([3, 4, 6], np.int32))])
    case("IRFFT3D", "IRFFT3D", [("input", sig([2, 3, 3], C64, 3)), ("fft_length", np.array([2, 3, 5], np.int32))])
    case("FFT large prime", "FFT", [("input", sig([1009], C64, 7))])
    case("RFFT large", "RFFT", [("input", sig([1000], np.float32, 7)), ("fft_length", np.array([1000], np.int32))])


def main():
    basics()
    transforms()
    g.write_unit_header("fft_cases")


if __name__ == "__main__":
    main()
