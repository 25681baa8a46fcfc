#!/bin/sh
# rank_by_help.sh — every --rank-by the parser accepts is in each command's --help and in the
# man page, and what a command's help offers it accepts. The list is the parser's own: its
# refusal of an unknown name enumerates the names its loop accepts (options.c), so a ranking
# added to the parser and left out of a help or the man page fails here.
set -u
fail() { echo "FAIL: $*"; exit 1; }
err=$("$FP4DIAG" sqnr --rank-by '?' /nonexistent.h5 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] || fail "--rank-by '?': exit $rc, not 2"
list=$(printf '%s\n' "$err" | sed -n "s/.*--rank-by: '?' is not //p" | sed 's/,//g; s/ or / /')
[ -n "$list" ] || fail "no list in the refusal: $err"
n=$(echo $list | wc -w)
[ "$n" -ge 7 ] || fail "the parser lists $n names: $list"
man=man/fp4diag.1
# the man page writes a name as roff: sqnr-nonamax as sqnr\-nonamax
manopt=$(sed -n '/^\.BI \\-\\-rank\\-by/,/^\.TP/p' "$man")
[ -n "$manopt" ] || fail "no --rank-by item in $man"
for name in $list; do
    roff=$(printf '%s' "$name" | sed 's/-/\\\\-/g')
    printf '%s\n' "$manopt" | grep -q "^\.B $roff\$" || fail "man page: --rank-by $name not listed"
    for cmd in sqnr bias buckets rht; do
        "$FP4DIAG" $cmd --help | sed -n '/--rank-by/,/^  -/p' | grep -q -e "[ (]$name[ ,)]" \
            -e "[ (]$name\$" || fail "$cmd --help: --rank-by $name not listed"
        # accepted: the input is then what fails (3), not the option (2)
        "$FP4DIAG" $cmd --rank-by "$name" /nonexistent.h5 >/dev/null 2>&1
        rc=$?
        [ "$rc" -eq 3 ] || fail "$cmd --rank-by $name: exit $rc, not 3 (missing file)"
    done
    # gemm: its help lists exactly the names gemm accepts
    "$FP4DIAG" gemm --rank-by "$name" /nonexistent.h5 >/dev/null 2>&1
    rc=$?
    inhelp=0
    "$FP4DIAG" gemm --help | sed -n '/--rank-by/,/^  -/p' | grep -q -e "[ (]$name[ ,)]" -e "[ (]$name\$" &&
        inhelp=1
    case "$rc$inhelp" in
    31 | 20) ;;
    *) fail "gemm --rank-by $name: exit $rc, in gemm --help: $inhelp" ;;
    esac
done
exit 0
