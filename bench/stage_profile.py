#!/usr/bin/env python3
"""stage_profile.py - per stage of a bench_nets model, ours against ONNX Runtime without its profiler.

layer_profile.py compares layer by layer, but ORT's profiler costs it more than ours costs us: with
enable_profiling on, ORT's kernels of ResNet50 b1 summed (min) exceed its whole unprofiled call, so
its small layers look slower than they are (bench/RESULTS.md session 16, h2). This tool times ORT
without the profiler on the ONNX model cut after each stage (onnx.utils.extract_model, the cut at the
last node of a Keras layer, e.g. conv3_block4_out), interleaved, and takes a stage's ORT time as the
difference of two neighbouring cuts' whole calls (min and median over calls; a cut model's last
stage ends in one more ORT layout reorder than in the whole model). Ours is the sum over the stage's
layers of SM_STEP_PROFILE's per-layer min and mean (layer_profile.ours); summed over all layers the
mins came to ~5% under our whole call's min (ResNet50 b1: 3240 vs 3416 us).

  python3 bench/stage_profile.py --model resnet50 --runs 300 --rounds 4

Stages: NAME=PREFIX[,PREFIX...]@CUT, the last one without @CUT (the whole model); our layers go to
the first stage one of whose prefixes they start with. Defaults are ResNet50's five stages.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layer_profile  # noqa: E402

ROOT = layer_profile.ROOT
RESNET50 = ["stem=conv1,pool1@pool1_pool", "conv2=conv2_@conv2_block3_out", "conv3=conv3_@conv3_block4_out",
            "conv4=conv4_@conv4_block6_out", "conv5+head=conv5_,avg_pool,predictions"]

CUT_CHILD = r"""
import json, sys, onnx, onnx.utils
sys.path.insert(0, %(bench)r)
from layer_profile import layer_of
m = onnx.load(%(onnx)r)
inputs = [i.name for i in m.graph.input]
last = {}
for n in m.graph.node:
    l = layer_of(n.name)
    if l:
        last[l] = n.output[0]
paths = []
for i, cut in enumerate(%(cuts)r):
    if cut not in last:
        sys.exit("no node of layer %%s in %%s" %% (cut, %(onnx)r))
    p = "%(dir)s/cut%%d.onnx" %% i
    onnx.utils.extract_model(%(onnx)r, p, inputs, [last[cut]])
    paths.append(p)
print(json.dumps(paths))
"""

ORT_CHILD = r"""
import json, sys, time
sys.path.insert(0, %(bench)r)
import onnxruntime as ort
from bench_runtime import pattern
runs = []
for p in %(paths)r:
    so = ort.SessionOptions()
    so.intra_op_num_threads = %(threads)d
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(p, so, providers=["CPUExecutionProvider"])
    inp = s.get_inputs()[0]
    x = pattern([d if isinstance(d, int) else %(batch)d for d in inp.shape])
    runs.append((s, inp.name, x, [s.get_outputs()[0].name]))
ts = [[] for _ in runs]
for _ in range(%(rounds)d):
    for (s, name, x, outs), t in zip(runs, ts):
        for _ in range(%(warmup)d):
            s.run(outs, {name: x})
        for _ in range(%(burst)d):
            t0 = time.perf_counter()
            s.run(outs, {name: x})
            t.append((time.perf_counter() - t0) * 1e6)
print(json.dumps(ts))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=300, help="calls per side and round (ORT: per cut)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--stage", action="append", help="NAME=PREFIX[,PREFIX]@CUT (repeat; default ResNet50's)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", help="Python with onnxruntime and onnx (default BUILD/venv/bin/python)")
    ap.add_argument("--exe", help="our driver (default BUILD/bench/bench_run)")
    args = ap.parse_args()
    args.nets = os.path.join(args.build, "bench-nets")
    py = args.python or os.path.join(args.build, "venv", "bin", "python")
    exe = args.exe or os.path.join(args.build, "bench", "bench_run")
    stages = []
    for spec in args.stage or RESNET50:
        name, rest = spec.split("=", 1)
        prefixes, _, cut = rest.partition("@")
        stages.append((name, tuple(prefixes.split(",")), cut or None))
    if any(c is None for _, _, c in stages[:-1]) or stages[-1][2]:
        sys.exit("every stage but the last needs @CUT; the last none")
    onnx_path = os.path.join(args.nets, args.model + ".onnx")
    bench = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="stage_profile_") as d:
        cuts = [c for _, _, c in stages[:-1]]
        out = subprocess.run([py, "-c", CUT_CHILD % {"bench": bench, "onnx": onnx_path, "cuts": cuts, "dir": d}],
                             check=True, capture_output=True, text=True)
        paths = json.loads(out.stdout) + [onnx_path]
        ours_rounds, ort_ts = [], [[] for _ in paths]
        for _ in range(args.rounds):  # alternate: ours, ORT, ours, ...
            layer_profile.ours(args, exe, ours_rounds)
            burst = max(1, args.runs // 10)
            out = subprocess.run([py, "-c", ORT_CHILD % {"bench": bench, "paths": paths, "threads": args.threads,
                                                         "batch": args.batch, "rounds": 10, "warmup": 5,
                                                         "burst": burst}], check=True, capture_output=True, text=True)
            for acc, t in zip(ort_ts, json.loads(out.stdout)):
                acc.extend(t)
    per = {}
    for r in ours_rounds:
        for layer, (mn, mean, _) in r["layers"].items():
            p = per.setdefault(layer, [None, 0.0])
            p[0] = mn if p[0] is None else min(p[0], mn)
            p[1] += mean / len(ours_rounds)
    ort_min = [min(t) for t in ort_ts]
    ort_med = [statistics.median(t) for t in ort_ts]
    load = os.getloadavg()
    print("# %s b%d, %d threads, %d rounds; ours: per-layer min / mean summed by stage (%d calls a round); "
          "ORT: whole calls of the cut models (%d a cut), a stage = this cut - the one before; load %.2f %.2f %.2f"
          % (args.model, args.batch, args.threads, args.rounds, args.runs, len(ort_ts[0]), *load))
    print("| stage | ours min / mean us | ORT min / median us | ours - ORT (min) | ORT cut's call min / median |")
    print("|---|---|---|---|---|")
    seen = set()
    tot = [0.0, 0.0]
    for i, (name, prefixes, _) in enumerate(stages):
        mn = mean = 0.0
        for layer, (lmn, lmean) in per.items():
            if layer not in seen and layer.startswith(prefixes):
                seen.add(layer)
                mn += lmn
                mean += lmean
        tot[0] += mn
        tot[1] += mean
        omin = ort_min[i] - (ort_min[i - 1] if i else 0.0)
        omed = ort_med[i] - (ort_med[i - 1] if i else 0.0)
        print("| %s | %.0f / %.0f | %.0f / %.0f | %+.0f | %.0f / %.0f |" % (name, mn, mean, omin, omed, mn - omin,
                                                                        ort_min[i], ort_med[i]))
    rest = [(layer, v) for layer, v in per.items() if layer not in seen]
    print("| (other steps: %s) | %.0f / %.0f | | | |" % (", ".join(sorted(layer for layer, _ in rest)) or "none",
                                                        sum(v[0] for _, v in rest), sum(v[1] for _, v in rest)))
    print("ours: whole call min %.0f / mean %.0f us (layers summed %.0f / %.0f)"
          % (min(r["run_min"] for r in ours_rounds), statistics.mean(r["run_mean"] for r in ours_rounds), *tot))


if __name__ == "__main__":
    main()
