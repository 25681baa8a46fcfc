"""ctypes binding of the public C library (include/fp4diag.h, libfp4diag.so.0).

Where the library is looked for, in order: $FP4DIAG_LIBRARY (a path), the copy bundled
beside this file (a wheel's), then the system's (ctypes.util.find_library("fp4diag")).
Every call goes through one lock: the library runs one analysis at a time per process and
its option parser is not reentrant (fp4diag.h, "Threads").
"""
import ctypes
import ctypes.util
import os
import threading

MAX_RANK = 8
OK, ERR_USAGE, ERR_INPUT, ERR_DEVICE, ERR_INTERNAL = 0, 2, 3, 4, 5
F32, F16, BF16 = 1, 2, 3
MEM_HOST, MEM_CUDA = 0, 1

lock = threading.RLock()


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("nelems", ctypes.c_int64),
        ("problem", ctypes.c_char_p),
    ]


class TensorView(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("memory", ctypes.c_int),
    ]


# DLPack (dlpack.h, v1.0): the structures a capsule of __dlpack__() points to. Strides and
# shape are in elements; strides NULL means C order; data + byte_offset is the first element.
DL_CPU, DL_CUDA = 1, 2
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_COMPLEX, DL_BOOL = 0, 1, 2, 4, 5, 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):  # capsule "dltensor" (DLPack < 1.0)
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):  # capsule "dltensor_versioned" (1.0)
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# the capsule calls, with prototypes of their own (ctypes.pythonapi's are shared by the process)
capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi))
capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _candidates():
    env = os.environ.get("FP4DIAG_LIBRARY")
    if env:
        return [env]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libfp4diag.so.0")
    out = [here] if os.path.exists(here) else []
    found = ctypes.util.find_library("fp4diag")
    return out + [found or "libfp4diag.so.0"]


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(str(e))
    raise ImportError("fp4diag: cannot load the C library libfp4diag.so.0 (set FP4DIAG_LIBRARY "
                      "to its path, or install the package with pip): " + "; ".join(errors))


lib, path = _load()

_P = ctypes.c_void_p
_sigs = {
    "fp4d_version": (ctypes.c_char_p, []),
    "fp4d_version_number": (ctypes.c_int, []),
    "fp4d_last_error": (ctypes.c_char_p, []),
    "fp4d_config_parse_argv": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                              ctypes.POINTER(_P)]),
    "fp4d_config_free": (None, [_P]),
    "fp4d_config_count": (ctypes.c_int, [_P]),
    "fp4d_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P)]),
    "fp4d_close": (None, [_P]),
    "fp4d_tensor_count": (ctypes.c_int, [_P]),
    "fp4d_tensor_get": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(TensorInfo)]),
    "fp4d_read_f32": (ctypes.c_int, [_P, ctypes.c_char_p, _P, ctypes.c_int64]),
    "fp4d_analyze": (ctypes.c_int, [_P, ctypes.c_char_p, _P, ctypes.POINTER(_P)]),
    "fp4d_analyze_memory": (ctypes.c_int, [ctypes.POINTER(TensorView), _P, ctypes.POINTER(_P)]),
    "fp4d_result_free": (None, [_P]),
    "fp4d_result_json": (ctypes.c_char_p, [_P]),
    "fp4d_result_count": (ctypes.c_int, [_P]),
    "fp4d_result_sums": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                        ctypes.POINTER(ctypes.c_double)]),
    "fp4d_report": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_P)]),
    "fp4d_free": (None, [_P]),
    "fp4d_recipe_keeps": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                         ctypes.POINTER(ctypes.c_char_p)]),
}
_cuda_built = None


def cuda_built():
    """Whether the library analyses CUDA memory (fp4d_analyze_cuda, built with CUDA): asked
    once, with an empty view (no GPU work)."""
    global _cuda_built
    if _cuda_built is None:
        _cuda_built = False
        if analyze_cuda is not None:
            cfg, res = _P(), _P()
            shape = (ctypes.c_int64 * 1)(0)
            v = TensorView(b"probe", None, F32, 1, shape, None, MEM_CUDA)
            with lock:
                if lib.fp4d_config_parse_argv(0, None, ctypes.byref(cfg)) == 0:
                    st = analyze_cuda(ctypes.byref(v), cfg, None, ctypes.byref(res))
                    msg = lib.fp4d_last_error() or b""
                    lib.fp4d_result_free(res)
                    lib.fp4d_config_free(cfg)
                    _cuda_built = not (st == 4 and b"without CUDA" in msg)
    return _cuda_built


# FP4DIAG_0.1.3: a CUDA tensor analysed where it lies, on the caller's stream (None with an
# older library: CUDA tensors then go through fp4d_analyze_memory after a synchronisation)
analyze_cuda = getattr(lib, "fp4d_analyze_cuda", None)
if analyze_cuda is not None:
    analyze_cuda.restype = ctypes.c_int
    analyze_cuda.argtypes = [ctypes.POINTER(TensorView), _P, _P, ctypes.POINTER(_P)]

for _name, (_res, _args) in _sigs.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        raise ImportError("fp4diag: %s lacks %s: the Python package needs a library of symbol "
                          "version FP4DIAG_0.1.2 or later" % (path, _name)) from None
    _f.restype = _res
    _f.argtypes = _args


def decode(b):
    """Text from the library: UTF-8, undecodable bytes kept as surrogates."""
    return b.decode("utf-8", "surrogateescape") if b is not None else None


def encode(s):
    """A name or option for the library (str, bytes or os.PathLike). ValueError when it holds
    a NUL byte: C would read it cut there (another file, tensor or option value), as
    Python's own open() refuses."""
    if isinstance(s, bytes):
        b = s
    elif isinstance(s, os.PathLike):
        b = os.fsencode(s)
    else:
        b = str(s).encode("utf-8", "surrogateescape")
    if b"\0" in b:
        raise ValueError("fp4diag: %r: embedded null byte" % (s,))
    return b


def argv_of(args):
    arr = (ctypes.c_char_p * (len(args) + 1))()
    for i, a in enumerate(args):
        arr[i] = encode(a)
    return arr
