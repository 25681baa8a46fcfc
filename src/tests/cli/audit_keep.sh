#!/bin/sh
# audit_keep.sh — what audit's KEEP means (issue 27): the audit table's keep score is the
# analyses' (SPEC §9: the largest of the modified z-scores of the flushed share, the SQNR and
# the non-amax SQNR, threshold 3.5), so a down_proj with a super-weight input column (x100),
# whose flushed share stays under the threshold (z_f about 3.1) and whose SQNR rises, is kept
# by its non-amax SQNR in both `sqnr --format nvfp4` and `audit`, with the same reason word.
# Data: src/tests/cli/lib/mk_keep.py (NumPy).
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
exit 0
