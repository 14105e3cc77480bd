#!/usr/bin/env python3
"""bench/bench_train.py - `savedmodel train` against Keras on TensorFlow's CPU build, one run (not a test).

  python3 bench/bench_train.py [--build build] [--python build/venv/bin/python] [--data DIR]
                               [--limit 10000] [--epochs 2] [--threads 2] [--no-record]

The seeds' CNN - Conv2D(32, 3, relu), MaxPooling2D(2), Flatten, Dense(64, relu), Dense(10) - with
Adam (Keras's defaults) and sparse categorical cross-entropy from logits, batch size 32, shuffled,
on the first --limit Fashion-MNIST training images (IDX files of --data, read by both sides from
the same files and scaled by 1/255), for --epochs epochs, then evaluated on the 10,000 test images.
Both sides get the same threads: ours --num_threads T, TensorFlow intra-op T and inter-op 1.

Seconds per epoch: Keras's from on_epoch_begin/on_epoch_end; ours from when `savedmodel train`
prints "Epoch k/N" (before the epoch's first step) to when its final progress line for that epoch
arrives on the pipe. The last epoch is the steady-state figure (TensorFlow traces its train step in
the first). Peak memory: ru_maxrss of each child process (os.wait4), everything it did included -
ours also exports the SavedModel. Goal (issue #5): at least 1.5x faster per epoch than Keras.
Results are printed and appended to bench/RESULTS.md with the date, machine, load and command.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

SPEED_GOAL = 1.5  # Keras seconds per epoch / ours, at least
FASHION = "/usr/share/datasets/fashion-mnist"


# ---------------------------------------------------------------------------------------------
# Keras side: runs in the child process (the venv's python), one JSON line on stdout.

def read_idx(path):
    import gzip
    import numpy as np
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def find(data_dir, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    raise SystemExit("bench: no %s[.gz] in %s" % (stem, data_dir))


def load_data(data_dir, limit, threads, seed):
    """TensorFlow set to `threads` intra-op threads and seeded; the first `limit` training images and
    all test images, scaled to [0, 1], NHWC."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(seed)
    x = read_idx(find(data_dir, "train-images-idx3-ubyte"))[:limit]
    y = read_idx(find(data_dir, "train-labels-idx1-ubyte"))[:limit].astype(np.int32)
    xt = read_idx(find(data_dir, "t10k-images-idx3-ubyte"))
    yt = read_idx(find(data_dir, "t10k-labels-idx1-ubyte")).astype(np.int32)
    return (x / 255.0).astype(np.float32)[..., None], y, (xt / 255.0).astype(np.float32)[..., None], yt


def fit_timed(model, x, y, xt, yt, epochs):
    """Compiles with Adam and sparse CE from logits, fits (batch 32, shuffled) timing each epoch,
    evaluates on the test split."""
    import tensorflow as tf
    model.compile(optimizer=tf.keras.optimizers.Adam(),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    times = []

    class Timer(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.t0)

    h = model.fit(x, y, batch_size=32, epochs=epochs, shuffle=True, verbose=0, callbacks=[Timer()])
    _, acc = model.evaluate(xt, yt, batch_size=32, verbose=0)
    return {"tensorflow": tf.__version__, "epoch_s": times, "loss": [float(v) for v in h.history["loss"]],
            "test_accuracy": float(acc)}


def keras_child(data_dir, limit, epochs, threads, seed):
    x, y, xt, yt = load_data(data_dir, limit, threads, seed)
    import tensorflow as tf
    model = tf.keras.Sequential([
        tf.keras.Input((x.shape[1], x.shape[2], 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    return fit_timed(model, x, y, xt, yt, epochs)


# ---------------------------------------------------------------------------------------------
# Driver side.

def run_child(cmd, on_line=None):
    """Runs cmd, feeding each stdout line (with its arrival time) to on_line; returns
    (returncode, stdout text, stderr text, peak RSS in MiB, wall seconds)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    out = []
    for line in p.stdout:
        if on_line:
            on_line(line.rstrip("\n"), time.perf_counter())
        out.append(line)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, "".join(out), err, ru.ru_maxrss / 1024.0, time.perf_counter() - t0


def ours(args, work, extra=()):
    """`savedmodel train` (with the extra flags, e.g. --model) timed per epoch from its output."""
    out_dir = os.path.join(work, "export")
    cmd = [os.path.join(args.build, "savedmodel"), "train", "--data", args.data, "--epochs", str(args.epochs),
           "--batch_size", "32", "--limit", str(args.limit), "--num_threads", str(args.threads),
           "--seed", str(args.seed), "--out", out_dir] + list(extra)
    starts, ends, losses = {}, {}, {}
    bar = re.compile(r"^\s*(\d+)/(\d+) \[=+\] - .* - loss: ([0-9.e+-]+)")
    cur = [0]

    def on_line(line, t):
        m = re.match(r"^Epoch (\d+)/\d+$", line)
        if m:
            cur[0] = int(m.group(1))
            starts[cur[0]] = t
            return
        m = bar.match(line)
        if m and m.group(1) == m.group(2):
            ends[cur[0]] = t
            losses[cur[0]] = float(m.group(3))

    rc, out, err, rss, wall = run_child(cmd, on_line)
    if rc != 0:
        raise SystemExit("bench: %s failed (exit %d): %s" % (" ".join(cmd), rc, err[-2000:]))
    acc = re.search(r"^test accuracy: ([0-9.]+)$", out, re.M)
    epochs = sorted(ends)
    return {"epoch_s": [ends[e] - starts[e] for e in epochs], "loss": [losses[e] for e in epochs],
            "test_accuracy": float(acc.group(1)), "rss_mib": rss, "wall_s": wall, "cmd": cmd, "export": out_dir}


def keras(args):
    cmd = [args.python, os.path.abspath(__file__), "--child", args.data, str(args.limit), str(args.epochs),
           str(args.threads), str(args.seed)]
    rc, out, err, rss, wall = run_child(cmd)
    if rc != 0:
        raise SystemExit("bench: the Keras run failed (exit %d): %s" % (rc, err[-3000:]))
    r = json.loads(out.strip().splitlines()[-1])
    r.update(rss_mib=rss, wall_s=wall)
    return r


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        a = sys.argv[2:]
        print(json.dumps(keras_child(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="CMake build dir with the savedmodel CLI (default build)")
    ap.add_argument("--python", help="python with tensorflow (default BUILD/venv/bin/python)")
    ap.add_argument("--data", default=FASHION, help="MNIST-format directory (default %s)" % FASHION)
    ap.add_argument("--limit", type=int, default=10000, help="training images (default 10000; 60000 = all)")
    ap.add_argument("--epochs", type=int, default=2, help="epochs (default 2; the last one is the figure)")
    ap.add_argument("--threads", type=int, default=2, help="threads on both sides (default 2)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--no-record", action="store_true", help="print only; do not touch RESULTS.md")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    if not os.path.exists(args.python):
        raise SystemExit("bench: no python at %s; run tools/venv.sh %s/venv or pass --python" % (args.python, args.build))
    if not os.path.exists(os.path.join(args.build, "savedmodel")):
        raise SystemExit("bench: no %s/savedmodel; build first (make BUILD=...)" % args.build)
    import run as bench_run  # machine(), loadavg(), git_rev() of bench/run.py
    load0 = bench_run.loadavg()
    work = tempfile.mkdtemp(prefix="bench-train-", dir=args.build)
    try:
        print("bench: savedmodel train, %d images x %d epochs, %d threads ..." % (args.limit, args.epochs, args.threads),
              flush=True)
        me = ours(args, work)
        print("bench: Keras, the same ...", flush=True)
        tf = keras(args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratio = tf["epoch_s"][-1] / me["epoch_s"][-1]
    steps = (args.limit + 31) // 32
    fmt = lambda v: ", ".join("%.2f" % x for x in v)
    rows = [
        ("TensorFlow %s Keras fit, seconds per epoch (epochs 1..%d)" % (tf["tensorflow"], args.epochs),
         "%s s (%.1f ms/step last)" % (fmt(tf["epoch_s"]), tf["epoch_s"][-1] / steps * 1e3), "", ""),
        ("libsavedmodel `savedmodel train`, seconds per epoch", "%s s (%.1f ms/step last)"
         % (fmt(me["epoch_s"]), me["epoch_s"][-1] / steps * 1e3), "", ""),
        ("**time per epoch, Keras / ours (last epoch)**", "%.2fx" % ratio, ">= %.1fx" % SPEED_GOAL,
         "yes" if ratio >= SPEED_GOAL else "**no**"),
        ("peak RSS: Keras process / `savedmodel train`", "%.0f MiB / %.0f MiB (%.1fx)"
         % (tf["rss_mib"], me["rss_mib"], tf["rss_mib"] / me["rss_mib"]), "", ""),
        ("training loss per epoch: Keras / ours", "%s / %s" % (fmt(tf["loss"]), fmt(me["loss"])), "", ""),
        ("test accuracy (10,000 images): Keras / ours", "%.4f / %.4f" % (tf["test_accuracy"], me["test_accuracy"]),
         "", ""),
        ("whole process wall time: Keras / ours", "%.1f s / %.1f s" % (tf["wall_s"], me["wall_s"]), "", ""),
    ]
    notes = [
        "Both: the seeds' CNN, Adam defaults, sparse CE from logits, batch 32, shuffled, first %d training "
        "images of %s, %d epochs, then evaluate on the test split; %d threads (TF intra-op %d, inter-op 1; ours "
        "--num_threads %d). Ours: `%s`." % (args.limit, args.data, args.epochs, args.threads, args.threads,
                                            args.threads, " ".join(shlex.quote(c) for c in me["cmd"][1:])),
        "Peak RSS is ru_maxrss of each child: Keras's includes Python and TensorFlow; ours includes loading all "
        "60,000 + 10,000 images as float32 and writing the export. Keras does not export.",
    ]
    record("training (bench/bench_train.py)", rows, notes, load0, args.no_record)
    return 0


def record(title, rows, notes, load0, no_record):
    """Prints the run's section (title, command, machine and load, tree, the rows as a table, the
    notes) and appends it to bench/RESULTS.md unless no_record."""
    import run as bench_run
    date = subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M UTC"], stdout=subprocess.PIPE, text=True).stdout.strip()
    lines = ["", "## %s — %s" % (date, title), "",
             "- Command: `python3 %s`" % " ".join(shlex.quote(a) for a in sys.argv),
             "- Machine: %s; load average %s at the start, %s at the end" % (bench_run.machine(), load0,
                                                                              bench_run.loadavg()),
             "- Tree: git %s" % bench_run.git_rev(),
             "", "| Figure | Value | Goal | Met |", "|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s |" % r for r in rows]
    lines += [""] + ["- " + n for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    if not no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(text)
        print("bench: appended to bench/RESULTS.md")


if __name__ == "__main__":
    sys.exit(main())
