#!/bin/sh
# audit_producer.sh — `fp4diag audit` on checkpoints written by the producers' own code
# (testdata/quantized/producer/, scripts/make_producer_testdata.py: ModelOpt's NVFP4 unified HF
# export, compressed-tensors' nvfp4- and mxfp4-pack-quantized compressors): per-tensor and
# pooled export SQNR and alpha equal the fp64 numpy values committed with the fixtures
# (expected.json, from the producers' own dequantize) to 1e-6 dB and 1e-12; these round-to-
# nearest exports reproduce every stored scale byte (scale_match_frac 1), the RTN column equals
# the export, and every quantized module is audited (7 per fixture; lm_head stays bf16); the
# non-amax SQNR of both sides is numpy's fp64 one to 1e-6 dB. A gpt-oss export is paired with
# transformers' bf16 experts, stored transposed ([E, K, R]).
set -u
P=testdata/quantized/producer
[ -f "$P/expected.json" ] || { echo "no $P"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for fx in modelopt_nvfp4 modelopt_mixed ct_nvfp4 ct_mxfp4 gptoss_mxfp4; do
    src=$P/source
    [ "$fx" = gptoss_mxfp4 ] && src=$P/gptoss_source
    "$FP4DIAG" audit "$src" "$P/$fx" -o "$tmp/$fx.json" -q || fail "audit $fx exited $?"
    python3 - "$tmp/$fx.json" "$P/expected.json" "$fx" <<'PY' || fail "audit $fx numbers"
import json, sys
r = json.load(open(sys.argv[1])); fx = sys.argv[3]
want = json.load(open(sys.argv[2]))["fixtures"][fx]
assert r["schema"] == "fp4diag.audit/1" and r["errors"] == [], r["errors"]
got = {t["name"]: t for t in r["tensors"]}
nq = {"gptoss_mxfp4": 2, "modelopt_mixed": 6}.get(fx, 7)  # mixed: down_proj is FP8
assert sorted(got) == sorted(want["tensors"]) and len(got) == nq, sorted(got)
fmt, prod = {"modelopt_nvfp4": ("nvfp4", "modelopt"), "modelopt_mixed": ("nvfp4", "modelopt"),
             "ct_nvfp4": ("nvfp4", "compressed-tensors"),
             "ct_mxfp4": ("mxfp4", "compressed-tensors"), "gptoss_mxfp4": ("mxfp4", "gpt-oss")}[fx]
for name, w in want["tensors"].items():
    t = got[name]
    assert t["quant"]["format"] == fmt and t["quant"]["producer"] == prod, t["quant"]
    assert abs(t["export"]["sqnr_db"] - w["sqnr_db"]) <= 1e-6, (name, t["export"], w)
    assert abs(t["export"]["alpha"] - w["alpha"]) <= 1e-12, (name, t["export"], w)
    assert abs(t["requant"]["sqnr_db"] - w["sqnr_db"]) <= 1e-6, (name, t["requant"], w)
    assert t["scale_match_frac"] == 1, (name, t["scale_match_frac"], t["scale_byte_diff"])
    assert t["nonnearest_frac"] < 0.01, (name, t["nonnearest_frac"])
    assert t["layout_check"]["as_declared"], (name, t["layout_check"])
    # transformers stores gpt-oss experts transposed ([E, K, R]): paired as such, and said
    assert t["quant"]["layout"].endswith(", source transposed") == (fx == "gptoss_mxfp4"), t["quant"]
    if fmt == "nvfp4":
        g = t["global_scale"]
        assert g["match"] and (g["group"] is None or g["group_shared"] is True), g
    # bucket use (SPEC §11): an independent computation from each side's histogram; these
    # round-to-nearest exports use every code exactly as fp4diag's own requantization
    for side in ("export", "requant"):
        s = t[side]; h = s["histogram"]; n = sum(h)
        assert n == t["elements"], (name, side, n)
        c15 = [h[0] + h[8]] + h[1:8] + h[9:16]; c8 = [h[i] + h[8 + i] for i in range(8)]
        def br(c, k):
            import math
            return math.exp(-sum(x / n * math.log(x / n) for x in c if x)) / k
        assert abs(s["bucket_ratio_15"] - br(c15, 15)) <= 1e-14, (name, side, s)
        assert abs(s["bucket_ratio_8"] - br(c8, 8)) <= 1e-14, (name, side, s)
        assert s["max_frac"] == (h[7] + h[15]) / n, (name, side, s)
    assert t["requant"]["histogram"] == t["export"]["histogram"], (name, t["requant"], t["export"])
p, w = r["pooled"], want["pooled"]
for side in ("export", "requant"):  # the pooled histogram: the sum of the tensors'
    assert p[side]["histogram"] == [sum(t[side]["histogram"][c] for t in r["tensors"]) for c in range(16)], p
assert p["tensors"] == nq and p["scale_match_frac"] == 1, p
assert abs(p["export"]["sqnr_db"] - w["sqnr_db"]) <= 1e-6, (p, w)
assert abs(p["export"]["alpha"] - w["alpha"]) <= 1e-12, (p, w)
PY
done
# the non-amax SQNR (SPEC §5.1, §11) of export and requant: numpy in fp64 from the source and
# the producers' own decodes (expected.safetensors), every element of each scale block but the
# first attaining its amax (these round-to-nearest exports: requant's is the export's)
python3 - "$P" "$tmp" <<'PY' || fail "non-amax SQNR"
import json, sys
import numpy as np
sys.path.insert(0, "src/tests/cli/lib")
from st_load import load  # the file's bytes read with NumPy alone
P, T = sys.argv[1:3]
src = {d: load(f"{P}/{d}/model.safetensors") for d in ("source", "gptoss_source")}
dec = load(f"{P}/expected.safetensors")
for fx in ("modelopt_nvfp4", "ct_nvfp4", "ct_mxfp4", "gptoss_mxfp4"):
    r = json.load(open(f"{T}/{fx}.json"))
    S = np.zeros(2)
    for t in r["tensors"]:
        q = dec[fx + "/" + t["name"]]
        x = src["gptoss_source" if fx.startswith("gptoss") else "source"][t["name"]]
        if t["quant"]["layout"].endswith(", source transposed"):
            x = x.transpose(0, 2, 1)  # transformers' [E, K, R]
        B = t["quant"]["block"]
        xb, qb = x.reshape(-1, B), q.reshape(-1, B)
        keep = np.ones(xb.shape, bool)
        keep[np.arange(len(xb)), np.argmax(np.abs(xb), axis=1)] = False  # the first amax
        xs, es = (xb[keep] ** 2).sum(), ((xb - qb)[keep] ** 2).sum()
        want = 10 * np.log10(xs / es)
        S += (xs, es)
        for side in ("export", "requant"):
            got = t[side]["sqnr_nonamax_db"]
            assert t[side]["sqnr_nonamax_status"] == "ok" and abs(got - want) <= 1e-6, (fx, t["name"], side, got, want)
        if B == 16:  # NVFP4 keeps each block's amax nearly exact (at 6 times its scale):
            # the rest of the block is where the error is (MXFP4's floor scale clips it instead)
            assert t["export"]["sqnr_nonamax_db"] < t["export"]["sqnr_db"], (fx, t["name"], t["export"])
    want = 10 * np.log10(S[0] / S[1])
    assert abs(r["pooled"]["export"]["sqnr_nonamax_db"] - want) <= 1e-6, (fx, r["pooled"], want)
PY

# gpt-oss' square down_proj ([E, I, H] with I = H) stored untransposed: read as stored (the
# orientation is decided against the export), the same numbers; a source of neither shape is an
# errors entry naming both files and the tensor, and saying both orientations were tried
python3 - "$P/gptoss_source/model.safetensors" "$tmp/gsrc" <<'PY' || fail "making the gpt-oss variants"
import json, os, struct, sys
import numpy as np
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); base = 8 + n
meta = h.pop("__metadata__", None)
def write(path, edit):
    t = {}
    for k, v in h.items():
        raw = b[base + v["data_offsets"][0]:base + v["data_offsets"][1]]
        t[k] = edit(k, v["dtype"], list(v["shape"]), raw)
    hh, off, blobs = {"__metadata__": meta} if meta else {}, 0, []
    for k in sorted(t):
        d, s, raw = t[k]
        hh[k] = {"dtype": d, "shape": s, "data_offsets": [off, off + len(raw)]}
        off += len(raw); blobs.append(raw)
    hb = json.dumps(hh).encode(); hb += b" " * (-len(hb) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb))); f.write(hb); f.write(b"".join(blobs))
def untranspose(k, d, s, raw):
    if k.endswith("experts.down_proj"):
        a = np.frombuffer(raw, np.uint16).reshape(s).transpose(0, 2, 1).copy()
        return d, list(a.shape), a.tobytes()
    return d, s, raw
def flat(k, d, s, raw):
    if k.endswith("experts.gate_up_proj"):
        return d, [s[0] * s[1], s[2]], raw
    return d, s, raw
write(sys.argv[2] + "/plain/model.safetensors", untranspose)
write(sys.argv[2] + "/flat/model.safetensors", flat)
PY
"$FP4DIAG" audit "$tmp/gsrc/plain" "$P/gptoss_mxfp4" -o "$tmp/plain.json" -q || fail "untransposed down_proj exited $?"
python3 - "$tmp/plain.json" "$tmp/gptoss_mxfp4.json" <<'PY' || fail "untransposed down_proj"
import json, sys
a, b = ({t["name"]: t for t in json.load(open(f))["tensors"]} for f in sys.argv[1:3])
D = "model.layers.0.mlp.experts.down_proj"
assert not a[D]["quant"]["layout"].endswith("source transposed"), a[D]["quant"]
assert b[D]["quant"]["layout"].endswith("source transposed"), b[D]["quant"]
for k in ("export", "requant", "scale_match_frac", "nonnearest"):
    assert a[D][k] == b[D][k], (k, a[D][k], b[D][k])
PY
"$FP4DIAG" audit "$tmp/gsrc/flat" "$P/gptoss_mxfp4" -q 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] && grep -qF "$tmp/gsrc/flat: model.layers.0.mlp.experts.gate_up_proj: shape 128x128 in the source, 2x128x64 in the quantized checkpoint $P/gptoss_mxfp4 (nor its last two dims swapped" "$tmp/e" \
    || { cat "$tmp/e"; fail "gpt-oss shape mismatch: exit $rc"; }

# ModelOpt MIXED_PRECISION: each module's quant_algo and group_size (quantized_layers) checked
# against its tensors: one declared FP8, one declared with group 32, one not listed
grep -q '"declared":	"hf_quant_config.json: modelopt MIXED_PRECISION"' "$tmp/modelopt_mixed.json" || fail "mixed declaration"
cp -r "$P/modelopt_mixed" "$tmp/mixed_bad"
python3 - "$tmp/mixed_bad/hf_quant_config.json" <<'PY' || fail "editing quantized_layers"
import json, sys
c = json.load(open(sys.argv[1])); L = c["quantization"]["quantized_layers"]
L["model.layers.0.self_attn.q_proj"] = {"quant_algo": "FP8"}
L["model.layers.0.self_attn.k_proj"]["group_size"] = 32
del L["model.layers.0.self_attn.o_proj"]
json.dump(c, open(sys.argv[1], "w"))
PY
"$FP4DIAG" audit "$P/source" "$tmp/mixed_bad" -o "$tmp/mb.json" -q 2>/dev/null; rc=$?
[ "$rc" -eq 3 ] || fail "mixed contradictions: exit $rc"
python3 - "$tmp/mb.json" <<'PY' || fail "mixed contradictions"
import json, sys
r = json.load(open(sys.argv[1]))
e = {x["tensor"]: x["message"] for x in r["errors"]}
A = "model.layers.0.self_attn."
assert "quantized_layers declares model.layers.0.self_attn.q_proj FP8, the tensors are modelopt NVFP4" in e[A + "q_proj.weight"], e
assert "declares model.layers.0.self_attn.k_proj group_size 32, the tensors have one block scale per 16" in e[A + "k_proj.weight"], e
assert "quantized_layers (modelopt MIXED_PRECISION) does not list model.layers.0.self_attn.o_proj" in e[A + "o_proj.weight"], e
assert len(e) == 3 and len(r["tensors"]) == 3, (e, [t["name"] for t in r["tensors"]])
PY

# ModelOpt's export declares itself (hf_quant_config.json); compressed-tensors' config.json
grep -q '"declared":	"hf_quant_config.json: modelopt' "$tmp/modelopt_nvfp4.json" || fail "modelopt declaration"
grep -q '"declared":	"config.json: compressed-tensors' "$tmp/ct_nvfp4.json" || fail "ct declaration"
exit 0
