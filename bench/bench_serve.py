#!/usr/bin/env python3
"""bench/bench_serve.py - `savedmodel serve` under load against nginx, in one run (not a test).

  python3 bench/bench_serve.py [--build build] [--shared ../shared] [--duration 30] [--soak 60]
                               [--threads 2] [--connections 32] [--no-record]

(a) Throughput: wrk on loopback POSTs TF Serving's tutorial request {"instances": [1.0, 2.0, 5.0]}
    to /v1/models/half_plus_two:predict (../shared/fixtures/tf-serving/saved_model_half_plus_two_cpu)
    for --duration seconds: requests/s, p50 and p99 latency, errors. The same wrk run against nginx
    answering every POST with a fixed JSON body of the same size is the HTTP ceiling of this
    machine. Goal: at least half of nginx's rate.
(b) Soak: wrk at saturation for --soak seconds while the server's RSS is sampled every second:
    no errors (non-2xx, socket errors) and flat memory (last RSS within 10% of the RSS after warm-up).
(c) The seed CNN (tests/fixtures/zoo/keras_seed_cnn: Conv2D(32,3,relu), MaxPooling2D(2), Flatten,
    Dense(64,relu), Dense(10)), served once without and once with --enable_batching
    (BatchingParameters: max_batch_size 32, batch_timeout_micros 1000, num_batch_threads 1), wrk
    POSTing one 28x28x1 image per request for --duration seconds: images/s, p50 and p99 latency.
    Every answer is checked against the unbatched one first. No goal; the issue asks for both figures.

wrk and nginx come from Debian (apt-get install wrk nginx-light when missing). Results are printed
and appended to bench/RESULTS.md with the date, machine and command.
"""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BODY = b'{"instances": [1.0, 2.0, 5.0]}'
MODEL = "half_plus_two"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ensure_tools():
    missing = [t for t in ("wrk", "nginx") if not shutil.which(t) and not os.path.exists("/usr/sbin/" + t)]
    if missing:
        print("installing wrk nginx-light ...", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "wrk", "nginx-light"], check=True)


def wait_http(url, timeout=15.0, data=None):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=2) as r:
                return r.status, r.read()
        except Exception:
            time.sleep(0.1)
    raise RuntimeError("no answer from %s within %.0f s" % (url, timeout))


def parse_wrk(out):
    def lat(p):
        m = re.search(r"^\s*%s%%\s+([\d.]+)(us|ms|s)\s*$" % p, out, re.M)
        if not m:
            return None
        v = float(m.group(1))
        return v / 1000.0 if m.group(2) == "us" else v * 1000.0 if m.group(2) == "s" else v
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    total = re.search(r"(\d+) requests in", out)
    return {
        "rps": float(rps.group(1)) if rps else 0.0,
        "p50_ms": lat(50),
        "p99_ms": lat(99),
        "requests": int(total.group(1)) if total else 0,
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": sum(int(x) for x in sock.groups()) if sock else 0,
    }


def run_wrk(url, seconds, threads, conns, lua):
    cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % seconds, "--latency", "-s", lua, url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return parse_wrk(out), out


CNN_DIR = os.path.join(ROOT, "tests", "fixtures", "zoo", "keras_seed_cnn", "model")
BATCHING = "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 1000 }\nnum_batch_threads { value: 1 }\n" \
           "max_enqueued_batches { value: 1000 }\n"


def cnn_body():
    """One 28x28x1 image (a fixed pattern) as TF Serving's row-format predict request."""
    img = [[[((r * 28 + c) * 37 % 101) / 101.0] for c in range(28)] for r in range(28)]
    return json.dumps({"instances": [img]}).encode()


def serve_cnn(cli, tmp, batching, threads, conns, seconds):
    """Serves the seed CNN as version 1 under tmp/cnn_base, runs wrk on it; returns (figures, answer)."""
    base = os.path.join(tmp, "cnn_base")
    if not os.path.exists(base):
        shutil.copytree(CNN_DIR, os.path.join(base, "1"))
    body = cnn_body()
    lua = os.path.join(tmp, "cnn.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n'
                % json.dumps(body.decode()))
    port = free_port()
    cmd = [cli, "serve", "--model_name", "cnn", "--model_base_path", base, "--rest_api_port", str(port),
           "--rest_api_bind", "127.0.0.1"]
    if batching:
        bp = os.path.join(tmp, "batching.txt")
        with open(bp, "w") as f:
            f.write(BATCHING)
        cmd += ["--enable_batching", "--batching_parameters_file", bp]
    srv = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = "http://127.0.0.1:%d/v1/models/cnn:predict" % port
        status, answer = wait_http(url, data=body)
        if status != 200:
            raise RuntimeError("CNN predict answered %d: %s" % (status, answer[:200]))
        fig, _ = run_wrk(url, seconds, threads, conns, lua)
        return fig, json.loads(answer)
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            srv.kill()


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(ROOT), "shared"))
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--soak", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()

    cli = os.path.join(a.build, "savedmodel")
    base = os.path.join(a.shared, "fixtures", "tf-serving", "saved_model_half_plus_two_cpu")
    if not os.path.exists(base):
        sys.exit("skipped: %s absent" % base)
    if subprocess.run([cli, "serve", "--help"], capture_output=True).returncode not in (0, 2):
        sys.exit("%s has no serve command yet" % cli)
    ensure_tools()
    tmp = tempfile.mkdtemp(prefix="bench_serve_")
    lua = os.path.join(tmp, "post.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n'
                % json.dumps(BODY.decode()))
    procs = []
    results = {}
    try:
        port = free_port()
        srv = subprocess.Popen([cli, "serve", "--model_name", MODEL, "--model_base_path", base,
                                "--rest_api_port", str(port), "--rest_api_bind", "127.0.0.1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(srv)
        url = "http://127.0.0.1:%d/v1/models/%s:predict" % (port, MODEL)
        status, answer = wait_http(url, data=BODY)
        print("serve answers %d: %s" % (status, answer.decode().strip()))

        # nginx: the same body size, fixed, straight from its config.
        nport = free_port()
        conf = os.path.join(tmp, "nginx.conf")
        body = answer.decode().replace("\\", "\\\\").replace("'", "\\'")
        with open(conf, "w") as f:
            f.write("worker_processes auto;\ndaemon off;\npid %s/nginx.pid;\nerror_log %s/error.log;\n"
                    "events { worker_connections 1024; }\n"
                    "http { access_log off; server { listen 127.0.0.1:%d; location / {\n"
                    "  default_type application/json; return 200 '%s'; } } }\n" % (tmp, tmp, nport, body))
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        ng = subprocess.Popen([nginx, "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(ng)
        nurl = "http://127.0.0.1:%d/v1/models/%s:predict" % (nport, MODEL)
        _, nanswer = wait_http(nurl, data=BODY)
        assert len(nanswer) == len(answer), (len(nanswer), len(answer))

        results["serve"], _ = run_wrk(url, a.duration, a.threads, a.connections, lua)
        results["nginx"], _ = run_wrk(nurl, a.duration, a.threads, a.connections, lua)

        # Soak: saturate and watch RSS.
        samples = []
        wrk = subprocess.Popen(["wrk", "-t%d" % a.threads, "-c%d" % a.connections, "-d%ds" % a.soak, "--latency",
                                "-s", lua, url], stdout=subprocess.PIPE, text=True)
        procs.append(wrk)
        for _ in range(a.soak):
            time.sleep(1)
            samples.append(rss_kb(srv.pid))
        soak = parse_wrk(wrk.communicate()[0])
        warm = samples[min(5, len(samples) - 1)] if samples else 0
        soak.update({"rss_warm_kb": warm, "rss_last_kb": samples[-1] if samples else 0,
                     "rss_max_kb": max(samples) if samples else 0})
        results["soak"] = soak

        # The seed CNN, unbatched then batched: same request, same answer expected.
        results["cnn"], plain = serve_cnn(cli, tmp, False, a.threads, a.connections, a.duration)
        results["cnn_batched"], batched = serve_cnn(cli, tmp, True, a.threads, a.connections, a.duration)
        p, b = plain["predictions"][0], batched["predictions"][0]
        if len(p) != 10 or any(abs(x - y) > 1e-5 * max(1.0, abs(x)) for x, y in zip(p, b)):
            raise RuntimeError("batched CNN answer %s differs from unbatched %s" % (b, p))
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    s, n, k = results["serve"], results["nginx"], results["soak"]
    ratio = s["rps"] / n["rps"] if n["rps"] else 0.0
    flat = k["rss_warm_kb"] and k["rss_last_kb"] <= k["rss_warm_kb"] * 1.10
    lines = [
        "| side | requests/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|",
        "| savedmodel serve | %.0f | %s | %s | %d |" % (s["rps"], s["p50_ms"], s["p99_ms"], s["non2xx"] + s["socket_errors"]),
        "| nginx (fixed body) | %.0f | %s | %s | %d |" % (n["rps"], n["p50_ms"], n["p99_ms"], n["non2xx"] + n["socket_errors"]),
        "",
        "serve/nginx = %.2f (goal >= 0.5: %s)" % (ratio, "met" if ratio >= 0.5 else "NOT met"),
        "soak %d s: %d requests, %d errors, RSS warm %d kB, last %d kB, max %d kB (%s)" % (
            a.soak, k["requests"], k["non2xx"] + k["socket_errors"], k["rss_warm_kb"], k["rss_last_kb"],
            k["rss_max_kb"], "flat" if flat else "NOT flat"),
        "",
        "| seed CNN, one 28x28x1 image per request | images/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|",
    ]
    for key, label in (("cnn", "without batching"), ("cnn_batched", "--enable_batching (max_batch_size 32, timeout 1 ms)")):
        c = results[key]
        lines.append("| %s | %.0f | %s | %s | %d |" % (label, c["rps"], c["p50_ms"], c["p99_ms"],
                                                      c["non2xx"] + c["socket_errors"]))
    print("\n".join(lines))
    if not a.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n## bench_serve.py, %s, %s (%d cores)\n\n`%s`\n\n%s\n" % (
                time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), platform.node(), os.cpu_count() or 0,
                " ".join(["python3", "bench/bench_serve.py"] + sys.argv[1:]), "\n".join(lines)))


if __name__ == "__main__":
    main()
