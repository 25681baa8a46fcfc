#!/bin/sh
# audit_ct_live.sh — compressed-tensors' own code, as installed here, makes an
# nvfp4-pack-quantized and an mxfp4-pack-quantized export of a tiny Llama (the ct() of
# scripts/make_producer_testdata.py: apply_quantization_config, calculate_qparams /
# generate_gparam, ModelCompressor.compress_model, update_config) and decodes it with its own
# dequantize; `fp4diag audit` then reads each export bit for bit: audited against the producer's
# fp32 decode as the source, every tensor's export is "exact" (not one element differs), and
# against the bf16 source every stored scale byte is what the rule gives and the export is
# fp4diag's own round-to-nearest. The committed fixtures (testdata/quantized/producer/) pin one
# version; this checks the version installed. Skips (77) where torch, transformers or
# compressed-tensors is not importable; PYTHON=/path/to/python picks a venv that has them.
set -u
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || { echo "skip: no $PY"; exit 77; }
if ! "$PY" -c 'import torch, transformers, compressed_tensors, safetensors, numpy' 2>/dev/null; then
    echo "skip: torch, transformers, compressed-tensors not importable by $PY (PYTHON=a venv with them)"
    exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

PYTHONPATH="$PWD/scripts" "$PY" - "$tmp" >"$tmp/versions" 2>"$tmp/py.err" <<'PY' || { cat "$tmp/py.err"; fail "the producer's code"; }
import os, sys, warnings
warnings.filterwarnings("ignore")
import make_producer_testdata as m
from safetensors.torch import save_file
out = sys.argv[1]
m.OUT = out
src = m.tiny_llama()
src.save_pretrained(os.path.join(out, "source"))
m.tidy(os.path.join(out, "source"))
versions = {}
for fmt in ("nvfp4", "mxfp4"):
    expected = {}
    versions.update(m.ct(fmt, expected))
    dec = {k.split("/", 1)[1]: v.contiguous() for k, v in expected.items()}
    os.makedirs(os.path.join(out, "dec_" + fmt))
    save_file(dec, os.path.join(out, "dec_" + fmt, "model.safetensors"))
print(versions)
PY
for fmt in nvfp4 mxfp4; do
    "$FP4DIAG" audit "$tmp/dec_$fmt" "$tmp/ct_$fmt" -q -o "$tmp/exact.json" || fail "audit $fmt against its decode exited $?"
    "$FP4DIAG" audit "$tmp/source" "$tmp/ct_$fmt" -q -o "$tmp/src.json" || fail "audit $fmt against the source exited $?"
    python3 - "$tmp/exact.json" "$tmp/src.json" "$fmt" <<'PY' || fail "$fmt: $(cat "$tmp/versions")"
import json, sys
ex, sr, fmt = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for r in (ex, sr):
    assert r["errors"] == [] and len(r["tensors"]) == 7, (r["errors"], [t["name"] for t in r["tensors"]])
for t in ex["tensors"]:  # the producer's own decode, bit for bit
    assert t["quant"]["format"] == fmt and t["quant"]["producer"] == "compressed-tensors", t["quant"]
    assert t["export"]["sqnr_status"] == "exact", (t["name"], t["export"])
for t in sr["tensors"]:  # its scale rule and round-to-nearest, as fp4diag computes them
    assert t["scale_match_frac"] == 1, (t["name"], t["scale_byte_diff"])
    assert abs(t["export"]["sqnr_db"] - t["requant"]["sqnr_db"]) <= 1e-6, (t["name"], t["export"], t["requant"])
    assert t["nonnearest_frac"] < 0.01 and t["layout_check"]["as_declared"], t
PY
done
exit 0
