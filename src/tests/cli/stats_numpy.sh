#!/bin/sh
# stats_numpy.sh — the recipe statistics of SPEC §5.1 against an independent fp64 numpy model
# on the small fp32 tensors: e2m1 with fp32 block-16 scales and with mxfp4 (E8M0, floor rule,
# blocks of 32), RTNE. Counts (stat_elements, nonzero, underflows, saturated) and max_abs_err
# must be exact, and so the block amax percentiles (half-octave bins) and mxfp4's E8M0 scale
# byte histogram, and the relative-error percentiles (half-octave bins of the fp32 |x̂ − x| / |x|
# from 2^-40, per tensor and pooled); underflows_pct, underflow_share and sqnr_nonamax_db within 1e-9; the pooled
# counts are the sums; --rank-by underflow orders the tensors by the model's underflow.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "skipped: no h5py/numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for sc in fp32 mxfp4; do
    "$FP4DIAG" sqnr "$F" --format e2m1 --scale "$sc" --rank-by underflow -q -o "$tmp/$sc.json" ||
        { echo "sqnr --scale $sc exited $?"; exit 1; }
done
python3 - "$F" "$tmp/fp32.json" "$tmp/mxfp4.json" <<'PY' || exit 1
import sys, json, math
import h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
g = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], np.float32)
def rtne(t):  # nearest level of the e2m1 grid, ties to the even code
    d = np.abs(t[..., None] - g)
    ties = d == d.min(-1, keepdims=True)
    codes = np.arange(8)
    return np.where(ties.sum(-1) > 1, np.where(ties & (codes % 2 == 0), codes, 99).min(-1),
                    d.argmin(-1))
def model(A, scale):
    B = 16 if scale == "fp32" else 32
    r, c = A.shape
    X = A.reshape(r, c // B, B)
    am = np.abs(X).max(axis=2, keepdims=True)
    if scale == "fp32":
        s = (am / np.float32(6)).astype(np.float32)
        t = np.where(s > 0, np.abs(X) / np.where(s > 0, s, 1), 0).astype(np.float32)
    else:  # E8M0, floor rule: 2^(floor(log2 amax) - 2), exact powers of two
        e = np.where(am > 0, np.floor(np.log2(np.where(am > 0, am, 1))) - 2, 0)
        s = np.exp2(e).astype(np.float32)
        t = (np.abs(X) / s).astype(np.float32)
    sat = int(((t > 6) & (am > 0)).sum())
    q = g[rtne(np.minimum(t, np.float32(6)))]
    Xq = (np.sign(X) * (q * s).astype(np.float32)).astype(np.float32)
    d = Xq.astype(float) - X.astype(float)
    first = np.abs(X).argmax(axis=2)  # first index attaining the amax
    na = np.ones(X.shape, bool)
    np.put_along_axis(na, first[..., None], False, axis=2)
    # block amax percentiles: half-octave bins of the fp32 bits (SPEC 5.1), lower edges
    a = np.sort(am.ravel().astype(np.float32))
    pct = {}
    for k, p in (("p50", .5), ("p90", .9), ("p99", .99)):
        v = a[math.ceil(p * a.size) - 1]
        pct[k] = 0.0 if v == 0 else float(((v.view(np.uint32) >> 22) << 22).view(np.float32))
    sh = None
    if scale == "mxfp4":  # E8M0 bytes of the non-zero blocks: exponent + 127
        b, c = np.unique((e[am > 0] + 127).astype(int), return_counts=True)
        sh = [[int(x), int(y)] for x, y in zip(b, c)]
    # relative errors of the entries with x != 0 (fp32 difference and quotient), SPEC 5.1 bins
    nzm = X != 0
    X32 = X.astype(np.float32)
    r = (np.abs(Xq[nzm] - X32[nzm]) / np.abs(X32[nzm])).astype(np.float32)
    assert r.dtype == np.float32
    k = (r.view(np.uint32) >> np.uint32(22)).astype(np.int64) - 173
    k = np.clip(k, 0, 127)
    rh = np.bincount(k, minlength=128)
    return dict(pct=pct, sh=sh, rh=rh,
                n=X.size, nz=int((X != 0).sum()), uf=int(((X != 0) & (Xq == 0)).sum()),
                sat=sat, mx=float(np.abs(d).max()),
                x2=float((X.astype(float) ** 2)[na].sum()), e2=float((d ** 2)[na].sum()))
def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(abs(a), abs(b))
def rpct(rh):
    n = int(rh.sum())
    out = {}
    for key, p in (("p50", 50), ("p95", 95), ("p99", 99)):
        k = int(np.searchsorted(np.cumsum(rh), (p * n + 99) // 100))
        out[key] = 0.0 if k == 0 else float(np.array([(k + 173) << 22], np.uint32).view(np.float32)[0])
    return out
for path, scale in ((sys.argv[2], "fp32"), (sys.argv[3], "mxfp4")):
    prh = np.zeros(128, np.int64)
    rep = json.load(open(path))
    tot = dict(n=0, nz=0, uf=0, sat=0)
    ufp = {}
    for t in rep["tensors"]:
        r = t["results"][0]
        m = model(f[t["name"]][...].astype(np.float32), scale)
        c = r["counts"]
        assert r["stats_status"] == "ok", (t["name"], r["stats_status"])
        got = (c["stat_elements"], c["nonzero"], c["underflows"], c["saturated"])
        want = (m["n"], m["nz"], m["uf"], m["sat"])
        assert got == want, (scale, t["name"], got, want)
        assert r["max_abs_err"] == m["mx"], (scale, t["name"], r["max_abs_err"], m["mx"])
        assert close(r["underflows_pct"], 100 * m["uf"] / m["n"]), (t["name"], r["underflows_pct"])
        assert close(r["underflow_share"], m["uf"] / m["nz"])
        assert close(r["saturated_pct"], 100 * m["sat"] / m["n"])
        assert close(r["sqnr_nonamax_db"], 10 * math.log10(m["x2"] / m["e2"])), (
            t["name"], r["sqnr_nonamax_db"], 10 * math.log10(m["x2"] / m["e2"]))
        assert r["block_amax_percentiles"] == m["pct"], (t["name"], r["block_amax_percentiles"], m["pct"])
        assert r["scale_histogram"] == m["sh"], (t["name"], r["scale_histogram"], m["sh"])
        assert r["rel_err_percentiles"] == rpct(m["rh"]), (t["name"], r["rel_err_percentiles"], rpct(m["rh"]))
        prh += m["rh"]
        for k in tot: tot[k] += m[k]
        ufp[t["name"]] = 100 * m["uf"] / m["n"]
    p = rep["summary"]["results"][0]
    pc = p["counts"]
    assert (pc["stat_elements"], pc["nonzero"], pc["underflows"], pc["saturated"]) == \
        (tot["n"], tot["nz"], tot["uf"], tot["sat"]), (scale, pc)
    assert p["rel_err_percentiles"] == rpct(prh), (scale, p["rel_err_percentiles"], rpct(prh))
    assert rep["verdict"]["rank_by"] == "underflow"
    order = [x["tensor"] for x in rep["verdict"]["ranking"]]
    assert order == sorted(ufp, key=lambda k: -ufp[k]), (order, ufp)
    assert all(close(x["underflows_pct"], ufp[x["tensor"]]) for x in rep["verdict"]["ranking"])
PY
exit 0
