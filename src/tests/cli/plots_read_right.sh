#!/bin/sh
# plots_read_right.sh — plots that read right with Hugging Face names (issue 29): one tensor
# order in every plot (the model's: blocks by numeric index, q/k/v, o, gate/up, down; experts by
# number), long names elided in the middle and kept distinct, configurations with identical
# numbers drawn once and named together ("e1m2 = int4", decided by the numbers, not the names),
# plot_verdict's pooled bars from 0 dB. The pure functions of fp4report.py, then the plots on a
# Llama-named safetensors checkpoint of 75 tensors.
. src/tests/cli/lib/plots.sh
plots_svg_text
PYTHONPATH=scripts python3 - <<'PY' || fail "fp4report pure functions"
import fp4report as fr
p = "model.layers.%d.%s.weight"
mods = ["mlp.down_proj", "mlp.up_proj", "mlp.gate_proj", "self_attn.v_proj", "self_attn.o_proj",
        "self_attn.k_proj", "self_attn.q_proj"]
names = [p % (i, m) for i in (10, 2) for m in mods] + ["lm_head.weight", "model.embed_tokens.weight"]
want = ["model.embed_tokens.weight"] + [p % (i, m) for i in (2, 10) for m in
        ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
         "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")] + ["lm_head.weight"]
assert fr.model_order(names) == want, fr.model_order(names)
assert fr.model_order(list(reversed(names))) == want  # independent of the report's order
assert fr.depth_order(names) == want
e = [p % (0, "block_sparse_moe.experts.%d.%s" % (x, w)) for x in (10, 2) for w in ("w2", "w3", "w1")]
assert fr.model_order(e) == [p % (0, "block_sparse_moe.experts.%d.%s" % (x, w))
                             for x in (2, 10) for w in ("w1", "w3")] + \
    [p % (0, "block_sparse_moe.experts.%d.w2" % x) for x in (2, 10)], fr.model_order(e)
# GGUF (llama.cpp) names: blk.N, attn_q/k/v, attn_output, ffn_gate/up, ffn_down
gg = ["blk.1.ffn_down.weight", "blk.1.attn_v.weight", "blk.0.ffn_up.weight", "blk.1.attn_output.weight",
      "blk.1.attn_q.weight", "blk.1.ffn_gate.weight", "blk.1.attn_k.weight", "blk.10.attn_q.weight"]
assert fr.model_order(gg) == ["blk.0.ffn_up.weight", "blk.1.attn_q.weight", "blk.1.attn_k.weight",
    "blk.1.attn_v.weight", "blk.1.attn_output.weight", "blk.1.ffn_gate.weight",
    "blk.1.ffn_down.weight", "blk.10.attn_q.weight"], fr.model_order(gg)
# T5: the block index, not the layer-in-block index
assert fr.block_index("encoder.block.7.layer.1.DenseReluDense.wo.weight") == 7
# elision: middle cut, both ends kept, length bounded, labels stay distinct
assert fr.elide("abcdefghij", 5) == "ab…ij" and fr.elide("abc", 5) == "abc"
long = ["model.layers.%d.block_sparse_moe.experts.%d.w1.weight" % (i, x) for i in range(3) for x in range(12)]
t = fr.tick_labels(long, 20)
assert len(set(t)) == len(long) and all(len(x) <= 20 and "…" in x for x in t), t
assert max(len(x) for x in fr.tick_labels(["a.%s.x" % ("m" * 80), "a.%s.y" % ("n" * 80)])) <= fr.TICK_CHARS
# identity by the numbers: the same values group whatever the names; NaN matches NaN only
g = fr.identical_groups({("e1m2", 1): {"a": 1.0, "b": float("nan")}, ("e2m1", 1): {"a": 1.0, "b": 2.0},
                         ("int4", 1): {"b": float("nan"), "a": 1.0}, ("x", 2): [1.0, 2.0], ("y", 2): [1.0, 2.0]})
assert g == [[("e1m2", 1), ("int4", 1)], [("e2m1", 1)], [("x", 2), ("y", 2)]], g
assert fr.identical_groups({"a": {"t": 1.0}, "b": {"u": 1.0}}) == [["a"], ["b"]]  # other tensors
lab = lambda k, f: f"{f} {k[1]}"
assert fr.group_label([("e1m2", "fp32"), ("int4", "fp32")], lab) == "e1m2 = int4 fp32"
assert fr.group_label([("e1m2", "fp32"), ("int4", "nvfp4")], lab) == "e1m2 fp32 = int4 nvfp4"
assert [fr.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 103)] == \
    ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "103rd"]
PY
# a Llama-named checkpoint of 75 tensors, written in alphabetical order (as HF writers do)
python3 - "$T/l75.safetensors" <<'PY' || fail "checkpoint"
import json, struct, sys
import numpy as np
names = ["model.embed_tokens.weight"]
for i in range(8):
    names += [f"model.layers.{i}.{m}.weight" for m in ("input_layernorm", "self_attn.q_proj",
              "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
              "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")]
names = sorted(names[:73] + ["model.norm.weight", "lm_head.weight"])
rng = np.random.default_rng(1)
hdr, blob, off = {}, b"", 0
for n in names:
    b = rng.standard_normal((8, 32)).astype("<f4").tobytes()
    hdr[n] = {"dtype": "F32", "shape": [8, 32], "data_offsets": [off, off + len(b)]}
    blob += b
    off += len(b)
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + blob)
PY
"$FP4DIAG" sqnr "$T/l75.safetensors" --format all --rht both -q -o "$T/r.json" || fail "sqnr"
for s in sqnr rht depth verdict; do
    python3 scripts/plot_$s.py "$T/r.json" --out "$T/$s.svg" 2>"$T/err" || { cat "$T/err"; fail "plot_$s"; }
done
for sw in sqnr:2 rht:1 depth:2; do  # sqnr, depth: with and without RHT; rht: their difference
    s=${sw%:*}
    n=$(grep -c 'e1m2 = int4' "$T/$s.svg")
    [ "$n" -eq "${sw#*:}" ] || fail "plot_$s: 'e1m2 = int4' $n times in the legend, want ${sw#*:}"
    grep -q '>int4' "$T/$s.svg" && fail "plot_$s: int4 drawn on its own beside e1m2"
done
# plot_buckets: e1m2 and int4 one panel "e1m2 = int4" (int4's values at the same codes said on
# the axis), not two identical panels; plot_scales: one grouping for both panels, decided by all
# the numbers, so e1m2 = int4 with and without RHT and nothing else merged (e2m1 and e1m2 under
# RHT both flush nothing, yet are different configurations)
"$FP4DIAG" sqnr "$T/l75.safetensors" --scale nvfp4 --rht both -q -o "$T/nv.json" || fail "sqnr nvfp4"
python3 scripts/plot_buckets.py "$T/r.json" --out "$T/buckets.svg" 2>"$T/err" || { cat "$T/err"; fail "plot_buckets"; }
python3 scripts/plot_scales.py "$T/nv.json" --out "$T/scales.svg" 2>"$T/err" || { cat "$T/err"; fail "plot_scales"; }
[ "$(grep -c '>e1m2 = int4 fp32/16 rtne<' "$T/buckets.svg")" -eq 1 ] || fail "plot_buckets: no one e1m2 = int4 panel"
grep -q 'int4 ×2 at the same codes' "$T/buckets.svg" || fail "plot_buckets: int4's values not said"
grep -q '>int4 fp32' "$T/buckets.svg" && fail "plot_buckets: an int4 panel beside e1m2's"
[ "$(grep -o 'e1m2 = int4[^<]*<' "$T/scales.svg" | wc -l)" -eq 4 ] || fail "plot_scales: e1m2 = int4 not once per RHT side and panel"
grep -q '>e1m2 = int4, RHT16: ' "$T/scales.svg" || fail "plot_scales: no 'e1m2 = int4, RHT16' histogram"
grep -q 'e2m1 = ' "$T/scales.svg" && fail "plot_scales: e2m1 merged with another grid"
grep -q 'bars from 0' "$T/verdict.svg" || fail "plot_verdict: the axis does not say the bars start at 0"
[ "$(grep -c 'e1m2 = int4 fp32/16' "$T/verdict.svg")" -eq 2 ] || fail "plot_verdict: e1m2 and int4 not one bar"
# the sqnr and rht plots label the tensors in the same order: the model's
PYTHONPATH=scripts python3 - "$T/sqnr.svg" "$T/rht.svg" <<'PY' || fail "tensor order differs"
import re, sys
def ticks(f):
    return [x for x in re.findall(r">(\d+\.[a-z_.]+)<", open(f).read())]
a, b = ticks(sys.argv[1]), ticks(sys.argv[2])
assert a and a == b, (a[:8], b[:8])
assert a[:7] == ["0.self_attn.q_proj", "0.self_attn.k_proj", "0.self_attn.v_proj",
                 "0.self_attn.o_proj", "0.mlp.gate_proj", "0.mlp.up_proj", "0.mlp.down_proj"], a[:7]
PY
echo ok
