#!/bin/sh
# audit_modelopt_live.sh — NVIDIA ModelOpt's own code, as installed here, quantizes a tiny
# random Llama on the CPU and exports it three ways: NVFP4 (the modelopt_nvfp4() of
# scripts/make_producer_testdata.py: mtq.quantize with NVFP4_DEFAULT_CFG and a one-batch
# calibration, then modelopt.torch.export.export_hf_checkpoint), the same with down_proj in FP8
# (exported as MIXED_PRECISION), and MXFP4 (MXFP4_DEFAULT_CFG); each 4-bit weight is decoded by
# ModelOpt's own NVFP4QTensor / MXFP4QTensor.dequantize in fp32, and numpy computes each
# tensor's SQNR and alpha against the bf16 source in fp64, independently of fp4diag.
# `fp4diag audit` must read every export bit for bit (against ModelOpt's decode as the source,
# every tensor "exact"), and against the bf16 source give numpy's SQNR to 1e-6 dB and alpha to
# 1e-12 (and its non-amax SQNR, SPEC §11, to 1e-6 dB), reproduce every stored block-scale byte and per-tensor scale (scale_match_frac 1:
# ModelOpt's exports are round-to-nearest, the RTN column's SQNR the export's), and find the
# layout as declared. `sqnr` on an export alone analyses no scale as a weight: each quantized
# module is one skipped "already quantized" entry, by default, with '*', and where a scale
# tensor is named. The committed fixtures (testdata/quantized/producer/) pin one ModelOpt
# version; this checks the version installed (0.47.0 passes). Skips (77) where torch,
# transformers or nvidia-modelopt is not importable; PYTHON=/path/to/python picks a venv that
# has them (pip install torch transformers nvidia-modelopt requests).
set -u
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || { echo "skip: no $PY"; exit 77; }
if ! "$PY" -c 'import torch, transformers, modelopt.torch.quantization, modelopt.torch.export, safetensors, numpy' 2>/dev/null; then
    echo "skip: torch, transformers, nvidia-modelopt not importable by $PY (PYTHON=a venv with them)"
    exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

PYTHONPATH="$PWD/scripts" "$PY" - "$tmp" >"$tmp/versions" 2>"$tmp/py.err" <<'PY' || { cat "$tmp/py.err"; fail "ModelOpt's code"; }
import json, os, sys, warnings
warnings.filterwarnings("ignore")
import numpy as np
import torch
import make_producer_testdata as m
from safetensors.torch import load_file, save_file
out = sys.argv[1]
m.OUT = out
src = m.tiny_llama()
src.save_pretrained(os.path.join(out, "source"))
m.tidy(os.path.join(out, "source"))
x = {k: v.to(torch.float64).numpy()
     for k, v in load_file(os.path.join(out, "source", "model.safetensors")).items()}
versions = {"torch": torch.__version__}


def modelopt_mxfp4(dec, fx):
    """mtq.quantize(MXFP4_DEFAULT_CFG), export_hf_checkpoint, MXFP4QTensor.dequantize."""
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint
    from modelopt.torch.quantization.qtensor.mxfp4_tensor import MXFP4QTensor
    mo = m.tiny_llama()
    torch.manual_seed(1)
    batch = torch.randint(0, 32, (2, 8))
    mtq.quantize(mo, mtq.MXFP4_DEFAULT_CFG, lambda model: model(batch))
    d = os.path.join(out, fx)
    export_hf_checkpoint(mo, export_dir=d)
    m.tidy(d)
    sd = load_file(os.path.join(d, "model.safetensors"))
    for k in sorted(sd):
        if k.endswith(".weight_scale") and sd[k].dtype == torch.uint8:
            mod = k[: -len(".weight_scale")]
            packed = sd[mod + ".weight"]
            shape = (packed.shape[0], packed.shape[1] * 2)
            qt = MXFP4QTensor(torch.Size(shape), torch.float32, packed)
            w = qt.dequantize(dtype=torch.float32, scale=sd[k], block_sizes={-1: 32})
            dec[fx + "/" + mod + ".weight"] = w.reshape(shape).contiguous()


for fx in ("modelopt_nvfp4", "modelopt_mixed", "modelopt_mxfp4"):
    dec = {}
    if fx == "modelopt_mxfp4":
        modelopt_mxfp4(dec, fx)
    else:
        versions.update(m.modelopt_nvfp4(dec, fx, mixed=fx == "modelopt_mixed"))
    dec = {k.split("/", 1)[1]: v.contiguous() for k, v in dec.items()}
    os.makedirs(os.path.join(out, "dec_" + fx))
    save_file(dec, os.path.join(out, "dec_" + fx, "model.safetensors"))
    # fp64, numpy: the export (ModelOpt's decode) against the bf16 source
    # and over the non-amax elements: each block's but the first attaining its amax
    want, S = {}, np.zeros(5)
    B = 32 if fx == "modelopt_mxfp4" else 16
    for k, q in dec.items():
        a, b = x[k].ravel(), q.numpy().astype(np.float64).ravel()
        ab, bb = a.reshape(-1, B), b.reshape(-1, B)
        keep = np.ones(ab.shape, bool)
        keep[np.arange(len(ab)), np.argmax(np.abs(ab), axis=1)] = False
        s = np.array([a @ a, (a - b) @ (a - b), a @ b, (ab[keep] ** 2).sum(),
                      ((ab - bb)[keep] ** 2).sum()])
        want[k] = {"sqnr_db": 10 * np.log10(s[0] / s[1]), "alpha": s[2] / s[0],
                   "nonamax_db": 10 * np.log10(s[3] / s[4])}
        S += s
    want["(pooled)"] = {"sqnr_db": 10 * np.log10(S[0] / S[1]), "alpha": S[2] / S[0],
                        "nonamax_db": 10 * np.log10(S[3] / S[4])}
    json.dump(want, open(os.path.join(out, fx + ".want.json"), "w"))
print(json.dumps(versions))
PY
for fx in modelopt_nvfp4 modelopt_mixed modelopt_mxfp4; do
    nq=7
    [ "$fx" = modelopt_mixed ] && nq=6 # down_proj in FP8: not a 4-bit tensor, not audited
    fmt=nvfp4
    [ "$fx" = modelopt_mxfp4 ] && fmt=mxfp4
    "$FP4DIAG" audit "$tmp/dec_$fx" "$tmp/$fx" -q -o "$tmp/exact.json" || fail "audit $fx against its decode exited $?"
    "$FP4DIAG" audit "$tmp/source" "$tmp/$fx" -q -o "$tmp/src.json" || fail "audit $fx against the source exited $?"
    python3 - "$tmp/exact.json" "$tmp/src.json" "$tmp/$fx.want.json" "$nq" "$fmt" <<'PY' || fail "$fx: $(cat "$tmp/versions")"
import json, sys
ex, sr, want = (json.load(open(f)) for f in sys.argv[1:4])
nq, fmt = int(sys.argv[4]), sys.argv[5]
for r in (ex, sr):
    assert r["errors"] == [] and len(r["tensors"]) == nq, (r["errors"], [t["name"] for t in r["tensors"]])
    assert r["input"]["declared"].startswith("hf_quant_config.json: modelopt"), r["input"]
assert sorted(t["name"] for t in sr["tensors"]) == sorted(k for k in want if k != "(pooled)")
for t in ex["tensors"]:  # ModelOpt's own decode, bit for bit
    assert t["quant"]["format"] == fmt and t["quant"]["producer"] == "modelopt", t["quant"]
    assert t["export"]["sqnr_status"] == "exact", (t["name"], t["export"])
for t in sr["tensors"]:  # numpy's fp64 numbers; ModelOpt's scale rule and round-to-nearest
    w = want[t["name"]]
    assert abs(t["export"]["sqnr_db"] - w["sqnr_db"]) <= 1e-6, (t["name"], t["export"], w)
    assert abs(t["export"]["alpha"] - w["alpha"]) <= 1e-12, (t["name"], t["export"], w)
    assert abs(t["export"]["sqnr_nonamax_db"] - w["nonamax_db"]) <= 1e-6, (t["name"], t["export"], w)
    assert t["scale_match_frac"] == 1, (t["name"], t["scale_byte_diff"])
    g = t["global_scale"]  # NVFP4's per-tensor scale (MXFP4 has none)
    assert g is None if fmt == "mxfp4" else g["match"] and (g["group"] is None or g["group_shared"] is True), (t["name"], g)
    assert abs(t["export"]["sqnr_db"] - t["requant"]["sqnr_db"]) <= 1e-6, (t["name"], t["export"], t["requant"])
    assert t["nonnearest_frac"] < 0.01 and t["layout_check"]["as_declared"], t
p, w = sr["pooled"], want["(pooled)"]
assert p["tensors"] == nq and p["scale_match_frac"] == 1, p
assert abs(p["export"]["sqnr_db"] - w["sqnr_db"]) <= 1e-6 and abs(p["export"]["alpha"] - w["alpha"]) <= 1e-12, (p, w)
assert abs(p["export"]["sqnr_nonamax_db"] - w["nonamax_db"]) <= 1e-6, (p, w)
PY
    # the export alone: every quantized module one skipped entry, no scale analysed as a weight,
    # by default, with every tensor selected ('*') and with a scale tensor named
    for sel in "" "*" model.layers.0.self_attn.q_proj.weight_scale; do
        # shellcheck disable=SC2086
        "$FP4DIAG" sqnr "$tmp/$fx" ${sel:+"$sel"} -q -o "$tmp/sqnr.json" 2>"$tmp/err" \
            || { cat "$tmp/err"; fail "sqnr $fx $sel exited $?"; }
        python3 - "$tmp/sqnr.json" "$tmp/src.json" "$sel" <<'PY' || fail "sqnr $fx $sel"
import json, sys
r, a, sel = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert r["tensors"] == [] and r["errors"] == [], ([t["name"] for t in r["tensors"]], r["errors"])
q = {s["name"] for s in r["skipped"] if "quant" in s}
want = {t["name"] for t in a["tensors"]}
if sel.endswith("_scale"):  # the scale selects its logical tensor, quantized
    want = {sel[: -len("_scale")]}
assert q == want, (sorted(q), sorted(want))
for s in r["skipped"]:  # a scale is at most skipped as what it is
    assert "quant" not in s or not s["name"].endswith(("_scale", "_scale_2")), s
PY
    done
done
exit 0
