#!/usr/bin/env python3
"""The interop suite: real TensorFlow judges libsavedmodel, both ways.

1. TensorFlow writes, we read: the zoo is regenerated with TensorFlow into a temporary directory
   (tools/make_zoo.py) and every `savedmodel show` / `savedmodel vars` output of ours must equal
   what TensorFlow's saved_model_cli and checkpoint reader say about the same files.
2. We write, TensorFlow reads: the models our builder writes (tests/interop/*.py), and every zoo model and every SavedModel under ../shared/fixtures/tf-serving
   is rewritten by `savedmodel convert` (saved_model.pb, and saved_model.pbtxt with --as_text; the
   variables bundle re-encoded by our writer). TensorFlow must parse the result into the same
   SavedModel proto, read the same checkpoint values, load it, and saved_model_cli must print the
   same as for the original.

Ends with the line 'N passed, N failed' and exits non-zero on any failure.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

results = {"passed": 0, "failed": 0}


def check(ok, what, detail=""):
    if ok:
        results["passed"] += 1
        print(f"ok    {what}")
    else:
        results["failed"] += 1
        print(f"FAIL  {what}" + (f"\n      {detail}" if detail else ""))


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, **kw)


def saved_model_dirs(root):
    """Every directory under root that holds a saved_model.pb or saved_model.pbtxt."""
    out = []
    for d, _, files in os.walk(root):
        if "saved_model.pb" in files or "saved_model.pbtxt" in files:
            out.append(d)
    return sorted(out)


def read_proto(d):
    from tensorflow.core.protobuf import saved_model_pb2
    from google.protobuf import text_format
    sm = saved_model_pb2.SavedModel()
    pb = os.path.join(d, "saved_model.pb")
    if os.path.exists(pb):
        with open(pb, "rb") as f:
            sm.ParseFromString(f.read())
    else:
        with open(os.path.join(d, "saved_model.pbtxt")) as f:
            text_format.Parse(f.read(), sm)
    return sm


def checkpoint_values(d):
    import tensorflow as tf
    prefix = os.path.join(d, "variables", "variables")
    if not os.path.exists(prefix + ".index"):
        return None
    r = tf.train.load_checkpoint(prefix)
    dtypes = r.get_variable_to_dtype_map()
    shapes = r.get_variable_to_shape_map()
    vals = {}
    for k in sorted(dtypes):
        vals[k] = (dtypes[k].name, list(shapes[k]), r.get_tensor(k))
    return vals


def same_values(a, b):
    import numpy as np
    if a is None or b is None:
        return a is b, "one side has no variables"
    if sorted(a) != sorted(b):
        return False, f"keys differ: {sorted(set(a) ^ set(b))}"
    for k in a:
        da, sa, va = a[k]
        db, sb, vb = b[k]
        if da != db or sa != sb:
            return False, f"{k}: {da}{sa} vs {db}{sb}"
        va, vb = np.asarray(va), np.asarray(vb)
        if va.dtype.kind in "fc":
            eq = va.tobytes() == vb.tobytes()
        else:
            eq = np.array_equal(va, vb)
        if not eq:
            return False, f"{k}: values differ"
    return True, ""


def saved_model_cli(python, args):
    """saved_model_cli's own main(), in this process (importing TensorFlow once, not per call).

    The ops line prints a Python set, whose order is arbitrary: it is sorted here."""
    import re
    sys.path.insert(0, HERE)
    import make_zoo
    out, rc = make_zoo._cli_in_process(args, os.getcwd())

    def sort_set(m):
        items = sorted(x.strip() for x in m.group(2).split(",") if x.strip())
        return m.group(1) + "{" + ", ".join(items) + "}"
    text = out.decode("utf-8", "surrogateescape")
    text = re.sub(r"(contains the following ops: )\{([^}]*)\}", sort_set, text)
    return rc, text.encode("utf-8", "surrogateescape")


def we_write_tf_reads(cli, python, model, tmp, as_text):
    """Convert `model` with our CLI, then have TensorFlow judge the copy."""
    name = os.path.relpath(model, ROOT) if model.startswith(ROOT) else model
    kind = "pbtxt" if as_text else "pb"
    out = os.path.join(tmp, "conv_%d_%s" % (abs(hash(model)), kind))
    cmd = [cli, "convert", "--dir", model, "--out", out] + (["--as_text"] if as_text else [])
    r = run(cmd)
    if r.returncode != 0:
        check(False, f"convert {name} ({kind})", r.stderr.decode(errors="replace").strip())
        return
    a, b = read_proto(model), read_proto(out)
    check(a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True),
          f"TF parses our {kind} of {name} into the same SavedModel proto")
    ok, detail = same_values(checkpoint_values(model), checkpoint_values(out))
    check(ok, f"TF's checkpoint reader reads our bundle of {name} with equal values", detail)
    rc1, s1 = saved_model_cli(python, ["show", "--dir", model, "--all"])
    rc2, s2 = saved_model_cli(python, ["show", "--dir", out, "--all"])
    check(rc1 == rc2 and s1 == s2, f"saved_model_cli show --all is the same on our {kind} copy of {name}")
    load_check(model, out, name, kind)


def load_golden_array(path):
    """A golden tensor: .npy, or .json for strings (base64, nested lists)."""
    import numpy as np
    if path.endswith(".npy"):
        return np.load(path, allow_pickle=False)
    with open(path) as f:
        doc = json.load(f)

    def dec(v):
        return [dec(x) for x in v] if isinstance(v, list) else base64.b64decode(v)
    arr = np.empty(doc["shape"], dtype=object)
    flat = dec(doc["value"])
    arr[...] = flat if arr.ndim else flat
    return arr


def golden_runs(model):
    """(tags, signature key, {alias: input array}, {alias: expected output}) from golden/outputs."""
    root = os.path.join(os.path.dirname(model), "golden", "outputs")
    if not os.path.isdir(root):
        return []
    runs = []
    for case in sorted(os.listdir(root)):
        d = os.path.join(root, case)
        with open(os.path.join(d, "signature.json")) as f:
            sig = json.load(f)
        ins = {k: load_golden_array(os.path.join(d, v["file"])) for k, v in sig["inputs"].items()}
        outs = {k: load_golden_array(os.path.join(d, v["file"])) for k, v in sig["outputs"].items()}
        runs.append((sig["tags"], sig["signature"], ins, outs))
    return runs


def same_array(got, want):
    import numpy as np
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype == object or got.dtype == object:
        return [bytes(x) for x in got.ravel()] == [bytes(x) for x in want.ravel()]
    if want.dtype.kind in "fc":
        return np.allclose(got, want, rtol=1e-6, atol=0, equal_nan=True)
    return np.array_equal(got, want)


def loaded_variables(export_dir, tags):
    """{name: bytes} of every non-resource global variable after TF's TF1 loader loads export_dir."""
    import numpy as np
    import tensorflow as tf
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    with tf.Graph().as_default() as g, tf.compat.v1.Session(graph=g, config=config) as sess:
        tf.compat.v1.saved_model.loader.load(sess, tags, export_dir)
        out = {}
        for v in tf.compat.v1.global_variables():
            try:
                out[v.op.name] = np.asarray(sess.run(v)).tobytes()
            except Exception:  # noqa: BLE001 - e.g. a TF2 variable the TF1 loader leaves unset
                pass
        return out


def load_check(model, out, name, kind):
    """TensorFlow loads our copy (restoring variables from our bundle) and gives the same results.

    Variables: after TF's loader, every variable that holds its checkpoint value when TF loads the
    original must hold it when TF loads our copy (init ops may re-initialise others at random).
    Signatures: every golden run (tests/fixtures/zoo/*/golden/outputs) returns the golden outputs,
    through tf.saved_model.load for TF2 exports and a TF1 session for TF1 graphs."""
    import numpy as np
    import tensorflow as tf
    sm = read_proto(out)
    vals = checkpoint_values(model) or {}
    for mg in sm.meta_graphs:
        tags = list(mg.meta_info_def.tags)
        try:
            orig = loaded_variables(model, tags)
            ours = loaded_variables(out, tags)
            keys = [k for k in orig if k in vals and orig[k] == np.asarray(vals[k][2]).tobytes()]
            bad = [k for k in keys if ours.get(k) != orig[k]]
            check(not bad, f"TF's loader restores our {kind} copy of {name} tags={tags} ({len(keys)} variables)",
                  f"variables differ: {bad}")
        except Exception as e:  # noqa: BLE001 - any TF failure is a test failure
            check(False, f"TF's loader loads our {kind} copy of {name} tags={tags}", repr(e)[:500])
    tf2 = any(len(mg.object_graph_def.nodes) for mg in sm.meta_graphs)
    for rtags, key, ins, outs in golden_runs(model):
        try:
            if tf2:
                fn = tf.saved_model.load(out, tags=rtags).signatures[key]
                got = {k: v.numpy() for k, v in fn(**{a: tf.constant(v) for a, v in ins.items()}).items()}
            else:
                config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
                with tf.Graph().as_default() as g, tf.compat.v1.Session(graph=g, config=config) as sess:
                    loaded = tf.compat.v1.saved_model.loader.load(sess, rtags, out)
                    sig = loaded.signature_def[key]
                    got = sess.run({a: sig.outputs[a].name for a in outs}, {sig.inputs[a].name: v for a, v in ins.items()})
            bad = [a for a in outs if not same_array(got[a], outs[a])]
            check(not bad, f"TF runs {key} of our {kind} copy of {name} with the golden results", f"outputs differ: {bad}")
        except Exception as e:  # noqa: BLE001
            check(False, f"TF runs {key} of our {kind} copy of {name}", repr(e)[:500])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--skip-regen", action="store_true", help="use the committed zoo instead of regenerating it")
    args = ap.parse_args()
    cli = os.path.join(ROOT, args.build, "savedmodel") if not os.path.isabs(args.build) else os.path.join(args.build, "savedmodel")
    python = sys.executable
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    print(f"interop: TensorFlow {tf.__version__}, CLI {cli}")

    tmp = tempfile.mkdtemp(prefix="sm-interop-")
    try:
        # 1. TensorFlow writes, we read.
        zoo = os.path.join(ROOT, "tests", "fixtures", "zoo")
        if not args.skip_regen:
            fresh = os.path.join(tmp, "zoo")
            r = run([python, os.path.join(HERE, "make_zoo.py"), "--out", fresh])
            check(r.returncode == 0, "TensorFlow regenerates the zoo", r.stderr.decode(errors="replace")[-2000:])
            if r.returncode == 0:
                zoo = fresh
        env = dict(os.environ, SM_ZOO_DIR=zoo)
        for script in ("show_zoo.sh", "vars.sh"):
            path = os.path.join(ROOT, "tests", "cli", script)
            if os.path.exists(path):
                r = run(["bash", path, cli, ROOT, args.shared], env=env)
                check(r.returncode in (0, 77), f"our reader agrees with TensorFlow on the zoo ({script})",
                      (r.stdout + r.stderr).decode(errors="replace")[-3000:])

        # 2. We write, TensorFlow reads: models made by our builder (tests/interop/*.py) ...
        for script in sorted(os.listdir(os.path.join(ROOT, "tests", "interop"))):
            if script.endswith(".py"):
                r = run([python, os.path.join(ROOT, "tests", "interop", script), "--build",
                         os.path.dirname(cli)])
                check(r.returncode == 0, f"tests/interop/{script}",
                      (r.stdout + r.stderr).decode(errors="replace")[-3000:])
        # ... and every model we read, rewritten by `savedmodel convert`.
        models = saved_model_dirs(zoo)
        fixtures = os.path.join(args.shared, "fixtures", "tf-serving")
        if os.path.isdir(fixtures):
            models += [d for d in saved_model_dirs(fixtures)]
        else:
            print(f"skipped: {fixtures} absent; converting the zoo only")
        for m in models:
            for as_text in (False, True):
                we_write_tf_reads(cli, python, m, tmp, as_text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
