#!/bin/sh
# quantized_ckpt.sh — already-quantized checkpoints (testdata/quantized/, made by
# scripts/make_quantized_testdata.py): `ls` shows one row per logical tensor with its format
# and producer (`ls --json` a quant object); `sqnr` lists the quantized tensors as skipped
# "already quantized (NVFP4, modelopt): audit needs the source", never analyses a block scale
# as a weight, and its verdict covers the high-precision tensors; inconsistent partners and a
# config the tensors contradict are error entries (exit 3, the rest still analysed). The
# high-precision lm_head is kept by recipe and by the checkpoint's exclude list (SPEC §9
# "Default selection"): a default run reports the quantized tensors alone (exit 0; see
# quantized_alone.sh), --all-weights analyses lm_head besides.
set -u
Q=testdata/quantized
[ -d "$Q/modelopt_nvfp4" ] || { echo "no $Q"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$FP4DIAG" ls "$Q/modelopt_nvfp4") || fail "ls exited $?"
echo "$out" | grep -Eq '^model\.layers\.0\.self_attn\.q_proj\.weight +32x64 +nvfp4 .*modelopt, nibble low=even, e4m3 scales flat, global multiplied' \
    || { echo "$out"; fail "q_proj row"; }
echo "$out" | grep -q 'weight_scale' && { echo "$out"; fail "a scale tensor listed on its own"; }
[ "$(echo "$out" | tail -n +2 | wc -l)" -eq 6 ] || { echo "$out"; fail "expected 6 rows"; }
out=$("$FP4DIAG" ls "$Q/gptoss_mxfp4") || fail "ls gpt-oss exited $?"
echo "$out" | grep -Eq '^model\.layers\.0\.mlp\.experts\.gate_up_proj +2x8x64 +mxfp4 .*gpt-oss' \
    || { echo "$out"; fail "gpt-oss row"; }

# a logical name selects the tensor stored under other names (compressed-tensors, gpt-oss)
out=$("$FP4DIAG" ls "$Q/ct_nvfp4" model.layers.0.self_attn.q_proj.weight) || fail "ls CT by logical name: exit $?"
[ "$(echo "$out" | tail -n +2 | awk '{print $1 " " $3}')" = "model.layers.0.self_attn.q_proj.weight nvfp4" ] \
    || { echo "$out"; fail "ls CT by logical name"; }
out=$("$FP4DIAG" ls "$Q/gptoss_mxfp4" model.layers.0.mlp.experts.gate_up_proj) || fail "ls gpt-oss by logical name: exit $?"
[ "$(echo "$out" | tail -n +2 | wc -l)" -eq 1 ] || { echo "$out"; fail "ls gpt-oss by logical name"; }

"$FP4DIAG" ls --json "$Q/ct_nvfp4" >"$tmp/ls.json" || fail "ls --json exited $?"
python3 - "$tmp/ls.json" <<'PY' || fail "ls --json quant objects"
import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["datasets"]}
q = d["model.layers.0.mlp.down_proj.weight"]
assert q["dtype"] == "nvfp4" and q["shape"] == [32, 64], q
assert q["quant"]["format"] == "nvfp4" and q["quant"]["producer"] == "compressed-tensors", q
assert q["quant"]["block"] == 16 and "global divided" in q["quant"]["layout"], q
m = q["quant"]["members"]
assert m["codes"] == "model.layers.0.mlp.down_proj.weight_packed", m
assert m["tensor_scale"] == "model.layers.0.mlp.down_proj.weight_global_scale", m
assert d["lm_head.weight"]["quant"] is None
assert not any(k.endswith(("weight_scale", "weight_packed", "global_scale")) for k in d), list(d)
PY

for fx in modelopt_nvfp4:NVFP4,\ modelopt ct_nvfp4:NVFP4,\ compressed-tensors \
          ct_mxfp4:MXFP4,\ compressed-tensors; do
    dir=${fx%%:*} what=${fx#*:}
    rm -f "$tmp/r.json"
    "$FP4DIAG" sqnr "$Q/$dir" -q -o "$tmp/r.json" 2>"$tmp/err"
    [ $? -eq 0 ] && [ -s "$tmp/r.json" ] \
        || fail "sqnr $dir without --all-weights: wanted exit 0, the quantized tensors' report"
    "$FP4DIAG" sqnr "$Q/$dir" --all-weights -o "$tmp/r.json" || fail "sqnr $dir exited $?"
    python3 - "$tmp/r.json" "$what" <<'PY' || fail "sqnr $dir report"
import json, sys
r = json.load(open(sys.argv[1]))
assert [t["name"] for t in r["tensors"]] == ["lm_head.weight"], [t["name"] for t in r["tensors"]]
sk = {s["name"]: s["reason"] for s in r["skipped"]}
want = "already quantized (%s): audit needs the source" % sys.argv[2]
for m in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.down_proj"):
    assert sk["model.layers.0.%s.weight" % m] == want, sk
assert not any("scale" in k or "packed" in k for k in sk), sk
assert r["errors"] == [] and r["verdict"]["configs"][0]["tensors"] == 1
PY
done

# the table: a heading for the quantized tensors, saying what measures them (rows:
# quantized_table.sh)
"$FP4DIAG" sqnr "$Q/modelopt_nvfp4" --all-weights -v -o "$tmp/r.json" 2>"$tmp/table" || fail "sqnr -v exited $?"
grep -q "^already quantized: 4 tensors by modelopt (not analysed, not pooled; the verdict covers the tensors in high precision only; 'fp4diag audit SOURCE $Q/modelopt_nvfp4' measures these" "$tmp/table" \
    || { cat "$tmp/table"; fail "table line for quantized tensors"; }
grep -q '^skipped 1 tensor (not analysed, not pooled): model.norm.weight \[rank 1\]' "$tmp/table" \
    || { cat "$tmp/table"; fail "skipped line"; }

"$FP4DIAG" sqnr "$Q/bad_partners" --all-weights -o "$tmp/b.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] || fail "bad_partners: exit $rc, expected 3"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "bad_partners: not one line"; }
python3 - "$tmp/b.json" <<'PY' || fail "bad_partners report"
import json, sys
r = json.load(open(sys.argv[1]))
e = {x["tensor"]: x["message"] for x in r["errors"]}
assert "weight_scale_2 missing" in e["model.layers.0.self_attn.q_proj.weight"], e
assert "weight_scale is 16x8, expected 16x4" in e["model.layers.0.self_attn.k_proj.weight"], e
assert "no packed u8 codes" in e["model.layers.0.mlp.up_proj.weight_scale"], e
assert [t["name"] for t in r["tensors"]] == ["lm_head.weight"]
PY
"$FP4DIAG" sqnr "$Q/bad_config" -o "$tmp/c.json" 2>/dev/null
[ $? -eq 3 ] || fail "bad_config: expected exit 3"
grep -q 'config.json declares compressed-tensors nvfp4-pack-quantized, the tensors are modelopt NVFP4' "$tmp/c.json" \
    || fail "bad_config: contradiction not named"
# an unquantized checkpoint: no change
"$FP4DIAG" sqnr "$Q/source" -o "$tmp/s.json" || fail "source exited $?"
grep -q 'already quantized' "$tmp/s.json" && fail "source: quantized?"
exit 0
