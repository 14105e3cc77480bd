"""_tensor.py - numpy arrays and Python values to sm_tensor and back.

Inputs are converted as TensorFlow converts the arguments of a signature function: a numpy array
(or numpy scalar) is cast to the signature's dtype with numpy's rules (float64 -> float32, and
float -> int truncates, as TF 2.x does); a Python scalar or (nested) list must be representable in
that dtype (bool < int < float < complex; an int out of the dtype's range, a float for an integer
input, a number for a string input are errors); bytes and str (UTF-8) feed string tensors. The
elements are copied into a new sm_tensor.

Outputs are numpy arrays: numbers share the output tensor's memory (zero copy; the array holds a
reference to the tensor, read-only when the library says the buffer is shared), strings become
object arrays of bytes as tensor.numpy() gives. bfloat16 and float8 need the ml_dtypes package.
"""
import ctypes

import numpy as np

from . import _lib
from .errors import InvalidArgumentError, UnimplementedError, check

lib = _lib.lib

DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING = 1, 2, 3, 4, 5, 6, 7
DT_COMPLEX64, DT_INT64, DT_BOOL, DT_BFLOAT16, DT_UINT16, DT_COMPLEX128, DT_HALF = 8, 9, 10, 14, 17, 18, 19
DT_UINT32, DT_UINT64 = 22, 23

# TF DataType -> numpy dtype. Quantized types are their plain integer storage.
NUMPY = {DT_FLOAT: np.float32, DT_DOUBLE: np.float64, DT_INT32: np.int32, DT_UINT8: np.uint8,
         DT_INT16: np.int16, DT_INT8: np.int8, DT_COMPLEX64: np.complex64, DT_INT64: np.int64,
         DT_BOOL: np.bool_, 11: np.int8, 12: np.uint8, 13: np.int32, 15: np.int16, 16: np.uint16,
         DT_UINT16: np.uint16, DT_COMPLEX128: np.complex128, DT_HALF: np.float16, DT_UINT32: np.uint32,
         DT_UINT64: np.uint64}
NUMPY = {k: np.dtype(v) for k, v in NUMPY.items()}
_ML_DTYPES = {DT_BFLOAT16: "bfloat16", 24: "float8_e5m2", 25: "float8_e4m3fn", 26: "float8_e4m3fnuz",
              27: "float8_e4m3b11fnuz", 28: "float8_e5m2fnuz"}


def _numpy_for(dt):
    """NUMPY[dt], or for bfloat16 / float8 ml_dtypes' type (what TensorFlow itself uses), imported on
    first need: ml_dtypes takes seconds to import, most models never meet those types."""
    if dt not in NUMPY and dt in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError:
            return None
        if hasattr(ml_dtypes, _ML_DTYPES[dt]):
            NUMPY[dt] = np.dtype(getattr(ml_dtypes, _ML_DTYPES[dt]))
    return NUMPY.get(dt)


FLOATS = {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, 24, 25, 26, 27, 28}
COMPLEX = {DT_COMPLEX64, DT_COMPLEX128}
# which kinds of Python values (numpy's dtype.kind of np.array(value)) each dtype takes
_ACCEPTS = {"bool": "b", "int": "bui", "float": "buif", "complex": "buifc"}


def dtype_name(dt):
    name = lib.sm_dtype_name(dt)
    return name.decode() if name else f"DataType({dt})"


def numpy_dtype(dt):
    """The numpy dtype of TF DataType dt (object for strings), or None when there is none here."""
    if dt == DT_STRING:
        return np.dtype(object)
    return _numpy_for(dt)


def _family(dt):
    if dt == DT_BOOL:
        return "bool"
    if dt in FLOATS:
        return "float"
    if dt in COMPLEX:
        return "complex"
    return "int"


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _numeric(value, dt, alias):
    target = _numpy_for(dt)
    if target is None:
        hint = " (install ml_dtypes for bfloat16 and float8)" if dt in FLOATS else ""
        raise UnimplementedError(f"input '{alias}': this package cannot feed {dtype_name(dt)} tensors{hint}")
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        try:  # numpy's cast, as TF's conversion of an ndarray does (even "1" -> 1)
            return np.asarray(arr.astype(target, copy=False), order="C")
        except (ValueError, TypeError) as e:
            raise InvalidArgumentError(f"input '{alias}': cannot convert a numpy array of dtype {arr.dtype} "
                                       f"to {dtype_name(dt)}: {e}") from None
    try:
        arr = np.array(value)
    except (ValueError, TypeError) as e:
        raise InvalidArgumentError(f"input '{alias}': cannot convert {_short(value)} to {dtype_name(dt)}: {e}") from None
    family = _family(dt)
    if arr.size and arr.dtype.kind not in _ACCEPTS[family]:
        raise InvalidArgumentError(f"input '{alias}': cannot convert {_short(value)} to {dtype_name(dt)}")
    if family == "int" and arr.size:
        info = np.iinfo(target)
        if arr.min() < info.min or arr.max() > info.max:
            raise InvalidArgumentError(f"input '{alias}': {_short(value)} has an integer out of the range of "
                                       f"{dtype_name(dt)}")
    return np.asarray(arr.astype(target), order="C")


def _encode(item, alias, value):
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    raise InvalidArgumentError(f"input '{alias}': cannot convert {_short(value)} to DT_STRING "
                               f"(an element is {type(item).__name__}, not bytes or str)")


def _strings(value, alias):
    if isinstance(value, (bytes, str)):
        return (), [_encode(value, alias, value)]
    if isinstance(value, np.ndarray) and value.dtype.kind not in "OSU":
        raise InvalidArgumentError(f"input '{alias}': cannot convert a numpy array of dtype {value.dtype} "
                                   "to DT_STRING")
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.array(value, dtype=object)
        except ValueError as e:
            raise InvalidArgumentError(f"input '{alias}': cannot convert {_short(value)} to DT_STRING: {e}") from None
    return arr.shape, [_encode(x, alias, value) for x in arr.reshape(-1)]


def _new(dt, shape):
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    out = ctypes.c_void_p()
    check(lib.sm_tensor_new(dt, len(shape), dims, ctypes.byref(out)))
    return out.value


def to_tensor(value, dt, alias):
    """A new sm_tensor * (the caller frees it) holding value as TF DataType dt."""
    if dt == DT_STRING:
        shape, items = _strings(value, alias)
        t = _new(dt, shape)
        try:
            for i, b in enumerate(items):
                check(lib.sm_tensor_set_string(t, i, b, len(b)))
        except BaseException:
            lib.sm_tensor_free(t)
            raise
        return t
    arr = _numeric(value, dt, alias)
    t = _new(dt, arr.shape)
    if arr.nbytes:
        if lib.sm_tensor_nbytes(t) != arr.nbytes:  # a dtype whose size here differs from the library's
            lib.sm_tensor_free(t)
            raise UnimplementedError(f"input '{alias}': {dtype_name(dt)} elements are not {arr.itemsize} bytes")
        ctypes.memmove(lib.sm_tensor_data(t), arr.ctypes.data, arr.nbytes)
    return t


def guess_tensor(value, alias):
    """A tensor for an input the signature does not declare (the library then names the alias):
    the value's own dtype."""
    if isinstance(value, (bytes, str)) or (isinstance(value, np.ndarray) and value.dtype.kind in "OSU"):
        return to_tensor(value, DT_STRING, alias)
    arr = np.asarray(value)
    dt = next((k for k, v in NUMPY.items() if v == arr.dtype), DT_FLOAT)
    return to_tensor(arr, dt, alias)


class _Owner:
    """Holds one reference on an sm_tensor for the numpy arrays over its memory."""
    __slots__ = ("t", "__weakref__")

    def __init__(self, t):
        self.t = t

    def __del__(self):
        if self.t:
            lib.sm_tensor_free(self.t)
            self.t = None


def to_numpy(t):
    """A numpy array for sm_tensor t; takes over the caller's reference on t."""
    try:
        dt = lib.sm_tensor_dtype(t)
        rank = lib.sm_tensor_rank(t)
        dims = lib.sm_tensor_dims(t)
        shape = tuple(dims[i] for i in range(rank))
        if dt == DT_STRING:
            n = lib.sm_tensor_num_elements(t)
            out = np.empty(n, dtype=object)
            length = ctypes.c_size_t()
            for i in range(n):
                p = lib.sm_tensor_string(t, i, ctypes.byref(length))
                out[i] = ctypes.string_at(p, length.value) if length.value else b""
            lib.sm_tensor_free(t)
            return out.reshape(shape)
        npdt = _numpy_for(dt)
        if npdt is None:
            hint = " (install ml_dtypes for bfloat16 and float8)" if dt in FLOATS else ""
            raise UnimplementedError(f"an output is {dtype_name(dt)}, which this package cannot return{hint}")
        nbytes = lib.sm_tensor_nbytes(t)
        data = lib.sm_tensor_data(t)
        if nbytes == 0 or not data:
            return np.zeros(shape, dtype=npdt)
        if nbytes != int(np.prod(shape, dtype=np.int64)) * npdt.itemsize:
            raise UnimplementedError(f"an output of {dtype_name(dt)} has {nbytes} bytes for shape {list(shape)}")
    except BaseException:
        lib.sm_tensor_free(t)
        raise
    shared = lib.sm_tensor_is_shared(t)
    owner = _Owner(t)
    buf = (ctypes.c_char * nbytes).from_address(data)
    buf._owner = owner  # the ctypes buffer, numpy's base, keeps the tensor alive
    arr = np.frombuffer(buf, dtype=npdt).reshape(shape)
    if shared:
        arr.flags.writeable = False
    return arr
