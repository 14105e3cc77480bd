#!/usr/bin/env python3
"""tools/sweep_apps.py - does every keras.applications model load here and give TF's outputs? (not CI: slow)

  build/venv/bin/python tools/sweep_apps.py [--build build] [--out /tmp/h6/apps] [--models a,b]
      [--styles export,save] [--size N] [--batch N] [--dynamic] [--time] [--reuse] [--json FILE]
      [--md FILE]

For every architecture class keras.applications offers (enumerated, so a new one cannot be missed;
--models picks some by lower-case class name), in its own Python process: build it with weights=None
at the smallest input the family allows (SIZES; 32x32 unless the family needs more), seed 0, logits
out, BatchNormalization statistics random (as bench/bench_nets.py: fresh layers are near-identities),
then save it both ways users do:
  export  model.export(DIR)                       (Keras 3's ExportArchive, serving_default)
  save    tf.saved_model.save(model, DIR)         (the Keras model as a tf.Module)
TensorFlow loads each SavedModel back and runs serving_default on a seeded uniform(-1, 1) input at
batch 1 (--batch; TF's output is the reference). --size N builds every model at NxN instead (at least
the family's smallest): odd sizes exercise SAME padding and pooling edges that 32x32 collapses away.
--dynamic builds the feature extractor users export for any image size (include_top=False,
pooling="avg", input_shape=(None, None, 3)) and feeds it --size images.
Then `BUILD/savedmodel scan --json` lists the ops this runtime lacks and `BUILD/savedmodel run
--inputs ... --outdir` runs it here; the error is max |ours - TF| / max |TF| over every output (goal
<= 1e-4, as bench_nets). Past it, TF runs the model again on its other CPU path
(TF_ENABLE_ONEDNN_OPTS=0) and the row says how far TF is from itself ("TF vs TF"), and Keras runs
the same weights in float64 (the value both float32 engines approximate; "vs float64: TF / ours"):
an error no larger than 1.5x TF's own spread, or ours no further from float64 than 1.5x TF's
distance, is "within TF spread" (rounding a deep net amplifies), not a mismatch.
--time also times batch 1 (ours: bench/bench_run, TF: the loaded signature; 2 threads each, median
of 10 calls after 3, in one process each): a timing, so run `--reuse --time` under
`flock -x /tmp/bench.lock` (a few models at a time) after the check, which is a test: run that
under `flock -s`.
Exports go to --out (hundreds of MB; never commit them). One line per model and style is printed,
and a Markdown table at the end (also written to --md).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOL = 1e-4
SIZES = {"Xception": 71, "InceptionV3": 75, "InceptionResNetV2": 75}  # everything else: 32
# classes without include_top/classes knobs we pass, or needing other arguments: none so far
STYLES = ("export", "save")


# ---- child side (the venv's python, one model): one JSON line on stdout ---------------------------
def make_model(keras, cls, size, dynamic):
    """The model (weights=None, seed 0, random BatchNorm statistics) and the numpy Generator after."""
    keras.utils.set_random_seed(0)
    if dynamic:  # the feature extractor users export for any image size: [None, None, None, 3] in
        model = getattr(keras.applications, cls)(weights=None, include_top=False, pooling="avg",
                                                 input_shape=(None, None, 3))
    else:
        model = getattr(keras.applications, cls)(weights=None, input_shape=(size, size, 3),
                                                 classifier_activation=None)
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from bench_nets import random_bn_stats
    return model, random_bn_stats(keras, model)


def child_tf_time(model_dir, x_path):
    """TF's batch-1 latency: the loaded signature, intra-op 2, inter-op 1, median of 10 after 3."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    fn = tf.saved_model.load(model_dir).signatures["serving_default"]
    (alias, spec), = fn.structured_input_signature[1].items()
    x = tf.constant(np.load(x_path)[:1])
    ts = []
    for i in range(13):
        t0 = time.perf_counter()
        fn(**{alias: x})
        if i >= 3:
            ts.append((time.perf_counter() - t0) * 1e3)
    return {"ms": sorted(ts)[len(ts) // 2]}


def child_build(cls, out, styles, size, batch, dynamic):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import keras
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    size = max(SIZES.get(cls, 32), size)
    model, rng = make_model(keras, cls, size, dynamic)
    res = {"class": cls, "size": size, "params": int(model.count_params()), "styles": {}}
    x = rng.uniform(-1, 1, (batch, size, size, 3)).astype("float32")
    res["batch"], res["dynamic"] = batch, dynamic
    for style in styles:
        d = os.path.join(out, style, "model")
        os.makedirs(os.path.dirname(d), exist_ok=True)
        r = res["styles"][style] = {"dir": d}
        try:
            t0 = time.time()
            if style == "export":
                model.export(d, verbose=False)
            else:
                tf.saved_model.save(model, d)
            r["export_s"] = time.time() - t0
            fn = tf.saved_model.load(d).signatures["serving_default"]
            (alias, spec), = fn.structured_input_signature[1].items()
            r["input"] = alias
            np.save(os.path.join(out, style, "x.npy"), x)
            y = fn(**{alias: tf.constant(x)})
            r["outputs"] = sorted(y)
            for k in y:
                np.save(os.path.join(out, style, "tf_%s.npy" % k), y[k].numpy())
        except Exception as e:  # noqa: BLE001 - a style TF itself cannot save is a row, not a crash
            r["tf_error"] = ("%s: %s" % (type(e).__name__, e))[:300]
    return res


def child_f64(cls, size, dynamic, x_path, out_path):
    """The same model (same float32 weights) run in float64 by Keras on the same input: the value
    both float32 engines approximate (a single-output model's only output)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import keras
    model, _ = make_model(keras, cls, size, dynamic)
    keras.config.set_dtype_policy("float64")
    m64, _ = make_model(keras, cls, size, dynamic)
    m64.set_weights([w.astype("float64") for w in model.get_weights()])
    y = m64(np.load(x_path).astype("float64"), training=False)
    np.save(out_path, keras.ops.convert_to_numpy(y))
    return {"ok": 1}


def child_tf_plain(model_dir, x_path, out_dir):
    """TF's other CPU path (TF_ENABLE_ONEDNN_OPTS=0, set by the driver): how far TF is from itself."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    fn = tf.saved_model.load(model_dir).signatures["serving_default"]
    (alias, spec), = fn.structured_input_signature[1].items()
    y = fn(**{alias: tf.constant(np.load(x_path))})
    for k in y:
        np.save(os.path.join(out_dir, "%s.npy" % k), y[k].numpy())
    return {"ok": 1}


def child_vs64(f64, tf_path, ours_path):
    import numpy as np
    ref = np.load(f64).astype(np.float64)
    scale = max(float(np.abs(ref).max()), 1e-30)
    return {k: float(np.abs(np.load(p).astype(np.float64) - ref).max() / scale)
            for k, p in (("tf", tf_path), ("ours", ours_path))}


def child_compare(out, style, outputs, ours_dir):
    import numpy as np
    worst = 0.0
    for k in outputs:
        ref = np.load(os.path.join(out, style, "tf_%s.npy" % k)).astype(np.float64)
        path = os.path.join(ours_dir, "%s.npy" % k)
        if not os.path.exists(path):
            return {"error": "no output %s" % k}
        got = np.load(path).astype(np.float64)
        if got.shape != ref.shape:
            return {"error": "output %s shape %s, TF %s" % (k, got.shape, ref.shape)}
        if not np.all(np.isfinite(got)):
            return {"error": "output %s not finite" % k}
        worst = max(worst, float(np.abs(got - ref).max() / max(float(np.abs(ref).max()), 1e-30)))
    return {"err": worst}


# ---- driver side ------------------------------------------------------------------------------------
def run(cmd, timeout, env=None):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                           env=None if env is None else dict(os.environ, **env))
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s" % timeout


def child(py, timeout, *args, env=None):
    rc, out, err = run([py, os.path.abspath(__file__), "--child"] + [str(a) for a in args], timeout, env)
    if rc != 0:
        return None, err.strip().splitlines()[-1] if err.strip() else "rc %d" % rc
    return json.loads(out.strip().splitlines()[-1]), None


def ours(args, r, style_dir):
    """scan + run one SavedModel here; fills r with unsupported / error / err / ours_ms."""
    exe = os.path.join(args.build, "savedmodel")
    rc, out, err = run([exe, "scan", "--dir", r["dir"], "--tag_set", "serve", "--json"], 300)
    try:
        r["unsupported"] = sorted({o for mg in json.loads(out)["meta_graphs"] for o in mg["unsupported_ops"]})
    except (ValueError, KeyError):
        r["unsupported"] = ["?scan rc %d: %s" % (rc, err.strip()[-200:])]
    od = os.path.join(style_dir, "ours")
    t0 = time.time()
    rc, out, err = run([exe, "run", "--dir", r["dir"], "--tag_set", "serve", "--signature_def", "serving_default",
                        "--inputs", "%s=%s" % (r["input"], os.path.join(style_dir, "x.npy")),
                        "--outdir", od, "--overwrite"], 900)
    r["ours_s"] = time.time() - t0
    if rc != 0:
        r["error"] = (err.strip() or "rc %d" % rc).splitlines()[-1][:300]
        return
    c, e = child(args.python, 300, "compare", os.path.dirname(style_dir), os.path.basename(style_dir),
                 json.dumps(r["outputs"]), od)
    if c is None:
        r["error"] = "compare failed: " + e
    else:
        r.update(c)
    if r.get("err", 0) > TOL:  # TF's own spread: its oneDNN path against its plain one, same input
        pd = os.path.join(style_dir, "tf_plain")
        os.makedirs(pd, exist_ok=True)
        c, e = child(args.python, 900, "tf_plain", r["dir"], os.path.join(style_dir, "x.npy"), pd,
                     env={"TF_ENABLE_ONEDNN_OPTS": "0"})
        c = c and child(args.python, 300, "compare", os.path.dirname(style_dir), os.path.basename(style_dir),
                        json.dumps(r["outputs"]), pd)[0]
        if c and "err" in c:
            r["tf_spread"] = c["err"]
        # and both against the float64 truth (single-output models)
        f64 = os.path.join(style_dir, "f64.npy")
        if len(r["outputs"]) == 1 and (os.path.exists(f64) or child(
                args.python, 1800, "f64", r["cls"], r["size"], "1" if r["dynamic"] else "0",
                os.path.join(style_dir, "x.npy"), f64)[0]):
            c, e = child(args.python, 300, "vs64", f64, os.path.join(style_dir, "tf_%s.npy" % r["outputs"][0]),
                         os.path.join(od, "%s.npy" % r["outputs"][0]))
            if c:
                r["tf_vs64"], r["ours_vs64"] = c["tf"], c["ours"]
    if args.time and "err" in r:  # batch 1, both sides in the same minutes
        rc, out, err = run([args.bench_run, r["dir"], "serve", "serving_default", "1", "10", "3", "2"], 900)
        try:
            r["ours_ms"] = json.loads(out.strip().splitlines()[-1])["median_ms"]
        except (ValueError, KeyError, IndexError):
            pass
        c, e = child(args.python, 900, "tf_time", r["dir"], os.path.join(style_dir, "x.npy"))
        if c:
            r["tf_ms"] = c["ms"]


def status(r):
    if "tf_error" in r:
        return "TF fails"
    if "error" in r:
        return "FAIL"
    if r.get("err", 1) <= TOL:
        return "ok"
    # past the goal, but no further from TF than TF's two CPU paths are from each other, or no
    # further from the float64 value than TF is (deep nets with random BatchNorm statistics amplify
    # rounding): not a bug of ours, reported as such
    if r["err"] <= 1.5 * r.get("tf_spread", 0) or r.get("ours_vs64", 1) <= 1.5 * r.get("tf_vs64", 0):
        return "within TF spread"
    return "MISMATCH"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", nargs="+")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=None)
    ap.add_argument("--out", default="/tmp/h6/apps")
    ap.add_argument("--models", default="")
    ap.add_argument("--skip", default="", help="comma-separated lower-case class names to leave out")
    ap.add_argument("--styles", default=",".join(STYLES))
    ap.add_argument("--size", type=int, default=0, help="input NxN (default: each family's smallest)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dynamic", action="store_true",
                    help="include_top=False, pooling='avg', input_shape=(None, None, 3); fed --size")
    ap.add_argument("--time", action="store_true", help="also time batch 1 (ours and TF)")
    ap.add_argument("--reuse", action="store_true", help="reuse exports (and TF outputs) already in --out")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args()
    if args.child:
        what, a = args.child[0], args.child[1:]
        if what == "build":
            res = child_build(a[0], a[1], a[2].split(","), int(a[3]), int(a[4]), a[5] == "1")
        elif what == "tf_time":
            res = child_tf_time(a[0], a[1])
        elif what == "f64":
            res = child_f64(a[0], int(a[1]), a[2] == "1", a[3], a[4])
        elif what == "vs64":
            res = child_vs64(a[0], a[1], a[2])
        elif what == "tf_plain":
            res = child_tf_plain(a[0], a[1], a[2])
        elif what == "compare":
            res = child_compare(a[0], a[1], json.loads(a[2]), a[3])
        elif what == "list":
            import keras
            res = sorted(n for n in dir(keras.applications) if n[:1].isupper())
        print(json.dumps(res))
        return 0
    args.build = os.path.abspath(args.build)
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    if args.time:
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        from bench_runtime import build_driver
        args.bench_run, why = build_driver(args.build)
        if not args.bench_run:
            sys.exit("sweep: no bench_run: %s" % why)
    names, e = child(args.python, 300, "list")
    if names is None:
        sys.exit("sweep: cannot list keras.applications: %s" % e)
    want = {m.strip().lower() for m in args.models.split(",") if m.strip()}
    skip = {m.strip().lower() for m in args.skip.split(",") if m.strip()}
    names = [n for n in names if (not want or n.lower() in want) and n.lower() not in skip]
    styles = [s for s in args.styles.split(",") if s]
    rows = []
    for cls in names:
        out = os.path.join(args.out, cls.lower())
        meta = os.path.join(out, "meta.json")
        res = None
        if args.reuse and os.path.exists(meta):
            with open(meta) as f:
                res = json.load(f)
            if not all(s in res["styles"] for s in styles) or res.get("batch", 1) != args.batch or \
                    res.get("size") != max(SIZES.get(cls, 32), args.size) or \
                    res.get("dynamic", False) != args.dynamic:
                res = None
        if res is None:
            t0 = time.time()
            res, e = child(args.python, 3600, "build", cls, out, ",".join(styles), args.size, args.batch,
                           "1" if args.dynamic else "0")
            if res is None:
                res = {"class": cls, "params": None, "styles": {s: {"tf_error": "build: " + e} for s in styles}}
            res["build_s"] = time.time() - t0
            os.makedirs(out, exist_ok=True)
            with open(meta, "w") as f:
                json.dump(res, f)
        for s in styles:
            r = res["styles"].get(s, {"tf_error": "not built"})
            if "tf_error" not in r:
                r.update(cls=cls, size=res["size"], dynamic=res.get("dynamic", False))
                ours(args, r, os.path.join(out, s))
            row = dict(r, cls=cls, style=s, params=res.get("params"), size=res.get("size"), status=status(r))
            rows.append(row)
            print("%-20s %-6s %-16s %s" % (cls, s, row["status"],
                  "err %.2e" % r["err"] + (" (TF vs TF %.2e)" % r["tf_spread"] if "tf_spread" in r else "") +
                  (" (vs float64: TF %.2e, ours %.2e)" % (r["tf_vs64"], r["ours_vs64"]) if "tf_vs64" in r else "")
                  if "err" in r else (r.get("error") or r.get("tf_error") or "")) +
                  ("  unsupported: " + ",".join(r["unsupported"]) if r.get("unsupported") else ""), flush=True)
    lines = ["| model | input | params | style | loads + runs | max err | TF vs TF | vs float64: TF / ours "
             "| unsupported ops / error | ours ms | TF ms |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["cls"], r.get("size") or "", "%.1fM" % (r["params"] / 1e6) if r.get("params") else "",
            r["style"], r["status"], "%.1e" % r["err"] if "err" in r else "",
            "%.1e" % r["tf_spread"] if "tf_spread" in r else "",
            "%.1e / %.1e" % (r["tf_vs64"], r["ours_vs64"]) if "tf_vs64" in r else "",
            (", ".join(r.get("unsupported") or []) + " " + (r.get("error") or r.get("tf_error") or "")).strip()
            .replace("|", "/"),
            "%.2f" % r["ours_ms"] if "ours_ms" in r else "", "%.2f" % r["tf_ms"] if "tf_ms" in r else ""))
    print("\n".join(lines))
    if args.md:
        with open(args.md, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["status"] in ("ok", "within TF spread", "TF fails") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
