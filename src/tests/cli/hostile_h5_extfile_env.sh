#!/bin/sh
# hostile_h5_extfile_env.sh — HDF5 external raw storage under HDF5_EXTFILE_PREFIX (issue 26's
# "Done when", break-it round): HDF5 puts that environment variable before the "${ORIGIN}"
# access property fp4diag sets, so a check of the file's own directory passed ext.bin there
# while HDF5 read the ext.bin the variable named, outside the input's tree, into the report.
# Now the file checked is the one HDF5 opens: outside the tree (an absolute prefix, one from
# ${ORIGIN} going up, "." from a working directory elsewhere) is the dataset's errors entry
# unless --allow-external, which reads it; a FIFO there is refused, never waited on; ${ORIGIN}
# alone reads the file beside the input.
. "$(dirname "$0")/lib/hostile.sh"
python3 -c 'import h5py, numpy' 2>/dev/null || skip "python3 with h5py and numpy not found"
mkdir "$tmp/in" "$tmp/out" "$tmp/fifo"
python3 - "$tmp" <<'PY' || fail "cannot write the files"
import sys, h5py, numpy as np
d = sys.argv[1]
(np.arange(256, dtype=np.float32) % 13 - 6).astype(np.float32).tofile(d + "/in/ext.bin")
np.full(256, 1000.0, np.float32).tofile(d + "/out/ext.bin")
with h5py.File(d + "/in/f.h5", "w") as f:
    f.create_dataset("w", shape=(16, 16), dtype=np.float32, external=[("ext.bin", 0, 1024)])
PY
mkfifo "$tmp/fifo/ext.bin" || skip "mkfifo failed"
F=$tmp/in/f.h5
amax() { python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(",".join("%g" % t["results"][0]["tensor_amax"] for t in r["tensors"]) or "-",
      len(r["errors"]))' "$1"; }
# ext PREFIX WANT [ARGS]: sqnr under HDF5_EXTFILE_PREFIX=PREFIX; WANT "AMAX ERRORS"
ext() {
    pre=$1 want=$2; shift 2
    HDF5_EXTFILE_PREFIX=$pre timeout 30 "$FP4DIAG" sqnr -q --format e2m1 -o "$tmp/r.json" \
        "$@" "$F" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "prefix '$pre' $*: exit $rc"
    got=$(amax "$tmp/r.json") || fail "prefix '$pre' $*: no report"
    [ "$got" = "$want" ] || fail "prefix '$pre' $*: amax/errors '$got', want '$want'"
    if [ "$want" = "- 1" ]; then
        [ "$rc" -eq 3 ] || fail "prefix '$pre': exit $rc, want 3"
        grep -q "external file ext.bin" "$tmp/err" || fail "prefix '$pre': stderr"
    fi
}
ext "" "6 0"
ext '${ORIGIN}' "6 0"
ext "$tmp/out" "- 1"
ext '${ORIGIN}/../out' "- 1"
ext "$tmp/out" "1000 0" --allow-external
ext "$tmp/fifo" "- 1"
ext "$tmp/fifo" "- 1" --allow-external
(cd "$tmp/out" && ext . "- 1")
exit 0
