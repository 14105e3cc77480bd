#!/usr/bin/env python3
"""bench/bench_cpu.py - CPU time per call, ours vs TensorFlow, on bench_nets.py's models (not a test).

  python3 bench/bench_cpu.py [--build build] [--python PY] [--models resnet50,mobilenetv2]
                             [--batch 16] [--runs 10] [--rounds 2]

Wall-clock time on a shared machine is mostly the CPU share a process gets; the CPU time a call
costs moves far less with the load, so it is what tells whether our kernels do less work than
TensorFlow's. For each model (exported by bench_nets.py into BUILD/bench-nets/NAME, which must exist)
and each round, in turn: TensorFlow (PY: a loaded signature called with intra-op 2, inter-op 1
threads, 3 warm-up calls, then RUNS calls timed with time.process_time) and ours (bench_run's cpu_ms:
clock_gettime(CLOCK_PROCESS_CPUTIME_ID) around each call, 2 threads). Prints one line per round and
the medians, with the load average; records nothing.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

TF_CHILD = r'''
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)
f = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
name, spec = list(f.structured_input_signature[1].items())[0]
shape = [int(sys.argv[2])] + list(spec.shape[1:])
n = int(np.prod(shape))
x = tf.constant(((np.arange(n) * 37) % 101 / 101.0 - 0.5).astype(np.float32).reshape(shape))
for _ in range(3):
    f(**{name: x})
runs = int(sys.argv[3])
c0 = time.process_time()
for _ in range(runs):
    f(**{name: x})
print('{"cpu_ms": %.4f}' % ((time.process_time() - c0) / runs * 1e3))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--python")
    ap.add_argument("--models", default="resnet50,mobilenetv2")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    py = a.python or os.path.join(a.build, "venv", "bin", "python")
    import bench_runtime as br
    exe, err = br.build_driver(a.build)
    if not exe:
        raise SystemExit("bench_cpu: " + err)
    for name in a.models.split(","):
        d = os.path.join(a.build, "bench-nets", name)
        if not os.path.exists(os.path.join(d, "saved_model.pb")):
            print("bench_cpu: %s not exported (run bench_nets.py first)" % name)
            continue
        tf_ms, ours_ms = [], []
        for r in range(a.rounds):
            p = subprocess.run([py, "-c", TF_CHILD, d, str(a.batch), str(a.runs)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                raise SystemExit("bench_cpu: TensorFlow failed:\n" + p.stderr[-2000:])
            tf_ms.append(json.loads(p.stdout.strip().splitlines()[-1])["cpu_ms"])
            p = subprocess.run([exe, d, "serve", "serving_default", str(a.batch), str(a.runs), "3", "2"],
                               stdout=subprocess.PIPE, text=True)
            ours_ms.append(json.loads(p.stdout.strip().splitlines()[-1])["cpu_ms"])
            print("%s b%d round %d: TF %.1f ms CPU/call, ours %.1f (load %s)" % (
                name, a.batch, r + 1, tf_ms[-1], ours_ms[-1], " ".join(open("/proc/loadavg").read().split()[:3])),
                flush=True)
        t, o = statistics.median(tf_ms), statistics.median(ours_ms)
        print("%s b%d: TF %.1f, ours %.1f ms CPU per call (medians): TF/ours %.2fx" % (name, a.batch, t, o, t / o))


if __name__ == "__main__":
    main()
