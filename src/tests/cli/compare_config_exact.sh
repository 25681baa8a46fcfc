#!/bin/sh
# compare_config_exact.sh — compare tells the reports' configs apart exactly: a config member
# spelled 1e999 (read as infinity) or one double away from the other report's is a difference
# (the "configs differ" note, and "key fields differ" for a key field), not equal as
# cJSON_Compare would take it (an infinite number equal to any, a relative DBL_EPSILON apart);
# an object member's members are matched by name, so their order is no difference.
set -u
F=${FP4DIAG:-$PWD/fp4diag}
S=testdata/reports/sample_sqnr.json
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# forge(OUT, MEMBER, SPELLING): the sample with config.MEMBER's number spelled SPELLING
forge() {
    python3 - "$S" "$1" "$2" "$3" <<'PY' || fail "fixture $2=$3"
import re, sys
text = open(sys.argv[1]).read()
pat = r'("config"\s*:\s*\{[^{}]*?"%s"\s*:\s*)(-?[0-9.eE+-]+)' % re.escape(sys.argv[3])
new, k = re.subn(pat, lambda m: m.group(1) + sys.argv[4], text, count=1)
assert k == 1, sys.argv[3]
open(sys.argv[2], "w").write(new)
PY
}
"$F" compare "$S" "$S" >/dev/null 2>"$T/err" || { cat "$T/err"; fail "itself"; }
grep -q 'configs differ' "$T/err" && { cat "$T/err"; fail "itself: configs differ"; }
for c in "block 1e999 key" "block -1e999 key" "block 16.000000000000004 key" \
         "seed 1e999 -" "seed 5e-324 -" "sr_bits 24.000000000000004 -"; do
    set -- $c
    forge "$T/f.json" "$1" "$2"
    "$F" compare "$S" "$T/f.json" >/dev/null 2>"$T/err"
    grep -q "note: the reports' configs differ: $1: " "$T/err" || { cat "$T/err"; fail "$1=$2: no note"; }
    if [ "$3" = key ]; then
        grep -q 'key fields differ' "$T/err" || { cat "$T/err"; fail "$1=$2: key fields"; }
    else
        grep -q 'key fields differ' "$T/err" && { cat "$T/err"; fail "$1=$2: not a key field"; }
    fi
done
# members matched by name, in any order: a gemm report whose config.rounding and config.rht
# list their members in another order has the same config (no note; every result pairs)
G=testdata/gpt_gemm_small.h5
"$F" gemm "$G" --layers 1 -q -o "$T/g.json" 2>"$T/err" || { cat "$T/err"; fail "gemm run"; }
python3 - "$T/g.json" "$T/g2.json" <<'PY' || fail "fixture: reordered members"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["config"]
for k in ("rounding", "rht"):
    assert isinstance(c[k], dict) and len(c[k]) > 1, (k, c[k])
    c[k] = dict(reversed(list(c[k].items())))
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
"$F" compare "$T/g.json" "$T/g2.json" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 0 ] || { cat "$T/out" "$T/err"; fail "reordered members: exit $rc, want 0"; }
grep -q 'configs differ' "$T/err" && { cat "$T/err"; fail "reordered members: configs differ"; }
exit 0
