#!/bin/sh
# hostile_truncate_pt_open.sh — a PyTorch checkpoint cut short by another process while
# fp4diag opens it (issue 26): the open-time parse (the zip directory, byteorder, data.pkl)
# read the mapping unguarded, and SIGBUS killed the run (exit 135, no message). Now whenever
# the cut lands: exit 0, or exit 3 with one stderr line (a cut during the parse: "the file
# shrank while it was read (truncated)"). A checkpoint of many small tensors: a long data.pkl
# and central directory, whose parse the cuts land in (the open also looked each storage up
# in the zip directory linearly: 20,000 tensors took seconds; a binary search now).
. "$(dirname "$0")/lib/hostile.sh"
need_command ls
python3 -c 'import numpy' 2>/dev/null || skip "python3 with numpy not found"
n=20000
[ "$SLOW" = 1 ] && n=4000
python3 - "$tmp/t.pt" "$n" <<'PY' || fail "cannot write the checkpoint"
import collections, sys
sys.path.insert(0, "scripts")
import torch_writer as tw  # a torch.save archive, written without torch
n = int(sys.argv[2])
tw.save(sys.argv[1], collections.OrderedDict(
    ("model.layers.%d.mlp.weight" % i, tw.contiguous("FloatStorage", bytes(64), [4, 4], str(i)))
    for i in range(n)))
PY
f=$tmp/t.pt
t0=$(date +%s.%N)
timeout 300 "$FP4DIAG" ls "$f" >/dev/null 2>"$tmp/err" || fail "reference ls: exit $?"
t1=$(date +%s.%N)
fracs="0 0.1 0.2 0.3 0.4 0.5 0.6 0.8"
[ "$SLOW" = 1 ] && fracs="0.2 0.4 0.6"
mkdir "$tmp/cut"
shrank=0
for fr in $fracs; do
    d=$(python3 -c "import sys; print('%.4f' % ((float(sys.argv[2]) - float(sys.argv[1])) * float(sys.argv[3])))" "$t0" "$t1" "$fr")
    cp "$f" "$tmp/cut/t.pt"
    timeout 300 "$FP4DIAG" ls "$tmp/cut/t.pt" >/dev/null 2>"$tmp/err" &
    pid=$!
    sleep "$d"
    truncate -s 4096 "$tmp/cut/t.pt" # inside data.pkl, before the central directory
    wait "$pid"; rc=$?
    case $rc in
        0|3) ;;
        *) fail "cut after ${d}s: exit $rc (135: SIGBUS)" ;;
    esac
    [ "$(wc -l <"$tmp/err")" -le 1 ] || fail "cut after ${d}s: stderr is more than one line"
    grep -q "shrank while it was read" "$tmp/err" && shrank=$((shrank + 1))
done
echo "cuts that landed in the parse: $shrank"
exit 0
