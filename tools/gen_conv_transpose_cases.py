#!/usr/bin/env python3
"""gen_conv_transpose_cases.py - writes tests/unit/conv_transpose_cases.h: cases with TensorFlow's
answers for the nn_conv_transpose kernels (Conv2DBackpropInput, Conv3D, Conv3DBackpropInputV2,
MaxPool3D, AvgPool3D).

Same machinery and header layout as tools/gen_nn_cases.py (imported: its value formula, case
runner and writer), with this family's cases; the C side is tests/unit/test_ops_conv_transpose.c.
Run: /work/main/build/venv/bin/python tools/gen_conv_transpose_cases.py > tests/unit/conv_transpose_cases.h
"""
import os
import sys

# TensorFlow's own CPU kernels are the reference (oneDNN's replacements abort on some bad inputs and
# word their errors differently), so oneDNN is off.
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_nn_cases as g  # noqa: E402

tf, np = g.tf, g.np
g.CASES.clear()


class RefSession(tf.compat.v1.Session):
    """TF's own CPU kernels refuse dilations > 1 and Conv2DBackpropInput's NCHW (the oneDNN ones
    take both), so such a case's answer is computed by the same op with dilations 1 and a
    zero-stuffed filter (tap k at k * dilation: the convolution that dilation defines), in NHWC
    with the NCHW tensors transposed. The exported graph keeps the original node; only the
    reference run differs."""

    def run(self, fetches, feed_dict=None, **kw):
        op = fetches[0].op if isinstance(fetches, list) else None
        if op is not None and op.type == "Conv3D":
            x, f = super().run(list(op.inputs), feed_dict=feed_dict)
            groups = x.shape[-1] // f.shape[3] if f.shape[3] else 1
            if groups > 1:  # grouped: TF's own kernel refuses it (a SavedModel run by TF computes it); one conv per group
                attrs = {a: op.get_attr(a) for a in ("strides", "padding", "dilations")}
                cin, cout = f.shape[3], f.shape[4] // groups
                parts = []
                for i in range(groups):  # each through this run(): dilations are handled as above
                    xi, fi = x[..., i * cin:(i + 1) * cin], f[..., i * cout:(i + 1) * cout]
                    with tf.Graph().as_default() as g2:
                        px = tf.compat.v1.placeholder(xi.dtype, xi.shape)
                        pf = tf.compat.v1.placeholder(fi.dtype, fi.shape)
                        y = tf.raw_ops.Conv3D(input=px, filter=pf, **attrs)
                        with tf.compat.v1.Session(graph=g2) as s2:
                            parts.append(s2.run([y], feed_dict={px: xi, pf: fi})[0])
                return [np.concatenate(parts, axis=-1)]
        dil = list(op.get_attr("dilations")) if op is not None and "dilations" in op.node_def.attr else []
        fmt = op.get_attr("data_format").decode() if op is not None and "data_format" in op.node_def.attr else ""
        if not any(d > 1 for d in dil) and fmt != "NCHW":
            return super().run(fetches, feed_dict=feed_dict, **kw)
        sp = [i for i, c in enumerate(fmt) if c not in "NC"]  # spatial axes of dilations
        vals = [feed_dict[x] for x in op.inputs]
        f = vals[1]
        k = f.shape[:-2]
        big = np.zeros([(k[i] - 1) * dil[sp[i]] + 1 for i in range(len(k))] + list(f.shape[-2:]), f.dtype)
        big[tuple(slice(None, None, dil[sp[i]]) for i in range(len(k)))] = f
        vals[1] = big
        attrs = {a: op.get_attr(a) for a in ("strides", "padding", "explicit_paddings") if a in op.node_def.attr}
        nchw = fmt == "NCHW"
        if nchw:  # NCHW -> NHWC: the sizes, out_backprop and the attrs' entries
            perm = [0, 2, 3, 1]
            s = np.asarray(vals[0])
            vals[0] = s[perm] if s.size == 4 else s
            vals[2] = np.transpose(vals[2], perm)
            attrs["strides"] = [attrs["strides"][i] for i in perm]
            if attrs.get("explicit_paddings"):
                ep = attrs["explicit_paddings"]
                attrs["explicit_paddings"] = sum(([ep[2 * i], ep[2 * i + 1]] for i in perm), [])
        names = [a.name for a in op.op_def.input_arg]
        with tf.Graph().as_default() as g2:
            y = getattr(tf.raw_ops, op.type)(**dict(zip(names, vals)), **attrs)
            with tf.compat.v1.Session(graph=g2) as s2:
                r = s2.run([y])
        return [np.transpose(r[0], [0, 3, 1, 2])] if nchw else r


tf.compat.v1.Session = RefSession
case, s = g.case, g.s
D = "float64"


def sizes(v):
    return ("input_sizes", "int32", [len(v)], "lit", v)


# Conv2DBackpropInput: (input_sizes, filter [KH,KW,Cin,Cout], out_backprop)
st1 = {"strides": [1, 1, 1, 1]}
st2 = {"strides": [1, 2, 2, 1]}
case("bi_valid", "Conv2DBackpropInput", [sizes([1, 5, 5, 2]), s("filter", [3, 3, 2, 3]), s("out_backprop", [1, 3, 3, 3])],
     {**st1, "padding": "VALID"})
case("bi_same", "Conv2DBackpropInput", [sizes([2, 4, 5, 3]), s("filter", [3, 3, 3, 2]), s("out_backprop", [2, 4, 5, 2])],
     {**st1, "padding": "SAME"})
case("bi_s2_same", "Conv2DBackpropInput", [sizes([1, 7, 8, 2]), s("filter", [3, 3, 2, 3]),
                                           s("out_backprop", [1, 4, 4, 3])], {**st2, "padding": "SAME"})
case("bi_s2_same_even", "Conv2DBackpropInput", [sizes([1, 8, 8, 1]), s("filter", [4, 4, 1, 2]),
                                                s("out_backprop", [1, 4, 4, 2])], {**st2, "padding": "SAME"})
case("bi_s2_valid", "Conv2DBackpropInput", [sizes([1, 7, 6, 2]), s("filter", [3, 2, 2, 2]),
                                            s("out_backprop", [1, 3, 3, 2])], {**st2, "padding": "VALID"})
case("bi_s2_valid_rem", "Conv2DBackpropInput", [sizes([1, 8, 7, 1]), s("filter", [3, 3, 1, 2]),
                                                s("out_backprop", [1, 3, 3, 2])], {**st2, "padding": "VALID"})
case("bi_s32", "Conv2DBackpropInput", [sizes([2, 9, 7, 2]), s("filter", [2, 3, 2, 3]),
                                       s("out_backprop", [2, 3, 4, 3])], {"strides": [1, 3, 2, 1], "padding": "SAME"})
case("bi_dil", "Conv2DBackpropInput", [sizes([1, 9, 8, 2]), s("filter", [3, 2, 2, 2]), s("out_backprop", [1, 9, 8, 2])],
     {**st1, "padding": "SAME", "dilations": [1, 2, 3, 1]})
case("bi_dil_valid", "Conv2DBackpropInput", [sizes([1, 8, 8, 1]), s("filter", [2, 2, 1, 2]),
                                             s("out_backprop", [1, 6, 4, 2])],
     {**st1, "padding": "VALID", "dilations": [1, 2, 4, 1]})
case("bi_explicit", "Conv2DBackpropInput", [sizes([1, 5, 6, 2]), s("filter", [3, 3, 2, 2]),
                                            s("out_backprop", [1, 3, 6, 2])],
     {"strides": [1, 2, 1, 1], "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 2, 2, 0, 0, 0]})
case("bi_1x1", "Conv2DBackpropInput", [sizes([2, 3, 4, 5]), s("filter", [1, 1, 5, 3]), s("out_backprop", [2, 3, 4, 3])],
     {**st1, "padding": "VALID"})
case("bi_k_gt_in", "Conv2DBackpropInput", [sizes([1, 2, 2, 1]), s("filter", [3, 3, 1, 1]),
                                           s("out_backprop", [1, 1, 1, 1])], {**st2, "padding": "SAME"})
case("bi_sizes2", "Conv2DBackpropInput", [sizes([5, 5]), s("filter", [3, 3, 2, 3]), s("out_backprop", [2, 3, 3, 3])],
     {**st1, "padding": "VALID"})
case("bi_nchw", "Conv2DBackpropInput", [sizes([1, 2, 6, 5]), s("filter", [3, 3, 2, 3]),
                                        s("out_backprop", [1, 3, 3, 3])],
     {"strides": [1, 1, 2, 2], "padding": "SAME", "data_format": "NCHW"})
case("bi_double", "Conv2DBackpropInput", [sizes([1, 5, 4, 2]), s("filter", [2, 2, 2, 3], D),
                                          s("out_backprop", [1, 3, 2, 3], D)], {**st2, "padding": "SAME"})
case("bi_empty_batch", "Conv2DBackpropInput", [sizes([0, 4, 4, 2]), s("filter", [3, 3, 2, 2]),
                                               s("out_backprop", [0, 4, 4, 2])], {**st1, "padding": "SAME"})
case("bi_empty_cout", "Conv2DBackpropInput", [sizes([1, 4, 4, 2]), s("filter", [3, 3, 2, 0]),
                                              s("out_backprop", [1, 4, 4, 0])], {**st1, "padding": "SAME"})
case("bi_par", "Conv2DBackpropInput", [sizes([2, 16, 15, 8]), s("filter", [3, 3, 8, 16]),
                                       s("out_backprop", [2, 8, 8, 16])], {**st2, "padding": "SAME"})
case("bi_err_size", "Conv2DBackpropInput", [sizes([1, 5, 5, 2]), s("filter", [3, 3, 2, 3]),
                                            s("out_backprop", [1, 4, 3, 3])], {**st1, "padding": "VALID"},
     err="Size of out_backprop doesn't match computed")
case("bi_err_depth", "Conv2DBackpropInput", [sizes([1, 5, 5, 2]), s("filter", [3, 3, 2, 3]),
                                             s("out_backprop", [1, 3, 3, 4])], {**st1, "padding": "VALID"},
     err="filter and out_backprop must have the same out_depth")
case("bi_err_batch", "Conv2DBackpropInput", [sizes([2, 5, 5, 2]), s("filter", [3, 3, 2, 3]),
                                             s("out_backprop", [1, 3, 3, 3])], {**st1, "padding": "VALID"},
     err="input and out_backprop must have the same batch size")
case("bi_err_sizes_len", "Conv2DBackpropInput", [sizes([1, 5, 5]), s("filter", [3, 3, 2, 3]),
                                                 s("out_backprop", [1, 3, 3, 3])], {**st1, "padding": "VALID"},
     err="requires input_sizes to contain 4 values or 2 values, but got: 3")
case("bi_err_groups", "Conv2DBackpropInput", [sizes([1, 5, 5, 4]), s("filter", [3, 3, 2, 3]),
                                              s("out_backprop", [1, 3, 3, 3])], {**st1, "padding": "VALID"},
     err="Gradients for grouped convolutions are not supported on CPU")
case("bi_err_filter_rank", "Conv2DBackpropInput", [sizes([1, 5, 5, 2]), s("filter", [3, 3, 2]),
                                                   s("out_backprop", [1, 3, 3, 3])], {**st1, "padding": "VALID"},
     err="filter must be 4-dimensional")
case("bi_err_neg", "Conv2DBackpropInput", [sizes([1, -5, 5, 2]), s("filter", [3, 3, 2, 3]),
                                           s("out_backprop", [1, 3, 3, 3])], {**st1, "padding": "VALID"},
     err="Dimension -5 must be >= 0")
# Conv3D: input [N,D,H,W,C], filter [KD,KH,KW,Cin,Cout]
s5 = {"strides": [1, 1, 1, 1, 1]}
case("c3_valid", "Conv3D", [s("input", [1, 4, 5, 5, 2]), s("filter", [2, 3, 3, 2, 3])], {**s5, "padding": "VALID"})
case("c3_same", "Conv3D", [s("input", [2, 4, 4, 5, 3]), s("filter", [3, 3, 3, 3, 2])], {**s5, "padding": "SAME"})
case("c3_s2_same", "Conv3D", [s("input", [1, 5, 7, 6, 2]), s("filter", [3, 3, 2, 2, 2])],
     {"strides": [1, 2, 2, 3, 1], "padding": "SAME"})
case("c3_s2_valid", "Conv3D", [s("input", [1, 6, 7, 5, 1]), s("filter", [2, 3, 2, 1, 2])],
     {"strides": [1, 2, 3, 2, 1], "padding": "VALID"})
case("c3_dil", "Conv3D", [s("input", [1, 6, 7, 6, 2]), s("filter", [2, 2, 3, 2, 2])],
     {**s5, "padding": "SAME", "dilations": [1, 2, 3, 1, 1]})
case("c3_double", "Conv3D", [s("input", [1, 3, 4, 4, 2], D), s("filter", [2, 2, 2, 2, 3], D)], {**s5, "padding": "SAME"})
case("c3_1x1", "Conv3D", [s("input", [2, 2, 3, 3, 4]), s("filter", [1, 1, 1, 4, 3])], {**s5, "padding": "VALID"})
case("c3_empty", "Conv3D", [s("input", [0, 3, 3, 3, 2]), s("filter", [2, 2, 2, 2, 2])], {**s5, "padding": "SAME"})
case("c3_par", "Conv3D", [s("input", [2, 6, 8, 8, 8]), s("filter", [3, 3, 3, 8, 16])], {**s5, "padding": "SAME"})
case("c3_err_depth", "Conv3D", [s("input", [1, 4, 4, 4, 3]), s("filter", [2, 2, 2, 2, 2])], {**s5, "padding": "VALID"},
     err="Input depth must be evenly divisible by filter depth: 3 vs 2")
case("c3_groups", "Conv3D", [s("input", [1, 4, 4, 4, 4]), s("filter", [2, 2, 2, 2, 2])], {**s5, "padding": "VALID"})
case("c3_groups3_s2", "Conv3D", [s("input", [2, 5, 4, 6, 6]), s("filter", [2, 3, 2, 2, 9])],
     {"strides": [1, 2, 1, 2, 1], "padding": "SAME", "dilations": [1, 1, 2, 1, 1]})
# No NCDHW Conv3D case: TF's eager kernel refuses it, but its default (oneDNN) graph run of a Keras
# Conv3D(data_format="channels_first") export computes it, and so do we (zoo: keras_conv3d_ncdhw).
case("c3_out_zero", "Conv3D", [s("input", [1, 2, 4, 4, 1]), s("filter", [3, 2, 2, 1, 1])], {**s5, "padding": "VALID"})
case("c3_err_neg", "Conv3D", [s("input", [1, 1, 4, 4, 1]), s("filter", [3, 2, 2, 1, 1])], {**s5, "padding": "VALID"},
     err="Computed output size would be negative")
case("c3_err_rank", "Conv3D", [s("input", [4, 4, 4, 1]), s("filter", [2, 2, 2, 1, 1])], {**s5, "padding": "VALID"},
     err="!input must be 5-dimensional")
# Conv3DBackpropInputV2
case("b3_same", "Conv3DBackpropInputV2", [sizes([1, 4, 5, 5, 2]), s("filter", [3, 3, 3, 2, 3]),
                                          s("out_backprop", [1, 2, 3, 3, 3])],
     {"strides": [1, 2, 2, 2, 1], "padding": "SAME"})
case("b3_valid", "Conv3DBackpropInputV2", [sizes([2, 5, 4, 6, 1]), s("filter", [2, 2, 3, 1, 2]),
                                           s("out_backprop", [2, 2, 3, 2, 2])],
     {"strides": [1, 2, 1, 2, 1], "padding": "VALID"})
case("b3_dil", "Conv3DBackpropInputV2", [sizes([1, 5, 6, 4, 2]), s("filter", [2, 2, 2, 2, 2]),
                                         s("out_backprop", [1, 5, 6, 4, 2])],
     {**s5, "padding": "SAME", "dilations": [1, 2, 1, 2, 1]})
case("b3_err_size", "Conv3DBackpropInputV2", [sizes([1, 4, 5, 5, 2]), s("filter", [3, 3, 3, 2, 3]),
                                              s("out_backprop", [1, 2, 2, 3, 3])],
     {"strides": [1, 2, 2, 2, 1], "padding": "SAME"}, err="Size of out_backprop doesn't match computed")
# Pools 3D
for op, p in (("MaxPool3D", "mp3"), ("AvgPool3D", "ap3")):
    case(p + "_valid", op, [s("input", [1, 4, 4, 4, 2])],
         {"ksize": [1, 2, 2, 2, 1], "strides": [1, 2, 2, 2, 1], "padding": "VALID"})
    case(p + "_same_odd", op, [s("input", [2, 5, 7, 3, 3])],
         {"ksize": [1, 3, 3, 2, 1], "strides": [1, 2, 2, 2, 1], "padding": "SAME"})
    case(p + "_valid_odd", op, [s("input", [1, 7, 6, 5, 2])],
         {"ksize": [1, 3, 2, 3, 1], "strides": [1, 2, 3, 1, 1], "padding": "VALID"})
    case(p + "_k3s1_same", op, [s("input", [1, 4, 5, 5, 1])],
         {"ksize": [1, 3, 3, 3, 1], "strides": [1, 1, 1, 1, 1], "padding": "SAME"})
    case(p + "_empty", op, [s("input", [0, 4, 4, 4, 2])],
         {"ksize": [1, 2, 2, 2, 1], "strides": [1, 2, 2, 2, 1], "padding": "SAME"})
    case(p + "_out_zero", op, [s("input", [1, 1, 4, 4, 2])],
         {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 1, 1, 1], "padding": "VALID"})
    case(p + "_err_neg", op, [s("input", [1, 1, 4, 4, 2])],
         {"ksize": [1, 3, 2, 2, 1], "strides": [1, 1, 1, 1, 1], "padding": "VALID"},
         err="Computed output size would be negative")
    case(p + "_err_ncdhw", op, [s("input", [1, 2, 4, 4, 4])],
         {"ksize": [1, 1, 2, 2, 2], "strides": [1, 1, 2, 2, 2], "padding": "VALID", "data_format": "NCDHW"},
         err="only supports NDHWC on device type CPU")
    case(p + "_err_ksize_depth", op, [s("input", [1, 4, 4, 4, 2])],
         {"ksize": [1, 2, 2, 2, 2], "strides": [1, 2, 2, 2, 1], "padding": "VALID"},
         err="Pooling is not yet supported on the depth dimension.")
    case(p + "_err_rank", op, [s("input", [4, 4, 4, 2])],
         {"ksize": [1, 2, 2, 2, 1], "strides": [1, 2, 2, 2, 1], "padding": "VALID"},
         err="!must be 5-dimensional")


def main():
    g.main(cases=g.CASES, header="conv_transpose_cases.h", generator="tools/gen_conv_transpose_cases.py")


if __name__ == "__main__":
    main()
