#!/usr/bin/env python3
"""gen_csr_cases.py - writes tests/unit/csr_cases.h: the CSRSparseMatrix ops (src/ops/csr.c) against
TensorFlow's CPU kernels (eager tf.raw_ops). A CSRSparseMatrix is a variant TF cannot write to a
fixture, so every case is a chain (test_ops_csr's run_chain): a matrix made from placeholders by
DenseToCSRSparseMatrix / SparseTensorToCSRSparseMatrix, the op under test, and the result read back by
CSRSparseMatrixToSparseTensor (every stored entry in stored order, explicit zeros included),
CSRSparseMatrixToDense, CSRSparseMatrixComponents or SparseMatrixNNZ. float32/float64/complex64/
complex128 (all the CPU registers), rank 2 and batched rank 3, empty matrices, every attribute of
SparseMatrixMatMul / SparseMatrixSparseMatMul / SparseMatrixTranspose, and TF's error texts.
Run: build/venv/bin/python tools/gen_csr_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import gen_c2_cases as c2  # noqa: E402
import tensorflow as tf  # noqa: E402

R = tf.raw_ops
A = g.A
f32, f64, c64, c128, i32, i64 = np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64
DTS = [f32, f64, c64, c128]
rng = np.random.default_rng(24)


def rand(shape, dt, density=0.5):
    x = rng.standard_normal(shape)
    if np.issubdtype(dt, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    x = x * (rng.random(shape) < density)
    return x.astype(dt)


def TD(x):
    return tf.as_dtype(x.dtype)


def from_dense(name, d, idx=None):
    """node n0 = DenseToCSRSparseMatrix(i0, i1) for dense d."""
    idx = np.argwhere(d != 0).astype(i64) if idx is None else idx
    return [d, idx], ("DenseToCSRSparseMatrix", ["i0", "i1"], {"T": TD(d)})


def read_nodes(src, dt, how):
    t = tf.as_dtype(dt)
    if how == "st":
        return [("CSRSparseMatrixToSparseTensor", [src], {"type": t})]
    if how == "dense":
        return [("CSRSparseMatrixToDense", [src], {"type": t})]
    if how == "nnz":
        return [("SparseMatrixNNZ", [src], {})]
    raise ValueError(how)


def read_fn(m, dt, how):
    t = tf.as_dtype(dt)
    if how == "st":
        return list(R.CSRSparseMatrixToSparseTensor(sparse_matrix=m, type=t))
    if how == "dense":
        return R.CSRSparseMatrixToDense(sparse_input=m, type=t)
    return R.SparseMatrixNNZ(sparse_matrix=m)


def conversions():
    for dt in DTS:
        n = np.dtype(dt).name
        d = rand([3, 4], dt)
        d[0, 1] = 1
        for how in ["st", "dense", "nnz"]:
            feeds, n0 = from_dense(None, d)
            c2.chain("dense %s %s" % (n, how), feeds, [n0] + read_nodes("n0", dt, how),
                     lambda x, i, how=how, dt=dt: read_fn(R.DenseToCSRSparseMatrix(dense_input=x, indices=i), dt, how))
        b = rand([2, 3, 2], dt)
        b[1, 2, 0] = 2
        for how in ["st", "dense", "nnz"]:
            feeds, n0 = from_dense(None, b)
            c2.chain("dense batch %s %s" % (n, how), feeds, [n0] + read_nodes("n0", dt, how),
                     lambda x, i, how=how, dt=dt: read_fn(R.DenseToCSRSparseMatrix(dense_input=x, indices=i), dt, how))
        # sparse tensor in
        idx = np.argwhere(d != 0).astype(i64)
        st = [idx, d[d != 0], A([3, 4], i64)]
        for how in ["st", "dense", "nnz"]:
            c2.chain("sparse %s %s" % (n, how), st,
                     [("SparseTensorToCSRSparseMatrix", ["i0", "i1", "i2"], {"T": TD(d)})] + read_nodes("n0", dt, how),
                     lambda i, v, s, how=how, dt=dt: read_fn(R.SparseTensorToCSRSparseMatrix(indices=i, values=v, dense_shape=s), dt, how))
        # components of each batch
        for k in range(2):
            feeds, n0 = from_dense(None, b)
            c2.chain("components %s batch %d" % (n, k), feeds + [A(k, i32)],
                     [n0, ("CSRSparseMatrixComponents", ["n0", "i2"], {"type": tf.as_dtype(dt)})],
                     lambda x, i, kk, dt=dt: list(R.CSRSparseMatrixComponents(
                         csr_sparse_matrix=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), index=kk, type=tf.as_dtype(dt))))
    # explicit zeros, empty, all-zero rows, unsorted and bad indices
    d = A([[0, 1, 0], [0, 0, 0], [2, 0, 3]])
    for nm, idx in [("explicit zeros", A([[0, 0], [0, 1], [2, 0], [2, 2], [2, 1]], i64)),
                    ("no entries", np.zeros([0, 2], i64)),
                    ("unsorted", A([[2, 2], [0, 1], [2, 0]], i64)),
                    ("err index range", A([[0, 1], [3, 0]], i64)),
                    ("err negative index", A([[0, -1]], i64)),
                    ("err index rank", A([[0, 1, 0]], i64)),
                    ("err index shape", A([0, 1], i64))]:
        for how in ["st", "dense"]:
            feeds, n0 = from_dense(None, d, idx)
            c2.chain("dense %s %s" % (nm, how), feeds, [n0] + read_nodes("n0", f32, how),
                     lambda x, i, how=how: read_fn(R.DenseToCSRSparseMatrix(dense_input=x, indices=i), f32, how))
    for nm, x in [("empty rows", np.zeros([0, 3], f32)), ("empty batch", np.zeros([0, 2, 2], f32)),
                  ("err rank 1", A([1, 2])), ("err rank 4", np.ones([1, 1, 1, 1], f32))]:
        feeds, n0 = from_dense(None, x, np.argwhere(x != 0).astype(i64))
        c2.chain("dense %s" % nm, feeds, [n0] + read_nodes("n0", f32, "dense"),
                 lambda a, i: read_fn(R.DenseToCSRSparseMatrix(dense_input=a, indices=i), f32, "dense"))
    for nm, st in [("err shape rank", [A([[0, 0]], i64), A([1.0]), A([4], i64)]),
                   ("err values count", [A([[0, 0], [1, 1]], i64), A([1.0]), A([2, 2], i64)]),
                   ("err out of range", [A([[0, 5]], i64), A([1.0]), A([2, 2], i64)]),
                   ("err batch out of range", [A([[2, 0, 0]], i64), A([1.0]), A([2, 2, 2], i64)]),
                   ("err index width", [A([[0, 0]], i64), A([1.0]), A([2, 2, 2], i64)]),
                   ("batch empty middle", [A([[0, 0, 1], [2, 1, 0], [2, 1, 1]], i64), A([1.0, 2, 3]), A([3, 2, 2], i64)])]:
        c2.chain("sparse %s" % nm, st, [("SparseTensorToCSRSparseMatrix", ["i0", "i1", "i2"], {"T": tf.float32})] + read_nodes("n0", f32, "st"),
                 lambda i, v, s: read_fn(R.SparseTensorToCSRSparseMatrix(indices=i, values=v, dense_shape=s), f32, "st"))
    # bad type attr on read-back, bad component index
    feeds, n0 = from_dense(None, d)
    c2.chain("err read type", feeds, [n0] + read_nodes("n0", f64, "dense"),
             lambda x, i: read_fn(R.DenseToCSRSparseMatrix(dense_input=x, indices=i), f64, "dense"))
    for k in [1, -1]:
        c2.chain("err components index %d" % k, feeds + [A(k, i32)],
                 [n0, ("CSRSparseMatrixComponents", ["n0", "i2"], {"type": tf.float32})],
                 lambda x, i, kk: list(R.CSRSparseMatrixComponents(
                     csr_sparse_matrix=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), index=kk, type=tf.float32)))


def transpose():
    for dt in DTS:
        n = np.dtype(dt).name
        for shape in ([3, 4], [2, 3, 2]):
            d = rand(shape, dt)
            for conj in [False, True]:
                if conj and not np.issubdtype(dt, np.complexfloating) and len(shape) == 3:
                    continue
                feeds, n0 = from_dense(None, d)
                c2.chain("transpose %s %s conj %d" % (n, "x".join(map(str, shape)), conj), feeds,
                         [n0, ("SparseMatrixTranspose", ["n0"], {"type": TD(d), "conjugate": conj})] + read_nodes("n1", dt, "st"),
                         lambda x, i, conj=conj, dt=dt: read_fn(R.SparseMatrixTranspose(
                             input=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), conjugate=conj, type=tf.as_dtype(dt)), dt, "st"))


FLAGS = ["transpose_a", "transpose_b", "adjoint_a", "adjoint_b"]


def product_shapes(combos, n_out):
    """(dtype, batch, attrs, shape of a, shape of b) for every dtype, unbatched and batch 2, and attr set:
    op(a) is [3, 4], op(b) [4, n_out]."""
    for dt in DTS:
        for batch in [None, 2]:
            for fl in combos:
                sa = [4, 3] if fl.get("transpose_a") or fl.get("adjoint_a") else [3, 4]
                sb = [n_out, 4] if fl.get("transpose_b") or fl.get("adjoint_b") else [4, n_out]
                yield dt, batch, fl, ([batch] + sa if batch else sa), ([batch] + sb if batch else sb)


def matmul():
    combos = [{}, {"transpose_a": True}, {"transpose_b": True}, {"adjoint_a": True}, {"adjoint_b": True},
              {"transpose_a": True, "transpose_b": True}, {"adjoint_a": True, "adjoint_b": True},
              {"transpose_a": True, "adjoint_b": True}, {"transpose_output": True},
              {"conjugate_output": True}, {"transpose_output": True, "conjugate_output": True, "adjoint_a": True}]
    for dt, batch, fl, sa, sb in product_shapes(combos, 2):
        n = np.dtype(dt).name
        a = rand(sa, dt)
        b = rand(sb, dt, 1.0)
        attrs = {"T": TD(a)}
        attrs.update(fl)
        feeds, n0 = from_dense(None, a)
        c2.chain("matmul %s %s%s" % (n, "batch " if batch else "", " ".join(sorted(fl)) or "plain"), feeds + [b],
                 [n0, ("SparseMatrixMatMul", ["n0", "i2"], attrs)],
                 lambda x, i, y, fl=fl: R.SparseMatrixMatMul(a=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), b=y, **fl))
    a = rand([3, 4], f32)
    for nm, b, fl in [("err inner dims", rand([3, 2], f32, 1), {}), ("err rank", rand([2, 4, 2], f32, 1), {}),
                      ("err transpose and adjoint", rand([4, 2], f32, 1), {"transpose_a": True, "adjoint_a": True}),
                      ("empty b", np.zeros([4, 0], f32), {}), ("err batch", rand([3, 4, 2], f32, 1), {})]:
        feeds, n0 = from_dense(None, a)
        attrs = {"T": tf.float32}
        attrs.update(fl)
        c2.chain("matmul " + nm, feeds + [b], [n0, ("SparseMatrixMatMul", ["n0", "i2"], attrs)],
                 lambda x, i, y, fl=fl: R.SparseMatrixMatMul(a=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), b=y, **fl))
    a = rand([2, 3, 4], f32)
    feeds, n0 = from_dense(None, a)
    c2.chain("matmul err batch mismatch", feeds + [rand([3, 4, 2], f32, 1)], [n0, ("SparseMatrixMatMul", ["n0", "i2"], {"T": tf.float32})],
             lambda x, i, y: R.SparseMatrixMatMul(a=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), b=y))
    c2.chain("matmul err dtype", feeds + [rand([2, 4, 2], f64, 1)], [n0, ("SparseMatrixMatMul", ["n0", "i2"], {"T": tf.float64})],
             lambda x, i, y: R.SparseMatrixMatMul(a=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), b=y))


def spmatmul():
    combos = [{}, {"transpose_a": True}, {"transpose_b": True}, {"adjoint_a": True}, {"adjoint_b": True},
              {"transpose_a": True, "transpose_b": True}, {"adjoint_a": True, "transpose_b": True}]
    for dt, batch, fl, sa, sb in product_shapes(combos, 5):
        n = np.dtype(dt).name
        a, b = rand(sa, dt), rand(sb, dt)
        if batch:
            b[1] = 0  # an empty operand in one batch
        attrs = {"type": TD(a)}
        attrs.update(fl)
        ia, ib = np.argwhere(a != 0).astype(i64), np.argwhere(b != 0).astype(i64)
        c2.chain("spmatmul %s %s%s" % (n, "batch " if batch else "", " ".join(sorted(fl)) or "plain"), [a, ia, b, ib],
                 [("DenseToCSRSparseMatrix", ["i0", "i1"], {"T": TD(a)}), ("DenseToCSRSparseMatrix", ["i2", "i3"], {"T": TD(a)}),
                  ("SparseMatrixSparseMatMul", ["n0", "n1"], attrs)] + read_nodes("n2", dt, "st"),
                 lambda x, i, y, j, fl=fl, dt=dt: read_fn(R.SparseMatrixSparseMatMul(
                     a=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), b=R.DenseToCSRSparseMatrix(dense_input=y, indices=j),
                     type=tf.as_dtype(dt), **fl), dt, "st"))
    # cancellation to zero, errors
    a, b = A([[1, 1]]), A([[1], [-1]])
    for nm, x, y, fl in [("cancel", a, b, {}), ("err inner dims", a, A([[1, 2]]), {}),
                         ("err transpose and adjoint", a, b, {"transpose_a": True, "adjoint_a": True})]:
        attrs = {"type": tf.float32}
        attrs.update(fl)
        ix, iy = np.argwhere(x != 0).astype(i64), np.argwhere(y != 0).astype(i64)
        c2.chain("spmatmul " + nm, [x, ix, y, iy],
                 [("DenseToCSRSparseMatrix", ["i0", "i1"], {"T": tf.float32}), ("DenseToCSRSparseMatrix", ["i2", "i3"], {"T": tf.float32}),
                  ("SparseMatrixSparseMatMul", ["n0", "n1"], attrs)] + read_nodes("n2", f32, "st"),
                 lambda x, i, y, j, fl=fl: read_fn(R.SparseMatrixSparseMatMul(
                     a=R.DenseToCSRSparseMatrix(dense_input=x, indices=i), b=R.DenseToCSRSparseMatrix(dense_input=y, indices=j),
                     type=tf.float32, **fl), f32, "st"))


def main():
    g.TF_ENUM[tf.variant] = "DT_VARIANT"
    conversions()
    transpose()
    matmul()
    spmatmul()
    g.write_unit_header("csr_cases")


if __name__ == "__main__":
    main()
