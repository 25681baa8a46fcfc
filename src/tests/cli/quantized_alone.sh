#!/bin/sh
# quantized_alone.sh — a checkpoint whose selected weights are all already quantized (SPEC §10,
# SPEC §9 "Default selection"): the quantized tensors are in the default selection, so
# `sqnr` (bias, buckets, rht) on a ModelOpt, compressed-tensors, gpt-oss or GGUF export alone
# writes a report of them and exits 0 (not 3, "nothing to analyse"): no tensor analysed, each
# quantized tensor a skipped entry with its codes/scales summary (quant), the verdict empty
# (no config pooled, no winner), the report valid under schema/report.schema.json, and the
# table says there is no verdict instead of printing empty pooled rows. --exclude removes a
# quantized tensor like any other (its reason "excluded by --exclude"); excluding every one
# leaves nothing: exit 3 as before. A selection of high-precision tensors only is unchanged.
set -u
Q=testdata/quantized
[ -d "$Q/modelopt_nvfp4" ] || { echo "no fixtures"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null || { echo "skip: no python3 jsonschema"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null | head -20; exit 1; }

# input, selection, the quantized names expected (space separated), "FORMAT, producer"
n=0
while IFS='|' read -r input sel names what; do
    for cmd in sqnr bias buckets rht; do
        n=$((n + 1))
        rm -f "$tmp/r.json"
        # shellcheck disable=SC2086
        "$FP4DIAG" $cmd "$input" $sel -v -o "$tmp/r.json" 2>"$tmp/err"
        rc=$?
        [ "$rc" -eq 0 ] || fail "$cmd $input $sel: exit $rc, expected 0"
        grep -q "^already quantized: .*; no tensor in high precision selected: no verdict; 'fp4diag audit SOURCE " "$tmp/err" \
            || fail "$cmd $input: table line"
        grep -q '(pooled)' "$tmp/err" && fail "$cmd $input: empty pooled rows in the table"
        python3 - "$tmp/r.json" "$names" "$what" <<'PY' || fail "$cmd $input report"
import json, sys, jsonschema
r = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator(json.load(open("schema/report.schema.json"))).validate(r)
assert r["tensors"] == [] and r["errors"] == [], (r["tensors"], r["errors"])
q = {s["name"]: s for s in r["skipped"] if "quant" in s}
assert sorted(q) == sorted(sys.argv[2].split()), sorted(q)
fmt, prod = sys.argv[3].split(", ")
for s in q.values():
    assert s["reason"] == "already quantized (%s): audit needs the source" % sys.argv[3], s
    assert (s["quant"]["format"], s["quant"]["producer"]) == (fmt.lower(), prod), s
    n = 1
    for d in s["shape"]:
        n *= d
    assert sum(s["quant"]["histogram"]) == n, s
assert r["verdict"]["winner"] is None and r["verdict"]["ranking"] == [], r["verdict"]
assert all(c["tensors"] == 0 for c in r["verdict"]["configs"]), r["verdict"]["configs"]
PY
    done
done <<EOF2
$Q/modelopt_nvfp4||model.layers.0.self_attn.q_proj.weight model.layers.0.self_attn.k_proj.weight model.layers.0.self_attn.v_proj.weight model.layers.0.mlp.down_proj.weight|NVFP4, modelopt
$Q/ct_nvfp4||model.layers.0.self_attn.q_proj.weight model.layers.0.self_attn.k_proj.weight model.layers.0.self_attn.v_proj.weight model.layers.0.mlp.down_proj.weight|NVFP4, compressed-tensors
$Q/ct_mxfp4||model.layers.0.self_attn.q_proj.weight model.layers.0.self_attn.k_proj.weight model.layers.0.self_attn.v_proj.weight model.layers.0.mlp.down_proj.weight|MXFP4, compressed-tensors
$Q/gptoss_mxfp4||model.layers.0.mlp.experts.gate_up_proj|MXFP4, gpt-oss
testdata/gguf/model.gguf|blk.0.ffn_down.weight special.mxfp4|blk.0.ffn_down.weight special.mxfp4|MXFP4, gguf
EOF2
[ "$n" -eq 20 ] || fail "ran $n cases, expected 20"

# the producers' own exports (ModelOpt, llm-compressor): every Linear quantized, exit 0
for dir in modelopt_nvfp4 ct_nvfp4 ct_mxfp4; do
    "$FP4DIAG" sqnr "$Q/producer/$dir" -q -o "$tmp/p.json" 2>"$tmp/err" || fail "producer/$dir: exit $?"
    python3 - "$tmp/p.json" <<'PY' || fail "producer/$dir report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["tensors"] == [] and sum("quant" in s for s in r["skipped"]) == 7, r["skipped"]
PY
done

# --exclude leaves a quantized tensor out like any other
"$FP4DIAG" sqnr "$Q/modelopt_nvfp4" --exclude model.layers.0.self_attn.q_proj.weight -q \
    -o "$tmp/x.json" 2>"$tmp/err" || fail "--exclude q_proj: exit $?"
python3 - "$tmp/x.json" <<'PY' || fail "--exclude q_proj report"
import json, sys
sk = {s["name"]: s for s in json.load(open(sys.argv[1]))["skipped"]}
x = sk["model.layers.0.self_attn.q_proj.weight"]
assert x["reason"] == "excluded by --exclude model.layers.0.self_attn.q_proj.weight", x
assert "quant" not in x, x
assert "quant" in sk["model.layers.0.self_attn.k_proj.weight"], sk
PY
# ... and excluding all of them leaves nothing to analyse (exit 3, no report)
rm -f "$tmp/y.json"
"$FP4DIAG" sqnr "$Q/modelopt_nvfp4" model.layers.0.self_attn.q_proj.weight \
    --exclude model.layers.0.self_attn.q_proj.weight -q -o "$tmp/y.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] && [ ! -e "$tmp/y.json" ] && grep -q "no tensor to analyse: --exclude left out all 1 selected" "$tmp/err" \
    || fail "excluding the one quantized tensor selected: exit $rc"
# a selection holding no quantized tensor and nothing to analyse: exit 3 as before
rm -f "$tmp/z.json"
"$FP4DIAG" sqnr "$Q/modelopt_nvfp4" 'model.norm*' -q -o "$tmp/z.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] && [ ! -e "$tmp/z.json" ] && grep -q "no tensor to analyse" "$tmp/err" \
    || fail "model.norm*: exit $rc, expected 3"
exit 0
