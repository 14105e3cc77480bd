#!/usr/bin/env python3
"""bench_cudnn_rnn.py - one Keras 3 model (Input (50, 32) -> LSTM(128, return_sequences) -> GRU(128)
-> Dense(10)) exported twice: as a CPU machine exports it (While loops of the cells) and as a GPU
machine does (CudnnRNNV3, the GRU gates swapped as the CUDA build swaps them; traced with
tools/gen_cudnn_rnn_cases.py's gpu_trace). Times ours on both (build/bench/bench_run, the same
input pattern) and TensorFlow on the CPU export (TF's CPU build has no kernel for the other),
interleaved, and checks both of ours against the model's own CPU answer.

  flock -x /tmp/bench.lock build/venv/bin/python bench/bench_cudnn_rnn.py [--batch 8] [--runs 40] [--rounds 3]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="/tmp/bench_cudnn_rnn")
    a = ap.parse_args()
    import numpy as np
    import tensorflow as tf
    import keras
    import gen_cudnn_rnn_cases as gc
    from bench_runtime import build_driver, pattern
    keras.utils.set_random_seed(7)
    inp = keras.Input((50, 32), name="x")
    s = keras.layers.LSTM(128, return_sequences=True)(inp)
    s = keras.layers.GRU(128)(s)
    m = keras.Model(inp, keras.layers.Dense(10)(s))
    dirs = {"cpu": os.path.join(a.out, "cpu"), "cudnn": os.path.join(a.out, "cudnn")}
    shutil.rmtree(a.out, ignore_errors=True)
    m.export(dirs["cpu"])
    with gc.gpu_trace():
        m.export(dirs["cudnn"])
    x = pattern((a.batch, 50, 32))
    want = m(x).numpy()
    np.save(os.path.join(a.out, "x.npy"), x)
    drv, err = build_driver(os.path.join(ROOT, "build"))
    if err:
        sys.exit(err)
    cli = os.path.join(ROOT, "build", "savedmodel")
    for k, d in dirs.items():
        o = os.path.join(a.out, "out_" + k)
        subprocess.run([cli, "run", "--dir", d, "--tag_set", "serve", "--signature_def", "serving_default",
                        "--inputs", "x=" + os.path.join(a.out, "x.npy"), "--outdir", o, "--overwrite"],
                       check=True, stdout=subprocess.DEVNULL)
        got = np.load(os.path.join(o, "output_0.npy"))
        print("%s: max |ours - keras cpu| / max |keras| = %.2e" % (k, np.abs(got - want).max() / np.abs(want).max()))
    f = tf.saved_model.load(dirs["cpu"]).signatures["serving_default"]
    xt = tf.constant(x)
    rows = {"ours cudnn export": [], "ours cpu export": [], "tf cpu export": []}
    for _ in range(a.rounds):
        for k in ("cudnn", "cpu"):
            r = subprocess.run([drv, dirs[k], "serve", "serving_default", str(a.batch), str(a.runs), str(a.warmup), "2"],
                               stdout=subprocess.PIPE, text=True, check=True)
            rows["ours %s export" % k].append(json.loads(r.stdout)["median_ms"])
        for _ in range(a.warmup):
            f(x=xt)
        ts = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            [v.numpy() for v in f(x=xt).values()]
            ts.append((time.perf_counter() - t0) * 1e3)
        rows["tf cpu export"].append(float(np.median(ts)))
    for k, v in rows.items():
        print("%-18s median of medians %.2f ms  (rounds: %s)" % (k, float(np.median(v)), ", ".join("%.2f" % t for t in v)))


if __name__ == "__main__":
    main()
