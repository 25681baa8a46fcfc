#!/bin/sh
# plots_render.sh — every scripts/plot_*.py renders a non-empty PNG from the golden reports in
# testdata/golden/ (or the sample fixtures in testdata/reports/ when a golden is missing), one
# through stdin; a report of the wrong command exits 3. Skips (77) without matplotlib.
set -u
if ! python3 -c 'import matplotlib, numpy' 2>/dev/null; then
    echo "skip: python3 with matplotlib and numpy is not installed (scripts/install-deps.sh)"
    exit 77
fi
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
golden_of() { # golden_of COMMAND SAMPLE: the first golden of that command, else the sample
    for g in testdata/golden/*.json; do
        [ -s "$g" ] && grep -q "\"command\": *\"$1\"" "$g" && { echo "$g"; return; }
    done
    echo "testdata/reports/$2"
}
SQNR=testdata/golden/sqnr_ckpt_small.json
[ -s "$SQNR" ] || SQNR=testdata/reports/sample_sqnr.json
RHT=testdata/golden/rht_gemm_small.json
[ -s "$RHT" ] || RHT=testdata/reports/sample_rht.json
GEMM=$(golden_of gemm sample_gemm.json)
echo "reports: $SQNR $RHT $GEMM"
is_png() { # non-empty and starts with the PNG signature
    [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]
}
run() { # run NAME ARGS...: render and check
    out=$1; shift
    python3 "$@" --out "$T/$out" >"$T/log" 2>&1 || { cat "$T/log"; fail "$*"; }
    is_png "$T/$out" || fail "$out is not a non-empty PNG"
}
run sqnr.png scripts/plot_sqnr.py "$SQNR"
run sqnr_rht.png scripts/plot_sqnr.py "$SQNR" "$RHT"
run rht.png scripts/plot_rht.py "$RHT"
run bias.png scripts/plot_bias.py "$SQNR"
run bias_rht.png scripts/plot_bias.py --rht on "$RHT"
run buckets.png scripts/plot_buckets.py "$RHT"
run depth.png scripts/plot_depth.py "$RHT"
run gemm.png scripts/plot_gemm.py "$GEMM"
python3 scripts/plot_rht.py --out "$T/stdin.png" <"$RHT" || fail "plot_rht.py from stdin"
is_png "$T/stdin.png" || fail "stdin.png is not a non-empty PNG"
python3 scripts/plot_sqnr.py "$RHT" --out "$T/x.svg" || fail "svg output"
grep -q '<svg' "$T/x.svg" || fail "x.svg is not SVG"
python3 scripts/plot_gemm.py "$SQNR" --out "$T/wrong.png" 2>"$T/err"
[ $? -eq 3 ] || fail "plot_gemm.py on an sqnr report should exit 3"
grep -q "this plot reads 'gemm'" "$T/err" || fail "no clear message for the wrong report kind"
echo 'not json' | python3 scripts/plot_rht.py --out "$T/bad.png" 2>/dev/null
[ $? -eq 3 ] || fail "garbage on stdin should exit 3"
[ ! -e "$T/bad.png" ] || fail "a plot was written from garbage"
echo "ok"
