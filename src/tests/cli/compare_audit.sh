#!/bin/sh
# compare_audit.sh — `fp4diag compare` on two audit reports (schema fp4diag.audit/1): rows per
# tensor "export" and "requant" plus "(pooled)", matched by name; an export SQNR drop beyond the
# threshold is a regression naming that tensor's export row only; a tensor missing from NEW is
# one; the differing checkpoints are a note; an audit report against an sqnr report, or a
# report whose schema contradicts its command, is refused (exit 3).
set -u
P=testdata/quantized/producer
[ -d "$P/source" ] || { echo "no $P"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$FP4DIAG" audit "$P/source" "$P/ct_nvfp4" -q -o "$tmp/nv.json" || fail "audit nvfp4"
"$FP4DIAG" audit "$P/source" "$P/ct_mxfp4" -q -o "$tmp/mx.json" || fail "audit mxfp4"

"$FP4DIAG" compare "$tmp/nv.json" "$tmp/nv.json" >"$tmp/out" 2>"$tmp/err" || fail "self: exit $?"
grep -q '^audit reports: 16 results: 16 same, 0 changed, 0 improved, 0 regressed' "$tmp/out" || { cat "$tmp/out"; fail "self"; }

# one tensor's export 0.1 dB worse, another tensor gone
python3 - "$tmp/nv.json" "$tmp/worse.json" <<'PY' || fail "edit"
import json, sys
r = json.load(open(sys.argv[1]))
t = [x for x in r["tensors"] if x["name"] == "model.layers.0.self_attn.k_proj.weight"][0]
t["export"]["sqnr_db"] -= 0.1
r["tensors"] = [x for x in r["tensors"] if x["name"] != "model.layers.0.mlp.up_proj.weight"]
json.dump(r, open(sys.argv[2], "w"))
PY
"$FP4DIAG" compare "$tmp/nv.json" "$tmp/worse.json" --json >"$tmp/c.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 1 ] || fail "worse: exit $rc"
grep -q '^regression: model.layers.0.self_attn.k_proj.weight export: SQNR' "$tmp/err" || { cat "$tmp/err"; fail "export drop not named"; }
grep -q 'k_proj.weight requant' "$tmp/err" && fail "requant row wrongly regressed"
python3 - "$tmp/c.json" <<'PY' || fail "compare JSON"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["command"] == "audit" and not c["pass"], c
rows = {(r["tensor"], r["result"]): r for r in c["rows"]}
k = rows[("model.layers.0.self_attn.k_proj.weight", "export")]
assert k["verdict"] == "regressed" and abs(k["sqnr_db"]["delta"] + 0.1) < 1e-9, k
assert k["bucket_ratio_15"]["delta"] == 0 and k["bucket_ratio_8"]["base"] > 0, k
for side in ("export", "requant"):
    assert rows[("model.layers.0.mlp.up_proj.weight", side)]["verdict"] == "regressed"
    assert rows[("model.layers.0.mlp.up_proj.weight", side)]["sqnr_db"]["new"] is None
assert ("model.layers.0.self_attn.k_proj.weight", "requant") not in rows
assert c["counts"]["missing"] == 2 and c["counts"]["regressed"] == 3, c["counts"]
PY
"$FP4DIAG" compare "$tmp/nv.json" "$tmp/worse.json" >"$tmp/out" 2>/dev/null
grep -q '^audit reports: 16 results: 13 same, 0 changed, 0 improved, 3 regressed (2 missing from NEW)' "$tmp/out" || { cat "$tmp/out"; fail "counts"; }

# an export whose bucket use fell (B15 0.02 lower) regresses on that row alone
python3 - "$tmp/nv.json" "$tmp/b.json" <<'PY' || fail "edit buckets"
import json, sys
r = json.load(open(sys.argv[1]))
t = [x for x in r["tensors"] if x["name"] == "model.layers.0.mlp.down_proj.weight"][0]
t["export"]["bucket_ratio_15"] -= 0.02
json.dump(r, open(sys.argv[2], "w"))
PY
"$FP4DIAG" compare "$tmp/nv.json" "$tmp/b.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 1 ] || fail "bucket drop: exit $rc"
grep -q '^regression: model.layers.0.mlp.down_proj.weight export: B15 .*(drop 0.0200 > 0.01)' "$tmp/err" || { cat "$tmp/err"; fail "bucket drop not named"; }
[ "$(grep -c '^regression:' "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "bucket drop: other rows"; }

# two checkpoints of one source: the note names them; MXFP4 is worse than NVFP4 here
"$FP4DIAG" compare "$tmp/nv.json" "$tmp/mx.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 1 ] || fail "nv vs mx: exit $rc"
grep -q "note: the reports' configs differ: quantized: $P/ct_nvfp4 vs $P/ct_mxfp4" "$tmp/err" || { cat "$tmp/err"; fail "note"; }
grep -q '^regression: (pooled) export: SQNR' "$tmp/err" || fail "pooled row"

# refused
"$FP4DIAG" sqnr "$P/source" -q -o "$tmp/s.json" || fail "sqnr"
"$FP4DIAG" compare "$tmp/s.json" "$tmp/nv.json" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] && grep -q "a 'sqnr' report and .* a 'audit' report: not comparable" "$tmp/err" || fail "sqnr vs audit: exit $rc"
sed 's/"schema":[^,]*/"schema": "fp4diag.report\/1"/' "$tmp/nv.json" >"$tmp/bad.json"
"$FP4DIAG" compare "$tmp/bad.json" "$tmp/nv.json" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] && grep -q "a 'audit' report with schema \"fp4diag.report/1\"" "$tmp/err" || { cat "$tmp/err"; fail "schema mismatch: exit $rc"; }
# the overall line of two audits: the export figure alone (the requant one, unchanged, is not
# averaged in): the pooled export 0.163 dB lower gives "BASE is better than NEW by +0.16 dB"
python3 - "$tmp/nv.json" "$tmp/p.json" <<'PY' || fail "edit pooled"
import json, sys
r = json.load(open(sys.argv[1]))
for t in r["tensors"]:
    t["export"]["sqnr_db"] -= 0.163
r["pooled"]["export"]["sqnr_db"] -= 0.163
json.dump(r, open(sys.argv[2], "w"))
PY
"$FP4DIAG" compare "$tmp/nv.json" "$tmp/p.json" >"$tmp/out" 2>/dev/null
grep -q '^overall: BASE is better than NEW by +0.16 dB (pooled SQNR); 0 of 7 results higher by more than 0.05 dB, 7 lower (mean -0.16, ' "$tmp/out" ||
    { cat "$tmp/out"; fail "overall: not the export figure alone"; }
exit 0
