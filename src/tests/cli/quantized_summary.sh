#!/bin/sh
# quantized_summary.sh — `sqnr` (and bias, buckets, rht) on a quantized checkpoint alone report
# each already-quantized tensor in its `skipped` entry with a `quant` object (SPEC §10): format,
# producer, layout, block, the code histogram, the block-scale bytes and their special values,
# the decoded block scales' zero / nonfinite counts and min / max, the per-tensor scale.
#  - GGUF special.mxfp4 / special.nvfp4 (hand-made bytes, scripts/make_gguf_testdata.py): every
#    code 8 times; E8M0 0, 1, 127, 254 -> 2^-127 .. 2^127; UE4M3 0x00, 0x7F, 0x80 decode to 0
#    (3 zero scales), min 0x01 = 2^-9, max 0xFF = 480 (ggml ignores the sign bit);
#  - ModelOpt NVFP4, compressed-tensors MXFP4, gpt-oss MXFP4, GGUF: the histogram and scale
#    byte counts equal `audit`'s of the same tensors; ModelOpt's tensor_scale is the stored
#    weight_scale_2 and its scales min/max are e4m3(byte) * weight_scale_2 over the stored bytes
#    (computed here with torch's float8_e4m3fn where ${FP4_TORCH_PYTHON} imports torch);
#  - --shard 0/2 + 1/2 merged give the single run's skipped list, quant objects included;
#  - a ModelOpt tensor whose weight_scale_2 is 0 is an errors entry naming it, the others stay.
set -u
T=testdata
[ -d "$T/quantized/modelopt_nvfp4" ] || { echo "no fixtures"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "skip: no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null | head -20; exit 1; }

"$FP4DIAG" sqnr "$T/gguf/model.gguf" -q -o "$tmp/g.json" 2>"$tmp/err" || fail "sqnr gguf exited $?"
python3 - "$tmp/g.json" <<'PY' || fail "gguf quant objects"
import json, sys
r = json.load(open(sys.argv[1]))
q = {s["name"]: s.get("quant") for s in r["skipped"]}
assert q["blk.0.ffn_up.weight"] is None and q["output_norm.weight"] is None, q
m, n = q["special.mxfp4"], q["special.nvfp4"]
assert (m["format"], m["producer"], m["block"]) == ("mxfp4", "gguf", 32), m
assert m["histogram"] == [8] * 16 and m["scale_bytes"] == 4, m
assert m["scales"] == {"zero": 0, "nonfinite": 0, "min": 2.0**-127, "max": 2.0**127}, m
assert m["special_scale_bytes"] == {"e8m0_ff": 0, "e4m3_nan": 0} and m["tensor_scale"] is None, m
assert (n["format"], n["block"], n["histogram"], n["scale_bytes"]) == ("nvfp4", 16, [8] * 16, 8), n
assert n["scales"] == {"zero": 3, "nonfinite": 0, "min": 2.0**-9, "max": 480.0}, n
assert n["special_scale_bytes"] == {"e8m0_ff": 0, "e4m3_nan": 0}, n
for k in ("blk.0.ffn_down.weight", "blk.0.ffn_gate.weight"):
    assert sum(q[k]["histogram"]) == 64 * 128, q[k]
PY

# the histogram and scale counts are audit's
check_audit() { # SOURCE QUANTIZED AUDIT-SELECTION [SQNR-OPTIONS...]
    s=$1 qd=$2 sel=$3; shift 3
    "$FP4DIAG" audit "$s" "$qd" $sel -q -o "$tmp/a.json" 2>"$tmp/err" || fail "audit $qd exited $?"
    "$FP4DIAG" sqnr "$qd" "$@" -q -o "$tmp/s.json" 2>"$tmp/err"
    [ -s "$tmp/s.json" ] || fail "sqnr $qd wrote no report"
    python3 - "$tmp/a.json" "$tmp/s.json" <<'PY' || fail "sqnr quant vs audit on $qd"
import json, sys
a, s = (json.load(open(p)) for p in sys.argv[1:])
q = {x["name"]: x["quant"] for x in s["skipped"] if "quant" in x}
assert len(a["tensors"]) >= 1 and a["errors"] == [], a["errors"]
for t in a["tensors"]:
    x = q[t["name"]]
    assert x["histogram"] == t["export"]["histogram"], t["name"]
    assert x["scale_bytes"] == t["scale_bytes"], t["name"]
    assert x["special_scale_bytes"] == t["special_scale_bytes"], t["name"]
    assert (x["format"], x["producer"], x["block"]) == \
        (t["quant"]["format"], t["quant"]["producer"], t["quant"]["block"]), t["name"]
PY
}
check_audit "$T/quantized/source" "$T/quantized/modelopt_nvfp4" '' --all-weights
check_audit "$T/quantized/source" "$T/quantized/ct_mxfp4" '' --all-weights
check_audit "$T/quantized/source" "$T/quantized/gptoss_mxfp4" '' --all-weights
check_audit "$T/gguf/source.safetensors" "$T/gguf/model.gguf" 'blk.0.ffn_*'
[ -d "$T/quantized/producer/source" ] &&
    check_audit "$T/quantized/producer/source" "$T/quantized/producer/modelopt_nvfp4" '' --all-weights

# ModelOpt's scales decoded independently (torch's float8_e4m3fn)
TPY=${FP4_TORCH_PYTHON:-/work/venv-torch/bin/python}
"$FP4DIAG" sqnr "$T/quantized/modelopt_nvfp4" --all-weights -q -o "$tmp/m.json" 2>"$tmp/err" ||
    fail "sqnr modelopt exited $?"
if "$TPY" -c 'import torch, safetensors' 2>/dev/null; then
    "$TPY" - "$T/quantized/modelopt_nvfp4/model.safetensors" "$tmp/m.json" <<'PY' || fail "modelopt scales"
import json, sys
import torch
from safetensors.torch import load_file
w = load_file(sys.argv[1])
q = {x["name"]: x["quant"] for x in json.load(open(sys.argv[2]))["skipped"] if "quant" in x}
assert q, "no quant objects"
for name, x in q.items():
    m = name[: -len(".weight")]
    g = w[m + ".weight_scale_2"].float().reshape(-1)[0]
    s = (w[m + ".weight_scale"].float() * g).reshape(-1)
    assert x["tensor_scale"] == g.item(), (name, x["tensor_scale"], g.item())
    nz = s[(s != 0) & torch.isfinite(s)]
    assert x["scales"]["min"] == nz.min().item() and x["scales"]["max"] == nz.max().item(), name
    assert x["scales"]["zero"] == int((s == 0).sum()) and x["scale_bytes"] == s.numel(), name
PY
fi

# --shard: every share lists the same skipped entries; merged, the single run's
"$FP4DIAG" sqnr "$T/gguf/model.gguf" --shard 0/2 -q -o "$tmp/p0.json" 2>"$tmp/err"
"$FP4DIAG" sqnr "$T/gguf/model.gguf" --shard 1/2 -q -o "$tmp/p1.json" 2>"$tmp/err"
"$FP4DIAG" merge "$tmp/p0.json" "$tmp/p1.json" -o "$tmp/merged.json" 2>"$tmp/err" || fail "merge exited $?"
python3 - "$tmp/g.json" "$tmp/merged.json" <<'PY' || fail "merged skipped list"
import json, sys
a, b = (json.load(open(p))["skipped"] for p in sys.argv[1:])
assert a == b and any("quant" in x for x in a), (a, b)
PY

# a per-tensor scale of 0: that tensor an errors entry, the rest as before
python3 - "$T/quantized/modelopt_nvfp4" "$tmp/bad" <<'PY' || fail "making the bad checkpoint"
import json, os, shutil, struct, sys
os.makedirs(sys.argv[2])
shutil.copy(os.path.join(sys.argv[1], "hf_quant_config.json"), sys.argv[2])
b = bytearray(open(os.path.join(sys.argv[1], "model.safetensors"), "rb").read())
n = struct.unpack("<Q", b[:8])[0]
lo, hi = json.loads(b[8:8 + n])["model.layers.0.mlp.down_proj.weight_scale_2"]["data_offsets"]
b[8 + n + lo:8 + n + hi] = bytes(hi - lo)
open(os.path.join(sys.argv[2], "model.safetensors"), "wb").write(b)
PY
"$FP4DIAG" sqnr "$tmp/bad" --all-weights -q -o "$tmp/b.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || fail "a zero weight_scale_2: exit $rc, expected 3"
python3 - "$tmp/b.json" "$tmp/bad" <<'PY' || fail "zero weight_scale_2 report"
import json, sys
r = json.load(open(sys.argv[1]))
e = r["errors"]
assert [x["tensor"] for x in e] == ["model.layers.0.mlp.down_proj.weight"], e
want = "%s: model.layers.0.mlp.down_proj.weight: " \
       "model.layers.0.mlp.down_proj.weight_scale_2 is 0, expected finite and > 0" % sys.argv[2]
assert e[0]["message"] == want, (e[0]["message"], want)
q = [x["name"] for x in r["skipped"] if "quant" in x]
assert len(q) == 3 and "model.layers.0.mlp.down_proj.weight" not in q, q
PY
exit 0
