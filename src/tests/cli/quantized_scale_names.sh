#!/bin/sh
# quantized_scale_names.sh — the scale tensors beside a packed module (SPEC §10): the producer
# fixtures (testdata/quantized/producer/, ModelOpt and compressed-tensors) with tensors added
# under the names producers write. KV-cache and activation scales (k_scale, v_scale,
# output_scale, input_scale) are recognised and change nothing; a pre_quant_scale (AWQ), the
# other producer's per-tensor weight scale and any other scale are refused by name: an errors
# entry for that module alone, never a silent decode without it.
. src/tests/cli/lib/producer.sh
need expected.json
need_py json

python3 - "$P" "$tmp" <<'PY' || fail "making the variants"
import struct, sys
from st_raw import read, write_export
P, T = sys.argv[1:3]
one = ["F32", [], struct.pack("<f", 0.5)]
A = "model.layers.0.self_attn."
L = "model.layers.0.mlp."
for fx, benign, bad in (
        ("modelopt_nvfp4", {A + "k_proj.k_scale": one, A + "v_proj.v_scale": one, A + "o_proj.output_scale": one},
         {A + "q_proj.pre_quant_scale": ["F32", [64], b"\0\0\x80\x3f" * 64],
          A + "o_proj.weight_global_scale": one, L + "gate_proj.smooth_scale": one}),
        ("ct_nvfp4", {A + "k_proj.k_scale": one, A + "q_proj.input_scale": one},
         {A + "v_proj.weight_scale_2": one})):
    t = read(f"{P}/{fx}/model.safetensors")
    write_export(f"{T}/ok_{fx}", {**t, **benign}, f"{P}/{fx}")
    write_export(f"{T}/bad_{fx}", {**t, **benign, **bad}, f"{P}/{fx}")
PY

for fx in modelopt_nvfp4 ct_nvfp4; do
    "$FP4DIAG" audit "$P/source" "$P/$fx" -o "$tmp/ref_$fx.json" -q || fail "audit $fx exited $?"
    "$FP4DIAG" audit "$P/source" "$tmp/ok_$fx" -o "$tmp/ok_$fx.json" -q || fail "audit ok_$fx exited $?"
    "$FP4DIAG" audit "$P/source" "$tmp/bad_$fx" -o "$tmp/bad_$fx.json" -q 2>/dev/null; rc=$?
    [ "$rc" -eq 3 ] || fail "audit bad_$fx: exit $rc"
done
python3 - "$tmp" <<'PY' || fail "scale names"
import json, sys
T = sys.argv[1]
A = "model.layers.0.self_attn."
L = "model.layers.0.mlp."
want = {"modelopt_nvfp4": {
            A + "q_proj.weight": A + "q_proj.pre_quant_scale: the codes quantize the weight times this per-input scale (AWQ / SmoothQuant)",
            A + "o_proj.weight": A + "o_proj.weight_global_scale: a per-tensor scale as compressed-tensors names it, beside modelopt tensors",
            L + "gate_proj.weight": L + "gate_proj.smooth_scale: a scale no producer fp4diag reads writes beside " + L + "gate_proj.weight"},
        "ct_nvfp4": {
            A + "v_proj.weight": A + "v_proj.weight_scale_2: a per-tensor scale as modelopt names it, beside compressed-tensors tensors"}}
for fx, errs in want.items():
    ref = {t["name"]: t for t in json.load(open(f"{T}/ref_{fx}.json"))["tensors"]}
    ok = json.load(open(f"{T}/ok_{fx}.json"))
    assert ok["errors"] == [], ok["errors"]
    for t in ok["tensors"]:
        assert t["export"] == ref[t["name"]]["export"] and t["scale_match_frac"] == ref[t["name"]]["scale_match_frac"], t["name"]
    assert len(ok["tensors"]) == len(ref), len(ok["tensors"])
    bad = json.load(open(f"{T}/bad_{fx}.json"))
    e = {x["tensor"]: x["message"] for x in bad["errors"]}
    assert sorted(e) == sorted(errs), (fx, e)
    for k, m in errs.items():
        assert m in e[k], (k, e[k], m)
    assert len(bad["tensors"]) == len(ref) - len(errs), [t["name"] for t in bad["tensors"]]
PY
exit 0
