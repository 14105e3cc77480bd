"""_lib.py - finds libsavedmodel.so and declares the C functions this package calls (ctypes).

Search order: the SAVEDMODEL_LIBRARY environment variable (a path to a libsavedmodel.so), then the
copy `pip install` put beside this file. Neither: ImportError saying how to get one. Only the public
API of include/savedmodel/*.h is used. ctypes releases the GIL around every call, so runs on several
threads proceed in parallel inside the library.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_BUNDLED = os.path.join(_HERE, "libsavedmodel.so")

c_int, c_int64, c_size_t, c_char_p, c_void_p = ctypes.c_int, ctypes.c_int64, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p


class TensorInfo(ctypes.Structure):
    """sm_tensor_info (model.h)."""
    _fields_ = [("alias", c_char_p), ("name", c_char_p), ("dtype", c_int), ("rank", c_int),
                ("dims", ctypes.POINTER(c_int64))]


class LoadOptions(ctypes.Structure):
    """sm_load_options (model.h)."""
    _fields_ = [("num_threads", c_int), ("signatures", ctypes.POINTER(c_char_p)), ("nsignatures", c_int),
                ("max_graph_nodes", ctypes.c_int64), ("max_load_bytes", ctypes.c_int64),
                ("allow_external_files", c_int), ("device", c_int)]


def _find():
    env = os.environ.get("SAVEDMODEL_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise ImportError(f"savedmodel: SAVEDMODEL_LIBRARY={env!r} is not a file "
                              "(it should name a built libsavedmodel.so)")
        return env
    if os.path.isfile(_BUNDLED):
        return _BUNDLED
    raise ImportError(
        f"savedmodel: libsavedmodel.so not found: the package has none ({_BUNDLED}) and "
        "SAVEDMODEL_LIBRARY is not set. Install the package with `pip install ./python` from the "
        "libsavedmodel repository (it builds the library with CMake), or set SAVEDMODEL_LIBRARY to "
        "the path of a built libsavedmodel.so (e.g. build/libsavedmodel.so).")


def _load():
    path = _find()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"savedmodel: cannot load {path}: {e}") from e
    P = ctypes.POINTER
    sigs = {
        # status.h
        "sm_status_code": (c_int, [c_void_p]),
        "sm_status_message": (c_char_p, [c_void_p]),
        "sm_status_free": (None, [c_void_p]),
        "sm_code_name": (c_char_p, [c_int]),
        # version.h, dtype.h
        "sm_version": (c_char_p, []),
        "sm_dtype_name": (c_char_p, [c_int]),
        "sm_dtype_size": (c_size_t, [c_int]),
        # tensor.h
        "sm_tensor_new": (c_void_p, [c_int, c_int, P(c_int64), P(c_void_p)]),
        "sm_tensor_free": (None, [c_void_p]),
        "sm_tensor_is_shared": (c_int, [c_void_p]),
        "sm_tensor_dtype": (c_int, [c_void_p]),
        "sm_tensor_rank": (c_int, [c_void_p]),
        "sm_tensor_dims": (P(c_int64), [c_void_p]),
        "sm_tensor_num_elements": (c_int64, [c_void_p]),
        "sm_tensor_data": (c_void_p, [c_void_p]),
        "sm_tensor_nbytes": (c_size_t, [c_void_p]),
        "sm_tensor_string": (c_void_p, [c_void_p, c_int64, P(c_size_t)]),
        "sm_tensor_set_string": (c_void_p, [c_void_p, c_int64, c_char_p, c_size_t]),
        # model.h
        "sm_model_load": (c_void_p, [c_char_p, P(c_char_p), c_int, P(LoadOptions), P(c_void_p)]),
        "sm_model_free": (None, [c_void_p]),
        "sm_model_num_signatures": (c_int, [c_void_p]),
        "sm_model_signature_key": (c_char_p, [c_void_p, c_int]),
        "sm_model_signature_method": (c_char_p, [c_void_p, c_char_p]),
        "sm_model_signature_inputs": (c_void_p, [c_void_p, c_char_p, P(P(TensorInfo)), P(c_int)]),
        "sm_model_signature_outputs": (c_void_p, [c_void_p, c_char_p, P(P(TensorInfo)), P(c_int)]),
        "sm_model_signature_warning": (c_char_p, [c_void_p, c_char_p]),
        "sm_model_num_warnings": (c_int, [c_void_p]),
        "sm_model_warning": (c_char_p, [c_void_p, c_int]),
        "sm_model_run": (c_void_p, [c_void_p, c_char_p, P(c_char_p), P(c_void_p), c_int, P(c_char_p), c_int,
                                    P(c_void_p)]),
        "sm_model_session_run": (c_void_p, [c_void_p, P(c_char_p), P(c_void_p), c_int, P(c_char_p), c_int,
                                            P(c_char_p), c_int, P(c_void_p)]),
    }
    for name, (res, args) in sigs.items():
        try:
            fn = getattr(lib, name)
        except AttributeError as e:
            raise ImportError(f"savedmodel: {path} has no {name} (a libsavedmodel older than this package?)") from e
        fn.restype, fn.argtypes = res, args
    return lib, path


lib, path = _load()
