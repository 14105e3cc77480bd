#!/usr/bin/env python3
"""test_builder_tf.py - SavedModels written by this library's builder, loaded and run by TensorFlow.

Usage: PYTHON test_builder_tf.py [--build BUILD_DIR]   (PYTHON has tensorflow; BUILD_DIR has
examples/square, examples/labels and test_builder). Writes the models into a temp dir, then checks
with TF's own loaders (TF1 tf.compat.v1.saved_model.loader.load + sess.run, TF2
tf.saved_model.load + signatures, classify over serialized tf.Examples), saved_model_cli show/run
(--input_examples too), the __saved_model_init_op signature, and fingerprint.pb against what TF's
own fingerprinting computes over the same files (ours and every TF-written model of the zoo and
the TF Serving fixtures). Prints 'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

import numpy as np

results = {"passed": 0, "failed": 0}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_BUILDER = [None]


def check(name, fn):
    try:
        fn()
        results["passed"] += 1
        print(f"ok   {name}")
    except Exception:  # every failure is reported, the run goes on
        results["failed"] += 1
        print(f"FAIL {name}")
        traceback.print_exc()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix="sm_builder_tf.")
    try:
        square = os.path.join(tmp, "square")
        subprocess.run([os.path.join(build, "examples", "square"), square], check=True)
        subprocess.run([os.path.join(build, "examples", "labels"), os.path.join(tmp, "labels_example")], check=True)
        subprocess.run([os.path.join(build, "test_builder"), "--write", tmp], check=True)
        TEST_BUILDER[0] = os.path.join(build, "test_builder")
        run_checks(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


def read_saved_model(d):
    from tensorflow.core.protobuf import saved_model_pb2
    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(d, "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    return sm


def run_checks(tmp):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    def tf1_run(d, tags, feeds, fetch, extra=None):
        with tf.Graph().as_default() as g, tf.compat.v1.Session(graph=g) as sess:
            tf.compat.v1.saved_model.loader.load(sess, tags, d)
            out = sess.run(fetch, feeds)
            if extra:
                extra(sess)
            return out

    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    sq = os.path.join(tmp, "square")

    def square_tf1():
        y = tf1_run(sq, ["serve"], {"x:0": x}, "y:0")
        np.testing.assert_allclose(y, x * x)
        # unknown rank: a matrix works too
        m = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_allclose(tf1_run(sq, ["serve"], {"x:0": m}, "y:0"), m * m)

    def square_tf2():
        f = tf.saved_model.load(sq).signatures["serving_default"]
        np.testing.assert_allclose(f(x=tf.constant(x))["y"].numpy(), x * x)

    check("square: TF1 loader + sess.run", square_tf1)
    check("square: tf.saved_model.load signature", square_tf2)

    for name in ("scaled", "scaled_txt"):
        d = os.path.join(tmp, name)

        def scaled_tf1(d=d):
            def vars_restored(sess):
                np.testing.assert_allclose(sess.run("a/Read/ReadVariableOp:0"), 3.0)
                np.testing.assert_array_equal(sess.run("b/Read/ReadVariableOp:0"), [0, 42])
                np.testing.assert_allclose(sess.run("w/Read/ReadVariableOp:0"), np.arange(300) * 0.5)

            y = tf1_run(d, ["serve"], {"x:0": x}, "y:0", vars_restored)
            np.testing.assert_allclose(y, 3 * x * x)

        def scaled_tf2(d=d):
            m = tf.saved_model.load(d, tags=["serve"])
            np.testing.assert_allclose(m.signatures["serving_default"](x=tf.constant(x))["y"].numpy(), 3 * x * x)

        check(f"{name}: TF1 loader restores variables, y = a*x*x", scaled_tf1)
        check(f"{name}: tf.saved_model.load signature, y = a*x*x", scaled_tf2)

    multi = os.path.join(tmp, "multi")

    def multi_tags():
        np.testing.assert_allclose(tf1_run(multi, ["serve"], {"x:0": x}, "y:0"), 3 * x * x)
        np.testing.assert_allclose(tf1_run(multi, ["serve", "gpu"], {"x:0": x}, "y:0"), 3 + x)
        np.testing.assert_allclose(tf1_run(multi, ["train"], {"x:0": x}, "y:0"), 3 * x * x)
        m = tf.saved_model.load(multi, tags=["gpu", "serve"])
        np.testing.assert_allclose(m.signatures["serving_default"](x=tf.constant(x))["y"].numpy(), 3 + x)

    check("multi: each MetaGraph loads by its own tags, variables shared", multi_tags)

    labels = os.path.join(tmp, "labels")
    lx = np.array([[5, 0], [0, 5], [0, 0]], dtype=np.float32)

    def labels_tf1():
        c = tf1_run(labels, ["serve"], {"x:0": lx}, "label_table_Lookup/LookupTableFindV2:0")
        assert list(c) == [b"cat", b"dog", b"bird"], c

    def labels_tf2():
        f = tf.saved_model.load(labels).signatures["serving_default"]
        out = f(x=tf.constant(lx))
        assert list(out["classes"].numpy()) == [b"cat", b"dog", b"bird"], out
        np.testing.assert_allclose(out["scores"].numpy().sum(axis=1), [1, 1, 1], rtol=1e-6)

    check("labels: TF1 loader feeds the asset, main op fills the table", labels_tf1)
    check("labels: tf.saved_model.load signature returns label strings", labels_tf2)

    cli = shutil.which("saved_model_cli") or os.path.join(os.path.dirname(sys.executable), "saved_model_cli")

    def cli_show():
        r = subprocess.run([cli, "show", "--dir", sq, "--all"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "signature_def['serving_default']" in r.stdout and "name: y:0" in r.stdout, r.stdout

    def cli_run():
        r = subprocess.run([cli, "run", "--dir", os.path.join(tmp, "scaled"), "--tag_set", "serve",
                            "--signature_def", "serving_default", "--input_exprs", "x=[1.0,2.0]"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "[ 3. 12.]" in r.stdout, r.stdout

    check("saved_model_cli show --all", cli_show)
    check("saved_model_cli run (with variables)", cli_run)

    # examples/labels: a classifier over tf.Examples with a label vocabulary asset
    le = os.path.join(tmp, "labels_example")

    def example(x0, x1):
        return tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x0, x1]))})).SerializeToString()

    batch = tf.constant([example(5, 0), example(0, 5), example(0, 0)])
    best = [b"cat", b"dog", b"bird"]

    def labels_classify():
        m = tf.saved_model.load(le, tags=["serve"])
        for key in ("serving_default", "classification"):
            out = m.signatures[key](inputs=batch)
            assert out["classes"].numpy().tolist() == [[b"cat", b"dog", b"bird"]] * 3, out
            scores = out["scores"].numpy()
            assert scores.shape == (3, 3) and list(scores.argmax(axis=1)) == [0, 1, 2], scores
            np.testing.assert_allclose(scores.sum(axis=1), 1, rtol=1e-6)

    def labels_predict():
        m = tf.saved_model.load(le, tags=["serve"])
        out = m.signatures["predict"](examples=batch)
        assert out["classes"].numpy().tolist() == best, out
        assert out["class_ids"].numpy().tolist() == [0, 1, 2], out

    def labels_tf1():
        def more(sess):
            c = sess.run("label_table_Lookup_1/LookupTableFindV2:0", {"input_example_tensor:0": batch.numpy()})
            assert c.tolist() == [[b"cat", b"dog", b"bird"]] * 3, c
        c = tf1_run(le, ["serve"], {"input_example_tensor:0": batch.numpy()}, "label_table_Lookup/LookupTableFindV2:0",
                    more)
        assert c.tolist() == best, c

    def labels_cli():
        r = subprocess.run([cli, "run", "--dir", le, "--tag_set", "serve", "--signature_def", "serving_default",
                            "--input_examples", 'inputs=[{"x":[5.0,0.0]},{"x":[0.0,5.0]}]'],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "[[b'cat' b'dog' b'bird']" in r.stdout and "Result for output key scores" in r.stdout, r.stdout
        r = subprocess.run([cli, "run", "--dir", le, "--tag_set", "serve", "--signature_def", "predict",
                            "--input_examples", 'examples=[{"x":[0.0,5.0]}]'], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "[b'dog']" in r.stdout, r.stdout

    check("labels example: classify signatures return label strings (tf.saved_model.load, tf.Examples)",
          labels_classify)
    check("labels example: predict signature returns the best label", labels_predict)
    check("labels example: TF1 loader runs the __saved_model_init_op, sess.run by tensor names", labels_tf1)
    check("labels example: saved_model_cli run --input_examples", labels_cli)

    def init_op_signature():
        from tensorflow.python.saved_model import loader_impl
        for d in (le, os.path.join(tmp, "labels")):
            sm = read_saved_model(d)
            mg = sm.meta_graphs[0]
            sig = mg.signature_def["__saved_model_init_op"]
            ti = sig.outputs["__saved_model_init_op"]
            assert ti.name == "init_all_tables" and ti.dtype == 0 and ti.tensor_shape.unknown_rank, sig
            assert sig.method_name == "" and not sig.inputs, sig
            with tf.Graph().as_default():
                tf.compat.v1.train.import_meta_graph(mg)
                assert loader_impl.get_init_op(mg).name == "init_all_tables"

    check("__saved_model_init_op signature as TF 2.x's builder writes it", init_op_signature)

    # fingerprint.pb: TensorFlow reads it, and computes the same hashes over the same files
    from tensorflow.core.protobuf import fingerprint_pb2
    from tensorflow.python.saved_model.pywrap_saved_model import fingerprinting as fpw

    def fingerprints():
        for name in ("square", "scaled", "multi", "labels", "labels_example"):
            d = os.path.join(tmp, name)
            ours = fingerprint_pb2.FingerprintDef()
            with open(os.path.join(d, "fingerprint.pb"), "rb") as f:
                ours.ParseFromString(f.read())
            theirs = fingerprint_pb2.FingerprintDef()
            theirs.ParseFromString(fpw.CreateFingerprintDef(d))
            for field in ("saved_model_checksum", "graph_def_program_hash", "signature_def_hash",
                          "saved_object_graph_hash", "checkpoint_hash"):
                assert getattr(ours, field) == getattr(theirs, field), (name, field, ours, theirs)
            assert ours.version.producer == theirs.version.producer, (name, ours.version, theirs.version)
            assert ours.uuid and ours.uuid.isdigit(), ours.uuid
            fp = tf.saved_model.experimental.read_fingerprint(d)
            assert fp.saved_model_checksum == theirs.saved_model_checksum
            assert fp.signature_def_hash == theirs.signature_def_hash
        assert not os.path.exists(os.path.join(tmp, "scaled_txt", "fingerprint.pb"))

    check("fingerprint.pb: read_fingerprint reads it; every hash equals TensorFlow's over the same files",
          fingerprints)

    def fingerprints_of_tf_models():
        """Our fingerprint of every TF-written SavedModel (zoo, TF Serving fixtures) is TF's."""
        roots = [os.path.join(ROOT, "tests", "fixtures", "zoo"),
                 os.path.join(ROOT, "..", "shared", "fixtures", "tf-serving")]
        n = 0
        for root in roots:
            for d, _, files in sorted(os.walk(root)):
                if "saved_model.pb" not in files:
                    continue
                theirs = fingerprint_pb2.FingerprintDef()
                theirs.ParseFromString(fpw.CreateFingerprintDef(d))
                r = subprocess.run([TEST_BUILDER[0], "--fingerprint", d], capture_output=True, text=True)
                assert r.returncode == 0, (d, r.stderr)
                ours = dict(line.split(" ") for line in r.stdout.splitlines())
                for field in ("saved_model_checksum", "graph_def_program_hash", "signature_def_hash",
                              "saved_object_graph_hash", "checkpoint_hash"):
                    assert int(ours[field]) == getattr(theirs, field), (d, field, ours, theirs)
                assert int(ours["producer"]) == theirs.version.producer, (d, ours, theirs)
                n += 1
        assert n >= 10, n
        print(f"     {n} TF-written SavedModels fingerprinted alike")

    check("fingerprint of TF-written SavedModels (zoo, TF Serving fixtures) equals TensorFlow's", fingerprints_of_tf_models)


if __name__ == "__main__":
    sys.exit(main())
