#!/bin/sh
# make_merge_seeds.sh — regenerate the seeds of fuzz_merge (src/tests/fuzz/seeds/merge/) from
# this build's reports, so the fuzzer starts from parts the current `merge` accepts. Each seed is
# one small run split in two (--shard 0/2 and 1/2) whose two partial reports are joined by a
# form-feed line ("\n\f\n", where fuzz_merge.c splits its input): sqnr and rht --rounding sr of
# two tensors of gpt_ckpt_small.h5, gemm of gpt_gemm_small.h5, audit of the ModelOpt NVFP4
# fixture and of bad_nibble (a tensor only another nibble order fits: LAYOUT) against their
# source. Each pair is checked: `fp4diag merge` must accept it (exit 0), else nothing is
# written. Rerun after a change to what reports hold or how they render
# (src/tests/cli/fuzz_merge_seeds.sh fails until then) and commit the seeds.
# FP4DIAG: the binary (default ./fp4diag). Run from anywhere: paths are the repository's.
set -eu
cd "$(dirname "$0")/.."
F=${FP4DIAG:-./fp4diag}
S=src/tests/fuzz/seeds/merge
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# seed NAME ARGS...: `fp4diag ARGS --shard I/2` for I = 0, 1, merged as a check, joined into $tmp/NAME
seed() {
    name=$1
    shift
    for i in 0 1; do
        "$F" "$@" --shard "$i/2" -q -o "$tmp/$name.$i.json"
    done
    "$F" merge "$tmp/$name.0.json" "$tmp/$name.1.json" -q -o "$tmp/$name.merged.json" ||
        { echo "make_merge_seeds: merge refuses the parts of $name" >&2; exit 1; }
    { cat "$tmp/$name.0.json"; printf '\n\f\n'; cat "$tmp/$name.1.json"; } >"$tmp/$name"
}
C=testdata/gpt_ckpt_small.h5
Q=testdata/quantized
seed sqnr2 sqnr "$C" /blocks/0/proj/weight /blocks/0/ln1/weight --format e2m1
seed rht_sr2 rht "$C" /blocks/0/proj/weight /blocks/0/ln1/weight --format e2m1 --rounding sr --seed 3
seed gemm2 gemm testdata/gpt_gemm_small.h5
seed audit2 audit "$Q/source" "$Q/modelopt_nvfp4"
seed audit_nibble2 audit "$Q/source" "$Q/bad_nibble"
for name in sqnr2 rht_sr2 gemm2 audit2 audit_nibble2; do
    cp "$tmp/$name" "$S/$name"
done
echo "merge seeds written:"
ls -l "$S"
