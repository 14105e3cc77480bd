#!/usr/bin/env python3
"""gen_samplers2_cases.py - writes tests/unit/samplers2_cases.h: the samplers session 23 (i2) added,
against TensorFlow 2.21 (eager tf.raw_ops, TF's CPU kernels): the stateful
ParameterizedTruncatedNormal (seed, seed2), each case on a fresh node, some with their second run, (a seed of its own, so TF's
eager kernel cache never continues an earlier case's stream), in sizes TF runs in one shard, and
TF's errors for bad input.

Uses the machinery of tools/gen_array_cases.py. Run: build/venv/bin/python tools/gen_samplers2_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402

case = g.case
A = g.A
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
_seed = [100]


def truncated_normal():
    op = "ParameterizedTruncatedNormal"
    inf = float("inf")

    def c(nm, shape, m, sd, lo, hi, dt=f32, sdt=i32, seed2=None, run2=False):
        _seed[0] += 1
        for tag in ("", " second run [run2]") if run2 else ("",):
            c1(nm + tag, shape, m, sd, lo, hi, dt, sdt, seed2)

    def c1(nm, shape, m, sd, lo, hi, dt, sdt, seed2):
        case("%s %s [exact]" % (op, nm), op, [("shape", A(shape, sdt)), ("means", A(m, dt)), ("stdevs", A(sd, dt)),
                                              ("minvals", A(lo, dt)), ("maxvals", A(hi, dt))],
             {"seed": _seed[0], "seed2": _seed[0] * 7 if seed2 is None else seed2})
    for dt in (np.float16, f32, f64):
        n = np.dtype(dt).name
        # each sampler: randn (wide bounds), uniform (narrow), exponential (one-sided far tail), reversed
        c("%s randn" % n, [20], 0.0, 1.0, -2.0, 2.0, dt, run2=True)
        c("%s uniform" % n, [4, 5], 0.5, 2.0, 0.0, 1.0, dt)
        c("%s exponential" % n, [20], 0.0, 1.0, 2.5, inf, dt)
        c("%s exponential bounded" % n, [3, 2, 2], 0.0, 1.0, 2.0, 3.0, dt)
        c("%s lower tail" % n, [15], 1.0, 0.5, -inf, -1.0, dt)
        c("%s above mean" % n, [15], 0.0, 1.0, -inf, -3.0, dt)
        c("%s one-sided" % n, [10], [0.0], [1.0], -0.5, inf, dt)
        # per-batch parameters (batch-major output)
        c("%s batches" % n, [3, 4], [0.0, 1.0, -1.0], [1.0, 0.1, 3.0], [-1.0, 0.9, 0.0], [1.0, 1.1, inf], dt, run2=True)
        c("%s batch vector bounds" % n, [2, 3], 0.0, 1.0, [-1.0, 0.5], [1.0, 2.0], dt)
        c("%s length-1 bounds" % n, [2, 5], 2.0, 3.0, [1.0], [9.0], dt)
    c("int64 shape", [6], 0.0, 1.0, -1.0, 1.0, sdt=i64)
    c("seed2 zero", [8], 0.0, 1.0, -1.0, 1.0, seed2=0)
    c("one batch of 100", [100], 0.0, 1.0, -1.0, 1.0, run2=True)
    c("empty", [0, 3], [0.0], 1.0, -1.0, 1.0)
    c("empty batches", [3, 0], [0.0, 1.0, 2.0], 1.0, -1.0, 1.0)
    c("err params", [4], 0.0, -1.0, -1.0, 1.0)
    c("err bounds", [4], 0.0, 1.0, 1.0, -1.0)
    c("err infinite", [4], 0.0, 1.0, -inf, inf)
    c("err batch param", [4, 2], [0.0, 1.0], 1.0, -1.0, 1.0)
    c("err param rank", [4], [[0.0]], 1.0, -1.0, 1.0)
    c("err shape rank", [[4, 2]], 0.0, 1.0, -1.0, 1.0)
    c("err shape empty", np.zeros([0], i32), 0.0, 1.0, -1.0, 1.0)
    c("err shape negative", [-2], 0.0, 1.0, -1.0, 1.0)


def main():
    truncated_normal()
    g.write_unit_header("samplers2_cases")


if __name__ == "__main__":
    main()
