"""The owner of one C handle, shared by every wrapper class of the package,
and the argument checks every call into the library goes through.

Thread safety: every call that hands the C handle to the library holds a
*use* of the Python object (``with obj._use() as h:``, or ``_using(a, b)``
for several). close() marks the object closed at once, so a new use raises
``ValueError("operation on a closed schedule")``, then waits until the uses
already in flight on other threads have returned before it frees the C
handle. Closing an object while another thread works with it is therefore
safe: that thread finishes its call, and its next call raises ValueError.

Argument checks: ctypes silently wraps integers (-1 becomes 4294967295 for a
uint32_t), cuts strings at an embedded NUL and passes any object with the
right attribute as a handle. The helpers below turn each of those into an
exception naming the parameter before anything reaches C.
"""
from __future__ import annotations

import ctypes as _ctypes
import operator as _operator
import threading as _threading
import typing as _t

from . import _lib
from ._errors import error as _error

U32_MAX = 0xFFFFFFFF
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1
SIZE_MAX = (1 << (8 * _ctypes.sizeof(_ctypes.c_size_t))) - 1


def invalid(message: str) -> Exception:
    """pipesched.InvalidArgument (a ValueError) with `message`."""
    return _error(_lib.EINVAL, message)


def _shown(value: int) -> str:
    """An integer for a message: whole up to 40 digits, else its head and
    its digit count (messages stay short)."""
    digits = str(value)
    return digits if len(digits) <= 40 else f"{digits[:12]}... ({len(digits.lstrip('-'))} digits)"


def integer(name: str, value: object, low: int, high: int) -> int:
    """`value` as an int in [low, high]; TypeError when it is not an integer,
    InvalidArgument (ValueError) naming `name` when it is out of range."""
    if isinstance(value, float) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    v = _operator.index(value)
    if not low <= v <= high:
        raise invalid(f"{name} ({_shown(v)}) must be between {low} and {high}")
    return v


def u32(name: str, value: object) -> int:
    """An integer for a uint32_t parameter."""
    return integer(name, value, 0, U32_MAX)


def i64(name: str, value: object) -> int:
    """An integer for an int64_t parameter."""
    return integer(name, value, I64_MIN, I64_MAX)


def size(name: str, value: object) -> int:
    """An integer for a size_t parameter."""
    return integer(name, value, 0, SIZE_MAX)


def real(name: str, value: object) -> float:
    """A number for a double parameter: TypeError for a non-number (a str is
    not read as a number), OverflowError naming `name` for an integer too
    large for a double. NaN and infinities pass; the library judges them."""
    if isinstance(value, (str, bytes, bytearray)) or (
            not hasattr(type(value), "__float__") and not hasattr(type(value), "__index__")):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        shown = _shown(value) if isinstance(value, int) else repr(value)
        raise OverflowError(f"{name} ({shown}) is too large for a double") from None


def triple(name: str, value: object) -> _t.Tuple[float, float, float]:
    """Three numbers (F, B, W)."""
    try:
        items = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{name} must be three numbers (F, B, W), not "
                        f"{type(value).__name__}") from None
    if len(items) != 3:
        raise invalid(f"{name} ({value!r}) must be three numbers (F, B, W)")
    f, b, w = (real(f"{name}[{i}]", x) for i, x in enumerate(items))
    return f, b, w


def text(name: str, value: object) -> bytes:
    """A str for a `const char *` parameter, UTF-8 encoded: TypeError for
    anything but str, InvalidArgument for an embedded NUL (C would stop
    reading there) or a lone surrogate."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if "\0" in value:
        raise invalid(f"{name} ({value!r}) contains a NUL character")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise invalid(f"{name} ({value!r}) is not valid UTF-8 text: {e.reason}") from None


def of_type(name: str, value: object, cls: type) -> None:
    """TypeError naming the expected wrapper class when `value` is not one."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a pipesched.{cls.__name__}, not "
                        f"{type(value).__name__}")


# Passed by the package to the constructors that take a raw C pointer
# (Schedule, Report, Partition, SearchResult): a pointer from anywhere else
# would crash the interpreter, so those constructors refuse to run without it.
INTERNAL = object()


def internal_only(token: object, what: str, makers: str) -> None:
    """TypeError unless a constructor was called by the package itself."""
    if token is not INTERNAL:
        raise TypeError(f"pipesched.{what} cannot be created directly; use {makers}")


class _Handle:
    """Owner of one C handle; `handle` is None once closed."""
    handle: _t.Optional[_ctypes.c_void_p] = None
    _destroy_name: _t.Optional[str] = None
    _what = "handle"

    def __init__(self, ptr: _t.Union[_ctypes.c_void_p, int, None]) -> None:
        self._destroy = getattr(_lib.load(), self._destroy_name)  # type: ignore[arg-type]
        self._cond = _threading.Condition(_threading.Lock())
        self._users = 0
        self.handle = _ctypes.c_void_p(ptr.value if isinstance(ptr, _ctypes.c_void_p) else ptr)

    def _acquire(self) -> _ctypes.c_void_p:
        with self._cond:
            if self.handle is None:
                raise ValueError(f"operation on a closed {self._what}")
            self._users += 1
            return self.handle

    def _release(self) -> None:
        with self._cond:
            self._users -= 1
            if self._users == 0:
                self._cond.notify_all()

    def _use(self) -> "_Using":
        """Context manager: the C handle, kept alive until the block ends."""
        return _Using((self,))

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self.handle is None

    def close(self) -> None:
        """Free the C handle (idempotent). Calls in flight on other threads
        finish first; any later call raises ValueError."""
        cond = getattr(self, "_cond", None)
        if cond is None:  # __init__ never ran
            return
        with cond:
            h, self.handle = self.handle, None
            while self._users:
                cond.wait()
        if h is not None and h.value:
            self._destroy(h)

    def __enter__(self: "_H") -> "_H":
        self._acquire()
        self._release()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown may have torn down ctypes
            pass

    def __reduce__(self) -> _t.NoReturn:
        raise TypeError(f"cannot pickle a pipesched {self._what}: it owns a C handle")


_H = _t.TypeVar("_H", bound=_Handle)


class _Using:
    """Holds a use of every object given (see the module docstring); yields
    their C handles (the one handle when given one object; None for None)."""
    __slots__ = ("_objects", "_held")

    def __init__(self, objects: _t.Sequence[_t.Optional[_Handle]]) -> None:
        self._objects = objects
        self._held: _t.List[_Handle] = []

    def __enter__(self) -> _t.Any:
        handles = []
        try:
            for obj in self._objects:
                if obj is None:
                    handles.append(None)
                    continue
                handles.append(obj._acquire())
                self._held.append(obj)
        except BaseException:
            self.__exit__()
            raise
        return handles[0] if len(handles) == 1 else handles

    def __exit__(self, *exc_info: object) -> None:
        while self._held:
            self._held.pop()._release()


def using(*objects: _t.Optional[_Handle]) -> _Using:
    """Hold a use of several objects at once (None entries give None)."""
    return _Using(objects)
