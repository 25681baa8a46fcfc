#!/bin/sh
# sqnr_one_read.sh — under a tensor amax (--scale nvfp4 | tensor) a tensor of several slabs that
# fits --mem-limit is read once (timing.bytes_read = its fp32 size), one that does not fit is
# read twice, and both give the same report; along the last axis and along axis 0 (slabs
# transposed into rows), bf16 and f32, contiguous and chunked with gzip.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp/t.h5" <<'P' || { echo "skip: h5py unavailable"; exit 77; }
import sys
import h5py, numpy as np
r = np.random.default_rng(14)
a = (r.standard_t(4, (3072, 1024)) * 0.02).astype(np.float32)
bf = h5py.h5t.IEEE_F32LE.copy()
bf.set_fields(15, 7, 8, 0, 7)
bf.set_size(2)
bf.set_ebias(127)
w = (a.view(np.uint32) >> 16).astype(np.uint16)  # exact: bench-like values, bf16 stored words
with h5py.File(sys.argv[1], "w") as f:
    f["f32"] = a
    f.create_dataset("gz", data=a, chunks=(64, 1024), compression="gzip", compression_opts=4)
    d = h5py.h5d.create(f.id, b"bf16", bf, h5py.h5s.create_simple(a.shape))
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, w, mtype=bf)
P
for args in "--scale nvfp4" "--scale tensor --format all --axis 0"; do
    for ds in /f32 /gz /bf16; do
        "$FP4DIAG" sqnr "$tmp/t.h5" $ds $args -q -o "$tmp/once.json" || fail "sqnr $ds $args exit $?"
        "$FP4DIAG" sqnr "$tmp/t.h5" $ds $args --mem-limit 6M -q -o "$tmp/twice.json" ||
            fail "sqnr $ds $args --mem-limit 6M exit $?"
        python3 - "$tmp/once.json" "$tmp/twice.json" "$ds $args" <<'P' || fail "$ds $args"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
n = 3072 * 1024 * 4
assert a["timing"]["bytes_read"] == n, (sys.argv[3], a["timing"])
assert b["timing"]["bytes_read"] == 2 * n, (sys.argv[3], b["timing"])
for d in (a, b):
    for k in ("timing", "argv", "provenance"):
        d.pop(k, None)
    d["config"].pop("mem_limit", None)
assert a == b, sys.argv[3]
P
    done
done
exit 0
