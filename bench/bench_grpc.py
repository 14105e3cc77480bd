#!/usr/bin/env python3
"""bench/bench_grpc.py - `savedmodel serve` half_plus_two over gRPC and over REST, same client
machinery, one run (not a test).

  PYTHON bench/bench_grpc.py [--build build] [--shared ../shared] [--duration 10] [--connections 32]
                             [--no-record]

PYTHON has grpcio and tensorflow-serving-api (tools/venv.sh). One server (--port 0, --rest_api_port 0)
serves ../shared/fixtures/tf-serving/saved_model_half_plus_two_cpu. For --duration seconds each,
--connections client threads send TF Serving's tutorial request (x = [1.0, 2.0, 5.0]) back to back:
gRPC Predict through the tensorflow_serving.apis stub (one channel per thread), then REST :predict
through http.client keep-alive connections. Prints requests/s, p50 and p99 latency per side and the
load average; appends them to bench/RESULTS.md. The client is Python: on a small machine it is
part of what is measured (both sides pay it alike), so the ratio means more than the rates.
"""
import argparse
import http.client
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def percentile(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))] if v else float("nan")


def load(fn_factory, conns, seconds):
    """Runs conns threads calling their own fn() until the time is up; returns (n, latencies)."""
    lats, errs, lock = [], [0], threading.Lock()
    stop = time.monotonic() + seconds

    def worker():
        fn = fn_factory()
        mine, bad = [], 0
        while time.monotonic() < stop:
            t = time.perf_counter()
            try:
                fn()
                mine.append(time.perf_counter() - t)
            except Exception:
                bad += 1
        with lock:
            lats.extend(mine)
            errs[0] += bad

    ts = [threading.Thread(target=worker) for _ in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return len(lats), lats, errs[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(ROOT), "shared"))
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    import grpc
    import numpy as np
    from tensorflow.core.framework import tensor_pb2, types_pb2
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    base = os.path.join(a.shared, "fixtures", "tf-serving", "saved_model_half_plus_two_cpu")
    if not os.path.isdir(base):
        print(f"skipped: {base} absent")
        return 0
    p = subprocess.Popen([os.path.join(a.build, "savedmodel"), "serve", "--model_name", "half_plus_two",
                          "--model_base_path", base, "--port", "0", "--rest_api_port", "0"],
                         stderr=subprocess.PIPE, text=True)
    gport = rport = None
    while gport is None or rport is None:
        line = p.stderr.readline()
        if not line:
            raise SystemExit("server exited")
        m = re.search(r"Running gRPC ModelServer at [^:]+:(\d+)", line)
        gport = int(m.group(1)) if m else gport
        m = re.search(r"Exporting HTTP/REST API at:[^:]+:(\d+)", line)
        rport = int(m.group(1)) if m else rport
    try:
        req = predict_pb2.PredictRequest()
        req.model_spec.name = "half_plus_two"
        tp = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_content=np.array([1, 2, 5], np.float32).tobytes())
        tp.tensor_shape.dim.add(size=3)
        req.inputs["x"].CopyFrom(tp)

        def grpc_client():
            stub = prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(f"127.0.0.1:{gport}"))
            return lambda: stub.Predict(req, timeout=30)

        body = json.dumps({"instances": [1.0, 2.0, 5.0]})

        def rest_client():
            c = http.client.HTTPConnection("127.0.0.1", rport, timeout=30)

            def call():
                c.request("POST", "/v1/models/half_plus_two:predict", body, {"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    raise RuntimeError(r.status)
            return call

        grpc_client()()  # warm-up, and a check that it answers
        rows = []
        for side, f in (("gRPC Predict", grpc_client), ("REST :predict", rest_client)):
            la0 = os.getloadavg()[0]
            n, lats, errs = load(f, a.connections, a.duration)
            rows.append((side, n / a.duration, percentile(lats, 0.5) * 1e3, percentile(lats, 0.99) * 1e3, errs,
                         la0))
    finally:
        p.terminate()
        p.wait(timeout=60)
    out = [f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} — gRPC vs REST (bench/bench_grpc.py)", "",
           f"`{' '.join(sys.argv)}` on {platform.node()} ({os.cpu_count()} cores), {a.connections} Python client "
           f"threads, {a.duration} s each", "",
           "| side | requests/s | p50 ms | p99 ms | errors | load average at start |", "|---|---|---|---|---|---|"]
    out += [f"| {s} | {r:.0f} | {p50:.2f} | {p99:.2f} | {e} | {la:.2f} |" for s, r, p50, p99, e, la in rows]
    out += ["", f"gRPC/REST = {rows[0][1] / rows[1][1]:.2f}", ""]
    print("\n".join(out))
    if not a.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n" + "\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
