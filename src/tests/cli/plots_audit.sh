#!/bin/sh
# plots_audit.py — an audit report (fp4diag.audit/1) is drawn by plot_audit.py (export vs RTN
# SQNR per tensor, the LAYOUT tensor named in the legend), and every other plot refuses it with
# one line naming plot_audit.py (exit 3), not "not an fp4diag report"; plot_audit.py refuses an
# analysis report likewise.
. src/tests/cli/lib/plots.sh
plots_svg_text
"$FP4DIAG" audit testdata/quantized/source testdata/quantized/bad_nibble -o "$T/a.json" \
    2>/dev/null || fail "audit -o"
python3 scripts/plot_audit.py "$T/a.json" 2>"$T/err" || { cat "$T/err"; fail "plot_audit.py"; }
is_png "$T/a.audit.png" || fail "plot_audit.py: no a.audit.png beside the report"
python3 scripts/plot_audit.py "$T/a.json" --out "$T/a.svg" 2>/dev/null || fail "plot_audit.py svg"
grep -q "LAYOUT" "$T/a.svg" || fail "plot_audit.py: the LAYOUT tensor not marked"
grep -q "RTN of the source" "$T/a.svg" || fail "plot_audit.py: no RTN series"
for s in scripts/plot_*.py; do
    case $s in */plot_audit.py) continue ;; esac
    python3 "$s" "$T/a.json" --out "$T/x.png" 2>"$T/err"
    rc=$?
    [ $rc -eq 3 ] || { cat "$T/err"; fail "$s on an audit report exits $rc, not 3"; }
    grep -q "an audit report.*scripts/plot_audit.py" "$T/err" ||
        fail "$s on an audit report: no pointer to plot_audit.py: $(cat "$T/err")"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$s: more than one line: $(cat "$T/err")"
done
"$FP4DIAG" sqnr "$F" -q -o "$T/s.json" || fail "sqnr"
python3 scripts/plot_audit.py "$T/s.json" --out "$T/y.png" 2>"$T/err"
[ $? -eq 3 ] && grep -q "plot reads 'audit'" "$T/err" || fail "plot_audit.py on a sqnr report: $(cat "$T/err")"
exit 0
