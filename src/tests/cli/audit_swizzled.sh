#!/bin/sh
# audit_swizzled.sh — issue 27: a ModelOpt NVFP4 export whose weight_scale is stored in the
# cuBLAS 128x4 tile order in its flat shape (lib/mk_nvfp4.py --swizzle). Once the swizzled
# reading fits, every number of the tensor is taken under it: export SQNR, alpha, histogram,
# nonnear%, scale same% and the non-amax SQNR are exactly those of the same export stored flat
# (the same bytes, permuted); the layout says "scales swizzled 128x4 (declared flat)"; each row
# still LAYOUT and out of the pool, whose statuses say "none_pooled" (never "zero_signal"); one
# "layout: every tensor:" line for the four; exit 0; the shards merge to the single run.
. src/tests/cli/lib/quantized.sh
python3 src/tests/cli/lib/mk_nvfp4.py "$tmp/f" >/dev/null || fail "generator (flat)"
python3 src/tests/cli/lib/mk_nvfp4.py "$tmp/s" --swizzle >/dev/null || fail "generator (swizzled)"
"$FP4DIAG" audit "$tmp/f/source" "$tmp/f/export" -q -o "$tmp/f.json" || fail "flat exited $?"
"$FP4DIAG" audit "$tmp/s/source" "$tmp/s/export" -o "$tmp/s.json" >"$tmp/table" || fail "swizzled exited $?"
[ "$(grep -c '^layout: ' "$tmp/table")" -eq 1 ] || { cat "$tmp/table"; fail "not one layout line"; }
grep -q '^layout: every tensor: scales swizzled 128x4, not as declared (as declared: [0-9.]* to [0-9.]* dB); each tensor measured so, left out of the pool$' "$tmp/table" \
    || { cat "$tmp/table"; fail "summary layout line"; }
[ "$(grep -c ' LAYOUT$' "$tmp/table")" -eq 4 ] || { cat "$tmp/table"; fail "rows not flagged LAYOUT"; }
grep -q '^scale bytes:' "$tmp/table" && { cat "$tmp/table"; fail "scale bytes judged under the declared layout"; }
python3 - "$tmp/f.json" "$tmp/s.json" <<'PY' || fail "swizzled numbers"
import json, sys
f, s = (json.load(open(p)) for p in sys.argv[1:3])
assert f["pooled"]["tensors"] == 4 and s["pooled"]["tensors"] == 0, s["pooled"]
for side in ("export", "requant"):
    for k in ("sqnr_status", "sqnr_nonamax_status"):
        assert s["pooled"][side][k] == "none_pooled", s["pooled"]
ft = {t["name"]: t for t in f["tensors"]}
assert len(s["tensors"]) == 4
for t in s["tensors"]:
    u = ft[t["name"]]
    assert u["layout_check"]["as_declared"] and u["scale_match_frac"] == 1, u
    lc = t["layout_check"]
    assert lc["fits"] == "scales swizzled 128x4" and not lc["as_declared"], lc
    assert t["quant"]["layout"] == "nibble low=even, e4m3 scales swizzled 128x4 (declared flat), global multiplied", t["quant"]
    h = {x["layout"]: x for x in lc["hypotheses"]}
    assert h["scales swizzled 128x4"]["sqnr_db"] == t["export"]["sqnr_db"] > h["as declared"]["sqnr_db"] + 10, lc
    for k in ("export", "requant", "elements", "nonnearest", "scale_match_frac", "scale_byte_diff", "zero_blocks", "global_scale"):
        assert t[k] == u[k], (t["name"], k, t[k], u[k])
    assert t["export"]["sqnr_db"] == t["requant"]["sqnr_db"], t  # round-to-nearest: the same
PY
for i in 0 1; do
    "$FP4DIAG" audit "$tmp/s/source" "$tmp/s/export" --shard $i/2 -q -o "$tmp/p$i.json" || fail "shard $i exited $?"
done
"$FP4DIAG" merge "$tmp/p0.json" "$tmp/p1.json" -o "$tmp/m.json" >/dev/null || fail "merge exited $?"
python3 - "$tmp/m.json" "$tmp/s.json" <<'PY' || fail "merge is not the single run"
import json, sys
m, s = (json.load(open(p)) for p in sys.argv[1:3])
for r in (m, s):
    r.pop("timing"); r.pop("argv"); r.pop("provenance")
assert m == s, [k for k in m if m[k] != s.get(k)]
PY
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 - "$tmp/s.json" schema/audit.schema.json <<'PY' || fail "schema"
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))
PY
fi
exit 0
