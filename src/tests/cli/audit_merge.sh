#!/bin/sh
# audit_merge.sh — `fp4diag audit --shard I/N` and `fp4diag merge` on audit reports: the shares
# keep fused groups whole, and the merged report is the single run's, byte for byte apart from
# timing.seconds and the -o path (tensors and errors in selection order, the pooled line from
# the exact sums); a missing share, a part of another run and an edited part are refused;
# --shard without -o or --json is a usage error.
set -u
P=testdata/quantized/producer
Q=testdata/quantized
[ -d "$P/source" ] && [ -d "$Q/bad_partners" ] || { echo "no $P"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
same() { # single.json merged.json: equal apart from seconds and the -o path
    grep -v '"seconds"\|"time"' "$1" | sed "s|$1|OUT|" >"$tmp/a"
    grep -v '"seconds"\|"time"' "$2" | sed "s|$2|OUT|" >"$tmp/b"
    cmp -s "$tmp/a" "$tmp/b" || { diff "$tmp/a" "$tmp/b" | head -20; return 1; }
}

for case in "$P/source $P/modelopt_nvfp4 3" "$P/source $P/ct_nvfp4 2" "$Q/source $Q/bad_partners 2"; do
    set -- $case
    src=$1 q=$2 n=$3
    "$FP4DIAG" audit "$src" "$q" -q -o "$tmp/single.json" 2>/dev/null
    rc1=$?
    parts=""
    i=0
    while [ $i -lt $n ]; do
        "$FP4DIAG" audit "$src" "$q" --shard $i/$n -q -o "$tmp/p$i.json" 2>/dev/null
        rc=$?
        [ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "$q share $i/$n exited $rc"
        parts="$parts $tmp/p$i.json"
        i=$((i + 1))
    done
    "$FP4DIAG" merge $parts -o "$tmp/merged.json" 2>/dev/null
    rc2=$?
    [ $rc1 -eq $rc2 ] || fail "$q: merge exited $rc2, the single run $rc1"
    same "$tmp/single.json" "$tmp/merged.json" || fail "$q: merged report differs from the single run's"
    # q/k/v and gate/up each in one share
    python3 - $parts <<'PY' || fail "$q: a fused group split"
import json, sys
where = {}
for f in sys.argv[1:]:
    r = json.load(open(f))
    for t in r["tensors"]:
        m = t["name"].rsplit(".", 2)[-2]
        g = {"q_proj": "qkv", "k_proj": "qkv", "v_proj": "qkv", "gate_proj": "gu", "up_proj": "gu"}.get(m)
        if g: where.setdefault(t["name"].rsplit(".", 2)[0] + g, set()).add(r["shard"]["index"])
assert all(len(v) == 1 for v in where.values()), where
PY
done

# a per-tensor scale that cJSON's 15 digits write an ulp (of the double) off: ModelOpt's
# fp32(0.20703125 / 2688) of mk_keep.py's layer 0 o_proj, 7.702055154368281e-05 written
# 7.70205515436828e-05; merge checks the rule as shown, not bit for bit (it refused the parts)
if python3 -c 'import numpy' 2>/dev/null; then
    python3 src/tests/cli/lib/mk_keep.py "$tmp/k" || fail "mk_keep.py"
    "$FP4DIAG" audit "$tmp/k/source" "$tmp/k/modelopt" -q -o "$tmp/single.json" || fail "audit mk_keep"
    grep -q '"rule":	7.70205515436828e-05,' "$tmp/single.json" || fail "fixture: the scale is not written short"
    "$FP4DIAG" audit "$tmp/k/source" "$tmp/k/modelopt" --shard 0/2 -q -o "$tmp/k0.json" || fail "k0"
    "$FP4DIAG" audit "$tmp/k/source" "$tmp/k/modelopt" --shard 1/2 -q -o "$tmp/k1.json" || fail "k1"
    "$FP4DIAG" merge "$tmp/k0.json" "$tmp/k1.json" -o "$tmp/merged.json" 2>"$tmp/e" ||
        { cat "$tmp/e"; fail "mk_keep: merge of a fresh split refused"; }
    same "$tmp/single.json" "$tmp/merged.json" || fail "mk_keep: merged report differs from the single run's"
fi

# partial and merged reports against schema/audit.schema.json (when jsonschema is installed)
python3 - schema/audit.schema.json "$tmp"/p*.json "$tmp/merged.json" <<'PY' || fail "schema"
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
s = json.load(open(sys.argv[1]))
for f in sys.argv[2:]:
    jsonschema.validate(json.load(open(f)), s)
PY

# refused: a share missing, a part of another run, an edited part
"$FP4DIAG" audit "$P/source" "$P/modelopt_nvfp4" --shard 0/2 -q -o "$tmp/a0.json" || fail "a0"
"$FP4DIAG" audit "$P/source" "$P/modelopt_nvfp4" --shard 1/2 -q -o "$tmp/a1.json" || fail "a1"
"$FP4DIAG" audit "$P/source" "$P/ct_nvfp4" --shard 1/2 -q -o "$tmp/c1.json" || fail "c1"
"$FP4DIAG" merge "$tmp/a0.json" -o "$tmp/m.json" 2>"$tmp/e"; rc=$?
[ $rc -eq 3 ] && grep -q '1 of 2 shares missing: 1/2' "$tmp/e" || { cat "$tmp/e"; fail "missing share: exit $rc"; }
"$FP4DIAG" merge "$tmp/a0.json" "$tmp/c1.json" -o "$tmp/m.json" 2>"$tmp/e"; rc=$?
[ $rc -eq 3 ] && grep -q 'is not a share of the run of' "$tmp/e" || { cat "$tmp/e"; fail "foreign part: exit $rc"; }
python3 - "$tmp/a1.json" "$tmp/a1e.json" <<'PY' || fail "edit"
import json, sys
r = json.load(open(sys.argv[1])); r["tensors"][0]["export"]["sqnr_db"] += 0.5
json.dump(r, open(sys.argv[2], "w"))
PY
"$FP4DIAG" merge "$tmp/a0.json" "$tmp/a1e.json" -o "$tmp/m.json" 2>"$tmp/e"; rc=$?
[ $rc -eq 3 ] && grep -q 'the numbers shown are not what its exact sums give' "$tmp/e" || { cat "$tmp/e"; fail "edited part: exit $rc"; }
[ ! -e "$tmp/m.json" ] || fail "a refused merge wrote its output"
# fields no exact sum decides (SPEC §11): checked against what is derivable — the group from
# the name, the rule from group_amax, group_shared and group_amax across the fused group's
# members, special bytes the format has, zero_blocks against the source's energy, a known
# producer, the bucket use from the histograms; each edit is refused naming its field
edit() { # FIELD PYTHON-EXPR-ON-t (t: the part's first q_proj tensor, r: the part)
    python3 - "$tmp/a0.json" "$tmp/a1.json" "$tmp/x0.json" "$tmp/x1.json" "$2" <<'PY' || fail "edit $1"
import json, sys
rs = [json.load(open(f)) for f in sys.argv[1:3]]
k = [i for i, r in enumerate(rs) if any(t["name"].endswith("q_proj.weight") for t in r["tensors"])][0]
r = rs[k]
t = [t for t in r["tensors"] if t["name"].endswith("q_proj.weight")][0]
exec(sys.argv[5])
for r, f in zip(rs, sys.argv[3:5]):
    json.dump(r, open(f, "w"))
PY
    rm -f "$tmp/m.json"
    "$FP4DIAG" merge "$tmp/x0.json" "$tmp/x1.json" -o "$tmp/m.json" 2>"$tmp/e"; rc=$?
    [ $rc -eq 3 ] && grep -q "proj.weight: .*$1" "$tmp/e" && [ ! -e "$tmp/m.json" ] ||
        { cat "$tmp/e"; fail "edited $1: exit $rc"; }
}
edit '"global_scale.group_shared"\|global_scale.group_shared is not' 't["global_scale"]["group_shared"] = not t["global_scale"]["group_shared"]'
edit 'global_scale.group_amax is not' 'g = t["global_scale"]; g["group_amax"] = 2688.0; g["rule"] = 1.0; g["match"] = g["stored"] == 1.0'
edit '"global_scale.group"' 't["global_scale"]["group"] = "gate_up"'
edit '"global_scale.rule"' 'g = t["global_scale"]; g["rule"] = g["rule"] * 2; g["match"] = g["stored"] == g["rule"]'
edit '"special_scale_bytes"' 't["special_scale_bytes"]["e8m0_ff"] = 1'
edit '"zero_blocks"' 't["zero_blocks"] = t["scale_bytes"]'
edit '"quant.producer"' 't["quant"]["producer"] = "other"'
edit '"scale_rule_fit"' 't["scale_rule_fit"] = "ocp floor"'
# the bucket use shown is what each side's histogram gives; the requant histogram holds the
# elements; one code moved between bins keeps the sum but not the ratios
edit '"export.bucket_ratio_15"' 't["export"]["bucket_ratio_15"] += 0.01'
edit '"requant.bucket_ratio_8"' 't["requant"]["bucket_ratio_8"] -= 0.01'
edit '"requant.max_frac"' 't["requant"]["max_frac"] = 0.5'
edit '"requant.histogram"' 't["requant"]["histogram"][7] += 1'
edit '"export.bucket_ratio_15"' 'h = t["export"]["histogram"]; h[7] -= 1; h[6] += 1'
# the non-amax SQNR and its status shown are what each side's exact non-amax sums give
edit '"export.sqnr_nonamax_db"' 't["export"]["sqnr_nonamax_db"] += 0.5'
edit '"requant.sqnr_nonamax_db"' 't["requant"]["sqnr_nonamax_status"] = "exact"'
"$FP4DIAG" audit "$P/source" "$P/modelopt_nvfp4" --shard 0/2 -q >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--shard without -o: exit $rc"
exit 0
