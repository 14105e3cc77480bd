#!/usr/bin/env python3
"""gen_edge_cases.py - writes tests/unit/edge_cases.h: hostile and edge inputs for the fast paths
of sessions 14-15, with TensorFlow's answers (test_ops_edge.c runs them without TF):
  - the own AVX-512 3x3 depthwise (src/ops/nn_dwconv.c): 1x1, 1xN, Nx1, 2x2, 3x3, 17x5 images,
    VALID giving 1 pixel, stride 2 over odd sizes, explicit pads, channels 1..65 (vector tails),
    batch 0 and 3, Inf/NaN inputs beside padding; fused bias + Relu / Relu6 (TF's answer composed
    of DepthwiseConv2dNative, BiasAdd and the activation);
  - the row-tiled binary ops (math_binary.c bin_tiled): [N,H,W,C] against [1,1,C] / [C] / [N,1,1,C]
    either side, rows wider than the tile, int32 / int64 / double, scalars, rank 5-6, zero-size dims,
    division by +-0;
  - the AVX-512 exp (base/vmath.c) through Exp, Sigmoid, Softmax, LogSoftmax and a fused swish:
    NaN, +-Inf, -0.0, denormals, the overflow and underflow edges, huge values;
  - float Sum / Mean along a strided axis (math_reduce.c sum_f32_avx512): 64-column blocks and
    their tails, axes of size 0 and 1, keep_dims, NaN/Inf in a column, int types;
  - MatMul with 0 units / 0 rows / K = 0, the narrow batch-1 Dense;
  - FusedBatchNormV3 (inference) with epsilon 0, variance 0 and negative variance;
  - denormals (TF flushes them: FTZ + DAZ): subnormal operands and results through the binary
    ops, rsqrt / log / division by one, exp's underflow, Sum / Mean, MatMul, the convolutions,
    a BatchNorm variance of 1e-38 with epsilon 0.
Inputs are random multiples of 1/8 (exact in text). TF's own (Eigen) kernels are the reference.
Run: /work/main/build/venv/bin/python tools/gen_edge_cases.py
"""
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
_fmt_values = g.fmt_values


def fmt_values(t):
    """float32 as %.9g (round-trips through strtof, shorter than the double's repr)."""
    if t.dtype == tf.float32:
        return " ".join("%.9g" % v for v in np.asarray(t.numpy(), np.float32).reshape(-1))
    return _fmt_values(t)


g.fmt_values = fmt_values
nan, inf = float("nan"), float("inf")
F32 = tf.float32
RNG = np.random.RandomState(1607)


def R(shape, dt=np.float32, lo=-16, hi=17):
    """Random multiples of 1/8 in [-2, 2] (integers in [lo, hi) for int types)."""
    if np.issubdtype(dt, np.integer):
        return np.asarray(RNG.randint(lo, hi, size=shape)).astype(dt)
    return np.asarray(RNG.randint(lo, hi, size=shape) / 8.0).astype(dt)


def raw(name, node, ins, outs, err=None):
    """A case whose node is ours (a fused op TF has no eager kernel for) and whose answer TF
    computed by composing its ops."""
    g.CASES.append((name, node, [tf.convert_to_tensor(x) for x in ins], [tf.convert_to_tensor(o) for o in outs], err))


# ---- the 3x3 depthwise -------------------------------------------------------------------------
def dw_attrs(s, pad, explicit=None):
    a = {"strides": [1, s, s, 1], "padding": pad}
    if explicit:
        a["explicit_paddings"] = [0, 0, explicit[0], explicit[1], explicit[2], explicit[3], 0, 0]
    return a


def depthwise():
    shapes = [  # N, H, W, C, stride, padding
        (1, 1, 1, 17, 1, "SAME"), (1, 1, 1, 17, 2, "SAME"), (1, 1, 7, 16, 1, "SAME"), (1, 1, 7, 16, 2, "SAME"),
        (1, 6, 1, 16, 1, "SAME"), (1, 5, 1, 3, 2, "SAME"), (1, 2, 2, 32, 1, "SAME"), (1, 2, 2, 33, 2, "SAME"),
        (1, 3, 3, 16, 1, "VALID"), (1, 3, 3, 15, 2, "VALID"), (1, 4, 4, 31, 2, "VALID"), (1, 3, 4, 16, 2, "VALID"),
        (1, 17, 5, 17, 1, "SAME"), (1, 17, 5, 16, 2, "SAME"), (1, 17, 5, 33, 2, "VALID"), (1, 17, 5, 1, 1, "VALID"),
        (1, 3, 17, 65, 2, "SAME"), (3, 5, 3, 33, 2, "SAME"), (3, 4, 3, 16, 1, "SAME"), (0, 5, 5, 17, 1, "SAME"),
(1, 5, 5, 0, 1, "SAME"),         (1, 9, 9, 3, 2, "SAME"), (1, 6, 4, 64, 2, "SAME"), (2, 5, 5, 48, 2, "VALID"), (1, 2, 9, 16, 1, "VALID"),
    ]
    for n, h, w, c, s, pad in shapes:
        case("dw %dx%dx%dx%d s%d %s" % (n, h, w, c, s, pad), "DepthwiseConv2dNative",
             [("input", R([n, h, w, c])), ("filter", R([3, 3, c, 1]))], dw_attrs(s, pad))
    for n, h, w, c, s, p in ((1, 5, 6, 17, 1, (2, 2, 2, 2)), (1, 4, 5, 16, 2, (0, 1, 0, 1)), (1, 1, 1, 16, 1, (2, 0, 0, 2)),
                             (1, 3, 3, 32, 2, (1, 2, 2, 1))):
        case("dw %dx%dx%dx%d s%d explicit %s" % (n, h, w, c, s, p), "DepthwiseConv2dNative",
             [("input", R([n, h, w, c])), ("filter", R([3, 3, c, 1]))], dw_attrs(s, "EXPLICIT", p))
    case("dw valid would be 0 rows", "DepthwiseConv2dNative",
         [("input", R([1, 2, 5, 16])), ("filter", R([3, 3, 16, 1]))], dw_attrs(1, "VALID"))
    # signed zeros: -0.0 everywhere, products -0, TF's sums start from +0 (sign checked)
    for s_, pad in ((1, "SAME"), (2, "VALID"), (1, "VALID")):
        case("dw -0.0 s%d %s signed zero" % (s_, pad), "DepthwiseConv2dNative",
             [("input", np.full([1, 5, 4, 17], -0.0, np.float32)), ("filter", R([3, 3, 17, 1], lo=1, hi=9))],
             dw_attrs(s_, pad))
    xz, fz, bz = np.full([1, 4, 3, 16], -0.0, np.float32), R([3, 3, 16, 1], lo=1, hi=9), np.full([16], -0.0, np.float32)
    for act in ("Relu", "Relu6", ""):
        y = tf.nn.bias_add(tf.raw_ops.DepthwiseConv2dNative(input=xz, filter=fz, strides=[1, 1, 1, 1], padding="SAME"), bz)
        y = tf.nn.relu6(y) if act == "Relu6" else tf.nn.relu(y) if act == "Relu" else y
        ops = " ".join('s: "%s"' % o for o in ["BiasAdd"] + ([act] if act else []))
        node = ('op: "_FusedDepthwiseConv2dNative" attr { key: "T" value { type: DT_FLOAT } } '
                'attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: "padding" value { s: "SAME" } } '
                'attr { key: "dilations" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: "fused_ops" value { list { %s } } } '
                'attr { key: "num_args" value { i: 1 } } attr { key: "TArgs" value { list { type: DT_FLOAT } } }' % ops)
        raw("fused dw -0.0 bias -0.0 %s signed zero" % (act or "none"), node, [xz, fz, bz], [y])
    for op in ("Add", "Mul", "Sub"):
        case("%s -0.0 tiled signed zero" % op, op, [("x", np.full([3, 4, 17], -0.0, np.float32)),
                                                     ("y", np.array([-0.0, 0.0] * 8 + [-0.0], np.float32))])
    # (not Relu / Relu6: TF's own sign of max(-0, 0) depends on Eigen's path, -0 for a scalar, +0 in vectors)
    for op in ("Tanh", "Sigmoid", "Exp", "Elu", "Softplus"):
        case("%s -0.0 signed zero" % op, op, [("x" if op in ("Tanh", "Sigmoid", "Exp") else "features",
                                               np.array([-0.0, 0.0] * 9, np.float32))])
    # Inf and NaN at the image's edges: padding taps must add nothing (not 0 * Inf); TF's filter has no 0
    x = R([1, 4, 5, 16])
    x[0, 0, 0, :] = inf
    x[0, 3, 4, :8] = nan
    x[0, 3, 4, 8:] = -inf
    x[0, 1, 2, 3] = -0.0
    f = R([3, 3, 16, 1], lo=1, hi=9)
    for s in (1, 2):
        case("dw inf nan edges s%d" % s, "DepthwiseConv2dNative", [("input", x), ("filter", f)], dw_attrs(s, "SAME"))
    # fused with a bias and Relu / Relu6 (or nothing): TF's remapper's op, TF's answer composed
    for n, h, w, c, s, pad, act in ((1, 1, 1, 17, 1, "SAME", "Relu6"), (1, 2, 2, 33, 2, "SAME", "Relu6"),
                                    (1, 3, 3, 15, 2, "VALID", "Relu"), (1, 17, 5, 31, 2, "SAME", "Relu6"),
                                    (2, 3, 4, 65, 1, "SAME", ""), (1, 1, 9, 16, 2, "SAME", "Relu"),
                                    (1, 4, 5, 16, 1, "SAME", "Relu6"), (0, 3, 3, 16, 1, "SAME", "Relu6")):
        xi, fi, bi = R([n, h, w, c]) * 4, R([3, 3, c, 1]), R([c]) * 4
        if n and h * w >= 4:
            xi.reshape(-1)[5] = nan  # NaN through Relu / Relu6 stays NaN in TF
        y = tf.nn.bias_add(tf.raw_ops.DepthwiseConv2dNative(input=xi, filter=fi, strides=[1, s, s, 1], padding=pad), bi)
        y = tf.nn.relu6(y) if act == "Relu6" else tf.nn.relu(y) if act == "Relu" else y
        ops = " ".join('s: "%s"' % o for o in ["BiasAdd"] + ([act] if act else []))
        node = ('op: "_FusedDepthwiseConv2dNative" attr { key: "T" value { type: DT_FLOAT } } '
                'attr { key: "strides" value { list { i: 1 i: %d i: %d i: 1 } } } attr { key: "padding" value { s: "%s" } } '
                'attr { key: "dilations" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: "fused_ops" value { list { %s } } } '
                'attr { key: "num_args" value { i: 1 } } attr { key: "TArgs" value { list { type: DT_FLOAT } } }'
                % (s, s, pad, ops))
        raw("fused dw %dx%dx%dx%d s%d %s %s" % (n, h, w, c, s, pad, act or "none"), node, [xi, fi, bi], [y])

    # NaN through the fused activations of _FusedConv2D and _FusedMatMul (oneDNN's post-ops, the own
    # epilogues): TF's Relu / Relu6 / LeakyRelu / Elu keep NaN (Inf goes to 6 or 0 as usual)
    acts = {"Relu": tf.nn.relu, "Relu6": tf.nn.relu6, "LeakyRelu": lambda v: tf.nn.leaky_relu(v, 0.2), "Elu": tf.nn.elu,
            "Sigmoid": tf.sigmoid, "Tanh": tf.tanh, "_MklSwish": lambda v: v * tf.sigmoid(v)}
    for n, h, w, c, k, co in ((1, 4, 4, 16, 3, 8), (1, 2, 2, 64, 1, 32), (2, 5, 5, 3, 3, 17)):
        xi, fi, bi = R([n, h, w, c]), R([k, k, c, co]), R([co])
        xi[0, 1, 1, :] = nan
        xi[-1, -1, -1, 0] = inf
        conv = tf.nn.bias_add(tf.raw_ops.Conv2D(input=xi, filter=fi, strides=[1, 1, 1, 1], padding="SAME"), bi)
        for act, fn in acts.items():
            node = ('op: "_FusedConv2D" attr { key: "T" value { type: DT_FLOAT } } '
                    'attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: "padding" value { s: "SAME" } } '
                    'attr { key: "dilations" value { list { i: 1 i: 1 i: 1 i: 1 } } } '
                    'attr { key: "fused_ops" value { list { s: "BiasAdd" s: "%s" } } } attr { key: "num_args" value { i: 1 } } '
                    'attr { key: "leakyrelu_alpha" value { f: 0.2 } } attr { key: "TArgs" value { list { type: DT_FLOAT } } }'
                    % act)
            raw("fused conv nan %dx%dx%dx%d k%d co%d %s" % (n, h, w, c, k, co, act), node, [xi, fi, bi], [fn(conv)])
    for m, k, nn in ((1, 16, 8), (4, 64, 33), (1, 300, 3)):
        a, b, bias = R([m, k]), R([k, nn]), R([nn])
        a[0, 3] = nan
        a[-1, 5] = inf
        z = tf.nn.bias_add(tf.matmul(a, b), bias)
        for act, fn in acts.items():
            node = ('op: "_FusedMatMul" attr { key: "T" value { type: DT_FLOAT } } attr { key: "fused_ops" value { list { '
                    's: "BiasAdd" s: "%s" } } } attr { key: "num_args" value { i: 1 } } attr { key: "transpose_a" value { b: false } } '
                    'attr { key: "transpose_b" value { b: false } } attr { key: "epsilon" value { f: 0 } } '
                    'attr { key: "leakyrelu_alpha" value { f: 0.2 } }' % act)
            raw("fused matmul nan %dx%dx%d %s" % (m, k, nn, act), node, [a, b, bias], [fn(z)])


# ---- binary ops: row tiles, broadcasting -------------------------------------------------------
def binary():
    pairs = [  # x shape, y shape
        ([2, 3, 4, 17], [1, 1, 17]), ([2, 3, 4, 17], [17]), ([1, 1, 17], [2, 3, 4, 17]), ([2, 3, 4, 3], [2, 1, 1, 3]),
        ([2, 1, 1, 3], [2, 3, 4, 3]), ([3, 5, 1], [1, 1]), ([3, 5, 65], [1, 65]), ([1, 7, 3], [1, 3]), ([2, 100, 3], [1, 1, 3]),
        ([2, 3, 1, 2, 5], [1, 3, 4, 1, 5]), ([0, 3], [3]), ([2, 0, 3], [2, 1, 3]),
        ([2, 3], [0, 1, 3]), ([], [2, 3]), ([2, 3], []), ([4, 1, 16], [1, 5, 16]),
    ]
    for op in ("Add", "Sub", "Mul", "RealDiv", "Maximum"):
        for xs, ys in pairs:
            y = R(ys)
            if op == "RealDiv":
                y[y == 0] = 0.5
            case("%s %s %s" % (op, xs, ys), op, [("x", R(xs)), ("y", y)])
        # rank 6 broadcast both ways: TF 2.21's kernels stop at 5 ("not supported yet"); its answer
        # over the operands broadcast first (numpy: TF's BroadcastTo stops at 5 too)
        xs, ys = [2, 1, 3, 1, 2, 3], [1, 2, 1, 4, 1, 3]
        x6, y6 = R(xs), R(ys, lo=1)
        full = [2, 2, 3, 4, 2, 3]
        z = getattr(tf.raw_ops, op)(x=np.broadcast_to(x6, full).copy(), y=np.broadcast_to(y6, full).copy())
        raw("%s rank 6 %s %s" % (op, xs, ys), 'op: "%s" attr { key: "T" value { type: DT_FLOAT } }' % op, [x6, y6], [z])
    # rows of 8196, 6000 and 4096 bytes: a tile holds 0, 1 or 2 of them
    for op, xs, ys in (("Add", [2, 2049], [2049]), ("RealDiv", [2, 1500], [1, 1500]), ("Sub", [3, 1024], [1024])):
        case("%s %s %s" % (op, xs, ys), op, [("x", R(xs)), ("y", R(ys, lo=1))])
    for dt, tfdt in ((np.int32, "i32"), (np.int64, "i64"), (np.float64, "f64")):
        for xs, ys in (([3, 5, 7], [7]), ([2, 4, 3], [2, 1, 3]), ([2, 1030], [1030]), ([1, 5], [4, 3, 5])):
            for op in ("Add", "Sub", "Mul") if xs[-1] < 1000 else ("Sub",):
                case("%s %s %s %s" % (op, tfdt, xs, ys), op, [("x", R(xs, dt)), ("y", R(ys, dt))])
    # the tiles for every element size: 1 (int8, uint8, bool-free), 2 (half, bfloat16, int16), 8, 16 (complex128)
    for dt in (tf.int8, tf.uint8, tf.int16, tf.float16, tf.bfloat16, tf.complex64, tf.complex128, tf.uint32):
        for xs, ys in (([2, 3, 17], [17]), ([1, 4, 1], [3, 1, 1]), ([2, 4100], [4100])):
            if xs[-1] > 100 and dt not in (tf.int8, tf.float16):  # rows of 4100 and 8200 bytes
                continue
            lo, hi = (0, 9) if dt in (tf.uint8, tf.uint32) else (-9, 9)
            xv, yv = np.asarray(RNG.randint(lo, hi, xs)), np.asarray(RNG.randint(lo, hi, ys))
            op = "Mul" if dt.is_integer else "AddV2"
            case("%s %s %s %s" % (op, dt.name, xs, ys), op, [("x", tf.cast(xv, dt)), ("y", tf.cast(yv, dt))])
    # division by +-0, NaN and Inf through a tiled row (IEEE in TF)
    x = np.array([[1.0, -1.0, 0.0, nan, inf, -inf, 2.5, -0.0]] * 6, np.float32).reshape(2, 3, 8)
    y = np.array([0.0, 0.0, 0.0, 1.0, -0.0, inf, -inf, 0.0], np.float32)
    for op in ("RealDiv", "Mul", "Add", "Sub", "Maximum", "Minimum"):
        case("%s ieee tiled" % op, op, [("x", x), ("y", y)])
        case("%s ieee tiled swapped" % op, op, [("x", y.reshape(1, 8)), ("y", x)])
    case("Add err shapes rank 6", "Add", [("x", R([2, 1, 3, 1, 2, 3])), ("y", R([1, 2, 1, 4, 1, 2]))])


# ---- exp and friends ---------------------------------------------------------------------------
EDGE = [0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-38, 1.0, -1.0, 0.5, 20.0, -20.0, 88.0, 88.72, 88.73, 89.0,
        -87.3, -87.34, -88.0, -100.0, -103.9, -103.98, -104.0, -110.0, 1e30, -1e30, 3.4e38, -3.4e38, inf, -inf, nan,
        15.9, -15.9, 9.0, -9.0, 40.0, -40.0]


def exp_like():
    x = np.array(EDGE, np.float32)
    for op in ("Exp", "Sigmoid", "Tanh", "Elu", "Selu", "Softplus", "Expm1"):
        case("%s edges" % op, op, [("x" if op in ("Exp", "Sigmoid", "Tanh", "Expm1") else "features", x)])
    # 16-lane vectors and their tails: 1, 17, 33 elements
    for n in (1, 17, 33):
        case("Exp %d" % n, "Exp", [("x", np.array((EDGE * 2)[:n], np.float32))])
    for dt in (tf.float16, tf.bfloat16):
        case("Exp %s" % dt.name, "Exp", [("x", tf.cast(np.array([0, -0.0, 1, -1, 10, 11.1, 12, -17, -18, 90, inf, -inf, nan],
                                                                np.float32), dt))])
        case("Sigmoid %s" % dt.name, "Sigmoid", [("x", tf.cast(x, dt))])
    rows = [[0.0, 1.0, 2.0], [-inf, 0.0, 1.0], [inf, 0.0, 1.0], [nan, 0.0, 1.0], [-inf, -inf, -inf], [inf, inf, 0.0],
            [1e30, -1e30, 0.0], [88.0, 89.0, 90.0], [-100.0, -104.0, -110.0], [-0.0, 0.0, -0.0], [1e-45, -1e-45, 0.0],
            [3.4e38, 3.4e38, -3.4e38]]
    for op in ("Softmax", "LogSoftmax"):
        case("%s edge rows" % op, op, [("logits", np.array(rows, np.float32))])
        for n in (1, 17, 33, 65):
            v = R([3, n]) * 8
            if n > 1:
                v[1, n // 2] = inf
                v[2, 0] = -inf
            case("%s rows of %d" % (op, n), op, [("logits", v)])
        case("%s 0 rows" % op, op, [("logits", np.zeros([0, 5], np.float32))])
        case("%s rows of 0" % op, op, [("logits", np.zeros([5, 0], np.float32))])
        case("%s half" % op, op, [("logits", tf.cast(np.array(rows[:3] + rows[7:9], np.float32), tf.float16))])
    # swish fused into a MatMul: x * sigmoid(x) on the product plus bias (TF's remapper op _FusedMatMul)
    a = np.array([EDGE], np.float32)  # [1, 36]
    b = np.eye(36, dtype=np.float32)
    bias = np.zeros([36], np.float32)
    z = tf.nn.bias_add(tf.matmul(a, b), bias)
    node = ('op: "_FusedMatMul" attr { key: "T" value { type: DT_FLOAT } } attr { key: "fused_ops" value { list { '
            's: "BiasAdd" s: "%s" } } } attr { key: "num_args" value { i: 1 } } attr { key: "transpose_a" value { b: false } } '
            'attr { key: "transpose_b" value { b: false } } attr { key: "epsilon" value { f: 0 } }')
    raw("fused matmul swish edges", node % "_MklSwish", [a, b, bias], [z * tf.sigmoid(z)])
    raw("fused matmul sigmoid edges", node % "Sigmoid", [a, b, bias], [tf.sigmoid(z)])


# ---- Sum / Mean ---------------------------------------------------------------------------------
def reduce():
    for op in ("Sum", "Mean"):
        for shape, axes, keep in (([5, 70], [0], False), ([3, 5, 80], [1], True), ([3, 5, 80], [1], False),
                                  ([2, 7, 130], [-2], False), ([4, 3, 64], [0, 1], False), ([4, 3, 17], [1], True),
                                  ([3, 1, 70], [1], False), ([3, 1, 70], [1], True), ([1, 1, 70], [0, 1], True),
                                  ([3, 0, 70], [1], False), ([3, 0, 70], [1], True), ([0, 70], [0], False),
                                  ([3, 0, 70], [2], False), ([24, 130], [0], False), ([2, 5, 5, 48], [1, 2], True),
                                  ([6, 96], [0], False), ([2, 3, 4], [], False)):
            case("%s %s axes %s keep %s" % (op, shape, axes, keep), op,
                 [("input", R(shape)), ("reduction_indices", np.array(axes, np.int32))], {"keep_dims": keep})
        # signed zeros (test_ops_edge checks the sign of each 0): TF's sums start from +0
        for shape, axes in (([3, 70], [0]), ([3, 70], [1]), ([2, 3, 40], [1]), ([1, 70], [0]), ([3, 1, 70], [0, 1])):
            v = np.full(shape, -0.0, np.float32)
            v.reshape(-1)[::7] = 0.0 if shape[0] > 1 else -0.0
            case("%s %s axes %s signed zero" % (op, shape, axes), op, [("input", v), ("reduction_indices", np.array(axes, np.int32))])
        for dt in (tf.float16, tf.bfloat16, tf.float64):  # half widened to float: the AVX-512 loop
            for shape, axes in (([6, 70], [0]), ([2, 5, 33], [1])):
                case("%s %s %s axes %s" % (op, dt.name, shape, axes), op,
                     [("input", tf.cast(R(shape), dt)), ("reduction_indices", np.array(axes, np.int32))])
        v = R([4, 70])
        v[1, 3] = nan
        v[2, 65] = inf
        v[0, 66] = inf
        v[3, 66] = -inf
        v[1, 67] = 3e38
        v[2, 67] = 3e38
        v[0, 10] = 1e-45
        case("%s ieee columns" % op, op, [("input", v), ("reduction_indices", np.array([0], np.int32))])
        for dt in (np.int32, np.int64):
            for shape, axes in (([5, 70], [0]), ([3, 0, 70], [1]), ([3, 4, 65], [1])):
                case("%s %s %s axes %s" % (op, dt.__name__, shape, axes), op,
                     [("input", R(shape, dt, -1000, 1000)), ("reduction_indices", np.array(axes, np.int32))])
        big = np.full([3, 70], 2**31 - 10, np.int32)
        case("%s int32 wraps" % op, op, [("input", big), ("reduction_indices", np.array([0], np.int32))])
        case("%s err axis" % op, op, [("input", R([3, 70])), ("reduction_indices", np.array([2], np.int32))])


# ---- Dense / MatMul ----------------------------------------------------------------------------
def matmul():
    for a, b in (([1, 8], [8, 0]), ([0, 8], [8, 5]), ([1, 0], [0, 5]), ([3, 0], [0, 0]), ([1, 300], [300, 1]),
                 ([1, 1], [1, 100]), ([1, 513], [513, 3]), ([1, 16], [16, 65])):
        case("MatMul %s %s" % (a, b), "MatMul", [("a", R(a)), ("b", R(b))])
    a, b, bias = R([1, 40]), R([40, 0]), R([0])
    node = ('op: "_FusedMatMul" attr { key: "T" value { type: DT_FLOAT } } attr { key: "fused_ops" value { list { '
            's: "BiasAdd" s: "Relu" } } } attr { key: "num_args" value { i: 1 } } attr { key: "transpose_a" value { b: false } } '
            'attr { key: "transpose_b" value { b: false } } attr { key: "epsilon" value { f: 0 } }')
    raw("fused Dense 0 units", node, [a, b, bias], [tf.nn.relu(tf.nn.bias_add(tf.matmul(a, b), bias))])
    a, b, bias = R([1, 200]), R([200, 3]), R([3])
    raw("fused Dense narrow b1", node, [a, b, bias], [tf.nn.relu(tf.nn.bias_add(tf.matmul(a, b), bias))])


# ---- FusedBatchNormV3, inference ---------------------------------------------------------------
def batchnorm():
    x = R([2, 3, 3, 4])
    x[0, 0, 0, 0] = nan
    sc, off, mean = R([4]), R([4]), R([4])
    for name, var, eps in (("eps 0", R([4], lo=1), 0.0), ("var 0", np.zeros([4], np.float32), 0.001),
                           ("var 0 eps 0", np.array([0, 1, 0, 2], np.float32), 0.0),
                           ("var negative", np.array([-1, 1, -0.001, 2], np.float32), 0.001),
                           ("var -eps", np.array([-0.001, 1, -0.0005, 2], np.float32), 0.001)):
        case("FusedBatchNormV3 %s" % name, "FusedBatchNormV3",
             [("x", x), ("scale", sc), ("offset", off), ("mean", mean), ("variance", var)],
             {"is_training": False, "epsilon": eps})
        n, node, flat, outs, err = g.CASES[-1]
        g.CASES[-1] = (n, node, flat, outs[:1], err)  # y; the others pass mean and variance through


# ---- denormals: TF flushes them (FTZ + DAZ around every kernel) --------------------------------
DN = np.random.RandomState(1616)  # its own stream: the cases above keep their values


def denormals():
    """Subnormal inputs and results where flushing changes the answer beyond any tolerance (a
    division, an rsqrt, a log) or only its class (0 against 1.4e-45; test_ops_edge checks that
    every TF zero is 0 here and subnormals sit where TF's do)."""
    # 16 elements: TF's Eigen reaches every one in a packet (its scalar tail answers differently for
    # Sign, Expm1, Log and Log1p of a subnormal: libm normalises it in software)
    sub = np.array([1e-40, -1e-40, 1e-45, -3e-39, 1.1e-38, 1.2e-38, -1.2e-38, 0.0] * 2, np.float32)
    one = np.ones([16], np.float32)
    for op in ("Mul", "Add", "Sub", "RealDiv", "Maximum", "Minimum"):
        case("%s denormal" % op, op, [("x", sub), ("y", one if op in ("Mul", "RealDiv") else sub[::-1].copy())])
    case("RealDiv by denormal", "RealDiv", [("x", np.array([1e-10, -1, 0, 3e-39, 1e-45, 2], np.float32)),
                                            ("y", np.array([1e-40, 1e-45, 1e-40, 1.0, 1e-45, -3e-39], np.float32))])
    case("Mul to denormal", "Mul", [("x", np.array([1e-20, 3e-20, -1e-19, 1e-30, 2e-38], np.float32)),
                                    ("y", np.array([1e-20, 1e-19, 1e-20, 1e-10, 0.5], np.float32))])
    for op in ("Rsqrt", "Sqrt", "Log", "Reciprocal", "Square", "Neg", "Abs", "Sign", "Floor"):
        case("%s denormal" % op, op, [("x", sub)])
    for op in ("Exp", "Sigmoid", "Tanh", "Expm1", "Log1p", "Softplus", "Elu", "Selu"):
        case("%s denormal" % op, op, [("x" if op not in ("Softplus", "Elu", "Selu") else "features",
                                       np.array([1e-40, -1e-40, -87.5, -95.0, -103.0, 1.1e-38, -1.1e-38, 0.5] * 2,
                                                np.float32))])
    x64 = np.array([1e-310, -1e-310, 1e-320, 5e-324, 1e-300, 0.0], np.float64)
    case("Mul double denormal", "Mul", [("x", x64), ("y", np.full([6], 1e-10, np.float64))])
    case("RealDiv double by denormal", "RealDiv", [("x", np.ones([6], np.float64)), ("y", x64)])
    case("Cast double to float denormal", "Cast", [("x", np.array([1e-39, -1e-41, 1e-46, 2e-38], np.float64))],
         {"DstT": tf.float32})
    case("Cast float to double denormal", "Cast", [("x", sub)], {"DstT": tf.float64})
    for op in ("Sum", "Mean"):
        v = np.full([70, 70], 1e-40, np.float32)
        v[:, 5] = 2e-38
        v[:, 6] = 1.0
        for axes in ([0], [1]):
            case("%s denormal axes %s" % (op, axes), op, [("input", v), ("reduction_indices", np.array(axes, np.int32))])
    for op in ("Softmax", "LogSoftmax"):
        case("%s denormal rows" % op, op, [("logits", np.array([[0.0, -104.0, -88.0], [1e-40, -1e-40, 0.0],
                                                                [-87.5, 0.0, -90.0]], np.float32))])
    a = np.full([3, 20], 1e-20, np.float32)
    a[1] = 1e-40
    b = np.full([20, 4], 1e-20, np.float32)
    b[:, 1] = 1.0
    case("MatMul denormal", "MatMul", [("a", a), ("b", b)])
    case("MatMul denormal narrow", "MatMul", [("a", a[:1]), ("b", b)])
    # convolutions (oneDNN's, and the own 3x3 depthwise): products of 1e-20 * 1e-20 and subnormal inputs
    x = np.full([1, 5, 5, 16], 1e-20, np.float32)
    x[0, 2, :, :] = 1e-40
    x[0, 3, :, :8] = 1.0
    f = (DN.randint(1, 9, size=[3, 3, 16, 1]) / 8.0 * 1e-20).astype(np.float32)
    for s_ in (1, 2):
        case("dw denormal s%d" % s_, "DepthwiseConv2dNative", [("input", x), ("filter", f)], dw_attrs(s_, "SAME"))
    fc = (DN.randint(1, 9, size=[3, 3, 16, 8]) / 8.0 * 1e-20).astype(np.float32)
    case("Conv2D denormal", "Conv2D", [("input", x), ("filter", fc)], {"strides": [1, 1, 1, 1], "padding": "SAME"})
    bias = np.full([8], 1e-40, np.float32)
    conv = tf.nn.bias_add(tf.raw_ops.Conv2D(input=x, filter=fc, strides=[1, 1, 1, 1], padding="SAME"), bias)
    node = ('op: "_FusedConv2D" attr { key: "T" value { type: DT_FLOAT } } '
            'attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: "padding" value { s: "SAME" } } '
            'attr { key: "dilations" value { list { i: 1 i: 1 i: 1 i: 1 } } } '
            'attr { key: "fused_ops" value { list { s: "BiasAdd" s: "Relu6" } } } attr { key: "num_args" value { i: 1 } } '
            'attr { key: "TArgs" value { list { type: DT_FLOAT } } }')
    raw("fused conv denormal Relu6", node, [x, fc, bias], [tf.nn.relu6(conv)])
    # BatchNorm: a variance of 1e-38 or 1e-40 with epsilon 0 is rsqrt(0) = Inf in TF
    xb = R([2, 3, 3, 4])
    for name, var in (("denormal var 1e-38 eps 0", np.array([1e-38, 1, 1e-40, 2], np.float32)),
                      ("denormal var 2e-38 eps 0", np.array([2e-38, 1, 1e-30, 2], np.float32))):
        case("FusedBatchNormV3 %s" % name, "FusedBatchNormV3",
             [("x", xb), ("scale", np.array([1, 2, 0.5, 1], np.float32)), ("offset", np.zeros([4], np.float32)),
              ("mean", np.array([0.125, 0, 0.25, 0], np.float32)), ("variance", var)],
             {"is_training": False, "epsilon": 0.0})
        n, node_, flat, outs, err = g.CASES[-1]
        g.CASES[-1] = (n, node_, flat, outs[:1], err)


def main():
    depthwise()
    binary()
    exp_like()
    reduce()
    matmul()
    batchnorm()
    denormals()
    g.write_unit_header("edge_cases")


if __name__ == "__main__":
    main()
