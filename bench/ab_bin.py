#!/usr/bin/env python3
"""ab_bin.py - wall-clock A/B of bench_run binaries (two builds of the library), and ONNX Runtime,
interleaved (not a test).

  python3 bench/ab_bin.py [--rounds 4] [--rows resnet50:1:300] [--threads 2] BIN|ort [BIN|ort ...]

For every round, row and side in turn (so a change in the machine's load hits every side alike)
it runs BIN MODEL_DIR serve serving_default BATCH RUNS WARMUP THREADS (build/bench/bench_run, or a
copy of one built on another tree: bench_runtime.build_driver, then copy it away), or for "ort"
ONNX Runtime on MODEL.onnx the way bench_nets.py does (intra-op THREADS, inter-op 1, the same input),
and prints per round each side's median and best ms per call, then per side the median of the
round medians and the best best. The load average is printed with each round: on a shared
machine only rounds of similar load compare. The models are bench_nets.py's exports.

--paired BURSTS:CALLS (one row): every side is loaded and kept for BURSTS / --procs turns (bench_run with
SM_BENCH_BURSTS=1, ORT in a child reading the same counts), and the sides take turns running CALLS
calls, BURSTS times each (the order rotated every turn), so that neighbouring bursts see the same
load; printed per side: the median and best of all its calls, and against the first side the
median over turns of the ratio of burst medians (side / first: under 1 is faster), with its
quartiles, and the same for the bursts' best calls (the least disturbed one of each burst). Each
side is loaded --procs times in turn (fresh processes): one process of a binary can run a few
percent faster or slower than another of the same binary for the whole of its life. --gap MS sleeps
MS milliseconds after every burst: ONNX Runtime's pool keeps a thread polling ~25 ms after a call
(its CPU time over a 100 ms sleep after a call: ~27 ms, bench/RESULTS.md session 15, h1), so without
a gap the side that follows ORT starts its burst sharing a vCPU with that poll (ResNet50 b1: our
first call of a burst ~9-10 ms after ORT's burst, ~6.4 with a 50 ms gap; ORT's ~6.2-6.9 either
way, since our pool polls 100 us).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The ORT child programs' common start (also gap_calls.py's and load_first.py's): a session as
# bench_nets.py makes it (intra-op THREADS, inter-op 1), its creation time in load_ms, the first
# output's name and the input pattern at BATCH.
ORT_SESSION = r"""
import json, sys, time
sys.path.insert(0, %(bench)r)
import onnxruntime as ort
from bench_runtime import pattern
so = ort.SessionOptions()
so.intra_op_num_threads = %(threads)d
so.inter_op_num_threads = 1
t0 = time.perf_counter()
sess = ort.InferenceSession(%(onnx)r, so, providers=["CPUExecutionProvider"])
load_ms = (time.perf_counter() - t0) * 1e3
inp = sess.get_inputs()[0]
outs = sorted(o.name for o in sess.get_outputs())[:1]
x = pattern([d if isinstance(d, int) else %(batch)d for d in inp.shape])
"""

ORT = ORT_SESSION + r"""ts = []
for r in range(%(warmup)d + %(runs)d):
    t0 = time.perf_counter()
    sess.run(outs, {inp.name: x})
    if r >= %(warmup)d:
        ts.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"times_ms": ts}))
"""


ORT_BURSTS = ORT.replace('print(json.dumps({"times_ms": ts}))', 'print(json.dumps({"times_ms": ts}), flush=True)') + r"""
for line in sys.stdin:
    n = int(line)
    if n <= 0:
        break
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        sess.run(outs, {inp.name: x})
        ts.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps(ts), flush=True)
"""


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def one(side, args, model, batch, runs):
    nets = os.path.join(args.build, "bench-nets")
    if side == "ort":
        code = ORT % {"bench": os.path.join(ROOT, "bench"), "threads": args.threads,
                      "onnx": os.path.join(nets, model + ".onnx"), "batch": batch, "warmup": args.warmup, "runs": runs}
        cmd = [args.python, "-c", code]
    else:
        cmd = [side, os.path.join(nets, model), "serve", "serving_default", str(batch), str(runs), str(args.warmup),
               str(args.threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    ts = json.loads(out.strip().splitlines()[-1])["times_ms"]
    return median(ts), min(ts)


def paired(args, sides):
    model, batch, _ = args.rows_parsed[0]
    nb, calls = (int(v) for v in args.paired.split(":"))
    nets = os.path.join(args.build, "bench-nets")
    allt = [[] for _ in sides]
    ratios = [[] for _ in sides]
    mratios = [[] for _ in sides]  # the same for the bursts' best calls (the least disturbed)
    load0 = os.getloadavg()[0]
    for blk in range(args.procs):  # fresh processes per block: a process's own luck (its pages) averages out
        paired_block(args, sides, model, batch, nets, nb // args.procs, calls, allt, ratios, mratios)
    print("%s b%d, %d threads, %d turns of %d calls per side (%d processes each), load %.2f -> %.2f" %
          (model, batch, args.threads, nb // args.procs * args.procs, calls, args.procs, load0, os.getloadavg()[0]))
    for i, side in enumerate(sides):
        r, mr = sorted(ratios[i]), sorted(mratios[i])
        print("  %s: median %.3f ms, best %.3f ms; to %s: burst-median ratio %.3f (quartiles %.3f %.3f), "
              "burst-best ratio %.3f (quartiles %.3f %.3f)" %
              (side if side == "ort" else os.path.basename(side), median(allt[i]), min(allt[i]),
               os.path.basename(sides[0]), median(r), r[len(r) // 4], r[(3 * len(r)) // 4], median(mr),
               mr[len(mr) // 4], mr[(3 * len(mr)) // 4]))


def paired_block(args, sides, model, batch, nets, nb, calls, allt, ratios, mratios):
    procs = []
    for side in sides:
        if side == "ort":
            code = (ORT_BURSTS % {"bench": os.path.join(ROOT, "bench"), "threads": args.threads,
                                  "onnx": os.path.join(nets, model + ".onnx"), "batch": batch,
                                  "warmup": args.warmup, "runs": 1})
            cmd, env = [args.python, "-c", code], os.environ
        else:
            cmd = [side, os.path.join(nets, model), "serve", "serving_default", str(batch), "1", str(args.warmup),
                   str(args.threads)]
            env = dict(os.environ, SM_BENCH_BURSTS="1")
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        p.stdout.readline()  # the first call's line
        procs.append(p)
    for k in range(nb):
        meds = [None] * len(sides)
        mins = [None] * len(sides)
        for j in range(len(sides)):
            i = (j + k) % len(sides)
            procs[i].stdin.write("%d\n" % calls)
            procs[i].stdin.flush()
            ts = json.loads(procs[i].stdout.readline())
            if args.gap > 0:
                time.sleep(args.gap / 1e3)
            allt[i] += ts
            meds[i] = median(ts)
            mins[i] = min(ts)
        for i in range(len(sides)):
            ratios[i].append(meds[i] / meds[0])
            mratios[i].append(mins[i] / mins[0])
    for p in procs:
        p.stdin.close()
        p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rows", default="resnet50:1:300", help="MODEL:BATCH:RUNS[,...]")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=None, help="Python with onnxruntime (default BUILD/venv/bin/python)")
    ap.add_argument("--paired", default=None, help="BURSTS:CALLS, alternating bursts of loaded processes")
    ap.add_argument("--gap", type=float, default=0, help="--paired: ms to sleep after every burst")
    ap.add_argument("--procs", type=int, default=4, help="--paired: processes per side, one after the other")
    ap.add_argument("sides", nargs="+", help="bench_run binaries, or ort")
    args = ap.parse_args()
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    rows = [(m, int(b), int(n)) for m, b, n in (r.split(":") for r in args.rows.split(","))]
    if args.paired:
        args.rows_parsed = rows
        return paired(args, args.sides)
    res = {}
    for rnd in range(args.rounds):
        for model, batch, runs in rows:
            cells = []
            for side in args.sides:
                med, best = one(side, args, model, batch, runs)
                res.setdefault((model, batch, side), []).append((med, best))
                cells.append("%s %.3f / %.3f" % (side if side == "ort" else os.path.basename(side), med, best))
            print("round %d %s b%d (load %.2f): %s" % (rnd + 1, model, batch, os.getloadavg()[0], " | ".join(cells)),
                  flush=True)
    for model, batch, _ in rows:
        print("%s b%d, median of round medians / best ms:" % (model, batch))
        for side in args.sides:
            v = res[(model, batch, side)]
            print("  %s: %.3f / %.3f  (round medians %s)" % (side, median([m for m, _ in v]), min(b for _, b in v),
                                                              " ".join("%.3f" % m for m, _ in v)))


if __name__ == "__main__":
    sys.exit(main())
