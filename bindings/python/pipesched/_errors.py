"""pipesched.Error and one subclass per psched_status code."""
from __future__ import annotations

import typing as _t

from . import _lib


class Error(Exception):
    """A libpipesched call failed.

    Attributes:
        status: the psched_status code (int), e.g. 1 for PSCHED_EINVAL.
        message: the library's psched_last_error() text naming the value and
            the rule that was broken.
    """
    status: _t.Optional[int] = None

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def status_name(self) -> str:
        """The code's name, e.g. "PSCHED_EINVAL"."""
        raw = _lib.load().psched_status_str(self.status)
        return raw.decode() if raw else "PSCHED_UNKNOWN"

    def __str__(self) -> str:
        return self.message


class InvalidArgument(Error, ValueError):
    """PSCHED_EINVAL: an argument breaks a documented rule."""


class OutOfMemory(Error, MemoryError):
    """PSCHED_ENOMEM: an allocation failed."""


class NotFound(Error, LookupError):
    """PSCHED_ENOTFOUND: unknown generator or option name."""


class Infeasible(Error):
    """PSCHED_EINFEASIBLE: the request cannot be met (e.g. memory limit)."""


class InvalidSchedule(Error):
    """PSCHED_EINVALID: a schedule breaks a dependency rule."""


class Deadlock(Error):
    """PSCHED_EDEADLOCK: a schedule cannot finish under in-order execution."""


class ParseError(Error, ValueError):
    """PSCHED_EPARSE: malformed text input; the message has line and column."""


class IOFailure(Error):
    """PSCHED_EIO: a file could not be read or written."""


class PluginError(Error):
    """PSCHED_EPLUGIN: a plug-in could not be loaded or registered."""


class Unsupported(Error):
    """PSCHED_EUNSUPPORTED: a valid request this build does not handle."""


class SolverError(Error):
    """PSCHED_ESOLVER: the optimizer's solver failed."""


class AlreadyExists(Error):
    """PSCHED_EEXIST: a generator with that name is already registered."""


BY_STATUS = {
    _lib.EINVAL: InvalidArgument,
    _lib.ENOMEM: OutOfMemory,
    _lib.ENOTFOUND: NotFound,
    _lib.EINFEASIBLE: Infeasible,
    _lib.EINVALID: InvalidSchedule,
    _lib.EDEADLOCK: Deadlock,
    _lib.EPARSE: ParseError,
    _lib.EIO: IOFailure,
    _lib.EPLUGIN: PluginError,
    _lib.EUNSUPPORTED: Unsupported,
    _lib.ESOLVER: SolverError,
    _lib.EEXIST: AlreadyExists,
}

for _status, _cls in BY_STATUS.items():
    _cls.status = _status


def error(status: int, message: str) -> Error:
    """The Error subclass instance for `status` (plain Error if unknown)."""
    return BY_STATUS.get(status, Error)(status, message)


def check(status: int) -> None:
    """Raise the matching Error when a library call did not return PSCHED_OK.

    Must run right after the failing call on the same thread: the message is
    the library's thread-local psched_last_error()."""
    if status != _lib.OK:
        raw = _lib.load().psched_last_error()
        raise error(status, raw.decode("utf-8", "replace") if raw else "")
