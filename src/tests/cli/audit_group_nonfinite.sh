#!/bin/sh
# audit_group_nonfinite.sh — audit never gives a number from a broken fused group, a non-finite
# source or a bad per-tensor scalar (SPEC §11), each case made from a producer-written
# checkpoint (testdata/quantized/producer/) by editing its bytes here:
#   - v_proj (the member holding the q/k/v group's amax) malformed in the export: q and k still
#     get the group amax of all three sources, the same numbers as the intact export;
#   - v_proj missing from the source, or holding NaN/Inf there: q and k are errors entries
#     naming v_proj, never a scale from q/k alone; v_proj's own entry names the SOURCE;
#   - a non-finite value in a source tensor (MXFP4 too): an errors entry naming the source and
#     the count, not "no layout makes the export sane";
#   - an E4M3 NaN block-scale byte: an errors entry naming the export and the byte, the other
#     members of its group unchanged;
#   - weight_scale_2 / weight_global_scale / input_scale / input_global_scale NaN, Inf, 0 or
#     negative: an errors entry naming the file, the tensor and the member; the others run;
#   - a malformed member with rows longer than the run's slab: its group amax read stays in a
#     buffer of its own size (no overrun).
set -u
P=testdata/quantized/producer
[ -d "$P/source" ] || { echo "no $P"; exit 77; }
python3 -c 'import numpy' 2>/dev/null || { echo "numpy not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
A=model.layers.0.self_attn
Q=$A.q_proj.weight K=$A.k_proj.weight V=$A.v_proj.weight O=$A.o_proj.weight

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
A = "model.layers.0.self_attn"
V, O = A + ".v_proj.weight", A + ".o_proj.weight"
def nonfinite(name, tensor):
    f = copy("source", name); t, m = load(f)
    d, s, raw = t[tensor]; a = np.frombuffer(bytes(raw), np.uint16).copy()
    a[5], a[9] = 0x7FC0, 0xFF80  # bf16 NaN, -Inf
    t[tensor][2] = bytearray(a.tobytes()); save(f, t, m)
# v_proj's export malformed (packed codes reshaped: its scales no longer fit)
f = copy("modelopt_nvfp4", "vshape"); t, m = load(f)
d, s, raw = t[V]; t[V] = [d, [s[0] // 2, s[1] * 2], raw]; save(f, t, m)
# v_proj missing from the source; NaN/Inf in the source's v_proj and o_proj
f = copy("source", "nov"); t, m = load(f); del t[V]; save(f, t, m)
nonfinite("vnan", V)
nonfinite("onan", O)
# an E4M3 NaN byte (0x7F) in v_proj's block scales
f = copy("modelopt_nvfp4", "e4nan"); t, m = load(f); t[V + "_scale"][2][3] = 0x7F; save(f, t, m)
# bad per-tensor scalars
for v in ("nan", "inf", "0", "-1"):
    for member in ("weight_scale_2", "input_scale"):
        f = copy("modelopt_nvfp4", "mo_%s_%s" % (member, v)); t, m = load(f)
        t[A + ".o_proj." + member][2][:] = struct.pack("<f", float(v)); save(f, t, m)
f = copy("ct_nvfp4", "ct_gs_nan"); t, m = load(f)
t[O + "_global_scale"][2][:] = struct.pack("<f", float("nan")); save(f, t, m)
f = copy("ct_nvfp4", "ct_in_nan"); t, m = load(f)
t[A + ".o_proj.input_global_scale"] = ["F32", [1], bytearray(struct.pack("<f", float("nan")))]
save(f, t, m)
PY

"$FP4DIAG" audit "$P/source" "$P/modelopt_nvfp4" -q -o "$tmp/ok.json" || fail "intact export exited $?"

# 1. a malformed member's source still counts in its group's amax
"$FP4DIAG" audit "$P/source" "$tmp/vshape" -q -o "$tmp/vshape.json" 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] || fail "vshape: exit $rc"
grep -q "$tmp/vshape: $V: weight_scale is" "$tmp/e" || { cat "$tmp/e"; fail "vshape: v_proj not named"; }
python3 - "$tmp/ok.json" "$tmp/vshape.json" <<'PY' || fail "vshape: q/k numbers differ from the intact export's"
import json, sys
ok, r = (json.load(open(f)) for f in sys.argv[1:3])
want = {t["name"]: t for t in ok["tensors"]}
got = {t["name"]: t for t in r["tensors"]}
v = "model.layers.0.self_attn.v_proj.weight"
assert v not in got and [e["tensor"] for e in r["errors"]] == [v], r["errors"]
assert len(got) == 6, sorted(got)
for n, t in got.items():  # every other tensor, q and k included, as in the intact export
    assert t == want[n], (n, t["global_scale"], want[n]["global_scale"])
PY

# 2. a member with no source: its group's other members are errors entries naming it
"$FP4DIAG" audit "$tmp/nov" "$P/modelopt_nvfp4" -q -o "$tmp/nov.json" 2>/dev/null; rc=$?
[ "$rc" -eq 3 ] || fail "nov: exit $rc"
python3 - "$tmp/nov.json" "$tmp/nov" "$P/modelopt_nvfp4" <<'PY' || fail "nov: errors"
import json, sys
r = json.load(open(sys.argv[1])); src, qd = sys.argv[2], sys.argv[3]
A = "model.layers.0.self_attn"
e = {x["tensor"]: x["message"] for x in r["errors"]}
assert sorted(e) == [A + ".k_proj.weight", A + ".q_proj.weight", A + ".v_proj.weight"], e
assert e[A + ".v_proj.weight"] == "%s: %s.v_proj.weight: no such tensor in the source" % (src, A), e
for m in ("q", "k"):
    msg = e["%s.%s_proj.weight" % (A, m)]
    assert msg.startswith("%s: %s.%s_proj.weight: the per-tensor scale of its fused group (qkv) "
                          "cannot be re-derived: member %s.v_proj.weight has no source amax (%s: "
                          % (qd, A, m, A, src)), msg
assert sorted(t["name"] for t in r["tensors"]) == sorted(
    "model.layers.0." + n + ".weight" for n in
    ("mlp.down_proj", "mlp.gate_proj", "mlp.up_proj", "self_attn.o_proj")), r["tensors"]
PY

# 3. NaN/Inf in a member's source: its own entry names the source and the count; q/k name it
"$FP4DIAG" audit "$tmp/vnan" "$P/modelopt_nvfp4" -q -o "$tmp/vnan.json" 2>/dev/null; rc=$?
[ "$rc" -eq 3 ] || fail "vnan: exit $rc"
python3 - "$tmp/vnan.json" "$tmp/vnan" <<'PY' || fail "vnan: errors"
import json, sys
r = json.load(open(sys.argv[1])); src = sys.argv[2]
A = "model.layers.0.self_attn"
e = {x["tensor"]: x["message"] for x in r["errors"]}
assert sorted(e) == [A + ".k_proj.weight", A + ".q_proj.weight", A + ".v_proj.weight"], e
assert e[A + ".v_proj.weight"] == ("%s: %s.v_proj.weight: 2 non-finite values (NaN/Inf) in the "
                                   "source: nothing to measure the export against" % (src, A)), e
for m in ("q", "k"):
    assert e["%s.%s_proj.weight" % (A, m)].endswith(
        "member %s.v_proj.weight has no source amax (%s: %s.v_proj.weight: 2 non-finite values "
        "(NaN/Inf) in the source)" % (A, src, A)), e
assert len(r["tensors"]) == 4
PY

# 4. NaN/Inf in an ungrouped tensor's source, NVFP4 and MXFP4: the source named, not the layout
for X in modelopt_nvfp4 ct_mxfp4; do
    "$FP4DIAG" audit "$tmp/onan" "$P/$X" -q -o "$tmp/onan.json" 2>/dev/null; rc=$?
    [ "$rc" -eq 3 ] || fail "onan $X: exit $rc"
    python3 - "$tmp/onan.json" "$tmp/onan" <<'PY' || fail "onan $X: errors"
import json, sys
r = json.load(open(sys.argv[1])); src = sys.argv[2]
O = "model.layers.0.self_attn.o_proj.weight"
assert [(x["tensor"], x["message"]) for x in r["errors"]] == [
    (O, "%s: %s: 2 non-finite values (NaN/Inf) in the source: nothing to measure the export "
        "against" % (src, O))], r["errors"]
assert len(r["tensors"]) == 6
PY
done

# 5. an E4M3 NaN block scale: the export named with the byte; q/k keep the group's numbers
"$FP4DIAG" audit "$P/source" "$tmp/e4nan" -q -o "$tmp/e4nan.json" 2>/dev/null; rc=$?
[ "$rc" -eq 3 ] || fail "e4nan: exit $rc"
python3 - "$tmp/ok.json" "$tmp/e4nan.json" "$tmp/e4nan" <<'PY' || fail "e4nan"
import json, sys
ok, r = (json.load(open(f)) for f in sys.argv[1:3])
V = "model.layers.0.self_attn.v_proj.weight"
[(n, msg)] = [(x["tensor"], x["message"]) for x in r["errors"]]
assert n == V and msg.startswith("%s: %s: no layout makes the export sane" % (sys.argv[3], V)), msg
assert msg.endswith("; 1 block scale is an E4M3 NaN byte"), msg
want = {t["name"]: t for t in ok["tensors"]}
assert len(r["tensors"]) == 6 and all(t == want[t["name"]] for t in r["tensors"])
PY

# 6. bad per-tensor scalars: an errors entry naming file, tensor and member; the others run
check_scalar() { # DIR MEMBER VALUE_AS_PRINTED
    "$FP4DIAG" audit "$P/source" "$tmp/$1" -q -o "$tmp/s.json" 2>/dev/null; rc=$?
    [ "$rc" -eq 3 ] || fail "$1: exit $rc"
    python3 - "$tmp/s.json" "$tmp/$1" "$2" "$3" <<'PY' || fail "$1: errors"
import json, sys
r = json.load(open(sys.argv[1])); d, member, v = sys.argv[2:5]
O = "model.layers.0.self_attn.o_proj"
[(n, msg)] = [(x["tensor"], x["message"]) for x in r["errors"]]
assert n == O + ".weight", n
assert msg.startswith("%s: %s.weight: %s.%s is %s, expected finite and > 0" % (d, O, O, member, v)), msg
assert len(r["tensors"]) == 6 and O + ".weight" not in [t["name"] for t in r["tensors"]]
PY
}
for v in nan inf 0 -1; do
    check_scalar "mo_weight_scale_2_$v" weight_scale_2 "$v"
    check_scalar "mo_input_scale_$v" input_scale "$v"
done
check_scalar ct_gs_nan weight_global_scale nan
check_scalar ct_in_nan input_global_scale nan

# 7. a malformed member whose rows are longer than the run's slab (2^22 floats): its source
#    amax is read into a buffer of its own size (this overran the run's buffer: a crash)
python3 - "$tmp/big" <<'PY' || fail "making the long-row checkpoint"
import json, os, struct, sys
import numpy as np
T = sys.argv[1]
def save(path, t):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    h, off, blobs = {}, 0, []
    for k in sorted(t):
        d, s, raw = t[k]
        h[k] = {"dtype": d, "shape": s, "data_offsets": [off, off + len(raw)]}
        off += len(raw); blobs.append(raw)
    hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb))); f.write(hb); f.write(b"".join(blobs))
def bf16(a): return (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
rng = np.random.default_rng(1)
K, A = 1 << 23, "model.layers.0.self_attn."
save(T + "/src/model.safetensors",
     {A + "q_proj.weight": ["BF16", [1, K], bf16(rng.standard_normal(K) * 0.05)],
      A + "k_proj.weight": ["BF16", [64, 64], bf16(rng.standard_normal(4096) * 0.05)]})
g = struct.pack("<f", 1e-4)
save(T + "/q/model.safetensors",  # q_proj's block scales one byte short: a problem of its own
     {A + "q_proj.weight": ["U8", [1, K // 2], bytes(K // 2)],
      A + "q_proj.weight_scale": ["F8_E4M3", [1, K // 16 - 1], bytes(K // 16 - 1)],
      A + "q_proj.weight_scale_2": ["F32", [], g],
      A + "k_proj.weight": ["U8", [64, 32], bytes(64 * 32)],
      A + "k_proj.weight_scale": ["F8_E4M3", [64, 4], bytes([0x38]) * 256],
      A + "k_proj.weight_scale_2": ["F32", [], g]})
json.dump({"producer": {"name": "modelopt"},
           "quantization": {"quant_algo": "NVFP4", "group_size": 16}},
          open(T + "/q/hf_quant_config.json", "w"))
PY
"$FP4DIAG" audit "$tmp/big/src" "$tmp/big/q" -q -o "$tmp/big.json" 2>/dev/null; rc=$?
[ "$rc" -eq 3 ] || fail "long rows: exit $rc"
python3 - "$tmp/big.json" "$tmp/big/q" <<'PY' || fail "long rows: errors"
import json, sys
r = json.load(open(sys.argv[1]))
e = {x["tensor"]: x["message"] for x in r["errors"]}
q = "model.layers.0.self_attn.q_proj.weight"
assert e[q] == ("%s: %s: weight_scale is 1x524287, expected 1x524288 (one E4M3 scale per 16 of "
                "8388608 inputs)" % (sys.argv[2], q)), e
PY
echo "audit_group_nonfinite: ok"
