#!/usr/bin/env python3
"""gen_e4_cases.py - writes tests/unit/e4_cases.h: the random ops of session 20 (e4) that need no
state variable, against TensorFlow (eager tf.raw_ops, TF's CPU kernels): StatelessRandomBinomial
(every T and output dtype, broadcasting, the inversion / BTRS / p > 0.5 / edge branches),
RandomIndexShuffle (every index and seed dtype, block sizes 16..64 bits, per-row seeds, rounds) and
the candidate samplers, with TF's error texts for bad input. The resource-state ops are checked through saved
models (tools/gen_e4_models.py). Outputs compared bit for bit.

Uses the machinery of tools/gen_array_cases.py. Run: build/venv/bin/python tools/gen_e4_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
A = g.A
nan, inf = float("nan"), float("inf")
f16, f32, f64, i32, i64 = np.float16, np.float32, np.float64, np.int32, np.int64


def binomial():
    seed = A([3, 4], i64)
    for T in (f16, f32, f64):
        for out in (tf.float16, tf.float32, tf.float64, tf.int32, tf.int64):
            case("StatelessRandomBinomial %s->%s" % (np.dtype(T).name, out.name), "StatelessRandomBinomial",
                 [("shape", A([3, 4], i32)), ("seed", seed), ("counts", A([5, 20, 100, 7], T)),
                  ("probs", A([0.3, 0.6, 0.9, 0.02], T))], {"dtype": out})
    B = lambda name, shape, counts, probs, seed=seed, T=f32, out=tf.int32, sdt=i32: case(  # noqa: E731
        "StatelessRandomBinomial " + name, "StatelessRandomBinomial",
        [("shape", A(shape, sdt)), ("seed", seed), ("counts", A(counts, T)), ("probs", A(probs, T))], {"dtype": out})
    B("bcast", [5, 2, 3], [[10.0], [200.0]], [0.1, 0.5, 0.97])
    B("scalar params", [7], 12.0, 0.4)
    B("edges", [2, 8], [0, -3, 4, 4, 4, 1e6, 3, 9], [0.5, 0.5, 0, -1, 1, 0.5, 2, 0.5], out=tf.float32)
    B("nan prob", [3], [4.0, 4.0, 4.0], [nan, 0.5, 0.5], out=tf.float64)
    B("p over half inversion", [6], 9.0, 0.93)
    B("p over half btrs", [6], 90.0, 0.7)
    B("large count", [4], [1e9, 5e4, 123456.0, 77.0], [0.5, 0.001, 0.999, 0.13], T=f64, out=tf.int64)
    B("int64 shape", [2, 3], [1.0, 50.0, 9.0], [0.5, 0.5, 0.5], sdt=i64)
    B("int32 seed", [4], 30.0, 0.5, seed=A([-7, 2**31 - 1], i32))
    B("empty", [0, 2], [3.0, 4.0], [0.5, 0.5])
    B("empty batch", [2, 0], np.zeros([0], f32), np.zeros([0], f32))
    B("err bad bcast", [2, 3], [1.0, 2.0], [0.5, 0.5, 0.5])
    B("err shape not ending", [3, 2], [1.0, 2.0, 3.0], [0.5, 0.5, 0.5])
    B("err shape matrix", [[3]], 1.0, 0.5)
    B("err neg dim", [-1], 1.0, 0.5)
    B("err seed shape", [2], 1.0, 0.5, seed=A([1, 2, 3], i64))


def index_shuffle():
    u32, u64 = np.uint32, np.uint64
    for dt in (i32, i64, u32, u64):
        for sdt in (i32, i64, u32, u64):
            case("RandomIndexShuffle %s seed %s" % (np.dtype(dt).name, np.dtype(sdt).name), "RandomIndexShuffle",
                 [("index", A(list(range(10)), dt)), ("seed", A([1, 2, 3], sdt)), ("max_index", A(9, dt))])
    S = lambda name, idx, seed, mx, dt=i64, attrs=None: case(  # noqa: E731
        "RandomIndexShuffle " + name, "RandomIndexShuffle", [("index", A(idx, dt)), ("seed", A(seed, i64)), ("max_index", A(mx, dt))],
        attrs)
    S("scalar", 5, [7, 8, 9], 100)
    S("max 0", [0, 0], [1, 1, 1], 0)
    S("max 1", [0, 1], [4, 5, 6], 1)
    S("big max", [0, 1, 2**40, 12345678901], [11, 22, 33], 2**41)
    S("max 2^32", [0, 5, 2**32], [3, 2, 1], 2**32)
    S("near 2^64", [0, 2**62], [9, 9, 9], 2**63 - 1)
    S("uint64 top", [0, 2**63 + 5], [5, 6, 7], 2**64 - 1, dt=np.uint64)
    S("per-row seed", [1, 2, 3], [[1, 2, 3], [4, 5, 6], [7, 8, 9]], 50)
    S("vector max", [1, 2, 3], [1, 2, 3], [5, 500, 50000])
    S("scalar index, seeds", 3, [[1, 2, 3], [4, 5, 6]], 10)
    S("rounds 8", list(range(6)), [1, 2, 3], 70000, attrs={"rounds": 8})
    S("negative seed", [4, 5], [-1, -2, -3], 1000)
    S("empty", np.zeros([0], i64), [1, 2, 3], 10)
    S("err index matrix", [[1, 2]], [1, 2, 3], 10)
    S("err seed shape", [1, 2], [1, 2], 10)
    S("err max shape", [1, 2], [1, 2, 3], [10, 11, 12])


def samplers():
    tc = A([[1, 5], [3, 3], [0, 9]], i64)
    for op in ("UniformCandidateSampler", "LogUniformCandidateSampler", "LearnedUnigramCandidateSampler",
               "ThreadUnsafeUnigramCandidateSampler"):
        for unique in (False, True):
            for run2 in ("", " [run2]"):
                case("%s unique=%s%s" % (op, unique, run2), op, [("true_classes", tc)],
                     {"num_true": 2, "num_sampled": 6, "unique": unique, "range_max": 10, "seed": 3, "seed2": 4})
        C = lambda name, tcl, nt, ns, rng, unique=True, seed=(3, 4): case(  # noqa: E731
            "%s %s" % (op, name), op, [("true_classes", A(tcl, i64))],
            {"num_true": nt, "num_sampled": ns, "unique": unique, "range_max": rng, "seed": seed[0], "seed2": seed[1]})
        C("big range", [[123456, 7]], 2, 20, 1000000, unique=False)
        # eager TF keeps one kernel per distinct attrs: the [run2] twin follows its first run at once
        C("all of range", [[0], [4]], 1, 5, 5, seed=(17, 18))
        C("all of range [run2]", [[0], [4]], 1, 5, 5, seed=(17, 18))
        C("one", [[0]], 1, 1, 1)
        C("empty batch", np.zeros([0, 1], i64), 1, 3, 7)
        C("other seed", [[2]], 1, 4, 50, seed=(99, 0))
        C("err range too small", [[1]], 1, 6, 5)
        C("err num_true", [[1, 2]], 1, 3, 10)
        C("err not matrix", [1, 2], 1, 3, 10)
        C("err out of range", [[10]], 1, 3, 10)
        C("err negative class", [[-1]], 1, 3, 10)
    def F(name, tcl, nt, ns, rng, unigrams, unique=True, seed=(3, 4), **kw):
        attrs = {"num_true": nt, "num_sampled": ns, "unique": unique, "range_max": rng, "seed": seed[0], "seed2": seed[1]}
        if unigrams is not None:
            attrs["unigrams"] = [float(u) for u in unigrams]
        attrs.update(kw)
        case("FixedUnigramCandidateSampler " + name, "FixedUnigramCandidateSampler", [("true_classes", A(tcl, i64))], attrs)
    u10 = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    for unique in (False, True):
        for run2 in ("", " [run2]"):
            F("unique=%s%s" % (unique, run2), [[1, 5], [3, 3], [0, 9]], 2, 6, 10, u10, unique=unique)
    F("distortion 0.75", [[1], [7]], 1, 8, 10, u10, unique=False, distortion=0.75)
    F("distortion 0", [[2]], 1, 5, 10, u10, distortion=0.0)
    F("skewed", [[0], [3]], 1, 12, 6, [1000, 1, 1, 50, 0.5, 3], unique=False, seed=(7, 11))
    F("reserved ids", [[0], [5]], 1, 4, 7, [5, 1, 2, 3, 9], num_reserved_ids=2)
    F("shard 1 of 2", [[1], [2]], 1, 3, 4, [1, 2, 3, 4, 5, 6, 7], num_shards=2, shard=1, num_reserved_ids=1)
    F("shard 0 of 3", [[0]], 1, 2, 3, [4, 4, 4, 1, 1, 1, 9], num_shards=3, shard=0)
    F("zero weight never drawn", [[0], [1]], 1, 10, 3, [0, 3, 1], unique=False, seed=(5, 6))
    F("big range", [[1234]], 1, 16, 2000, [float(1 + (i * 7919) % 101) for i in range(2000)], unique=False)
    F("err range mismatch", [[1]], 1, 2, 9, u10)
    F("err range mismatch shard", [[1]], 1, 2, 10, u10, num_shards=2)
    F("err no unigrams", [[1]], 1, 2, 10, None)
    F("err out of range", [[10]], 1, 3, 10, u10)
    F("err range too small", [[1]], 1, 11, 10, u10)
    for run2 in ("", " [run2]"):
        case("AllCandidateSampler" + run2, "AllCandidateSampler", [("true_classes", tc)],
             {"num_true": 2, "num_sampled": 10, "unique": True, "seed": 1, "seed2": 2})
    case("AllCandidateSampler err out of range", "AllCandidateSampler", [("true_classes", tc)],
         {"num_true": 2, "num_sampled": 6, "unique": False, "seed": 1, "seed2": 2})


def main():
    binomial()
    index_shuffle()
    samplers()
    g.write_unit_header("e4_cases")


if __name__ == "__main__":
    main()
