#!/usr/bin/env python3
"""gen_c3_cases.py - writes tests/unit/c3_cases.h: the ops added in session 19 (c3) after
tools/sweep_ops.py found them missing: the tf.math.special functions Dawsn, Expint, FresnelCos,
FresnelSin, Spence and Betainc (math_cephes.c), TridiagonalSolve, TridiagonalMatMul,
BandedTriangularSolve (linalg_band.c), MatrixSquareRoot, MatrixLogarithm and Eig (linalg_schur.c),
against TensorFlow (eager tf.raw_ops, TF's CPU
kernels): every dtype TF's CPU kernel registers, many points over the whole domain (interval
boundaries of the rational approximations, tiny and huge arguments, poles, negative inputs,
NaN/Inf) and TF's error text for bad input.

Uses the machinery of tools/gen_array_cases.py. test_ops_c3 compares floats within 1e-5
(doubles within 1e-9), the special functions again within a purely relative bound, and Eig's
eigenvectors up to a unit factor (with A v = lambda v). C3_STRESS=1 writes 750 random
Eig / sqrtm / logm cases instead (a one-off check, not committed: 748 pass, see bench/RESULTS.md).
Run: build/venv/bin/python tools/gen_c3_cases.py
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
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
c64, c128 = np.complex64, np.complex128
rng = np.random.default_rng(19)


def domain_points(breaks, hi=1e12):
    """Points over the real line: both signs, near each interval boundary, log-spaced tiny to huge."""
    pos = list(np.logspace(-30, np.log10(hi), 160))
    for b in breaks:
        pos += [b * (1 - 1e-6), b, b * (1 + 1e-6)]
    pos += list(np.linspace(0.01, 80, 400))
    pos = sorted(set(pos))
    return [0.0, -0.0, nan, inf, -inf] + pos + [-p for p in pos]


def special():
    fns = {
        "Dawsn": [3.25, 6.25, 1e9],
        "Expint": [2, 4, 8, 16, 32, 64, 88, 700],
        "FresnelCos": [1.6, 36974.0],
        "FresnelSin": [1.6, 36974.0],
        "Spence": [0.5, 1.0, 1.5, 2.0],
    }
    for op, breaks in fns.items():
        pts = domain_points(breaks)
        for dt in (f32, f64):
            case("special %s %s" % (op, np.dtype(dt).name), op, [("x", A(pts, dt))])
        case("special %s 2-D" % op, op, [("x", rng.uniform(-3, 3, (3, 4)).astype(f32))])
        case("special %s empty" % op, op, [("x", np.zeros([0, 2], f64))])
        if op == "Spence":
            near1 = [1 + d for d in (-1e-3, -1e-6, 1e-6, 1e-3)] + list(np.linspace(0, 3, 61))
            for dt in (f32, f64):
                case("special Spence near 1 %s" % np.dtype(dt).name, op, [("x", A(near1, dt))])


def betainc():
    ab = [1e-3, 0.1, 0.5, 1.0, 1.5, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0, 1e5]
    xs = [0.0, 1e-5, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.99, 0.999999, 1.0]
    grid = np.array([(a, b, x) for a in ab for b in ab for x in xs])
    for dt in (f32, f64):
        case("Betainc grid %s" % np.dtype(dt).name, "Betainc",
             [("a", grid[:, 0].astype(dt)), ("b", grid[:, 1].astype(dt)), ("x", grid[:, 2].astype(dt))])
        r = rng.uniform(0, 1, (3, 200))
        a = np.exp(rng.uniform(-5, 6, 200))
        b = np.exp(rng.uniform(-5, 6, 200))
        case("Betainc random %s" % np.dtype(dt).name, "Betainc",
             [("a", a.astype(dt)), ("b", b.astype(dt)), ("x", r[2].astype(dt))])
        odd = [(-1, 2, 0.5), (0, 2, 0.5), (2, -1, 0.5), (2, 0, 0.5), (2, 3, -0.1), (2, 3, 1.1), (nan, 2, 0.5),
               (2, nan, 0.5), (2, 3, nan), (inf, 2, 0.5), (2, inf, 0.5), (2, 3, inf), (1, 1, 0.25), (1e-30, 1, 0.5),
               (-1, 2, 0.0), (2, 3, 0.0), (2, 3, 1.0)]
        odd = np.array(odd)
        case("Betainc odd %s" % np.dtype(dt).name, "Betainc",
             [("a", odd[:, 0].astype(dt)), ("b", odd[:, 1].astype(dt)), ("x", odd[:, 2].astype(dt))])
        # scalars broadcast against the one shape
        x23 = rng.uniform(0, 1, (2, 3)).astype(dt)
        case("Betainc scalar a b %s" % np.dtype(dt).name, "Betainc", [("a", A(2.5, dt)), ("b", A(0.7, dt)), ("x", x23)])
        case("Betainc scalar x %s" % np.dtype(dt).name, "Betainc",
             [("a", rng.uniform(0.5, 5, (2, 3)).astype(dt)), ("b", rng.uniform(0.5, 5, (2, 3)).astype(dt)), ("x", A(0.4, dt))])
        case("Betainc scalar b %s" % np.dtype(dt).name, "Betainc",
             [("a", rng.uniform(0.5, 5, (4,)).astype(dt)), ("b", A(3.0, dt)), ("x", rng.uniform(0, 1, (4,)).astype(dt))])
    case("Betainc all scalar", "Betainc", [("a", A(2.0)), ("b", A(3.0)), ("x", A(0.25))])
    case("Betainc empty", "Betainc", [("a", np.zeros([0, 3], f32)), ("b", A(1.0)), ("x", np.zeros([0, 3], f32))])
    case("Betainc err a b", "Betainc", [("a", A([1.0, 2.0])), ("b", A([1.0, 2.0, 3.0])), ("x", A(0.5))])
    case("Betainc err a x", "Betainc", [("a", A([1.0, 2.0])), ("b", A(1.0)), ("x", A([[0.5, 0.5]]))])
    case("Betainc err b x", "Betainc", [("a", A(1.0)), ("b", A([1.0, 2.0])), ("x", A([0.5]))])
    case("Betainc err [1] vs []", "Betainc", [("a", A([1.0])), ("b", A(1.0)), ("x", A([0.5, 0.5]))])


def R(shape, dt, lo=-1.0, hi=1.0):
    """Uniform values of dtype dt (complex: both parts)."""
    if dt in (c64, c128):
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dt)
    return rng.uniform(lo, hi, shape).astype(dt)


LA_DTYPES = (f32, f64, c64, c128)


def tridiagonal():
    for dt in LA_DTYPES:
        nm = np.dtype(dt).name
        for piv, pert in ((False, False), (True, False), (True, True)):
            at = {"partial_pivoting": piv, "perturb_singular": pert}
            tag = "%s piv=%d pert=%d" % (nm, piv, pert)
            d = R((2, 3, 3, 6), dt)
            d[..., 1, :] += 4  # diagonally dominant
            case("TridiagonalSolve dominant " + tag, "TridiagonalSolve", [("diagonals", d), ("rhs", R((2, 3, 6, 4), dt))], at)
            d = R((3, 7), dt, -2, 2)  # general: may need row interchanges
            case("TridiagonalSolve general " + tag, "TridiagonalSolve", [("diagonals", d), ("rhs", R((7, 3), dt))], at)
            d = R((3, 5), dt)
            d[1, 0] = 0  # zero first pivot: Thomas fails (NaN), pivoting solves
            case("TridiagonalSolve zero pivot " + tag, "TridiagonalSolve", [("diagonals", d), ("rhs", R((5, 2), dt))], at)
            d = np.array([[1, 1, 1, 0], [1, 1, 1, 1], [0, 1, 1, 1]], dt)  # singular (rows 0 and 1 equal)
            case("TridiagonalSolve singular " + tag, "TridiagonalSolve", [("diagonals", d), ("rhs", R((4, 2), dt))], at)
            d = np.array([[0.0], [0.0], [0.0]], dt)
            case("TridiagonalSolve 1x1 zero " + tag, "TridiagonalSolve", [("diagonals", d), ("rhs", A([[1.0, 2.0]], dt))], at)
            d = np.array([[9.0], [2.0], [9.0]], dt)
            case("TridiagonalSolve 1x1 " + tag, "TridiagonalSolve", [("diagonals", d), ("rhs", A([[1.0, -3.0]], dt))], at)
            d = R((3, 2), dt)
            d[1] += 3
            case("TridiagonalSolve 2x2 " + tag, "TridiagonalSolve", [("diagonals", d), ("rhs", R((2, 1), dt))], at)
            case("TridiagonalSolve empty " + tag, "TridiagonalSolve", [("diagonals", np.zeros((3, 0), dt)), ("rhs", np.zeros((0, 2), dt))], at)
            if not pert:  # TF 2.21 crashes there (the max of an empty row): no reference
                case("TridiagonalSolve no rhs " + tag, "TridiagonalSolve", [("diagonals", R((3, 4), dt)), ("rhs", np.zeros((4, 0), dt))], at)
        tiny = np.array([[1e-30, 1e-30, 1e-30, 0], [1e-30, 2e-30, 1e-30, 1e-30], [0, 1e-30, 1e-30, 1e-30]], dt)
        case("TridiagonalSolve tiny perturb " + nm, "TridiagonalSolve", [("diagonals", tiny), ("rhs", R((4, 2), dt))],
             {"partial_pivoting": True, "perturb_singular": True})
    at = {"partial_pivoting": True}
    case("TridiagonalSolve err rows", "TridiagonalSolve", [("diagonals", U3((4, 5))), ("rhs", U3((5, 2)))], at)
    case("TridiagonalSolve err lhs rhs", "TridiagonalSolve", [("diagonals", U3((3, 5))), ("rhs", U3((4, 2)))], at)
    case("TridiagonalSolve err rank", "TridiagonalSolve", [("diagonals", U3((5,))), ("rhs", U3((5, 2)))], at)
    case("TridiagonalSolve err same rank", "TridiagonalSolve", [("diagonals", U3((1, 3, 5))), ("rhs", U3((5, 2)))], at)
    case("TridiagonalSolve err outer", "TridiagonalSolve", [("diagonals", U3((2, 3, 5))), ("rhs", U3((3, 5, 2)))], at)
    case("TridiagonalSolve err perturb", "TridiagonalSolve", [("diagonals", U3((3, 5))), ("rhs", U3((5, 2)))],
         {"partial_pivoting": False, "perturb_singular": True})

    for dt in LA_DTYPES:
        nm = np.dtype(dt).name
        case("TridiagonalMatMul " + nm, "TridiagonalMatMul",
             [("superdiag", R((2, 1, 5), dt)), ("maindiag", R((2, 1, 5), dt)), ("subdiag", R((2, 1, 5), dt)),
              ("rhs", R((2, 5, 3), dt))])
        case("TridiagonalMatMul 1x1 " + nm, "TridiagonalMatMul",
             [("superdiag", R((1, 1), dt)), ("maindiag", R((1, 1), dt)), ("subdiag", R((1, 1), dt)), ("rhs", R((1, 4), dt))])
    case("TridiagonalMatMul nan", "TridiagonalMatMul",
         [("superdiag", A([[1.0, nan, 2.0]])), ("maindiag", A([[1.0, 2.0, inf]])), ("subdiag", A([[nan, 1.0, 1.0]])),
          ("rhs", A([[1.0], [2.0], [3.0]]))])
    case("TridiagonalMatMul no cols", "TridiagonalMatMul",
         [("superdiag", U3((1, 3))), ("maindiag", U3((1, 3))), ("subdiag", U3((1, 3))), ("rhs", np.zeros((3, 0), f32))])
    case("TridiagonalMatMul err super", "TridiagonalMatMul",
         [("superdiag", U3((1, 4))), ("maindiag", U3((1, 3))), ("subdiag", U3((1, 3))), ("rhs", U3((3, 2)))])
    case("TridiagonalMatMul err main", "TridiagonalMatMul",
         [("superdiag", U3((1, 3))), ("maindiag", U3((2, 3))), ("subdiag", U3((1, 3))), ("rhs", U3((3, 2)))])
    case("TridiagonalMatMul err sub", "TridiagonalMatMul",
         [("superdiag", U3((1, 3))), ("maindiag", U3((1, 3))), ("subdiag", U3((1, 2))), ("rhs", U3((3, 2)))])
    case("TridiagonalMatMul err outer", "TridiagonalMatMul",
         [("superdiag", U3((2, 1, 3))), ("maindiag", U3((2, 1, 3))), ("subdiag", U3((1, 1, 3))), ("rhs", U3((2, 3, 2)))])


def U3(shape):
    return rng.uniform(-1, 1, shape).astype(f32)


def banded():
    for dt in LA_DTYPES:
        nm = np.dtype(dt).name
        for lower in (True, False):
            for adj in (False, True):
                at = {"lower": lower, "adjoint": adj}
                tag = "%s lower=%d adj=%d" % (nm, lower, adj)
                for nb in (1, 2, 3, 6, 8):
                    a = R((nb, 6), dt)
                    a[0 if lower else nb - 1] += 3 * (1 if lower else -1)
                    case("BandedTriangularSolve nb=%d %s" % (nb, tag), "BandedTriangularSolve",
                         [("matrix", a), ("rhs", R((6, 3), dt))], at)
                a = R((2, 1, 3, 5), dt)
                a[..., 0 if lower else 2, :] += 3
                case("BandedTriangularSolve bcast " + tag, "BandedTriangularSolve",
                     [("matrix", a), ("rhs", R((4, 5, 2), dt))], at)
    a = U3((2, 4))
    a[0] += 2
    case("BandedTriangularSolve err rank0", "BandedTriangularSolve", [("matrix", U3((4,))), ("rhs", U3((4, 2)))], {"lower": True, "adjoint": False})
    case("BandedTriangularSolve err rank1", "BandedTriangularSolve", [("matrix", a), ("rhs", U3((4,)))], {"lower": True, "adjoint": False})
    case("BandedTriangularSolve err empty0", "BandedTriangularSolve", [("matrix", np.zeros((0, 4), f32)), ("rhs", U3((4, 2)))],
         {"lower": True, "adjoint": False}, err_needle="In[0] must not be an empty tensor")
    case("BandedTriangularSolve err empty1", "BandedTriangularSolve", [("matrix", a), ("rhs", np.zeros((4, 0), f32))],
         {"lower": True, "adjoint": False}, err_needle="In[1] must not be an empty tensor")
    case("BandedTriangularSolve err mismatch", "BandedTriangularSolve", [("matrix", a), ("rhs", U3((5, 2)))], {"lower": False, "adjoint": True})
    case("BandedTriangularSolve err bcast", "BandedTriangularSolve", [("matrix", U3((2, 2, 4))), ("rhs", U3((3, 4, 2)))], {"lower": True, "adjoint": False})
    z = a.copy()
    z[0, 2] = 0
    case("BandedTriangularSolve err singular", "BandedTriangularSolve", [("matrix", z), ("rhs", U3((4, 2)))], {"lower": True, "adjoint": False})
    z = U3((2, 2, 4))
    z[0, 0] += 2
    z[1, 0] = 0  # only the first matrix's diagonal is checked: inf / NaN rows
    case("BandedTriangularSolve second singular", "BandedTriangularSolve", [("matrix", z), ("rhs", U3((2, 4, 2)))], {"lower": True, "adjoint": False})


def drop_v(cv):
    """Eig with compute_v false: TF's v is a scalar it never writes: compare e only."""
    if not cv:
        name, node, flat, outs, err = g.CASES[-1]
        g.CASES[-1] = (name, node, flat, outs[:1], err)


def schur_ops():
    def spd(n, dt):
        a = rng.standard_normal((n, n))
        return (a @ a.T + n * np.eye(n)).astype(dt)

    for dt in (f32, f64):
        nm = np.dtype(dt).name
        case("MatrixSquareRoot spd " + nm, "MatrixSquareRoot", [("input", np.stack([spd(4, dt), spd(4, dt)]))])
        rot = np.array([[1.0, -2.0, 0.5], [2.0, 1.0, 0.3], [0.0, 0.2, 3.0]], dt)  # a complex pair + a real eigenvalue
        case("MatrixSquareRoot complex pair " + nm, "MatrixSquareRoot", [("input", rot)])
        b = rng.uniform(-1, 1, (6, 6)) + 4 * np.eye(6)
        b[0, 5], b[5, 0], b[2, 3], b[3, 2] = 3.0, -3.0, 2.0, -2.5  # two complex pairs
        case("MatrixSquareRoot mixed blocks " + nm, "MatrixSquareRoot", [("input", b.astype(dt))])
        case("MatrixSquareRoot batch " + nm, "MatrixSquareRoot",
             [("input", (rng.uniform(-1, 1, (2, 3, 3, 3)) + 3 * np.eye(3)).astype(dt))])
        case("MatrixSquareRoot triangular " + nm, "MatrixSquareRoot", [("input", np.triu(rng.uniform(1, 2, (4, 4))).astype(dt))])
        case("MatrixSquareRoot negative eigenvalue " + nm, "MatrixSquareRoot", [("input", A([[-4.0, 1.0], [0.0, 9.0]], dt))])
        case("MatrixSquareRoot 1x1 " + nm, "MatrixSquareRoot", [("input", A([[[4.0]], [[2.0]]], dt))])
        case("MatrixSquareRoot empty " + nm, "MatrixSquareRoot", [("input", np.zeros((2, 0, 0), dt))])
        case("MatrixSquareRoot identity " + nm, "MatrixSquareRoot", [("input", np.eye(3, dtype=dt))])
        case("MatrixSquareRoot zero " + nm, "MatrixSquareRoot", [("input", np.zeros((3, 3), dt))])
    for dt in (c64, c128):
        nm = np.dtype(dt).name
        case("MatrixSquareRoot " + nm, "MatrixSquareRoot", [("input", R((2, 4, 4), dt) + 3 * np.eye(4, dtype=dt))])
        case("MatrixSquareRoot general " + nm, "MatrixSquareRoot", [("input", R((5, 5), dt, -2, 2))])
        case("MatrixSquareRoot 1x1 " + nm, "MatrixSquareRoot", [("input", A([[-4.0 + 0j]], dt))])
        case("MatrixLogarithm " + nm, "MatrixLogarithm", [("input", R((2, 4, 4), dt) + 3 * np.eye(4, dtype=dt))])
        case("MatrixLogarithm general " + nm, "MatrixLogarithm", [("input", R((5, 5), dt, -2, 2))])
        case("MatrixLogarithm near identity " + nm, "MatrixLogarithm", [("input", R((3, 3), dt, -1e-3, 1e-3) + np.eye(3, dtype=dt))])
        case("MatrixLogarithm large " + nm, "MatrixLogarithm", [("input", R((4, 4), dt, -50, 50) + 200 * np.eye(4, dtype=dt))])
        case("MatrixLogarithm triangular " + nm, "MatrixLogarithm", [("input", np.triu(R((4, 4), dt, 0.5, 2)))])
        case("MatrixLogarithm 1x1 " + nm, "MatrixLogarithm", [("input", A([[[2.0 + 1j]], [[-1.0 + 0.5j]]], dt))])
        case("MatrixLogarithm empty " + nm, "MatrixLogarithm", [("input", np.zeros((0, 0), dt))])
    case("MatrixSquareRoot err square", "MatrixSquareRoot", [("input", U3((2, 3)))])
    case("MatrixSquareRoot err rank", "MatrixSquareRoot", [("input", U3((3,)))])
    case("MatrixLogarithm err square", "MatrixLogarithm", [("input", R((3, 2), c64))])

    for dt in (f32, f64, c64, c128):
        nm = np.dtype(dt).name
        tout = tf.complex64 if dt in (f32, c64) else tf.complex128
        for cv in (True, False):
            at = {"Tout": tout, "compute_v": cv}
            tag = "%s v=%d" % (nm, cv)
            case("Eig random " + tag, "Eig", [("input", R((2, 5, 5), dt))], at)
            drop_v(cv)
            case("Eig 1x1 " + tag, "Eig", [("input", A([[3.0]], dt))], at)
            drop_v(cv)
            case("Eig empty " + tag, "Eig", [("input", np.zeros((2, 0, 0), dt))], at)
            drop_v(cv)
        at = {"Tout": tout, "compute_v": True}
        case("Eig 8x8 " + nm, "Eig", [("input", R((8, 8), dt, -3, 3))], at)
        case("Eig symmetric " + nm, "Eig", [("input", spd(4, f64).astype(dt))], at)
        case("Eig triangular " + nm, "Eig", [("input", np.triu(R((4, 4), dt)) + np.diag([1.0, 2.0, 3.0, 4.0]).astype(dt))], at)
        case("Eig rotation " + nm, "Eig", [("input", A([[0.0, -1.0], [1.0, 0.0]], dt))], at)
        case("Eig 2x2 real pair " + nm, "Eig", [("input", A([[1.0, 2.0], [3.0, 4.0]], dt))], at)
        case("Eig diagonal " + nm, "Eig", [("input", np.diag([3.0, -1.0, 2.0]).astype(dt))], at)
        case("Eig zero " + nm, "Eig", [("input", np.zeros((3, 3), dt))], at)
        case("Eig nan " + nm, "Eig", [("input", A([[1.0, nan], [0.0, 1.0]], dt))], at)
    case("Eig err square", "Eig", [("input", U3((2, 3)))], {"Tout": tf.complex64, "compute_v": True})


def stress():
    """C3_STRESS=1: many random matrices (not committed: a one-off check of order and phases)."""
    for t in range(300):
        n = int(rng.integers(2, 11))
        dt = (f32, f64, c64, c128)[t % 4]
        tout = tf.complex64 if dt in (f32, c64) else tf.complex128
        case("Eig stress %d" % t, "Eig", [("input", R((n, n), dt, -2, 2))], {"Tout": tout, "compute_v": True})
        case("MatrixSquareRoot stress %d" % t, "MatrixSquareRoot", [("input", R((n, n), dt, -1, 1) + 2 * np.eye(n, dtype=dt))])
        if dt in (c64, c128):
            case("MatrixLogarithm stress %d" % t, "MatrixLogarithm", [("input", R((n, n), dt, -2, 2))])


def main():
    if os.environ.get("C3_STRESS"):
        stress()
        g.write_unit_header("c3_cases")
        return
    special()
    betainc()
    tridiagonal()
    banded()
    schur_ops()
    g.write_unit_header("c3_cases")


if __name__ == "__main__":
    main()
