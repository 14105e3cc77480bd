#!/usr/bin/env python3
"""bench/bench_nets.py - real architectures: libsavedmodel vs TensorFlow vs ONNX Runtime (not a test).

  python3 bench/bench_nets.py [--build build] [--python PY] [--quick] [--models a,b] [--rounds N]
                              [--runs-b1 N] [--runs-big N] [--no-record]

Models (random weights, exported once into BUILD/bench-nets/NAME/ with Keras 3 model.export and
converted once with tf2onnx into BUILD/bench-nets/NAME.onnx; later runs reuse both):
  mobilenetv2 (64x64), resnet50 (64x64), efficientnetb0 (64x64), vgg16 (32x32), densenet121 (64x64)
  from keras.applications (weights=None, seed 0, logits out, BatchNormalization statistics random); transformer: a BERT-like encoder of Keras layers
  (4 layers, hidden 256, 4 heads, FFN 1024 with erf GELU, LayerNorm, float input [batch, 128, 256]);
  seed_cnn: tests/fixtures/zoo/keras_seed_cnn.
Each model runs at batch 1 and 16 (seed_cnn: 1 and 256) on three sides, 2 threads each: ours
(bench/bench_run.c, sm_model_run of the loaded model), TensorFlow (loaded signature call, intra-op 2,
inter-op 1) and ONNX Runtime (CPU provider, intra-op 2). The sides are interleaved: every round runs
TF, ORT, ours for one model in turn, and the median is over all rounds' calls, so a change in the
machine's load hits all three alike. The first output of each side is compared with TF's (max |diff|
over max |TF|, goal <= 1e-4). For resnet50 at batch 16 the peak RSS of our process and of the ORT
process (GNU time %M) is recorded too. --quick: resnet50, mobilenetv2, seed_cnn, one round, few runs.
Every side first makes --warmup untimed calls per batch (default 10), and more until its warm-up has
taken 100 ms; the timed calls are then at least --runs-b1 / --runs-big and at least as many as fill
100 ms at the warm-up's best call (the same rule on every side; bench_run takes it as SM_BENCH_WARM_MS /
SM_BENCH_MIN_MS): a seed-CNN call of ~50 us timed 10 times in a fresh process read 0.06 ms for ours
where 2,000 calls read 0.045, and ORT's 0.10-0.13 where 5,000 read 0.084 (2026-12-04). All three engines' first ~6
calls in a fresh process are slower than their steady state (oneDNN / MLAS primitive caches, page
faults on first-touch buffers, a thread pool's first wake-ups), and a served model runs steady state;
with 3 warm-ups (the default before 2026-12-03) batch-1 ratios read several percent off their
steady value (VGG16 b1: 0.99x in the row, 1.05x steady, in the same minutes; bench/RESULTS.md).

The python (--python, default BUILD/venv/bin/python, made by tools/venv.sh when missing) must have
tensorflow, tf2onnx and onnxruntime. Results are printed and appended to bench/RESULTS.md.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

APPS = {"mobilenetv2": ("MobileNetV2", 64), "resnet50": ("ResNet50", 64),
        "efficientnetb0": ("EfficientNetB0", 64), "vgg16": ("VGG16", 32), "densenet121": ("DenseNet121", 64)}
ORDER = ["mobilenetv2", "resnet50", "efficientnetb0", "vgg16", "densenet121", "transformer", "seed_cnn"]
QUICK = ["resnet50", "mobilenetv2", "seed_cnn"]
SEED_CNN = os.path.join(ROOT, "tests", "fixtures", "zoo", "keras_seed_cnn", "model")
TOL = 1e-4
TF_GOAL, ORT_GOAL, ORT_B1_CNN_GOAL = 1.5, 1.0, 1.5


# ---- child side (the venv's python): one JSON line on stdout -----------------------------------
def build_transformer(keras):
    def gelu(v):  # BERT's erf GELU spelt with Erf: Keras' "gelu" exports Erfc, which ORT lacks
        return 0.5 * v * (1.0 + keras.ops.erf(v * 0.7071067811865476))
    x = inp = keras.Input((128, 256), name="x")
    for _ in range(4):
        a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=64)(x, x)
        x = keras.layers.LayerNormalization(epsilon=1e-12)(keras.layers.Add()([x, a]))
        h = keras.layers.Dense(1024, activation=gelu)(x)
        h = keras.layers.Dense(256)(h)
        x = keras.layers.LayerNormalization(epsilon=1e-12)(keras.layers.Add()([x, h]))
    return keras.Model(inp, x)


def random_bn_stats(keras, model, seed=0):
    """BatchNormalization with random statistics (fresh layers are near-identities), so that folding
    and fusing them is exercised (logits, not softmax, out, so the comparison has a signal). Returns
    the numpy Generator, advanced past the draws (tools/sweep_apps.py draws its input from it)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization) and len(layer.get_weights()) == 4:
            g, b, m, v = layer.get_weights()
            layer.set_weights([rng.uniform(0.5, 1.5, g.shape).astype("float32"),
                               rng.normal(0, 0.1, b.shape).astype("float32"),
                               rng.normal(0, 0.1, m.shape).astype("float32"),
                               rng.uniform(0.5, 1.5, v.shape).astype("float32")])
    return rng


def child_export(name, out_dir, onnx_path):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    keras.utils.set_random_seed(0)
    if name == "transformer":
        model = build_transformer(keras)
    else:
        cls, size = APPS[name]
        model = getattr(keras.applications, cls)(weights=None, input_shape=(size, size, 3),
                                                 classifier_activation=None)
    random_bn_stats(keras, model)
    model.export(out_dir)
    return child_convert(out_dir, onnx_path)


def child_convert(model_dir, onnx_path):
    p = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", model_dir, "--tag", "serve",
                        "--signature_def", "serving_default", "--output", onnx_path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:])
        raise SystemExit("tf2onnx failed")
    return {"ok": 1}


WARM_MS = 100.0  # untimed calls go on until they have taken this long (after --warmup calls) ...
MIN_MS = 100.0   # ... and the timed calls fill at least this long at the warm-up's best call time


def _times(call, runs, warmup):
    """The same rule as bench_run's SM_BENCH_WARM_MS / SM_BENCH_MIN_MS, so every side is timed alike."""
    import time
    out, ts, best, r = None, [], 1e30, 0
    w0 = time.perf_counter()
    while r < warmup or (time.perf_counter() - w0) * 1e3 < WARM_MS:
        t0 = time.perf_counter()
        out = call()
        best = min(best, (time.perf_counter() - t0) * 1e3)
        r += 1
    runs = max(runs, min(100000, int(MIN_MS / best))) if best > 0 else runs
    for r in range(runs):
        t0 = time.perf_counter()
        out = call()
        ts.append((time.perf_counter() - t0) * 1e3)
    return out, ts


def child_tf(model_dir, batches, runs, warmup, npy_dir):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    from bench_runtime import pattern
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    fn = tf.saved_model.load(model_dir).signatures["serving_default"]
    (alias, spec), = fn.structured_input_signature[1].items()
    first = sorted(fn.structured_outputs)[0]
    res = {"version": tf.__version__}
    for b, n in zip(batches, runs):
        x = tf.constant(pattern([b if d is None else d for d in spec.shape.as_list()]))
        out, ts = _times(lambda: fn(**{alias: x}), n, warmup)
        np.save(os.path.join(npy_dir, "tf_%d.npy" % b), out[first].numpy())
        res[str(b)] = ts
    return res


def child_ort(onnx_path, batches, runs, warmup, npy_dir):
    import numpy as np
    import onnxruntime as ort
    from bench_runtime import pattern
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    outs = sorted(o.name for o in sess.get_outputs())[:1]
    res = {"version": ort.__version__}
    for b, n in zip(batches, runs):
        x = pattern([d if isinstance(d, int) else b for d in inp.shape])
        out, ts = _times(lambda: sess.run(outs, {inp.name: x}), n, warmup)
        np.save(os.path.join(npy_dir, "ort_%d.npy" % b), out[0])
        res[str(b)] = ts
    return res


def child_compare(npy_dir, batch):
    import numpy as np
    ref = np.load(os.path.join(npy_dir, "tf_%s.npy" % batch)).astype(np.float64)
    scale = max(float(np.abs(ref).max()), 1e-30)
    res = {}
    for side in ("ours", "ort"):
        path = os.path.join(npy_dir, "%s_%s" % (side, batch) + (".bin" if side == "ours" else ".npy"))
        if not os.path.exists(path):
            continue
        got = np.fromfile(path, np.float32) if side == "ours" else np.load(path)
        got = got.astype(np.float64).ravel()
        res[side] = float(np.abs(got - ref.ravel()).max() / scale) if got.size == ref.size else None
    return res


CHILD = {"export": lambda a: child_export(a[0], a[1], a[2]),
         "convert": lambda a: child_convert(a[0], a[1]),
         "tf": lambda a: child_tf(a[0], json.loads(a[1]), json.loads(a[2]), int(a[3]), a[4]),
         "ort": lambda a: child_ort(a[0], json.loads(a[1]), json.loads(a[2]), int(a[3]), a[4]),
         "compare": lambda a: child_compare(a[0], a[1])}


# ---- driver side -------------------------------------------------------------------------------
def child(py, what, *args):
    p = subprocess.run([py, os.path.abspath(__file__), "--child", what] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write("bench: child %s failed:\n%s\n" % (what, p.stderr[-3000:]))
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def prepare(args, name):
    """(saved model dir, onnx path or None), exporting / converting once."""
    d = os.path.join(args.cache, name)
    onnx = d + ".onnx"
    if name == "seed_cnn":
        if not os.path.exists(onnx):
            child(args.python, "convert", SEED_CNN, onnx)
        return SEED_CNN, onnx if os.path.exists(onnx) else None
    if not os.path.exists(os.path.join(d, "saved_model.pb")) or not os.path.exists(onnx):
        print("bench: exporting %s ..." % name, flush=True)
        child(args.python, "export", name, d, onnx)
    return (d if os.path.exists(os.path.join(d, "saved_model.pb")) else None), (onnx if os.path.exists(onnx) else None)


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else None


def bench_model(args, exe, name, work, rows, notes):
    from bench_runtime import run_measured
    model_dir, onnx = prepare(args, name)
    if not model_dir:
        notes.append("%s: export failed" % name)
        return
    batches = [1, 256] if name == "seed_cnn" else [1, 16]
    runs = [args.runs_b1 if b == 1 else args.runs_big for b in batches]
    npy = os.path.join(work, name)
    os.makedirs(npy, exist_ok=True)
    t = {s: {b: [] for b in batches} for s in ("tf", "ort", "ours")}
    ver, rss = {}, {}
    for rnd in range(args.rounds):
        print("bench: %s round %d: TF, ORT, ours ..." % (name, rnd + 1), flush=True)
        for side, path in (("tf", model_dir), ("ort", onnx)):
            r = child(args.python, side, path, json.dumps(batches), json.dumps(runs), args.warmup, npy) if path else None
            if r:
                ver[side] = r["version"]
                for b in batches:
                    t[side][b] += r[str(b)]
        for b, n in zip(batches, runs):
            cmd = [exe, model_dir, "serve", "serving_default", str(b), str(n), str(args.warmup), "2",
                   os.path.join(npy, "ours_%d.bin" % b)]
            _, kib, rc, out, err = run_measured(cmd)
            if rc != 0:
                notes.append("%s batch %d, ours: %s" % (name, b, (err.strip().splitlines() or ["?"])[-1][:300]))
                break
            rss.setdefault(b, kib)
            r = json.loads(out.strip().splitlines()[-1])
            t["ours"][b] += r["times_ms"]
    if name == "resnet50" and onnx and 16 in rss:
        # ORT's peak RSS in a process of its own (numpy + onnxruntime, no TensorFlow)
        _, ort_kib, rc, _, _ = run_measured([args.python, os.path.abspath(__file__), "--child", "ort", onnx,
                                             "[16]", "[3]", "1", npy])
        notes.append("resnet50 batch 16 peak RSS: ours %.0f MiB, ONNX Runtime %s (goal: ours <= ORT)"
                     % (rss[16] / 1024, "%.0f MiB" % (ort_kib / 1024) if rc == 0 else "n/a"))
    for b in batches:
        err = child(args.python, "compare", npy, b) or {}
        tf_ms, ort_ms, me = median(t["tf"][b]), median(t["ort"][b]), median(t["ours"][b])

        def ratio(x):
            return "%.2fx" % (x / me) if x and me else "n/a"

        def ms(x):
            return "%.2f" % x if x else "n/a"
        e = err.get("ours")
        ok = (me and tf_ms and ort_ms and tf_ms / me >= TF_GOAL and
              ort_ms / me >= (ORT_B1_CNN_GOAL if name == "seed_cnn" and b == 1 else ORT_GOAL))
        rows.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, b, ms(me), ms(tf_ms), ms(ort_ms), ratio(tf_ms), ratio(ort_ms),
            "%.1e" % e if e is not None else "n/a",
            "%.1e" % err["ort"] if err.get("ort") is not None else "n/a",
            "yes" if ok else "**no**"))
        if e is not None and e > TOL:
            notes.append("%s batch %d: **our output differs from TF's by %.2e of its scale**" % (name, b, e))
    notes.append("%s: TF %s, ORT %s" % (name, ver.get("tf", "failed"), ver.get("ort", "failed")))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(CHILD[sys.argv[2]](sys.argv[3:])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--python")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--models")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--runs-b1", type=int)
    ap.add_argument("--runs-big", type=int)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.cache = os.path.join(args.build, "bench-nets")
    os.makedirs(args.cache, exist_ok=True)
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    if not os.path.exists(args.python):
        subprocess.run([os.path.join(ROOT, "tools", "venv.sh"), os.path.dirname(os.path.dirname(args.python))],
                       check=True)
    models = args.models.split(",") if args.models else (QUICK if args.quick else ORDER)
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.runs_b1 = args.runs_b1 or (5 if args.quick else 10)
    args.runs_big = args.runs_big or (3 if args.quick else 5)
    os.environ["SM_BENCH_WARM_MS"] = str(WARM_MS)  # bench_run's side of _times' rule
    os.environ["SM_BENCH_MIN_MS"] = str(MIN_MS)
    from bench_runtime import build_driver
    import run as bench_run_py
    load0 = bench_run_py.loadavg()
    exe, why = build_driver(args.build)
    if not exe:
        raise SystemExit("bench: " + why)
    rows, notes = [], []
    work = tempfile.mkdtemp(prefix="bench-nets-")
    try:
        for name in models:
            bench_model(args, exe, name, work, rows, notes)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    date = subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M UTC"], stdout=subprocess.PIPE, text=True).stdout.strip()
    lines = ["", "## %s — real networks (bench/bench_nets.py)" % date, "",
             "- Command: `python3 %s`" % " ".join(shlex.quote(a) for a in sys.argv),
             "- Machine: %s; load average %s at the start, %s at the end"
             % (bench_run_py.machine(), load0, bench_run_py.loadavg()),
             "- Tree: git %s; %d round(s) interleaved, %d / %d timed calls per round at batch 1 / larger and "
             "at least %.0f ms of them, %d warm-up calls and at least %.0f ms of them; 2 threads each side; "
             "medians in ms per whole call"
             % (bench_run_py.git_rev(), args.rounds, args.runs_b1, args.runs_big, MIN_MS, args.warmup, WARM_MS), "",
             "| model | batch | ours ms | TF ms | ORT ms | TF/ours | ORT/ours | ours err | ORT err | goal met |",
             "|---|---|---|---|---|---|---|---|---|---|"] + rows + [""]
    lines += ["- Goals: TF/ours >= %.1fx and ORT/ours >= %.1fx on every row (seed_cnn batch 1: ORT/ours >= %.1fx); "
              "err = max |out - TF| / max |TF| of the first output (<= %.0e)" % (TF_GOAL, ORT_GOAL, ORT_B1_CNN_GOAL, TOL)]
    lines += ["- " + n for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(text)
        print("bench: appended to bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
