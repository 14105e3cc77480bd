#!/usr/bin/env python3
"""tools/sweep_ops.py - do the ops TF's public Python API emits run here as TF runs them? (not CI: slow)

  build/venv/bin/python tools/sweep_ops.py [--build build] [--out /tmp/k4/ops] [--groups math,nn]
      [--only NAME_SUBSTR] [--reuse] [--json FILE] [--md FILE] [--list]

A wide list of public functions (tf.math, tf.strings, tf.image, tf.signal, tf.linalg, tf.nn, tf.sparse,
tf.ragged, tf.random stateless, tf.bitwise, casts, scatter/gather, searchsorted, histograms, unique,
where, einsum, roll, clip_by_*, tf.audio and the speech ops, tf.io parsing and codecs, ...), each called with representative arguments (several dtypes and
attribute variants), is traced as a tf.function whose tensors are signature inputs (attributes and
Python arguments are closed over, so they become attrs / constants in the graph), saved with
tf.saved_model.save, loaded back by TF and run for the reference (one Python process per group).
Then `BUILD/savedmodel scan --json` lists the ops this runtime lacks and `BUILD/savedmodel run
--inputs x0=...;x1=... --outdir` runs the signature here. Per function the row gives the graph's ops
(boilerplate like Placeholder / Identity / Const left out), the ops we lack, the max error (floats:
max |ours - TF| / max(1, max |TF|), NaN where TF has NaN; half and bfloat16 outputs may differ by
one unit in the last place, reported scaled to 1e-5; everything else must be equal) and the first
line of our error message. Status: ok (err <= 1e-5), MISMATCH, FAIL (no output), TF fails (TF itself
cannot save or run the case: not counted).
Exports go to --out (never commit them). Run it under `flock -s /tmp/bench.lock nice -n 10`.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOL = 1e-5
# half / bfloat16 outputs: one unit in the last place (TF rounds its own float intermediates)
TOL_DT = {"float16": 2 ** -10, "bfloat16": 2 ** -7}
BORING = {"Placeholder", "Identity", "IdentityN", "Const", "NoOp", "StatefulPartitionedCall",
          "PartitionedCall", "_Arg", "_Retval", "SaveV2", "RestoreV2", "MergeV2Checkpoints",
          "ShardedFilename", "StringJoin", "StaticRegexFullMatch", "Select", "Pack"}


# ---- the cases (child side) -------------------------------------------------------------------------
def make_cases(tf, np):
    """[(group, name, fn, [numpy inputs])]: fn takes the inputs as tensors, returns a tensor, a tuple of
    them or a dict."""
    out = []
    rng = np.random.default_rng(1234)

    def F(*shape, lo=-1.0, hi=1.0, dt="float32"):
        return rng.uniform(lo, hi, shape).astype(dt)

    def I(*shape, lo=-5, hi=6, dt="int32"):
        return rng.integers(lo, hi, shape).astype(dt)

    def B(*shape):
        return rng.integers(0, 2, shape).astype(bool)

    def S(*vals):
        return np.array([v.encode() if isinstance(v, str) else v for v in vals], dtype="S")

    def CX(*shape):
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype("complex64")

    def C(group, name, fn, *inputs):
        out.append((group, name, fn, list(inputs)))

    m, tfs, img, sig, la, nn = tf.math, tf.strings, tf.image, tf.signal, tf.linalg, tf.nn
    # -- tf.math unary over float dtypes
    unary = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "digamma", "erf",
             "erfc", "erfcinv", "exp", "expm1", "floor", "is_finite", "is_inf", "is_nan", "lgamma", "log",
             "log1p", "log_sigmoid", "ndtri", "negative", "reciprocal", "reciprocal_no_nan", "rint", "round",
             "rsqrt", "sigmoid", "sign", "sin", "sinh", "softplus", "softsign", "sqrt", "square", "tan", "tanh",
             "bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e"]
    for fnm in unary:
        lo, hi = {"acosh": (1, 4), "log": (0.1, 4), "sqrt": (0.1, 4), "rsqrt": (0.1, 4), "digamma": (0.1, 4),
                  "lgamma": (0.1, 4), "ndtri": (0.01, 0.99), "erfcinv": (0.01, 1.99)}.get(fnm, (-0.9, 0.9))
        for dt in ("float32", "float64", "float16"):
            C("math", "math.%s/%s" % (fnm, dt), (lambda f: lambda x: f(x))(getattr(m, fnm)), F(3, 4, lo=lo, hi=hi, dt=dt))
    for fnm in ("dawsn", "expint", "fresnel_cos", "fresnel_sin", "spence", "bessel_j0", "bessel_j1", "bessel_y0",
                "bessel_y1", "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e"):
        for dt in ("float32", "float64"):
            C("math", "math.special.%s/%s" % (fnm, dt), (lambda f: lambda x: f(x))(getattr(m.special, fnm)),
              F(3, 4, lo=0.1, hi=3, dt=dt))
    for dt in ("int32", "int64", "int8", "int16"):
        C("math", "math.abs/%s" % dt, lambda x: m.abs(x), I(3, 4, dt=dt))
        C("math", "math.sign/%s" % dt, lambda x: m.sign(x), I(3, 4, dt=dt))
        C("math", "math.square/%s" % dt, lambda x: m.square(x), I(3, 4, dt=dt))
    binary = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "squared_difference",
              "atan2", "floordiv", "floormod", "truediv", "divide_no_nan", "multiply_no_nan", "xdivy", "xlogy",
              "xlog1py", "nextafter", "igamma", "igammac", "zeta", "polygamma", "equal", "not_equal", "less",
              "less_equal", "greater", "greater_equal"]
    for fnm in binary:
        lo = 0.1 if fnm in ("pow", "xlogy", "igamma", "igammac", "zeta") else -2
        for dt in ("float32", "float64"):
            a, b = F(3, 4, lo=lo, hi=3, dt=dt), F(4, lo=lo + (1.1 if fnm == "zeta" else 0), hi=3, dt=dt)
            if fnm == "polygamma":
                a = np.floor(F(3, 4, lo=0, hi=3, dt=dt))
            C("math", "math.%s/%s" % (fnm, dt), (lambda f: lambda x, y: f(x, y))(getattr(m, fnm)), a, b)
    for fnm in ("add", "subtract", "multiply", "floordiv", "floormod", "maximum", "minimum", "truediv",
                "divide_no_nan", "pow", "equal", "less"):
        for dt in ("int32", "int64", "uint8", "int16"):
            a = I(3, 4, lo=0 if dt == "uint8" else -9, hi=9, dt=dt)
            b = I(4, lo=1, hi=4, dt=dt)
            if fnm == "pow":
                a = I(3, 4, lo=0, hi=4, dt=dt)
            C("math", "math.%s/%s" % (fnm, dt), (lambda f: lambda x, y: f(x, y))(getattr(m, fnm)), a, b)
    C("math", "math.betainc", lambda a, b, x: m.betainc(a, b, x), F(5, lo=0.5, hi=3), F(5, lo=0.5, hi=3), F(5, lo=0, hi=1))
    C("math", "math.betainc/f64_scalar_ab", lambda a, b, x: m.betainc(a, b, x), np.array(1.7, "float64"), np.array(2.2, "float64"), F(2, 3, lo=0, hi=1, dt="float64"))
    C("math", "math.lbeta", lambda x: m.lbeta(x), F(3, 4, lo=0.5, hi=3))
    C("math", "math.add_n", lambda x, y, z: m.add_n([x, y, z]), F(3, 4), F(3, 4), F(3, 4))
    C("math", "math.angle", lambda x: m.angle(x), CX(5))
    C("math", "math.real_imag_conj", lambda x: (m.real(x), m.imag(x), m.conj(x)), CX(5))
    C("math", "dtypes.complex", lambda x, y: tf.complex(x, y), F(5), F(5))
    C("math", "math.abs/complex64", lambda x: m.abs(x), CX(5))
    C("math", "math.exp/complex64", lambda x: m.exp(x), CX(5))
    C("math", "math.sqrt/complex64", lambda x: m.sqrt(x), CX(5))
    C("math", "math.log/complex64", lambda x: m.log(x), CX(5))
    for red in ("reduce_all", "reduce_any"):
        C("math", "math.%s" % red, (lambda f: lambda x: (f(x), f(x, axis=1), f(x, axis=0, keepdims=True)))(getattr(m, red)), B(3, 4))
    for red in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_std",
                "reduce_variance", "reduce_logsumexp", "reduce_euclidean_norm"):
        for dt in ("float32", "float64", "int32"):
            if dt == "int32" and red in ("reduce_std", "reduce_variance", "reduce_logsumexp"):
                continue
            x = F(3, 4, 5, dt=dt) if dt != "int32" else I(3, 4, 5)
            C("math", "math.%s/%s" % (red, dt), (lambda f: lambda x: (f(x), f(x, axis=1), f(x, axis=[0, 2], keepdims=True)))(getattr(m, red)), x)
    for fnm in ("argmax", "argmin"):
        for dt in ("float32", "int32", "int64"):
            x = F(3, 4, dt=dt) if dt == "float32" else I(3, 4, dt=dt)
            C("math", "math.%s/%s" % (fnm, dt), (lambda f: lambda x: (f(x, axis=0), f(x, axis=1, output_type=tf.int32)))(getattr(m, fnm)), x)
    C("math", "math.count_nonzero", lambda x: (m.count_nonzero(x), m.count_nonzero(x, axis=1)), I(3, 4, lo=0, hi=2))
    C("math", "math.cumsum", lambda x: (m.cumsum(x, axis=1), m.cumsum(x, exclusive=True, reverse=True)), F(3, 4))
    C("math", "math.cumprod", lambda x: (m.cumprod(x, axis=1), m.cumprod(x, exclusive=True, reverse=True)), F(3, 4))
    C("math", "math.cumsum/int32", lambda x: m.cumsum(x, axis=0), I(3, 4))
    C("math", "math.cumulative_logsumexp", lambda x: (m.cumulative_logsumexp(x, axis=1), m.cumulative_logsumexp(x, exclusive=True, reverse=True)), F(3, 4))
    C("math", "math.confusion_matrix", lambda a, b: m.confusion_matrix(a, b, num_classes=4), I(8, lo=0, hi=4), I(8, lo=0, hi=4))
    C("math", "math.in_top_k", lambda t, p: m.in_top_k(t, p, k=2), I(4, lo=0, hi=5), F(4, 5))
    C("math", "math.top_k", lambda x: m.top_k(x, k=3), F(3, 6))
    C("math", "math.top_k/int32", lambda x: m.top_k(x, k=2, sorted=True), I(3, 6))
    C("math", "math.invert_permutation", lambda x: m.invert_permutation(x), np.array([3, 1, 0, 2], "int32"))
    C("math", "math.is_non_decreasing", lambda x: (m.is_non_decreasing(x), m.is_strictly_increasing(x)), F(5))
    C("math", "math.l2_normalize", lambda x: m.l2_normalize(x, axis=1), F(3, 4))
    C("math", "math.log_softmax", lambda x: m.log_softmax(x), F(3, 4))
    C("math", "math.softmax", lambda x: (m.softmax(x), m.softmax(x, axis=0)), F(3, 4))
    C("math", "math.logical", lambda x, y: (m.logical_and(x, y), m.logical_or(x, y), m.logical_not(x), m.logical_xor(x, y)), B(6), B(6))
    C("math", "math.polyval", lambda x: m.polyval([1.0, 2.0, 3.0], x), F(5))
    C("math", "math.scalar_mul", lambda x: m.scalar_mul(2.5, x), F(5))
    C("math", "math.zero_fraction", lambda x: m.zero_fraction(x), I(3, 4, lo=0, hi=2))
    C("math", "math.bincount", lambda x: (m.bincount(x), m.bincount(x, minlength=8, maxlength=10)), I(10, lo=0, hi=6))
    C("math", "math.bincount/weights", lambda x, w: m.bincount(x, weights=w), I(10, lo=0, hi=6), F(10))
    C("math", "math.bincount/binary_2d", lambda x: m.bincount(x, binary_output=True, axis=-1, minlength=6), I(3, 4, lo=0, hi=6))
    for seg in ("segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod"):
        C("math", "math.%s" % seg, (lambda f: lambda x, s: f(x, s))(getattr(m, seg)), F(6, 3), np.array([0, 0, 1, 2, 2, 2], "int32"))
    for seg in ("unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max", "unsorted_segment_min",
                "unsorted_segment_prod", "unsorted_segment_sqrt_n"):
        C("math", "math.%s" % seg, (lambda f: lambda x, s: f(x, s, num_segments=4))(getattr(m, seg)), F(6, 3), np.array([0, 3, 1, 0, 3, 1], "int32"))
    C("math", "math.sobol_sample", lambda: m.sobol_sample(3, 5, skip=2))
    C("math", "math.sobol_sample/f64_dim40", lambda: m.sobol_sample(40, 20, skip=1000, dtype=tf.float64))
    C("math", "math.round_half_even", lambda x: (m.round(x), tf.round(x * 10)), np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], "float32"))
    C("math", "math.approx_max_k", lambda x: m.approx_max_k(x, 3), F(4, 10))
    C("math", "math.approx_min_k", lambda x: m.approx_min_k(x, 3), F(4, 10))
    C("math", "math.approx_max_k/half", lambda x: m.approx_max_k(x, 4, recall_target=0.5), F(3, 12, dt="float16"))

    # -- bitwise
    for dt in ("int32", "uint8", "int64", "int8", "uint16"):
        lo = 0 if dt.startswith("u") else -50
        C("bitwise", "bitwise.and_or_xor/%s" % dt, lambda x, y: (tf.bitwise.bitwise_and(x, y), tf.bitwise.bitwise_or(x, y), tf.bitwise.bitwise_xor(x, y)),
          I(6, lo=lo, hi=100, dt=dt), I(6, lo=lo, hi=100, dt=dt))
        C("bitwise", "bitwise.invert/%s" % dt, lambda x: tf.bitwise.invert(x), I(6, lo=lo, hi=100, dt=dt))
        C("bitwise", "bitwise.shift/%s" % dt, lambda x, y: (tf.bitwise.left_shift(x, y), tf.bitwise.right_shift(x, y)),
          I(6, lo=lo, hi=100, dt=dt), I(6, lo=0, hi=7, dt=dt))
        C("bitwise", "raw.PopulationCount/%s" % dt, lambda x: tf.raw_ops.PopulationCount(x=x), I(6, lo=lo, hi=100, dt=dt))

    # -- casts
    for src in ("float32", "float64", "int32", "int64", "bool", "uint8", "float16", "int8", "uint32"):
        for dst in ("float32", "int32", "int64", "bool", "uint8", "float16", "float64", "bfloat16", "int16"):
            x = F(6, lo=-3, hi=200, dt=src) if src.startswith("float") else (B(6) if src == "bool" else I(6, lo=0, hi=100, dt=src))
            C("cast", "cast/%s->%s" % (src, dst), (lambda d: lambda x: tf.cast(tf.cast(x, d), tf.float32))(dst), x)
    C("cast", "saturate_cast/f32->u8", lambda x: tf.dtypes.saturate_cast(x, tf.uint8), F(6, lo=-300, hi=300))
    C("cast", "saturate_cast/i32->i8", lambda x: tf.dtypes.saturate_cast(x, tf.int8), I(6, lo=-300, hi=300))
    C("cast", "bitcast/f32->i32", lambda x: tf.bitcast(x, tf.int32), F(6))
    C("cast", "bitcast/i32->u8", lambda x: tf.bitcast(x, tf.uint8), I(6))
    C("cast", "bitcast/f32->f16x2", lambda x: tf.bitcast(x, tf.float16), F(6))
    C("cast", "convert_image_dtype/u8->f32", lambda x: img.convert_image_dtype(x, tf.float32), I(4, 4, 3, lo=0, hi=256, dt="uint8"))
    C("cast", "convert_image_dtype/f32->u8", lambda x: img.convert_image_dtype(x, tf.uint8, saturate=True), F(4, 4, 3, lo=0, hi=1))
    C("cast", "cast/complex->f32", lambda x: tf.cast(x, tf.float32), CX(4))

    # -- array ops
    C("array", "tensor_scatter_nd_update", lambda t, i, u: tf.tensor_scatter_nd_update(t, i, u), F(5, 3), np.array([[1], [3]], "int32"), F(2, 3))
    for op in ("add", "sub", "min", "max"):
        C("array", "tensor_scatter_nd_%s" % op, (lambda f: lambda t, i, u: f(t, i, u))(getattr(tf, "tensor_scatter_nd_" + op)),
          F(5, 3), np.array([[1], [3], [1]], "int32"), F(3, 3))
        C("array", "tensor_scatter_nd_%s/int32" % op, (lambda f: lambda t, i, u: f(t, i, u))(getattr(tf, "tensor_scatter_nd_" + op)),
          I(4, 4), np.array([[1, 2], [3, 0]], "int64"), I(2))
    C("array", "scatter_nd", lambda i, u: tf.scatter_nd(i, u, [6, 2]), np.array([[1], [4], [1]], "int32"), F(3, 2))
    C("array", "gather", lambda x, i: (tf.gather(x, i), tf.gather(x, i, axis=1)), F(4, 4), np.array([3, 0, 2], "int32"))
    C("array", "gather/batch_dims", lambda x, i: tf.gather(x, i, batch_dims=1, axis=1), F(2, 5, 3), I(2, 4, lo=0, hi=5))
    C("array", "gather_nd", lambda x, i: tf.gather_nd(x, i), F(4, 4, 2), np.array([[0, 1], [3, 3]], "int32"))
    C("array", "gather_nd/batch_dims", lambda x, i: tf.gather_nd(x, i, batch_dims=1), F(2, 4, 3), np.array([[[1]], [[3]]], "int32"))
    C("array", "gather/string", lambda x, i: tf.gather(x, i), S("a", "bb", "ccc"), np.array([2, 0], "int32"))
    for dt in ("float32", "int32", "int64", "float64"):
        x = np.sort(F(3, 6, dt=dt) if dt.startswith("f") else I(3, 6, dt=dt), axis=1)
        v = F(3, 4, dt=dt) if dt.startswith("f") else I(3, 4, dt=dt)
        C("array", "searchsorted/%s" % dt, lambda s, v: (tf.searchsorted(s, v), tf.searchsorted(s, v, side="right", out_type=tf.int64)), x, v)
    C("array", "histogram_fixed_width", lambda x: tf.histogram_fixed_width(x, [0.0, 5.0], nbins=5), F(20, lo=-1, hi=6))
    C("array", "histogram_fixed_width/int32", lambda x: tf.histogram_fixed_width(x, [0, 10], nbins=4), I(20, lo=-2, hi=12))
    C("array", "histogram_fixed_width_bins", lambda x: tf.histogram_fixed_width_bins(x, [0.0, 5.0], nbins=5), F(20, lo=-1, hi=6))
    C("array", "unique", lambda x: tf.unique(x), I(10, lo=0, hi=4))
    C("array", "unique/int64idx", lambda x: tf.unique(x, out_idx=tf.int64), F(3).repeat(3))
    C("array", "unique/string", lambda x: tf.unique(x), S("a", "b", "a", "c", "b"))
    C("array", "unique_with_counts", lambda x: tf.unique_with_counts(x), I(10, lo=0, hi=4))
    C("array", "raw.UniqueV2/axis", lambda x: tf.raw_ops.UniqueV2(x=x, axis=[0]), np.array([[1, 2], [3, 4], [1, 2]], "int32"))
    C("array", "where/1arg", lambda x: tf.where(x), B(3, 4))
    C("array", "where/1arg_float", lambda x: tf.where(x), I(3, 4, lo=0, hi=2).astype("float32"))
    C("array", "where/3arg", lambda c, x, y: tf.where(c, x, y), B(3, 4), F(3, 4), F(4))
    C("array", "where/3arg_string", lambda c, x, y: tf.where(c, x, y), B(3), S("a", "b", "c"), S("x", "y", "z"))
    for eq in ("ij,jk->ik", "bij,bjk->bik", "ii->i", "ij->ji", "i,i->", "ij->", "bhqd,bhkd->bhqk", "i,j->ij", "...ij,...jk->...ik"):
        shapes = {"ij,jk->ik": [(3, 4), (4, 5)], "bij,bjk->bik": [(2, 3, 4), (2, 4, 5)], "ii->i": [(4, 4)],
                  "ij->ji": [(3, 4)], "i,i->": [(5,), (5,)], "ij->": [(3, 4)], "bhqd,bhkd->bhqk": [(2, 2, 3, 4), (2, 2, 5, 4)],
                  "i,j->ij": [(3,), (4,)], "...ij,...jk->...ik": [(2, 3, 4), (2, 4, 2)]}[eq]
        C("array", "einsum/%s" % eq, (lambda e: lambda *xs: tf.einsum(e, *xs))(eq), *[F(*s) for s in shapes])
    C("array", "roll", lambda x: (tf.roll(x, 2, 0), tf.roll(x, [-1, 3], [0, 1])), F(4, 5))
    C("array", "roll/dynamic", lambda x, s: tf.roll(x, s, axis=[1]), I(4, 5), np.array([7], "int32"))
    C("array", "clip_by_value", lambda x: tf.clip_by_value(x, -0.3, 0.5), F(3, 4))
    C("array", "clip_by_value/int", lambda x: tf.clip_by_value(x, -1, 2), I(3, 4))
    C("array", "clip_by_norm", lambda x: (tf.clip_by_norm(x, 0.5), tf.clip_by_norm(x, 0.5, axes=[1])), F(3, 4))
    C("array", "clip_by_global_norm", lambda x, y: tf.clip_by_global_norm([x, y], 0.7)[0], F(3, 4), F(5))
    C("array", "clip_by_average_norm", lambda x: tf.compat.v1.clip_by_average_norm(x, 0.1), F(3, 4))
    C("array", "reverse", lambda x: (tf.reverse(x, [0]), tf.reverse(x, [0, 1])), F(3, 4))
    C("array", "reverse_sequence", lambda x, l: tf.reverse_sequence(x, l, seq_axis=1, batch_axis=0), F(3, 5, 2), np.array([2, 5, 0], "int64"))
    C("array", "tile", lambda x: tf.tile(x, [2, 3]), F(2, 2))
    for mode in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        C("array", "pad/%s" % mode, (lambda md: lambda x: tf.pad(x, [[1, 2], [2, 1]], mode=md))(mode), F(3, 4))
    C("array", "pad/constant_value", lambda x: tf.pad(x, [[1, 1]], constant_values=7), I(4))
    C("array", "one_hot", lambda x: (tf.one_hot(x, 4), tf.one_hot(x, 4, on_value=5, off_value=-1, axis=0)), I(5, lo=-1, hi=5))
    C("array", "sequence_mask", lambda l: (tf.sequence_mask(l, 6), tf.sequence_mask(l)), np.array([1, 3, 0, 5], "int32"))
    C("array", "boolean_mask", lambda x, mk: tf.boolean_mask(x, mk), F(5, 3), B(5))
    C("array", "boolean_mask/axis1", lambda x, mk: tf.boolean_mask(x, mk, axis=1), F(3, 5), B(5))
    C("array", "broadcast_to", lambda x: tf.broadcast_to(x, [3, 4, 5]), F(4, 1))
    C("array", "concat_stack_unstack", lambda x, y: (tf.concat([x, y], 1), tf.stack([x, y], 2), tf.unstack(x, axis=1)[2]), F(3, 4), F(3, 4))
    C("array", "split", lambda x: tf.split(x, [1, 3], axis=1) + tf.split(x, 2, axis=0), F(4, 4))
    C("array", "meshgrid", lambda x, y: tf.meshgrid(x, y, indexing="ij") + tf.meshgrid(x, y), F(3), F(4))
    C("array", "linspace", lambda a, b: tf.linspace(a, b, 7), np.float32(-1), np.float32(2))
    C("array", "linspace/batched", lambda a, b: tf.linspace(a, b, 4, axis=1), F(3), F(3))
    C("array", "range", lambda n: (tf.range(n), tf.range(2, n, 3), tf.range(0.5, 3.0, 0.7)), np.int32(9))
    C("array", "fill_eye", lambda n: (tf.fill([n, 2], 3.5), tf.eye(n), tf.eye(3, 4, batch_shape=[2])), np.int32(3))
    C("array", "argsort_sort", lambda x: (tf.argsort(x), tf.sort(x, direction="DESCENDING"), tf.argsort(x, axis=0, stable=True)), F(4, 5))
    C("array", "sort/int", lambda x: tf.sort(x), I(4, 5))
    C("array", "shape_size_rank", lambda x: (tf.shape(x), tf.size(x), tf.rank(x), tf.shape(x, out_type=tf.int64)), F(3, 4))
    C("array", "squeeze_expand", lambda x: (tf.squeeze(x), tf.expand_dims(x, -1), tf.squeeze(x, [1])), F(3, 1, 4, 1))
    C("array", "transpose", lambda x: (tf.transpose(x), tf.transpose(x, [1, 0, 2])), F(2, 3, 4))
    C("array", "transpose/conjugate", lambda x: tf.transpose(x, conjugate=True), CX(2, 3))
    C("array", "repeat", lambda x: (tf.repeat(x, 2, axis=0), tf.repeat(x, [1, 0, 2], axis=1), tf.repeat(x, 2)), F(2, 3))
    C("array", "dynamic_partition", lambda x, p: tf.dynamic_partition(x, p, 3), F(6, 2), np.array([0, 2, 1, 0, 2, 2], "int32"))
    C("array", "dynamic_stitch", lambda a, b: tf.dynamic_stitch([np.array([0, 2], "int32"), np.array([1, 3], "int32")], [a, b]), F(2, 3), F(2, 3))
    C("array", "setdiff1d", lambda x, y: tf.sets.difference(x[None], y[None]).values, I(8, lo=0, hi=6), I(3, lo=0, hi=6))
    C("array", "sets.intersection", lambda x, y: tf.sparse.to_dense(tf.sets.intersection(x, y)), I(2, 5, lo=0, hi=6), I(2, 4, lo=0, hi=6))
    C("array", "sets.union", lambda x, y: tf.sparse.to_dense(tf.sets.union(x, y)), I(2, 5, lo=0, hi=6), I(2, 4, lo=0, hi=6))
    C("array", "sets.size", lambda x: tf.sets.size(tf.sparse.from_dense(x)), I(2, 5, lo=1, hi=4))
    C("array", "raw.ListDiff", lambda x, y: tf.raw_ops.ListDiff(x=x, y=y), I(8, lo=0, hi=6), I(3, lo=0, hi=6))
    C("array", "strided_slice", lambda x: (x[1:, ::-1], x[..., 1], x[None, :2, 1:3:2]), F(3, 4, 5))
    C("array", "slice", lambda x: tf.slice(x, [1, 0], [2, -1]), F(3, 4))
    C("array", "ensure_shape", lambda x: tf.ensure_shape(x, [None, 4]), F(3, 4))
    C("array", "check_numerics", lambda x: tf.debugging.check_numerics(x, "bad"), F(3, 4))
    C("array", "assert_all", lambda x: tf.identity(x) if tf.debugging.assert_positive(x + 2) is None else x, F(3))
    C("array", "fingerprint", lambda x: tf.fingerprint(x), I(3, 4, dt="int32"))
    C("array", "fingerprint/string", lambda x: tf.fingerprint(x), S("a", "bcd", ""))
    C("array", "edit_distance", lambda a, b: tf.edit_distance(tf.sparse.from_dense(a), tf.sparse.from_dense(b)), I(2, 5, lo=1, hi=4, dt="int64"), I(2, 4, lo=1, hi=4, dt="int64"))
    C("array", "matrix_diag/k", lambda x: (la.diag(x, k=1), la.diag_part(la.diag(x), k=0)), F(2, 3))
    C("array", "ones_zeros_like", lambda x: (tf.ones_like(x), tf.zeros_like(x)), I(2, 3))
    C("array", "required_space_to_batch_paddings", lambda s: tf.required_space_to_batch_paddings(s, [2, 3]), np.array([5, 7], "int32"))
    C("array", "fake_quant_args", lambda x: tf.quantization.fake_quant_with_min_max_args(x, -0.5, 0.5, num_bits=8), F(10))
    C("array", "fake_quant_vars", lambda x: tf.quantization.fake_quant_with_min_max_vars(x, tf.constant(-0.5), tf.constant(0.5), narrow_range=True), F(10))
    C("array", "fake_quant_vars_per_channel", lambda x: tf.quantization.fake_quant_with_min_max_vars_per_channel(x, tf.constant([-0.5, -1.0, -0.2]), tf.constant([0.5, 1.0, 0.7])), F(4, 3))
    C("array", "quantize_dequantize_v2", lambda x: tf.quantization.quantize_and_dequantize_v2(x, -1.0, 1.0, range_given=True), F(10))
    C("array", "quantize+dequantize", lambda x: tf.quantization.dequantize(*tf.quantization.quantize(x, -1.0, 1.0, tf.quint8)), F(10))
    C("array", "quantize+dequantize/qint8_min_first", lambda x: tf.quantization.dequantize(*tf.quantization.quantize(x, -1.0, 1.0, tf.qint8, mode="MIN_FIRST"), mode="MIN_FIRST"), F(10))
    C("array", "quantize+dequantize/scaled_axis", lambda x: tf.quantization.dequantize(*tf.quantization.quantize(x, [-1.0, -0.5, -2.0], [1.0, 0.5, 2.0], tf.qint8, mode="SCALED", axis=1, narrow_range=True, round_mode="HALF_TO_EVEN"), mode="SCALED", axis=1, narrow_range=True), F(4, 3))
    C("array", "quantize+dequantize/qint32_bf16", lambda x: tf.cast(tf.quantization.dequantize(*tf.quantization.quantize(x, -1.0, 1.0, tf.qint32), dtype=tf.bfloat16), tf.float32), F(10))
    C("array", "quantize_and_dequantize/v1", lambda x: tf.quantization.quantize_and_dequantize(x, -1.0, 1.0, range_given=True, num_bits=4), F(10))
    C("array", "quantize_dequantize_v2/axis", lambda x: tf.quantization.quantize_and_dequantize_v2(x, [0.0] * 3, [0.0] * 3, range_given=False, axis=1, round_mode="HALF_UP", narrow_range=True), F(4, 3, dt="float64"))
    C("array", "quantized_concat", lambda x, y: (lambda a, b: tf.quantization.dequantize(*tf.quantization.quantized_concat(1, [a.output, b.output], [a.output_min, b.output_min], [a.output_max, b.output_max]), mode="MIN_FIRST"))(tf.quantization.quantize(x, -1.0, 1.0, tf.quint8, mode="MIN_FIRST"), tf.quantization.quantize(y, -2.0, 3.0, tf.quint8, mode="MIN_FIRST")), F(3, 4), F(3, 2, lo=-2, hi=3))
    # e7: TF1's quantized arithmetic and the uniform quantized ops (no public tf.* API: tf.raw_ops)
    RAW = tf.raw_ops
    def q8(x, lo=-1.0, hi=1.0):
        return tf.quantization.quantize(x, lo, hi, tf.quint8, mode="MIN_FIRST")
    C("array", "quantized_matmul+requantize", lambda a, b: (lambda qa, qb: (lambda mm: (lambda rr: tf.quantization.dequantize(*RAW.Requantize(input=mm.out, input_min=mm.min_out, input_max=mm.max_out, requested_output_min=rr.output_min, requested_output_max=rr.output_max, out_type=tf.quint8)))(RAW.RequantizationRange(input=mm.out, input_min=mm.min_out, input_max=mm.max_out)))(RAW.QuantizedMatMul(a=qa.output, b=qb.output, min_a=qa.output_min, max_a=qa.output_max, min_b=qb.output_min, max_b=qb.output_max, transpose_b=True)))(q8(a), q8(b, -2.0, 2.0)), F(3, 5), F(4, 5, lo=-2, hi=2))
    C("array", "quantized_conv2d+shrink", lambda x, w: (lambda qx, qw: (lambda c: tf.quantization.dequantize(*RAW.QuantizeDownAndShrinkRange(input=c.output, input_min=c.min_output, input_max=c.max_output, out_type=tf.quint8)))(RAW.QuantizedConv2D(input=qx.output, filter=qw.output, min_input=qx.output_min, max_input=qx.output_max, min_filter=qw.output_min, max_filter=qw.output_max, strides=[1, 2, 2, 1], padding="SAME")))(q8(x), q8(w)), F(1, 7, 6, 3), F(3, 3, 3, 4))
    C("array", "quantized_relu6+pools", lambda x: (lambda qx: (lambda r: (tf.quantization.dequantize(*RAW.QuantizedMaxPool(input=r.activations, min_input=r.min_activations, max_input=r.max_activations, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")), tf.quantization.dequantize(*RAW.QuantizedAvgPool(input=r.activations, min_input=r.min_activations, max_input=r.max_activations, ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME"))))(RAW.QuantizedRelu6(features=qx.output, min_features=qx.output_min, max_features=qx.output_max, out_type=tf.quint8)))(q8(x, -2.0, 8.0)), F(2, 4, 6, 3, lo=-2, hi=8))
    C("array", "quantized_bias_add+reshape", lambda x, b: (lambda qx, qb: (lambda s: tf.quantization.dequantize(s.output, s.min_out, s.max_out))(RAW.QuantizedBiasAdd(input=RAW.QuantizedReshape(tensor=qx.output, shape=[3, 4], input_min=qx.output_min, input_max=qx.output_max).output, bias=qb.output, min_input=qx.output_min, max_input=qx.output_max, min_bias=qb.output_min, max_bias=qb.output_max, out_type=tf.qint32)))(q8(x), q8(b)), F(2, 6), F(4))
    C("array", "uniform_quantize+requantize", lambda x: RAW.UniformDequantize(input=RAW.UniformRequantize(input=RAW.UniformQuantize(input=x, scales=tf.constant([0.05, 0.1, 0.2]), zero_points=tf.constant([1, 0, -2]), Tout=tf.qint32, quantization_axis=1, quantization_min_val=-2**31, quantization_max_val=2**31 - 1), input_scales=tf.constant([0.05, 0.1, 0.2]), input_zero_points=tf.constant([1, 0, -2]), output_scales=tf.constant(0.03), output_zero_points=tf.constant(3), Tout=tf.qint8, input_quantization_axis=1, input_quantization_min_val=-2**31, input_quantization_max_val=2**31 - 1, output_quantization_min_val=-128, output_quantization_max_val=127), scales=tf.constant(0.03), zero_points=tf.constant(3), Tout=tf.float32, quantization_min_val=-128, quantization_max_val=127), F(4, 3, lo=-4, hi=4))
    C("array", "uniform_clip_by_value", lambda x: RAW.UniformQuantizedClipByValue(operand=RAW.UniformQuantize(input=x, scales=tf.constant(0.1), zero_points=tf.constant(2), Tout=tf.qint32, quantization_min_val=-1000, quantization_max_val=1000), min=RAW.UniformQuantize(input=tf.constant(-0.7), scales=tf.constant(0.1), zero_points=tf.constant(2), Tout=tf.qint32, quantization_min_val=-1000, quantization_max_val=1000), max=RAW.UniformQuantize(input=tf.constant(0.9), scales=tf.constant(0.1), zero_points=tf.constant(2), Tout=tf.qint32, quantization_min_val=-1000, quantization_max_val=1000), scales=tf.constant(0.1), zero_points=tf.constant(2), quantization_min_val=-1000, quantization_max_val=1000), F(10))
    # f3: uniform quantized add / dot / hybrid dot, the per-channel requantization pair, QuantizedAdd (tf.raw_ops)
    def uq(x, sc, zp, T, lo, hi, ax=-1):
        return RAW.UniformQuantize(input=x, scales=tf.constant(sc), zero_points=tf.constant(zp), Tout=T, quantization_axis=ax, quantization_min_val=lo, quantization_max_val=hi)
    I32 = dict(quantization_min_val=-2**31, quantization_max_val=2**31 - 1)
    C("array", "uniform_quantized_dot+add", lambda x, w: (lambda d: RAW.UniformDequantize(input=RAW.UniformQuantizedAdd(lhs=d, rhs=d, lhs_scales=tf.constant([0.01, 0.02, 0.03, 0.04]), lhs_zero_points=tf.constant([0, 1, 2, 3]), rhs_scales=tf.constant(0.05), rhs_zero_points=tf.constant(-1), output_scales=tf.constant([0.02, 0.03, 0.05, 0.07]), output_zero_points=tf.constant([1, 0, -1, 2]), lhs_quantization_axis=1, rhs_quantization_axis=-1, output_quantization_axis=1, lhs_quantization_min_val=-2**31, lhs_quantization_max_val=2**31 - 1, rhs_quantization_min_val=-2**31, rhs_quantization_max_val=2**31 - 1, output_quantization_min_val=-2**31, output_quantization_max_val=2**31 - 1), scales=tf.constant([0.02, 0.03, 0.05, 0.07]), zero_points=tf.constant([1, 0, -1, 2]), Tout=tf.float32, quantization_axis=1, **I32))(RAW.UniformQuantizedDot(lhs=uq(x, 0.05, 2, tf.qint8, -128, 127), rhs=uq(w, [0.02, 0.03, 0.01, 0.05], [0, 0, 0, 0], tf.qint8, -127, 127, 1), lhs_scales=tf.constant(0.05), lhs_zero_points=tf.constant(2), rhs_scales=tf.constant([0.02, 0.03, 0.01, 0.05]), rhs_zero_points=tf.constant([0, 0, 0, 0]), output_scales=tf.constant([0.01, 0.02, 0.03, 0.04]), output_zero_points=tf.constant([0, 1, 2, 3]), Tout=tf.qint32, lhs_quantization_min_val=-128, lhs_quantization_max_val=127, rhs_quantization_axis=1, rhs_quantization_min_val=-127, rhs_quantization_max_val=127, output_quantization_axis=1, **{"output_" + k: v for k, v in I32.items()})), F(3, 5, lo=-2, hi=2), F(5, 4, lo=-1, hi=1))
    C("array", "uniform_quantized_dot_hybrid", lambda x, w: RAW.UniformQuantizedDotHybrid(lhs=x, rhs=uq(w, [0.02, 0.03, 0.01], [1, 0, -1], tf.qint8, -128, 127, 1), rhs_scales=tf.constant([0.02, 0.03, 0.01]), rhs_zero_points=tf.constant([1, 0, -1]), Tout=tf.float32, rhs_quantization_axis=1, rhs_quantization_min_val=-128, rhs_quantization_max_val=127), F(4, 6, lo=-3, hi=3), F(6, 3, lo=-1, hi=1))
    C("array", "requantize_per_channel", lambda x: (lambda q: (lambda r: (lambda p: tf.quantization.dequantize(p.output, p.output_min, p.output_max))(RAW.RequantizePerChannel(input=q, input_min=tf.constant([-1.0, -2.0, -4.0]), input_max=tf.constant([1.0, 2.0, 4.0]), requested_output_min=r.output_min, requested_output_max=r.output_max, out_type=tf.quint8)))(RAW.RequantizationRangePerChannel(input=q, input_min=tf.constant([-1.0, -2.0, -4.0]), input_max=tf.constant([1.0, 2.0, 4.0]), clip_value_max=6.0)))(uq(x, 1e-9, 0, tf.qint32, -2**31, 2**31 - 1)), F(1, 3, 4, 3, lo=-1, hi=1))
    C("array", "quantized_add", lambda x, y: (lambda qx, qy: (lambda z: tf.quantization.dequantize(z.z, z.min_z, z.max_z))(RAW.QuantizedAdd(x=qx.output, y=qy.output, min_x=qx.output_min, max_x=qx.output_max, min_y=qy.output_min, max_y=qy.output_max)))(q8(x), q8(y, -2.0, 3.0)), F(3, 4), F(4, lo=-2, hi=3))
    # h5 (session 23): uniform quantized convolutions, QuantizedResizeBilinear, QuantizedBatchNormWithGlobalNormalization (tf.raw_ops)
    OS4, OZ4 = [0.01, 0.02, 0.03, 0.04], [0, 1, 2, 3]
    C("array", "uniform_quantized_conv", lambda x, w: RAW.UniformDequantize(input=RAW.UniformQuantizedConvolution(lhs=uq(x, 0.05, 2, tf.qint8, -128, 127), rhs=uq(w, [0.02] * 4, [0] * 4, tf.qint8, -127, 127, 0), lhs_scales=tf.constant(0.05), lhs_zero_points=tf.constant(2), rhs_scales=tf.constant([0.02] * 4), rhs_zero_points=tf.constant([0] * 4), output_scales=tf.constant(OS4), output_zero_points=tf.constant(OZ4), Tout=tf.qint32, window_strides=[2, 1], padding="SAME", lhs_quantization_min_val=-128, lhs_quantization_max_val=127, rhs_quantization_axis=0, rhs_quantization_min_val=-127, rhs_quantization_max_val=127, output_quantization_axis=1, output_quantization_min_val=-2**31, output_quantization_max_val=2**31 - 1), scales=tf.constant(OS4), zero_points=tf.constant(OZ4), Tout=tf.float32, quantization_axis=1, **I32), F(2, 3, 5, 5, lo=-2, hi=2), F(4, 3, 3, 3, lo=-1, hi=1))
    C("array", "uniform_quantized_conv_hybrid", lambda x, w: RAW.UniformQuantizedConvolutionHybrid(lhs=x, rhs=uq(w, 0.02, 1, tf.qint8, -128, 127), rhs_scales=tf.constant(0.02), rhs_zero_points=tf.constant(1), Tout=tf.float32, padding="EXPLICIT", explicit_padding=[1, 0, 0, 2], rhs_dilation=[2, 1], rhs_quantization_min_val=-128, rhs_quantization_max_val=127), F(2, 3, 6, 5, lo=-3, hi=3), F(4, 3, 2, 2, lo=-1, hi=1))
    C("array", "quantized_resize_bilinear", lambda x: (lambda q: (lambda r: tf.quantization.dequantize(r.resized_images, r.out_min, r.out_max))(RAW.QuantizedResizeBilinear(images=q.output, size=[5, 7], min=q.output_min, max=q.output_max, half_pixel_centers=True)))(q8(x)), F(1, 3, 4, 2, lo=-1, hi=1))
    C("array", "quantized_batch_norm", lambda x: (lambda q, m, v, b, g: (lambda r: tf.quantization.dequantize(r.result, r.result_min, r.result_max))(RAW.QuantizedBatchNormWithGlobalNormalization(t=q.output, t_min=q.output_min, t_max=q.output_max, m=m.output, m_min=m.output_min, m_max=m.output_max, v=v.output, v_min=v.output_min, v_max=v.output_max, beta=b.output, beta_min=b.output_min, beta_max=b.output_max, gamma=g.output, gamma_min=g.output_min, gamma_max=g.output_max, out_type=tf.qint32, variance_epsilon=1e-3, scale_after_normalization=True)))(q8(x), q8(tf.constant([0.1, -0.2, 0.3])), q8(tf.constant([0.5, 0.25, 0.75]), 0.0, 1.0), q8(tf.constant([0.0, 0.5, -0.5])), q8(tf.constant([1.0, 0.5, 0.75]), 0.0, 1.0)), F(1, 2, 3, 3, lo=-1, hi=1))
    C("array", "quantized_instance_norm", lambda x: (lambda q: (lambda r: tf.quantization.dequantize(r.y, r.y_min, r.y_max))(RAW.QuantizedInstanceNorm(x=q.output, x_min=q.output_min, x_max=q.output_max, variance_epsilon=1e-4, min_separation=1e-2)))(q8(x)), F(2, 3, 4, 3, lo=-1, hi=1))
    C("array", "tensor_diag", lambda x: (la.tensor_diag(x), la.tensor_diag_part(la.tensor_diag(x))), F(2, 2))
    C("array", "extract_volume_patches", lambda x: tf.extract_volume_patches(x, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "VALID"), F(1, 3, 4, 4, 2))
    C("array", "unravel_index", lambda x: tf.unravel_index(x, [3, 4]), np.array([1, 5, 11], "int32"))
    C("array", "broadcast_dynamic_shape", lambda a, b: tf.broadcast_dynamic_shape(a, b), np.array([3, 1], "int32"), np.array([4], "int32"))
    C("array", "guarantee_const", lambda x: tf.guarantee_const(x) * 2, F(3))
    C("array", "identity_n+stop_gradient", lambda x: tf.stop_gradient(tf.identity_n([x, x])[1]), F(3))
    C("array", "scatter_nd/string?", lambda u: tf.scatter_nd([[0], [2]], u, [4]), I(2))
    C("array", "batch_to_space", lambda x: tf.batch_to_space(x, [2, 2], [[0, 0], [1, 0]]), F(4, 2, 2, 1))
    C("array", "space_to_batch_nd", lambda x: tf.space_to_batch_nd(x, [2, 2], [[0, 1], [1, 0]]), F(1, 3, 3, 2))
    C("array", "matrix_band_part", lambda x: la.band_part(x, 1, -1), F(4, 4))
    C("array", "mirror_pad_grad?", lambda x: tf.pad(x, [[0, 0], [2, 2]], "REFLECT"), F(2, 3))
    C("array", "nondiff_shape_n", lambda x, y: tf.shape_n([x, y]), F(2, 3), F(4))
    C("array", "cumsum_on_bool_cast", lambda x: tf.cumsum(tf.cast(x, tf.int32)), B(6))
    C("array", "tf.math.reduce_max/string?", lambda x: tf.strings.reduce_join(x), S("a", "b"))

    # -- strings
    words = S("Hello World", "  tf  ", "", "ÄÖü straße", "a,b,,c", "123", "-4.5e2", "x y z")
    C("strings", "as_string", lambda x: (tfs.as_string(x), tfs.as_string(x, precision=2), tfs.as_string(x, scientific=True)), F(4, lo=-100, hi=100))
    C("strings", "as_string/int", lambda x: (tfs.as_string(x), tfs.as_string(x, width=5, fill="0")), I(4, lo=-100, hi=100))
    C("strings", "as_string/bool", lambda x: tfs.as_string(x), B(4))
    C("strings", "bytes_split", lambda s: tfs.bytes_split(s).to_tensor(), words)
    C("strings", "format", lambda x: tfs.format("x={} y={}", [x, x * 2]), F(3))
    C("strings", "join", lambda a, b: (tfs.join([a, b], separator="-"), a + b), words, words[::-1].copy())
    C("strings", "length", lambda s: (tfs.length(s), tfs.length(s, unit="UTF8_CHAR")), words)
    C("strings", "lower_upper", lambda s: (tfs.lower(s), tfs.upper(s), tfs.lower(s, encoding="utf-8")), words)
    C("strings", "ngrams", lambda s: tfs.ngrams(tfs.split(s), 2, separator="_").to_tensor(), words)
    C("strings", "reduce_join", lambda s: (tfs.reduce_join(s), tfs.reduce_join(tf.reshape(s, [2, 4]), axis=1, separator="|")), words)
    C("strings", "regex_full_match", lambda s: tfs.regex_full_match(s, r"[a-z ]+"), words)
    C("strings", "regex_replace", lambda s: (tfs.regex_replace(s, r"\s+", "_"), tfs.regex_replace(s, "o", "0", replace_global=False)), words)
    C("strings", "split", lambda s: tfs.split(s).to_tensor(), words)
    C("strings", "split/sep", lambda s: tfs.split(s, sep=",", maxsplit=2).to_tensor(default_value="?"), words)
    C("strings", "strip", lambda s: tfs.strip(s), words)
    C("strings", "substr", lambda s: (tfs.substr(s, 0, 3), tfs.substr(s, 0, 2, unit="UTF8_CHAR")), words)
    C("strings", "to_hash_bucket", lambda s: (tfs.to_hash_bucket(s, 100), tfs.to_hash_bucket_fast(s, 100), tfs.to_hash_bucket_strong(s, 100, [1, 2])), words)
    C("strings", "to_number", lambda s: (tfs.to_number(s), tfs.to_number(s, tf.int64)), S("1", "-20", "0", "77"))
    C("strings", "to_number/float", lambda s: tfs.to_number(s, tf.float64), S("1.5", "-2e3", "inf", "0.1"))
    C("strings", "unicode_decode", lambda s: tfs.unicode_decode(s, "UTF-8").to_tensor(), words)
    C("strings", "unicode_decode_with_offsets", lambda s: [t.to_tensor() for t in tfs.unicode_decode_with_offsets(s, "UTF-8")], words)
    C("strings", "unicode_encode", lambda x: tfs.unicode_encode(x, "UTF-8"), np.array([[72, 228, 8364], [97, 98, 99]], "int32"))
    C("strings", "unicode_script", lambda x: tfs.unicode_script(x), np.array([72, 1488, 1041, 12354, 48], "int32"))
    C("strings", "unicode_split", lambda s: tfs.unicode_split(s, "UTF-8").to_tensor(), words)
    C("strings", "unicode_transcode", lambda s: tfs.unicode_transcode(s, "UTF-8", "UTF-16-BE"), words)
    C("strings", "unicode_transcode/ctl_ignore", lambda s: tfs.unicode_transcode(s + "\x01\xff", "UTF-8", "UTF-32-BE", errors="ignore", replace_control_characters=True), words)
    C("strings", "unicode_transcode/utf16le", lambda s: tfs.unicode_transcode(tfs.unicode_transcode(s, "UTF-8", "UTF-16-BE"), "UTF-16BE", "UTF-8", replacement_char=63), words)
    C("strings", "unicode_decode/windows-1252", lambda s: tfs.unicode_decode(s, "windows-1252").to_tensor(), words)
    C("strings", "unsorted_segment_join", lambda s: tfs.unsorted_segment_join(s, [0, 1, 0, 2, 1, 0, 2, 2], 3, separator="+"), words)
    C("strings", "string_to_hash_bucket_v1", lambda s: tf.compat.v1.string_to_hash_bucket(s, 10), words)
    C("strings", "regex_split?", lambda s: tfs.split(tfs.regex_replace(s, "[,;]", " ")).to_tensor(), words)
    C("strings", "tf.strings.as_string/f64", lambda x: tfs.as_string(x, shortest=True), F(4, dt="float64"))
    C("strings", "decode_base64", lambda s: (tf.io.encode_base64(s), tf.io.decode_base64(tf.io.encode_base64(s, pad=True))), words)
    C("strings", "decode_raw", lambda s: tf.io.decode_raw(s, tf.uint8, fixed_length=4), S("abcd", "ef"))
    C("strings", "decode_csv", lambda s: tf.io.decode_csv(s, [[0.0], [""], [0]]), S("1.5,a,3", "2,b,4"))
    C("strings", "string_format_tensor", lambda x: tfs.format("{}", x, summarize=2), F(6))

    # -- image
    im = F(2, 6, 8, 3, lo=0, hi=1)
    C("image", "adjust_brightness", lambda x: img.adjust_brightness(x, 0.2), im)
    C("image", "adjust_contrast", lambda x: img.adjust_contrast(x, 1.5), im)
    C("image", "adjust_gamma", lambda x: img.adjust_gamma(x, 2.0, 1.2), im)
    C("image", "adjust_hue", lambda x: img.adjust_hue(x, 0.2), im)
    C("image", "adjust_saturation", lambda x: img.adjust_saturation(x, 1.7), im)
    C("image", "adjust_contrast/u8", lambda x: img.adjust_contrast(x, 1.5), I(1, 4, 4, 3, lo=0, hi=256, dt="uint8"))
    C("image", "central_crop", lambda x: img.central_crop(x, 0.5), im)
    C("image", "crop_and_resize", lambda x, b, i: img.crop_and_resize(x, b, i, [3, 4]), im, F(3, 4, lo=0, hi=1), np.array([0, 1, 1], "int32"))
    C("image", "crop_and_resize/nearest", lambda x, b, i: img.crop_and_resize(x, b, i, [3, 4], method="nearest", extrapolation_value=-1.0),
      im, F(3, 4, lo=-0.2, hi=1.2), np.array([0, 1, 1], "int32"))
    C("image", "crop_to_bounding_box", lambda x: img.crop_to_bounding_box(x, 1, 2, 3, 4), im)
    C("image", "draw_bounding_boxes", lambda x, b: img.draw_bounding_boxes(x, b, np.array([[1, 0, 0, 1]], "float32")), im, F(2, 2, 4, lo=0, hi=1))
    C("image", "extract_patches", lambda x: img.extract_patches(x, [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID"), im)
    C("image", "extract_patches/same_rate", lambda x: img.extract_patches(x, [1, 2, 2, 1], [1, 2, 3, 1], [1, 2, 1, 1], "SAME"), im)
    C("image", "flips_rot90_transpose", lambda x: (img.flip_left_right(x), img.flip_up_down(x), img.rot90(x, 3), img.transpose(x)), im)
    C("image", "grayscale", lambda x: (img.rgb_to_grayscale(x), img.grayscale_to_rgb(img.rgb_to_grayscale(x))), im)
    C("image", "hsv", lambda x: (img.rgb_to_hsv(x), img.hsv_to_rgb(x)), im)
    C("image", "yiq_yuv", lambda x: (img.rgb_to_yiq(x), img.yiq_to_rgb(x), img.rgb_to_yuv(x), img.yuv_to_rgb(x)), im)
    C("image", "image_gradients", lambda x: img.image_gradients(x), im)
    C("image", "sobel_edges", lambda x: img.sobel_edges(x), im)
    C("image", "non_max_suppression", lambda b, s: img.non_max_suppression(b, s, 4, iou_threshold=0.3), F(10, 4, lo=0, hi=1), F(10, lo=0, hi=1))
    C("image", "non_max_suppression_with_scores", lambda b, s: img.non_max_suppression_with_scores(b, s, 4, soft_nms_sigma=0.5), F(10, 4, lo=0, hi=1), F(10, lo=0, hi=1))
    C("image", "non_max_suppression_padded", lambda b, s: img.non_max_suppression_padded(b, s, 4, pad_to_max_output_size=True), F(10, 4, lo=0, hi=1), F(10, lo=0, hi=1))
    C("image", "non_max_suppression_overlaps", lambda o, s: img.non_max_suppression_overlaps(o, s, 3), F(6, 6, lo=0, hi=1), F(6, lo=0, hi=1))
    C("image", "combined_non_max_suppression", lambda b, s: img.combined_non_max_suppression(b, s, 3, 5), F(2, 8, 1, 4, lo=0, hi=1), F(2, 8, 3, lo=0, hi=1))
    C("image", "pad_to_bounding_box", lambda x: img.pad_to_bounding_box(x, 1, 2, 9, 12), im)
    C("image", "per_image_standardization", lambda x: img.per_image_standardization(x), im)
    C("image", "psnr", lambda a, b: img.psnr(a, b, 1.0), im, F(2, 6, 8, 3, lo=0, hi=1))
    C("image", "ssim", lambda a, b: img.ssim(a, b, 1.0, filter_size=3), im, F(2, 6, 8, 3, lo=0, hi=1))
    C("image", "ssim_multiscale", lambda a, b: img.ssim_multiscale(a, b, 1.0, filter_size=3, power_factors=(0.5, 0.5)), F(1, 16, 16, 3, lo=0, hi=1), F(1, 16, 16, 3, lo=0, hi=1))
    C("image", "total_variation", lambda x: img.total_variation(x), im)
    for meth in ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic"):
        C("image", "resize/%s" % meth, (lambda md: lambda x: (img.resize(x, [9, 5], method=md), img.resize(x, [3, 12], method=md, antialias=True)))(meth), im)
    C("image", "resize/preserve_aspect", lambda x: img.resize(x, [10, 10], preserve_aspect_ratio=True), im)
    C("image", "resize_v1_align_corners", lambda x: (tf.compat.v1.image.resize_bilinear(x, [9, 5], align_corners=True), tf.compat.v1.image.resize_nearest_neighbor(x, [9, 5], half_pixel_centers=True), tf.compat.v1.image.resize_bicubic(x, [9, 5], align_corners=True)), im)
    C("image", "resize_with_crop_or_pad", lambda x: img.resize_with_crop_or_pad(x, 4, 10), im)
    C("image", "resize_with_pad", lambda x: img.resize_with_pad(x, 10, 10), im)
    C("image", "resize/u8", lambda x: img.resize(x, [5, 7]), I(1, 4, 4, 3, lo=0, hi=256, dt="uint8"))
    C("image", "stateless_random_flip", lambda x: (img.stateless_random_flip_left_right(x, [1, 2]), img.stateless_random_flip_up_down(x, [3, 4])), im)
    C("image", "stateless_random_brightness_contrast", lambda x: (img.stateless_random_brightness(x, 0.2, [1, 2]), img.stateless_random_contrast(x, 0.5, 1.5, [1, 2])), im)
    C("image", "stateless_random_hue_saturation", lambda x: (img.stateless_random_hue(x, 0.2, [1, 2]), img.stateless_random_saturation(x, 0.5, 1.5, [1, 2])), im)
    C("image", "stateless_random_crop", lambda x: img.stateless_random_crop(x, [2, 3, 4, 3], [5, 6]), im)
    C("image", "stateless_sample_distorted_bounding_box", lambda b: img.stateless_sample_distorted_bounding_box([6, 8, 3], b, [1, 2], min_object_covered=0.1), F(1, 2, 4, lo=0, hi=1))
    C("image", "encode_decode_png", lambda x: img.decode_png(img.encode_png(x)), I(4, 5, 3, lo=0, hi=256, dt="uint8"))
    C("image", "encode_jpeg", lambda x: tf.shape(img.decode_jpeg(img.encode_jpeg(x))), I(8, 8, 3, lo=0, hi=256, dt="uint8"))
    C("image", "decode_image/png", lambda s: img.decode_image(s, channels=3, expand_animations=False), np.array(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82", dtype="S"))
    C("image", "random_crop? extract_glimpse", lambda x, o: img.extract_glimpse(x, [3, 3], o, centered=False, normalized=False), im, np.array([[1.0, 2.0], [0.0, 4.0]], "float32"))
    # session 19 (c4): GIF / BMP / WebP decoding, glimpses, bounding-box samplers
    gif2 = np.array(b'GIF89a\x04\x00\x03\x00\x91\x00\x00\xff\x00\x00\x00\xff\x00\x00\x00\xff\n\x14\x1e,\x00\x00\x00\x00\x04\x00\x03\x00\x00\x02\n\x14Gp\x0cE1\x1c\xc10\x05\x00!\xf9\x04\x01\x05\x00\x00\x00,\x01\x00\x01\x00\x02\x00\x02\x00\x00\x02\x04\x14C\x10\x05\x00;', dtype="S")  # 2 frames, the second offset with a transparent index
    bmp24 = np.array(b'BMN\x00\x00\x00\x00\x00\x00\x006\x00\x00\x00(\x00\x00\x00\x04\x00\x00\x00\x02\x00\x00\x00\x01\x00\x18\x00\x00\x00\x00\x00\x18\x00\x00\x00\x13\x0b\x00\x00\x13\x0b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf8\x9b\x81\x8b\xa2\xbbG\xef\x8f\x01\xac\xd1\x83\xa3\xd9\x0bOE-\x05\x14\xe9\xa6\xd0', dtype="S")  # 4x2, 24-bit (numpy's "S" drops trailing NULs: this one ends in none)
    webp = np.array(b'RIFFn\x00\x00\x00WEBPVP8Lb\x00\x00\x00/\x03\x80\x00\x00_\xa0(\x92\xa4\xe6\x92\x80Dz\xf3\xc2\x0c.\xd0\x89\xb1\xa4\xc3L\x00\x16{w\xaf\xc1^\x1a(!\x80\nb\n\xa2\x89\x9a\x00@\x9a\x17\xba\xcc\xbaT\xa1\x06)\x96^\xfe\xce\x7f\x88\xe8\xb8\xd6\xf7\x99ui\x83\x83\xf2\xe8\xfe\xa3\xe5o\xa7i\x93R\x04(\x84d\x85\xb2y2\xdf\\"H#\xf2\x88\xfe\x07f\xf9\x07', dtype="S")  # lossless 4x3
    C("image", "decode_gif", lambda s: tf.io.decode_gif(s), gif2)
    C("image", "decode_image/gif", lambda s: (img.decode_image(s), img.decode_image(s, expand_animations=False, dtype=tf.float32)), gif2)
    C("image", "decode_bmp", lambda s: (tf.io.decode_bmp(s), tf.io.decode_bmp(s, channels=4)), bmp24)
    C("image", "decode_image/bmp", lambda s: img.decode_image(s, channels=3, dtype=tf.uint16), bmp24)
    r19 = np.random.default_rng(19)  # its own generator: the calls after these keep their inputs
    jpg = np.array(tf.io.encode_jpeg(r19.integers(0, 256, (13, 17, 3)).astype("uint8")).numpy(), dtype="S")
    C("image", "decode_and_crop_jpeg", lambda s: (img.decode_and_crop_jpeg(s, [2, 5, 7, 9]), img.decode_and_crop_jpeg(s, [0, 9, 13, 8], channels=1)), jpg)
    C("image", "decode_webp", lambda s: (tf.io.decode_webp(s), img.decode_image(s, expand_animations=False)), webp)
    C("image", "extract_glimpse/centered", lambda x, o: img.extract_glimpse(x, [3, 4], o, noise="zero"), im, np.array([[0.1, -0.2], [0.5, 0.9]], "float32"))
    C("image", "extract_glimpse_v1", lambda x, o: tf.compat.v1.image.extract_glimpse(x, [2, 3], o, centered=True, normalized=True, uniform_noise=False), im, np.array([[0.0, 0.1], [-0.3, 0.2]], "float32"))
    C("image", "sample_distorted_bounding_box", lambda b: img.sample_distorted_bounding_box([60, 80, 3], b, seed=7, min_object_covered=0.2, area_range=[0.1, 0.9]), r19.uniform(0, 1, (1, 2, 4)).astype("float32"))
    C("image", "stateless_sample_distorted_bounding_box/aspect", lambda b: img.stateless_sample_distorted_bounding_box([100, 60, 3], b, [5, 6], aspect_ratio_range=[0.5, 2.0], area_range=[0.2, 0.8]), np.array([[[0.1, 0.1, 0.6, 0.7]]], "float32"))
    C("image", "dilation2d", lambda x, f: (nn.dilation2d(x, f, [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1]), nn.erosion2d(x, f, [1, 1, 1, 1], "VALID", "NHWC", [1, 1, 1, 1])), im, F(2, 2, 3))

    # -- signal
    audio = F(2, 1000)
    C("signal", "stft", lambda x: sig.stft(x, 256, 128, fft_length=256), audio)
    C("signal", "stft/pad_end_window", lambda x: sig.stft(x, 200, 80, pad_end=True, window_fn=sig.hamming_window), audio)
    C("signal", "inverse_stft", lambda x: sig.inverse_stft(sig.stft(x, 256, 128), 256, 128, window_fn=sig.inverse_stft_window_fn(128)), audio)
    C("signal", "frame", lambda x: (sig.frame(x, 100, 50), sig.frame(x, 300, 300, pad_end=True, pad_value=1.0)), audio)
    C("signal", "overlap_and_add", lambda x: sig.overlap_and_add(x, 3), F(2, 5, 8))
    C("signal", "windows", lambda: (sig.hann_window(10), sig.hamming_window(9, periodic=False), sig.kaiser_window(8, beta=6.0), sig.vorbis_window(12), sig.kaiser_bessel_derived_window(8)))
    C("signal", "linear_to_mel_weight_matrix", lambda: sig.linear_to_mel_weight_matrix(40, 129, 16000, 20.0, 4000.0))
    C("signal", "linear_to_mel_weight_matrix/f64", lambda: sig.linear_to_mel_weight_matrix(20, 65, 8000, dtype=tf.float64))
    C("signal", "mfcc_pipeline", lambda x: sig.mfccs_from_log_mel_spectrograms(
        tf.math.log(tf.tensordot(tf.abs(sig.stft(x, 256, 128)), sig.linear_to_mel_weight_matrix(40, 129, 16000, 20.0, 4000.0), 1) + 1e-6))[..., :13], audio)
    C("signal", "mfccs_from_log_mel", lambda x: sig.mfccs_from_log_mel_spectrograms(x), F(3, 40))
    for t in (1, 2, 3, 4):
        C("signal", "dct/type%d" % t, (lambda tt: lambda x: (sig.dct(x, type=tt), sig.dct(x, type=tt, n=6) if tt != 1 else x))(t), F(3, 8))
    C("signal", "dct/ortho", lambda x: (sig.dct(x, norm="ortho"), sig.idct(x, norm="ortho"), sig.idct(x, type=3)), F(3, 8))
    C("signal", "fft_family", lambda x: (sig.fft(x), sig.ifft(x), sig.fft2d(x), sig.ifft2d(x), sig.fft3d(x[None]), sig.ifft3d(x[None])), CX(4, 6))
    C("signal", "rfft_family", lambda x: (sig.rfft(x), sig.irfft(sig.rfft(x)), sig.rfft2d(x), sig.irfft2d(sig.rfft2d(x)), sig.rfft3d(x[None]), sig.rfft(x, [10])), F(4, 6))
    C("signal", "fft/complex128", lambda x: sig.fft(tf.cast(x, tf.complex128)), CX(2, 5))
    C("signal", "fftshift", lambda x: (sig.fftshift(x), sig.ifftshift(x, axes=1)), F(4, 5))
    C("signal", "mu_law", lambda x: tf.cast(tf.math.round(tf.math.sign(x) * tf.math.log1p(255.0 * tf.abs(x)) / tf.math.log1p(255.0) * 127.5), tf.int32), F(10))

    # -- linalg
    A = F(3, 3) + 3 * np.eye(3, dtype="float32")
    SPD = (lambda a: (a @ a.T + 3 * np.eye(4)).astype("float32"))(F(4, 4))
    C("linalg", "adjoint", lambda x: la.adjoint(x), CX(2, 3))
    C("linalg", "cholesky", lambda x: la.cholesky(x), SPD)
    C("linalg", "cholesky_solve", lambda x, b: la.cholesky_solve(la.cholesky(x), b), SPD, F(4, 2))
    C("linalg", "cross", lambda a, b: la.cross(a, b), F(4, 3), F(4, 3))
    C("linalg", "det_slogdet_logdet", lambda x, s: (la.det(x), la.slogdet(x), la.logdet(s)), A, SPD)
    C("linalg", "det/f64_batched", lambda x: la.det(x), F(2, 3, 3, dt="float64"))
    C("linalg", "eigh", lambda x: (la.eigh(x)[0], tf.abs(la.eigh(x)[1])), SPD)
    C("linalg", "eigvalsh", lambda x: la.eigvalsh(x), SPD)
    C("linalg", "eig", lambda x: la.eigvals(x), SPD)
    C("linalg", "expm", lambda x: la.expm(x), A * 0.3)
    C("linalg", "global_norm", lambda x, y: tf.linalg.global_norm([x, y]), F(3), F(2, 2))
    C("linalg", "inv", lambda x: (la.inv(x), la.inv(x, adjoint=True)), A)
    C("linalg", "inv/f64", lambda x: la.inv(x), A.astype("float64"))
    C("linalg", "logm", lambda x: la.logm(tf.cast(x, tf.complex64)), SPD)
    C("linalg", "lstsq", lambda a, b: (la.lstsq(a, b), la.lstsq(a, b, l2_regularizer=0.1)), F(5, 3), F(5, 2))
    C("linalg", "lu", lambda x: la.lu(x), A)
    C("linalg", "lu_solve", lambda x, b: la.lu_solve(*la.lu(x), b), A, F(3, 2))
    C("linalg", "lu_matrix_inverse", lambda x: la.lu_matrix_inverse(*la.lu(x)), A)
    C("linalg", "lu_reconstruct", lambda x: la.lu_reconstruct(*la.lu(x)), A)
    C("linalg", "matmul_variants", lambda a, b: (la.matmul(a, b), la.matmul(a, b, transpose_a=True, transpose_b=True)[0], la.matvec(a, b[:, 0])), F(3, 3), F(3, 3))
    C("linalg", "matmul/batched_bcast", lambda a, b: la.matmul(a, b), F(2, 1, 3, 4), F(3, 4, 2))
    C("linalg", "matmul/int32", lambda a, b: la.matmul(a, b), I(3, 4), I(4, 2))
    C("linalg", "matmul/complex", lambda a, b: la.matmul(a, b, adjoint_a=True), CX(3, 3), CX(3, 2))
    # complex products and reductions (session 19, d1); their own generator, so the inputs of the
    # cases after them stay as they were
    r19 = np.random.default_rng(1919)

    def CXd(*shape, dt="complex64"):
        return (r19.uniform(-1, 1, shape) + 1j * r19.uniform(-1, 1, shape)).astype(dt)
    C("linalg", "matmul/complex64_adjoint_b", lambda a, b: (la.matmul(a, b, adjoint_b=True), la.matmul(a, b, transpose_b=True)), CXd(3, 4), CXd(2, 4))
    C("linalg", "matmul/complex128", lambda a, b: (la.matmul(a, b, adjoint_a=True), la.matmul(a, b, transpose_a=True)), CXd(4, 3, dt="complex128"), CXd(4, 2, dt="complex128"))
    C("linalg", "matmul/complex64_batched_adjoint", lambda a, b: (la.matmul(a, b, adjoint_a=True, adjoint_b=True), la.matmul(a, b, transpose_a=True, transpose_b=True)), CXd(2, 4, 3), CXd(2, 5, 4))
    C("linalg", "matmul/complex128_bcast", lambda a, b: la.matmul(a, b), CXd(2, 1, 3, 4, dt="complex128"), CXd(3, 4, 2, dt="complex128"))
    C("linalg", "matvec/complex64", lambda a, b: la.matvec(a, b, adjoint_a=True), CXd(3, 4), CXd(3))
    for red in ("reduce_sum", "reduce_mean", "reduce_prod"):
        for dt in ("complex64", "complex128"):
            C("math", "math.%s/%s" % (red, dt), (lambda f: lambda x: (f(x), f(x, axis=1), f(x, axis=[0, 2], keepdims=True)))(getattr(m, red)), CXd(3, 4, 5, dt=dt))
    for dt in ("complex64", "complex128"):
        C("math", "math.cumsum/%s" % dt, lambda x: (m.cumsum(x, axis=1), m.cumsum(x, exclusive=True, reverse=True)), CXd(3, 4, dt=dt))
        C("math", "math.cumprod/%s" % dt, lambda x: (m.cumprod(x, axis=1), m.cumprod(x, exclusive=True, reverse=True)), CXd(3, 4, dt=dt))
        C("math", "math.add_n/%s" % dt, lambda x, y, z: m.add_n([x, y, z]), CXd(3, 4, dt=dt), CXd(3, 4, dt=dt), CXd(3, 4, dt=dt))
        C("array", "einsum/complex/%s" % dt, lambda x, y: (tf.einsum("ij,jk->ik", x, y), tf.einsum("bij,bkj->bik", tf.stack([x, x]), tf.stack([tf.transpose(y), tf.transpose(y)])), tf.einsum("ij->", x)), CXd(3, 4, dt=dt), CXd(4, 2, dt=dt))
    C("signal", "beamform/complex64", lambda w, x: tf.reduce_sum(tf.math.conj(w)[:, :, None] * x, axis=1), CXd(2, 4), CXd(2, 4, 16))
    C("linalg", "matmul/f16", lambda a, b: la.matmul(a, b), F(3, 4, dt="float16"), F(4, 2, dt="float16"))
    C("linalg", "matmul/bf16", lambda a, b: tf.cast(la.matmul(tf.cast(a, tf.bfloat16), tf.cast(b, tf.bfloat16)), tf.float32), F(3, 4), F(4, 2))
    C("linalg", "matrix_rank", lambda x: la.matrix_rank(x), F(4, 4))
    C("linalg", "norm", lambda x: (la.norm(x), la.norm(x, ord=1, axis=[-2, -1]), la.norm(x, ord=np.inf, axis=[-2, -1]), la.norm(x, ord=2, axis=1), la.norm(x, ord="fro", axis=[0, 1])), F(3, 4))
    C("linalg", "norm/spectral", lambda x: la.norm(x, ord=2, axis=[-2, -1]), F(3, 4))
    C("linalg", "normalize", lambda x: la.normalize(x, axis=1), F(3, 4))
    C("linalg", "pinv", lambda x: la.pinv(x), F(4, 3))
    C("linalg", "qr", lambda x: tuple(tf.abs(t) for t in la.qr(x)), F(4, 3))
    C("linalg", "qr/full", lambda x: tuple(tf.abs(t) for t in la.qr(x, full_matrices=True)), F(4, 3))
    C("linalg", "set_diag", lambda x, d: la.set_diag(x, d), F(3, 3), F(3))
    C("linalg", "solve", lambda a, b: (la.solve(a, b), la.solve(a, b, adjoint=True)), A, F(3, 2))
    C("linalg", "sqrtm", lambda x: la.sqrtm(x), SPD)
    C("linalg", "svd", lambda x: la.svd(x, compute_uv=False), F(4, 3))
    C("linalg", "svd/uv", lambda x: tuple(tf.abs(t) for t in la.svd(x)), F(4, 3))
    C("linalg", "tensordot", lambda a, b: (la.tensordot(a, b, 1), la.tensordot(a, b, [[0], [1]])), F(3, 4), F(4, 3))
    C("linalg", "trace", lambda x: la.trace(x), F(2, 3, 3))
    C("linalg", "triangular_solve", lambda a, b: (la.triangular_solve(a, b), la.triangular_solve(a, b, lower=False, adjoint=True)), A, F(3, 2))
    C("linalg", "tridiagonal_solve", lambda d, b: la.tridiagonal_solve(d, b), F(3, 5, lo=1, hi=2) + np.array([[0], [3], [0]], "float32"), F(5, 2))
    C("linalg", "tridiagonal_matmul", lambda d, b: la.tridiagonal_matmul(d, b), F(3, 5), F(5, 2))
    C("linalg", "banded_triangular_solve", lambda d, b: la.banded_triangular_solve(d, b), F(2, 4, lo=1, hi=2), F(4, 2))
    # session 19 (c3): close variants of the ops above
    GEN = F(4, 4, lo=-2, hi=2)
    C("linalg", "eig/vectors", lambda x: (la.eig(x)[0], tf.abs(la.eig(x)[1])), SPD)
    C("linalg", "eig/general", lambda x: (la.eig(x)[0], tf.abs(la.eig(x)[1])), GEN)
    C("linalg", "eig/f64", lambda x: la.eigvals(x), GEN.astype("float64"))
    C("linalg", "eig/complex", lambda x: la.eigvals(x), CX(4, 4))
    C("linalg", "sqrtm/f64", lambda x: la.sqrtm(x), SPD.astype("float64"))
    C("linalg", "sqrtm/complex", lambda x: la.sqrtm(x), CX(3, 3) + 2 * np.eye(3, dtype="complex64"))
    C("linalg", "logm/complex128", lambda x: la.logm(x), (CX(3, 3) + 2 * np.eye(3, dtype="complex64")).astype("complex128"))
    TD = F(3, 5, lo=1, hi=2) + np.array([[0], [3], [0]], "float32")
    C("linalg", "tridiagonal_solve/no_pivot", lambda d, b: la.tridiagonal_solve(d, b, partial_pivoting=False), TD, F(5, 2))
    C("linalg", "tridiagonal_solve/perturb", lambda d, b: la.tridiagonal_solve(d, b, perturb_singular=True), TD, F(5, 2))
    C("linalg", "tridiagonal_solve/sequence", lambda d, b: la.tridiagonal_solve((d[0, :-1], d[1], d[2, 1:]), b, diagonals_format="sequence"), TD, F(5, 2))
    C("linalg", "tridiagonal_solve/matrix", lambda d, b: la.tridiagonal_solve(d, b, diagonals_format="matrix"), F(5, 5) + 3 * np.eye(5, dtype="float32"), F(5, 2))
    C("linalg", "tridiagonal_solve/f64_vector_rhs", lambda d, b: la.tridiagonal_solve(d, b), TD.astype("float64"), F(5, dt="float64"))
    C("linalg", "tridiagonal_matmul/sequence", lambda d, b: la.tridiagonal_matmul((d[0], d[1], d[2]), b, diagonals_format="sequence"), F(3, 5), F(5, 2))
    C("linalg", "tridiagonal_matmul/matrix", lambda d, b: la.tridiagonal_matmul(d, b, diagonals_format="matrix"), F(5, 5), F(5, 2))
    C("linalg", "banded_triangular_solve/upper_adjoint", lambda d, b: la.banded_triangular_solve(d, b, lower=False, adjoint=True), F(2, 4, lo=1, hi=2), F(4, 2))
    C("linalg", "banded_triangular_solve/f64", lambda d, b: la.banded_triangular_solve(d, b), F(3, 4, lo=1, hi=2, dt="float64"), F(4, 2, dt="float64"))
    C("linalg", "diag_ops", lambda x: (la.diag_part(x), la.diag(la.diag_part(x)), la.band_part(x, 0, 0)), F(3, 3))
    C("linalg", "matrix_diag_v3", lambda x: la.diag(x, k=(-1, 1), num_rows=4, num_cols=4, align="LEFT_RIGHT"), F(3, 4))
    C("linalg", "matrix_diag_part_v3", lambda x: la.diag_part(x, k=(-1, 1), padding_value=9.0), F(4, 5))
    C("linalg", "l2_normalize+matvec", lambda x, v: la.matvec(x, v, adjoint_a=True), F(3, 4), F(3))
    C("linalg", "matrix_exponential/f64", lambda x: la.expm(x), (A * 0.1).astype("float64"))
    C("linalg", "eigh/f64", lambda x: la.eigvalsh(x), SPD.astype("float64"))

    # -- nn
    x4 = F(2, 7, 6, 3)
    C("nn", "atrous_conv2d", lambda x, f: nn.atrous_conv2d(x, f, 2, "SAME"), x4, F(3, 3, 3, 4))
    C("nn", "avg_pool1d/2d/3d", lambda x, y, z: (nn.avg_pool1d(x, 2, 2, "SAME"), nn.avg_pool2d(y, 3, 2, "VALID"), nn.avg_pool3d(z, 2, 1, "SAME")), F(2, 7, 3), x4, F(1, 4, 4, 4, 2))
    C("nn", "max_pool1d/2d/3d", lambda x, y, z: (nn.max_pool1d(x, 2, 2, "SAME"), nn.max_pool2d(y, 3, 2, "VALID"), nn.max_pool3d(z, 2, 1, "SAME")), F(2, 7, 3), x4, F(1, 4, 4, 4, 2))
    C("nn", "max_pool_with_argmax", lambda x: nn.max_pool_with_argmax(x, 2, 2, "SAME"), x4)
    C("nn", "max_pool_with_argmax/batch", lambda x: nn.max_pool_with_argmax(x, 2, 2, "VALID", include_batch_in_index=True), x4)
    # -- gradients (session 20, e2): what tf.GradientTape emits for convolutions, pools and normalizations
    def grad(f, order=1):
        """d sum(f(xs) * w) / d xs (w fixed pseudo-random weights); order 2: the gradient of that sum again."""
        def g(*xs):
            with tf.GradientTape(persistent=True) as t2:
                for x in xs:
                    t2.watch(x)
                with tf.GradientTape() as t:
                    for x in xs:
                        t.watch(x)
                    y = f(*xs)
                    y = tf.reduce_sum(y * tf.cos(tf.reshape(tf.range(tf.size(y), dtype=y.dtype), tf.shape(y))))
                gs = t.gradient(y, list(xs))
                if order == 2:
                    s2 = tf.add_n([tf.reduce_sum(q * tf.sin(q)) for q in gs if q is not None])
            gs = t2.gradient(s2, list(xs)) if order == 2 else gs
            return tuple(q for q in gs if q is not None)  # (no gradient for some inputs: left out)
        return g
    C("nn", "grad/conv2d", grad(lambda x, f: nn.conv2d(x, f, 2, "SAME")), x4, F(3, 3, 3, 4))
    C("nn", "grad/conv2d/explicit", grad(lambda x, f: nn.conv2d(x, f, 1, [[0, 0], [1, 2], [0, 1], [0, 0]])), x4, F(2, 3, 3, 2))
    C("nn", "grad/conv2d/float64", grad(lambda x, f: nn.conv2d(x, f, 1, "VALID")), F(1, 5, 5, 2, dt="float64"), F(2, 2, 2, 3, dt="float64"))
    C("nn", "grad/conv3d", grad(lambda x, f: nn.conv3d(x, f, [1, 1, 2, 1, 1], "SAME")), F(1, 4, 5, 4, 2), F(2, 2, 2, 2, 3))
    C("nn", "grad/depthwise_conv2d", grad(lambda x, f: nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "SAME")), x4, F(3, 3, 3, 2))
    # session 23 (h7): TF1's fused LSTM / GRU block ops (contrib's LSTMBlockCell / LSTMBlockFusedCell /
    # GRUBlockCell; tf.raw_ops) and BlockLSTM's registered gradient (BlockLSTMGrad, for V2 too)
    RB = tf.raw_ops
    lstm_w = lambda I, U: (F(I + U, 4 * U), F(U), F(U), F(U), F(4 * U, lo=-0.5, hi=0.5))  # noqa: E731
    C("nn", "h7:raw.LSTMBlockCell/peephole", lambda x, cs, h, w, wci, wcf, wco, b: RB.LSTMBlockCell(
        x=x, cs_prev=cs, h_prev=h, w=w, wci=wci, wcf=wcf, wco=wco, b=b, cell_clip=0.5, use_peephole=True), F(2, 3), F(2, 4), F(2, 4), *lstm_w(3, 4))
    C("nn", "h7:raw.BlockLSTM", lambda x, cs, h, w, wci, wcf, wco, b: RB.BlockLSTM(
        seq_len_max=tf.constant(3, tf.int64), x=x, cs_prev=cs, h_prev=h, w=w, wci=wci, wcf=wcf, wco=wco, b=b, forget_bias=0.5),
      F(4, 2, 3), F(2, 4), F(2, 4), *lstm_w(3, 4))
    C("nn", "h7:raw.BlockLSTMV2/half", lambda x, cs, h, w, wci, wcf, wco, b: RB.BlockLSTMV2(
        seq_len_max=tf.constant(3, tf.int64), x=x, cs_prev=cs, h_prev=h, w=w, wci=wci, wcf=wcf, wco=wco, b=b, use_peephole=True),
      *[a.astype("float16") for a in (F(3, 2, 3), F(2, 4), F(2, 4)) + lstm_w(3, 4)])
    C("nn", "h7:raw.GRUBlockCell", lambda x, h, wru, wc, bru, bc: RB.GRUBlockCell(x=x, h_prev=h, w_ru=wru, w_c=wc, b_ru=bru, b_c=bc),
      F(3, 2), F(3, 5), F(7, 10), F(7, 5), F(10), F(5))
    C("nn", "h7:grad/raw.BlockLSTM", grad(lambda x, cs, h, w, wci, wcf, wco, b: RB.BlockLSTM(
        seq_len_max=tf.constant(3, tf.int64), x=x, cs_prev=cs, h_prev=h, w=w, wci=wci, wcf=wcf, wco=wco, b=b, use_peephole=True).h),
      F(4, 2, 3), F(2, 4), F(2, 4), *lstm_w(3, 4))
    C("nn", "grad/max_pool2d", grad(lambda x: nn.max_pool2d(x, 3, 2, "SAME")), x4)
    C("nn", "grad/max_pool2d/second_order", grad(lambda x: nn.max_pool2d(x, 2, 2, "VALID"), 2), x4)
    C("nn", "grad/avg_pool2d", grad(lambda x: nn.avg_pool2d(x, 3, 2, "SAME")), x4)
    C("nn", "grad/max_pool3d", grad(lambda x: nn.max_pool3d(x, 2, 1, "SAME")), F(1, 4, 4, 4, 2))
    C("nn", "grad/max_pool3d/second_order", grad(lambda x: nn.max_pool3d(x, 2, 2, "VALID"), 2), F(1, 4, 4, 4, 2))
    C("nn", "grad/avg_pool3d", grad(lambda x: nn.avg_pool3d(x, 2, 2, "VALID")), F(1, 4, 4, 4, 2))
    C("nn", "grad/max_pool_with_argmax", grad(lambda x: nn.max_pool_with_argmax(x, 2, 2, "SAME")[0]), x4)
    C("nn", "grad/fused_batch_norm/training", grad(lambda x, s, o: tf.compat.v1.nn.fused_batch_norm(x, s, o, epsilon=1e-3)[0]),
      x4, F(3, lo=0.5, hi=1.5), F(3))
    C("nn", "grad/fused_batch_norm/inference", grad(lambda x, s, o, mu, v: tf.compat.v1.nn.fused_batch_norm(
        x, s, o, mu, v, epsilon=1e-3, is_training=False)[0]), x4, F(3, lo=0.5, hi=1.5), F(3), F(3), F(3, lo=0.5, hi=1))
    C("nn", "grad/local_response_normalization", grad(lambda x: nn.local_response_normalization(x, 2, 1.0, 0.5, 0.75)), x4)
    C("nn", "grad/dilation2d", grad(lambda x, f: nn.dilation2d(x, f, [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1])), x4, F(2, 2, 3))
    C("nn", "grad/fractional_max_pool", grad(lambda x: nn.fractional_max_pool(x, [1.0, 1.5, 1.5, 1.0], seed=3)[0]), x4)
    C("nn", "grad/fractional_avg_pool", grad(lambda x: nn.fractional_avg_pool(x, [1.0, 1.5, 1.5, 1.0], seed=3)[0]), x4)
    C("nn", "batch_normalization", lambda x, mu, v: nn.batch_normalization(x, mu, v, 0.1, 1.2, 1e-3), x4, F(3), F(3, lo=0.5, hi=1))
    C("nn", "bias_add", lambda x, b: (nn.bias_add(x, b), nn.bias_add(tf.transpose(x, [0, 3, 1, 2]), b, data_format="NCHW")), x4, F(3))
    C("nn", "conv1d", lambda x, f: (nn.conv1d(x, f, 2, "SAME"), nn.conv1d(x, f, 1, "VALID", dilations=2)), F(2, 9, 3), F(3, 3, 4))
    C("nn", "conv2d", lambda x, f: (nn.conv2d(x, f, 2, "SAME"), nn.conv2d(x, f, 1, [[0, 0], [1, 2], [0, 1], [0, 0]], dilations=[1, 2])), x4, F(3, 3, 3, 4))
    C("nn", "conv2d/f64", lambda x, f: nn.conv2d(x, f, 1, "SAME"), x4.astype("float64"), F(3, 3, 3, 4, dt="float64"))
    C("nn", "conv2d/groups", lambda x, f: nn.conv2d(x, f, 1, "SAME"), F(1, 5, 5, 4), F(3, 3, 2, 4))
    C("nn", "conv3d", lambda x, f: nn.conv3d(x, f, [1, 1, 2, 1, 1], "SAME"), F(1, 4, 5, 5, 2), F(2, 2, 2, 2, 3))
    C("nn", "conv_transpose", lambda x, f: (nn.conv2d_transpose(x, f, [2, 14, 12, 2], 2, "SAME"), nn.conv1d_transpose(x[:, 0], f[0], [2, 13, 2], 2, "VALID")), x4, F(3, 3, 2, 3))
    C("nn", "conv3d_transpose", lambda x, f: nn.conv3d_transpose(x, f, [1, 8, 8, 8, 2], 2, "SAME"), F(1, 4, 4, 4, 3), F(2, 2, 2, 2, 3))
    C("nn", "convolution", lambda x, f: nn.convolution(x, f, padding="SAME", dilations=2), x4, F(2, 2, 3, 2))
    C("nn", "crelu_elu_selu_gelu_silu", lambda x: (nn.crelu(x), nn.elu(x), nn.selu(x), nn.gelu(x), nn.gelu(x, approximate=True), nn.silu(x), nn.swish(x), nn.relu6(x), nn.leaky_relu(x, 0.3), nn.softsign(x), nn.softplus(x)), F(3, 4, lo=-3, hi=3))
    C("nn", "ctc_greedy_decoder", lambda x, l: [tf.sparse.to_dense(d) for d in nn.ctc_greedy_decoder(x, l)[0]], F(6, 2, 4), np.array([6, 4], "int32"))
    C("nn", "ctc_beam_search_decoder", lambda x, l: [tf.sparse.to_dense(d) for d in nn.ctc_beam_search_decoder(x, l, beam_width=3, top_paths=2)[0]], F(6, 2, 4), np.array([6, 4], "int32"))
    C("nn", "ctc_loss", lambda lab, x, ll, xl: nn.ctc_loss(lab, x, ll, xl, logits_time_major=False, blank_index=0), np.array([[1, 2, 0], [3, 3, 1]], "int32"), F(2, 8, 5), np.array([2, 3], "int32"), np.array([8, 7], "int32"))
    C("nn", "ctc_loss/sparse", lambda x: nn.ctc_loss(tf.sparse.from_dense(tf.constant([[1, 2], [3, 1]])), x, None, [8, 8], blank_index=-1), F(8, 2, 5))
    C("nn", "depth_to_space", lambda x: (nn.depth_to_space(x, 2), nn.space_to_depth(nn.depth_to_space(x, 2), 2)), F(1, 3, 4, 8))
    C("nn", "depthwise_conv2d", lambda x, f: (nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME"), nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "VALID")), x4, F(3, 3, 3, 2))
    C("nn", "depthwise_conv2d/dilated", lambda x, f: nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME", dilations=[2, 2]), x4, F(3, 3, 3, 1))
    C("nn", "embedding_lookup", lambda p, i: nn.embedding_lookup(p, i), F(6, 3), I(2, 4, lo=0, hi=6))
    C("nn", "embedding_lookup_sparse", lambda p, i: nn.embedding_lookup_sparse(p, tf.sparse.from_dense(i), None, combiner="mean"), F(6, 3), I(3, 4, lo=1, hi=6))
    C("nn", "safe_embedding_lookup_sparse", lambda p, i: nn.safe_embedding_lookup_sparse(p, tf.sparse.from_dense(i), combiner="sqrtn"), F(6, 3), I(3, 4, lo=0, hi=6))
    C("nn", "isotonic_regression", lambda x: nn.isotonic_regression(x)[0], F(3, 6))
    C("nn", "isotonic_regression/decreasing_axis0", lambda x: nn.isotonic_regression(x, decreasing=False, axis=0), F(5, 3, dt="float64"))
    C("nn", "isotonic_regression/int", lambda x: nn.isotonic_regression(x), I(2, 7))
    C("nn", "l2_loss_lrn", lambda x: (nn.l2_loss(x), nn.local_response_normalization(x, 2, 1.0, 0.5, 0.75)), x4)
    C("nn", "log_poisson_loss", lambda t, x: nn.log_poisson_loss(t, x, compute_full_loss=True), F(5, lo=0, hi=3), F(5))
    C("nn", "moments", lambda x: (nn.moments(x, [0, 1, 2]), nn.moments(x, [1], keepdims=True)), x4)
    C("nn", "weighted_moments", lambda x, w: nn.weighted_moments(x, [0], w), F(5, 3), F(5, 1, lo=0, hi=1))
    C("nn", "normalize_moments", lambda x: nn.normalize_moments(*nn.sufficient_statistics(x, [0])[:3], None), F(5, 3))
    C("nn", "pool", lambda x: (nn.pool(x, [2, 2], "AVG", padding="VALID", dilations=[2, 2]), nn.pool(x, [2, 2], "MAX", padding="VALID", strides=[2, 1])), x4)
    C("nn", "relu_family/int", lambda x: (nn.relu(x), nn.relu6(x)), I(6, lo=-8, hi=9))
    C("nn", "separable_conv2d", lambda x, d, p: nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME"), x4, F(3, 3, 3, 2), F(1, 1, 6, 4))
    C("nn", "sigmoid_ce", lambda l, x: (nn.sigmoid_cross_entropy_with_logits(l, x), nn.weighted_cross_entropy_with_logits(l, x, 2.0)), F(3, 4, lo=0, hi=1), F(3, 4, lo=-3, hi=3))
    C("nn", "softmax_ce", lambda l, x: nn.softmax_cross_entropy_with_logits(tf.nn.softmax(l), x), F(3, 4), F(3, 4))
    C("nn", "sparse_softmax_ce", lambda l, x: nn.sparse_softmax_cross_entropy_with_logits(l, x), I(3, lo=0, hi=4), F(3, 4))
    C("nn", "space_to_batch", lambda x: nn.space_to_batch(x, [2, 2], [[1, 0], [0, 0]]), F(1, 5, 4, 2))
    C("nn", "with_space_to_batch", lambda x, f: nn.with_space_to_batch(x, [2, 2], "SAME", lambda i, nd, p: nn.conv2d(i, f, 1, p), filter_shape=[2, 2]), x4, F(2, 2, 3, 1))
    C("nn", "stateless_dropout", lambda x: nn.experimental.stateless_dropout(x, 0.4, [1, 2]), F(4, 5))
    C("nn", "fractional_max_pool", lambda x: nn.fractional_max_pool(x, [1, 1.5, 1.5, 1], seed=3)[0], x4)
    C("nn", "fractional_avg_pool", lambda x: nn.fractional_avg_pool(x, [1, 1.5, 1.5, 1], pseudo_random=True, seed=3)[0], x4)
    C("nn", "fractional_max_pool/overlapping", lambda x: nn.fractional_max_pool(x, [1, 1.44, 1.73, 1], pseudo_random=True, overlapping=True, seed=5), x4)
    C("nn", "fractional_avg_pool/overlapping", lambda x: nn.fractional_avg_pool(x, [1, 1.3, 2.0, 1], overlapping=True, seed=9), x4)
    C("nn", "compute_average_loss", lambda x: nn.compute_average_loss(x, global_batch_size=8), F(4))
    C("nn", "in_top_k", lambda p, t: nn.in_top_k(t, p, 2), F(4, 5), I(4, lo=0, hi=5))
    C("nn", "softmax/f16", lambda x: nn.softmax(x), F(3, 4, dt="float16"))
    C("nn", "log_softmax/f64", lambda x: nn.log_softmax(x, axis=0), F(3, 4, dt="float64"))
    C("nn", "zero_fraction_sparse?", lambda x: nn.zero_fraction(nn.relu(x)), F(10))
    C("nn", "nce_like_sampled?", lambda x: nn.compute_accidental_hits(tf.constant([[1], [2]], tf.int64), tf.constant([1, 3, 2], tf.int64), 1)[0] + tf.cast(tf.reduce_sum(x), tf.int32), F(2))
    C("nn", "lrn/defaults", lambda x: nn.lrn(x), x4)
    C("nn", "avg_pool/nchw?", lambda x: nn.avg_pool(x, 2, 2, "VALID", data_format="NHWC"), x4)
    C("nn", "max_pool/int?", lambda x: tf.cast(nn.max_pool2d(tf.cast(x, tf.float32), 2, 2, "SAME"), tf.int32), I(1, 4, 4, 1))
    C("nn", "conv2d/bf16?", lambda x, f: tf.cast(nn.conv2d(tf.cast(x, tf.bfloat16), tf.cast(f, tf.bfloat16), 1, "SAME"), tf.float32), x4, F(3, 3, 3, 4))

    # -- sparse
    dense = (I(4, 5, lo=0, hi=3) * (I(4, 5, lo=0, hi=2))).astype("float32")
    fd = tf.sparse.from_dense
    C("sparse", "from_dense+to_dense", lambda x: tf.sparse.to_dense(tf.sparse.reorder(fd(x))), dense)
    C("sparse", "add", lambda x, y: tf.sparse.to_dense(tf.sparse.add(fd(x), fd(y))), dense, dense.T.copy()[:4, :4].repeat(2, 1)[:, :5].copy())
    C("sparse", "add_dense", lambda x, y: tf.sparse.add(fd(x), y), dense, F(4, 5))
    C("sparse", "concat", lambda x, y: tf.sparse.to_dense(tf.sparse.concat(1, [fd(x), fd(y)])), dense, dense)
    C("sparse", "expand_dims_reshape", lambda x: (tf.sparse.to_dense(tf.sparse.expand_dims(fd(x), 1)), tf.sparse.to_dense(tf.sparse.reshape(fd(x), [10, 2]))), dense)
    C("sparse", "eye", lambda n: tf.sparse.to_dense(tf.sparse.eye(n, 4)), np.int32(3))
    C("sparse", "fill_empty_rows", lambda x: tf.sparse.to_dense(tf.sparse.fill_empty_rows(fd(x), -1.0)[0]), dense)
    C("sparse", "maximum_minimum", lambda x, y: (tf.sparse.to_dense(tf.sparse.maximum(fd(x), fd(y))), tf.sparse.to_dense(tf.sparse.minimum(fd(x), fd(y)))), dense, dense[::-1].copy())
    C("sparse", "reduce_max_sum", lambda x: (tf.sparse.reduce_max(fd(x), 1), tf.sparse.reduce_sum(fd(x), 0), tf.sparse.to_dense(tf.sparse.reduce_sum(fd(x), 1, keepdims=True, output_is_sparse=True))), dense)
    C("sparse", "retain", lambda x: tf.sparse.to_dense(tf.sparse.retain(fd(x), tf.sparse.from_dense(x).values > 1)), dense)
    C("sparse", "segment_ops", lambda x: (tf.sparse.segment_sum(x, [0, 2, 3], [0, 0, 1]), tf.sparse.segment_mean(x, [0, 2, 3], [0, 0, 1]), tf.sparse.segment_sqrt_n(x, [0, 2, 3], [0, 1, 1])), F(4, 3))
    C("sparse", "segment_ops/num_segments", lambda x: tf.sparse.segment_sum(x, [0, 2, 3], [0, 0, 2], num_segments=4), F(4, 3))
    C("sparse", "slice", lambda x: tf.sparse.to_dense(tf.sparse.slice(fd(x), [1, 1], [2, 3])), dense)
    C("sparse", "softmax", lambda x: tf.sparse.to_dense(tf.sparse.softmax(fd(x))), dense)
    C("sparse", "sparse_dense_matmul", lambda x, y: (tf.sparse.sparse_dense_matmul(fd(x), y), tf.sparse.sparse_dense_matmul(fd(x), y[:4, :], adjoint_a=True)), dense, F(5, 3))
    C("sparse", "split", lambda x: [tf.sparse.to_dense(s) for s in tf.sparse.split(fd(x), 2, axis=0)], dense)
    C("sparse", "to_indicator", lambda x: tf.sparse.to_indicator(fd(x), 6), I(3, 4, lo=0, hi=6, dt="int64"))
    C("sparse", "transpose", lambda x: tf.sparse.to_dense(tf.sparse.transpose(fd(x))), dense)
    C("sparse", "bincount", lambda x: tf.sparse.to_dense(tf.sparse.bincount(fd(x), minlength=5, axis=-1)), I(3, 4, lo=0, hi=5))
    C("sparse", "bincount_dense_binary", lambda x: tf.sparse.to_dense(tf.sparse.bincount(x, binary_output=True, axis=-1)), I(3, 4, lo=0, hi=5))
    C("sparse", "bincount_weights", lambda x, w: tf.sparse.to_dense(tf.sparse.bincount(fd(x), weights=fd(w), maxlength=4, axis=-1)), I(3, 4, lo=1, hi=6), F(3, 4, lo=1, hi=2))
    C("sparse", "concat_dim0_3d", lambda x, y: tf.sparse.to_dense(tf.sparse.concat(0, [fd(x), fd(y)])), I(2, 2, 3, lo=0, hi=2).astype("float32"), I(1, 2, 3, lo=0, hi=3).astype("float32"))
    C("sparse", "split_axis1", lambda x: [tf.sparse.to_dense(s) for s in tf.sparse.split(fd(x), 3, axis=1)], dense)
    C("sparse", "slice_int64", lambda x: tf.sparse.to_dense(tf.sparse.slice(fd(x), [0, 2], [5, 9])), I(4, 5, lo=0, hi=3, dt="int64"))
    C("sparse", "softmax_3d_f64", lambda x: tf.sparse.to_dense(tf.sparse.softmax(fd(x))), F(2, 3, 4, dt="float64") * I(2, 3, 4, lo=0, hi=2).astype("float64"))
    C("sparse", "reduce_max_sparse", lambda x: tf.sparse.to_dense(tf.sparse.reduce_max(fd(x), 0, keepdims=True, output_is_sparse=True)), dense)
    C("sparse", "mask_indexed_slices", lambda x: tf.math.unsorted_segment_sum(x, [0, 1, 0], 2), F(3, 2))
    C("sparse", "cross", lambda a, b: tf.sparse.to_dense(tf.sparse.cross([fd(a), fd(b)]), default_value=""), S("a", "b", "").reshape(1, 3), S("x", "", "y").reshape(1, 3))
    C("sparse", "cross_hashed", lambda a, b: tf.sparse.to_dense(tf.sparse.cross_hashed([fd(a), fd(b)], 100)), S("a", "b", "").reshape(1, 3), S("x", "", "y").reshape(1, 3))
    C("sparse", "sparse_dense_cwise", lambda x, y: (tf.sparse.to_dense(fd(x) * y), tf.sparse.to_dense(fd(x) / (y + 2))), dense, F(5, lo=1, hi=2))
    C("sparse", "sparse_tensor_dense_add_int", lambda x, y: tf.sparse.add(fd(x), y), I(3, 3, lo=0, hi=2), I(3, 3))

    # -- ragged
    vals, lens = F(10), np.array([3, 0, 4, 3], "int64")
    R = tf.RaggedTensor.from_row_lengths
    C("ragged", "from_row_lengths.to_tensor", lambda v, l: R(v, l).to_tensor(), vals, lens)
    C("ragged", "row_splits/row_lengths", lambda v, l: (R(v, l).row_splits, R(v, l).value_rowids(), R(v, l).nrows()), vals, lens)
    C("ragged", "reduce_sum_mean", lambda v, l: (tf.reduce_sum(R(v, l), axis=1), tf.reduce_mean(R(v, l), axis=1), tf.reduce_max(R(v, l), axis=1)), vals, lens)
    C("ragged", "boolean_mask", lambda x, mk: tf.ragged.boolean_mask(x, mk).to_tensor(), F(3, 4), B(3, 4))
    C("ragged", "range", lambda s, l: tf.ragged.range(s, l).to_tensor(), np.array([0, 2, 5], "int32"), np.array([3, 2, 9], "int32"))
    C("ragged", "stack_concat", lambda v, l: (tf.concat([R(v, l), R(v, l)], axis=1).to_tensor(), tf.stack([R(v, l), R(v, l)], axis=0).flat_values), vals, lens)
    C("ragged", "cross", lambda a, b: tf.ragged.cross([tf.RaggedTensor.from_tensor(a), tf.RaggedTensor.from_tensor(b)]).to_tensor(), S("a", "b").reshape(1, 2), S("x", "y", "z").reshape(1, 3))
    C("ragged", "segment_ids_to_row_splits", lambda s: tf.ragged.segment_ids_to_row_splits(s), np.array([0, 0, 1, 3, 3], "int64"))
    C("ragged", "map_flat_values", lambda v, l: tf.ragged.map_flat_values(tf.square, R(v, l)).to_tensor(), vals, lens)
    C("ragged", "gather", lambda v, l, i: tf.gather(R(v, l), i).to_tensor(), vals, lens, np.array([2, 0, 2], "int32"))
    C("ragged", "from_tensor_padding", lambda x: tf.RaggedTensor.from_tensor(x, padding=0).row_lengths(), I(3, 5, lo=0, hi=3))
    C("ragged", "to_sparse", lambda v, l: tf.sparse.to_dense(R(v, l).to_sparse()), vals, lens)
    C("ragged", "from_value_rowids", lambda v: tf.RaggedTensor.from_value_rowids(v, [0, 0, 1, 3, 3, 3, 3, 4, 4, 4], nrows=6).to_tensor(), vals)
    C("ragged", "bounding_shape", lambda v, l: R(v, l).bounding_shape(), vals, lens)
    C("ragged", "argsort_in_rows?", lambda v, l: tf.map_fn(lambda r: tf.reduce_sum(r), R(v, l), fn_output_signature=tf.float32), vals, lens)
    # session 19 (c2): the rest of tf.sparse / tf.ragged and their variants
    C("ragged", "map_fn_sort_ragged_out", lambda v, l: tf.map_fn(lambda r: tf.sort(r), R(v, l), fn_output_signature=tf.RaggedTensorSpec([None], tf.float32)).to_tensor(), vals, lens)
    C("ragged", "map_fn_rank2_in", lambda v, l: tf.map_fn(lambda r: tf.reduce_sum(r.flat_values), tf.RaggedTensor.from_uniform_row_length(R(v, l), 2), fn_output_signature=tf.float32), vals, np.array([1, 3, 0, 4, 2, 0], "int64"))
    C("ragged", "cross_hashed", lambda a, b: tf.ragged.cross_hashed([tf.RaggedTensor.from_tensor(a), b], num_buckets=17).to_tensor(), S("a", "b", "c", "d").reshape(2, 2), np.array([[3], [4]], "int64"))
    C("ragged", "cross_mixed", lambda v, l, d: tf.ragged.cross([R(v, l), d]).to_tensor(default_value=""), S("a", "b", "c", "d", "e"), np.array([2, 0, 3], "int64"), S("x", "y", "z").reshape(3, 1))
    C("ragged", "bincount_ragged", lambda v, l: tf.sparse.to_dense(tf.sparse.bincount(R(v, l), minlength=4, axis=-1)), np.array([1, 3, 3, 0, 2], "int64"), np.array([2, 0, 3], "int64"))

    # -- random (stateless)
    r = tf.random
    C("random", "stateless_uniform", lambda s: (r.stateless_uniform([3, 4], s), r.stateless_uniform([5], s, minval=2, maxval=9, dtype=tf.int32), r.stateless_uniform([3], s, dtype=tf.float64), r.stateless_uniform([4], s, minval=None, maxval=None, dtype=tf.int64)), np.array([1, 2], "int32"))
    C("random", "stateless_uniform/alg", lambda s: (r.stateless_uniform([3, 4], s, alg="philox"), r.stateless_uniform([3, 4], s, alg="threefry")), np.array([1, 2], "int64"))
    C("random", "stateless_normal", lambda s: (r.stateless_normal([3, 4], s), r.stateless_normal([2], s, mean=1.0, stddev=3.0, dtype=tf.float64)), np.array([7, 9], "int32"))
    C("random", "stateless_truncated_normal", lambda s: r.stateless_truncated_normal([3, 4], s), np.array([7, 9], "int32"))
    C("random", "stateless_categorical", lambda s, l: r.stateless_categorical(l, 6, s), np.array([7, 9], "int32"), F(2, 4))
    C("random", "stateless_binomial", lambda s: r.stateless_binomial([6], s, counts=10.0, probs=0.3), np.array([7, 9], "int32"))
    C("random", "stateless_gamma", lambda s: r.stateless_gamma([4, 2], s, alpha=[0.5, 2.0]), np.array([7, 9], "int32"))
    C("random", "stateless_poisson", lambda s: r.stateless_poisson([4, 2], s, lam=[0.5, 20.0]), np.array([7, 9], "int32"))
    C("random", "stateless_parameterized_truncated_normal", lambda s: r.stateless_parameterized_truncated_normal([4], s, 0.0, 1.0, -0.5, 1.5), np.array([7, 9], "int32"))
    C("random", "stateless_parameterized_truncated_normal/bcast", lambda s, m, lo: r.stateless_parameterized_truncated_normal([5, 3], s, m, tf.constant(0.5, tf.float64), lo, tf.constant(float("inf"), tf.float64)), np.array([3, 4], "int64"), np.array([0.0, 1.0, 2.0]), np.array([-1.0, 2.5, 1.0]))
    C("random", "raw.ParameterizedTruncatedNormal", lambda m: tf.raw_ops.ParameterizedTruncatedNormal(shape=[3, 4], means=m, stdevs=[1.0, 0.5, 2.0], minvals=-1.0, maxvals=[1.0, 3.0, float("inf")], seed=5, seed2=6), np.array([0.0, 1.0, -0.5], "float32"))
    C("random", "stateless_shuffle", lambda s, x: r.experimental.stateless_shuffle(x, s), np.array([7, 9], "int32"), I(8))
    C("random", "index_shuffle", lambda i: r.experimental.index_shuffle(i, tf.constant([1, 2], tf.int64), 9), np.array([0, 1, 5], "int64"))
    C("random", "stateless_fold_in_split", lambda s: (r.experimental.stateless_fold_in(s, 3), r.experimental.stateless_split(s, 3)), np.array([7, 9], "int64"))
    C("random", "stateless_random_crop?", lambda s, x: img.stateless_random_crop(x, [2, 2], s), np.array([7, 9], "int32"), F(4, 5))
    C("random", "stateless_uniform/f16_bf16", lambda s: (r.stateless_uniform([3], s, dtype=tf.float16), tf.cast(r.stateless_uniform([3], s, dtype=tf.bfloat16), tf.float32)), np.array([1, 2], "int32"))
    C("random", "stateless_uniform/uint", lambda s: r.stateless_uniform([4], s, minval=None, maxval=None, dtype=tf.uint32), np.array([1, 2], "int32"))
    tc = np.array([[1, 5], [3, 3], [0, 9]], "int64")
    C("random", "uniform_candidate_sampler", lambda t: tuple(r.uniform_candidate_sampler(t, 2, 6, True, 10, seed=3)), tc)
    C("random", "log_uniform_candidate_sampler", lambda t: tuple(r.log_uniform_candidate_sampler(t, 2, 6, False, 10, seed=3)), tc)
    C("random", "learned_unigram_candidate_sampler", lambda t: tuple(r.learned_unigram_candidate_sampler(t, 2, 4, True, 10, seed=3)), tc)
    C("random", "all_candidate_sampler", lambda t: tuple(r.all_candidate_sampler(t, 2, 10, True, seed=3)), tc)
    C("random", "stateless_binomial/f64_int64", lambda s, c: r.stateless_binomial([3, 2], s, counts=c, probs=tf.constant([0.2, 0.9], tf.float64), output_dtype=tf.int64), np.array([3, 4], "int64"), np.array([30.0, 5.0]))
    C("random", "index_shuffle/uint32", lambda i: r.experimental.index_shuffle(i, tf.constant([4, 5], tf.uint32), tf.constant(1000, tf.uint32)), np.array([0, 7, 999], "uint32"))
    C("random", "Generator.from_seed?", lambda s: tf.random.Generator.from_seed(3).uniform([2]) * tf.cast(tf.reduce_sum(s), tf.float32), np.array([1, 2], "int32"))

    # -- control / misc common in tf.function bodies
    C("misc", "while_loop", lambda x: tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * 1.1), [0, x])[1], F(3))
    C("misc", "cond", lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2, lambda: -x), F(3))
    C("misc", "map_fn", lambda x: tf.map_fn(lambda r: tf.reduce_sum(r) * r, x), F(3, 4))
    C("misc", "vectorized_map", lambda x: tf.vectorized_map(lambda r: tf.tensordot(r, r, 1), x), F(3, 4))
    C("misc", "scan_foldl", lambda x: (tf.scan(lambda a, b: a + b, x), tf.foldl(lambda a, b: a * b, x), tf.foldr(lambda a, b: a - b, x)), F(5))
    C("misc", "TensorArray", lambda x: tf.TensorArray(tf.float32, size=3).unstack(x).stack() * 2, F(3, 2))
    C("misc", "switch_case", lambda i, x: tf.switch_case(i, [lambda: x, lambda: x * 2, lambda: -x]), np.int32(1), F(3))
    C("misc", "py_loop_autograph", lambda n: tf.reduce_sum(tf.range(n) ** 2), np.int32(5))
    C("misc", "string_lookup_table", lambda s: tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a", "b"], [1, 2]), -1).lookup(s), S("a", "c", "b"))
    C("misc", "static_vocab_table", lambda s: tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([0, 1], tf.int64)), 3).lookup(s), S("a", "c", "b"))
    # -- mutable containers (session 20, e5)
    C("misc", "mutable_hash_table", lambda k, v: (lambda t: (t.insert(k, v), t.remove(k[:1]), t.lookup(k), t.size())[2:])(
        tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, -1.0)), np.array([3, 1, 4, 1], np.int64), F(4))
    C("misc", "mutable_hash_table/of_tensors", lambda k, v: (lambda t: (t.insert(k, v), t.lookup(k + 1))[1])(
        tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, [0.0, -1.0])), np.array([3, 1, 4], np.int64), F(3, 2))
    C("misc", "dense_hash_table", lambda k, v: (lambda t: (t.insert(k, v), t.remove(k[:1]), t.lookup(k), t.size())[2:])(
        tf.lookup.experimental.DenseHashTable(tf.int64, tf.float32, -1.0, empty_key=-1, deleted_key=-2, initial_num_buckets=4)),
      np.array([3, 1, 4, 5, 9], np.int64), F(5))
    C("misc", "tensor_map_raw", lambda k, v: (lambda m: (tf.raw_ops.TensorMapLookup(input_handle=m, key=k[1], value_dtype=tf.float32),
        tf.raw_ops.TensorMapSize(input_handle=m), tf.raw_ops.TensorMapHasKey(input_handle=m, key=k[0] + 100)))(
        tf.raw_ops.TensorMapInsert(input_handle=tf.raw_ops.TensorMapInsert(input_handle=tf.raw_ops.EmptyTensorMap(), key=k[0], value=v),
                                   key=k[1], value=v * 2)), I(2, lo=0, hi=3), F(3))
    C("misc", "optional_value", lambda x: (lambda o: (o.has_value(), o.get_value()))(tf.experimental.Optional.from_value(x)), F(3))
    C("misc", "stack_raw", lambda x: (lambda h: (tf.raw_ops.StackPushV2(handle=h, elem=x), tf.raw_ops.StackPushV2(handle=h, elem=x * 2),
        tf.raw_ops.StackPopV2(handle=h, elem_type=tf.float32))[2])(tf.raw_ops.StackV2(max_size=-1, elem_type=tf.float32)), F(3))
    C("misc", "print_assert", lambda x: (tf.print(x), x * 2)[1], F(3))
    C("misc", "tensor_list_ops", lambda x: tf.raw_ops.TensorListStack(input_handle=tf.raw_ops.TensorListFromTensor(tensor=x, element_shape=tf.constant([2])), element_shape=[2], element_dtype=tf.float32), F(3, 2))
    C("misc", "numpy_style", lambda x: (tf.experimental.numpy.diff(x), tf.experimental.numpy.cbrt(x), tf.experimental.numpy.log2(tf.abs(x) + 1), tf.experimental.numpy.hypot(x, x)), F(6))

    # -- tf.audio and the speech ops (session 19, c1): WAV bytes in, as a keyword-spotting export
    t = np.arange(16000)
    mono = (np.sin(t * 0.05) * 0.4 + np.sin(t * 0.31) * 0.2).astype("float32")[:, None]
    wav1 = tf.audio.encode_wav(mono, 16000).numpy()
    wav2 = tf.audio.encode_wav(F(3000, 2) * 0.9, 8000).numpy()
    au = tf.audio
    C("audio", "decode_wav", lambda s: au.decode_wav(s), np.array(wav1, dtype="S"))
    C("audio", "decode_wav/stereo_to_mono_padded", lambda s: au.decode_wav(s, desired_channels=1, desired_samples=4000), np.array(wav2, dtype="S"))
    C("audio", "decode_wav/mono_to_3ch_cut", lambda s: au.decode_wav(s, desired_channels=3, desired_samples=100), np.array(wav1, dtype="S"))
    C("audio", "encode_wav", lambda x, r: au.encode_wav(x, r), F(50, 2) * 1.2, np.int32(22050))
    C("audio", "spectrogram_mfcc/speech_commands", lambda s: (lambda w: (lambda sp: (sp, tf.raw_ops.Mfcc(spectrogram=sp, sample_rate=w.sample_rate, dct_coefficient_count=40)))(
        tf.raw_ops.AudioSpectrogram(input=w.audio, window_size=480, stride=160, magnitude_squared=True)))(au.decode_wav(s, 1, 16000)), np.array(wav1, dtype="S"))
    C("audio", "spectrogram/magnitude", lambda x: tf.raw_ops.AudioSpectrogram(input=x, window_size=256, stride=128), F(2000, 2))
    C("audio", "mfcc/attrs", lambda x: tf.raw_ops.Mfcc(spectrogram=tf.raw_ops.AudioSpectrogram(input=x, window_size=400, stride=200, magnitude_squared=True),
        sample_rate=16000, upper_frequency_limit=7600.0, lower_frequency_limit=60.0, filterbank_channel_count=64, dct_coefficient_count=20), F(4000, 1))

    # -- tf.io parsing and codecs (session 19, c1)
    import gzip
    import zlib

    def feat(**kw):
        f = tf.train.Feature
        if "i" in kw:
            return f(int64_list=tf.train.Int64List(value=kw["i"]))
        if "f" in kw:
            return f(float_list=tf.train.FloatList(value=kw["f"]))
        return f(bytes_list=tf.train.BytesList(value=kw["b"]))

    def seqex(ctx, fl):
        se = tf.train.SequenceExample()
        for k, v in ctx.items():
            se.context.feature[k].CopyFrom(v)
        for k, steps in fl.items():
            for st in steps:
                se.feature_lists.feature_list[k].feature.add().CopyFrom(st)
        return se.SerializeToString()

    ex = tf.train.Example(features=tf.train.Features(feature={"a": feat(i=[1, 2, 3]), "b": feat(f=[0.5]), "s": feat(b=[b"x", b"y"])})).SerializeToString()
    se1 = seqex({"len": feat(i=[3]), "tag": feat(b=[b"t"])}, {"tok": [feat(i=[1]), feat(i=[5]), feat(i=[7])], "emb": [feat(f=[0.1, 0.2]), feat(f=[0.3, 0.4])],
                                                               "w": [feat(b=[b"a", b"b"]), feat(b=[b"c"])]})
    se2 = seqex({"len": feat(i=[1])}, {"tok": [feat(i=[2])], "emb": [feat(f=[1.0, 2.0])], "w": []})
    io = tf.io
    ctx_f = {"len": io.FixedLenFeature([], tf.int64), "tag": io.FixedLenFeature([], tf.string, default_value="none")}
    seq_f = {"tok": io.FixedLenSequenceFeature([], tf.int64), "emb": io.FixedLenSequenceFeature([2], tf.float32),
             "w": io.RaggedFeature(tf.string)}
    C("io", "decode_compressed/zlib", lambda s: io.decode_compressed(s, "ZLIB"), np.array([zlib.compress(b"hello " * 50), zlib.compress(b"")], dtype="S"))
    C("io", "decode_compressed/gzip", lambda s: io.decode_compressed(s, "GZIP"), np.array([gzip.compress(b"abc" * 9, mtime=0)], dtype="S"))
    C("io", "serialize_parse_tensor", lambda x: io.parse_tensor(io.serialize_tensor(x), tf.float32), F(3, 4))
    C("io", "serialize_tensor/int64", lambda x: io.serialize_tensor(x), I(2, 3, dt="int64"))
    C("io", "serialize_tensor/string", lambda x: io.serialize_tensor(x), S("a", "", "xyz"))
    C("io", "parse_tensor/const", lambda s: io.parse_tensor(s, tf.int32), np.array(tf.io.serialize_tensor(tf.constant([[1, 2], [3, -1]])).numpy(), dtype="S"))  # no trailing NUL: |S drops it
    C("io", "parse_single_example", lambda s: (lambda d: (d["a"], d["b"], d["s"].indices, d["s"].values))(
        io.parse_single_example(s, {"a": io.FixedLenFeature([3], tf.int64), "b": io.FixedLenFeature([1], tf.float32), "s": io.VarLenFeature(tf.string)})),
        np.array(ex, dtype="S"))
    C("io", "parse_sequence_example", lambda s: (lambda c, f, n: (c["len"], c["tag"], f["tok"], f["emb"], f["w"].flat_values, f["w"].row_splits, f["w"].values.row_splits, n["tok"], n["emb"]))(
        *io.parse_sequence_example(s, ctx_f, seq_f)), np.array([se1, se2], dtype="S"))
    C("io", "parse_single_sequence_example", lambda s: (lambda c, f: (c["len"], c["tag"], f["tok"], f["emb"], f["w"].values))(
        *io.parse_single_sequence_example(s, {"len": ctx_f["len"], "tag": ctx_f["tag"]}, seq_f)), np.array(se1, dtype="S"))
    C("io", "parse_sequence_example/sparse", lambda s: (lambda c, f, n: (c["tag"].indices, c["tag"].values, f["tok"].indices, f["tok"].values, f["tok"].dense_shape))(
        *io.parse_sequence_example(s, {"tag": io.VarLenFeature(tf.string)}, {"tok": io.VarLenFeature(tf.int64)})), np.array([se1, se2], dtype="S"))
    C("io", "decode_json_example", lambda s: io.decode_json_example(s), np.array([b'{"features": {"feature": {"a": {"int64List": {"value": ["1", "2"]}}}}}'], dtype="S"))

    # -- gradients in a traced function (session 20, e1): tf.GradientTape as a train step holds them
    def grad_of(f):
        def g(*xs):
            with tf.GradientTape() as tape:
                for x in xs:
                    tape.watch(x)
                y = tf.reduce_sum(tf.square(f(*xs)))
            return tape.gradient(y, list(xs))
        return g

    for nm, f, lo, hi in (("relu", nn.relu, -1, 1), ("relu6", nn.relu6, -2, 8), ("elu", nn.elu, -2, 2), ("selu", nn.selu, -2, 2),
                          ("leaky_relu", lambda v: nn.leaky_relu(v, 0.3), -1, 1), ("sigmoid", m.sigmoid, -3, 3),
                          ("tanh", m.tanh, -2, 2), ("softplus", m.softplus, -3, 3), ("softsign", nn.softsign, -3, 3),
                          ("sqrt", m.sqrt, 0.1, 4), ("rsqrt", m.rsqrt, 0.1, 4), ("reciprocal", m.reciprocal, 0.5, 4)):
        C("grad", "grad/%s" % nm, grad_of(f), F(4, 5, lo=lo, hi=hi))
    C("grad", "grad/bias_add", grad_of(lambda x, b: nn.bias_add(x, b)), F(3, 4, 5), F(5))
    C("grad", "grad/strided_slice", grad_of(lambda x: x[1:3, ::2]), F(4, 6))
    C("grad", "grad/mirror_pad", grad_of(lambda x: tf.pad(x, [[1, 2], [2, 1]], mode="REFLECT")), F(4, 5))
    C("grad", "grad/mirror_pad/symmetric", grad_of(lambda x: tf.pad(x, [[1, 1], [0, 3]], mode="SYMMETRIC")), F(4, 5))
    C("grad", "grad/concat", grad_of(lambda x, y: tf.concat([x, y * 2.0], 1)), F(3, 2), F(3, 4))
    for red in ("sum", "mean", "sqrt_n"):
        C("grad", "grad/sparse_segment_%s" % red,
          grad_of(lambda x, f=getattr(tf.sparse, "segment_%s" % red): f(x, tf.constant([0, 2, 2, 1]), tf.constant([0, 0, 1, 2]))),
          F(4, 3))
    C("grad", "grad/resize_bilinear", grad_of(lambda x: img.resize(x, [7, 5], "bilinear")), F(1, 4, 3, 2))
    C("grad", "grad/resize_nearest", grad_of(lambda x: img.resize(x, [7, 5], "nearest")), F(1, 4, 3, 2))
    C("grad", "grad/resize_bicubic", grad_of(lambda x: img.resize(x, [7, 5], "bicubic")), F(1, 4, 3, 2))
    C("grad", "grad/fake_quant_args", grad_of(lambda x: tf.quantization.fake_quant_with_min_max_args(x, -1.0, 1.0)), F(3, 4, lo=-2, hi=2))
    C("grad", "grad/fake_quant_vars", grad_of(lambda x, lo, hi: tf.quantization.fake_quant_with_min_max_vars(x, lo, hi)),
      F(3, 4, lo=-2, hi=2), np.float32(-1.0), np.float32(1.5))
    C("grad", "grad/sparse_add", grad_of(lambda a, b: tf.sparse.to_dense(tf.sparse.add(
        tf.SparseTensor([[0, 0], [1, 2]], a, [3, 3]), tf.SparseTensor([[0, 1], [1, 2]], b, [3, 3])))), F(2), F(2))
    C("grad", "grad/sparse_slice", grad_of(lambda v: tf.sparse.to_dense(tf.sparse.slice(
        tf.SparseTensor([[0, 0], [1, 2], [2, 1]], v, [3, 3]), [1, 0], [2, 3]))), F(3))
    # -- the remaining gradient ops of a train step (session 21, f1)
    C("grad", "f1:grad/igamma", grad_of(lambda a, x: m.igamma(a, x)), F(5, lo=0.5, hi=3), F(5, lo=0.1, hi=4))
    C("grad", "f1:grad/stateless_gamma", grad_of(lambda a: tf.random.stateless_gamma([2, 5], seed=[1, 2], alpha=a)), F(5, lo=0.5, hi=3))
    bx = np.array([[0.1, 0.2, 0.7, 0.9], [0.3, 0.0, 0.9, 0.6]], np.float32)
    C("grad", "f1:grad/crop_and_resize", grad_of(lambda x, b: img.crop_and_resize(x, b, [0, 0], [3, 4])), F(1, 5, 6, 2, lo=0, hi=1), bx)
    C("grad", "f1:grad/crop_and_resize_nearest", grad_of(lambda x: img.crop_and_resize(x, bx, [0, 0], [3, 4], method="nearest")),
      F(1, 5, 6, 2, lo=0, hi=1))
    for meth in ("lanczos3", "lanczos5", "gaussian", "mitchellcubic", "bilinear", "bicubic"):
        C("grad", "f1:grad/resize_antialias_%s" % meth, grad_of(lambda x, meth=meth: img.resize(x, [3, 4], meth, antialias=True)),
          F(1, 7, 9, 2))
    C("grad", "f1:grad/quantize_and_dequantize_v2",
      grad_of(lambda x: tf.quantization.quantize_and_dequantize_v2(x, -1.0, 1.0, range_given=True)), F(3, 4, lo=-2, hi=2))
    C("linalg", "f1:raw/cholesky_grad", lambda a, g: tf.raw_ops.CholeskyGrad(
        l=la.cholesky(tf.matmul(a, a, transpose_b=True) + 3.0 * tf.eye(4)), grad=g), F(4, 4), F(4, 4))
    # -- the remaining forward ops of tf.raw_ops (session 20, e6): public functions that leave them, and
    # raw ops a TF1 graph or tf.raw_ops call puts in a SavedModel
    raw = tf.raw_ops
    C("linalg", "e6:lstsq/fast_false", lambda a, b: la.lstsq(a, b, fast=False), F(5, 3), F(5, 2))
    C("linalg", "e6:lstsq/fast_false_wide", lambda a, b: la.lstsq(a, b, fast=False), F(2, 3, 5, dt="float64"), F(2, 3, 2, dt="float64"))
    C("linalg", "e6:matrix_solve_ls/raw_l2", lambda a, b: raw.MatrixSolveLs(matrix=a, rhs=b, l2_regularizer=tf.constant(0.25, tf.float64)), F(4, 3), F(4, 1))
    C("linalg", "e6:matmul/a_is_sparse", lambda a, b: tf.matmul(a, b, a_is_sparse=True), F(4, 3), F(3, 5))
    C("linalg", "e6:matmul/b_is_sparse_bf16", lambda a, b: tf.cast(tf.matmul(tf.cast(a, tf.bfloat16), tf.cast(b, tf.bfloat16), b_is_sparse=True, transpose_b=True), tf.float32), F(3, 4), F(5, 4))
    C("array", "e6:parallel_stack", lambda a, b: tf.parallel_stack([a, b, a]), F(2, 3), F(2, 3))
    C("array", "e6:reverse_v1", lambda x: raw.Reverse(tensor=x, dims=[True, False, True]), F(2, 3, 4))
    C("array", "e6:space_to_batch_v1", lambda x: raw.SpaceToBatch(input=x, paddings=[[1, 1], [0, 2]], block_size=2), F(2, 4, 4, 3))
    C("array", "e6:batch_to_space_v1", lambda x: raw.BatchToSpace(input=x, crops=[[0, 1], [1, 0]], block_size=2), F(8, 2, 3, 1))
    C("array", "e6:inplace_add_sub_update", lambda x, v: (raw.InplaceAdd(x=x * 1, i=[2, 0], v=v), raw.InplaceSub(x=x * 2, i=[1, 1], v=v),
                                                         raw.InplaceUpdate(x=x * 3, i=[3, 1], v=v)), F(4, 3), F(2, 3))  # TF's kernels write x: one each
    C("array", "e6:data_format_dim_map", lambda x: (raw.DataFormatDimMap(x=x),
                                                    raw.DataFormatDimMap(x=x, src_format="NDHWC", dst_format="NCDHW")), np.array([0, 1, 2, 3, -1, -4], np.int32))
    C("array", "e6:data_format_vec_permute", lambda x, y: (raw.DataFormatVecPermute(x=x), raw.DataFormatVecPermute(x=y, src_format="NCHW", dst_format="NHWC")),
      np.array([1, 224, 224, 3], np.int32), np.arange(8, dtype=np.int64).reshape(4, 2))
    C("array", "e6:tensor_strided_slice_update", lambda x, v: raw.TensorStridedSliceUpdate(input=x, begin=[0, 1], end=[3, 4], strides=[2, 1], value=v), F(4, 5), F(2, 3))
    C("array", "e6:deep_copy_to_bool", lambda x: (raw.DeepCopy(x=x), raw.ToBool(input=x), raw.ToBool(input=x[0, 0])), F(2, 2))
    C("math", "e6:mod_raw", lambda x, y: (raw.Mod(x=x, y=y), raw.Mod(x=tf.cast(x * 10, tf.int32), y=tf.constant([3, -4, 5], tf.int32))), F(4, 3, lo=-9, hi=9), F(3, lo=1, hi=3))
    C("math", "e6:linspace_raw", lambda a, b: (raw.LinSpace(start=a, stop=b, num=9), raw.LinSpace(start=tf.cast(a, tf.float64), stop=tf.cast(b, tf.float64), num=tf.constant(3, tf.int64))),
      np.float32(-2), np.float32(5))
    C("math", "e6:approximate_equal", lambda x, y: raw.ApproximateEqual(x=x, y=y, tolerance=0.3), F(3, 4), F(3, 4))
    C("math", "e6:check_numerics_v2", lambda x: raw.CheckNumericsV2(tensor=x, message="ok"), F(3, 4))
    C("math", "e6:nth_element", lambda x: (raw.NthElement(input=x, n=2), raw.NthElement(input=x, n=0, reverse=True)), F(3, 6))
    # session 21 (f4): BatchFunction, the TF1 summary ops, tfdbg ops, the graph_transforms fused convs
    sv1 = tf.compat.v1.summary

    def batched(x):
        @tf.nondifferentiable_batch_function(1, 8, 1000, allowed_batch_sizes=[4, 8])
        def body(a):
            return a * 2.0 + tf.reduce_sum(a, axis=0, keepdims=True)
        return body(x)
    C("misc", "f4:batch_function", batched, F(3, 5))
    C("misc", "f4:summary_scalar_histogram_merge", lambda x: sv1.merge([sv1.scalar("s", tf.reduce_mean(x)), sv1.histogram("h", x)]), F(4, 5))
    C("misc", "f4:summary_tensor", lambda x: sv1.tensor_summary("t", x), F(2, 3))
    C("misc", "f4:debug_numeric_summary_v2", lambda x: tuple(raw.DebugNumericSummaryV2(input=x, tensor_debug_mode=m, tensor_id=5)
                                                          for m in (2, 3, 4, 5, 8)), F(3, 4))
    C("misc", "f4:debug_identity_nan_count", lambda x: (raw.DebugIdentityV2(input=x), raw.DebugNanCount(input=x, tensor_name="x:0"),
                                                       raw.DebugNumericSummary(input=x, tensor_name="x:0")), F(3, 4))
    C("nn", "f4:fused_pad_conv2d", lambda x, w: raw.FusedPadConv2D(input=x, paddings=[[0, 0], [1, 1], [2, 0], [0, 0]], filter=w,
                                                                   mode="REFLECT", strides=[1, 1, 1, 1], padding="SAME"), F(1, 5, 6, 2), F(3, 3, 2, 4))
    C("nn", "f4:fused_resize_pad_conv2d", lambda x, w: raw.FusedResizeAndPadConv2D(
        input=x, size=[8, 7], paddings=[[0, 0], [1, 1], [1, 1], [0, 0]], filter=w, mode="SYMMETRIC", strides=[1, 2, 2, 1],
        padding="VALID", resize_align_corners=True), F(1, 5, 6, 2), F(3, 3, 2, 4))
    # session 23 (h4): ImageSummary and AudioSummaryV2 (tf.compat.v1.summary), TF1's Batch -> model -> Unbatch
    C("misc", "h4:summary_image_float", lambda x: sv1.image("img", x, max_outputs=2), F(3, 4, 5, 3, lo=-2, hi=3))
    C("misc", "h4:summary_image_uint8", lambda x: sv1.image("u", x), I(2, 3, 4, 4, lo=0, hi=256, dt="uint8"))
    C("misc", "h4:summary_image_one", lambda x: sv1.image("one", x, max_outputs=1), F(2, 3, 3, 1, lo=0, hi=5, dt="float64"))
    C("misc", "h4:summary_audio", lambda x: sv1.audio("snd", x, 16000, max_outputs=2), F(3, 50, 2, lo=-1.1, hi=1.1))
    C("misc", "h4:summary_merge_image_audio", lambda x, y: sv1.merge([sv1.image("i", x), sv1.audio("a", y, 8000)]),
      F(1, 2, 2, 3), F(2, 9))

    def batch_unbatch(x):
        bt, bi, bid = raw.Batch(in_tensors=[x], num_batch_threads=1, max_batch_size=8, batch_timeout_micros=1000,
                                grad_timeout_micros=1000000, allowed_batch_sizes=[4, 8])
        y = bt[0] * 2.0 + tf.reduce_sum(bt[0], axis=0, keepdims=True)
        u = raw.Unbatch(batched_tensor=y, batch_index=bi, id=bid, timeout_micros=1000000)
        return u, raw.UnbatchGrad(original_input=bt[0], batch_index=bi, grad=u, id=bid)
    C("misc", "h4:batch_model_unbatch", batch_unbatch, F(3, 5))
    # -- tf.data inside a tf.function (session 21, f6): pipelines consumed by reduce, loops, iterators
    D = tf.data.Dataset

    def f6_sum(ds, init):
        return ds.reduce(tf.constant(init), lambda s, e: s + tf.cast(tf.reduce_sum(e), tf.constant(init).dtype))

    @tf.function  # autograph: the loop becomes ScanDataset + ReduceDataset (the sweep traces without it)
    def f6_loop(x):
        acc = tf.constant(0.0)
        for e in D.from_tensor_slices(x).map(lambda v: v * 2.0):
            acc = acc * 0.5 + e
        return acc

    def f6_iter(x):
        it = iter(D.from_tensor_slices(x).batch(2))
        return next(it), next(it), it.get_next_as_optional().has_value()

    C("data", "f6:map_filter_batch_reduce", lambda x: f6_sum(D.from_tensor_slices(x).map(lambda v: v * 3.0).filter(lambda v: v > 0.0).batch(2), 0.0), F(9))
    C("data", "f6:for_loop", f6_loop, F(6))
    C("data", "f6:iterator_next_optional", f6_iter, F(5, 2))
    C("data", "f6:range_repeat_take_skip", lambda n: (f6_sum(D.range(n).repeat().take(11), 0), f6_sum(D.range(n).skip(2).repeat(3), 0),
                                                      D.range(n).repeat(3).cardinality()), np.int64(7))
    C("data", "f6:zip_concat_unbatch", lambda x, y: (f6_sum(D.zip((D.from_tensor_slices(x), D.from_tensor_slices(y))).map(lambda a, b: a * b), 0.0),
                                                     f6_sum(D.from_tensor_slices(x).concatenate(D.from_tensor_slices(y)).batch(3).unbatch(), 0.0)), F(4, 3), F(5, 3))
    C("data", "f6:flat_map_scan_take_while", lambda x: (f6_sum(D.from_tensor_slices(x).flat_map(lambda v: D.range(v)), 0),
                                                        f6_sum(D.from_tensor_slices(x).scan(tf.constant(0, tf.int64), lambda s, v: (s + v, s * v)), 0),
                                                        f6_sum(D.from_tensor_slices(x).take_while(lambda v: v < 4), 0)), np.array([3, 1, 0, 5, 2], np.int64))
    C("data", "f6:padded_batch", lambda x: next(iter(D.from_tensor_slices(x).map(lambda v: tf.range(v)).padded_batch(3, padding_values=tf.constant(-7, tf.int64)))),
      np.array([3, 1, 0, 5], np.int64))
    C("data", "f6:parallel_map_prefetch", lambda x: f6_sum(D.from_tensors(x).repeat(3).map(lambda v: v * 2.0, num_parallel_calls=4).prefetch(2), 0.0), F(3, 2))
    # -- session 23, h8: tf.data shuffle (TF's order), parallel interleave/batch, shard, choose/sample_from_datasets,
    # assert_cardinality, ignore_errors, cache, random, map_and_batch, get_single_element
    def h8_all(ds):
        return next(iter(ds.batch(1000)))

    C("data", "h8:shuffle_repeat", lambda x: (h8_all(D.from_tensor_slices(x).shuffle(4, seed=7).repeat(2)),
                                              h8_all(D.from_tensor_slices(x).shuffle(100, seed=3, reshuffle_each_iteration=False).repeat(2))),
      np.arange(9, dtype=np.int64))
    C("data", "h8:parallel_interleave_batch", lambda x: (h8_all(D.from_tensor_slices(x).interleave(lambda v: D.range(v), cycle_length=2, block_length=2, num_parallel_calls=2)),
                                                         h8_all(D.from_tensor_slices(x).batch(2, num_parallel_calls=2).map(tf.reduce_sum))),
      np.array([3, 1, 0, 4, 2], np.int64))
    C("data", "h8:shard_choose_sample", lambda x: (h8_all(D.from_tensor_slices(x).shard(3, 1)),
                                                   h8_all(D.choose_from_datasets([D.range(3), D.range(10, 14)], D.from_tensor_slices(x % 2))),
                                                   h8_all(D.sample_from_datasets([D.range(3), D.range(10, 14)], weights=[0.3, 0.7], seed=4))),
      np.array([0, 1, 1, 2, 3, 5, 1, 0], np.int64))
    C("data", "h8:assert_ignore_cache_single", lambda x: (h8_all(D.from_tensor_slices(x).apply(tf.data.experimental.assert_cardinality(6))),
                                                          h8_all(D.from_tensor_slices(x).map(lambda v: tf.debugging.check_numerics(1.0 / v, "inv")).ignore_errors()),
                                                          h8_all(D.from_tensor_slices(x).shuffle(3, seed=2).cache().repeat(2)),
                                                          D.from_tensor_slices(x).batch(10).get_single_element()),
      np.array([2, 0, 4, 0, 5, 8], np.float32))
    C("data", "h8:random_map_and_batch", lambda x: (h8_all(D.random(seed=6).take(5)),
                                                    h8_all(D.from_tensor_slices(x).apply(tf.data.experimental.map_and_batch(lambda v: v * 2, 3)).map(tf.reduce_sum))),
      np.arange(7, dtype=np.int64))
    # -- session 23, i3: group_by_window, bucket_by_sequence_length, group_by_reducer (TF orders its keys by hash: sorted here)
    C("data", "i3:group_by_window", lambda x: (h8_all(D.from_tensor_slices(x).group_by_window(lambda v: v % 3, lambda k, w: w.batch(2).map(tf.reduce_sum), window_size=2)),
                                               h8_all(D.from_tensor_slices(x).group_by_window(lambda v: v % 2, lambda k, w: w.map(lambda v: v * 10 + k), window_size_func=lambda k: k + 2))),
      np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], np.int64))
    C("data", "i3:bucket_by_sequence_length", lambda x: h8_all(D.from_tensor_slices(x).map(lambda n: tf.range(n)).bucket_by_sequence_length(
        lambda s: tf.size(s), [3, 5], [2, 2, 3]).map(lambda t: tf.reduce_sum(t) * 100 + tf.cast(tf.size(t), tf.int64))), np.array([1, 4, 2, 6, 3, 5, 2, 7], np.int64))
    C("data", "i3:group_by_reducer", lambda x: tf.sort(h8_all(D.from_tensor_slices(x).apply(tf.data.experimental.group_by_reducer(
        lambda v: v % 3, tf.data.experimental.Reducer(lambda k: k * 1000, lambda st, v: st + v, lambda st: st))))), np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int64))
    # -- session 24, ds: sparse_batch (DenseToSparseBatchDataset), rebatch (RebatchDatasetV2)
    C("data", "ds:sparse_batch", lambda x: D.from_tensor_slices(x).map(lambda n: tf.range(n)).sparse_batch(2, [6]).reduce(
        tf.constant(0, tf.int64), lambda s, sp: s * 7 + tf.reduce_sum(sp.values) + tf.reduce_sum(sp.indices) + tf.reduce_sum(sp.dense_shape)),
      np.array([3, 1, 4, 0, 5], np.int64))
    C("data", "ds:rebatch", lambda x: (h8_all(D.from_tensor_slices(x).batch(4).rebatch(3).map(lambda b: tf.reduce_sum(b) * 10 + tf.size(b, tf.int64))),
                                       h8_all(D.from_tensor_slices(x).batch(3).rebatch([2, 0, 5], drop_remainder=True).map(lambda b: tf.reduce_sum(b) * 10 + tf.size(b, tf.int64)))),
      np.arange(11, dtype=np.int64))
    # -- session 21, f2: the generic Conv, SparseBincount, the JPEG header/quality ops
    C("nn", "f2:conv_raw_2d_explicit", lambda x, f: raw.Conv(input=x, filter=f, strides=[1, 2, 1, 1], padding="EXPLICIT",
                                                           explicit_paddings=[0, 0, 1, 0, 2, 1, 0, 0], dilations=[1, 1, 2, 1]), F(2, 7, 6, 3), F(3, 2, 3, 4))
    C("nn", "f2:conv_raw_3d_batch_dims", lambda x, f: raw.Conv(input=x, filter=f, strides=[1, 1, 2, 1, 1], padding="SAME", batch_dims=2),
      F(2, 2, 4, 5, 3, 2), F(2, 3, 2, 2, 3))
    C("math", "f2:bincount_sparse", lambda x, w: (tf.math.bincount(tf.sparse.from_dense(x), minlength=6),
                                                 tf.math.bincount(tf.sparse.from_dense(x), weights=tf.sparse.from_dense(w), axis=-1, minlength=6),
                                                 tf.math.bincount(tf.sparse.from_dense(x), binary_output=True, axis=-1, minlength=6)),
      I(3, 5, lo=1, hi=8), F(3, 5, lo=0.5, hi=2))
    C("image", "f2:extract_jpeg_shape", lambda x: (tf.image.extract_jpeg_shape(tf.io.encode_jpeg(x)),
                                                  tf.image.extract_jpeg_shape(tf.io.encode_jpeg(x), output_type=tf.int64)),
      np.random.default_rng(5).integers(0, 256, (6, 9, 3)).astype("uint8"))
    C("image", "f2:adjust_jpeg_quality", lambda x: (tf.image.adjust_jpeg_quality(x, 40), tf.image.adjust_jpeg_quality(tf.cast(x, tf.float32) / 255.0, 90)),
      np.random.default_rng(6).integers(0, 256, (8, 8, 3)).astype("uint8"))
    # -- session 23, h3: a gradient accumulator made and used inside the function, bool scatters

    def h3_accum(g1, g2, g3):
        h = raw.ResourceConditionalAccumulator(dtype=tf.float32, shape=[3], reduction_type="MEAN")
        raw.ResourceAccumulatorApplyGradient(handle=h, local_step=tf.constant(1000, tf.int64), gradient=g1)
        raw.ResourceAccumulatorApplyGradient(handle=h, local_step=tf.constant(1000, tf.int64), gradient=g2)
        raw.ResourceAccumulatorApplyGradient(handle=h, local_step=tf.constant(1000, tf.int64), gradient=g3)
        n = raw.ResourceAccumulatorNumAccumulated(handle=h)
        return raw.ResourceAccumulatorTakeGradient(handle=h, num_required=3, dtype=tf.float32), n

    C("array", "h3:resource_accumulator_mean", h3_accum, F(3), F(3), F(3))
    C("array", "h3:scatter_nd_bool", lambda u: (tf.scatter_nd([[0], [1], [1], [3]], u, [5]),
                                                raw.ScatterNdNonAliasingAdd(input=tf.constant([True, False, False, False, True]),
                                                                            indices=[[0], [1], [1], [3]], updates=u)), B(4))
    # -- session 23, h6: sparse serialization, SparseTensorsMap, the clustering kernels
    def h6_parts(st):
        return st.indices, st.values, st.dense_shape
    C("io", "h6:serialize_sparse", lambda x: io.serialize_sparse(tf.sparse.from_dense(x)), I(3, 4, lo=-1, hi=2))
    C("io", "h6:serialize_many_sparse", lambda x: io.serialize_many_sparse(tf.sparse.from_dense(x)), np.array([["a", ""], ["", ""], ["b", "cd"]], dtype="S"))
    C("io", "h6:deserialize_many_sparse", lambda x: h6_parts(io.deserialize_many_sparse(io.serialize_many_sparse(tf.sparse.from_dense(x)), tf.float32)),
      np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1]], np.float32))
    C("io", "h6:deserialize_sparse_variant", lambda x: raw.DeserializeSparse(
        serialized_sparse=io.serialize_many_sparse(tf.sparse.from_dense(x), out_type=tf.variant), dtype=tf.int32), I(3, 2, 2, lo=-1, hi=2))
    C("sparse", "h6:sparse_tensors_map", lambda x: raw.TakeManySparseFromTensorsMap(
        sparse_handles=tf.reverse(raw.AddManySparseToTensorsMap(sparse_indices=tf.sparse.from_dense(x).indices, sparse_values=tf.sparse.from_dense(x).values,
                                                                sparse_shape=tf.shape(x, out_type=tf.int64), shared_name="h6m"), [0]),
        dtype=tf.float32, shared_name="h6m"), np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1]], np.float32))
    C("math", "h6:nearest_neighbors", lambda p, c: raw.NearestNeighbors(points=p, centers=c, k=tf.constant(2, tf.int64)), F(6, 3), F(4, 3))
    C("math", "h6:kmeans_plus_plus_init", lambda p: raw.KmeansPlusPlusInitialization(points=p, num_to_sample=tf.constant(3, tf.int64),
                                                                                      seed=tf.constant(5, tf.int64),
                                                                                      num_retries_per_sample=tf.constant(-1, tf.int64)), F(20, 2))
    C("math", "h6:kmc2_chain_init", lambda d: raw.KMC2ChainInitialization(distances=d, seed=tf.constant(9, tf.int64)), F(30, lo=0, hi=2))
    # -- session 23, h2: staging areas (tf.raw_ops; StagingArea/MapStagingArea build the same ops)
    def h2_stage(x, y):
        kw = dict(dtypes=[tf.float32, tf.int32], shared_name="h2st")
        raw.Stage(values=[x, y], shared_name="h2st")
        raw.Stage(values=[x * 2.0, y + 1], shared_name="h2st")
        n = raw.StageSize(**kw)
        p = raw.StagePeek(index=1, **kw)
        a = raw.Unstage(**kw)
        b = raw.Unstage(**kw)
        raw.StageClear(**kw)
        return n, p[0], a[0], a[1], b[0], b[1]

    def h2_map(x, y, ordered):
        kw = dict(dtypes=[tf.float32, tf.int32], shared_name="h2m")
        M = (lambda n: getattr(raw, "OrderedMap" + n)) if ordered else (lambda n: getattr(raw, "Map" + n))
        k3, k1 = tf.constant(3, tf.int64), tf.constant(1, tf.int64)
        M("Stage")(key=k3, indices=[0, 1], values=[x, y], **kw)
        M("Stage")(key=k1, indices=[0], values=[x * 2.0], **kw)
        inc = M("IncompleteSize")(**kw)
        M("Stage")(key=k1, indices=[1], values=[y + 1], **kw)
        n = M("Size")(**kw)
        p = M("Peek")(key=k3, indices=[1], dtypes=[tf.int32], shared_name="h2m")
        k, v = M("UnstageNoKey")(indices=[0, 1], **kw)
        g = M("Unstage")(key=k3, indices=[0, 1], **kw)
        M("Clear")(**kw)
        return inc, n, p[0], k, v[0], v[1], g[0], g[1]

    C("data", "h2:stage_unstage_peek", h2_stage, F(3), np.int32(4))
    C("data", "h2:ordered_map_stage", lambda x, y: h2_map(x, y, True), F(2), np.int32(5))
    C("data", "h2:map_stage", lambda x, y: h2_map(x, y, False), F(2), np.int32(6))
    # -- session 24, csr: CSRSparseMatrix ops (tf.raw_ops; tensorflow.python.ops.linalg.sparse builds the same)
    def csr_of(x):
        return raw.DenseToCSRSparseMatrix(dense_input=x, indices=tf.where(tf.not_equal(x, 0)))

    def sparse_x(*shape, dt="float32"):
        x = rng.uniform(-1, 1, shape) * (rng.uniform(0, 1, shape) < 0.5)
        return x.astype(dt)

    C("sparse", "csr:dense_roundtrip", lambda x: raw.CSRSparseMatrixToDense(sparse_input=csr_of(x), type=tf.float32), sparse_x(2, 3, 4))
    C("sparse", "csr:sparse_tensor_roundtrip", lambda x: tuple(raw.CSRSparseMatrixToSparseTensor(
        sparse_matrix=raw.SparseTensorToCSRSparseMatrix(indices=tf.sparse.from_dense(x).indices, values=tf.sparse.from_dense(x).values,
                                                        dense_shape=tf.shape(x, out_type=tf.int64)), type=tf.float64)), sparse_x(3, 5, dt="float64"))
    C("sparse", "csr:components_nnz", lambda x: tuple(raw.CSRSparseMatrixComponents(csr_sparse_matrix=csr_of(x), index=1, type=tf.float32)) +
      (raw.SparseMatrixNNZ(sparse_matrix=csr_of(x)),), sparse_x(2, 3, 4))
    C("sparse", "csr:matmul", lambda x, y: raw.SparseMatrixMatMul(a=csr_of(x), b=y, adjoint_a=True, transpose_output=True), sparse_x(2, 4, 3), F(2, 4, 5))
    C("sparse", "csr:matmul_complex", lambda x, y: raw.SparseMatrixMatMul(a=csr_of(x), b=y, adjoint_b=True, conjugate_output=True),
      sparse_x(3, 4, dt="complex64") * (1 + 0.5j), CX(2, 4))
    C("sparse", "csr:sparse_matmul_transpose", lambda x, y: raw.CSRSparseMatrixToDense(sparse_input=raw.SparseMatrixSparseMatMul(
        a=raw.SparseMatrixTranspose(input=csr_of(x), type=tf.float32), b=csr_of(y), type=tf.float32, transpose_b=True), type=tf.float32),
      sparse_x(4, 3), sparse_x(5, 4))
    # -- session 24, TF Text (tt1: byte splitter, utf8_binarize, round-robin masks, split-merge tokenizers;
    # tt2: scoring ops, src/ops/tftext_sent.c): importing tensorflow_text registers its custom ops in this
    # process (TF loads them back); without the package these rows are left out
    try:
        import tensorflow_text as text
    except ImportError:
        text = None
    if text is not None:
        def tt1_rag(r):
            return r.flat_values, r.row_splits

        C("strings", "tt1:byte_split_with_offsets", lambda x: text.ByteSplitter().split_with_offsets(x)[0].flat_values,
          S("h\u00e9llo", "", "ab"))
        C("strings", "tt1:byte_split_offsets", lambda x: tuple(r.flat_values for r in text.ByteSplitter().split_with_offsets(x)[1:]),
          S("h\u00e9llo", "", "ab"))
        C("strings", "tt1:byte_split_by_offsets", lambda x, b, e: tt1_rag(text.ByteSplitter().split_by_offsets(
            x, tf.RaggedTensor.from_row_splits(b, [0, 2, 2, 3]), tf.RaggedTensor.from_row_splits(e, [0, 2, 2, 3]))),
          S("hello", "", "ab"), np.array([0, 2, 1], np.int32), np.array([2, 5, 2], np.int32))
        C("strings", "tt1:utf8_binarize", lambda x: text.utf8_binarize(x, word_length=4, bits_per_char=8, replacement_char=65533),
          S("h\u00e9llo", "", "\u4e2d", b"a\xffb"))
        C("strings", "tt1:round_robin_generate_masks", lambda a, b: tuple(m.flat_values for m in text.RoundRobinTrimmer(5).generate_mask(
            [tf.RaggedTensor.from_row_splits(a, [0, 3, 7]), tf.RaggedTensor.from_row_splits(b, [0, 2, 6])])),
          I(7), I(6))
        C("strings", "tt1:split_merge_tokenizer", lambda x, l: tt1_rag(text.SplitMergeTokenizer().tokenize(
            x, tf.RaggedTensor.from_row_splits(l, [0, 11, 17]))), S("Hello world", "a b  c"), I(17, lo=0, hi=2))
        C("strings", "tt1:split_merge_from_logits", lambda x, l: tt1_rag(text.SplitMergeFromLogitsTokenizer(False).tokenize(x, l)),
          S("Hello world", "a b  c"), F(2, 11, 2))

        def tt2_rouge(hv, hl, rv, rl, alpha):
            return text.metrics.rouge_l(tf.RaggedTensor.from_row_lengths(hv, hl), tf.RaggedTensor.from_row_lengths(rv, rl),
                                        alpha=alpha)

        hw, rw = S("a", "b", "c", "d", "e", "x", "b", "a"), S("a", "c", "b", "e", "b", "x", "y")
        C("text", "tt2:rouge_l", lambda h, hl, r, rl: tt2_rouge(h, hl, r, rl, 0.5), hw, np.array([5, 0, 3], "int64"), rw,
          np.array([4, 1, 2], "int64"))
        C("text", "tt2:rouge_l_t2t_ints", lambda h, hl, r, rl: tt2_rouge(h, hl, r, rl, -1.0), I(9, lo=0, hi=3),
          np.array([4, 5], "int64"), I(7, lo=0, hi=3), np.array([3, 4], "int64"))
        sc, al, tw = F(2, 6, 4, lo=-3.0, hi=0.0), B(5, 5) | np.eye(5, dtype=bool), F(5, 5, lo=-1.0, hi=0.0)
        lens = np.array([6, 4], "int32")
        C("text", "tt2:viterbi_constrained_sequence", lambda s, l, a, w: text.viterbi_constrained_sequence(
            s, l, allowed_transitions=a, transition_weights=w, use_log_space=True, use_start_and_end_states=True).to_tensor(-9),
          sc, lens, al, tw)
        C("text", "tt2:viterbi_constrained_sequence_prob", lambda s, l, w: text.viterbi_constrained_sequence(
            s, l, transition_weights=w, use_log_space=False, use_start_and_end_states=False).to_tensor(-9),
          np.exp(sc), lens, np.exp(tw[:4, :4]))
        C("text", "tt2:greedy_constrained_sequence", lambda s, l, a, w: text.greedy_constrained_sequence(
            s, l, allowed_transitions=a, transition_weights=w, use_log_space=True, use_start_and_end_states=True).to_tensor(-9),
          sc, lens, al, tw)
    return out


# ---- child side ------------------------------------------------------------------------------------
def _outputs(res):
    if isinstance(res, dict):
        return dict(res)
    if isinstance(res, (list, tuple)):
        flat = []
        for r in res:
            if isinstance(r, (list, tuple)):
                flat.extend(r)
            elif hasattr(r, "_fields"):
                flat.extend(list(r))
            else:
                flat.append(r)
        return {"y%02d" % i: t for i, t in enumerate(flat)}
    return {"y": res}


def graph_ops(pb_path):
    from tensorflow.core.protobuf import saved_model_pb2
    sm = saved_model_pb2.SavedModel()
    with open(pb_path, "rb") as f:
        sm.ParseFromString(f.read())
    ops = set()
    for mg in sm.meta_graphs:
        for n in mg.graph_def.node:
            ops.add(n.op)
        for fn in mg.graph_def.library.function:
            if fn.signature.name.startswith("__inference_signature_wrapper") or "_saveable" in fn.signature.name:
                continue
            for n in fn.node_def:
                ops.add(n.op)
    return sorted(o for o in ops if o not in BORING)


def child_build(group, out, only, reuse):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    res = []
    for g, name, fn, inputs in make_cases(tf, np):
        if g != group or (only and not any(o in name for o in only)):
            continue
        d = os.path.join(out, g, name.replace("/", "__").replace("?", "").replace(">", "").replace(" ", "_"))
        meta = os.path.join(d, "meta.json")
        if reuse and os.path.exists(meta):
            with open(meta) as f:
                res.append(json.load(f))
            continue
        r = {"group": g, "name": name, "dir": d}
        if not inputs:  # saved_model_cli (and so `run`) needs at least one input: an unused scalar
            fn, inputs = (lambda f: lambda x: f())(fn), [np.float32(0)]
        try:
            os.makedirs(d, exist_ok=True)
            specs = [tf.TensorSpec(np.shape(x), tf.as_dtype(np.asarray(x).dtype if np.asarray(x).dtype.kind != "S" else tf.string), name="x%d" % i)
                     for i, x in enumerate(inputs)]
            params = ", ".join("x%d" % i for i in range(len(inputs)))
            ns = {"fn": fn, "_outputs": _outputs}
            exec("def body(%s):\n    return _outputs(fn(%s))\n" % (params, params), ns)
            mod = tf.Module()
            mod.f = tf.function(ns["body"], input_signature=specs)
            cf = mod.f.get_concrete_function()
            tf.saved_model.save(mod, os.path.join(d, "model"), signatures={"serving_default": cf})
            r["ops"] = graph_ops(os.path.join(d, "model", "saved_model.pb"))
            loaded = tf.saved_model.load(os.path.join(d, "model")).signatures["serving_default"]
            feeds = {}
            for i, x in enumerate(inputs):
                p = os.path.join(d, "x%d.npy" % i)
                np.save(p, np.asarray(x))
                feeds["x%d" % i] = p
            r["feeds"] = feeds
            y = loaded(**{k: tf.constant(np.load(p)) for k, p in feeds.items()})
            r["outputs"] = sorted(y)
            for k in y:
                v = np.asarray(y[k].numpy())
                if v.dtype == object:
                    v = v.astype("S")
                np.save(os.path.join(d, "tf_%s.npy" % k), v)
        except Exception as e:  # noqa: BLE001 - TF itself fails: a row
            r["tf_error"] = ("%s: %s" % (type(e).__name__, e)).strip().splitlines()[0][:300]
        with open(meta, "w") as f:
            json.dump(r, f)
        res.append(r)
    return res


def child_compare(d, outputs, ours_dir):
    import numpy as np
    worst = 0.0
    for k in outputs:
        ref = np.load(os.path.join(d, "tf_%s.npy" % k))
        unit = TOL_DT.get(ref.dtype.name, 0) / TOL
        p = os.path.join(ours_dir, "%s.npy" % k)
        if not os.path.exists(p):
            return {"error": "no output %s" % k}
        got = np.load(p)
        if got.shape != ref.shape:
            return {"error": "output %s shape %s, TF %s" % (k, got.shape, ref.shape)}
        if ref.dtype.kind in "fc" or ref.dtype == np.dtype("V2"):
            if got.dtype.kind not in "fc":
                return {"error": "output %s dtype %s, TF %s" % (k, got.dtype, ref.dtype)}
            rr, gg = ref.astype(np.complex128), got.astype(np.complex128)
            nan_r, nan_g = np.isnan(rr), np.isnan(gg)
            if np.any(nan_r != nan_g):
                return {"error": "output %s NaN where TF has none (or the reverse)" % k, "err": float("inf")}
            fin = ~nan_r
            inf_r = np.isinf(rr) & fin
            if np.any(rr[inf_r] != gg[inf_r]):
                return {"error": "output %s inf differs" % k, "err": float("inf")}
            ok = fin & ~inf_r
            if np.any(ok):
                scale = max(1.0, float(np.abs(rr[ok]).max()))
                e = float(np.abs(gg[ok] - rr[ok]).max()) / scale
                worst = max(worst, e / unit if unit else e)  # in units of TOL for half / bfloat16
        else:
            if got.dtype.kind != ref.dtype.kind and not (got.dtype.kind in "SU" and ref.dtype.kind in "SU"):
                return {"error": "output %s dtype %s, TF %s" % (k, got.dtype, ref.dtype)}
            if not np.array_equal(got, ref):
                n = int(np.sum(got != ref))
                return {"error": "output %s: %d of %d elements differ" % (k, n, ref.size), "err": float("inf")}
    return {"err": worst}


# ---- driver side ------------------------------------------------------------------------------------
def run(cmd, timeout, env=None):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                           env=None if env is None else dict(os.environ, **env))
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s" % timeout


def child(py, timeout, *args):
    rc, out, err = run([py, os.path.abspath(__file__), "--child"] + [str(a) for a in args], timeout)
    if rc != 0:
        return None, err.strip().splitlines()[-1] if err.strip() else "rc %d" % rc
    return json.loads(out.strip().splitlines()[-1]), None


def ours(exe, py, r):
    rc, out, err = run([exe, "scan", "--dir", os.path.join(r["dir"], "model"), "--tag_set", "serve", "--json"], 120)
    try:
        r["unsupported"] = sorted({o for mg in json.loads(out)["meta_graphs"] for o in mg["unsupported_ops"]})
    except (ValueError, KeyError):
        r["unsupported"] = ["?scan rc %d: %s" % (rc, err.strip()[-200:])]
    od = os.path.join(r["dir"], "ours")
    cmd = [exe, "run", "--dir", os.path.join(r["dir"], "model"), "--tag_set", "serve", "--signature_def",
           "serving_default", "--outdir", od, "--overwrite"]
    if r["feeds"]:
        cmd += ["--inputs", ";".join("%s=%s" % kv for kv in sorted(r["feeds"].items()))]
    rc, out, err = run(cmd, 120)
    if rc != 0:
        lines = [ln for ln in (err.strip() or "rc %d" % rc).splitlines() if ln.strip()]
        r["error"] = (lines[-1] if lines else "rc %d" % rc).replace(os.path.join(r["dir"], "model"), "DIR")[:300]
        return
    c, e = child_compare(r["dir"], r["outputs"], od), None
    r.update(c)


def status(r):
    if "tf_error" in r:
        return "TF fails"
    if "error" in r:
        return "MISMATCH" if "err" in r else "FAIL"
    return "ok" if r.get("err", 1) <= TOL else "MISMATCH"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", nargs="+")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=None)
    ap.add_argument("--out", default="/tmp/k4/ops")
    ap.add_argument("--groups", default="")
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    ap.add_argument("--reuse", action="store_true", help="reuse exports and TF outputs already in --out")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.child:
        what, a = args.child[0], args.child[1:]
        if what == "build":
            res = child_build(a[0], a[1], [o for o in a[2].split(",") if o], a[3] == "1")
        elif what == "groups":
            import numpy as np
            import tensorflow as tf
            res = sorted({c[0] for c in make_cases(tf, np)})
        print(json.dumps(res))
        return 0
    args.build = os.path.abspath(args.build)
    py = args.python or os.path.join(args.build, "venv", "bin", "python")
    exe = os.path.join(args.build, "savedmodel")
    groups = [g for g in args.groups.split(",") if g] or child(py, 300, "groups")[0]
    rows = []
    for g in groups:
        t0 = time.time()
        res, e = child(py, 3600, "build", g, args.out, args.only or ",", "1" if args.reuse else "0")
        if res is None:
            rows.append({"group": g, "name": "(group)", "tf_error": "build: " + e})
            continue
        print("# %s: %d cases built in %.0f s" % (g, len(res), time.time() - t0), flush=True)
        for r in res:
            if "tf_error" not in r:
                ours(exe, py, r)
            r["status"] = status(r)
            rows.append(r)
            print("%-8s %-44s %-9s %s%s" % (g, r["name"], r["status"], "err %.1e " % r["err"] if "err" in r and r["err"] != float("inf") else "",
                  (("missing: " + ",".join(r["unsupported"]) + " ") if r.get("unsupported") else "") +
                  (r.get("error") or r.get("tf_error") or "")), flush=True)
    lines = ["| group | function | status | max err | ops missing here | graph ops | error |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["group"], r["name"], r["status"], "%.1e" % r["err"] if "err" in r and r["err"] != float("inf") else "",
            " ".join(r.get("unsupported") or []), " ".join(r.get("ops") or []),
            (r.get("error") or r.get("tf_error") or "").replace("|", "/")))
    n = {s: sum(1 for r in rows if r["status"] == s) for s in ("ok", "MISMATCH", "FAIL", "TF fails")}
    lines.append("")
    lines.append("%d cases: %s" % (len(rows), ", ".join("%d %s" % (v, k) for k, v in n.items())))
    print("\n".join(lines))
    if args.md:
        with open(args.md, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if n["MISMATCH"] + n["FAIL"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
