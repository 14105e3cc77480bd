#!/usr/bin/env python3
"""gen_sparseser_cases.py - writes tests/unit/sparseser_cases.h: SparseTensor serialization
(src/ops/sparse_ser.c) against TensorFlow's CPU kernels (eager tf.raw_ops): SerializeSparse and
SerializeManySparse (string form, every dtype, byte for byte), DeserializeSparse and
DeserializeManySparse (batches of any rank, max inner shapes, empty entries, rank-0 SparseTensors,
entries out of their own bounds that TF's reshape moves) and TF's error text for malformed input.
The variant form has no tensor a header can hold: test_ops_sparseser round-trips it by hand.

Uses tools/gen_array_cases.py's machinery. Run: build/venv/bin/python tools/gen_sparseser_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

case = g.case
A = g.A
i64 = np.int64
DTYPES = [tf.float32, tf.float64, tf.int32, tf.uint8, tf.int16, tf.int8, tf.string, tf.int64, tf.bool, tf.uint16,
          tf.uint32, tf.uint64, tf.float16, tf.bfloat16, tf.complex64, tf.complex128]


def vals(dt, n):
    if dt == tf.string:
        return tf.constant(np.array([b"", b"a", b"bc d", b"\xff\x00z", b"%q"][:n] + [b"s%d" % i for i in range(max(0, n - 5))], dtype=object))
    if dt == tf.bool:
        return tf.constant([i % 2 == 0 for i in range(n)])
    if dt.is_complex:
        return tf.constant([complex(i + 0.5, -i) for i in range(n)], dtype=dt)
    if dt.is_floating:
        return tf.constant([1.5 * i - 2 for i in range(n)], dtype=dt)
    lo = 0 if dt.is_unsigned else -3
    return tf.constant([lo + 7 * i for i in range(n)], dtype=dt)


def ser(ix, v, sh, many=False):
    op = tf.raw_ops.SerializeManySparse if many else tf.raw_ops.SerializeSparse
    return op(sparse_indices=A(ix, i64).reshape(-1, len(sh)) if not isinstance(ix, np.ndarray) else ix, sparse_values=v,
              sparse_shape=A(sh, i64)).numpy()


def proto(t):
    return tf.raw_ops.SerializeTensor(tensor=t).numpy()


def serialize():
    for dt in DTYPES:
        case("SerializeSparse %s" % dt.name, "SerializeSparse",
             [("sparse_indices", A([[0, 1], [1, 0], [2, 3]], i64)), ("sparse_values", vals(dt, 3)), ("sparse_shape", A([3, 4], i64))])
        case("SerializeManySparse %s" % dt.name, "SerializeManySparse",
             [("sparse_indices", A([[0, 1, 0], [0, 2, 1], [2, 0, 0]], i64)), ("sparse_values", vals(dt, 3)),
              ("sparse_shape", A([4, 3, 2], i64))])
    S = lambda name, ix, v, sh: case("SerializeSparse " + name, "SerializeSparse",  # noqa: E731
                                     [("sparse_indices", ix), ("sparse_values", v), ("sparse_shape", sh)])
    S("empty", np.zeros([0, 2], i64), np.zeros([0], np.float32), A([0, 5], i64))
    S("rank 0", np.zeros([1, 0], i64), A([3.0]), np.zeros([0], i64))
    S("unchecked counts and bounds", A([[0, 9], [7, 1]], i64), A([1.0, 2, 3]), A([2, 3, 4], i64))
    S("negative shape", A([[0, 1]], i64), A([1.0]), A([-2, 3], i64))
    S("big dims", A([[2**40, 3]], i64), A([1], np.int32), A([2**41, 2**20], i64))
    S("indices vector", A([0, 1], i64), A([1.0, 2]), A([2, 3], i64))
    S("values matrix", A([[0, 1]], i64), A([[1.0]]), A([2, 3], i64))
    S("shape scalar", A([[0, 1]], i64), A([1.0]), A(2, i64))
    M = lambda name, ix, v, sh: case("SerializeManySparse " + name, "SerializeManySparse",  # noqa: E731
                                     [("sparse_indices", ix), ("sparse_values", v), ("sparse_shape", sh)])
    M("empty batch", np.zeros([0, 2], i64), np.zeros([0], np.float32), A([0, 3], i64))
    M("no values", np.zeros([0, 2], i64), np.zeros([0], np.int32), A([3, 3], i64))
    M("no values string", np.zeros([0, 3], i64), np.zeros([0], object), A([2, 0, 4], i64))
    M("rank 2", A([[0, 1], [0, 2], [3, 0]], i64), A([1.0, 2, 3]), A([4, 3], i64))
    M("rank 5", A([[1, 0, 1, 0, 1], [1, 1, 0, 0, 0]], i64), A([1, 2], i64), A([2, 2, 2, 2, 2], i64))
    M("rank 1", A([[0], [1]], i64), A([1.0, 2]), A([3], i64))
    M("unsorted", A([[1, 1], [0, 2]], i64), A([1.0, 2]), A([2, 3], i64))
    M("repeated", A([[0, 1], [0, 1]], i64), A([1.0, 2]), A([2, 3], i64))
    M("batch out of bounds", A([[0, 1], [5, 2]], i64), A([1.0, 2]), A([2, 3], i64))
    M("inner out of bounds", A([[0, 1], [1, 7]], i64), A([1.0, 2]), A([2, 3], i64))
    M("negative index", A([[0, -1]], i64), A([1.0]), A([2, 3], i64))
    M("count mismatch", A([[0, 1], [1, 2]], i64), A([1.0, 2, 3]), A([2, 3], i64))
    M("rank mismatch", A([[0, 1], [1, 2]], i64), A([1.0, 2]), A([2, 3, 3], i64))
    M("negative shape", A([[0, 1]], i64), A([1.0]), A([2, -3], i64))
    M("negative batch", A([[0, 1]], i64), A([1.0]), A([-2, 3], i64))
    M("indices vector", A([0, 1], i64), A([1.0, 2]), A([2, 3], i64))
    M("values matrix", A([[0, 1]], i64), A([[1.0]]), A([2, 3], i64))
    M("shape matrix", A([[0, 1]], i64), A([1.0]), A([[2, 3]], i64))


def deserialize():
    many = ser([[0, 1], [0, 2], [2, 0]], tf.constant([1.0, 2, 3]), [3, 4], many=True)
    for op in ("DeserializeSparse", "DeserializeManySparse"):
        D = lambda name, s, dt=tf.float32: case("%s %s" % (op, name), op, [("serialized_sparse", s)], {"dtype": dt})  # noqa: E731
        D("many", many)
        D("empty batch", many[:0])
        D("one row", many[1:2])
        D("single", many[0])
        D("scalar", many[0, 0])
        D("last dim 2", many[:, :2])
        D("wrong dtype", many, tf.int32)
        D("not a proto", np.array([[b"\xff\xff", b"", b""]], dtype=object))
        D("empty protos", np.array([[b"", b"", b""]], dtype=object))
    for dt in DTYPES:
        s = ser([[0, 1, 0], [1, 0, 2], [3, 1, 1]], vals(dt, 3), [4, 2, 3], many=True)
        case("DeserializeManySparse %s" % dt.name, "DeserializeManySparse", [("serialized_sparse", s)], {"dtype": dt})
        case("DeserializeSparse %s [2,2,3]" % dt.name, "DeserializeSparse", [("serialized_sparse", s.reshape(2, 2, 3))], {"dtype": dt})
        one = ser([[0, 1], [2, 2]], vals(dt, 2), [3, 5])
        case("DeserializeSparse %s single" % dt.name, "DeserializeSparse", [("serialized_sparse", one)], {"dtype": dt})
    # different inner shapes: the maximum of each dimension
    a = ser([[0, 1], [1, 0]], tf.constant([1, 2]), [2, 2])
    b = ser([[0, 4]], tf.constant([3]), [1, 7])
    c = ser(np.zeros([0, 2], i64), tf.zeros([0], tf.int32), [0, 0])
    D = lambda name, s, dt=tf.int32, op="DeserializeSparse": case("%s %s" % (op, name), op, [("serialized_sparse", s)], {"dtype": dt})  # noqa: E731
    D("max shape", np.stack([a, b, c]))
    D("max shape many", np.stack([a, b, c]), op="DeserializeManySparse")
    D("max shape [2,2,3]", np.stack([a, b, c, a]).reshape(2, 2, 3))
    D("max shape [1,2,2,3]", np.stack([c, b, a, a]).reshape(1, 2, 2, 3))
    D("rank 0 entries", np.stack([ser(np.zeros([1, 0], i64), tf.constant([5]), []), ser(np.zeros([0, 0], i64), tf.zeros([0], tf.int32), [])]))
    D("rank 0 entries [2,1,3]", np.stack([ser(np.zeros([1, 0], i64), tf.constant([5]), []),
                                          ser(np.zeros([1, 0], i64), tf.constant([6]), [])]).reshape(2, 1, 3))
    D("rank mismatch", np.stack([a, ser([[0, 1, 1]], tf.constant([3]), [1, 2, 3])]))
    D("unsorted entries kept", np.stack([ser([[1, 1], [0, 0]], tf.constant([1, 2]), [2, 2]), a]))
    D("out of bounds [3]", ser([[5, 9], [-1, 0]], tf.constant([1, 2]), [2, 2]))
    D("out of bounds [2,3]", np.stack([ser([[5, 1]], tf.constant([1]), [2, 2]), a]))
    D("out of bounds [2,1,3]", np.stack([ser([[2, 1]], tf.constant([1]), [2, 2]), a]).reshape(2, 1, 3))
    # malformed parts
    ix = proto(tf.constant([[0, 1]], tf.int64))
    v1 = proto(tf.constant([1], tf.int32))
    sh = proto(tf.constant([2, 2], tf.int64))
    P = lambda name, parts: D("part " + name, np.array(parts, dtype=object))  # noqa: E731
    P("ok", [ix, v1, sh])
    P("indices vector", [proto(tf.constant([0, 1], tf.int64)), v1, sh])
    P("values matrix", [ix, proto(tf.constant([[1]], tf.int32)), sh])
    P("values dtype", [ix, proto(tf.constant([1.0])), sh])
    P("count mismatch", [ix, proto(tf.constant([1, 2], tf.int32)), sh])
    P("shape matrix", [ix, v1, proto(tf.constant([[2, 2]], tf.int64))])
    P("shape length", [ix, v1, proto(tf.constant([2, 2, 2], tf.int64))])
    P("bad values proto", [ix, b"\x08", sh])
    P("bad shape proto", [ix, v1, b"\x12\x05"])
    P("truncated content", [ix, b"\x08\x03\x12\x04\x12\x02\x08\x04\"\x04\x01\x00\x00\x00", sh])


def main():
    serialize()
    deserialize()
    g.write_unit_header("sparseser_cases")


if __name__ == "__main__":
    main()
