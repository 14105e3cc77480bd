#!/usr/bin/env python3
"""tools/gpu_compare.py - every zoo model's golden cases run on the GPU and on the CPU, compared.

  python3 tools/gpu_compare.py --cli build/savedmodel [--zoo tests/fixtures/zoo] [--device gpu]
                               [--md OUT.md] [--budget SECONDS]

For each tests/fixtures/zoo/<model>/golden/outputs/<case>/signature.json whose inputs are .npy
files (string inputs, no inputs and stateful sequences are left out), `savedmodel run --device cpu` and
`savedmodel run --device gpu` (--device sets the second side; cpu checks this driver without a GPU)
write every output with --outdir; float outputs must agree within 1e-4 x max(1, max |cpu|), others
exactly. Prints one line per case and a summary, writes a markdown block with --md, and exits 1
when a case differs or fails on the GPU side only (0 otherwise). Cases are cut off (and counted)
once --budget seconds have passed.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def run(cli, case_dir, sig, device, outdir):
    ins = ";".join(f"{k}={os.path.join(case_dir, v['file'])}" for k, v in sig["inputs"].items())
    cmd = [cli, "run", "--dir", os.path.join(case_dir, "..", "..", "..", "model"), "--tag_set", ",".join(sig["tags"]),
           "--signature_def", sig["signature"], "--inputs", ins, "--outdir", outdir, "--device", device]
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300)
    return p.returncode, p.stderr.strip().splitlines()[-1:] if p.stderr else []


def compare(a_dir, b_dir):
    worst = 0.0
    for f in sorted(os.listdir(a_dir)):
        a, b = np.load(os.path.join(a_dir, f)), np.load(os.path.join(b_dir, f))
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{f}: shape/dtype {a.shape} {a.dtype} vs {b.shape} {b.dtype}", None
        if a.dtype.kind == "f":
            scale = max(1.0, float(np.nanmax(np.abs(a))) if a.size else 1.0)
            diff = float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
            if np.any(np.isnan(a) != np.isnan(b)) or diff > 1e-4 * scale:
                return f"{f}: max |diff| {diff:.3g} over scale {scale:.3g}", None
            worst = max(worst, diff / scale)
        elif not np.array_equal(a, b):
            return f"{f}: values differ", None
    return None, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--zoo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                                                  "zoo"))
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--md")
    ap.add_argument("--budget", type=float, default=1e9)
    ap.add_argument("--only", help="comma-separated model names")
    a = ap.parse_args()
    t0 = time.time()
    cases = sorted(glob.glob(os.path.join(a.zoo, "*", "golden", "outputs", "*", "signature.json")))
    only = set(a.only.split(",")) if a.only else None
    rows, counts = [], {"ok": 0, "differs": 0, "gpu-fails": 0, "cpu-fails": 0, "left-out": 0, "cut-off": 0}
    for sj in cases:
        case_dir = os.path.dirname(sj)
        model = sj.split(os.sep)[-5]
        if only and model not in only:
            continue
        sig = json.load(open(sj))
        name = f"{model}/{os.path.basename(case_dir)}"
        if "step" in sig or not sig["inputs"] or any(not v["file"].endswith(".npy") for v in sig["inputs"].values()):
            counts["left-out"] += 1
            continue
        if time.time() - t0 > a.budget:
            counts["cut-off"] += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            cpu, dev = os.path.join(tmp, "cpu"), os.path.join(tmp, "dev")
            rc_c, err_c = run(a.cli, case_dir, sig, "cpu", cpu)
            rc_g, err_g = run(a.cli, case_dir, sig, a.device, dev)
            if rc_c:
                kind, why = "cpu-fails", " ".join(err_c)
            elif rc_g:
                kind, why = "gpu-fails", " ".join(err_g)
            else:
                why, worst = compare(cpu, dev)
                kind = "differs" if why else "ok"
                why = why or f"max rel diff {worst:.2g}"
        counts[kind] += 1
        rows.append((name, kind, why))
        print(f"{kind:9} {name}: {why}", flush=True)
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    print(f"summary: {summary} ({time.time() - t0:.0f} s)")
    if a.md:
        with open(a.md, "w") as f:
            f.write(f"### GPU vs CPU on the zoo ({a.device} side)\n\n{summary}\n\n| case | result | detail |\n|---|---|---|\n")
            for r in rows:
                f.write("| %s | %s | %s |\n" % (r[0], r[1], r[2].replace("|", "\\|")[:300]))
    return 1 if counts["differs"] or counts["gpu-fails"] else 0


if __name__ == "__main__":
    sys.exit(main())
