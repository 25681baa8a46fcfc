"""fp4diag from Python: the numbers of the `fp4diag` command line, over its C library.

    fp4diag.analyze(x, format="nvfp4", rht="both")   # a NumPy array or torch tensor
    fp4diag.open("model.safetensors")                # list and read tensors of an input
    fp4diag.report("model.safetensors", format="nvfp4")  # the whole JSON report, as a dict
    fp4diag.audit("source.safetensors", "nvfp4-export/")
    fp4diag.torch.Monitor(model, every=10)           # statistics during training

Options are the CLI's (docs/SPEC.md §2-§4, `fp4diag sqnr --help`), as keyword arguments:
`--rht-size 32` is `rht_size=32`, a list is joined with commas (`format=["e2m1", "int4"]`),
`True` gives a flag (`weight_2d=True`), `None` or `False` leaves an option out; `formats` is
another name for `format`. A bad option or value raises `ValueError` with the CLI's message.
"""
import json as _json
import os as _os
from collections import namedtuple as _namedtuple

from . import _lib

__all__ = ["analyze", "open", "report", "audit", "recipe_keeps", "Input", "TensorInfo", "Error", "UsageError",
           "InputError", "DeviceError", "InternalError", "version", "library_path"]


class Error(Exception):
    """A failed call of the library; `status` is the CLI's exit status (2, 3, 4 or 5)."""

    status = _lib.ERR_INTERNAL


class UsageError(Error, ValueError):
    """A bad argument: unknown option, bad value, bad dtype or shape (exit status 2)."""

    status = _lib.ERR_USAGE


class InputError(Error, OSError):
    """An input or data error: missing file, no such tensor, unreadable (exit status 3)."""

    status = _lib.ERR_INPUT


class DeviceError(Error, RuntimeError):
    """CUDA asked for but unavailable, or a CUDA call failed (exit status 4)."""

    status = _lib.ERR_DEVICE


class InternalError(Error, RuntimeError):
    """Out of memory, or a bug (exit status 5)."""

    status = _lib.ERR_INTERNAL


_ERRORS = {_lib.ERR_USAGE: UsageError, _lib.ERR_INPUT: InputError,
           _lib.ERR_DEVICE: DeviceError, _lib.ERR_INTERNAL: InternalError}


def _check(st):
    """Raise the exception of a non-zero status with the library's message (lock held)."""
    if st != _lib.OK:
        msg = _lib.decode(_lib.lib.fp4d_last_error()) or "fp4diag: error %d" % st
        raise _ERRORS.get(st, Error)(msg)


def version():
    """The C library's version, "0.1.0"."""
    return _lib.decode(_lib.lib.fp4d_version())


library_path = _lib.path
__version__ = version()

# options that take no value (a flag when True)
_FLAGS = {"weight_2d", "allow_external", "all_tensors", "all_weights", "error_split"}
# options that may be given more than once (a list gives one per item)
_REPEAT = {"exclude"}


def _options(options):
    """The CLI's argument strings of keyword options, in the order given."""
    args = []
    for key, value in options.items():
        if key == "formats":
            key = "format"
        opt = "--" + key.replace("_", "-")
        if value is None or value is False and key in _FLAGS:
            continue
        if key in _FLAGS:
            if value is not True:
                raise UsageError("option '%s' is a flag: give True or False, not %r"
                                 % (opt, value))
            args.append(opt)
        elif key == "rht" and isinstance(value, bool):
            args += [opt, "on" if value else "off"]
        elif key in _REPEAT and isinstance(value, (list, tuple)):
            for v in value:
                args += [opt, str(v)]
        elif isinstance(value, (list, tuple)):
            args += [opt, ",".join(str(v) for v in value)]
        else:
            args += [opt, str(value).lower() if isinstance(value, bool) else str(value)]
    return args


class _Config:
    def __init__(self, options):
        args = _options(options)
        argv = _lib.argv_of(args)
        self.handle = _lib.ctypes.c_void_p()
        with _lib.lock:
            _check(_lib.lib.fp4d_config_parse_argv(len(args), argv,
                                                   _lib.ctypes.byref(self.handle)))

    def __del__(self):
        if getattr(self, "handle", None):
            _lib.lib.fp4d_config_free(self.handle)
            self.handle = None


def _result_dict(res, sums=None):
    """The result's JSON entry as a dict; with a list `sums`, also append each
    configuration's (sum x^2, sum err^2) to it. Frees the result."""
    try:
        text = _lib.lib.fp4d_result_json(res)
        if sums is not None:
            for i in range(_lib.lib.fp4d_result_count(res)):
                x2, e2 = _lib.ctypes.c_double(), _lib.ctypes.c_double()
                with _lib.lock:
                    _check(_lib.lib.fp4d_result_sums(res, i, _lib.ctypes.byref(x2),
                                                     _lib.ctypes.byref(e2)))
                sums.append((x2.value, e2.value))
        return _json.loads(_lib.decode(text))
    finally:
        _lib.lib.fp4d_result_free(res)


def _te_stats(result, sum_err2):
    """Transformer Engine's statistics of one entry of "results" (its debug API's
    LogFp8TensorStats / NVFP4 stats, same names and definitions): "underflows%", 100 times the
    elements that are non-zero but quantize to (+-)0 over all elements (codes 0 and 8 of the
    histogram less the zeros of the input), and "mse", the mean of (xq - x)^2 over the
    elements (sum_err2 from the library's own fp64 sum; non-finite elements are left out of
    both, where TE's would be NaN). None where the tensor has no element."""
    c, h = result["counts"], result["histogram"]
    n = c["elements"]
    if not n:
        return {"underflows%": None, "mse": None}
    return {"underflows%": 100.0 * (h[0] + h[8] - c["zero"]) / n, "mse": sum_err2 / n}


def _view(x, name):
    """(TensorView, keep-alive objects, stream) of a NumPy array or a torch tensor: stream
    None for host memory, else the cudaStream_t (an int; 0 the legacy default stream) the
    analysis is ordered on (fp4d_analyze_cuda)."""
    keep = [x]
    mod = type(x).__module__ or ""
    memory = _lib.MEM_HOST
    stream = None
    if mod.startswith("torch"):
        import torch

        dt = {torch.float32: _lib.F32, torch.float16: _lib.F16,
              torch.bfloat16: _lib.BF16}.get(x.dtype)
        if dt is None:
            raise UsageError("memory: %s: dtype %s is not float32, float16 or bfloat16"
                             % (name, x.dtype))
        if x.device.type == "cuda":
            memory = _lib.MEM_CUDA
            cur = torch.cuda.current_stream(x.device)
            if _lib.analyze_cuda is not None:  # read on the caller's stream, after its work
                stream = cur.cuda_stream
            else:  # an older library copies it on the legacy stream
                cur.synchronize()
        elif x.device.type != "cpu":
            raise UsageError("memory: %s: a tensor on %s (CPU or CUDA only)"
                             % (name, x.device))
        shape, strides = tuple(x.shape), tuple(x.stride())
        data = x.data_ptr() if x.numel() > 0 else None
    else:
        import numpy as np

        if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
            return _dlpack_view(x, name)
        a = np.asarray(x)
        kind = a.dtype
        if kind.name == "bfloat16" and kind.itemsize == 2:
            dt = _lib.BF16
        elif kind.kind == "f" and kind.itemsize == 4:
            dt = _lib.F32
        elif kind.kind == "f" and kind.itemsize == 2:
            dt = _lib.F16
        else:
            raise UsageError("memory: %s: dtype %s is not float32, float16 or bfloat16 "
                             "(ml_dtypes); convert it with .astype" % (name, kind))
        if not kind.isnative:
            a = a.astype(kind.newbyteorder("="))
        if any(s % a.itemsize for s in a.strides):
            a = np.ascontiguousarray(a)
        keep.append(a)
        shape = a.shape
        strides = tuple(s // a.itemsize for s in a.strides)
        data = a.ctypes.data if a.size > 0 else None
    rank = len(shape)
    if rank > _lib.MAX_RANK:
        raise UsageError("memory: %s: rank %d is over %d" % (name, rank, _lib.MAX_RANK))
    cshape = (_lib.ctypes.c_int64 * max(rank, 1))(*shape)
    cstrides = (_lib.ctypes.c_int64 * max(rank, 1))(*strides)
    cname = _lib.encode(name)
    keep += [cshape, cstrides, cname]
    v = _lib.TensorView(cname, data, dt, rank, cshape, cstrides, memory)
    return v, keep, stream


_DL_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal",
               9: "vpi", 10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed",
               14: "oneapi", 15: "webgpu", 16: "hexagon", 17: "maia"}
_DL_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
_DL_DTYPES = {(_lib.DL_FLOAT, 32): _lib.F32, (_lib.DL_FLOAT, 16): _lib.F16,
              (_lib.DL_BFLOAT, 16): _lib.BF16}


_DL_CUDA_MANAGED = 13


def _dl_device_error(name, dtype, dev_id):
    where = "%s:%d" % (_DL_DEVICES.get(dtype, "device type %d" % dtype), dev_id)
    return UsageError("memory: %s: a DLPack tensor on %s: only host (CPU) memory%s is read "
                      "through DLPack; copy it to the host first (a torch CUDA tensor is "
                      "taken as it is)"
                      % (name, where, " and CUDA memory" if _lib.cuda_built() else ""))


def _dl_cuda(dtype):
    return dtype in (_lib.DL_CUDA, _DL_CUDA_MANAGED) and _lib.cuda_built()


def _dlpack_view(x, name):
    """(TensorView, keep-alive objects, stream) of an object with __dlpack__ on the CPU or a
    CUDA device: the producer's memory read in place (its strides, offset and dtype), never
    copied. The capsule is not consumed: kept alive during the call, its destructor frees the
    tensor. A CUDA tensor is asked for on the legacy default stream (DLPack's stream=1: the
    producer orders its pending work before it there, without synchronising the host) and
    analysed on that stream."""
    cuda = False
    if hasattr(x, "__dlpack_device__"):
        dtype, dev_id = (int(v) for v in x.__dlpack_device__())
        cuda = _dl_cuda(dtype)
        if dtype != _lib.DL_CPU and not cuda:
            raise _dl_device_error(name, dtype, dev_id)
    kw = {"stream": 1} if cuda else {}
    try:
        try:
            cap = x.__dlpack__(max_version=(1, 0), **kw)
        except TypeError:  # a producer of DLPack < 1.0 takes no max_version
            cap = x.__dlpack__(**kw)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise UsageError("memory: %s: its __dlpack__() failed: %s" % (name, e)) from None
    if _lib.capsule_is_valid(cap, b"dltensor_versioned"):
        m = _lib.ctypes.cast(_lib.capsule_pointer(cap, b"dltensor_versioned"),
                             _lib.ctypes.POINTER(_lib.DLManagedTensorVersioned)).contents
        if m.major != 1:
            raise UsageError("memory: %s: DLPack version %d.%d (this reads 1.x)"
                             % (name, m.major, m.minor))
        t = m.dl_tensor
    elif _lib.capsule_is_valid(cap, b"dltensor"):
        t = _lib.ctypes.cast(_lib.capsule_pointer(cap, b"dltensor"),
                             _lib.ctypes.POINTER(_lib.DLManagedTensor)).contents.dl_tensor
    else:
        raise UsageError("memory: %s: __dlpack__() gave %r, not a DLPack capsule"
                         % (name, type(cap).__name__))
    on_cuda = _dl_cuda(t.device.device_type)
    if t.device.device_type != _lib.DL_CPU and not (on_cuda and cuda):
        raise _dl_device_error(name, t.device.device_type, t.device.device_id)
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    dt = _DL_DTYPES.get((code, bits)) if lanes == 1 else None
    if dt is None:
        what = ("%s%d" % (_DL_CODES[code], bits) if code in _DL_CODES
                else "(code %d, %d bits)" % (code, bits))
        raise UsageError("memory: %s: DLPack dtype %s%s is not float32, float16 or bfloat16"
                         % (name, what, "" if lanes == 1 else "x%d" % lanes))
    rank = t.ndim
    if rank < 0 or rank > _lib.MAX_RANK:
        raise UsageError("memory: %s: rank %d is over %d" % (name, rank, _lib.MAX_RANK))
    shape = [t.shape[i] for i in range(rank)]
    if t.strides:
        strides = [t.strides[i] for i in range(rank)]
    else:  # C order
        strides, n = [0] * rank, 1
        for i in reversed(range(rank)):
            strides[i], n = n, n * shape[i]
    count = 1
    for d in shape:
        count *= d
    data = (t.data or 0) + t.byte_offset if count > 0 else None
    cshape = (_lib.ctypes.c_int64 * max(rank, 1))(*shape)
    cstrides = (_lib.ctypes.c_int64 * max(rank, 1))(*strides)
    cname = _lib.encode(name)
    v = _lib.TensorView(cname, data, dt, rank, cshape, cstrides,
                        _lib.MEM_CUDA if on_cuda else _lib.MEM_HOST)
    return v, [x, cap, cshape, cstrides, cname], (0 if on_cuda else None)


def _analyze(x, name, options, sums=None, cfg=None):
    """x analysed under `options` (or the parsed _Config cfg, made once by a caller that
    analyses many tensors). A CUDA tensor: on its GPU where it lies, on `stream` (no host
    copy, no synchronisation but of the call's own results)."""
    if cfg is None:
        cfg = _Config(options)
    view, keep, stream = _view(x, name)
    res = _lib.ctypes.c_void_p()
    with _lib.lock:
        if stream is not None:
            _check(_lib.analyze_cuda(_lib.ctypes.byref(view), cfg.handle, stream or None,
                                     _lib.ctypes.byref(res)))
        else:
            _check(_lib.lib.fp4d_analyze_memory(_lib.ctypes.byref(view), cfg.handle,
                                                _lib.ctypes.byref(res)))
    del keep
    return _result_dict(res, sums)


def analyze(x, name="tensor", **options):
    """Analyse a tensor in memory under the CLI's options; returns the tensor's entry of the
    report's "tensors" array (SPEC §9) as a dict: the same values as `fp4diag sqnr OPTIONS
    FILE TENSOR --json` for a file holding x under that name, bit for bit.

    x: a NumPy array (float32, float16, ml_dtypes.bfloat16; any strides), a torch tensor
    (float32, float16, bfloat16; CPU, or CUDA in a library built with CUDA), or any other
    object with __dlpack__ on the CPU or a CUDA device (float32, float16, bfloat16; DLPack
    1.x or older), read in place through its strides: no copy. A CUDA tensor is analysed on
    its GPU by the CUDA kernels, ordered on torch's current stream (DLPack: the legacy
    default stream, asked of the producer): no synchronisation, no copy to the host
    (fp4d_analyze_cuda); the call returns once its results are back. Other dtypes raise
    ValueError: convert them first (.astype(numpy.float32)) knowing the values change; so do
    DLPack tensors on another device (copy them to the host).
    """
    return _analyze(x, name, options)


TensorInfo = _namedtuple("TensorInfo", "name dtype shape nelems problem")
TensorInfo.__doc__ = """One tensor of an input: name as the format spells it, dtype ("f32",
"bf16", ...), shape (a tuple), element count, and problem ("" when it can be read). An
already-quantized tensor (SPEC §10) is listed as `fp4diag ls` lists it: its logical name, dtype
"nvfp4" or "mxfp4" and logical shape; its members (packed codes, scales) are not listed."""


class Input:
    """An open input: any file or directory the CLI reads (HDF5, safetensors file, index or
    directory, PyTorch checkpoint, .npy, .npz; SPEC §8). Use as a context manager, or close()."""

    def __init__(self, path):
        self.path = _os.fspath(path)
        self._h = _lib.ctypes.c_void_p()
        with _lib.lock:
            _check(_lib.lib.fp4d_open(_lib.encode(path), _lib.ctypes.byref(self._h)))
            n = _lib.lib.fp4d_tensor_count(self._h)
            infos = []
            for i in range(n):
                t = _lib.TensorInfo()
                _check(_lib.lib.fp4d_tensor_get(self._h, i, _lib.ctypes.byref(t)))
                infos.append(TensorInfo(_lib.decode(t.name), _lib.decode(t.dtype),
                                        tuple(t.shape[: t.rank]), t.nelems,
                                        _lib.decode(t.problem)))
        self.tensors = infos

    def _handle(self):
        if not self._h:
            raise UsageError("%s: the input is closed" % self.path)
        return self._h

    def names(self):
        """Every tensor's name, in `fp4diag ls` order."""
        return [t.name for t in self.tensors]

    def __iter__(self):
        return iter(self.tensors)

    def __len__(self):
        return len(self.tensors)

    def info(self, name):
        """The TensorInfo of the tensor named exactly `name` (KeyError when none)."""
        for t in self.tensors:
            if t.name == name or t.name == "/" + name.lstrip("/"):
                return t
        raise KeyError(name)

    def read(self, name):
        """The tensor's values as a float32 NumPy array of its shape: what an analysis of it
        quantizes (f16, bf16, f32 exactly; wider types rounded to nearest float32). An
        already-quantized tensor (dtype "nvfp4"/"mxfp4"), a member of one (packed 4-bit codes,
        block, tensor or input scales) and an FP8 weight or its scales raise UsageError (a
        ValueError) saying what it is: its stored bytes are not values (`fp4diag audit SOURCE
        QUANTIZED` decodes it and measures it against its source). KeyError for a name that
        is none of these."""
        import numpy as np

        try:
            t = self.info(name)
        except KeyError:
            # not listed: a member of a quantized tensor (listed under its logical name) is
            # refused by the library, naming what it is; anything else is no tensor here
            with _lib.lock:
                st = _lib.lib.fp4d_read_f32(self._handle(), _lib.encode(name), None, 0)
                msg = _lib.decode(_lib.lib.fp4d_last_error()) if st != _lib.OK else ""
            if st == _lib.ERR_USAGE and "the buffer 0" not in msg:
                raise UsageError(msg)
            raise
        out = np.empty(t.shape, dtype=np.float32)
        with _lib.lock:
            _check(_lib.lib.fp4d_read_f32(self._handle(), _lib.encode(name),
                                          out.ctypes.data if out.size else None, out.size))
        return out

    def analyze(self, name, **options):
        """The tensor's entry of `fp4diag sqnr OPTIONS FILE NAME`'s report, as a dict. An
        already-quantized tensor (dtype "nvfp4"/"mxfp4", by its listed name) or a member of one
        raises what read() raises (UsageError, its message); InputError for a missing name."""
        cfg = _Config(options)
        res = _lib.ctypes.c_void_p()
        with _lib.lock:
            _check(_lib.lib.fp4d_analyze(self._handle(), _lib.encode(name), cfg.handle,
                                         _lib.ctypes.byref(res)))
        return _result_dict(res)

    def close(self):
        if self._h:
            _lib.lib.fp4d_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()

    def __repr__(self):
        return "fp4diag.Input(%r, %d tensors)" % (self.path, len(self.tensors))


def open(path):  # noqa: A001 (the package's own open, as the brief names it)
    """Open an input the CLI reads; see Input."""
    return Input(path)


def _report(command, args):
    argv = _lib.argv_of(args)
    text = _lib.ctypes.c_void_p()
    with _lib.lock:
        _check(_lib.lib.fp4d_report(_lib.encode(command), len(args), argv,
                                    _lib.ctypes.byref(text)))
    try:
        return _json.loads(_lib.decode(_lib.ctypes.string_at(text)))
    finally:
        _lib.lib.fp4d_free(text)


def report(path, *select, command="sqnr", **options):
    """The whole JSON report of `fp4diag COMMAND OPTIONS PATH SELECT...` (SPEC §9) as a dict;
    command is "sqnr" (default), "bias", "buckets" or "rht". Selection options are taken too
    (all_tensors=True, all_weights=True, exclude=[...], layers=K, rank_by=..., shard="0/2"). Tensors that failed
    are in the report's "errors" (where the CLI exits 3 after writing it); a file that cannot
    be read or a pattern that selects nothing raises InputError."""
    return _report(command, _options(options) + [_os.fspath(path)] + [str(s) for s in select])


def recipe_keeps(name):
    """The rule by which 4-bit recipes keep the tensor `name` in high precision, as (kind, glob)
    (`recipe_keeps("lm_head.weight")` is ("output head", "*lm_head*")), or None for a tensor
    recipes quantize ("model.layers.0.mlp.down_proj.weight"): the default selection of the CLI
    (SPEC §9), from the library's own rule table. A module's weight is "MODULE.weight"."""
    kind, glob = _lib.ctypes.c_char_p(), _lib.ctypes.c_char_p()
    r = _lib.lib.fp4d_recipe_keeps(_lib.encode(name), _lib.ctypes.byref(kind),
                                   _lib.ctypes.byref(glob))
    return (_lib.decode(kind.value), _lib.decode(glob.value)) if r == 1 else None


def audit(source, quantized, *select):
    """The JSON report of `fp4diag audit SOURCE QUANTIZED SELECT...` (SPEC §11) as a dict."""
    return _report("audit", [_os.fspath(source), _os.fspath(quantized)]
                   + [str(s) for s in select])
