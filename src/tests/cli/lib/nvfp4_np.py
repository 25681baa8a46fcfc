"""nvfp4_np.py — the NumPy pieces the NVFP4 test generators share (mk_keep.py, mk_nvfp4.py):
bf16 rounding (RTNE), a raw safetensors writer, E4M3 (RTNE, saturating at 448) and E2M1 (nearest,
ties to even) encoders, as in scripts/make_quantized_testdata.py."""
import json
import struct

import numpy as np


def bf16_bits(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + ((b >> 16) & 1) + 0x7FFF) >> 16).astype(np.uint16)


def bf16(x):
    return (bf16_bits(x).astype(np.uint32) << 16).view(np.float32)


def save_st(path, tensors, metadata=None):
    """tensors: {name: (safetensors dtype, array)}, written in that order."""
    hdr, off, blobs = {}, 0, []
    for name, (dt, arr) in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()
        hdr[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    if metadata is not None:
        hdr["__metadata__"] = metadata
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


E4 = np.array([(b & 7) * 2.0**-9 if b >> 3 == 0 else (1 + (b & 7) / 8) * 2.0**((b >> 3) - 7)
               for b in range(127)])
GRID = np.array([0, .5, 1, 1.5, 2, 3, 4, 6])


def e4m3_rne(v):
    v = np.asarray(v, np.float64)
    i = np.clip(np.searchsorted(E4, v), 1, 126)
    lo, hi = E4[i - 1], E4[i]
    r = np.where((v - lo > hi - v) | ((v - lo == hi - v) & (i % 2 == 0)), i, i - 1)
    return np.where(v >= 448, 126, np.where(v <= 0, 0, r)).astype(np.uint8)


def e2m1(q):
    a = np.abs(q.astype(np.float64))
    i = np.clip(np.searchsorted(GRID, a), 1, 7)
    lo, hi = GRID[i - 1], GRID[i]
    m = np.where((a - lo > hi - a) | ((a - lo == hi - a) & (i % 2 == 0)), i, i - 1)
    m = np.where(a >= 6, 7, m)
    return (m + 8 * np.signbit(q)).astype(np.uint8)
