#!/usr/bin/env python3
"""bench/ab_train_mpi.py - interleaved A/B of transports and environment settings for data-parallel
`savedmodel train` under mpirun (not a test; bench_train_mpi.py is the recorded bench).

  python3 bench/ab_train_mpi.py [--rounds 3] [--limit 12000] [--epochs 2] SETTING [SETTING ...]

Each SETTING is "TRANSPORT[:NAME=VALUE,...]": TRANSPORT is np1 (mpirun -np 1), shm (-np 2, shared
memory), tcp (-np 2, TCP over loopback), veth (-np 2, rank 1 in a network namespace behind a veth
pair, the system's TCP congestion control), veth-cubic (the same, cubic on the veth's routes),
veth-rps / veth-cubic-rps (the same with receive packet steering on both veth ends: each flow's
packets queued on one CPU by flow hash, as a NIC with RSS does), and any of these with -mtuN (MTU N
on both veth ends, e.g. veth-cubic-mtu9000: jumbo frames, as MPI clusters' links use; else 1500,
the veth's default) and then -gro (GRO on both ends, as a NIC driver has it; the veth's default is
off); NAME=VALUE pairs go to every rank
(mpirun -x), e.g. shm:SM_MPI_LAYER_POLL=0, veth:OMPI_MCA_btl_tcp_eager_limit=1048576.
For every round each setting runs once in turn, so a change in the machine's load hits all alike;
per setting it prints each round's images/s (bench_train_mpi.py's measure: the last epoch's images
over rank 0's summed step wall time) and the ranks' wall wait per step, then the medians, and the
ratio of each median to np1's when np1 is among the settings. --quiet S: before each run, wait (up
to S seconds) for a second in which no other process is running (the 2 shared cores' other users
come in bursts).
"""
import argparse
import os
import statistics
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_train_mpi as b  # noqa: E402  (Veth, run, train_cmd, MPIRUN)
import run as bench_run  # noqa: E402  (loadavg)

# veth[-cubic][-rps][-mtuN][-gro]: congestion control cubic on its routes, RPS on both ends, MTU N on
# both ends, GRO on both ends (the veth's default is off; a NIC's driver has it on)
VETH = b.re.compile(r"veth(-cubic)?(-rps)?(?:-mtu(\d+))?(-gro)?")


def set_rps(veth, mask):
    """Receive packet steering on both veth ends (mask "0": off)."""
    for pre, dev in (([], veth.a), (["ip", "netns", "exec", veth.ns], veth.b)):
        b.subprocess.run(pre + ["sh", "-c", f"echo {mask} > /sys/class/net/{dev}/queues/rx-0/rps_cpus"], check=True)


def running():
    """Processes running now (/proc/stat procs_running, this one included)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running"):
                return int(line.split()[1])
    return 0


def wait_quiet(max_s):
    """Waits (up to max_s) until nothing else has run for 1 s (5 samples); seconds waited."""
    t0 = b.time.monotonic()
    calm = 0
    while calm < 5 and b.time.monotonic() - t0 < max_s:
        calm = calm + 1 if running() <= 1 else 0
        b.time.sleep(0.2)
    return b.time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(b.ROOT, "build"))
    ap.add_argument("--data", default=b.FASHION)
    ap.add_argument("--limit", type=int, default=12000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch_size", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quiet", type=float, default=0, metavar="S",
                    help="before each run wait up to S seconds for 1 s in which no other process runs")
    ap.add_argument("settings", nargs="+")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ab_train_mpi.")
    veth = b.Veth(tmp)
    parsed = []
    for s in a.settings:
        tr, _, env = s.partition(":")
        xs = []
        for kv in filter(None, env.split(",")):
            xs += ["-x", kv]
        if tr not in ("np1", "shm", "tcp") and not VETH.fullmatch(tr):
            sys.exit(f"ab_train_mpi: unknown transport {tr!r}")
        parsed.append((s, tr, xs))
    if any(tr.startswith("veth") for _, tr, _ in parsed):
        why = veth.start()
        if why:
            sys.exit(f"ab_train_mpi: the veth: {why}")
    ncpu = os.cpu_count() or 1
    res = {s: [] for s, _, _ in parsed}
    try:
        for r in range(a.rounds):
            for i, (s, tr, xs) in enumerate(parsed):
                out = os.path.join(tmp, f"out{r}_{i}")
                if tr == "np1":
                    cmd = b.MPIRUN + xs + ["-np", "1"]
                elif tr == "shm":
                    cmd = b.MPIRUN + xs + ["-np", "2"]
                elif tr == "tcp":
                    cmd = b.MPIRUN + xs + ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo", "-np", "2"]
                else:
                    m = VETH.fullmatch(tr)
                    set_rps(veth, format((1 << ncpu) - 1, "x") if m.group(2) else "0")
                    veth.on_both("ip", "link", "set", "dev", "DEV", "mtu", m.group(3) or "1500")
                    veth.on_both("ethtool", "-K", "DEV", "gro", "on" if m.group(4) else "off")
                    cmd = veth.mpirun("cubic" if "cubic" in tr else None) + xs
                if a.quiet:
                    wait_quiet(a.quiet)
                load = bench_run.loadavg().split()[0]
                v = b.run(cmd + b.train_cmd(a, out))
                res[s].append(v)
                waits = "/".join(f"{x['wait']:.0f}" for _, x in sorted(v["ranks"].items()))
                print(f"round {r + 1} {s}: {v['ips']:.0f} images/s, wait {waits} us, load {load}", flush=True)
    finally:
        veth.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    base = None
    np1 = [s for s, tr, _ in parsed if tr == "np1"]
    if np1:
        base = statistics.median(x["ips"] for x in res[np1[0]])
    print()
    for s, v in res.items():
        med = statistics.median(x["ips"] for x in v)
        w0 = statistics.median(x["ranks"][0]["wait"] for x in v)
        cpu = statistics.median(max(r["ccompute"] for r in x["ranks"].values()) for x in v)
        rounds = " ".join(f"{x['ips']:.0f}" for x in v)
        ratio = f", {med / base:.2f}x np1" if base else ""
        print(f"{s}: median {med:.0f} images/s{ratio}, r0 wait {w0:.0f} us, slowest rank's CPU compute {cpu:.0f} us "
              f"(rounds: {rounds})")


if __name__ == "__main__":
    main()
