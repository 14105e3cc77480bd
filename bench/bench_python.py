#!/usr/bin/env python3
"""bench/bench_python.py - time to first answer from Python: `import savedmodel; savedmodel.load();
first call` against `import tensorflow; tf.saved_model.load(); first call` (not a test).

  python3 bench/bench_python.py [--build build] [--python build/venv/bin/python] [--runs 5] [--no-record]

Each measurement is a fresh interpreter (--python, the venv with TensorFlow 2.21, for both sides so
that numpy and the interpreter cost the same; ours imports python/savedmodel from the source tree
with SAVEDMODEL_LIBRARY=BUILD/libsavedmodel.so). The child times import, load and the first
signature call with time.perf_counter from its first line; the parent also times the whole
process (interpreter start and exit included). Ours and TF alternate, --runs times each; figures
are medians. Models: half_plus_two (../shared/fixtures/tf-serving, TF1, x[3,1]) when present and
the seed CNN (tests/fixtures/zoo/keras_seed_cnn, x[1,28,28,1]). The first outputs of both must
agree (1e-5 relative). Printed and appended to bench/RESULTS.md with the date and load average.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r'''
import time; t0 = time.perf_counter()
import json, sys, numpy as np
side, path, key, shape = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
x = (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7) / 7
t_np = time.perf_counter()
if side == "ours":
    import savedmodel
    t1 = time.perf_counter()
    m = savedmodel.load(path, ["serve"])
    t2 = time.perf_counter()
    sig = m.signatures[key]
    out = sig(**{next(iter(sig.inputs)): x})
else:
    import os; os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    t1 = time.perf_counter()
    m = tf.saved_model.load(path, tags=["serve"])
    t2 = time.perf_counter()
    sig = m.signatures[key]
    _, spec = sig.structured_input_signature
    out = {k: v.numpy() for k, v in sig(**{next(iter(spec)): tf.constant(x)}).items()}
t3 = time.perf_counter()
first = sorted(out)[0]
print(json.dumps({"import": t1 - t_np, "load": t2 - t1, "first_call": t3 - t2, "total": t3 - t0,
                  "output": np.asarray(out[first], np.float64).ravel()[:64].tolist()}))
'''


def one(python, side, path, key, shape, build):
    env = dict(os.environ, SAVEDMODEL_LIBRARY=os.path.join(build, "libsavedmodel.so"),
               PYTHONPATH=os.path.join(ROOT, "python"), TF_CPP_MIN_LOG_LEVEL="3")
    t = time.perf_counter()
    r = subprocess.run([python, "-c", CHILD, side, path, key, json.dumps(shape)], capture_output=True, text=True,
                       env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench_python: {side} on {path} failed:\n{r.stderr[-2000:]}")
    d = json.loads(r.stdout.strip().splitlines()[-1])
    d["process"] = wall
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=os.path.join(ROOT, "build", "venv", "bin", "python"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    models = []
    hp2 = os.path.join(os.path.dirname(ROOT), "shared", "fixtures", "tf-serving",
                       "saved_model_half_plus_two_cpu", "00000123")
    if os.path.isdir(hp2):
        models.append(("half_plus_two (TF1)", hp2, "serving_default", [3, 1]))
    else:
        print(f"skipped: {hp2} absent")
    models.append(("seed CNN (Keras 3)", os.path.join(ROOT, "tests", "fixtures", "zoo", "keras_seed_cnn", "model"),
                   "serving_default", [1, 28, 28, 1]))
    rows, notes = [], []
    for label, path, key, shape in models:
        res = {"ours": [], "tf": []}
        loads = []
        for _ in range(a.runs):
            loads.append(os.getloadavg()[0])
            for side in ("ours", "tf"):
                res[side].append(one(a.python, side, path, key, shape, build))
        o, t = res["ours"][-1]["output"], res["tf"][-1]["output"]
        diff = max(abs(p - q) for p, q in zip(o, t)) if o else 0.0
        scale = max([1.0] + [abs(q) for q in t])
        if len(o) != len(t) or diff > 1e-5 * scale:
            sys.exit(f"bench_python: {label}: outputs differ (max |ours - TF| = {diff})")
        med = {s: {k: statistics.median(r[k] for r in res[s]) for k in ("import", "load", "first_call", "total",
                                                                       "process")} for s in res}
        for s, name in (("ours", "import savedmodel"), ("tf", "import tensorflow")):
            m = med[s]
            rows.append(f"| {label}: {name} | {m['import'] * 1e3:.0f} | {m['load'] * 1e3:.1f} | "
                        f"{m['first_call'] * 1e3:.1f} | {m['total'] * 1e3:.0f} | {m['process'] * 1e3:.0f} |")
        rows.append(f"| **{label}: TF / ours** | {med['tf']['import'] / med['ours']['import']:.0f}x | "
                    f"{med['tf']['load'] / med['ours']['load']:.0f}x | "
                    f"{med['tf']['first_call'] / med['ours']['first_call']:.0f}x | "
                    f"**{med['tf']['total'] / med['ours']['total']:.0f}x** | "
                    f"{med['tf']['process'] / med['ours']['process']:.0f}x |")
        notes.append(f"- {label}: first output max |ours - TF| = {diff:.3g}; 1-minute load average before "
                     f"each run: {', '.join(f'{x:.2f}' for x in loads)}")
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join([
        f"## {now} — Python: import + load + first call (bench/bench_python.py)", "",
        f"`{os.path.relpath(a.python, ROOT) if a.python.startswith(ROOT) else a.python} bench/bench_python.py "
        f"--runs {a.runs}` (git {rev}, {os.cpu_count()} cores). Medians of {a.runs} fresh interpreters per side, "
        "alternating; ms. import: the package (numpy already imported); total: from the child's first line "
        "to the first output as numpy; process: the whole subprocess, interpreter start and exit included.", "",
        "| case | import | load | first call | total | process |", "|---|---|---|---|---|---|", *rows, "",
        *notes, ""])
    print(text)
    if not a.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
