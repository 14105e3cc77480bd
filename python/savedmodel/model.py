"""model.py - load() and the Model and Signature objects, shaped after TensorFlow's
tf.saved_model.load(): model.signatures[key](**inputs) -> {output alias: numpy array}.

A Model owns one sm_model. Calls on several threads run at once (the library allows it and ctypes
releases the GIL); close() (or leaving a `with` block) frees the model once the calls in progress
have returned, and later calls raise FailedPreconditionError.
"""
import ctypes
import os
import threading
from collections.abc import Mapping

from . import _lib
from ._tensor import DT_STRING, dtype_name, guess_tensor, numpy_dtype, to_numpy, to_tensor
from .errors import FailedPreconditionError, NotFoundError, check

lib = _lib.lib


def _strs(items):
    arr = (ctypes.c_char_p * max(len(items), 1))(*[s.encode() for s in items])
    return arr


class TensorSpec:
    """One input or output of a signature: alias (`name`), graph tensor (`tensor_name`), dtype and
    shape (None for an unknown dim; shape None for an unknown rank)."""
    __slots__ = ("name", "tensor_name", "dtype", "dtype_name", "shape", "_dt")

    def __init__(self, info):
        self.name = info.alias.decode()
        self.tensor_name = info.name.decode() if info.name else ""
        self.dtype_name = dtype_name(info.dtype)
        self.dtype = numpy_dtype(info.dtype)
        self.shape = None if info.rank < 0 else tuple(None if info.dims[i] < 0 else info.dims[i]
                                                      for i in range(info.rank))
        self._dt = info.dtype

    def __repr__(self):
        dt = "string" if self._dt == DT_STRING else (self.dtype.name if self.dtype is not None else self.dtype_name)
        return f"TensorSpec(shape={self.shape}, dtype={dt}, name={self.name!r})"

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.name, self.tensor_name, self._dt, self.shape) == \
            (other.name, other.tensor_name, other._dt, other.shape)

    __hash__ = None


class Signature:
    """A signature of a loaded model: call it with its inputs as keywords."""

    def __init__(self, model, key):
        self._model = model
        self.key = key
        h = model._handle()
        try:
            self.method_name = (lib.sm_model_signature_method(h, key.encode()) or b"").decode()
            self.inputs = self._infos(lib.sm_model_signature_inputs, h)
            self.outputs = self._infos(lib.sm_model_signature_outputs, h)
            w = lib.sm_model_signature_warning(h, key.encode())
            self.warning = w.decode() if w else None
        finally:
            model._release()
        self._out_aliases = list(self.outputs)

    def _infos(self, fn, h):
        infos = ctypes.POINTER(_lib.TensorInfo)()
        n = ctypes.c_int()
        check(fn(h, self.key.encode(), ctypes.byref(infos), ctypes.byref(n)))
        specs = [TensorSpec(infos[i]) for i in range(n.value)]
        return {s.name: s for s in specs}

    @property
    def structured_input_signature(self):
        """((), {alias: TensorSpec}) as a TF concrete function has it."""
        return (), dict(self.inputs)

    @property
    def structured_outputs(self):
        return dict(self.outputs)

    def __call__(self, *args, **inputs):
        """Runs the signature; returns {output alias: numpy array} (0-d arrays for scalars)."""
        if args:
            raise TypeError(f"signature '{self.key}' takes its inputs by keyword "
                            f"({', '.join(self.inputs) or 'none'}), got {len(args)} positional")
        names = list(inputs)
        tensors = (ctypes.c_void_p * max(len(names), 1))()
        outs = (ctypes.c_void_p * max(len(self._out_aliases), 1))()
        try:
            for i, name in enumerate(names):
                spec = self.inputs.get(name)
                # an alias the signature lacks is passed on: the library's error names it
                tensors[i] = to_tensor(inputs[name], spec._dt, name) if spec else guess_tensor(inputs[name], name)
            h = self._model._handle()
            try:
                check(lib.sm_model_run(h, self.key.encode(), _strs(names), tensors, len(names), None,
                                       len(self._out_aliases), outs))
            finally:
                self._model._release()
        finally:
            for t in tensors:
                if t:
                    lib.sm_tensor_free(t)
        result = {}
        try:
            for i, alias in enumerate(self._out_aliases):
                t, outs[i] = outs[i], None
                result[alias] = to_numpy(t)
        finally:
            for t in outs:
                if t:
                    lib.sm_tensor_free(t)
        return result

    def __repr__(self):
        def lines(specs):
            return "".join(f"\n    {s.name}: {s!r} ({s.tensor_name})" for s in specs.values())
        text = (f"Signature({self.key!r}, method_name={self.method_name!r})"
                f"\n  inputs:{lines(self.inputs) or ' none'}\n  outputs:{lines(self.outputs) or ' none'}")
        return text + (f"\n  cannot run: {self.warning}" if self.warning else "")


class _Signatures(Mapping):
    """model.signatures: key -> Signature, built on first use. A missing key raises NotFoundError
    (a KeyError) with the library's message, which lists the keys there are."""

    def __init__(self, model, keys):
        self._model = model
        self._keys = keys
        self._cache = {}

    def __getitem__(self, key):
        if not isinstance(key, str) or key not in self._keys:
            h = self._model._handle()
            try:  # the library's message for an unknown key lists the keys
                infos, n = ctypes.POINTER(_lib.TensorInfo)(), ctypes.c_int()
                check(lib.sm_model_signature_inputs(h, str(key).encode(), ctypes.byref(infos), ctypes.byref(n)))
            finally:
                self._model._release()
            raise NotFoundError(f"no signature {key!r}")
        sig = self._cache.get(key)
        if sig is None:
            sig = self._cache[key] = Signature(self._model, key)
        return sig

    def __contains__(self, key):
        return key in self._keys

    def __iter__(self):
        return iter(self._keys)

    def __len__(self):
        return len(self._keys)

    def __repr__(self):
        return f"_Signatures({self._keys})"


class Model:
    """A loaded SavedModel (savedmodel.load)."""

    def __init__(self, export_dir, tags, num_threads, signatures, max_graph_nodes=0, max_load_bytes=0,
                 allow_external_files=False, device="cpu"):
        self.export_dir = str(export_dir)
        self.tags = list(tags)
        self._lock = threading.Lock()
        self._busy = 0
        self._closed = False
        self._h = None
        if device not in ("cpu", "gpu"):
            raise ValueError(f"device must be 'cpu' or 'gpu', not {device!r}")
        opts = _lib.LoadOptions(num_threads=num_threads, max_graph_nodes=max_graph_nodes,
                                max_load_bytes=max_load_bytes, allow_external_files=int(bool(allow_external_files)),
                                device=1 if device == "gpu" else 0)
        if signatures is not None:
            keys = [signatures] if isinstance(signatures, str) else list(signatures)
            opts.signatures = _strs(keys)
            opts.nsignatures = len(keys)
        out = ctypes.c_void_p()
        check(lib.sm_model_load(self.export_dir.encode(), _strs(self.tags), len(self.tags), ctypes.byref(opts),
                                ctypes.byref(out)))
        self._h = out.value
        n = lib.sm_model_num_signatures(self._h)
        self.signature_keys = [lib.sm_model_signature_key(self._h, i).decode() for i in range(n)]
        self.signatures = _Signatures(self, self.signature_keys)
        self.warnings = [lib.sm_model_warning(self._h, i).decode() for i in range(lib.sm_model_num_warnings(self._h))]

    def _handle(self):
        with self._lock:
            if self._closed or not self._h:
                raise FailedPreconditionError(f"model {self.export_dir} is closed")
            self._busy += 1
            return self._h

    def _release(self):
        with self._lock:
            self._busy -= 1
            h = self._h if self._closed and self._busy == 0 else None
            if h:
                self._h = None
        if h:
            lib.sm_model_free(h)

    def close(self):
        """Frees the model (once the calls in progress have returned). Idempotent."""
        with self._lock:
            self._closed = True
            h = self._h if self._busy == 0 else None
            if h:
                self._h = None
        if h:
            lib.sm_model_free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None):
            lib.sm_model_free(self._h)
            self._h = None

    def session_run(self, fetches, feed_dict=None, targets=()):
        """TF1's Session.run on the loaded graph: fetch tensors by name ("y:0"), feeding any tensors
        by name. fetches: one name (returns one array) or a list (returns a list)."""
        single = isinstance(fetches, str)
        fetch = [fetches] if single else list(fetches)
        feed_dict = dict(feed_dict or {})
        feeds = (ctypes.c_void_p * max(len(feed_dict), 1))()
        outs = (ctypes.c_void_p * max(len(fetch), 1))()
        try:
            for i, v in enumerate(feed_dict.values()):
                feeds[i] = guess_tensor(v, list(feed_dict)[i])
            h = self._handle()
            try:
                check(lib.sm_model_session_run(h, _strs(list(feed_dict)), feeds, len(feed_dict), _strs(fetch),
                                               len(fetch), _strs(list(targets)), len(targets), outs))
            finally:
                self._release()
        finally:
            for t in feeds:
                if t:
                    lib.sm_tensor_free(t)
        result = []
        try:
            for i in range(len(fetch)):
                t, outs[i] = outs[i], None
                result.append(to_numpy(t))
        finally:
            for t in outs:
                if t:
                    lib.sm_tensor_free(t)
        return result[0] if single else result

    def __repr__(self):
        state = "closed" if self._closed else f"signatures={self.signature_keys}"
        return f"<savedmodel.Model {self.export_dir!r} tags={self.tags} {state}>"


def load(export_dir, tags=("serve",), *, num_threads=0, signatures=None, max_graph_nodes=0, max_load_bytes=0,
         allow_external_files=False, device="cpu"):
    """Loads the MetaGraph of export_dir whose tag set is exactly `tags` (a str is one tag), restores
    its variables and runs its init op, as tf.saved_model.load does. num_threads: threads for large
    kernels (0: one per core). signatures: compile only these keys at load (others on first call).
    max_graph_nodes / max_load_bytes: the load budget (0: the default, from the files' sizes; see
    sm_load_options). allow_external_files: let the model's ops read files outside export_dir.
    device: "cpu", or "gpu" (CUDA kernels where there are some, the CPU for the rest; fails where no
    GPU backend, driver or GPU is found)."""
    if isinstance(tags, str):
        tags = [tags]
    return Model(os.fspath(export_dir), tags, num_threads, signatures, max_graph_nodes, max_load_bytes,
                 allow_external_files, device)
