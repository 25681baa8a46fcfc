"""st_load.py — a safetensors file read with NumPy alone, for the CLI cases' independent checks
(audit_ckpt.sh, audit_flushed.sh, gguf_audit.sh): the values come from the file's bytes, not
through fp4diag. On the path by lib/quantized.sh or PYTHONPATH=src/tests/cli/lib."""
import json
import struct

import numpy as np


def load(path):
    """{name: float64 array of the tensor's shape} of every tensor in a safetensors file
    (BF16, F16 and F32 little-endian; any other dtype raises ValueError)."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    base, out = 8 + n, {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        raw = b[base + v["data_offsets"][0]: base + v["data_offsets"][1]]
        if v["dtype"] == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif v["dtype"] in ("F16", "F32"):
            a = np.frombuffer(raw, "<f2" if v["dtype"] == "F16" else "<f4")
        else:
            raise ValueError("%s: %s: dtype %s is not BF16, F16 or F32" % (path, k, v["dtype"]))
        out[k] = a.astype(np.float64).reshape(v["shape"])
    return out
