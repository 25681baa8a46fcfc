#!/bin/sh
# bias_table.sh — the bias table heads its mean error "mean_err(t)" and explains the units in a
# footnote; with --layers K each pooled row is followed by the compound shrinkage per format,
# the same numbers as the report's summary "compound".
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$FP4DIAG" bias "$F" /qkv/w --format e2m1,e1m2 --layers 4 -v >"$tmp/r.json" 2>"$tmp/t" || fail "bias exit $?"
grep -q 'mean_err(t)' "$tmp/t" || fail "no mean_err(t) header"
grep -q 'mean error in normalized units t = |x|/s (per grid)' "$tmp/t" || fail "no footnote"
python3 - "$tmp/r.json" "$tmp/t" <<'PY' || exit 1
import json, re, sys
r = json.load(open(sys.argv[1]))
lines = [l for l in open(sys.argv[2]) if "(compound)" in l]
assert len(lines) == 2, lines
for s in r["summary"]["results"]:
    c = s["compound"]
    want = "prod(1-delta) %.5f, exp(-sum delta) %.5f" % (c["prod_one_minus_delta"], c["exp_neg_sum_delta"])
    hit = [l for l in lines if re.search(r"\s%s\s" % re.escape(s["format"]), l)]
    assert hit and "K=4 layers" in hit[0] and want in hit[0], (s["format"], hit, want)
PY
"$FP4DIAG" bias "$F" /qkv/w --format e2m1 -v >/dev/null 2>"$tmp/t2" || fail "bias exit $?"
grep -q '(compound)' "$tmp/t2" && fail "compound rows without --layers"
exit 0
