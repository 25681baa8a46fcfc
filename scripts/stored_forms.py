#!/usr/bin/env python3
"""stored_forms.py — write the float tensors of an HDF5 file again in the stored forms that
checkpoints use, for end-to-end checks of the read paths (scripts/gpu_e2e.sh):

  OUTDIR/bf16.h5     contiguous HDF5 custom float bf16 (16 bits, sign 15, exponent 7..14,
                     mantissa 0..6, bias 127), values rounded to nearest even from float32
  OUTDIR/f16.h5      contiguous IEEE f16; tensors under a "5" group stored big-endian
  OUTDIR/bf16_gz.h5  bf16, chunks of up to 64 rows, shuffle + deflate level 4

usage: stored_forms.py IN.h5 OUTDIR    (needs h5py and numpy)
"""
import os
import sys

import h5py
import numpy as np

from fp4dump import bf16_type  # the HDF5 custom float bf16 of the project's checkpoints


def bf16_words(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = np.isnan(x)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | np.uint32(0x40)).astype(np.uint16)
    return r


def tensors(path):
    out = []
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "fiu" or (
                    isinstance(obj, h5py.Dataset) and obj.dtype.kind == "V"):
                out.append(("/" + name, obj.astype("<f4")[()]))
        f.visititems(visit)
    return out


def write_bf16(g, leaf, x, gzip):
    x = np.asarray(x, dtype=np.float32)
    sp = h5py.h5s.create_simple(x.shape) if x.ndim else h5py.h5s.create(h5py.h5s.SCALAR)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if gzip and x.ndim:
        dcpl.set_chunk(tuple([min(64, x.shape[0])] + list(x.shape[1:])))
        dcpl.set_shuffle()
        dcpl.set_deflate(4)
    t = bf16_type()
    d = h5py.h5d.create(g.id, leaf.encode(), t, sp, dcpl=dcpl)
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, bf16_words(x), mtype=t)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    ts = tensors(src)
    with h5py.File(os.path.join(outdir, "bf16.h5"), "w") as fb, \
            h5py.File(os.path.join(outdir, "f16.h5"), "w") as fh, \
            h5py.File(os.path.join(outdir, "bf16_gz.h5"), "w") as fz:
        for name, x in ts:
            parent, leaf = name.rsplit("/", 1)
            for f, kind in ((fb, "bf16"), (fz, "gz")):
                g = f.require_group(parent) if parent else f
                write_bf16(g, leaf, x, kind == "gz")
            order = ">f2" if "/5/" in name else "<f2"
            fh.create_dataset(name, data=np.asarray(x, dtype=np.float32).astype(order), dtype=order)
    print(f"stored_forms: {len(ts)} tensors -> {outdir}/bf16.h5 f16.h5 bf16_gz.h5")


if __name__ == "__main__":
    main()
