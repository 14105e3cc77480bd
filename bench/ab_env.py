#!/usr/bin/env python3
"""bench/ab_env.py - A/B of environment settings on the bench_nets models, ours only (not a test).

  python3 bench/ab_env.py [--rounds 2] [--rows mobilenetv2:1:200,resnet50:1:60,...] SETTING [SETTING ...]

Each SETTING is "-" (the defaults) or "NAME=VALUE[,NAME=VALUE...]" (e.g. SM_NN_PAR_MIN_MACS=262144,
SM_DNNL_SPLIT=rows, SM_POOL_SPIN_US=0). For every round, row and setting in turn (so a change in the
machine's load hits all settings alike) it runs build/bench/bench_run on build/bench-nets/MODEL at
BATCH for RUNS calls after 3 warm-up ones on 2 threads, and prints each setting's median ms per
round. The models are bench_nets.py's exports (run that once first).
"""
import argparse
import json
import os
import statistics
import subprocess

ROWS = "mobilenetv2:1:200,mobilenetv2:16:40,resnet50:1:60,efficientnetb0:1:100,efficientnetb0:16:30," \
       "vgg16:1:40,transformer:1:40,densenet121:1:60"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rows", default=ROWS)
    ap.add_argument("settings", nargs="+")
    a = ap.parse_args()
    rows = [(m, int(b), int(n)) for m, b, n in (r.split(":") for r in a.rows.split(","))]
    res = {}
    for _ in range(a.rounds):
        for m, b, n in rows:
            for s in a.settings:
                env = dict(os.environ)
                if s != "-":
                    for kv in s.split(","):
                        k, v = kv.split("=", 1)
                        env[k] = v
                cmd = [os.path.join(a.build, "bench", "bench_run"), os.path.join(a.build, "bench-nets", m), "serve",
                       "serving_default", str(b), str(n), "3", "2"]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
                t = json.loads(out.strip().splitlines()[-1])["times_ms"]
                res.setdefault((m, b, s), []).append(statistics.median(t))
    for m, b, _ in rows:
        print(f"{m:15s} {b:3d} " + "  ".join(f"[{s}] " + "/".join(f"{x:.2f}" for x in res[(m, b, s)])
                                             for s in a.settings))


if __name__ == "__main__":
    main()
