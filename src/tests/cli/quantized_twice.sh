#!/bin/sh
# quantized_twice.sh — one logical tensor stored twice (SPEC §10) is one errors entry naming
# both spellings, in ls, sqnr and audit: never two entries analysed or audited, never one
# picked silently. The producer fixtures (testdata/quantized/producer/) with a second spelling
# added: gpt-oss' gate_up_proj as both <p>_blocks/_scales and <p>.blocks/.scales; ModelOpt's
# q_proj.weight + weight_scale_2 beside compressed-tensors' q_proj.weight_packed (the two share
# q_proj.weight_scale); a bf16 q_proj.weight beside compressed-tensors' q_proj.weight_packed.
# The other tensors are audited as without the second spelling; a pattern naming a member of
# either spelling selects the one entry.
. src/tests/cli/lib/producer.sh
need ct_nvfp4 gptoss_source
need_py json

python3 - "$P" "$tmp" <<'PY' || fail "making the variants"
import sys
from st_raw import read, write_export
P, T = sys.argv[1:3]
A = "model.layers.0.self_attn.q_proj."
E = "model.layers.0.mlp.experts.gate_up_proj"
t = read(f"{P}/gptoss_mxfp4/model.safetensors")
write_export(f"{T}/gptoss", {**t, E + ".blocks": t[E + "_blocks"], E + ".scales": t[E + "_scales"]}, f"{P}/gptoss_mxfp4")
t = read(f"{P}/ct_nvfp4/model.safetensors")
m = read(f"{P}/modelopt_nvfp4/model.safetensors")
write_export(f"{T}/ct_modelopt", {**t, A + "weight": m[A + "weight"], A + "weight_scale_2": m[A + "weight_scale_2"]}, f"{P}/ct_nvfp4")
s = read(f"{P}/source/model.safetensors")
write_export(f"{T}/ct_bf16", {**t, A + "weight": s[A + "weight"]}, f"{P}/ct_nvfp4")
PY

A=model.layers.0.self_attn.q_proj
E=model.layers.0.mlp.experts.gate_up_proj
n=0
# variant|fixture|source|the logical tensor|its members (space separated)|what the problem
# says of the spellings (';' separated)|a member pattern
while IFS='|' read -r var fx src name members spell pat; do
    n=$((n + 1))
    V=$tmp/$var
    "$FP4DIAG" audit "$P/$src" "$P/$fx" -q -o "$tmp/ref.json" 2>"$tmp/err" || fail "audit $fx: exit $?"
    "$FP4DIAG" ls "$V" --json >"$tmp/ls.json" 2>"$tmp/err" || fail "ls $var: exit $?"
    "$FP4DIAG" sqnr "$V" -q -o "$tmp/sqnr.json" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 3 ] || fail "sqnr $var: exit $rc, want 3"
    "$FP4DIAG" audit "$P/$src" "$V" -q -o "$tmp/audit.json" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 3 ] || fail "audit $var: exit $rc, want 3"
    "$FP4DIAG" audit "$P/$src" "$V" "$pat" -q -o "$tmp/one.json" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 3 ] || fail "audit $var $pat: exit $rc, want 3"
    python3 - "$tmp" "$name" "$spell" "$var" "$members" <<'PY' || fail "$var"
import json, sys
T, name, spell, var = sys.argv[1], sys.argv[2], sys.argv[3].split(";"), sys.argv[4]
members = sys.argv[5].split()
def named(msg):  # both spellings, named after the module, in the first 160 bytes
    assert "stored twice: " in msg, (var, msg)
    for s in spell:
        assert s in msg[msg.index("stored twice: "):][:160], (var, s, msg)
ls = json.load(open(T + "/ls.json"))["datasets"]
rows = [d for d in ls if d["name"] == name]
assert len(rows) == 1 and rows[0]["quant"], (var, "ls", rows)
named(rows[0]["problem"])
for s in members:  # every member folded into the one row
    assert s == name or not any(d["name"] == s for d in ls), (var, "ls", s)
r = json.load(open(T + "/sqnr.json"))
e = [x for x in r["errors"] if x["tensor"] == name]
assert len(r["errors"]) == 1 and len(e) == 1, (var, "sqnr", r["errors"])
named(e[0]["message"])
assert not any(t["name"] == name for t in r["tensors"]), (var, "sqnr tensors")
assert not any(s["name"] in [name] + members for s in r["skipped"]), (var, "sqnr skipped")
ref = {t["name"]: t for t in json.load(open(T + "/ref.json"))["tensors"]}
a = json.load(open(T + "/audit.json"))
assert [x["tensor"] for x in a["errors"]] == [name], (var, "audit", a["errors"])
named(a["errors"][0]["message"])
got = {t["name"]: t for t in a["tensors"]}
assert sorted(got) == sorted(k for k in ref if k != name), (var, "audit", sorted(got))
for k, t in got.items():  # the others as without the second spelling
    assert t["export"] == ref[k]["export"], (var, k)
one = json.load(open(T + "/one.json"))
assert one["tensors"] == [] and [x["tensor"] for x in one["errors"]] == [name], (var, "one", one)
PY
done <<EOF2
gptoss|gptoss_mxfp4|gptoss_source|$E|${E}_blocks ${E}_scales $E.blocks $E.scales|gate_up_proj.blocks (gpt-oss MXFP4) and gate_up_proj_blocks (gpt-oss MXFP4)|$E.scales
ct_modelopt|ct_nvfp4|source|$A.weight|$A.weight $A.weight_scale_2 $A.weight_packed $A.weight_global_scale|weight (modelopt NVFP4) and weight_packed (compressed-tensors NVFP4)|$A.weight_scale_2
ct_bf16|ct_nvfp4|source|$A.weight|$A.weight_packed $A.weight|weight_packed (compressed-tensors NVFP4) and the bf16 tensor weight are|$A.weight_global_scale
EOF2
[ "$n" -eq 3 ] || fail "ran $n cases, want 3"
exit 0
