#!/bin/sh
# select_recipe.sh — the default selection is what 4-bit recipes quantize (SPEC §9 "Default
# selection", run/recipe.h): on testdata/select (Llama-style, scripts/make_select_testdata.py)
# the embedding and lm_head are left out, listed in the JSON `skipped` and in the table as
# "kept in high precision by recipe" with the rule that matched, and not pooled; --all-weights
# and an exact name bring them in; a checkpoint's own exclude list (hf_quant_config.json
# exclude_modules, config.json quantization_config.ignore with "re:") is honoured and named.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
M=testdata/select/model.safetensors
fail=0
py() { python3 - "$@"; }
run() { # OUT ARGS...: a JSON report in OUT, exit 0
    out=$1; shift
    "$FP4DIAG" sqnr "$@" -q -o "$out" 2>"$tmp/err" || { echo "sqnr $*: exit $?"; cat "$tmp/err"; fail=1; }
}
run "$tmp/d.json" "$M"
py "$tmp/d.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
names = [t["name"] for t in r["tensors"]]
names = sorted(set(names))
assert len(names) == 28, len(names)
assert not any("embed" in n or "lm_head" in n for n in names), names
sk = {s["name"]: s["reason"] for s in r["skipped"]}
assert sk["model.embed_tokens.weight"] == "kept in high precision by recipe: embedding (*embed*)", sk
assert sk["lm_head.weight"] == "kept in high precision by recipe: output head (*lm_head*)", sk
assert sk["model.norm.weight"] == "rank 1", sk
assert "all_weights" not in r["config"]
PY
# the table names them with their rule and the share of elements
"$FP4DIAG" sqnr "$M" -v -o "$tmp/t.json" 2>"$tmp/table" || fail=1
grep -q "^kept in high precision by recipe: 2 tensors, 9.1% of the elements (not analysed, not pooled): model.embed_tokens.weight \[embedding (\*embed\*)\], lm_head.weight \[output head (\*lm_head\*)\]; --all-weights analyses them$" "$tmp/table" \
    || { echo "table: no 'kept in high precision' line"; grep -i kept "$tmp/table"; fail=1; }
# --all-weights and an exact name bring them in
run "$tmp/a.json" "$M" --all-weights
run "$tmp/e.json" "$M" lm_head.weight
py "$tmp/a.json" "$tmp/e.json" <<'PY' || fail=1
import json, sys
a = json.load(open(sys.argv[1])); e = json.load(open(sys.argv[2]))
n = sorted(set(t["name"] for t in a["tensors"]))
assert len(n) == 30 and "lm_head.weight" in n and "model.embed_tokens.weight" in n, n
assert a["config"]["all_weights"] is True
assert not any(s["reason"].startswith("kept") for s in a["skipped"])
assert sorted(set(t["name"] for t in e["tensors"])) == ["lm_head.weight"]
PY
# a checkpoint's own exclude list: ModelOpt's hf_quant_config.json, then llm-compressor's
# config.json ignore with a "re:" pattern
mkdir -p "$tmp/mo" "$tmp/ct"
ln -s "$PWD/$M" "$tmp/mo/model.safetensors"
ln -s "$PWD/$M" "$tmp/ct/model.safetensors"
printf '{"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head", "model.layers.1.mlp.down_proj"]}}\n' >"$tmp/mo/hf_quant_config.json"
printf '{"quantization_config": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head", "re:.*layers\\\\.[01]\\\\.mlp\\\\.down_proj$", "re:model\\\\.layers\\\\.3\\\\.mlp"]}}\n' >"$tmp/ct/config.json"
run "$tmp/mo.json" "$tmp/mo/model.safetensors" --allow-external
run "$tmp/ct.json" "$tmp/ct/model.safetensors" --allow-external
py "$tmp/mo.json" "$tmp/ct.json" <<'PY' || fail=1
import json, sys
mo = json.load(open(sys.argv[1])); ct = json.load(open(sys.argv[2]))
sk = {s["name"]: s["reason"] for s in mo["skipped"]}
assert sk["model.layers.1.mlp.down_proj.weight"] == \
    "kept in high precision by hf_quant_config.json exclude_modules: model.layers.1.mlp.down_proj", sk
assert sk["lm_head.weight"] == "kept in high precision by hf_quant_config.json exclude_modules: lm_head", sk
assert sk["model.embed_tokens.weight"].startswith("kept in high precision by recipe"), sk
assert len(set(t["name"] for t in mo["tensors"])) == 27
sk = {s["name"]: s["reason"] for s in ct["skipped"]}
for n in (0, 1):
    assert sk[f"model.layers.{n}.mlp.down_proj.weight"] == \
        "kept in high precision by config.json ignore: re:.*layers\\.[01]\\.mlp\\.down_proj$", sk
assert "model.layers.2.mlp.down_proj.weight" in set(t["name"] for t in ct["tensors"])
# re.match: from the start of the module name, not to its end
for m in ("gate", "up", "down"):
    assert sk[f"model.layers.3.mlp.{m}_proj.weight"] == \
        "kept in high precision by config.json ignore: re:model\\.layers\\.3\\.mlp", sk
assert "model.layers.3.self_attn.q_proj.weight" in set(t["name"] for t in ct["tensors"])
PY
exit $fail
