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
mkdir "$tmp/cut"
cut=0
for fx in t.safetensors t.npy t.npz t.pt; do
f=$tmp/$fx
t0=$(date +%s.%N)
timeout 300 "$FP4DIAG" sqnr $args "$f" -q -o "$tmp/ref.json" 2>"$tmp/err" || fail "$fx: reference run: exit $?"
t1=$(date +%s.%N)
size=$(wc -c <"$f")
for fr in $fracs; do
    d=$(python3 -c "import sys; print('%.3f' % ((float(sys.argv[2]) - float(sys.argv[1])) * float(sys.argv[3])))" "$t0" "$t1" "$fr")
    cp "$f" "$tmp/cut/$fx"
    rm -f "$tmp/r.json"
    timeout 300 "$FP4DIAG" sqnr $args "$tmp/cut/$fx" -q -o "$tmp/r.json" >/dev/null 2>"$tmp/err" &
    pid=$!
    sleep "$d"
    truncate -s $((size / 3)) "$tmp/cut/$fx"
    wait "$pid"; rc=$?
    case $rc in
        0|3) ;;
        *) fail "$fx: cut after ${d}s: exit $rc (135: SIGBUS)" ;;
    esac
    [ "$(wc -l <"$tmp/err")" -le 1 ] || fail "$fx: cut after ${d}s: stderr is more than one line"
    [ -e "$tmp/r.json" ] || continue # cut before the file was opened: no report
    python3 - "$tmp/ref.json" "$tmp/r.json" "$rc" <<'PY' || fail "$fx: cut after ${d}s: not the tensors' numbers"
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
               "runs past the end" in e["message"] for e in got["errors"]), got["errors"][:2]
PY
    [ "$rc" -eq 3 ] && cut=$((cut + 1))
done
done
echo "runs cut mid-way: $cut"
exit 0
