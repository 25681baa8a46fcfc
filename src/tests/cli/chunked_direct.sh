#!/bin/sh
# chunked_direct.sh — chunked datasets read from their stored chunks (deflate, shuffle,
# fletcher32, edge chunks, a never-written chunk, big-endian words) give the same results as
# the same values stored contiguous; a corrupt chunk is an `errors` entry naming file, dataset
# and chunk while the other tensors run (exit 3); a chunk that cannot be decoded inside
# --mem-limit is refused by name; fill time "never" on a never-written chunk is an error.
set -u
python3 -c 'import h5py' 2>/dev/null || { echo "no python3 h5py"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY' || exit 1
import sys, h5py, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
x = (rng.standard_t(4, size=(100, 96)) * 0.02).astype(np.float32)
x[64:80] = 0.0  # rows 64..79: the never-written chunk below (fill value 0)
with h5py.File(d + "/plain.h5", "w", libver="earliest") as f:
    f.create_dataset("a", data=x)
    f.create_dataset("b", data=x.astype(">f4"))
    f.create_dataset("c", data=x)
with h5py.File(d + "/chunked.h5", "w", libver="earliest") as f:
    f.create_dataset("a", data=x, chunks=(16, 32), compression="gzip", shuffle=True,
                     fletcher32=True)
    f.create_dataset("b", data=x.astype(">f4"), chunks=(16, 96), compression="gzip")
    c = f.create_dataset("c", shape=x.shape, dtype="<f4", chunks=(16, 96), shuffle=True,
                         compression="gzip")
    for r in range(0, 100, 16):
        if r != 64:
            c[r:r + 16] = x[r:r + 16]
# A corrupt copy: bytes inside /a's third stored chunk zeroed.
with h5py.File(d + "/chunked.h5", "r") as f:
    addr = f["a"].id.get_chunk_info(2).byte_offset
b = bytearray(open(d + "/chunked.h5", "rb").read())
b[addr + 5:addr + 25] = bytes(20)
open(d + "/corrupt.h5", "wb").write(bytes(b))
# One big chunk (4 MiB decoded), and a never-written chunk under fill time "never".
with h5py.File(d + "/big.h5", "w", libver="earliest") as f:
    f.create_dataset("big", data=np.ones((1024, 1024), np.float32), chunks=(1024, 1024),
                     compression="gzip")
    f.create_dataset("ok", data=np.ones((4, 16), np.float32))
    sp = h5py.h5s.create_simple((32, 16))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((16, 16))
    dcpl.set_deflate(1)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    ds = h5py.h5d.create(f.id, b"never", h5py.h5t.IEEE_F32LE, sp, dcpl=dcpl)
    ms = h5py.h5s.create_simple((16, 16))
    fs = ds.get_space()
    fs.select_hyperslab((0, 0), (16, 16))
    ds.write(ms, fs, np.ones((16, 16), np.float32))
PY
args="--format e2m1,int4 --scale nvfp4 --rht both -q"
for t in 1 2; do
    "$FP4DIAG" sqnr "$tmp/plain.h5" $args --threads $t -o "$tmp/p.json" || { echo "plain: exit $?"; exit 1; }
    "$FP4DIAG" sqnr "$tmp/chunked.h5" $args --threads $t -o "$tmp/c.json" || { echo "chunked: exit $?"; exit 1; }
    python3 - "$tmp/p.json" "$tmp/c.json" <<'PY' || exit 1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ta = {t["name"]: t["results"] for t in a["tensors"]}
tb = {t["name"]: t["results"] for t in b["tensors"]}
assert sorted(ta) == ["/a", "/b", "/c"] and ta == tb, "results differ"
PY
done

"$FP4DIAG" sqnr "$tmp/corrupt.h5" -q -o "$tmp/r.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] || { echo "corrupt: exit $rc, want 3"; cat "$tmp/err"; exit 1; }
python3 - "$tmp/r.json" "$tmp/corrupt.h5" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
assert sorted(t["name"] for t in r["tensors"]) == ["/b", "/c"], r["tensors"]
(e,) = r["errors"]
m = e["message"]
assert e["tensor"] == "/a" and sys.argv[2] in m and "/a" in m and "chunk (0,64)" in m, m
PY

"$FP4DIAG" sqnr "$tmp/big.h5" --mem-limit 8M -q -o "$tmp/r.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] || { echo "big: exit $rc, want 3"; cat "$tmp/err"; exit 1; }
python3 - "$tmp/r.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
assert [t["name"] for t in r["tensors"]] == ["/ok"], r["tensors"]
e = {x["tensor"]: x["message"] for x in r["errors"]}
assert "chunk (0,0)" in e["/big"] and "--mem-limit" in e["/big"], e
assert "chunk (16,0) was never written" in e["/never"], e
PY
"$FP4DIAG" sqnr "$tmp/big.h5" /big -q -o /dev/null || { echo "big without a tight limit: exit $?"; exit 1; }
exit 0
