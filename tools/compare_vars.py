#!/usr/bin/env python3
"""compare_vars.py - compares the variables of two SavedModels as `savedmodel vars --all_tensors
--json` prints them: the same keys, dtypes and shapes, and values equal within a tolerance
(|a - b| <= atol + rtol * |b|). Standard library only (CI runs it without the venv).
usage: compare_vars.py A.json B.json [--atol X] [--rtol Y] [--exact]
Exit 0 when they agree; 1 with the worst differences listed otherwise."""
import argparse
import json
import sys


def flat(v):
    if isinstance(v, list):
        for x in v:
            yield from flat(x)
    else:
        yield v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--exact", action="store_true", help="values must be equal")
    o = ap.parse_args()
    va = {v["key"]: v for v in json.load(open(o.a))["variables"]}
    vb = {v["key"]: v for v in json.load(open(o.b))["variables"]}
    bad = []
    if set(va) != set(vb):
        bad.append(f"keys differ: {sorted(set(va) ^ set(vb))}")
    worst = 0.0
    for k in sorted(set(va) & set(vb)):
        x, y = va[k], vb[k]
        if x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
            bad.append(f"{k}: {x['dtype']} {x['shape']} vs {y['dtype']} {y['shape']}")
            continue
        for i, (p, q) in enumerate(zip(flat(x["value"]), flat(y["value"]))):
            if isinstance(p, str) or isinstance(q, str) or o.exact:
                if p != q:
                    bad.append(f"{k}[{i}]: {p} vs {q}")
                    break
                continue
            d = abs(p - q)
            worst = max(worst, d)
            if d > o.atol + o.rtol * abs(q):
                bad.append(f"{k}[{i}]: {p} vs {q} (|diff| {d:.3g})")
                break
    print(f"compare_vars: {len(va)} variables, largest |diff| {worst:.3g}")
    for b in bad[:10]:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
