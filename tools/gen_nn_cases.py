#!/usr/bin/env python3
"""gen_nn_cases.py - writes tests/unit/nn_cases.h: nn kernel cases with TensorFlow's answers.

Each case is one op between Placeholders, exported as a MetaGraphDef (stripped default attrs, as
TF2 exports do, with the OpDefs in stripped_op_list) and run by TensorFlow's own Session on inputs
the C test rebuilds from the same formula (nn_input_value in test_ops_nn.c). Error cases record
the substring our message must contain (checked here against TF's message too).
Run: /tmp/tfvenv/bin/python tools/gen_nn_cases.py > tests/unit/nn_cases.h
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402

tf.compat.v1.disable_eager_execution()

DT = {"float32": (tf.float32, "SM_FLOAT"), "float64": (tf.float64, "SM_DOUBLE"),
      "int32": (tf.int32, "SM_INT32"), "int64": (tf.int64, "SM_INT64")}


def value(kind, seed, n, dtype, lit=None):
    """Same formula as nn_input_value() in tests/unit/test_ops_nn.c."""
    if kind == "lit":
        return np.array(lit, dtype=dtype)
    i = np.arange(n, dtype=np.int64)
    v = (i * 37 + seed * 11) % 19
    v = v - 9 if kind == "s" else v + 1
    if dtype.startswith("int"):
        return v.astype(dtype)
    return (v.astype(np.float64) / 8.0).astype(dtype)


# (name, op, [(arg, dtype, shape, kind[, lit])], attrs, fetch indices or None, error substring or None)
F = "float32"
CASES = []


def case(name, op, inputs, attrs=None, outs=(0,), err=None):
    CASES.append((name, op, inputs, attrs or {}, outs, err))


def s(arg, shape, dt=F, kind="s"):
    return (arg, dt, shape, kind)


# MatMul
case("mm_basic", "MatMul", [s("a", [3, 4]), s("b", [4, 5])])
case("mm_ta", "MatMul", [s("a", [4, 3]), s("b", [4, 5])], {"transpose_a": True})
case("mm_tb", "MatMul", [s("a", [3, 4]), s("b", [5, 4])], {"transpose_b": True})
case("mm_tatb", "MatMul", [s("a", [4, 3]), s("b", [5, 4])], {"transpose_a": True, "transpose_b": True})
case("mm_double", "MatMul", [s("a", [3, 4], "float64"), s("b", [4, 2], "float64")])
case("mm_int32", "MatMul", [s("a", [3, 4], "int32"), s("b", [4, 2], "int32")], {"transpose_a": False})
case("mm_int32_tt", "MatMul", [s("a", [4, 3], "int32"), s("b", [2, 4], "int32")],
     {"transpose_a": True, "transpose_b": True})
case("mm_mid", "MatMul", [s("a", [20, 40]), s("b", [40, 30])])
case("mm_row", "MatMul", [s("a", [1, 300]), s("b", [300, 7])])
case("mm_err_k", "MatMul", [s("a", [2, 3]), s("b", [4, 5])], err="Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]")
case("mm_err_rank", "MatMul", [s("a", [3]), s("b", [3, 5])], err="is not a matrix")
# BatchMatMul
case("bmm_basic", "BatchMatMulV2", [s("x", [2, 3, 4]), s("y", [2, 4, 5])])
case("bmm_bcast", "BatchMatMulV2", [s("x", [2, 1, 3, 4]), s("y", [3, 4, 2])])
case("bmm_bcast2", "BatchMatMulV2", [s("x", [3, 4]), s("y", [2, 2, 4, 3])])
case("bmm_adj", "BatchMatMulV2", [s("x", [2, 4, 3]), s("y", [2, 5, 4])], {"adj_x": True, "adj_y": True})
case("bmm_v3", "BatchMatMulV3", [s("x", [2, 3, 4]), s("y", [1, 4, 2])], {"Tout": tf.float32})
case("bmm_v1", "BatchMatMul", [s("x", [2, 3, 4]), s("y", [2, 4, 2])], {"adj_x": False})
case("bmm_int32", "BatchMatMulV2", [s("x", [2, 3, 4], "int32"), s("y", [4, 2], "int32")])
case("bmm_many", "BatchMatMulV2", [s("x", [20, 5, 16]), s("y", [20, 16, 12])])
case("bmm_err_batch", "BatchMatMulV2", [s("x", [2, 2, 3]), s("y", [3, 3, 5])],
     err="must have compatible batch dimensions: [2,2,3] vs. [3,3,5]")
case("bmm_err_k", "BatchMatMulV2", [s("x", [2, 2, 3]), s("y", [2, 4, 5])], err="Matrix size-incompatible")
# BiasAdd
case("bias_nhwc", "BiasAdd", [s("value", [2, 3, 4, 5]), s("bias", [5])])
case("bias_nchw", "BiasAdd", [s("value", [2, 3, 4, 5]), s("bias", [3])], {"data_format": "NCHW"})
case("bias_nchw_rank3", "BiasAdd", [s("value", [2, 3, 4]), s("bias", [3])], {"data_format": "NCHW"})
case("bias_nchw_rank2", "BiasAdd", [s("value", [4, 3]), s("bias", [3])], {"data_format": "NCHW"})
case("bias_rank2", "BiasAdd", [s("value", [4, 3]), s("bias", [3])])
case("bias_int32", "BiasAdd", [s("value", [3, 4], "int32"), s("bias", [4], "int32")])
case("bias_double", "BiasAdd", [s("value", [3, 4], "float64"), s("bias", [4], "float64")])
case("bias_v1", "BiasAddV1", [s("value", [3, 4]), s("bias", [4])])
case("bias_err_size", "BiasAdd", [s("value", [2, 3, 4, 5]), s("bias", [4])], err="Must provide as many biases")
case("bias_err_rank", "BiasAdd", [s("value", [3]), s("bias", [3])], err="must be at least 2D")
# Conv2D
st1 = {"strides": [1, 1, 1, 1]}
case("conv_valid", "Conv2D", [s("input", [1, 5, 5, 1]), s("filter", [3, 3, 1, 2])], {**st1, "padding": "VALID"})
case("conv_same", "Conv2D", [s("input", [2, 6, 7, 3]), s("filter", [3, 3, 3, 4])], {**st1, "padding": "SAME"})
case("conv_s2_same", "Conv2D", [s("input", [1, 7, 8, 2]), s("filter", [3, 3, 2, 3])],
     {"strides": [1, 2, 2, 1], "padding": "SAME"})
case("conv_s2_same_k4", "Conv2D", [s("input", [1, 8, 9, 2]), s("filter", [4, 4, 2, 2])],
     {"strides": [1, 2, 2, 1], "padding": "SAME"})
case("conv_s23_valid", "Conv2D", [s("input", [1, 9, 9, 2]), s("filter", [2, 3, 2, 2])],
     {"strides": [1, 2, 3, 1], "padding": "VALID"})
case("conv_dil_same", "Conv2D", [s("input", [1, 9, 8, 2]), s("filter", [3, 2, 2, 3])],
     {**st1, "padding": "SAME", "dilations": [1, 2, 3, 1]})
case("conv_dil_valid", "Conv2D", [s("input", [2, 9, 8, 1]), s("filter", [2, 2, 1, 2])],
     {**st1, "padding": "VALID", "dilations": [1, 3, 2, 1]})
case("conv_explicit", "Conv2D", [s("input", [1, 5, 6, 2]), s("filter", [3, 3, 2, 2])],
     {"strides": [1, 2, 1, 1], "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 2, 2, 0, 0, 0]})
case("conv_1x1", "Conv2D", [s("input", [2, 4, 5, 6]), s("filter", [1, 1, 6, 3])], {**st1, "padding": "VALID"})
case("conv_1x1_s2", "Conv2D", [s("input", [1, 5, 5, 3]), s("filter", [1, 1, 3, 2])],
     {"strides": [1, 2, 2, 1], "padding": "SAME"})
case("conv_nchw", "Conv2D", [s("input", [1, 3, 6, 5]), s("filter", [3, 3, 3, 2])],
     {"strides": [1, 1, 2, 1], "padding": "SAME", "data_format": "NCHW"})
case("conv_group", "Conv2D", [s("input", [1, 5, 5, 4]), s("filter", [3, 3, 2, 6])], {**st1, "padding": "SAME"})
case("conv_double", "Conv2D", [s("input", [1, 5, 4, 2], "float64"), s("filter", [2, 2, 2, 3], "float64")],
     {**st1, "padding": "SAME"})
case("conv_par", "Conv2D", [s("input", [2, 9, 9, 8]), s("filter", [3, 3, 8, 16])], {**st1, "padding": "SAME"})
case("conv_err_depth", "Conv2D", [s("input", [1, 5, 5, 5]), s("filter", [3, 3, 3, 2])], {**st1, "padding": "VALID"},
     err="input depth must be evenly divisible by filter depth: 5 vs 3")
case("conv_err_groups", "Conv2D", [s("input", [1, 4, 4, 4]), s("filter", [2, 2, 2, 3])], {**st1, "padding": "VALID"},
     err="output depth must be evenly divisible by number of groups: 3 vs 2")
case("conv_err_neg", "Conv2D", [s("input", [1, 3, 3, 1]), s("filter", [5, 5, 1, 1])], {**st1, "padding": "VALID"},
     err="Computed output size would be negative")
# TF 2.21's oneDNN Conv2D aborts the process on a rank-3 input, so TF does not run this one.
case("conv_err_rank", "Conv2D", [s("input", [5, 5, 1]), s("filter", [3, 3, 1, 1])], {**st1, "padding": "VALID"},
     err="!input must be 4-dimensional")
# DepthwiseConv2dNative
case("dw_valid", "DepthwiseConv2dNative", [s("input", [1, 5, 5, 2]), s("filter", [3, 3, 2, 1])],
     {**st1, "padding": "VALID"})
case("dw_mult_s2", "DepthwiseConv2dNative", [s("input", [2, 6, 5, 3]), s("filter", [3, 3, 3, 2])],
     {"strides": [1, 2, 2, 1], "padding": "SAME"})
case("dw_dil", "DepthwiseConv2dNative", [s("input", [1, 8, 8, 2]), s("filter", [2, 2, 2, 1])],
     {**st1, "padding": "VALID", "dilations": [1, 2, 2, 1]})
case("dw_explicit", "DepthwiseConv2dNative", [s("input", [1, 5, 5, 2]), s("filter", [3, 3, 2, 2])],
     {**st1, "padding": "EXPLICIT", "explicit_paddings": [0, 0, 2, 1, 0, 1, 0, 0]})
case("dw_nchw", "DepthwiseConv2dNative", [s("input", [1, 2, 5, 6]), s("filter", [3, 3, 2, 2])],
     {**st1, "padding": "SAME", "data_format": "NCHW"})
case("dw_err_depth", "DepthwiseConv2dNative", [s("input", [1, 5, 5, 3]), s("filter", [3, 3, 2, 1])],
     {**st1, "padding": "VALID"}, err="must have the same depth: 3 vs 2")
# Pools
k2 = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1]}
k3 = {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1]}
for op, p in (("MaxPool", "mp"), ("AvgPool", "ap")):
    case(p + "_valid", op, [s("input" if op == "MaxPool" else "value", [1, 4, 4, 2])], {**k2, "padding": "VALID"})
    case(p + "_same_odd", op, [s("input" if op == "MaxPool" else "value", [2, 5, 7, 3])], {**k3, "padding": "SAME"})
    case(p + "_valid_odd", op, [s("input" if op == "MaxPool" else "value", [1, 7, 6, 2])], {**k3, "padding": "VALID"})
    case(p + "_k3s1_same", op, [s("input" if op == "MaxPool" else "value", [1, 5, 5, 1])],
         {"ksize": [1, 3, 3, 1], "strides": [1, 1, 1, 1], "padding": "SAME"})
    case(p + "_k23", op, [s("input" if op == "MaxPool" else "value", [1, 6, 7, 2])],
         {"ksize": [1, 2, 3, 1], "strides": [1, 1, 2, 1], "padding": "SAME"})
    case(p + "_nchw", op, [s("input" if op == "MaxPool" else "value", [1, 2, 5, 5])],
         {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "padding": "SAME", "data_format": "NCHW"})
    case(p + "_double", op, [s("input" if op == "MaxPool" else "value", [1, 4, 5, 2], "float64")],
         {**k2, "padding": "SAME"})
    case(p + "_err_rank", op, [s("input" if op == "MaxPool" else "value", [4, 4, 2])], {**k2, "padding": "VALID"},
         err="must be 4-dimensional")
case("mp_explicit", "MaxPool", [s("input", [1, 5, 5, 1])],
     {**k2, "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 0, 0, 1, 0, 0]})
case("mp_v2", "MaxPoolV2", [s("input", [1, 5, 6, 2]), ("ksize", "int32", [4], "lit", [1, 3, 2, 1]),
                            ("strides", "int32", [4], "lit", [1, 2, 2, 1])], {"padding": "SAME"})
# FusedBatchNorm
bn5 = lambda x, c, mv=None: [s("x", x), s("scale", [c]), s("offset", [c]),  # noqa: E731
                              s("mean", [c if mv is None else mv]),
                              s("variance", [c if mv is None else mv], kind="p")]
case("bn3_inf_nhwc", "FusedBatchNormV3", bn5([2, 3, 4, 5], 5), {"is_training": False, "epsilon": 0.001},
     outs=(0, 1, 2, 3, 4, 5))
case("bn3_inf_nchw", "FusedBatchNormV3", bn5([2, 3, 4, 5], 3), {"is_training": False, "data_format": "NCHW"},
     outs=(0, 1, 2))
case("bn3_train_ln", "FusedBatchNormV3", bn5([1, 6, 4, 1], 6, 0), {"data_format": "NCHW", "epsilon": 0.001},
     outs=(0, 1, 2, 3, 4))
case("bn3_train_nhwc", "FusedBatchNormV3", bn5([2, 3, 3, 4], 4), {"is_training": True}, outs=(0, 1, 2, 3, 4))
case("bn3_train_factor", "FusedBatchNormV3", bn5([2, 2, 3, 3], 3),
     {"is_training": True, "exponential_avg_factor": 0.25}, outs=(0, 1, 2))
case("bn1_inf", "FusedBatchNorm", bn5([1, 2, 3, 4], 4), {"is_training": False}, outs=(0, 1, 2))
case("bn2_train", "FusedBatchNormV2", bn5([3, 2, 2, 2], 2), {}, outs=(0, 1, 2))
case("bn3_5d", "FusedBatchNormV3", bn5([1, 2, 2, 3, 2], 2), {"is_training": False, "data_format": "NDHWC"},
     outs=(0,))
case("bn_err_scale", "FusedBatchNormV3", [s("x", [1, 2, 2, 3]), s("scale", [2]), s("offset", [3]), s("mean", [3]),
                                          s("variance", [3], kind="p")], {"is_training": False},
     err="scale must have the same number of elements as the channels of x, got 2 and 3")
case("bn_err_mean", "FusedBatchNormV3", bn5([1, 2, 2, 3], 3, 0), {"is_training": False},
     err="mean must have the same number of elements as the channels of x")


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fmt(v, dt):
    if dt.startswith("int"):
        return str(int(v))
    if np.isnan(v):
        return "NAN"
    return repr(float(v))


def main(cases=None, prefix="nn", header="nn_cases.h", generator="tools/gen_nn_cases.py", value_fn=None,
         dtypes=None, fmt_fn=None):
    """Writes the header to stdout. The other generators (gen_conv_transpose_cases.py,
    gen_image_cases.py) call it with their own cases, C name prefix, header and generator names,
    and their own input formula, dtype table and number format."""
    cases = CASES if cases is None else cases
    value_fn = value_fn or value
    DT = dtypes or globals()["DT"]
    fmt_fn = fmt_fn or fmt
    guard = header.replace(".", "_").upper()
    out = sys.stdout
    out.write("/* %s - generated by %s with TensorFlow %s; do not edit. */\n" % (header, generator, tf.__version__))
    out.write("#ifndef " + guard + "\n#define " + guard + "\n#include <math.h>\n#include <stdint.h>\n\n#include \"savedmodel/dtype.h\"\n\n")
    entries = []
    opdefs = {}
    for ci, (name, op, inputs, attrs, outs, err) in enumerate(cases):
        g = tf.Graph()
        feeds = {}
        with g.as_default():
            kw = {}
            for ii, inp in enumerate(inputs):
                arg, dt, shape, kind = inp[:4]
                ph = tf.compat.v1.placeholder(DT[dt][0], shape=None, name="in%d" % ii)
                kw[arg] = ph
                feeds[ph] = value_fn(kind, ii, int(np.prod(shape)), dt, inp[4] if len(inp) > 4 else None).reshape(shape)
            kw.update(attrs)
            res = getattr(tf.raw_ops, op)(**kw, name="y")
            res = list(res) if isinstance(res, (list, tuple)) else [res]
        mg = tf.compat.v1.train.export_meta_graph(graph=g, strip_default_attrs=True)
        if op not in opdefs:
            ol = tf.compat.v1.MetaGraphDef().meta_info_def.stripped_op_list
            ol.CopyFrom(mg.meta_info_def.stripped_op_list)
            for od in ol.op:
                od.ClearField("description")
                od.ClearField("summary")
                for a in list(od.input_arg) + list(od.output_arg) + list(od.attr):
                    a.ClearField("description")
            opdefs[op] = text_format.MessageToString(ol, as_one_line=True)
        gd = tf.compat.v1.GraphDef()
        gd.CopyFrom(mg.graph_def)
        gd.ClearField("versions")
        for nd in gd.node:
            if "_output_shapes" in nd.attr:
                del nd.attr["_output_shapes"]
        pbtxt = text_format.MessageToString(gd, as_one_line=True)
        vals = None
        if err is None:
            with tf.compat.v1.Session(graph=g) as sess:
                vals = sess.run([res[k] for k in outs], feed_dict=feeds)
        elif not err.startswith("!"):
            try:
                with tf.compat.v1.Session(graph=g) as sess:
                    sess.run(res[0], feed_dict=feeds)
                sys.exit("case %s: TF did not fail" % name)
            except tf.errors.OpError as e:
                if err not in e.message:
                    sys.stderr.write("note: case %s: TF says %r\n" % (name, e.message.splitlines()[-1][:300]))
        ins = []
        for ii, inp in enumerate(inputs):
            arg, dt, shape, kind = inp[:4]
            lit = "0"
            if kind == "lit":
                out.write("static const double %s_c%d_lit%d[] = {%s};\n" % (prefix, ci, ii, ", ".join(str(x) for x in inp[4])))
                lit = "%s_c%d_lit%d" % (prefix, ci, ii)
            ins.append("{%s, %d, {%s}, '%s', %d, %s}" % (DT[dt][1], len(shape), ", ".join(map(str, shape)) or "0",
                                                        kind[0], ii, lit))
        outd = []
        if vals is not None:
            for k, v in zip(outs, vals):
                v = np.asarray(v)
                dt = str(v.dtype)
                flat = v.reshape(-1)
                out.write("static const double %s_c%d_o%d[] = {%s};\n" %
                          (prefix, ci, k, ", ".join(fmt_fn(x, dt) for x in flat) if flat.size else "0"))
                outd.append("{%d, %s, %d, {%s}, %d, %s_c%d_o%d}" % (k, DT[dt][1], v.ndim,
                                                                      ", ".join(map(str, v.shape)) or "0", flat.size,
                                                                      prefix, ci, k))
        entries.append("  {%s, %s, %s,\n   %d, {%s},\n   %d, {%s},\n   %s}" % (
            cstr(name), cstr(op), cstr(pbtxt), len(ins), ", ".join(ins), len(outd), ", ".join(outd) or "{0}",
            cstr(err.lstrip("!")) if err else "0"))
    types = ("\ntypedef struct nn_input {\n  int dtype, rank;\n  int64_t dims[5];\n  char kind; /* 's' signed, 'p' "
             "positive, 'l' literal */\n  int seed;\n  const double *lit;\n} nn_input;\n"
             "typedef struct nn_output {\n  int index, dtype, rank;\n  int64_t dims[5];\n  int64_t n;\n"
             "  const double *vals;\n} nn_output;\n"
             "typedef struct nn_case {\n  const char *name, *op, *graph_def;\n  int nin;\n  nn_input in[5];\n  int nout;\n"
             "  nn_output out[6];\n  const char *err;\n} nn_case;\n\n")
    out.write(types.replace("nn_", prefix + "_"))
    out.write("static const %s_case %s_cases[] = {\n%s,\n};\n\n" % (prefix, prefix, ",\n".join(entries)))
    out.write("/* stripped_op_list contents (OpDefs without docs) per op, as TF exports them */\n")
    out.write("static const char *const %s_opdefs[][2] = {\n%s,\n};\n\n#endif\n" % (prefix, ",\n".join(
        "  {%s, %s}" % (cstr(k), cstr(v)) for k, v in sorted(opdefs.items()))))


if __name__ == "__main__":
    main()
