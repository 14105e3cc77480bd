#!/usr/bin/env python3
"""Regenerates the TensorFlow-computed case table of tests/unit/test_ops_math.c.

Run with a Python that has TensorFlow (e.g. /tmp/tfvenv/bin/python); paste the output between the
BEGIN/END CASES markers of test_ops_math.c. Each case runs one raw op in TF and records its
result (or the first line of its error) in the spec format the C test parses:
"dtype[d0,d1] v0 v1 ..." per tensor, inputs joined by '|', errors as "!message".
"""
import inspect
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TF's own (Eigen) kernels are the reference: oneDNN's Softmax differs on rows holding +inf.
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

SHORT = {
    tf.float32: "f32", tf.float64: "f64", tf.float16: "f16", tf.bfloat16: "bf16", tf.int8: "i8",
    tf.int16: "i16", tf.int32: "i32", tf.int64: "i64", tf.uint8: "u8", tf.uint16: "u16",
    tf.uint32: "u32", tf.uint64: "u64", tf.bool: "b", tf.string: "str",
}
BY_SHORT = {v: k for k, v in SHORT.items()}
nan, inf = float("nan"), float("inf")


class T:
    def __init__(self, dt, shape, values):
        self.dt, self.shape = BY_SHORT[dt], list(shape)
        n = int(np.prod(shape)) if shape else 1
        if len(values) == 1 and n != 1:
            values = values * n
        assert len(values) == n, (dt, shape, values)
        if self.dt == tf.string:
            self.tf = tf.constant(np.array([v.encode() for v in values], dtype=object).reshape(shape), tf.string)
        elif self.dt == tf.bool:
            self.tf = tf.constant(np.array(values, dtype=bool).reshape(shape))
        elif self.dt in (tf.float16, tf.bfloat16):
            self.tf = tf.cast(tf.constant(np.array(values, np.float32).reshape(shape)), self.dt)
        else:
            self.tf = tf.constant(np.array(values).reshape(shape), self.dt)


def fmt_value(dt, v):
    if dt == tf.string:
        return v.decode()
    if dt == tf.bool:
        return "1" if v else "0"
    if dt.is_floating:
        f = float(v)
        if dt == tf.float32:
            return str(np.float32(f))
        return repr(f)
    return str(int(v))


def spec(t):
    a = np.asarray(t.numpy())
    dt = t.dtype
    shape = ",".join(str(d) for d in a.shape)
    vals = " ".join(fmt_value(dt, v) for v in a.reshape(-1))
    return f"{SHORT[dt]}[{shape}]" + (" " + vals if vals else "")


def in_spec(t):
    return spec(t.tf)


def attr_text(k, v):
    if isinstance(v, bool):
        return f'attr {{ key: \\"{k}\\" value {{ b: {"true" if v else "false"} }} }}'
    if isinstance(v, tf.dtypes.DType):
        return f'attr {{ key: \\"{k}\\" value {{ type: {v.as_datatype_enum and "DT_" + v.name.upper()} }} }}'
    if isinstance(v, float):
        return f'attr {{ key: \\"{k}\\" value {{ f: {v!r} }} }}'
    if isinstance(v, int):
        return f'attr {{ key: \\"{k}\\" value {{ i: {v} }} }}'
    raise TypeError(v)


def dtname(dt):
    return {"float16": "DT_HALF", "float32": "DT_FLOAT", "float64": "DT_DOUBLE"}.get(dt.name, "DT_" + dt.name.upper())


def type_attrs(op, ins, kw):
    a = {}
    if op in ("LogicalAnd", "LogicalOr", "LogicalNot"):
        pass
    elif op in ("Select", "SelectV2"):
        a["T"] = ins[1].dt
    elif op == "Cast":
        a["SrcT"] = ins[0].dt
    elif op in ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any"):
        if op not in ("All", "Any"):
            a["T"] = ins[0].dt
        a["Tidx"] = ins[1].dt
    elif op in ("ArgMax", "ArgMin"):
        a["T"] = ins[0].dt
        a["Tidx"] = ins[1].dt
    elif op == "AddN":
        a["N"] = len(ins)
        a["T"] = ins[0].dt
    else:
        a["T"] = ins[0].dt
    a.update(kw)
    parts = []
    for k, v in a.items():
        if isinstance(v, tf.dtypes.DType):
            parts.append(f'attr {{ key: \\"{k}\\" value {{ type: {dtname(v)} }} }}')
        else:
            parts.append(attr_text(k, v))
    return " ".join(parts)


def run(op, ins, kw):
    fn = getattr(tf.raw_ops, op)
    names = [p for p in inspect.signature(fn).parameters if p != "name"]
    args = {}
    if op == "AddN":
        args["inputs"] = [t.tf for t in ins]
    else:
        for n, t in zip(names, ins):
            args[n] = t.tf
    args.update(kw)
    try:
        return spec(fn(**args))
    except Exception as e:  # noqa: BLE001
        msg = str(e).split("\n")[0]
        if "}}" in msg:
            msg = msg.split("}}", 1)[1].strip()
        msg = msg.split(" [Op:")[0]
        return "!" + msg


def C(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def case(op, *ins, **kw):
    exp = run(op, ins, kw)
    attrs = type_attrs(op, ins, kw)
    print(f'    {{"{op}", "{attrs}",\n     {C("|".join(in_spec(t) for t in ins))},\n     {C(exp)}}},')


F = [1.5, -2.0, 0.0, -0.0, 3.25, nan, inf, -inf]


def main():
    # ---- binary: broadcasting shapes and errors
    case("AddV2", T("f32", [2, 3], [1, 2, 3, 4, 5, 6]), T("f32", [2, 3], [10, 20, 30, 40, 50, 60]))
    case("AddV2", T("f32", [2, 3], [1, 2, 3, 4, 5, 6]), T("f32", [], [0.5]))
    case("AddV2", T("f32", [], [0.5]), T("f32", [2, 3], [1, 2, 3, 4, 5, 6]))
    case("AddV2", T("f32", [2, 3], [1, 2, 3, 4, 5, 6]), T("f32", [3], [10, 20, 30]))
    case("AddV2", T("f32", [3], [10, 20, 30]), T("f32", [2, 3], [1, 2, 3, 4, 5, 6]))
    case("Sub", T("f32", [2, 1], [1, 2]), T("f32", [1, 3], [10, 20, 30]))
    case("Mul", T("f32", [2, 1, 3], [1, 2, 3, 4, 5, 6]), T("f32", [2, 1], [10, 100]))
    case("AddV2", T("f32", [1, 3, 3, 1], list(range(9))), T("f32", [3, 1], [100, 200, 300]))
    case("AddV2", T("f32", [1, 3, 3, 1], list(range(9))), T("f32", [1, 1], [100]))
    case("Mul", T("f32", [2, 3, 2], list(range(12))), T("f32", [3, 1], [1, 10, 100]))
    case("AddV2", T("f32", [2, 3], [1, 2, 3, 4, 5, 6]), T("f32", [4], [1, 2, 3, 4]))
    case("Mul", T("f32", [2, 3], [1, 2, 3, 4, 5, 6]), T("f32", [3, 2], [1, 2, 3, 4, 5, 6]))
    case("AddV2", T("f32", [0, 3], []), T("f32", [3], [1, 2, 3]))
    case("AddV2", T("f32", [2, 0], []), T("f32", [2, 1], [1, 2]))
    case("AddV2", T("f32", [0], []), T("f32", [3], [1, 2, 3]))
    case("Add", T("str", [2], ["a", "bc"]), T("str", [], ["_x"]))
    case("Add", T("str", [2, 1], ["a", "b"]), T("str", [2], ["1", "2"]))
    # ---- binary: dtypes
    case("AddV2", T("f64", [3], [1.25, 1e300, -1]), T("f64", [3], [1e-300, 1e300, 1]))
    case("AddV2", T("i32", [3], [2147483647, -5, 7]), T("i32", [3], [1, 5, -8]))
    case("AddV2", T("i64", [2], [9223372036854775807, 1]), T("i64", [2], [1, 2]))
    case("AddV2", T("u8", [2], [250, 1]), T("u8", [], [10]))
    case("Sub", T("u8", [2], [1, 5]), T("u8", [2], [2, 3]))
    case("AddV2", T("i8", [2], [120, -128]), T("i8", [2], [10, -1]))
    case("Mul", T("i16", [2], [300, -7]), T("i16", [2], [300, 3]))
    case("Mul", T("i32", [2], [65536, -3]), T("i32", [2], [65536, 7]))
    case("AddV2", T("f16", [3], [1, 2049, 65504]), T("f16", [3], [0.0004, 1, 32]))
    case("Mul", T("bf16", [2], [1.5, 257]), T("bf16", [2], [3, 1]))
    case("AddV2", T("b", [1], [True]), T("b", [1], [True]))
    case("AddV2", T("str", [1], ["a"]), T("str", [1], ["b"]))
    # ---- division family
    case("RealDiv", T("f32", [4], [1, -1, 0, 6]), T("f32", [4], [0, 0, 0, 4]))
    case("Div", T("f32", [2], [7, -7]), T("f32", [], [2]))
    case("Div", T("i32", [4], [7, -7, 7, -7]), T("i32", [4], [2, 2, -2, -2]))
    case("Div", T("i32", [1], [-2147483648]), T("i32", [1], [-1]))
    case("Div", T("i32", [2], [7, 1]), T("i32", [2], [0, 1]))
    case("Div", T("u8", [2], [200, 7]), T("u8", [], [3]))
    case("FloorDiv", T("i32", [4], [7, -7, 7, -7]), T("i32", [4], [2, 2, -2, -2]))
    case("FloorDiv", T("i64", [2], [-9223372036854775808, 5]), T("i64", [2], [-1, 5]))
    case("FloorDiv", T("i32", [1], [7]), T("i32", [1], [0]))
    case("FloorDiv", T("f32", [5], [7.5, -7.5, 1, -1, 0]), T("f32", [5], [2, 2, 0, 0, 0]))
    case("FloorMod", T("i32", [5], [7, -7, 7, -7, -2147483648]), T("i32", [5], [2, 2, -2, -2, -1]))
    case("FloorMod", T("i64", [2], [7, 3]), T("i64", [2], [0, 1]))
    case("FloorMod", T("f32", [6], [7.5, -7.5, 7.5, -7.5, 1, inf]), T("f32", [6], [2, 2, -2, -2, 0, 2]))
    case("FloorMod", T("f64", [2], [-1e-20, 5.5]), T("f64", [2], [3, -2]))
    case("DivNoNan", T("f32", [4], [1, nan, 0, 6]), T("f32", [4], [0, 0, 0, 4]))
    case("DivNoNan", T("f64", [2], [1, 3]), T("f64", [], [0]))
    # ---- max / min / pow / squared difference
    case("Maximum", T("f32", [5], [nan, 1, nan, -0.0, 3]), T("f32", [5], [1, nan, nan, 0, -inf]))
    case("Minimum", T("f32", [5], [nan, 1, nan, 2, 3]), T("f32", [5], [1, nan, nan, 0, -inf]))
    case("Maximum", T("i8", [3], [-128, 5, 0]), T("i8", [], [1]))
    case("Minimum", T("i64", [2], [-9223372036854775808, 5]), T("i64", [2], [0, 1]))
    case("Maximum", T("f16", [2], [1, nan]), T("f16", [2], [2, 0]))
    case("Pow", T("f32", [5], [-8, 0, 2, 2, -2]), T("f32", [5], [1 / 3, -1, 0.5, 10, 3]))
    case("Pow", T("i32", [6], [2, -3, 0, 1, -1, 3]), T("i32", [6], [31, 3, 0, 0, 5, 40]))
    case("Pow", T("i32", [1], [2]), T("i32", [1], [-1]))
    case("Pow", T("i64", [2], [3, 2]), T("i64", [2], [3, 62]))
    case("SquaredDifference", T("f32", [3], [1, -2, nan]), T("f32", [3], [4, 2, 0]))
    case("SquaredDifference", T("i32", [2], [70000, -3]), T("i32", [], [1]))
    # ---- comparisons and logic
    case("Less", T("f32", [4], [1, 2, nan, -0.0]), T("f32", [4], [2, 2, 1, 0]))
    case("LessEqual", T("f32", [4], [1, 2, nan, -0.0]), T("f32", [4], [2, 2, 1, 0]))
    case("Greater", T("i64", [2, 1], [1, 5]), T("i64", [3], [0, 1, 6]))
    case("GreaterEqual", T("u8", [3], [0, 1, 255]), T("u8", [], [1]))
    case("Less", T("f16", [2], [1, 2.001]), T("f16", [2], [1.001, 2]))
    case("Less", T("b", [1], [False]), T("b", [1], [True]))
    case("Equal", T("f32", [4], [1, nan, 0, -0.0]), T("f32", [4], [1, nan, -0.0, 1]))
    case("NotEqual", T("f32", [4], [1, nan, 0, -0.0]), T("f32", [4], [1, nan, -0.0, 1]))
    case("Equal", T("str", [3], ["a", "b", ""]), T("str", [], ["b"]))
    case("NotEqual", T("str", [2], ["ab", ""]), T("str", [2], ["abc", ""]))
    case("Equal", T("b", [2, 1], [True, False]), T("b", [2], [True, False]))
    case("Equal", T("i32", [2], [1, 2]), T("i32", [3], [1, 2, 3]), incompatible_shape_error=False)
    case("NotEqual", T("i32", [2], [1, 2]), T("i32", [3], [1, 2, 3]), incompatible_shape_error=False)
    case("Equal", T("i32", [2, 2], [1, 2, 1, 2]), T("i32", [3], [1, 2, 3]))
    case("Equal", T("i32", [2, 2], [1, 2, 1, 2]), T("i32", [2], [1, 3]), incompatible_shape_error=False)
    case("LogicalAnd", T("b", [2, 1], [True, False]), T("b", [2], [True, False]))
    case("LogicalOr", T("b", [2, 1], [True, False]), T("b", [2], [True, False]))
    # ---- unary
    for op in ["Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Log1p", "Expm1", "Abs", "Sign", "Reciprocal",
               "Floor", "Ceil", "Round", "Erf", "Relu", "Relu6", "Elu", "Selu", "Softplus", "Softsign", "Sigmoid",
               "Tanh", "IsNan", "IsFinite"]:
        case(op, T("f32", [12], F + [0.5, 2.5, -1.5, 1e-3]))
    case("LeakyRelu", T("f32", [6], [nan, -1, 7, -0.0, 0, -1e-3]))
    case("LeakyRelu", T("f32", [3], [-2, 3, -0.5]), alpha=0.01)
    case("Round", T("f32", [8], [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 8388609]))
    case("Round", T("f64", [3], [0.5, 1.5, -2.5]))
    case("Sigmoid", T("f32", [6], [-100, -20, -1e-4, 20, 100, 88.8]))
    case("Softplus", T("f32", [10], [-100, -20, -14, -13.9, -1, 1e-3, 13.9, 14, 20, 100]))
    case("Tanh", T("f64", [4], [-20, -0.5, 1e-8, 3]))
    case("Exp", T("f64", [3], [1, 700, -745]))
    case("Sigmoid", T("f16", [4], [-10, 0, 0.5, 10]))
    case("Relu", T("bf16", [3], [-1, 2.5, nan]))
    case("Elu", T("f32", [4], [-1e-8, -1, 2, -20]))
    for op in ["Neg", "Abs", "Sign", "Square", "Relu", "Relu6", "Round"]:
        case(op, T("i32", [5], [-2147483648, -7, 0, 3, 46341]))
    case("Relu6", T("i64", [3], [-1, 5, 9]))
    case("Square", T("u8", [2], [20, 3]))
    case("Neg", T("i8", [2], [-128, 5]))
    case("Sqrt", T("i32", [1], [4]))
    case("LogicalNot", T("b", [3], [True, False, True]))
    case("IsNan", T("f16", [3], [nan, inf, 1]))
    case("IsFinite", T("f64", [3], [nan, -inf, 1e308]))
    # ---- softmax
    case("Softmax", T("f32", [3, 3], [1, 2, 3, -inf, -inf, -inf, 1, inf, 0]))
    case("LogSoftmax", T("f32", [3, 2], [-inf, -inf, 1, 2, 1, -inf]))
    case("Softmax", T("f32", [3], [1000, 1001, 1002]))
    case("LogSoftmax", T("f64", [2, 2], [1, 2, -3, 7]))
    case("Softmax", T("f16", [1, 3], [1, 2, 3]))
    case("Softmax", T("f32", [2, 0], []))
    case("Softmax", T("f32", [2, 1, 2], [0, 0, 1e-5, 30]))
    case("Softmax", T("i32", [2], [1, 2]))
    # ---- cast
    big = [1e10, -1e10, nan, inf, -inf, 3.7, -3.7, 2147483520, 2147483648, -2147483904]
    for dt in [tf.int32, tf.int64, tf.uint8, tf.int8, tf.int16, tf.uint16, tf.bool, tf.float64, tf.float16,
               tf.bfloat16]:
        case("Cast", T("f32", [10], big), DstT=dt)
    case("Cast", T("f64", [5], [1e300, -1e300, nan, 5e9, 1e-310]), DstT=tf.int32)
    case("Cast", T("f64", [5], [1e300, -1e300, nan, 5e9, 2.5]), DstT=tf.int64)
    case("Cast", T("f64", [4], [1e300, 0.1, 1e-50, 1.00000005960464477539]), DstT=tf.float32)
    case("Cast", T("f64", [3], [0.1, 65520, 1.00048828125]), DstT=tf.float16)
    case("Cast", T("f32", [6], [65520, 65519, 1e-8, 3e-8, 6e-8, 0.1]), DstT=tf.float16)
    case("Cast", T("f32", [5], [1.00390625, 1.01171875, 0.1, 3.4e38, -1e-40]), DstT=tf.bfloat16)
    case("Cast", T("f32", [4], [1.01171875, 0.1, 1.0039, nan]), DstT=tf.bfloat16, Truncate=True)
    case("Cast", T("f32", [3], [0.1, 1.0014, 65519]), DstT=tf.float16, Truncate=True)
    case("Cast", T("f64", [2], [0.1, 1.00000011920928955]), DstT=tf.float32, Truncate=True)
    case("Cast", T("f32", [2], [3.7, 1e10]), DstT=tf.int32, Truncate=True)
    case("Cast", T("i64", [4], [2**40 + 5, -2**33 - 1, 2**53 + 1, -1]), DstT=tf.int32)
    case("Cast", T("i64", [3], [2**53 + 1, -1, 2**63 - 1]), DstT=tf.float64)
    case("Cast", T("i64", [3], [2**24 + 1, -1, 2**63 - 1]), DstT=tf.float32)
    case("Cast", T("i64", [2], [-1, 70000]), DstT=tf.uint64)
    case("Cast", T("u64", [2], [2**64 - 1, 5]), DstT=tf.float32)
    case("Cast", T("u64", [2], [2**64 - 1, 5]), DstT=tf.int8)
    case("Cast", T("i32", [4], [300, -1, 65536, 255]), DstT=tf.uint8)
    case("Cast", T("i32", [3], [70000, -1, 2049]), DstT=tf.float16)
    case("Cast", T("i32", [3], [0, -1, 2]), DstT=tf.bool)
    case("Cast", T("b", [2], [True, False]), DstT=tf.float32)
    case("Cast", T("b", [2], [True, False]), DstT=tf.int64)
    case("Cast", T("f16", [3], [65504, -3.5, nan]), DstT=tf.int32)
    case("Cast", T("f16", [2], [0.1, -2]), DstT=tf.float32)
    case("Cast", T("f16", [2], [0.1, 65504]), DstT=tf.bfloat16)
    case("Cast", T("bf16", [2], [0.1, 3e38]), DstT=tf.float16)
    case("Cast", T("u8", [2], [255, 0]), DstT=tf.int8)
    case("Cast", T("f32", [2], [1.5, -2]), DstT=tf.float32)
    case("Cast", T("str", [1], ["1"]), DstT=tf.float32)
    # ---- select / clip / addn
    case("SelectV2", T("b", [2, 1], [True, False]), T("f32", [3], [1, 2, 3]), T("f32", [], [-1]))
    case("SelectV2", T("b", [], [False]), T("i32", [2], [1, 2]), T("i32", [2], [3, 4]))
    case("SelectV2", T("b", [3], [True, False, True]), T("str", [3], ["a", "b", "c"]), T("str", [], ["z"]))
    case("SelectV2", T("b", [3], [True, False, True]), T("i32", [2, 2], [1, 2, 3, 4]), T("i32", [], [5]))
    case("SelectV2", T("b", [2, 1, 2], [True, False, False, True]), T("i64", [3, 1], [1, 2, 3]),
         T("i64", [1, 3, 2], [10, 20, 30, 40, 50, 60]))
    case("SelectV2", T("b", [2], [True, False]), T("f16", [2], [1, 2]), T("f16", [2], [3, 4]))
    case("Select", T("b", [2], [True, False]), T("i32", [2, 2], [1, 2, 3, 4]), T("i32", [2, 2], [5, 6, 7, 8]))
    case("Select", T("b", [3], [True, False, True]), T("i32", [2, 2], [1, 2, 3, 4]), T("i32", [2, 2], [5, 6, 7, 8]))
    case("Select", T("b", [], [True]), T("i32", [2, 2], [1, 2, 3, 4]), T("i32", [1, 2], [5, 6]))
    case("Select", T("b", [1, 2], [True, False]), T("i32", [2, 2], [1, 2, 3, 4]), T("i32", [2, 2], [5, 6, 7, 8]))
    case("Select", T("b", [1], [True]), T("i32", [], [1]), T("i32", [], [2]))
    case("Select", T("b", [], [False]), T("f32", [2], [1, 2]), T("f32", [2], [3, 4]))
    case("Select", T("b", [2, 2], [True, False, False, True]), T("str", [2, 2], ["a", "b", "c", "d"]),
         T("str", [2, 2], ["w", "x", "y", "z"]))
    case("Select", T("b", [1], [False]), T("f32", [1, 3], [1, 2, 3]), T("f32", [1, 3], [4, 5, 6]))
    case("ClipByValue", T("f32", [4], [nan, -5, 5, 1]), T("f32", [], [-1]), T("f32", [], [2]))
    case("ClipByValue", T("f32", [3], [1, 2, 3]), T("f32", [3], [0, 2.5, 0]), T("f32", [], [2]))
    case("ClipByValue", T("f32", [3], [1, 2, 3]), T("f32", [], [3]), T("f32", [], [1]))
    case("ClipByValue", T("i32", [3], [1, 5, -3]), T("i32", [], [0]), T("i32", [3], [2, 2, 2]))
    case("ClipByValue", T("f32", [3], [1, 2, 3]), T("f32", [2], [0, 0]), T("f32", [], [2]))
    case("AddN", T("i32", [2], [1, 2]), T("i32", [2], [3, 4]), T("i32", [2], [5, 2147483647]))
    case("AddN", T("f32", [2, 2], [1, 2, 3, 4]))
    case("AddN", T("f16", [2], [1, 2048]), T("f16", [2], [0.5, 1]))
    case("AddN", T("f32", [2], [1, 2]), T("f32", [1], [1]))
    # ---- reductions
    x3 = T("f32", [2, 3, 4], [float(i) for i in range(24)])
    for axes in [[0], [1], [2], [-1], [0, 2], [0, 1], [1, 2], [0, 1, 2], [], [2, 0]]:
        case("Sum", x3, T("i32", [len(axes)], axes))
    case("Sum", x3, T("i64", [], [1]), keep_dims=True)
    case("Mean", x3, T("i32", [2], [0, 2]), keep_dims=True)
    case("Sum", T("f32", [2, 3], [1] * 6), T("i32", [1, 1], [0]))
    case("Sum", T("f32", [2, 3], [1] * 6), T("i32", [2], [1, 1]))
    case("Sum", T("f32", [2, 3], [1] * 6), T("i32", [2], [1, -1]))
    case("Sum", T("f32", [2, 3], [1] * 6), T("i32", [1], [2]))
    case("Sum", T("f32", [2, 3], [1] * 6), T("i32", [1], [-3]))
    case("Sum", T("f32", [], [5]), T("i32", [0], []))
    case("Sum", T("f32", [], [5]), T("i32", [1], [0]))
    case("Sum", T("b", [1], [True]), T("i32", [1], [0]))
    case("Sum", T("f32", [2, 1, 3], [1, 2, 3, 4, 5, 6]), T("i32", [1], [1]))
    case("Sum", T("f32", [1, 2, 1, 3, 1], list(range(6))), T("i32", [3], [0, 2, 4]))
    case("Sum", T("f32", [2, 2, 2, 2], list(range(16))), T("i32", [2], [0, 2]))
    case("Sum", T("f32", [2, 2, 2, 2], list(range(16))), T("i32", [2], [1, 3]))
    case("Sum", T("f32", [19], [0.1 * i for i in range(19)]), T("i32", [], [0]))
    case("Sum", T("i32", [3], [2147483647, 1, 5]), T("i32", [], [0]))
    case("Sum", T("i8", [3], [100, 100, 100]), T("i32", [], [0]))
    case("Prod", T("i32", [2, 3], [1, 2, 3, 4, 5, 6]), T("i32", [], [1]))
    case("Prod", T("f32", [2, 3], [1, 2, 3, 4, 5, 6]), T("i32", [], [0]))
    case("Max", T("f32", [10], [1, 2, 3, 4, 5, 6, 7, 8, 9, nan]), T("i32", [], [0]))
    case("Max", T("f32", [2, 3], [1, nan, 3, 4, 5, 6]), T("i32", [], [0]))
    case("Min", T("f32", [3], [1, nan, 3]), T("i32", [], [0]))
    case("Min", T("i64", [2, 2], [5, -9223372036854775808, 3, 4]), T("i32", [], [1]))
    case("Max", T("f32", [2, 0], []), T("i32", [], [1]))
    case("Max", T("i32", [2, 0], []), T("i32", [], [1]))
    case("Min", T("u8", [2, 0], []), T("i32", [], [1]))
    case("Min", T("f32", [0, 2], []), T("i32", [], [0]))
    case("Mean", T("f32", [2, 0], []), T("i32", [], [1]))
    case("Mean", T("i32", [2, 0], []), T("i32", [], [1]))
    case("Sum", T("f32", [2, 0], []), T("i32", [], [1]))
    case("Prod", T("i32", [2, 0], []), T("i32", [], [1]))
    case("Sum", T("f32", [0, 2], []), T("i32", [], [1]))
    case("Mean", T("i32", [4], [1, 2, 2, -7]), T("i32", [], [0]))
    case("Mean", T("i8", [3], [100, 100, 100]), T("i32", [], [0]))
    case("Mean", T("i32", [3], [2**30, 2**30, 2**30]), T("i32", [], [0]))
    case("Mean", T("u8", [3], [200, 200, 201]), T("i32", [], [0]))
    case("Mean", T("f64", [2, 2], [1, 2, 3, 5]), T("i32", [], [1]))
    case("Mean", T("f16", [4], [1, 2, 3, 4.5]), T("i32", [], [0]))
    case("Mean", T("bf16", [2, 2], [1, 2, 3, 4]), T("i32", [], [0]))
    case("Max", T("f32", [2, 3], [1, 2, 3, 4, 5, 6]), T("f32", [], [0]))
    case("All", T("b", [2, 2], [True, False, True, True]), T("i32", [], [1]))
    case("Any", T("b", [2, 2], [True, False, False, False]), T("i32", [], [1]))
    case("All", T("b", [2, 0], []), T("i32", [], [1]))
    case("Any", T("b", [2, 0], []), T("i32", [], [1]))
    case("All", T("f32", [2], [1, 2]), T("i32", [], [0]))
    # ---- argmax / argmin
    case("ArgMax", T("f32", [4], [1, nan, 3, nan]), T("i32", [], [0]))
    case("ArgMax", T("f32", [3], [nan, 1, 3]), T("i32", [], [0]))
    case("ArgMax", T("f32", [2], [nan, nan]), T("i32", [], [0]))
    case("ArgMax", T("f32", [2], [1, nan]), T("i32", [], [0]))
    case("ArgMin", T("f32", [3], [1, nan, 0]), T("i32", [], [0]))
    case("ArgMax", T("f32", [2, 3], [1, 3, 3, 2, 2, 0]), T("i32", [], [1]))
    case("ArgMin", T("f32", [2, 3], [1, 3, 1, 2, 0, 0]), T("i64", [], [-1]))
    case("ArgMax", T("f32", [3, 3], [1, nan, 3, 2, 2, 4, 0, 5, 4]), T("i32", [], [0]))
    case("ArgMax", T("i32", [2, 2, 2], [1, 5, 3, 2, 9, 9, 0, 10]), T("i32", [], [1]), output_type=tf.int32)
    case("ArgMin", T("f16", [3], [2, -1, -1]), T("i32", [], [0]))
    case("ArgMax", T("b", [3], [False, True, True]), T("i32", [], [0]))
    case("ArgMax", T("f32", [2, 0], []), T("i32", [], [1]))
    case("ArgMax", T("f32", [0, 3], []), T("i32", [], [1]))
    case("ArgMax", T("f32", [2, 3], [0] * 6), T("i32", [], [2]))
    case("ArgMax", T("f32", [2], [1, 2]), T("i32", [1], [0]))
    case("ArgMax", T("f32", [], [1]), T("i32", [], [0]))


if __name__ == "__main__":
    sys.exit(main())
