"""st_raw.py — safetensors files as stored bytes, for the cases that build variants of the
producer fixtures (testdata/quantized/producer/) byte for byte: quantized_twice.sh,
quantized_scale_names.sh, audit_gate_up.sh, audit_gptoss_original.sh. No NumPy: a tensor is
[dtype, shape, raw bytes], never decoded. On the path by lib/producer.sh."""
import json
import os
import shutil
import struct

CONFIGS = ("config.json", "hf_quant_config.json")


def read(path):
    """{name: [dtype, shape (a list), raw bytes]} of every tensor of a safetensors file, as
    stored (its __metadata__ left out)."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    base = 8 + n
    h.pop("__metadata__", None)
    return {k: [v["dtype"], list(v["shape"]), b[base + v["data_offsets"][0]:base + v["data_offsets"][1]]]
            for k, v in h.items()}


def write(path, tensors):
    """A safetensors file at `path` (its directory made) holding `tensors` ({name: [dtype,
    shape, raw bytes]}, as read gives): names sorted, data in that order, the header padded
    with spaces to 8 bytes, no __metadata__."""
    hh, off, blobs = {}, 0, []
    for k in sorted(tensors):
        dt, shape, raw = tensors[k]
        hh[k] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    hb = json.dumps(hh).encode()
    hb += b" " * (-len(hb) % 8)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        f.write(b"".join(blobs))


def write_export(d, tensors, fixture):
    """An export directory `d`: `tensors` as d/model.safetensors, and the config files
    (config.json, hf_quant_config.json) the fixture directory `fixture` has, copied beside it."""
    write(os.path.join(d, "model.safetensors"), tensors)
    for c in CONFIGS:
        if os.path.exists(os.path.join(fixture, c)):
            shutil.copy(os.path.join(fixture, c), os.path.join(d, c))
