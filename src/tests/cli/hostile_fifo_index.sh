#!/bin/sh
# hostile_fifo_index.sh — FIFOs and an index whose key stands late (issue 26). A FIFO shard
# named by an index, a FIFO model.safetensors.index.json in a directory, a FIFO *.safetensors
# in a directory input, a FIFO named directly (also as .npy): sqnr, ls and the -o check refuse
# each at once (one line naming the file, exit 3), never block on it. An index named directly
# whose "weight_map" key starts after byte 4096 (metadata first) is read as the index, with
# the report of the same checkpoint given as its directory.
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
python3 - "$tmp" <<'PY' || fail "cannot write the inputs"
import json, os, struct, sys
d = sys.argv[1]
def st(path, tensors):
    hdr, data = {}, b""
    for name, vals in tensors.items():
        b = struct.pack("<%df" % len(vals), *vals)
        hdr[name] = {"dtype": "F32", "shape": [4, len(vals) // 4], "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
vals = [((i * 37) % 101 - 50) / 7.0 for i in range(64)]
os.makedirs(d + "/late")
st(d + "/late/s1.safetensors", {"a": vals})
st(d + "/late/s2.safetensors", {"b": vals[::-1]})
meta = {"total_size": 512, "note": "x" * 6000}  # the key after byte 4096
with open(d + "/late/model.safetensors.index.json", "w") as f:
    f.write('{"metadata": ' + json.dumps(meta) + ', "weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}}')
for k in ("fshard", "findex", "fentry"):
    os.makedirs(d + "/" + k)
st(d + "/fshard/s1.safetensors", {"a": vals})
json.dump({"weight_map": {"a": "s1.safetensors", "b": "pipe.safetensors"}}, open(d + "/fshard/model.safetensors.index.json", "w"))
st(d + "/findex/s1.safetensors", {"a": vals})
st(d + "/fentry/s1.safetensors", {"a": vals})
PY
mkfifo "$tmp/fshard/pipe.safetensors" "$tmp/findex/model.safetensors.index.json" \
    "$tmp/fentry/s2.safetensors" "$tmp/pipe" "$tmp/pipe.npy" "$tmp/pipe.safetensors" ||
    skip "mkfifo failed"
T=30
# refused CMD WHAT ARGS...: exit 3 within T seconds, one line naming WHAT
refused() {
    what=$1; shift
    timeout $T "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -ne 124 ] || fail "$*: blocked (killed after ${T}s)"
    [ "$rc" -eq 3 ] || fail "$*: exit $rc, want 3"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: stderr is not one line"
    grep -qF -- "$what" "$tmp/err" || fail "$*: stderr does not name $what"
}
refused "pipe.safetensors" sqnr "$tmp/fshard" -q
grep -q "FIFO" "$tmp/err" || fail "FIFO shard: the message does not say FIFO"
refused "pipe.safetensors" sqnr "$tmp/fshard/model.safetensors.index.json" -q
refused "pipe.safetensors" ls "$tmp/fshard"
refused "model.safetensors.index.json" sqnr "$tmp/findex" -q
refused "model.safetensors.index.json" ls "$tmp/findex"
refused "s2.safetensors" sqnr "$tmp/fentry" -q
refused "s2.safetensors" ls "$tmp/fentry"
for f in pipe pipe.npy pipe.safetensors; do
    refused "$tmp/$f" sqnr "$tmp/$f" -q
    refused "$tmp/$f" ls "$tmp/$f"
done
# the -o check reads the inputs' indexes: no block either (the run itself then says why)
for dir in fshard findex fentry; do
    timeout $T "$FP4DIAG" sqnr "$tmp/$dir" -q -o "$tmp/r.json" >/dev/null 2>"$tmp/err"; rc=$?
    [ "$rc" -ne 124 ] || fail "-o check with $dir: blocked"
    [ "$rc" -eq 3 ] || fail "sqnr $dir -o: exit $rc, want 3"
done

# the late key: the index named directly reads as the directory does
strip() { python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); r.pop("timing", None); r.pop("argv", None); r.pop("provenance", None); r.pop("input", None)
print(json.dumps(r["tensors"], sort_keys=True), json.dumps(r["errors"]))' "$1"; }
timeout $T "$FP4DIAG" sqnr "$tmp/late" -q -o "$tmp/dir.json" 2>"$tmp/err" || fail "sqnr late/: exit $?"
timeout $T "$FP4DIAG" sqnr "$tmp/late/model.safetensors.index.json" -q -o "$tmp/idx.json" \
    2>"$tmp/err" || fail "sqnr on an index with weight_map after byte 4096: exit $?"
[ "$(strip "$tmp/idx.json")" = "$(strip "$tmp/dir.json")" ] ||
    fail "the index named directly gives another report than its directory"
python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); assert sorted(t["name"] for t in r["tensors"]) == ["a", "b"], r["tensors"]' \
    "$tmp/idx.json" || fail "the late index does not list a and b"
timeout $T "$FP4DIAG" ls "$tmp/late/model.safetensors.index.json" >"$tmp/out" 2>"$tmp/err" ||
    fail "ls on the late index: exit $?"
# -o onto a shard of the late index is refused (the -o check finds its shards)
cp "$tmp/late/s1.safetensors" "$tmp/s1.bak"
timeout $T "$FP4DIAG" sqnr "$tmp/late/model.safetensors.index.json" -q \
    -o "$tmp/late/s1.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || fail "-o onto a shard of the late index: exit $rc, want 2"
cmp -s "$tmp/s1.bak" "$tmp/late/s1.safetensors" || fail "-o overwrote a shard"
exit 0
