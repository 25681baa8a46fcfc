#!/bin/sh
# audit_keep.sh — what audit's KEEP means (issue 27): the audit table's keep score is the
# analyses' (SPEC §9: the largest of the modified z-scores of the flushed share, the SQNR and
# the non-amax SQNR, threshold 3.5), so a down_proj with a super-weight input column (x100),
# whose flushed share stays under the threshold (z_f about 3.1) and whose SQNR rises, is kept
# by its non-amax SQNR in both `sqnr --format nvfp4` and `audit`, with the same reason word.
# An export worse than round-to-nearest of its source (both o_proj with 5 % of their codes one
# level up: gain about -2 dB, 4 % not nearest) is flagged REEXPORT, "reexport": true in the
# JSON, not KEEP (its RTN numbers are typical); `merge` of a split run gives the same flags and
# refuses a part whose flag is not what its sums give. The RTN column's per-tensor scale is the
# export's rule (the fused group's amax), which the legend and requant.global_scale_from say:
# sqnr's q_proj SQNR (the tensor's own amax) differs from it. Data: src/tests/cli/lib/mk_keep.py.
set -u
FP4DIAG=${FP4DIAG:-$PWD/fp4diag}
python3 -c 'import numpy' 2>/dev/null || { echo "numpy not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 src/tests/cli/lib/mk_keep.py "$tmp" || fail "mk_keep.py exited $?"
DP=model.layers.1.mlp.down_proj.weight

# the analyses' keep list: the super-weight down_proj alone, by its non-amax SQNR, not its
# flushed share (the fixture's premise)
"$FP4DIAG" sqnr --format nvfp4 "$tmp/source" -o "$tmp/sqnr.json" -q || fail "sqnr exited $?"
python3 - "$tmp/sqnr.json" "$DP" <<'PY' || fail "the fixture's keep list"
import json, sys
k = json.load(open(sys.argv[1]))["verdict"]["keep"]
assert k["tensors"] == [sys.argv[2]], k["tensors"]
r = k["ranking"][0]
assert r["by"] == "sqnr_nonamax" and r["z_flushed"] < 3.5 and r["z_sqnr"] < 0, r
PY

# audit keeps the same tensors, for the same reason
"$FP4DIAG" audit "$tmp/source" "$tmp/modelopt" >"$tmp/audit.txt" 2>"$tmp/err" || fail "audit exited $?"
python3 - "$tmp/audit.txt" "$tmp/sqnr.json" <<'PY' || { cat "$tmp/audit.txt"; fail "audit's KEEP is not the keep list's"; }
import json, sys
lines = open(sys.argv[1]).read().splitlines()
want = json.load(open(sys.argv[2]))["verdict"]["keep"]["tensors"]
kept = [l.split()[0] for l in lines if l.endswith("  KEEP (non-amax)")]
assert kept == want, (kept, want)
assert sum("KEEP" in l for l in lines if l.startswith("model.")) == len(want), lines
assert lines[1].startswith(want[0] + " "), lines[1]  # ranked first
assert any("the largest modified z-score of the flushed share, the export SQNR and its "
           "non-amax SQNR" in l for l in lines), lines
PY

# a bad export: REEXPORT first, not KEEP; the super-weight still KEEP (non-amax)
"$FP4DIAG" audit "$tmp/source" "$tmp/modelopt_bad" -o "$tmp/bad.json" >"$tmp/bad.txt" 2>"$tmp/err" ||
    fail "audit of the bad export exited $?"
python3 - "$tmp/bad.txt" "$tmp/bad.json" "$DP" <<'PY' || { cat "$tmp/bad.txt"; fail "the bad export's flags"; }
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.load(open(sys.argv[2]))
bad = ["model.layers.%d.self_attn.o_proj.weight" % l for l in (0, 1)]
rows = [l for l in lines if l.startswith("model.")]
flags = {l.split()[0]: l.split("  ")[-1] if l.endswith(")") or l.endswith("REEXPORT") else ""
         for l in rows}
assert sorted(l.split()[0] for l in rows[:2]) == bad, rows[:2]  # listed first
for n in bad:
    assert flags[n] == "REEXPORT", (n, flags[n])
assert flags[sys.argv[3]] == "KEEP (non-amax)", flags[sys.argv[3]]
assert sum(bool(f) for f in flags.values()) == 3, flags
assert any(l.startswith("REEXPORT: the export is worse than round-to-nearest of its source: "
                        "re-export (its SQNR more than 1 dB below RTN's, over 1% of its codes")
           for l in lines), lines
for n in bad:
    assert any(l.startswith("re-export: %s: the export (" % n) and
               l.endswith("re-export it with round-to-nearest") for l in lines), n
for t in r["tensors"]:
    gain = t["export"]["sqnr_db"] - t["requant"]["sqnr_db"]
    want = t["nonnearest_frac"] > 0.01 and gain < -1
    assert t["reexport"] is want and want == (t["name"] in bad), (t["name"], t["reexport"], gain)
PY
# the round-to-nearest export has none
"$FP4DIAG" audit "$tmp/source" "$tmp/modelopt" -q -o "$tmp/good.json" || fail "audit -o exited $?"
grep -q '"reexport":	true' "$tmp/good.json" && fail "a round-to-nearest export flagged reexport"
grep -q 'REEXPORT' "$tmp/audit.txt" && fail "a round-to-nearest export flagged REEXPORT"

# the RTN column's per-tensor scale: the fused group's amax (q/k/v, gate/up), else the tensor's;
# sqnr takes the tensor's own, so its q_proj SQNR is not audit's RTN (both labelled)
grep -q "^export: the checkpoint as stored vs SOURCE; RTN: fp4diag's round-to-nearest of SOURCE with the producer's scale rule, NVFP4 with the export's per-tensor scale rule (amax of the fused group; sqnr --format nvfp4 takes the tensor's own amax);" "$tmp/audit.txt" ||
    { cat "$tmp/audit.txt"; fail "the RTN column's scale rule is not in the legend"; }
python3 - "$tmp/good.json" "$tmp/sqnr.json" <<'PY' || fail "requant.global_scale_from"
import json, sys
a, s = (json.load(open(f)) for f in sys.argv[1:])
for t in a["tensors"]:
    m = t["name"].split(".")[-2]
    want = "group amax" if m in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj") else "tensor amax"
    assert t["requant"]["global_scale_from"] == want, (t["name"], t["requant"])
assert "global_scale_from" not in a["pooled"]["requant"], a["pooled"]["requant"]
q = "model.layers.0.self_attn.q_proj.weight"
rtn = [t["requant"]["sqnr_db"] for t in a["tensors"] if t["name"] == q][0]
own = [r["sqnr_db"] for t in s["tensors"] if t["name"] == q for r in t["results"]][0]
assert abs(rtn - own) > 1e-4, (rtn, own)
PY

# split and merged: the single run's flags; an edited flag is refused
"$FP4DIAG" audit "$tmp/source" "$tmp/modelopt_bad" --shard 0/2 -q -o "$tmp/p0.json" || fail "p0"
"$FP4DIAG" audit "$tmp/source" "$tmp/modelopt_bad" --shard 1/2 -q -o "$tmp/p1.json" || fail "p1"
"$FP4DIAG" merge "$tmp/p0.json" "$tmp/p1.json" -o "$tmp/m.json" 2>"$tmp/e" || { cat "$tmp/e"; fail "merge exited $?"; }
python3 - "$tmp/bad.json" "$tmp/m.json" <<'PY' || fail "merged flags"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert [(t["name"], t["reexport"]) for t in a["tensors"]] == \
       [(t["name"], t["reexport"]) for t in b["tensors"]]
PY
python3 - "$tmp/p0.json" "$tmp/p1.json" "$tmp/e0.json" "$tmp/e1.json" <<'PY' || fail "edit"
import json, sys
for i in (0, 1):
    r = json.load(open(sys.argv[1 + i]))
    for t in r["tensors"]:
        t["reexport"] = not t["reexport"]
    json.dump(r, open(sys.argv[3 + i], "w"))
PY
python3 - "$tmp/p0.json" "$tmp/g0.json" <<'PY' || fail "edit"
import json, sys
r = json.load(open(sys.argv[1]))
t = [t for t in r["tensors"] if t["requant"]["global_scale_from"] == "group amax"][0]
t["requant"]["global_scale_from"] = "tensor amax"
json.dump(r, open(sys.argv[2], "w"))
PY
"$FP4DIAG" merge "$tmp/g0.json" "$tmp/p1.json" -o "$tmp/m2.json" 2>"$tmp/e"; rc=$?
[ $rc -eq 3 ] && grep -q '("requant.global_scale_from"; edited part?)' "$tmp/e" ||
    { cat "$tmp/e"; fail "an edited global_scale_from: exit $rc"; }
for edited in "$tmp/e0.json $tmp/p1.json" "$tmp/p0.json $tmp/e1.json"; do
    # shellcheck disable=SC2086
    "$FP4DIAG" merge $edited -o "$tmp/m2.json" 2>"$tmp/e"; rc=$?
    [ $rc -eq 3 ] && grep -q '("reexport"; edited part?)' "$tmp/e" || { cat "$tmp/e"; fail "an edited reexport: exit $rc"; }
done

# the reports against schema/audit.schema.json (when jsonschema is installed)
python3 - schema/audit.schema.json "$tmp/bad.json" "$tmp/good.json" "$tmp/p0.json" "$tmp/m.json" <<'PY' || fail "schema"
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
s = json.load(open(sys.argv[1]))
for f in sys.argv[2:]:
    jsonschema.validate(json.load(open(f)), s)
PY
exit 0
