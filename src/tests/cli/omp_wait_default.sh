#!/bin/sh
# omp_wait_default.sh — fp4diag's OpenMP wait default (cmd/reexec.h fp4_omp_wait_default): on an
# input of 128 MiB or more with more than one thread, and neither OMP_WAIT_POLICY nor
# GOMP_SPINCOUNT set, the program runs itself again with OMP_WAIT_POLICY=passive (the trace shows
# it, and 'main' twice); the user's variable, --threads 1, --device cuda or a small input: no
# second start. The report is the same either way.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
in=testdata/gpt_ckpt_small.h5
[ -f "$in" ] || { echo "no $in"; exit 77; }
cp "$in" "$tmp/big.h5" && chmod u+w "$tmp/big.h5"
# 200 MiB by its size (a sparse tail after the HDF5 file's end: read as the file it was)
truncate -s 200M "$tmp/big.h5" || { echo "no truncate"; exit 77; }
args="--format e2m1 --scale nvfp4 --device cpu -q"
run() { # name env... -- file extra-args
    name=$1; shift
    env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT FP4DIAG_TRACE=1 "$@" >/dev/null 2>"$tmp/$name.err" ||
        { echo "$name: exit $?"; cat "$tmp/$name.err"; exit 1; }
}
reexecs() { grep -c 're-exec with OMP_WAIT_POLICY=passive' "$tmp/$1.err"; }
mains() { grep -c '\] main: sqnr' "$tmp/$1.err"; }
run big "$FP4DIAG" sqnr "$tmp/big.h5" $args --threads 2 -o "$tmp/big.json"
[ "$(reexecs big)" -eq 1 ] && [ "$(mains big)" -eq 2 ] ||
    { echo "no second start on a 200 MiB input:"; cat "$tmp/big.err"; exit 1; }
run user OMP_WAIT_POLICY=active "$FP4DIAG" sqnr "$tmp/big.h5" $args --threads 2 -o "$tmp/user.json"
run spin GOMP_SPINCOUNT=5 "$FP4DIAG" sqnr "$tmp/big.h5" $args --threads 2 -o "$tmp/spin.json"
run one "$FP4DIAG" sqnr "$tmp/big.h5" $args --threads 1 -o "$tmp/one.json"
run small "$FP4DIAG" sqnr "$in" $args --threads 2 -o "$tmp/small.json"
for n in user spin one small; do
    [ "$(reexecs $n)" -eq 0 ] && [ "$(mains $n)" -eq 1 ] ||
        { echo "$n: a second start:"; cat "$tmp/$n.err"; exit 1; }
done
python3 - "$tmp" <<'PY' || exit 1
import json, sys
def norm(p):
    d = json.load(open(p))
    d["timing"].pop("seconds", None)
    d.pop("provenance", None)
    for k in ("argv", "input"):
        d.pop(k, None)
    d["config"].pop("threads", None)
    return d
t = sys.argv[1]
ref = norm(t + "/small.json")
for n in ("big", "user", "spin", "one"):
    if norm(f"{t}/{n}.json") != ref:
        sys.exit(f"{n}: report differs")
PY
exit 0
