#!/bin/sh
# compare_gemm_eta.sh — compare of two gemm reports names the rows' gain as SPEC §6 does: eta
# (the measured gain of a path), never alpha (a gemm report's alphas are its operands'): the
# verdict's failed check ("REGRESSED eta"), the regression line on stderr, the overall line
# ("eta closer to 1"), the final threshold message ("eta change", and no "bucket drop": a gemm
# path has no bucket ratios) and the JSON's `why`, in the full table and the records of a
# 40-column one. Analysis reports keep saying alpha.
set -u
F=${FP4DIAG:-$PWD/fp4diag}
G=testdata/reports/sample_gemm.json
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# /blocks/1/fc2 ufp4/fprop's eta 0.9874 -> 0.9674: 0.02 farther from 1
python3 - "$G" "$T/bad.json" <<'PY' || fail "fixture"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["layers"][0]["paths"][0]
assert (d["layers"][0]["name"], p["path"], p["eta"]) == ("/blocks/1/fc2", "fprop", 0.9874), p
p["eta"] = 0.9674
json.dump(d, open(sys.argv[2], "w"))
PY
"$F" compare "$G" "$T/bad.json" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/out" "$T/err"; fail "exit $rc, want 1"; }
grep -q '^/blocks/1/fc2  *ufp4/fprop .* REGRESSED eta$' "$T/out" || { cat "$T/out"; fail "verdict's check"; }
grep -q '; eta closer to 1 by more than 0.001 in 0, farther in 1$' "$T/out" || { cat "$T/out"; fail "overall line"; }
grep -q '^regression: /blocks/1/fc2 ufp4/fprop: eta 0.987400 -> 0.967400 (0.020000 farther from 1 > 0.001)$' "$T/err" ||
    { cat "$T/err"; fail "regression line"; }
grep -q '^fp4diag compare: 1 of 12 results regressed (thresholds: SQNR drop 0.05 dB, eta change 0.001)$' "$T/err" ||
    { cat "$T/err"; fail "final message"; }
grep -i 'alpha' "$T/out" "$T/err" && fail "a gemm comparison says alpha"
grep -i 'bucket' "$T/err" && fail "a gemm comparison names a bucket threshold"
# the records of a narrow table
COLUMNS=40 "$F" compare "$G" "$T/bad.json" >"$T/out" 2>/dev/null
grep -q 'dETA=-0.02000 .*REGRESSED' "$T/out" || { cat "$T/out"; fail "COLUMNS=40: record"; }
grep -q '^ *eta$' "$T/out" || { cat "$T/out"; fail "COLUMNS=40: the failed check"; }
grep -i 'alpha' "$T/out" && fail "COLUMNS=40: a gemm comparison says alpha"
# the JSON: the row's eta, its why
"$F" compare "$G" "$T/bad.json" --json >"$T/cmp.json" 2>/dev/null
python3 - "$T/cmp.json" <<'PY' || fail "JSON"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["verdict"] == "regressed"]
assert len(rows) == 1 and "eta" in rows[0] and "alpha" not in rows[0], rows
assert rows[0]["why"].startswith("eta 0.987400 -> 0.967400"), rows[0]["why"]
PY
# an analysis report's rows are still alpha
S=testdata/reports/sample_sqnr.json
python3 - "$S" "$T/sa.json" <<'PY' || fail "fixture"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["tensors"][0]["results"][0]
r["alpha"] = r["alpha"] - 0.05 if r["alpha"] < 1 else r["alpha"] + 0.05
json.dump(d, open(sys.argv[2], "w"))
PY
"$F" compare "$S" "$T/sa.json" >"$T/out" 2>"$T/err"
grep -q 'REGRESSED alpha$' "$T/out" && grep -q ': alpha .* farther from 1' "$T/err" &&
    grep -q 'alpha change 0.001, bucket drop 0.01)$' "$T/err" || { cat "$T/out" "$T/err"; fail "analysis: alpha"; }
exit 0
