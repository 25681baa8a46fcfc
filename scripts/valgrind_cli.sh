#!/bin/sh
# valgrind_cli.sh — run CLI cases (src/tests/cli/*.sh) with the program under valgrind
# memcheck: an invalid read/write, a use of uninitialised memory or a definite leak makes that
# run exit 99 and its case fail. HDF5's own noise (leaks inside libhdf5 on corrupt files) is
# suppressed by scripts/valgrind.supp, never by turning checks off.
#   usage: scripts/valgrind_cli.sh [PROGRAM]      (default ./fp4diag; run from anywhere)
#   VALGRIND_CASES="GLOB ..."  which cases (names without .sh; default below); '*' = all.
# The default covers every command and every hostile-input case, and leaves out the cases that
# are slow under valgrind for little extra coverage (gemm's CBLAS dgemm runs ~50x slower: over
# 10 minutes; plots and regress run python over reports; usage and option cases are covered by
# the fuzz_argv target under ASan instead; about 4 minutes in all). Prints one line per case and a count;
# exits non-zero when a case fails. Skips (exit 0, with a message) without valgrind.
set -u
cd "$(dirname "$0")/.." || exit 2
prog=${1:-$PWD/fp4diag}
case $prog in /*) ;; *) prog=$PWD/$prog ;; esac
if ! command -v valgrind >/dev/null 2>&1; then
    echo "check-valgrind: valgrind not found; skipped (scripts/install-deps.sh installs it)"
    exit 0
fi
tmp=$(mktemp -d) || exit 2
FP4DIAG_PROGRESS_EVERY=86400 # no progress lines off a terminal in slow runs (src/tests/run_all.sh)
export FP4DIAG_PROGRESS_EVERY
trap 'rm -rf "$tmp"' EXIT
# The wrapper stands in for the program: same arguments, same streams, same exit status unless
# memcheck finds something. Two OpenMP threads, one OpenBLAS thread: valgrind serializes them.
cat >"$tmp/fp4diag" <<WRAP
#!/bin/sh
OMP_NUM_THREADS=\${OMP_NUM_THREADS:-2} OPENBLAS_NUM_THREADS=1 exec valgrind -q --error-exitcode=99 --leak-check=full \\
    --errors-for-leak-kinds=definite --show-leak-kinds=definite --track-origins=no \\
    --suppressions="$PWD/scripts/valgrind.supp" --child-silent-after-fork=yes "$prog" "\$@"
WRAP
chmod +x "$tmp/fp4diag"
cases=${VALGRIND_CASES:-"hostile_* ls_* sqnr_errors compare_errors compare_man_example
    sqnr_golden sqnr_output bias_golden buckets_golden rht_golden grid_golden merge_small"}
pass=0 fail=0 skip=0 failed=""
for c in $(for g in $cases; do ls src/tests/cli/$g.sh 2>/dev/null; done | sort -u); do
    t0=$(date +%s)
    FP4DIAG="$tmp/fp4diag" FP4T_SLOW=1 sh "$c" >"$tmp/out" 2>&1
    rc=$?
    dt=$(($(date +%s) - t0))
    case $rc in
        0) pass=$((pass + 1)); echo "[ VG OK    ] $(basename "$c") (${dt}s)" ;;
        77) skip=$((skip + 1)); echo "[ VG SKIP  ] $(basename "$c"): $(tail -n 1 "$tmp/out")" ;;
        *) fail=$((fail + 1)); failed="$failed $(basename "$c")"
           echo "[ VG FAIL  ] $(basename "$c") (exit $rc):"; tail -n 40 "$tmp/out" | sed 's/^/    /' ;;
    esac
done
[ -n "$failed" ] && echo "failed under valgrind:$failed"
echo "valgrind: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
