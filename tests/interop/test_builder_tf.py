#!/usr/bin/env python3
"""test_builder_tf.py - SavedModels written by this library's builder, loaded and run by TensorFlow.

Usage: PYTHON test_builder_tf.py [--build BUILD_DIR]   (PYTHON has tensorflow; BUILD_DIR has
examples/square and test_builder). Writes the models into a temp dir, then checks with TF's own
loaders (TF1 tf.compat.v1.saved_model.loader.load + sess.run, TF2 tf.saved_model.load +
signatures) and saved_model_cli show/run. Prints 'N passed, N failed'; exits 1 on any failure.
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
        subprocess.run([os.path.join(build, "test_builder"), "--write", tmp], check=True)
        run_checks(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


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


if __name__ == "__main__":
    sys.exit(main())
