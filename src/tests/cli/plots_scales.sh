#!/bin/sh
# plots_scales.sh — plot_scales.py (issue 28): the stored scale byte decoded (E4M3 with its
# subnormals, E8M0) and the scale floor as SPEC §5.1 defines it; the plot runs headless on
# nvfp4 and mxfp4 reports from every input kind (HDF5, safetensors, PyTorch, GGUF, sharded
# PyTorch), its legend counts the blocks of the report's histograms, a fp32 report draws the
# underflow alone and says why there is no histogram. plot_bias.py draws the RHT panels of a
# `--rht both` report, and `--rht off` says what it leaves out. plot_gemm.py turns long HF names.
. src/tests/cli/lib/plots.sh
plots_svg_text
PYTHONPATH=scripts python3 - <<'PY' || fail "scale_value / floor_byte"
import sys
sys.argv = ["plot_scales.py"]
import plot_scales as ps
assert ps.scale_value(0x7E, "nvfp4") == 448.0           # E4M3 max
assert ps.scale_value(0x38, "nvfp4") == 1.0             # exponent 7 = bias
assert ps.scale_value(0x08, "nvfp4") == 2.0 ** -6       # smallest normal
assert ps.scale_value(0x01, "nvfp4") == 2.0 ** -9       # smallest subnormal
assert ps.scale_value(0x07, "nvfp4") == 7 / 8 * 2.0 ** -6
assert ps.scale_value(127, "mxfp4") == 1.0 and ps.scale_value(0, "mxfp4") == 2.0 ** -127
assert ps.scale_value(0xFE, "mxfp4") == 2.0 ** 127
for b, sc in ((0x7F, "nvfp4"), (0x80, "nvfp4"), (0xFF, "mxfp4"), (3, "fp32")):
    try:
        ps.scale_value(b, sc)
        raise SystemExit(f"scale_value({b:#x}, {sc}) accepted")
    except ValueError:
        pass
assert [b for b in range(0x7F) if ps.floor_byte(b, "nvfp4")] == list(range(8))
assert [b for b in range(0xFF) if ps.floor_byte(b, "mxfp4")] == [0]
PY
n=0
for spec in "testdata/gpt_ckpt_small.h5:nvfp4" "testdata/select/model.safetensors:mxfp4" \
            "testdata/torch/small.pt:nvfp4" "testdata/gguf/model.gguf:nvfp4" \
            "testdata/torch/sharded:mxfp4"; do
    in=${spec%:*} sc=${spec##*:} n=$((n + 1))
    [ -e "$in" ] || fail "no $in"
    "$FP4DIAG" sqnr "$in" --scale "$sc" --format e2m1,int4 -q -o "$T/s$n.json" 2>"$T/err" ||
        { cat "$T/err"; fail "sqnr $in"; }
    python3 scripts/plot_scales.py "$T/s$n.json" 2>"$T/err" || { cat "$T/err"; fail "plot_scales on $in"; }
    is_png "$T/s$n.scales.png" || fail "plot_scales: no PNG for $in"
    python3 scripts/plot_scales.py "$T/s$n.json" --out "$T/s$n.svg" 2>/dev/null || fail "plot_scales svg $in"
    PYTHONPATH=scripts python3 - "$T/s$n.json" "$T/s$n.svg" <<'PY' || fail "plot_scales legend on $in"
import json, re, sys
r = json.load(open(sys.argv[1]))
svg = open(sys.argv[2]).read()
tot = sum(n for t in r["tensors"] for x in t["results"] if x["format"] == "e2m1"
          for _, n in x["scale_histogram"] or [])
assert tot > 0 and re.search(r"e2m1[^<]*: %d blocks" % tot, svg), (tot, re.findall(r">e2m1[^<]*<", svg))
assert "flushed to 0" in svg
PY
done
"$FP4DIAG" sqnr testdata/gpt_ckpt_small.h5 --format e2m1 -q -o "$T/fp32.json" || fail "sqnr fp32"
python3 scripts/plot_scales.py "$T/fp32.json" --out "$T/fp32.svg" 2>/dev/null || fail "plot_scales fp32"
grep -q 'no block-scale histogram' "$T/fp32.svg" || fail "plot_scales: fp32 report without the reason"
# plot_bias: a --rht both report draws both sides; --rht off says what it leaves out
"$FP4DIAG" sqnr testdata/gpt_ckpt_small.h5 --format e2m1 --rht both -q -o "$T/both.json" || fail "sqnr both"
python3 scripts/plot_bias.py "$T/both.json" --out "$T/b.svg" 2>/dev/null || fail "plot_bias both"
grep -q 'rtne, RHT16<' "$T/b.svg" && grep -q 'rtne, no RHT<' "$T/b.svg" || fail "plot_bias: RHT panels dropped"
python3 scripts/plot_bias.py "$T/both.json" --rht off --out "$T/b0.svg" 2>/dev/null || fail "plot_bias --rht off"
grep -q 'RHT results not drawn' "$T/b0.svg" || fail "plot_bias --rht off: no note of the dropped side"
grep -q 'rtne, RHT16<' "$T/b0.svg" && fail "plot_bias --rht off drew the RHT side"
# plot_gemm: HF layer names turned, not side by side
python3 - testdata/reports/sample_gemm.json "$T/g.json" <<'PY' || fail "gemm report"
import copy, json, sys
d = json.load(open(sys.argv[1]))
d["layers"] = [dict(copy.deepcopy(d["layers"][0]), name=f"model.layers.{i}.mlp.down_proj")
               for i in (10, 2, 0)]
json.dump(d, open(sys.argv[2], "w"))
PY
python3 scripts/plot_gemm.py "$T/g.json" --out "$T/g.svg" 2>/dev/null || fail "plot_gemm HF names"
python3 - "$T/g.svg" <<'PY' || fail "plot_gemm: HF names not in model order or not turned"
import re, sys
svg = open(sys.argv[1]).read()
t = re.findall(r">(\d+) FPROP<", svg)
assert t == ["0", "2", "10"], t
assert re.search(r'rotate\(-(45|90)', svg), "labels not rotated"
PY
echo ok
