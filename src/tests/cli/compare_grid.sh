#!/bin/sh
# compare_grid.sh — compare of two grid reports: each format's grid is compared exactly, so a
# changed level or a missing format is a regression (exit 1, one regression line each), and the
# final message names no threshold (SQNR drop, alpha change and bucket drop do not apply to a
# grid; any difference regresses), whatever thresholds the command line sets. Equal grids: exit
# 0, no message.
set -u
F=${FP4DIAG:-$PWD/fp4diag}
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 -c 'import json' 2>/dev/null || { echo "python3 not installed"; exit 77; }
"$F" grid --format e2m1,int4 -o "$T/base.json" 2>/dev/null || fail "grid e2m1,int4"
"$F" grid --format e2m1 -o "$T/one.json" 2>/dev/null || fail "grid e2m1"
# e2m1's second level q 0.5 -> 0.25 (an edited grid)
python3 - "$T/base.json" "$T/edit.json" <<'PY' || fail "fixture"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["grids"][0]
assert g["format"] == "e2m1" and g["levels"][1]["q"] == 0.5, g
g["levels"][1]["q"] = 0.25
json.dump(d, open(sys.argv[2], "w"))
PY
# regressed WHAT LINE NEW [OPTION...]: compare base.json with NEW exits 1, says the regression
# LINE and the final message, and names no threshold
regressed() {
    what=$1 line=$2 new=$3
    shift 3
    "$F" compare "$T/base.json" "$new" "$@" >"$T/out" 2>"$T/err"; rc=$?
    [ "$rc" -eq 1 ] || { cat "$T/out" "$T/err"; fail "$what: exit $rc, want 1"; }
    grep -qx "$line" "$T/err" || { cat "$T/err"; fail "$what: regression line"; }
    grep -qx 'fp4diag compare: 1 of 2 results regressed (grids are compared exactly: no threshold applies)' "$T/err" ||
        { cat "$T/err"; fail "$what: final message"; }
    grep -qi 'threshold.*[0-9]\|SQNR drop\|alpha change\|bucket drop' "$T/err" &&
        { cat "$T/err"; fail "$what: a threshold named"; }
    return 0
}
regressed "edited grid" 'regression: e2m1 grid: the grid (levels, bins, analytic bias) differs' \
    "$T/edit.json"
# a format missing from NEW, thresholds set on the command line: still none named
regressed "missing format" 'regression: int4 grid: in BASE, missing from NEW' "$T/one.json" \
    --max-sqnr-drop 1 --max-alpha-change 0.5 --max-bucket-drop 0.5
# the same grids: no regression, no message
"$F" compare "$T/base.json" "$T/base.json" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 0 ] || { cat "$T/out" "$T/err"; fail "same grids: exit $rc, want 0"; }
grep -q 'regress' "$T/err" && { cat "$T/err"; fail "same grids: a regression said"; }
exit 0
