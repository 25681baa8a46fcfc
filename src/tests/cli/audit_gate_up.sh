#!/bin/sh
# audit_gate_up.sh — gate and up projections fused on one side only (SPEC §11): the fused
# <m>.gate_up_proj.weight [2I, K] is <m>.gate_proj.weight then <m>.up_proj.weight along dim 0.
# From the producer fixtures (testdata/quantized/producer/, written by ModelOpt and
# compressed-tensors), byte for byte: (a) the bf16 source with gate/up fused, against the
# separate exports: every number equal to the separate pairing's; (b) the exports with gate/up
# fused (codes and block scales concatenated, the shared per-tensor scale kept), against the
# separate source: export SQNR and alpha equal the fp64 values of the producers' own decode
# (expected.safetensors) over both halves, every scale byte reproduced. A fused tensor whose
# halves are not in the source, or of the wrong rows, stays an errors entry.
. src/tests/cli/lib/producer.sh
need expected.safetensors
need_py numpy

python3 - "$P" "$tmp" <<'PY' || fail "making the fused variants"
import sys
from st_raw import read, write, write_export
P, T = sys.argv[1:3]
M = "model.layers.0.mlp."
def fuse(t, suffixes, shared):
    for sfx in suffixes:
        g, u = t.pop(M + "gate_proj." + sfx), t.pop(M + "up_proj." + sfx)
        if sfx in shared:
            assert g == u, (sfx, "gate and up do not share it")
            t[M + "gate_up_proj." + sfx] = g
        else:
            assert g[0] == u[0] and g[1][1:] == u[1][1:], (sfx, g[:2], u[:2])
            t[M + "gate_up_proj." + sfx] = [g[0], [g[1][0] + u[1][0]] + g[1][1:], g[2] + u[2]]
s = read(P + "/source/model.safetensors")
fuse(s, ["weight"], [])
write(T + "/fsrc/model.safetensors", s)
# the fused source with up_proj's half missing: the split export's up_proj pairs with nothing
s2 = dict(s); s2[M + "gate_up_proj.weight"] = s[M + "gate_up_proj.weight"][:1] + [[128, 64], s[M + "gate_up_proj.weight"][2][:128 * 64 * 2]]
write(T + "/fsrc_half/model.safetensors", s2)
for fx, sfx, shared in (("modelopt_nvfp4", ["weight", "weight_scale", "weight_scale_2", "input_scale"], ["weight_scale_2", "input_scale"]),
                        ("ct_nvfp4", ["weight_packed", "weight_scale", "weight_global_scale"], ["weight_global_scale"]),
                        ("ct_mxfp4", ["weight_packed", "weight_scale"], [])):
    q = read(f"{P}/{fx}/model.safetensors")
    fuse(q, sfx, shared)
    write_export(f"{T}/f_{fx}", q, f"{P}/{fx}")
PY

M=model.layers.0.mlp.
for fx in modelopt_nvfp4 ct_nvfp4 ct_mxfp4; do
    "$FP4DIAG" audit "$P/source" "$P/$fx" -o "$tmp/sep_$fx.json" -q || fail "audit $fx exited $?"
    "$FP4DIAG" audit "$tmp/fsrc" "$P/$fx" -o "$tmp/fs_$fx.json" -q || fail "audit fused source/$fx exited $?"
    "$FP4DIAG" audit "$P/source" "$tmp/f_$fx" -o "$tmp/fq_$fx.json" -q || fail "audit source/fused $fx exited $?"
    python3 - "$tmp" "$fx" "$P" <<'PY' || fail "$fx numbers"
import json, struct, sys
import numpy as np
T, fx, P = sys.argv[1:4]
M = "model.layers.0.mlp."
def load(n):
    r = json.load(open(f"{T}/{n}.json"))
    assert r["errors"] == [], (n, r["errors"])
    # the source tensors a pairing reads are not "in SOURCE only"
    assert not [k for k in r["skipped"] if k["reason"].startswith("in SOURCE only")], (n, r["skipped"])
    return r, {t["name"]: t for t in r["tensors"]}
rs, sep = load("sep_" + fx)
# (a) fused source, separate export: the same numbers, the half named
r, got = load("fs_" + fx)
assert sorted(got) == sorted(sep), sorted(got)
for name, t in got.items():
    w = sep[name]
    lay = t["quant"]["layout"]
    half = {"gate_proj": ", source gate_up_proj 1st half", "up_proj": ", source gate_up_proj 2nd half"}
    note = next((v for k, v in half.items() if name == M + k + ".weight"), None)
    assert (lay == w["quant"]["layout"] + note) if note else lay == w["quant"]["layout"], (name, lay)
    for k in w:
        if k != "quant":
            assert t[k] == w[k], (name, k, t[k], w[k])
assert r["pooled"] == rs["pooled"], (r["pooled"], rs["pooled"])
# (b) separate source, fused export: the producers' own decode over both halves, in fp64
def st(path):
    b = open(path, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); base = 8 + n
    def get(k):
        v = h[k]; raw = b[base + v["data_offsets"][0]:base + v["data_offsets"][1]]
        if v["dtype"] == "BF16":
            a = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, np.float32)
        return a.astype(np.float64)
    return get
src, exp = st(P + "/source/model.safetensors"), st(P + "/expected.safetensors")
x = np.concatenate([src(M + p + ".weight") for p in ("gate_proj", "up_proj")])
q = np.concatenate([exp(f"{fx}/{M}{p}.weight") for p in ("gate_proj", "up_proj")])
sq, al = 10 * np.log10((x @ x) / ((x - q) @ (x - q))), (x @ q) / (x @ x)
r, got = load("fq_" + fx)
F = M + "gate_up_proj.weight"
assert sorted(got) == sorted(set(sep) - {M + "gate_proj.weight", M + "up_proj.weight"} | {F}), sorted(got)
t = got[F]
assert t["quant"]["layout"].endswith(", source gate_proj+up_proj"), t["quant"]
assert abs(t["export"]["sqnr_db"] - sq) <= 1e-6 and abs(t["export"]["alpha"] - al) <= 1e-12, (t["export"], sq, al)
assert abs(t["requant"]["sqnr_db"] - sq) <= 1e-6, (t["requant"], sq)
assert t["scale_match_frac"] == 1 and t["layout_check"]["as_declared"], t
assert t["nonnearest_frac"] < 0.01, t["nonnearest_frac"]
assert abs(r["pooled"]["export"]["sqnr_db"] - rs["pooled"]["export"]["sqnr_db"]) <= 1e-9, (r["pooled"], rs["pooled"])
PY
done

# a fused tensor whose halves are not in the source, and a fused source of the wrong rows:
# errors entries, never a pairing
"$FP4DIAG" audit "$P/gptoss_source" "$tmp/f_ct_mxfp4" -o "$tmp/n1.json" -q 2>/dev/null; rc=$?
[ "$rc" -eq 3 ] || fail "fused without halves: exit $rc"
"$FP4DIAG" audit "$tmp/fsrc_half" "$P/ct_mxfp4" -o "$tmp/n2.json" -q 2>/dev/null; rc=$?
[ "$rc" -eq 3 ] || fail "fused source of half the rows: exit $rc"
python3 - "$tmp" <<'PY' || fail "errors entries"
import json, sys
M = "model.layers.0.mlp."
e = {x["tensor"]: x["message"] for x in json.load(open(sys.argv[1] + "/n1.json"))["errors"]}
assert "gate_up_proj.weight: no such tensor in the source" in e[M + "gate_up_proj.weight"], e
r = json.load(open(sys.argv[1] + "/n2.json"))
e = {x["tensor"]: x["message"] for x in r["errors"]}
for p in ("gate_proj", "up_proj"):
    assert p + ".weight: no such tensor in the source" in e[M + p + ".weight"], e
assert M + "gate_proj.weight" not in [t["name"] for t in r["tensors"]], r["tensors"]
PY
exit 0
