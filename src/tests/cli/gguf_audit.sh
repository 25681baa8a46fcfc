#!/bin/sh
# gguf_audit.sh — `fp4diag audit SOURCE model.gguf` on testdata/gguf/ (MXFP4 by gguf-py's own
# quantizer, NVFP4 by our writer following ggml's rule, scripts/make_gguf_testdata.py): per
# tensor export SQNR and alpha equal an independent fp64 computation (numpy, from the F32
# source and gguf-py's own dequantize of the same bytes, testdata/gguf/expected.safetensors) to
# 1e-6 dB; both are round-to-nearest exports by ggml's scale rules, so every scale byte is
# reproduced (scale_match_frac 1) and every code is a nearest one; auditing gguf-py's decode
# against the GGUF gives SQNR "exact" (our decode is bit for bit the same); the reports
# follow schema/audit.schema.json; the pooled line is the energy-weighted one of both tensors.
set -u
D=testdata/gguf
[ -f "$D/model.gguf" ] || { echo "no $D"; exit 77; }
python3 -c 'import numpy' 2>/dev/null || { echo "numpy not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null | head -20; exit 1; }

"$FP4DIAG" audit "$D/source.safetensors" "$D/model.gguf" 'blk.0.ffn_*' -o "$tmp/a.json" -q \
    2>"$tmp/err" || fail "audit exited $?"
python3 - "$tmp/a.json" "$D/source.safetensors" "$D/expected.safetensors" <<'PY' || fail "audit numbers"
import json, sys
import numpy as np
sys.path.insert(0, "src/tests/cli/lib")
from st_load import load
r = json.load(open(sys.argv[1])); src = load(sys.argv[2]); dec = load(sys.argv[3])
assert r["errors"] == [], r["errors"]
names = sorted(t["name"] for t in r["tensors"])
assert names == ["blk.0.ffn_down.weight", "blk.0.ffn_gate.weight"], names
for t in r["tensors"]:
    x = src[t["name"]].ravel(); q = dec[t["name"]].ravel()
    xx = float(np.dot(x, x)); ee = float(np.dot(x - q, x - q)); xq = float(np.dot(x, q))
    want = 10 * np.log10(xx / ee)
    assert abs(t["export"]["sqnr_db"] - want) <= 1e-6, (t["name"], t["export"], want)
    assert abs(t["export"]["alpha"] - xq / xx) <= 1e-12, (t["name"], t["export"])
    assert t["quant"]["producer"] == "gguf", t["quant"]
    assert t["quant"]["format"] == ("mxfp4" if "down" in t["name"] else "nvfp4"), t["quant"]
    assert t["scale_match_frac"] == 1, t
    assert t["nonnearest_frac"] == 0, t
    assert t["layout_check"]["as_declared"], t
    # requant's per-tensor scale: none for GGUF NVFP4 (1.0), null for MXFP4 (SPEC 11)
    assert t["requant"]["global_scale_from"] == ("none" if t["quant"]["format"] == "nvfp4" else None), t["requant"]
# the pooled line over the MXFP4 and the NVFP4 tensor is energy-weighted (SPEC 11: sum of the
# signal over sum of the noise); the NVFP4 tensor's signal is ~2e4 times smaller, so it sits
# 3e-5 dB from the MXFP4 tensor's alone, never on it
XX = EE = XQ = 0.0
for t in r["tensors"]:
    x = src[t["name"]].ravel().astype(np.float64); q = dec[t["name"]].ravel().astype(np.float64)
    XX += float(np.dot(x, x)); EE += float(np.dot(x - q, x - q)); XQ += float(np.dot(x, q))
p = r["pooled"]
assert p["tensors"] == 2, p
assert abs(p["export"]["sqnr_db"] - 10 * np.log10(XX / EE)) <= 1e-9, (p["export"], 10 * np.log10(XX / EE))
assert abs(p["export"]["alpha"] - XQ / XX) <= 1e-12, (p["export"], XQ / XX)
down = [t for t in r["tensors"] if t["name"] == "blk.0.ffn_down.weight"][0]
assert abs(p["export"]["sqnr_db"] - down["export"]["sqnr_db"]) > 1e-5, (p["export"], down["export"])
PY
"$FP4DIAG" audit "$D/expected.safetensors" "$D/model.gguf" 'blk.0.ffn_*' special.nvfp4 \
    -o "$tmp/e.json" -q 2>"$tmp/err" || fail "audit of the expected decode exited $?"
python3 - "$tmp/e.json" <<'PY' || fail "decode not exact"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["tensors"]) == 3 and r["errors"] == [], r
for t in r["tensors"]:
    assert t["export"]["sqnr_status"] == "exact", (t["name"], t["export"])
    assert t["special_scale_bytes"]["e4m3_nan"] == 0, t  # ggml's UE4M3 has no NaN
PY
# both reports against schema/audit.schema.json (when jsonschema is installed)
python3 - "$tmp" schema/audit.schema.json <<'PY' || fail "schema"
import glob, json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
s = json.load(open(sys.argv[2]))
for f in glob.glob(sys.argv[1] + "/*.json"):
    jsonschema.validate(json.load(open(f)), s)
PY
exit 0
