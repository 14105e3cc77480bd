#!/usr/bin/env python3
"""gap_calls.py - call times that a back-to-back loop hides: calls after an idle gap, and the first
calls of a fresh process (not a test).

  python3 bench/gap_calls.py --gap 0.08 [--calls 30] [--model resnet50] BIN|ort [BIN|ort ...]
  python3 bench/gap_calls.py --fresh 3:10 [--rounds 6] [--model resnet50] BIN|ort [...]

--gap S: each side is loaded once and warmed (10 calls), then makes CALLS single calls, each after
sleeping S seconds (bench_run with SM_BENCH_BURSTS=1 fed one call a line; ORT in a child doing the
same); per side the median and min ms and a few quantiles. A server between requests, or a side of
ab_bin.py --paired between its bursts, runs in this state: the pool's worker asleep, its vCPU
halted, the caches partly someone else's.

--fresh W:N: every round starts a fresh process per side (sides in turn) that makes W warm-up and
N timed calls, the way bench_nets.py times a row (its default is 3:10); per side the median of all
timed calls and its ratio to the first side's. The first calls of a process run with the weights
still coming from memory rather than the caches (bench/RESULTS.md session 15, h1).

A side is a bench_run binary (bench_runtime.build_driver; copy it away to compare builds), "ort"
(ONNX Runtime on MODEL.onnx, as bench_nets.py runs it), either with ",ENV=V,..." appended for
environment settings (e.g. build/bench/bench_run,SM_POOL_AVOID=0). 2 threads each.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import ab_bin  # noqa: E402  (its ORT child programs)

ORT_GAP = ab_bin.ORT_SESSION + r"""
for _ in range(10):
    sess.run(outs, {inp.name: x})
ts = []
for _ in range(%(calls)d):
    time.sleep(%(gap)r)
    t0 = time.perf_counter()
    sess.run(outs, {inp.name: x})
    ts.append((time.perf_counter() - t0) * 1e3)
print(json.dumps(ts))
"""


def split_side(side):
    name, *kvs = side.split(",")
    env = dict(os.environ)
    for kv in kvs:
        k, _, v = kv.partition("=")
        env[k] = v
    return name, env


def label(side):
    name, _, rest = side.partition(",")
    return (name if name == "ort" else os.path.basename(name)) + ("," + rest if rest else "")


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def gap_side(args, side):
    import time
    name, env = split_side(side)
    nets = os.path.join(args.build, "bench-nets")
    if name == "ort":
        code = ORT_GAP % {"bench": HERE, "threads": 2, "batch": 1, "onnx": os.path.join(nets, args.model + ".onnx"),
                          "calls": args.calls, "gap": args.gap}
        out = subprocess.run([args.python, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    env["SM_BENCH_BURSTS"] = "1"
    p = subprocess.Popen([name, os.path.join(nets, args.model), "serve", "serving_default", "1", "10", "0", "2"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    p.stdout.readline()  # the 10 warm-up calls' line
    ts = []
    for _ in range(args.calls):
        time.sleep(args.gap)
        p.stdin.write("1\n")
        p.stdin.flush()
        ts += json.loads(p.stdout.readline())
    p.stdin.write("0\n")
    p.stdin.close()
    p.wait()
    return ts


def fresh_side(args, side, warm, runs):
    name, env = split_side(side)
    nets = os.path.join(args.build, "bench-nets")
    if name == "ort":
        code = ab_bin.ORT % {"bench": HERE, "threads": 2, "onnx": os.path.join(nets, args.model + ".onnx"), "batch": 1,
                             "warmup": warm, "runs": runs}
        cmd = [args.python, "-c", code]
    else:
        cmd = [name, os.path.join(nets, args.model), "serve", "serving_default", "1", str(runs), str(warm), "2"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["times_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--gap", type=float, help="seconds of sleep before every call")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--fresh", help="W:N warm-up and timed calls per fresh process")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=None, help="Python with onnxruntime (default BUILD/venv/bin/python)")
    ap.add_argument("sides", nargs="+")
    args = ap.parse_args()
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    load0 = os.getloadavg()[0]
    if args.fresh:
        warm, runs = (int(v) for v in args.fresh.split(":"))
        allt = {s: [] for s in args.sides}
        for _ in range(args.rounds):
            for s in args.sides:
                allt[s] += fresh_side(args, s, warm, runs)
        print("%s b1, fresh processes, %d warm-up + %d timed calls, %d rounds, load %.2f -> %.2f" %
              (args.model, warm, runs, args.rounds, load0, os.getloadavg()[0]))
        base = median(allt[args.sides[0]])
        for s in args.sides:
            m = median(allt[s])
            print("  %s: median %.3f ms (%.3f of the first side), n=%d" % (label(s), m, m / base, len(allt[s])))
        return 0
    if args.gap is None:
        ap.error("--gap or --fresh")
    res = [(s, sorted(gap_side(args, s))) for s in args.sides]
    print("%s b1, %d calls each after %.3f s idle, load %.2f -> %.2f" %
          (args.model, args.calls, args.gap, load0, os.getloadavg()[0]))
    for s, ts in res:
        q = [ts[min(len(ts) - 1, int(f * len(ts)))] for f in (0.1, 0.25, 0.5, 0.75, 0.9)]
        print("  %s: median %.2f ms, min %.2f; quantiles 10/25/50/75/90%%: %s" %
              (label(s), median(ts), ts[0], " ".join("%.2f" % v for v in q)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
