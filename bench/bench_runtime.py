#!/usr/bin/env python3
"""bench/bench_runtime.py - the runtime against TensorFlow and ONNX Runtime, in one run (not a test).

  python3 bench/bench_runtime.py [--build build] [--python build/venv/bin/python] [--only cli|cnn]
                                 [--shared ../shared] [--no-record]

(a) Cold CLI: `savedmodel run` of half_plus_two (../shared/fixtures/tf-serving/
    saved_model_half_plus_two_cpu) against `saved_model_cli run` with the same flags, each a fresh
    process: wall time (median) and peak RSS (GNU time's %M for that child; see run_measured).
    Goals: at least 500x faster, peak RSS at most 1/50 of TensorFlow's.
(b) The seed CNN (tests/fixtures/zoo/keras_seed_cnn: Conv2D(32,3,relu), MaxPooling2D(2), Flatten,
    Dense(64,relu), Dense(10) on 28x28x1) at batch 1 and 256: a loaded TensorFlow signature call
    (tf.saved_model.load + .signatures["serving_default"]), ONNX Runtime on the tf2onnx conversion,
    and ours (bench/bench_run.c: sm_model_load once, sm_model_run N times). Every side gets the
    same input and must give the same output sum. Goals: batch 1 at least 5x faster than TF and
    1.5x faster than ONNX Runtime; batch 256 at least TF's and ONNX Runtime's throughput.

bench_run.c is compiled here with `cc -O2` against BUILD/libsavedmodel.a (no CMake target). The
TensorFlow and ONNX Runtime halves run in child processes with --python (the venv made by
tools/venv.sh, which installs tf2onnx and onnxruntime). When BUILD/savedmodel has no `run` command
or the library cannot load the model, our half is reported as not available and the other halves
still run. Results are printed and appended to bench/RESULTS.md with the date, machine and command.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

CLI_SPEED_GOAL = 500.0   # TF wall / ours, at least
RSS_GOAL = 50.0          # TF peak RSS / ours, at least
B1_TF_GOAL = 5.0         # TF latency / ours at batch 1, at least
B1_ORT_GOAL = 1.5        # ORT latency / ours at batch 1, at least
B256_GOAL = 1.0          # our throughput / theirs at batch 256, at least

CNN_DIR = os.path.join(ROOT, "tests", "fixtures", "zoo", "keras_seed_cnn", "model")
HPT_REL = os.path.join("fixtures", "tf-serving", "saved_model_half_plus_two_cpu", "00000123")
HPT_EXPR = "x=[[1.0],[2.0],[5.0]]"


def pattern(shape):
    """The input every side gets: element i = ((i * 37) % 101) / 101 - 0.5 (as bench_run.c)."""
    import numpy as np
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    return (((i * 37) % 101).astype(np.float32) / np.float32(101.0) - np.float32(0.5)).reshape(shape)


def timed(call, batch, runs, warmup):
    times = []
    out = None
    for r in range(warmup + runs):
        t0 = time.perf_counter()
        out = call()
        dt = time.perf_counter() - t0
        if r >= warmup:
            times.append(dt)
    mean = sum(times) / len(times)
    times.sort()
    med = times[len(times) // 2]
    return out, {"best_ms": times[0] * 1e3, "median_ms": med * 1e3, "mean_ms": mean * 1e3,
                 "runs": runs, "batch": batch, "throughput": batch / med}


# ---------------------------------------------------------------------------------------------
# Child side (the venv's python): one JSON line on stdout.


def child_tf_cnn(model_dir, batch, runs, warmup):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    t0 = time.perf_counter()
    fn = tf.saved_model.load(model_dir).signatures["serving_default"]
    load_ms = (time.perf_counter() - t0) * 1e3
    (alias, spec), = fn.structured_input_signature[1].items()
    shape = [batch if d is None else d for d in spec.shape.as_list()]
    x = tf.constant(pattern(shape))
    first = sorted(fn.structured_outputs)[0]
    out, r = timed(lambda: fn(**{alias: x}), batch, runs, warmup)
    r.update(load_ms=load_ms, sum=float(out[first].numpy().astype("float64").sum()),
             version=tf.__version__, threads="intra %d inter %d (0 = all cores)"
             % (tf.config.threading.get_intra_op_parallelism_threads(),
                tf.config.threading.get_inter_op_parallelism_threads()))
    return r


def child_onnx_convert(model_dir, out_path):
    """tf2onnx's command line on the SavedModel; returns its versions."""
    p = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", model_dir, "--tag",
                        "serve", "--signature_def", "serving_default", "--output", out_path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:])
        raise SystemExit("tf2onnx failed")
    import tf2onnx
    return {"tf2onnx": tf2onnx.__version__}


def child_ort_cnn(onnx_path, batch, runs, warmup):
    import onnxruntime as ort
    t0 = time.perf_counter()
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1e3
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else batch for d in inp.shape]
    x = pattern(shape)
    outs = sorted(o.name for o in sess.get_outputs())
    out, r = timed(lambda: sess.run(outs[:1], {inp.name: x}), batch, runs, warmup)
    r.update(load_ms=load_ms, sum=float(out[0].astype("float64").sum()), version=ort.__version__)
    return r


CHILD = {"tf-cnn": lambda a: child_tf_cnn(a[0], int(a[1]), int(a[2]), int(a[3])),
         "onnx-convert": lambda a: child_onnx_convert(a[0], a[1]),
         "ort-cnn": lambda a: child_ort_cnn(a[0], int(a[1]), int(a[2]), int(a[3]))}

# ---------------------------------------------------------------------------------------------
# Driver side.


def child(py, what, *args):
    cmd = [py, os.path.abspath(__file__), "--child", what] + [str(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def build_driver(build):
    if os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.run(["cmake", "--build", build, "--target", "savedmodel_static", "savedmodel", "-j",
                        str(os.cpu_count() or 2)], stdout=subprocess.DEVNULL, check=False)
    lib = os.path.join(build, "libsavedmodel.a")
    if not os.path.exists(lib):
        return None, "%s missing" % lib
    out = os.path.join(build, "bench", "bench_run")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    pc = subprocess.run(["pkg-config", "--libs", "libprotobuf-c", "openblas", "zlib"],
                        stdout=subprocess.PIPE, text=True).stdout.split()
    cmd = [os.environ.get("CC", "cc"), "-std=c11", "-O2", "-Wall", "-Wextra", "-Wshadow", "-Wmissing-prototypes",
           "-Werror", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-I" + os.path.join(ROOT, "include"),
           os.path.join(HERE, "bench_run.c"), lib] + pc + ["-lsnappy", "-lpthread", "-lm", "-o", out]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        return None, "bench_run.c does not build: " + p.stdout.strip()[-600:]
    return out, None


def run_timed(cmd):
    """Runs cmd as a child with posix_spawn; returns (wall seconds, rc, stdout, stderr).

    The wall time runs from the spawn to wait4's return, with nothing else in between: a
    Popen through /usr/bin/time costs ~15-20 ms more here (/bin/true measured 22 ms that way
    and 7 ms this way on this VM), which is more than our whole cold run."""
    exe = shutil.which(cmd[0]) or cmd[0]
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        acts = [(os.POSIX_SPAWN_DUP2, fo.fileno(), 1), (os.POSIX_SPAWN_DUP2, fe.fileno(), 2)]
        t0 = time.perf_counter()
        pid = os.posix_spawn(exe, list(cmd), os.environ, file_actions=acts)
        _, status = os.waitpid(pid, 0)
        wall = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        return wall, os.waitstatus_to_exitcode(status), fo.read().decode(errors="replace"), \
            fe.read().decode(errors="replace")


def run_measured(cmd, cwd=None):
    """Runs cmd as a child; returns (wall seconds, peak RSS KiB, rc, stdout, stderr).

    Peak RSS comes from /usr/bin/time (GNU time, Debian's `time`), not from our own wait4: Linux
    counts a child's peak from the address space it had before exec, and subprocess starts
    children with vfork, so wait4's ru_maxrss of any child is at least this Python process's own
    peak (/bin/true reads ~14 MiB that way). time is a small C program, so its floor is ~1 MiB.
    The wall time here includes time's own fork and exec and Popen's set-up; bench_cli times
    with run_timed and uses this for the peak RSS."""
    timer = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe, \
            tempfile.NamedTemporaryFile(mode="r") as fr:
        full = [timer, "-f", "%M", "-o", fr.name] + list(cmd) if timer else cmd
        t0 = time.perf_counter()
        p = subprocess.Popen(full, stdout=fo, stderr=fe, cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        rss = ru.ru_maxrss
        if timer:
            lines = [l.strip() for l in fr.read().splitlines() if l.strip()]
            if lines and lines[-1].isdigit():
                rss = int(lines[-1])
        return wall, rss, p.returncode, fo.read().decode(errors="replace"), \
            fe.read().decode(errors="replace")


def saved_model_cli(py):
    exe = os.path.join(os.path.dirname(py), "saved_model_cli")
    return [exe] if os.path.exists(exe) else [py, "-m", "tensorflow.python.tools.saved_model_cli"]


def result_block(text):
    i = text.find("Result for output key")
    return text[i:].strip() if i >= 0 else ""


def bench_cli(args, rows, notes, goals):
    d = os.path.join(args.shared, HPT_REL)
    if not os.path.isdir(d):
        notes.append("Cold CLI: skipped, %s absent" % d)
        return
    flags = ["run", "--dir", d, "--tag_set", "serve", "--signature_def", "serving_default",
             "--input_exprs", HPT_EXPR]
    env_note = "TF_CPP_MIN_LOG_LEVEL unset (TF's defaults)"
    print("bench: saved_model_cli run x %d ..." % args.tf_cli_runs, flush=True)
    tf_runs = [run_timed(saved_model_cli(args.python) + flags) for _ in range(args.tf_cli_runs)]
    tf_mem = run_measured(saved_model_cli(args.python) + flags)
    if any(r[1] != 0 for r in tf_runs) or tf_mem[2] != 0:
        notes.append("Cold CLI: saved_model_cli failed: " + (tf_runs[0][3] or tf_mem[4])[-400:])
        return
    tf_wall = sorted(r[0] for r in tf_runs)[len(tf_runs) // 2]
    tf_rss = tf_mem[1]
    rows.append(("TensorFlow `saved_model_cli run` half_plus_two, median of %d" % len(tf_runs),
                 "%.0f ms, peak RSS %.0f MiB" % (tf_wall * 1e3, tf_rss / 1024), "", ""))
    cli = os.path.join(args.build, "savedmodel")
    probe = run_measured([cli] + flags) if os.path.exists(cli) else (0, 0, 1, "", "no CLI at " + cli)
    if probe[2] != 0:
        why = (probe[4] or probe[3]).strip().splitlines()
        notes.append("Cold CLI, ours: not available (`savedmodel run` exited %d: %s)"
                     % (probe[2], why[-1] if why else "?"))
        goals["cli speed"] = goals["cli rss"] = None
        return
    print("bench: savedmodel run x %d ..." % args.cli_runs, flush=True)
    ours = [run_timed([cli] + flags) for _ in range(args.cli_runs)]
    mem = [run_measured([cli] + flags) for _ in range(3)]
    if any(r[1] != 0 for r in ours) or any(r[2] != 0 for r in mem):
        notes.append("Cold CLI, ours: a run failed: " + (ours[0][3] + mem[0][4])[-400:])
        goals["cli speed"] = goals["cli rss"] = None
        return
    same = result_block(ours[0][2]) == result_block(tf_runs[0][2])
    wall = sorted(r[0] for r in ours)[len(ours) // 2]
    rss = max(r[1] for r in mem)
    speed, rss_ratio = tf_wall / wall, tf_rss / rss
    goals["cli speed"] = speed >= CLI_SPEED_GOAL
    goals["cli rss"] = rss_ratio >= RSS_GOAL
    rows += [
        ("libsavedmodel `savedmodel run` half_plus_two, median of %d" % len(ours),
         "%.2f ms, peak RSS %.1f MiB" % (wall * 1e3, rss / 1024), "", ""),
        ("**cold CLI speed, TF / ours**", "%.0fx" % speed, ">= %.0fx" % CLI_SPEED_GOAL,
         "yes" if goals["cli speed"] else "**no**"),
        ("**peak RSS, TF / ours**", "%.0fx" % rss_ratio, ">= %.0fx" % RSS_GOAL,
         "yes" if goals["cli rss"] else "**no**"),
    ]
    notes.append("Cold CLI: `%s` (both tools, same flags; fresh process each run, wall time from "
                 "posix_spawn to wait4; peak RSS = /usr/bin/time %%M, in separate runs: 1 of TF's, 3 of ours); %s; stdout "
                 "result blocks %s." % (" ".join(shlex.quote(f) for f in flags).replace(d, "HPT"),
                                        env_note, "identical" if same else "**differ**"))


def bench_cnn(args, work, rows, notes, goals):
    if not os.path.isdir(CNN_DIR):
        notes.append("CNN: skipped, %s absent" % CNN_DIR)
        return
    onnx_path = os.path.join(work, "seed_cnn.onnx")
    print("bench: tf2onnx ...", flush=True)
    conv = child(args.python, "onnx-convert", CNN_DIR, onnx_path)
    exe, why = build_driver(args.build)
    if exe is None:
        notes.append("CNN, ours: not available (%s)" % why)
    for batch in args.batches:
        runs = args.runs_b1 if batch == 1 else args.runs_big
        print("bench: CNN batch %d: TensorFlow, ONNX Runtime, ours ..." % batch, flush=True)
        tfr = child(args.python, "tf-cnn", CNN_DIR, batch, runs, args.warmup)
        ort = child(args.python, "ort-cnn", onnx_path, batch, runs, args.warmup) if conv else None
        me = None
        if exe:
            p = subprocess.run([exe, CNN_DIR, "serve", "serving_default", str(batch), str(runs),
                                str(args.warmup)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            if p.returncode == 0:
                me = json.loads(p.stdout.strip().splitlines()[-1])
            else:
                notes.append("CNN batch %d, ours: not available (%s)"
                             % (batch, p.stderr.strip().splitlines()[-1][:300] if p.stderr.strip() else "?"))

        def fig(r):
            return ("%.3f ms/call (best %.3f), %.0f examples/s"
                    % (r["median_ms"], r["best_ms"], r["throughput"])) if r else "n/a"
        rows.append(("CNN batch %d: TensorFlow %s, loaded signature call, median of %d"
                     % (batch, tfr["version"] if tfr else "?", runs), fig(tfr), "", ""))
        rows.append(("CNN batch %d: ONNX Runtime %s (tf2onnx %s)"
                     % (batch, ort["version"] if ort else "?", conv["tf2onnx"] if conv else "failed"),
                     fig(ort), "", ""))
        rows.append(("CNN batch %d: libsavedmodel sm_model_run" % batch, fig(me), "", ""))
        sums = {k: r["sum"] for k, r in (("tf", tfr), ("ort", ort), ("ours", me)) if r}
        if "tf" in sums:
            ref = sums["tf"]
            bad = [k for k, v in sums.items() if abs(v - ref) > 1e-3 * max(1.0, abs(ref))]
            notes.append("CNN batch %d output sums: %s%s" % (
                batch, ", ".join("%s %.6g" % kv for kv in sums.items()),
                " — **disagree: %s**" % bad if bad else " (agree)"))
        if batch == 1:
            for name, other, goal in (("TF", tfr, B1_TF_GOAL), ("ONNX Runtime", ort, B1_ORT_GOAL)):
                if other and me:
                    ratio = other["median_ms"] / me["median_ms"]
                    ok = ratio >= goal
                    goals["b1 vs " + name] = ok
                    rows.append(("**batch 1 latency, %s / ours**" % name, "%.2fx" % ratio,
                                 ">= %.1fx" % goal, "yes" if ok else "**no**"))
                else:
                    goals["b1 vs " + name] = None
        else:
            for name, other in (("TF", tfr), ("ONNX Runtime", ort)):
                if other and me:
                    ratio = me["throughput"] / other["throughput"]
                    ok = ratio >= B256_GOAL
                    goals["b%d vs %s" % (batch, name)] = ok
                    rows.append(("**batch %d throughput, ours / %s**" % (batch, name), "%.2fx" % ratio,
                                 ">= %.1fx" % B256_GOAL, "yes" if ok else "**no**"))
                else:
                    goals["b%d vs %s" % (batch, name)] = None
    if tfr:
        notes.append("TensorFlow threads: %s; ONNX Runtime: default session options (all cores); "
                     "ours: sm_load_options.num_threads = 0 (one per core). Warm-up %d calls "
                     "before timing; latency is per whole call (input already built, output "
                     "produced)." % (tfr["threads"], args.warmup))


def record(args, rows, notes, goals, load0):
    import run as bench_run_py  # machine(), loadavg(), git_rev() of bench/run.py
    date = subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M UTC"], stdout=subprocess.PIPE,
                          text=True).stdout.strip()
    met = [v for v in goals.values() if v is not None]
    missing = [k for k, v in goals.items() if v is None]
    verdict = "yes" if met and all(met) and not missing else "**no**"
    lines = ["", "## %s — runtime (bench/bench_runtime.py)" % date, "",
             "- Command: `python3 %s`" % " ".join(shlex.quote(a) for a in sys.argv),
             "- Machine: %s; load average %s at the start, %s at the end"
             % (bench_run_py.machine(), load0, bench_run_py.loadavg()),
             "- Tree: git %s, bench_run built with `%s -O2`" % (bench_run_py.git_rev(),
                                                                os.environ.get("CC", "cc")),
             "", "| Figure | Value | Goal | Met |", "|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s |" % r for r in rows]
    lines += [""] + ["- " + n for n in notes]
    if missing:
        lines.append("- Not measured (our side not available): %s" % ", ".join(missing))
    lines.append("- All runtime goals met: %s" % verdict)
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
    ap.add_argument("--python", help="python with tensorflow, tf2onnx, onnxruntime "
                                     "(default BUILD/venv/bin/python)")
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--only", choices=["cli", "cnn"])
    ap.add_argument("--batches", default="1,256")
    ap.add_argument("--runs-b1", type=int, default=200)
    ap.add_argument("--runs-big", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cli-runs", type=int, default=20)
    ap.add_argument("--tf-cli-runs", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.batches = [int(b) for b in args.batches.split(",")]
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    if not os.path.exists(args.python):
        raise SystemExit("bench: no python at %s; run tools/venv.sh or pass --python" % args.python)
    import run as bench_run_py
    load0 = bench_run_py.loadavg()
    rows, notes, goals = [], [], {}
    work = tempfile.mkdtemp(prefix="bench-rt-")
    try:
        if args.only in (None, "cli"):
            bench_cli(args, rows, notes, goals)
        if args.only in (None, "cnn"):
            bench_cnn(args, work, rows, notes, goals)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record(args, rows, notes, goals, load0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
