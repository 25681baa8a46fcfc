#!/bin/sh
# audit_gptoss_original.sh — gpt-oss' own checkpoint naming (openai/gpt-oss
# gpt_oss/torch/weights.py: block.N.mlp.mlp1_weight.blocks / .scales, mlp2_weight.*) read as
# one logical tensor each (block.N.mlp.mlp1_weight [E, 2I, H]) and audited against a source in
# either naming (SPEC §10.1): the producer fixture's transformers-named export
# (testdata/quantized/producer/gptoss_mxfp4) renamed byte for byte, and its bf16 source renamed
# and untransposed, give the same numbers, to the last bit, as the transformers-named pair, and
# those equal the fp64 values of transformers' own decode (expected.json). A tensor neither name
# finds in the source is an errors entry naming both; scales without blocks are refused by name.
. src/tests/cli/lib/producer.sh
need expected.json
need_py numpy

python3 - "$P" "$tmp" <<'PY' || fail "making the gpt-oss-named variants"
import sys
import numpy as np
from st_raw import read, write
P, T = sys.argv[1:3]
HF = "model.layers.0.mlp.experts."
ren = {HF + "gate_up_proj": "block.0.mlp.mlp1_weight", HF + "down_proj": "block.0.mlp.mlp2_weight"}
q = read(P + "/gptoss_mxfp4/model.safetensors")
o = {}
for k, v in q.items():
    for a, b in ren.items():
        if k in (a + "_blocks", a + "_scales"):
            k = b + "." + k[len(a) + 1:]
    o[k] = v
assert "block.0.mlp.mlp1_weight.blocks" in o and "block.0.mlp.mlp2_weight.scales" in o, sorted(o)
write(T + "/orig_q/model.safetensors", o)
# scales without their blocks
write(T + "/orphan/model.safetensors", {k: v for k, v in o.items() if k != "block.0.mlp.mlp2_weight.blocks"})
s = read(P + "/gptoss_source/model.safetensors")
so = {}
for k, (d, sh, raw) in s.items():
    if k in ren:  # transformers' [E, K, R] to gpt-oss' own [E, R, K]
        a = np.frombuffer(raw, np.uint16).reshape(sh).transpose(0, 2, 1).copy()
        k, sh, raw = ren[k], list(a.shape), a.tobytes()
    so[k] = (d, sh, raw)
write(T + "/orig_src/model.safetensors", so)
write(T + "/nosrc/model.safetensors", {k: v for k, v in so.items() if k != "block.0.mlp.mlp2_weight"})
PY

# ls: one logical tensor per expert weight, named as gpt-oss names it
"$FP4DIAG" ls "$tmp/orig_q" >"$tmp/ls" 2>/dev/null || fail "ls exited $?"
grep -q 'block\.0\.mlp\.mlp1_weight .*mxfp4' "$tmp/ls" || { cat "$tmp/ls"; fail "ls: mlp1_weight"; }
grep -q 'mlp1_weight\.blocks\|mlp1_weight\.scales' "$tmp/ls" && { cat "$tmp/ls"; fail "ls: members listed"; }

"$FP4DIAG" audit "$P/gptoss_source" "$P/gptoss_mxfp4" -o "$tmp/hf.json" -q || fail "audit hf/hf exited $?"
"$FP4DIAG" audit "$P/gptoss_source" "$tmp/orig_q" -o "$tmp/hq.json" -q || fail "audit hf/orig exited $?"
"$FP4DIAG" audit "$tmp/orig_src" "$tmp/orig_q" -o "$tmp/oo.json" -q || fail "audit orig/orig exited $?"
"$FP4DIAG" audit "$tmp/orig_src" "$P/gptoss_mxfp4" -o "$tmp/oh.json" -q || fail "audit orig/hf exited $?"
python3 - "$tmp" "$P/expected.json" <<'PY' || fail "audit numbers"
import json, sys
T = sys.argv[1]
want = json.load(open(sys.argv[2]))["fixtures"]["gptoss_mxfp4"]["tensors"]
HF = "model.layers.0.mlp.experts."
ren = {HF + "gate_up_proj": "block.0.mlp.mlp1_weight", HF + "down_proj": "block.0.mlp.mlp2_weight"}
def load(n):
    r = json.load(open(f"{T}/{n}.json"))
    assert r["errors"] == [], (n, r["errors"])
    # a source tensor paired under its other name is not "in SOURCE only"
    assert not [k for k in r["skipped"] if k["reason"].startswith("in SOURCE only")], (n, r["skipped"])
    return r, {t["name"]: t for t in r["tensors"]}
rh, hf = load("hf")
for n, orig_q, note, transposed in (("hq", True, "transformers", True), ("oo", True, None, False),
                                    ("oh", False, "gpt-oss", False)):
    r, got = load(n)
    assert len(got) == 2, (n, sorted(got))
    for h, o in ren.items():
        t = got[o if orig_q else h]
        assert t["quant"]["producer"] == "gpt-oss" and t["quant"]["format"] == "mxfp4", t["quant"]
        lay = t["quant"]["layout"]
        assert (f"source as {note} names it" in lay) if note else ("names it" not in lay), (n, lay)
        assert lay.endswith(", source transposed") == transposed, (n, lay)
        for k in ("export", "requant", "scale_match_frac", "nonnearest_frac", "code_hist"):
            assert t.get(k) == hf[h].get(k), (n, o, k, t.get(k), hf[h].get(k))
        assert abs(t["export"]["sqnr_db"] - want[h]["sqnr_db"]) <= 1e-6, (n, t["export"], want[h])
        assert abs(t["export"]["alpha"] - want[h]["alpha"]) <= 1e-12, (n, t["export"], want[h])
        assert t["scale_match_frac"] == 1 and t["layout_check"]["as_declared"], (n, t)
    assert r["pooled"]["export"] == rh["pooled"]["export"], (n, r["pooled"], rh["pooled"])
PY

# a tensor neither name finds: an errors entry naming both, the other tensor still audited
"$FP4DIAG" audit "$tmp/nosrc" "$tmp/orig_q" -o "$tmp/ns.json" -q 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] && grep -q 'block.0.mlp.mlp2_weight: no such tensor in the source (nor model.layers.0.mlp.experts.down_proj)' "$tmp/e" \
    || { cat "$tmp/e"; fail "missing source tensor: exit $rc"; }
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [t["name"] for t in r["tensors"]] == ["block.0.mlp.mlp1_weight"], r["tensors"]' "$tmp/ns.json" \
    || fail "the other tensor not audited"

# .scales without .blocks: refused by name, never analysed as a weight
"$FP4DIAG" audit "$tmp/orig_src" "$tmp/orphan" -q 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] && grep -q 'block.0.mlp.mlp2_weight.scales: block scales (u8) with no packed u8 codes beside them (<p>_blocks or <p>.blocks)' "$tmp/e" \
    || { cat "$tmp/e"; fail "orphan scales: exit $rc"; }
exit 0
