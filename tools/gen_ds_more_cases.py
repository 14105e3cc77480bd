#!/usr/bin/env python3
"""gen_ds_more_cases.py - tf.data's re-batching datasets inside saved functions (src/ops/dataset_rebatch.c)
against TensorFlow: tests/fixtures/datasets/ds_more is one tf.Module saved with tf.saved_model.save
whose signatures build pipelines with Dataset.sparse_batch (DenseToSparseBatchDataset: fixed and
unknown row dims, 2-D rows, strings, empty input, the cardinality), Dataset.rebatch
(RebatchDatasetV2: sizes across input batches, a list of sizes with 0, drop_remainder, two
components, empty input) and the V1 RebatchDataset tf.distribute uses (num_replicas larger than a
batch); bad input (a row larger than row_shape, a row of another rank, unbatched components to
rebatch) gives TF's error text. Elements are flattened into one vector per signature output (values
and sizes) by Dataset.reduce. The model is loaded back in TF and every signature called twice with
its feed; tests/unit/ds_more_models.h holds TF's outputs (or its error text) for test_ops_ds_more.c.

Run: build/venv/bin/python tools/gen_ds_more_cases.py
"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_f6_cases as f6  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.data.experimental.ops.distribute import _LegacyRebatchDataset  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "datasets", "ds_more")
D = tf.data.Dataset
I = tf.TensorSpec([None], tf.int64)
S = tf.TensorSpec([], tf.int64)
# an empty string Const saved by TF holds one string_val, which TF accepts (and this loader too, since
# session 24: it refused it before): the empty string vector is made by Fill, as when it was written
Z = lambda dt=tf.int64: tf.fill([0], tf.constant("")) if dt == tf.string else tf.zeros([0], dt)


def flat(ds):
    """(all values flattened, each element's shape concatenated) of a one-component dataset."""
    return ds.reduce((Z(), Z()), lambda s, e: (tf.concat([s[0], tf.reshape(e, [-1])], 0),
                                                tf.concat([s[1], tf.shape(e, out_type=tf.int64)], 0)))


def flat_sparse(ds, dt=tf.int64):
    """(indices, values, dense_shapes) of a sparse_batch dataset, concatenated."""
    return ds.reduce((Z(), Z(dt), Z()), lambda s, sp: (tf.concat([s[0], tf.reshape(sp.indices, [-1])], 0),
                                                        tf.concat([s[1], sp.values], 0),
                                                        tf.concat([s[2], sp.dense_shape], 0)))


class M(tf.Module):
    @tf.function(input_signature=[I])
    def sparse(self, x):
        d = D.from_tensor_slices(x).map(lambda n: tf.range(n) * 10 + n)
        i1, v1, s1 = flat_sparse(d.sparse_batch(2, [6]))
        i2, v2, s2 = flat_sparse(d.sparse_batch(3, tf.TensorShape([None])))
        d2 = D.from_tensor_slices(x).map(lambda n: tf.reshape(tf.range(2 * n), [2, n]))
        i3, v3, s3 = flat_sparse(d2.sparse_batch(2, [2, 7]))
        i4, v4, s4 = flat_sparse(d.map(lambda t: tf.strings.as_string(t)).sparse_batch(4, [None]), tf.string)
        i5, v5, s5 = flat_sparse(d2.sparse_batch(5, tf.TensorShape([2, None])))
        return {"i1": i1, "v1": v1, "s1": s1, "i2": i2, "v2": v2, "s2": s2, "i3": i3, "v3": v3, "s3": s3,
                "i4": i4, "v4": v4, "s4": s4, "i5": i5, "v5": v5, "s5": s5,
                "card": d.sparse_batch(2, [6]).cardinality(), "card1": D.range(7).map(lambda v: tf.fill([1], v)).sparse_batch(3, [1]).cardinality(),
                "float": flat_sparse(D.from_tensor_slices(x).map(lambda n: tf.cast(tf.range(n), tf.float32) / 4).sparse_batch(2, [9]), tf.float32)[1]}

    @tf.function(input_signature=[I])
    def sparse_empty(self, x):
        i, v, s = flat_sparse(D.from_tensor_slices(x).map(lambda n: tf.range(n)).sparse_batch(2, [4]))
        return {"i": i, "v": v, "s": s}

    @tf.function(input_signature=[I])
    def rebatch(self, x):
        d = D.from_tensor_slices(x).batch(4)
        v1, n1 = flat(d.rebatch(3))
        v2, n2 = flat(d.rebatch([1, 2, 0]))
        v3, n3 = flat(d.rebatch(3, drop_remainder=True))
        v4, n4 = flat(d.rebatch(6))
        d2 = D.zip((D.from_tensor_slices(x), D.from_tensor_slices(tf.strings.as_string(x)))).batch(5).rebatch([2, 4])
        a, b = d2.reduce((Z(), Z(tf.string)), lambda s, e: (tf.concat([s[0], e[0]], 0), tf.concat([s[1], tf.strings.join([e[1], "|"])], 0)))
        m = D.from_tensor_slices(tf.reshape(x[:12], [6, 2])).batch(4)
        v5, n5 = flat(m.rebatch([3, 1]))
        return {"v1": v1, "n1": n1, "v2": v2, "n2": n2, "v3": v3, "n3": n3, "v4": v4, "n4": n4, "a": a, "b": b,
                "v5": v5, "n5": n5, "card": d.rebatch(3).cardinality()}

    @tf.function(input_signature=[I])
    def rebatch_empty(self, x):
        v, n = flat(D.from_tensor_slices(x).batch(4).rebatch(3))
        return {"v": v, "n": n}

    @tf.function(input_signature=[I])
    def rebatch_v1(self, x):
        d = D.from_tensor_slices(x).batch(5)
        v1, n1 = flat(_LegacyRebatchDataset(d, 2))
        v2, n2 = flat(_LegacyRebatchDataset(d, 4))
        v3, n3 = flat(_LegacyRebatchDataset(D.from_tensor_slices(x).batch(2), 3))
        return {"v1": v1, "n1": n1, "v2": v2, "n2": n2, "v3": v3, "n3": n3}

    @tf.function(input_signature=[S])
    def err_sparse_large(self, n):
        return {"x": flat_sparse(D.range(1, 5).map(lambda v: tf.range(v * n)).sparse_batch(2, [3]))[1]}

    @tf.function(input_signature=[S])
    def err_sparse_rank(self, n):
        return {"x": flat_sparse(D.range(1, 5).map(lambda v: tf.reshape(tf.range(v), tf.concat([[v], tf.ones([n], tf.int64)], 0))).sparse_batch(2, [4]))[1]}

    @tf.function(input_signature=[S])
    def err_rebatch_scalar(self, n):
        return {"x": flat(D.range(5).map(lambda v: tf.reshape(v, tf.ones([n], tf.int64))).rebatch(2))[0]}

    @tf.function(input_signature=[S])
    def err_rebatch_sizes(self, n):
        d = D.zip((D.range(6).batch(3), D.range(6).map(lambda v: tf.reshape(v, tf.ones([n], tf.int64))).batch(2)))
        return {"x": d.rebatch(2).reduce(Z(), lambda s, e: tf.concat([s, e[0]], 0))}

    @tf.function(input_signature=[S])
    def err_v1_scalar(self, n):
        return {"x": flat(_LegacyRebatchDataset(D.range(5).map(lambda v: tf.reshape(v, tf.ones([n], tf.int64))), 2))[0]}


X = np.array([3, 1, 4, 0, 5, 2, 6, 5, 3, 1, 2, 4, 1], np.int64)
FEEDS = {
    "sparse": [X[:7]],
    "sparse_empty": [np.zeros([0], np.int64)],
    "rebatch": [X],
    "rebatch_empty": [np.zeros([0], np.int64)],
    "rebatch_v1": [X],
    "err_sparse_large": [np.array(2, np.int64)],
    "err_sparse_rank": [np.array(1, np.int64)],
    "err_rebatch_scalar": [np.array(0, np.int64)],
    "err_rebatch_sizes": [np.array(0, np.int64)],
    "err_v1_scalar": [np.array(0, np.int64)],
}


def main():
    m = M()
    shutil.rmtree(OUT, ignore_errors=True)
    sigs = {s: getattr(m, s).get_concrete_function() for s in FEEDS}
    tf.saved_model.save(m, OUT, signatures=sigs)
    loaded = tf.saved_model.load(OUT)
    rows = f6.signature_rows(loaded, FEEDS, twice=True)
    rows = [(s, k, t, re.sub(r"^Error in user-defined function passed to .*? transformation with iterator: \S+: ", "", e) if e else e)
            for s, k, t, e in rows]
    f6.write_models_h("ds_more_models.h", "gen_ds_more_cases.py", "dm", loaded, FEEDS, rows)


if __name__ == "__main__":
    main()
