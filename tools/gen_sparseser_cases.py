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
import re
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


# ---- SparseTensorsMap: one TF1 graph, run step by step (the map lives across runs) ----------------
# test_ops_sparseser builds the same graph (MAP_GRAPH there): placeholders p0 (indices), p1 (float
# values), p2 (shape), h (handles); add / addmany / take share the map "m"; add2 has no shared_name
# (its map is named after the node) and take2 names it; take_i asks for int32 values.
MAP_STEPS = []


def map_steps():
    v1 = tf.compat.v1
    gr = tf.Graph()
    with gr.as_default():
        p0 = v1.placeholder(tf.int64, name="p0")
        p1 = v1.placeholder(tf.float32, name="p1")
        p2 = v1.placeholder(tf.int64, name="p2")
        h = v1.placeholder(tf.int64, name="h")
        ops = {
            "add": tf.raw_ops.AddSparseToTensorsMap(sparse_indices=p0, sparse_values=p1, sparse_shape=p2, shared_name="m", name="add"),
            "addmany": tf.raw_ops.AddManySparseToTensorsMap(sparse_indices=p0, sparse_values=p1, sparse_shape=p2, shared_name="m",
                                                            name="addmany"),
            "add2": tf.raw_ops.AddSparseToTensorsMap(sparse_indices=p0, sparse_values=p1, sparse_shape=p2, name="add2"),
            "take": tf.raw_ops.TakeManySparseFromTensorsMap(sparse_handles=h, dtype=tf.float32, shared_name="m", name="take"),
            "take2": tf.raw_ops.TakeManySparseFromTensorsMap(sparse_handles=h, dtype=tf.float32, shared_name="add2", name="take2"),
            "take_i": tf.raw_ops.TakeManySparseFromTensorsMap(sparse_handles=h, dtype=tf.int32, shared_name="m", name="take_i"),
        }
    sess = v1.Session(graph=gr)

    def step(name, fetch, feeds):
        fd = {}
        flat = []
        for k, v in feeds:
            t = {"p0": p0, "p1": p1, "p2": p2, "h": h}[k]
            fd[t] = v
            flat.append(tf.constant(v, dtype=t.dtype))
        err, outs = None, []
        try:
            r = sess.run(ops[fetch], fd)
            r = r if isinstance(r, (list, tuple)) else [r]
            outs = [tf.constant(x) for x in r]
        except (tf.errors.InvalidArgumentError, tf.errors.NotFoundError) as e:
            err = re.search(r"Node: '[^']*'\n(.*?)\n\t \[\[", e.message, re.S).group(1).split("\n")[0]  # after "Node: 'take'"
        MAP_STEPS.append((name, fetch, flat, outs, err))
        return [o.numpy() for o in outs]

    F = np.float32
    IX = lambda ix, sh: A(ix, i64)  # noqa: E731
    add = lambda n, ix, v, sh: step(n, "add", [("p0", IX(ix, sh)), ("p1", A(v, F)), ("p2", A(sh, i64))])  # noqa: E731
    many = lambda n, ix, v, sh: step(n, "addmany", [("p0", IX(ix, sh)), ("p1", A(v, F)), ("p2", A(sh, i64))])  # noqa: E731
    take = lambda n, hs, f="take": step(n, f, [("h", A(hs, i64))])  # noqa: E731
    h0 = add("add unsorted", [[1, 2], [0, 1]], [1, 2], [2, 3])[0]
    h1 = add("add out of bounds kept", [[5, 0]], [3], [2, 2])[0]
    hm = many("addmany gaps", [[1, 0, 1], [1, 1, 0], [3, 2, 2]], [4, 5, 6], [5, 3, 4])[0]
    take("take reordered", [hm[3], h0, hm[0], h1, hm[1]])
    take("take again", [h0])
    take("take wrong dtype", [hm[2]], "take_i")
    take("take missing later", [hm[4], 12345])
    take("take cleared before the miss", [hm[4]])
    h3 = add("add rank 3", [[0, 0, 1]], [7], [1, 2, 3])[0]
    h4 = add("add rank 2", [[0, 1]], [8], [1, 2])[0]
    take("take inconsistent rank", [h3, h4])
    h5 = add("add rank 0", np.zeros([1, 0], i64), [9], [])[0]
    h6 = add("add rank 0 empty", np.zeros([0, 0], i64), [], [])[0]
    take("take rank 0", [h5, h6])
    take("take empty list", np.zeros([0], i64))
    take("take matrix", [[1]])
    add("add indices vector", A([0, 1], i64), [1], [2])
    add("add count mismatch", [[0, 1]], [1, 2], [2, 2])
    add("add rank mismatch", [[0, 1]], [1], [2, 2, 2])
    add("add negative shape", [[0, 1]], [1], [2, -2])
    many("addmany count mismatch", [[0, 1]], [1, 2], [2, 2])
    many("addmany dims mismatch", [[0, 1]], [1], [2, 2, 2])
    many("addmany rank 1", [[0]], [1], [2])
    many("addmany unsorted", [[1, 1], [0, 1]], [1, 2], [2, 2])
    many("addmany out of bounds", [[0, 1], [2, 1]], [1, 2], [2, 2])
    many("addmany empty batch", np.zeros([0, 2], i64), [], [0, 2])
    hn = many("addmany no values", np.zeros([0, 3], i64), [], [2, 0, 3])[0]
    take("take no values", list(hn))
    ha = step("add2 node-named map", "add2", [("p0", A([[0, 1]], i64)), ("p1", A([2.5], F)), ("p2", A([1, 4], i64))])[0]
    take("take2 by node name", [ha], "take2")
    take("take from m misses add2's", [0])


def clustering():
    rng = np.random.default_rng(23)
    f32 = np.float32
    for n, seed in ((1, 0), (7, 1), (50, 5), (300, 123456789), (1000, -7), (2, 2**40)):
        d = rng.uniform(0, 3, n).astype(f32)
        if n > 5:
            d[3] = 0
        case("KMC2ChainInitialization n%d seed%d [exact]" % (n, seed), "KMC2ChainInitialization",
             [("distances", d), ("seed", A(seed, i64))])
    case("KMC2ChainInitialization zeros", "KMC2ChainInitialization", [("distances", np.zeros(9, f32)), ("seed", A(3, i64))])
    case("KMC2ChainInitialization empty", "KMC2ChainInitialization", [("distances", np.zeros(0, f32)), ("seed", A(3, i64))])
    case("KMC2ChainInitialization matrix", "KMC2ChainInitialization", [("distances", np.zeros([2, 2], f32)), ("seed", A(3, i64))])
    case("KMC2ChainInitialization seed vector", "KMC2ChainInitialization", [("distances", np.ones(3, f32)), ("seed", A([3], i64))])
    K = lambda name, pts, k, seed, r: case("KmeansPlusPlusInitialization " + name, "KmeansPlusPlusInitialization",  # noqa: E731
                                           [("points", pts), ("num_to_sample", A(k, i64)), ("seed", A(seed, i64)),
                                            ("num_retries_per_sample", A(r, i64))])
    clusters = np.concatenate([rng.normal(c, 0.3, [20, 2]) for c in ((0, 0), (5, 5), (-4, 6), (8, -3))]).astype(f32)
    for k in (1, 3, 4, 10):
        for r in (-1, 0, 2):
            for seed in (0, 7):
                K("k%d r%d seed%d [exact]" % (k, r, seed), clusters, k, seed, r)
    K("dim 3 [exact]", rng.uniform(-1, 1, [40, 3]).astype(f32), 6, 11, 1)
    K("identical points [exact]", np.ones([5, 2], f32), 3, 1, 0)
    K("k = n [exact]", rng.uniform(-1, 1, [6, 2]).astype(f32), 6, 4, 0)
    K("dim 0 [exact]", np.zeros([4, 0], f32), 2, 1, 0)
    K("k > n", np.ones([3, 2], f32), 4, 1, 0)
    K("k 0", np.ones([3, 2], f32), 0, 1, 0)
    K("no points", np.zeros([0, 2], f32), 1, 1, 0)
    K("points vector", np.ones([3], f32), 1, 1, 0)
    K("k vector", np.ones([3, 2], f32), [1], 1, 0)
    K("seed vector", np.ones([3, 2], f32), 1, [1], 0)
    K("retries vector", np.ones([3, 2], f32), 1, 1, [0])
    N = lambda name, pts, c, k: case("NearestNeighbors " + name, "NearestNeighbors",  # noqa: E731
                                     [("points", pts), ("centers", c), ("k", A(k, i64))])
    pts = rng.uniform(-5, 5, [30, 3]).astype(f32)
    cen = rng.uniform(-5, 5, [7, 3]).astype(f32)
    for k in (0, 1, 2, 7, 9):
        N("k%d" % k, pts, cen, k)
    N("dim 8", rng.uniform(-1, 1, [10, 8]).astype(f32), rng.uniform(-1, 1, [5, 8]).astype(f32), 3)
    N("ties to the lower index", A([[0, 0], [1, 1]], f32), A([[1, 0], [0, 1], [-1, 0], [1, 0]], f32), 4)
    N("ties k1", A([[0, 0]], f32), A([[1, 0], [0, 1], [-1, 0]], f32), 1)
    N("no centers", pts, np.zeros([0, 3], f32), 2)
    N("dim 0", np.zeros([2, 0], f32), np.zeros([3, 0], f32), 2)
    N("no points", np.zeros([0, 3], f32), cen, 1)
    N("dims differ", pts, np.zeros([2, 2], f32), 1)
    N("points vector", np.ones([3], f32), cen, 1)
    N("centers vector", pts, np.ones([3], f32), 1)
    N("k vector", pts, cen, [1])


def write_map_steps():
    """Appends the map steps to the header as sparseser_map_steps (node = the fetched node)."""
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit", "sparseser_cases.h"))
    lines = ["static const tc_case sparseser_map_steps[] = {"]
    for name, fetch, flat, outs, err in MAP_STEPS:
        ins = ", ".join(g.c_tensor(t) for t in flat) or "{0}"
        os_ = ", ".join(g.c_tensor(t) for t in outs) or "{0}"
        lines.append("    {%s, %s, %d, {%s}, %d, {%s}, %s}," % (g.c_str(name), g.c_str(fetch), len(flat), ins, len(outs), os_,
                                                         g.c_str(err) if err else "NULL"))
    lines.append("};")
    with open(path) as f:
        text = f.read()
    text = text.replace("};\n#endif", "};\n" + "\n".join(lines) + "\n#endif")
    with open(path, "w") as f:
        f.write(text)
    print("wrote %d map steps" % len(MAP_STEPS))


def main():
    serialize()
    deserialize()
    clustering()
    g.write_unit_header("sparseser_cases")
    map_steps()
    write_map_steps()


if __name__ == "__main__":
    main()
