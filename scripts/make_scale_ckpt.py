#!/usr/bin/env python3
"""make_scale_ckpt.py — the generated checkpoint of the scale benchmarks (bench_scale.sh,
bench_mpi.sh): N datasets /layers/NN/weight of MIB MiB stored each, rows x 4096, the same
standard-normal base (seed 7, 0.1 % of the values x 20) times 1 + i/N.

usage: make_scale_ckpt.py PATH N MIB [f32|bf16]
  f32   float32 (the default)
  bf16  the HDF5 custom float bf16 as the project's checkpoints store it (round to nearest even)
Exit 77 (with a message) when PATH's file system has less than N x MIB MiB + 1 GiB free.
"""
import os
import shutil
import sys

import h5py
import numpy as np

from fp4dump import bf16_type  # the HDF5 custom float bf16 of the project's checkpoints

COLS = 4096


def bf16_words(x):
    u = x.view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def main():
    if len(sys.argv) not in (4, 5) or (len(sys.argv) == 5 and sys.argv[4] not in ("f32", "bf16")):
        sys.exit(__doc__)
    path, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    dtype = sys.argv[4] if len(sys.argv) == 5 else "f32"
    need = (n * mib + 1024) << 20
    free = shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
    if free < need:
        print(f"{os.path.dirname(path)} has {free >> 20} MiB free, needs {need >> 20} MiB; skipped")
        sys.exit(77)
    size = 4 if dtype == "f32" else 2
    rows = mib * (1 << 20) // size // COLS
    rng = np.random.default_rng(7)
    base = rng.standard_normal((rows, COLS), dtype=np.float32)
    base[rng.random(base.shape) < 0.001] *= 20.0
    with h5py.File(path, "w") as f:
        for i in range(n):
            x = base * np.float32(1.0 + i / n)
            name = f"/layers/{i:02d}/weight"
            if dtype == "f32":
                f.create_dataset(name, data=x)
            else:
                t = bf16_type()
                g = f.require_group(name.rsplit("/", 1)[0])
                d = h5py.h5d.create(g.id, b"weight", t, h5py.h5s.create_simple(x.shape))
                d.write(h5py.h5s.ALL, h5py.h5s.ALL, bf16_words(x), mtype=t)


if __name__ == "__main__":
    main()
