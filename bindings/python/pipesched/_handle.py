"""The owner of one C handle, shared by every wrapper class of the package."""
import ctypes

from . import _lib


class _Handle:
    """Owner of one C handle; `handle` is None once closed."""
    handle = None
    _destroy_name = None
    _what = "handle"

    def __init__(self, ptr):
        self._destroy = getattr(_lib.load(), self._destroy_name)
        self.handle = ctypes.c_void_p(ptr.value if isinstance(ptr, ctypes.c_void_p) else ptr)

    def _ptr(self):
        if self.handle is None:
            raise ValueError(f"operation on a closed {self._what}")
        return self.handle

    @property
    def closed(self):
        return self.handle is None

    def close(self):
        """Free the C handle now (idempotent)."""
        h, self.handle = self.handle, None
        if h is not None and h.value:
            self._destroy(h)

    def __enter__(self):
        self._ptr()
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown may have torn down ctypes
            pass
