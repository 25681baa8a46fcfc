#!/bin/sh
# gemm_numpy.sh — end to end against an independent numpy model of SPEC §6 on a real layer:
# custom recipe (e2m1, fp32 block-16 scales, RTNE, RHT-16 te signs on both operands of every
# path); output SQNR and eta of FPROP, DGRAD and WGRAD must match to 1e-6.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py/numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$FP4DIAG" gemm "$F" /proj --recipe custom --format e2m1 --sr none --rht-scope all -q \
    -o "$tmp/r.json" || { echo "gemm exited $?"; exit 1; }
python3 - "$F" "$tmp/r.json" <<'PY' || exit 1
import sys, json
import h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
X, W, DY = (f["/proj/" + n][...].astype(np.float32) for n in ("x", "w", "dy"))
s = np.array([-1.0 if (0xD7E8 >> i) & 1 else 1.0 for i in range(16)])
H = np.array([[(-1) ** bin(i & j).count("1") for j in range(16)] for i in range(16)], float)
g = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], np.float32)
def rot(A):  # y = ((x * s) H) / 4 per group of 16, fp64 then rounded once to fp32
    r, c = A.shape
    return (((A.astype(float).reshape(r, c // 16, 16) * s) @ H) / 4.0).reshape(r, c).astype(np.float32)
def quant(A):  # fp32 block scale amax/6, RTNE on the e2m1 grid (ties to the even code)
    r, c = A.shape
    B = A.reshape(r, c // 16, 16)
    sc = (np.abs(B).max(axis=2, keepdims=True) / np.float32(6)).astype(np.float32)
    t = np.where(sc > 0, np.abs(B) / np.where(sc > 0, sc, 1), 0).astype(np.float32)
    d = np.abs(t[..., None] - g)
    ties = d == d.min(-1, keepdims=True)
    codes = np.arange(8)
    idx = np.where(ties.sum(-1) > 1, np.where(ties & (codes % 2 == 0), codes, 99).min(-1), d.argmin(-1))
    return (np.sign(B) * g[idx] * sc).reshape(r, c).astype(np.float32)
rep = {p["path"]: p for p in json.load(open(sys.argv[2]))["layers"][0]["paths"]}
for path, (A, B) in (("fprop", (X, W)), ("dgrad", (DY, W.T)), ("wgrad", (DY.T, X.T))):
    A, B = np.ascontiguousarray(A), np.ascontiguousarray(B)
    Z = A.astype(float) @ B.astype(float).T
    Zq = quant(rot(A)).astype(float) @ quant(rot(B)).astype(float).T
    sq = 10 * np.log10((Z * Z).sum() / ((Zq - Z) ** 2).sum())
    eta = (Zq * Z).sum() / (Z * Z).sum()
    r = rep[path]
    assert abs(r["sqnr_db"] - sq) < 1e-6 and abs(r["eta"] - eta) < 1e-9, (path, r["sqnr_db"], sq, r["eta"], eta)
PY
exit 0
