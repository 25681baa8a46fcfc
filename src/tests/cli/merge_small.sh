#!/bin/sh
# merge_small.sh — the shard/merge path on two small tensors (kept small for valgrind, which runs
# it): `sqnr --shard 0/2` and `1/2`, then `merge`, equal the one-process report outside timing;
# a part cut short, a device, and -o naming a part are refused without output.
set -u
C=$PWD/testdata/gpt_ckpt_small.h5
[ -f "$C" ] || { echo "no testdata"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1
mkdir one two
sel="/blocks/0/proj/weight /blocks/0/ln1/weight"
# shellcheck disable=SC2086
(cd one && "$FP4DIAG" sqnr "$C" $sel --format e2m1 -q -o r.json) || fail "one process"
for i in 0 1; do
    # shellcheck disable=SC2086
    "$FP4DIAG" sqnr "$C" $sel --format e2m1 -q --shard $i/2 -o p$i.json || fail "share $i"
done
(cd two && "$FP4DIAG" merge ../p0.json ../p1.json -o r.json) || fail "merge"
grep -v '"seconds"\|"time"' one/r.json >a; grep -v '"seconds"\|"time"' two/r.json >b
cmp -s a b || { diff a b | head; fail "merged report differs"; }
# a UTF-8 byte order mark before a part (a Windows editor's save) is accepted and ignored, as
# RFC 8259 lets a parser do (SPEC §9): the same merged report
printf '\357\273\277' >bom.json && cat p1.json >>bom.json
mkdir three && (cd three && "$FP4DIAG" merge ../p0.json ../bom.json -o r.json) ||
    fail "merge of a part with a BOM"
grep -v '"seconds"\|"time"' three/r.json >c
cmp -s b c || { diff b c | head; fail "a part with a BOM: merged report differs"; }
head -c 200 p1.json >cut.json
"$FP4DIAG" merge p0.json cut.json -o bad.json 2>err; rc=$?
[ "$rc" -eq 3 ] || fail "cut part: exit $rc"
grep -q "cut.json: not JSON" err || { cat err; fail "cut part: message"; }
[ -e bad.json ] && fail "cut part: wrote a report"
# never a write over an input: -o naming a part is refused before anything is read
cp p0.json keep.json
"$FP4DIAG" merge p0.json p1.json -o p0.json 2>err; rc=$?
[ "$rc" -eq 2 ] || { cat err; fail "-o onto a part: exit $rc, want 2"; }
cmp -s p0.json keep.json || fail "-o onto a part: the part changed"
# a device is not a report: refused at once, not read
"$FP4DIAG" merge p0.json /dev/zero -o bad.json 2>err; rc=$?
[ "$rc" -eq 3 ] || { cat err; fail "/dev/zero part: exit $rc"; }
exit 0
