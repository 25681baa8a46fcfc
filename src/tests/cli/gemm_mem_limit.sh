#!/bin/sh
# gemm_mem_limit.sh — gemm takes --mem-limit for the working memory of its chunk decoder: an
# operand stored in gzip chunks larger than the limit allows is an error naming --mem-limit
# (exit 3, the layer and dataset named), and within the limit the report equals the default's
# apart from the limit itself.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp/g.h5" <<'P' || { echo "skip: h5py unavailable"; exit 77; }
import sys
import h5py, numpy as np
r = np.random.default_rng(5)
with h5py.File(sys.argv[1], "w") as f:
    g = f.create_group("l0")
    g["x"] = (r.standard_normal((128, 256)) * 0.1).astype(np.float32)
    g.create_dataset("w", data=(r.standard_normal((192, 256)) * 0.02).astype(np.float32),
                     chunks=(64, 256), compression="gzip")
    g["dy"] = (r.standard_normal((128, 192)) * 0.01).astype(np.float32)
P
"$FP4DIAG" gemm "$tmp/g.h5" -q -o "$tmp/a.json" || fail "default exit $?"
"$FP4DIAG" gemm "$tmp/g.h5" --mem-limit 64M -q -o "$tmp/b.json" || fail "--mem-limit 64M exit $?"
python3 - "$tmp/a.json" "$tmp/b.json" <<'P' || fail "reports differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["config"]["mem_limit"] == 64 << 20, b["config"]
for d in (a, b):
    for k in ("timing", "argv", "provenance"):
        d.pop(k, None)
    d["config"].pop("mem_limit")
assert a == b
P
"$FP4DIAG" gemm "$tmp/g.h5" --mem-limit 16K -q -o "$tmp/c.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || { cat "$tmp/err"; fail "--mem-limit 16K: exit $rc, want 3"; }
grep -q "/l0/w.*--mem-limit" "$tmp/err" || { cat "$tmp/err"; fail "no --mem-limit error"; }
echo ok
