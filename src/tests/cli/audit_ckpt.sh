#!/bin/sh
# audit_ckpt.sh — `fp4diag audit SOURCE QUANTIZED` on the fixtures of testdata/quantized/
# (scripts/make_quantized_testdata.py): per-tensor and pooled export SQNR and alpha equal an
# independent fp64 computation (numpy, from the bf16 source and the writer's own decodes) to
# 1e-6 dB; the round-to-nearest exports reproduce every scale byte (scale_match_frac 1) and
# almost every code (nonnearest_frac < 1 %), ModelOpt MXFP4 (ties toward zero) included; a
# scale rule other than the declared one is named; a swapped nibble order is named, with both SQNRs,
# and left out of the pool; the table lists the worst tensor first; bad input exits 3.
. src/tests/cli/lib/quantized.sh

for fx in modelopt_nvfp4 ct_nvfp4 ct_mxfp4 gptoss_mxfp4 modelopt_mxfp4; do
    "$FP4DIAG" audit "$Q/source" "$Q/$fx" -o "$tmp/$fx.json" -q || fail "audit $fx exited $?"
    python3 - "$tmp/$fx.json" "$Q/source/model.safetensors" "$Q/expected/$fx.safetensors" <<'PY' || fail "audit $fx numbers"
import json, sys
import numpy as np
from st_load import load
r = json.load(open(sys.argv[1])); src = load(sys.argv[2]); dec = load(sys.argv[3])
assert r["schema"] == "fp4diag.audit/1" and r["errors"] == [], r["errors"]
assert len(r["tensors"]) == len(dec), [t["name"] for t in r["tensors"]]
XX = EE = XQ = 0.0
for t in r["tensors"]:
    x = src[t["name"]].ravel(); q = dec[t["name"]].ravel()
    xx = float(np.dot(x, x)); ee = float(np.dot(x - q, x - q)); xq = float(np.dot(x, q))
    XX += xx; EE += ee; XQ += xq
    want = 10 * np.log10(xx / ee)
    assert abs(t["export"]["sqnr_db"] - want) <= 1e-6, (t["name"], t["export"], want)
    assert abs(t["export"]["alpha"] - xq / xx) <= 1e-12, (t["name"], t["export"])
    assert t["scale_match_frac"] == 1, t
    assert t["nonnearest_frac"] < 0.01, t
    assert t["layout_check"]["as_declared"] and t["layout_check"]["fits"] == "as declared", t
    assert abs(t["requant"]["sqnr_db"] - want) <= 1e-6, t   # the export is a round-to-nearest one
    for k in ("name", "quant", "export", "requant", "nonnearest_frac", "scale_match_frac"):
        assert k in t, k
p = r["pooled"]
assert abs(p["export"]["sqnr_db"] - 10 * np.log10(XX / EE)) <= 1e-6, p
assert abs(p["export"]["alpha"] - XQ / XX) <= 1e-12, p
assert p["scale_match_frac"] == 1 and p["tensors"] == len(dec), p
PY
done

# every report against schema/audit.schema.json (when jsonschema is installed)
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

# the layout fault: named with both SQNRs, left out of the pool, exit 0
"$FP4DIAG" audit "$Q/source" "$Q/bad_nibble" -o "$tmp/n.json" >"$tmp/table" || fail "bad_nibble exited $?"
grep -q '^layout: model.layers.0.mlp.down_proj.weight: the export is sane only with nibble order swapped (20\.[0-9]* dB; as declared: -3\.[0-9]* dB); measured so (nibble low=odd (declared low=even), .*), left out of the pool' "$tmp/table" \
    || { cat "$tmp/table"; fail "nibble fault not named"; }
head -n 2 "$tmp/table" | tail -n 1 | grep -q '^model.layers.0.mlp.down_proj.weight .*LAYOUT$' \
    || { cat "$tmp/table"; fail "worst tensor not first"; }
grep -q '^(pooled, 3 tensors)' "$tmp/table" || fail "pool should hold 3 tensors"
python3 - "$tmp/n.json" <<'PY' || fail "bad_nibble JSON"
import json, sys
r = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in r["tensors"]}["model.layers.0.mlp.down_proj.weight"]
h = {x["layout"]: x["sqnr_db"] for x in t["layout_check"]["hypotheses"]}
assert t["layout_check"]["fits"] == "nibble order swapped" and not t["layout_check"]["as_declared"]
assert h["nibble order swapped"] > 20 and h["as declared"] < 0, h
assert t["nonnearest_frac"] < 0.01 and t["export"]["sqnr_db"] == h["nibble order swapped"], t  # measured swapped
PY

# ModelOpt MXFP4 (its float ceil E8M0 rule; exact midpoints toward zero, exact 0 as -0): every
# scale byte reproduced, no code off the nearest grid points, the ties' codes differing from
# our round-to-nearest-even in alpha and histogram only; its faults named: down_proj's nibbles
# swapped, and scales made by the OCP floor rule (every byte that one's, one below ModelOpt's)
python3 - "$tmp/modelopt_mxfp4.json" <<'PY' || fail "modelopt_mxfp4 JSON"
import json, sys
r = json.load(open(sys.argv[1]))
ts = {x["name"]: x for x in r["tensors"]}
assert len(ts) == 4 and all(t["quant"]["format"] == "mxfp4" and t["quant"]["producer"] == "modelopt" for t in ts.values())
for t in ts.values():
    assert t["nonnearest"] == 0 and t["scale_match_frac"] == 1 and t["scale_rule_fit"] is None, t
    assert t["export"]["sqnr_db"] == t["requant"]["sqnr_db"], t
assert any(t["export"]["alpha"] < t["requant"]["alpha"] for t in ts.values())  # ties toward 0
q = ts["model.layers.0.self_attn.q_proj.weight"]  # 16 exact zeros in row 3: code 8 (-0)
he, hr = q["export"]["histogram"], q["requant"]["histogram"]
assert he[8] - hr[8] == 16 and hr[0] - he[0] == 16, (he, hr)
PY
"$FP4DIAG" audit "$Q/source" "$Q/bad_mx_nibble" >"$tmp/table" || fail "bad_mx_nibble exited $?"
grep -q '^layout: model.layers.0.mlp.down_proj.weight: the export is sane only with nibble order swapped' "$tmp/table" \
    || { cat "$tmp/table"; fail "mx nibble fault not named"; }
"$FP4DIAG" audit "$Q/source" "$Q/bad_mx_rule" -o "$tmp/r.json" >"$tmp/table" || fail "bad_mx_rule exited $?"
[ "$(grep -c '^scale bytes: model.layers.0.* block scales are not what the modelopt ceil rule gives from the source; every stored byte is what the ocp floor rule gives' "$tmp/table")" -eq 4 ] \
    || { cat "$tmp/table"; fail "mx scale rule not named"; }
python3 - "$tmp/r.json" <<'PY' || fail "bad_mx_rule JSON"
import json, sys
r = json.load(open(sys.argv[1]))
for t in r["tensors"]:
    d = t["scale_byte_diff"]
    assert t["scale_rule_fit"] == "ocp floor" and 0 < t["scale_match_frac"] < 1, t
    assert d[7] + d[8] == t["scale_bytes"] and d[7] > 0, d  # stored one below the rule or equal
    assert t["export"]["max_frac"] > t["requant"]["max_frac"], t  # smaller scales: more at +-6
PY

# fused partners with different global scales; swizzled scales stored in the flat shape
"$FP4DIAG" audit "$Q/source" "$Q/bad_fused" >"$tmp/table" || fail "bad_fused exited $?"
grep -q '^fused group: model.layers.0.self_attn.k_proj.weight: its qkv partners do not share one per-tensor scale' "$tmp/table" \
    || { cat "$tmp/table"; fail "fused group not named"; }
grep -q '^global scale: model.layers.0.self_attn.k_proj.weight: stored .*, the modelopt rule gives .* from the qkv amax' "$tmp/table" \
    || { cat "$tmp/table"; fail "k_proj global not named"; }
"$FP4DIAG" audit "$Q/source" "$Q/bad_swizzle" >"$tmp/table" || fail "bad_swizzle exited $?"
grep -q '^layout: model.layers.1.mlp.up_proj.weight: the export is sane only with scales swizzled 128x4' "$tmp/table" \
    || { cat "$tmp/table"; fail "swizzle not named"; }

# selection, and what is refused
"$FP4DIAG" audit "$Q/source" "$Q/ct_nvfp4" 'model.layers.0.self_attn.*' --json >"$tmp/s.json" || fail "selection exited $?"
python3 -c "import json,sys; r=json.load(open('$tmp/s.json')); assert len(r['tensors']) == 3, r['tensors']" || fail "selection"
"$FP4DIAG" audit "$Q/source" "$Q/ct_nvfp4" lm_head.weight >/dev/null 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] && grep -q 'lm_head.weight: no quantized tensor matches' "$tmp/e" || fail "unquantized pattern: exit $rc"
"$FP4DIAG" audit "$Q/source" "$Q/source" >/dev/null 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] && grep -q 'no already-quantized tensor' "$tmp/e" || fail "no quantized: exit $rc"
"$FP4DIAG" audit "$Q/source" "$Q/bad_partners" -o "$tmp/b.json" -q 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] || fail "bad_partners: exit $rc"
[ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "bad_partners: not one line"
grep -q 'weight_scale_2 missing' "$tmp/b.json" || fail "bad_partners: error entry"
grep -q '"name":	"model.layers.0.self_attn.v_proj.weight"' "$tmp/b.json" || fail "bad_partners: v_proj not audited"
"$FP4DIAG" audit "$Q/source" >/dev/null 2>&1; [ $? -eq 2 ] || fail "one operand: not a usage error"
"$FP4DIAG" audit "$Q/source" "$Q/ct_nvfp4" -o "$Q/source/model.safetensors" >/dev/null 2>&1
[ $? -eq 2 ] || fail "-o onto an input not refused"
exit 0
