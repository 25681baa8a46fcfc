#!/bin/sh
# verdict.sh — every analysis report carries a verdict: one entry per config (config order) with
# the pooled SQNR, alpha and B15 of summary.results; the winner is the highest pooled SQNR and
# its margin the gap to the runner-up, the best config with other values (int4 beside e1m2 is
# listed in same_values, not taken as a 0 dB runner-up); the ranking holds every tensor ordered
# by --rank-by (gap: largest best-minus-worst gap first; sqnr: lowest best SQNR first; delta:
# largest |delta| first; ties by the other keys, then tensor order), each tensor's
# best/worst/gap recomputed here from its results. The table ends with the verdict (top 10). gemm: pooled SQNR and eta per path, the worst path, layers ranked.
# compare accepts reports with a verdict. Reports validate against the schema.
set -u
F=testdata/gpt_ckpt_small.h5
G=testdata/gpt_gemm_small.h5
[ -f "$F" ] && [ -f "$G" ] || { echo "no test data"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for by in gap sqnr delta underflow sqnr-nonamax maxerr relerr; do
    "$FP4DIAG" rht "$F" --all-tensors --rank-by "$by" -q -o "$tmp/$by.json" || fail "rht --rank-by $by"
    python3 - "$tmp/$by.json" "$by" <<'PY' || fail "verdict --rank-by $by"
import json, math, sys
r = json.load(open(sys.argv[1])); by = sys.argv[2]
v = r["verdict"]
assert v["rank_by"] == by
res = r["summary"]["results"]
assert len(v["configs"]) == len(res)
for c, s in zip(v["configs"], res):
    assert c["format"] == s["format"] and c["scale"] == s["scale"] and c["rht"] == (s["rht"] is not False)
    assert c["sqnr_db"] == s["sqnr_db"] and c["alpha"] == s["alpha"] and c["bucket_ratio_15"] == s["bucket_ratio_15"]
    assert c["tensors"] == len(r["tensors"])
fin = [c for c in v["configs"] if c["sqnr_db"] is not None]
best = max(fin, key=lambda c: c["sqnr_db"])
w = v["winner"]
assert w["sqnr_db"] == best["sqnr_db"]
# the runner-up: the best config with other values (int4 and e1m2 are one grid: same_values)
key = lambda c: (c["format"], c["scale"], c["rht"])
same = {key(c) for c in w["same_values"]}
grid = {"e1m2": "e1m2", "int4": "e1m2"}
assert same == {key(c) for c in fin if key(c) != key(w) and grid.get(c["format"], c["format"]) ==
                grid.get(w["format"]) and c["rht"] == w["rht"]}, same
others = [c for c in fin if key(c) != key(w) and key(c) not in same]
ru = max(others, key=lambda c: c["sqnr_db"])
assert key(w["runner_up"]) == key(ru) and w["runner_up"]["sqnr_db"] == ru["sqnr_db"]
assert abs(w["margin_db"] - (w["sqnr_db"] - ru["sqnr_db"])) < 1e-12
rows = []
for i, t in enumerate(r["tensors"]):
    ok = [x for x in t["results"] if x["sqnr_db"] is not None]
    b = max(ok, key=lambda x: x["sqnr_db"]); lo = min(ok, key=lambda x: x["sqnr_db"])
    rows.append((i, t["name"], b["sqnr_db"], b["sqnr_db"] - lo["sqnr_db"], b["delta"],
                 b["underflows_pct"], b["sqnr_nonamax_db"], b["max_abs_err"] / b["tensor_amax"],
                 b["rel_err_percentiles"]["p99"]))
# ties of the key: the other keys (gap, sqnr, delta), then tensor order; the statistics keys
# (SPEC 5.1) are the best config's
k3 = {"gap": lambda x: -x[3], "sqnr": lambda x: x[2], "delta": lambda x: -abs(x[4]),
      "underflow": lambda x: -x[5], "sqnr-nonamax": lambda x: x[6], "maxerr": lambda x: -x[7],
      "relerr": lambda x: -x[8]}
key = lambda x: (k3[by](x), k3["gap"](x), k3["sqnr"](x), k3["delta"](x), x[0])
want = [x[1] for x in sorted(rows, key=key)]
got = [x["tensor"] for x in v["ranking"]]
assert got == want, (got[:5], want[:5])
for x, row in zip(v["ranking"], sorted(rows, key=key)):
    assert abs(x["gap_db"] - row[3]) < 1e-12 and x["best"]["sqnr_db"] == row[2] and x["delta"] == row[4]
    assert x["rel_err_p99"] == row[8]
PY
done
python3 -c 'import jsonschema' 2>/dev/null &&
    { python3 scripts/check_golden.py --schema schema/report.schema.json "$tmp/gap.json" "$tmp/gap.json" ||
      fail "schema"; }
"$FP4DIAG" compare "$tmp/gap.json" "$tmp/sqnr.json" >/dev/null || fail "compare with a verdict"
# the statistics keys are the analysis commands' only
"$FP4DIAG" gemm "$G" --rank-by underflow -q -o "$tmp/g.json" 2>"$tmp/gerr"
[ $? -eq 2 ] && grep -q "does not apply to gemm" "$tmp/gerr" || fail "gemm --rank-by underflow not refused"
"$FP4DIAG" sqnr "$F" --rank-by nope -q -o "$tmp/n.json" 2>"$tmp/nerr"
[ $? -eq 2 ] && grep -q "not gap, sqnr, delta, underflow, sqnr-nonamax, maxerr or relerr" "$tmp/nerr" || fail "--rank-by nope"
# the table ends with the verdict, top 10 of the 23 tensors
"$FP4DIAG" sqnr "$F" --all-tensors -v -o "$tmp/t.json" 2>"$tmp/table" || fail "table run"
grep -q "^verdict (pooled over 23 tensors)" "$tmp/table" || { cat "$tmp/table"; fail "no verdict in the table"; }
grep -q "winner: " "$tmp/table" || fail "no winner line"
# e1m2 wins on this checkpoint; int4 is its grid under another name: named, not a 0 dB margin
grep -q "^  winner: e1m2 (fp32 scales), +[0-9.]* dB over e2m1 (fp32 scales); int4 gives the same values (same grid)$" \
    "$tmp/table" || { grep winner "$tmp/table"; fail "winner line: margin not over another grid"; }
grep -q "+0.000 dB" "$tmp/table" && fail "a 0 dB margin in the table"
grep -q "(10 of 23; all in the JSON)" "$tmp/table" || fail "not the top 10"
# several scale modes in one run (--format nvfp4,mxfp4,e1m2): every label names its scale, in
# the rows and the verdict; the JSON picks carry it
"$FP4DIAG" sqnr "$F" --format nvfp4,mxfp4,e1m2 -v -o "$tmp/m.json" 2>"$tmp/mtable" || fail "mixed scales"
grep -q "^/blocks/0/fc1/weight  *e2m1/nvfp4 " "$tmp/mtable" && grep -q "^/blocks/0/fc1/weight  *e2m1/mxfp4 " "$tmp/mtable" &&
    grep -q "^  /blocks/.* best e1m2/fp32 .* worst e2m1/mxfp4 " "$tmp/mtable" ||
    { cat "$tmp/mtable"; fail "mixed scales: labels do not name the scale"; }
python3 - "$tmp/m.json" <<'PY' || fail "mixed scales: the ranking's picks have no scale"
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert {(x["worst"]["format"], x["worst"]["scale"]) for x in v["ranking"]} == {("e2m1", "mxfp4")}, v["ranking"][0]
PY
"$FP4DIAG" sqnr "$F" --rank-by size -q 2>"$tmp/err"
[ $? -eq 2 ] || fail "--rank-by size: not a usage error"
# gemm
"$FP4DIAG" gemm "$G" --rank-by sqnr -q -o "$tmp/g.json" || fail "gemm"
python3 - "$tmp/g.json" <<'PY' || fail "gemm verdict"
import json, sys
r = json.load(open(sys.argv[1])); v = r["verdict"]
assert v["rank_by"] == "sqnr" and v["recipe"] == r["config"]["recipe"]
sp = {p["path"]: p for p in r["summary"]["paths"]}
for p in v["paths"]:
    assert p["sqnr_db"] == sp[p["path"]]["sqnr_db"] and p["eta"] == sp[p["path"]]["eta"]
assert v["worst_path"] == min(v["paths"], key=lambda p: p["sqnr_db"])["path"]
worst = {}
for L in r["layers"]:
    ps = [p for p in L["paths"] if p["sqnr_db"] is not None]
    worst[L["name"]] = min(p["sqnr_db"] for p in ps)
assert [x["layer"] for x in v["ranking"]] == sorted(worst, key=lambda n: worst[n])
assert all(x["sqnr_db"] == worst[x["layer"]] for x in v["ranking"])
PY
python3 -c 'import jsonschema' 2>/dev/null &&
    { python3 scripts/check_golden.py --schema schema/report.schema.json "$tmp/g.json" "$tmp/g.json" ||
      fail "gemm schema"; }
"$FP4DIAG" compare "$tmp/g.json" "$tmp/g.json" >/dev/null || fail "compare gemm with a verdict"
exit 0
