#!/usr/bin/env python3
"""gen_d1_cases.py - writes tests/unit/d1_cases.h: complex64 / complex128 through the products and
reductions session 19 (d1) added, against TensorFlow (eager tf.raw_ops, TF's CPU kernels): MatMul
(transpose_a/b: a plain transpose), BatchMatMul / BatchMatMulV2 / BatchMatMulV3 (adj_x/adj_y: the
conjugate transpose; broadcast batch dims, one y for every batch), Sum / Mean / Prod (any axes,
keep_dims, empty reductions: Sum 0, Prod 1, Mean NaN+NaNj), AddN, Cumsum / Cumprod (exclusive,
reverse) and Einsum; edge values (NaN, Inf, empty) and TF's errors for bad input.

Uses the machinery of tools/gen_array_cases.py (as gen_api_cases.py does). test_ops_d1 compares
within 1e-5 relative (complex128 1e-9 unless the name says [f32 tol]).
Run: build/venv/bin/python tools/gen_d1_cases.py
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
c64, c128, i32, i64 = np.complex64, np.complex128, np.int32, np.int64
rng = np.random.default_rng(1919)
CDT = ((c64, "c64"), (c128, "c128"))


def CX(*shape, dt=c64):
    return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dt)


def matmuls():
    for dt, nm in CDT:
        for ta in (False, True):
            for tb in (False, True):
                a = CX(*((4, 3) if ta else (3, 4)), dt=dt)
                b = CX(*((2, 4) if tb else (4, 2)), dt=dt)
                case("MatMul %s ta%d tb%d" % (nm, ta, tb), "MatMul", [("a", a), ("b", b)],
                     {"transpose_a": ta, "transpose_b": tb})
        # several row units per product (64 rows each) and a one-row product
        case("MatMul %s 130x40x30" % nm, "MatMul", [("a", CX(130, 40, dt=dt)), ("b", CX(40, 30, dt=dt))])
        case("MatMul %s 1 row tb" % nm, "MatMul", [("a", CX(1, 17, dt=dt)), ("b", CX(9, 17, dt=dt))], {"transpose_b": True})
        case("MatMul %s empty K" % nm, "MatMul", [("a", np.zeros([3, 0], dt)), ("b", np.zeros([0, 2], dt))])
        case("MatMul %s empty M" % nm, "MatMul", [("a", np.zeros([0, 4], dt)), ("b", CX(4, 2, dt=dt))])
        case("MatMul %s nan inf" % nm, "MatMul",
             [("a", A([[1 + 1j, nan], [inf, 2j]], dt)), ("b", A([[1, 2j], [3 - 1j, 0.5]], dt))])
        case("MatMul %s err K" % nm, "MatMul", [("a", CX(3, 4, dt=dt)), ("b", CX(3, 2, dt=dt))])
        for op in ("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"):
            extra = {"Tout": tf.as_dtype(dt)} if op == "BatchMatMulV3" else {}
            tfa = {"Tout": tf.as_dtype(dt)} if op == "BatchMatMulV3" else None
            for ax in (False, True):
                for ay in (False, True):
                    x = CX(*((2, 4, 3) if ax else (2, 3, 4)), dt=dt)
                    y = CX(*((2, 5, 4) if ay else (2, 4, 5)), dt=dt)
                    case("%s %s adj_x%d adj_y%d" % (op, nm, ax, ay), op, [("x", x), ("y", y)],
                         dict(extra, adj_x=ax, adj_y=ay), tf_attrs=tfa)
            if op == "BatchMatMul":
                continue
            case("%s %s bcast" % (op, nm), op, [("x", CX(2, 1, 3, 4, dt=dt)), ("y", CX(3, 4, 2, dt=dt))], extra, tf_attrs=tfa)
            case("%s %s bcast adj" % (op, nm), op, [("x", CX(1, 3, 4, 3, dt=dt)), ("y", CX(2, 1, 2, 4, dt=dt))],
                 dict(extra, adj_x=True, adj_y=True), tf_attrs=tfa)
            # one y for every batch: the batches run as the rows of one product
            case("%s %s y shared adj_y" % (op, nm), op, [("x", CX(3, 5, 4, dt=dt)), ("y", CX(6, 4, dt=dt))],
                 dict(extra, adj_y=True), tf_attrs=tfa)
            case("%s %s y shared" % (op, nm), op, [("x", CX(2, 70, 4, dt=dt)), ("y", CX(1, 4, 6, dt=dt))], extra, tf_attrs=tfa)
            case("%s %s empty batch" % (op, nm), op, [("x", np.zeros([0, 3, 4], dt)), ("y", CX(4, 2, dt=dt))], extra, tf_attrs=tfa)
            case("%s %s empty K" % (op, nm), op, [("x", np.zeros([2, 3, 0], dt)), ("y", np.zeros([2, 0, 2], dt))], extra, tf_attrs=tfa)
            case("%s %s err batch" % (op, nm), op, [("x", CX(2, 3, 4, dt=dt)), ("y", CX(3, 4, 2, dt=dt))], extra, tf_attrs=tfa)
            case("%s %s err K" % (op, nm), op, [("x", CX(2, 3, 4, dt=dt)), ("y", CX(2, 3, 2, dt=dt))], extra, tf_attrs=tfa)


def reductions():
    for dt, nm in CDT:
        x = CX(3, 4, 5, dt=dt)
        for op in ("Sum", "Mean", "Prod"):
            for axes in ([], [0], [1], [2], [-1], [0, 2], [1, 2], [0, 1, 2], [2, 0]):
                for kd in (False, True):
                    if kd and axes not in ([1], [0, 2], [0, 1, 2]):
                        continue
                    case("%s %s axes%s kd%d" % (op, nm, axes, kd), op,
                         [("input", x), ("reduction_indices", A(axes, i32))], {"keep_dims": kd})
            case("%s %s axes int64" % (op, nm), op, [("input", x), ("reduction_indices", A([1], i64))], {"keep_dims": False})
            case("%s %s scalar axis" % (op, nm), op, [("input", x), ("reduction_indices", A(0, i32))], {"keep_dims": False})
            case("%s %s rank0" % (op, nm), op, [("input", A(1.5 - 2j, dt)), ("reduction_indices", A([], i32))], {"keep_dims": False})
            case("%s %s long row" % (op, nm), op, [("input", CX(2, 37, dt=dt) * (1.1 if op == "Prod" else 1)),
                                                    ("reduction_indices", A([1], i32))], {"keep_dims": False})
            case("%s %s size-1 dims" % (op, nm), op, [("input", CX(1, 3, 1, dt=dt)), ("reduction_indices", A([0, 2], i32))],
                 {"keep_dims": False})
            for shape, axes in (([0, 3], [0]), ([0, 3], [1]), ([2, 0], [1]), ([0], [0]), ([2, 0, 3], [0, 1])):
                case("%s %s empty %s axes%s" % (op, nm, shape, axes), op,
                     [("input", np.zeros(shape, dt)), ("reduction_indices", A(axes, i32))], {"keep_dims": False})
            # an infinite factor in a complex128 Prod: TF's answer (NaN, Eigen's packet product) differs
            # from its complex64 one (inf, std::complex's); ours is C's product (inf) for both
            if not (op == "Prod" and dt == c128):
                case("%s %s nan inf" % (op, nm), op,
                     [("input", A([[1 + 1j, nan], [inf, 2j], [3, -1j]], dt)), ("reduction_indices", A([0], i32))], {"keep_dims": False})
            case("%s %s nan" % (op, nm), op,
                 [("input", A([[1 + 1j, nan], [0.5, 2j], [3, -1j]], dt)), ("reduction_indices", A([0], i32))], {"keep_dims": False})
            case("%s %s err dup" % (op, nm), op, [("input", x), ("reduction_indices", A([1, 1], i32))], {"keep_dims": False})
            case("%s %s err range" % (op, nm), op, [("input", x), ("reduction_indices", A([3], i32))], {"keep_dims": False})
        for op in ("Max", "Min"):
            case("%s %s err dtype" % (op, nm), op, [("input", x), ("reduction_indices", A([0], i32))], {"keep_dims": False},
                 err_needle="%s does not support DT_%s" % (op, "COMPLEX64" if dt == c64 else "COMPLEX128"))


def others():
    for dt, nm in CDT:
        case("AddN %s 3" % nm, "AddN", [("inputs", [CX(3, 4, dt=dt), CX(3, 4, dt=dt), CX(3, 4, dt=dt)])])
        case("AddN %s 1" % nm, "AddN", [("inputs", [CX(5, dt=dt)])])
        case("AddN %s empty" % nm, "AddN", [("inputs", [np.zeros([0, 2], dt), np.zeros([0, 2], dt)])])
        case("AddN %s err shape" % nm, "AddN", [("inputs", [CX(3, dt=dt), CX(4, dt=dt)])])
        for op in ("Cumsum", "Cumprod"):
            x = CX(3, 4, 2, dt=dt)
            for axis in (0, 1, -1):
                for ex in (False, True):
                    for rev in (False, True):
                        case("%s %s axis%d ex%d rev%d" % (op, nm, axis, ex, rev), op, [("x", x), ("axis", A(axis, i32))],
                             {"exclusive": ex, "reverse": rev})
            case("%s %s axis int64" % (op, nm), op, [("x", CX(5, dt=dt)), ("axis", A(0, i64))], {"exclusive": False, "reverse": False})
            case("%s %s empty" % (op, nm), op, [("x", np.zeros([0, 3], dt)), ("axis", A(1, i32))], {"exclusive": False, "reverse": False})
            case("%s %s nan inf" % (op, nm), op, [("x", A([1 + 1j, nan, 2j, inf], dt)), ("axis", A(0, i32))],
                 {"exclusive": False, "reverse": False})
        for eq, shapes in (("ij,jk->ik", [(3, 4), (4, 2)]), ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]), ("ij,ij->", [(3, 4), (3, 4)]),
                           ("i,j->ij", [(3,), (4,)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]),
                           ("...ij,jk->...ik", [(2, 2, 3, 4), (4, 2)]), ("abc,cde->abde", [(2, 3, 4), (4, 2, 3)])):
            case("Einsum %s %s" % (nm, eq), "Einsum", [("inputs", [CX(*s, dt=dt) for s in shapes])], {"equation": eq})
        case("Einsum %s empty" % nm, "Einsum", [("inputs", [np.zeros([3, 0], dt), np.zeros([0, 2], dt)])], {"equation": "ij,jk->ik"})


def main():
    matmuls()
    reductions()
    others()
    g.write_unit_header("d1_cases")


if __name__ == "__main__":
    main()
