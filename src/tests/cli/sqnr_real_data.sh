#!/bin/sh
# sqnr_real_data.sh — the main job on the full real data (skipped when ../shared/data is absent):
# `sqnr` reports all 77 tensors of the bf16 checkpoint in one run with no errors, and
# `rht --format e2m1,e1m2` on the layer-1 GEMM operands gives a ΔSQNR per tensor and format;
# both reports validate against the schema.
set -u
D=${FP4_DATA:-../shared/data}
[ -f "$D/gpt_ckpt_final_bf16.h5" ] || D=/work/shared/data
[ -f "$D/gpt_ckpt_final_bf16.h5" ] && [ -f "$D/gpt_gemm_layer1.h5" ] || { echo "no real data"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null || { echo "no python3 jsonschema"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$FP4DIAG" sqnr "$D/gpt_ckpt_final_bf16.h5" --all-tensors -q -o "$tmp/sqnr.json" || { echo "sqnr exit $?"; exit 1; }
"$FP4DIAG" rht "$D/gpt_gemm_layer1.h5" --format e2m1,e1m2 -q -o "$tmp/rht.json" || { echo "rht exit $?"; exit 1; }
python3 - "$tmp" <<'PY' || exit 1
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open("schema/report.schema.json")))
s = json.load(open(sys.argv[1] + "/sqnr.json"))
v.validate(s)
assert len(s["tensors"]) == 77 and s["errors"] == [], (len(s["tensors"]), s["errors"])
assert [r["format"] for r in s["summary"]["results"]] == ["e2m1", "e1m2", "int4"]
assert all(t["dtype"] == "bf16" for t in s["tensors"])
# SPEC §5 sanity: fp32 block scales on real weights land near the Gaussian figures (~20.5, ~21.4 dB)
e2m1 = s["summary"]["results"][0]["sqnr_db"]
assert 18 < e2m1 < 23, e2m1
r = json.load(open(sys.argv[1] + "/rht.json"))
v.validate(r)
assert len(r["tensors"]) == 16 and r["errors"] == [], len(r["tensors"])
for t in r["tensors"]:
    assert [d["format"] for d in t["rht_delta"]] == ["e2m1", "e1m2"], t["name"]
    for d, (p, q) in zip(t["rht_delta"], (t["results"][0:2], t["results"][2:4])):
        assert p["rht"] is False and q["rht"] == {"size": 16, "signs": "te"}
        assert abs(d["delta_sqnr_db"] - (q["sqnr_db"] - p["sqnr_db"])) < 1e-9, t["name"]
assert len(r["summary"]["rht_delta"]) == 2
PY
exit 0
