#!/bin/sh
# plots_depth_model.sh — plot_depth.py follows the model (SPEC §9, issue 28): blocks in numeric
# order (2 before 10), in a block q/k/v one stage, then o, gate/up one stage, then down; the
# factor of a parallel stage is the mean of its members' 1 - delta (never their product); what
# recipes keep in high precision is left out even from an --all-weights report. The Python copy
# of the recipe table (fp4report.RECIPE_RULES) agrees with src/run/recipe.c on a checkpoint of
# Llama, Mixtral, Qwen-MoE, GPT-2, gpt-oss and T5 names. Skips without numpy or matplotlib.
set -u
python3 -c 'import numpy, matplotlib' 2>/dev/null || { echo "numpy or matplotlib missing"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# 1. the table: fp4diag's kept set (default vs --all-weights) against recipe_keeps
python3 - "$tmp/names.safetensors" <<'PY' || exit 1
import json, struct, sys
import numpy as np
names = """model.embed_tokens.weight lm_head.weight model.layers.0.self_attn.q_proj.weight
model.layers.0.self_attn.q_proj.bias model.layers.3.block_sparse_moe.gate.weight
model.layers.3.block_sparse_moe.experts.7.w1.weight model.layers.0.mlp.gate.weight
model.layers.0.mlp.shared_expert_gate.weight model.layers.0.mlp.experts.12.gate_proj.weight
model.layers.0.mlp.shared_expert.down_proj.weight model.layers.0.mlp.router.weight
model.layers.0.mlp.experts.gate_up_proj model.layers.0.mlp.experts.gate_up_proj_bias
wte.weight wpe.weight h.0.attn.c_attn.weight h.0.mlp.c_fc.weight h.0.attn.bias h.0.ln_1.weight
shared.weight encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight
encoder.block.0.layer.0.SelfAttention.q.weight encoder.block.0.layer.1.DenseReluDense.wo.weight
encoder.final_layer_norm.weight proj_out.weight gpt_neox.embed_out.weight unembedding.weight
block.0.mlp.gate.weight block.0.attn.qkv.weight bert.encoder.layer.0.attention.output.LayerNorm.weight
backbone.layers.0.mixer.conv1d.weight output.weight model.output_layer.weight""".split()
hdr, blob, off = {}, b"", 0
for n in names:
    b = np.linspace(-1, 1, 32, dtype="<f4").tobytes()
    hdr[n] = {"dtype": "F32", "shape": [2, 16], "data_offsets": [off, off + len(b)]}
    blob += b
    off += len(b)
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + blob)
PY
"$FP4DIAG" sqnr "$tmp/names.safetensors" -q -o "$tmp/n.json" || { echo "sqnr names: exit $?"; fail=1; }
PYTHONPATH=scripts python3 - "$tmp/n.json" <<'PY' || fail=1
import json, sys
import fp4report as fr
r = json.load(open(sys.argv[1]))
c_kept = {s["name"]: s["reason"].split(": ", 1)[1].split(" (")[0] for s in r["skipped"]
          if s["reason"].startswith("kept in high precision by recipe")}
analysed = {t["name"] for t in r["tensors"]}
for n in analysed:
    assert fr.recipe_keeps(n) is None, (n, fr.recipe_keeps(n))
for n, kind in c_kept.items():
    assert fr.recipe_keeps(n) == kind, (n, kind, fr.recipe_keeps(n))
assert len(c_kept) >= 20 and len(analysed) >= 10, (len(c_kept), len(analysed))
PY
# 2. model order and parallel stages
PYTHONPATH=scripts python3 - <<'PY' || fail=1
import fp4report as fr
p = "model.layers.%d.%s.weight"
names = [p % (i, m) for i in (10, 2) for m in ("mlp.down_proj", "mlp.up_proj", "mlp.gate_proj",
         "self_attn.v_proj", "self_attn.o_proj", "self_attn.k_proj", "self_attn.q_proj",
         "input_layernorm")] + ["model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"]
st = fr.model_stages(names)
assert [l for l, _ in st] == ["2 qkv", "2 o", "2 gate|up", "2 down",
                              "10 qkv", "10 o", "10 gate|up", "10 down"], st
assert sorted(st[0][1]) == sorted(p % (2, "self_attn.%s_proj" % x) for x in "qkv")
g = ["h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight", "h.0.mlp.c_fc.weight",
     "h.0.mlp.c_proj.weight", "wte.weight", "h.0.ln_1.weight"]
assert [l for l, _ in fr.model_stages(g)] == ["0 qkv", "0 o", "0 gate|up", "0 down"]
PY
# 3. the plot: an --all-weights report; the embedding and lm_head are not stages, q/k/v not
# multiplied: the e2m1 end value is the product of per-stage means
"$FP4DIAG" sqnr testdata/select/model.safetensors --all-weights --format e2m1 -q -o "$tmp/a.json" || fail=1
python3 scripts/plot_depth.py "$tmp/a.json" --out "$tmp/d.svg" 2>/dev/null || { echo "plot_depth failed"; fail=1; }
PYTHONPATH=scripts python3 - "$tmp/a.json" "$tmp/d.svg" <<'PY' || fail=1
import json, sys
import fp4report as fr
r = json.load(open(sys.argv[1]))
d = {t["name"]: t["results"][0]["delta"] for t in r["tensors"]}
assert "lm_head.weight" in d and "model.embed_tokens.weight" in d
st = fr.model_stages(list(d))
assert len(st) == 16 and not any("embed" in l or "lm_head" in l for l, _ in st), st
prod = 1.0
for _, m in st:
    prod *= sum(1 - d[x] for x in m) / len(m)
svg = open(sys.argv[2]).read()
assert "Π(1−δ) = %.4f" % prod in svg, ("%.4f" % prod, [l for l in svg.split("\n") if "Π(1" in l][:3])
PY
exit $fail
