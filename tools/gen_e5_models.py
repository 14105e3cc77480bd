#!/usr/bin/env python3
"""gen_e5_models.py - small SavedModels with mutable containers, saved with tf.saved_model.save, and
TensorFlow's outputs of a fixed sequence of signature calls on each (session 20, e5).

Writes tests/fixtures/mutable_tables/<model>/ (the SavedModels: tables filled before save, so their
contents travel through the variables bundle as "-keys"/"-values" saveables) and
tests/unit/e5_calls.h (the call sequence: inputs, TF's outputs or TF's error text, one call after
another on one loaded model, so the mutations of earlier calls are seen by later ones).
Exports of hash tables are compared as sets (TF's order is unspecified): rows are sorted by key
here and in the test; a DenseHashTable's export has its empty/deleted buckets dropped and its
bucket count kept. Run: build/venv/bin/python tools/gen_e5_models.py
"""
import os
import shutil
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "mutable_tables")
OUT_H = os.path.join(ROOT, "tests", "unit", "e5_calls.h")

S = tf.TensorSpec
DT = {tf.string: "SM_STRING", tf.int64: "SM_INT64", tf.int32: "SM_INT32", tf.float32: "SM_FLOAT",
      tf.float64: "SM_DOUBLE", tf.bool: "SM_BOOL"}


class StrI64(tf.Module):
    """string -> int64 (MutableHashTableV2)."""

    def __init__(self):
        super().__init__()
        self.t = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, default_value=-1)
        self.t.insert(tf.constant(["a", "b", "c"]), tf.constant([1, 2, 3], tf.int64))

    @tf.function(input_signature=[S([None], tf.string)])
    def lookup(self, keys):
        return {"values": self.t.lookup(keys)}

    @tf.function(input_signature=[S([None], tf.string), S([None], tf.int64)])
    def insert(self, keys, values):
        self.t.insert(keys, values)
        return {"size": self.t.size()}

    @tf.function(input_signature=[S([None], tf.string)])
    def remove(self, keys):
        self.t.remove(keys)
        return {"size": self.t.size()}

    @tf.function(input_signature=[])
    def size(self):
        return {"size": self.t.size()}

    @tf.function(input_signature=[])
    def export(self):
        k, v = self.t.export()
        return {"keys": k, "values": v}


class I64F32(tf.Module):
    """int64 -> float (MutableHashTableV2), lookups of a 2-D key tensor."""

    def __init__(self):
        super().__init__()
        self.t = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=-0.5)
        self.t.insert(tf.constant([10, 20, -7], tf.int64), tf.constant([1.5, 2.5, -3.0]))

    @tf.function(input_signature=[S([None, None], tf.int64)])
    def lookup(self, keys):
        return {"values": self.t.lookup(keys)}

    @tf.function(input_signature=[S([None], tf.int64), S([None], tf.float32)])
    def insert(self, keys, values):
        self.t.insert(keys, values)
        return {"size": self.t.size()}

    @tf.function(input_signature=[S([None], tf.int64)])
    def remove(self, keys):
        self.t.remove(keys)
        return {"size": self.t.size()}

    @tf.function(input_signature=[])
    def export(self):
        k, v = self.t.export()
        return {"keys": k, "values": v}


class I64Vec(tf.Module):
    """int64 -> float[3] (MutableHashTableOfTensorsV2)."""

    def __init__(self):
        super().__init__()
        self.t = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=[0.0, 0.0, -1.0])
        self.t.insert(tf.constant([1, 2], tf.int64), tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))

    @tf.function(input_signature=[S([None], tf.int64)])
    def lookup(self, keys):
        return {"values": self.t.lookup(keys)}

    @tf.function(input_signature=[S([None], tf.int64), S([None, 3], tf.float32)])
    def insert(self, keys, values):
        self.t.insert(keys, values)
        return {"size": self.t.size()}

    @tf.function(input_signature=[S([None], tf.int64)])
    def remove(self, keys):
        self.t.remove(keys)
        return {"size": self.t.size()}

    @tf.function(input_signature=[])
    def export(self):
        k, v = self.t.export()
        return {"keys": k, "values": v}


class Dense(tf.Module):
    """int64 -> int64 DenseHashTable (MutableDenseHashTableV2), 8 buckets to start."""

    def __init__(self):
        super().__init__()
        self.t = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, default_value=-1, empty_key=-100,
                                                       deleted_key=-200, initial_num_buckets=8)
        self.t.insert(tf.constant([5, 6, 7], tf.int64), tf.constant([50, 60, 70], tf.int64))

    @tf.function(input_signature=[S([None], tf.int64)])
    def lookup(self, keys):
        return {"values": self.t.lookup(keys)}

    @tf.function(input_signature=[S([None], tf.int64), S([None], tf.int64)])
    def insert(self, keys, values):
        self.t.insert(keys, values)
        return {"size": self.t.size()}

    @tf.function(input_signature=[S([None], tf.int64)])
    def remove(self, keys):
        self.t.remove(keys)
        return {"size": self.t.size()}

    @tf.function(input_signature=[])
    def export(self):
        k, v = self.t.export()
        return {"keys": k, "values": v}


class Misc(tf.Module):
    """TensorMap, Optional, VariableShape and the TF1 stack in tf.functions."""

    def __init__(self):
        super().__init__()
        self.v = tf.Variable(tf.zeros([2, 5]))

    @tf.function(input_signature=[S([None], tf.int32), S([None], tf.float32)])
    def tmap(self, keys, values):
        from tensorflow.python.ops import map_ops
        m = map_ops.empty_tensor_map()
        for i in tf.range(tf.shape(keys)[0]):
            m = map_ops.tensor_map_insert(m, keys[i], values[i])
        has = map_ops.tensor_map_has_key(m, tf.constant(3))
        m = map_ops.tensor_map_erase(m, keys[0], tf.float32)
        size = map_ops.tensor_map_size(m)
        got = map_ops.tensor_map_lookup(m, keys[-1], tf.float32)
        stacked = map_ops.tensor_map_stack_keys(m, tf.int32)
        return {"has": has, "size": size, "last": got, "keys": tf.sort(stacked)}

    @tf.function(input_signature=[S([], tf.int32)])
    def tmap_lookup(self, k):
        from tensorflow.python.ops import map_ops
        m = map_ops.tensor_map_insert(map_ops.empty_tensor_map(), tf.constant(1), tf.constant([1.0, 2.0]))
        return {"value": map_ops.tensor_map_lookup(m, k, tf.float32)}

    @tf.function(input_signature=[S([], tf.int32)])
    def tmap_erase(self, k):
        from tensorflow.python.ops import map_ops
        m = map_ops.tensor_map_insert(map_ops.empty_tensor_map(), tf.constant(1), tf.constant(1.0))
        m = map_ops.tensor_map_erase(m, k, tf.float32)
        return {"size": map_ops.tensor_map_size(m)}

    @tf.function(input_signature=[S([None], tf.int64), S([None], tf.float32), S([None], tf.int64)])
    def anon(self, keys, values, query):
        h = tf.raw_ops.AnonymousMutableHashTable(key_dtype=tf.int64, value_dtype=tf.float32)
        tf.raw_ops.LookupTableInsertV2(table_handle=h, keys=keys, values=values)
        a = tf.raw_ops.LookupTableFindV2(table_handle=h, keys=query, default_value=tf.constant(-1.0))
        d = tf.raw_ops.AnonymousMutableDenseHashTable(empty_key=tf.constant(-1, tf.int64),
                                                      deleted_key=tf.constant(-2, tf.int64),
                                                      value_dtype=tf.float32, initial_num_buckets=4)
        tf.raw_ops.LookupTableInsertV2(table_handle=d, keys=keys, values=values * 2.0)
        b = tf.raw_ops.LookupTableFindV2(table_handle=d, keys=query, default_value=tf.constant(-1.0))
        v = tf.raw_ops.AnonymousMutableHashTableOfTensors(key_dtype=tf.int64, value_dtype=tf.float32, value_shape=[2])
        tf.raw_ops.LookupTableInsertV2(table_handle=v, keys=keys, values=tf.stack([values, -values], axis=1))
        c = tf.raw_ops.LookupTableFindV2(table_handle=v, keys=query, default_value=tf.constant([0.0, 0.0]))
        s = tf.raw_ops.AnonymousHashTable(key_dtype=tf.int64, value_dtype=tf.float32)
        tf.raw_ops.InitializeTableV2(table_handle=s, keys=keys, values=values + 1.0)
        e = tf.raw_ops.LookupTableFindV2(table_handle=s, keys=query, default_value=tf.constant(0.0))
        n = tf.raw_ops.LookupTableSizeV2(table_handle=d)
        return {"a": a, "b": b, "c": c, "e": e, "n": n}

    @tf.function(input_signature=[S([], tf.float32), S([], tf.bool)])
    def optional(self, x, some):
        o = tf.cond(some, lambda: tf.experimental.Optional.from_value(x * 2.0),
                    lambda: tf.experimental.Optional.empty(tf.TensorSpec([], tf.float32)))
        has = o.has_value()
        v = tf.cond(has, lambda: o.get_value(), lambda: tf.constant(-1.0))
        return {"has": has, "value": v}

    @tf.function(input_signature=[S([], tf.float32)])
    def optional_get(self, x):
        o = tf.experimental.Optional.empty(tf.TensorSpec([], tf.float32))
        return {"value": o.get_value() + x}

    @tf.function(input_signature=[])
    def var_shape(self):
        return {"shape": tf.shape(self.v), "shape32": tf.shape(self.v, out_type=tf.int32)}

    @tf.function(input_signature=[S([None], tf.float32)])
    def stack(self, xs):
        h = tf.raw_ops.StackV2(max_size=tf.constant(-1), elem_type=tf.float32, stack_name="s")
        n = tf.shape(xs)[0]
        for i in tf.range(n):
            tf.raw_ops.StackPushV2(handle=h, elem=xs[i])
        total = tf.constant(0.0)
        for i in tf.range(n):
            p = tf.raw_ops.StackPopV2(handle=h, elem_type=tf.float32)
            total = total * 10.0 + tf.reshape(p, [])
        tf.raw_ops.StackCloseV2(handle=h)
        return {"total": total}

    @tf.function(input_signature=[S([None], tf.float32)])
    def stack_bounded(self, xs):
        h = tf.raw_ops.StackV2(max_size=tf.constant(2), elem_type=tf.float32, stack_name="b")
        for i in tf.range(tf.shape(xs)[0]):
            tf.raw_ops.StackPushV2(handle=h, elem=xs[i])
        return {"top": tf.reshape(tf.raw_ops.StackPopV2(handle=h, elem_type=tf.float32), [])}


def sigs(m, names):
    return {n: getattr(m, n) for n in names}


MODELS = [
    ("str_i64", StrI64, ["lookup", "insert", "remove", "size", "export"]),
    ("i64_f32", I64F32, ["lookup", "insert", "remove", "export"]),
    ("i64_vec", I64Vec, ["lookup", "insert", "remove", "export"]),
    ("dense", Dense, ["lookup", "insert", "remove", "export"]),
    ("misc", Misc, ["tmap", "tmap_lookup", "tmap_erase", "anon", "optional", "optional_get", "var_shape", "stack", "stack_bounded"]),
]

s_ = lambda *a: np.array(a, dtype=object)  # noqa: E731
i64 = lambda *a: np.array(a, dtype=np.int64)  # noqa: E731
f32 = lambda *a: np.array(a, dtype=np.float32)  # noqa: E731

# (model, signature, {input: value}) in order; every call sees the earlier ones' mutations
CALLS = [
    ("str_i64", "lookup", {"keys": s_("a", "b", "zz", "c", "")}),
    ("str_i64", "size", {}),
    ("str_i64", "export", {}),
    ("str_i64", "insert", {"keys": s_("d", "a", "", "e\x00x"), "values": i64(4, 11, 0, 5)}),
    ("str_i64", "lookup", {"keys": s_("a", "d", "", "e\x00x", "e")}),
    ("str_i64", "insert", {"keys": s_("q", "q"), "values": i64(7, 8)}),
    ("str_i64", "lookup", {"keys": s_("q")}),
    ("str_i64", "remove", {"keys": s_("b", "nope", "b", "")}),
    ("str_i64", "lookup", {"keys": s_("b", "", "a")}),
    ("str_i64", "insert", {"keys": s_(), "values": i64()}),
    ("str_i64", "remove", {"keys": s_()}),
    ("str_i64", "lookup", {"keys": s_()}),
    ("str_i64", "insert", {"keys": s_("x", "y"), "values": i64(1)}),
    ("str_i64", "export", {}),
    ("str_i64", "size", {}),
    ("i64_f32", "lookup", {"keys": np.array([[10, 20], [30, -7]], np.int64)}),
    ("i64_f32", "insert", {"keys": i64(30, 10), "values": f32(3.5, np.nan)}),
    ("i64_f32", "lookup", {"keys": np.array([[10, 20, 30]], np.int64)}),
    ("i64_f32", "remove", {"keys": i64(20)}),
    ("i64_f32", "lookup", {"keys": np.zeros([0, 2], np.int64)}),
    ("i64_f32", "export", {}),
    ("i64_vec", "lookup", {"keys": i64(1, 2, 3)}),
    ("i64_vec", "insert", {"keys": i64(3, 1), "values": np.array([[7, 8, 9], [-1, -2, -3]], np.float32)}),
    ("i64_vec", "lookup", {"keys": i64(1, 2, 3, 4)}),
    ("i64_vec", "remove", {"keys": i64(2)}),
    ("i64_vec", "export", {}),
    ("i64_vec", "insert", {"keys": i64(5), "values": np.zeros([2, 3], np.float32)}),
    ("dense", "lookup", {"keys": i64(5, 6, 7, 8)}),
    ("dense", "insert", {"keys": i64(8, 9, 10, 11, 12, 13, 5), "values": i64(80, 90, 100, 110, 120, 130, 55)}),
    ("dense", "lookup", {"keys": i64(5, 8, 13, 14)}),
    ("dense", "export", {}),
    ("dense", "remove", {"keys": i64(8, 9, 99)}),
    ("dense", "lookup", {"keys": i64(8, 9, 10)}),
    ("dense", "insert", {"keys": i64(-100), "values": i64(1)}),
    ("dense", "insert", {"keys": i64(-200), "values": i64(1)}),
    ("dense", "remove", {"keys": i64(-100)}),
    ("dense", "lookup", {"keys": i64(-100)}),
    ("dense", "insert", {"keys": i64(1, 2), "values": i64(1)}),
    ("dense", "export", {}),
    ("misc", "tmap", {"keys": np.array([1, 3, 5, 3], np.int32), "values": f32(1.0, 2.0, 3.0, 4.0)}),
    ("misc", "tmap_lookup", {"k": np.int32(1)}),
    ("misc", "tmap_lookup", {"k": np.int32(2)}),
    ("misc", "tmap_erase", {"k": np.int32(1)}),
    ("misc", "tmap_erase", {"k": np.int32(5)}),
    ("misc", "anon", {"keys": i64(1, 2, 3, 4, 5, 6), "values": f32(1, 2, 3, 4, 5, 6), "query": i64(6, 0, 1)}),
    ("misc", "anon", {"keys": i64(), "values": f32(), "query": i64(1)}),
    ("misc", "optional", {"x": np.float32(2.5), "some": np.bool_(True)}),
    ("misc", "optional", {"x": np.float32(2.5), "some": np.bool_(False)}),
    ("misc", "optional_get", {"x": np.float32(1.0)}),
    ("misc", "var_shape", {}),
    ("misc", "stack", {"xs": f32(1, 2, 3)}),
    ("misc", "stack", {"xs": f32()}),
    ("misc", "stack_bounded", {"xs": f32(4, 5)}),
    ("misc", "stack_bounded", {"xs": f32(4, 5, 6)}),
]


def cstr(b):
    out = '"'
    for c in b:
        if c in (34, 92):
            out += "\\" + chr(c)
        elif 32 <= c < 127 and c != 63:
            out += chr(c)
        else:
            out += "\\%03o" % c
    return out + '"'


def np_dt(a):
    if a.dtype == object or a.dtype.kind in "SU":
        return tf.string
    return tf.as_dtype(a.dtype)


def emit_tensor(lines, name, a):
    a = np.asarray(a)
    dt = np_dt(a)
    dims = ", ".join(str(d) for d in a.shape) or "0"
    flat = a.reshape(-1)
    if dt == tf.string:
        vals = [x if isinstance(x, bytes) else str(x).encode() for x in flat]
        data = ", ".join(cstr(v) for v in vals) or "NULL"
        lens = ", ".join(str(len(v)) for v in vals) or "0"
        lines.append("static const char *const %s_s[] = {%s};" % (name, data))
        lines.append("static const size_t %s_l[] = {%s};" % (name, lens))
        return "{%s, %d, {%s}, NULL, %s_s, %s_l, %d}" % (DT[dt], a.ndim, dims, name, name, flat.size)
    ctype = {tf.int64: "int64_t", tf.int32: "int32_t", tf.float32: "float", tf.float64: "double", tf.bool: "uint8_t"}[dt]
    if dt in (tf.float32, tf.float64):
        def fmt(x):
            if np.isnan(x):
                return "NAN"
            if np.isinf(x):
                return "INFINITY" if x > 0 else "-INFINITY"
            return repr(float(x))
        data = ", ".join(fmt(x) for x in flat)
    else:
        data = ", ".join(str(int(x)) + ("LL" if dt == tf.int64 else "") for x in flat)
    lines.append("static const %s %s_d[] = {%s};" % (ctype, name, data or "0"))
    return "{%s, %d, {%s}, %s_d, NULL, NULL, %d}" % (DT[dt], a.ndim, dims, name, flat.size)


def tf_error(e):
    """TF's own message: the line before the '[[{{node ...}}]]' one."""
    lines = [x for x in str(getattr(e, "message", e)).split("\n") if x.strip()]
    for i, x in enumerate(lines):
        if "[[{{node" in x and i > 0:
            return lines[i - 1].strip()
    return lines[-1].strip()


def canon_export(model, mod, out):
    """Rows sorted by key; a dense table's empty/deleted buckets dropped (count kept)."""
    k, v = out["keys"], out["values"]
    nb = len(k)
    if model == "dense":
        keep = [i for i in range(nb) if k.reshape(nb, -1)[i, 0] not in (-100, -200)]
        k, v = k[keep], v[keep]
    order = sorted(range(len(k)), key=lambda i: k.reshape(len(k), -1)[i, 0])
    return {"keys": k[order], "values": v[order]}, nb


def main():
    shutil.rmtree(FIX, ignore_errors=True)
    os.makedirs(FIX)
    mods = {}
    for name, cls, names in MODELS:
        m = cls()
        d = os.path.join(FIX, name)
        tf.saved_model.save(m, d, signatures=sigs(m, names))
        # TF's own reloaded copy answers the calls (as a server would)
        mods[name] = tf.saved_model.load(d)
    lines = ["/* e5_calls.h - generated by tools/gen_e5_models.py from TensorFlow %s; do not edit. */" % tf.__version__,
             "/* Each call runs on the model loaded once per model, in this order. */"]
    calls = []
    for ci, (model, sig, ins) in enumerate(CALLS):
        fn = mods[model].signatures[sig]
        feed = {k: tf.constant(v) for k, v in ins.items()}
        err = None
        try:
            out = {k: v.numpy() for k, v in fn(**feed).items()}
        except Exception as e:  # noqa: BLE001
            err = tf_error(e)
            out = None
        nb = -1
        if out is not None and sig == "export":
            out, nb = canon_export(model, mods[model], out)
        ins_c = [(k, emit_tensor(lines, "c%d_in%d" % (ci, j), np.asarray(v))) for j, (k, v) in enumerate(ins.items())]
        outs_c = []
        if out is not None:
            outs_c = [(k, emit_tensor(lines, "c%d_out%d" % (ci, j), np.asarray(v)))
                      for j, (k, v) in enumerate(sorted(out.items()))]
        lines.append("static const e5_arg c%d_in[] = {%s};" % (ci, ", ".join("{\"%s\", %s}" % a for a in ins_c) or "{0}"))
        lines.append("static const e5_arg c%d_out[] = {%s};" % (ci, ", ".join("{\"%s\", %s}" % a for a in outs_c) or "{0}"))
        e = err[:160] if err else None
        calls.append("{\"%s\", \"%s\", c%d_in, %d, c%d_out, %d, %s, %d}" % (
            model, sig, ci, len(ins_c), ci, len(outs_c), cstr(e.encode()) if e else "NULL", nb))
        print(model, sig, "->", err if err else {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in out.items()},
              file=sys.stderr)
    lines.append("static const e5_call e5_calls[] = {")
    lines += ["    " + c + "," for c in calls]
    lines.append("};")
    with open(OUT_H, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
