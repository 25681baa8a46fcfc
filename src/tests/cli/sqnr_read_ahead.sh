#!/bin/sh
# sqnr_read_ahead.sh — the reader reads the next slabs and tensors while the current one is
# analysed, within --mem-limit: every tensor's results equal those of a run on that tensor
# alone, whatever the limit (one slab at a time up to whole tensors kept), along either axis,
# contiguous and gzip-chunked; a tensor whose chunk is corrupt is an errors entry naming it
# and the tensors after it are still analysed.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp/t.h5" <<'P' || { echo "skip: h5py unavailable"; exit 77; }
import sys
import h5py, numpy as np
r = np.random.default_rng(9)
def t(shape):
    return (r.standard_t(4, shape) * 0.02).astype(np.float32)
with h5py.File(sys.argv[1], "w") as f:
    f["a"] = t((512, 1024))
    f.create_dataset("b", data=t((640, 768)), chunks=(64, 768), compression="gzip")
    f.create_dataset("c", data=t((256, 512)), chunks=(32, 512), compression="gzip")
    f["d"] = t((48, 64))
    f.create_dataset("e", data=t((1024, 256)), chunks=(128, 256), compression="gzip")
    f["g"] = t((96, 32, 48))
    off = f["c"].id.get_chunk_info(3).byte_offset
with open(sys.argv[1], "r+b") as fh:  # corrupt one chunk of /c
    fh.seek(off + 2)
    fh.write(b"\xff" * 64)
P
for args in "--scale nvfp4" "--scale nvfp4 --axis 0" "--format e2m1,int4 --rht both"; do
    for lim in 1G 4M 2M; do
        "$FP4DIAG" sqnr "$tmp/t.h5" $args --mem-limit $lim -q -o "$tmp/all.json" 2>"$tmp/err"
        rc=$?
        [ "$rc" -eq 3 ] || fail "$args --mem-limit $lim: exit $rc, want 3 (the corrupt /c)"
        for ds in /a /b /d /e /g; do
            "$FP4DIAG" sqnr "$tmp/t.h5" $ds $args -q -o "$tmp/one$(echo $ds | tr / _).json" ||
                fail "$ds $args alone: exit $?"
        done
        python3 - "$tmp" "$args --mem-limit $lim" <<'P' || fail "$args --mem-limit $lim"
import json, sys
d = sys.argv[1]
a = json.load(open(d + "/all.json"))
names = [t["name"] for t in a["tensors"]]
assert names == ["/a", "/b", "/d", "/e", "/g"], (sys.argv[2], names)
assert [e["tensor"] for e in a["errors"]] == ["/c"], a["errors"]
assert "chunk" in a["errors"][0]["message"], a["errors"]
for t in a["tensors"]:
    one = json.load(open(d + "/one" + t["name"].replace("/", "_") + ".json"))
    assert one["tensors"] == [t], (sys.argv[2], t["name"])
P
    done
done
echo ok
