#!/usr/bin/env python3
"""gen_tfdata_cases.py - tf.data shuffle, parallel interleave and parallel batch inside saved
functions (src/ops/dataset_shuffle.c, dataset.c) against TensorFlow: tests/fixtures/datasets/tfdata
is one tf.Module saved with tf.saved_model.save whose signatures build pipelines with
Dataset.shuffle (seeds, buffer sizes below/above the input, UNKNOWN_CARDINALITY, reshuffle_each_iteration
with repeat, one dataset iterated twice, multi-component elements, iterators), interleave with
num_parallel_calls (ParallelInterleaveDatasetV4) and batch with num_parallel_calls
(ParallelBatchDataset), and return the elements in order (batched into one tensor). The model
is loaded back in TF and every signature called with its feed; tests/unit/tfdata_models.h holds
TF's outputs (or TF's error text) for test_ops_tfdata.c.

Run: build/venv/bin/python tools/gen_tfdata_cases.py
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_f6_cases as f6  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "datasets", "tfdata")
D = tf.data.Dataset
I = tf.TensorSpec([None], tf.int64)
S = tf.TensorSpec([], tf.int64)


def order(ds):
    """All elements in order, as one tensor (a batch of everything)."""
    return next(iter(ds.batch(100000)))


def cat(ds):
    return ds.reduce(tf.constant(0, tf.int64), lambda s, v: s * 3 + v)


class M(tf.Module):
    @tf.function(input_signature=[I])
    def shuffle_seeds(self, x):
        d = D.from_tensor_slices(x)
        return {"s4_7": order(d.shuffle(4, seed=7)), "s3_1": order(d.shuffle(3, seed=1)),
                "s2_3": order(d.shuffle(2, seed=3)), "big": order(d.shuffle(100, seed=5)),
                "unknown": order(d.shuffle(-2, seed=9)), "one": order(d.shuffle(1, seed=4)),
                "f32": order(d.map(lambda v: tf.cast(v, tf.float32) / 2).shuffle(5, seed=11)),
                "card": d.shuffle(4, seed=7).cardinality()}

    @tf.function(input_signature=[I])
    def shuffle_repeat(self, x):
        d = D.from_tensor_slices(x)
        return {"re": order(d.shuffle(4, seed=7).repeat(3)),
                "fixed": order(d.shuffle(4, seed=7, reshuffle_each_iteration=False).repeat(3)),
                "after": order(d.repeat(2).shuffle(5, seed=2)),
                "then_batch": order(d.shuffle(3, seed=8).batch(2).map(tf.reduce_sum))}

    @tf.function(input_signature=[I])
    def shuffle_twice(self, x):
        sh = D.from_tensor_slices(x).shuffle(6, seed=13)
        fx = D.from_tensor_slices(x).shuffle(6, seed=13, reshuffle_each_iteration=False)
        # the second pass after the first (a control dependency): without one, which iterator draws its
        # seeds first is the executor's op order, in TF as here
        a, fa = cat(sh), cat(fx)
        with tf.control_dependencies([a, fa]):
            return {"a": a, "b": cat(sh), "fa": fa, "fb": cat(fx)}

    @tf.function(input_signature=[I])
    def shuffle_zip_iter(self, x):
        mk = lambda sd: D.zip((D.from_tensor_slices(x), D.from_tensor_slices(tf.strings.as_string(x * 10)))).shuffle(4, seed=sd)
        # two datasets with different seeds: a second iterator over one shuffled dataset draws the next
        # seeds, and which iterator draws first is the op order (TF's grappler merges two identical
        # shuffle datasets into one, and its loaded signature and traced function then differ)
        it = iter(mk(21))
        a, b = next(it)
        c, e = next(it)
        n, s = order(mk(22))
        return {"n": n, "s": s, "a": a, "b": b, "c": c, "e": e}

    @tf.function(input_signature=[I])
    def shuffle_empty(self, x):
        d = D.from_tensor_slices(x).shuffle(4, seed=3)
        return {"x": cat(d), "card": d.cardinality()}

    @tf.function(input_signature=[S])
    def err_shuffle_buffer(self, n):
        return {"x": cat(D.range(5).shuffle(n, seed=1))}

    @tf.function(input_signature=[I])
    def par_interleave(self, x):
        d = D.from_tensor_slices(x)
        f = lambda v: D.range(v).map(lambda q: q * 100 + v)
        return {"p2": order(d.interleave(f, cycle_length=2, block_length=2, num_parallel_calls=2)),
                "p3": order(d.interleave(f, cycle_length=3, block_length=1, num_parallel_calls=3, deterministic=True)),
                "p1": order(d.interleave(f, cycle_length=1, num_parallel_calls=1)),
                "nd": cat(d.interleave(f, cycle_length=2, block_length=3, num_parallel_calls=2, deterministic=True)),
                "rep": order(d.interleave(lambda v: D.from_tensors(v).repeat(v), cycle_length=4, block_length=2,
                                          num_parallel_calls=4))}

    @tf.function(input_signature=[S])
    def err_par_interleave(self, n):
        return {"x": cat(D.range(4).interleave(lambda v: D.range(v), cycle_length=n, num_parallel_calls=2))}

    @tf.function(input_signature=[I])
    def par_batch(self, x):
        d = D.from_tensor_slices(x)
        return {"b3": order(d.batch(3, num_parallel_calls=2).map(tf.reduce_sum)),
                "b3d": order(d.batch(3, drop_remainder=True, num_parallel_calls=2, deterministic=True)),
                "card": d.batch(3, num_parallel_calls=2).cardinality(),
                "cardd": d.batch(3, drop_remainder=True, num_parallel_calls=2).cardinality()}

    @tf.function(input_signature=[S])
    def err_par_batch(self, n):
        return {"x": cat(D.range(5).batch(n, num_parallel_calls=2).map(tf.reduce_sum))}

    @tf.function(input_signature=[I])
    def single_shard(self, x):
        d = D.from_tensor_slices(x)
        return {"one": d.take(1).get_single_element(), "sum": d.batch(100).map(tf.reduce_sum).get_single_element(),
                "s3_1": order(d.shard(3, 1)), "s2_0": order(d.shard(2, 0)), "s4_3": order(d.shard(4, 3)),
                "card": d.shard(3, 1).cardinality(), "card_inf": d.repeat().shard(3, 1).cardinality(),
                "mb": order(d.apply(tf.data.experimental.map_and_batch(lambda v: v * 2, 3)).map(tf.reduce_sum)),
                "mbd": order(d.apply(tf.data.experimental.map_and_batch(lambda v: (v, -v), 4, drop_remainder=True)).map(lambda a, b: tf.reduce_sum(a - b))),
                "mb_card": d.apply(tf.data.experimental.map_and_batch(lambda v: v, 4, drop_remainder=True)).cardinality()}

    @tf.function(input_signature=[I])
    def err_single_empty(self, x):
        return {"x": D.from_tensor_slices(x).take(0).get_single_element()}

    @tf.function(input_signature=[I])
    def err_single_many(self, x):
        return {"x": D.from_tensor_slices(x).get_single_element()}

    @tf.function(input_signature=[S])
    def err_shard(self, n):
        return {"x": cat(D.range(5).shard(n, 0))}

    @tf.function(input_signature=[I])
    def choose_sample(self, x):
        a, b, c = D.range(4), D.range(10, 13), D.range(20, 30)
        sel = D.from_tensor_slices(x)
        return {"ch": order(D.choose_from_datasets([a, b, c], sel)),
                "ch_stop": order(D.choose_from_datasets([a, b, c], sel, stop_on_empty_dataset=True)),
                "ch_card": D.choose_from_datasets([a, b], sel).cardinality(),
                "sm": order(D.sample_from_datasets([a, b, c], seed=3)),
                "smw": order(D.sample_from_datasets([a, b], weights=[0.2, 0.8], seed=11)),
                "smi": order(D.sample_from_datasets([a.repeat(), c], seed=5).take(12))}

    @tf.function(input_signature=[I])
    def err_choose(self, x):
        return {"x": cat(D.choose_from_datasets([D.range(3), D.range(3)], D.from_tensor_slices(x)))}

    @tf.function(input_signature=[I])
    def assert_ignore_cache(self, x):
        d = D.from_tensor_slices(x)
        inv = d.map(lambda v: tf.debugging.check_numerics(1.0 / tf.cast(v, tf.float32), "inverse"))
        return {"ac": order(d.apply(tf.data.experimental.assert_cardinality(tf.size(x, tf.int64)))),
                "ac_card": d.filter(lambda v: v > 0).apply(tf.data.experimental.assert_cardinality(3)).cardinality(),
                "ign": order(inv.ignore_errors()), "ign_card": inv.ignore_errors().cardinality(),
                "cache": order(d.shuffle(4, seed=3).cache().repeat(3)),
                "nocache": order(d.shuffle(4, seed=3).repeat(3)),
                "cache_card": d.cache().cardinality(),
                "cache_part": order(d.shuffle(5, seed=4).cache().take(2).repeat(2))}

    @tf.function(input_signature=[S])
    def err_assert_fewer(self, n):
        return {"x": cat(D.range(3).apply(tf.data.experimental.assert_cardinality(n)))}

    @tf.function(input_signature=[S])
    def err_assert_more(self, n):
        return {"x": cat(D.range(6).apply(tf.data.experimental.assert_cardinality(n)))}

    @tf.function(input_signature=[S])
    def random_ds(self, n):
        return {"r": order(D.random(seed=5).take(n)), "r2": order(D.random(seed=5, rerandomize_each_iteration=True).take(n).repeat(2)),
                "r3": order(D.random(seed=9).take(n).repeat(2)), "card": D.random(seed=1).cardinality()}

    # by hand only (TF would take the memory, or its order is random): test_ops_tfdata.c
    @tf.function(input_signature=[S])
    def hand_shuffle_forever(self, n):
        return {"x": cat(D.range(3).repeat().shuffle(n, seed=1).take(5))}

    @tf.function(input_signature=[S])
    def hand_cache_forever(self, n):
        return {"x": cat(D.range(n).repeat().cache().take(5))}

    @tf.function(input_signature=[S])
    def hand_unseeded(self, n):
        return {"x": order(D.range(n).shuffle(7))}


HAND = ["hand_shuffle_forever", "hand_cache_forever", "hand_unseeded"]

X = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], np.int64)
FEEDS = {
    "shuffle_seeds": [X],
    "shuffle_repeat": [np.array([0, 1, 2, 3, 4, 5], np.int64)],
    "shuffle_twice": [np.array([0, 1, 2, 3, 4, 5, 6, 7], np.int64)],
    "shuffle_zip_iter": [np.array([1, 2, 3, 4, 5, 6, 7], np.int64)],
    "shuffle_empty": [np.zeros([0], np.int64)],
    "err_shuffle_buffer": [np.array(0, np.int64)],
    "par_interleave": [np.array([3, 1, 0, 4, 2, 5, 2], np.int64)],
    "err_par_interleave": [np.array(1, np.int64)],
    "single_shard": [np.array([4, 8, 15, 16, 23, 42, 7], np.int64)],
    "err_single_empty": [np.array([1, 2], np.int64)],
    "err_single_many": [np.array([1, 2], np.int64)],
    "err_shard": [np.array(0, np.int64)],
    "choose_sample": [np.array([0, 1, 1, 2, 0, 1, 1, 1, 0, 2, 0, 0, 0], np.int64)],
    "err_choose": [np.array([0, 1, 2], np.int64)],
    "assert_ignore_cache": [np.array([3, 1, 0, 4, 0, 2], np.int64)],
    "err_assert_fewer": [np.array(5, np.int64)],
    "err_assert_more": [np.array(4, np.int64)],
    "random_ds": [np.array(4, np.int64)],
    "par_batch": [np.array([1, 2, 3, 4, 5, 6, 7, 8], np.int64)],
    "err_par_batch": [np.array(0, np.int64)],
}


def main():
    m = M()
    shutil.rmtree(OUT, ignore_errors=True)
    sigs = {s: getattr(m, s).get_concrete_function() for s in list(FEEDS) + HAND}
    tf.saved_model.save(m, OUT, signatures=sigs)
    loaded = tf.saved_model.load(OUT)
    rows = f6.signature_rows(loaded, FEEDS, twice=True)  # twice: a call starts the seed generators again
    f6.write_models_h("tfdata_models.h", "gen_tfdata_cases.py", "td", loaded, FEEDS, rows)


if __name__ == "__main__":
    main()
