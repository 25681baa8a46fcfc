#!/bin/sh
# fos_numpy.sh — Four over Six (SPEC §5.1) against an independent numpy model on the small
# fp32 tensors: nvfp4 (E4M3 block scales of 16 under the fp32 tensor scale, Transformer
# Engine's fp32 order), e2m1, RTNE, with 1x16 and with 16x16 (--weight-2d) scale amax. The
# model has its own E4M3 encoder (fp64 round-half-even on the E4M3 quanta) and its own e2m1
# rounding; each block's two errors are fp64 sums in element order (np.cumsum). blocks and
# blocks4 must be exact; sqnr_db (model's scale-to-6 SQNR: a check of the model), the
# Four-over-Six SQNR and gain_db within 1e-9, per tensor and pooled; the other formats null.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "skipped: no h5py/numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$FP4DIAG" sqnr "$F" --format e2m1,e1m2 --scale nvfp4 -q -o "$tmp/1d.json" ||
    { echo "sqnr exited $?"; exit 1; }
"$FP4DIAG" sqnr "$F" --format e2m1 --scale nvfp4 --weight-2d -q -o "$tmp/2d.json" ||
    { echo "sqnr --weight-2d exited $?"; exit 1; }
"$FP4DIAG" sqnr "$F" --format e2m1 --scale nvfp4 --rounding sr -q -o "$tmp/sr.json" ||
    { echo "sqnr --rounding sr exited $?"; exit 1; }
python3 - "$F" "$tmp/1d.json" "$tmp/2d.json" "$tmp/sr.json" <<'PY' || exit 1
import sys, json, math
import h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
f32 = np.float32
g = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], f32)
FLT_MAX = np.finfo(f32).max
def rtne(t):  # nearest level of the e2m1 grid, ties to the even code
    d = np.abs(t[..., None] - g)
    ties = d == d.min(-1, keepdims=True)
    codes = np.arange(8)
    return np.where(ties.sum(-1) > 1, np.where(ties & (codes % 2 == 0), codes, 99).min(-1),
                    d.argmin(-1))
def e4m3(v):  # v in [0, 448] (fp32): the nearest E4M3 value, ties to even, subnormals 2^-9
    v = v.astype(np.float64)
    e = np.floor(np.log2(np.where(v > 0, v, 1.0)))
    qu = np.exp2(np.maximum(e, -6) - 3)
    return (np.rint(v / qu) * qu).astype(f32)
def candidate(X, am, ams, m, sdec):
    with np.errstate(divide="ignore", over="ignore"):
        ef = e4m3(np.minimum((ams * m).astype(f32), f32(448)))
        mul = np.minimum((f32(1) / (ef * sdec).astype(f32)).astype(f32), FLT_MAX).astype(f32)
    t = (np.abs(X) * mul).astype(f32)
    q = g[rtne(np.minimum(t, f32(6)))]
    xq = (((q * ef).astype(f32)) * sdec).astype(f32)
    xq = np.where(np.signbit(X), -xq, xq)
    d = xq.astype(float) - X.astype(float)
    return np.cumsum(d * d, axis=-1)[..., -1]  # fp64, element order
def model(A, w2d):
    r, c = A.shape
    X = A.reshape(r, c // 16, 16)
    amt = f32(np.abs(A).max())
    senc = min(f32(f32(6) * f32(448)) / amt, FLT_MAX) if amt > 0 else f32(1)
    senc = f32(senc)
    sdec = f32(f32(1) / senc)
    m6 = f32(senc * f32(f32(1) / f32(6)))
    m4 = f32(senc * f32(0.25))
    am = np.abs(X).max(axis=2, keepdims=True)
    ams = am
    if w2d:  # the 16x16 tile amax for each 1x16 block
        ta = np.abs(A).reshape(r // 16, 16, c // 16, 16).max(axis=(1, 3))
        ams = np.repeat(ta, 16, axis=0)[..., None]
    e6 = candidate(X, am, ams, m6, sdec)
    e4 = candidate(X, am, ams, m4, sdec)
    four = e4 < e6
    ch = np.where(four, e4, e6)
    x2 = float((A.astype(float) ** 2).sum())
    return dict(blocks=int(e6.size), blocks4=int(four.sum()), x2=x2, e6=float(e6.sum()),
                ef=float(ch.sum()))
def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(abs(a), abs(b))
for path, w2d in ((sys.argv[2], False), (sys.argv[3], True)):
    rep = json.load(open(path))
    tot = dict(blocks=0, blocks4=0, x2=0.0, e6=0.0, ef=0.0)
    for t in rep["tensors"]:
        m = model(f[t["name"]][...].astype(f32), w2d)
        for r in t["results"]:
            fo = r["four_over_six"]
            if r["format"] != "e2m1":
                assert fo is None, (t["name"], r["format"], fo)
                continue
            assert close(r["sqnr_db"], 10 * math.log10(m["x2"] / m["e6"])), (
                "model", w2d, t["name"], r["sqnr_db"], 10 * math.log10(m["x2"] / m["e6"]))
            assert (fo["blocks"], fo["blocks4"]) == (m["blocks"], m["blocks4"]), (
                w2d, t["name"], fo, m)
            assert fo["block_share4"] == m["blocks4"] / m["blocks"]
            s = 10 * math.log10(m["x2"] / m["ef"])
            assert close(fo["sqnr_db"], s), (w2d, t["name"], fo["sqnr_db"], s)
            assert abs(fo["gain_db"] - (s - r["sqnr_db"])) <= 1e-9, (t["name"], fo)
            assert fo["blocks4"] > 0 and fo["gain_db"] > 0, (t["name"], fo)
        for k in tot: tot[k] += m[k]
    p = [x for x in rep["summary"]["results"] if x["format"] == "e2m1"][0]["four_over_six"]
    assert (p["blocks"], p["blocks4"]) == (tot["blocks"], tot["blocks4"]), (w2d, p, tot)
    assert close(p["sqnr_db"], 10 * math.log10(tot["x2"] / tot["ef"])), (w2d, p)
rep = json.load(open(sys.argv[4]))  # SR: not evaluated
assert all(r["four_over_six"] is None for t in rep["tensors"] for r in t["results"])
assert all(r["four_over_six"] is None for r in rep["summary"]["results"])
PY
exit 0
