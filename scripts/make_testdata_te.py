#!/usr/bin/env python3
"""make_testdata_te.py — build testdata/te_nvfp4_cases.h5: Transformer Engine's NVFP4 codes and
E4M3 scales (plain and RHT-16 with TE signs) for four real tensors, plus those source tensors,
in one small gzip'd file for src/tests/test_te_oracle.c.

Layout: /<case>/source (the source dataset, copied with H5Ocopy so the bf16 custom float type
is kept), /<case>/plain/{codes,scales} and /<case>/rht16_te/{codes,scales}, each group with
the attribute tensor_amax (float64, of the rotated tensor for rht16_te). <case> is
"<file stem>/<dataset path>", e.g. gpt_gemm_layer1/fc2/dy. The root attribute `cases` lists them.

Usage: scripts/make_testdata_te.py [DATA_DIR] [OUT]   (defaults ../shared/data, testdata/...)
"""
import os
import sys

import h5py
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "shared", "data")
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "testdata",
                                                          "te_nvfp4_cases.h5")

oracle = h5py.File(os.path.join(data, "te_nvfp4_oracle.h5"), "r")
cases = []


def visit(name, obj):
    if isinstance(obj, h5py.Group) and "plain" in obj and "rht16_te" in obj:
        cases.append(name)


oracle.visititems(visit)
cases.sort()
tmp = out + ".tmp"
with h5py.File(tmp, "w") as dst:
    for case in cases:
        g = oracle[case]
        src_file = g["plain"].attrs["source_file"]
        src_dset = g["plain"].attrs["source_dataset"]
        cg = dst.create_group(case)
        with h5py.File(os.path.join(data, src_file), "r") as src:
            sd = src[src_dset]
            # H5Ocopy keeps the on-disk type (the bf16 custom float), chunks, gzip and attributes
            src.copy(sd, cg, name="source")
            cg["source"].attrs["source_file"] = src_file
            cg["source"].attrs["source_dataset"] = src_dset
        for variant in ("plain", "rht16_te"):
            vg = cg.create_group(variant)
            for k, v in g[variant].attrs.items():
                vg.attrs[k] = v
            for name in ("codes", "scales"):
                arr = np.asarray(g[variant][name][...], dtype=np.uint8)
                vg.create_dataset(name, data=arr, compression="gzip", compression_opts=9,
                                  shuffle=True)
    dst.attrs["cases"] = ",".join(cases)
    dst.attrs["source"] = ("Transformer Engine reference_nvfp4.py codes/scales from "
                           "te_nvfp4_oracle.h5 and their source tensors; made by "
                           "scripts/make_testdata_te.py")
os.replace(tmp, out)
print(out, os.path.getsize(out), "bytes,", len(cases), "cases:", ", ".join(cases))
