"""savedmodel - load and run TensorFlow SavedModels from Python without TensorFlow.

    import savedmodel, numpy as np
    m = savedmodel.load("/models/half_plus_two/1")            # tags=["serve"]
    y = m.signatures["serving_default"](x=np.array([1.0, 2.0], np.float32))["y"]

A thin ctypes layer over libsavedmodel (the C library of this repository): numpy arrays in and out,
errors as savedmodel.Error subclasses carrying the library's message.
"""
from . import _lib
from .errors import (AlreadyExistsError, CancelledError, DataLossError, DeadlineExceededError, Error,
                     FailedPreconditionError, InternalError, InvalidArgumentError, IoError, NotFoundError,
                     OutOfMemoryError, OutOfRangeError, ResourceExhaustedError, UnavailableError,
                     UnimplementedError)
from .model import Model, Signature, TensorSpec, load

__version__ = _lib.lib.sm_version().decode()
library_path = _lib.path

__all__ = ["load", "Model", "Signature", "TensorSpec", "Error", "InvalidArgumentError", "NotFoundError",
           "DataLossError", "UnimplementedError", "IoError", "OutOfMemoryError", "AlreadyExistsError",
           "OutOfRangeError", "FailedPreconditionError", "InternalError", "UnavailableError",
           "DeadlineExceededError", "CancelledError", "ResourceExhaustedError", "__version__", "library_path"]
