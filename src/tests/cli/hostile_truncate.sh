#!/bin/sh
# hostile_truncate.sh — a file cut short by another process while fp4diag reads it: the
# tensors read after the cut are errors entries ("truncated"), never numbers computed from the
# zeros HDF5 returns past the end of a file. Whenever the cut lands: exit 0 with the reference
# report, or exit 3 (one line) with every reported tensor equal to the reference. Both through
# HDF5 (contiguous datasets) and through fp4diag's own chunk reader (pread of stored chunks).
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
need_fixtures trunc.h5 trunc_chunked.h5
args="--format all --rht both"
[ "$SLOW" = 1 ] && args="--format e2m1"
delays="0.3 0.6 1 1.5"
[ "$SLOW" = 1 ] && delays="1"
cut=0
for fx in trunc trunc_chunked; do
f=$tmp/fx/$fx.h5
timeout 300 "$FP4DIAG" sqnr $args "$f" -o "$tmp/ref.json" 2>"$tmp/err" || fail "$fx: reference run: exit $?"
size=$(wc -c <"$f")
for d in $delays; do
    cp "$f" "$tmp/cut.h5"
    rm -f "$tmp/r.json"
    timeout 300 "$FP4DIAG" sqnr $args "$tmp/cut.h5" -o "$tmp/r.json" >/dev/null 2>"$tmp/err" &
    pid=$!
    sleep "$d"
    truncate -s $((size / 3)) "$tmp/cut.h5"
    wait "$pid"; rc=$?
    case $rc in
        0|3) ;;
        *) fail "$fx: cut after ${d}s: exit $rc" ;;
    esac
    [ "$(wc -l <"$tmp/err")" -le 1 ] || fail "$fx: cut after ${d}s: stderr is more than one line"
    [ -e "$tmp/r.json" ] || continue # cut before the file was opened: no report
    python3 - "$tmp/ref.json" "$tmp/r.json" "$rc" <<'PY' || fail "$fx: cut after ${d}s: numbers not the tensors'"
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
rt = {t["name"]: t["results"] for t in ref["tensors"]}
for t in got["tensors"]:
    assert t["results"] == rt[t["name"]], t["name"]
if sys.argv[3] == "0":
    assert not got["errors"] and len(got["tensors"]) == len(rt)
else:
    assert got["errors"], "exit 3 without errors entries"
    assert all("truncated" in e["message"] or "read failed" in e["message"] or
               "went away" in e["message"] for e in got["errors"]), got["errors"][:2]
PY
    [ "$rc" -eq 3 ] && cut=$((cut + 1))
done
done
echo "runs cut mid-way: $cut"
exit 0
