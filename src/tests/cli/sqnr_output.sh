#!/bin/sh
# sqnr_output.sh — -o FILE: a new file and an existing one are written whole (temporary file +
# rename, nothing left beside them); a missing directory is exit 3 with one line and no file;
# /dev/full (direct write, ENOSPC) is exit 3 and the device node is untouched; stdout onto
# /dev/full is exit 3; a pipe gets the whole report.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
run() { "$FP4DIAG" sqnr "$F" /qkv/w --format e2m1 -q "$@"; }
run -o "$tmp/new.json" || { echo "new file: exit $?"; exit 1; }
python3 -m json.tool "$tmp/new.json" >/dev/null || { echo "new file is not JSON"; exit 1; }
echo "old contents" >"$tmp/old.json"
run -o "$tmp/old.json" || { echo "existing file: exit $?"; exit 1; }
python3 scripts/check_golden.py "$tmp/new.json" "$tmp/old.json" || { echo "existing file not replaced by the report"; exit 1; }
[ "$(ls -A "$tmp" | wc -l)" -eq 2 ] || { echo "stray files:"; ls -A "$tmp"; exit 1; }
run -o "$tmp/nodir/r.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] || { echo "missing dir: exit $rc, want 3"; exit 1; }
[ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "missing dir: want one line:"; cat "$tmp/err"; exit 1; }
[ ! -e "$tmp/nodir" ] || { echo "missing dir created"; exit 1; }
if [ -c /dev/full ]; then
    before=$(ls -li /dev/full)
    run -o /dev/full 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 3 ] || { echo "-o /dev/full: exit $rc, want 3"; exit 1; }
    grep -q "/dev/full" "$tmp/err" || { echo "-o /dev/full: error does not name it"; exit 1; }
    [ -c /dev/full ] && [ "$(ls -li /dev/full)" = "$before" ] || { echo "/dev/full changed!"; exit 1; }
    run >/dev/full 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 3 ] || { echo "stdout /dev/full: exit $rc, want 3"; cat "$tmp/err"; exit 1; }
fi
run | python3 -m json.tool >/dev/null || { echo "pipe: not JSON"; exit 1; }
exit 0
