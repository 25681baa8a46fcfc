#!/bin/sh
# sqnr_axis.sh — the block axis end to end: on a rank-3 tensor, per-tensor SQNR of int4 and e1m2
# with fp32 blocks of 16 along axis 2, 1 and 0 equals a numpy reference (half-even rounding on
# |x|/s, s = amax/g_max in fp32), whatever --mem-limit does to the slab split.
set -u
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "no python3 h5py/numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/t.h5" <<'PY' || exit 1
import sys, h5py, numpy as np
x = np.random.default_rng(7).standard_normal((6, 20, 36)).astype(np.float32)
x[2, 3, :] *= 40  # outliers in some blocks
with h5py.File(sys.argv[1], "w") as f:
    f["t"] = x
PY
for ax in 2 1 0 -1; do
    for mem in 1G 3K; do
        "$FP4DIAG" sqnr "$tmp/t.h5" --format int4,e1m2 --axis "$ax" --mem-limit "$mem" -q \
            >"$tmp/r_${ax}_$mem.json" || { echo "axis $ax mem $mem: exit $?"; exit 1; }
    done
done
python3 - "$tmp" <<'PY' || exit 1
import json, sys, h5py, numpy as np
d = sys.argv[1]
x = h5py.File(d + "/t.h5")["t"][...]
def ref(x, axis, gmax, step):
    v = np.moveaxis(x, axis, -1)
    v = np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, (-v.shape[-1]) % 16)]).reshape(-1, 16)
    s = (np.abs(v).max(1, keepdims=True) / np.float32(gmax)).astype(np.float32)
    t = (np.abs(v) / s).astype(np.float32)
    q = np.minimum(np.rint(t / np.float32(step)) * np.float32(step), gmax).astype(np.float32)
    xq = (np.sign(v) * q * s).astype(np.float64)
    v = v.astype(np.float64)
    return 10 * np.log10((v * v).sum() / ((xq - v) ** 2).sum())
for ax in (2, 1, 0, -1):
    for mem in ("1G", "3K"):
        r = json.load(open(f"{d}/r_{ax}_{mem}.json"))
        t = r["tensors"][0]
        assert t["axis"] == ax % 3, t["axis"]
        for res, (g, st) in zip(t["results"], ((7, 1), (3.5, 0.5))):
            want = ref(x, ax, g, st)
            assert abs(res["sqnr_db"] - want) <= 1e-9 * abs(want), (ax, mem, res["format"], res["sqnr_db"], want)
        assert t["results"][0]["sqnr_db"] == t["results"][1]["sqnr_db"], "e1m2 and int4 must agree"
PY
exit 0
