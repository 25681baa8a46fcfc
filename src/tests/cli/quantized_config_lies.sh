#!/bin/sh
# quantized_config_lies.sh — config files that contradict the tensors (SPEC §10 "Declarations",
# issue 27): the tensors decide, and each contradiction is a problem of the tensors concerned
# (shown by `ls`, an errors entry of `audit` naming the config file, the key and the tensor),
# the other tensors still audited. Cases on the producers' own exports
# (testdata/quantized/producer/): ModelOpt quant_algo "FP8" beside NVFP4 tensors (in
# hf_quant_config.json and in config.json), its top-level group_size 32; compressed-tensors'
# format "float-quantized" and config_groups weights num_bits / type / strategy / group_size
# (or a group's own format) other than the nvfp4 scheme; a <m>.weight_shape disagreeing with the packed shape x 2;
# ModelOpt MIXED_PRECISION quantized_layers group_size negative, zero, huge, fractional or a
# string; and the reverse of the first: FP8 weights where the config declares a 4-bit float
# format (the file's quant_algo, or the module's quantized_layers entry), an errors entry of
# `sqnr` (not a skip) and the weight's problem in `ls`.
set -u
P=testdata/quantized/producer
[ -d "$P/modelopt_nvfp4" ] || { echo "no $P"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" 2>/dev/null | head -20; exit 1; }

# edit FILE PYTHON: run PYTHON with `c` the JSON of FILE, then write it back
edit() {
    python3 - "$1" "$2" <<'PY' || fail "editing $1"
import json, sys
c = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(c, open(sys.argv[1], "w"))
PY
}

# check DIR MESSAGE [TENSORS]: `ls` shows MESSAGE as the problem of exactly the quantized
# tensors named (comma-separated module leaves, e.g. "q_proj,k_proj"; "all": every one), and
# `audit` exits 3 with one errors entry for each of them (naming the tensor and MESSAGE),
# every other quantized tensor audited
check() {
    "$FP4DIAG" ls --json "$1" >"$tmp/ls.json" 2>"$tmp/out" || fail "ls $1 exited $?"
    "$FP4DIAG" audit "$P/source" "$1" -q -o "$tmp/a.json" 2>"$tmp/out"
    rc=$?
    [ "$rc" -eq 3 ] || fail "audit $1: exit $rc, expected 3"
    python3 - "$tmp/ls.json" "$tmp/a.json" "$1" "$2" "${3:-all}" <<'PY' || fail "$1: $2"
import json, sys
ls, a, d, msg, which = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), *sys.argv[3:]
q = {x["name"]: x["problem"] for x in ls["datasets"] if x.get("quant")}
assert len(q) >= 6, q
bad = set(q) if which == "all" else {n for n in q if n.split(".")[-2] in which.split(",")}
assert bad, (which, sorted(q))
for n, p in q.items():
    if n in bad:
        assert p is not None and msg in p, (n, p, msg)
    else:
        assert p is None, (n, p)
e = {x["tensor"]: x["message"] for x in a["errors"]}
assert set(e) == bad, (sorted(e), sorted(bad))
for n, m in e.items():
    assert m.startswith(d + ": " + n + ": ") and msg in m, (n, m, msg)
assert sorted(t["name"] for t in a["tensors"]) == sorted(set(q) - bad), a["tensors"]
PY
}

# 1. ModelOpt: a quant_algo that is no 4-bit float format, beside NVFP4 tensors
cp -r "$P/modelopt_nvfp4" "$tmp/fp8" || exit 1
edit "$tmp/fp8/hf_quant_config.json" 'c["quantization"]["quant_algo"] = "FP8"'
check "$tmp/fp8" 'hf_quant_config.json quantization.quant_algo is "FP8" (not a 4-bit float format), the tensors are modelopt NVFP4'
rm "$tmp/fp8/hf_quant_config.json"
edit "$tmp/fp8/config.json" 'c["quantization_config"]["quant_algo"] = "FP8"'
check "$tmp/fp8" 'config.json quantization_config.quant_algo is "FP8" (not a 4-bit float format), the tensors are modelopt NVFP4'
edit "$tmp/fp8/config.json" 'c["quantization_config"]["quant_algo"] = 4'
check "$tmp/fp8" 'config.json quantization_config.quant_algo is 4 (not a name)'

# 2. ModelOpt: group_size 32 (NVFP4's block is 16); 16.0 is 16
cp -r "$P/modelopt_nvfp4" "$tmp/g32" || exit 1
edit "$tmp/g32/hf_quant_config.json" 'c["quantization"]["group_size"] = 32'
check "$tmp/g32" 'hf_quant_config.json quantization.group_size is 32 (NVFP4 has one block scale per 16 inputs), the tensors are modelopt NVFP4'
edit "$tmp/g32/hf_quant_config.json" 'c["quantization"]["group_size"] = 16.0'
"$FP4DIAG" audit "$P/source" "$tmp/g32" -q -o "$tmp/a.json" 2>"$tmp/out" || fail "group_size 16.0: exit $?"

# 3. compressed-tensors: a format that is no 4-bit float format; config_groups weights that
# are not the nvfp4-pack-quantized scheme
cp -r "$P/ct_nvfp4" "$tmp/ct" || exit 1
G='c["quantization_config"]["config_groups"]["group_0"]["weights"]'
edit "$tmp/ct/config.json" 'c["quantization_config"]["format"] = "float-quantized"'
check "$tmp/ct" 'config.json quantization_config.format is "float-quantized" (not a 4-bit float format), the tensors are compressed-tensors NVFP4'
edit "$tmp/ct/config.json" 'c["quantization_config"]["format"] = "nvfp4-pack-quantized"; '"$G"'["num_bits"] = 8'
check "$tmp/ct" 'config.json quantization_config.config_groups.group_0.weights.num_bits is 8 (expected 4), the tensors are compressed-tensors NVFP4'
edit "$tmp/ct/config.json" "$G"'["num_bits"] = 4; '"$G"'["type"] = "int"'
check "$tmp/ct" 'config_groups.group_0.weights.type is "int" (expected "float")'
edit "$tmp/ct/config.json" "$G"'["type"] = "float"; '"$G"'["strategy"] = "channel"'
check "$tmp/ct" 'config_groups.group_0.weights.strategy is "channel" (expected "tensor_group")'
edit "$tmp/ct/config.json" "$G"'["strategy"] = "tensor_group"; '"$G"'["group_size"] = 32'
check "$tmp/ct" 'config_groups.group_0.weights.group_size is 32 (expected 16)'
edit "$tmp/ct/config.json" "$G"'["group_size"] = 16; c["quantization_config"]["config_groups"]["group_1"] = {"weights": 8}'
check "$tmp/ct" 'config_groups.group_1.weights is 8 (not an object)'
edit "$tmp/ct/config.json" 'del c["quantization_config"]["config_groups"]["group_1"]; c["quantization_config"]["config_groups"]["group_0"]["format"] = "float-quantized"'
check "$tmp/ct" 'config.json quantization_config.config_groups.group_0.format is "float-quantized" (expected "nvfp4-pack-quantized"), the tensors are compressed-tensors NVFP4'
edit "$tmp/ct/config.json" 'c["quantization_config"]["config_groups"]["group_0"]["format"] = "nvfp4-pack-quantized"'
"$FP4DIAG" audit "$P/source" "$tmp/ct" -q -o "$tmp/a.json" 2>"$tmp/out" || fail "ct restored: exit $?"

# 4. compressed-tensors' weight_shape: k_proj's disagrees with its packed codes (32x64), q_proj's
# agrees (64x64), v_proj's is not an integer vector
mkdir "$tmp/ws" && cp "$P/ct_nvfp4/config.json" "$tmp/ws/" || exit 1
python3 - "$P/ct_nvfp4/model.safetensors" "$tmp/ws/model.safetensors" <<'PY' || fail "writing weight_shape"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n]); data = raw[8 + n:]
end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
data = data[:end]
A = "model.layers.0.self_attn."
for name, dt, fmt, val in ((A + "q_proj.weight_shape", "I64", "<2q", (64, 64)),
                           (A + "k_proj.weight_shape", "I64", "<2q", (32, 96)),
                           (A + "v_proj.weight_shape", "F32", "<2f", (32, 64))):
    b = struct.pack(fmt, *val)
    h[name] = {"dtype": dt, "shape": [2], "data_offsets": [len(data), len(data) + len(b)]}
    data += b
hb = json.dumps(h).encode()
hb += b" " * (-len(hb) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + data)
PY
check "$tmp/ws" 'weight_shape is' k_proj,v_proj
grep -q 'model.layers.0.self_attn.k_proj.weight_shape is 32x96, but model.layers.0.self_attn.k_proj.weight_packed (u8 32x32, two codes a byte) holds 32x64' "$tmp/a.json" \
    || fail "weight_shape message"
grep -q 'model.layers.0.self_attn.v_proj.weight_shape is f32 2, expected i64 \[2\]' "$tmp/a.json" \
    || fail "weight_shape dtype message"

# 5. ModelOpt MIXED_PRECISION: quantized_layers group_size negative, zero, huge, fractional, a
# string: each the problem of its module only
cp -r "$P/modelopt_mixed" "$tmp/mix" || exit 1
edit "$tmp/mix/hf_quant_config.json" '
L = c["quantization"]["quantized_layers"]; A = "model.layers.0."
L[A + "self_attn.q_proj"]["group_size"] = -16
L[A + "self_attn.k_proj"]["group_size"] = 0
L[A + "self_attn.v_proj"]["group_size"] = 1000000000000
L[A + "self_attn.o_proj"]["group_size"] = 16.5
L[A + "mlp.gate_proj"]["group_size"] = "16"'
check "$tmp/mix" 'hf_quant_config.json quantized_layers declares model.layers.0.' q_proj,k_proj,v_proj,o_proj,gate_proj
for m in 'self_attn.q_proj group_size -16 (not a positive integer)' \
         'self_attn.k_proj group_size 0 (not a positive integer)' \
         'self_attn.v_proj group_size 1000000000000, the tensors' \
         'self_attn.o_proj group_size 16.5 (not a positive integer)' \
         'mlp.gate_proj group_size \"16\" (not a positive integer)'; do
    grep -qF "declares model.layers.0.$m" "$tmp/a.json" || fail "mixed: no '$m'"
done

# 6. the reverse: FP8 tensors (ModelOpt MIXED_PRECISION's down_proj) declared NVFP4
# fp8 DIR MESSAGE: ls shows MESSAGE as down_proj.weight's problem (no other problem), and sqnr
# exits 3 with its one errors entry, the NVFP4 tensors skipped as already quantized
fp8() {
    "$FP4DIAG" ls --json "$1" >"$tmp/ls.json" 2>"$tmp/out" || fail "ls $1 exited $?"
    "$FP4DIAG" sqnr "$1" -q -o "$tmp/s.json" 2>"$tmp/out"
    rc=$?
    [ "$rc" -eq 3 ] || fail "sqnr $1: exit $rc, expected 3"
    python3 - "$tmp/ls.json" "$tmp/s.json" "$1" "$2" <<'PY' || fail "$1: $2"
import json, sys
ls, s, d, msg = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), *sys.argv[3:]
W = "model.layers.0.mlp.down_proj.weight"
p = {x["name"]: x["problem"] for x in ls["datasets"] if x["problem"] is not None}
assert list(p) == [W] and msg in p[W], p
e = {x["tensor"]: x["message"] for x in s["errors"]}
assert list(e) == [W] and e[W] == d + ": " + W + ": " + p[W], e
assert W not in {x["name"] for x in s["skipped"]}, s["skipped"]
PY
}
cp -r "$P/modelopt_mixed" "$tmp/rev" || exit 1
edit "$tmp/rev/hf_quant_config.json" 'c["quantization"]["quantized_layers"]["model.layers.0.mlp.down_proj"] = {"quant_algo": "NVFP4", "group_size": 16}'
fp8 "$tmp/rev" 'hf_quant_config.json quantized_layers declares model.layers.0.mlp.down_proj NVFP4, the tensors are FP8 E4M3 (per-tensor scale)'
"$FP4DIAG" audit "$P/source" "$tmp/rev" -q -o "$tmp/a.json" 2>"$tmp/out" || fail "rev: the NVFP4 tensors not audited: exit $?"
edit "$tmp/rev/hf_quant_config.json" 'c["quantization"]["quant_algo"] = "NVFP4"; del c["quantization"]["quantized_layers"]'
fp8 "$tmp/rev" 'hf_quant_config.json quantization.quant_algo is "NVFP4" (a 4-bit float format), the tensors are FP8 E4M3 (per-tensor scale)'
exit 0
