#!/usr/bin/env python3
"""load_first.py - what a fresh process pays before its first answer: load (session creation) and
the first call, then the second call, per side, in fresh processes taken in turn (not a test).

  python3 bench/load_first.py [--models resnet50,mobilenetv2] [--rounds 5] [--batch 1] SIDE [SIDE ...]

A side is a bench_run binary (bench_runtime.build_driver; copy it away to compare builds) or "ort"
(ONNX Runtime on MODEL.onnx: InferenceSession creation is its load), either with ",ENV=V,..."
appended for environment settings (e.g. build/bench/bench_run,SM_LOAD_PRELOAD=0). 2 threads. Per
side and model the medians over the rounds of: load ms, first call ms, load + first call, second
call, and the process's whole wall time (exec to exit, interpreter start-up included for ORT).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import ab_bin  # noqa: E402
from ab_bin import median  # noqa: E402
from gap_calls import label, split_side  # noqa: E402

ORT = ab_bin.ORT_SESSION + r"""
ts = []
for r in range(2):
    t0 = time.perf_counter()
    sess.run(outs, {inp.name: x})
    ts.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"load_ms": load_ms, "times_ms": ts}))
"""


def one(args, side, model):
    name, env = split_side(side)
    nets = os.path.join(args.build, "bench-nets")
    if name == "ort":
        code = ORT % {"bench": HERE, "threads": 2, "onnx": os.path.join(nets, model + ".onnx"), "batch": args.batch}
        cmd = [args.python, "-c", code]
    else:
        cmd = [name, os.path.join(nets, model), "serve", "serving_default", str(args.batch), "2", "0", "2"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    wall = (time.perf_counter() - t0) * 1e3
    d = json.loads(out.strip().splitlines()[-1])
    t = d["times_ms"]
    return {"load": d["load_ms"], "first": t[0], "lf": d["load_ms"] + t[0], "second": t[1], "wall": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=None, help="Python with onnxruntime (default BUILD/venv/bin/python)")
    ap.add_argument("sides", nargs="+")
    args = ap.parse_args()
    args.python = args.python or os.path.join(args.build, "venv", "bin", "python")
    for model in args.models.split(","):
        load0 = os.getloadavg()[0]
        res = {s: [] for s in args.sides}
        for _ in range(args.rounds):
            for s in args.sides:
                res[s].append(one(args, s, model))
        print("%s b%d, %d rounds, load %.2f -> %.2f; medians, ms: load / first call / load+first / second call / "
              "process wall" % (model, args.batch, args.rounds, load0, os.getloadavg()[0]))
        for s in args.sides:
            m = {k: median([r[k] for r in res[s]]) for k in ("load", "first", "lf", "second", "wall")}
            print("  %-28s %8.1f %8.1f %8.1f %7.2f %8.1f" % (label(s), m["load"], m["first"], m["lf"], m["second"],
                                                               m["wall"]))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
