#!/usr/bin/env python3
"""test_grpc_serving.py - `savedmodel serve --port` against TF Serving's own Python gRPC client.

Usage: PYTHON test_grpc_serving.py [--build BUILD_DIR]   (PYTHON has tensorflow, grpcio and
tensorflow-serving-api; tools/venv.sh installs them). One server with a model_config_file serves
half_plus_two (../shared/fixtures/tf-serving, left out when absent) and zoo models; the real
tensorflow_serving.apis stubs call Predict (float, int, string, several inputs, named signatures,
output_filter, tensor_content and typed *_val inputs), Classify, Regress, MultiInference,
GetModelMetadata, GetModelStatus and HandleReloadConfigRequest, and the error cases. TensorFlow
computes every expected value (tf.saved_model.load on the same directory); every answer is also
compared with the REST API's answer to the same request, and the error codes and messages with
TF Serving's (predict_util.cc, classifier.cc, get_model_metadata_impl.cc, ...). Also: a second
server on the same gRPC port or REST port must exit non-zero with "Address already in use"; and a
server with --enable_batching answers concurrent gRPC and REST clients with TF's outputs for each
one's own rows, every request counted by the batcher; and one without batching answers concurrent
gRPC clients of a short-running, then a longer-running, then the short-running model again (its
poller count moving from one to one per core and back) with TF's outputs.
Prints 'N passed, N failed'; exits 1 on any failure, 0 with "skipped" when grpc, the client or
gRPC in the CLI is missing.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZOO = os.path.join(ROOT, "tests", "fixtures", "zoo")
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        note = fn()
        results["passed"] += 1
        print(f"ok   {name}" + (f" ({note})" if note else ""))
    except Exception:  # every failure is reported, the run goes on
        results["failed"] += 1
        print(f"FAIL {name}")
        traceback.print_exc()


def start_server(cli, cfg, extra=()):
    p = subprocess.Popen([cli, "serve", "--model_config_file", cfg, "--port=0", "--rest_api_port=0",
                          "--file_system_poll_wait_seconds=0", *extra],
                         stderr=subprocess.PIPE, text=True)
    grpc_port = rest_port = None
    log = []
    while grpc_port is None or rest_port is None:
        line = p.stderr.readline()
        if not line:
            raise RuntimeError("server exited: " + "".join(log))
        log.append(line)
        m = re.search(r"Running gRPC ModelServer at [^:]+:(\d+)", line)
        if m:
            grpc_port = int(m.group(1))
        m = re.search(r"Exporting HTTP/REST API at:[^:]+:(\d+)", line)
        if m:
            rest_port = int(m.group(1))
    return p, grpc_port, rest_port


def concurrently(n, client):
    """Runs client(k) on n threads (k < n); each returns how many answers it checked and raises on the
    first wrong one. Returns (answers checked, failures)."""
    import threading
    done, fails = [0] * n, []

    def run(k):
        try:
            done[k] = client(k)
        except Exception as e:  # collected, reported after the join
            fails.append(f"client {k}: {e!r}"[:400])

    ts = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(done), fails


def rest(port, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 data=None if body is None else json.dumps(body).encode(),
                                 method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    cli = os.path.join(args.build, "savedmodel")
    try:
        import grpc
        import numpy as np
        import tensorflow as tf
        from tensorflow.core.framework import tensor_pb2
        from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2, get_model_status_pb2,
                                             inference_pb2, model_management_pb2, model_service_pb2_grpc,
                                             predict_pb2, prediction_service_pb2_grpc, regression_pb2)
    except ImportError as e:
        print(f"skipped: {e} (tools/venv.sh installs grpcio and tensorflow-serving-api)")
        return 0
    probe = subprocess.run([cli, "serve", "--port=0"], capture_output=True, text=True, timeout=60)
    if "gRPC is not built in" in probe.stderr:
        print("skipped: this savedmodel was built without libgrpc")
        return 0

    tmp = tempfile.mkdtemp(prefix="sm_grpc_")
    server = None
    try:
        models = {"cr": "tf1_classify_regress", "ms": "tf2_multi_sig", "vocab": "tf1_vocab", "mio": "keras_multi_io",
                  "def": "tf2_defaults"}
        bases = {}
        for name, zoo in models.items():
            os.makedirs(os.path.join(tmp, name))
            os.symlink(os.path.join(ZOO, zoo, "model"), os.path.join(tmp, name, "1"))
            bases[name] = os.path.join(tmp, name)
        hp2 = os.path.join(SHARED, "fixtures", "tf-serving", "saved_model_half_plus_two_cpu")
        if os.path.isdir(hp2):
            bases["hp2"] = hp2
        else:
            print(f"skipped: half_plus_two ({hp2} absent)")
        cfg = os.path.join(tmp, "models.config")

        def config_text(names):
            return "model_config_list {\n" + "".join(
                f'  config {{ name: "{n}" base_path: "{bases[n]}" model_platform: "tensorflow" }}\n'
                for n in names) + "}\n"

        with open(cfg, "w") as f:
            f.write(config_text(sorted(bases)))
        sock = os.path.join(tmp, "grpc.sock")
        server, gport, rport = start_server(cli, cfg, ["--grpc_socket_path", sock])
        channel = grpc.insecure_channel(f"127.0.0.1:{gport}")
        ps = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        ms = model_service_pb2_grpc.ModelServiceStub(channel)
        tfm = {n: tf.saved_model.load(os.path.join(b, "1") if n != "hp2" else os.path.join(b, "00000123"))
               for n, b in bases.items()}

        def predict(model, inputs, signature="", output_filter=(), version=None, label=None):
            req = predict_pb2.PredictRequest()
            req.model_spec.name = model
            req.model_spec.signature_name = signature
            if version is not None:
                req.model_spec.version.value = version
            if label is not None:
                req.model_spec.version_label = label
            for k, v in inputs.items():
                req.inputs[k].CopyFrom(v if isinstance(v, tensor_pb2.TensorProto)
                                       else tf.make_tensor_proto(v))
            req.output_filter.extend(output_filter)
            return ps.Predict(req, timeout=60)

        def same(got_proto, want, what):
            got = tf.make_ndarray(got_proto)
            want = np.asarray(want)
            assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != TF {want.dtype}"
            assert got.shape == want.shape, f"{what}: shape {got.shape} != TF {want.shape}"
            if want.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)
            else:
                assert (got == want).all(), f"{what}: {got} != TF {want}"

        def tf_run(name, sig, **kw):
            return {k: v.numpy() for k, v in tfm[name].signatures[sig](**kw).items()}

        def error(fn, code, needle):
            try:
                fn()
            except grpc.RpcError as e:
                assert e.code() == code, f"code {e.code()} != {code}: {e.details()}"
                assert needle in e.details(), f"{needle!r} not in {e.details()!r}"
                return e.details()
            raise AssertionError("no error")

        # ---- Predict ----
        if "hp2" in bases:
            def hp2_float():
                x = np.array([[1.0], [2.0], [5.0]], np.float32)
                r = predict("hp2", {"x": x})
                same(r.outputs["y"], tf_run("hp2", "serving_default", x=tf.constant(x))["y"], "y")
                assert r.model_spec.name == "hp2" and r.model_spec.version.value == 123, r.model_spec
                assert r.model_spec.signature_name == "serving_default", r.model_spec
                assert r.outputs["y"].tensor_content, "numeric outputs go out as tensor_content"
                st, body = rest(rport, "/v1/models/hp2:predict", {"instances": x.tolist()})
                np.testing.assert_allclose(np.array(body["predictions"], np.float32),
                                           tf.make_ndarray(r.outputs["y"]), rtol=1e-6)
                return f"y={tf.make_ndarray(r.outputs['y']).ravel().tolist()}"
            check("Predict half_plus_two (float, tensor_content out, model_spec filled, = REST)", hp2_float)

            def hp2_typed_vals():
                tp = tensor_pb2.TensorProto(dtype=tf.float32.as_datatype_enum)
                tp.tensor_shape.dim.add(size=2)
                tp.tensor_shape.dim.add(size=1)
                tp.float_val.extend([3.0, 4.0])
                r = predict("hp2", {"x": tp})
                same(r.outputs["y"], np.array([[3.5], [4.0]], np.float32), "y from float_val")
            check("Predict half_plus_two with float_val (typed field) input", hp2_typed_vals)

            check("Predict version 123 by number", lambda: predict(
                "hp2", {"x": np.ones((1, 1), np.float32)}, version=123).model_spec.version.value == 123 or 1 / 0)
            check("Predict unknown version: NOT_FOUND", lambda: error(
                lambda: predict("hp2", {"x": np.ones((1, 1), np.float32)}, version=7),
                grpc.StatusCode.NOT_FOUND, "Servable not found for request: Specific(hp2, 7)"))

        def ints():
            n = np.array([1, 5, 9, 12], np.int64)
            k = np.array(3, np.int64)
            r = predict("ms", {"n": n, "k": k}, signature="ints")
            want = tf_run("ms", "ints", n=tf.constant(n), k=tf.constant(k))
            assert sorted(r.outputs) == sorted(want), (sorted(r.outputs), sorted(want))
            for a in want:
                same(r.outputs[a], want[a], a)
            assert r.model_spec.signature_name == "ints"
            return f"{len(want)} outputs"
        check("Predict tf2_multi_sig 'ints' (int64 in and out, bool out, named signature)", ints)

        def output_filter():
            n = np.array([1, 5, 9], np.int64)
            r = predict("ms", {"n": n, "k": np.array(2, np.int64)}, signature="ints", output_filter=["mod"])
            assert list(r.outputs) == ["mod"], list(r.outputs)
            same(r.outputs["mod"], tf_run("ms", "ints", n=tf.constant(n), k=tf.constant(np.int64(2)))["mod"], "mod")
        check("Predict output_filter", output_filter)

        def strings():
            toks = np.array([b"the", b"cat", b"zzz-unknown"], object)
            r = predict("vocab", {"tokens": toks})
            want = tf_run("vocab", "serving_default", tokens=tf.constant(toks))
            for a in want:
                same(r.outputs[a], want[a], a)
            ids = tf.make_ndarray(r.outputs["ids"])
            r2 = predict("vocab", {"ids": ids}, signature="to_words")
            want2 = tf_run("vocab", "to_words", ids=tf.constant(ids))
            same(r2.outputs["words"], want2["words"], "words")
            assert r2.outputs["words"].string_val, "strings go out as string_val"
            return f"words={tf.make_ndarray(r2.outputs['words']).tolist()}"
        check("Predict tf1_vocab (string in, string out)", strings)

        def multi_io():
            rng = np.random.default_rng(3)
            feed = {"left": rng.normal(size=(2, 3)).astype(np.float32),
                    "right": rng.normal(size=(2, 2)).astype(np.float32),
                    "ids": np.array([[1], [4]], np.int64)}
            r = predict("mio", feed)
            want = tf_run("mio", "serving_default", **{k: tf.constant(v) for k, v in feed.items()})
            for a in want:
                same(r.outputs[a], want[a], a)
            st, body = rest(rport, "/v1/models/mio:predict", {"inputs": {k: v.tolist() for k, v in feed.items()}})
            np.testing.assert_allclose(np.array(body["outputs"]["logits"], np.float32),
                                       tf.make_ndarray(r.outputs["logits"]), rtol=1e-5)
        check("Predict keras_multi_io (three inputs, = REST)", multi_io)

        def batched():
            # a second server with --enable_batching: concurrent gRPC and REST clients, each with its
            # own rows of three inputs, get TF's answer for their own rows; every request went
            # through the batcher (the exit line counts them)
            bp = os.path.join(tmp, "batching.config")
            with open(bp, "w") as f:
                f.write("max_batch_size { value: 8 } batch_timeout_micros { value: 20000 } "
                        "num_batch_threads { value: 2 } max_enqueued_batches { value: 100 }\n")
            srv2, g2, r2 = start_server(cli, cfg, ["--enable_batching", "--batching_parameters_file", bp])
            stub2 = prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(f"127.0.0.1:{g2}"))

            def client(k):
                rng = np.random.default_rng(100 + k)
                for it in range(4):
                    n = 1 + (k + it) % 3
                    feed = {"left": rng.normal(size=(n, 3)).astype(np.float32),
                            "right": rng.normal(size=(n, 2)).astype(np.float32),
                            "ids": rng.integers(0, 5, size=(n, 1)).astype(np.int64)}
                    want = tf_run("mio", "serving_default", **{a: tf.constant(v) for a, v in feed.items()})
                    if k % 2:
                        st, body = rest(r2, "/v1/models/mio:predict",
                                        {"inputs": {a: v.tolist() for a, v in feed.items()}})
                        assert st == 200, body
                        got = {a: np.array(body["outputs"][a], np.float32) for a in want}
                    else:
                        req = predict_pb2.PredictRequest()
                        req.model_spec.name = "mio"
                        for a, v in feed.items():
                            req.inputs[a].CopyFrom(tf.make_tensor_proto(v))
                        r = stub2.Predict(req, timeout=60)
                        got = {a: tf.make_ndarray(r.outputs[a]) for a in want}
                    for a in want:
                        np.testing.assert_allclose(got[a], want[a], rtol=1e-5, atol=1e-6, err_msg=f"request {it}: {a}")
                return 4

            sent, fails = concurrently(12, client)
            srv2.terminate()
            rest_log = srv2.communicate(timeout=60)[1]
            assert not fails, "\n".join(fails)
            m = re.search(r"Batching: (\d+) requests in (\d+) batches", rest_log)
            assert m and int(m.group(1)) == sent, f"batcher counted {m and m.group(1)} of {sent} requests"
            return f"{sent} requests in {m.group(2)} batches"
        check("--enable_batching: concurrent gRPC + REST clients get TF's answer for their own rows", batched)

        def mixed_runs():
            # a second server without batching, eight concurrent gRPC clients in three phases: calls
            # that run short (half_plus_two, a few us; keras_multi_io without it), then longer
            # ones (the seed CNN, ~30 us an image), then short ones again: the server polls with
            # one worker, then one per core, then one again (the recent runs' average crosses its
            # 20 us threshold both ways); every answer is TF's
            import threading
            cnn_dir = os.path.join(ZOO, "keras_seed_cnn", "model")
            os.makedirs(os.path.join(tmp, "cnn"), exist_ok=True)
            if not os.path.exists(os.path.join(tmp, "cnn", "1")):
                os.symlink(cnn_dir, os.path.join(tmp, "cnn", "1"))
            short = "hp2" if "hp2" in bases else "mio"
            cfg3 = os.path.join(tmp, "mixed.config")
            with open(cfg3, "w") as f:
                f.write('model_config_list {\n  config { name: "%s" base_path: "%s" model_platform: "tensorflow" }\n'
                        '  config { name: "cnn" base_path: "%s" model_platform: "tensorflow" }\n}\n'
                        % (short, bases[short], os.path.join(tmp, "cnn")))
            cnn_sig = tf.saved_model.load(cnn_dir).signatures["serving_default"]
            srv3, g3, _ = start_server(cli, cfg3)
            stub3 = prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(f"127.0.0.1:{g3}"))
            phase = threading.Barrier(8)

            def client(k):
                rng = np.random.default_rng(200 + k)
                for it in range(18):
                    if it % 6 == 0:
                        phase.wait(timeout=120)
                    req = predict_pb2.PredictRequest()
                    n = 1 + (k + it) % 3
                    if it // 6 == 1:
                        feed = {"inputs": rng.random(size=(n, 28, 28, 1)).astype(np.float32)}
                        want = {a: v.numpy() for a, v in cnn_sig(inputs=tf.constant(feed["inputs"])).items()}
                        req.model_spec.name = "cnn"
                    elif short == "hp2":
                        feed = {"x": rng.normal(size=(n,)).astype(np.float32)}
                        want = tf_run("hp2", "serving_default", x=tf.constant(feed["x"]))
                        req.model_spec.name = "hp2"
                    else:
                        feed = {"left": rng.normal(size=(n, 3)).astype(np.float32),
                                "right": rng.normal(size=(n, 2)).astype(np.float32),
                                "ids": rng.integers(0, 5, size=(n, 1)).astype(np.int64)}
                        want = tf_run("mio", "serving_default", **{a: tf.constant(v) for a, v in feed.items()})
                        req.model_spec.name = "mio"
                    for a, v in feed.items():
                        req.inputs[a].CopyFrom(tf.make_tensor_proto(v))
                    r = stub3.Predict(req, timeout=60)
                    for a in want:
                        np.testing.assert_allclose(tf.make_ndarray(r.outputs[a]), want[a], rtol=1e-4, atol=1e-5,
                                                   err_msg=f"request {it}: {req.model_spec.name} {a}")
                return 18

            done, fails = concurrently(8, client)
            srv3.terminate()
            srv3.communicate(timeout=60)
            assert not fails, "\n".join(fails)
            assert done == 8 * 18, f"{done} of {8 * 18} answered"
            return f"{done} answers ({short}, cnn, {short})"
        check("no batching: concurrent gRPC clients of short- and long-running models get TF's answers", mixed_runs)

        # ---- Predict errors (predict_util.cc) ----
        x2 = np.ones((1, 2), np.float32)
        check("unknown model: NOT_FOUND as REST", lambda: (
            error(lambda: predict("nope", {"x": x2}), grpc.StatusCode.NOT_FOUND,
                  "Servable not found for request: Latest(nope)"),
            rest(rport, "/v1/models/nope:predict", {"instances": [[1, 2]]})[0] == 404 or 1 / 0))
        check("unknown signature: FAILED_PRECONDITION", lambda: error(
            lambda: predict("cr", {"x": x2}, signature="nosuch"), grpc.StatusCode.FAILED_PRECONDITION,
            'Serving signature key "nosuch" not found.'))
        check("unknown input alias: INVALID_ARGUMENT", lambda: error(
            lambda: predict("cr", {"y": x2}), grpc.StatusCode.INVALID_ARGUMENT,
            "input tensor alias not found in signature: y. Inputs expected to be in the set {x}."))
        check("missing input: INVALID_ARGUMENT", lambda: error(
            lambda: predict("mio", {"left": np.ones((1, 3), np.float32)}), grpc.StatusCode.INVALID_ARGUMENT,
            "input size does not match signature: 1!=3 len({left}) != len({ids,left,right}). Sent extra: {}. "
            "Missing but required: {ids,right}."))
        check("unknown output_filter: INVALID_ARGUMENT", lambda: error(
            lambda: predict("cr", {"x": x2}, output_filter=["zz"]), grpc.StatusCode.INVALID_ARGUMENT,
            "output tensor alias not found in signature: zz Outputs expected to be in the set {scores}."))
        check("bad tensor_content: INVALID_ARGUMENT", lambda: error(
            lambda: predict("cr", {"x": tensor_pb2.TensorProto(
                dtype=1, tensor_shape={"dim": [{"size": 4}]}, tensor_content=b"abc")}),
            grpc.StatusCode.INVALID_ARGUMENT, "tensor parsing error: x"))
        check("no model_spec: INVALID_ARGUMENT", lambda: error(
            lambda: ps.Predict(predict_pb2.PredictRequest(), timeout=30), grpc.StatusCode.INVALID_ARGUMENT,
            "Missing ModelSpec"))

        def garbage():
            call = channel.unary_unary("/tensorflow.serving.PredictionService/Predict",
                                       request_serializer=lambda b: b, response_deserializer=lambda b: b)
            for bad in (b"\x0a\xff\xff\xff\xff\x0f", b"\x12\x05ab", b"\x0b", bytes(range(256))):
                try:
                    call(bad, timeout=30)
                    raise AssertionError(f"{bad!r} accepted")
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, (bad, e.code(), e.details())
            return "4 malformed messages"
        check("hostile bytes: INVALID_ARGUMENT, server alive", garbage)

        # ---- Classify, Regress, MultiInference over tf.Examples ----
        def example(x0, x1):
            return tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x0, x1]))}))
        exs = [example(1.0, 2.0), example(-0.5, 3.0)]
        ser = tf.constant([e.SerializeToString() for e in exs])

        def classify():
            req = classification_pb2.ClassificationRequest()
            req.model_spec.name = "cr"
            req.model_spec.signature_name = "classify_x_to_y"
            req.input.example_list.examples.extend(exs)
            r = ps.Classify(req, timeout=60)
            want = tf_run("cr", "classify_x_to_y", inputs=ser)
            got_labels = [[c.label.encode() for c in cl.classes] for cl in r.result.classifications]
            got_scores = np.array([[c.score for c in cl.classes] for cl in r.result.classifications], np.float32)
            assert got_labels == want["classes"].tolist(), (got_labels, want["classes"])
            np.testing.assert_allclose(got_scores, want["scores"], rtol=1e-5)
            assert r.model_spec.signature_name == "classify_x_to_y" and r.model_spec.version.value == 1
            st, body = rest(rport, "/v1/models/cr:classify", {"signature_name": "classify_x_to_y",
                                                               "examples": [{"x": [1.0, 2.0]}, {"x": [-0.5, 3.0]}]})
            assert [[lab for lab, _ in row] for row in body["results"]] == [[b.decode() for b in row] for row in
                                                                            got_labels], body
            return f"scores={got_scores.tolist()}"
        check("Classify tf1_classify_regress (= TF, = REST)", classify)

        def regress():
            req = regression_pb2.RegressionRequest()
            req.model_spec.name = "cr"
            req.model_spec.signature_name = "regress_x_to_y"
            ctx = tf.train.Example()  # an empty context: merged into every example
            req.input.example_list_with_context.examples.extend(exs)
            req.input.example_list_with_context.context.CopyFrom(ctx)
            r = ps.Regress(req, timeout=60)
            want = tf_run("cr", "regress_x_to_y", inputs=ser)["outputs"].ravel()
            got = np.array([x.value for x in r.result.regressions], np.float32)
            np.testing.assert_allclose(got, want, rtol=1e-5)
            st, body = rest(rport, "/v1/models/cr:regress", {"signature_name": "regress_x_to_y",
                                                              "examples": [{"x": [1.0, 2.0]}, {"x": [-0.5, 3.0]}]})
            np.testing.assert_allclose(np.array(body["results"], np.float32), got, rtol=1e-6)
            return f"values={got.tolist()}"
        check("Regress with context (= TF, = REST)", regress)

        def multi():
            req = inference_pb2.MultiInferenceRequest()
            for sig, meth in (("classify_x_to_y", "tensorflow/serving/classify"),
                              ("regress_x_to_y", "tensorflow/serving/regress")):
                t = req.tasks.add()
                t.model_spec.name = "cr"
                t.model_spec.signature_name = sig
                t.method_name = meth
            req.input.example_list.examples.extend(exs)
            r = ps.MultiInference(req, timeout=60)
            assert len(r.results) == 2
            want_c = tf_run("cr", "classify_x_to_y", inputs=ser)
            want_r = tf_run("cr", "regress_x_to_y", inputs=ser)["outputs"].ravel()
            np.testing.assert_allclose([[c.score for c in cl.classes] for cl in
                                        r.results[0].classification_result.classifications],
                                       want_c["scores"], rtol=1e-5)
            np.testing.assert_allclose([x.value for x in r.results[1].regression_result.regressions], want_r,
                                       rtol=1e-5)
            assert r.results[1].model_spec.signature_name == "regress_x_to_y"
        check("MultiInference classify + regress", multi)

        def multi_errors():
            req = inference_pb2.MultiInferenceRequest()
            error(lambda: ps.MultiInference(req, timeout=30), grpc.StatusCode.INVALID_ARGUMENT,
                  "Found no tasks in MultiInferenceRequest.")
            for _ in range(2):
                t = req.tasks.add()
                t.model_spec.name = "cr"
                t.model_spec.signature_name = "regress_x_to_y"
                t.method_name = "tensorflow/serving/regress"
            req.input.example_list.examples.extend(exs)
            error(lambda: ps.MultiInference(req, timeout=30), grpc.StatusCode.INVALID_ARGUMENT,
                  "Duplicate evaluation of signature: regress_x_to_y")
        check("MultiInference errors", multi_errors)

        def classify_errors():
            req = classification_pb2.ClassificationRequest()
            req.model_spec.name = "cr"
            req.model_spec.signature_name = "nosuch"
            req.input.example_list.examples.extend(exs)
            error(lambda: ps.Classify(req, timeout=30), grpc.StatusCode.INVALID_ARGUMENT,
                  "No signature was found with the name: nosuch")
            req.model_spec.signature_name = "classify_x_to_y"
            del req.input.example_list.examples[:]
            error(lambda: ps.Classify(req, timeout=30), grpc.StatusCode.INVALID_ARGUMENT, "Input is empty.")
        check("Classify errors (unknown signature, empty input)", classify_errors)

        # ---- metadata, status, reload ----
        def metadata():
            req = get_model_metadata_pb2.GetModelMetadataRequest()
            req.model_spec.name = "cr"
            req.metadata_field.append("signature_def")
            r = ps.GetModelMetadata(req, timeout=30)
            any_ = r.metadata["signature_def"]
            assert any_.type_url == "type.googleapis.com/tensorflow.serving.SignatureDefMap", any_.type_url
            m = get_model_metadata_pb2.SignatureDefMap()
            any_.Unpack(m)
            from tensorflow.core.protobuf import saved_model_pb2
            sm = saved_model_pb2.SavedModel()
            with open(os.path.join(bases["cr"], "1", "saved_model.pb"), "rb") as f:
                sm.ParseFromString(f.read())
            want = dict(sm.meta_graphs[0].signature_def)
            assert sorted(m.signature_def) == sorted(want)
            for k in want:
                assert m.signature_def[k] == want[k], k
            assert r.model_spec.name == "cr" and r.model_spec.version.value == 1 and not r.model_spec.signature_name
            st, body = rest(rport, "/v1/models/cr/metadata")
            assert sorted(body["metadata"]["signature_def"]["signature_def"]) == sorted(want)
            req2 = get_model_metadata_pb2.GetModelMetadataRequest()
            req2.model_spec.name = "cr"
            req2.metadata_field.append("graph")
            error(lambda: ps.GetModelMetadata(req2, timeout=30), grpc.StatusCode.INVALID_ARGUMENT,
                  "Metadata field graph is not supported")
            return f"{len(want)} signatures"
        check("GetModelMetadata (SignatureDefMap in Any = saved_model.pb's, = REST)", metadata)

        def metadata_defaults():
            # SignatureDef.defaults (TensorProtos): REST prints them as protobuf's JSON printer does
            # with TF Serving's options (http_rest_api_util.cc ToJsonString), over what gRPC returns
            from google.protobuf import json_format
            req = get_model_metadata_pb2.GetModelMetadataRequest()
            req.model_spec.name = "def"
            req.metadata_field.append("signature_def")
            m = get_model_metadata_pb2.SignatureDefMap()
            ps.GetModelMetadata(req, timeout=30).metadata["signature_def"].Unpack(m)
            assert len(m.signature_def["serving_default"].defaults) == 7, m.signature_def["serving_default"]
            want = json.loads(json_format.MessageToJson(m, preserving_proto_field_name=True,
                                                        always_print_fields_with_no_presence=True))
            st, body = rest(rport, "/v1/models/def/metadata")
            assert st == 200, body
            got = body["metadata"]["signature_def"]
            assert got == want, json.dumps(got, indent=1)[:4000]
            return "7 defaults"
        check("GetModelMetadata / REST metadata with SignatureDef.defaults = protobuf's JSON printer", metadata_defaults)

        def status():
            req = get_model_status_pb2.GetModelStatusRequest()
            req.model_spec.name = "cr"
            r = ms.GetModelStatus(req, timeout=30)
            assert len(r.model_version_status) == 1
            v = r.model_version_status[0]
            assert v.version == 1 and v.state == get_model_status_pb2.ModelVersionStatus.AVAILABLE, v
            assert v.status.error_code == 0 and v.status.error_message == ""
            st, body = rest(rport, "/v1/models/cr")
            assert body["model_version_status"][0]["state"] == "AVAILABLE", body
            req.model_spec.name = "nope"
            error(lambda: ms.GetModelStatus(req, timeout=30), grpc.StatusCode.NOT_FOUND, "nope")
        check("GetModelStatus (= REST; unknown model NOT_FOUND)", status)

        def reload():
            req = model_management_pb2.ReloadConfigRequest()
            keep = [n for n in sorted(bases) if n != "vocab"]
            for n in keep:
                c = req.config.model_config_list.config.add()
                c.name = n
                c.base_path = bases[n]
                c.model_platform = "tensorflow"
            r = ms.HandleReloadConfigRequest(req, timeout=120)
            assert r.status.error_code == 0, r
            error(lambda: predict("vocab", {"tokens": np.array([b"a"], object)}), grpc.StatusCode.NOT_FOUND,
                  "Servable not found for request: Latest(vocab)")
            error(lambda: ms.HandleReloadConfigRequest(model_management_pb2.ReloadConfigRequest(), timeout=30),
                  grpc.StatusCode.INVALID_ARGUMENT,
                  "ServerModelConfig type not supported by HandleReloadConfigRequest")
            return f"now {keep}"
        check("HandleReloadConfigRequest (a model removed; no config refused)", reload)


        def unix_socket():
            stub = model_service_pb2_grpc.ModelServiceStub(grpc.insecure_channel(f"unix:{sock}"))
            r = stub.GetModelStatus(get_model_status_pb2.GetModelStatusRequest(model_spec={"name": "cr"}), timeout=30)
            assert r.model_version_status[0].state == get_model_status_pb2.ModelVersionStatus.AVAILABLE
        check("--grpc_socket_path serves the same API", unix_socket)

        def max_receive():
            small, sg, _ = start_server(cli, cfg, ["--grpc_channel_arguments", "grpc.max_receive_message_length=4096"])
            try:
                stub = prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(f"127.0.0.1:{sg}"))
                req = predict_pb2.PredictRequest()
                req.model_spec.name = "cr"
                req.inputs["x"].CopyFrom(tf.make_tensor_proto(np.ones((1000, 2), np.float32)))
                error(lambda: stub.Predict(req, timeout=30), grpc.StatusCode.RESOURCE_EXHAUSTED, "")
                req.inputs["x"].CopyFrom(tf.make_tensor_proto(np.ones((10, 2), np.float32)))
                stub.Predict(req, timeout=30)
            finally:
                small.terminate()
                small.wait(timeout=60)
        check("grpc.max_receive_message_length: larger requests RESOURCE_EXHAUSTED", max_receive)

        # ---- a busy port is refused, gRPC and REST ----
        def busy(flagset):
            r = subprocess.run([cli, "serve", "--model_config_file", cfg, *flagset], capture_output=True,
                               text=True, timeout=120)
            assert r.returncode != 0, "second server started"
            assert "Address already in use" in r.stderr, r.stderr[-500:]
            return r.stderr.strip().splitlines()[-1]
        check("busy gRPC port refused", lambda: busy([f"--port={gport}", "--rest_api_port=0"]))
        check("busy REST port refused", lambda: busy([f"--rest_api_port={rport}"]))

        check("server still serving", lambda: len(ms.GetModelStatus(
            get_model_status_pb2.GetModelStatusRequest(model_spec={"name": "cr"}), timeout=30).model_version_status)
            == 1 or 1 / 0)
    finally:
        if server:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
