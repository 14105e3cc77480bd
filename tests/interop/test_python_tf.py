#!/usr/bin/env python3
"""test_python_tf.py - the Python package (python/savedmodel) against live TensorFlow.

Usage: PYTHON test_python_tf.py [--build BUILD_DIR]   (PYTHON has tensorflow and numpy; BUILD_DIR has
libsavedmodel.so). The package is imported from the source tree with SAVEDMODEL_LIBRARY pointing at
BUILD_DIR's library. For TF1 and TF2 models (half_plus_two from ../shared when present, the seed
CNN, a string-input model, multi-input models, int, bool and string outputs) the same keyword
arguments go to tf.saved_model.load(...).signatures[key] and to savedmodel.load(...).signatures[key]:
signature keys, input and output specs, and outputs (float 1e-5 relative, the rest exactly) must
agree. The same for Python lists, scalars, str, numpy arrays of other dtypes: where TensorFlow
converts, the outputs must agree; where TensorFlow refuses, savedmodel must raise too.
Prints 'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import os
import sys
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZOO = os.path.join(ROOT, "tests", "fixtures", "zoo")
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


def close(got, want, what):
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, TF {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, TF {want.shape}"
    if want.dtype.kind in "fc":
        scale = float(np.abs(want[np.isfinite(want)]).max()) if np.isfinite(want).any() else 0.0
        ok = (np.abs(got - want) <= 1e-5 * np.maximum(np.abs(got), np.abs(want)) + 1e-6 * scale + 1e-6) | (got == want)
        ok |= np.isnan(got) & np.isnan(want)
        assert ok.all(), f"{what}: {got} vs TF {want}"
    else:
        assert np.array_equal(got, want), f"{what}: {got!r} vs TF {want!r}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    os.environ["SAVEDMODEL_LIBRARY"] = os.path.join(os.path.abspath(args.build), "libsavedmodel.so")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import savedmodel
    import tensorflow as tf
    import warnings
    warnings.simplefilter("ignore")  # numpy's ComplexWarning when TF (and we) drop imaginary parts

    shared = os.path.join(os.path.dirname(ROOT), "shared", "fixtures", "tf-serving")
    rng = np.random.default_rng(18)
    models = [("tf2_multi_sig", ["serve"]), ("tf1_vocab", ["serve"]), ("tf1_labels", ["serve"]),
              ("keras_multi_io", ["serve"]), ("keras_seed_cnn", ["serve"]), ("tf1_square", ["serve"]),
              ("tf1_multi_tags", ["serve", "gpu"])]
    paths = {n: (os.path.join(ZOO, n, "model"), t) for n, t in models}
    for n in ("saved_model_half_plus_two_cpu/00000123", "saved_model_half_plus_two_tf2_cpu/00000123"):
        if os.path.isdir(os.path.join(shared, n)):
            paths[n.split("/")[0]] = (os.path.join(shared, n), ["serve"])
        else:
            print(f"skipped: {shared}/{n} absent")
    tf_models, sm_models = {}, {}
    for name, (path, tags) in paths.items():
        tf_models[name] = tf.saved_model.load(path, tags=tags)
        sm_models[name] = savedmodel.load(path, tags=tags)

    def specs_agree(name):
        t, s = tf_models[name], sm_models[name]
        assert s.signature_keys == sorted(t.signatures.keys()), (s.signature_keys, list(t.signatures.keys()))
        for key in s.signature_keys:
            _, tin = t.signatures[key].structured_input_signature
            sin = s.signatures[key].inputs
            assert sorted(tin) == sorted(sin), (key, sorted(tin), sorted(sin))
            for a, spec in tin.items():
                assert savedmodel._lib.lib.sm_dtype_name(spec.dtype.as_datatype_enum).decode() == sin[a].dtype_name, \
                    (key, a, spec, sin[a])
                want = None if spec.shape.rank is None else tuple(spec.shape.as_list())
                assert sin[a].shape == want, (key, a, sin[a].shape, want)
            tout = t.signatures[key].structured_outputs
            assert sorted(tout) == sorted(s.signatures[key].outputs), key

    for name in paths:
        check(f"{name}: signature keys, input specs and output names as TensorFlow's", lambda n=name: specs_agree(n))

    def same_call(name, key, **kw):
        def fn():
            try:
                want = {k: v.numpy() for k, v in tf_models[name].signatures[key](**kw).items()}
            except (TypeError, ValueError, tf.errors.OpError) as e:
                try:
                    sm_models[name].signatures[key](**kw)
                except (savedmodel.Error, TypeError) as mine:
                    return f"both refuse: {type(mine).__name__}: {str(mine)[:100]}"
                raise AssertionError(f"TensorFlow refuses ({str(e)[:160]}), savedmodel accepted") from None
            got = sm_models[name].signatures[key](**kw)
            assert sorted(got) == sorted(want), (sorted(got), sorted(want))
            for a in want:
                close(got[a], np.asarray(want[a]), f"{name}/{key} '{a}'")
        desc = ", ".join(f"{k}={type(v).__name__}" + (f"[{v.dtype}]" if isinstance(v, np.ndarray) else "")
                         for k, v in kw.items())
        check(f"{name} {key}({desc}) as TensorFlow", fn)

    f32 = np.float32
    x = rng.standard_normal((4, 3)).astype(f32)
    same_call("tf2_multi_sig", "serving_default", x=x)
    same_call("tf2_multi_sig", "serving_default", x=x.astype(np.float64))
    same_call("tf2_multi_sig", "serving_default", x=x.tolist())
    same_call("tf2_multi_sig", "serving_default", x=[[1, 2, 3]])
    same_call("tf2_multi_sig", "serving_default", x=[[True, False, True]])
    same_call("tf2_multi_sig", "serving_default", x=x.astype(np.complex64))
    same_call("tf2_multi_sig", "serving_default", x=[[1 + 1j, 2, 3]])
    same_call("tf2_multi_sig", "serving_default", x=np.ones((2, 4), f32))
    same_call("tf2_multi_sig", "serving_default", x=1.0)
    n = np.array([-7, 0, 5, 2 ** 40, 3], np.int64)
    same_call("tf2_multi_sig", "ints", n=n, k=np.int64(3))
    same_call("tf2_multi_sig", "ints", n=n.tolist(), k=3)
    same_call("tf2_multi_sig", "ints", n=[1, 2], k=3.0)
    same_call("tf2_multi_sig", "ints", n=[1, 2], k=True)
    same_call("tf2_multi_sig", "ints", n=[2 ** 63], k=1)
    same_call("tf2_multi_sig", "ints", n=np.array([1.7, -2.2]), k=2)
    same_call("tf2_multi_sig", "ints", n=np.array(["12", "3"]), k=2)
    same_call("tf2_multi_sig", "ints", n=["1"], k=2)
    same_call("tf2_multi_sig", "ints", n=[1, 2])
    same_call("tf2_multi_sig", "strings", s=["abc", "é", "", "a\x00b"])
    same_call("tf2_multi_sig", "strings", s=[b"abc", b"\xff", b""])
    same_call("tf2_multi_sig", "strings", s=np.array(["x", "yz"]))
    same_call("tf2_multi_sig", "strings", s=np.array([b"x", b"yz"]))
    same_call("tf2_multi_sig", "strings", s=[1, 2])
    same_call("tf2_multi_sig", "strings", s="abc")
    same_call("tf2_multi_sig", "masked", x=x, mask=x > 0)
    same_call("tf2_multi_sig", "masked", x=x, mask=(x > 0).tolist())
    same_call("tf2_multi_sig", "masked", x=x, mask=(x > 0).astype(int).tolist())
    same_call("tf2_multi_sig", "masked", x=x, mask=(x > 0).astype(np.int64))
    same_call("tf1_vocab", "serving_default", tokens=["the", "cat", "zebra", ""])
    same_call("tf1_vocab", "serving_default", tokens=np.array([b"dog", b"the"]))
    same_call("tf1_vocab", "to_words", ids=[0, 1, 2, -1, 99])
    same_call("tf1_labels", "predict", x=rng.standard_normal((3, 4)).astype(f32))
    ex = [tf.train.Example(features=tf.train.Features(feature={"x": tf.train.Feature(
        float_list=tf.train.FloatList(value=list(map(float, rng.standard_normal(4)))))})).SerializeToString()
        for _ in range(2)]
    same_call("tf1_labels", "serving_default", inputs=ex)
    same_call("keras_multi_io", "serving_default", left=rng.standard_normal((2, 3)).astype(f32),
              right=rng.standard_normal((2, 2)).astype(f32), ids=np.array([[1], [7]], np.int64))
    same_call("keras_multi_io", "serving_default", left=[[0.5, 1, 2]], right=[[1, 2]], ids=[[3]])
    same_call("keras_seed_cnn", "serving_default", inputs=rng.random((3, 28, 28, 1)).astype(f32))
    for key in sm_models["keras_seed_cnn"].signature_keys:
        spec = sm_models["keras_seed_cnn"].signatures[key].inputs
        check(f"keras_seed_cnn {key}: one 28x28x1 float input", lambda s=spec: (
            [(v.shape, v.dtype_name) for v in s.values()] == [((None, 28, 28, 1), "DT_FLOAT")] or
            (_ for _ in ()).throw(AssertionError(s))))
    same_call("tf1_square", "serving_default", x=np.arange(6, dtype=f32).reshape(2, 3))
    same_call("tf1_square", "serving_default", x=3)
    same_call("tf1_multi_tags", "serving_default", x=rng.standard_normal((2, 3)).astype(f32))
    if "saved_model_half_plus_two_cpu" in paths:  # TF1: x[?,1]
        same_call("saved_model_half_plus_two_cpu", "serving_default", x=np.array([[2.0], [3.0], [4.0]], f32))
        same_call("saved_model_half_plus_two_cpu", "serving_default", x=[[1.0], [2]])
    if "saved_model_half_plus_two_tf2_cpu" in paths:  # TF2: x[1]
        same_call("saved_model_half_plus_two_tf2_cpu", "serving_default", x=np.array([2.0], f32))
        same_call("saved_model_half_plus_two_tf2_cpu", "serving_default", x=[5])

    for m in sm_models.values():
        m.close()
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
