# quantized.sh — sourced by the audit cases on testdata/quantized/ (audit_ckpt.sh,
# audit_flushed.sh): $Q the fixtures (skip without them or without numpy), a temp dir $tmp
# removed on exit, fail, and lib/ on PYTHONPATH for st_load.py (`from st_load import load`:
# a safetensors file read with NumPy alone).
set -u
Q=testdata/quantized
[ -d "$Q/source" ] || { echo "no $Q"; exit 77; }
python3 -c 'import numpy' 2>/dev/null || { echo "numpy not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PYTHONPATH=$PWD/src/tests/cli/lib${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
