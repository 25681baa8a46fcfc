#!/bin/sh
# merge_fingerprint.sh — merge refuses shares computed from different contents at the same path
# (issue 26, item 3): each partial report carries its input's fingerprint (per file: size and
# sampled XXH3, io/fingerprint.h), the same in every share of one input. Shares of one file
# merge; share 1 made after the file was rewritten with other numbers (same names, shapes and
# size) is refused naming the file, as is one made after it grew, for sqnr and gemm, on HDF5
# and on a sharded safetensors checkpoint (a shard rewritten); nothing is written.
. src/tests/cli/lib/parts.sh
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "no python3 h5py/numpy"; exit 77; }
cd "$tmp" || exit 1
bad() { # bad WHAT GREP PARTS...
    what=$1 pat=$2; shift 2
    "$FP4DIAG" merge "$@" -o bad.json 2>err; rc=$?
    [ "$rc" -eq 3 ] || { cat err; fail "$what: exit $rc, want 3"; }
    grep -q -- "$pat" err || { cat err; fail "$what: message lacks '$pat'"; }
    [ -e bad.json ] && fail "$what: wrote a report"
    return 0
}
# scale D FACTOR [GROW]: every float dataset of ckpt.h5 times FACTOR in place (same layout and
# size); GROW also adds a small dataset (the file grows)
scale() {
    python3 - ckpt.h5 "$1" "${2:-}" <<'PY' || fail "rewrite"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    def walk(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind == "f":
            obj[...] = obj[...] * float(sys.argv[2])
    f.visititems(walk)
    if sys.argv[3]:
        f["extra"] = np.arange(4096, dtype=np.float32)
PY
}
cp "$C" ckpt.h5
sz0=$(wc -c <ckpt.h5)
for i in 0 1; do
    "$FP4DIAG" sqnr ckpt.h5 --format e2m1 -q --shard $i/2 -o s$i.json || fail "share $i"
done
"$FP4DIAG" merge s0.json s1.json -o ok.json 2>err || { cat err; fail "shares of one file refused"; }
scale 1.5
[ "$(wc -c <ckpt.h5)" -eq "$sz0" ] || fail "the rewrite changed the size"
"$FP4DIAG" sqnr ckpt.h5 --format e2m1 -q --shard 1/2 -o s1b.json || fail "share 1 again"
bad contents "s1b.json is not a share of the run of s0.json: its input ckpt.h5 had other contents" s0.json s1b.json
bad contents_rev "s0.json is not a share of the run of s1b.json: its input ckpt.h5 had other contents" s1b.json s0.json
scale 1 grow
"$FP4DIAG" sqnr ckpt.h5 /blocks --format e2m1 -q --shard 1/2 -o s1c.json || fail "share 1 grown"
"$FP4DIAG" sqnr ckpt.h5 /blocks --format e2m1 -q --shard 0/2 -o s0c.json || fail "share 0 grown"
"$FP4DIAG" merge s0c.json s1c.json -o ok2.json 2>err || { cat err; fail "grown: its own shares refused"; }
cp "$C" ckpt.h5
"$FP4DIAG" sqnr ckpt.h5 /blocks --format e2m1 -q --shard 0/2 -o s0d.json || fail "share 0 orig"
bad size "s1c.json is not a share of the run of s0d.json: its input ckpt.h5 had [0-9]* bytes, $sz0 in s0d.json" s0d.json s1c.json
# gemm
cp "$G" gemm.h5
"$FP4DIAG" gemm gemm.h5 --layers 4 -q --shard 0/2 -o g0.json || fail "gemm share 0"
python3 - gemm.h5 <<'PY' || fail "rewrite gemm"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    def walk(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind == "f":
            obj[...] = obj[...] * 0.5
    f.visititems(walk)
PY
"$FP4DIAG" gemm gemm.h5 --layers 4 -q --shard 1/2 -o g1.json || fail "gemm share 1"
bad gemm "g1.json is not a share of the run of g0.json: its input gemm.h5 had " g0.json g1.json
# a sharded safetensors checkpoint: one shard rewritten between the shares
if python3 -c 'import safetensors' 2>/dev/null; then
    mkdir st
    python3 - st 1 <<'PY' || fail "safetensors"
import sys, json, numpy as np
from safetensors.numpy import save_file
d, k = sys.argv[1], float(sys.argv[2])
r = np.random.default_rng(3)
a = {"model.a.weight": (r.standard_normal((64, 32)) * k).astype(np.float32)}
b = {"model.b.weight": (r.standard_normal((64, 32)) * k).astype(np.float32)}
save_file(a, f"{d}/model-00001-of-00002.safetensors")
save_file(b, f"{d}/model-00002-of-00002.safetensors")
json.dump({"metadata": {}, "weight_map": {"model.a.weight": "model-00001-of-00002.safetensors",
                                          "model.b.weight": "model-00002-of-00002.safetensors"}},
          open(f"{d}/model.safetensors.index.json", "w"))
PY
    "$FP4DIAG" sqnr st --format e2m1 -q --shard 0/2 -o t0.json || fail "st share 0"
    "$FP4DIAG" sqnr st --format e2m1 -q --shard 1/2 -o t1.json || fail "st share 1"
    "$FP4DIAG" merge t0.json t1.json -o ok3.json 2>err || { cat err; fail "st: shares refused"; }
    python3 - st 2 <<'PY' || fail "safetensors rewrite"
import sys, numpy as np
from safetensors.numpy import save_file
r = np.random.default_rng(3)
r.standard_normal((64, 32))
save_file({"model.b.weight": (r.standard_normal((64, 32)) * 2).astype(np.float32)},
          f"{sys.argv[1]}/model-00002-of-00002.safetensors")
PY
    "$FP4DIAG" sqnr st --format e2m1 -q --shard 1/2 -o t1b.json || fail "st share 1 again"
    bad st "t1b.json is not a share of the run of t0.json: its input st/model-00002-of-00002.safetensors had other contents" t0.json t1b.json
fi
# a part without a fingerprint (an older build) or with a malformed one
python3 - s0.json nofp.json badfp.json <<'PY' || fail "edit"
import json, sys
d = json.load(open(sys.argv[1]))
fp = d["shard"].pop("fingerprint")
json.dump(d, open(sys.argv[2], "w"))
fp[0]["xxh3"] = "not hex"
d["shard"]["fingerprint"] = fp
json.dump(d, open(sys.argv[3], "w"))
PY
bad nofp "nofp.json: no shard.fingerprint" nofp.json s1.json
bad badfp "badfp.json: malformed shard.fingerprint" badfp.json s1.json
exit 0
