"""errors.py - the exceptions: one class per sm_code of include/savedmodel/status.h.

Every error the library reports arrives as a subclass of savedmodel.Error whose message is the
library's own (it names the file, signature, alias or node involved) and whose `code` is the
sm_code number. Where a Python built-in exception means the same thing the class derives from it
too, so `except ValueError` or `except KeyError` also work (InvalidArgumentError is a ValueError,
NotFoundError a KeyError, IoError an OSError, OutOfMemoryError a MemoryError).
"""
from . import _lib


class Error(Exception):
    """Base class of every error this package raises for the library."""
    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self):  # not KeyError's repr() of the message
        return self.message


class InvalidArgumentError(Error, ValueError):
    code = 1


class NotFoundError(Error, KeyError):
    code = 2


class DataLossError(Error):
    code = 3


class UnimplementedError(Error):
    code = 4


class IoError(Error, OSError):
    code = 5


class OutOfMemoryError(Error, MemoryError):
    code = 6


class AlreadyExistsError(Error):
    code = 7


class OutOfRangeError(Error):
    code = 8


class FailedPreconditionError(Error):
    code = 9


class InternalError(Error):
    code = 10


class UnavailableError(Error):
    code = 11


class DeadlineExceededError(Error):
    code = 12


class CancelledError(Error):
    code = 13


class ResourceExhaustedError(Error):
    code = 14


_BY_CODE = {c.code: c for c in (InvalidArgumentError, NotFoundError, DataLossError, UnimplementedError, IoError,
                                 OutOfMemoryError, AlreadyExistsError, OutOfRangeError, FailedPreconditionError,
                                 InternalError, UnavailableError, DeadlineExceededError, CancelledError,
                                 ResourceExhaustedError)}


def error_for(code, message):
    """The exception for an sm_code (a code this package does not know: Error with that code)."""
    cls = _BY_CODE.get(code)
    return cls(message) if cls else Error(message, code)


def check(status):
    """Raises the error an sm_status * stands for (and frees it); NULL (success) returns."""
    if not status:
        return
    code = _lib.lib.sm_status_code(status)
    message = (_lib.lib.sm_status_message(status) or b"").decode("utf-8", "replace")
    _lib.lib.sm_status_free(status)
    raise error_for(code, message)
