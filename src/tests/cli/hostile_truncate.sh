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
# messages a cut may give: HDF5's and our chunk reader's
cut_msgs="truncated|read failed|went away"
for fx in trunc trunc_chunked; do
    f=$tmp/fx/$fx.h5
    timeout 300 "$FP4DIAG" sqnr $args "$f" -o "$tmp/ref.json" 2>"$tmp/err" ||
        fail "$fx: reference run: exit $?"
    for d in $delays; do
        cut_run "$f" "$d" $args
    done
done
echo "runs cut mid-way: $cut"
exit 0
