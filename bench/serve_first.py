#!/usr/bin/env python3
"""serve_first.py - a server's first requests after it loads a model: `savedmodel serve` started
fresh each round, REST predict of one 64x64x3 image (the bench nets' input), the first three
requests' times, with the load-time preparation on and off (SM_LOAD_PRELOAD=1 / 0, interleaved;
not a test).

  python3 bench/serve_first.py [--build build] [--model resnet50] [--rounds 8]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default=os.path.join(ROOT, "build"))
ap.add_argument("--model", default="resnet50")
ap.add_argument("--rounds", type=int, default=8)
args = ap.parse_args()
cli, rounds = os.path.join(args.build, "savedmodel"), args.rounds
base = tempfile.mkdtemp(prefix="serve_first.")
os.symlink(os.path.abspath(os.path.join(args.build, "bench-nets", args.model)), os.path.join(base, "1"))
body = json.dumps({"instances": [[[[0.5, 0.25, 0.125]] * 64] * 64]}).encode()


def one(pre):
    env = dict(os.environ, SM_LOAD_PRELOAD=pre)
    p = subprocess.Popen([cli, "serve", "--model_name", "r", "--model_base_path", base,
                          "--rest_api_port", "0", "--file_system_poll_wait_seconds", "0", "--rest_api_bind", "127.0.0.1"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    port = None
    while port is None:
        l = p.stdout.readline()
        if not l: raise SystemExit("server exited")
        m = re.search(r"port (\d+)", l) or re.search(r":(\d{4,5})\b", l)
        if m: port = int(m.group(1))
    url = "http://127.0.0.1:%d/v1/models/r" % port
    while True:
        try:
            st = json.loads(urllib.request.urlopen(url).read())
            if st["model_version_status"][0]["state"] == "AVAILABLE": break
        except Exception: pass
        time.sleep(0.02)
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        urllib.request.urlopen(urllib.request.Request(url + ":predict", body, {"Content-Type": "application/json"})).read()
        ts.append((time.perf_counter() - t0) * 1e3)
    p.terminate(); p.wait()
    return ts
res = {"1": [], "0": []}
l0 = os.getloadavg()[0]
for _ in range(rounds):
    for k in res: res[k].append(one(k))
med = lambda v: sorted(v)[len(v) // 2]
print("serve %s REST predict b1, %d rounds, load %.2f -> %.2f" % (args.model, rounds, l0, os.getloadavg()[0]))
for k, v in res.items():
    print("  SM_LOAD_PRELOAD=%s: first request %.1f ms, second %.1f, third %.1f (medians)" % (k, med([t[0] for t in v]), med([t[1] for t in v]), med([t[2] for t in v])))
os.remove(os.path.join(base, "1"))
os.rmdir(base)
