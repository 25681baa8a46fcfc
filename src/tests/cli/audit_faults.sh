#!/bin/sh
# audit_faults.sh — the layout faults of issue 27 not covered by audit_ckpt.sh, each made from a
# producer-written checkpoint (testdata/quantized/producer/) by editing its bytes here, and each
# shown detected by `fp4diag audit`:
#   - a global scale stored in the other direction (a ModelOpt weight_scale_2 holding 1/ws2; a
#     compressed-tensors checkpoint renamed to ModelOpt names without inverting its
#     weight_global_scale, as modular#6600): named "global scale reciprocal" with both SQNRs,
#     left out of the pool;
#   - an E8M0 block scale 0xFF: an errors entry that names the byte;
#   - padded scale columns in the flat shape: an errors entry naming the shapes;
#   - a 0-d and a [1] per-tensor scale: both accepted, the same numbers;
#   - ModelOpt's 1-D U8 (TensorRT-LLM CUTLASS) block scales: the same numbers as flat ones;
#   - zero-block conventions: ModelOpt's 1.0 reproduced; TE's 0 and compressed-tensors' 0.125
#     under ModelOpt counted as scale bytes the rule does not give.
set -u
P=testdata/quantized/producer
[ -d "$P/source" ] || { echo "no $P"; exit 77; }
python3 -c 'import numpy' 2>/dev/null || { echo "numpy not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
O=model.layers.0.self_attn.o_proj.weight

python3 - "$P" "$tmp" <<'PY' || fail "making the faulty copies"
import json, os, shutil, struct, sys
import numpy as np
P, T = sys.argv[1], sys.argv[2]
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); base = 8 + n
    meta = h.pop("__metadata__", None)
    return {k: [v["dtype"], v["shape"], bytearray(b[base + v["data_offsets"][0]:base + v["data_offsets"][1]])]
            for k, v in h.items()}, meta
def save(path, t, meta):
    h, off, blobs = {}, 0, []
    if meta: h["__metadata__"] = meta
    for k in sorted(t):
        d, s, raw = t[k]
        h[k] = {"dtype": d, "shape": s, "data_offsets": [off, off + len(raw)]}
        off += len(raw); blobs.append(bytes(raw))
    hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb))); f.write(hb); f.write(b"".join(blobs))
def copy(src, name):
    d = os.path.join(T, name); shutil.copytree(os.path.join(P, src), d)
    return os.path.join(d, "model.safetensors")
O = "model.layers.0.self_attn.o_proj.weight"
# reciprocal: o_proj's weight_scale_2 holds 1/ws2
f = copy("modelopt_nvfp4", "recip"); t, m = load(f)
v = struct.unpack("<f", t[O + "_scale_2"][2])[0]; t[O + "_scale_2"][2][:] = struct.pack("<f", 1.0 / v)
save(f, t, m)
# compressed-tensors renamed to ModelOpt names, global scale not inverted
f = copy("ct_nvfp4", "ct_as_mo"); t, m = load(f); u = {}
for k, x in t.items():
    k = k.replace(".weight_packed", ".weight").replace(".weight_global_scale", ".weight_scale_2")
    u[k] = x
save(f, u, m)
os.remove(os.path.join(T, "ct_as_mo", "config.json"))
shutil.copy(os.path.join(P, "modelopt_nvfp4", "hf_quant_config.json"), os.path.join(T, "ct_as_mo"))
# E8M0 0xFF
f = copy("ct_mxfp4", "ff"); t, m = load(f); t[O.replace(".weight", ".weight_scale")][2][5] = 0xFF; save(f, t, m)
# padded scale columns
f = copy("modelopt_nvfp4", "pad"); t, m = load(f)
d, s, raw = t[O + "_scale"]
a = np.concatenate([np.frombuffer(bytes(raw), np.uint8).reshape(s), np.zeros((s[0], 4), np.uint8)], axis=1)
t[O + "_scale"] = [d, list(a.shape), bytearray(a.tobytes())]; save(f, t, m)
# [1] instead of 0-d
f = copy("modelopt_nvfp4", "one"); t, m = load(f)
for k in t:
    if k.endswith("weight_scale_2"):
        assert t[k][1] == [], t[k][1]
        t[k][1] = [1]
save(f, t, m)
# TensorRT-LLM's 1-D U8 CUTLASS scales (ModelOpt try_tensorrt), as its
# modelopt_fp4_scale_to_cutlass_fp4_scale lays them out; and one 4 bytes short
def cutlass(a):
    m, n = a.shape
    p = np.pad(a, ((0, (128 - m % 128) % 128), (0, (4 - n % 4) % 4)))
    M, N = p.shape
    return p.reshape(M // 128, 4, 32, N // 4, 4).transpose(0, 3, 2, 1, 4).reshape(-1)
for name, short in (("cutlass", 0), ("cutlass_short", 4)):
    f = copy("modelopt_nvfp4", name); t, m = load(f)
    for k in list(t):
        if k.endswith(".weight_scale"):
            d, s, raw = t[k]
            c = cutlass(np.frombuffer(bytes(raw), np.uint8).reshape(s))
            c = c[:len(c) - short]
            t[k] = ["U8", [len(c)], bytearray(c.tobytes())]
    save(f, t, m)
# a zero block in the source (row 3, block 1 of o_proj) and exports with three conventions
f = copy("source", "zsrc"); t, m = load(f)
d, s, raw = t[O]; a = np.frombuffer(bytes(raw), np.uint16).reshape(s).copy(); a[3, 16:32] = 0
t[O][2] = bytearray(a.tobytes()); save(f, t, m)
for name, byte in (("z_modelopt", 0x38), ("z_te", 0x00), ("z_ct", 0x20)):
    f = copy("modelopt_nvfp4", name); t, m = load(f)
    d, s, raw = t[O]; w = np.frombuffer(bytes(raw), np.uint8).reshape(s).copy(); w[3, 8:16] = 0
    t[O][2] = bytearray(w.tobytes())
    d, s, raw = t[O + "_scale"]; sc = np.frombuffer(bytes(raw), np.uint8).reshape(s).copy()
    sc[3, 1] = byte; t[O + "_scale"][2] = bytearray(sc.tobytes()); save(f, t, m)
PY

# the global scale in the other direction
"$FP4DIAG" audit "$P/source" "$tmp/recip" >"$tmp/table" || fail "recip exited $?"
grep -q "^layout: $O: the export is sane only with global scale reciprocal (20\.[0-9]* dB; as declared: -1[0-9][0-9]\.[0-9]* dB); measured so (.*global divided (declared multiplied)), left out of the pool" "$tmp/table" \
    || { cat "$tmp/table"; fail "reciprocal not named"; }
grep -q "^global scale: $O: stored .*, the modelopt rule gives .* from the tensor amax" "$tmp/table" || fail "global scale line"
grep -q '^(pooled, 6 tensors)' "$tmp/table" || fail "reciprocal tensor pooled"
"$FP4DIAG" audit "$P/source" "$tmp/ct_as_mo" -o "$tmp/c.json" >"$tmp/table" || fail "ct_as_mo exited $?"
[ "$(grep -c '^layout: ' "$tmp/table")" -eq 1 ] && grep -q '^layout: every tensor: global scale reciprocal, not as declared' "$tmp/table" \
    || { cat "$tmp/table"; fail "renamed compressed-tensors: not one line for every tensor"; }
python3 - "$tmp/c.json" <<'PY' || fail "ct_as_mo JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["tensors"]) == 7 and r["pooled"]["tensors"] == 0, r["pooled"]
for t in r["tensors"]:
    lc = t["layout_check"]
    assert lc["fits"] == "global scale reciprocal" and not lc["as_declared"], lc
    assert t["quant"]["producer"] == "modelopt", t["quant"]
    # measured divided, as compressed-tensors decodes (issue 27): the fitting reading's numbers
    h = {x["layout"]: x["sqnr_db"] for x in lc["hypotheses"]}
    assert t["export"]["sqnr_db"] == h["global scale reciprocal"] > h["as declared"] + 100, lc
    assert "global divided (declared multiplied)" in t["quant"]["layout"], t["quant"]
    assert t["nonnearest_frac"] < 0.01, t
for side in ("export", "requant"):
    assert r["pooled"][side]["sqnr_status"] == "none_pooled", r["pooled"]
PY

# E8M0 0xFF
"$FP4DIAG" audit "$P/source" "$tmp/ff" -q 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] || fail "0xFF: exit $rc"
grep -q "$O: no layout makes the export sane .*; 1 block scale is E8M0 0xFF" "$tmp/e" || { cat "$tmp/e"; fail "0xFF not named"; }

# padded scale columns
"$FP4DIAG" audit "$P/source" "$tmp/pad" -q 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] && grep -q "$O: weight_scale is 64x8, expected 64x4" "$tmp/e" || { cat "$tmp/e"; fail "padded scales: exit $rc"; }

# 0-d and [1]: the same report
"$FP4DIAG" audit "$P/source" "$tmp/one" -q -o "$tmp/one.json" || fail "[1] exited $?"
"$FP4DIAG" audit "$P/source" "$P/modelopt_nvfp4" -q -o "$tmp/zero_d.json" || fail "0-d exited $?"
python3 -c "
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a['tensors'] == b['tensors'] and a['pooled'] == b['pooled']" "$tmp/one.json" "$tmp/zero_d.json" || fail "[1] vs 0-d"

# 1-D CUTLASS scales: read as the same tiles, the same numbers as the flat export; a wrong size
# is an errors entry
"$FP4DIAG" audit "$P/source" "$tmp/cutlass" -q -o "$tmp/cut.json" || fail "cutlass exited $?"
python3 - "$tmp/cut.json" "$tmp/zero_d.json" <<'PY' || fail "cutlass vs flat"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert len(a["tensors"]) == 7
for x, y in zip(a["tensors"], b["tensors"]):
    assert x["quant"]["layout"] == "nibble low=even, e4m3 scales 1-D cutlass 128x4, global multiplied", x["quant"]
    for k in ("export", "requant", "nonnearest", "scale_match_frac", "scale_byte_diff", "global_scale"):
        assert x[k] == y[k], (x["name"], k, x[k], y[k])
assert a["pooled"] == b["pooled"]
PY
"$FP4DIAG" audit "$P/source" "$tmp/cutlass_short" -q 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] && grep -q "down_proj.weight: weight_scale is 1020, expected 64x8 (one E4M3 scale per 16 of 128 inputs) or, 1-D as TensorRT-LLM lays them out, 1024" "$tmp/e" || { cat "$tmp/e"; fail "short cutlass scales: exit $rc"; }

# zero-block conventions
for z in z_modelopt:1:1 z_te:0.99609375:0 z_ct:0.99609375:0; do
    name=${z%%:*}; rest=${z#*:}; frac=${rest%%:*}; mid=${rest#*:}
    "$FP4DIAG" audit "$tmp/zsrc" "$tmp/$name" "$O" --json >"$tmp/z.json" || fail "$name exited $?"
    python3 - "$tmp/z.json" "$frac" "$mid" <<'PY' || fail "zero block $name"
import json, sys
t = json.load(open(sys.argv[1]))["tensors"][0]
assert t["zero_blocks"] == 1, t["zero_blocks"]
assert t["scale_match_frac"] == float(sys.argv[2]), t["scale_match_frac"]
d = t["scale_byte_diff"]
assert d[8] == t["scale_bytes"] - (1 - int(sys.argv[3])) and d[0] == 1 - int(sys.argv[3]), d
assert t["global_scale"]["match"], t["global_scale"]
PY
done
exit 0
