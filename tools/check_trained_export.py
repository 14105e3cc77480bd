#!/usr/bin/env python3
"""TensorFlow judges an export written by sm_seq_export (`savedmodel train`, or the unit test
test_train_export with SM_TRAIN_EXPORT_KEEP=DIR).

For each EXPORT_DIR:
  - tf.saved_model.load(dir, tags=["serve"]): serving_default on the images equals this project's
    `savedmodel run ... --outdir` within 1e-5 (|diff| <= 1e-5 * max(1, |tf|));
  - classify on real tf.train.Example protos (feature "inputs" = the flattened image): the classes
    are the labels of assets/labels.txt, one row per example, the scores are the softmax of the
    logits (or the probabilities themselves) and equal ours (`savedmodel run` on the same protos);
  - TF1's tf.compat.v1.saved_model.loader.load on {serve} runs both signatures the same;
  - the {train} MetaGraph loads with both loaders, runs serving_default the same, and restores every
    variable (weights and the optimizer's <opt>/iteration, slots) to the checkpoint's values;
  - `saved_model_cli show --all` and `saved_model_cli run` work on it.

  check_trained_export.py [--cli build/savedmodel] [--images X.npy] [--n 16] EXPORT_DIR...

--images: float32 [n, in_shape...] (e.g. Fashion-MNIST test images scaled to [0, 1]), used for the
exports whose input has that many elements; otherwise n uniform [0, 1) images of the signature's
shape. Without --cli, our runtime is not compared.
Prints ok/FAIL lines and 'N passed, N failed'; exits non-zero on any failure.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
results = {"passed": 0, "failed": 0}


def check(ok, what, detail=""):
    results["passed" if ok else "failed"] += 1
    print(("ok    " if ok else "FAIL  ") + what + ("" if ok or not detail else "\n      " + str(detail)[:1500]),
          flush=True)
    return ok


def close(got, want, what):
    import numpy as np
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return check(False, what, f"shape {list(got.shape)}, want {list(want.shape)}")
    diff = np.abs(got - want)
    tol = 1e-5 * np.maximum(1.0, np.abs(want))
    worst = float(diff.max()) if diff.size else 0.0
    return check(bool((diff <= tol).all()), what + f" (max |diff| {worst:.3g})",
                 f"{int((diff > tol).sum())} of {want.size} off, max |diff| {worst:.3g}")


def examples(x):
    import tensorflow as tf
    return [tf.train.Example(features=tf.train.Features(feature={
        "inputs": tf.train.Feature(float_list=tf.train.FloatList(value=row.ravel().tolist()))}))
        .SerializeToString() for row in x]


def run_ours(cli, d, key, alias, value, tmp, rows=None):
    """`savedmodel run` with saved_model_cli's flags; returns {output: array} or raises. rows: give
    the input as --input_examples (feature "inputs" = each row, flattened) instead of a .npy."""
    import numpy as np
    os.makedirs(tmp, exist_ok=True)
    path = os.path.join(tmp, "in.npy")
    if rows is not None:
        exs = ",".join('{"inputs":[%s]}' % ",".join(repr(float(v)) for v in r.ravel()) for r in rows)
        feed = ["--input_examples", f"{alias}=[{exs}]"]
    else:
        if value.dtype == object:
            width = max([len(v) for v in value] + [1])
            value = np.array([bytes(v) for v in value], dtype="S%d" % width)
        np.save(path, value, allow_pickle=False)
        feed = ["--inputs", f"{alias}={path}"]
    out = os.path.join(tmp, "out")
    r = subprocess.run([cli, "run", "--dir", d, "--tag_set", "serve", "--signature_def", key] + feed +
                       ["--outdir", out], capture_output=True)
    if r.returncode:
        raise RuntimeError((r.stdout + r.stderr).decode(errors="replace")[-800:])
    return {f[:-4]: np.load(os.path.join(out, f), allow_pickle=True) for f in os.listdir(out) if f.endswith(".npy")}


def sm_cli(args):
    sys.path.insert(0, HERE)
    import make_zoo
    out, rc = make_zoo._cli_in_process(args, os.getcwd())
    return rc, out.decode("utf-8", "replace")


def softmax(v):
    import numpy as np
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check_export(d, cli, images, n, tmp):
    import numpy as np
    import tensorflow as tf
    name = os.path.basename(os.path.normpath(d))
    try:
        m = tf.saved_model.load(d, tags=["serve"])
    except Exception as e:  # noqa: BLE001
        check(False, f"{name}: tf.saved_model.load(tags=['serve'])", repr(e)[:800])
        return
    check(True, f"{name}: tf.saved_model.load(tags=['serve'])")
    sig = m.signatures["serving_default"]
    spec = sig.structured_input_signature[1]["inputs"]
    shape = [int(s) for s in spec.shape[1:]]
    x = np.load(images).astype(np.float32) if images else None
    if x is not None and int(np.prod(x.shape[1:])) == int(np.prod(shape)):
        x = x.reshape([x.shape[0]] + shape)
    else:  # no images given, or not this model's shape
        x = np.random.default_rng(0).random([n] + shape, dtype=np.float32)
    want = sig(inputs=tf.constant(x))["outputs"].numpy()
    labels_path = os.path.join(d, "assets", "labels.txt")
    with open(labels_path) as f:
        labels = [line.rstrip("\n").encode() for line in f]
    probs = want if (np.all(want >= 0) and np.allclose(want.sum(axis=1), 1, atol=1e-5)) else softmax(want)
    if cli:
        try:
            ours = run_ours(cli, d, "serving_default", "inputs", x, os.path.join(tmp, name, "predict"))
            close(ours.get("outputs"), want, f"{name}: serving_default, ours == TensorFlow on {len(x)} images")
        except Exception as e:  # noqa: BLE001
            check(False, f"{name}: savedmodel run serving_default", repr(e)[:800])
    ex = examples(x)
    if "classify" in m.signatures:
        res = m.signatures["classify"](inputs=tf.constant(ex))
        classes, scores = res["classes"].numpy(), res["scores"].numpy()
        check(classes.shape == (len(x), len(labels)) and all(list(r) == labels for r in classes),
              f"{name}: classify classes are the label vocabulary per row",
              f"{classes[:2]} vs {labels}")
        close(scores, probs, f"{name}: classify scores == softmax(serving_default)")
        check(bool((scores.argmax(1) == want.argmax(1)).all()), f"{name}: classify ranks as serving_default")
        if cli:
            try:
                # .npy 'S' arrays drop a serialized Example's trailing NUL bytes (an image ending in
                # black pixels): give those as --input_examples, as saved_model_cli takes them
                # (a few rows, to stay within one argument's length limit).
                k = len(ex) if not any(e.endswith(b"\0") for e in ex) else min(len(ex), 8)
                ours = run_ours(cli, d, "classify", "inputs", np.array(ex[:k], dtype=object),
                                os.path.join(tmp, name, "classify"), rows=None if k == len(ex) else x[:k])
                oc = [bytes(v) for v in np.asarray(ours.get("classes")).ravel()]
                check(oc == [bytes(v) for v in classes[:k].ravel()],
                      f"{name}: classify classes, ours == TensorFlow on {k} examples")
                close(ours.get("scores"), scores[:k], f"{name}: classify scores, ours == TensorFlow")
            except Exception as e:  # noqa: BLE001
                check(False, f"{name}: savedmodel run classify", repr(e)[:800])
    else:
        print(f"note  {name}: no classify signature (not a classifier)")
    # TF1's loader, both tag sets; {train} also restores the optimizer's state.
    try:
        reader = tf.train.load_checkpoint(os.path.join(d, "variables", "variables"))
        for tag in ("serve", "train"):
            with tf.compat.v1.Session(graph=tf.Graph()) as s:
                mg = tf.compat.v1.saved_model.loader.load(s, [tag], d)
                sd = mg.signature_def["serving_default"]
                got = s.run(sd.outputs["outputs"].name, {sd.inputs["inputs"].name: x})
                close(got, want, f"{name}: TF1 loader {{{tag}}} serving_default")
                if "classify" in mg.signature_def:
                    sc = mg.signature_def["classify"]
                    c, p = s.run([sc.outputs["classes"].name, sc.outputs["scores"].name],
                                 {sc.inputs["inputs"].name: ex})
                    check(all(list(r) == labels for r in c), f"{name}: TF1 loader {{{tag}}} classify classes")
                    close(p, probs, f"{name}: TF1 loader {{{tag}}} classify scores")
                bad, names = [], []
                for v in tf.compat.v1.global_variables():
                    vn = v.op.name
                    names.append(vn)
                    val = s.run(vn + "/Read/ReadVariableOp:0")
                    if not np.array_equal(val, reader.get_tensor(vn)):
                        bad.append(vn)
                check(not bad, f"{name}: TF1 loader {{{tag}}} restores {len(names)} variables to the checkpoint",
                      bad)
                if tag == "train":
                    opt = [v for v in names if v.endswith("/iteration")]
                    nopt = sum(1 for v in names if not v.startswith("sequential/"))
                    check(len(opt) == 1 and nopt >= 2,
                          f"{name}: {{train}} holds the optimizer state ({', '.join(opt)}, {nopt} optimizer variables)",
                          names)
    except Exception as e:  # noqa: BLE001
        check(False, f"{name}: TF1 loader", repr(e)[:800])
    try:
        t = tf.saved_model.load(d, tags=["train"])
        close(t.signatures["serving_default"](inputs=tf.constant(x))["outputs"].numpy(), want,
              f"{name}: tf.saved_model.load(tags=['train']) serving_default")
    except Exception as e:  # noqa: BLE001
        check(False, f"{name}: tf.saved_model.load(tags=['train'])", repr(e)[:800])
    # saved_model_cli
    rc, text = sm_cli(["show", "--dir", d, "--all"])
    need = ["serving_default"] + (["tensorflow/serving/classify"] if "classify" in m.signatures else [])
    check(rc == 0 and all(w in text for w in need), f"{name}: saved_model_cli show --all", text[-800:])
    xin = os.path.join(tmp, name, "x.npy")
    os.makedirs(os.path.dirname(xin), exist_ok=True)
    np.save(xin, x)
    return (d, name, xin, want)


def cli_run(job, tmp):
    """saved_model_cli run; after every `show` (run marks its flags required for good in-process)."""
    import numpy as np
    d, name, xin, want = job
    out = os.path.join(tmp, name, "cli_out")
    rc, text = sm_cli(["run", "--dir", d, "--tag_set", "serve", "--signature_def", "serving_default",
                       "--inputs", f"inputs={xin}", "--outdir", out])
    if check(rc == 0 and os.path.exists(os.path.join(out, "outputs.npy")), f"{name}: saved_model_cli run",
             text[-800:]):
        close(np.load(os.path.join(out, "outputs.npy")), want, f"{name}: saved_model_cli run outputs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exports", nargs="+")
    ap.add_argument("--cli", help="this project's savedmodel binary (compare its outputs)")
    ap.add_argument("--images", help="float32 .npy of inputs")
    ap.add_argument("--n", type=int, default=16, help="random images when --images is not given")
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    print(f"check_trained_export: TensorFlow {tf.__version__}", flush=True)
    tmp = tempfile.mkdtemp(prefix="sm-check-export-")
    try:
        jobs = [check_export(d, args.cli, args.images, args.n, tmp) for d in args.exports]
        for job in jobs:
            if job:
                cli_run(job, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
