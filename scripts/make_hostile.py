#!/usr/bin/env python3
"""make_hostile.py — small HDF5 files with awkward contents, for the hostile-input CLI cases
(src/tests/cli/hostile_*.sh) and the fuzz seeds (src/tests/fuzz/seeds/h5load/).

usage: python3 scripts/make_hostile.py OUTDIR [NAME...]      (default: every fixture)

Fixtures (each a few KiB, libver='earliest' so the C library we link reads them):
  values.h5    /nan /inf /denormal /zeros /mixed (f32, 4x32): NaN, +-Inf, subnormals, all-zero
  shapes.h5    /empty (0x16) /scalar (f64) /one (1) /huge (2^40 x 2^30, chunked, nothing
               stored: the size overflows 64 bits) /wide (2^31 x 2^31 f16: 2^62 elements fit,
               2^63 bytes do not)
  mixed.h5     /a/good (f32 8x16), /a/name (string), /a/blosc (f32 behind an unavailable
               optional filter 32001), /b/good (bf16 4x16), /c/compound (compound class)
  small.h5     /blocks/0/w (bf16 16x32, deflate), /blocks/0/b (f16 32), /x (i32 be 4x4),
               attribute scale on /x
  gemm.h5      layers for `gemm`: /good (x 32x64, w 48x64, dy 32x48 f32); /huge (int8, each
               operand 2^31 x 2^31 = 2^62 values, declared, nothing stored: its fp32 copy
               overflows 64 bits); /big16 (f32, each operand 2^16 x 2^16: 16 GiB, nothing
               stored); /big (f32, 2^20 x 2^20 each: 4 TiB); /bad (x 32x64 but w 48x60)
  many.h5      10,000 tiny datasets /dNNNNN (f32, 32 values each): the per-tensor cost
"""
import os
import sys

import h5py
import numpy as np


def bf16_type():
    t = h5py.h5t.IEEE_F32LE.copy()
    t.set_fields(15, 7, 8, 0, 7)
    t.set_offset(16)
    t.set_precision(16)
    t.set_size(2)
    t.set_ebias(127)
    return t


def put(parent, name, arr, ftype, chunks=None, gzip=None):
    """Dataset NAME with on-disk type FTYPE (an h5t id) holding arr (converted by HDF5)."""
    space = h5py.h5s.create_simple(arr.shape) if arr.shape else h5py.h5s.create(h5py.h5s.SCALAR)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if chunks:
        dcpl.set_chunk(chunks)
        if gzip is not None:
            dcpl.set_deflate(gzip)
    d = h5py.h5d.create(parent.id, name.encode(), ftype, space, dcpl=dcpl)
    if arr.size:
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(arr, dtype=np.float32))
    return d


def values(path):
    with h5py.File(path, "w", libver="earliest") as f:
        n = np.full((4, 32), np.nan, np.float32)
        f.create_dataset("nan", data=n)
        inf = np.linspace(-1, 1, 128, dtype=np.float32).reshape(4, 32)
        inf[0, 3] = np.inf
        inf[2, 17] = -np.inf
        f.create_dataset("inf", data=inf)
        den = (np.arange(128, dtype=np.float32).reshape(4, 32) - 64) * np.float32(1e-44)
        f.create_dataset("denormal", data=den)
        f.create_dataset("zeros", data=np.zeros((4, 32), np.float32))
        mixed = np.linspace(-3, 3, 128, dtype=np.float32).reshape(4, 32)
        mixed[1, 5] = np.nan
        mixed[3, 0] = np.inf
        mixed[3, 1:16] = 0
        f.create_dataset("mixed", data=mixed)


def shapes(path):
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("empty", shape=(0, 16), dtype=np.float32)
        f.create_dataset("scalar", data=np.float64(2.5))
        f.create_dataset("one", data=np.array([1.5], np.float32))
        # Declared but never written: chunked, so nothing is stored.
        sp = h5py.h5s.create_simple((2**40, 2**30), (h5py.h5s.UNLIMITED, h5py.h5s.UNLIMITED))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((1, 16))
        h5py.h5d.create(f.id, b"huge", h5py.h5t.IEEE_F32LE, sp, dcpl=dcpl)
        sp = h5py.h5s.create_simple((2**31, 2**31), (h5py.h5s.UNLIMITED,) * 2)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((1, 16))
        h5py.h5d.create(f.id, b"wide", h5py.h5t.IEEE_F16LE, sp, dcpl=dcpl)


def mixed(path):
    with h5py.File(path, "w", libver="earliest") as f:
        a = f.create_group("a")
        a.create_dataset("good", data=np.linspace(-2, 2, 128, dtype=np.float32).reshape(8, 16))
        a.create_dataset("name", data=np.array([b"not", b"a", b"tensor"]))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 16))
        dcpl.set_filter(32001, h5py.h5z.FLAG_OPTIONAL, ())
        d = h5py.h5d.create(a.id, b"blosc", h5py.h5t.IEEE_F32LE,
                            h5py.h5s.create_simple((8, 16)), dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ones((8, 16), np.float32))
        b = f.create_group("b")
        put(b, "good", np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16), bf16_type())
        c = f.create_group("c")
        c.create_dataset("compound", data=np.zeros(4, dtype=[("x", "<f4"), ("y", "<i4")]))


def small(path):
    with h5py.File(path, "w", libver="earliest") as f:
        g = f.create_group("blocks/0")
        w = np.sin(np.arange(512, dtype=np.float32)).reshape(16, 32)
        put(g, "w", w, bf16_type(), chunks=(8, 32), gzip=4)
        put(g, "b", np.cos(np.arange(32, dtype=np.float32)), h5py.h5t.IEEE_F16LE)
        x = f.create_dataset("x", data=np.arange(16, dtype=">i4").reshape(4, 4))
        x.attrs["scale"] = np.float64(0.5)


def declared(parent, name, shape, ftype):
    """A chunked dataset of `shape` with nothing stored (reads give the fill value)."""
    sp = h5py.h5s.create_simple(shape, (h5py.h5s.UNLIMITED,) * len(shape))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((1, 64))
    h5py.h5d.create(parent.id, name.encode(), ftype, sp, dcpl=dcpl)


def gemm(path):
    r = np.random.default_rng(5)
    with h5py.File(path, "w", libver="earliest") as f:
        for g, (m, n, k, k2) in {"good": (32, 48, 64, 64), "bad": (32, 48, 64, 60)}.items():
            grp = f.create_group(g)
            grp.create_dataset("x", data=r.standard_normal((m, k)).astype(np.float32))
            grp.create_dataset("w", data=r.standard_normal((n, k2)).astype(np.float32))
            grp.create_dataset("dy", data=r.standard_normal((m, n)).astype(np.float32))
        for g, side, t in (("huge", 2**31, h5py.h5t.STD_I8LE), ("big16", 2**16, h5py.h5t.IEEE_F32LE),
                           ("big", 2**20, h5py.h5t.IEEE_F32LE)):
            grp = f.create_group(g)
            for d in ("x", "w", "dy"):
                declared(grp, d, (side, side), t)


def many(path):
    with h5py.File(path, "w", libver="earliest") as f:
        a = np.linspace(-1, 1, 32, dtype=np.float32)
        for i in range(10000):
            f.create_dataset("d%05d" % i, data=a * np.float32(i % 97 + 1))


FIXTURES = {"values.h5": values, "shapes.h5": shapes, "mixed.h5": mixed, "small.h5": small,
            "many.h5": many, "gemm.h5": gemm}
# Made only when named (slow to write, or only one case needs them).
ON_REQUEST = {"many.h5"}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or sorted(set(FIXTURES) - ON_REQUEST):
        FIXTURES[name](os.path.join(out, name))


if __name__ == "__main__":
    main()
