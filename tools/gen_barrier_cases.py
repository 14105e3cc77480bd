#!/usr/bin/env python3
"""gen_barrier_cases.py - a TF1 SavedModel (tf.compat.v1 SavedModelBuilder) whose signatures use TF1's
barriers (Barrier, BarrierInsertMany, BarrierTakeMany, BarrierClose, BarrierReadySize,
BarrierIncompleteSize), and TensorFlow's outputs of a fixed sequence of signature calls on it
(session 23, i1).

Writes tests/fixtures/barrier/ (barriers are not saved state: every load starts with empty ones) and
tests/unit/barrier_cases.h (the calls in e5_call.h's format: inputs, TF's outputs or TF's error
text, one after another in one session). None of the listed calls waits (the waits are tested by
hand in tests/unit/test_ops_barrier.c). Run: build/venv/bin/python tools/gen_barrier_cases.py
"""
import os
import shutil
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_e5_models import cstr, emit_tensor, tf_error  # noqa: E402

tf1 = tf.compat.v1
R = tf.raw_ops
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "barrier")
OUT_H = os.path.join(ROOT, "tests", "unit", "barrier_cases.h")


def ph(dt, shape, name):
    return tf1.placeholder(dt, shape, name=name)


def build():
    """{signature: (inputs {name: placeholder}, outputs {name: tensor})}"""
    sigs = {}
    # barrier "b": (float [2], int32 []) components; "s": one string [] component
    for pre, types, shapes, vals in (("b", [tf.float32, tf.int32], [[2], []], [(tf.float32, [None, 2]), (tf.int32, [None])]),
                                     ("s", [tf.string], [[]], [(tf.string, [None])])):
        h = R.Barrier(component_types=types, shapes=shapes, shared_name=pre)

        def sizes(dep):
            with tf.control_dependencies([dep]):
                return {"ready": R.BarrierReadySize(handle=h), "inc": R.BarrierIncompleteSize(handle=h)}
        k = ph(tf.string, [None], pre + "_k")
        for ci, (dt, shp) in enumerate(vals):
            v = ph(dt, shp, "%s_v%d" % (pre, ci))
            sigs["%s_ins%d" % (pre, ci)] = ({"k": k, "v": v}, sizes(R.BarrierInsertMany(handle=h, keys=k, values=v, component_index=ci)))
        n = ph(tf.int32, [], pre + "_n")
        for small in (False, True):
            t = R.BarrierTakeMany(handle=h, num_elements=n, component_types=types, allow_small_batch=small)
            outs = {"idx": t[0], "keys": t[1]}
            for ci in range(len(types)):
                outs["v%d" % ci] = t[2][ci]
            sigs[pre + ("_take_small" if small else "_take")] = ({"n": n}, outs)
        sigs[pre + "_sizes"] = ({}, sizes(tf.no_op()))
        sigs[pre + "_close"] = ({}, sizes(R.BarrierClose(handle=h)))
        sigs[pre + "_cancel"] = ({}, sizes(R.BarrierClose(handle=h, cancel_pending_enqueues=True)))
    hb = R.Barrier(component_types=[tf.float32, tf.int32], shapes=[[2], []], shared_name="b")
    # a wrong-dtype insert (float values into the int32 component), an out-of-range component
    fk, fv = ph(tf.string, [None], "bad_k"), ph(tf.float32, [None], "bad_v")
    with tf.control_dependencies([R.BarrierInsertMany(handle=hb, keys=fk, values=fv, component_index=1)]):
        sigs["b_ins_f1"] = ({"k": fk, "v": fv}, {"ready": R.BarrierReadySize(handle=hb)})
    with tf.control_dependencies([R.BarrierInsertMany(handle=hb, keys=fk, values=fv, component_index=2)]):
        sigs["b_ins_c2"] = ({"k": fk, "v": fv}, {"ready": R.BarrierReadySize(handle=hb)})
    # the same name with other types / shapes; a capacity; a timeout
    h2 = R.Barrier(component_types=[tf.float32], shapes=[[2]], shared_name="b")
    sigs["b_other_types"] = ({}, {"ready": R.BarrierReadySize(handle=h2)})
    h3 = R.Barrier(component_types=[tf.float32, tf.int32], shapes=[[3], []], shared_name="b")
    sigs["b_other_shapes"] = ({}, {"ready": R.BarrierReadySize(handle=h3)})
    h4 = R.Barrier(component_types=[tf.float32], shapes=[[]], capacity=5, shared_name="cap")
    sigs["cap"] = ({}, {"ready": R.BarrierReadySize(handle=h4)})
    n = ph(tf.int32, [], "to_n")
    t = R.BarrierTakeMany(handle=hb, num_elements=n, component_types=[tf.float32, tf.int32], timeout_ms=5)
    sigs["b_take_timeout"] = ({"n": n}, {"idx": t[0]})
    return sigs


f32 = lambda *a: np.array(a, dtype=np.float32).reshape(-1, 2) if a else np.zeros((0, 2), np.float32)  # noqa: E731
i32 = lambda *a: np.array(a, dtype=np.int32)  # noqa: E731
S = lambda *a: np.array([x.encode() for x in a], dtype=object)  # noqa: E731
n = lambda v: np.int32(v)  # noqa: E731

CALLS = [
    ("b_sizes", {}),
    ("b_ins0", {"k": S("a", "b", "c"), "v": f32(1, 2, 3, 4, 5, 6)}),
    ("b_ins1", {"k": S("b"), "v": i32(20)}),
    ("b_ins1", {"k": S("d", "a"), "v": i32(40, 10)}),
    ("b_ins0", {"k": S("d"), "v": f32(7, 8)}),
    ("b_ins1", {"k": S("c", "e", "f"), "v": i32(30, 50, 60)}),
    ("b_ins0", {"k": S("f", "e"), "v": f32(9, 9, 8, 8)}),
    ("b_take", {"n": n(2)}),
    ("b_take", {"n": n(0)}),
    ("b_take_small", {"n": n(1)}),
    ("b_sizes", {}),
    ("b_take", {"n": n(3)}),
    ("b_ins0", {"k": S("g"), "v": f32(1, 1)}),
    ("b_ins0", {"k": S("g"), "v": f32(2, 2)}),
    ("b_ins0", {"k": S(), "v": f32()}),
    ("b_ins1", {"k": S("h"), "v": i32()}),
    ("b_ins0", {"k": S("x", "y"), "v": f32(1, 2, 3, 4, 5, 6)}),
    ("b_ins1", {"k": S("y", "x"), "v": i32(1, 2)}),
    ("b_ins_f1", {"k": S("g"), "v": np.array([1], np.float32)}),
    ("b_ins_c2", {"k": S("g"), "v": np.array([1], np.float32)}),
    ("b_other_types", {}),
    ("b_other_shapes", {}),
    ("cap", {}),
    ("b_take_timeout", {"n": n(1)}),
    ("b_sizes", {}),
    ("b_ins1", {"k": S("p", "q"), "v": i32(1, 2)}),
    ("b_ins0", {"k": S("q", "p"), "v": f32(1, 1, 2, 2)}),
    ("b_close", {}),
    ("b_close", {}),
    ("b_sizes", {}),
    ("b_ins0", {"k": S("z"), "v": f32(1, 1)}),
    ("b_ins1", {"k": S("g", "z"), "v": i32(7, 8)}),
    ("b_ins1", {"k": S("g"), "v": i32(7)}),
    ("b_take", {"n": n(5)}),
    ("b_take_small", {"n": n(5)}),
    ("b_take", {"n": n(2)}),
    ("b_take_small", {"n": n(1)}),
    ("b_take_small", {"n": n(0)}),
    ("b_take", {"n": n(1)}),
    ("b_cancel", {}),
    ("b_cancel", {}),
    ("b_ins1", {"k": S(), "v": i32()}),
    # the string barrier: an incomplete-free close, then cancel
    ("s_ins0", {"k": S("k1", "k2", ""), "v": S("v1", "", "v\x00")}),
    ("s_ins0", {"k": S("k3"), "v": S("v3")}),
    ("s_take", {"n": n(2)}),
    ("s_ins0", {"k": S("k2"), "v": S("again")}),
    ("s_close", {}),
    ("s_sizes", {}),
    ("s_ins0", {"k": S("k4"), "v": S("v4")}),
    ("s_ins0", {"k": S(), "v": S()}),
    ("s_take", {"n": n(3)}),
    ("s_take_small", {"n": n(3)}),
    ("s_take_small", {"n": n(3)}),
]  # (a cancelling close after an incomplete-free close ends TF's process: not listed)


def main():
    shutil.rmtree(FIX, ignore_errors=True)
    g = tf.Graph()
    with g.as_default():
        sigs = build()
        sess = tf1.Session(graph=g, config=tf1.ConfigProto(operation_timeout_in_ms=3000))
        b = tf1.saved_model.Builder(FIX)
        smap = {k: tf1.saved_model.build_signature_def(
            {n: tf1.saved_model.build_tensor_info(t) for n, t in ins.items()},
            {n: tf1.saved_model.build_tensor_info(t) for n, t in outs.items()}) for k, (ins, outs) in sigs.items()}
        b.add_meta_graph_and_variables(sess, ["serve"], signature_def_map=smap, strip_default_attrs=True)
        b.save()
    lines = ["/* barrier_cases.h - generated by tools/gen_barrier_cases.py from TensorFlow %s; do not edit. */"
             % tf.__version__,
             "/* Each call runs on the model loaded once, in this order (tests/fixtures/barrier). */"]
    calls = []
    for ci, (sig, ins) in enumerate(CALLS):
        i_ph, outs = sigs[sig]
        err = None
        try:
            got = sess.run(outs, {i_ph[k]: v for k, v in ins.items()})
        except Exception as e:  # noqa: BLE001
            err, got = tf_error(e), None
        ins_c = [(k, emit_tensor(lines, "c%d_in%d" % (ci, j), np.asarray(v))) for j, (k, v) in enumerate(ins.items())]
        outs_c = []
        if got is not None:
            outs_c = [(k, emit_tensor(lines, "c%d_out%d" % (ci, j), np.asarray(v)))
                      for j, (k, v) in enumerate(sorted(got.items()))]
        lines.append("static const e5_arg c%d_in[] = {%s};" % (ci, ", ".join("{\"%s\", %s}" % a for a in ins_c) or "{0}"))
        lines.append("static const e5_arg c%d_out[] = {%s};" % (ci, ", ".join("{\"%s\", %s}" % a for a in outs_c) or "{0}"))
        e = err[:160] if err else None
        calls.append("{\"barrier\", \"%s\", c%d_in, %d, c%d_out, %d, %s, -1}" % (
            sig, ci, len(ins_c), ci, len(outs_c), cstr(e.encode()) if e else "NULL"))
        print(ci, sig, "->", err if err else {k: np.asarray(v).tolist() for k, v in got.items()}, file=sys.stderr)
    lines.append("static const e5_call barrier_calls[] = {")
    lines += ["    " + c + "," for c in calls]
    lines.append("};")
    with open(OUT_H, "w") as f:
        f.write("\n".join(lines).replace("-9223372036854775808LL", "INT64_MIN").replace("-9223372036854775808", "INT64_MIN") + "\n")  # TF's first index


if __name__ == "__main__":
    main()
