#!/bin/sh
# quantized_scalar_shape.sh — a per-tensor scale (a GGUF NVFP4 .scale sidecar, ModelOpt's
# weight_scale_2) is F32 holding exactly one value, in any shape (SPEC §10): [1] and [1, 1]
# are read, and give the same decoded tensor (the same tensor_scale and summary); two values
# are the tensor's problem, named in words ("NAME holds 2 values (shape 2), expected one (a
# per-tensor scale)"), in ls and as the errors entry of sqnr, exit 3.
set -u
python3 -c 'import numpy, gguf' 2>/dev/null || { echo "skip: numpy or gguf-py not installed"; exit 77; }
Q=testdata/quantized
[ -d "$Q/modelopt_nvfp4" ] || { echo "no $Q"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null | head -5; exit 1; }
python3 - "$tmp" "$Q/modelopt_nvfp4" <<'PY' || fail "generator"
import json, os, shutil, struct, sys
import numpy as np, gguf
T = gguf.GGMLQuantizationType
d, mo = sys.argv[1], sys.argv[2]
nv = np.random.default_rng(0).integers(0, 256, (4, 72), dtype=np.uint8)  # 4 x 128 NVFP4
nv[:, :4] = 0x38  # sub-block scales 1.0 (finite)
for name, sc in (("one", np.array([0.5], np.float32)), ("one11", np.array([[0.5]], np.float32)),
                 ("two", np.array([0.5, 0.5], np.float32))):
    w = gguf.GGUFWriter("%s/%s.gguf" % (d, name), "llama")
    w.add_tensor("blk.0.w.weight", nv, raw_shape=nv.shape, raw_dtype=T.NVFP4)
    w.add_tensor("blk.0.w.scale", sc)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
# ModelOpt: q_proj's weight_scale_2 (0-d) reshaped to [1, 1] (same bytes), or holding 2 values
b = open(os.path.join(mo, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h, data = json.loads(b[8:8 + n]), b[8 + n:]
g = "model.layers.0.self_attn.q_proj.weight_scale_2"
for name in ("mo11", "mo2"):
    os.makedirs(os.path.join(d, name))
    shutil.copy(os.path.join(mo, "hf_quant_config.json"), os.path.join(d, name))
    hh, dd = dict(h), data
    s, e = h[g]["data_offsets"]
    if name == "mo11":
        hh[g] = dict(h[g], shape=[1, 1])
    else:  # the value twice: every later tensor 4 bytes on
        dd = data[:e] + data[s:e] + data[e:]
        for k, v in h.items():
            if k != "__metadata__" and v["data_offsets"][0] >= e:
                hh[k] = dict(v, data_offsets=[v["data_offsets"][0] + 4, v["data_offsets"][1] + 4])
        hh[g] = dict(h[g], shape=[2], data_offsets=[s, e + 4])
    hb = json.dumps(hh).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    open(os.path.join(d, name, "model.safetensors"), "wb").write(struct.pack("<Q", len(hb)) + hb + dd)
PY
# summary FILE OUT: the quantized tensors' summaries of `sqnr` (exit 0)
summary() {
    "$FP4DIAG" sqnr --json "$1" >"$tmp/r.json" 2>"$tmp/err" || fail "sqnr $1: exit $?"
    python3 - "$tmp/r.json" >"$2" <<'PY' || fail "sqnr $1: report"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["errors"], r["errors"]
print(json.dumps({s["name"]: s["quant"] for s in r["skipped"] if s.get("quant")}, sort_keys=True))
PY
}
summary "$tmp/one.gguf" "$tmp/one.txt"
summary "$tmp/one11.gguf" "$tmp/one11.txt"
grep -q '"tensor_scale": 0.5' "$tmp/one.txt" || { cat "$tmp/one.txt"; fail "one.gguf: the sidecar not applied"; }
cmp -s "$tmp/one.txt" "$tmp/one11.txt" || fail "a [1, 1] sidecar reads otherwise than [1]"
summary "$Q/modelopt_nvfp4" "$tmp/mo.txt"
summary "$tmp/mo11" "$tmp/mo11.txt"
cmp -s "$tmp/mo.txt" "$tmp/mo11.txt" || fail "a [1, 1] weight_scale_2 reads otherwise than 0-d"
# two values: the tensor's problem, in words
for c in two.gguf:blk.0.w.weight:blk.0.w.scale \
         mo2:model.layers.0.self_attn.q_proj.weight:model.layers.0.self_attn.q_proj.weight_scale_2; do
    f=$tmp/${c%%:*} rest=${c#*:}
    q=${rest%%:*} g=${rest#*:}
    msg="$g holds 2 values (shape 2), expected one (a per-tensor scale)"
    "$FP4DIAG" ls "$f" >"$tmp/out" 2>"$tmp/err" || fail "ls $f: exit $?"
    grep "^$q " "$tmp/out" | grep -qF "$msg" || { cat "$tmp/out"; fail "ls $f: no '$msg'"; }
    "$FP4DIAG" sqnr --json "$f" >"$tmp/r.json" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 3 ] || fail "sqnr $f: exit $rc, wanted 3"
    python3 - "$tmp/r.json" "$q" "$msg" <<'PY' || fail "sqnr $f: errors"
import json, sys
r = json.load(open(sys.argv[1]))
errs = {e["tensor"]: e["message"] for e in r["errors"]}
assert list(errs) == [sys.argv[2]] and errs[sys.argv[2]].endswith(": " + sys.argv[3]), errs
PY
done
exit 0
