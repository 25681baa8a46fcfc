#!/bin/sh
# merge_output_input.sh — merge never writes over a file the parts' run read (SPEC §9): -o naming
# an input in the parts' provenance (a source checkpoint of audit, the HDF5 file of sqnr or
# gemm), also through a symlink, a hard link or a dotted path, is refused with exit 2 as audit
# -o is, and the file is left as it was; and a part whose shard.assigned holds a bad value is
# refused naming that value (99, 2^62, 2.5, "2"), not -1. Inputs are copied to a temp folder.
set -u
Q=$PWD/testdata/quantized/producer/modelopt_nvfp4
S=$PWD/testdata/quantized/producer/source
H=$PWD/testdata/gpt_ckpt_small.h5
G=$PWD/testdata/gpt_gemm_small.h5
for f in "$Q" "$S" "$H" "$G"; do [ -e "$f" ] || { echo "no testdata"; exit 77; }; done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1
cp -r "$S" SRC && cp "$H" c.h5 && cp "$G" g.h5 && cp -r SRC keep && cp c.h5 keep.h5 && cp g.h5 keepg.h5 ||
    exit 1
# refused: merge -o $1 of parts $2 $3, exit 2, the message naming the input, nothing changed
refused() {
    o=$1 && shift
    "$FP4DIAG" merge -o "$o" "$@" >out 2>err; rc=$?
    [ "$rc" -eq 2 ] || { cat err; fail "merge -o $o: exit $rc, want 2"; }
    grep -q "^fp4diag merge: -o $o is .*the report would overwrite it" err || { cat err; fail "merge -o $o: message"; }
    [ -s out ] && fail "merge -o $o: wrote to stdout"
    cmp -s SRC/model.safetensors keep/model.safetensors && cmp -s SRC/config.json keep/config.json &&
        cmp -s c.h5 keep.h5 && cmp -s g.h5 keepg.h5 || fail "merge -o $o: an input changed"
}
for i in 0 1; do
    "$FP4DIAG" audit --shard $i/2 -q -o a$i.json SRC "$Q" >/dev/null || fail "audit share $i"
    "$FP4DIAG" sqnr c.h5 /blocks/0/proj/weight /blocks/0/ln1/weight --format e2m1 -q --shard $i/2 \
        -o s$i.json || fail "sqnr share $i"
    "$FP4DIAG" gemm g.h5 /proj /qkv -q --shard $i/2 -o g$i.json || fail "gemm share $i"
done
ln -s SRC/model.safetensors sym && ln SRC/config.json hard && ln -s c.h5 symc && ln g.h5 hardg || exit 1
refused SRC/model.safetensors a0.json a1.json # the tester's case: a file of the source folder
refused sym a0.json a1.json
refused hard a0.json a1.json
refused "$tmp/SRC/../SRC/config.json" a0.json a1.json
refused c.h5 s0.json s1.json
refused symc s0.json s1.json
refused hardg g0.json g1.json
refused ./g.h5 g0.json g1.json
# the same merges to a new file are fine
"$FP4DIAG" merge -q -o am.json a0.json a1.json >/dev/null || fail "audit merge"
"$FP4DIAG" merge -q -o sm.json s0.json s1.json || fail "sqnr merge"
"$FP4DIAG" merge -q -o gm.json g0.json g1.json || fail "gemm merge"
# a bad shard.assigned entry is named as the part holds it
for v in 99 4611686018427387904 2.5 '"2"'; do
    python3 -c 'import json, sys
d = json.load(open("s1.json")); d["shard"]["assigned"][0] = json.loads(sys.argv[1])
json.dump(d, open("bad.json", "w"))' "$v" || exit 1
    "$FP4DIAG" merge -q -o m.json s0.json bad.json 2>err; rc=$?
    [ "$rc" -eq 3 ] || { cat err; fail "assigned $v: exit $rc, want 3"; }
    grep -qF "bad.json: shard.assigned holds $v, outside the selection" err ||
        { cat err; fail "assigned $v: message"; }
done
exit 0
