#!/usr/bin/env python3
"""gen_e4_models.py - the resource-state random ops (src/ops/random_stateful.c) against TensorFlow,
through saved models: tests/fixtures/random_gen/gen is one tf.Module saved with
tf.saved_model.save whose signatures (no inputs) draw from tf.random.Generator.from_seed(...)
generators (normal, uniform float / int / full int, truncated_normal, binomial, skip, split
children) and call the raw stateful ops (StatefulUniform, StatefulStandardNormalV2, StatefulTruncatedNormal, StatefulUniformInt, StatefulUniformFullInt,
StatefulRandomBinomial, RngSkip, RngReadAndSkip) on state variables, each signature returning the
state after it too. The saved model is loaded back in TF and every signature called 3 times in a
row; tests/unit/e4_models.h holds the outputs of each call (or TF's error text) for
test_ops_e4.c, which loads the model with the C API and compares call by call, bit for bit.
(StatefulStandardNormal, the V1 op, cannot be put in a graph by TF 2.21: test_ops_e4.c checks it
by hand against StatefulStandardNormalV2.)

Run: build/venv/bin/python tools/gen_e4_models.py
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "random_gen", "gen")
CALLS = 3


class M(tf.Module):
    def __init__(self):
        super().__init__()
        G = tf.random.Generator.from_seed
        self.g_normal = G(1234)
        self.g_uniform = G(7)
        self.g_trunc = G(99)
        self.g_binom = G(2024)
        self.g_skip = G(5)
        self.g_big = G(2**40 + 17)
        parent = G(11)
        self.kids = parent.split(2)
        self.parent = parent
        # raw stateful ops over plain state variables: [counter lo, counter hi, key]
        self.s_raw = tf.Variable([123, 0, 456], dtype=tf.int64)
        self.s_wrap = tf.Variable([-256, -1, 3], dtype=tf.int64)  # counter about to wrap past 2**128
        self.s_i32 = tf.Variable([1, 2, 3], dtype=tf.int32)
        self.s_rank2 = tf.Variable([[1, 2, 3]], dtype=tf.int64)
        self.s_short = tf.Variable([1, 2], dtype=tf.int64)
        self.s_err = tf.Variable([1, 2, 3], dtype=tf.int64)

    @tf.function(input_signature=[])
    def normal(self):
        g_ = self.g_normal
        return {"f32": g_.normal([5]), "f64": g_.normal([2, 3], dtype=tf.float64), "half": g_.normal([3], dtype=tf.float16),
                "bf16": g_.normal([3], dtype=tf.bfloat16), "ms": g_.normal([4], mean=2.0, stddev=0.5),
                "empty": g_.normal([0, 3]), "state": g_.state.read_value()}

    @tf.function(input_signature=[])
    def uniform(self):
        g_ = self.g_uniform
        return {"f32": g_.uniform([5]), "f64": g_.uniform([3], dtype=tf.float64), "half": g_.uniform([3], dtype=tf.float16),
                "range": g_.uniform([4], minval=-2.0, maxval=3.0),
                "i32": g_.uniform([6], minval=-5, maxval=10, dtype=tf.int32),
                "i64": g_.uniform([4], minval=-2**40, maxval=2**50, dtype=tf.int64),
                "full_i32": g_.uniform_full_int([3], dtype=tf.int32), "full_u64": g_.uniform_full_int([3], dtype=tf.uint64),
                "full_i64": g_.uniform_full_int([2], dtype=tf.int64), "full_u32": g_.uniform_full_int([5], dtype=tf.uint32),
                "state": g_.state.read_value()}

    @tf.function(input_signature=[])
    def truncated(self):
        g_ = self.g_trunc
        return {"f32": g_.truncated_normal([9]), "f64": g_.truncated_normal([5], dtype=tf.float64),
                "ms": g_.truncated_normal([3], mean=1.0, stddev=3.0), "state": g_.state.read_value()}

    @tf.function(input_signature=[])
    def binomial(self):
        # TF's StatefulRandomBinomial updates the state without the variable's lock, and tf.function
        # does not order these ops: chained here, so TF's own values are deterministic
        g_ = self.g_binom
        draws = [
            ("i32", lambda: g_.binomial([3, 2], counts=[5.0, 50.0], probs=[0.3, 0.8])),
            ("small", lambda: g_.binomial([4], counts=[1.0, 3.0, 7.0, 9.0], probs=[0.1, 0.95, 0.5, 0.7])),
            ("big", lambda: g_.binomial([2, 3], counts=[[100.0], [1000.0]], probs=[0.05, 0.5, 0.99])),
            ("edge", lambda: g_.binomial([5], counts=[0.0, 4.0, 4.0, -1.0, 6.0], probs=[0.5, 0.0, 1.0, 0.5, 2.0])),
            ("f64", lambda: g_.binomial([3, 1], counts=[20.0], probs=[0.25], dtype=tf.float64)),
            ("i64", lambda: g_.binomial([2], counts=tf.constant([30.0, 2.0], tf.float64),
                                        probs=tf.constant([0.6, 0.5], tf.float64), dtype=tf.int64)),
            ("half", lambda: g_.binomial([2], counts=tf.constant([40.0, 12.0], tf.float16),
                                         probs=tf.constant([0.3, 0.6], tf.float16), dtype=tf.float16)),
        ]
        out, last = {}, []
        for k, f in draws:
            with tf.control_dependencies(last):
                out[k] = f()
            last = [out[k]]
        with tf.control_dependencies(last):
            out["state"] = g_.state.read_value()
        return out

    @tf.function(input_signature=[])
    def skip(self):
        g_ = self.g_skip
        g_.skip(10)
        a = g_.normal([2])
        g_.skip(0)
        b = g_.uniform([2])
        return {"a": a, "b": b, "state": g_.state.read_value(), "big": self.g_big.normal([3]),
                "big_state": self.g_big.state.read_value()}

    @tf.function(input_signature=[])
    def split(self):
        return {"k0": self.kids[0].normal([3]), "k1": self.kids[1].uniform([2], maxval=100, dtype=tf.int64),
                "p": self.parent.normal([2]), "k0_state": self.kids[0].state.read_value()}

    @tf.function(input_signature=[])
    def raw(self):
        h = self.s_raw.handle
        r = tf.raw_ops
        a = tf.constant(1, tf.int64)
        out = {
            "uniform": r.StatefulUniform(resource=h, algorithm=a, shape=[3], dtype=tf.float32),
            "uniform_bf16": r.StatefulUniform(resource=h, algorithm=a, shape=tf.constant([2], tf.int64), dtype=tf.bfloat16),
            "normal": r.StatefulStandardNormalV2(resource=h, algorithm=a, shape=[2, 2], dtype=tf.float64),
            "trunc": r.StatefulTruncatedNormal(resource=h, algorithm=a, shape=[5], dtype=tf.float32),
            "trunc_half": r.StatefulTruncatedNormal(resource=h, algorithm=a, shape=[3], dtype=tf.float16),
            "int": r.StatefulUniformInt(resource=h, algorithm=a, shape=[4], minval=tf.constant(3, tf.int64),
                                        maxval=tf.constant(9, tf.int64)),
            "int32": r.StatefulUniformInt(resource=h, algorithm=a, shape=[4], minval=tf.constant(-100, tf.int32),
                                          maxval=tf.constant(100, tf.int32)),
            "full": r.StatefulUniformFullInt(resource=h, algorithm=a, shape=[3], dtype=tf.uint32),
            "binom": r.StatefulRandomBinomial(resource=h, algorithm=a, shape=[2, 2], counts=[10.0, 30.0], probs=[0.5, 0.2],
                                              dtype=tf.int32),
        }
        with tf.control_dependencies(list(out.values())):
            r.RngSkip(resource=h, algorithm=a, delta=tf.constant(7, tf.int64))
            out["read"] = r.RngReadAndSkip(resource=h, alg=tf.constant(1, tf.int32), delta=tf.constant(3, tf.uint64))
        with tf.control_dependencies([out["read"]]):
            out["after"] = r.StatefulUniform(resource=h, algorithm=a, shape=[1], dtype=tf.float32)
        with tf.control_dependencies([out["after"]]):
            out["state"] = self.s_raw.read_value()
        return out

    @tf.function(input_signature=[])
    def wrap(self):
        a = tf.constant(1, tf.int64)
        x = tf.raw_ops.StatefulUniformFullInt(resource=self.s_wrap.handle, algorithm=a, shape=[3], dtype=tf.int64)
        with tf.control_dependencies([x]):
            return {"x": x, "state": self.s_wrap.read_value()}

    # errors: each a signature TF refuses at run time
    def _err(self, var, fn):
        x = fn(var.handle)
        return {"x": x}

    @tf.function(input_signature=[])
    def err_dtype(self):
        return self._err(self.s_i32, lambda h: tf.raw_ops.StatefulUniform(resource=h, algorithm=tf.constant(1, tf.int64), shape=[2]))

    @tf.function(input_signature=[])
    def err_rank(self):
        return self._err(self.s_rank2, lambda h: tf.raw_ops.StatefulUniform(resource=h, algorithm=tf.constant(1, tf.int64), shape=[2]))

    @tf.function(input_signature=[])
    def err_short(self):
        return self._err(self.s_short, lambda h: tf.raw_ops.StatefulStandardNormalV2(
            resource=h, algorithm=tf.constant(1, tf.int64), shape=[2]))

    @tf.function(input_signature=[])
    def err_alg(self):
        return self._err(self.s_err, lambda h: tf.raw_ops.StatefulUniform(resource=h, algorithm=tf.constant(5, tf.int64), shape=[2]))

    @tf.function(input_signature=[])
    def err_threefry(self):
        return self._err(self.s_err, lambda h: tf.raw_ops.RngReadAndSkip(resource=h, alg=tf.constant(2, tf.int32),
                                                                           delta=tf.constant(1, tf.uint64)))

    @tf.function(input_signature=[])
    def err_minmax(self):
        return self._err(self.s_err, lambda h: tf.raw_ops.StatefulUniformInt(
            resource=h, algorithm=tf.constant(1, tf.int64), shape=[2], minval=5, maxval=5))

    @tf.function(input_signature=[])
    def err_binom_shape(self):
        return self._err(self.s_err, lambda h: tf.raw_ops.StatefulRandomBinomial(
            resource=h, algorithm=tf.constant(1, tf.int64), shape=[3], counts=[1.0, 2.0], probs=[0.5, 0.5]))

    @tf.function(input_signature=[])
    def err_neg_shape(self):
        return self._err(self.s_err, lambda h: tf.raw_ops.StatefulUniform(resource=h, algorithm=tf.constant(1, tf.int64),
                                                                            shape=tf.constant([2, -1])))


SIGS = ["normal", "uniform", "truncated", "binomial", "skip", "split", "raw", "wrap", "err_dtype", "err_rank",
        "err_short", "err_alg", "err_threefry", "err_minmax", "err_binom_shape",
        "err_neg_shape"]


def main():
    m = M()
    shutil.rmtree(OUT, ignore_errors=True)
    sigs = {}
    for s in SIGS:  # an error TF's shape functions catch while tracing cannot be saved: left out
        try:
            sigs[s] = getattr(m, s).get_concrete_function()
        except ValueError as e:
            print("left out %s: %s" % (s, str(e).strip().split("\n")[-1][:200]))
    tf.saved_model.save(m, OUT, signatures=sigs)
    loaded = tf.saved_model.load(OUT)
    rows = []
    for s in sigs:
        fn = loaded.signatures[s]
        for call in range(CALLS):
            try:
                outs = fn()
                # copies: a state tensor still referenced makes TF's StatefulRandomBinomial (which
                # takes its data pointer before copy-on-write) advance the stale copy, not the variable
                for k in sorted(outs):
                    rows.append((s, call, k, tf.constant(outs[k].numpy()), None))
                del outs
            except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as e:
                msg = e.message.split("<stack traces unavailable>\n")[-1].split("\n\t [[")[0]
                rows.append((s, call, "", None, msg))
    path = os.path.join(ROOT, "tests", "unit", "e4_models.h")
    lines = ["/* e4_models.h - GENERATED by tools/gen_e4_models.py from TensorFlow %s; do not edit. */" % tf.__version__,
             "#ifndef SM_TEST_E4_MODELS_H", "#define SM_TEST_E4_MODELS_H", '#include "array_case.h"',
             "/* signature, call (0-based, in order), output key, TF's value (or TF's error text) */",
             "typedef struct e4_row { const char *sig; int call; const char *key; tc_tensor want; const char *err; } e4_row;",
             "static const e4_row e4_rows[] = {"]
    for s, call, k, t, err in rows:
        lines.append("    {%s, %d, %s, %s, %s}," % (g.c_str(s), call, g.c_str(k), g.c_tensor(t) if t is not None else "{0}",
                                                   g.c_str(err) if err else "NULL"))
    lines += ["};", "#endif", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("wrote %d rows to %s" % (len(rows), path))


if __name__ == "__main__":
    main()
