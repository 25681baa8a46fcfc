"""torch_writer.py — writes PyTorch checkpoints as torch.save does (the zip format: data.pkl,
data/N storages, byteorder, version) without torch: Python's own pickle.Pickler with the
persistent_id hook torch.save uses, pickling stand-ins registered under torch's module names
(torch._utils._rebuild_tensor_v2, torch.FloatStorage, ...), so the opcodes and globals are the
ones torch.save emits for a state dict. For tests and fixtures only (fp4diag never runs a pickle).

save(path, entries, protocol=2, archive="archive", byteorder="little")
  entries: an OrderedDict name -> Tensor(...) or any picklable value (ints, nested dicts).
Tensor(storage, offset, size, stride): a view into a Storage(type_name, data_bytes, key);
  several tensors may share one Storage.
"""
import collections
import io
import pickle
import struct
import sys
import types
import zipfile

# Stand-ins under torch's names: pickle finds them by module and qualified name.
_torch = types.ModuleType("torch")
_utils = types.ModuleType("torch._utils")
_torch._utils = _utils


def _rebuild_tensor_v2(*args):  # never called: pickled by reference only
    raise RuntimeError("stand-in")


_rebuild_tensor_v2.__module__ = "torch._utils"
_utils._rebuild_tensor_v2 = _rebuild_tensor_v2

ITEMSIZE = {"FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2, "DoubleStorage": 8,
            "LongStorage": 8, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1,
            "ByteStorage": 1, "BoolStorage": 1, "ComplexFloatStorage": 8}
for _n in ITEMSIZE:
    _c = type(_n, (), {"__module__": "torch"})
    setattr(_torch, _n, _c)
sys.modules.setdefault("torch", _torch)
sys.modules.setdefault("torch._utils", _utils)


class Storage:
    def __init__(self, type_name, data, key, location="cpu", numel=None):
        self.type_name, self.data, self.key, self.location = type_name, data, key, location
        self.numel = len(data) // ITEMSIZE[type_name] if numel is None else numel


class Tensor:
    def __init__(self, storage, offset, size, stride=None):
        self.storage, self.offset, self.size = storage, offset, tuple(size)
        if stride is None:
            stride, s = [], 1
            for d in reversed(size):
                stride.insert(0, s)
                s *= d
        self.stride = tuple(stride)

    def __reduce_ex__(self, proto):
        return (_rebuild_tensor_v2, (self.storage, self.offset, self.size, self.stride, False,
                                     collections.OrderedDict()))


class _Pickler(pickle.Pickler):
    def __init__(self, f, protocol, seen):
        super().__init__(f, protocol)
        self.seen = seen

    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            self.seen[obj.key] = obj
            return ("storage", getattr(_torch, obj.type_name), obj.key, obj.location, obj.numel)
        return None


def contiguous(type_name, data, shape, key):
    """A tensor owning a storage of its own."""
    return Tensor(Storage(type_name, data, key), 0, shape)


def pickle_bytes(entries, protocol=2):
    seen = {}
    buf = io.BytesIO()
    _Pickler(buf, protocol, seen).dump(entries)
    return buf.getvalue(), seen


def save(path, entries, protocol=2, archive="archive", byteorder="little", data_pkl=None):
    pk, seen = pickle_bytes(entries, protocol)
    if data_pkl is not None:
        pk = data_pkl
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        def w(name, data):
            zi = zipfile.ZipInfo(archive + "/" + name, date_time=(1980, 1, 1, 0, 0, 0))
            z.writestr(zi, data)
        w("data.pkl", pk)
        w("byteorder", byteorder)
        for key in sorted(seen, key=lambda k: (len(k), k)):
            w("data/" + key, seen[key].data)
        w("version", "3\n")
        w(".data/serialization_id", "0123456789\n")


def bf16_bytes(a32):
    """float32 values that are bf16 exactly -> their bf16 words, little-endian."""
    u = struct.unpack("<%dI" % (len(a32) // 4), a32)
    if any(x & 0xFFFF for x in u):
        raise SystemExit("values are not bf16")
    return struct.pack("<%dH" % len(u), *(x >> 16 for x in u))
