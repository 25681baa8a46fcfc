#!/bin/sh
# plots_verdict.sh — scripts/plot_verdict.py draws a report's `verdict` section: a hand-made
# verdict (the documented shape: rank_by, configs, winner, ranking) over a real report renders
# as PNG and SVG whose text names the winner, its margin and the ranking's order and count; a
# gemm verdict (fp4diag's own, or a hand-made one of its shape) names its worst path and ranks
# the layers; a report without a verdict, or a verdict without its per-config/per-path list,
# exits 3 with a line saying why; when this fp4diag writes verdicts itself, its own report
# renders too.
. src/tests/cli/lib/plots.sh
plots_svg_text # SVG text stays text, so it can be grepped

"$FP4DIAG" sqnr "$F" --rht both -q -o "$T/r.json" || fail "sqnr --rht both"
python3 - "$T/r.json" "$T/v.json" <<'PY' || fail "making the hand-made verdict"
import json, sys
d = json.load(open(sys.argv[1]))
d.pop("verdict", None)
configs = [{"format": s["format"], "scale": s["scale"], "rht": bool(s.get("rht")),
            "rounding": s["rounding"], "block": s["block"], "sqnr_db": s["sqnr_db"],
            "alpha": s["alpha"], "bucket_ratio_15": s["bucket_ratio_15"],
            "tensors": len(d["tensors"])} for s in d["summary"]["results"]]
configs[2]["sqnr_db"] = 30.0  # e1m2 without RHT wins by 3.5 dB in this made-up verdict
ranking = [{"tensor": t["name"], "best": {"format": "e1m2", "rht": True, "sqnr_db": 20 + i},
            "worst": {"format": "e2m1", "rht": False, "sqnr_db": 18.0},
            "gap_db": 2.0 + i, "delta": 0.001 * i} for i, t in enumerate(d["tensors"])][::-1]
d["verdict"] = {"rank_by": "gap", "configs": configs,
                "winner": {"format": "e1m2", "scale": "fp32", "rht": False, "sqnr_db": 30.0,
                           "margin_db": 3.5},
                "ranking": ranking}
json.dump(d, open(sys.argv[2], "w"))
PY
python3 scripts/plot_verdict.py "$T/v.json" 2>"$T/err" || { cat "$T/err"; fail "plot_verdict.py"; }
is_png "$T/v.verdict.png" || fail "no v.verdict.png beside the report"
python3 scripts/plot_verdict.py "$T/v.json" --top 4 --out "$T/v.svg" 2>/dev/null || fail "plot_verdict.py --top 4 svg"
grep -q 'winner: e1m2 fp32/16, by 3.50 dB' "$T/v.svg" || fail "the winner and its margin are not in the figure"
grep -q 'ranked by gap (top 4 of 6)' "$T/v.svg" || fail "the ranking's order and count are not in the figure"
grep -q '>/qkv/x<' "$T/v.svg" && grep -q '>/proj/x<' "$T/v.svg" && ! grep -q '>/proj/dy<' "$T/v.svg" || fail "--top 4 does not draw the first 4 of the ranking"

"$FP4DIAG" gemm "$F" /proj -q -o "$T/g.json" || fail "gemm"
python3 - "$T/r.json" "$T/nov.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d.pop("verdict", None); json.dump(d, open(sys.argv[2], "w"))
PY
python3 scripts/plot_verdict.py "$T/nov.json" --out "$T/nov.png" 2>"$T/err"
[ $? -eq 3 ] || fail "a report without a verdict should exit 3"
grep -q "no \`verdict\` section" "$T/err" || fail "no clear message for a missing verdict: $(cat "$T/err")"
[ ! -e "$T/nov.png" ] || fail "a plot was written without a verdict"
if ! grep -q '"verdict"' "$T/g.json"; then # an fp4diag without gemm verdicts: a hand-made one
    python3 - "$T/g.json" <<'PY' || fail "making a hand-made gemm verdict"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["layers"][0]["paths"]
d["verdict"] = {"rank_by": "gap", "recipe": "ufp4",
                "paths": [{"path": q["path"], "sqnr_db": q["sqnr_db"], "eta": q["eta"], "layers": 1} for q in p],
                "worst_path": "wgrad",
                "ranking": [{"layer": "/proj", "worst_path": "wgrad", "sqnr_db": p[2]["sqnr_db"], "eta": p[2]["eta"],
                             "best_path": "fprop", "best_sqnr_db": p[0]["sqnr_db"],
                             "gap_db": p[0]["sqnr_db"] - p[2]["sqnr_db"]}]}
json.dump(d, open(sys.argv[1], "w"))
PY
fi
python3 scripts/plot_verdict.py "$T/g.json" --out "$T/g.svg" 2>"$T/err" || { cat "$T/err"; fail "plot_verdict.py on a gemm verdict"; }
grep -q 'worst path: WGRAD' "$T/g.svg" && grep -q 'Layers ranked by gap' "$T/g.svg" ||
    fail "the gemm verdict's worst path and ranking are not in the figure"
python3 - "$T/g.json" "$T/gbad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["verdict"].pop("paths"); json.dump(d, open(sys.argv[2], "w"))
PY
python3 scripts/plot_verdict.py "$T/gbad.json" --out "$T/gbad.png" 2>"$T/err"
[ $? -eq 3 ] || fail "a gemm verdict without paths should exit 3"
grep -q "without \`paths\`" "$T/err" || fail "no clear message for a gemm verdict without paths: $(cat "$T/err")"
if grep -q '"verdict"' "$T/r.json"; then # this fp4diag writes verdicts: draw its own
    python3 scripts/plot_verdict.py "$T/r.json" --out "$T/own.png" 2>"$T/err" || { cat "$T/err"; fail "plot_verdict.py on fp4diag's own verdict"; }
    is_png "$T/own.png" || fail "own.png is not a PNG"
else
    echo "note: this fp4diag writes no verdict; the hand-made one was drawn"
fi
echo ok
