#!/usr/bin/env python3
"""bench/roofline.py - where each bench_nets row stands against this machine's fp32 peak (not a test).

  python3 bench/roofline.py [--build build] [--python PY] [--results bench/RESULTS.md] [--runs N]
                            [--no-record]

1. Work per call: the multiply-adds of every Conv, MatMul and Gemm of each model's ONNX export
   (BUILD/bench-nets/NAME.onnx, made by bench/bench_nets.py), with the shapes read from one ONNX
   Runtime run of the model at the row's batch (every such node's inputs and outputs made graph
   outputs); GFLOP = 2 x MACs / 1e9. Elementwise ops, softmax, normalisations are not counted
   (they are memory-bound and a few % of the FLOPs).
2. Peak: bench/bench_peak.c (oneDNN's dnnl_sgemm) on a 2048^3 product and on the transformer's
   own GEMM shapes, 1 and 2 OpenMP threads. Figures: GFLOP per CPU second on 1 thread (a loaded
   machine barely moves it; 2 x the best of the shapes = what 2 idle cores reach, the peak used
   below: the higher it is, the safer a 'goal above peak' verdict) and the best wall
   GFLOP/s on 2 threads (what a quiet machine actually gave).
3. Times: the latest bench_nets table in --results (ours / TF / ORT medians per row), so run
   bench/bench_nets.py first on a quiet machine. Per row: achieved GFLOP/s of each side, % of
   peak, and the goal time (min(TF / 1.5, ORT / 1.0)) as GFLOP/s and % of peak: a goal above ~90%
   of peak cannot be met by kernel work.
The table is printed and appended to bench/RESULTS.md (unless --no-record).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

ORDER = ["mobilenetv2", "resnet50", "efficientnetb0", "vgg16", "densenet121", "transformer", "seed_cnn"]
TF_GOAL, ORT_GOAL, ORT_B1_CNN_GOAL = 1.5, 1.0, 1.5
# (M, N, K) of the transformer's products: batch-1 rows (M = 128 tokens) and batch 16 (M = 2048):
# Q/K/V and output projections 256x256, FFN 256->1024->256; attention per head 128x128x64, 128x64x128
SQUARE = "2048,2048,2048"
SHAPES = ["128,256,256", "128,1024,256", "128,256,1024", "128,128,64", "128,64,128",
          "2048,256,256", "2048,1024,256", "2048,256,1024"]


# ---- child side (the venv's python) -----------------------------------------------------------
def child_flops(onnx_path, batch):
    import numpy as np
    import onnx
    import onnxruntime as ort
    from bench_runtime import pattern
    m = onnx.load(onnx_path)
    g = m.graph
    inits = {i.name: list(i.dims) for i in g.initializer}
    nodes = [n for n in g.node if n.op_type in ("Conv", "MatMul", "Gemm")]
    have = {o.name for o in g.output}
    want = []
    for n in nodes:
        for t in list(n.input[:2]) + [n.output[0]]:
            if t and t not in inits and t not in want:
                want.append(t)
    for t in want:
        if t not in have:
            g.output.append(onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    x = pattern([d if isinstance(d, int) else batch for d in inp.shape])
    outs = sess.run(want, {inp.name: x})
    shape = dict(inits)
    shape.update({n: list(v.shape) for n, v in zip(want, outs)})
    macs = {"Conv": 0, "MatMul": 0, "Gemm": 0}
    for n in nodes:
        out = shape[n.output[0]]
        if n.op_type == "Conv":  # out [N, Co, *sp], W [Co, Ci/g, *k]
            macs["Conv"] += int(np.prod(out)) * int(np.prod(shape[n.input[1]][1:]))
        elif n.op_type == "MatMul":
            macs["MatMul"] += int(np.prod(out)) * int(shape[n.input[0]][-1])
        else:
            ta = [a.i for a in n.attribute if a.name == "transA"]
            a = shape[n.input[0]]
            macs["Gemm"] += int(np.prod(out)) * int(a[0] if ta and ta[0] else a[1])
    return {"macs": macs, "gflop": 2e-9 * sum(macs.values())}


# ---- driver side ------------------------------------------------------------------------------
def build_peak(build):
    out = os.path.join(build, "bench", "bench_peak")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    p = subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                        os.path.join(HERE, "bench_peak.c"), "-ldnnl", "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise SystemExit("roofline: bench_peak.c does not build (libdnnl-dev?): " + p.stdout[-600:])
    return out


def peak_runs(exe, threads, runs, shapes):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([exe, str(runs)] + shapes, stdout=subprocess.PIPE, text=True, env=env, check=True)
    return {"%d,%d,%d" % (r["m"], r["n"], r["k"]): r for r in map(json.loads, p.stdout.split("\n")[:-1])}


def latest_times(path):
    """{(model, batch): (ours, tf, ort)} from the last bench_nets table holding each row, and its heading."""
    rows, head, cur = {}, {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("## "):
                cur = line[3:].strip()
            m = re.match(r"\| (\w+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", line)
            if m and cur and "real networks" in cur:
                key = (m.group(1), int(m.group(2)))
                rows[key] = tuple(float(m.group(i)) for i in (3, 4, 5))
                head[key] = cur.split(" — ")[0]
    return rows, head


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--flops":  # the venv's side: [[onnx, batch], ...]
        print(json.dumps({"%s:%d" % (o, b): child_flops(o, b) for o, b in json.loads(sys.argv[2])}))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--python")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    py = args.python or os.path.join(args.build, "venv", "bin", "python")
    import run as bench_run_py
    load0 = bench_run_py.loadavg()

    exe = build_peak(args.build)
    one = peak_runs(exe, 1, args.runs, [SQUARE] + SHAPES)
    two = peak_runs(exe, 2, args.runs, [SQUARE] + SHAPES)
    best = max([SQUARE] + SHAPES, key=lambda s: one[s]["gflop_per_cpu_s"])
    peak = 2 * one[best]["gflop_per_cpu_s"]
    lines = ["", "## %s — roofline: bench_nets rows against the fp32 peak (bench/roofline.py)"
             % subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M UTC"], stdout=subprocess.PIPE, text=True).stdout.strip(),
             "", "- Command: `python3 %s`" % " ".join(shlex.quote(a) for a in sys.argv),
             "- Machine: %s; load average %s at the start, @LOAD_END@ at the end; git %s"
             % (bench_run_py.machine(), load0, bench_run_py.git_rev()), "",
             "Peak (oneDNN dnnl_sgemm, bench/bench_peak.c, %d calls per shape): GFLOP per CPU second on 1 thread "
             "(x2 = 2 idle cores), best wall GFLOP/s on 2 OpenMP threads" % args.runs, "",
             "| M,N,K | 1 thread GFLOP/CPU-s | x2 | 2 threads best wall GFLOP/s | 2 threads median wall GFLOP/s |",
             "|---|---|---|---|---|"]
    for s in [SQUARE] + SHAPES:
        lines.append("| %s | %.0f | %.0f | %.0f | %.0f |" % (s, one[s]["gflop_per_cpu_s"], 2 * one[s]["gflop_per_cpu_s"],
                                                          two[s]["best_gflops"], two[s]["median_gflops"]))
    lines += ["", "Peak used below: 2 x the best 1-thread rate (%s) = **%.0f GFLOP/s**." % (best, peak), ""]

    todo = [(os.path.join(args.build, "bench-nets", n + ".onnx"), b) for n in ORDER
            for b in ([1, 256] if n == "seed_cnn" else [1, 16])]
    p = subprocess.run([py, os.path.abspath(__file__), "--flops", json.dumps([t for t in todo if os.path.exists(t[0])])],
                       stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("roofline: counting the FLOPs failed (%s)" % py)
    flops = json.loads(p.stdout.strip().splitlines()[-1])
    times, head = latest_times(args.results)
    lines += ["| model | batch | GFLOP/call | ours GFLOP/s (% peak) | TF | ORT | goal ms | goal GFLOP/s | goal % peak | times from |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name in ORDER:
        onnx = os.path.join(args.build, "bench-nets", name + ".onnx")
        if not os.path.exists(onnx):
            lines.append("| %s | - | (no %s: run bench/bench_nets.py first) |" % (name, onnx))
            continue
        for b in ([1, 256] if name == "seed_cnn" else [1, 16]):
            gf = flops["%s:%d" % (onnx, b)]["gflop"]
            t = times.get((name, b))
            if not t:
                lines.append("| %s | %d | %.3f | (no bench_nets row) |" % (name, b, gf))
                continue
            ours, tf, ort = t
            goal = min(tf / TF_GOAL, ort / (ORT_B1_CNN_GOAL if name == "seed_cnn" and b == 1 else ORT_GOAL))

            def rate(ms):
                v = gf / ms * 1e3
                return "%.0f (%.0f%%)" % (v, 100 * v / peak)
            lines.append("| %s | %d | %.3f | %s | %s | %s | %.2f | %.0f | %.0f%% | %s |" % (
                name, b, gf, rate(ours), rate(tf), rate(ort), goal, gf / goal * 1e3, 100 * gf / goal * 1e3 / peak,
                head[(name, b)]))
    lines += ["", "- GFLOP/call: 2 x the multiply-adds of Conv/MatMul/Gemm (ONNX export, shapes from one ORT run); "
              "goal ms = min(TF / %.1f, ORT / %.1f) (seed_cnn b1: ORT / %.1f)" % (TF_GOAL, ORT_GOAL, ORT_B1_CNN_GOAL)]
    text = "\n".join(lines).replace("@LOAD_END@", bench_run_py.loadavg()) + "\n"
    print(text + ("" if args.no_record else "roofline: appended to bench/RESULTS.md"))
    if not args.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
