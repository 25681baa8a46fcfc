# plots.sh — sourced by the plot CLI cases (src/tests/cli/plots_*.sh): skip without matplotlib
# and numpy (exit 77), the GEMM test file F (skip when missing), a temp dir T removed on exit,
# fail MESSAGE (exit 1), is_png FILE, and plots_svg_text (SVG text stays text, to be grepped).
set -u
if ! python3 -c 'import matplotlib, numpy' 2>/dev/null; then
    echo "skip: python3 with matplotlib and numpy is not installed (scripts/install-deps.sh)"
    exit 77
fi
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "skip: no $F"; exit 77; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
is_png() { [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }
plots_svg_text() {
    printf 'svg.fonttype: none\n' >"$T/matplotlibrc"
    export MATPLOTLIBRC="$T/matplotlibrc"
}
