#!/bin/sh
# audit_threads.sh — `fp4diag audit` on the read pool's threads (SPEC §11): a ModelOpt NVFP4 and
# a compressed-tensors MXFP4 export of 1M-element weights (slabs large enough to be cut into
# pieces; scripts/make_quantized_testdata.py's writers) give the same report, byte for byte
# apart from the seconds and the -o path, on 1, 2 and 3 threads (FP4DIAG_READ_THREADS), and the
# numbers are right: every scale byte reproduced, export = fp4diag's round-to-nearest.
set -u
python3 -c 'import numpy' 2>/dev/null || { echo "numpy not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

PYTHONPATH="$PWD/scripts" python3 - "$tmp" <<'PY' || fail "writing the exports"
import os, sys
import numpy as np
import make_quantized_testdata as m
out = sys.argv[1]
rng = np.random.default_rng(31)
P = "model.layers.0."
src = {}
for name, shape in [("self_attn.o_proj", (1024, 1024)), ("mlp.down_proj", (512, 2048))]:
    w = rng.standard_normal(shape).astype(np.float32) * 0.02
    w *= np.exp(rng.standard_normal((shape[0], 1))).astype(np.float32)
    src[P + name + ".weight"] = m.bf16_round(w)
for d in ("source", "nv", "mx"):
    os.makedirs(os.path.join(out, d))
m.write_st(os.path.join(out, "source", "model.safetensors"), [m.bf16(k, v) for k, v in src.items()])
t = []
for k, w in src.items():
    ws2 = np.float32(np.float32(np.max(np.abs(w))) / np.float32(2688.0))
    p, sb, _ = m.modelopt_nvfp4(w, ws2)
    t += [m.u8(k, p), m.u8(k + "_scale", sb, "F8_E4M3"), m.f32(k + "_scale_2", np.float32(ws2).reshape(()))]
m.write_st(os.path.join(out, "nv", "model.safetensors"), t)
t = []
for k, w in src.items():
    p, sb, _ = m.mxfp4(w, m.ct_mx_byte)
    b = k[: -len(".weight")]
    t += [m.u8(b + ".weight_packed", p), m.u8(b + ".weight_scale", sb)]
m.write_st(os.path.join(out, "mx", "model.safetensors"), t)
m.write_json(os.path.join(out, "mx", "config.json"), {"quantization_config": {
    "quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized"}})
PY
for fx in nv mx; do
    for n in 1 2 3; do
        SOURCE_DATE_EPOCH=0 FP4DIAG_READ_THREADS=$n "$FP4DIAG" audit "$tmp/source" "$tmp/$fx" -q -o "$tmp/$fx$n.json" ||
            fail "$fx on $n threads exited $?"
        grep -v '"seconds"' "$tmp/$fx$n.json" | sed "s|$tmp/$fx$n.json|OUT|" >"$tmp/$fx$n.cmp"
    done
    cmp -s "$tmp/${fx}1.cmp" "$tmp/${fx}2.cmp" && cmp -s "$tmp/${fx}1.cmp" "$tmp/${fx}3.cmp" ||
        { diff "$tmp/${fx}1.cmp" "$tmp/${fx}3.cmp" | head; fail "$fx: the report depends on the threads"; }
    python3 - "$tmp/${fx}3.json" <<'PY' || fail "$fx: numbers"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["errors"] == [] and len(r["tensors"]) == 2, r["errors"]
for t in r["tensors"]:
    assert t["scale_match_frac"] == 1 and t["layout_check"]["as_declared"], t
    assert abs(t["export"]["sqnr_db"] - t["requant"]["sqnr_db"]) <= 1e-9, (t["export"], t["requant"])
    assert t["export"]["histogram"] == t["requant"]["histogram"] and sum(t["export"]["histogram"]) == t["elements"]
PY
done
exit 0
