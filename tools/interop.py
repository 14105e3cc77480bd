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
3. The runtime: for every golden case of the zoo (golden/outputs/<case>) and every signature of the
   TF Serving models (inputs made here, expected outputs from TensorFlow in this process),
   `savedmodel run --dir --tag_set --signature_def --inputs 'alias=file.npy;...' --outdir` must
   write TensorFlow's outputs: float within 1e-5 relative, integers and strings exactly. Skipped,
   with a message, while `savedmodel run` answers "unknown command".
4. Trained exports: sm_seq_export's output (the unit test test_train_export's models, kept with
   SM_TRAIN_EXPORT_KEEP, and `savedmodel train --limit` on Fashion-MNIST when the command and the
   data are there) judged by tools/check_trained_export.py: TF's two loaders, both tag sets,
   serving_default and classify against `savedmodel run`, saved_model_cli show/run.

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

    The ops line prints a Python set, and a structured input's "Value: {...}" a dict rebuilt in an
    order that follows string hashing (PYTHONHASHSEED): both are sorted here, so two calls in one
    process compare equal whatever the hash seed."""
    import re
    sys.path.insert(0, HERE)
    import make_zoo
    out, rc = make_zoo._cli_in_process(args, os.getcwd())

    def sort_set(m):
        items = sorted(x.strip() for x in m.group(2).split(",") if x.strip())
        return m.group(1) + "{" + ", ".join(items) + "}"
    text = out.decode("utf-8", "surrogateescape")
    text = re.sub(r"(contains the following ops: )\{([^}]*)\}", sort_set, text)

    def sort_dict(m):
        items = re.findall(r"'[^']*': [A-Za-z]+\((?:[^()]|\([^()]*\))*\), ", m.group(2))
        if "".join(items) != m.group(2):   # not a flat dict of specs: leave it as printed
            return m.group(0)
        return m.group(1) + "{" + "".join(sorted(items)) + m.group(3) + "}"
    text = re.sub(r"(Value: )\{((?:'[^']*': [^\n]*?, )+)(\x08*)\}", sort_dict, text)
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


def unregistered_ops(model):
    """The ops of model's graphs and functions that this TensorFlow process has no OpDef for (a
    custom op library's, e.g. TF Text's when tensorflow_text is not installed): TF cannot load it."""
    from tensorflow.python.framework import op_def_registry
    missing = set()
    for mg in read_proto(model).meta_graphs:
        lib = mg.graph_def.library
        fns = {f.signature.name for f in lib.function}
        ops = {n.op for n in mg.graph_def.node}
        for f in lib.function:
            ops |= {n.op for n in f.node_def}
        missing |= {o for o in ops if o not in fns and op_def_registry.get(o) is None}
    return sorted(missing)


def load_check(model, out, name, kind):
    """TensorFlow loads our copy (restoring variables from our bundle) and gives the same results.

    Variables: after TF's loader, every variable that holds its checkpoint value when TF loads the
    original must hold it when TF loads our copy (init ops may re-initialise others at random).
    Signatures: every golden run (tests/fixtures/zoo/*/golden/outputs) returns the golden outputs,
    through tf.saved_model.load for TF2 exports and a TF1 session for TF1 graphs."""
    import numpy as np
    import tensorflow as tf
    missing = unregistered_ops(model)
    if missing:
        print(f"skipped: TensorFlow loading our {kind} copy of {name}: this TensorFlow has no "
              f"{', '.join(missing[:5])} (a custom op library's ops, e.g. tensorflow_text's, not installed)")
        return
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


# ---- 3. the runtime: `savedmodel run` against TensorFlow's outputs ----------------------------

def runtime_available(cli):
    """False (with the reason) while `savedmodel run` is not implemented: the stage is skipped."""
    if not os.path.exists(cli):
        return False, f"{cli} absent"
    r = run([cli, "run"])
    text = (r.stdout + r.stderr).decode(errors="replace")
    if "unknown command" in text.lower():
        return False, "`savedmodel run` is not implemented in this build (unknown command)"
    return True, ""


def npy_for_cli(val, path):
    """Writes one input for --inputs. Strings become a fixed-width bytes ('S') array, which numpy
    reads without pickle; such arrays cannot end an element in NUL, so those return False."""
    import numpy as np
    val = np.asarray(val)
    if val.dtype == object:
        items = [bytes(x) for x in val.ravel()]
        if any(x.endswith(b"\0") for x in items):
            return False
        width = max([len(x) for x in items] + [1])
        val = np.array(items, dtype="S%d" % width).reshape(val.shape)
    np.save(path, val, allow_pickle=False)
    return True


def _as_bytes_list(arr):
    import numpy as np
    arr = np.asarray(arr)
    return [bytes(x) if not isinstance(x, str) else x.encode() for x in arr.ravel()]


def same_output(got, want):
    """float: |got - want| <= 1e-5 |want| + 1e-6 max|want| (1e-5 relative, with an absolute floor
    for values that cancel to ~0); integers, bools and strings exactly. Returns (ok, detail)."""
    import numpy as np
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False, f"shape {list(got.shape)}, want {list(want.shape)}"
    if want.dtype == object or got.dtype.kind in "SO":
        g, w = _as_bytes_list(got), _as_bytes_list(want)
        if got.dtype.kind == "S":  # fixed-width arrays drop trailing NULs
            w = [x.rstrip(b"\0") for x in w]
        bad = [i for i, (a, b) in enumerate(zip(g, w)) if a != b]
        return not bad, (f"{len(bad)} strings differ, first at {bad[0]}: {g[bad[0]]!r} want {w[bad[0]]!r}"
                         if bad else "")
    if want.dtype.kind in "fc":
        if got.dtype != want.dtype:
            return False, f"dtype {got.dtype}, want {want.dtype}"
        g, w = got.astype(np.complex128 if want.dtype.kind == "c" else np.float64), \
            want.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
        finite = np.isfinite(w)
        if not np.array_equal(np.isnan(g), np.isnan(w)) or \
                not np.array_equal(g[~finite & ~np.isnan(w)], w[~finite & ~np.isnan(w)]):
            return False, "NaN/Inf positions differ"
        scale = float(np.max(np.abs(w[finite]))) if finite.any() else 0.0
        err = np.abs(g - w)[finite]
        tol = 1e-5 * np.abs(w[finite]) + 1e-6 * scale
        bad = err > tol
        if bad.any():
            i = int(np.argmax(err - tol))
            return False, (f"{int(bad.sum())} of {w.size} elements off, worst |{g[finite][i]} - "
                           f"{w[finite][i]}| = {err[i]:.3g}")
        return True, ""
    if got.dtype != want.dtype:
        return False, f"dtype {got.dtype}, want {want.dtype}"
    if not np.array_equal(got, want):
        return False, f"{int((got != want).sum())} of {want.size} elements differ"
    return True, ""


def run_ours(cli, model, tags, key, ins, outdir):
    """`savedmodel run` with saved_model_cli's flags; returns (rc, message, {alias: array})."""
    import numpy as np
    os.makedirs(outdir, exist_ok=True)
    specs = []
    for alias, val in sorted(ins.items()):
        path = os.path.join(outdir, "in_%s.npy" % alias.replace("/", "_"))
        if not npy_for_cli(val, path):
            return None, f"input {alias} has a string ending in NUL (.npy 'S' arrays drop them)", {}
        specs.append(f"{alias}={path}")
    res = os.path.join(outdir, "out")
    cmd = [cli, "run", "--dir", model, "--tag_set", ",".join(tags), "--signature_def", key,
           "--outdir", res]
    if specs:
        cmd += ["--inputs", ";".join(specs)]
    r = run(cmd)
    if r.returncode != 0:
        return r.returncode, (r.stdout + r.stderr).decode(errors="replace").strip()[-800:], {}
    got = {}
    for f in os.listdir(res) if os.path.isdir(res) else []:
        if f.endswith(".npy"):
            try:
                got[f[:-4]] = np.load(os.path.join(res, f), allow_pickle=False)
            except ValueError:
                got[f[:-4]] = np.load(os.path.join(res, f), allow_pickle=True)  # our own output
    return 0, "", got


def judge_run(cli, model, name, tags, key, ins, want, tmp, case):
    if not ins:
        print(f"skip  run {name} {','.join(tags)}/{key}: no inputs (saved_model_cli run needs one)")
        return
    rc, msg, got = run_ours(cli, model, tags, key, ins, os.path.join(tmp, "run", name, case))
    if rc is None:
        print(f"skip  run {name} {case}: {msg}")
        return
    what = f"savedmodel run {name} {case} matches TensorFlow"
    if rc != 0:
        check(False, what, f"exit {rc}: {msg}")
        return
    bad = []
    for alias, w in sorted(want.items()):
        # --outdir names each file after the output key; a "/" in a key cannot be a file name.
        g = got.get(alias, got.get(alias.replace("/", "_")))
        if g is None:
            bad.append(f"{alias}: no {alias}.npy written")
            continue
        ok, detail = same_output(g, w)
        if not ok:
            bad.append(f"{alias}: {detail}")
    check(not bad, what, "; ".join(bad)[:1500])


def run_stage(cli, zoo, shared, tmp):
    ok, why = runtime_available(cli)
    if not ok:
        print(f"skipped: runtime stage: {why}")
        return
    # The zoo: every golden case (each a fresh load, which is what one CLI process is).
    for model in saved_model_dirs(zoo):
        name = os.path.basename(os.path.dirname(model))
        root = os.path.join(os.path.dirname(model), "golden", "outputs")
        for case in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            d = os.path.join(root, case)
            with open(os.path.join(d, "signature.json")) as f:
                sig = json.load(f)
            ins = {k: load_golden_array(os.path.join(d, v["file"])) for k, v in sig["inputs"].items()}
            want = {k: load_golden_array(os.path.join(d, v["file"])) for k, v in sig["outputs"].items()}
            judge_run(cli, model, name, sig["tags"], sig["signature"], ins, want, tmp, case)
    # TF Serving's models: TensorFlow computes the expected outputs here.
    fixtures = os.path.join(shared, "fixtures", "tf-serving")
    if not os.path.isdir(fixtures):
        print(f"skipped: runtime stage on TF Serving models: {fixtures} absent")
        return
    sys.path.insert(0, HERE)
    import make_zoo
    import numpy as np
    import tensorflow as tf
    for model in saved_model_dirs(fixtures):
        name = os.path.relpath(model, fixtures)
        try:
            sm = read_proto(model)
        except Exception as e:  # noqa: BLE001
            print(f"skip  run {name}: TensorFlow cannot parse it ({repr(e)[:200]})")
            continue
        tf2 = any(len(mg.object_graph_def.nodes) for mg in sm.meta_graphs)
        for mg in sm.meta_graphs:
            tags = list(mg.meta_info_def.tags)
            for key in sorted(mg.signature_def):
                sig = mg.signature_def[key]
                if key.startswith("__") or not sig.outputs:
                    continue
                rng = make_zoo._rng(make_zoo.SEED)
                ins = {}
                try:
                    for alias in sorted(sig.inputs):
                        info = sig.inputs[alias]
                        if tf.as_dtype(info.dtype - 100 if info.dtype > 100 else info.dtype) == tf.string:
                            # classify/regress: tf.Examples carrying every feature these models read.
                            exs = [tf.train.Example(features=tf.train.Features(feature={
                                f: tf.train.Feature(float_list=tf.train.FloatList(value=[v + j]))
                                for j, f in enumerate(("x", "x2"))})).SerializeToString()
                                for v in (1.0, 2.5, -4.0)]
                            ins[alias] = np.array(exs, dtype=object)
                        else:
                            ins[alias] = make_zoo.default_input(info, rng, 3)
                    if tf2:
                        want = make_zoo._run_tf2(model, key, ins) if tags == ["serve"] else None
                    else:
                        want = make_zoo._run_tf1(model, tags, sig, ins)
                except Exception as e:  # noqa: BLE001 - TF cannot run it: nothing to judge against
                    print(f"skip  run {name} {','.join(tags)}/{key}: TensorFlow cannot run it "
                          f"({repr(e).splitlines()[0][:160]})")
                    continue
                if want is None:
                    continue
                judge_run(cli, model, name.replace("/", "_"), tags, key, ins, want, tmp,
                          "%s__%s" % ("_".join(tags), key))


# ---- 4. trained exports: sm_seq_export's output, judged by check_trained_export.py -------------

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def _idx_images(path, n):
    """The first n images of an IDX3 file (gzipped or not), float32 [n, 28, 28, 1] in [0, 1]."""
    import gzip
    import numpy as np
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        head = f.read(16)
        rows, cols = int.from_bytes(head[8:12], "big"), int.from_bytes(head[12:16], "big")
        data = f.read(n * rows * cols)
    x = np.frombuffer(data, dtype=np.uint8).astype(np.float32) / 255.0
    return x.reshape(-1, rows, cols, 1)


def trained_export_stage(cli, python, tmp):
    build = os.path.dirname(cli)
    out = os.path.join(tmp, "trained")
    os.makedirs(out, exist_ok=True)
    exports, images = [], None
    test = os.path.join(build, "test_train_export")
    if os.path.exists(test):
        r = run([test], env=dict(os.environ, SM_TRAIN_EXPORT_KEEP=out))
        check(r.returncode == 0, "test_train_export writes exports for TensorFlow",
              (r.stdout + r.stderr).decode(errors="replace")[-2000:])
        exports += [os.path.join(out, d) for d in sorted(os.listdir(out))]
    else:
        print(f"skipped: {test} absent (no synthetic trained exports)")
    r = run([cli, "train", "--help"])
    text = (r.stdout + r.stderr).decode(errors="replace")
    train_img = [os.path.join(FASHION_MNIST, f) for f in ("t10k-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte")]
    train_img = [f for f in train_img if os.path.exists(f)]
    if "unknown command" in text.lower() or "usage" not in text.lower():
        print("skipped: `savedmodel train` is not in this build")
    elif not train_img:
        print(f"skipped: `savedmodel train` export: Fashion-MNIST absent from {FASHION_MNIST}")
    else:
        d = os.path.join(out, "cli_fashion_mnist")
        r = run([cli, "train", "--data", FASHION_MNIST, "--epochs", "1", "--batch_size", "32", "--limit", "2000",
                 "--out", d])
        if check(r.returncode == 0 and os.path.isdir(d), "savedmodel train --limit 2000 writes an export",
                 (r.stdout + r.stderr).decode(errors="replace")[-2000:]):
            exports.append(d)
            import numpy as np
            images = os.path.join(tmp, "fashion_test_images.npy")
            np.save(images, _idx_images(train_img[0], 1000))
    if not exports:
        return
    cmd = [python, os.path.join(HERE, "check_trained_export.py"), "--cli", cli] + \
        (["--images", images] if images else []) + exports
    r = run(cmd)
    text = (r.stdout + r.stderr).decode(errors="replace")
    for line in text.splitlines():
        if line.startswith(("ok    ", "FAIL  ", "      ")):
            print("  " + line)
    check(r.returncode == 0, f"TensorFlow judges {len(exports)} trained export(s) (check_trained_export.py)",
          text[-3000:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--skip-regen", action="store_true", help="use the committed zoo instead of regenerating it")
    ap.add_argument("--only-trained", action="store_true",
                    help="only the trained-export stage (4)")
    ap.add_argument("--only-run", action="store_true",
                    help="only the runtime stage (3), on the committed zoo and the TF Serving models")
    args = ap.parse_args()
    cli = os.path.join(ROOT, args.build, "savedmodel") if not os.path.isabs(args.build) else os.path.join(args.build, "savedmodel")
    python = sys.executable
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    try:  # TF Text's ops (the zoo's tftext_* models hold them) are registered by importing the package
        import tensorflow_text  # noqa: F401
        print(f"interop: TensorFlow {tf.__version__}, TF Text {tensorflow_text.__version__}, CLI {cli}")
    except ImportError:
        print(f"interop: TensorFlow {tf.__version__} (no tensorflow_text: models with its ops are not run by TF), CLI {cli}")

    tmp = tempfile.mkdtemp(prefix="sm-interop-")
    if args.only_trained:
        try:
            trained_export_stage(cli, python, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{results['passed']} passed, {results['failed']} failed")
        return 1 if results["failed"] else 0
    if args.only_run:
        try:
            run_stage(cli, os.path.join(ROOT, "tests", "fixtures", "zoo"), args.shared, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{results['passed']} passed, {results['failed']} failed")
        return 1 if results["failed"] else 0
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

        # 3. The runtime: `savedmodel run` gives TensorFlow's outputs (skipped until it exists).
        run_stage(cli, zoo, args.shared, tmp)

        # 4. Trained exports: TensorFlow loads and runs what sm_seq_export writes.
        trained_export_stage(cli, python, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
