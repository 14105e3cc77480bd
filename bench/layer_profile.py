#!/usr/bin/env python3
"""layer_profile.py - per-layer times of one bench_nets model, ours against ONNX Runtime's.

Runs the model a number of times on each side (rounds alternate: ours, ORT, ours, ...), 2 threads
each by default, and reports per Keras layer the kernel time of the steps that belong to it:

  ours: SM_STEP_PROFILE (src/runtime/step_profile.c) written by build/bench/bench_run; a step belongs
        to the layer its node name is under (".../resnet50_1/conv2_block1_1_conv_1/convolution").
  ORT:  SessionOptions.enable_profiling; the per-node "*_kernel_time" events. ORT's optimized nodes
        are named after an output of the ONNX graph (a fused Conv+Relu by the Relu's output, "_nchwc"
        appended in its NCHWc layout); that output's producer in the ONNX file (through a Relu or
        Add to the Conv under it) gives the Keras layer by the Conv's weight name. ORT's layout
        reorders and the rest keep their op type as the key.

Per layer: the min and the mean over calls of each side's kernel time (us, the mins summed over the
rounds' best), the difference of the means, sorted by it (where we lose most first). Per call: the
whole call's min / mean and the part outside kernels (ours: the executor's own per-step work as
step_profile measures it; ORT: model_run minus its nodes' kernel times).

  python3 bench/layer_profile.py --model resnet50 --batch 1 --runs 300 --rounds 2 --top 15

Needs build/bench/bench_run (bench_runtime.build_driver) and build/venv with onnxruntime and onnx;
the models are bench_nets.py's exports under build/bench-nets. Profiling adds a clock read or two per
step on both sides; compare the sides with each other, not with bench_nets' whole-call figures.
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYER_RE = re.compile(r"/(?:[a-z0-9][a-z0-9._]*?_1)/([A-Za-z0-9_]+?)(?:_1)?/")

ORT_CHILD = r"""
import json, sys
sys.path.insert(0, %(bench)r)
import onnxruntime as ort
from bench_runtime import pattern
so = ort.SessionOptions()
so.intra_op_num_threads = %(threads)d
so.inter_op_num_threads = 1
so.enable_profiling = True
so.profile_file_prefix = %(prefix)r
sess = ort.InferenceSession(%(onnx)r, so, providers=["CPUExecutionProvider"])
inp = sess.get_inputs()[0]
x = pattern([d if isinstance(d, int) else %(batch)d for d in inp.shape])
for _ in range(%(warmup)d + %(runs)d):
    sess.run(None, {inp.name: x})
print(sess.end_profiling())
"""

ONNX_CHILD = r"""
import json, onnx
m = onnx.load(%(onnx)r)
print(json.dumps([[n.op_type, n.name, list(n.input), list(n.output)] for n in m.graph.node]))
"""


DEPTH = [1]  # --depth: how many name scopes under the model's name a key keeps


def layer_of(name):
    """The Keras layer a node name is under, or None."""
    m = LAYER_RE.search(name + "/")
    if not m:
        return None
    if DEPTH[0] <= 1:
        return m.group(1)
    rest = (name + "/")[m.end():].split("/")[:DEPTH[0] - 1]
    return "/".join([m.group(1)] + [r for r in rest[:-1] if r] + ([rest[-1]] if len(rest) and rest[-1] and
                                                                      len(rest) < len(name.split("/")) else []))


class Fig:
    def __init__(self):
        self.min = None
        self.sum = 0.0
        self.n = 0

    def add_min(self, v):
        self.min = v if self.min is None else min(self.min, v)


def ours(args, exe, rounds_figs):
    """One round of ours: {layer: (min_us, mean_us)} summed over its steps, and the run line."""
    fd, path = tempfile.mkstemp(prefix="layer_profile_", suffix=".tsv")
    os.close(fd)
    os.unlink(path)
    env = dict(os.environ, SM_STEP_PROFILE=path)
    subprocess.run([exe, os.path.join(args.nets, args.model), "serve", "serving_default", str(args.batch),
                    str(args.runs), str(args.warmup), str(args.threads)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    best, head = None, None
    with open(path) as f:
        plans, cur = [], None
        for line in f:
            if line.startswith("# plan"):
                d = dict(re.findall(r" ([a-z_]+) ([0-9.]+)", line))
                cur = (d, [])
                plans.append(cur)
            elif cur is not None and line.strip():
                cur[1].append(line.rstrip("\n").split("\t"))
    os.unlink(path)
    for d, steps in plans:  # the serving plan: the one run as many times as asked, most steps
        if int(d["runs"]) >= args.runs and (best is None or len(steps) > len(best)):
            best, head = steps, d
    per = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for st in best:
        op, node, mn, mean = st[1], st[2], float(st[5]), float(st[6])
        key = layer_of(node) if args.all_ops or op.startswith("_Fused") or op in ("MaxPool", "Mean", "Conv2D") else None
        key = key or "(%s)" % op
        per[key][0] += mn
        per[key][1] += mean
        per[key][2] += 1
    rounds_figs.append({"layers": per, "run_min": float(head["run_min_us"]), "run_mean": float(head["run_mean_us"]),
                        "out_min": float(head["outside_min_us"]), "out_mean": float(head["outside_mean_us"])})


def ort_names(py, onnx_path):
    out = subprocess.run([py, "-c", ONNX_CHILD % {"onnx": onnx_path}], check=True, capture_output=True, text=True)
    nodes = json.loads(out.stdout)
    producer = {}
    for op, name, ins, outs in nodes:
        for o in outs:
            producer[o] = (op, name, ins)
        producer.setdefault(name, (op, name, ins))

    def resolve(key):
        k = key[:-len("_nchwc")] if key.endswith("_nchwc") else key
        for cand in (k, k + ":0", k.split(":")[0]):
            if cand in producer:
                op, name, ins = producer[cand]
                for _ in range(4):  # Relu / Add over a Conv: the Conv's weight names the layer
                    if op == "Conv" and len(ins) > 1:
                        return layer_of(ins[1]) or layer_of(name)
                    # Clip: a Relu6; Mul / Add: a BatchNorm ORT did not fold (MobileNetV2's depthwise)
                    src = [i for i in (ins[::-1] if op in ("Relu", "Add") else ins) if i in producer and
                           producer[i][0] in ("Conv", "Mul", "Add", "Relu", "Clip")] if ins else []
                    if op in ("Relu", "Add", "Clip", "Mul") and src:
                        op, name, ins = producer[src[0]]
                        continue
                    break
                return layer_of(name)
        return None
    return resolve


def ort(args, py, resolve, rounds_figs):
    tmp = tempfile.mkdtemp(prefix="layer_profile_ort_")
    code = ORT_CHILD % {"bench": os.path.join(ROOT, "bench"), "threads": args.threads, "prefix": os.path.join(tmp, "p"),
                        "onnx": os.path.join(args.nets, args.model + ".onnx"), "batch": args.batch,
                        "warmup": args.warmup, "runs": args.runs}
    out = subprocess.run([py, "-c", code], check=True, capture_output=True, text=True)
    path = out.stdout.strip().splitlines()[-1]
    with open(path) as f:
        ev = json.load(f)
    for p in glob.glob(os.path.join(tmp, "*")):
        os.unlink(p)
    os.rmdir(tmp)
    runs = [e for e in ev if e.get("cat") == "Session" and e.get("name") == "model_run"][args.warmup:]
    t0 = runs[0]["ts"] if runs else 0
    nodes = [e for e in ev if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= t0]
    by = collections.defaultdict(list)
    for e in nodes:
        by[e["name"][:-len("_kernel_time")]].append(e["dur"])
    per = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for name, durs in by.items():
        key = resolve(name) or "(%s)" % nodes[[n["name"] for n in nodes].index(name + "_kernel_time")]["args"].get(
            "op_name", name)
        per[key][0] += min(durs)
        per[key][1] += sum(durs) / len(durs)
        per[key][2] += 1
    kern = [0.0] * len(runs)
    i = 0
    for e in nodes:  # kernel time inside each run
        while i < len(runs) and e["ts"] > runs[i]["ts"] + runs[i]["dur"]:
            i += 1
        if i < len(runs):
            kern[i] += e["dur"]
    outside = [r["dur"] - k for r, k in zip(runs, kern)]
    rounds_figs.append({"layers": per, "run_min": min(r["dur"] for r in runs),
                        "run_mean": sum(r["dur"] for r in runs) / len(runs), "out_min": min(outside),
                        "out_mean": sum(outside) / len(outside)})


def merge(rounds):
    """Over rounds: the min of the mins, the mean of the means."""
    out = {}
    for r in rounds:
        for k, (mn, mean, n) in r["layers"].items():
            o = out.setdefault(k, [mn, 0.0, n])
            o[0] = min(o[0], mn)
            o[1] += mean / len(rounds)
    tot = {f: (min if f.endswith("min") else (lambda v: sum(v) / len(v)))([r[f] for r in rounds])
           for f in ("run_min", "run_mean", "out_min", "out_mean")}
    return out, tot


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--all-ops", action="store_true",
                    help="key every step of ours by its layer (default: only convolutions, pools and fused nodes)")
    ap.add_argument("--depth", type=int, default=1,
                    help="name scopes kept in a key (2: multi_head_attention_1/query_1 for the Transformer)")
    ap.add_argument("--sort", choices=["mean", "min"], default="mean",
                    help="order the rows by the difference of the means (default) or of the minima (under load)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=None, help="Python with onnxruntime and onnx (default BUILD/venv/bin/python)")
    ap.add_argument("--only", choices=["ours", "ort"], help="profile one side only")
    ap.add_argument("--exe", default=None, help="our driver (default BUILD/bench/bench_run)")
    args = ap.parse_args()
    DEPTH[0] = args.depth
    args.nets = os.path.join(args.build, "bench-nets")
    exe = args.exe or os.path.join(args.build, "bench", "bench_run")
    py = args.python or os.path.join(args.build, "venv", "bin", "python")
    resolve = ort_names(py, os.path.join(args.nets, args.model + ".onnx")) if args.only != "ours" else None
    ro, rt = [], []
    for _ in range(args.rounds):
        if args.only != "ort":
            ours(args, exe, ro)
        if args.only != "ours":
            ort(args, py, resolve, rt)
    lo, to = merge(ro) if ro else ({}, None)
    lt, tt = merge(rt) if rt else ({}, None)
    keys = set(lo) | set(lt)
    z = [0.0, 0.0, 0]
    col = 1 if args.sort == "mean" else 0
    rows = sorted(keys, key=lambda k: -(lo.get(k, z)[col] - lt.get(k, z)[col]))
    load = os.getloadavg()
    print("# %s b%d, %d threads, %d rounds x %d runs (+%d warm-up), load %.2f %.2f %.2f" %
          (args.model, args.batch, args.threads, args.rounds, args.runs, args.warmup, *load))
    print("| layer | ours steps | ours min / mean us | ORT nodes | ORT min / mean us | %s ours - ORT |" % args.sort)
    print("|---|---|---|---|---|---|")
    for k in rows[:args.top] + ["..."] + rows[-args.top // 3:] if len(rows) > args.top + args.top // 3 else rows:
        if k == "...":
            print("| ... | | | | | |")
            continue
        a, b = lo.get(k, z), lt.get(k, z)
        print("| %s | %d | %.1f / %.1f | %d | %.1f / %.1f | %+.1f |" % (k, a[2], a[0], a[1], b[2], b[0], b[1], a[col] - b[col]))
    for side, lay, tot in (("ours", lo, to), ("ORT", lt, tt)):
        if tot:
            print("%s: call min %.0f / mean %.0f us; kernels summed min %.0f / mean %.0f us; outside kernels "
                  "min %.0f / mean %.0f us" % (side, tot["run_min"], tot["run_mean"], sum(v[0] for v in lay.values()),
                                                sum(v[1] for v in lay.values()), tot["out_min"], tot["out_mean"]))


if __name__ == "__main__":
    sys.exit(main())
