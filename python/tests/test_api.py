"""test_api.py - the package around the runs: version, where the library came from, the error
hierarchy and the library's messages (missing dir, bad tag, unknown signature, wrong dtype / shape,
missing or unknown input), input conversion, zero-copy outputs, threads, close(). Expected values
are TensorFlow's goldens (tests/fixtures/zoo); which conversions TensorFlow accepts is checked
against live TensorFlow in tests/interop/test_python_tf.py."""
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import savedmodel
from conftest import ROOT, ZOO, assert_matches, read_case, zoo_model


def golden(name, case):
    return read_case(os.path.join(ZOO, name, "golden", "outputs", case))


@pytest.fixture(scope="module")
def multi():
    with savedmodel.load(zoo_model("tf2_multi_sig")) as m:
        yield m


# ---- the package -------------------------------------------------------------------------------
def test_version_is_the_librarys():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        want = re.search(r"project\(savedmodel VERSION ([0-9.]+)", f.read()).group(1)
    assert savedmodel.__version__ == want
    cli = os.environ.get("SAVEDMODEL_CLI")
    if cli and os.path.exists(cli):
        out = subprocess.run([cli, "--version"], capture_output=True, text=True).stdout
        assert want in out


def test_library_is_the_bundled_one():
    """Installed by pip, the package loads the library setup.py put inside it (unless overridden)."""
    if os.environ.get("SAVEDMODEL_LIBRARY"):
        assert savedmodel.library_path == os.environ["SAVEDMODEL_LIBRARY"]
    else:
        assert os.path.dirname(savedmodel.library_path) == os.path.dirname(savedmodel.__file__)


def _import_with(env_value):
    env = dict(os.environ, SAVEDMODEL_LIBRARY=env_value)
    return subprocess.run([sys.executable, "-c", "import savedmodel"], capture_output=True, text=True, env=env)


def test_library_override_errors():
    r = _import_with("/nonexistent/libsavedmodel.so")
    assert r.returncode != 0 and "SAVEDMODEL_LIBRARY='/nonexistent/libsavedmodel.so' is not a file" in r.stderr
    r = _import_with(__file__)  # a file that is no shared library
    assert r.returncode != 0 and "cannot load" in r.stderr


def test_library_missing_error(tmp_path):
    """Neither the env var nor a bundled library: ImportError saying how to get one."""
    pkg = tmp_path / "savedmodel"
    pkg.mkdir()
    src = os.path.dirname(savedmodel.__file__)
    for f in os.listdir(src):
        if f.endswith(".py"):
            (pkg / f).write_bytes(open(os.path.join(src, f), "rb").read())
    env = {k: v for k, v in os.environ.items() if k != "SAVEDMODEL_LIBRARY"}
    r = subprocess.run([sys.executable, "-c", "import savedmodel"], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode != 0
    assert "libsavedmodel.so not found" in r.stderr and "pip install ./python" in r.stderr


def test_error_classes_mirror_status_codes():
    lib = savedmodel._lib.lib
    names = {"IO": "IoError", "NO_MEMORY": "OutOfMemoryError"}
    for code in range(1, 15):
        cname = lib.sm_code_name(code).decode()
        cls = type(savedmodel.errors.error_for(code, "m"))
        want = names.get(cname) or "".join(w.capitalize() for w in cname.split("_")) + "Error"
        assert cls.__name__ == want and cls.code == code and issubclass(cls, savedmodel.Error)
        assert getattr(savedmodel, want) is cls
    assert issubclass(savedmodel.InvalidArgumentError, ValueError)
    assert issubclass(savedmodel.NotFoundError, KeyError)
    e = savedmodel.errors.error_for(99, "odd")
    assert type(e) is savedmodel.Error and e.code == 99 and str(e) == "odd"


# ---- errors, with the library's messages --------------------------------------------------------
def test_missing_dir(tmp_path):
    with pytest.raises(savedmodel.NotFoundError, match=re.escape(str(tmp_path / "nope"))):
        savedmodel.load(tmp_path / "nope")


def test_bad_tag():
    with pytest.raises(savedmodel.NotFoundError, match=r"tags: \{ gpu \}.*Available tag-sets: \{ serve \}"):
        savedmodel.load(zoo_model("tf2_multi_sig"), tags=["gpu"])


def test_load_budget_options():
    # the load options reach the library field by field (sm_load_options' layout): a byte budget of 1
    # is refused naming max_load_bytes, a node budget of 1 naming max_graph_nodes, and the defaults load
    with pytest.raises(savedmodel.ResourceExhaustedError, match="max_load_bytes 1"):
        savedmodel.load(zoo_model("tf2_multi_sig"), max_load_bytes=1)
    with pytest.raises(savedmodel.ResourceExhaustedError, match="max_graph_nodes"):
        savedmodel.load(zoo_model("tf2_multi_sig"), max_graph_nodes=1)
    with savedmodel.load(zoo_model("tf2_multi_sig"), allow_external_files=True) as m:
        assert m.signature_keys


def test_device_option():
    # sm_load_options.device, the last field: "gpu" reaches the library (which fails naming what is
    # missing where no GPU can be used, or loads where one can); anything but cpu/gpu is refused here
    with pytest.raises(ValueError, match="device must be 'cpu' or 'gpu'"):
        savedmodel.load(zoo_model("tf2_multi_sig"), device="tpu")
    try:
        m = savedmodel.load(zoo_model("tf2_multi_sig"), device="gpu")
    except savedmodel.Error as e:
        assert "GPU" in str(e)
    else:
        assert m.signature_keys
        m.close()
    with savedmodel.load(zoo_model("tf2_multi_sig"), device="cpu") as m:
        assert m.signature_keys


def test_multi_metagraph_tags():
    m = savedmodel.load(zoo_model("tf1_multi_tags"), tags=("gpu", "serve"))
    assert m.tags == ["gpu", "serve"] and "serving_default" in m.signature_keys
    m.close()


def test_unknown_signature(multi):
    with pytest.raises(savedmodel.NotFoundError, match="no signature 'nope'.*'ints', 'masked', 'serving_default'"):
        multi.signatures["nope"]
    with pytest.raises(KeyError):
        multi.signatures["nope"]
    assert "nope" not in multi.signatures and multi.signatures.get("nope") is None


def test_wrong_shape(multi):
    with pytest.raises(savedmodel.InvalidArgumentError, match=r"input 'x' expects shape \[\?,3\], given \[2,4\]"):
        multi.signatures["serving_default"](x=np.ones((2, 4), np.float32))


def test_missing_and_unknown_input(multi):
    with pytest.raises(savedmodel.InvalidArgumentError, match="missing input 'k'"):
        multi.signatures["ints"](n=np.array([1], np.int64))
    with pytest.raises(savedmodel.InvalidArgumentError, match="has no input 'z'"):
        multi.signatures["serving_default"](x=np.ones((1, 3), np.float32), z=np.ones(1, np.float32))
    with pytest.raises(TypeError, match="by keyword"):
        multi.signatures["serving_default"](np.ones((1, 3), np.float32))


def test_wrong_dtype(multi):
    ints = multi.signatures["ints"]
    with pytest.raises(savedmodel.InvalidArgumentError, match="input 'k': cannot convert 2.5 to DT_INT64"):
        ints(n=[1], k=2.5)
    with pytest.raises(savedmodel.InvalidArgumentError, match="out of the range of DT_INT64"):
        ints(n=[2 ** 63], k=1)
    with pytest.raises(savedmodel.InvalidArgumentError, match="cannot convert"):
        ints(n=np.array(["x"]), k=1)
    with pytest.raises(savedmodel.InvalidArgumentError, match="to DT_STRING"):
        multi.signatures["strings"](s=[1, 2])
    with pytest.raises(savedmodel.InvalidArgumentError, match="to DT_STRING"):
        multi.signatures["strings"](s=np.array([1.0]))
    with pytest.raises(savedmodel.InvalidArgumentError, match="to DT_BOOL"):
        multi.signatures["masked"](x=np.ones((1, 3), np.float32), mask=[[1, 0, 1]])


# ---- conversions --------------------------------------------------------------------------------
def test_python_values_and_casts_match_golden(multi):
    """The golden inputs given as lists, scalars, other numpy dtypes and str give TF's outputs."""
    sig, ins, want = golden("tf2_multi_sig", "serve__ints")
    for n, k in ((ins["n"].tolist(), int(ins["k"])), (ins["n"].astype(">i8"), ins["k"].astype(np.float64)),
                 (ins["n"].astype(np.float64), np.int64(ins["k"]))):
        got = multi.signatures["ints"](n=n, k=k)
        for a in want:
            assert_matches(got[a], want[a], f"ints({type(n).__name__}) '{a}'")
    sig, ins, want = golden("tf2_multi_sig", "serve__serving_default")
    for x in (ins["x"].tolist(), ins["x"].astype(np.float64), np.asfortranarray(ins["x"]), ins["x"][:, ::-1][:, ::-1]):
        assert_matches(multi.signatures["serving_default"](x=x)["y"], want["y"], "serving_default(x as list/f64/F)")
    sig, ins, want = golden("tf2_multi_sig", "serve__strings")
    for s in (ins["s"].tolist(), [b.decode("utf-8") for b in ins["s"].tolist()], np.array(ins["s"].tolist())):
        got = multi.signatures["strings"](s=s)
        for a in want:
            assert_matches(got[a], want[a], f"strings({type(s).__name__}) '{a}'")


def test_string_bytes_exact(multi):
    """Strings with NULs and any bytes go through unchanged (joined appends TF's recorded suffix)."""
    sig, ins, want = golden("tf2_multi_sig", "serve__strings")
    suffix = want["joined"][0][len(ins["s"][0]):]
    got = multi.signatures["strings"](s=[b"a\x00b", b"\xff\xfe", b""])["joined"]
    assert got.dtype == object and got.tolist() == [b"a\x00b" + suffix, b"\xff\xfe" + suffix, suffix]


def test_all_dtypes_model():
    sig, ins, want = golden("all_dtypes", "serve__serving_default")
    with savedmodel.load(zoo_model("all_dtypes")) as m:
        got = m.signatures["serving_default"](**ins)
        assert got["count"].shape == () and got["count"].dtype == np.int32
        for a in want:
            assert_matches(got[a], want[a], f"all_dtypes '{a}'")


# ---- outputs: zero copy and lifetime ------------------------------------------------------------
def test_outputs_outlive_model():
    sig, ins, want = golden("tf2_multi_sig", "serve__serving_default")
    m = savedmodel.load(zoo_model("tf2_multi_sig"))
    y = m.signatures["serving_default"](**ins)["y"]
    m.close()
    del m
    assert_matches(y, want["y"], "y after close")
    if y.flags.writeable:  # a buffer the library gave away: ours to change
        y[...] = 0
        assert not y.any()


def test_outputs_are_views_of_the_tensor(multi):
    """Numbers come back without a copy: the array's memory is the library's tensor."""
    sig, ins, want = golden("tf2_multi_sig", "serve__serving_default")
    y = multi.signatures["serving_default"](**ins)["y"]
    assert not y.flags.owndata and y.base is not None
    buf = y.base.base if isinstance(y.base, np.ndarray) else y.base
    assert type(buf).__name__.startswith("c_char_Array") and hasattr(buf, "_owner")


# ---- threads, close, introspection --------------------------------------------------------------
def test_threads(multi):
    sig, ins, want = golden("tf2_multi_sig", "serve__serving_default")
    errors = []

    def work():
        try:
            for _ in range(20):
                assert_matches(multi.signatures["serving_default"](**ins)["y"], want["y"], "threaded")
        except BaseException as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_close_and_context_manager():
    sig, ins, _ = golden("tf2_multi_sig", "serve__serving_default")
    with savedmodel.load(zoo_model("tf2_multi_sig")) as m:
        f = m.signatures["serving_default"]
    assert "closed" in repr(m)
    with pytest.raises(savedmodel.FailedPreconditionError, match="is closed"):
        f(**ins)
    m.close()  # again: nothing


def test_introspection(multi):
    s = multi.signatures["strings"]
    assert s.key == "strings" and s.method_name == "tensorflow/serving/predict" and s.warning is None
    spec = s.inputs["s"]
    assert (spec.name, spec.dtype_name, spec.dtype, spec.shape) == ("s", "DT_STRING", np.dtype(object), (None,))
    assert spec.tensor_name.endswith(":0")
    assert repr(spec) == "TensorSpec(shape=(None,), dtype=string, name='s')"
    assert s.structured_input_signature == ((), s.inputs) and s.structured_outputs == s.outputs
    assert "inputs:\n    s: TensorSpec" in repr(s)
    assert multi.tags == ["serve"] and multi.warnings == []


def test_session_run_tf1():
    """TF1 Session.run by tensor name gives what the signature gives."""
    sig, ins, want = golden("tf1_square", "serve__serving_default")
    with savedmodel.load(zoo_model("tf1_square")) as m:
        s = m.signatures["serving_default"]
        y = m.session_run(s.outputs["y"].tensor_name, {s.inputs["x"].tensor_name: ins["x"]})
        assert_matches(y, want["y"], "session_run")
        [y2] = m.session_run([s.outputs["y"].tensor_name], {s.inputs["x"].tensor_name: ins["x"]})
        assert_matches(y2, want["y"], "session_run list")
        with pytest.raises(savedmodel.Error, match="nope"):
            m.session_run("nope:0", {})
