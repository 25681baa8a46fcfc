#!/bin/sh
# shard_merge.sh — `--shard I/N` + `fp4diag merge` give the report of one process, byte for byte
# outside "timing" (its seconds), on the stored checkpoint (sqnr; rht with SR, whose streams
# follow the selection index, not the share) and GEMM file (gemm --layers; gemm --x/--w/--dy),
# for N = 2 and 3, with tensors the default selection skips (the skipped list kept) and with one
# that fails under --all-tensors (its errors entry kept in place); the partial reports validate.
# Missing, repeated and foreign parts exit 3 naming them, and write nothing.
. src/tests/cli/lib/parts.sh
python3 -c 'import jsonschema, h5py' 2>/dev/null || { echo "no python3 jsonschema/h5py"; exit 77; }
SCHEMA=$PWD/schema/report.schema.json
# a file with a string dataset between float tensors: its errors entry must keep its place
mixed_h5 "$tmp/mixed.h5" 3 f64
# case NAME EXPECTED_RC COMMAND ARGS...: one process, then 2 and 3 shares merged
case_() {
    n=$1 want=$2; shift 2
    mkdir -p "$tmp/$n/one" "$tmp/$n/m2" "$tmp/$n/m3"
    (cd "$tmp/$n/one" && "$FP4DIAG" "$@" -q -o r.json 2>/dev/null); rc=$?
    [ "$rc" -eq "$want" ] || fail "$n: one process exit $rc, want $want"
    for N in 2 3; do
        parts=""
        i=0
        while [ $i -lt $N ]; do
            (cd "$tmp/$n" && "$FP4DIAG" "$@" -q --shard $i/$N -o p$i-$N.json 2>/dev/null); rc=$?
            [ "$rc" -eq 0 ] || [ "$rc" -eq "$want" ] || fail "$n: share $i/$N exit $rc"
            parts="$parts ../p$i-$N.json"
            i=$((i + 1))
        done
        (cd "$tmp/$n/m$N" && "$FP4DIAG" merge $parts -o r.json 2>"$tmp/err"); rc=$?
        [ "$rc" -eq "$want" ] || { cat "$tmp/err"; fail "$n: merge of $N exit $rc, want $want"; }
        same "$tmp/$n/one/r.json" "$tmp/$n/m$N/r.json" "$n: merge of $N shares differs"
    done
    python3 - "$SCHEMA" "$tmp/$n"/p*.json "$tmp/$n/m3/r.json" <<'PY' || fail "$n: schema"
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
for f in sys.argv[2:]:
    v.validate(json.load(open(f)))
PY
}
case_ sqnr 0 sqnr "$C"
case_ rht_sr 0 rht "$C" /blocks/0 --rounding sr --seed 7 --format e2m1,int4 --layers 6
case_ mixed 0 bias "$tmp/mixed.h5"
case_ mixed_all 3 bias "$tmp/mixed.h5" --all-tensors
case_ gemm 0 gemm "$G" --layers 4
case_ gemm_mixed 3 gemm "$tmp/mixed.h5" /ga /gb /gc
# operands named by --x/--w/--dy: the layer is named after their group in the parts' selection
# (shard.layers) as in the layer itself
case_ gemm_spec 0 gemm --x "$G:/qkv/x" --w "$G:/qkv/w" --dy "$G:/qkv/dy"
grep -q '"errors":[[:space:]]*\[\]' "$tmp/mixed_all/one/r.json" && fail "mixed_all: no errors entry"
grep -q '"skipped":[[:space:]]*\[\]' "$tmp/mixed/one/r.json" && fail "mixed: nothing skipped"
python3 - "$tmp/sqnr" <<'PY' || fail "shares"
import json, sys
d = sys.argv[1]
parts = [json.load(open(f"{d}/p{i}-3.json")) for i in range(3)]
got = sorted(sum((p["shard"]["assigned"] for p in parts), []))
assert got == list(range(parts[0]["shard"]["selected"])), got
assert [p["shard"]["index"] for p in parts] == [0, 1, 2]
assert all(p["shard"]["count"] == 3 for p in parts)
# balanced by elements: no share holds more than the largest tensor above an even split
el = [sum(t["results"][0]["counts"]["elements"] for t in p["tensors"]) for p in parts]
big = max(t["results"][0]["counts"]["elements"] for p in parts for t in p["tensors"])
assert max(el) - min(el) <= big, el
PY

# bad part sets: exit 3, the culprits named, no output written
cd "$tmp/sqnr" || exit 1
bad() { # bad WHAT GREP PARTS...
    what=$1 pat=$2; shift 2
    "$FP4DIAG" merge "$@" -o bad.json 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 3 ] || { cat "$tmp/err"; fail "$what: exit $rc, want 3"; }
    grep -q -- "$pat" "$tmp/err" || { cat "$tmp/err"; fail "$what: message lacks '$pat'"; }
    [ -e bad.json ] && fail "$what: wrote a report"
    return 0
}
bad missing "share.* missing: 1/3" p0-3.json p2-3.json
bad repeated "share 1/3 given twice: p1-3.json and p1-3.json" p0-3.json p1-3.json p1-3.json p2-3.json
bad count "p0-2.json is not a share of the run of p0-3.json" p0-3.json p0-2.json p1-3.json p2-3.json
bad foreign "../rht_sr/p1-3.json is not a share" p0-3.json ../rht_sr/p1-3.json p2-3.json
bad gemm_foreign ": p1-2.json is not a share of the run of ../gemm/p0-2.json" ../gemm/p0-2.json ../gemm/p1-2.json p1-2.json
bad whole "one/r.json: not a partial report" p0-2.json one/r.json
sed 's/"sqnr"/"bias"/' p1-2.json >edited.json
bad edited "edited.json is not a share" p0-2.json edited.json
"$FP4DIAG" sqnr "$C" --shard 2/2 >/dev/null 2>"$tmp/err" && fail "--shard 2/2 accepted"
grep -q "0 <= I < N" "$tmp/err" || fail "--shard 2/2 message"
"$FP4DIAG" grid --shard 0/2 >/dev/null 2>&1 && fail "grid accepted --shard"
exit 0
