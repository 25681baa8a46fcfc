#!/bin/sh
# plots_polish.sh — plot_gemm.py draws several gemm reports (one per recipe) side by side;
# plot_depth.py orders embeddings first and head/final norm last; past 30 tensors plot_sqnr.py
# and plot_depth.py stay at most 16 in wide (labels thinned, not shrunk, past what fits); where e1m2 and int4 coincide the legend says
# "e1m2 = int4"; plot_rht.py's x label says "model order" only for /blocks/N/ names.
. src/tests/cli/lib/plots.sh
plots_svg_text # SVG text stays text, so it can be grepped
"$FP4DIAG" gemm "$F" /qkv -q >"$T/ufp4.json" || fail "gemm ufp4"
"$FP4DIAG" gemm "$F" /qkv -q --recipe e2m1 >"$T/e2m1.json" || fail "gemm e2m1"
python3 scripts/plot_gemm.py "$T/ufp4.json" "$T/e2m1.json" --out "$T/g.svg" || fail "plot_gemm two reports"
grep -q '>ufp4<' "$T/g.svg" && grep -q '>e2m1<' "$T/g.svg" || fail "plot_gemm: both recipes not in the legend"
python3 scripts/plot_gemm.py "$T/ufp4.json" "$T/ufp4.json" --out "$T/g2.svg" || fail "plot_gemm same recipe twice"
grep -q 'ufp4 (ufp4.json)' "$T/g2.svg" || fail "plot_gemm: a repeated recipe is not told apart"
# a synthetic report of 40 tensors: embeddings, 36 block tensors, head and final norm, with
# e1m2 and int4 giving identical numbers
python3 - "$T/many.json" <<'PY' || fail "synthetic report"
import json, sys
names = ["/head/weight", "/lnf/weight"] + [f"/blocks/{b}/{k}/weight" for b in range(12)
                                            for k in ("qkv", "proj", "fc1")] + ["/tok_emb", "/pos_emb"]
def res(fmt, v):
    return {"format": fmt, "scale": "fp32", "block": 16, "rht": False, "rounding": "rtne",
            "sqnr_db": v, "sqnr_status": "ok", "alpha": 0.99, "delta": 0.01,
            "bucket_ratio_15": 0.9, "bucket_ratio_8": 0.9}
tensors = [{"name": n, "results": [res("e2m1", 20 + i % 3), res("e1m2", 21 + i % 2), res("int4", 21 + i % 2)]}
           for i, n in enumerate(names)]
json.dump({"schema": "fp4diag.report/1", "command": "sqnr", "argv": ["fp4diag", "sqnr"],
           "config": {"formats": ["e2m1", "e1m2", "int4"], "scale": "fp32", "block": 16},
           "tensors": tensors, "summary": {"results": []}}, open(sys.argv[1], "w"))
PY
for s in sqnr depth; do
    python3 scripts/plot_$s.py "$T/many.json" --out "$T/$s.svg" --dpi 100 || fail "plot_$s 40 tensors"
    grep -q 'e1m2 = int4' "$T/$s.svg" || fail "plot_$s: no 'e1m2 = int4' legend"
    python3 - "$T/$s.svg" <<'PY' || fail "plot_$s: wider than 16 in"
import re, sys
w = re.search(r'<svg[^>]*width="([\d.]+)pt"', open(sys.argv[1]).read())
assert w and float(w.group(1)) <= 16 * 72 + 1, w.group(1) if w else "no width"
PY
done
PYTHONPATH=scripts python3 - <<'PY' || fail "depth order"
import fp4report as fr
n = fr.depth_order(["/head/weight", "/blocks/10/fc1", "/lnf/weight", "/blocks/2/fc1", "/misc", "/pos_emb", "/tok_emb"])
assert n == ["/pos_emb", "/tok_emb", "/blocks/2/fc1", "/blocks/10/fc1", "/misc", "/head/weight", "/lnf/weight"], n
assert fr.tick_layout(100)[0] <= 16 and fr.tick_layout(5)[1] == 8 and fr.tick_layout(300)[3] > 1
assert not fr.by_depth(["/qkv/w", "/fc1/w"]) and fr.by_depth(["/blocks/0/x"])
PY
echo ok
