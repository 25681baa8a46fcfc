#!/bin/sh
# valgrind_cli.sh — run the CLI cases (src/tests/cli/*.sh) with the program under valgrind
# memcheck: an invalid read/write, a use of uninitialised memory or a definite leak makes that
# run exit 99 and its case fail. HDF5's and OpenMP's own noise (leaks inside libhdf5 on corrupt
# files, thread-pool state) is suppressed by scripts/valgrind.supp, never by turning checks off.
#   usage: scripts/valgrind_cli.sh [PROGRAM]      (default ./fp4diag; run from anywhere)
# Prints run_all.sh's lines and closing count; exits non-zero when a case fails. Skips (exit 0,
# with a message) when valgrind is not installed.
set -u
cd "$(dirname "$0")/.." || exit 2
prog=${1:-$PWD/fp4diag}
case $prog in /*) ;; *) prog=$PWD/$prog ;; esac
if ! command -v valgrind >/dev/null 2>&1; then
    echo "check-valgrind: valgrind not found; skipped (scripts/install-deps.sh installs it)"
    exit 0
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# The wrapper stands in for the program: same arguments, same streams, same exit status unless
# memcheck finds something. OMP_NUM_THREADS=2 keeps runs fast (valgrind serializes threads).
cat >"$tmp/fp4diag" <<WRAP
#!/bin/sh
OMP_NUM_THREADS=\${OMP_NUM_THREADS:-2} OPENBLAS_NUM_THREADS=1 exec valgrind -q --error-exitcode=99 --leak-check=full \\
    --errors-for-leak-kinds=definite --show-leak-kinds=definite --track-origins=no \\
    --suppressions="$PWD/scripts/valgrind.supp" --child-silent-after-fork=yes "$prog" "\$@"
WRAP
chmod +x "$tmp/fp4diag"
FP4DIAG="$tmp/fp4diag" FP4T_SLOW=1 sh src/tests/run_all.sh
