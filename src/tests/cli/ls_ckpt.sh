#!/bin/sh
# ls_ckpt.sh — `ls` on the stored checkpoint subset lists its 23 datasets, all bf16 with gzip;
# selection by glob, group, and glob over groups.
set -u
F=testdata/gpt_ckpt_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
out=$("$FP4DIAG" ls "$F") || { echo "ls exited $?"; exit 1; }
echo "$out" | head -n 1 | grep -q '^name  *shape  *dtype  *chunks  *filters  *size' || { echo "bad header"; exit 1; }
n=$(echo "$out" | tail -n +2 | wc -l)
[ "$n" -eq 23 ] || { echo "expected 23 datasets, got $n"; exit 1; }
echo "$out" | grep -Eq '^/blocks/0/fc1/weight +1024x256 +bf16 +256x256 +deflate\(4\) ' \
    || { echo "fc1 weight row wrong"; echo "$out"; exit 1; }
nb=$(echo "$out" | tail -n +2 | awk '$3 == "bf16"' | wc -l)
[ "$nb" -eq 23 ] || { echo "expected 23 bf16 rows, got $nb"; exit 1; }
# selection: a glob and a group
sel=$("$FP4DIAG" ls "$F" '/blocks/*/proj/weight' /lnf | tail -n +2 | awk '{print $1}' | tr '\n' ' ')
[ "$sel" = "/blocks/0/proj/weight /blocks/5/proj/weight /lnf/bias /lnf/weight " ] \
    || { echo "selection gave: $sel"; exit 1; }
# a glob that matches groups selects everything below them, as each group would
g=$("$FP4DIAG" ls "$F" '/blocks/*/fc2' | tail -n +2 | awk '{print $1}' | tr '\n' ' ')
[ "$g" = "/blocks/0/fc2/bias /blocks/0/fc2/weight /blocks/5/fc2/bias " ] \
    || { echo "group glob gave: $g"; exit 1; }
[ "$("$FP4DIAG" ls "$F" '/blocks/?' | tail -n +2 | wc -l)" -eq 21 ] || { echo "'/blocks/?' count"; exit 1; }
exit 0
