#!/usr/bin/env python3
"""bench/ab_env.py - A/B of environment settings on the bench_nets models, ours only (not a test).

  python3 bench/ab_env.py [--rounds 2] [--rows mobilenetv2:1:200,resnet50:1:60,...] [--threads 2]
                          [--warmup 3] [--profile] [--top 8] SETTING [SETTING ...]

Each SETTING is "-" (the defaults) or "NAME=VALUE[,NAME=VALUE...]" (e.g. SM_NN_PAR_MIN_MACS=262144,
SM_DNNL_SPLIT=rows, SM_POOL_SPIN_US=0, SM_THREADS=1 is not a setting: use --threads). For every
round, row and setting in turn (so a change in the machine's load hits all settings alike) it runs
build/bench/bench_run on build/bench-nets/MODEL at BATCH for RUNS calls after --warmup ones on
--threads threads, and prints each setting's median ms per round, with the 1-minute load average
read after each run. The models are bench_nets.py's exports (run that once first).

--profile also sets SM_STEP_PROFILE (runtime/step_profile.c) for every run and prints, per row and
setting, the best call of all rounds, the sum over the model's steps of each step's minimum over all
rounds ("steps"), the executor's own minimum per call ("outside"), and the --top op types by their
summed step minima. On this shared 2-vCPU VM the medians move several-fold with the other sessions'
load; the minima move far less, and are the figures to compare (bench/RESULTS.md, sessions 19-21).
Only steps of the serving plan that ran at least RUNS times count (not the restore plan's).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROWS = "mobilenetv2:1:200,mobilenetv2:16:40,resnet50:1:60,efficientnetb0:1:100,efficientnetb0:16:30," \
       "vgg16:1:40,transformer:1:40,densenet121:1:60"


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def read_profile(path, runs, mins, outside):
    """Folds one SM_STEP_PROFILE file into mins[(step, op, node)] and outside[0] (minima, us)."""
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                w = line.split()
                if "outside_min_us" in w and int(w[w.index("runs") + 1]) >= runs:
                    v = float(w[w.index("outside_min_us") + 1])
                    outside[0] = min(outside[0], v)
                continue
            c = line.rstrip("\n").split("\t")
            if len(c) < 7 or int(c[3]) < runs:
                continue
            k = (int(c[0]), c[1], c[2])
            mins[k] = min(mins.get(k, float("inf")), float(c[5]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rows", default=ROWS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("settings", nargs="+")
    a = ap.parse_args()
    rows = [(m, int(b), int(n)) for m, b, n in (r.split(":") for r in a.rows.split(","))]
    res, best, mins, outside = {}, {}, {}, {}
    tmp = tempfile.mkdtemp(prefix="ab_env.")
    for _ in range(a.rounds):
        for m, b, n in rows:
            for i, s in enumerate(a.settings):
                env = dict(os.environ)
                env.pop("SM_STEP_PROFILE", None)
                if s != "-":
                    for kv in s.split(","):
                        k, v = kv.split("=", 1)
                        env[k] = v
                prof = os.path.join(tmp, "p%d.tsv" % i)
                if a.profile:
                    env["SM_STEP_PROFILE"] = prof
                cmd = [os.path.join(a.build, "bench", "bench_run"), os.path.join(a.build, "bench-nets", m), "serve",
                       "serving_default", str(b), str(n), str(a.warmup), str(a.threads)]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
                t = json.loads(out.strip().splitlines()[-1])["times_ms"]
                key = (m, b, s)
                res.setdefault(key, []).append((statistics.median(t), load1()))
                best[key] = min(best.get(key, float("inf")), min(t))
                if a.profile and os.path.exists(prof):
                    o = outside.setdefault(key, [float("inf")])
                    read_profile(prof, n, mins.setdefault(key, {}), o)
                    os.remove(prof)
    for m, b, _ in rows:
        print(f"{m:15s} {b:3d} " + "  ".join(f"[{s}] " + "/".join(f"{x:.2f}" for x, _ in res[(m, b, s)])
                                             for s in a.settings))
        print(f"{'':15s} load " + "  ".join(f"[{s}] " + "/".join(f"{l:.1f}" for _, l in res[(m, b, s)])
                                             for s in a.settings))
        if not a.profile:
            continue
        for s in a.settings:
            d = mins.get((m, b, s), {})
            byop = {}
            for (_, op, _), v in d.items():
                byop[op] = byop.get(op, 0.0) + v
            tops = sorted(byop.items(), key=lambda kv: -kv[1])[:a.top]
            print(f"  [{s}] best {best[(m, b, s)]:.3f} ms, steps {sum(d.values()):.1f} us ({len(d)}), "
                  f"outside {outside.get((m, b, s), [float('nan')])[0]:.1f} us; "
                  + ", ".join(f"{op} {v:.0f}" for op, v in tops))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
