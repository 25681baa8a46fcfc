#!/bin/sh
# run_all.sh — run every cmocka suite given as arguments, then the CLI cases in
# src/tests/cli/*.sh (each a shell script that exits 0 on pass, 77 on skip), and print one
# closing line "N passed, N failed, N skipped" counting suites' tests and CLI cases.
# Env: FP4DIAG (the binary), BUILD. COLUMNS is unset: no case depends on the terminal it runs
# in (a case that wants a width sets it). FP4DIAG_PROGRESS_EVERY is a day: a case that compares
# stderr must not see the progress lines a run off a terminal shows once it lasts 5 s, which a
# sanitizer or valgrind build can (a case that tests them sets it).
set -u
cd "$(dirname "$0")/../.." || exit 2
unset COLUMNS
FP4DIAG_PROGRESS_EVERY=86400
export FP4DIAG_PROGRESS_EVERY
pass=0 fail=0 skip=0
failed=""
for t in "$@"; do
    out=$(mktemp)
    "$t" >"$out" 2>&1
    rc=$?
    cat "$out"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
    if [ "$rc" -ne 0 ] && [ -z "$f" ]; then fail=$((fail + 1)); fi
    [ "$rc" -ne 0 ] && failed="$failed $(basename "$t")"
    rm -f "$out"
done
if [ -d src/tests/cli ]; then
    for c in src/tests/cli/*.sh; do
        [ -e "$c" ] || continue
        out=$(mktemp)
        FP4DIAG="${FP4DIAG:-$PWD/fp4diag}" sh "$c" >"$out" 2>&1
        rc=$?
        case $rc in
            0) pass=$((pass + 1)); echo "[ CLI OK   ] $(basename "$c")" ;;
            77) skip=$((skip + 1)); echo "[ CLI SKIP ] $(basename "$c"): $(tail -n 1 "$out")" ;;
            *) fail=$((fail + 1)); failed="$failed $(basename "$c")"
               echo "[ CLI FAIL ] $(basename "$c") (exit $rc):"; sed 's/^/    /' "$out" | tail -n 30 ;;
        esac
        rm -f "$out"
    done
fi
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
