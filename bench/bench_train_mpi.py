#!/usr/bin/env python3
"""bench/bench_train_mpi.py - data-parallel `savedmodel train` under mpirun, one run (not a test).

  python3 bench/bench_train_mpi.py [--build build] [--data DIR] [--limit 12000] [--epochs 2]
                                   [--batch_size 64] [--runs 2] [--no-veth] [--no-dnnl-ab] [--no-record]
                                   [--exchange-ab]

The seeds' CNN on the first --limit Fashion-MNIST images, global batch --batch_size, each rank one
thread: `mpirun -np 1` against `mpirun -np 2` with shared memory between the ranks, -np 2 with Open
MPI's TCP transport over loopback (--mca btl tcp,self), and -np 2 with rank 1 in its own network
namespace joined to the root namespace by one veth pair (TCP over the veth: the stand-in for two
hosts; needs root and `ip netns`, skipped saying why otherwise). The veth job: a hostfile with
"localhost" and the namespace's veth address as two hosts; Open MPI's rsh launcher reaches the
second "host" through --mca plm_rsh_agent, a script that runs the remote orted under
`ip netns exec`; btl and oob restricted to the veth's subnet. The "cubic" veth row sets TCP's
congestion control on the veth's routes (`ip route ... congctl cubic`, both ends) to Linux's
default, for a machine (this VM) whose system default is another (bbr): with bbr the veth's flow
sees out-of-order segments and spurious retransmits every run, with cubic none (RESULTS.md,
session 13, h9); the plain veth row keeps the system's choice.

On one host the -np 2 job keeps the weights in one copy that both ranks map (src/train/
dist_weights.c, an MPI-3 shared window) instead of sending each rank's updated range to the other,
and each rank's gradients there too, read in place by the owner of each range; the
SM_MPI_SHARED_GRADS=0 row is the A/B of the gradients (sent as messages, the weights still shared),
the SM_MPI_SHARED=0 row of both (the TCP rows never share: --mca btl tcp,self turns it off). The
SM_MPI_PIPELINE=0 row is the A/B of fit_dist.c's per-layer synchronization over the shared window
(each rank waits for the other ranks' "backward past layer l" before updating its part of layer l,
and for the owners' "layer l updated" before layer l's next forward) against whole-step barriers.
The SM_MPI_SPIN_US=0 row is the A/B of dist.c's wait: by default a rank first polls (yielding the
core) for up to 2 ms, then sleeps 50 us between polls after 100 more; SM_MPI_SPIN_US=0 skips the
first polls. The two SM_DNNL=0 rows are the A/B of the Dense layers' products (src/train/grad.c,
sm__train_matmul): OpenBLAS, as before session 13, instead of oneDNN; their "vs -np 1" is against
the SM_DNNL=0 -np 1 row (--no-dnnl-ab leaves them out).
Over TCP the Dense layers exchange their inputs, not their kernel gradients (fit_dist.c,
SM_MPI_EXCHANGE); --exchange-ab adds the TCP loopback and veth-cubic rows with SM_MPI_EXCHANGE=grads
(the gradients as messages, as before session 16).
Timing comes from `train --timing`: per rank, the last epoch's (the first warms up) mean step time
in microseconds, wall and CPU, each split into compute and waiting in MPI collectives (the wait
includes waiting for the slower rank, not only moving bytes). Throughput = images of the epoch /
summed step wall time (rank 0's; the ranks step together), images/s; the best of --runs runs per
setting, settings alternating. Because the 2 cores are shared, wall time moves with the machine's
load; the "CPU-bound" column is the load-robust figure: images / (steps x the slowest rank's compute
CPU time per step), i.e. the throughput if each rank had its core and the collectives cost nothing
- an upper bound that shows the kernels' small-batch cost apart from communication.
Goals (issue #19): -np 2 >= 1.8x -np 1; over the veth >= 1.7x. Appended to bench/RESULTS.md with
date, load and command.
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
TIMING = re.compile(r"^timing: rank (\d+): (\d+) steps, (\d+) images, step ([0-9.]+) us = compute ([0-9.]+) us \+ "
                    r"wait ([0-9.]+) us \(CPU: step ([0-9.]+) us = compute ([0-9.]+) us \+ wait ([0-9.]+) us\)$")


def train_cmd(a, out):
    return [os.path.join(a.build, "savedmodel"), "train", "--data", a.data, "--limit", str(a.limit),
            "--epochs", str(a.epochs), "--batch_size", str(a.batch_size), "--num_threads", "1", "--timing",
            "--out", out]


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    if p.returncode:
        sys.exit(f"bench: {shlex.join(cmd)} failed ({p.returncode}):\n{p.stdout[-3000:]}")
    ranks = {}
    for m in map(TIMING.match, re.split(r"[\r\n]", p.stdout)):
        if m:
            v = [float(x) for x in m.groups()]
            ranks[int(v[0])] = dict(zip(["steps", "images", "step", "compute", "wait", "cstep", "ccompute", "cwait"],
                                        v[1:]))
    if 0 not in ranks:
        sys.exit(f"bench: no 'timing:' line in the output of {shlex.join(cmd)}")
    r0 = ranks[0]
    acc = re.search(r"^test accuracy: ([0-9.]+)$", p.stdout, re.M)
    return {"ips": r0["images"] / (r0["steps"] * r0["step"] * 1e-6),
            "ips_cpu": r0["images"] / (r0["steps"] * max(r["ccompute"] for r in ranks.values()) * 1e-6),
            "share": r0["wait"] / r0["step"], "ranks": ranks, "wall": wall,
            "acc": float(acc.group(1)) if acc else None}


class Veth:
    """Rank 1's network namespace and the veth pair to it, for the life of the bench."""

    def __init__(self, tmp):
        tag = str(os.getpid() % 100000)
        self.ns, self.a, self.b = f"smb{tag}", f"smb{tag}a", f"smb{tag}b"
        self.net = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
        self.agent = os.path.join(tmp, "netns_agent.sh")
        self.hosts = os.path.join(tmp, "hosts")
        self.up = False

    def start(self):
        """None when it works, else why not."""
        if os.geteuid() != 0:
            return "not root (creating a network namespace needs CAP_SYS_ADMIN)"
        if not shutil.which("ip"):
            return "`ip` (iproute2) not found"
        cmds = [["ip", "netns", "add", self.ns],
                ["ip", "link", "add", self.a, "type", "veth", "peer", "name", self.b],
                ["ip", "link", "set", self.b, "netns", self.ns],
                ["ip", "addr", "add", self.net + ".1/24", "dev", self.a], ["ip", "link", "set", self.a, "up"],
                ["ip", "netns", "exec", self.ns, "ip", "addr", "add", self.net + ".2/24", "dev", self.b],
                ["ip", "netns", "exec", self.ns, "ip", "link", "set", self.b, "up"],
                ["ip", "netns", "exec", self.ns, "ip", "link", "set", "lo", "up"]]
        for c in cmds:
            p = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if c[:3] == ["ip", "netns", "add"] and p.returncode == 0:
                self.up = True
            if p.returncode:
                self.stop()
                return f"`{shlex.join(c)}` failed: {p.stdout.strip()}"
        with open(self.agent, "w") as f:  # rsh agent: "[opts] HOST COMMAND..." -> COMMAND inside the namespace
            f.write('#!/bin/sh\nwhile [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done\nshift\n'
                    f'exec ip netns exec {self.ns} sh -c "$*"\n')
        os.chmod(self.agent, 0o755)
        with open(self.hosts, "w") as f:
            f.write(f"localhost slots=1\n{self.net}.2 slots=1\n")
        return None

    def congctl(self, cc):
        """TCP congestion control cc on both ends' routes to the veth subnet (None: the system's)."""
        for pre, dev, me in (([], self.a, ".1"), (["ip", "netns", "exec", self.ns], self.b, ".2")):
            subprocess.run(pre + ["ip", "route", "replace", self.net + ".0/24", "dev", dev, "proto", "kernel",
                                  "scope", "link", "src", self.net + me] + (["congctl", cc] if cc else []),
                           check=True)

    def on_both(self, *cmd):
        """cmd on each veth end, in its namespace, the word DEV replaced by that end's name (e.g. `ip link
        set dev DEV mtu 9000`, `ethtool -K DEV gro on`)."""
        for pre, dev in (([], self.a), (["ip", "netns", "exec", self.ns], self.b)):
            subprocess.run(pre + [dev if c == "DEV" else c for c in cmd], check=True, stdout=subprocess.DEVNULL)

    def mpirun(self, cc=None):
        self.congctl(cc)
        subnet = self.net + ".0/24"
        return ["mpirun", "--allow-run-as-root", "--hostfile", self.hosts, "--mca", "plm_rsh_agent", self.agent,
                "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", subnet,
                "--mca", "oob_tcp_if_include", subnet,
                # each "host" binds its rank to its own first core, which is the same core here
                "--bind-to", "none", "-np", "2"]

    def stop(self):
        if self.up:
            subprocess.run(["ip", "link", "del", self.a], stderr=subprocess.DEVNULL)
            subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL)
            self.up = False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=FASHION)
    ap.add_argument("--limit", type=int, default=12000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch_size", type=int, default=64)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-veth", action="store_true", help="skip the two-namespace (veth) setting")
    ap.add_argument("--no-dnnl-ab", action="store_true", help="skip the SM_DNNL=0 rows")
    ap.add_argument("--no-record", action="store_true", help="print only; do not touch RESULTS.md")
    ap.add_argument("--exchange-ab", action="store_true",
                    help="add TCP rows with SM_MPI_EXCHANGE=grads (the Dense layers' kernel gradients as messages, "
                         "not their inputs)")
    a = ap.parse_args()
    if not shutil.which("mpirun"):
        sys.exit("bench: mpirun not found (apt-get install openmpi-bin)")
    import run as bench_run  # machine(), loadavg(), git_rev() of bench/run.py

    tmp = tempfile.mkdtemp(prefix="bench_train_mpi.")
    settings = [("-np 1", lambda o: MPIRUN + ["-np", "1"] + train_cmd(a, o)),
                ("-np 2 (shared memory)", lambda o: MPIRUN + ["-np", "2"] + train_cmd(a, o)),
                ("-np 2 (shared memory, SM_MPI_SHARED_GRADS=0: the weights shared, the gradients exchanged as "
                 "messages)", lambda o: MPIRUN + ["-x", "SM_MPI_SHARED_GRADS=0", "-np", "2"] + train_cmd(a, o)),
                ("-np 2 (shared memory, SM_MPI_PIPELINE=0: the step's two synchronizations as whole-step barriers)",
                 lambda o: MPIRUN + ["-x", "SM_MPI_PIPELINE=0", "-np", "2"] + train_cmd(a, o)),
                ("-np 2 (shared memory, SM_MPI_SHARED=0: the weights exchanged as messages, not mapped by both)",
                 lambda o: MPIRUN + ["-x", "SM_MPI_SHARED=0", "-np", "2"] + train_cmd(a, o)),
                ("-np 2 (shared memory, SM_MPI_SPIN_US=0: waits sleep after 100 polls)",
                 lambda o: MPIRUN + ["-x", "SM_MPI_SPIN_US=0", "-np", "2"] + train_cmd(a, o)),
                ("-np 2 (TCP over loopback)", lambda o: MPIRUN + ["--mca", "btl", "tcp,self", "--mca",
                                                               "btl_tcp_if_include", "lo", "-np", "2"] + train_cmd(a, o))]
    GRADS = ["-x", "SM_MPI_EXCHANGE=grads"]
    if a.exchange_ab:
        settings.append(("-np 2 (TCP over loopback, SM_MPI_EXCHANGE=grads)",
                         lambda o: MPIRUN + GRADS + ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo",
                                                     "-np", "2"] + train_cmd(a, o)))
    NODNNL1 = "-np 1 (SM_DNNL=0: the Dense products on OpenBLAS)"
    if not a.no_dnnl_ab:
        settings += [(NODNNL1, lambda o: MPIRUN + ["-x", "SM_DNNL=0", "-np", "1"] + train_cmd(a, o)),
                     ("-np 2 (shared memory, SM_DNNL=0)",
                      lambda o: MPIRUN + ["-x", "SM_DNNL=0", "-np", "2"] + train_cmd(a, o))]
    veth = Veth(tmp)
    veth_note = "skipped (--no-veth)" if a.no_veth else veth.start()
    if veth_note is None:
        settings.append(("-np 2 (TCP over a veth, rank 1 in a network namespace)",
                         lambda o: veth.mpirun() + train_cmd(a, o)))
        if open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip() != "cubic":
            settings.append(("-np 2 (TCP over the veth, congestion control cubic on its routes)",
                             lambda o: veth.mpirun("cubic") + train_cmd(a, o)))
            if a.exchange_ab:
                settings.append(("-np 2 (TCP over the veth, cubic, SM_MPI_EXCHANGE=grads)",
                                 lambda o: veth.mpirun("cubic") + GRADS + train_cmd(a, o)))
    else:
        print(f"bench: the veth setting: {veth_note}", flush=True)
    loads, res = [], {name: [] for name, _ in settings}
    try:
        for r in range(a.runs):
            for i, (name, cmd) in enumerate(settings):
                loads.append(bench_run.loadavg())
                res[name].append(run(cmd(os.path.join(tmp, f"out{r}_{i}"))))
                b = res[name][-1]
                print(f"{name}: run {r + 1}: {b['ips']:.0f} images/s, CPU-bound {b['ips_cpu']:.0f}", flush=True)
    finally:
        veth.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    best = {k: max(v, key=lambda x: x["ips"]) for k, v in res.items()}
    best_cpu = {k: max(x["ips_cpu"] for x in v) for k, v in res.items()}
    def base_of(name):  # the SM_DNNL=0 rows against their own -np 1
        k = NODNNL1 if "SM_DNNL=0" in name else "-np 1"
        return best[k]["ips"], best_cpu[k]
    cmd = "python3 bench/bench_train_mpi.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} — data-parallel train over MPI "
             "(bench/bench_train_mpi.py)", "",
             f"`{cmd}` (git {bench_run.git_rev()}, {bench_run.machine()}). Seed CNN, first {a.limit} Fashion-MNIST "
             f"images, global batch {a.batch_size}, {a.epochs} epochs, 1 thread per rank; `train --timing`: the last "
             f"epoch's mean step per rank. images/s = images / summed step wall time (best of {a.runs}, settings "
             "alternating); CPU-bound = images / (steps x slowest rank's compute CPU per step): the load-robust upper "
             "bound (no communication cost); wait share = rank 0's wall time in MPI waits / its step time.", "",
             "| setting | images/s | vs -np 1 | CPU-bound images/s | vs -np 1 | wait share | per rank: step = compute + "
             "wait us (wall); CPU compute + wait us | test accuracy |",
             "|---|---|---|---|---|---|---|---|"]
    for name, b in best.items():
        base, base_cpu = base_of(name)
        per = "; ".join(f"r{r}: {v['step']:.0f} = {v['compute']:.0f} + {v['wait']:.0f}; CPU {v['ccompute']:.0f} + "
                        f"{v['cwait']:.0f}" for r, v in sorted(b["ranks"].items()))
        lines.append(f"| {name} | {b['ips']:.0f} | {b['ips'] / base:.2f}x | {best_cpu[name]:.0f} | "
                     f"{best_cpu[name] / base_cpu:.2f}x | {100 * b['share']:.1f}% | {per} | {b['acc']} |")
    if veth_note is not None:
        lines += ["", f"- the veth setting: {veth_note}"]
    lines += ["", f"- load average (1, 5, 15 min) before each run: {'; '.join(loads)} (the 2 cores "
              "are shared with other engineers' builds and tests: ranks compete with them, so the wall ratio is a floor)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n" + text)
        print("bench: appended to bench/RESULTS.md")


if __name__ == "__main__":
    main()
