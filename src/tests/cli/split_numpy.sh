#!/bin/sh
# split_numpy.sh — the error split (SPEC §5.1, --error-split) against an independent numpy
# model on the small fp32 tensors, e2m1, RTNE, under fp32 block-16, mxfp4 (E8M0 floor rule,
# 32), nvfp4 (its own E4M3 encoder, Transformer Engine's fp32 order) and tensor scales: the
# model's x̂ (checked by its SQNR), x̃ rounded on the grid at s* = amax / 6 in fp64, and the
# shares of Σ(x̂ − x)² (flushed, scale, grid, cross, scale_net) within 1e-9, per tensor and
# pooled; the shares sum to 1; SR null. Opt-in: without the flag no result, summary or config
# has the field, and every other number is the same; --shard parts merge to the whole run's
# split exactly.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "skipped: no h5py/numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for sc in fp32 mxfp4 nvfp4 tensor; do
    "$FP4DIAG" sqnr "$F" --format e2m1 --scale "$sc" --error-split -q -o "$tmp/$sc.json" ||
        { echo "sqnr --scale $sc exited $?"; exit 1; }
done
"$FP4DIAG" sqnr "$F" --format e2m1 --rounding sr --error-split -q -o "$tmp/sr.json" ||
    { echo "sqnr --rounding sr exited $?"; exit 1; }
"$FP4DIAG" sqnr "$F" --format e2m1 --scale mxfp4 -q -o "$tmp/off.json" ||
    { echo "sqnr without --error-split exited $?"; exit 1; }
for i in 0 1; do
    "$FP4DIAG" sqnr "$F" --format e2m1 --scale mxfp4 --error-split --shard $i/2 -q \
        -o "$tmp/part$i.json" || { echo "sqnr --shard $i/2 exited $?"; exit 1; }
done
"$FP4DIAG" merge "$tmp/part0.json" "$tmp/part1.json" -q -o "$tmp/merged.json" ||
    { echo "merge exited $?"; exit 1; }
python3 - "$F" "$tmp" <<'PY' || exit 1
import sys, json, math
import h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
f32 = np.float32
g = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], f32)
FLT_MAX = np.finfo(f32).max
def rtne(t):  # nearest level of the e2m1 grid, ties to the even code (fp32 or fp64 t)
    d = np.abs(t[..., None] - g.astype(t.dtype))
    ties = d == d.min(-1, keepdims=True)
    codes = np.arange(8)
    return np.where(ties.sum(-1) > 1, np.where(ties & (codes % 2 == 0), codes, 99).min(-1),
                    d.argmin(-1))
def e4m3(v):  # v in [0, 448]: the nearest E4M3 value, ties to even, subnormals 2^-9
    v = v.astype(np.float64)
    e = np.floor(np.log2(np.where(v > 0, v, 1.0)))
    qu = np.exp2(np.maximum(e, -6) - 3)
    return (np.rint(v / qu) * qu).astype(f32)
def model(A, scale):
    r, c = A.shape
    B = 32 if scale == "mxfp4" else 16
    X = A.reshape(r, c // B, B)
    am = np.abs(X).max(axis=2, keepdims=True)
    ams = am.astype(np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if scale == "fp32":
            s = (am / f32(6)).astype(f32)
            t = np.where(s > 0, np.abs(X) / np.where(s > 0, s, 1), 0).astype(f32)
            xq = (g[rtne(np.minimum(t, f32(6)))] * s).astype(f32)
        elif scale == "mxfp4":
            e = np.where(am > 0, np.floor(np.log2(np.where(am > 0, am, 1))) - 2, 0)
            s = np.exp2(e).astype(f32)
            t = (np.abs(X) / s).astype(f32)
            xq = (g[rtne(np.minimum(t, f32(6)))] * s).astype(f32)
        elif scale == "tensor":
            amt = f32(np.abs(A).max())
            ts = f32(amt / f32(6))
            t = (np.abs(X) / ts).astype(f32)
            xq = (g[rtne(np.minimum(t, f32(6)))] * ts).astype(f32)
            ams = np.full(am.shape, float(amt))
        else:  # nvfp4
            amt = f32(np.abs(A).max())
            senc = f32(min(f32(f32(6) * f32(448)) / amt, FLT_MAX))
            sdec = f32(f32(1) / senc)
            ef = e4m3(np.minimum((am * f32(senc * f32(f32(1) / f32(6)))).astype(f32), f32(448)))
            mul = np.minimum((f32(1) / (ef * sdec).astype(f32)).astype(f32), FLT_MAX).astype(f32)
            t = (np.abs(X) * mul).astype(f32)
            xq = (((g[rtne(np.minimum(t, f32(6)))] * ef).astype(f32)) * sdec).astype(f32)
    xq = np.where(np.signbit(X), -xq, xq).astype(f32)
    x = X.astype(np.float64)
    d = xq.astype(np.float64) - x
    # x~: the grid point at the unrounded scale s* = amax_s / 6 (fp64)
    ok = ams > 0
    ts_ = np.abs(x) * np.where(ok, 6.0 / np.where(ok, ams, 1), 0)
    xt = g.astype(np.float64)[rtne(np.minimum(ts_, 6.0))] * np.where(ok, ams / 6.0, 0)
    xt = np.where(np.signbit(X), -xt, xt)
    fl = (X != 0) & (xq == 0)
    a = np.where(fl, 0, xq.astype(np.float64) - xt)
    b = np.where(fl, 0, xt - x)
    return dict(x2=float((x * x).sum()), e2=float((d * d).sum()), fl=float((x * x)[fl].sum()),
                sc=float((a * a).sum()), gr=float((b * b).sum()), cr=float((a * b).sum()))
def shares(m):
    e = m["e2"]
    return dict(scale=m["sc"] / e, flushed=m["fl"] / e, grid=m["gr"] / e, cross=2 * m["cr"] / e,
                scale_net=(m["sc"] + 2 * m["cr"]) / e)
def near(a, b):
    return all(abs(a[k] - b[k]) <= 1e-9 * max(1.0, abs(b[k])) for k in b)
for sc in ("fp32", "mxfp4", "nvfp4", "tensor"):
    rep = json.load(open(f"{sys.argv[2]}/{sc}.json"))
    tot = dict(x2=0.0, e2=0.0, fl=0.0, sc=0.0, gr=0.0, cr=0.0)
    for t in rep["tensors"]:
        r = t["results"][0]
        m = model(f[t["name"]][...].astype(f32), sc)
        assert abs(r["sqnr_db"] - 10 * math.log10(m["x2"] / m["e2"])) <= 1e-9, (sc, t["name"], "model")
        es = r["error_split"]
        assert near(es, shares(m)), (sc, t["name"], es, shares(m))
        assert abs(es["flushed"] + es["scale"] + es["grid"] + es["cross"] - 1) <= 1e-12, es
        assert abs(es["flushed"] + es["scale_net"] + es["grid"] - 1) <= 1e-12, es
        for k in tot: tot[k] += m[k]
    p = rep["summary"]["results"][0]["error_split"]
    assert near(p, shares(tot)), (sc, p, shares(tot))
rep = json.load(open(f"{sys.argv[2]}/sr.json"))
assert all(r["error_split"] is None for t in rep["tensors"] for r in t["results"])
assert all(r["error_split"] is None for r in rep["summary"]["results"])
assert rep["config"]["error_split"] is True
# opt-in: off, no field anywhere, and the rest of each result as with the flag
on = json.load(open(f"{sys.argv[2]}/mxfp4.json"))
off = json.load(open(f"{sys.argv[2]}/off.json"))
assert "error_split" not in off["config"], "config names error_split without the flag"
def strip(r):
    return {k: v for k, v in r.items() if k != "error_split"}
for a, b in zip(on["tensors"], off["tensors"]):
    for ra, rb in zip(a["results"], b["results"]):
        assert "error_split" not in rb, (b["name"], "error_split without the flag")
        assert strip(ra) == rb, (a["name"], "another number with --error-split")
for ra, rb in zip(on["summary"]["results"], off["summary"]["results"]):
    assert "error_split" not in rb and strip(ra) == rb, "summary differs"
# merged shares: the whole run's, exactly
mg = json.load(open(f"{sys.argv[2]}/merged.json"))
assert [t["results"][0]["error_split"] for t in mg["tensors"]] == \
    [t["results"][0]["error_split"] for t in on["tensors"]], "merged per-tensor split"
assert mg["summary"]["results"][0]["error_split"] == on["summary"]["results"][0]["error_split"], \
    "merged pooled split"
PY
exit 0
