#!/bin/sh
# pytorch_read.sh — PyTorch checkpoints (testdata/torch/, written by scripts/make_torch_testdata.py
# without torch): a state dict at pickle protocols 2 and 4, big-endian storages, views at offsets
# into a shared storage and a transposed (column-major) view, two shards through
# pytorch_model.bin.index.json (the file and its directory), a nested training checkpoint (its
# optimizer state skipped as no weight): `ls` lists them, and sqnr reports equal the same tensors
# given as safetensors (input fields aside).
# Views that cannot be read are errors entries naming why; the legacy format is refused saying
# how to convert; malicious pickles (os.system, a __reduce__, builtins.exec) are refused by name,
# exit 3, nothing run (no file created), nothing on stdout; a cut archive is one line, exit 3.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
T=$PWD/testdata/torch
fail=0
"$FP4DIAG" sqnr --all-tensors "$T/small.safetensors" -q -o "$tmp/ref.json" || { echo "reference run: exit $?"; exit 1; }
for f in small.pt small_p4.pt small_be.pt sharded sharded/pytorch_model.bin.index.json; do
    "$FP4DIAG" ls "$T/$f" >"$tmp/ls" 2>"$tmp/err" || { echo "ls $f: exit $?"; cat "$tmp/err"; fail=1; }
    grep -q "^model.layers.0.self_attn.o_proj.weight *48x32 *f32" "$tmp/ls" || { echo "ls $f:"; cat "$tmp/ls"; fail=1; }
    "$FP4DIAG" sqnr --all-tensors "$T/$f" -q -o "$tmp/r.json" 2>"$tmp/err" || { echo "sqnr $f: exit $?"; cat "$tmp/err"; fail=1; continue; }
    python3 - "$tmp/ref.json" "$tmp/r.json" "$f" <<'PY' || fail=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for r in (a, b):
    for k in ("argv", "input", "timing", "provenance"):
        r.pop(k, None)
if [t["name"] for t in a["tensors"]] != [t["name"] for t in b["tensors"]]:
    sys.exit("%s: tensors differ" % sys.argv[3])
if len(a["tensors"]) != 9:
    sys.exit("%s: %d tensors" % (sys.argv[3], len(a["tensors"])))
if a != b:
    for k in a:
        if a[k] != b.get(k):
            sys.exit("%s: %s differs from the safetensors report" % (sys.argv[3], k))
    sys.exit("%s: differs" % sys.argv[3])
PY
done
# a training checkpoint: nested dicts give dotted names; the optimizer's integer key in decimal
"$FP4DIAG" ls "$T/nested.pt" >"$tmp/ls" || fail=1
for n in model.model.embed_tokens.weight optimizer.state.0.exp_avg; do
    grep -q "^$n " "$tmp/ls" || { echo "nested.pt: no $n"; cat "$tmp/ls"; fail=1; }
done
# its optimizer state is no weight: kept out of the default selection and the verdict, by name
"$FP4DIAG" sqnr "$T/nested.pt" -q -o "$tmp/n.json" || fail=1
python3 - "$tmp/n.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
names = [t["name"] for t in r["tensors"]]
assert "optimizer.state.0.exp_avg" not in names and len(names) == 6, names
why = {s["name"]: s["reason"] for s in r["skipped"]}
assert why.get("optimizer.state.0.exp_avg") == \
    "kept in high precision by recipe: optimizer state (*optimizer*)", why
PY
# views that cannot be read: errors entries, the good tensor analysed, exit 3
"$FP4DIAG" sqnr --all-tensors "$T/views.pt" -q -o "$tmp/v.json" 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] || { echo "views.pt: exit $rc, wanted 3"; fail=1; }
python3 - "$tmp/v.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
assert [t["name"] for t in r["tensors"]] == ["good"], [t["name"] for t in r["tensors"]]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
for n, want in (("strided", "strides (32, 2)"), ("past_end", "lies outside its storage"),
                ("missing", "is not in the archive"), ("short", "fewer than its 64 elements"),
                ("mask", "BoolStorage is not read"), ("cplx", "ComplexFloatStorage is not read")):
    assert want in errs.get(n, ""), (n, errs)
PY
# a negative stride or storage offset (torch.save writes neither) is that view's errors entry,
# never the file's: the good tensor is analysed as in views.pt
python3 - "$tmp/neg.pt" <<'PY' || exit 1
import collections, random, struct, sys
sys.path.insert(0, "scripts")
import torch_writer as tw
random.seed(7)
s = tw.Storage("FloatStorage", struct.pack("<256f", *[random.gauss(0, 1) for _ in range(256)]), "0")
v = collections.OrderedDict()
v["good"] = tw.Tensor(s, 0, (8, 32))
v["neg_stride"] = tw.Tensor(s, 255, (8, 32), (32, -1))
v["neg_offset"] = tw.Tensor(s, -1, (8, 32))
tw.save(sys.argv[1], v)
PY
"$FP4DIAG" sqnr --all-tensors "$tmp/neg.pt" -q -o "$tmp/ng.json" 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] || { echo "neg.pt: exit $rc, wanted 3"; cat "$tmp/err"; fail=1; }
python3 - "$tmp/ng.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
assert [t["name"] for t in r["tensors"]] == ["good"], [t["name"] for t in r["tensors"]]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
assert errs["neg_stride"].endswith("neg.pt: neg_stride: a view with strides (32, -1): a negative "
                                   "stride is not read"), errs
assert errs["neg_offset"].endswith("neg.pt: neg_offset: a view at storage offset -1: a negative "
                                   "offset is not read"), errs
PY
# refused files: one line naming the file, exit 3, no report, nothing run
head -c 30000 "$T/small.pt" >"$tmp/cut.pt"
# a shard that is a FIFO is refused, never waited on
mkdir "$tmp/fifo" && cp "$T/sharded/pytorch_model.bin.index.json" "$T/sharded/pytorch_model-00001-of-00002.bin" "$tmp/fifo/" &&
    mkfifo "$tmp/fifo/pytorch_model-00002-of-00002.bin" || exit 1
cd "$tmp" || exit 1
bad() { # FILE WANT
    timeout 60 "$FP4DIAG" sqnr "$1" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 3 ] || [ -s "$tmp/out" ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] ||
        ! grep -qF "$2" "$tmp/err" || ! grep -qF "$1" "$tmp/err"; then
        echo "$1: exit $rc, wanted 3 and '$2':"; cat "$tmp/err"; head -c 300 "$tmp/out"; fail=1
    fi
}
bad "$T/legacy.pt" "legacy (pre-1.6, non-zip) format, not read: save it again with torch.save(obj, f, _use_new_zipfile_serialization=True), or as safetensors"
bad "$T/evil_os.pt" "pickle global os.system refused"
bad "$T/evil_reduce.pt" "pickle global posix.system refused"
bad "$T/evil_p4.pt" "pickle global builtins.exec refused"
bad "$tmp/cut.pt" "end-of-central-directory"
bad "$tmp/fifo/pytorch_model.bin.index.json" "a FIFO, not a regular file (a shard the index names)"
"$FP4DIAG" ls "$T/evil_reduce.pt" >/dev/null 2>&1
if ls "$tmp" | grep -q fp4diag-pickle-ran; then echo "a pickle ran"; fail=1; fi
exit $fail
