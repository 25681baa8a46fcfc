#!/bin/sh
# tied_views.sh — one storage viewed under several names (tied weights): the views that read
# the same numbers (same storage, offset, shape, order and type) are analysed once, the others
# listed in `skipped` as "same data as NAME"; a view that reads the storage another way
# (transposed, another shape or offset) is analysed on its own. A file of N views of one
# storage costs one analysis, not N (N x 4 MiB of work for N x 78 pickle bytes before). The
# same for one HDF5 dataset under two hard links (a copy of it is analysed).
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 -c 'import numpy' 2>/dev/null || { echo "skip: python3 with numpy not found"; exit 77; }
python3 - "$tmp" <<'PY' || exit 1
import collections, sys
import numpy as np
sys.path.insert(0, "scripts")
import torch_writer as tw  # a torch.save archive, written without torch
a = np.random.default_rng(1).standard_normal(64 * 64).astype("<f4")
s = tw.Storage("FloatStorage", a.tobytes(), "0")
tw.save(sys.argv[1] + "/m.pt", collections.OrderedDict([
    ("a.weight", tw.Tensor(s, 0, (64, 64))),
    ("b.weight", tw.Tensor(s, 0, (64, 64))),            # a's numbers: skipped
    ("t.weight", tw.Tensor(s, 0, (64, 64), (1, 64))),   # a transposed: analysed
    ("h.weight", tw.Tensor(s, 0, (32, 64))),            # a's first half: analysed
    ("o.weight", tw.Tensor(s, 32 * 64, (32, 64))),      # its second half: analysed
    ("c.weight", tw.Tensor(s, 0, (64, 64))),            # a's numbers again: skipped
]))
PY
check() { # WANT_TENSORS WANT_SKIPPED(name=leader,...) ARGS...
    want_t=$1 want_s=$2; shift 2
    "$FP4DIAG" sqnr -q --format e2m1 -o "$tmp/r.json" "$in" "$@" 2>"$tmp/err" ||
        { cat "$tmp/err"; echo "FAIL: sqnr $*: exit $?"; exit 1; }
    python3 - "$tmp/r.json" "$want_t" "$want_s" <<'PY' || { echo "FAIL: sqnr $*"; exit 1; }
import json, sys
r = json.load(open(sys.argv[1]))
names = ",".join(t["name"] for t in r["tensors"])
assert names == sys.argv[2], names
sk = {k["name"]: k["reason"] for k in r.get("skipped", []) if "same data" in k["reason"]}
want = dict(x.split("=") for x in sys.argv[3].split(",") if x)
assert sorted(sk) == sorted(want), sk
for n, leader in want.items():
    assert sk[n].startswith("same data as %s (" % leader), sk[n]
assert r["errors"] == [], r["errors"]
PY
}
in=$tmp/m.pt
check a.weight,t.weight,h.weight,o.weight b.weight=a.weight,c.weight=a.weight
check a.weight,t.weight,h.weight,o.weight b.weight=a.weight,c.weight=a.weight --all-tensors
# the first analysed view leads: a left out, b is analysed and c is b's
check b.weight,t.weight,h.weight,o.weight c.weight=b.weight --exclude a.weight
# named alone, a view is analysed
check c.weight "" c.weight
# two shares merged: the report of one process (each share skips the same views)
for i in 0 1; do
    "$FP4DIAG" sqnr -q --format e2m1 --shard $i/2 -o "$tmp/p$i.json" "$tmp/m.pt" 2>"$tmp/err" ||
        { cat "$tmp/err"; echo "FAIL: share $i/2"; exit 1; }
done
"$FP4DIAG" sqnr -q --format e2m1 -o "$tmp/one.json" "$tmp/m.pt" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
"$FP4DIAG" merge "$tmp/p0.json" "$tmp/p1.json" -o "$tmp/m.json" 2>"$tmp/err" ||
    { cat "$tmp/err"; echo "FAIL: merge"; exit 1; }
python3 - "$tmp/one.json" "$tmp/m.json" <<'PY' || { echo "FAIL: merged shares differ"; exit 1; }
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for k in ("tensors", "skipped", "errors", "summary"):
    assert a.get(k) == b.get(k), k
PY
# tied to a transposed one: t alone, its twin skipped
python3 - "$tmp" <<'PY' || exit 1
import collections, sys
import numpy as np
sys.path.insert(0, "scripts")
import torch_writer as tw
s = tw.Storage("FloatStorage", np.ones(64 * 64, "<f4").tobytes(), "7")
tw.save(sys.argv[1] + "/m.pt", collections.OrderedDict([
    ("t.weight", tw.Tensor(s, 0, (64, 64), (1, 64))), ("u.weight", tw.Tensor(s, 0, (64, 64), (1, 64)))]))
PY
check t.weight u.weight=t.weight
python3 -c 'import h5py' 2>/dev/null || { echo "no h5py: the HDF5 case not run"; exit 0; }
python3 - "$tmp" <<'PY' || exit 1
import sys, h5py, numpy as np
r = np.random.default_rng(2)
with h5py.File(sys.argv[1] + "/hl.h5", "w") as f:
    f.create_dataset("a/w", data=r.standard_normal((32, 64)).astype("f4"))
    f.create_dataset("b/w", data=r.standard_normal((32, 64)).astype("f4"))
    f["c/w"] = f["a/w"]                     # a hard link
    f.create_dataset("e/w", data=f["a/w"][()])  # a copy: another object, analysed
PY
in=$tmp/hl.h5
check /a/w,/b/w,/e/w /c/w=/a/w
exit 0
