#!/bin/sh
# sqnr_filter_fallback_note.sh — a chunked dataset whose filter fp4diag does not decode itself
# (scaleoffset) is read through HDF5: -v names the dataset and the filter on stderr; without -v
# nothing is said; the report is the same either way.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp/t.h5" <<'P' || { echo "skip: h5py unavailable"; exit 77; }
import sys
import h5py, numpy as np
a = (np.random.default_rng(3).standard_normal((64, 256)) * 0.02).astype(np.float32)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("so", data=a, chunks=(16, 256), scaleoffset=4)
    f.create_dataset("gz", data=a, chunks=(16, 256), compression="gzip")
P
"$FP4DIAG" sqnr "$tmp/t.h5" -v -o "$tmp/v.json" 2>"$tmp/v.err" || fail "sqnr -v exit $?"
grep -q "note: $tmp/t.h5: /so: read through HDF5: filter scaleoffset is not decoded here" \
    "$tmp/v.err" || { cat "$tmp/v.err"; fail "no note for /so"; }
grep -q "/gz: read through HDF5" "$tmp/v.err" && fail "a note for /gz, which is decoded here"
"$FP4DIAG" sqnr "$tmp/t.h5" -o "$tmp/q.json" 2>"$tmp/q.err" || fail "sqnr exit $?"
grep -q "read through HDF5" "$tmp/q.err" && fail "a note without -v"
python3 - "$tmp/v.json" "$tmp/q.json" <<'P' || fail "reports differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    for k in ("timing", "argv", "provenance"):
        d.pop(k, None)
assert a == b
assert [t["name"] for t in a["tensors"]] == ["/gz", "/so"], a["tensors"]
P
echo ok
