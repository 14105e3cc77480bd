#!/usr/bin/env python3
"""gen_readers_cases.py - TF1's readers and the compressed file datasets against TensorFlow (session 23, h1).

Writes tests/fixtures/readers/: small data files (data/: text, TFRecord plain/GZIP/ZLIB, fixed-length
records plain/GZIP/ZLIB, a truncated and a corrupted TFRecord, a gzip "bomb" of zeros) and a TF1
SavedModel (tf.compat.v1 SavedModelBuilder) whose signatures use a FIFOQueue of file names and a
reader each (TextLineReaderV2, WholeFileReaderV2 and the V1 ref WholeFileReader on a V1 FIFOQueue,
IdentityReaderV2, FixedLengthRecordReaderV2 with and without hop_bytes and with encoding GZIP/ZLIB,
TFRecordReaderV2 with compression_type ""/GZIP/ZLIB), a tf.compat.v1.train.string_input_producer over an
file name read by a TextLineReader with read_up_to, and the file datasets with a compression_type;
and tests/unit/readers_calls.h: a fixed sequence of signature calls with TF's outputs or TF's error
text, run in the session that built the graph (so each call sees what the earlier calls left). Paths
inside strings are written with the fixture directory as "@D@" (the C test puts its own back).
Run: build/venv/bin/python tools/gen_readers_cases.py
"""
import gzip
import os
import re
import shutil
import struct
import sys
import zlib

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_e5_models import cstr, emit_tensor, tf_error  # noqa: E402

tf1 = tf.compat.v1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "readers")
DATA = os.path.join(FIX, "data")
OUT_H = os.path.join(ROOT, "tests", "unit", "readers_calls.h")

TEXT = b"header line\nfirst\n\nthird\r\nem\rbedded\nlast without newline"
TEXT2 = b"x\ny\n"
RECORDS = [b"rec0", b"", b"record two \x00\x01\xff", b"r" * 300]
FIXED = b"HDR" + b"".join(bytes([65 + i]) * 4 for i in range(5)) + b"FT"  # 3 + 5x4 + 2


def write(name, data):
    with open(os.path.join(DATA, name), "wb") as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, mtime=0)


def write_files():
    os.makedirs(DATA)
    write("a.txt", TEXT)
    write("b.txt", TEXT2)
    write("empty.txt", b"")
    write("a.txt.gz", gz(TEXT))
    write("a.txt.zz", zlib.compress(TEXT))
    for name, opt in (("r.tfrecord", None), ("r.tfrecord.gz", "GZIP"), ("r.tfrecord.zz", "ZLIB")):
        with tf.io.TFRecordWriter(os.path.join(DATA, name), options=opt) as w:
            for r in RECORDS:
                w.write(r)
    plain = open(os.path.join(DATA, "r.tfrecord"), "rb").read()
    write("trunc.tfrecord", plain[:-3])
    bad = bytearray(plain)
    bad[12 + 1] ^= 0x40  # a byte of record 0's data
    write("corrupt.tfrecord", bytes(bad))
    write("fixed.bin", FIXED)
    write("fixed.bin.gz", gz(FIXED))
    write("fixed.bin.zz", zlib.compress(FIXED))
    write("fixed_odd.bin", FIXED[:-1])
    write("short.bin", b"HD")
    write("hdronly.tfrecord", plain[:12])
    write("hdrpart.tfrecord", plain[:5])
    write("bomb.gz", gz(b"\0" * (8 << 20)))  # 8 MiB of zeros in ~8 KB
    write("garbage.gz", b"this is not gzip data at all")


def build():
    """{signature: (inputs {name: placeholder}, outputs {name: tensor})}"""
    P = tf1.placeholder
    sigs = {}
    n = P(tf.int64, [], "n")
    st = P(tf.string, [], "state")

    def reader_sigs(tag, reader):
        q = tf1.FIFOQueue(16, [tf.string], shapes=[[]], shared_name="q_" + tag, name="q_" + tag)
        files = P(tf.string, [None], "files_" + tag)
        with tf.control_dependencies([q.enqueue_many([files])]):
            sigs[tag + "_enq"] = ({"files": files}, {"size": q.size()})
        with tf.control_dependencies([q.close()]):
            sigs[tag + "_close"] = ({}, {"size": q.size()})
        k, v = reader.read(q)
        sigs[tag + "_read"] = ({}, {"key": k, "value": v})
        ks, vs = reader.read_up_to(q, n)
        sigs[tag + "_upto"] = ({"n": n}, {"keys": ks, "values": vs})
        sigs[tag + "_stats"] = ({}, {"produced": reader.num_records_produced(),
                                     "completed": reader.num_work_units_completed()})
        with tf.control_dependencies([reader.reset()]):
            sigs[tag + "_reset"] = ({}, {"produced": reader.num_records_produced()})
        sigs[tag + "_ser"] = ({}, {"state": reader.serialize_state()})
        with tf.control_dependencies([reader.restore_state(st)]):
            sigs[tag + "_restore"] = ({"state": st}, {"produced": reader.num_records_produced(),
                                                      "completed": reader.num_work_units_completed()})

    reader_sigs("text", tf1.TextLineReader(skip_header_lines=1, name="text"))
    reader_sigs("text0", tf1.TextLineReader(name="text0"))
    reader_sigs("whole", tf1.WholeFileReader(name="whole"))
    reader_sigs("ident", tf1.IdentityReader(name="ident"))
    reader_sigs("fixed", tf1.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2, name="fixed"))
    reader_sigs("fixhop", tf1.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2, hop_bytes=3, name="fixhop"))
    reader_sigs("fixgz", tf1.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2, encoding="GZIP", name="fixgz"))
    reader_sigs("fixzz", tf1.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2, encoding="ZLIB", name="fixzz"))
    reader_sigs("tfr", tf1.TFRecordReader(name="tfr"))
    reader_sigs("tfrgz", tf1.TFRecordReader(options=tf1.io.TFRecordOptions("GZIP"), name="tfrgz"))
    reader_sigs("tfrzz", tf1.TFRecordReader(options=tf1.io.TFRecordOptions("ZLIB"), name="tfrzz"))

    # tf.compat.v1.train.string_input_producer + TextLineReader + read_up_to; "sip_fill" runs the queue
    # runner's enqueue (what a QueueRunner thread does) on the file names it is given
    sf = P(tf.string, [None], "sip_files")
    fq = tf1.train.string_input_producer(sf, shuffle=False, capacity=4, name="sip")
    qr = tf1.get_collection(tf1.GraphKeys.QUEUE_RUNNERS)[-1]
    with tf.control_dependencies(qr.enqueue_ops):
        sigs["sip_fill"] = ({"files": sf}, {"size": fq.size()})
    ks, vs = tf1.TextLineReader(name="sip_reader").read_up_to(fq, n)
    sigs["sip_read"] = ({"n": n}, {"keys": ks, "values": vs})

    # the V1 ref forms: FIFOQueue + WholeFileReader + ReaderRead / ReaderNumRecordsProduced
    q1 = tf.raw_ops.FIFOQueue(component_types=[tf.string], shapes=[[]], capacity=8, shared_name="q_v1", name="q_v1")
    r1 = tf.raw_ops.WholeFileReader(shared_name="whole_v1", name="whole_v1")
    f1 = P(tf.string, [None], "files_v1")
    with tf.control_dependencies([tf.raw_ops.QueueEnqueueMany(handle=q1, components=[f1])]):
        sigs["v1_enq"] = ({"files": f1}, {"size": tf.raw_ops.QueueSize(handle=q1)})
    k1, v1 = tf.raw_ops.ReaderRead(reader_handle=r1, queue_handle=q1)
    sigs["v1_read"] = ({}, {"key": k1, "value": v1})
    sigs["v1_stats"] = ({}, {"produced": tf.raw_ops.ReaderNumRecordsProduced(reader_handle=r1)})

    # the file datasets with a compression_type, collected whole
    fn, ct = P(tf.string, [None], "ds_files"), P(tf.string, [], "ds_comp")

    def collect(ds):  # the whole dataset as one batch, through an anonymous iterator
        ds = ds.batch(1 << 20)
        h = tf.raw_ops.AnonymousIteratorV3(output_types=[tf.string], output_shapes=[[None]])
        with tf.control_dependencies([tf.raw_ops.MakeIterator(dataset=ds._variant_tensor, iterator=h)]):
            return tf.raw_ops.IteratorGetNext(iterator=h, output_types=[tf.string], output_shapes=[[None]])[0]

    sigs["ds_text"] = ({"files": fn, "comp": ct}, {"lines": collect(tf.data.TextLineDataset(fn, compression_type=ct))})
    sigs["ds_tfr"] = ({"files": fn, "comp": ct}, {"records": collect(tf.data.TFRecordDataset(fn, compression_type=ct))})
    sigs["ds_fixed"] = ({"files": fn, "comp": ct}, {"records": collect(tf.data.FixedLengthRecordDataset(
        fn, 4, header_bytes=3, footer_bytes=2, compression_type=ct))})
    return sigs


def D(*names):
    return np.array([os.path.join(DATA, x).encode() for x in names], dtype=object)


i64 = np.int64
S = lambda b: np.array(b, dtype=object)  # noqa: E731

CALLS = [
    ("text_stats", {}),
    ("text_enq", {"files": D("a.txt", "b.txt", "empty.txt", "a.txt")}),
    ("text_read", {}), ("text_read", {}), ("text_upto", {"n": i64(2)}), ("text_upto", {"n": i64(10)}),
    ("text_stats", {}), ("text_read", {}), ("text_upto", {"n": i64(0)}),
    ("text_upto", {"n": i64(100)}), ("text_stats", {}), ("text_ser", {}), ("text_restore", {"state": S(b"")}),
    ("text_close", {}), ("text_read", {}), ("text_upto", {"n": i64(3)}), ("text_reset", {}), ("text_stats", {}),
    ("text0_enq", {"files": D("a.txt", "a.txt.gz")}), ("text0_upto", {"n": i64(20)}),
    ("text0_upto", {"n": i64(20)}), ("text0_close", {}), ("text0_upto", {"n": i64(20)}),
    ("text0_enq", {"files": D("missing.txt")}),
    ("whole_enq", {"files": D("b.txt", "empty.txt", "fixed.bin")}), ("whole_read", {}), ("whole_upto", {"n": i64(5)}),
    ("whole_stats", {}), ("whole_close", {}), ("whole_read", {}), ("whole_ser", {}),
    ("ident_enq", {"files": np.array([b"w0", b"", b"w\x00two", b"w3", b"w4"], dtype=object)}),
    ("ident_read", {}), ("ident_ser", {}), ("ident_upto", {"n": i64(2)}), ("ident_stats", {}), ("ident_ser", {}),
    ("ident_restore", {"state": S(b"\x08\x05\x10\x02\x18\x07\x22\x03abc")}), ("ident_stats", {}),
    ("ident_ser", {}), ("ident_read", {}), ("ident_stats", {}),
    ("ident_restore", {"state": S(b"\x08\x01\x10\x05")}), ("ident_restore", {"state": S(b"\x08\xff")}),
    ("ident_restore", {"state": S(b"garbage")}), ("ident_restore", {"state": S(b"")}), ("ident_stats", {}),
    ("ident_reset", {}), ("ident_stats", {}), ("ident_ser", {}), ("ident_upto", {"n": i64(10)}), ("ident_close", {}),
    ("ident_upto", {"n": i64(10)}),
    ("fixed_enq", {"files": D("fixed.bin", "fixed_odd.bin", "short.bin", "fixed.bin")}),
    ("fixed_upto", {"n": i64(3)}), ("fixed_upto", {"n": i64(3)}), ("fixed_upto", {"n": i64(10)}),
    ("fixed_read", {}), ("fixed_stats", {}), ("fixed_ser", {}),
    ("fixhop_enq", {"files": D("fixed.bin")}), ("fixhop_upto", {"n": i64(20)}),
    ("fixgz_enq", {"files": D("fixed.bin.gz")}), ("fixgz_upto", {"n": i64(20)}),
    ("fixgz_enq", {"files": D("garbage.gz")}), ("fixgz_upto", {"n": i64(20)}),
    ("fixzz_enq", {"files": D("fixed.bin.zz")}), ("fixzz_upto", {"n": i64(20)}),
    ("tfr_enq", {"files": D("r.tfrecord", "trunc.tfrecord")}), ("tfr_upto", {"n": i64(10)}),
    ("tfr_read", {}), ("tfr_read", {}), ("tfr_read", {}), ("tfr_read", {}), ("tfr_read", {}), ("tfr_stats", {}),
    ("tfr_reset", {}), ("tfr_enq", {"files": D("corrupt.tfrecord")}), ("tfr_read", {}), ("tfr_read", {}),
    ("tfr_reset", {}), ("tfr_enq", {"files": D("hdronly.tfrecord")}), ("tfr_read", {}),
    ("tfr_reset", {}), ("tfr_enq", {"files": D("hdrpart.tfrecord", "r.tfrecord")}), ("tfr_read", {}),
    ("tfr_stats", {}),
    ("whole_reset", {}), ("whole_restore", {"state": S(b"\x08\x02\x10\x02\x18\x09\x22\x01z")}), ("whole_stats", {}),
    ("whole_ser", {}), ("whole_restore", {"state": S(b"\x08\x7f")}), ("whole_restore", {"state": S(b"\x08\x02\x18\x01")}),
    ("tfrgz_enq", {"files": D("r.tfrecord.gz")}), ("tfrgz_upto", {"n": i64(10)}),
    ("tfrzz_enq", {"files": D("r.tfrecord.zz")}), ("tfrzz_upto", {"n": i64(10)}),
    ("sip_fill", {"files": D("b.txt")}), ("sip_read", {"n": i64(5)}), ("sip_fill", {"files": D("b.txt")}),
    ("sip_read", {"n": i64(1)}),
    ("sip_read", {"n": i64(5)}),
    ("v1_enq", {"files": D("b.txt", "a.txt")}), ("v1_read", {}), ("v1_read", {}), ("v1_stats", {}),
    ("ds_text", {"files": D("a.txt", "b.txt"), "comp": S(b"")}),
    ("ds_text", {"files": D("a.txt.gz", "empty.txt"), "comp": S(b"GZIP")}),
    ("ds_text", {"files": D("a.txt.zz"), "comp": S(b"ZLIB")}),
    ("ds_text", {"files": D("a.txt"), "comp": S(b"BZIP2")}),
    ("ds_text", {"files": D("garbage.gz"), "comp": S(b"GZIP")}),
    ("ds_tfr", {"files": D("r.tfrecord.gz"), "comp": S(b"GZIP")}),
    ("ds_tfr", {"files": D("r.tfrecord.zz", "r.tfrecord"), "comp": S(b"ZLIB")}),
    ("ds_tfr", {"files": D("r.tfrecord"), "comp": S(b"NONE")}),
    ("ds_fixed", {"files": D("fixed.bin.gz"), "comp": S(b"GZIP")}),
    ("ds_fixed", {"files": D("fixed.bin.zz", "fixed.bin"), "comp": S(b"ZLIB")}),
]


def my_error(e):
    """TF's message: what follows the "Node: '...'" line, before the node lines (a multi-line message
    whole, without protobuf's debug-string marker; a dataset's without its FlatMap prefix)."""
    m = re.sub(r"goo\.gle/debug\w*\s*", "", str(getattr(e, "message", e)))
    m = m.split("\n\t [[")[0]
    if "\nNode: '" in m:
        m = m.split("\nNode: '", 1)[1].split("\n", 1)[1]
    return m.strip().split("FlatMap: ")[-1]


def fixpath(a):
    """Strings with the fixture directory written as @D@."""
    a = np.asarray(a)
    if a.dtype.kind == "S":
        a = a.astype(object)
    if a.dtype != object:
        return a
    flat = [x.replace(FIX.encode(), b"@D@") if isinstance(x, bytes) else x for x in a.reshape(-1)]
    return np.array(flat, dtype=object).reshape(a.shape)


def main():
    shutil.rmtree(FIX, ignore_errors=True)
    write_files()
    g = tf.Graph()
    with g.as_default():
        sigs = build()
        sess = tf1.Session(graph=g, config=tf1.ConfigProto(operation_timeout_in_ms=3000))
        b = tf1.saved_model.Builder(os.path.join(FIX, "model"))
        smap = {k: tf1.saved_model.build_signature_def(
            {nm: tf1.saved_model.build_tensor_info(t) for nm, t in ins.items()},
            {nm: tf1.saved_model.build_tensor_info(t) for nm, t in outs.items()}) for k, (ins, outs) in sigs.items()}
        b.add_meta_graph_and_variables(sess, ["serve"], signature_def_map=smap, strip_default_attrs=True)
        b.save()
    shutil.move(os.path.join(FIX, "model", "saved_model.pb"), os.path.join(FIX, "saved_model.pb"))
    shutil.rmtree(os.path.join(FIX, "model"))
    lines = ["/* readers_calls.h - generated by tools/gen_readers_cases.py from TensorFlow %s; do not edit. */"
             % tf.__version__,
             "/* Each call runs on the model loaded once, in this order (tests/fixtures/readers); \"@D@\" is that"
             " directory. */"]
    calls = []
    for ci, (sig, ins) in enumerate(CALLS):
        i_ph, outs = sigs[sig]
        err = None
        try:
            got = sess.run(outs, {i_ph[k]: v for k, v in ins.items()})
        except Exception as e:  # noqa: BLE001
            err, got = my_error(e).replace(FIX, "@D@"), None
        ins_c = [(k, emit_tensor(lines, "c%d_in%d" % (ci, j), fixpath(v))) for j, (k, v) in enumerate(ins.items())]
        outs_c = []
        if got is not None:
            outs_c = [(k, emit_tensor(lines, "c%d_out%d" % (ci, j), fixpath(v)))
                      for j, (k, v) in enumerate(sorted(got.items()))]
        lines.append("static const e5_arg c%d_in[] = {%s};" % (ci, ", ".join("{\"%s\", %s}" % a for a in ins_c) or "{0}"))
        lines.append("static const e5_arg c%d_out[] = {%s};" % (ci, ", ".join("{\"%s\", %s}" % a for a in outs_c) or "{0}"))
        e = err[:200] if err else None
        calls.append("{\"readers\", \"%s\", c%d_in, %d, c%d_out, %d, %s, -1}" % (
            sig, ci, len(ins_c), ci, len(outs_c), cstr(e.encode()) if e else "NULL"))
        shown = err if err else {k: fixpath(v).tolist() for k, v in got.items()}
        print(ci, sig, "->", repr(shown)[:300], file=sys.stderr)
    lines.append("static const e5_call readers_calls[] = {")
    lines += ["    " + c + "," for c in calls]
    lines.append("};")
    with open(OUT_H, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
