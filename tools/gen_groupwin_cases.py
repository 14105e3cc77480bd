#!/usr/bin/env python3
"""gen_groupwin_cases.py - tf.data's grouping datasets inside saved functions (src/ops/dataset_group.c)
against TensorFlow: tests/fixtures/datasets/groupwin is one tf.Module saved with tf.saved_model.save
whose signatures build pipelines with Dataset.group_by_window (GroupByWindowDataset: key_func,
reduce_func, window_size / window_size_func, captured tensors, multi-component elements, groups left
at the end of the input, nested windows), Dataset.bucket_by_sequence_length (built on
group_by_window, with padded batches) and tf.data.experimental.group_by_reducer
(GroupByReducerDataset: init/reduce/finalize functions), and return the elements in order (batched
into one tensor). group_by_reducer's final order is TF's hash map's, so those signatures sort their
results by key. Bad input (a key of two elements, window size 0, a reduce_func failing) gives TF's error text. The model is
loaded back in TF and every signature called twice with its feed; tests/unit/groupwin_models.h
holds TF's outputs (or its error text) for test_ops_groupwin.c.

Run: build/venv/bin/python tools/gen_groupwin_cases.py
"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_f6_cases as f6  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "datasets", "groupwin")
D = tf.data.Dataset
I = tf.TensorSpec([None], tf.int64)
S = tf.TensorSpec([], tf.int64)
gbr = tf.data.experimental.group_by_reducer
Reducer = tf.data.experimental.Reducer


def order(ds):
    """All elements in order, as one tensor (a batch of everything)."""
    return next(iter(ds.batch(100000)))


def by_key(k, v):
    i = tf.argsort(k)
    return tf.gather(k, i), tf.gather(v, i)


class M(tf.Module):
    @tf.function(input_signature=[I])
    def window(self, x):
        d = D.from_tensor_slices(x)
        flat = lambda k, w: w.batch(100).map(lambda b: tf.reduce_sum(b) * 1000 + k)
        return {"w2": order(d.group_by_window(lambda v: v % 3, lambda k, w: w.batch(2), window_size=2).map(tf.reduce_sum)),
                "w3": order(d.group_by_window(lambda v: v % 2, flat, window_size=3)),
                "w1": order(d.group_by_window(lambda v: v % 4, lambda k, w: w, window_size=1)),
                "wbig": order(d.group_by_window(lambda v: 7 - v % 4, lambda k, w: w, window_size=100)),
                "wfn": order(d.group_by_window(lambda v: v % 3, flat, window_size_func=lambda k: k + 1)),
                "card": d.group_by_window(lambda v: v % 3, lambda k, w: w, window_size=2).cardinality()}

    @tf.function(input_signature=[I, S])
    def window_captured(self, x, c):
        d = D.zip((D.from_tensor_slices(x), D.from_tensor_slices(tf.strings.as_string(x))))
        kf = lambda v, s: (v + c) % 3
        rf = lambda k, w: w.map(lambda v, s: (v * c + k, tf.strings.join([s, "/", tf.strings.as_string(k)])))
        a, b = order(d.group_by_window(kf, rf, window_size_func=lambda k: k % 2 + c))
        nested = d.group_by_window(kf, lambda k, w: w.map(lambda v, s: v).window(2).flat_map(lambda q: q.batch(2)).map(tf.reduce_sum),
                                   window_size=3)
        return {"v": a, "s": b, "nested": order(nested),
                "neg": order(D.from_tensor_slices(x - 10).group_by_window(lambda v: v, lambda k, w: w.batch(9).map(tf.reduce_sum), window_size=2))}

    @tf.function(input_signature=[I])
    def window_empty(self, x):
        return {"x": order(D.from_tensor_slices(x).group_by_window(lambda v: v, lambda k, w: w, window_size=2).concatenate(D.from_tensors(tf.constant(-1, tf.int64))))}

    @tf.function(input_signature=[I])
    def bucket(self, x):
        seqs = D.from_tensor_slices(x).map(lambda n: tf.range(n) + 1)
        b = seqs.bucket_by_sequence_length(lambda s: tf.size(s), [3, 5], [2, 2, 3])
        bp = seqs.bucket_by_sequence_length(lambda s: tf.size(s), [3, 8], [2, 2, 3], pad_to_bucket_boundary=True, padding_values=tf.constant(-1, tf.int64))
        bd = seqs.bucket_by_sequence_length(lambda s: tf.size(s), [4], [2, 3], drop_remainder=True)
        shape = lambda t: tf.cast(tf.shape(t), tf.int64)
        return {"b": order(b.map(lambda t: tf.concat([shape(t), [tf.reduce_sum(t)]], 0)).padded_batch(1).unbatch()),
                "bp": order(bp.map(lambda t: tf.concat([shape(t), [tf.reduce_sum(t)]], 0))),
                "bd": order(bd.map(lambda t: tf.concat([shape(t), [tf.reduce_sum(t)]], 0)))}

    @tf.function(input_signature=[I])
    def reducer(self, x):
        d = D.from_tensor_slices(x)
        r = Reducer(lambda k: (k, tf.constant(0, tf.int64)), lambda st, v: (st[0], st[1] + v), lambda a, b: (a, b))
        k, s = order(d.apply(gbr(lambda v: v % 4, r)))
        r2 = Reducer(lambda k: (tf.constant(0, tf.int64), tf.zeros([0], tf.int64)),
                     lambda st, v: (st[0] + 1, tf.concat([st[1], [v]], 0)),
                     lambda n, l: (n * 100 + tf.reduce_sum(l), tf.strings.reduce_join(tf.strings.as_string(l), separator=",")))
        n, t = order(d.apply(gbr(lambda v: v % 3, r2)))
        kk, ss = by_key(k, s)
        n2, t2 = by_key(n, t)
        return {"k": kk, "s": ss, "n": n2, "t": t2,
                "one": order(d.apply(gbr(lambda v: tf.constant(5, tf.int64), r)).map(lambda a, b: a * 1000 + b))}

    @tf.function(input_signature=[I, S])
    def reducer_captured(self, x, c):
        d = D.zip((D.from_tensor_slices(x), D.from_tensor_slices(tf.cast(x, tf.float32) / 2)))
        r = Reducer(lambda k: (k * c, tf.constant(0.5, tf.float32)), lambda st, e: (st[0] + c, st[1] * e[1] + 1.0),
                    lambda a, b: (a + c, b))
        a, b = order(d.apply(gbr(lambda v, f: v // c, r)))
        i = tf.argsort(a)
        return {"a": tf.gather(a, i), "b": tf.gather(b, i)}

    @tf.function(input_signature=[I])
    def reducer_empty(self, x):
        r = Reducer(lambda k: k, lambda st, v: st + v, lambda st: st)
        return {"x": order(D.from_tensor_slices(x).apply(gbr(lambda v: v, r)).concatenate(D.from_tensors(tf.constant(-1, tf.int64))))}

    @tf.function(input_signature=[S])
    def err_window_size(self, n):
        return {"x": order(D.range(5).group_by_window(lambda v: v % 2, lambda k, w: w, window_size_func=lambda k: k * n))}

    @tf.function(input_signature=[S])
    def err_window_key(self, n):
        return {"x": order(D.range(5).group_by_window(lambda v: tf.reshape(tf.fill([n], v), tf.fill([tf.minimum(n, 1)], n)), lambda k, w: w, window_size=2))}

    @tf.function(input_signature=[S])
    def err_reducer_key(self, n):
        r = Reducer(lambda k: k, lambda st, v: st + v, lambda st: st)
        return {"x": order(D.range(5).apply(gbr(lambda v: tf.reshape(tf.fill([n], v), tf.fill([tf.minimum(n, 1)], n)), r)))}

    @tf.function(input_signature=[S])
    def err_reduce_fn(self, n):
        return {"x": order(D.range(5).group_by_window(lambda v: v % 2, lambda k, w: w.map(lambda v: tf.debugging.check_numerics(1.0 / tf.cast(v - n, tf.float32), "inv")), window_size=2))}

    @tf.function(input_signature=[S])
    def forever(self, n):
        return {"x": order(D.range(3).repeat().group_by_window(lambda v: v, lambda k, w: w, window_size=n).take(5))}

    # by hand only (TF would take the memory): test_ops_groupwin.c
    @tf.function(input_signature=[S])
    def hand_forever(self, n):
        return {"x": order(D.range(3).repeat().group_by_window(lambda v: v, lambda k, w: w, window_size=n).take(5))}


HAND = ["hand_forever"]

X = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 8, 7], np.int64)
FEEDS = {
    "window": [X],
    "window_captured": [np.array(2, np.int64), X],  # (feeds in input-name order: c, x)
    "window_empty": [np.zeros([0], np.int64)],
    "bucket": [np.array([1, 4, 2, 6, 3, 5, 2, 7, 1, 4], np.int64)],
    "reducer": [X],
    "reducer_captured": [np.array(3, np.int64), X],
    "reducer_empty": [np.zeros([0], np.int64)],
    "forever": [np.array(2, np.int64)],
    "err_window_size": [np.array(0, np.int64)],
    "err_window_key": [np.array(2, np.int64)],
    "err_reducer_key": [np.array(2, np.int64)],
    "err_reduce_fn": [np.array(3, np.int64)],
}


def main():
    m = M()
    shutil.rmtree(OUT, ignore_errors=True)
    sigs = {s: getattr(m, s).get_concrete_function() for s in list(FEEDS) + HAND}
    tf.saved_model.save(m, OUT, signatures=sigs)
    loaded = tf.saved_model.load(OUT)
    rows = f6.signature_rows(loaded, FEEDS, twice=True)
    # TF prefixes a function's error with the iterator's path (its own names): the error itself is checked
    rows = [(s, k, t, re.sub(r"^Error in user-defined function passed to .*? transformation with iterator: \S+: ", "", e) if e else e)
            for s, k, t, e in rows]
    f6.write_models_h("groupwin_models.h", "gen_groupwin_cases.py", "gw", loaded, FEEDS, rows)


if __name__ == "__main__":
    main()
