#!/usr/bin/env python3
"""gen_staging_cases.py - a TF1 SavedModel (tf.compat.v1 SavedModelBuilder) whose signatures use TF's
staging areas (Stage, Unstage, StagePeek, StageSize, StageClear; MapStage, MapUnstage, MapUnstageNoKey,
MapPeek, MapSize, MapIncompleteSize, MapClear and the OrderedMap* forms), and TensorFlow's outputs of a
fixed sequence of signature calls on it (session 23, h2).

Writes tests/fixtures/staging/ (the SavedModel: areas are not saved state, so every load starts with
empty ones) and tests/unit/staging_cases.h (the calls in e5_call.h's format: inputs, TF's outputs or
TF's error text, one after another in one session, so each call sees the areas the earlier ones left).
TF runs them in the session that built the graph with an operation timeout; none of the listed calls
waits (the waits are tested by hand in tests/unit/test_ops_staging.c). Run:
build/venv/bin/python tools/gen_staging_cases.py
"""
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_f5_cases import save_and_call  # noqa: E402

tf1 = tf.compat.v1
R = tf.raw_ops
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "staging")
OUT_H = os.path.join(ROOT, "tests", "unit", "staging_cases.h")


def ph(dt, shape, name):
    return tf1.placeholder(dt, shape, name=name)


def build():
    """{signature: (inputs {name: placeholder}, outputs {name: tensor})}"""
    sigs = {}
    # a FIFO staging area of (float [?], int32 []) tuples, capacity 3
    st = dict(capacity=3, memory_limit=0, shared_name="st")
    dts = [tf.float32, tf.int32]
    x, y = ph(tf.float32, [None], "st_x"), ph(tf.int32, [], "st_y")
    with tf.control_dependencies([R.Stage(values=[x, y], **st)]):
        sigs["st_put"] = ({"x": x, "y": y}, {"size": R.StageSize(dtypes=dts, **st)})
    g = R.Unstage(dtypes=dts, **st)
    sigs["st_get"] = ({}, {"x": g[0], "y": g[1]})
    i = ph(tf.int32, [], "st_i")
    p = R.StagePeek(index=i, dtypes=dts, **st)
    sigs["st_peek"] = ({"i": i}, {"x": p[0], "y": p[1]})
    sigs["st_size"] = ({}, {"size": R.StageSize(dtypes=dts, **st)})
    with tf.control_dependencies([R.StageClear(dtypes=dts, **st)]):
        sigs["st_clear"] = ({}, {"size": R.StageSize(dtypes=dts, **st)})
    sigs["st_get_one"] = ({}, {"x": R.Unstage(dtypes=[tf.float32], **st)[0]})
    # a memory-limited one (16 bytes) of float tuples
    sm = dict(capacity=0, memory_limit=16, shared_name="sm")
    mx = ph(tf.float32, [None], "sm_x")
    with tf.control_dependencies([R.Stage(values=[mx], **sm)]):
        sigs["sm_put"] = ({"x": mx}, {"size": R.StageSize(dtypes=[tf.float32], **sm)})
    sigs["sm_get"] = ({}, {"x": R.Unstage(dtypes=[tf.float32], **sm)[0]})
    # string tuples
    ss = dict(capacity=0, memory_limit=0, shared_name="ss")
    sx = ph(tf.string, [None], "ss_x")
    with tf.control_dependencies([R.Stage(values=[sx], **ss)]):
        sigs["ss_put"] = ({"x": sx}, {"size": R.StageSize(dtypes=[tf.string], **ss)})
    sigs["ss_get"] = ({}, {"x": R.Unstage(dtypes=[tf.string], **ss)[0]})

    # the maps: (float [?], int32 []) values under int64 keys, capacity 2
    for pre, ordered in (("mp", False), ("om", True)):
        O = "OrderedMap" if ordered else "Map"
        op = lambda n: getattr(R, O + n)  # noqa: E731
        kw = dict(capacity=2, memory_limit=0, shared_name=pre)
        k = ph(tf.int64, [], pre + "_k")
        x, y = ph(tf.float32, [None], pre + "_x"), ph(tf.int32, [], pre + "_y")

        def sizes(dep):
            with tf.control_dependencies([dep]):
                return {"size": op("Size")(dtypes=dts, **kw), "isize": op("IncompleteSize")(dtypes=dts, **kw)}
        sigs[pre + "_put"] = ({"k": k, "x": x, "y": y}, sizes(op("Stage")(key=k, indices=[0, 1], values=[x, y], dtypes=dts, **kw)))
        sigs[pre + "_put0"] = ({"k": k, "x": x}, sizes(op("Stage")(key=k, indices=[0], values=[x], dtypes=dts, **kw)))
        sigs[pre + "_put1"] = ({"k": k, "y": y}, sizes(op("Stage")(key=k, indices=[1], values=[y], dtypes=dts, **kw)))
        sigs[pre + "_put_rev"] = ({"k": k, "x": x, "y": y},
                                  sizes(op("Stage")(key=k, indices=[1, 0], values=[y, x], dtypes=dts, **kw)))
        sigs[pre + "_put2"] = ({"k": k, "y": y}, sizes(op("Stage")(key=k, indices=[2], values=[y], dtypes=dts, **kw)))
        kv = ph(tf.int64, [None], pre + "_kv")
        sigs[pre + "_put_vec"] = ({"kv": kv, "x": x, "y": y},
                                  sizes(op("Stage")(key=kv, indices=[0, 1], values=[x, y], dtypes=dts, **kw)))
        g = op("Unstage")(key=k, indices=[0, 1], dtypes=dts, **kw)
        sigs[pre + "_get"] = ({"k": k}, {"x": g[0], "y": g[1]})
        sigs[pre + "_get0"] = ({"k": k}, {"x": op("Unstage")(key=k, indices=[0], dtypes=[tf.float32], **kw)[0]})
        sigs[pre + "_get1"] = ({"k": k}, {"y": op("Unstage")(key=k, indices=[1], dtypes=[tf.int32], **kw)[0]})
        p = op("Peek")(key=k, indices=[0, 1], dtypes=dts, **kw)
        sigs[pre + "_peek"] = ({"k": k}, {"x": p[0], "y": p[1]})
        sigs[pre + "_peek1"] = ({"k": k}, {"y": op("Peek")(key=k, indices=[1], dtypes=[tf.int32], **kw)[0]})
        nk = op("UnstageNoKey")(indices=[0, 1], dtypes=dts, **kw)
        sigs[pre + "_pop"] = ({}, {"key": nk[0], "x": nk[1][0], "y": nk[1][1]})
        sigs[pre + "_sizes"] = ({}, {"size": op("Size")(dtypes=dts, **kw), "isize": op("IncompleteSize")(dtypes=dts, **kw)})
        sigs[pre + "_clear"] = ({}, sizes(op("Clear")(dtypes=dts, **kw)))
    # a memory-limited map (12 bytes) of float values
    mm = dict(capacity=0, memory_limit=12, shared_name="mm")
    k, mx = ph(tf.int64, [], "mm_k"), ph(tf.float32, [None], "mm_x")
    with tf.control_dependencies([R.MapStage(key=k, indices=[0], values=[mx], dtypes=[tf.float32], **mm)]):
        sigs["mm_put"] = ({"k": k, "x": mx}, {"size": R.MapSize(dtypes=[tf.float32], **mm)})
    sigs["mm_get"] = ({"k": k}, {"x": R.MapUnstage(key=k, indices=[0], dtypes=[tf.float32], **mm)[0]})
    return sigs


f32 = lambda *a: np.array(a, dtype=np.float32)  # noqa: E731
i32 = np.int32
i64 = np.int64

CALLS = [
    ("st_size", {}),
    ("st_put", {"x": f32(1, 2), "y": i32(3)}),
    ("st_put", {"x": f32(), "y": i32(-4)}),
    ("st_peek", {"i": i32(1)}),
    ("st_peek", {"i": i32(0)}),
    ("st_get", {}),
    ("st_put", {"x": f32(5, 6, 7), "y": i32(8)}),
    ("st_size", {}),
    ("st_get_one", {}),
    ("st_size", {}),
    ("st_get", {}),
    ("st_put", {"x": f32(9), "y": i32(10)}),
    ("st_clear", {}),
    ("st_put", {"x": f32(11), "y": i32(12)}),
    ("st_get", {}),
    ("st_size", {}),
    ("sm_put", {"x": f32(1, 2)}),
    ("sm_put", {"x": f32(1, 2, 3, 4, 5)}),
    ("sm_put", {"x": f32(3, 4)}),
    ("sm_get", {}),
    ("sm_get", {}),
    ("ss_put", {"x": np.array([b"ab", b"", b"c\x00d"], dtype=object)}),
    ("ss_get", {}),
]
for pre in ("mp", "om"):
    CALLS += [
        (pre + "_sizes", {}),
        (pre + "_put", {"k": i64(5), "x": f32(1, 2), "y": i32(3)}),
        (pre + "_peek", {"k": i64(5)}),
        (pre + "_peek1", {"k": i64(5)}),
        (pre + "_get0", {"k": i64(5)}),
        (pre + "_sizes", {}),
        (pre + "_get0", {"k": i64(5)}),
        (pre + "_peek", {"k": i64(5)}),
        (pre + "_get1", {"k": i64(5)}),
        (pre + "_sizes", {}),
        (pre + "_put0", {"k": i64(7), "x": f32(7)}),
        (pre + "_put0", {"k": i64(7), "x": f32(8)}),
        (pre + "_put0", {"k": i64(-2), "x": f32()}),
        (pre + "_put1", {"k": i64(7), "y": i32(70)}),
        (pre + "_put2", {"k": i64(7), "y": i32(1)}),
        (pre + "_put_rev", {"k": i64(1), "x": f32(1), "y": i32(1)}),
        (pre + "_put_vec", {"kv": np.array([1, 2], np.int64), "x": f32(1), "y": i32(1)}),
        (pre + "_put_vec", {"kv": np.array([], np.int64), "x": f32(1), "y": i32(1)}),
        (pre + "_put1", {"k": i64(-2), "y": i32(-20)}),
        (pre + "_pop", {}),
        (pre + "_pop", {}),
        (pre + "_put", {"k": i64(3), "x": f32(3, 3), "y": i32(30)}),
        (pre + "_put", {"k": i64(3), "x": f32(4), "y": i32(40)}),
        (pre + "_sizes", {}),
        (pre + "_get", {"k": i64(3)}),
        (pre + "_put", {"k": i64(4), "x": f32(4), "y": i32(4)}),
        (pre + "_pop", {}),
        (pre + "_put", {"k": i64(4), "x": f32(4), "y": i32(4)}),
        (pre + "_put0", {"k": i64(9), "x": f32(9)}),
        (pre + "_clear", {}),
        (pre + "_put", {"k": i64(6), "x": f32(6), "y": i32(6)}),
        (pre + "_get", {"k": i64(6)}),
    ]
CALLS += [
    ("mm_put", {"k": i64(1), "x": f32(1, 2)}),
    ("mm_put", {"k": i64(2), "x": f32(1, 2, 3, 4)}),
    ("mm_get", {"k": i64(1)}),
    ("mm_put", {"k": i64(2), "x": f32(1, 2, 3)}),
    ("mm_get", {"k": i64(2)}),
]


def main():
    save_and_call(FIX, build, CALLS, "staging", OUT_H, "staging_calls", "tools/gen_staging_cases.py", init_vars=False)


if __name__ == "__main__":
    main()
