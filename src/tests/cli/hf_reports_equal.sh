#!/bin/sh
# hf_reports_equal.sh — the shared GPT checkpoint written by the reference writers
# (scripts/make_hf_testdata.py: safetensors with bf16 kept, two shards + index, .npz stored
# and deflated, PyTorch .bin single and two shards + index) gives reports equal to the HDF5
# checkpoint's bit for bit, for sqnr, bias, buckets and rht (names mapped, input fields aside: argv, input, tensor dtype), the verdict's
# ranking in the same order; tensors in the index's order; `ls` lists every tensor with shard
# and offset, type and size as the files say, and the files' and index's metadata; a glob and
# a prefix select across the '.'-separated names; the -v tables' name column fits these names;
# gemm finds its groups and operands in such names.
set -u
python3 -c 'import safetensors, numpy, h5py' 2>/dev/null || { echo "no python3 safetensors"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 scripts/make_hf_testdata.py --names testdata/gpt_ckpt_small.h5 "$tmp" || exit 1
fail=0
for cmd in "sqnr --scale nvfp4 --all-tensors" "bias --all-tensors" "buckets --format e2m1" "rht --format e2m1"; do
    set -- $cmd
    c=$1
    "$FP4DIAG" "$@" testdata/gpt_ckpt_small.h5 -q -o "$tmp/$c.h5.json" || { echo "$cmd on HDF5: exit $?"; exit 1; }
    for f in model.safetensors sharded/model.safetensors.index.json sharded model.npz model_z.npz \
             pytorch_model.bin sharded_pt/pytorch_model.bin.index.json sharded_pt; do
        "$FP4DIAG" "$@" "$tmp/$f" -q -o "$tmp/$c.out.json" 2>"$tmp/err" ||
            { echo "$cmd on $f: exit $?"; cat "$tmp/err"; fail=1; continue; }
        python3 - "$tmp/names.tsv" "$tmp/$c.h5.json" "$tmp/$c.out.json" "$f" <<'PY' || fail=1
import json, sys
names = dict(l.rstrip("\n").split("\t") for l in open(sys.argv[1]))
a, b = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
# the verdict ranks the tensors in the same order whatever order the file lists them in (ties
# of one key are broken by the others: with one format every gap is 0)
ra, rb = ([names.get(x["tensor"], x["tensor"]) for x in r["verdict"]["ranking"]] for r in (a, b))
if ra != rb:
    sys.exit("%s: verdict ranking differs: %s vs %s" % (sys.argv[4], ra[:3], rb[:3]))
for r in (a, b):
    # input fields, and the verdict (a ranking derived from them, stored types included)
    for k in ("argv", "input", "timing", "provenance", "verdict"):
        r.pop(k, None)
    for t in r.get("tensors", []):
        t.pop("dtype", None)
        t["name"] = names.get(t["name"], t["name"])
    for t in r.get("skipped", []):
        t.pop("dtype", None)
        t["name"] = names.get(t["name"], t["name"])
    r.get("skipped", []).sort(key=lambda t: t["name"])
# the same tensors; HDF5 lists by name, the others in their own order
ta = {t["name"]: t for t in a.pop("tensors")}
tb = [t for t in b.pop("tensors")]
if sorted(ta) != sorted(t["name"] for t in tb):
    sys.exit("%s: tensors differ: %s vs %s" % (sys.argv[4], sorted(ta), [t["name"] for t in tb]))
for t in tb:
    if t != ta[t["name"]]:
        sys.exit("%s: %s differs" % (sys.argv[4], t["name"]))
# summaries: fp sums over tensors in another order may differ in the last bits: compare
# order-independent parts exactly, the rest to 1e-12 relative
def close(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        if sorted(x) != sorted(y): sys.exit("%s: keys differ at %s" % (sys.argv[4], path))
        for k in x: close(x[k], y[k], path + "." + k)
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y): sys.exit("%s: lengths differ at %s" % (sys.argv[4], path))
        for i, (p, q) in enumerate(zip(x, y)): close(p, q, "%s[%d]" % (path, i))
    elif isinstance(x, float) and isinstance(y, float):
        if abs(x - y) > 1e-12 * max(abs(x), abs(y)): sys.exit("%s: %s: %r vs %r" % (sys.argv[4], path, x, y))
    elif x != y:
        sys.exit("%s: %s: %r vs %r" % (sys.argv[4], path, x, y))
close(a, b, "")
PY
    done
done
# index order: the report's tensors in the weight_map's order
"$FP4DIAG" sqnr --all-tensors "$tmp/sharded" -q -o "$tmp/s.json" || exit 1
python3 - "$tmp/s.json" "$tmp/sharded/model.safetensors.index.json" <<'PY' || fail=1
import json, sys
r, ix = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
got = [t["name"] for t in r["tensors"]]
assert got == [n for n in ix["weight_map"] if n in got] and len(got) >= 5, got
assert all(t["dtype"] == "bf16" for t in r["tensors"]), [t["dtype"] for t in r["tensors"]]
# the layer index of plot_depth.py in '.'-separated names; the final norm last
sys.path.insert(0, "scripts")
import fp4report as fr
assert fr.block_index("model.layers.5.mlp.down_proj.weight") == 5
d = fr.depth_order(got)
assert [fr.block_index(n) for n in d if fr.block_index(n) is not None] == sorted(
    fr.block_index(n) for n in got if fr.block_index(n) is not None), d
assert d[-1].startswith("model.norm."), d
PY
# selection: a glob inside one component, a prefix, an exact name
"$FP4DIAG" ls "$tmp/model.safetensors" 'model.layers.*.mlp.*.weight' >"$tmp/ls1" || exit 1
n=$(grep -c '^model\.layers\.[0-9]*\.mlp\.\(up\|down\)_proj\.weight ' "$tmp/ls1")
[ "$n" -eq "$(grep -c '^model' "$tmp/ls1")" ] && [ "$n" -ge 2 ] || { echo "glob selected:"; cat "$tmp/ls1"; fail=1; }
"$FP4DIAG" ls "$tmp/sharded" model.layers.5 >"$tmp/ls2" || exit 1
grep -q '^model\.layers\.5\.self_attn\.o_proj\.weight ' "$tmp/ls2" && ! grep -q '^model\.layers\.0' "$tmp/ls2" &&
    ! grep -q '^model\.norm' "$tmp/ls2" || { echo "prefix selected:"; cat "$tmp/ls2"; fail=1; }
grep -q 'model-00002-of-00002.safetensors' "$tmp/ls2" || { echo "ls shows no shard:"; cat "$tmp/ls2"; fail=1; }
# ls: name, shape, stored type, bytes, offset in the file and shard as the files say; the
# shards' __metadata__ and the index's metadata, in the table and in --json
"$FP4DIAG" ls --json "$tmp/sharded" >"$tmp/ls.json" || exit 1
"$FP4DIAG" ls "$tmp/sharded" >"$tmp/ls.txt" || exit 1
python3 - "$tmp/ls.json" "$tmp/ls.txt" "$tmp/sharded" <<'PY' || fail=1
import json, os, struct, sys
d, txt, sd = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3]
ix = json.load(open(os.path.join(sd, "model.safetensors.index.json")))
head = txt.splitlines()[0].split()
assert head[:2] == ["name", "shape"] and head[-2:] == ["offset", "shard"] and "dtype" in head, head
want = {}
for shard in sorted(set(ix["weight_map"].values())):
    raw = open(os.path.join(sd, shard), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    assert d["metadata"] == h.get("__metadata__", {}), (d["metadata"], h.get("__metadata__"))
    for k, v in h.items():
        if k != "__metadata__":
            want[k] = (v["shape"], v["dtype"].lower(), v["data_offsets"][1] - v["data_offsets"][0],
                       8 + n + v["data_offsets"][0], shard)
got = {t["name"]: (t["shape"], t["dtype"], t["stored_bytes"], t["offset"], t["shard"]) for t in d["datasets"]}
assert got == want, [(k, got.get(k), want[k]) for k in want if got.get(k) != want[k]][:3]
assert d["index_metadata"] == ix["metadata"], (d["index_metadata"], ix["metadata"])
lines = txt.splitlines()
i = lines.index("index metadata")
assert lines[i + 1] == "  total_size: %d" % ix["metadata"]["total_size"], lines[i:]
assert "metadata" in lines and "  format: pt" in lines, lines[-6:]
for name, (shape, dt, nb, off, shard) in want.items():
    row = next(l.split() for l in lines if l.split() and l.split()[0] == name)
    assert row[1] == "x".join(map(str, shape)) and row[2] == dt and row[-2] == str(off) and row[-1] == shard, row
PY
# -v: the tables' name column is as wide as the longest name (the HF names pass 32 columns)
"$FP4DIAG" rht "$tmp/sharded" -v -o "$tmp/v.json" 2>"$tmp/v.txt" || exit 1
"$FP4DIAG" sqnr "$tmp/sharded" -v -o "$tmp/v.json" 2>>"$tmp/v.txt" || exit 1
python3 - "$tmp/v.txt" <<'PY' || fail=1
import sys
col = None
for l in open(sys.argv[1]).read().splitlines():
    if l.startswith("tensor "):
        col = l.index("format")
    elif col and (l.startswith("model.") or l.startswith("(pooled)")):
        assert l[col - 1] == " " and l[col] != " " and l[:col].rstrip() == l.split()[0], (col, l)
    elif l.startswith("  model."):  # the verdict's ranking: "best" in one column
        assert l.index(" best ") == 2 + max(32, max(len(x.split()[0]) for x in open(sys.argv[1]) if x.startswith("model."))), l
PY
"$FP4DIAG" ls "$tmp/model.npz" model.norm.weight >"$tmp/ls3" || exit 1
[ "$(grep -c '^model' "$tmp/ls3")" -eq 1 ] || { cat "$tmp/ls3"; fail=1; }
# gemm: the GEMM operands under '.'-separated names; the groups holding a 'w' found as for
# HDF5, and operands named with --x/--w/--dy FILE:NAME; paths equal the HDF5 report's
python3 - testdata/gpt_gemm_small.h5 "$tmp/gemm.safetensors" <<'PY' || exit 1
import sys, h5py, numpy as np
from safetensors.numpy import save_file
t = {}
def visit(n, o):
    if isinstance(o, h5py.Dataset):
        t["model.layers.1." + n.replace("/", ".")] = np.ascontiguousarray(o[()], dtype="<f4")
h5py.File(sys.argv[1], "r").visititems(visit)
save_file(t, sys.argv[2])
PY
"$FP4DIAG" gemm testdata/gpt_gemm_small.h5 -q -o "$tmp/gh.json" || exit 1
"$FP4DIAG" gemm "$tmp/gemm.safetensors" -q -o "$tmp/gs.json" || { echo "gemm on safetensors: exit $?"; exit 1; }
g=$tmp/gemm.safetensors
"$FP4DIAG" gemm --x "$g:model.layers.1.qkv.x" --w "$g:model.layers.1.qkv.w" --dy "$g:model.layers.1.qkv.dy" \
    -q -o "$tmp/gx.json" || { echo "gemm --x FILE:NAME: exit $?"; exit 1; }
python3 - "$tmp" <<'PY' || fail=1
import json, sys
d = sys.argv[1]
h, s, x = (json.load(open("%s/%s.json" % (d, n))) for n in ("gh", "gs", "gx"))
hl = {l["name"]: l["paths"] for l in h["layers"]}
sl = {l["name"]: l["paths"] for l in s["layers"]}
assert sorted(sl) == sorted("model.layers.1." + n.strip("/") for n in hl), (sorted(sl), sorted(hl))
for n, p in hl.items():
    assert sl["model.layers.1." + n.strip("/")] == p, n
assert x["layers"][0]["paths"] == hl["/qkv"]
PY
exit $fail
