#!/bin/sh
# ls_missing.sh — a missing file, a non-HDF5 file and a missing dataset exit 3 with one line
# on stderr naming the file (SPEC §9); nothing on stdout.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
check() { # expected-rc, expected-substring, args...
    want=$1 msg=$2; shift 2
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq "$want" ] || { echo "$*: exit $rc, want $want"; cat "$tmp/err"; exit 1; }
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "$*: stderr is not one line:"; cat "$tmp/err"; exit 1; }
    grep -qF -- "$msg" "$tmp/err" || { echo "$*: stderr lacks '$msg':"; cat "$tmp/err"; exit 1; }
    [ ! -s "$tmp/out" ] || { echo "$*: stdout not empty"; exit 1; }
}
check 3 "$tmp/nope.h5: no such file" ls "$tmp/nope.h5"
echo "not hdf5" >"$tmp/junk.h5"
check 3 "$tmp/junk.h5: not an HDF5, safetensors, PyTorch, GGUF or NumPy file" ls "$tmp/junk.h5"
check 3 "$tmp: is a directory" ls "$tmp"
if [ -f testdata/gpt_ckpt_small.h5 ]; then
    check 3 "testdata/gpt_ckpt_small.h5: /nope: no such dataset or group" \
        ls testdata/gpt_ckpt_small.h5 /nope
fi
exit 0
