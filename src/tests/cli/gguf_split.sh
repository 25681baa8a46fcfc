#!/bin/sh
# gguf_split.sh — a split GGUF model (llama.cpp's gguf-split layout, NAME-00001-of-00003.gguf
# ..., keys split.no / split.count / split.tensors.count; testdata/gguf/split/ written by
# gguf-py's GGUFWriter with split_max_tensors=2: scripts/make_gguf_testdata.py) reads as one
# model when its first part or its directory is named (a directory of two models is refused): `ls` lists every part's tensors with the part holding
# each, the metadata is the first part's, `audit` gives the numbers model.gguf (the same
# tensors in one file) gives, and the report's provenance fingerprints every part; -o onto a
# part is refused. Refusals, one line naming the file, exit 3: a part other than the first
# named, a part missing, a part from elsewhere (its split.no / split.count) or with no split
# keys, a tensor stored in two parts, a split.tensors.count the parts do not hold, a first part
# not named as one, a part symlinked out of the first part's directory tree (without
# --allow-external).
set -u
D=testdata/gguf
S=$D/split/model-00001-of-00003.gguf
[ -f "$S" ] || { echo "no $S"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" "$tmp/err" 2>/dev/null | head -40; exit 1; }

"$FP4DIAG" ls "$S" >"$tmp/out" 2>"$tmp/err" || fail "ls exited $?"
for re in '^blk\.0\.attn_k\.weight +32x128 +f16 .* model-00001-of-00003\.gguf' \
          '^blk\.0\.ffn_down\.weight +64x128 +mxfp4 .* model-00001-of-00003\.gguf +gguf, ggml blocks' \
          '^blk\.0\.ffn_gate\.weight +64x128 +nvfp4 .* model-00002-of-00003\.gguf +gguf, ggml blocks' \
          '^blk\.0\.ffn_up\.weight +64x128 +q8_0 .* model-00002-of-00003\.gguf +ggml type q8_0 is not read' \
          '^output_norm\.weight +128 +f32 .* model-00003-of-00003\.gguf' \
          '^  general\.name: fp4diag split gguf fixture$' '^  split\.count: 3$'; do
    grep -Eq "$re" "$tmp/out" || fail "ls: no line matching $re"
done
[ "$(grep -c '^blk\.\|^output' "$tmp/out")" -eq 5 ] || fail "ls: not 5 tensors"
[ ! -s "$tmp/err" ] || fail "ls wrote to stderr"

# the same tensors, the same numbers as from the single file
"$FP4DIAG" audit "$D/source.safetensors" "$S" -o "$tmp/split.json" -q 2>"$tmp/err" ||
    fail "audit of the split model exited $?"
"$FP4DIAG" audit "$D/source.safetensors" "$D/model.gguf" 'blk.0.ffn_*' -o "$tmp/one.json" -q \
    2>"$tmp/err" || fail "audit of model.gguf exited $?"
if python3 -c 'import json' 2>/dev/null; then
    python3 - "$tmp/split.json" "$tmp/one.json" <<'PY' || fail "split audit differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["errors"] == [] and b["errors"] == [], (a["errors"], b["errors"])
na = [t["name"] for t in a["tensors"]]
assert na == ["blk.0.ffn_down.weight", "blk.0.ffn_gate.weight"], na
for x, y in zip(a["tensors"], b["tensors"]):
    assert x["name"] == y["name"] and x["quant"] == y["quant"], (x, y)
    for k in ("export", "requant", "nonnearest_frac", "scale_match_frac"):
        assert x[k] == y[k], (x["name"], k, x[k], y[k])
files = [f["file"].rsplit("/", 1)[-1] for f in a["provenance"]["inputs"]]
assert files == ["source.safetensors"] + ["model-%05d-of-00003.gguf" % i for i in (1, 2, 3)], files
PY
fi

check() { # WANT-STDERR-TEXT ARGS...
    text=$1; shift
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 3 ] || fail "$*: exit $rc, expected 3"
    grep -qF "$text" "$tmp/err" || fail "$*: stderr lacks: $text"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: more than one line on stderr"
}
check "$D/split/model-00002-of-00003.gguf: part 2 of a split model of 3: name its first part, $D/split/model-00001-of-00003.gguf" \
    ls "$D/split/model-00002-of-00003.gguf"
check "$D/split_dup/dup-00001-of-00002.gguf: tensor a is stored twice ($D/split_dup/dup-00001-of-00002.gguf, $D/split_dup/dup-00002-of-00002.gguf)" \
    ls "$D/split_dup/dup-00001-of-00002.gguf"
check "$D/split_count/cnt-00001-of-00002.gguf: split.tensors.count 5, but the 2 parts hold 3 tensors" \
    ls "$D/split_count/cnt-00001-of-00002.gguf"
mkdir "$tmp/m"
M=$tmp/m/model
cp "$D"/split/model-0000[12]-of-00003.gguf "$tmp/m/"
check "$M-00001-of-00003.gguf: split part 3 of 3: $M-00003-of-00003.gguf: no such file" \
    ls "$M-00001-of-00003.gguf"
check "$M-00001-of-00003.gguf: split part 3 of 3: $M-00003-of-00003.gguf: no such file" \
    sqnr "$M-00001-of-00003.gguf" -o "$tmp/r.json"
[ ! -e "$tmp/r.json" ] || fail "a report written for a split model with a part missing"
cp "$D/split/model-00003-of-00003.gguf" "$M-00002-of-00003.gguf"
check "$M-00001-of-00003.gguf: split part 2 of 3 ($M-00002-of-00003.gguf) says split.no 2 of split.count 3, expected 1 of 3" \
    ls "$M-00001-of-00003.gguf"
cp "$D/split_dup/dup-00002-of-00002.gguf" "$M-00002-of-00003.gguf"
check "$M-00001-of-00003.gguf: split part 2 of 3 ($M-00002-of-00003.gguf) says split.no 1 of split.count 2, expected 1 of 3" \
    ls "$M-00001-of-00003.gguf"
cp "$D/model.gguf" "$M-00002-of-00003.gguf"
check "$M-00001-of-00003.gguf: split part 2 of 3 ($M-00002-of-00003.gguf) has no split.count" \
    ls "$M-00001-of-00003.gguf"
cp "$S" "$tmp/plain.gguf"
check "$tmp/plain.gguf: split.count 3, but the name is not NAME-00001-of-00003.gguf" \
    ls "$tmp/plain.gguf"

# the set named by its directory: the same model; a directory of two models is refused
"$FP4DIAG" ls "$S" >"$tmp/byfile" 2>&1 || fail "ls of the first part exited $?"
"$FP4DIAG" ls "$D/split" >"$tmp/bydir" 2>"$tmp/err" || fail "ls of the directory exited $?"
cmp -s "$tmp/byfile" "$tmp/bydir" || fail "ls of the directory differs from ls of its first part"
mkdir "$tmp/one" "$tmp/two"
cp "$D/model.gguf" "$tmp/one/"
"$FP4DIAG" ls "$tmp/one" >"$tmp/out" 2>"$tmp/err" || fail "ls of a directory of one file exited $?"
grep -q '^blk\.0\.attn_q\.weight ' "$tmp/out" || fail "ls of a directory of one file"
cp "$D/model.gguf" "$D/split_dup/dup-00001-of-00002.gguf" "$tmp/two/"
check "$tmp/two: 2 .gguf files (dup-00001-of-00002.gguf, model.gguf) that are not the parts of one split model: name the file to read" \
    ls "$tmp/two"
# a part symlinked out of the first part's directory tree is not read without --allow-external
# (the rule for shards); a link inside the tree is
mkdir "$tmp/x" "$tmp/x/sub" "$tmp/ext"
X=$tmp/x/model
cp "$D/split/model-00001-of-00003.gguf" "$tmp/x/"
cp "$D"/split/model-0000[23]-of-00003.gguf "$tmp/ext/"
cp "$D/split/model-00003-of-00003.gguf" "$tmp/x/sub/"
ln -s "$tmp/ext/model-00002-of-00003.gguf" "$X-00002-of-00003.gguf"
ln -s "$tmp/x/sub/model-00003-of-00003.gguf" "$X-00003-of-00003.gguf"
check "$X-00001-of-00003.gguf: split part 2 of 3: $X-00002-of-00003.gguf: resolves outside the model's directory" \
    sqnr --all-tensors "$X-00001-of-00003.gguf" -o "$tmp/r.json"
[ ! -e "$tmp/r.json" ] || fail "a report written from a part outside the tree"
"$FP4DIAG" ls --allow-external "$X-00001-of-00003.gguf" >"$tmp/out" 2>"$tmp/err" ||
    fail "ls --allow-external of a part outside the tree: exit $?"
[ "$(grep -c '^blk\.\|^output' "$tmp/out")" -eq 5 ] || fail "ls --allow-external: not 5 tensors"
rm "$X-00002-of-00003.gguf" && cp "$D/split/model-00002-of-00003.gguf" "$tmp/x/" ||
    fail "cannot copy part 2"
"$FP4DIAG" ls "$X-00001-of-00003.gguf" >"$tmp/out" 2>"$tmp/err" ||
    fail "ls of a part linked inside the tree: exit $?"

# -o onto a part of the input is refused before anything is written
cp "$D"/split/model-0000?-of-00003.gguf "$tmp/m/"
"$FP4DIAG" sqnr "$M-00001-of-00003.gguf" -o "$M-00003-of-00003.gguf" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "-o onto a part: exit not 2"
grep -qF "read as part of the input" "$tmp/err" || fail "-o onto a part: message"
cmp -s "$M-00003-of-00003.gguf" "$D/split/model-00003-of-00003.gguf" || fail "-o overwrote a part"
exit 0
