#!/bin/sh
# quantized_fp8.sh — FP8 weight exports (SPEC §10): ModelOpt FP8 (a per-tensor F32 weight_scale,
# here the FP8 down_proj of ModelOpt's own MIXED_PRECISION export), compressed-tensors
# float-quantized (per-channel weight_scale [out, 1]) and DeepSeek-style block scales
# (weight_scale_inv): `ls` labels the weight and its scale as what they are, the analyses list
# both as skipped with that reason (the scale never analysed as a weight, a scalar one
# included; the module's input_scale named as its activation scale), and an exact name still
# analyses the weight.
set -u
P=testdata/quantized/producer
[ -d "$P/modelopt_mixed" ] || { echo "no $P"; exit 77; }
python3 -c 'import numpy' 2>/dev/null || { echo "numpy not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
M=model.layers.0.mlp.down_proj

# ModelOpt FP8 (per-tensor scale)
"$FP4DIAG" ls "$P/modelopt_mixed" >"$tmp/ls" || fail "ls exited $?"
grep -q "^$M.weight  *64x128  *f8_e4m3 .*  FP8 E4M3 weight (modelopt; per-tensor scale in weight_scale): quantized already, in 8 bits, not a 4-bit format fp4diag measures$" "$tmp/ls" ||
    { cat "$tmp/ls"; fail "ls: FP8 weight not labelled"; }
grep -q "^$M.weight_scale  *scalar  *f32 .*  the scale of the FP8 E4M3 .weight beside it (modelopt; per-tensor scale)$" "$tmp/ls" ||
    { cat "$tmp/ls"; fail "ls: FP8 scale not labelled"; }
"$FP4DIAG" sqnr "$P/modelopt_mixed" --json >"$tmp/s.json" 2>"$tmp/e" || fail "sqnr exited $?"
python3 - "$tmp/s.json" "$M" <<'PY' || fail "sqnr: FP8 not skipped with its reason"
import json, sys
r = json.load(open(sys.argv[1])); m = sys.argv[2]
sk = {s["name"]: s["reason"] for s in r["skipped"]}
assert sk[m + ".weight"].startswith("FP8 E4M3 weight (modelopt; per-tensor scale in weight_scale)"), sk
assert sk[m + ".weight_scale"].startswith("the scale of the FP8 E4M3 .weight"), sk
# the FP8 module's activation scale is named as such, not a stray "rank 0 (scalar)" (an NVFP4
# module's input_scale is read into its logical tensor and never listed alone)
assert sk[m + ".input_scale"] == "the input (activation) scale of the FP8 E4M3 .weight beside it (modelopt)", sk
assert not any(n.endswith(".input_scale") and not n.startswith(m) for n in sk), sk
assert not any(t["name"].startswith(m) for t in r["tensors"]), [t["name"] for t in r["tensors"]]
PY
"$FP4DIAG" sqnr "$P/modelopt_mixed" "$M.weight" --json >"$tmp/x.json" 2>/dev/null || fail "exact name exited $?"
python3 -c "import json,sys; r=json.load(open('$tmp/x.json')); assert [t['name'] for t in r['tensors']] == ['$M.weight'], r['tensors']" ||
    fail "an exact name does not analyse the FP8 weight"

# compressed-tensors float-quantized (per-channel) and block-scaled weight_scale_inv
mkdir "$tmp/ct" || fail mkdir
python3 - "$tmp/ct" <<'PY' || fail "writing the FP8 checkpoint"
import json, os, struct, sys
import numpy as np
d = sys.argv[1]; rng = np.random.default_rng(8)
def fp8():  # finite E4M3 bytes (no 0x7F / 0xFF)
    b = rng.integers(0, 0x7E, size=(32, 64), dtype=np.uint8)
    return b | (rng.integers(0, 2, size=b.shape, dtype=np.uint8) << 7)
t = {"model.layers.0.mlp.up_proj.weight": ("F8_E4M3", [32, 64], fp8().tobytes()),
     "model.layers.0.mlp.up_proj.weight_scale": ("F32", [32, 1], (rng.random((32, 1)) * 0.01 + 1e-3).astype("<f4").tobytes()),
     "model.layers.0.mlp.gate_proj.weight": ("F8_E4M3", [32, 64], fp8().tobytes()),
     "model.layers.0.mlp.gate_proj.weight_scale_inv": ("F32", [2, 1], np.array([[0.01], [0.02]], "<f4").tobytes()),
     "model.layers.0.mlp.down_proj.weight": ("F32", [32, 64], rng.standard_normal((32, 64)).astype("<f4").tobytes())}
h, off, blobs = {}, 0, []
for k in sorted(t):
    dt, sh, raw = t[k]
    h[k] = {"dtype": dt, "shape": sh, "data_offsets": [off, off + len(raw)]}
    off += len(raw); blobs.append(raw)
hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
with open(os.path.join(d, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(hb))); f.write(hb); f.write(b"".join(blobs))
json.dump({"quantization_config": {"quant_method": "compressed-tensors", "format": "float-quantized",
           "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float",
           "strategy": "channel"}}}, "ignore": ["lm_head"]}}, open(os.path.join(d, "config.json"), "w"))
PY
"$FP4DIAG" ls "$tmp/ct" >"$tmp/ls" || fail "ls ct exited $?"
grep -q 'up_proj.weight .*FP8 E4M3 weight (compressed-tensors; per-channel scales in weight_scale)' "$tmp/ls" || { cat "$tmp/ls"; fail "ls: CT FP8"; }
grep -q 'gate_proj.weight .*FP8 E4M3 weight (compressed-tensors; block scales 2x1 in weight_scale_inv)' "$tmp/ls" || { cat "$tmp/ls"; fail "ls: block FP8"; }
grep -q 'up_proj.weight_scale .*the scale of the FP8 E4M3 .weight beside it (compressed-tensors; per-channel scales)' "$tmp/ls" || { cat "$tmp/ls"; fail "ls: CT FP8 scale"; }
"$FP4DIAG" sqnr "$tmp/ct" --json >"$tmp/c.json" 2>/dev/null || fail "sqnr ct exited $?"
python3 - "$tmp/c.json" <<'PY' || fail "sqnr ct: a scale or an FP8 weight analysed"
import json, sys
r = json.load(open(sys.argv[1]))
assert [t["name"] for t in r["tensors"]] == ["model.layers.0.mlp.down_proj.weight"], [t["name"] for t in r["tensors"]]
sk = {s["name"]: s["reason"] for s in r["skipped"]}
for m in ("up_proj", "gate_proj"):
    assert sk["model.layers.0.mlp.%s.weight" % m].startswith("FP8 E4M3 weight (compressed-tensors; "), sk
assert sk["model.layers.0.mlp.up_proj.weight_scale"].startswith("the scale of the FP8 E4M3 .weight"), sk
assert sk["model.layers.0.mlp.gate_proj.weight_scale_inv"].startswith("the scale of the FP8 E4M3 .weight"), sk
PY
exit 0
