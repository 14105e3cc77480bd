#!/usr/bin/env python3
"""bench/bench_train_mpi.py - data-parallel `savedmodel train` under mpirun, one run (not a test).

  python3 bench/bench_train_mpi.py [--build build] [--data DIR] [--limit 12000] [--epochs 2]
                                   [--batch_size 64] [--runs 2] [--no-record]

The seeds' CNN on the first --limit Fashion-MNIST images, global batch --batch_size, each rank one
thread: `mpirun -np 1` against `mpirun -np 2` with shared memory between the ranks, and -np 2 with
Open MPI's TCP transport over loopback instead (--mca btl tcp,self: every allreduce through the
kernel's TCP stack, the nearest stand-in for two hosts here; two network namespaces joined by a veth
pair do not work with this Open MPI: its launcher (PMIx 4) meets the ranks over TCP on the host's
loopback, which a rank in another namespace cannot reach). Throughput is the
global batch over the last epoch's time per step (the progress bar's "ms/step": the first epoch
warms up), images/s; the best of --runs runs per setting, settings alternating. The allreduce share
is rank 0's time waiting in collectives over its training time, from the "MPI: ..." line `train`
prints (this includes waiting for the slower rank, not only moving bytes). Goals (issue #19):
-np 2 >= 1.8x -np 1; over TCP (veth in the issue) >= 1.7x. Appended to bench/RESULTS.md with date, load and command.
"""
import argparse
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
FASHION = "/usr/share/datasets/fashion-mnist"
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]
BAR = re.compile(r"^\s*(\d+)/(\d+) \[=+\] - \d+s (\d+)(us|ms|s)/step")
WAIT = re.compile(r"^MPI: (\d+) ranks; rank 0 waited for collectives ([0-9.]+)s of ([0-9.]+)s training")


def train_cmd(a, out):
    return [os.path.join(a.build, "savedmodel"), "train", "--data", a.data, "--limit", str(a.limit),
            "--epochs", str(a.epochs), "--batch_size", str(a.batch_size), "--num_threads", "1", "--out", out]


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    if p.returncode:
        sys.exit(f"bench: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stdout[-3000:]}")
    lines = re.split(r"[\r\n]", p.stdout)
    bars = [m for m in map(BAR.match, lines) if m and m.group(1) == m.group(2)]
    if not bars:
        sys.exit(f"bench: no progress line in the output of {shlex.join(cmd)}")
    step_s = int(bars[-1].group(3)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[bars[-1].group(4)]
    share = None
    for m in map(WAIT.match, lines):
        if m:
            share = float(m.group(2)) / float(m.group(3))
    acc = re.search(r"^test accuracy: ([0-9.]+)$", p.stdout, re.M)
    return {"step_s": step_s, "share": share, "wall": wall, "acc": float(acc.group(1)) if acc else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=FASHION)
    ap.add_argument("--limit", type=int, default=12000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch_size", type=int, default=64)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-record", action="store_true", help="print only; do not touch RESULTS.md")
    a = ap.parse_args()
    if not shutil.which("mpirun"):
        sys.exit("bench: mpirun not found (apt-get install openmpi-bin)")
    import run as bench_run  # machine(), loadavg(), git_rev() of bench/run.py

    tmp = tempfile.mkdtemp(prefix="bench_train_mpi.")
    settings = [("-np 1", lambda o: MPIRUN + ["-np", "1"] + train_cmd(a, o)),
                ("-np 2 (shared memory)", lambda o: MPIRUN + ["-np", "2"] + train_cmd(a, o)),
                ("-np 2 (TCP over loopback)", lambda o: MPIRUN + ["--mca", "btl", "tcp,self", "--mca",
                                                               "btl_tcp_if_include", "lo", "-np", "2"] + train_cmd(a, o))]
    loads, res = [], {name: [] for name, _ in settings}
    try:
        for r in range(a.runs):
            for i, (name, cmd) in enumerate(settings):
                loads.append(bench_run.loadavg())
                res[name].append(run(cmd(os.path.join(tmp, f"out{r}_{i}"))))
                print(f"{name}: run {r + 1}: {a.batch_size / res[name][-1]['step_s']:.0f} images/s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    best = {k: min(v, key=lambda x: x["step_s"]) for k, v in res.items()}
    base = a.batch_size / best["-np 1"]["step_s"]
    cmd = "python3 bench/bench_train_mpi.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} — data-parallel train over MPI "
             "(bench/bench_train_mpi.py)", "",
             f"`{cmd}` (git {bench_run.git_rev()}, {bench_run.machine()}). Seed CNN, first {a.limit} Fashion-MNIST "
             f"images, global batch {a.batch_size}, {a.epochs} epochs, 1 thread per rank; best of {a.runs} runs "
             "(settings alternating), last epoch's time per step. Allreduce share: rank 0's time waiting in "
             "collectives / its training time.", "",
             "| setting | images/s | vs -np 1 | allreduce share | test accuracy | wall s |", "|---|---|---|---|---|---|"]
    for name, b in best.items():
        ips = a.batch_size / b["step_s"]
        share = f"{100 * b['share']:.1f}%" if b["share"] is not None else "-"
        lines.append(f"| {name} | {ips:.0f} | {ips / base:.2f}x | {share} | {b['acc']} | {b['wall']:.1f} |")
    lines += ["", f"- load average (1, 5, 15 min) before each run: {'; '.join(loads)} (the 2 cores "
              "are shared with other engineers' builds and tests: ranks compete with them, so the ratio is a floor)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n" + text)
        print("bench: appended to bench/RESULTS.md")


if __name__ == "__main__":
    main()
