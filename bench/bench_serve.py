#!/usr/bin/env python3
"""bench/bench_serve.py - `savedmodel serve` under load, REST and gRPC, against nginx, in one run (not a test).

  python3 bench/bench_serve.py [--build build] [--shared ../shared] [--duration 30] [--soak 60]
                               [--threads 2] [--connections 32] [--no-record] [--no-cnn]

(a) half_plus_two (../shared/fixtures/tf-serving/saved_model_half_plus_two_cpu), one server on a
    REST and a gRPC port, for --duration seconds each: wrk POSTs TF Serving's tutorial request
    {"instances": [1.0, 2.0, 5.0]} to :predict; wrk against nginx answering every POST with a fixed
    JSON body of the same size (the HTTP ceiling of this machine); h2load (nghttp2) sends the same
    request as a gRPC PredictionService/Predict (x = [1, 2, 5] in tensor_content), --connections
    HTTP/2 connections, one stream each. Goals: REST >= 0.6x nginx; gRPC >= REST.
(b) Soak (--soak seconds, 0: none): wrk at saturation while the server's RSS is sampled every
    second: no errors, flat memory (last RSS within 10% of the RSS after warm-up).
    --no-cnn: (a) and (b) only, and nothing recorded (an A/B of the server's settings through the
    environment, which the server inherits).
(c) The seed CNN (tests/fixtures/zoo/keras_seed_cnn: Conv2D(32,3,relu), MaxPooling2D(2), Flatten,
    Dense(64,relu), Dense(10)), one 28x28x1 image per request over REST (wrk) and gRPC (h2load):
    without batching (the server's default threads, and --rest_api_num_threads/--grpc_max_threads
    = --connections), and with --enable_batching (max_batch_size 32, batch_timeout_micros 0,
    num_batch_threads 1: a batch takes every request that queued while the one before ran, and
    the model's own thread pool spreads each batch over the cores; the default request threads,
    4 per core: with --connections of them the JSON decoding of the waiting requests starves the
    batch thread on a small machine); and again with batch_timeout_micros 500 and --connections
    request threads, so that batches form (mean batch printed for both). Goal: the better batched
    >= 2x the better unbatched. The seed CNN alone (bench_run, batch 1 and 32) gives the ceiling
    printed below the table: batching saves at most the model's CPU per image at batch 1 less at
    batch 32. The server's CPU time per answered request is reported beside the rates:
    on a machine shared with other work it varies far less than requests/s.
    Every answer is checked first: REST batched = unbatched, gRPC grpc-status 0 (nghttp).

wrk, nginx and h2load/nghttp come from Debian (tools/install-deps.sh --bench); what is absent is
skipped. Results are printed and appended to bench/RESULTS.md with the date, machine, load average
and command.
"""
import argparse
import json
import os
import platform
import re
import resource
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


def tool(name):
    return shutil.which(name) or (os.path.exists("/usr/sbin/" + name) and "/usr/sbin/" + name) or None


def pb_varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def pb_field(num, payload):
    """A protobuf field: bytes payloads length-delimited, ints as varints."""
    if isinstance(payload, bytes):
        return pb_varint(num << 3 | 2) + pb_varint(len(payload)) + payload
    return pb_varint(num << 3) + pb_varint(payload)


def grpc_predict_frame(model, alias, dims, floats):
    """A gRPC message frame holding PredictRequest{model_spec{name}, inputs{alias: DT_FLOAT tensor}}."""
    import struct
    shape = b"".join(pb_field(2, pb_field(1, d)) for d in dims)
    tensor = pb_field(1, 1) + pb_field(2, shape) + pb_field(4, struct.pack("<%df" % len(floats), *floats))
    msg = pb_field(1, pb_field(1, model.encode())) + pb_field(2, pb_field(1, alias.encode()) + pb_field(2, tensor))
    return b"\x00" + struct.pack(">I", len(msg)) + msg


GRPC_HEADERS = ["-H", "content-type: application/grpc", "-H", "te: trailers"]


def grpc_check(port, frame_path):
    """One Predict through nghttp: raises unless the answer has grpc-status 0."""
    url = "http://127.0.0.1:%d/tensorflow.serving.PredictionService/Predict" % port
    end = time.time() + 15
    out = b""
    while time.time() < end:
        out = subprocess.run([tool("nghttp"), "-v", "-d", frame_path] + GRPC_HEADERS + [url],
                             capture_output=True).stdout
        if re.search(rb"grpc-status: 0\b", out):
            return
        time.sleep(0.2)
    raise RuntimeError("gRPC Predict did not answer grpc-status 0: %r" % out[-400:])


def run_h2load(port, frame_path, seconds, threads, conns):
    url = "http://127.0.0.1:%d/tensorflow.serving.PredictionService/Predict" % port
    out = subprocess.run([tool("h2load"), "-c%d" % conns, "-t%d" % threads, "-m1", "-D%d" % seconds,
                          "-d", frame_path] + GRPC_HEADERS + [url], capture_output=True, text=True).stdout
    rps = re.search(r"finished in [\d.]+s, ([\d.]+) req/s", out)
    req = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", out)
    mean = re.search(r"time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", out)
    m = float(mean.group(1)) / (1000.0 if mean.group(2) == "us" else 1.0 if mean.group(2) == "ms" else 0.001) \
        if mean else None
    return {"rps": float(rps.group(1)) if rps else 0.0, "mean_ms": m, "requests": int(req.group(2)) if req else 0,
            "errors": int(req.group(4)) + int(req.group(5)) if req else 0}


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
BATCHING = "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 0 }\nnum_batch_threads { value: 1 }\n" \
           "max_enqueued_batches { value: 1000 }\n"
# Batches that form: requests wait up to 500 us for each other. As many request threads as
# connections: before REST predicts were parked while their batch forms (session 13), a
# libmicrohttpd pool thread that waited in the batcher held its other connections, so with the
# default threads at most that many requests could be in one batch; kept so that runs compare
# (SM_REST_PARK=0 in the server's environment brings the waiting back, for A/B runs).
BATCHING_FORMED = BATCHING.replace("batch_timeout_micros { value: 0 }", "batch_timeout_micros { value: 500 }")


def cnn_image():
    """One 28x28x1 image (a fixed pattern)."""
    return [[[((r * 28 + c) * 37 % 101) / 101.0] for c in range(28)] for r in range(28)]


def cnn_body():
    """The image as TF Serving's row-format predict request."""
    return json.dumps({"instances": [cnn_image()]}).encode()


def start_server(cli, args, log=None):
    """Starts `savedmodel serve` with a REST port and (when built in) a gRPC port, stderr to `log`;
    returns (proc, rest, grpc)."""
    rport, gport = free_port(), free_port()
    grpc = tool("h2load") and tool("nghttp") and subprocess.run(
        [cli, "serve", "--port=0"], capture_output=True, text=True, timeout=60).stderr.find("gRPC is not built in") < 0
    cmd = [cli, "serve", "--rest_api_port", str(rport), "--rest_api_bind", "127.0.0.1"] + args
    if grpc:
        cmd += ["--port", str(gport)]
    err = open(log, "w") if log else subprocess.DEVNULL
    try:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err), rport, gport if grpc else None
    finally:
        if log:
            err.close()


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def serve_cnn(cli, tmp, mode, threads, conns, seconds):
    """Serves the seed CNN (mode: "default", "threads" (as many request threads as connections),
    "batching" (default threads) or "formed" (BATCHING_FORMED, as many request threads as
    connections)); runs wrk, then h2load.
    Returns (REST figures, gRPC figures or None, REST answer)."""
    base = os.path.join(tmp, "cnn_base")
    if not os.path.exists(base):
        shutil.copytree(CNN_DIR, os.path.join(base, "1"))
    body = cnn_body()
    lua = os.path.join(tmp, "cnn.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n'
                % json.dumps(body.decode()))
    frame = os.path.join(tmp, "cnn.grpc")
    with open(frame, "wb") as f:
        f.write(grpc_predict_frame("cnn", "inputs", [1, 28, 28, 1], [v for row in cnn_image() for px in row for v in px]))
    args = ["--model_name", "cnn", "--model_base_path", base]
    if mode in ("threads", "formed"):
        args += ["--rest_api_num_threads", str(conns), "--grpc_max_threads", str(conns)]
    if mode in ("batching", "formed"):
        bp = os.path.join(tmp, "batching_%s.txt" % mode)
        with open(bp, "w") as f:
            f.write(BATCHING if mode == "batching" else BATCHING_FORMED)
        args += ["--enable_batching", "--batching_parameters_file", bp]
    log = os.path.join(tmp, "cnn_%s.log" % mode)
    srv, rport, gport = start_server(cli, args, log)
    try:
        url = "http://127.0.0.1:%d/v1/models/cnn:predict" % rport
        status, answer = wait_http(url, data=body)
        if status != 200:
            raise RuntimeError("CNN predict answered %d: %s" % (status, answer[:200]))
        rest = per_request_cpu(srv.pid, lambda: run_wrk(url, seconds, threads, conns, lua)[0])
        grpc = None
        if gport:
            grpc_check(gport, frame)
            grpc = per_request_cpu(srv.pid, lambda: run_h2load(gport, frame, seconds, threads, conns))
            grpc_check(gport, frame)
    finally:
        stop(srv)
    with open(log) as f:  # "Batching: N requests in M batches (X a batch)", REST and gRPC together
        m = re.search(r"Batching: .*\(([\d.]+) a batch\)", f.read())
    rest["per_batch"] = float(m.group(1)) if m else None
    return rest, grpc, json.loads(answer)


CNN_MODES = ("default", "threads", "batching", "formed")


def model_cpu_us(build):
    """The seed CNN alone: CPU microseconds per image at batch 1 and 32 (bench_run, one thread),
    {1: us, 32: us}, or None when the driver cannot be built."""
    sys.path.insert(0, HERE)
    import bench_runtime as br  # noqa: E402
    drv, err = br.build_driver(build)
    if not drv:
        print("model alone: skipped (%s)" % err)
        return None
    out = {}
    for b in (1, 32):
        p = subprocess.run([drv, CNN_DIR, "serve", "serving_default", str(b), str(2000 // b), "20", "1"],
                           stdout=subprocess.PIPE, text=True, timeout=300)
        if p.returncode != 0:
            return None
        out[b] = json.loads(p.stdout)["cpu_ms"] * 1000.0 / b
    return out


def cpu_s(pid):
    """User + system CPU seconds the process has used so far."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def tree_pids(pid):
    """pid and its child processes (nginx's workers), recursively."""
    out = [pid]
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            for c in f.read().split():
                out += tree_pids(int(c))
    except (OSError, ValueError):
        pass
    return out


def per_request_cpu(pid, fn):
    """Runs fn() (a load run), adds the server's CPU microseconds per answered request to its figures
    (the process and its children: nginx's workers)."""
    pids = tree_pids(pid)
    c0 = sum(cpu_s(p) for p in pids)
    k0 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the client (wrk, h2load): fn() runs and reaps it
    out = fn()
    k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    n = out.get("requests", 0)
    out["cpu_us"] = (sum(cpu_s(p) for p in pids) - c0) * 1e6 / n if n else 0.0
    out["client_cpu_us"] = (k1.ru_utime + k1.ru_stime - k0.ru_utime - k0.ru_stime) * 1e6 / n if n else 0.0
    return out


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
    ap.add_argument("--no-cnn", action="store_true", help="half_plus_two only (part a, and the soak): no seed CNN")
    a = ap.parse_args()

    cli = os.path.join(a.build, "savedmodel")
    base = os.path.join(a.shared, "fixtures", "tf-serving", "saved_model_half_plus_two_cpu")
    if not os.path.exists(base):
        sys.exit("skipped: %s absent" % base)
    if not tool("wrk"):
        sys.exit("skipped: wrk absent (tools/install-deps.sh --bench)")
    for t in ("nginx", "h2load", "nghttp"):
        if not tool(t):
            print("%s absent: its rows are skipped (tools/install-deps.sh --bench)" % t)
    tmp = tempfile.mkdtemp(prefix="bench_serve_")
    lua = os.path.join(tmp, "post.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n'
                % json.dumps(BODY.decode()))
    frame = os.path.join(tmp, "hpt.grpc")
    with open(frame, "wb") as f:
        f.write(grpc_predict_frame(MODEL, "x", [3], [1.0, 2.0, 5.0]))
    procs = []
    results = {}
    load_start = os.getloadavg()
    try:
        srv, port, gport = start_server(cli, ["--model_name", MODEL, "--model_base_path", base])
        procs.append(srv)
        url = "http://127.0.0.1:%d/v1/models/%s:predict" % (port, MODEL)
        status, answer = wait_http(url, data=BODY)
        print("serve answers %d: %s" % (status, answer.decode().strip()))

        if tool("nginx"):  # the same body size, fixed, straight from its config
            nport = free_port()
            conf = os.path.join(tmp, "nginx.conf")
            body = answer.decode().replace("\\", "\\\\").replace("'", "\\'")
            with open(conf, "w") as f:
                f.write("worker_processes auto;\ndaemon off;\npid %s/nginx.pid;\nerror_log %s/error.log;\n"
                        "events { worker_connections 1024; }\n"
                        "http { access_log off; server { listen 127.0.0.1:%d; location / {\n"
                        "  default_type application/json; return 200 '%s'; } } }\n" % (tmp, tmp, nport, body))
            ng = subprocess.Popen([tool("nginx"), "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            procs.append(ng)
            nurl = "http://127.0.0.1:%d/v1/models/%s:predict" % (nport, MODEL)
            _, nanswer = wait_http(nurl, data=BODY)
            assert len(nanswer) == len(answer), (len(nanswer), len(answer))

        results["serve"] = per_request_cpu(srv.pid, lambda: run_wrk(url, a.duration, a.threads, a.connections,
                                                                          lua)[0])
        if tool("nginx"):
            results["nginx"] = per_request_cpu(ng.pid, lambda: run_wrk(nurl, a.duration, a.threads, a.connections,
                                                                        lua)[0])
            stop(ng)
        if gport:
            grpc_check(gport, frame)
            results["grpc"] = per_request_cpu(srv.pid, lambda: run_h2load(gport, frame, a.duration, a.threads,
                                                                                a.connections))
            grpc_check(gport, frame)

        if a.soak > 0:  # saturate and watch RSS
            samples = []
            wrk = subprocess.Popen(["wrk", "-t%d" % a.threads, "-c%d" % a.connections, "-d%ds" % a.soak,
                                    "--latency", "-s", lua, url], stdout=subprocess.PIPE, text=True)
            procs.append(wrk)
            for _ in range(a.soak):
                time.sleep(1)
                samples.append(rss_kb(srv.pid))
            soak = parse_wrk(wrk.communicate()[0])
            warm = samples[min(5, len(samples) - 1)] if samples else 0
            soak.update({"rss_warm_kb": warm, "rss_last_kb": samples[-1] if samples else 0,
                         "rss_max_kb": max(samples) if samples else 0})
            results["soak"] = soak
        stop(srv)

        # The seed CNN: unbatched (default threads, then as many threads as connections), batched.
        answers = {}
        for mode in CNN_MODES if not a.no_cnn else ():
            results["cnn_" + mode], results["cnn_grpc_" + mode], answers[mode] = serve_cnn(
                cli, tmp, mode, a.threads, a.connections, a.duration)
        for mode in ("batching", "formed") if not a.no_cnn else ():
            p, b = answers["default"]["predictions"][0], answers[mode]["predictions"][0]
            if len(p) != 10 or any(abs(x - y) > 1e-5 * max(1.0, abs(x)) for x, y in zip(p, b)):
                raise RuntimeError("batched CNN answer %s differs from unbatched %s" % (b, p))
        model_cpu = model_cpu_us(a.build) if not a.no_cnn else None
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(tmp, ignore_errors=True)
    load_end = os.getloadavg()

    def goal(ok):
        return "met" if ok else "NOT met"

    s = results["serve"]
    lines = ["| half_plus_two, %d connections | requests/s | p50 ms | p99 ms | mean ms | server CPU us/request "
             "| errors |" % a.connections, "|---|---|---|---|---|---|---|",
             "| savedmodel serve, REST (wrk) | %.0f | %s | %s | | %.1f | %d |" % (
                 s["rps"], s["p50_ms"], s["p99_ms"], s["cpu_us"], s["non2xx"] + s["socket_errors"])]
    if "nginx" in results:
        n = results["nginx"]
        lines.append("| nginx, fixed body of the same size (wrk) | %.0f | %s | %s | | %.1f | %d |" % (
            n["rps"], n["p50_ms"], n["p99_ms"], n["cpu_us"], n["non2xx"] + n["socket_errors"]))
    if "grpc" in results:
        g = results["grpc"]
        lines.append("| savedmodel serve, gRPC Predict (h2load) | %.0f | | | %.2f | %.1f | %d |" % (
            g["rps"], g["mean_ms"] or 0, g["cpu_us"], g["errors"]))
    lines.append("")
    if "nginx" in results:
        r = s["rps"] / results["nginx"]["rps"] if results["nginx"]["rps"] else 0.0
        nc = results["nginx"]["cpu_us"] / s["cpu_us"] if s["cpu_us"] else 0.0
        lines.append("REST/nginx = %.2f (goal >= 0.6: %s); server CPU per request, nginx / REST = %.2f "
                     "(load moves it less than requests/s)" % (r, goal(r >= 0.6), nc))
    if "grpc" in results:
        r = results["grpc"]["rps"] / s["rps"] if s["rps"] else 0.0
        gc = s["cpu_us"] / results["grpc"]["cpu_us"] if results["grpc"]["cpu_us"] else 0.0
        lines.append("gRPC/REST = %.2f (goal >= 1: %s); server CPU per request, REST / gRPC = %.2f" % (
            r, goal(r >= 1.0), gc))
        # Client and server share the cores: a client that costs more per request lowers its side's
        # rate. Both clients run with the same threads and connections; their own CPU is shown.
        lines.append("client CPU per request: wrk (REST) %.1f us, h2load (gRPC) %.1f us; server + client CPU per "
                     "request, REST / gRPC = %.2f" % (s["client_cpu_us"], results["grpc"]["client_cpu_us"],
                                                     (s["cpu_us"] + s["client_cpu_us"]) /
                                                     ((results["grpc"]["cpu_us"] + results["grpc"]["client_cpu_us"]) or 1)))
    if "soak" in results:
        k = results["soak"]
        flat = k["rss_warm_kb"] and k["rss_last_kb"] <= k["rss_warm_kb"] * 1.10
        lines.append("soak %d s: %d requests, %d errors, RSS warm %d kB, last %d kB, max %d kB (%s)" % (
            a.soak, k["requests"], k["non2xx"] + k["socket_errors"], k["rss_warm_kb"], k["rss_last_kb"],
            k["rss_max_kb"], "flat" if flat else "NOT flat"))
    if a.no_cnn:
        lines.append("load average %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end" % (load_start + load_end))
        print("\n".join(lines))
        return
    lines += ["", "| seed CNN, one 28x28x1 image per request | REST images/s | REST p50 / p99 ms | REST CPU us/image "
              "| gRPC images/s | gRPC mean ms | gRPC CPU us/image | errors |", "|---|---|---|---|---|---|---|---|"]
    labels = {"default": "without batching (default threads)",
              "threads": "without batching, %d request threads" % a.connections,
              "batching": "--enable_batching (32, timeout 0, 1 batch thread), default threads",
              "formed": "--enable_batching (32, timeout 500 us, 1 batch thread), %d request threads" % a.connections}
    for mode in CNN_MODES:
        c, g = results["cnn_" + mode], results["cnn_grpc_" + mode]
        lines.append("| %s | %.0f | %s / %s | %.0f | %s | %s | %s | %d |" % (
            labels[mode], c["rps"], c["p50_ms"], c["p99_ms"], c["cpu_us"], "%.0f" % g["rps"] if g else "-",
            "%.2f" % g["mean_ms"] if g and g["mean_ms"] else "-", "%.0f" % g["cpu_us"] if g else "-",
            c["non2xx"] + c["socket_errors"] + (g["errors"] if g else 0)))
    best = max(results["cnn_default"]["rps"], results["cnn_threads"]["rps"])
    r = max(results["cnn_batching"]["rps"], results["cnn_formed"]["rps"]) / best if best else 0.0
    lines.append("")
    for mode in ("batching", "formed"):
        if results["cnn_" + mode].get("per_batch"):
            lines.append("mean batch, %s: %.2f requests (REST and gRPC runs together)" % (
                "timeout 0" if mode == "batching" else "timeout 500 us", results["cnn_" + mode]["per_batch"]))
    if model_cpu:
        # What batching can save: the model's CPU per image at batch 1 less at batch 32; the rest of
        # a request's cost (HTTP, JSON, threads) stays per request whatever the batch.
        unb = min(results["cnn_default"]["cpu_us"], results["cnn_threads"]["cpu_us"])
        save = max(0.0, model_cpu[1] - model_cpu[32])
        lines.append("model alone (bench_run, 1 thread): %.1f us CPU/image at batch 1, %.1f at batch 32; ceiling of "
                     "batching = unbatched server CPU / (that less %.1f us) = %.0f / %.0f = %.2fx (before the client's "
                     "CPU on the same cores)" % (model_cpu[1], model_cpu[32], save, unb, max(unb - save, 1.0),
                                                 unb / max(unb - save, 1.0)))
    lines += ["", "REST CNN best batched / best unbatched = %.2f (goal >= 2: %s); server CPU per image, best unbatched / "
              "best batched = %.2f" % (r, goal(r >= 2.0), min(results["cnn_default"]["cpu_us"], results["cnn_threads"]["cpu_us"]) /
                                       (min(results["cnn_batching"]["cpu_us"], results["cnn_formed"]["cpu_us"]) or 1))]
    if results["cnn_grpc_batching"]:
        gb = max(results["cnn_grpc_default"]["rps"], results["cnn_grpc_threads"]["rps"])
        r = max(results["cnn_grpc_batching"]["rps"], results["cnn_grpc_formed"]["rps"]) / gb if gb else 0.0
        lines.append("gRPC CNN batched / best unbatched = %.2f (goal >= 2: %s)" % (r, goal(r >= 2.0)))
    lines.append("load average %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end" % (load_start + load_end))
    print("\n".join(lines))
    if not a.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n## bench_serve.py, %s, %s (%d cores)\n\n`%s`\n\n%s\n" % (
                time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), platform.node(), os.cpu_count() or 0,
                " ".join(["python3", "bench/bench_serve.py"] + sys.argv[1:]), "\n".join(lines)))


if __name__ == "__main__":
    main()
