#!/bin/sh
# audit_device.sh — `fp4diag audit --device cpu|cuda|auto` (SPEC §11): a device other than those
# three is a usage error (exit 2, one line); --device cuda without a usable GPU exits 4 with one
# line and no report; --device auto is the CPU's report there. Where a GPU runs, the report of
# every export in testdata (ModelOpt and compressed-tensors NVFP4/MXFP4, gpt-oss blocks, GGUF
# types 39/40, the deliberate layout faults) and of generated exports of several slabs (flat and
# swizzled NVFP4, MXFP4) is the same on --device cuda as on --device cpu, byte for byte but the
# argv and the seconds, exit status included.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -s "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" | head -n 20; exit 1; }
Q=testdata/quantized
P=$Q/producer
[ -d "$Q/modelopt_nvfp4" ] || { echo "skip: no $Q"; exit 77; }

"$FP4DIAG" audit --device tpu "$Q/source" "$Q/modelopt_nvfp4" -q >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || fail "--device tpu: exit $rc, expected 2"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "not cpu, cuda or auto" "$tmp/err" || fail "--device tpu message"

# the report without what may differ between runs: the command line and the time taken (the
# date is SOURCE_DATE_EPOCH's)
strip() { grep -v '"argv"\|"seconds"\|"device"' "$1"; }

# one pair on two devices: the same exit status and report; $1 $2: source, export; $3: a tag
same() {
    SOURCE_DATE_EPOCH=0 "$FP4DIAG" audit --device "$DEV_A" "$1" "$2" --json >"$tmp/$3.a" 2>"$tmp/err"; ra=$?
    SOURCE_DATE_EPOCH=0 "$FP4DIAG" audit --device "$DEV_B" "$1" "$2" --json >"$tmp/$3.b" 2>"$tmp/err"; rb=$?
    [ "$ra" -eq "$rb" ] || fail "$3: exit $ra on $DEV_A, $rb on $DEV_B"
    case $ra in 0|3) ;; *) fail "$3: exit $ra" ;; esac
    strip "$tmp/$3.a" >"$tmp/$3.ca"
    strip "$tmp/$3.b" >"$tmp/$3.cb"
    [ -s "$tmp/$3.ca" ] || fail "$3: no report"
    cmp -s "$tmp/$3.ca" "$tmp/$3.cb" ||
        { diff "$tmp/$3.ca" "$tmp/$3.cb" | head -n 20; fail "$3: $DEV_A and $DEV_B reports differ"; }
    n=$((n + 1))
}

"$FP4DIAG" audit --device cuda "$Q/source" "$Q/modelopt_nvfp4" -q >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 4 ] || fail "--device cuda without a GPU: exit $rc, expected 4"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "CUDA requested but" "$tmp/err" ||
        fail "--device cuda without a GPU: message"
    [ -s "$tmp/out" ] && fail "--device cuda without a GPU wrote a report"
    n=0 DEV_A=cpu DEV_B=auto
    same "$Q/source" "$Q/modelopt_nvfp4" auto
    echo "audit_device: no GPU here: --device cuda exits 4, auto is the CPU (GPU parity not run)"
    exit 0
fi

n=0 DEV_A=cpu DEV_B=cuda
for fx in "$Q"/*/; do
    fx=${fx%/}
    case $(basename "$fx") in source | expected | producer) continue ;; esac
    same "$Q/source" "$fx" "q_$(basename "$fx")"
done
for fx in modelopt_nvfp4 modelopt_mixed ct_nvfp4 ct_mxfp4; do
    same "$P/source" "$P/$fx" "p_$fx"
done
same "$P/gptoss_source" "$P/gptoss_mxfp4" p_gptoss
same testdata/gguf/source.safetensors testdata/gguf/model.gguf gguf
same testdata/gguf/expected.safetensors testdata/gguf/model.gguf gguf_expected

# exports of several slabs (4M elements a slab): ModelOpt NVFP4 flat and swizzled,
# compressed-tensors NVFP4 and MXFP4, with NaN, inf and zero blocks in the source
if python3 -c 'import numpy' 2>/dev/null; then
    PYTHONPATH="$PWD/scripts" python3 - "$tmp" <<'PY' || fail "writing the exports"
import os, sys
import numpy as np
import make_quantized_testdata as m
out = sys.argv[1]
rng = np.random.default_rng(7)
P = "model.layers.0."
src = {}
for name, shape in [("self_attn.o_proj", (3072, 2048)), ("mlp.down_proj", (384, 1536))]:
    w = rng.standard_normal(shape).astype(np.float32) * 0.02
    w *= np.exp(rng.standard_normal((shape[0], 1))).astype(np.float32)
    w[5, :64] = 0
    src[P + name + ".weight"] = m.bf16_round(w)
for d in ("source", "nv", "nvswz", "mx"):
    os.makedirs(os.path.join(out, d))
m.write_st(os.path.join(out, "source", "model.safetensors"), [m.bf16(k, v) for k, v in src.items()])
def nv(swz):
    t = []
    for k, w in src.items():
        ws2 = np.float32(np.float32(np.max(np.abs(w))) / np.float32(2688.0))
        p, sb, _ = m.modelopt_nvfp4(w, ws2)
        if swz:  # ModelOpt's swizzle_nvfp4_scales, in the flat shape (the layouts share it)
            R, C = sb.shape
            sb = sb.reshape(R // 128, 128, C // 4, 4).transpose(0, 2, 1, 3).reshape(-1, 4, 32, 4)
            sb = sb.transpose(0, 2, 1, 3).reshape(R, C)
        t += [m.u8(k, p), m.u8(k + "_scale", sb, "F8_E4M3"), m.f32(k + "_scale_2", np.float32(ws2).reshape(()))]
    return t
m.write_st(os.path.join(out, "nv", "model.safetensors"), nv(False))
m.write_st(os.path.join(out, "nvswz", "model.safetensors"), nv(True))
t = []
for k, w in src.items():
    p, sb, _ = m.mxfp4(w, m.ct_mx_byte)
    b = k[: -len(".weight")]
    t += [m.u8(b + ".weight_packed", p), m.u8(b + ".weight_scale", sb)]
m.write_st(os.path.join(out, "mx", "model.safetensors"), t)
m.write_json(os.path.join(out, "mx", "config.json"), {"quantization_config": {
    "quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized"}})
PY
    for fx in nv nvswz mx; do same "$tmp/source" "$tmp/$fx" "gen_$fx"; done
fi
echo "audit_device: $n reports the same on --device cpu and cuda"
