#!/bin/sh
# gemm_nonfinite.sh — a NaN in W reaches FPROP's and DGRAD's output sums through the products:
# those paths report sqnr_db and eta null with sqnr_status "nonfinite" (a null always says
# why), WGRAD (dY, X) stays "ok", the table says "nonfinite", the report passes the schema.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
here=$(cd "$(dirname "$0")/../../.." && pwd)
python3 - "$tmp/nan.h5" <<'P' || { echo "skip: h5py unavailable"; exit 77; }
import sys
import h5py, numpy as np
r = np.random.default_rng(3)
w = r.standard_normal((48, 64)).astype(np.float32)
w[5, 7] = np.nan
with h5py.File(sys.argv[1], "w") as f:
    f["L/x"] = r.standard_normal((32, 64)).astype(np.float32)
    f["L/w"] = w
    f["L/dy"] = r.standard_normal((32, 48)).astype(np.float32)
P
"$FP4DIAG" gemm "$tmp/nan.h5" /L -v -o "$tmp/r.json" 2>"$tmp/err" || { cat "$tmp/err"; fail "gemm exit $?"; }
python3 - "$tmp/r.json" <<'P' || fail "statuses"
import json, sys
r = json.load(open(sys.argv[1]))
p = {x["path"]: x for x in r["layers"][0]["paths"]}
for k in ("fprop", "dgrad"):
    assert p[k]["sqnr_status"] == "nonfinite" and p[k]["sqnr_db"] is None and p[k]["eta"] is None, p[k]
assert p["wgrad"]["sqnr_status"] == "ok" and p["wgrad"]["sqnr_db"] is not None, p["wgrad"]
P
grep -q "nonfinite" "$tmp/err" || { cat "$tmp/err"; fail "table does not say nonfinite"; }
python3 "$here/scripts/check_golden.py" --schema "$here/schema/report.schema.json" "$tmp/r.json" "$tmp/r.json" \
    >"$tmp/s" 2>&1 || { cat "$tmp/s"; fail "schema"; }
exit 0
