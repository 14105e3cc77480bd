#!/usr/bin/env python3
"""gen_e2_cases.py - writes tests/unit/e2_cases.h: the convolution, pooling and normalization
gradient ops (session 20, e2) against TensorFlow 2.21 (eager tf.raw_ops, TF's CPU kernels):
Conv2D/Conv3D filter and input gradients (V1 and V2 forms), the depthwise ones, Max/Avg pool
gradients (2-D, 3-D, V2, second order, with argmax), FusedBatchNormGrad V1/V2/V3 (is_training both
ways), BatchNormWithGlobalNormalization and its Grad, LRNGrad, Dilation2D's backprops and the
fractional pools' gradients; every dtype TF's CPU kernels register, strides, paddings, dilations,
NCHW where TF's CPU takes it (TF's error where it refuses), empty tensors, bad shapes.

Uses the machinery of tools/gen_array_cases.py. test_ops_e2 compares floats within 1e-5 relative.
Run: build/venv/bin/python tools/gen_e2_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

A = g.A


def case(name, op, inputs, attrs=None, **kw):
    try:
        g.case(name, op, inputs, attrs, **kw)
    except tf.errors.OpError as e:  # an error class gen_array_cases does not record: left out, said
        print("skipped %s: %s" % (name, g.tf_error_text(e)))


def bf16_ref(op, inputs, attrs):
    """TF's bfloat16 convolution gradients add partial sums in bfloat16 (up to a few per cent off the
    exact sum); ours widen to float as its half kernels do. So the last case (op on inputs, or the
    V2 form case_v2 made from it) takes TF's float result on the same bfloat16-valued inputs,
    rounded to bfloat16 once."""
    nm, node, flat, outs, err = g.CASES[-1]
    if err:
        return
    fin = [(k, tf.cast(v, tf.float32) if tf.convert_to_tensor(v).dtype == tf.bfloat16 else v) for k, v in inputs]
    case("tmp", op, fin, attrs)
    _, _, _, fo, fe = g.CASES.pop()
    if not fe:
        g.CASES[-1] = (nm + " [via f32]", node, flat, [tf.cast(o, tf.bfloat16) for o in fo], None)


def case_v2(name, op, op1, inputs, inputs1, attrs):
    """op (TF has no CPU kernel for it: Conv2DBackpropFilterV2, Conv2DBackpropInputV2) checked
    against TF's op1 on inputs1, the same computation with a shape vector for a tensor."""
    n = len(g.CASES)
    case(name, op1, inputs1, attrs)
    if len(g.CASES) == n:
        return
    nm, node, flat, outs, err = g.CASES[-1]
    ins = [tf.convert_to_tensor(v) for _, v in inputs]
    g.CASES[-1] = (name, node.replace('op: "%s"' % op1, 'op: "%s"' % op, 1), ins, outs, err)
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
rng = np.random.default_rng(20)
FLOATS = (f32, f64, np.float16, tf.bfloat16)


def dname(dt):
    return dt.name if dt is tf.bfloat16 else np.dtype(dt).name


def U(*shape, dt=f32, lo=-1.0, hi=1.0):
    """Uniform values as a tensor (raw_ops convert a numpy input to the attr's default dtype)."""
    a = rng.uniform(lo, hi, shape)
    if dt is tf.bfloat16:
        return tf.constant(a.astype(f32), tf.bfloat16)
    return tf.constant(a.astype(dt))


def cast(a, dt):
    if dt is tf.bfloat16:
        return tf.constant(np.asarray(a, f32), tf.bfloat16)
    return tf.constant(np.asarray(a).astype(dt))


def case_old(name, op, inputs, attrs, nout, producer=8, err_needle=None):
    """An op TF removed from new graphs (BatchNormWithGlobalNormalization[Grad]: version 9,
    Conv3DBackpropFilter/Input: version 10; eager refuses them) run as TF runs it in an old graph:
    a GraphDef of that producer version in a TF1 session."""
    from tensorflow.core.framework import graph_pb2
    gd = graph_pb2.GraphDef()
    gd.versions.producer = producer
    ts = [tf.convert_to_tensor(v) for _, v in inputs]
    for i, t in enumerate(ts):
        n = gd.node.add()
        n.name, n.op = "i%d" % i, "Placeholder"
        n.attr["dtype"].type = t.dtype.as_datatype_enum
    n = gd.node.add()
    n.name, n.op = "y", op
    n.input.extend("i%d" % i for i in range(len(ts)))
    at = dict(attrs, T=ts[0].dtype)
    for k, v in at.items():
        if isinstance(v, tf.dtypes.DType):
            n.attr[k].type = v.as_datatype_enum
        elif isinstance(v, bool):
            n.attr[k].b = v
        elif isinstance(v, float):
            n.attr[k].f = v
        elif isinstance(v, str):
            n.attr[k].s = v.encode()
        else:
            n.attr[k].list.i.extend(v)
    gr = tf.Graph()
    with gr.as_default():
        tf.graph_util.import_graph_def(gd, name="")
    err, r = None, []
    feed = {"i%d:0" % i: t.numpy() for i, t in enumerate(ts)}
    with tf.compat.v1.Session(graph=gr) as sess:  # (it makes gr the default graph: constants after)
        try:
            r = sess.run(["y:%d" % i for i in range(nout)], feed)
        except tf.errors.OpError as e:
            err = err_needle or g.tf_error_text(e)
    outs = [tf.constant(o, dtype=ts[-1].dtype) for o in r]
    node = 'op: "%s" %s' % (op, " ".join(g.attr_text(k, v) for k, v in sorted(at.items())))
    g.CASES.append((name, node, ts, outs, err))


def out_shape(fn):
    return list(fn().shape)


# ---- convolutions -----------------------------------------------------------------------------
def conv2d():
    geos = [  # x shape (NHWC), filter, strides, padding, explicit, dilations
        ([2, 5, 6, 3], [3, 3, 3, 4], [1, 1, 1, 1], "VALID", None, [1, 1, 1, 1]),
        ([2, 5, 6, 3], [3, 3, 3, 4], [1, 2, 2, 1], "SAME", None, [1, 1, 1, 1]),
        ([1, 7, 5, 2], [2, 3, 2, 3], [1, 2, 1, 1], "SAME", None, [1, 1, 1, 1]),
        ([1, 6, 6, 2], [3, 2, 2, 2], [1, 1, 1, 1], "EXPLICIT", [0, 0, 1, 2, 0, 1, 0, 0], [1, 1, 1, 1]),
        ([1, 7, 7, 2], [3, 3, 2, 2], [1, 1, 1, 1], "SAME", None, [1, 2, 2, 1]),
        ([2, 4, 4, 1], [1, 1, 1, 5], [1, 3, 3, 1], "VALID", None, [1, 1, 1, 1]),
    ]
    for gi, (xs, fs, st, pad, ep, dil) in enumerate(geos):
        attrs = {"strides": st, "padding": pad, "dilations": dil}
        if ep:
            attrs["explicit_paddings"] = ep
        ys = out_shape(lambda: tf.raw_ops.Conv2D(input=np.zeros(xs, f32), filter=np.zeros(fs, f32), **attrs))
        for dt in FLOATS if gi < 2 else (f32, f64):
            x, f, dy = U(*xs, dt=dt), U(*fs, dt=dt), U(*ys, dt=dt)
            nm = "%s geo%d %s" % (dname(dt), gi, pad)
            bf = dt is tf.bfloat16
            fin = [("input", x), ("filter_sizes", A(fs, i32)), ("out_backprop", dy)]
            case("Conv2DBackpropFilter " + nm, "Conv2DBackpropFilter", fin, attrs)
            bf and bf16_ref("Conv2DBackpropFilter", fin, attrs)
            case_v2("Conv2DBackpropFilterV2 " + nm, "Conv2DBackpropFilterV2", "Conv2DBackpropFilter",
                    [("input", x), ("filter", f), ("out_backprop", dy)], fin, attrs)
            bf and bf16_ref("Conv2DBackpropFilter", fin, attrs)
            if gi != 4:  # dilated: TF's Conv2DBackpropInput refuses, nn_conv_transpose.c computes it (test_ops_conv_transpose)
                iin = [("input_sizes", A(xs, i32)), ("filter", f), ("out_backprop", dy)]
                case_v2("Conv2DBackpropInputV2 " + nm, "Conv2DBackpropInputV2", "Conv2DBackpropInput",
                        [("input", x), ("filter", f), ("out_backprop", dy)], iin, attrs)
                bf and bf16_ref("Conv2DBackpropInput", iin, attrs)
        # NCHW (TF's CPU kernel answers or refuses)
        if pad != "EXPLICIT":
            tr = lambda a: np.transpose(a, (0, 3, 1, 2))  # noqa: E731
            x, dy = U(*xs), U(*ys)
            na = dict(attrs, data_format="NCHW", strides=[st[0], st[3], st[1], st[2]], dilations=[1, 1, dil[1], dil[2]])
            case("Conv2DBackpropFilter NCHW geo%d" % gi, "Conv2DBackpropFilter",
                 [("input", tr(x)), ("filter_sizes", A(fs, i32)), ("out_backprop", tr(dy))], na)
    # the shape vector as int64; errors
    x, dy = U(1, 4, 4, 2), U(1, 2, 2, 3)
    base = {"strides": [1, 1, 1, 1], "padding": "VALID"}
    case("Conv2DBackpropFilter sizes int64", "Conv2DBackpropFilter",
         [("input", x), ("filter_sizes", A([3, 3, 2, 3], i32)), ("out_backprop", dy)], base)
    case("Conv2DBackpropFilter err out size", "Conv2DBackpropFilter",
         [("input", x), ("filter_sizes", A([2, 2, 2, 3], i32)), ("out_backprop", dy)], base, err_needle="Size of out_backprop doesn't match computed")
    case("Conv2DBackpropFilter err depth", "Conv2DBackpropFilter",
         [("input", x), ("filter_sizes", A([3, 3, 4, 3], i32)), ("out_backprop", dy)], base, err_needle="depth")
    case("Conv2DBackpropFilter err sizes len", "Conv2DBackpropFilter",
         [("input", x), ("filter_sizes", A([3, 3, 2], i32)), ("out_backprop", dy)], base, err_needle="filter_sizes")
    case("Conv2DBackpropFilter err batch", "Conv2DBackpropFilter",
         [("input", U(2, 4, 4, 2)), ("filter_sizes", A([3, 3, 2, 3], i32)), ("out_backprop", dy)], base, err_needle="batch")
    case("Conv2DBackpropFilter empty batch", "Conv2DBackpropFilter",
         [("input", np.zeros([0, 4, 4, 2], f32)), ("filter_sizes", A([3, 3, 2, 3], i32)), ("out_backprop", np.zeros([0, 2, 2, 3], f32))], base)
    case("Conv2DBackpropFilter empty out channels", "Conv2DBackpropFilter",
         [("input", x), ("filter_sizes", A([3, 3, 2, 0], i32)), ("out_backprop", np.zeros([1, 2, 2, 0], f32))], base)


def conv3d():
    geos = [([1, 4, 5, 4, 2], [2, 3, 2, 2, 3], [1, 1, 1, 1, 1], "VALID", [1, 1, 1, 1, 1]),
            ([2, 5, 4, 5, 1], [3, 2, 3, 1, 2], [1, 2, 1, 2, 1], "SAME", [1, 1, 1, 1, 1]),
            ([1, 5, 5, 5, 1], [2, 2, 2, 1, 1], [1, 1, 1, 1, 1], "SAME", [1, 2, 1, 2, 1])]
    for gi, (xs, fs, st, pad, dil) in enumerate(geos):
        attrs = {"strides": st, "padding": pad, "dilations": dil}
        if dil == [1, 1, 1, 1, 1]:
            ys = out_shape(lambda: tf.raw_ops.Conv3D(input=np.zeros(xs, f32), filter=np.zeros(fs, f32), **attrs))
        else:  # TF's CPU Conv3D refuses dilations; SAME, stride 1: the input's size
            ys = xs[:4] + [fs[4]]
        for dt in (f32, f64, np.float16, tf.bfloat16) if gi == 0 else (f32, f64):
            x, f, dy = U(*xs, dt=dt), U(*fs, dt=dt), U(*ys, dt=dt)
            nm = "%s geo%d %s" % (dname(dt), gi, pad)
            fin = [("input", x), ("filter_sizes", A(fs, i32)), ("out_backprop", dy)]
            case("Conv3DBackpropFilterV2 " + nm, "Conv3DBackpropFilterV2", fin, attrs)
            dt is tf.bfloat16 and bf16_ref("Conv3DBackpropFilterV2", fin, attrs)
            if dt is not tf.bfloat16 and gi != 2:  # the V1 ops' T: half, float, double
                a1 = dict(attrs, padding=pad)
                case_old("Conv3DBackpropFilter " + nm, "Conv3DBackpropFilter", [("input", x), ("filter", f), ("out_backprop", dy)], a1, 1, 9)
                case_old("Conv3DBackpropInput " + nm, "Conv3DBackpropInput", [("input", x), ("filter", f), ("out_backprop", dy)], a1, 1, 9)
    x, dy = U(1, 3, 3, 3, 1), U(1, 2, 2, 2, 1)
    case("Conv3DBackpropFilterV2 err out size", "Conv3DBackpropFilterV2",
         [("input", x), ("filter_sizes", A([1, 1, 1, 1, 1], i32)), ("out_backprop", dy)],
         {"strides": [1, 1, 1, 1, 1], "padding": "VALID"}, err_needle="Size of out_backprop doesn't match computed")
    case("Conv3DBackpropFilterV2 NCDHW", "Conv3DBackpropFilterV2",
         [("input", U(1, 2, 3, 3, 3)), ("filter_sizes", A([2, 2, 2, 2, 1], i32)), ("out_backprop", U(1, 1, 2, 2, 2))],
         {"strides": [1, 1, 1, 1, 1], "padding": "VALID", "data_format": "NCDHW"})


def depthwise():
    geos = [([2, 5, 6, 3], [3, 3, 3, 2], [1, 1, 1, 1], "VALID", None, [1, 1, 1, 1]),
            ([1, 6, 5, 2], [3, 2, 2, 1], [1, 2, 2, 1], "SAME", None, [1, 1, 1, 1]),
            ([1, 5, 5, 2], [2, 2, 2, 3], [1, 2, 2, 1], "EXPLICIT", [0, 0, 1, 1, 2, 0, 0, 0], [1, 1, 1, 1]),
            ([1, 5, 6, 2], [2, 2, 2, 1], [1, 1, 2, 1], "VALID", None, [1, 1, 1, 1]),
            ([1, 7, 7, 2], [3, 3, 2, 1], [1, 1, 1, 1], "SAME", None, [1, 2, 2, 1])]
    for gi, (xs, fs, st, pad, ep, dil) in enumerate(geos):
        attrs = {"strides": st, "padding": pad, "dilations": dil}
        if ep:
            attrs["explicit_paddings"] = ep
        if gi == 3:  # unequal strides: TF refuses (the gradients' messages are checked)
            ys = [1, 4, 3, 2]
        elif dil == [1, 1, 1, 1]:
            ys = out_shape(lambda: tf.raw_ops.DepthwiseConv2dNative(input=np.zeros(xs, f32), filter=np.zeros(fs, f32), **attrs))
        else:  # dilated SAME, stride 1: the input's size
            ys = xs[:3] + [fs[2] * fs[3]]
        for dt in FLOATS if gi < 2 else (f32, f64):
            x, f, dy = U(*xs, dt=dt), U(*fs, dt=dt), U(*ys, dt=dt)
            nm = "%s geo%d %s" % (dname(dt), gi, pad)
            case("DepthwiseConv2dNativeBackpropFilter " + nm, "DepthwiseConv2dNativeBackpropFilter",
                 [("input", x), ("filter_sizes", A(fs, i32)), ("out_backprop", dy)], attrs)
            case("DepthwiseConv2dNativeBackpropInput " + nm, "DepthwiseConv2dNativeBackpropInput",
                 [("input_sizes", A(xs, i32)), ("filter", f), ("out_backprop", dy)], attrs)
        if pad != "EXPLICIT":
            tr = lambda a: np.transpose(a, (0, 3, 1, 2))  # noqa: E731
            x, f, dy = U(*xs), U(*fs), U(*ys)
            na = dict(attrs, data_format="NCHW", strides=[1, 1, st[1], st[2]], dilations=[1, 1, dil[1], dil[2]])
            case("DepthwiseConv2dNativeBackpropFilter NCHW geo%d" % gi, "DepthwiseConv2dNativeBackpropFilter",
                 [("input", tr(x)), ("filter_sizes", A(fs, i32)), ("out_backprop", tr(dy))], na)
            case("DepthwiseConv2dNativeBackpropInput NCHW geo%d" % gi, "DepthwiseConv2dNativeBackpropInput",
                 [("input_sizes", A([xs[0], xs[3], xs[1], xs[2]], i32)), ("filter", f), ("out_backprop", tr(dy))], na)
    base = {"strides": [1, 1, 1, 1], "padding": "VALID"}
    case("DepthwiseConv2dNativeBackpropFilter err size", "DepthwiseConv2dNativeBackpropFilter",
         [("input", U(1, 4, 4, 2)), ("filter_sizes", A([3, 3, 2, 1], i32)), ("out_backprop", U(1, 3, 3, 2))], base,
         err_needle="Size of out_backprop doesn't match computed")
    case("DepthwiseConv2dNativeBackpropInput err depth", "DepthwiseConv2dNativeBackpropInput",
         [("input_sizes", A([1, 4, 4, 3], i32)), ("filter", U(3, 3, 2, 1)), ("out_backprop", U(1, 2, 2, 2))], base, err_needle="depth")


def gg_argmax(name, x, gx, am, attrs, bi):
    """MaxPoolGradGradWithArgmax has no CPU kernel in TF: its definition (out[i] = grad at argmax[i],
    of the batch's image unless include_batch_in_index), computed here from TF's MaxPoolWithArgmax."""
    a = am.numpy().astype(np.int64)
    n = a.shape[0]
    per = int(np.prod(np.shape(gx)[1:]))
    flat = a.reshape(n, -1) + (0 if bi else np.arange(n)[:, None] * per)
    gv = tf.convert_to_tensor(gx)
    want = tf.reshape(tf.gather(tf.reshape(gv, [-1]), flat.reshape(-1)), a.shape)
    at = dict(attrs, T=gv.dtype, Targmax=am.dtype)
    node = 'op: "MaxPoolGradGradWithArgmax" %s' % " ".join(g.attr_text(k, v) for k, v in sorted(at.items()))
    g.CASES.append((name, node, [tf.convert_to_tensor(x), gv, am], [want], None))


# ---- pools -------------------------------------------------------------------------------------
def pools():
    geos = [([2, 5, 6, 3], [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
            ([1, 5, 7, 2], [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
            ([1, 4, 4, 2], [1, 3, 2, 1], [1, 1, 1, 1], "SAME")]
    for gi, (xs, k, st, pad) in enumerate(geos):
        attrs = {"ksize": k, "strides": st, "padding": pad}
        for dt in (f32, f64, np.float16, tf.bfloat16, i32, i64, np.int8, np.uint8, np.int16, np.uint16) if gi == 0 else (f32, f64):
            if dt in (f32, f64, np.float16, tf.bfloat16):
                x = U(*xs, dt=dt)
            else:
                x = tf.constant(rng.permutation(np.arange(np.prod(xs))).reshape(xs).astype(dt) % 100)
            y = tf.raw_ops.MaxPool(input=x, **attrs) if dt in (f32, f64, np.float16, tf.bfloat16, i32, i64, np.int8, np.uint8, np.int16, np.uint16) else None
            dy = cast(rng.integers(-5, 6, list(y.shape)), dt)
            nm = "%s geo%d %s" % (dname(dt), gi, pad)
            case("MaxPoolGrad " + nm, "MaxPoolGrad", [("orig_input", x), ("orig_output", y), ("grad", dy)], attrs)
            gx = cast(rng.integers(-5, 6, xs), dt)
            case("MaxPoolGradGrad " + nm, "MaxPoolGradGrad", [("orig_input", x), ("orig_output", y), ("grad", gx)], attrs)
            case("MaxPoolGradV2 " + nm, "MaxPoolGradV2",
                 [("orig_input", x), ("orig_output", y), ("grad", dy), ("ksize", A(k, i32)), ("strides", A(st, i32))], {"padding": pad})
            case("MaxPoolGradGradV2 " + nm, "MaxPoolGradGradV2",
                 [("orig_input", x), ("orig_output", y), ("grad", gx), ("ksize", A(k, i32)), ("strides", A(st, i32))], {"padding": pad})
            if dt in (f32, f64, np.float16, tf.bfloat16):
                case("AvgPoolGrad " + nm, "AvgPoolGrad", [("orig_input_shape", A(xs, i32)), ("grad", U(*y.shape, dt=dt))], attrs)
            for tgt in (i32, i64) if dt == f32 else (i64,):
                for bi in (False, True):
                    yy, am = tf.raw_ops.MaxPoolWithArgmax(input=x, ksize=k, strides=st, padding=pad, Targmax=tf.as_dtype(tgt),
                                                          include_batch_in_index=bi)
                    case("MaxPoolGradWithArgmax %s %s bi%d" % (nm, np.dtype(tgt).name, bi), "MaxPoolGradWithArgmax",
                         [("input", x), ("grad", dy), ("argmax", am)], dict(attrs, include_batch_in_index=bi))
                    gg_argmax("MaxPoolGradGradWithArgmax %s %s bi%d" % (nm, np.dtype(tgt).name, bi), x, gx, am,
                              dict(attrs, include_batch_in_index=bi), bi)
    # ties and explicit padding
    x = A(np.array([[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 0, 0], [3, 3, 0, 0]], f32).reshape(1, 4, 4, 1))
    at = {"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1], "padding": "VALID"}
    y = tf.raw_ops.MaxPool(input=x, **at)
    case("MaxPoolGrad ties", "MaxPoolGrad", [("orig_input", x), ("orig_output", y), ("grad", U(*y.shape))], at)
    xe = U(1, 5, 5, 2)
    ae = {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 1, 0, 2, 0, 0]}
    ye = tf.raw_ops.MaxPool(input=xe, **ae)
    case("MaxPoolGrad explicit", "MaxPoolGrad", [("orig_input", xe), ("orig_output", ye), ("grad", U(*ye.shape))], ae)
    case("MaxPoolGradGrad explicit", "MaxPoolGradGrad", [("orig_input", xe), ("orig_output", ye), ("grad", U(1, 5, 5, 2))], ae,
         err_needle="EXPLICIT")
    # NCHW
    xs, at = [1, 2, 5, 6], {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "padding": "VALID", "data_format": "NCHW"}
    xn = U(*xs)
    case("MaxPoolGrad NCHW", "MaxPoolGrad", [("orig_input", xn), ("orig_output", U(1, 2, 2, 3)), ("grad", U(1, 2, 2, 3))], at)
    case("AvgPoolGrad NCHW", "AvgPoolGrad", [("orig_input_shape", A(xs, i32)), ("grad", U(1, 2, 2, 3))], at)
    # empty and errors
    at = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
    case("MaxPoolGrad empty", "MaxPoolGrad", [("orig_input", np.zeros([0, 4, 4, 2], f32)), ("orig_output", np.zeros([0, 2, 2, 2], f32)),
                                              ("grad", np.zeros([0, 2, 2, 2], f32))], at)
    case("AvgPoolGrad empty", "AvgPoolGrad", [("orig_input_shape", A([0, 4, 4, 2], i32)), ("grad", np.zeros([0, 2, 2, 2], f32))], at)
    case("MaxPoolGrad err grad shape", "MaxPoolGrad", [("orig_input", U(1, 4, 4, 2)), ("orig_output", U(1, 2, 2, 2)),
                                                       ("grad", U(1, 3, 2, 2))], at, err_needle="grad")
    case("AvgPoolGrad err shape len", "AvgPoolGrad", [("orig_input_shape", A([4, 4, 2], i32)), ("grad", U(1, 2, 2, 2))], at,
         err_needle="orig_input_shape")
    # an argmax out of range: TF 2.21 aborts the process (a CHECK); test_ops_e2.c checks ours by hand


def pools3d():
    geos = [([1, 4, 5, 4, 2], [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID"),
            ([2, 3, 5, 4, 1], [1, 2, 3, 2, 1], [1, 1, 2, 2, 1], "SAME")]
    for gi, (xs, k, st, pad) in enumerate(geos):
        attrs = {"ksize": k, "strides": st, "padding": pad}
        for dt in (f32, np.float16, tf.bfloat16) if gi == 0 else (f32,):
            x = U(*xs, dt=dt)
            try:
                y = tf.raw_ops.MaxPool3D(input=x, **attrs)
            except tf.errors.OpError:  # no MaxPool3D for the dtype: the forward in float, cast
                y = tf.cast(tf.raw_ops.MaxPool3D(input=tf.cast(x, tf.float32), **attrs), x.dtype if hasattr(x, "dtype") and not isinstance(x, np.ndarray) else dt)
            dy = U(*y.shape, dt=dt)
            nm = "%s geo%d %s" % (dname(dt), gi, pad)
            case("MaxPool3DGrad " + nm, "MaxPool3DGrad", [("orig_input", x), ("orig_output", y), ("grad", dy)], attrs)
            case("MaxPool3DGradGrad " + nm, "MaxPool3DGradGrad", [("orig_input", x), ("orig_output", y), ("grad", U(*xs, dt=dt))], attrs)
        for dt in (f32, f64, np.float16, tf.bfloat16) if gi == 0 else (f32, f64):
            y = tf.raw_ops.AvgPool3D(input=U(*xs), **attrs)
            case("AvgPool3DGrad %s geo%d" % (dname(dt), gi), "AvgPool3DGrad",
                 [("orig_input_shape", A(xs, i32)), ("grad", U(*y.shape, dt=dt))], attrs)
    x = A(np.ones([1, 2, 2, 2, 1], f32))
    at = {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 1, 1, 1], "padding": "VALID"}
    case("MaxPool3DGrad ties", "MaxPool3DGrad", [("orig_input", x), ("orig_output", A(np.ones([1, 1, 1, 1, 1], f32))),
                                                 ("grad", A(np.full([1, 1, 1, 1, 1], 2.0, f32)))], at)


# ---- normalization -----------------------------------------------------------------------------
def batchnorm():
    for v, op in ((1, "FusedBatchNormGrad"), (2, "FusedBatchNormGradV2"), (3, "FusedBatchNormGradV3")):
        dts = (f32,) if v == 1 else (f32, np.float16, tf.bfloat16)
        for dt in dts:
            for training in (True, False):
                for fmt in ("NHWC", "NCHW"):
                    xs = [2, 3, 4, 5] if fmt == "NHWC" else [2, 5, 3, 4]
                    x = U(*xs, dt=dt, lo=-2, hi=3)
                    sc = U(5, lo=0.5, hi=1.5)
                    if training:
                        fb = tf.raw_ops.FusedBatchNormV3(x=x, scale=sc, offset=U(5), mean=np.zeros([0], f32),
                                                         variance=np.zeros([0], f32), epsilon=0.001, data_format=fmt, is_training=True)
                        m, var = fb[3], fb[4]
                    else:
                        m, var = U(5), U(5, lo=0.2, hi=2)
                    ins = [("y_backprop", U(*xs, dt=dt)), ("x", x), ("scale", sc), ("reserve_space_1", m), ("reserve_space_2", var)]
                    if v == 3:
                        ins.append(("reserve_space_3", np.zeros([0], f32)))
                    case("%s %s train%d %s" % (op, dname(dt), training, fmt), op, ins,
                         {"epsilon": 0.001, "is_training": training, "data_format": fmt})
    for training in (True, False):
        x = U(2, 3, 2, 2, 4, lo=-2, hi=3)
        case("FusedBatchNormGradV3 NDHWC train%d" % training, "FusedBatchNormGradV3",
             [("y_backprop", U(2, 3, 2, 2, 4)), ("x", x), ("scale", U(4)), ("reserve_space_1", U(4)),
              ("reserve_space_2", U(4, lo=0.2, hi=1)), ("reserve_space_3", np.zeros([0], f32))],
             {"epsilon": 0.01, "is_training": training, "data_format": "NDHWC"})
    case("FusedBatchNormGradV3 empty", "FusedBatchNormGradV3",
         [("y_backprop", np.zeros([0, 2, 2, 3], f32)), ("x", np.zeros([0, 2, 2, 3], f32)), ("scale", U(3)), ("reserve_space_1", U(3)),
          ("reserve_space_2", U(3)), ("reserve_space_3", np.zeros([0], f32))], {"is_training": True})
    case("FusedBatchNormGradV3 err scale", "FusedBatchNormGradV3",
         [("y_backprop", U(1, 2, 2, 3)), ("x", U(1, 2, 2, 3)), ("scale", U(4)), ("reserve_space_1", U(3)),
          ("reserve_space_2", U(3)), ("reserve_space_3", np.zeros([0], f32))], {"is_training": True}, err_needle="scale")
    case("FusedBatchNormGradV3 err shapes", "FusedBatchNormGradV3",
         [("y_backprop", U(1, 2, 3, 3)), ("x", U(1, 2, 2, 3)), ("scale", U(3)), ("reserve_space_1", U(3)),
          ("reserve_space_2", U(3)), ("reserve_space_3", np.zeros([0], f32))], {"is_training": True}, err_needle="same shape")
    for dt in (f32, f64, np.float16):
        for sc in (True, False):
            t = U(2, 3, 2, 4, dt=dt)
            p = [U(4, dt=dt), U(4, dt=dt, lo=0.2, hi=2), U(4, dt=dt), U(4, dt=dt)]
            case_old("BatchNormWithGlobalNormalization %s scale%d" % (dname(dt), sc), "BatchNormWithGlobalNormalization",
                     [("t", t), ("m", p[0]), ("v", p[1]), ("beta", p[2]), ("gamma", p[3])],
                     {"variance_epsilon": 0.001, "scale_after_normalization": sc}, 1)
            case_old("BatchNormWithGlobalNormalizationGrad %s scale%d" % (dname(dt), sc), "BatchNormWithGlobalNormalizationGrad",
                     [("t", t), ("m", p[0]), ("v", p[1]), ("gamma", p[3]), ("backprop", U(2, 3, 2, 4, dt=dt))],
                     {"variance_epsilon": 0.001, "scale_after_normalization": sc}, 5)
    case_old("BatchNormWithGlobalNormalization err rank", "BatchNormWithGlobalNormalization",
             [("t", U(3, 4)), ("m", U(4)), ("v", U(4)), ("beta", U(4)), ("gamma", U(4))],
             {"variance_epsilon": 0.001, "scale_after_normalization": True}, 1, err_needle="4-dimensional")


def lrn():
    for dt in (f32, np.float16, tf.bfloat16):
        for r, b, a, be in ((2, 1.0, 1.0, 0.5), (1, 2.0, 0.1, 0.75), (0, 1.0, 0.5, 1.0), (5, 0.5, 2.0, 0.3)):
            x = U(2, 3, 2, 7, dt=dt)
            at = {"depth_radius": r, "bias": b, "alpha": a, "beta": be}
            try:
                y = tf.raw_ops.LRN(input=x, **at)
            except tf.errors.OpError:
                continue
            case("LRNGrad %s r%d" % (dname(dt), r), "LRNGrad", [("input_grads", U(2, 3, 2, 7, dt=dt)), ("input_image", x), ("output_image", y)], at)
    case("LRNGrad err shape", "LRNGrad", [("input_grads", U(1, 2, 2, 3)), ("input_image", U(1, 2, 2, 4)), ("output_image", U(1, 2, 2, 3))],
         {"depth_radius": 1}, err_needle="same shape")


# ---- dilation, fractional ----------------------------------------------------------------------
def dilation():
    for gi, (xs, fs, st, rt, pad) in enumerate((([2, 5, 6, 3], [2, 3, 3], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
                                                ([1, 6, 5, 2], [3, 2, 2], [1, 2, 2, 1], [1, 1, 1, 1], "SAME"),
                                                ([1, 7, 7, 1], [2, 2, 1], [1, 1, 2, 1], [1, 2, 2, 1], "SAME"))):
        at = {"strides": st, "rates": rt, "padding": pad}
        ys = out_shape(lambda: tf.raw_ops.Dilation2D(input=np.zeros(xs, f32), filter=np.zeros(fs, f32), **at))
        for dt in (f32, f64, np.float16, tf.bfloat16, i32) if gi == 0 else (f32, f64):
            if dt == i32:
                x, f, dy = (rng.integers(-20, 20, s).astype(i32) for s in (xs, fs, ys))
            else:
                x, f, dy = U(*xs, dt=dt), U(*fs, dt=dt), U(*ys, dt=dt)
            nm = "%s geo%d %s" % (dname(dt), gi, pad)
            case("Dilation2DBackpropInput " + nm, "Dilation2DBackpropInput", [("input", x), ("filter", f), ("out_backprop", dy)], at)
            case("Dilation2DBackpropFilter " + nm, "Dilation2DBackpropFilter", [("input", x), ("filter", f), ("out_backprop", dy)], at)
    at = {"strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "VALID"}
    case("Dilation2DBackpropInput err size", "Dilation2DBackpropInput",
         [("input", U(1, 4, 4, 1)), ("filter", U(2, 2, 1)), ("out_backprop", U(1, 2, 2, 1))], at, err_needle="out_backprop")


def fractional():
    for ov in (False, True):
        for dt in (f32, f64, i32, i64):
            x = tf.constant(rng.permutation(np.arange(2 * 7 * 6 * 2)).reshape(2, 7, 6, 2).astype(dt))
            y, rs, cs = tf.raw_ops.FractionalMaxPool(value=x, pooling_ratio=[1.0, 1.6, 1.5, 1.0], pseudo_random=True,
                                                     overlapping=ov, deterministic=True, seed=7, seed2=3)
            dy = cast(rng.integers(-5, 6, list(y.shape)), dt)
            case("FractionalMaxPoolGrad %s ov%d" % (np.dtype(dt).name, ov), "FractionalMaxPoolGrad",
                 [("orig_input", x), ("orig_output", y), ("out_backprop", dy), ("row_pooling_sequence", rs), ("col_pooling_sequence", cs)],
                 {"overlapping": ov})
            case("FractionalAvgPoolGrad %s ov%d" % (np.dtype(dt).name, ov), "FractionalAvgPoolGrad",
                 [("orig_input_tensor_shape", A([2, 7, 6, 2], i64)), ("out_backprop", dy), ("row_pooling_sequence", rs),
                  ("col_pooling_sequence", cs)], {"overlapping": ov})
    x = U(1, 4, 4, 1)
    case("FractionalAvgPoolGrad seq past the end", "FractionalAvgPoolGrad",
         [("orig_input_tensor_shape", A([1, 4, 4, 1], i64)), ("out_backprop", U(1, 2, 2, 1)), ("row_pooling_sequence", A([0, 2, 9], i64)),
          ("col_pooling_sequence", A([0, 2, 4], i64))], {"overlapping": False})


def main():
    only = sys.argv[1:]
    for fn in (conv2d, conv3d, depthwise, pools, pools3d, batchnorm, lrn, dilation, fractional):
        if not only or fn.__name__ in only:
            fn()
    g.write_unit_header("e2_cases")


if __name__ == "__main__":
    main()
