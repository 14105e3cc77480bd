#!/usr/bin/env python3
"""Generate tests/unit/array_cases.h: array-op test cases whose expected outputs (or error
messages) come from running the op in TensorFlow (eager tf.raw_ops, the CPU kernels).

Run with a Python that has TensorFlow (e.g. /tmp/tfvenv/bin/python tools/gen_array_cases.py).
The machinery (case(), write_header()) is shared with tools/gen_strided_slice_cases.py.
Each case becomes one C initializer: the node text (op + attrs; inputs are added by the test),
the inputs (fed through Placeholders i0, i1, ...) and either the outputs or the error text."""
import os
import re
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework import op_def_registry  # noqa: E402

SM_DTYPE = {
    tf.float32: "SM_FLOAT", tf.float64: "SM_DOUBLE", tf.int32: "SM_INT32", tf.uint8: "SM_UINT8",
    tf.int16: "SM_INT16", tf.int8: "SM_INT8", tf.string: "SM_STRING", tf.int64: "SM_INT64",
    tf.bool: "SM_BOOL", tf.uint16: "SM_UINT16", tf.uint32: "SM_UINT32", tf.uint64: "SM_UINT64",
    tf.float16: "SM_HALF", tf.bfloat16: "SM_BFLOAT16", tf.complex64: "SM_COMPLEX64", tf.complex128: "SM_COMPLEX128",
}
TF_ENUM = {d: "DT_" + d.name.upper() for d in SM_DTYPE}
TF_ENUM[tf.float32] = "DT_FLOAT"
TF_ENUM[tf.float64] = "DT_DOUBLE"
TF_ENUM[tf.float16] = "DT_HALF"


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def fmt_values(t):
    a = np.asarray(t.numpy(), dtype=object if t.dtype == tf.string else None).reshape(-1)
    if t.dtype == tf.string:
        # bytes: printable ASCII as is, others (space, %, quotes, UTF-8) as %XX; "%" alone is ""
        esc = lambda b: "".join(chr(c) if 33 <= c < 127 and chr(c) not in '%"\\?' else "%%%02X" % c for c in b)  # noqa: E731
        return " ".join(esc(v) or "%" for v in a)
    if t.dtype in (tf.float32, tf.float64, tf.float16, tf.bfloat16):  # half, bfloat16: exact as floats
        return " ".join(repr(float(v)) for v in np.asarray(a, dtype=np.float64))
    if t.dtype in (tf.complex64, tf.complex128):  # real and imaginary parts, in turn
        return " ".join("%r %r" % (float(v.real), float(v.imag)) for v in a)
    if t.dtype == tf.bool:
        return " ".join("1" if v else "0" for v in a)
    return " ".join(str(int(v)) for v in a)


def c_tensor(t):
    dims = list(t.shape)
    assert len(dims) <= 8, dims
    return "{%s, %d, {%s}, %s}" % (SM_DTYPE[t.dtype], len(dims), ", ".join(str(d) for d in dims) or "0",
                                   c_str(fmt_values(t)))


def attr_text(key, v):
    if isinstance(v, tf.dtypes.DType):
        return 'attr { key: "%s" value { type: %s } }' % (key, TF_ENUM[v])
    if isinstance(v, bool):
        return 'attr { key: "%s" value { b: %s } }' % (key, "true" if v else "false")
    if isinstance(v, int):
        return 'attr { key: "%s" value { i: %d } }' % (key, v)
    if isinstance(v, float):
        return 'attr { key: "%s" value { f: %r } }' % (key, v)
    if isinstance(v, str):
        return 'attr { key: "%s" value { s: "%s" } }' % (key, v)
    if isinstance(v, tuple) and v and v[0] == "shape":
        dims = v[1]
        if dims is None:
            return 'attr { key: "%s" value { shape { unknown_rank: true } } }' % key
        return 'attr { key: "%s" value { shape { %s } } }' % (key, " ".join("dim { size: %d }" % d for d in dims))
    if isinstance(v, list) and all(isinstance(x, tf.dtypes.DType) for x in v) and v:
        return 'attr { key: "%s" value { list { %s } } }' % (key, " ".join("type: %s" % TF_ENUM[x] for x in v))
    if isinstance(v, list) and v and all(isinstance(x, float) for x in v):
        return 'attr { key: "%s" value { list { %s } } }' % (key, " ".join("f: %r" % x for x in v))
    if isinstance(v, list):
        return 'attr { key: "%s" value { list { %s } } }' % (key, " ".join("i: %d" % x for x in v))
    raise ValueError((key, v))


def tf_error_text(e):
    m = str(e)
    m = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", m)
    m = re.sub(r"\s*\[Op:[A-Za-z0-9]+\].*$", "", m, flags=re.S)
    m = re.sub(r", node name: .*$", "", m.strip().split("\n")[0])  # the node name is TF's, not ours
    return m


CASES = []
# raw_ops keyword names that differ from the attr names in the NodeDef.
RENAME = {("Squeeze", "squeeze_dims"): "axis"}


def case(name, op, inputs, attrs=None, tf_attrs=None, err_needle=None):
    """inputs: list of (arg_name, value or list of values); values are numpy arrays or tf tensors.
    attrs: attrs written into the node (and passed to TF) besides the ones inferred from inputs.
    tf_attrs: extra kwargs only for the TF call. err_needle: a shorter expected error text to
    check instead of TF's full message (when ours words it differently)."""
    attrs = dict(attrs or {})
    opdef = op_def_registry.get(op)
    kwargs = {}
    flat = []
    for argname, v in inputs:
        arg = next(a for a in opdef.input_arg if a.name == argname)
        if isinstance(v, list):
            ts = [tf.convert_to_tensor(x) for x in v]
            kwargs[argname] = ts
            flat += ts
            if arg.number_attr:
                attrs.setdefault(arg.number_attr, len(ts))
            if arg.type_attr:
                attrs.setdefault(arg.type_attr, ts[0].dtype)
            if arg.type_list_attr:
                attrs.setdefault(arg.type_list_attr, [t.dtype for t in ts])
        else:
            t = tf.convert_to_tensor(v)
            kwargs[argname] = t
            flat.append(t)
            if arg.type_attr:
                attrs.setdefault(arg.type_attr, t.dtype)
    # raw_ops name some inputs differently from the OpDef (ExpandDims dim -> axis): map by position.
    import inspect
    params = list(inspect.signature(getattr(tf.raw_ops, op)).parameters)
    order = [a.name for a in opdef.input_arg]
    call = {params[order.index(k)]: v for k, v in kwargs.items()}
    for k, v in attrs.items():
        if any(a.name == k for a in opdef.attr) and k not in [a.number_attr for a in opdef.input_arg] and \
                k not in [a.type_attr for a in opdef.input_arg] and k not in [a.type_list_attr for a in opdef.input_arg]:
            call[RENAME.get((op, k), k)] = v[1] if isinstance(v, tuple) and v and v[0] == "shape" else v
    call.update(tf_attrs or {})
    err = None
    outs = []
    try:
        r = getattr(tf.raw_ops, op)(**call)
        if isinstance(r, (list, tuple)):  # a list output (RaggedGather's splits) flattens in place
            outs = [o for x in r for o in (x if isinstance(x, list) else [x])]
        elif r is None or (hasattr(r, "op") and False):
            outs = []
        else:
            outs = [r]
        outs = [o for o in outs if o is not None and hasattr(o, "dtype")]
    except (tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError, tf.errors.UnimplementedError,
            tf.errors.FailedPreconditionError) as e:
        err = err_needle or tf_error_text(e)
    node = 'op: "%s" %s' % (op, " ".join(attr_text(k, v) for k, v in sorted(attrs.items())))
    CASES.append((name, node, flat, outs, err))


def write_header(path, array_name, guard):
    lines = [
        "/* %s - GENERATED by tools/%s from TensorFlow %s; do not edit. */" % (
            os.path.basename(path), os.path.basename(sys.argv[0]), tf.__version__),
        "#ifndef %s" % guard, "#define %s" % guard, '#include "array_case.h"',
        "static const tc_case %s[] = {" % array_name,
    ]
    for name, node, flat, outs, err in CASES:
        assert len(flat) <= 8 and len(outs) <= 8
        ins = ", ".join(c_tensor(t) for t in flat) or "{0}"
        os_ = ", ".join(c_tensor(t) for t in outs) or "{0}"
        lines.append("    {%s, %s, %d, {%s}, %d, {%s}, %s}," % (
            c_str(name), c_str(node), len(flat), ins, len(outs), os_, c_str(err) if err else "NULL"))
    lines += ["};", "#endif", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("wrote %d cases to %s" % (len(CASES), path))


def write_unit_header(stem):
    """tests/unit/<stem>.h holding the cases as `static const tc_case <stem>[]`."""
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit", stem + ".h"))
    write_header(path, stem, "SM_TEST_%s_H" % stem.upper())


def A(x, dt=np.float32):
    return np.array(x, dtype=dt)


def arange(shape, dt=np.float32):
    n = int(np.prod(shape)) if shape else 1
    return np.arange(n).astype(dt).reshape(shape)


def main():
    f, i32, i64 = np.float32, np.int32, np.int64
    s = lambda x: np.array(x, dtype=object)  # noqa: E731  strings
    x23 = arange([2, 3])
    # plumbing
    case("Identity", "Identity", [("input", x23)])
    case("Identity string", "Identity", [("input", s([b"a", b"bc"]))])
    case("Snapshot", "Snapshot", [("input", arange([2], i64))])
    case("StopGradient", "StopGradient", [("input", x23)])
    case("PreventGradient", "PreventGradient", [("input", x23)])
    case("IdentityN", "IdentityN", [("input", [x23, A([1, 2], i32)])])
    case("PlaceholderWithDefault", "PlaceholderWithDefault", [("input", x23)], {"shape": ("shape", [2, 3])})
    case("EnsureShape ok", "EnsureShape", [("input", x23)], {"shape": ("shape", [2, -1])})
    case("EnsureShape unknown rank", "EnsureShape", [("input", x23)], {"shape": ("shape", None)})
    case("EnsureShape bad", "EnsureShape", [("input", x23)], {"shape": ("shape", [2, 4])})
    case("EnsureShape bad rank", "EnsureShape", [("input", x23)], {"shape": ("shape", [6])})
    case("CheckNumerics ok", "CheckNumerics", [("tensor", x23)], {"message": "m"})
    case("CheckNumerics nan", "CheckNumerics", [("tensor", A([1, np.nan]))], {"message": "bad x"})
    case("CheckNumerics inf", "CheckNumerics", [("tensor", A([np.inf, 1], np.float64))], {"message": "bad x"})
    case("CheckNumerics both", "CheckNumerics", [("tensor", A([np.inf, np.nan]))], {"message": "m"})
    case("Assert true", "Assert", [("condition", np.array(True)), ("data", [A([1, 2], i32)])])
    case("Assert false", "Assert", [("condition", np.array(False)), ("data", [s(b"hi"), A([1, 2, 3, 4, 5], i32),
                                                                              A([1.5, 2.0])])], {"summarize": 3})
    # Reshape
    for shp, name in [([3, 2], "plain"), ([-1], "flatten"), ([3, -1], "infer"), ([-1, 2, 1], "infer first"),
                      ([4, -1], "not multiple"), ([-1, -1], "two -1"), ([5], "count"), ([-2, 3], "negative"),
                      ([6, 0], "zero dim"), ([-1, 0], "infer with zero")]:
        case("Reshape " + name, "Reshape", [("tensor", x23), ("shape", A(shp, i32))])
    case("Reshape empty in", "Reshape", [("tensor", arange([0, 3])), ("shape", A([-1, 0], i32))])
    case("Reshape empty in 2", "Reshape", [("tensor", arange([0, 3])), ("shape", A([-1, 2], i64))])
    case("Reshape to scalar", "Reshape", [("tensor", A([7])), ("shape", A([], i32))])
    case("Reshape 2-D shape", "Reshape", [("tensor", x23), ("shape", A([[6]], i32))])
    case("Reshape string", "Reshape", [("tensor", s([b"a", b"b", b"c", b"d"])), ("shape", A([2, 2], i32))])
    # Squeeze
    x1 = arange([1, 2, 1, 3, 1])
    case("Squeeze all", "Squeeze", [("input", x1)])
    case("Squeeze listed", "Squeeze", [("input", x1)], {"squeeze_dims": [0, -1]})
    case("Squeeze not 1", "Squeeze", [("input", x1)], {"squeeze_dims": [1]})
    case("Squeeze out of range", "Squeeze", [("input", x1)], {"squeeze_dims": [5]})
    # ExpandDims
    for d in [0, 1, 2, -1, -3, 3, -4]:
        case("ExpandDims %d" % d, "ExpandDims", [("input", x23), ("dim", A(d, i32))])
    case("ExpandDims int64 dim", "ExpandDims", [("input", x23), ("dim", A([1], i64))])
    # Shape & co
    case("Shape", "Shape", [("input", arange([2, 0, 3]))])
    case("Shape int64", "Shape", [("input", x23)], {"out_type": tf.int64})
    case("Shape scalar", "Shape", [("input", A(3))])
    case("ShapeN", "ShapeN", [("input", [x23, arange([4])])])
    case("Size", "Size", [("input", x23)])
    case("Size int64", "Size", [("input", x23)], {"out_type": tf.int64})
    case("Rank", "Rank", [("input", arange([2, 1, 3]))])
    # Fill, ZerosLike, OnesLike, Range
    case("Fill", "Fill", [("dims", A([2, 3], i32)), ("value", A(1.5))])
    case("Fill int64 dims", "Fill", [("dims", A([2], i64)), ("value", s(b"x"))])
    case("Fill scalar", "Fill", [("dims", A([], i32)), ("value", A(4, i32))])
    case("Fill bad dims", "Fill", [("dims", A([[2]], i32)), ("value", A(1.5))])
    case("Fill bad value", "Fill", [("dims", A([2], i32)), ("value", A([1.5]))])
    case("Fill negative", "Fill", [("dims", A([2, -1], i32)), ("value", A(1.5))])
    case("ZerosLike", "ZerosLike", [("x", x23)])
    case("ZerosLike int", "ZerosLike", [("x", A([3, 4], i64))])
    case("OnesLike", "OnesLike", [("x", x23)])
    case("OnesLike bool", "OnesLike", [("x", np.array([True, False]))])
    case("OnesLike int8", "OnesLike", [("x", A([3, 4], np.int8))])
    for st, li, de, dt in [(0, 5, 1, i32), (1, 10, 3, i32), (5, 1, -2, i64), (0, 1, 0.1, f), (0.5, -2.0, -0.3, np.float64),
                           (5, 1, 1, i32), (1, 5, 0, i32), (1, 5, -1, i64), (3, 3, 1, i32), (0, 1.0, 0.25, f)]:
        case("Range %s %s %s %s" % (st, li, de, np.dtype(dt).name), "Range",
             [("start", A(st, dt)), ("limit", A(li, dt)), ("delta", A(de, dt))])
    # Slice
    x34 = arange([3, 4])
    for b, z in [([0, 0], [3, 4]), ([1, 1], [2, 2]), ([1, 0], [-1, -1]), ([0, 2], [3, -1]), ([2, 4], [1, 0]),
                 ([0, 0], [4, 1]), ([-1, 0], [1, 1]), ([0, 5], [1, 0]), ([0], [1])]:
        case("Slice %s %s" % (b, z), "Slice", [("input", x34), ("begin", A(b, i32)), ("size", A(z, i32))])
    case("Slice int64 string", "Slice", [("input", s([[b"a", b"b"], [b"c", b"d"]])), ("begin", A([1, 0], i64)),
                                         ("size", A([1, 2], i64))])
    # Split / SplitV / Unpack
    x46 = arange([4, 6])
    for d, n in [(0, 2), (1, 3), (-1, 2), (1, 4), (2, 2), (0, 1)]:
        case("Split dim %d num %d" % (d, n), "Split", [("split_dim", A(d, i32)), ("value", x46)], {"num_split": n})
    for sz, d in [([1, -2, 7], 1), ([1, 2, 3], 1), ([1, -1], 0), ([2, 5], 1), ([-1, -1], 0), ([0, 6], 1), ([2, 2], 1), ([1, -1, 6], 1)]:
        case("SplitV %s dim %d" % (sz, d), "SplitV", [("value", x46), ("size_splits", A(sz, i64 if d else i32)),
                                                     ("split_dim", A(d, i32))], {"num_split": len(sz)})
    case("SplitV string", "SplitV", [("value", s([b"a", b"b", b"c"])), ("size_splits", A([2, 1], i32)),
                                     ("split_dim", A(0, i32))], {"num_split": 2})
    x234 = arange([2, 3, 4])
    for ax, n in [(0, 2), (1, 3), (2, 4), (-1, 4), (1, 2), (3, 2)]:
        case("Unpack axis %d" % ax, "Unpack", [("value", x234)], {"num": n, "axis": ax})
    # Concat / Pack
    for ax in [0, 1, -1, -2, 2]:
        case("ConcatV2 axis %d" % ax, "ConcatV2", [("values", [x23, arange([2, 3]) + 10]), ("axis", A(ax, i32))])
    case("ConcatV2 three", "ConcatV2", [("values", [x23, arange([2, 1]), arange([2, 0])]), ("axis", A(1, i64))])
    case("ConcatV2 mismatch", "ConcatV2", [("values", [x23, arange([3, 3])]), ("axis", A(1, i32))])
    case("ConcatV2 rank mismatch", "ConcatV2", [("values", [x23, arange([3])]), ("axis", A(0, i32))])
    case("ConcatV2 string", "ConcatV2", [("values", [s([b"a"]), s([b"b", b"c"])]), ("axis", A(0, i32))])
    case("ConcatV2 scalars", "ConcatV2", [("values", [A(1), A(2)]), ("axis", A(0, i32))])
    case("Concat", "Concat", [("concat_dim", A(1, i32)), ("values", [x23, x23])])
    for ax in [0, 1, 2, -1, -3, 3]:
        case("Pack axis %d" % ax, "Pack", [("values", [x23, x23 + 10, x23 + 20])], {"axis": ax})
    case("Pack scalars", "Pack", [("values", [A(1, i32), A(2, i32)])])
    case("Pack mismatch", "Pack", [("values", [x23, arange([3, 2])])])
    # Transpose
    for p in [[1, 0], [0, 1], [2, 0, 1], [1, 2, 0], [0, 2, 1], [2, 1, 0], [0, 0, 1], [0, 1], [0, 3, 1]]:
        src = x23 if len(p) == 2 else x234
        case("Transpose %s" % p, "Transpose", [("x", src), ("perm", A(p, i32))])
    case("Transpose big", "Transpose", [("x", arange([37, 45], i32)), ("perm", A([1, 0], i64))])
    case("Transpose 4d", "Transpose", [("x", arange([2, 3, 1, 4])), ("perm", A([3, 0, 2, 1], i32))])
    case("Transpose size-1", "Transpose", [("x", arange([1, 3, 1, 2])), ("perm", A([2, 1, 0, 3], i32))])
    case("Transpose string", "Transpose", [("x", s([[b"a", b"b"], [b"c", b"d"]])), ("perm", A([1, 0], i32))])
    # Tile
    for m in [[1, 1], [2, 1], [1, 3], [2, 2], [0, 2], [1], [-1, 1]]:
        case("Tile %s" % m, "Tile", [("input", x23), ("multiples", A(m, i32))])
    case("Tile 3d", "Tile", [("input", arange([2, 1, 2])), ("multiples", A([1, 3, 2], i64))])
    # Pad / PadV2 / MirrorPad
    for p in [[[1, 1], [2, 0]], [[0, 0], [0, 0]], [[0, 2], [1, 1]], [[-1, 0], [0, 0]], [[1, 1]]]:
        case("Pad %s" % p, "Pad", [("input", x23), ("paddings", A(p, i32))])
    case("PadV2", "PadV2", [("input", x23), ("paddings", A([[1, 0], [0, 2]], i64)), ("constant_values", A(-1))])
    case("PadV2 bad value", "PadV2", [("input", x23), ("paddings", A([[1, 0], [0, 2]], i32)),
                                      ("constant_values", A([1, 2]))])
    for mode in ["REFLECT", "SYMMETRIC"]:
        for p in [[[1, 1], [2, 2]], [[0, 1], [1, 0]], [[2, 2], [3, 3]], [[1, 0], [0, 3]]]:
            case("MirrorPad %s %s" % (mode, p), "MirrorPad", [("input", arange([3, 3])), ("paddings", A(p, i32))],
                 {"mode": mode})
    # ReverseV2
    for ax in [[0], [1], [0, 1], [], [-1], [2], [0, 0]]:
        case("ReverseV2 %s" % ax, "ReverseV2", [("tensor", x23), ("axis", A(ax, i32))])
    case("ReverseV2 3d", "ReverseV2", [("tensor", x234), ("axis", A([0, 2], i64))])
    # BroadcastTo
    for shp in [[2, 3], [4, 2, 3], [3, 2]]:
        case("BroadcastTo %s" % shp, "BroadcastTo", [("input", x23), ("shape", A(shp, i32))])
    case("BroadcastTo col", "BroadcastTo", [("input", arange([3, 1])), ("shape", A([2, 3, 4], i64))])
    case("BroadcastTo scalar", "BroadcastTo", [("input", A(5, i32)), ("shape", A([2, 2], i32))])
    # Gather
    p = arange([4, 3])
    for ind, ax in [([2, 0], 0), ([[1, 1], [3, 0]], 0), ([2, 0, 1], 1), ([1], -1), (2, 0), ([4], 0), ([-1], 0),
                    ([0], 2)]:
        case("GatherV2 %s axis %d" % (ind, ax), "GatherV2", [("params", p), ("indices", A(ind, i32)),
                                                          ("axis", A(ax, i32))])
    case("GatherV2 int64", "GatherV2", [("params", x234), ("indices", A([[0, 2], [1, 1]], i64)), ("axis", A(1, i64))])
    case("GatherV2 bad index 2d", "GatherV2", [("params", p), ("indices", A([[0, 1], [7, 0]], i32)),
                                               ("axis", A(0, i32))])
    case("GatherV2 batch_dims", "GatherV2", [("params", x234), ("indices", A([[0, 2], [1, 1]], i32)),
                                             ("axis", A(1, i32))], {"batch_dims": 1})
    case("GatherV2 batch_dims axis 2", "GatherV2", [("params", x234), ("indices", A([[3, 0], [1, 1]], i32)),
                                                    ("axis", A(2, i32))], {"batch_dims": 1})
    case("GatherV2 string", "GatherV2", [("params", s([b"a", b"b", b"c"])), ("indices", A([2, 2, 0], i32)),
                                         ("axis", A(0, i32))])
    case("Gather", "Gather", [("params", p), ("indices", A([3, 1], i32))])
    # GatherNd
    for ind in [[[1, 2], [3, 0]], [[1], [0]], [[[0, 0]], [[3, 2]]], [[4, 0]], [[0, -1]], []]:
        case("GatherNd %s" % ind, "GatherNd", [("params", p), ("indices", A(ind, i64 if len(ind) == 2 else i32)
                                                                if ind else np.zeros([0, 2], i32))])
    case("GatherNd 3d slice", "GatherNd", [("params", x234), ("indices", A([[1, 2], [0, 0]], i32))])
    case("GatherNd too long", "GatherNd", [("params", p), ("indices", A([[1, 2, 0]], i32))])
    # Print
    case("Print", "Print", [("input", x23), ("data", [A([1], i32)])], {"message": "hi"})
    # OneHot
    for ind, ax in [([0, 2, -1, 5], -1), ([[0, 2], [1, 1]], 0), ([[0, 2], [1, 1]], 1), ([1, 0], 3)]:
        case("OneHot %s axis %d" % (ind, ax), "OneHot", [("indices", A(ind, i64)), ("depth", A(3, i32)),
                                                        ("on_value", A(5.0)), ("off_value", A(-1.0))], {"axis": ax})
    case("OneHot int", "OneHot", [("indices", A([1, 0], np.uint8)), ("depth", A(2, i32)), ("on_value", A(1, i32)),
                                  ("off_value", A(0, i32))])
    case("OneHot negative depth", "OneHot", [("indices", A([1], i32)), ("depth", A(-1, i32)), ("on_value", A(1.0)),
                                             ("off_value", A(0.0))])
    # Where
    case("Where bool", "Where", [("input", np.array([[True, False], [False, True], [True, True]]))])
    case("Where float", "Where", [("input", A([0, 1.5, -0.0, 2]))])
    case("Where int 3d", "Where", [("input", A([[[0, 1], [2, 0]]], i32))])
    case("Where none", "Where", [("input", A([0, 0], i64))])
    # SpaceToBatchND / BatchToSpaceND
    img = arange([1, 4, 4, 1])
    case("SpaceToBatchND", "SpaceToBatchND", [("input", img), ("block_shape", A([2, 2], i32)),
                                              ("paddings", A([[0, 0], [0, 0]], i32))])
    case("SpaceToBatchND pad", "SpaceToBatchND", [("input", arange([2, 3, 2, 2])), ("block_shape", A([2, 2], i32)),
                                                  ("paddings", A([[1, 0], [1, 1]], i32))])
    case("SpaceToBatchND 1d", "SpaceToBatchND", [("input", arange([2, 5, 3])), ("block_shape", A([3], i64)),
                                                 ("paddings", A([[1, 0]], i64))])
    case("SpaceToBatchND not divisible", "SpaceToBatchND", [("input", img), ("block_shape", A([3, 2], i32)),
                                                            ("paddings", A([[0, 0], [0, 0]], i32))])
    case("BatchToSpaceND", "BatchToSpaceND", [("input", arange([4, 2, 2, 1])), ("block_shape", A([2, 2], i32)),
                                              ("crops", A([[0, 0], [0, 0]], i32))])
    case("BatchToSpaceND crop", "BatchToSpaceND", [("input", arange([8, 2, 2, 2])), ("block_shape", A([2, 2], i32)),
                                                   ("crops", A([[1, 0], [0, 2]], i32))])
    case("BatchToSpaceND bad batch", "BatchToSpaceND", [("input", arange([3, 2, 2, 1])),
                                                        ("block_shape", A([2, 2], i32)),
                                                        ("crops", A([[0, 0], [0, 0]], i32))])
    write_header(os.path.join(os.path.dirname(__file__), "..", "tests", "unit", "array_cases.h"), "array_cases",
                 "SM_TEST_ARRAY_CASES_H")


if __name__ == "__main__":
    main()
