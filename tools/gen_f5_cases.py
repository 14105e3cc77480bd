#!/usr/bin/env python3
"""gen_f5_cases.py - a TF1 SavedModel (tf.compat.v1 SavedModelBuilder) whose signatures use TF1's queues
(FIFOQueueV2, PaddingFIFOQueueV2, PriorityQueueV2, RandomShuffleQueueV2, the V1 ref FIFOQueue with
QueueEnqueue/QueueDequeue), and TensorFlow's outputs of a fixed sequence of signature calls on it
(session 21, f5).

Writes tests/fixtures/queues/ (the SavedModel: queues are not saved state, so every load starts with
empty queues) and tests/unit/f5_calls.h (the calls in e5_calls.h's format: inputs, TF's outputs or
TF's error text, one after another in one session, so each call sees the queues the earlier ones
left). TF runs them in the session that built the graph, with an operation timeout so that a call
that would wait forever fails instead (none of the listed calls waits). Run:
build/venv/bin/python tools/gen_f5_cases.py
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
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "queues")
OUT_H = os.path.join(ROOT, "tests", "unit", "f5_calls.h")


def build():
    """{signature: (inputs {name: placeholder}, outputs {name: tensor})}"""
    P = tf1.placeholder
    sigs = {}
    q = tf1.FIFOQueue(3, [tf.float32, tf.int32], shapes=[[2], []], shared_name="fifo", name="fifo")
    x, y = P(tf.float32, [None], "x"), P(tf.int32, [], "y")
    with tf.control_dependencies([q.enqueue([x, y])]):
        sigs["fifo_enq"] = ({"x": x, "y": y}, {"size": q.size()})
    xs, ys = P(tf.float32, [None, None], "xs"), P(tf.int32, [None], "ys")
    with tf.control_dependencies([q.enqueue_many([xs, ys])]):
        sigs["fifo_enq_many"] = ({"xs": xs, "ys": ys}, {"size": q.size()})
    d = q.dequeue()
    sigs["fifo_deq"] = ({}, {"x": d[0], "y": d[1]})
    n = P(tf.int32, [], "n")
    d = q.dequeue_many(n)
    sigs["fifo_deq_many"] = ({"n": n}, {"x": d[0], "y": d[1]})
    d = q.dequeue_up_to(n)
    sigs["fifo_deq_up_to"] = ({"n": n}, {"x": d[0], "y": d[1]})
    with tf.control_dependencies([q.close()]):
        sigs["fifo_close"] = ({}, {"closed": q.is_closed()})
    sigs["fifo_size"] = ({}, {"size": q.size(), "closed": q.is_closed()})

    pq = tf1.PaddingFIFOQueue(4, [tf.float32, tf.string], shapes=[[None], []], shared_name="pad")
    px, ps = P(tf.float32, [None], "px"), P(tf.string, [], "ps")
    with tf.control_dependencies([pq.enqueue([px, ps])]):
        sigs["pad_enq"] = ({"x": px, "s": ps}, {"size": pq.size()})
    d = pq.dequeue_many(n)
    sigs["pad_deq_many"] = ({"n": n}, {"x": d[0], "s": d[1]})
    d = pq.dequeue()
    sigs["pad_deq"] = ({}, {"x": d[0], "s": d[1]})

    prq = tf1.PriorityQueue(8, [tf.string], shapes=[[]], shared_name="prio")
    pp, pv = P(tf.int64, [None], "pp"), P(tf.string, [None], "pv")
    with tf.control_dependencies([prq.enqueue_many([pp, pv])]):
        sigs["prio_enq_many"] = ({"p": pp, "v": pv}, {"size": prq.size()})
    d = prq.dequeue_many(n)
    sigs["prio_deq_many"] = ({"n": n}, {"p": d[0], "v": d[1]})
    d = prq.dequeue()
    sigs["prio_deq"] = ({}, {"p": d[0], "v": d[1]})

    rq = tf1.RandomShuffleQueue(10, 2, [tf.int32], shapes=[[]], seed=5, shared_name="shuf")
    rv = P(tf.int32, [None], "rv")
    with tf.control_dependencies([rq.enqueue_many([rv])]):
        sigs["shuf_enq_many"] = ({"v": rv}, {"size": rq.size()})
    sigs["shuf_deq_many"] = ({"n": n}, {"v": rq.dequeue_many(n)})
    sigs["shuf_deq_up_to"] = ({"n": n}, {"v": rq.dequeue_up_to(n)})
    with tf.control_dependencies([rq.close()]):
        sigs["shuf_close"] = ({}, {"size": rq.size()})

    uq = tf1.FIFOQueue(2, [tf.float32], shared_name="unshaped")
    ux = P(tf.float32, None, "ux")
    with tf.control_dependencies([uq.enqueue([ux])]):
        sigs["u_enq"] = ({"x": ux}, {"size": uq.size()})
    sigs["u_deq"] = ({}, {"x": uq.dequeue()})
    sigs["u_deq_many"] = ({"n": n}, {"x": uq.dequeue_many(n)})

    # the V1 ref-string handle form (no shared_name: the queue belongs to its node)
    h = tf.raw_ops.FIFOQueue(component_types=[tf.int64], shapes=[[]], capacity=-1, name="v1q")
    vx = P(tf.int64, [], "vx")
    with tf.control_dependencies([tf.raw_ops.QueueEnqueue(handle=h, components=[vx])]):
        sigs["v1_enq"] = ({"x": vx}, {"size": tf.raw_ops.QueueSize(handle=h)})
    sigs["v1_deq"] = ({}, {"x": tf.raw_ops.QueueDequeue(handle=h, component_types=[tf.int64])[0]})
    with tf.control_dependencies([tf.raw_ops.QueueClose(handle=h, cancel_pending_enqueues=True)]):
        sigs["v1_close"] = ({}, {"closed": tf.raw_ops.QueueIsClosed(handle=h)})
    return sigs


f32 = lambda *a: np.array(a, dtype=np.float32)  # noqa: E731
i32 = lambda *a: np.array(a, dtype=np.int32)  # noqa: E731
i64 = lambda *a: np.array(a, dtype=np.int64)  # noqa: E731
s_ = lambda *a: np.array(a, dtype=object)  # noqa: E731

CALLS = [
    ("fifo_size", {}),
    ("fifo_enq", {"x": f32(1, 2), "y": np.int32(3)}),
    ("fifo_enq", {"x": f32(1, 2, 3), "y": np.int32(3)}),
    ("fifo_enq_many", {"xs": np.array([[4, 5], [6, 7]], np.float32), "ys": i32(8, 9)}),
    ("fifo_enq_many", {"xs": np.zeros([2, 2], np.float32), "ys": i32(1)}),
    ("fifo_enq_many", {"xs": np.zeros([0, 2], np.float32), "ys": i32()}),
    ("fifo_enq_many", {"xs": np.zeros([1, 3], np.float32), "ys": i32(1)}),
    ("fifo_deq", {}),
    ("fifo_deq_many", {"n": np.int32(2)}),
    ("fifo_deq_many", {"n": np.int32(-1)}),
    ("fifo_deq_many", {"n": np.int32(0)}),
    ("fifo_deq_up_to", {"n": np.int32(0)}),
    ("fifo_enq", {"x": f32(-1, 0.5), "y": np.int32(-3)}),
    ("fifo_close", {}),
    ("fifo_enq", {"x": f32(1, 2), "y": np.int32(3)}),
    ("fifo_deq_many", {"n": np.int32(2)}),
    ("fifo_deq_up_to", {"n": np.int32(2)}),
    ("fifo_deq_up_to", {"n": np.int32(2)}),
    ("fifo_deq", {}),
    ("fifo_size", {}),
    ("pad_enq", {"x": f32(1), "s": np.array(b"a", dtype=object)}),
    ("pad_enq", {"x": f32(1, 2, 3), "s": np.array(b"bb", dtype=object)}),
    ("pad_enq", {"x": f32(), "s": np.array(b"", dtype=object)}),
    ("pad_deq_many", {"n": np.int32(2)}),
    ("pad_deq_many", {"n": np.int32(0)}),
    ("pad_deq", {}),
    ("pad_enq", {"x": f32(5, 6), "s": np.array(b"x\x00y", dtype=object)}),
    ("pad_deq_many", {"n": np.int32(1)}),
    ("prio_enq_many", {"p": i64(3, 1, 2, -5, 9), "v": s_(b"c", b"a", b"b", b"neg", b"z")}),
    ("prio_deq", {}),
    ("prio_deq_many", {"n": np.int32(3)}),
    ("prio_enq_many", {"p": i64(1, 2), "v": s_(b"q")}),
    ("prio_deq_many", {"n": np.int32(1)}),
    ("shuf_enq_many", {"v": np.arange(10, dtype=np.int32)}),
    ("shuf_deq_many", {"n": np.int32(8)}),
    ("shuf_enq_many", {"v": i32(100, 101, 102)}),
    ("shuf_deq_many", {"n": np.int32(3)}),
    ("shuf_close", {}),
    ("shuf_deq_up_to", {"n": np.int32(5)}),
    ("shuf_deq_up_to", {"n": np.int32(5)}),
    ("u_enq", {"x": np.float32(1.5)}),
    ("u_enq", {"x": np.array([[1, 2], [3, 4]], np.float32)}),
    ("u_deq", {}),
    ("u_deq_many", {"n": np.int32(1)}),
    ("u_deq", {}),
    ("v1_enq", {"x": np.int64(7)}),
    ("v1_enq", {"x": np.int64(-8)}),
    ("v1_deq", {}),
    ("v1_close", {}),
    ("v1_enq", {"x": np.int64(1)}),
    ("v1_deq", {}),
    ("v1_deq", {}),
]


def save_and_call(fix, build_fn, calls, model, out_h, array, title, seed=None, init_vars=True):
    """Builds the graph (build_fn() -> {signature: (inputs, outputs)}), saves it as a TF1 SavedModel in
    fix, runs `calls` in order in its session and writes them to out_h as the e5_call array `array`
    (shared by gen_accum_cases.py and gen_staging_cases.py; init_vars: run the variables' initializer
    first, which puts an init op in the saved graph)."""
    shutil.rmtree(fix, ignore_errors=True)
    g = tf.Graph()
    with g.as_default():
        if seed is not None:
            tf1.set_random_seed(seed)
        sigs = build_fn()
        sess = tf1.Session(graph=g, config=tf1.ConfigProto(operation_timeout_in_ms=3000))
        if init_vars:
            sess.run(tf1.global_variables_initializer())
        b = tf1.saved_model.Builder(fix)
        smap = {k: tf1.saved_model.build_signature_def(
            {n: tf1.saved_model.build_tensor_info(t) for n, t in ins.items()},
            {n: tf1.saved_model.build_tensor_info(t) for n, t in outs.items()}) for k, (ins, outs) in sigs.items()}
        b.add_meta_graph_and_variables(sess, ["serve"], signature_def_map=smap, strip_default_attrs=True)
        b.save()
    lines = ["/* %s - generated by %s from TensorFlow %s; do not edit. */" % (os.path.basename(out_h), title, tf.__version__),
             "/* Each call runs on the model loaded once, in this order (tests/fixtures/%s). */" % os.path.basename(fix)]
    out = []
    for ci, (sig, ins) in enumerate(calls):
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
        out.append("{\"%s\", \"%s\", c%d_in, %d, c%d_out, %d, %s, -1}" % (
            model, sig, ci, len(ins_c), ci, len(outs_c), cstr(e.encode()) if e else "NULL"))
        print(ci, sig, "->", err if err else {k: np.asarray(v).tolist() for k, v in got.items()}, file=sys.stderr)
    lines.append("static const e5_call %s[] = {" % array)
    lines += ["    " + c + "," for c in out]
    lines.append("};")
    with open(out_h, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    save_and_call(FIX, build, CALLS, "queues", OUT_H, "f5_calls", "tools/gen_f5_cases.py", seed=11)


if __name__ == "__main__":
    main()
