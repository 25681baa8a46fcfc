#!/bin/sh
# hostile_truncate_mapped.sh — safetensors, .npy, .npz and PyTorch files cut short by another process
# while fp4diag reads them from their mapping (issue 26): SIGBUS killed the run (exit 135, no
# message, no report). Now whenever the cut lands: exit 0 with the reference report, or exit 3
# with one stderr line, the tensors read after the cut errors entries ("truncated"), and every
# reported tensor equal to the reference.
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
python3 -c 'import numpy' 2>/dev/null || skip "python3 with numpy not found"
# (smaller files where each run is slow: valgrind, ASan)
python3 - "$tmp" "$SLOW" <<'PY' || fail "cannot write the inputs"
import json, struct, sys
import numpy as np
d = sys.argv[1]
rows = 64 if sys.argv[2] == "1" else 512
rng = np.random.default_rng(3)
ts = {"w%d" % i: rng.standard_normal((rows, 2048)).astype("<f4") for i in range(8)}
hdr, off = {}, 0
for k, a in ts.items():
    hdr[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
    off += a.nbytes
h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
with open(d + "/t.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for a in ts.values(): f.write(a.tobytes())
np.save(d + "/t.npy", rng.standard_normal((rows * 8, 2048)).astype("<f4"))
np.savez(d + "/t.npz", **ts)  # stored members
sys.path.insert(0, "scripts")
import collections, torch_writer as tw  # a torch.save archive, written without torch
tw.save(d + "/t.pt", collections.OrderedDict(
    (k, tw.contiguous("FloatStorage", a.tobytes(), list(a.shape), str(i))) for i, (k, a) in enumerate(ts.items())))
PY
# a small --mem-limit: every tensor read in slabs, twice (the amax pass, then the analysis),
# so reads go on through the whole run; the cuts land at fractions of the reference run's time
args="--format all --rht both --mem-limit 4M"
[ "$SLOW" = 1 ] && args="--format e2m1 --mem-limit 1M"
fracs="0.15 0.35 0.6 0.85"
[ "$SLOW" = 1 ] && fracs="0.3 0.6"
# messages a cut may give: a guarded read of the mapping, a source's own bounds
cut_msgs="truncated|read failed|runs past the end"
for fx in t.safetensors t.npy t.npz t.pt; do
    f=$tmp/$fx
    t0=$(date +%s.%N)
    timeout 300 "$FP4DIAG" sqnr $args "$f" -q -o "$tmp/ref.json" 2>"$tmp/err" ||
        fail "$fx: reference run: exit $?"
    t1=$(date +%s.%N)
    for fr in $fracs; do
        d=$(python3 -c "import sys; print('%.3f' % ((float(sys.argv[2]) - float(sys.argv[1])) * float(sys.argv[3])))" "$t0" "$t1" "$fr")
        cut_run "$f" "$d" $args -q
    done
done
echo "runs cut mid-way: $cut"
exit 0
