#!/bin/sh
# reexec_valgrind.sh — the OpenMP wait default's second start (reexec.h) under valgrind: there
# /proc/self/exe is valgrind's tool, not fp4diag, and executing it ended the run with exit 1
# ("You cannot run ... directly") and no report. Now no second start: the run completes with
# the same report as without valgrind. Skipped (77) without valgrind or h5py.
set -u
command -v valgrind >/dev/null 2>&1 || { echo "no valgrind"; exit 77; }
ldd "$FP4DIAG" 2>/dev/null | grep -q libasan && { echo "sanitizer build: valgrind case skipped"; exit 77; }
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "no h5py"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/big.h5" <<'PY' || exit 1
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver="earliest") as f:
    f["w"] = np.linspace(-3, 3, 16 * 64, dtype=np.float32).reshape(16, 64)
PY
# 200 MiB by its size (a sparse tail after the HDF5 file's end): a second start is wanted
truncate -s 200M "$tmp/big.h5" || { echo "no truncate"; exit 77; }
args="--format e2m1 --scale nvfp4 --device cpu -q --threads 2"
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$FP4DIAG" sqnr "$tmp/big.h5" $args -o "$tmp/ref.json" ||
    { echo "native run: exit $?"; exit 1; }
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT valgrind -q "$FP4DIAG" sqnr "$tmp/big.h5" $args \
    -o "$tmp/vg.json" 2>"$tmp/vg.err" || { echo "under valgrind: exit $?"; cat "$tmp/vg.err"; exit 1; }
python3 - "$tmp" <<'PY' || exit 1
import json, sys
def norm(p):
    d = json.load(open(p))
    d["timing"].pop("seconds", None)
    d.pop("provenance", None)
    d.pop("argv", None)  # -o differs
    return d
t = sys.argv[1]
if norm(t + "/ref.json") != norm(t + "/vg.json"):
    sys.exit("report under valgrind differs")
PY
exit 0
