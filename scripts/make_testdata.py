#!/usr/bin/env python3
"""make_testdata.py — build the small real-tensor files in testdata/ from ../shared/data.

Datasets are copied with H5Ocopy (h5py Group.copy), so the on-disk type (the bf16 custom float),
chunking, gzip and attributes are kept byte for byte. Files are written with libver='earliest' so
that any HDF5 >= 1.8 (the C library we link) can read them.

  testdata/gpt_ckpt_small.h5  from gpt_ckpt_final_bf16.h5: all of /blocks/0, the biases,
                              layernorms and proj weight of /blocks/5, and /lnf (~1.5 MB)
  testdata/gpt_gemm_small.h5  from gpt_gemm_layer1.h5: x, w, dy of /qkv and /proj (~3.5 MB;
                              /fc2 + /qkv would be ~5.4 MB)

usage: python3 scripts/make_testdata.py [--data DIR] [--out DIR]
"""
import argparse
import os
import sys

import h5py

CKPT_SRC = "gpt_ckpt_final_bf16.h5"
CKPT_PATHS = (
    ["/blocks/0"]
    + ["/blocks/5/%s/bias" % m for m in ("fc1", "fc2", "proj", "qkv")]
    + ["/blocks/5/%s/%s" % (ln, p) for ln in ("ln1", "ln2") for p in ("weight", "bias")]
    + ["/blocks/5/proj/weight", "/lnf"]
)
GEMM_SRC = "gpt_gemm_layer1.h5"
GEMM_PATHS = ["/%s/%s" % (g, d) for g in ("qkv", "proj") for d in ("x", "w", "dy")]


def copy_subset(src_path, dst_path, paths):
    tmp = dst_path + ".tmp"
    with h5py.File(src_path, "r") as src, h5py.File(tmp, "w", libver="earliest") as dst:
        for p in paths:
            parent = os.path.dirname(p)
            if parent != "/":
                dst.require_group(parent)
            src.copy(src[p], dst[parent], name=os.path.basename(p))
    os.replace(tmp, dst_path)
    print("%s: %d bytes" % (dst_path, os.path.getsize(dst_path)))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.normpath(os.path.join(here, "..", "..", "shared", "data")))
    ap.add_argument("--out", default=os.path.normpath(os.path.join(here, "..", "testdata")))
    a = ap.parse_args()
    if not os.path.isdir(a.data):
        sys.exit("make_testdata: %s: no such directory (give --data)" % a.data)
    os.makedirs(a.out, exist_ok=True)
    copy_subset(os.path.join(a.data, CKPT_SRC), os.path.join(a.out, "gpt_ckpt_small.h5"),
                CKPT_PATHS)
    copy_subset(os.path.join(a.data, GEMM_SRC), os.path.join(a.out, "gpt_gemm_small.h5"),
                GEMM_PATHS)


if __name__ == "__main__":
    main()
