#!/bin/sh
# empty_runs.sh — no analysis ends 0 having analysed nothing: a selection whose tensors are all
# left out by the default selection (rank 1), all excluded, or a file of biases only exits 3
# with one line saying why, and writes no report; every selection pattern matching nothing is
# still the error naming it. A selection pattern that matches nothing beside one that selects,
# and an --exclude pattern that matches no selected tensor, are warnings naming them; the run
# goes on and exits 0. For every analysis command.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
C=testdata/gpt_ckpt_small.h5
fail=0
python3 -c 'import numpy as np, sys; np.savez(sys.argv[1], b=np.ones(8, "f4"), g=np.ones(4, "f4"))' "$tmp/biases.npz" || exit 1
nothing() { # WANT ARGS...: exit 3, one stderr line holding WANT, no report
    want=$1; shift
    rm -f "$tmp/r.json"
    "$FP4DIAG" "$@" -q -o "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 3 ] || [ -e "$tmp/r.json" ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err"; then
        echo "$*: exit $rc, wanted 3 and one line '$want'; report: $(ls "$tmp/r.json" 2>/dev/null)"; cat "$tmp/err"; fail=1
    fi
}
warns() { # WANT ARGS...: exit 0, a report, a stderr warning holding WANT
    want=$1; shift
    rm -f "$tmp/r.json"
    "$FP4DIAG" "$@" -q -o "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 0 ] || [ ! -s "$tmp/r.json" ] || ! grep -q "warning: .*$want" "$tmp/err"; then
        echo "$*: exit $rc, wanted 0, a report and a warning '$want'"; cat "$tmp/err"; fail=1
    fi
}
for cmd in sqnr bias buckets rht; do
    nothing "$C: no tensor to analyse: the 2 selected are not what 4-bit recipes quantize (/lnf/bias: rank 1, ...); name a tensor exactly or add --all-tensors" $cmd $C /lnf
    nothing "no tensor to analyse: --exclude left out all 23 selected" $cmd $C --exclude /blocks --exclude /lnf
    nothing "$tmp/biases.npz: no tensor to analyse: the 2 selected are not what 4-bit recipes quantize" $cmd "$tmp/biases.npz"
    nothing "$C: /nope*: no such dataset or group" $cmd $C '/nope*'
    warns "$C: /nope: no such dataset or group (selects nothing; the other selections run)" $cmd $C /blocks/0/fc1 /nope
    warns "$C: --exclude \*embed\* matches no selected tensor" $cmd $C /blocks/0/fc1 --exclude '*embed*'
done
# named exactly or with --all-tensors, the same tensors run
"$FP4DIAG" sqnr $C /lnf --all-tensors -q -o "$tmp/r.json" || { echo "--all-tensors: exit $?"; fail=1; }
# an --exclude that matches is silent
"$FP4DIAG" sqnr $C /blocks/0 --exclude '/blocks/0/fc1' -q -o "$tmp/r.json" 2>"$tmp/err" || fail=1
grep -q warning "$tmp/err" && { echo "a matching --exclude warned"; cat "$tmp/err"; fail=1; }
# a share of a split run with no tensor of its own is not an empty run (merge decides)
"$FP4DIAG" sqnr $C /blocks/0/fc1/weight --shard 1/2 -q -o "$tmp/r.json" || { echo "an empty share: exit $?"; fail=1; }
exit $fail
