#!/bin/sh
# quantized_select_members.sh — a selection pattern that matches a member of a quantized tensor
# (weight_packed, weight_scale, weight_scale_2, weight_global_scale, input_scale, gpt-oss'
# _blocks / _scales) selects its logical tensor, the same in every command (SPEC §10): ls
# lists it, sqnr reports it (skipped, with its codes and scales summary) and audit audits it,
# where audit used to say "no quantized tensor matches". A pattern ending in a separator
# ("model.layers.0.mlp.") selects as without it, in audit as in ls and sqnr.
set -u
P=testdata/quantized/producer
[ -d "$P/ct_nvfp4" ] && [ -d "$P/gptoss_source" ] || { echo "no fixtures"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; head -5 "$tmp/err" 2>/dev/null; exit 1; }
A=model.layers.0.self_attn
M=model.layers.0.mlp
n=0
# fixture|source|pattern|the logical tensors it selects (space separated)
while IFS='|' read -r fx src pat want; do
    n=$((n + 1))
    "$FP4DIAG" ls "$P/$fx" "$pat" --json >"$tmp/ls.json" 2>"$tmp/err" || fail "ls $fx $pat: exit $?"
    "$FP4DIAG" sqnr "$P/$fx" "$pat" -q -o "$tmp/sqnr.json" 2>"$tmp/err" || fail "sqnr $fx $pat: exit $?"
    "$FP4DIAG" audit "$P/$src" "$P/$fx" "$pat" -q -o "$tmp/audit.json" 2>"$tmp/err" \
        || fail "audit $fx $pat: exit $?"
    python3 - "$tmp" "$want" "$fx $pat" <<'PY' || fail "$fx $pat"
import json, sys
T, want, what = sys.argv[1], sorted(sys.argv[2].split()), sys.argv[3]
ls = json.load(open(T + "/ls.json"))["datasets"]
assert sorted(d["name"] for d in ls) == want, (what, "ls", [d["name"] for d in ls])
assert all(d["quant"] for d in ls), (what, "ls", ls)
r = json.load(open(T + "/sqnr.json"))
assert r["tensors"] == [] and r["errors"] == [], (what, "sqnr", r["tensors"], r["errors"])
assert sorted(s["name"] for s in r["skipped"] if "quant" in s) == want, (what, "sqnr", r["skipped"])
assert len(r["skipped"]) == len(want), (what, "sqnr", r["skipped"])
a = json.load(open(T + "/audit.json"))
assert a["errors"] == [], (what, "audit", a["errors"])
assert sorted(t["name"] for t in a["tensors"]) == want, (what, "audit", [t["name"] for t in a["tensors"]])
PY
done <<EOF2
modelopt_nvfp4|source|$A.q_proj.weight_scale*|$A.q_proj.weight
modelopt_nvfp4|source|$A.k_proj.weight_scale_2|$A.k_proj.weight
modelopt_nvfp4|source|$M.down_proj.input_scale|$M.down_proj.weight
modelopt_nvfp4|source|$A.*.weight_scale|$A.q_proj.weight $A.k_proj.weight $A.v_proj.weight $A.o_proj.weight
ct_nvfp4|source|$A.q_proj.weight_packed|$A.q_proj.weight
ct_nvfp4|source|$A.k_proj.weight_global_scale|$A.k_proj.weight
ct_nvfp4|source|$M.*.weight_scale|$M.down_proj.weight $M.gate_proj.weight $M.up_proj.weight
ct_nvfp4|source|$A.v_proj.weight|$A.v_proj.weight
ct_nvfp4|source|$M.|$M.down_proj.weight $M.gate_proj.weight $M.up_proj.weight
ct_mxfp4|source|$A.o_proj.weight_scale|$A.o_proj.weight
gptoss_mxfp4|gptoss_source|$M.experts.gate_up_proj_scales|$M.experts.gate_up_proj
gptoss_mxfp4|gptoss_source|$M.experts.*_blocks|$M.experts.gate_up_proj $M.experts.down_proj
EOF2
[ "$n" -eq 12 ] || fail "ran $n cases, want 12"
exit 0
