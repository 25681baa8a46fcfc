#!/bin/sh
# plots_cli.sh — the plot scripts' command line: every --help description is whole sentences
# (ends with a full stop); without --out the image goes beside the report (REPORT.KIND.png) and
# the path is said on stderr; --out naming the input report is a usage error (exit 2) that
# leaves the report as it was, as is an --out in a missing directory; plot_rht.py draws an
# `sqnr --rht both` report and refuses one without RHT pairs (exit 3); tick labels never shrink
# under 6 pt; a report's skipped tensors are counted on the figure; `make install-scripts`
# installs the scripts and fp4diag-plot-* commands that run.
. src/tests/cli/lib/plots.sh

for s in scripts/plot_*.py; do
    python3 "$s" --help >"$T/help" 2>&1 || fail "$s --help exits non-zero"
    # the description: the paragraph after the usage lines, up to the first blank line
    awk 'NR>1 && /^$/ {n++; next} n==1 {print}' "$T/help" | tr '\n' ' ' | sed 's/ *$//' >"$T/desc"
    [ -s "$T/desc" ] || fail "$s --help has no description"
    case "$(cat "$T/desc")" in
        *.) ;;
        *) fail "$s --help description does not end with a full stop: $(tail -c 80 "$T/desc")" ;;
    esac
done

"$FP4DIAG" sqnr "$F" --rht both -q -o "$T/both.json" || fail "sqnr --rht both"
"$FP4DIAG" sqnr "$F" -q -o "$T/plain.json" || fail "sqnr"
cp "$T/both.json" "$T/both.orig"

# --out defaults to a name beside the report; the path written is said on stderr
(cd "$T" && python3 "$OLDPWD/scripts/plot_rht.py" both.json) 2>"$T/err" || { cat "$T/err"; fail "plot_rht.py on sqnr --rht both"; }
is_png "$T/both.rht.png" || fail "no both.rht.png beside the report"
grep -q "wrote both.rht.png" "$T/err" || fail "the default output is not named on stderr"
python3 scripts/plot_sqnr.py "$T/plain.json" "$T/both.json" 2>/dev/null || fail "plot_sqnr two reports"
is_png "$T/plain.sqnr.png" || fail "plot_sqnr: no plain.sqnr.png beside the first report"
python3 scripts/plot_depth.py <"$T/plain.json" --out "$T/d.png" 2>/dev/null || fail "plot_depth stdin"
is_png "$T/d.png" || fail "plot_depth: no d.png"

# never a write over an input
python3 scripts/plot_rht.py "$T/both.json" --out "$T/both.json" 2>"$T/err"
[ $? -eq 2 ] || fail "--out naming the input report should exit 2"
grep -q "is the input report" "$T/err" || fail "no clear message for --out = input: $(cat "$T/err")"
cmp -s "$T/both.json" "$T/both.orig" || fail "the input report was changed"
ln -s both.json "$T/link.png"
python3 scripts/plot_sqnr.py "$T/both.json" --out "$T/link.png" 2>/dev/null
[ $? -eq 2 ] || fail "--out through a symlink to the input should exit 2"
cmp -s "$T/both.json" "$T/both.orig" || fail "the input report was changed through a symlink"
python3 scripts/plot_gemm.py --out "$T/nodir/g.png" testdata/reports/sample_gemm.json 2>"$T/err"
[ $? -eq 2 ] || fail "--out in a missing directory should exit 2"
grep -q "does not exist" "$T/err" || fail "no clear message for a missing directory"
python3 scripts/plot_rht.py "$T/plain.json" --out "$T/r.png" 2>"$T/err"
[ $? -eq 3 ] || fail "plot_rht.py on a report without RHT pairs should exit 3"
grep -q -- "--rht both" "$T/err" || fail "plot_rht.py does not say how to get RHT pairs"
[ ! -e "$T/r.png" ] || fail "a plot was written from a report without RHT pairs"

# a report's `skipped` list is said on the figure (how many, why)
python3 - "$T/both.json" "$T/sk.json" <<'PY' || fail "making a report with skipped entries"
import json, sys
d = json.load(open(sys.argv[1]))
d["skipped"] = [{"name": "/b", "shape": [8], "dtype": "bf16", "reason": "rank 1"},
                {"name": "/c", "shape": [8], "dtype": "bf16", "reason": "rank 1"},
                {"name": "/step", "shape": [], "dtype": "i64", "reason": "rank 0 (scalar)"}]
json.dump(d, open(sys.argv[2], "w"))
PY
printf 'svg.fonttype: none\n' >"$T/matplotlibrc"
for s in sqnr rht depth; do
    MATPLOTLIBRC="$T/matplotlibrc" python3 scripts/plot_$s.py "$T/sk.json" --out "$T/sk_$s.svg" 2>/dev/null ||
        fail "plot_$s on a report with skipped entries"
    grep -q '3 tensors not analysed (rank 1: 2, ' "$T/sk_$s.svg" && grep -q 'scalar): 1)<' "$T/sk_$s.svg" ||
        fail "plot_$s does not say which tensors were not analysed"
done

# tick labels: never under 6 pt; past what fits, every k-th tensor labelled
PYTHONPATH=scripts python3 - <<'PY' || fail "tick_layout"
import fp4report as fr
for n in (1, 5, 30, 77, 200, 1000):
    w, font, rot, step = fr.tick_layout(n)
    assert w <= 16 and font >= 6, (n, w, font)
    assert (w - 1.4 - fr.LEGEND_IN) * 72 / n * step * 0.8 >= 6 - 1e-9, (n, w, font, step)
assert fr.tick_layout(77)[3] == 1 and fr.tick_layout(1000)[3] > 1
assert fr.describe('x.py — a thing\n  that draws.') == "A thing that draws."
PY

# make install-scripts: the scripts and fp4diag-plot-* commands, which run from there
make -s --no-print-directory install-scripts DESTDIR="$T/inst" PREFIX=/usr CUDA=0 >"$T/log" 2>&1 ||
    { cat "$T/log"; fail "make install-scripts"; }
for k in sqnr rht bias buckets gemm depth; do
    [ -x "$T/inst/usr/bin/fp4diag-plot-$k" ] || fail "no fp4diag-plot-$k installed"
done
[ -f "$T/inst/usr/share/fp4diag/scripts/fp4report.py" ] || fail "fp4report.py not installed"
"$T/inst/usr/bin/fp4diag-plot-rht" "$T/both.json" --out "$T/inst.png" 2>/dev/null ||
    fail "the installed fp4diag-plot-rht does not run"
is_png "$T/inst.png" || fail "the installed fp4diag-plot-rht wrote no PNG"
echo ok
