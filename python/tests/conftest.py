"""conftest.py - where the repository's fixtures are, and the zoo's golden cases (TensorFlow's own
inputs and outputs, tests/fixtures/zoo/*/golden, layout in its MANIFEST.json) read as numpy."""
import base64
import json
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZOO = os.path.join(ROOT, "tests", "fixtures", "zoo")
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


def zoo_model(name):
    path = os.path.join(ZOO, name, "model")
    if not os.path.isdir(path):
        pytest.skip(f"{path} absent")
    return path


def manifest():
    with open(os.path.join(ZOO, "MANIFEST.json")) as f:
        return {m["name"]: m for m in json.load(f)["models"]}


def read_tensor(case_dir, entry):
    """One tensor of a golden case: .npy (numbers) or .json (DT_STRING, base64 elements)."""
    path = os.path.join(case_dir, entry["file"])
    if path.endswith(".npy"):
        return np.load(path)
    with open(path) as f:
        j = json.load(f)

    items = []

    def walk(v):
        if isinstance(v, list):
            for x in v:
                walk(x)
        else:
            items.append(base64.b64decode(v))
    walk(j["value"])
    flat = np.empty(len(items), dtype=object)
    flat[:] = items
    return flat.reshape(j["shape"])


def read_case(case_dir):
    """(signature.json, {alias: input array}, {alias: output array})."""
    with open(os.path.join(case_dir, "signature.json")) as f:
        sig = json.load(f)
    ins = {a: read_tensor(case_dir, e) for a, e in sig["inputs"].items()}
    outs = {a: read_tensor(case_dir, e) for a, e in sig["outputs"].items()}
    return sig, ins, outs


def assert_matches(got, want, what):
    """TensorFlow's tolerance of the zoo (tools/interop.py, tests/unit/test_model.c): floats within
    1e-5 relative plus 1e-6 of the tensor's largest magnitude; everything else exactly."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, TensorFlow gave {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, TensorFlow gave {want.shape}"
    if want.dtype.kind in "fc":
        finite = np.abs(want[np.isfinite(want)])
        scale = float(finite.max()) if finite.size else 0.0
        g, w = got.astype(np.complex128), want.astype(np.complex128)
        both_nan = np.isnan(g) & np.isnan(w)
        ok = np.abs(g - w) <= 1e-5 * np.maximum(np.abs(g), np.abs(w)) + 1e-6 * scale + 1e-6
        bad = ~(ok | both_nan | (g == w))
        assert not bad.any(), f"{what}: {int(bad.sum())} element(s) differ, first at {np.argwhere(bad)[0]}: " \
            f"{got[tuple(np.argwhere(bad)[0])]} vs TensorFlow's {want[tuple(np.argwhere(bad)[0])]}"
    else:
        assert np.array_equal(got, want), f"{what}: {got!r} vs TensorFlow's {want!r}"
