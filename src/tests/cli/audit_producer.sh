#!/bin/sh
# audit_producer.sh — `fp4diag audit` on checkpoints written by the producers' own code
# (testdata/quantized/producer/, scripts/make_producer_testdata.py: ModelOpt's NVFP4 unified HF
# export, compressed-tensors' nvfp4- and mxfp4-pack-quantized compressors): per-tensor and
# pooled export SQNR and alpha equal the fp64 numpy values committed with the fixtures
# (expected.json, from the producers' own dequantize) to 1e-6 dB and 1e-12; these round-to-
# nearest exports reproduce every stored scale byte (scale_match_frac 1), the RTN column equals
# the export, and every quantized module is audited (7 per fixture; lm_head stays bf16).
set -u
P=testdata/quantized/producer
[ -f "$P/expected.json" ] || { echo "no $P"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for fx in modelopt_nvfp4 ct_nvfp4 ct_mxfp4; do
    "$FP4DIAG" audit "$P/source" "$P/$fx" -o "$tmp/$fx.json" -q || fail "audit $fx exited $?"
    python3 - "$tmp/$fx.json" "$P/expected.json" "$fx" <<'PY' || fail "audit $fx numbers"
import json, sys
r = json.load(open(sys.argv[1])); fx = sys.argv[3]
want = json.load(open(sys.argv[2]))["fixtures"][fx]
assert r["schema"] == "fp4diag.audit/1" and r["errors"] == [], r["errors"]
got = {t["name"]: t for t in r["tensors"]}
assert sorted(got) == sorted(want["tensors"]) and len(got) == 7, sorted(got)
fmt, prod = {"modelopt_nvfp4": ("nvfp4", "modelopt"), "ct_nvfp4": ("nvfp4", "compressed-tensors"),
             "ct_mxfp4": ("mxfp4", "compressed-tensors")}[fx]
for name, w in want["tensors"].items():
    t = got[name]
    assert t["quant"]["format"] == fmt and t["quant"]["producer"] == prod, t["quant"]
    assert abs(t["export"]["sqnr_db"] - w["sqnr_db"]) <= 1e-6, (name, t["export"], w)
    assert abs(t["export"]["alpha"] - w["alpha"]) <= 1e-12, (name, t["export"], w)
    assert abs(t["requant"]["sqnr_db"] - w["sqnr_db"]) <= 1e-6, (name, t["requant"], w)
    assert t["scale_match_frac"] == 1, (name, t["scale_match_frac"], t["scale_byte_diff"])
    assert t["nonnearest_frac"] < 0.01, (name, t["nonnearest_frac"])
    assert t["layout_check"]["as_declared"], (name, t["layout_check"])
    if fmt == "nvfp4":
        g = t["global_scale"]
        assert g["match"] and (g["group"] is None or g["group_shared"] is True), g
p, w = r["pooled"], want["pooled"]
assert p["tensors"] == 7 and p["scale_match_frac"] == 1, p
assert abs(p["export"]["sqnr_db"] - w["sqnr_db"]) <= 1e-6, (p, w)
assert abs(p["export"]["alpha"] - w["alpha"]) <= 1e-12, (p, w)
PY
done
# ModelOpt's export declares itself (hf_quant_config.json); compressed-tensors' config.json
grep -q '"declared":	"hf_quant_config.json: modelopt' "$tmp/modelopt_nvfp4.json" || fail "modelopt declaration"
grep -q '"declared":	"config.json: compressed-tensors' "$tmp/ct_nvfp4.json" || fail "ct declaration"
exit 0
