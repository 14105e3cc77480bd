#!/usr/bin/env python3
"""gen_f6_cases.py - tf.data inside saved functions (src/ops/dataset.c) against TensorFlow:
tests/fixtures/datasets/pipes is one tf.Module saved with tf.saved_model.save whose signatures
build tf.data pipelines (from_tensor_slices, range, map, filter, batch, padded_batch, take, skip,
repeat, zip, concatenate, flat_map, scan, take_while, unbatch, prefetch/options pass-throughs) and
consume them the ways a tf.function can: Dataset.reduce, `for x in ds:` loops (ScanDataset +
ReduceDataset; with `break`, TakeWhileDataset too), iter()/next() and get_next_as_optional
(AnonymousIteratorV3, MakeIterator, IteratorGetNext(AsOptional)), and cardinality(). The saved
model is loaded back in TF and every signature called with its feed; tests/unit/f6_models.h
holds TF's outputs (or TF's error text) for test_ops_f6.c, which loads the model with the C API
and compares them.

Run: build/venv/bin/python tools/gen_f6_cases.py
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "datasets", "pipes")
D = tf.data.Dataset
F = tf.TensorSpec([None], tf.float32)
I = tf.TensorSpec([None], tf.int64)


def total(ds, init=0.0):
    return ds.reduce(tf.constant(init), lambda s, e: s + tf.cast(tf.reduce_sum(e), tf.constant(init).dtype))


def make_files(d):
    """Small data files the file datasets read, saved as the model's assets."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "lines.txt"), "wb") as f:
        f.write(b"first line\nsecond\r\n\nlast without newline")
    with tf.io.TFRecordWriter(os.path.join(d, "recs.tfrecord")) as w:
        for r in [b"alpha", b"", b"\x00\x01\x02", b"omega" * 20]:
            w.write(r)
    with open(os.path.join(d, "fixed.bin"), "wb") as f:
        f.write(b"HDR" + bytes(range(18)) + b"FT")


class M(tf.Module):
    def __init__(self, files):
        super().__init__()
        self.scale = tf.Variable(3.0)
        self.lines = tf.saved_model.Asset(os.path.join(files, "lines.txt"))
        self.recs = tf.saved_model.Asset(os.path.join(files, "recs.tfrecord"))
        self.fixed = tf.saved_model.Asset(os.path.join(files, "fixed.bin"))

    @tf.function(input_signature=[])
    def files(self):
        t = D.from_tensor_slices([self.lines.asset_path, self.lines.asset_path])
        tl = tf.data.TextLineDataset(self.lines.asset_path)
        tr = tf.data.TFRecordDataset(self.recs.asset_path)
        fx = tf.data.FixedLengthRecordDataset(self.fixed.asset_path, 6, header_bytes=3, footer_bytes=2)
        two = tf.data.TextLineDataset([self.lines.asset_path, self.lines.asset_path])
        del t
        return {"lines": next(iter(tl.batch(10))), "recs": next(iter(tr.batch(10))), "fixed": next(iter(fx.batch(10))),
                "two": two.reduce(tf.constant(0), lambda s, v: s + 1)}

    @tf.function(input_signature=[F])
    def map_filter_batch(self, x):
        ds = D.from_tensor_slices(x).map(lambda v: v * self.scale).filter(lambda v: v > 1.0).batch(2)
        return {"sum": total(ds), "card": ds.cardinality(), "n": ds.reduce(tf.constant(0, tf.int64), lambda s, b: s + 1)}

    @tf.function(input_signature=[F])
    def batch_drop(self, x):
        ds = D.from_tensor_slices(x).batch(3, drop_remainder=True)
        firsts = ds.reduce(tf.constant(0.0), lambda s, b: s * 10.0 + b[0])
        return {"firsts": firsts, "card": ds.cardinality(), "card_keep": D.from_tensor_slices(x).batch(3).cardinality()}

    @tf.function(input_signature=[F])
    def for_loop(self, x):
        acc = tf.constant(0.0)
        cnt = tf.constant(0)
        for e in D.from_tensor_slices(x).map(lambda v: v + 1.0):
            acc = acc * 0.5 + e
            cnt += 1
        return {"acc": acc, "cnt": cnt}

    @tf.function(input_signature=[F])
    def for_break(self, x):
        acc = tf.constant(0.0)
        for e in D.from_tensor_slices(x):
            if e < 0.0:
                break
            acc += e
        return {"acc": acc}

    @tf.function(input_signature=[F])
    def iterate(self, x):
        ds = D.from_tensor_slices(x).skip(1).take(3)
        it = iter(ds)
        a = next(it)
        b = next(it)
        o = it.get_next_as_optional()
        return {"a": a, "b": b, "has": o.has_value(), "card": ds.cardinality()}

    @tf.function(input_signature=[F])
    def iterate_end(self, x):
        it = iter(D.from_tensor_slices(x).take(1))
        a = next(it)
        o = it.get_next_as_optional()
        return {"a": a, "has": o.has_value()}

    @tf.function(input_signature=[F])
    def next_past_end(self, x):
        it = iter(D.from_tensor_slices(x).take(1))
        next(it)
        return {"b": next(it)}

    @tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
    def range_ops(self, n):
        r = D.range(n)
        r2 = D.range(10, n, -3)
        r3 = D.range(2, 9, 2, output_type=tf.int32)
        return {"sum": total(r, 0), "card": r.cardinality(), "sum2": total(r2, 0), "card2": r2.cardinality(),
                "sum3": total(r3, 0), "card3": r3.cardinality(),
                "rep": total(D.range(3).repeat(4), 0), "rep_card": D.range(3).repeat(4).cardinality(),
                "inf_card": D.range(3).repeat().cardinality(), "take_inf": total(D.range(3).repeat().take(7), 0),
                "skip": total(D.range(n).skip(2), 0), "skip_card": D.range(n).skip(2).cardinality(),
                "filter_card": D.range(n).filter(lambda v: v > 2).cardinality()}

    @tf.function(input_signature=[F, I])
    def zip_concat(self, x, y):
        z = D.zip((D.from_tensor_slices(x), D.from_tensor_slices(y)))
        zs = z.reduce(tf.constant(0.0), lambda s, ab: s * 2.0 + ab[0] * tf.cast(ab[1], tf.float32))
        c = D.from_tensor_slices(x).concatenate(D.from_tensor_slices(x).map(lambda v: -v))
        cs = c.reduce(tf.constant(0.0), lambda s, v: s * 0.5 + v)
        return {"zip": zs, "zip_card": z.cardinality(), "cat": cs, "cat_card": c.cardinality()}

    @tf.function(input_signature=[I])
    def flat_map(self, x):
        ds = D.from_tensor_slices(x).flat_map(lambda v: D.range(v))
        return {"sum": ds.reduce(tf.constant(0, tf.int64), lambda s, v: s * 3 + v), "card": ds.cardinality()}

    @tf.function(input_signature=[F])
    def scan_unbatch(self, x):
        sc = D.from_tensor_slices(x).scan(tf.constant(0.0), lambda s, v: (s + v, s * v))
        ub = D.from_tensor_slices(x).batch(2).unbatch()
        tw = D.from_tensor_slices(x).take_while(lambda v: v < 4.0)
        return {"scan": sc.reduce(tf.constant(0.0), lambda s, v: s * 0.5 + v),
                "unbatch": ub.reduce(tf.constant(0.0), lambda s, v: s * 0.5 + v),
                "take_while": tw.reduce(tf.constant(0.0), lambda s, v: s * 0.5 + v), "tw_card": tw.cardinality()}

    @tf.function(input_signature=[I])
    def padded(self, x):
        ds = D.from_tensor_slices(x).map(lambda v: tf.range(v)).padded_batch(2, padding_values=tf.constant(-1, tf.int64))
        it = iter(ds)
        a = next(it)
        ds5 = D.from_tensor_slices(x).map(lambda v: (tf.fill([v, 2], v), tf.strings.as_string(v))).padded_batch(
            3, padded_shapes=([6, None], []), drop_remainder=True)
        it5 = iter(ds5)
        b, s = next(it5)
        return {"a": a, "b": b, "s": s, "card": ds.cardinality()}

    @tf.function(input_signature=[F])
    def tensors_prefetch(self, x):
        t = D.from_tensors((x, tf.size(x))).repeat(2).prefetch(2)
        opts = tf.data.Options()
        opts.experimental_optimization.map_parallelization = True
        p = D.from_tensor_slices(x).map(lambda v: v * 2.0, num_parallel_calls=tf.data.AUTOTUNE).with_options(opts)
        it = iter(t)
        a, n = next(it)
        return {"a": a, "n": n, "card": t.cardinality(), "par": p.reduce(tf.constant(0.0), lambda s, v: s * 0.5 + v)}

    @tf.function(input_signature=[F])
    def strings_batch(self, x):
        ds = D.from_tensor_slices(tf.strings.as_string(x)).batch(2)
        it = iter(ds)
        return {"a": next(it), "b": next(it)}

    @tf.function(input_signature=[F])
    def err_batch_shapes(self, x):
        ds = D.from_tensor_slices(tf.range(tf.size(x))).map(lambda v: tf.range(v)).batch(3)
        return {"x": total(ds, 0)}

    @tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
    def err_range_step(self, s):
        return {"x": total(D.range(0, 5, s), 0)}

    @tf.function(input_signature=[I])
    def window_interleave(self, x):
        w = D.from_tensor_slices(x).window(3, 2).flat_map(lambda v: v.batch(3).map(lambda b: tf.reduce_sum(b) * 10 + tf.size(b, tf.int64)))
        w2 = D.from_tensor_slices(x).window(2, 3, 2, drop_remainder=True)
        w2s = w2.flat_map(lambda v: v.batch(2).map(lambda b: tf.reduce_sum(b)))
        il = D.from_tensor_slices(x).interleave(lambda v: D.range(v).map(lambda q: q * 100 + v), cycle_length=2, block_length=2)
        il3 = D.from_tensor_slices(x).interleave(lambda v: D.from_tensors(v).repeat(v), cycle_length=3, block_length=1)
        cat = lambda ds: ds.reduce(tf.constant(0, tf.int64), lambda s, v: s * 7 + v)
        return {"w": cat(w), "w_card": D.from_tensor_slices(x).window(3, 2).cardinality(), "w2": cat(w2s),
                "w2_card": w2.cardinality(), "il": cat(il), "il3": cat(il3)}

    @tf.function(input_signature=[I])
    def unique_shuffle1(self, x):
        u = D.from_tensor_slices(x).unique()
        us = D.from_tensor_slices(tf.strings.as_string(x)).unique().batch(100)
        sh = D.from_tensor_slices(x).shuffle(1)
        return {"u": u.reduce(tf.constant(0, tf.int64), lambda s, v: s * 7 + v), "us": next(iter(us)),
                "sh": sh.reduce(tf.constant(0, tf.int64), lambda s, v: s * 7 + v), "sh_card": sh.cardinality()}

    @tf.function(input_signature=[I])
    def err_window(self, x):
        return {"x": D.from_tensor_slices(x).window(0).flat_map(lambda v: v).reduce(tf.constant(0, tf.int64), lambda s, v: s + v)}

    # by hand only (TF would run forever or take the memory): test_ops_f6.c checks the deadline
    # and the memory budget stop them
    @tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
    def hand_infinite(self, n):
        return {"x": total(D.range(n).repeat(), 0)}

    @tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
    def hand_filter_forever(self, n):
        return {"x": total(D.range(n).repeat().filter(lambda v: v < 0).take(1), 0)}

    @tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
    def hand_big_batch(self, n):
        return {"x": total(D.range(n).map(lambda v: tf.fill([1024], v)).batch(n), 0)}

    @tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
    def hand_shuffle(self, n):
        return {"x": total(D.range(n).shuffle(4, seed=7), 0)}


HAND = ["hand_infinite", "hand_filter_forever", "hand_big_batch", "hand_shuffle"]

FEEDS = {
    "files": [],
    "map_filter_batch": [np.array([0.1, 0.5, 1.0, 2.0, -1.0, 3.0, 0.2, 4.0], np.float32)],
    "batch_drop": [np.array([1, 2, 3, 4, 5, 6, 7], np.float32)],
    "for_loop": [np.array([1.5, -2.0, 3.25, 0.5], np.float32)],
    "for_break": [np.array([1.5, 2.0, -3.25, 0.5], np.float32)],
    "iterate": [np.array([10, 20, 30, 40, 50], np.float32)],
    "iterate_end": [np.array([7, 8], np.float32)],
    "next_past_end": [np.array([7, 8], np.float32)],
    "range_ops": [np.array(11, np.int64)],
    "zip_concat": [np.array([1, 2, 3, 4], np.float32), np.array([5, 6, 7], np.int64)],
    "flat_map": [np.array([3, 0, 2, 4], np.int64)],
    "scan_unbatch": [np.array([1, 2, 3, 4, 5], np.float32)],
    "padded": [np.array([2, 0, 3, 1, 2], np.int64)],
    "tensors_prefetch": [np.array([1, 2, 3], np.float32)],
    "strings_batch": [np.array([1.5, 2, 3], np.float32)],
    "window_interleave": [np.array([3, 1, 0, 4, 2, 5, 2], np.int64)],
    "unique_shuffle1": [np.array([3, 1, 3, 4, 1, 5, 9, 4], np.int64)],
    "err_window": [np.array([1, 2], np.int64)],
    "err_batch_shapes": [np.array([1, 2, 3], np.float32)],
    "err_range_step": [np.array(0, np.int64)],
}


def signature_rows(loaded, feeds, twice=False):
    """TF's outputs of each signature of the loaded model called with its feed (twice: the two calls
    must agree), or TF's error text (key "x" for signatures named err*)."""
    rows = []
    for s, feed in feeds.items():
        fn = loaded.signatures[s]
        kw = {}
        for k, v in zip(sorted(fn.structured_input_signature[1].keys()), feed):
            kw[k] = tf.constant(v)
        try:
            outs = fn(**kw)
            outs2 = fn(**kw) if twice else outs
            for k in sorted(outs):
                assert np.array_equal(outs[k].numpy(), outs2[k].numpy()), (s, k)
                rows.append((s, k, tf.constant(outs[k].numpy()), None))
        except (tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError, tf.errors.FailedPreconditionError,
                tf.errors.DataLossError) as e:
            msg = e.message.split("<stack traces unavailable>\n")[-1].split("\n\t [[")[0].strip()
            # TF copies a batch's elements in parallel: which mismatch it names first varies
            msg = msg.split(" Shapes are:")[0]
            rows.append((s, "x" if s.startswith("err") else "b", None, msg))
    return rows


def write_models_h(name, tool, prefix, loaded, feeds, rows):
    """tests/unit/<name>: <prefix>_feeds and <prefix>_rows (ds_sig_run.h's types) for a test_ops_*.c."""
    guard = "SM_TEST_" + name.upper().replace(".", "_")
    lines = ["/* %s - GENERATED by tools/%s from TensorFlow %s; do not edit. */" % (name, tool, tf.__version__),
             "#ifndef " + guard, "#define " + guard, '#include "ds_sig_run.h"',
             "static const ds_feed %s_feeds[] = {" % prefix]
    for s, feed in feeds.items():
        keys = sorted(loaded.signatures[s].structured_input_signature[1].keys())
        lines.append("    {%s, %d, {%s}, {%s}}," % (g.c_str(s), len(feed), ", ".join(g.c_str(k) for k in keys) or "NULL",
                                                 ", ".join(g.c_tensor(tf.constant(v)) for v in feed) or "{0}"))
    lines += ["};", "static const ds_row %s_rows[] = {" % prefix]
    for s, k, t, err in rows:
        lines.append("    {%s, %s, %s, %s}," % (g.c_str(s), g.c_str(k), g.c_tensor(t) if t is not None else "{0}",
                                              g.c_str(err) if err else "NULL"))
    lines += ["};", "#endif", ""]
    path = os.path.join(ROOT, "tests", "unit", name)
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("wrote %d rows to %s" % (len(rows), path))


def main():
    files = "/tmp/gen_f6_files"
    shutil.rmtree(files, ignore_errors=True)
    make_files(files)
    m = M(files)
    shutil.rmtree(OUT, ignore_errors=True)
    sigs = {s: getattr(m, s).get_concrete_function() for s in list(FEEDS) + HAND}
    tf.saved_model.save(m, OUT, signatures=sigs)
    loaded = tf.saved_model.load(OUT)
    rows = signature_rows(loaded, FEEDS)
    write_models_h("f6_models.h", "gen_f6_cases.py", "f6", loaded, FEEDS, rows)


if __name__ == "__main__":
    main()
