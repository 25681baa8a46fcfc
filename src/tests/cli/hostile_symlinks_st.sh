#!/bin/sh
# hostile_symlinks_st.sh — safetensors (and PyTorch) checkpoints whose files are symlinks out of
# the input's tree (issue 26): a shard the index names, a shard inside a symlinked subdirectory,
# a directory entry, a directory's index. Each is refused (exit 3, one line saying it resolves
# outside, naming --allow-external) by sqnr and ls, and read with --allow-external; symlinks
# that stay inside the tree are read as before. HDF5's external files follow the same rule.
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
python3 - "$tmp" <<'PY' || fail "cannot write the inputs"
import json, os, struct, sys
d = sys.argv[1]
def st(path, name, k):
    vals = [((i * 37 + k) % 101 - 50) / 7.0 for i in range(64)]
    b = struct.pack("<64f", *vals)
    h = json.dumps({name: {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, len(b)]}}).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b)
for sub in ("outside", "shard", "subdir", "entry", "dindex", "inside"):
    os.makedirs(os.path.join(d, sub))
st(d + "/outside/s2.safetensors", "b", 2)
json.dump({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}}, open(d + "/outside/model.safetensors.index.json", "w"))
st(d + "/outside/s1.safetensors", "a", 1)
# a shard symlinked out
st(d + "/shard/s1.safetensors", "a", 1)
os.symlink("../outside/s2.safetensors", d + "/shard/s2.safetensors")
json.dump({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}}, open(d + "/shard/model.safetensors.index.json", "w"))
# a shard inside a symlinked subdirectory
st(d + "/subdir/s1.safetensors", "a", 1)
os.symlink("../outside", d + "/subdir/sub")
json.dump({"weight_map": {"a": "s1.safetensors", "b": "sub/s2.safetensors"}}, open(d + "/subdir/model.safetensors.index.json", "w"))
# a directory entry symlinked out
st(d + "/entry/s1.safetensors", "a", 1)
os.symlink("../outside/s2.safetensors", d + "/entry/s2.safetensors")
# a directory's index symlinked out (its shards resolve beside the link)
st(d + "/dindex/s1.safetensors", "a", 1)
st(d + "/dindex/s2.safetensors", "b", 2)
os.symlink("../outside/model.safetensors.index.json", d + "/dindex/model.safetensors.index.json")
# symlinks inside the tree
st(d + "/inside/real.safetensors", "a", 1)
os.makedirs(d + "/inside/blobs")
st(d + "/inside/blobs/x", "b", 2)
os.symlink("blobs/x", d + "/inside/s2.safetensors")
# PyTorch checkpoints (torch.save archives written without torch): the same rule
sys.path.insert(0, "scripts")
import collections, torch_writer as tw
def pt(path, name, k):
    vals = [((i * 37 + k) % 101 - 50) / 7.0 for i in range(64)]
    tw.save(path, collections.OrderedDict([(name, tw.contiguous("FloatStorage", struct.pack("<64f", *vals), [4, 16], "0"))]))
for sub in ("ptshard", "ptentry"):
    os.makedirs(os.path.join(d, sub))
pt(d + "/outside/p2.bin", "b", 2)
pt(d + "/ptshard/p1.bin", "a", 1)
os.symlink("../outside/p2.bin", d + "/ptshard/p2.bin")
json.dump({"weight_map": {"a": "p1.bin", "b": "p2.bin"}}, open(d + "/ptshard/pytorch_model.bin.index.json", "w"))
pt(d + "/ptentry/p1.bin", "a", 1)
os.symlink("../outside/p2.bin", d + "/ptentry/p2.bin")
# a Hugging Face cache: snapshots/REV/ links into the repository's own blobs/ (read without
# --allow-external, as a directory, an index or a file); a snapshot whose link leaves the
# repository (another repository's blobs) is refused
for repo in ("models--org--m", "models--org--other"):
    os.makedirs(d + "/hub/%s/blobs" % repo)
    os.makedirs(d + "/hub/%s/snapshots/0123abc" % repo)
r = d + "/hub/models--org--m"
st(r + "/blobs/h1", "a", 1)
st(r + "/blobs/h2", "b", 2)
json.dump({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}}, open(r + "/blobs/h3", "w"))
for name, blob in (("s1.safetensors", "h1"), ("s2.safetensors", "h2"), ("model.safetensors.index.json", "h3")):
    os.symlink("../../blobs/" + blob, r + "/snapshots/0123abc/" + name)
o = d + "/hub/models--org--other"
st(o + "/blobs/h1", "a", 1)
st(d + "/hub/models--org--m/blobs/h9", "b", 2)
os.symlink("../../blobs/h1", o + "/snapshots/0123abc/s1.safetensors")
os.symlink("../../../models--org--m/blobs/h9", o + "/snapshots/0123abc/s2.safetensors")
PY
T=60
for c in "shard" "shard/model.safetensors.index.json" "subdir" "entry" "dindex" "ptshard" \
    "ptshard/pytorch_model.bin.index.json" "ptentry" "hub/models--org--other/snapshots/0123abc"; do
    for cmd in sqnr ls; do
        timeout $T "$FP4DIAG" $cmd "$tmp/$c" >"$tmp/out" 2>"$tmp/err"; rc=$?
        [ "$rc" -eq 3 ] || fail "$cmd $c: exit $rc, want 3 (a file outside the tree was read?)"
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$cmd $c: stderr is not one line"
        grep -q "outside" "$tmp/err" && grep -q -- "--allow-external" "$tmp/err" ||
            fail "$cmd $c: the message does not say it resolves outside / name --allow-external"
        [ ! -s "$tmp/out" ] || fail "$cmd $c: output written"
    done
    timeout $T "$FP4DIAG" sqnr --allow-external --all-tensors "$tmp/$c" -q -o "$tmp/r.json" \
        2>"$tmp/err" || fail "sqnr --allow-external $c: exit $?"
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); assert sorted(t["name"] for t in r["tensors"]) == ["a", "b"], r' \
        "$tmp/r.json" || fail "sqnr --allow-external $c: not both tensors"
    timeout $T "$FP4DIAG" ls --allow-external "$tmp/$c" >/dev/null 2>"$tmp/err" ||
        fail "ls --allow-external $c: exit $?"
done
timeout $T "$FP4DIAG" sqnr --all-tensors "$tmp/inside" -q -o "$tmp/r.json" 2>"$tmp/err" ||
    fail "sqnr inside/ (symlinks within the tree): exit $?"
python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); assert sorted(t["name"] for t in r["tensors"]) == ["a", "b"], r' \
    "$tmp/r.json" || fail "sqnr inside/: not both tensors"
snap=hub/models--org--m/snapshots/0123abc
for c in "$snap" "$snap/model.safetensors.index.json"; do
    timeout $T "$FP4DIAG" sqnr --all-tensors "$tmp/$c" -q -o "$tmp/r.json" 2>"$tmp/err" ||
        fail "sqnr $c (a Hugging Face cache snapshot): exit $? ($(cat "$tmp/err"))"
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); assert sorted(t["name"] for t in r["tensors"]) == ["a", "b"], r' \
        "$tmp/r.json" || fail "sqnr $c: not both tensors"
done
exit 0
