#!/usr/bin/env python3
"""gen_accum_cases.py - a TF1 SavedModel (tf.compat.v1 SavedModelBuilder) whose signatures use TF1's
gradient accumulators (ConditionalAccumulator and SparseConditionalAccumulator with their ref handles,
ResourceConditionalAccumulator with the ResourceAccumulator* ops; MEAN and SUM; float, double and half),
TemporaryVariable / DestroyTemporaryVariable, bool scatters (ResourceScatterNdAdd/Sub on a bool resource
variable, ScatterNd and ScatterNdNonAliasingAdd on bool) and a tf.CriticalSection (MutexV2, MutexLock,
ConsumeMutexLock), and TensorFlow's outputs of a fixed sequence of signature calls on it (session 23, h3).

Writes tests/fixtures/accum/ (the SavedModel: accumulators are not saved state, so every load starts
with empty ones; the bool variable is) and tests/unit/accum_calls.h (the calls in e5_call.h's format,
one after another in one session, so each sees what the earlier ones left: gradients applied in one
call and taken in a later one, stale ones dropped, the global step moved by takes and SetGlobalStep,
TF's errors). None of the listed calls waits (test_ops_accum.c checks the waits by hand). Run:
build/venv/bin/python tools/gen_accum_cases.py
"""
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_f5_cases import save_and_call  # noqa: E402

tf1 = tf.compat.v1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "accum")
OUT_H = os.path.join(ROOT, "tests", "unit", "accum_calls.h")


def build():
    """{signature: (inputs {name: placeholder}, outputs {name: tensor})}"""
    P = tf1.placeholder
    sigs = {}
    step, n = P(tf.int64, [], "step"), P(tf.int32, [], "n")

    # dense float, MEAN, shape [2] (ref handle)
    a = tf1.ConditionalAccumulator(tf.float32, shape=[2], shared_name="acc", name="acc")
    g = P(tf.float32, None, "g")
    with tf.control_dependencies([a.apply_grad(g, local_step=step)]):
        sigs["acc_apply"] = ({"g": g, "step": step}, {"num": a.num_accumulated()})
    sigs["acc_num"] = ({}, {"num": a.num_accumulated()})
    sigs["acc_take"] = ({"n": n}, {"avg": a.take_grad(n)})
    with tf.control_dependencies([a.set_global_step(step)]):
        sigs["acc_set"] = ({"step": step}, {"num": a.num_accumulated()})

    # dense double, SUM, shape [None, 2]
    s = tf1.ConditionalAccumulator(tf.float64, shape=[None, 2], shared_name="accs", reduction_type="SUM")
    gd = P(tf.float64, None, "gd")
    with tf.control_dependencies([s.apply_grad(gd, local_step=step)]):
        sigs["sum_apply"] = ({"g": gd, "step": step}, {"num": s.num_accumulated()})
    sigs["sum_take"] = ({"n": n}, {"sum": s.take_grad(n)})

    # the resource form, half, MEAN, unknown shape (fed float, cast both ways)
    h = tf.raw_ops.ResourceConditionalAccumulator(dtype=tf.float16, shape=tf.TensorShape(None), shared_name="racc",
                                                  reduction_type="MEAN")
    with tf.control_dependencies([tf.raw_ops.ResourceAccumulatorApplyGradient(
            handle=h, local_step=step, gradient=tf.cast(g, tf.float16))]):
        sigs["r_apply"] = ({"g": g, "step": step}, {"num": tf.raw_ops.ResourceAccumulatorNumAccumulated(handle=h)})
    sigs["r_take"] = ({"n": n}, {"avg": tf.cast(tf.raw_ops.ResourceAccumulatorTakeGradient(
        handle=h, num_required=n, dtype=tf.float16), tf.float32)})
    with tf.control_dependencies([tf.raw_ops.ResourceAccumulatorSetGlobalStep(handle=h, new_global_step=step)]):
        sigs["r_set"] = ({"step": step}, {"num": tf.raw_ops.ResourceAccumulatorNumAccumulated(handle=h)})

    # sparse float, MEAN, shape [4, 2]; with and without the dense shape
    sp = tf1.SparseConditionalAccumulator(tf.float32, shape=[4, 2], shared_name="sacc")
    idx, vals, shp = P(tf.int64, None, "idx"), P(tf.float32, None, "vals"), P(tf.int64, None, "shp")
    with tf.control_dependencies([sp.apply_grad(idx, vals, local_step=step)]):
        sigs["sp_apply"] = ({"idx": idx, "vals": vals, "step": step}, {"num": sp.num_accumulated()})
    with tf.control_dependencies([sp.apply_grad(idx, vals, grad_shape=shp, local_step=step)]):
        sigs["sp_apply_shape"] = ({"idx": idx, "vals": vals, "shp": shp, "step": step}, {"num": sp.num_accumulated()})
    ti, tv, ts = tf.raw_ops.SparseAccumulatorTakeGradient(handle=sp.accumulator_ref, num_required=n, dtype=tf.float32)
    sigs["sp_take"] = ({"n": n}, {"indices": ti, "values": tv, "shape": ts})
    with tf.control_dependencies([sp.set_global_step(step)]):
        sigs["sp_set"] = ({"step": step}, {"num": sp.num_accumulated()})

    # sparse double, SUM, unknown shape
    sq = tf1.SparseConditionalAccumulator(tf.float64, shape=None, shared_name="sacc2", reduction_type="SUM")
    vd = P(tf.float64, None, "vd")
    with tf.control_dependencies([sq.apply_grad(idx, vd, local_step=step)]):
        sigs["sq_apply"] = ({"idx": idx, "vals": vd, "step": step}, {"num": sq.num_accumulated()})
    qi, qv, qs = tf.raw_ops.SparseAccumulatorTakeGradient(handle=sq.accumulator_ref, num_required=n, dtype=tf.float64)
    sigs["sq_take"] = ({"n": n}, {"indices": qi, "values": qv, "shape": qs})

    # TemporaryVariable: assigned, added to, destroyed (its value returned)
    x = P(tf.float32, [3], "x")
    t = tf.raw_ops.TemporaryVariable(shape=[3], dtype=tf.float32, var_name="tmp")
    t1 = tf1.assign(t, x)
    t2 = tf1.assign_add(t1, x)
    sigs["tmp"] = ({"x": x}, {"y": tf.raw_ops.DestroyTemporaryVariable(ref=t2, var_name="tmp")})

    # bool scatters
    bv = tf1.Variable([True, False, True, False], use_resource=True, name="bv")
    bi, bu = P(tf.int32, None, "bi"), P(tf.bool, None, "bu")
    with tf.control_dependencies([tf.raw_ops.ResourceScatterNdAdd(ref=bv.handle, indices=bi, updates=bu)]):
        sigs["b_add"] = ({"i": bi, "u": bu}, {"v": bv.read_value()})
    with tf.control_dependencies([tf.raw_ops.ResourceScatterNdSub(ref=bv.handle, indices=bi, updates=bu)]):
        sigs["b_sub"] = ({"i": bi, "u": bu}, {"v": bv.read_value()})
    with tf.control_dependencies([tf.raw_ops.ResourceScatterNdUpdate(ref=bv.handle, indices=bi, updates=bu)]):
        sigs["b_update"] = ({"i": bi, "u": bu}, {"v": bv.read_value()})
    bt = P(tf.bool, None, "bt")
    sigs["b_tensor"] = ({"t": bt, "i": bi, "u": bu}, {
        "nonaliasing": tf.raw_ops.ScatterNdNonAliasingAdd(input=bt, indices=bi, updates=bu),
        "scatter_nd": tf.scatter_nd(bi, bu, tf.shape(bt, out_type=tf.int32))})

    # tf.CriticalSection: MutexV2, MutexLock, ConsumeMutexLock around a read-then-assign (not atomic alone)
    cv = tf1.Variable(0.0, use_resource=True, name="csv")
    cs = tf.CriticalSection(shared_name="cs")
    cx = P(tf.float32, [], "cx")
    sigs["cs_add"] = ({"x": cx}, {"v": cs.execute(lambda: cv.assign(cv.read_value() + cx))})
    return sigs


f32 = lambda *a: np.array(a, dtype=np.float32)  # noqa: E731
f64 = lambda *a: np.array(a, dtype=np.float64)  # noqa: E731
i64 = lambda *a: np.array(a, dtype=np.int64)  # noqa: E731
b_ = lambda *a: np.array(a, dtype=bool)  # noqa: E731
S = np.int64
N = np.int32

CALLS = [
    ("acc_num", {}),
    ("acc_apply", {"g": f32(1, 2), "step": S(0)}),
    ("acc_apply", {"g": f32(3, 5), "step": S(7)}),
    ("acc_apply", {"g": f32(1, 2, 3), "step": S(0)}),
    ("acc_apply", {"g": np.float32(1), "step": S(0)}),
    ("acc_take", {"n": N(0)}),
    ("acc_take", {"n": N(-3)}),
    ("acc_take", {"n": N(2)}),
    ("acc_num", {}),
    ("acc_apply", {"g": f32(9, 9), "step": S(0)}),
    ("acc_num", {}),
    ("acc_apply", {"g": f32(-1, 0.5), "step": S(1)}),
    ("acc_take", {"n": N(1)}),
    ("acc_set", {"step": S(10)}),
    ("acc_apply", {"g": f32(4, 4), "step": S(9)}),
    ("acc_apply", {"g": f32(4, 6), "step": S(10)}),
    ("acc_apply", {"g": f32(1, 1), "step": S(12)}),
    ("acc_apply", {"g": f32(np.inf, 0), "step": S(12)}),
    ("acc_set", {"step": S(3)}),
    ("acc_apply", {"g": f32(0, 3), "step": S(3)}),
    ("acc_take", {"n": N(4)}),
    ("sum_apply", {"g": np.array([[1, 2], [3, 4]], np.float64), "step": S(0)}),
    ("sum_apply", {"g": np.array([[1, 2]], np.float64), "step": S(0)}),
    ("sum_apply", {"g": np.zeros([2, 3]), "step": S(0)}),
    ("sum_apply", {"g": np.array([[0.5, 0.25], [-3, 1e300]], np.float64), "step": S(0)}),
    ("sum_take", {"n": N(2)}),
    ("sum_apply", {"g": np.zeros([0, 2]), "step": S(1)}),
    ("sum_take", {"n": N(1)}),
    ("r_apply", {"g": f32(1, 2, 3), "step": S(0)}),
    ("r_apply", {"g": f32(0.1, 0.2, 0.3), "step": S(0)}),
    ("r_apply", {"g": f32(0.1, 0.2), "step": S(0)}),
    ("r_apply", {"g": f32(1000, 60000, 1e-3), "step": S(0)}),
    ("r_take", {"n": N(3)}),
    ("r_apply", {"g": np.float32(7), "step": S(0)}),
    ("r_apply", {"g": np.array([[1, 2]], np.float32), "step": S(1)}),
    ("r_set", {"step": S(5)}),
    ("r_apply", {"g": np.array([[3, 3]], np.float32), "step": S(4)}),
    ("r_apply", {"g": np.array([[3, 3]], np.float32), "step": S(5)}),
    ("r_take", {"n": N(2)}),
    ("sp_apply", {"idx": i64(1, 3), "vals": np.array([[1, 2], [3, 4]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(0, 1), "vals": np.array([[5, 5], [1, 0]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(3), "vals": np.array([[1, 1]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(4), "vals": np.array([[1, 1]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(2), "vals": np.array([[1, 1, 1]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(2), "vals": f32(1, 1), "step": S(0)}),
    ("sp_apply", {"idx": i64(2, 3), "vals": np.array([[1, 1]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": np.array([[2]], np.int64), "vals": np.array([[1, 1]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(2), "vals": np.float32(1), "step": S(0)}),
    ("sp_apply_shape", {"idx": i64(2), "vals": np.array([[1, 1]], np.float32), "shp": i64(5, 2), "step": S(0)}),
    ("sp_apply_shape", {"idx": i64(2), "vals": np.array([[1, 1]], np.float32), "shp": i64(4), "step": S(0)}),
    ("sp_apply_shape", {"idx": i64(2), "vals": np.array([[2, 6]], np.float32), "shp": i64(4, 2), "step": S(0)}),
    ("sp_take", {"n": N(0)}),
    ("sp_take", {"n": N(3)}),
    ("sp_apply", {"idx": i64(3, 0), "vals": np.array([[1, 1], [2, 2]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(3, 0), "vals": np.array([[1, 1], [2, 2]], np.float32), "step": S(1)}),
    ("sp_apply", {"idx": i64(1, 0), "vals": np.array([[4, 4], [6, 6]], np.float32), "step": S(2)}),
    ("sp_take", {"n": N(2)}),
    ("sp_set", {"step": S(0)}),
    ("sp_apply", {"idx": i64(2, 2), "vals": np.array([[1, 2], [3, 4]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(2), "vals": np.array([[1, 1]], np.float32), "step": S(0)}),
    ("sp_apply", {"idx": i64(), "vals": np.zeros([0, 2], np.float32), "step": S(0)}),
    ("sp_take", {"n": N(3)}),
    ("sq_apply", {"idx": i64(5, 1), "vals": np.array([[[1]], [[2]]], np.float64), "step": S(0)}),
    ("sq_apply", {"idx": i64(1, 9), "vals": np.array([[[0.5]], [[-1]]], np.float64), "step": S(0)}),
    ("sq_apply", {"idx": i64(1), "vals": np.array([[[0.5, 1]]], np.float64), "step": S(0)}),
    ("sq_apply", {"idx": i64(1), "vals": np.array([[1]], np.float64), "step": S(0)}),
    ("sq_take", {"n": N(2)}),
    ("tmp", {"x": f32(1, 2, 3)}),
    ("tmp", {"x": f32(-1, 0.5, 0)}),
    ("b_add", {"i": np.array([[1], [1], [3]], np.int32), "u": b_(True, True, False)}),
    ("b_sub", {"i": np.array([[0], [1], [1], [3]], np.int32), "u": b_(True, True, True, True)}),
    ("b_update", {"i": np.array([[2]], np.int32), "u": b_(False)}),
    ("b_add", {"i": np.array([[4]], np.int32), "u": b_(True)}),
    ("b_sub", {"i": np.zeros([0, 1], np.int32), "u": b_()}),
    ("b_tensor", {"t": b_(True, False, False, False), "i": np.array([[0], [1], [1], [2]], np.int32),
                  "u": b_(False, True, False, False)}),
    ("cs_add", {"x": np.float32(2)}),
    ("cs_add", {"x": np.float32(-0.5)}),
]


def main():
    save_and_call(FIX, build, CALLS, "accum", OUT_H, "accum_calls", "tools/gen_accum_cases.py")


if __name__ == "__main__":
    main()
