#!/usr/bin/env python3
"""bench/bench_loops.py - loops (While over TensorLists) against TensorFlow, in one run (not a test).

  python3 bench/bench_loops.py [--build build] [--python build/venv/bin/python] [--rounds 3]
                               [--only lstm|while] [--no-record] [--ab]

(a) A Keras 3 `LSTM(128)` over sequences of 50 steps of 32 features (Input((50, 32)), exported with
    model.export: a While loop over TensorLists), at batch 1 and 32.
(b) A tf.function `tf.while_loop` of 1,000 small steps on a [4] vector
    (x = tanh(0.9 x + 0.1 i / 1000)), saved with tf.saved_model.save.

TensorFlow makes both models in a child process (--python, the venv with TF 2.21). Each case runs
ours (bench/bench_run.c, built by bench_runtime.build_driver: sm_model_load once, then whole
sm_model_run calls) and TensorFlow (tf.saved_model.load + its signature, called the same way) on the
same input pattern, alternating ours / TF for --rounds rounds so both see the same machine load;
each round reports the median of RUNS calls after WARMUP untimed ones, and the figure is the median
of the round medians. Our first output of the last call is compared element by element with
TensorFlow's (max |ours - TF| <= 1e-5 x max(1, max |TF|)). Goal: TF latency / ours >= 1.5x on every
case. Results are printed and appended to bench/RESULTS.md with the date, machine and load.
--ab adds, in every round, a run of ours with SM_LOOP_HOIST=0 (without the While kernel's hoist
of the body's input projection, src/ops/control_hoist.c): its A/B on the same load.
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

import bench_runtime as br  # noqa: E402  (pattern, timed, build_driver)

GOAL = 1.5       # TF latency / ours, at least
SEQ, FEAT, UNITS, STEPS = 50, 32, 128, 1000


# ---------------------------------------------------------------------------------------------
# Child side (the venv's python): one JSON line on stdout.


def child_make(work):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import keras
    keras.utils.set_random_seed(14)
    m = keras.Sequential([keras.Input((SEQ, FEAT)), keras.layers.LSTM(UNITS)])
    m.export(os.path.join(work, "lstm"), verbose=False)

    class Loop(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([4], tf.float32, name="x")])
        def run(self, x):
            def body(i, v):
                return i + 1, tf.tanh(0.9 * v + 0.1 * tf.cast(i, tf.float32) / STEPS)
            _, y = tf.while_loop(lambda i, v: i < STEPS, body, (tf.constant(0), x))
            return {"y": y}

    loop = Loop()
    tf.saved_model.save(loop, os.path.join(work, "while"), signatures={"serving_default": loop.run})
    return {"tensorflow": tf.__version__, "keras": keras.__version__}


def child_tf(model_dir, key, batch, runs, warmup, ours_file):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    fn = tf.saved_model.load(model_dir).signatures[key]
    (alias, spec), = fn.structured_input_signature[1].items()
    shape = [batch if d is None and i == 0 else (1 if d is None else d)
             for i, d in enumerate(spec.shape.as_list())]
    x = tf.constant(br.pattern(shape))
    first = sorted(fn.structured_outputs)[0]
    out, r = br.timed(lambda: fn(**{alias: x}), batch, runs, warmup)
    ref = out[first].numpy().astype(np.float32).ravel()
    r["sum"] = float(ref.astype("float64").sum())
    r["version"] = tf.__version__
    if ours_file and os.path.exists(ours_file):
        ours = np.fromfile(ours_file, dtype=np.float32)
        if ours.size != ref.size:
            r["diff"] = "size %d vs TF's %d" % (ours.size, ref.size)
        else:
            d = float(np.max(np.abs(ours - ref))) if ref.size else 0.0
            scale = max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
            r["max_abs_diff"], r["equal"] = d, d <= 1e-5 * scale
    return r


CHILD = {"make": lambda a: child_make(a[0]),
         "tf": lambda a: child_tf(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), a[5])}


# ---------------------------------------------------------------------------------------------
# Driver side.


def child(py, what, *args):
    cmd = [py, os.path.abspath(__file__), "--child", what] + [str(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def bench_case(args, exe, name, model_dir, key, batch, runs, work, rows, notes, goals):
    import run as bench_run_py
    ours_file = os.path.join(work, "ours.f32")
    ours_m, tf_m, loads, last_tf, err = [], [], [], None, None
    plain_m = []  # --ab: ours with SM_LOOP_HOIST=0 (the While body's input projection not hoisted)
    for rnd in range(args.rounds):
        loads.append(bench_run_py.loadavg().split()[0])
        print("bench: %s round %d/%d: ours, TensorFlow ..." % (name, rnd + 1, args.rounds), flush=True)
        if exe and err is None:
            p = subprocess.run([exe, model_dir, "serve", key, str(batch), str(runs), str(args.warmup),
                                "0", ours_file], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.returncode == 0:
                ours_m.append(json.loads(p.stdout.strip().splitlines()[-1])["median_ms"])
            else:
                err = p.stderr.strip().splitlines()[-1][:300] if p.stderr.strip() else "rc %d" % p.returncode
        if exe and err is None and args.ab:
            p = subprocess.run([exe, model_dir, "serve", key, str(batch), str(runs), str(args.warmup), "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, SM_LOOP_HOIST="0"))
            if p.returncode == 0:
                plain_m.append(json.loads(p.stdout.strip().splitlines()[-1])["median_ms"])
        r = child(args.python, "tf", model_dir, key, batch, runs, args.warmup,
                  ours_file if (rnd == 0 and ours_m) else "")
        if r:
            tf_m.append(r["median_ms"])
            if rnd == 0:
                last_tf = r
    mo, mt = median(ours_m), median(tf_m)

    def fig(ms, per):
        return ("%.3f ms/call (round medians %s)" % (ms, ", ".join("%.3f" % v for v in per))) if ms else "n/a"
    rows.append(("%s: TensorFlow %s, loaded signature call, median of %d x %d rounds"
                 % (name, last_tf["version"] if last_tf else "?", runs, args.rounds), fig(mt, tf_m), "", ""))
    rows.append(("%s: libsavedmodel sm_model_run" % name, fig(mo, ours_m), "", ""))
    if plain_m:
        rows.append(("%s: libsavedmodel, SM_LOOP_HOIST=0 (A/B, same rounds)" % name,
                     fig(median(plain_m), plain_m), "", ""))
    if err:
        notes.append("%s, ours: not available (%s)" % (name, err))
    if last_tf and "max_abs_diff" in last_tf:
        ok = last_tf["equal"]
        notes.append("%s: first output, max |ours - TF| = %.3g (%s)" % (
            name, last_tf["max_abs_diff"], "equal within 1e-5 x scale" if ok else "**differ**"))
        if not ok:
            goals[name] = False
    elif last_tf and "diff" in last_tf:
        notes.append("%s: outputs **differ**: %s" % (name, last_tf["diff"]))
        goals[name] = False
    notes.append("%s: 1-minute load average at the start of each round: %s" % (name, ", ".join(loads)))
    if mo and mt:
        ratio = mt / mo
        goals.setdefault(name, ratio >= GOAL)
        goals[name] = goals[name] and ratio >= GOAL
        rows.append(("**%s, TF / ours**" % name, "%.2fx" % ratio, ">= %.1fx" % GOAL,
                     "yes" if goals[name] else "**no**"))
    else:
        goals[name] = None


def record(args, rows, notes, goals, load0, versions):
    import run as bench_run_py
    date = subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M UTC"], stdout=subprocess.PIPE,
                          text=True).stdout.strip()
    met = [v for v in goals.values() if v is not None]
    missing = [k for k, v in goals.items() if v is None]
    verdict = "yes" if met and all(met) and not missing else "**no**"
    lines = ["", "## %s — loops (bench/bench_loops.py)" % date, "",
             "- Command: `python3 %s`" % " ".join(shlex.quote(a) for a in sys.argv),
             "- Machine: %s; load average %s at the start, %s at the end"
             % (bench_run_py.machine(), load0, bench_run_py.loadavg()),
             "- Tree: git %s, bench_run built with `%s -O2`; models made by TensorFlow %s, Keras %s"
             % (bench_run_py.git_rev(), os.environ.get("CC", "cc"), versions.get("tensorflow", "?"),
                versions.get("keras", "?")),
             "- Models: Keras `Sequential([Input((%d, %d)), LSTM(%d)])` via model.export; tf.function "
             "`tf.while_loop` of %d steps on a [4] vector (x = tanh(0.9 x + 0.1 i / %d)) via "
             "tf.saved_model.save" % (SEQ, FEAT, UNITS, STEPS, STEPS),
             "", "| Figure | Value | Goal | Met |", "|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s |" % r for r in rows]
    lines += [""] + ["- " + n for n in notes]
    lines.append("- TensorFlow: default threads; ours: num_threads 0 (one per core). Warm-up %d calls "
                 "before timing each round; latency is per whole call (input built, output produced); "
                 "ours and TF alternate, one process each per round." % args.warmup)
    if missing:
        lines.append("- Not measured (a side not available): %s" % ", ".join(missing))
    lines.append("- All loop goals met: %s" % verdict)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(text)
        print("bench: appended to bench/RESULTS.md")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(CHILD[sys.argv[2]](sys.argv[3:])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--python", help="python with tensorflow (default BUILD/venv/bin/python)")
    ap.add_argument("--only", choices=["lstm", "while"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs-lstm", type=int, default=100)
    ap.add_argument("--runs-while", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--keep", help="make the models in this directory and keep them")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--ab", action="store_true",
                    help="also run ours with SM_LOOP_HOIST=0 in every round (the While hoist's A/B)")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    if not os.path.exists(args.python):
        raise SystemExit("bench: no python at %s; run tools/venv.sh or pass --python" % args.python)
    import run as bench_run_py
    load0 = bench_run_py.loadavg()
    rows, notes, goals = [], [], {}
    work = args.keep or tempfile.mkdtemp(prefix="bench-loops-")
    os.makedirs(work, exist_ok=True)
    try:
        print("bench: making the models with TensorFlow ...", flush=True)
        versions = child(args.python, "make", work)
        if versions is None:
            raise SystemExit("bench: TensorFlow could not make the models")
        exe, why = br.build_driver(args.build)
        if exe is None:
            notes.append("ours: not available (%s)" % why)
        if args.only in (None, "lstm"):
            for batch in (1, 32):
                bench_case(args, exe, "LSTM(128) seq 50 batch %d" % batch, os.path.join(work, "lstm"),
                           "serving_default", batch, args.runs_lstm, work, rows, notes, goals)
        if args.only in (None, "while"):
            bench_case(args, exe, "tf.while_loop 1,000 steps", os.path.join(work, "while"),
                       "serving_default", 1, args.runs_while, work, rows, notes, goals)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    record(args, rows, notes, goals, load0, versions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
