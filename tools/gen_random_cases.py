#!/usr/bin/env python3
"""gen_random_cases.py - writes tests/unit/random_cases.h: the random family (src/ops/random.c)
against TensorFlow, value for value.

Uses the machinery of tools/gen_array_cases.py: each case runs the op eagerly through tf.raw_ops
(TF's CPU kernels) on literal inputs; the header holds inputs and TF's outputs (the test compares
them bit for bit) or TF's error text. Stateful ops (RandomUniform, ...) get a fresh kernel per
distinct (seed, seed2) in eager mode, so each case uses its own seeds; a case named "... [run2]"
is the second call of the same kernel (the test runs its session twice and compares the second).
Run: /work/main/build/venv/bin/python tools/gen_random_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
i32, i64, u64 = np.int32, np.int64, np.uint64
FLOATS = (tf.float32, tf.float64, tf.float16, tf.bfloat16)
SHAPES = ([0], [1], [3], [2, 3], [5, 7], [2, 1, 9])


def A(x, dt):
    return np.array(x, dtype=dt)


def stateless_v1():
    seeds = (A([1, 2], i32), A([-7, 123456789], i64), A([0, 0], i32), A([2**31 - 1, -2**31], i32),
             A([2**62 + 5, -2**40], i64))
    for op in ("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"):
        for dt in FLOATS:
            for k, shp in enumerate(SHAPES):
                seed = seeds[k % len(seeds)]
                case("%s %s %s seed%d" % (op, dt.name, shp, k % len(seeds)), op,
                     [("shape", A(shp, i32)), ("seed", seed)], {"dtype": dt})
        case(op + " long", op, [("shape", A([601], i64)), ("seed", seeds[1])], {"dtype": tf.float32})
        case(op + " long double", op, [("shape", A([301], i64)), ("seed", seeds[3])], {"dtype": tf.float64})
        case(op + " err seed shape", op, [("shape", A([3], i32)), ("seed", A([1, 2, 3], i32))], {"dtype": tf.float32})
        case(op + " err shape rank", op, [("shape", A([[3]], i32)), ("seed", seeds[0])], {"dtype": tf.float32})
        case(op + " err neg dim", op, [("shape", A([3, -1], i32)), ("seed", seeds[0])], {"dtype": tf.float32})
    op = "StatelessRandomUniformInt"
    for dt, lo, hi in ((i32, -5, 7), (i64, -2**40, 2**41 + 3), (i32, -2**31, 2**31 - 1), (i64, 0, 1),
                       (i64, -2**63, 2**63 - 1)):
        for k, shp in enumerate(([7], [2, 5], [0])):
            case("%s %s [%d,%d) %s" % (op, dt.__name__, lo, hi, shp), op,
                 [("shape", A(shp, i32)), ("seed", seeds[k + 1]), ("minval", A(lo, dt)), ("maxval", A(hi, dt))])
    case(op + " err range", op, [("shape", A([3], i32)), ("seed", seeds[0]), ("minval", A(3, i32)),
                                 ("maxval", A(3, i32))])
    case(op + " empty range ok", op, [("shape", A([0], i32)), ("seed", seeds[0]), ("minval", A(3, i32)),
                                      ("maxval", A(3, i32))])
    case(op + " err minval rank", op, [("shape", A([3], i32)), ("seed", seeds[0]), ("minval", A([3], i32)),
                                       ("maxval", A(5, i32))])
    op = "StatelessRandomUniformFullInt"
    for dt in (tf.int32, tf.int64, tf.uint32, tf.uint64):
        for k, shp in enumerate(([5], [3, 3])):
            case("%s %s %s" % (op, dt.name, shp), op, [("shape", A(shp, i64)), ("seed", seeds[k + 2])],
                 {"dtype": dt})
    case(op + " err seed type", op, [("shape", A([3], i32)), ("seed", A([1, 2], np.uint32))], {"dtype": tf.int32})


def v2():
    key, ctr = A([0x123456789abcdef], u64), A([2**64 - 3, 77], u64)
    alg = A(1, i32)
    for op in ("StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"):
        for dt in FLOATS:
            case("%s %s" % (op, dt.name), op, [("shape", A([4, 5], i32)), ("key", key), ("counter", ctr),
                                               ("alg", alg)], {"dtype": dt})
        case(op + " auto alg", op, [("shape", A([3], i64)), ("key", key), ("counter", A([1, 2, 3], u64)),
                                    ("alg", A(3, i32))], {"dtype": tf.float32})
        case(op + " err alg", op, [("shape", A([3], i32)), ("key", key), ("counter", ctr), ("alg", A(2, i32))],
             {"dtype": tf.float32})
        case(op + " err key", op, [("shape", A([3], i32)), ("key", A([1, 2], u64)), ("counter", ctr), ("alg", alg)],
             {"dtype": tf.float32})
        # TF asks for a counter of at least `alg` (1) elements and then reads two; here two are needed.
        case(op + " err counter", op, [("shape", A([3], i32)), ("key", key), ("counter", A(1, u64)),
                                       ("alg", alg)], {"dtype": tf.float32},
             err_needle="counter must be a vector with length at least")
    op = "StatelessRandomUniformIntV2"
    for dt, lo, hi in ((i32, -100, 100), (i64, 5, 2**35)):
        case("%s %s" % (op, dt.__name__), op, [("shape", A([3, 3], i32)), ("key", key), ("counter", ctr),
                                               ("alg", alg), ("minval", A(lo, dt)), ("maxval", A(hi, dt))])
    case(op + " err range", op, [("shape", A([3], i32)), ("key", key), ("counter", ctr), ("alg", alg),
                                 ("minval", A(9, i64)), ("maxval", A(-9, i64))])
    op = "StatelessRandomUniformFullIntV2"
    for dt in (tf.int32, tf.int64, tf.uint32, tf.uint64):
        case("%s %s" % (op, dt.name), op, [("shape", A([7], i32)), ("key", key), ("counter", ctr), ("alg", alg)],
             {"dtype": dt})
    for sd in (A([1, 2], i32), A([-3, 2**40], i64)):
        case("StatelessRandomGetKeyCounter %s" % sd.dtype, "StatelessRandomGetKeyCounter", [("seed", sd)])
        case("StatelessRandomGetKeyCounterAlg %s" % sd.dtype, "StatelessRandomGetKeyCounterAlg", [("seed", sd)])
    case("StatelessRandomGetKeyCounter err", "StatelessRandomGetKeyCounter", [("seed", A([1, 2, 3], i32))])
    case("StatelessRandomGetAlg", "StatelessRandomGetAlg", [])


def stateful():
    n = [0]

    def seeds():
        n[0] += 1
        return {"seed": 1000 + n[0], "seed2": 7 * n[0]}

    for op in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
        for dt in FLOATS:
            s = seeds()
            name = "%s %s seed %d,%d" % (op, dt.name, s["seed"], s["seed2"])
            case(name, op, [("shape", A([2, 5], i32))], {"dtype": dt, **s})
            case(name + " [run2]", op, [("shape", A([2, 5], i32))], {"dtype": dt, **s})
        case(op + " seed only", op, [("shape", A([6], i64))], {"dtype": tf.float32, "seed": 87654321, "seed2": 0})
        case(op + " seed2 only", op, [("shape", A([6], i64))], {"dtype": tf.float32, "seed": 0, "seed2": 5})
    op = "RandomUniformInt"
    for dt, lo, hi in ((i32, -3, 1000), (i64, -2**50, 2**50)):
        s = seeds()
        case("%s %s" % (op, dt.__name__), op, [("shape", A([9], i32)), ("minval", A(lo, dt)), ("maxval", A(hi, dt))], s)
        case("%s %s [run2]" % (op, dt.__name__), op, [("shape", A([9], i32)), ("minval", A(lo, dt)),
                                                      ("maxval", A(hi, dt))], s)
    case(op + " err range", op, [("shape", A([2], i32)), ("minval", A(4, i32)), ("maxval", A(-4, i32))], seeds())


def gamma():
    key, ctr, alg = A([0x123456789abcdef], u64), A([2**64 - 3, 77], u64), A(1, i32)
    alphas = {"mixed": [0.3, 1.0, 2.5, 0.05, 7.0, 1e-3], "one": [1.0], "big": [150.0, 1e4]}
    for dt in FLOATS[:3]:
        for an, av in alphas.items():
            for shp in ([5, len(av)], [3, 2, len(av)]):
                case("StatelessRandomGammaV3 %s %s %s" % (dt.name, an, shp), "StatelessRandomGammaV3",
                     [("shape", A(shp, i32)), ("key", key), ("counter", ctr), ("alg", alg),
                      ("alpha", np.array(av, dtype=dt.as_numpy_dtype))], {"dtype": dt})
        case("StatelessRandomGammaV2 %s" % dt.name, "StatelessRandomGammaV2",
             [("shape", A([4, 3], i64)), ("seed", A([5, -9], i32)),
              ("alpha", np.array([0.5, 1.0, 3.0], dtype=dt.as_numpy_dtype))])
    f32 = np.float32
    case("StatelessRandomGammaV3 err bfloat16", "StatelessRandomGammaV3",
         [("shape", A([2], i32)), ("key", key), ("counter", ctr), ("alg", alg),
          ("alpha", np.array([1, 2], dtype=tf.bfloat16.as_numpy_dtype))], {"dtype": tf.bfloat16})
    case("StatelessRandomGammaV3 alpha matrix", "StatelessRandomGammaV3",
         [("shape", A([2, 2, 3], i64)), ("key", key), ("counter", ctr), ("alg", alg),
          ("alpha", np.array([[0.7, 1, 2], [3, 0.2, 9]], f32))], {"dtype": tf.float32})
    case("StatelessRandomGammaV3 large (parallel)", "StatelessRandomGammaV3",
         [("shape", A([300, 4], i64)), ("key", key), ("counter", ctr), ("alg", alg),
          ("alpha", np.array([0.3, 1, 2.5, 40], f32))], {"dtype": tf.float32})
    case("StatelessRandomGammaV3 scalar alpha", "StatelessRandomGammaV3",
         [("shape", A([7], i64)), ("key", key), ("counter", ctr), ("alg", alg), ("alpha", np.array(0.4, f32))],
         {"dtype": tf.float32})
    case("StatelessRandomGammaV3 empty", "StatelessRandomGammaV3",
         [("shape", A([0, 2], i32)), ("key", key), ("counter", ctr), ("alg", alg), ("alpha", np.array([1, 2], f32))],
         {"dtype": tf.float32})
    case("StatelessRandomGammaV3 err shape", "StatelessRandomGammaV3",
         [("shape", A([3, 2], i32)), ("key", key), ("counter", ctr), ("alg", alg), ("alpha", np.array([1, 2, 3], f32))],
         {"dtype": tf.float32})
    case("StatelessRandomGammaV2 err seed", "StatelessRandomGammaV2",
         [("shape", A([3], i32)), ("seed", A([1, 2, 3], i32)), ("alpha", np.array([1, 2, 3], f32))])
    for k, (dt, av) in enumerate(((tf.float32, [0.5, 1.0, 4.0]), (tf.float64, [2.0, 0.25]), (tf.float16, [1.5]))):
        s = {"seed": 4242 + k, "seed2": 17 + k}
        args = [("shape", A([3, 2], i32)), ("alpha", np.array(av, dtype=dt.as_numpy_dtype))]
        case("RandomGamma %s" % dt.name, "RandomGamma", args, s)
        case("RandomGamma %s [run2]" % dt.name, "RandomGamma", args, s)


def multinomial():
    f32 = np.float32
    logits = {"plain": [[0.1, 2.0, -1.0, 0.5], [3.0, 3.0, -2.0, 0.0], [-5, 1, 1, 7]],
              "inf": [[-np.inf, 0.0, 1.0, -np.inf], [np.inf, 0.5, 0.2, np.nan], [-np.inf] * 4],
              "one_class": [[0.3], [-2.0], [9.0]]}
    for ln, lv in logits.items():
        for dt in FLOATS:
            for n in (1, 5, 12):
                case("StatelessMultinomial %s %s n%d" % (ln, dt.name, n), "StatelessMultinomial",
                     [("logits", np.array(lv, dtype=dt.as_numpy_dtype)), ("num_samples", A(n, i32)),
                      ("seed", A([3, 11 + n], i64))], {"output_dtype": tf.int64 if n != 5 else tf.int32})
    big = np.linspace(-3, 3, 40 * 7).reshape(7, 40).astype(f32)
    case("StatelessMultinomial 7x40 n33", "StatelessMultinomial",
         [("logits", big), ("num_samples", A(33, i32)), ("seed", A([-8, 2**40], i64))])
    case("StatelessMultinomial zero samples", "StatelessMultinomial",
         [("logits", np.zeros((2, 3), f32)), ("num_samples", A(0, i32)), ("seed", A([1, 2], i32))])
    case("StatelessMultinomial err classes", "StatelessMultinomial",
         [("logits", np.zeros((2, 0), f32)), ("num_samples", A(3, i32)), ("seed", A([1, 2], i32))])
    case("StatelessMultinomial err negative", "StatelessMultinomial",
         [("logits", np.zeros((2, 2), f32)), ("num_samples", A(-1, i32)), ("seed", A([1, 2], i32))])
    case("StatelessMultinomial err rank", "StatelessMultinomial",
         [("logits", np.zeros((2,), f32)), ("num_samples", A(1, i32)), ("seed", A([1, 2], i32))])
    for k, dt in enumerate((tf.float32, tf.float64)):
        s = {"seed": 777 + k, "seed2": 31 + k}
        args = [("logits", np.array(logits["plain"], dtype=dt.as_numpy_dtype)), ("num_samples", A(6, i32))]
        case("Multinomial %s" % dt.name, "Multinomial", args, s)
        case("Multinomial %s [run2]" % dt.name, "Multinomial", args, s)


def poisson():
    rates = [0.5, 3.0, 9.99, 10.0, 47.5, 1e4, 0.0, -1.0]
    for rdt in (np.float32, np.float64, np.float16, np.int32, np.int64):
        for odt in (tf.float32, tf.float64, tf.float16, tf.int32, tf.int64):
            if rdt in (np.int32, np.int64) and odt in (tf.float16,):
                continue
            rv = np.array([max(r, 0) if rdt in (np.int32, np.int64) else r for r in rates], dtype=rdt)
            case("StatelessRandomPoisson %s->%s" % (np.dtype(rdt).name, odt.name), "StatelessRandomPoisson",
                 [("shape", A([3, len(rates)], i32)), ("seed", A([21, -4], i64)), ("lam", rv)], {"dtype": odt})
    case("StatelessRandomPoisson scalar lam", "StatelessRandomPoisson",
         [("shape", A([2, 5], i32)), ("seed", A([1, 1], i32)), ("lam", np.array(4.5, np.float32))], {"dtype": tf.float32})
    case("StatelessRandomPoisson half near overflow", "StatelessRandomPoisson",
         [("shape", A([4], i32)), ("seed", A([1, 9], i32)), ("lam", np.array(65400, np.float32))], {"dtype": tf.float16})
    case("StatelessRandomPoisson err shape", "StatelessRandomPoisson",
         [("shape", A([2, 5], i32)), ("seed", A([1, 1], i32)), ("lam", np.array([1, 2], np.float32))], {"dtype": tf.float32})
    for k, (rdt, odt) in enumerate(((np.float32, tf.int64), (np.float64, tf.float64), (np.int32, tf.int32))):
        s = {"seed": 9001 + k, "seed2": 3 * k + 1}
        args = [("shape", A([2, 3], i32)), ("rate", np.array([0.7, 12.5, 200], dtype=rdt))]
        case("RandomPoissonV2 %s->%s" % (np.dtype(rdt).name, odt.name), "RandomPoissonV2", args, {"dtype": odt, **s})
        case("RandomPoissonV2 %s->%s [run2]" % (np.dtype(rdt).name, odt.name), "RandomPoissonV2", args,
             {"dtype": odt, **s})


def shuffle():
    key, ctr = A([0x123456789abcdef], u64), A([2**64 - 3, 77], u64)
    vals = {"vec": np.arange(17, dtype=np.float32), "mat": np.arange(30, dtype=np.int64).reshape(10, 3),
            "cube": np.arange(2 * 9 * 4, dtype=np.int8).reshape(9, 2, 4), "one_row": np.arange(5, dtype=np.float64).reshape(1, 5),
            "scalar": np.array(3.5, np.float32), "empty": np.zeros((0, 3), np.float32),
            "half": np.arange(6, dtype=np.float16), "bool": np.array([True, False, False, True, True])}
    for vn, vv in vals.items():
        case("StatelessShuffle %s" % vn, "StatelessShuffle", [("value", vv), ("key", key), ("counter", ctr),
                                                              ("alg", A(1, i32))])
    case("StatelessShuffle auto alg", "StatelessShuffle", [("value", vals["vec"]), ("key", key), ("counter", ctr),
                                                           ("alg", A(3, i32))])
    case("StatelessShuffle err alg", "StatelessShuffle", [("value", vals["vec"]), ("key", key), ("counter", ctr),
                                                          ("alg", A(2, i32))])
    for k, vn in enumerate(("vec", "mat")):
        s = {"seed": 55 + k, "seed2": 66 + k}
        case("RandomShuffle %s" % vn, "RandomShuffle", [("value", vals[vn])], s)
        case("RandomShuffle %s [run2]" % vn, "RandomShuffle", [("value", vals[vn])], s)


def main():
    stateless_v1()
    v2()
    stateful()
    gamma()
    multinomial()
    poisson()
    shuffle()
    g.write_unit_header("random_cases")


if __name__ == "__main__":
    main()
