"""ctypes declarations of include/pipesched.h and the library lookup.

Only the public C API is used. Every function the package calls is declared
here with its argtypes and restype, so a wrong call fails in Python instead
of corrupting memory. The library is loaded on first use, so importing the
package never fails just because the library is missing.

Library lookup, in this order (the first that loads wins):

1. ``$PIPESCHED_LIBRARY``: a path to the library. An explicit choice is
   final: when it does not load, nothing else is tried and
   ``LibraryNotFound`` names it.
2. The copy inside the package: ``pipesched/libpipesched.so.1``, where
   ``pip install .`` (the wheel) puts it.
3. The library of the same prefix after ``meson install``: the package's
   ``_build_config.py`` (written by meson) records where the library and the
   package were installed; the library is looked up at the same relative
   path from this package, so ``meson install --destdir`` and a moved prefix
   still find it.
4. The system loader: ``ctypes.util.find_library("pipesched")``, then the
   soname ``libpipesched.so.1`` through the dynamic loader's own search
   (``LD_LIBRARY_PATH``, ``ld.so.cache``).
"""
import ctypes
import ctypes.util
import os
import threading

# psched_status values (stable, include/pipesched.h).
OK = 0
EINVAL = 1
ENOMEM = 2
ENOTFOUND = 3
EINFEASIBLE = 4
EINVALID = 5
EDEADLOCK = 6
EPARSE = 7
EIO = 8
EPLUGIN = 9
EUNSUPPORTED = 10
ESOLVER = 11
EEXIST = 12

# psched_placement
PLACEMENT_AUTO = 0
PLACEMENT_LOOP = 1
PLACEMENT_VSHAPE = 2
PLACEMENT_CUSTOM = 3

# psched_format
FORMAT_CSV = 0
FORMAT_ASCII = 1
FORMAT_JSON = 2
FORMAT_CSV_COMMS = 3
FORMAT_CHROME = 4
FORMAT_SVG = 5
FORMAT_CSV_COMMS_PYTORCH = 6

EXPORT_COLOR = 0x1
OP_OVERLAP_NEXT = 0x1
OP_BATCH_NEXT = 0x2

GENERATOR_ABI = 1

_SONAME = "libpipesched.so.1"
# Names a build of the library may carry next to the package, per platform.
_LOCAL_NAMES = (_SONAME, "libpipesched.1.dylib", "pipesched.dll")

status_t = ctypes.c_int
size_t = ctypes.c_size_t
u32 = ctypes.c_uint32
handle_out = ctypes.POINTER(ctypes.c_void_p)
double_out = ctypes.POINTER(ctypes.c_double)


class psched_op(ctypes.Structure):
    """Mirror of struct psched_op (fixed layout, 12 bytes)."""
    _fields_ = [
        ("stage", ctypes.c_uint32),
        ("microbatch", ctypes.c_uint32),
        ("chunk", ctypes.c_uint16),
        ("kind", ctypes.c_uint8),
        ("flags", ctypes.c_uint8),
    ]


# psched_option_info, the version this binding fills in.
OPTION_INFO_VERSION = 1
OPTION_DEFAULT_FROM_PLAN = 0x1
NAMING_PIPESCHED = 0
NAMING_PYTORCH = 1


class psched_option_info(ctypes.Structure):
    """Mirror of struct psched_option_info (version 1)."""
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("description", ctypes.c_char_p),
        ("min", ctypes.c_int64),
        ("max", ctypes.c_int64),
        ("default_value", ctypes.c_int64),
    ]


_check_fn = ctypes.CFUNCTYPE(status_t, ctypes.c_void_p)
_generate_fn = ctypes.CFUNCTYPE(status_t, ctypes.c_void_p, ctypes.c_void_p)


class psched_generator(ctypes.Structure):
    """Mirror of struct psched_generator, field for field, for reading the
    registry's descriptors (never for registering from Python)."""
    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("description", ctypes.c_char_p),
        ("constraints", ctypes.c_char_p),
        ("placement", ctypes.c_int),
        ("default_chunks", ctypes.c_uint32),
        ("chains", ctypes.c_uint32),
        ("check", _check_fn),
        ("generate", _generate_fn),
    ]


# name: (restype, argtypes). Functions the package calls, all from the header.
_PROTOTYPES = {
    "psched_status_str": (ctypes.c_char_p, [status_t]),
    "psched_last_error": (ctypes.c_char_p, []),
    "psched_version": (ctypes.c_char_p, []),
    "psched_free": (None, [ctypes.c_void_p]),

    "psched_plan_create": (status_t, [handle_out]),
    "psched_plan_destroy": (None, [ctypes.c_void_p]),
    "psched_plan_clone": (status_t, [ctypes.c_void_p, handle_out]),
    "psched_plan_set_devices": (status_t, [ctypes.c_void_p, u32]),
    "psched_plan_set_microbatches": (status_t, [ctypes.c_void_p, u32]),
    "psched_plan_set_chunks": (status_t, [ctypes.c_void_p, u32]),
    "psched_plan_set_chains": (status_t, [ctypes.c_void_p, u32]),
    "psched_plan_set_placement": (status_t, [ctypes.c_void_p, ctypes.c_int]),
    "psched_plan_set_stage_device": (status_t, [ctypes.c_void_p, u32, u32]),
    "psched_plan_set_cost": (status_t, [ctypes.c_void_p] + [ctypes.c_double] * 3),
    "psched_plan_set_stage_cost": (status_t, [ctypes.c_void_p, u32] + [ctypes.c_double] * 3),
    "psched_plan_set_mem": (status_t, [ctypes.c_void_p] + [ctypes.c_double] * 3),
    "psched_plan_set_stage_mem": (status_t, [ctypes.c_void_p, u32] + [ctypes.c_double] * 3),
    "psched_plan_set_comm": (status_t, [ctypes.c_void_p, ctypes.c_double]),
    "psched_plan_set_memory_limit": (status_t, [ctypes.c_void_p, ctypes.c_double]),
    "psched_plan_set_option": (status_t, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]),
    "psched_plan_get_option": (status_t, [ctypes.c_void_p, ctypes.c_char_p,
                                          ctypes.POINTER(ctypes.c_int64)]),
    "psched_plan_devices": (u32, [ctypes.c_void_p]),
    "psched_plan_microbatches": (u32, [ctypes.c_void_p]),
    "psched_plan_chunks": (u32, [ctypes.c_void_p]),
    "psched_plan_chains": (u32, [ctypes.c_void_p]),
    "psched_plan_stages": (u32, [ctypes.c_void_p]),
    "psched_plan_placement": (ctypes.c_int, [ctypes.c_void_p]),
    "psched_plan_stage_device": (u32, [ctypes.c_void_p, u32]),
    "psched_plan_stage_chunk": (u32, [ctypes.c_void_p, u32]),
    "psched_plan_comm": (ctypes.c_double, [ctypes.c_void_p]),
    "psched_plan_memory_limit": (ctypes.c_double, [ctypes.c_void_p]),
    "psched_plan_stage_cost": (status_t, [ctypes.c_void_p, u32] + [double_out] * 3),
    "psched_plan_stage_mem": (status_t, [ctypes.c_void_p, u32] + [double_out] * 3),

    "psched_generator_find": (status_t, [ctypes.c_char_p,
                                         ctypes.POINTER(ctypes.POINTER(psched_generator))]),
    "psched_generator_count": (size_t, []),
    "psched_generator_at": (ctypes.POINTER(psched_generator), [size_t]),
    "psched_generator_alias": (status_t, [ctypes.c_char_p, size_t,
                                          ctypes.POINTER(ctypes.c_char_p)]),
    "psched_generator_option_count": (status_t, [ctypes.c_char_p, ctypes.POINTER(size_t)]),
    "psched_generator_option": (status_t, [ctypes.c_char_p, size_t,
                                           ctypes.POINTER(psched_option_info)]),
    # The library's one table of op-kind and placement names.
    "psched_op_kind_str": (ctypes.c_char_p, [ctypes.c_int, ctypes.c_int]),
    "psched_placement_str": (ctypes.c_char_p, [ctypes.c_int]),
    "psched_plugin_load": (status_t, [ctypes.c_char_p]),

    "psched_generate": (status_t, [ctypes.c_void_p, ctypes.c_char_p, handle_out]),
    "psched_schedule_destroy": (None, [ctypes.c_void_p]),
    "psched_schedule_plan": (ctypes.c_void_p, [ctypes.c_void_p]),
    "psched_schedule_name": (ctypes.c_char_p, [ctypes.c_void_p]),
    "psched_schedule_devices": (u32, [ctypes.c_void_p]),
    "psched_schedule_op_count": (size_t, [ctypes.c_void_p, u32]),
    "psched_schedule_total_ops": (size_t, [ctypes.c_void_p]),
    "psched_schedule_ops": (status_t, [ctypes.c_void_p, u32, size_t, size_t,
                                       ctypes.POINTER(psched_op), size_t]),
    "psched_schedule_hash": (status_t, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]),

    "psched_validate": (status_t, [ctypes.c_void_p]),
    "psched_simulate": (status_t, [ctypes.c_void_p, ctypes.c_void_p, handle_out]),
    "psched_report_destroy": (None, [ctypes.c_void_p]),
    "psched_report_makespan": (ctypes.c_double, [ctypes.c_void_p]),
    "psched_report_span": (ctypes.c_double, [ctypes.c_void_p]),
    "psched_report_bubble_ratio": (ctypes.c_double, [ctypes.c_void_p]),
    "psched_report_peak_memory_M": (ctypes.c_double, [ctypes.c_void_p]),
    "psched_report_devices": (u32, [ctypes.c_void_p]),
    "psched_report_device": (status_t, [ctypes.c_void_p, u32] + [double_out] * 3),
    "psched_report_op_times": (status_t, [ctypes.c_void_p, u32, size_t, size_t,
                                          double_out, double_out]),

    # Text outputs come back through a void ** so the pointer survives
    # untouched for psched_free (a c_char_p result would be copied and lost).
    "psched_export": (status_t, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, u32,
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(size_t)]),
    "psched_import_csv": (status_t, [ctypes.c_char_p, size_t, ctypes.c_void_p, handle_out]),
    "psched_lower_comm": (status_t, [ctypes.c_void_p, ctypes.c_void_p, handle_out]),
}

# Declared in the header but possibly absent from an older or partial build;
# calling one of these raises pipesched.Unsupported instead of failing import.
OPTIONAL = frozenset({"psched_lower_comm"})

_lock = threading.Lock()
_loaded = None
_loaded_path = None


class LibraryNotFound(OSError):
    """No libpipesched could be loaded (see find_library_path())."""


def _prefix_library_dir(here):
    """Step 3: the library directory of the prefix this package was
    installed into by meson, or None (source tree, wheel)."""
    try:
        from . import _build_config
    except ImportError:
        return None
    package_dir = getattr(_build_config, "PACKAGE_DIR", None)
    library_dir = getattr(_build_config, "LIBRARY_DIR", None)
    if not package_dir or not library_dir:
        return None
    return os.path.normpath(os.path.join(here, os.path.relpath(library_dir, package_dir)))


def _candidates():
    """Where to look, in order (see the module docstring): $PIPESCHED_LIBRARY,
    inside the package, the same prefix's library directory, the system."""
    env = os.environ.get("PIPESCHED_LIBRARY")
    if env:
        # An explicit choice is final: silently loading another copy would
        # test or run the wrong library.
        return [(env, "PIPESCHED_LIBRARY")]
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    for directory, source in ((here, "inside the package"),
                              (_prefix_library_dir(here), "the same prefix")):
        if directory is None:
            continue
        for name in _LOCAL_NAMES:
            path = os.path.join(directory, name)
            if os.path.exists(path):
                found.append((path, source))
    system = ctypes.util.find_library("pipesched")
    if system:
        found.append((system, "ctypes.util.find_library"))
    found.append((_SONAME, "the dynamic loader"))
    return found


def _declare(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name in OPTIONAL:
                continue
            raise LibraryNotFound(f"{lib._name} has no {name}; it is not a compatible "
                                  "libpipesched (soname libpipesched.so.1)") from None
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def load():
    """The loaded library with every prototype declared (cached)."""
    global _loaded, _loaded_path
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is None:
            tried = []
            for path, source in _candidates():
                try:
                    # Global symbols: a plug-in built as a module that leaves
                    # psched_* undefined resolves them against this copy.
                    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                except OSError as e:
                    tried.append(f"{path} ({source}): {e}")
                    if source == "PIPESCHED_LIBRARY":
                        break
                    continue
                _declare(lib)
                _loaded_path = path
                _loaded = lib
                break
            if _loaded is None:
                raise LibraryNotFound("cannot load libpipesched; tried " + "; ".join(tried) +
                                      ". Set PIPESCHED_LIBRARY to the library's path.")
    return _loaded


def loaded_path():
    """Path (or name) the library was loaded from, loading it if needed."""
    load()
    return _loaded_path


def has(name):
    """Whether the loaded library exports `name`."""
    return hasattr(load(), name)


# Cost model extensions (ABI 1.1, docs/simulator.md): declared when present,
# so an older library still imports and only these calls raise Unsupported.
_COSTMODEL = {
    "psched_plan_set_overlap_saving": (status_t, [ctypes.c_void_p, ctypes.c_double]),
    "psched_plan_set_stage_overlap_saving": (status_t, [ctypes.c_void_p, u32, ctypes.c_double]),
    "psched_plan_stage_overlap_saving": (ctypes.c_double, [ctypes.c_void_p, u32]),
    "psched_plan_set_microbatch_weights": (status_t, [ctypes.c_void_p, double_out, u32]),
    "psched_plan_microbatch_weight": (ctypes.c_double, [ctypes.c_void_p, u32]),
    "psched_plan_set_comm_bytes": (status_t, [ctypes.c_void_p] + [ctypes.c_double] * 2),
    "psched_plan_set_stage_comm_bytes": (status_t, [ctypes.c_void_p, u32] + [ctypes.c_double] * 2),
    "psched_plan_stage_comm_bytes": (status_t, [ctypes.c_void_p, u32] + [double_out] * 2),
    "psched_plan_set_topology": (status_t, [ctypes.c_void_p, u32] + [ctypes.c_double] * 4),
    "psched_plan_topology": (status_t, [ctypes.c_void_p, ctypes.POINTER(u32)] + [double_out] * 4),
    "psched_plan_set_pcie_bandwidth": (status_t, [ctypes.c_void_p, ctypes.c_double]),
    "psched_plan_pcie_bandwidth": (ctypes.c_double, [ctypes.c_void_p]),
    "psched_offload": (status_t, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                  ctypes.c_double, handle_out]),
    # Vocabulary Parallelism and collectives (issue 19)
    "psched_plan_set_vocab_cost": (status_t, [ctypes.c_void_p] + [ctypes.c_double] * 2),
    "psched_plan_vocab_cost": (status_t, [ctypes.c_void_p] + [double_out] * 2),
    "psched_plan_set_vocab_mem": (status_t, [ctypes.c_void_p] + [ctypes.c_double] * 2),
    "psched_plan_vocab_mem": (status_t, [ctypes.c_void_p] + [double_out] * 2),
    "psched_plan_set_collective_bytes": (status_t, [ctypes.c_void_p, u32, ctypes.c_double]),
    "psched_plan_collective_bytes": (ctypes.c_double, [ctypes.c_void_p, u32]),
}
_PROTOTYPES.update(_COSTMODEL)
OPTIONAL = OPTIONAL | frozenset(_COSTMODEL)


class psched_lower_options(ctypes.Structure):
    """struct psched_lower_options (ABI 1.1, version 1)."""
    _fields_ = [("version", u32), ("mode", ctypes.c_int)]


LOWER_OPTIONS_VERSION = 1
LOWER_RENDEZVOUS, LOWER_ASYNC = 0, 1

# Lowering modes (ABI 1.1, docs/runtime.md): optional like the above.
_LOWERMODE = {
    "psched_lower_comm_ex": (status_t, [ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.POINTER(psched_lower_options), handle_out]),
    "psched_schedule_lower_mode": (ctypes.c_int, [ctypes.c_void_p]),
}
_PROTOTYPES.update(_LOWERMODE)
OPTIONAL = OPTIONAL | frozenset(_LOWERMODE)


#: psched_write_fn: int (*)(void *user, const char *data, size_t length)
write_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
                            ctypes.c_size_t)

# Streaming output (ABI 1.1, docs/formats.md): optional like the above.
_STREAM = {
    "psched_export_write": (status_t, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, u32,
                                       write_fn, ctypes.c_void_p]),
    "psched_generate_write": (status_t, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, u32,
                                         write_fn, ctypes.c_void_p]),
}
_PROTOTYPES.update(_STREAM)
OPTIONAL = OPTIONAL | frozenset(_STREAM)


class psched_bound_options(ctypes.Structure):
    """struct psched_bound_options (version 1)."""
    _fields_ = [("version", u32), ("flags", u32)]


class psched_bound_info(ctypes.Structure):
    """struct psched_bound_info (version 1)."""
    _fields_ = [("version", u32)] + [(name, ctypes.c_double) for name in (
        "makespan", "span", "work", "critical_path", "device_path", "memory")]


BOUND_OPTIONS_VERSION = 1
BOUND_INFO_VERSION = 1
BOUND_IGNORE_MEMORY, BOUND_VOCAB_PASSES = 0x1, 0x2

# Lower bounds and proofs (issue 17, docs/simulator.md "Lower bounds"):
# optional like the above.
_BOUNDS = {
    "psched_bound": (status_t, [ctypes.c_void_p, ctypes.POINTER(psched_bound_options),
                                ctypes.POINTER(psched_bound_info)]),
    "psched_schedule_bound": (status_t, [ctypes.c_void_p, ctypes.POINTER(psched_bound_options),
                                         ctypes.POINTER(psched_bound_info)]),
    "psched_schedule_solve_status": (status_t, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                                double_out]),
    "psched_generator_is_exact": (ctypes.c_int, [ctypes.POINTER(psched_generator)]),
}
_PROTOTYPES.update(_BOUNDS)
OPTIONAL = OPTIONAL | frozenset(_BOUNDS)
