#!/bin/sh
# usage_hints.sh — the small hints of issue 29, each failing the way it should: a mistyped
# dataset names the closest one and `fp4diag ls` (exit 3), a name far from every dataset gets
# no guess; a report JSON given as the input says it is a report and suggests `compare`; a
# directory of .h5 files names them; a second --format or --scale is a usage error (exit 2)
# naming the option; --version says whether CUDA is built in.
set -u
F=$PWD/testdata/gpt_ckpt_small.h5
[ -f "$F" ] || { echo "no testdata"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { # run RC ARGS...: fp4diag ARGS, exit RC, stderr in $tmp/err, nothing on stdout
    want=$1; shift
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq "$want" ] || { cat "$tmp/err"; fail "fp4diag $*: exit $rc, want $want"; }
    [ ! -s "$tmp/out" ] || fail "fp4diag $*: wrote stdout"
}
run 3 sqnr "$F" /blocks/0/fc1/weigth -q
grep -q "no such dataset or group; did you mean /blocks/0/fc1/weight? ('fp4diag ls $F' lists them)" \
    "$tmp/err" || { cat "$tmp/err"; fail "no did-you-mean"; }
run 3 sqnr "$F" /nothing/like/it -q
grep -q 'no such dataset or group' "$tmp/err" || fail "far name: no refusal"
grep -q 'did you mean' "$tmp/err" && fail "far name: a guess"
run 3 sqnr testdata/reports/sample_sqnr.json -q
grep -q "is an fp4diag report (JSON), not a checkpoint: compare two reports with 'fp4diag compare" \
    "$tmp/err" || { cat "$tmp/err"; fail "report as input"; }
mkdir "$tmp/d"
for n in a b c d; do cp "$F" "$tmp/d/$n.h5"; done
run 3 sqnr "$tmp/d" -q
grep -q 'is a directory of HDF5 files (.*\.h5, .*\.h5, .*\.h5 and 1 more): give one file at a time' \
    "$tmp/err" || { cat "$tmp/err"; fail "directory of .h5 not named"; }
run 2 sqnr "$F" --format e2m1 --format int4 -q
grep -q -- '--format given twice' "$tmp/err" || { cat "$tmp/err"; fail "repeated --format"; }
run 2 sqnr "$F" --scale fp32 --scale nvfp4 -q
grep -q -- '--scale given twice' "$tmp/err" || { cat "$tmp/err"; fail "repeated --scale"; }
"$FP4DIAG" sqnr "$F" --format e2m1,int4 --scale nvfp4 -q >/dev/null || fail "one --format list"
# safetensors: a mistyped tensor name is a tensor (not HDF5's "dataset or group"), with the
# closest name and `ls`; a far one still points at `ls`; a pattern that selects nothing beside
# one that does is a warning in the same words
if python3 -c 'import numpy, safetensors' 2>/dev/null; then
    python3 - "$tmp/m.safetensors" <<'PY'
import sys
import numpy as np
from safetensors.numpy import save_file
save_file({f"model.layers.{l}.mlp.up_proj.weight": np.ones((16, 32), np.float32) for l in range(2)}, sys.argv[1])
PY
    S=$tmp/m.safetensors
    run 3 sqnr "$S" model.layers.0.mlp.up_prj.weight -q
    grep -qF "$S: model.layers.0.mlp.up_prj.weight: no such tensor or name prefix; did you mean model.layers.0.mlp.up_proj.weight? ('fp4diag ls $S' lists them)" \
        "$tmp/err" || { cat "$tmp/err"; fail "safetensors: mistyped tensor"; }
    run 3 sqnr "$S" nothing.like.it -q
    grep -qF "$S: nothing.like.it: no such tensor or name prefix ('fp4diag ls $S' lists the tensors)" \
        "$tmp/err" || { cat "$tmp/err"; fail "safetensors: far name"; }
    "$FP4DIAG" sqnr "$S" model.layers.0.mlp.up_proj.weight nothing.like.it -o "$tmp/r.json" 2>"$tmp/err" ||
        fail "a selection beside one that matches nothing: exit $?"
    grep -qF "$S: nothing.like.it: no such tensor or name prefix (selects nothing; the other selections run)" \
        "$tmp/err" || { cat "$tmp/err"; fail "safetensors: the warning"; }
    grep -q 'dataset' "$tmp/err" && fail "safetensors: HDF5 words"
fi
"$FP4DIAG" --version >"$tmp/v" || fail "--version"
grep -q '^cuda: \(on\|off\)' "$tmp/v" || { cat "$tmp/v"; fail "--version: no cuda line"; }
echo ok
