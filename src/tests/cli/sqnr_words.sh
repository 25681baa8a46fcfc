#!/bin/sh
# sqnr_words.sh — the driver's stored-words path (f16/bf16 words handed to a backend that
# widens them itself: the CPU backend a group at a time, the CUDA one on the device) gives the
# report of the fp32 path bit for bit: FP4DIAG_CPU_WORDS=0 makes the CPU backend take fp32
# widened by the reader instead.
# bf16 contiguous and gzip-chunked, f16 little- and big-endian, rank 1 and 0, one slab and
# several, one read and two (--mem-limit), tensor amax, weight_2d, and axis 0 (fp32 path).
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp/t.h5" <<'P' || { echo "skip: h5py unavailable"; exit 77; }
import sys
import h5py, numpy as np
r = np.random.default_rng(15)
a = (r.standard_t(4, (2560, 1024)) * 0.02).astype(np.float32)
a[5, 7] = np.nan
a[9, 3] = -np.inf
a[11, :40] = 0
bf = h5py.h5t.IEEE_F32LE.copy()
bf.set_fields(15, 7, 8, 0, 7)
bf.set_size(2)
bf.set_ebias(127)
w = (a.view(np.uint32) >> 16).astype(np.uint16)
with h5py.File(sys.argv[1], "w") as f:
    for name, dcpl_gz in (("bf16", False), ("bf16gz", True)):
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        if dcpl_gz:
            dcpl.set_chunk((64, 1024))
            dcpl.set_shuffle()
            dcpl.set_deflate(4)
        d = h5py.h5d.create(f.id, name.encode(), bf, h5py.h5s.create_simple(a.shape), dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, w, mtype=bf)
    f.create_dataset("f16", data=a.astype("<f2"))
    f.create_dataset("f16be", data=a[:300].astype(">f2"))
    d = h5py.h5d.create(f.id, b"v", bf, h5py.h5s.create_simple((1000,)))
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, w[0, :1000].copy(), mtype=bf)
    f.create_dataset("s", data=np.float16(0.75))
P
for args in "--scale nvfp4" "--format all --rht both --all-tensors" "--scale nvfp4 --weight-2d" \
    "--scale tensor --mem-limit 6M" "--axis 0 --scale nvfp4 --format e2m1,int4"; do
    # shellcheck disable=SC2086
    FP4DIAG_CPU_WORDS=0 "$FP4DIAG" sqnr "$tmp/t.h5" $args -q -o "$tmp/f32.json" 2>"$tmp/e1"
    rc1=$?
    # shellcheck disable=SC2086
    "$FP4DIAG" sqnr "$tmp/t.h5" $args -q -o "$tmp/words.json" 2>"$tmp/e2"
    rc2=$?
    [ $rc1 -eq $rc2 ] || fail "$args: exit $rc1 vs $rc2: $(cat "$tmp/e1" "$tmp/e2")"
    python3 - "$tmp/f32.json" "$tmp/words.json" "$args" <<'P' || fail "$args"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
n = len(a["tensors"])
assert n >= 4, (sys.argv[3], n)
for d in (a, b):
    for k in ("timing", "argv", "provenance"):
        d.pop(k, None)
assert a == b, sys.argv[3]
P
done
exit 0
