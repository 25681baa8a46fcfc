#!/usr/bin/env python3
"""gen_samples.py — writes the synthetic sample reports testdata/reports/sample_*.json that the
compare and plot tests use. NOT fp4diag output: a small numpy model of SPEC §2-§6 (fp32 block
scales, RTNE, te-sign RHT) on seeded synthetic tensors, laid out as the report contract says.
Re-run only to change the fixtures: python3 testdata/reports/gen_samples.py"""
import json
import math
import os

import numpy as np

GRIDS = {"e2m1": [0, .5, 1, 1.5, 2, 3, 4, 6], "int4": [0, 1, 2, 3, 4, 5, 6, 7],
         "e1m2": [k / 2 for k in range(8)]}
TE_MASK = 0xD7E8
HERE = os.path.dirname(os.path.abspath(__file__))


def hadamard(n):
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


def rht(x, n=16):
    s = np.array([-1.0 if (TE_MASK >> i) & 1 else 1.0 for i in range(n)])
    g = x.reshape(-1, n)
    return ((g * s) @ hadamard(n) / math.sqrt(n)).astype(np.float32).reshape(x.shape)


def quantize(x, fmt, block=16):
    q = np.array(GRIDS[fmt], dtype=np.float64)
    g = x.reshape(-1, block).astype(np.float64)
    amax = np.abs(g).max(axis=1, keepdims=True)
    s = np.where(amax > 0, amax / q[-1], 1.0)
    t = np.abs(g) / s
    d = np.abs(t[..., None] - q)
    best = d.min(axis=-1, keepdims=True)
    score = (d == best) * np.where(np.arange(8) % 2 == 0, 2, 1)
    k = score.argmax(axis=-1)
    xq = np.sign(g) * q[k] * s
    code = (np.signbit(g).astype(int) << 3) | k
    is_amax = np.abs(g) == amax
    return xq.reshape(x.shape), code.ravel(), t.ravel(), k.ravel(), is_amax.ravel()


def result(x, fmt, rot):
    xx = rht(x) if rot else x
    xq, code, t, k, is_amax = quantize(xx, fmt)
    xd, qd = xx.astype(np.float64).ravel(), xq.ravel()
    e2, err2 = float(xd @ xd), float(((qd - xd) ** 2).sum())
    alpha = float(qd @ xd) / e2
    hist = np.bincount(code, minlength=16)
    p15 = np.concatenate([[hist[0] + hist[8]], hist[1:8], hist[9:]]) / hist.sum()
    p8 = (hist[:8] + hist[8:]) / hist.sum()
    ent = lambda p: -sum(v * math.log(v) for v in p if v > 0)
    q = GRIDS[fmt]
    levels = []
    keep = ~is_amax
    for i, qi in enumerate(q):
        l = (qi - q[i - 1]) / 2 if i else 0.0
        r = (q[i + 1] - qi) / 2 if i < 7 else 0.0
        m = keep & (k == i)
        levels.append({"q": qi, "left": l, "right": r, "analytic_bias": (l - r) / 2,
                       "count": int(m.sum()),
                       "mean_error": float((qi - t[m]).mean()) if m.any() else None})
    qk = np.array(q)[k]
    return {"format": fmt, "scale": "fp32", "block": 16,
            "rht": {"size": 16, "signs": "te"} if rot else False, "rounding": "rtne",
            "sqnr_db": -10 * math.log10(err2 / e2), "sqnr_status": "ok", "nmse": err2 / e2,
            "alpha": alpha, "delta": 1 - alpha,
            "mean_signed_error": float((qk[keep] - t[keep]).mean()),
            "bucket_ratio_15": math.exp(ent(p15)) / 15, "bucket_ratio_8": math.exp(ent(p8)) / 8,
            "histogram": [int(v) for v in hist], "levels": levels,
            "counts": {"elements": int(x.size), "padded": 0, "zero": int((x == 0).sum()), "nan": 0,
                       "inf": 0, "saturated": 0, "clipped": 0, "blocks": int(x.size // 16),
                       "scale_underflow_blocks": 0, "zero_blocks": 0, "nonfinite_blocks": 0},
            "tensor_amax": float(np.abs(x).max()),
            "_e2": e2, "_err2": err2, "_xq": float(qd @ xd), "_hist": hist}


def pooled(rs, key):
    e2 = sum(r["_e2"] for r in rs); err2 = sum(r["_err2"] for r in rs)
    hist = sum(r["_hist"] for r in rs)
    p15 = np.concatenate([[hist[0] + hist[8]], hist[1:8], hist[9:]]) / hist.sum()
    p8 = (hist[:8] + hist[8:]) / hist.sum()
    ent = lambda p: -sum(v * math.log(v) for v in p if v > 0)
    a = sum(r["_xq"] for r in rs) / e2
    out = dict(key, tensors=len(rs), sqnr_db=-10 * math.log10(err2 / e2), sqnr_status="ok",
               alpha=a, delta=1 - a, bucket_ratio_15=math.exp(ent(p15)) / 15,
               bucket_ratio_8=math.exp(ent(p8)) / 8)
    return out


def tensors(rng):
    out = []
    for b in range(4):
        # heavier tails deeper down, and one smooth (RHT-hostile) tensor per block
        out.append((f"/blocks/{b}/fc1/weight",
                    rng.standard_t(3 + 2 * (3 - b), (32, 64)).astype(np.float32) * 0.02))
        base = np.linspace(-1, 1, 64, dtype=np.float32)[None, :] * (1 + 0.1 * b)
        out.append((f"/blocks/{b}/fc2/weight",
                    (base + 0.05 * rng.standard_normal((32, 64))).astype(np.float32)))
    return out


def report(command, ts, rhts, formats):
    cfg = {"formats": formats, "scale": "fp32", "block": 16, "axis": -1, "rounding": "rtne",
           "sr_bits": 24, "seed": 0, "rht": "both" if len(rhts) == 2 else "off", "rht_size": 16,
           "rht_signs": "te", "mx_rule": "floor", "weight_2d": False, "device": "cpu",
           "threads": 2, "mem_limit": 1 << 30, "layers": None}
    doc = {"schema": "fp4diag.report/1", "tool": {"name": "fp4diag", "version": "0.1.0"},
           "command": command, "argv": ["fp4diag", command, "synthetic.h5", "--format",
                                        ",".join(formats)] + (["--rht", "both"] if len(rhts) == 2 else []),
           "input": {"file": "synthetic.h5", "datasets": [n for n, _ in ts]}, "config": cfg,
           "tensors": [], "summary": {"results": []}, "errors": [],
           "timing": {"seconds": 0.01, "bytes_read": sum(x.nbytes for _, x in ts)}}
    allres = {}
    for name, x in ts:
        rs = [result(x, f, rot) for f in formats for rot in rhts]
        for r in rs:
            allres.setdefault((r["format"], bool(r["rht"])), []).append(r)
        t = {"name": name, "shape": list(x.shape), "dtype": "f32", "axis": 1, "results": rs}
        if command == "rht":
            t["rht_delta"] = [delta(f, [r for r in rs if r["format"] == f]) for f in formats]
        doc["tensors"].append(t)
    for (f, rot), rs in allres.items():
        key = {"format": f, "scale": "fp32", "block": 16,
               "rht": {"size": 16, "signs": "te"} if rot else False, "rounding": "rtne"}
        doc["summary"]["results"].append(pooled(rs, key))
    if command == "rht":
        doc["summary"]["rht_delta"] = [delta(f, [r for r in doc["summary"]["results"]
                                                 if r["format"] == f]) for f in formats]
    for t in doc["tensors"]:
        for r in t["results"]:
            for k in [k for k in r if k.startswith("_")]:
                del r[k]
    return doc


def delta(f, rs):
    p = next(r for r in rs if not r["rht"]); h = next(r for r in rs if r["rht"])
    return {"format": f, "scale": "fp32", "block": 16, "rounding": "rtne",
            "delta_sqnr_db": h["sqnr_db"] - p["sqnr_db"], "delta_alpha": h["alpha"] - p["alpha"],
            "delta_bucket_ratio_15": h["bucket_ratio_15"] - p["bucket_ratio_15"],
            "delta_bucket_ratio_8": h["bucket_ratio_8"] - p["bucket_ratio_8"]}


def gemm_report():
    layers = []
    for name, base in (("/blocks/1/fc2", 17.0), ("/blocks/3/fc2", 15.5)):
        for recipe, off in (("ufp4", 0.6), ("e2m1", 0.0)):
            paths = []
            for i, path in enumerate(("fprop", "dgrad", "wgrad")):
                s = base + off - 0.7 * i
                paths.append({"path": path, "shape": [[64, 128], [64, 256], [128, 256]][i],
                              "contraction": [256, 128, 64][i], "sqnr_db": round(s, 4),
                              "sqnr_status": "ok", "eta": round(0.985 + 0.004 * off - 0.002 * i, 6),
                              "alpha_a": 0.992, "alpha_b": 0.994, "alpha_product": 0.986048,
                              "operands": [
                                  {"name": "x", "role": "a", "format": "e1m2" if recipe == "ufp4" else "e2m1",
                                   "scale": "fp32", "rht": {"size": 16, "signs": "te"} if recipe == "ufp4" or path == "wgrad" else False,
                                   "rounding": "rtne", "sqnr_db": round(s + 3, 4), "alpha": 0.992},
                                  {"name": "w", "role": "b", "format": "e1m2" if recipe == "ufp4" else "e2m1",
                                   "scale": "fp32", "rht": {"size": 16, "signs": "te"} if recipe == "ufp4" or path == "wgrad" else False,
                                   "rounding": "rtne", "sqnr_db": round(s + 3.2, 4), "alpha": 0.994}]})
            layers.append({"name": name, "recipe": recipe, "paths": paths})
    return {"schema": "fp4diag.report/1", "tool": {"name": "fp4diag", "version": "0.1.0"},
            "command": "gemm", "argv": ["fp4diag", "gemm", "synthetic_gemm.h5"],
            "input": {"file": "synthetic_gemm.h5", "datasets": ["/blocks/1/fc2", "/blocks/3/fc2"]},
            "config": {"formats": ["e1m2", "e2m1"], "scale": "fp32", "block": 16, "axis": -1,
                       "rounding": "rtne", "sr_bits": 24, "seed": 0, "rht": "off", "rht_size": 16,
                       "rht_signs": "te", "mx_rule": "floor", "weight_2d": False, "device": "cpu",
                       "threads": 2, "mem_limit": 1 << 30, "layers": None},
            "layers": layers, "errors": [], "timing": {"seconds": 0.02, "bytes_read": 0}}


def main():
    rng = np.random.default_rng(7)
    ts = tensors(rng)
    for name, doc in (("sample_sqnr.json", report("sqnr", ts, [False], ["e2m1", "int4"])),
                      ("sample_rht.json", report("rht", ts, [False, True], ["e2m1", "int4"])),
                      ("sample_gemm.json", gemm_report())):
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
