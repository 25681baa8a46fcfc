#!/bin/sh
# term_compare.sh — compare's table fits the width (SPEC §9 "Terminal output"): two reports of
# a Hugging Face checkpoint (nvfp4 against mxfp4 scales, --ignore-key scale,block, and a NEW
# lacking tensors: "missing" rows). COLUMNS=40, 80 and 120 give no line longer than COLUMNS
# (characters), the exit message wrapped too; 80 and 120 the compact table (the result parts
# the same on every row said once above it, names elided keeping the layer number, the values
# of the JSON to 3 places); 40 one record per result (the name on its line, FIELD=VALUE under
# it); stderr's notes and regression lines wrapped on a terminal; without a width the table as
# it always was. Many rows (56 tensors, more than 24): the count and overall lines first, then
# 24 rows (the regressed first, the largest SQNR change first, in the reports' order) and the
# pooled row, and a line saying how many were left out; -v every row.
. src/tests/cli/lib/term.sh
need_script
python3 - "$tmp" <<'PY' || exit 77
import sys
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(5)
t = {}
for l in range(3):
    for m in ("self_attn.q_proj", "mlp.down_proj"):
        t[f"model.language_model.layers.{l}.{m}.weight"] = rng.standard_normal((32, 64)).astype(np.float32)
save_file(t, sys.argv[1] + "/m.safetensors")
save_file({k: v for k, v in t.items() if ".2." not in k}, sys.argv[1] + "/less.safetensors")
PY
M=$tmp/m.safetensors
"$FP4DIAG" sqnr "$M" --format e2m1 --scale nvfp4 -q -o "$tmp/a.json" || exit 1
"$FP4DIAG" sqnr "$M" --format e2m1 --scale mxfp4 -q -o "$tmp/b.json" || exit 1
"$FP4DIAG" sqnr "$tmp/less.safetensors" --format e2m1 --scale nvfp4 -q -o "$tmp/c.json" || exit 1
for pair in "6 a.json b.json --ignore-key scale,block" "2 a.json c.json"; do
    set -- $pair
    rows=$1
    shift
    for c in 40 80 120; do
        # stdout and stderr a terminal
        script -qec "COLUMNS=$c LC_ALL=C.UTF-8 '$FP4DIAG' compare '$tmp/$1' '$tmp/$2' ${3:-} ${4:-}" /dev/null \
            </dev/null 2>&1 | tr -d '\r' >"$tmp/out"
        fits "compare $pair" $c "$tmp/out"  # the exit message too
        # the exit message wrapped, not cut: all of it there, its first words on one line
        tr -s '\n ' '  ' <"$tmp/out" | grep -q 'fp4diag compare: [0-9]* of [0-9]* results regressed (thresholds: SQNR drop 0\.05 dB, alpha change 0\.001, bucket drop 0\.01)' ||
            { echo "COLUMNS=$c $pair: exit message"; cat "$tmp/out"; fail=1; }
        if [ $c -eq 40 ]; then
            grep -q '^  BASE=[-0-9.]* NEW=' "$tmp/out" || { echo "COLUMNS=40 $pair: no records"; cat "$tmp/out"; fail=1; }
        else
            grep -q '^TENSOR  *BASE  *NEW  *dSQNR  *dALPHA  *dB15  *dB8 VERDICT$' "$tmp/out" ||
                { echo "COLUMNS=$c $pair: no compact header"; cat "$tmp/out"; fail=1; }
        fi
        # every tensor row keeps its layer number
        n=$(grep -c -e '…[0-2]…' -e '[….][0-2]\.[a-z]' -e 'layers\.[0-2]\.' "$tmp/out")
        [ "$n" -ge "$rows" ] || { echo "COLUMNS=$c $pair: a layer number lost ($n rows)"; cat "$tmp/out"; fail=1; }
    done
done
# the parts every row shares, said once
COLUMNS=80 "$FP4DIAG" compare "$tmp/a.json" "$tmp/b.json" --ignore-key scale,block >"$tmp/out" 2>/dev/null
grep -q '^every result is e2m1/\*/\*/rht=off/rtne$' "$tmp/out" || { echo "no common-parts line"; cat "$tmp/out"; fail=1; }
# the compact numbers are the JSON's to 3 places
"$FP4DIAG" compare "$tmp/a.json" "$tmp/b.json" --ignore-key scale,block --json >"$tmp/cmp.json" 2>/dev/null
python3 - "$tmp/cmp.json" "$tmp/out" <<'PY' || fail=1
import json, sys
rows = {r["tensor"]: r for r in json.load(open(sys.argv[1]))["rows"]}
r = rows["(summary)"]
want = "(summary) %.3f %.3f %+.3f %+.5f %+.3f %+.3f REGRESSED" % (
    r["sqnr_db"]["base"], r["sqnr_db"]["new"], r["sqnr_db"]["delta"], r["alpha"]["delta"],
    r["bucket_ratio_15"]["delta"], r["bucket_ratio_8"]["delta"])
got = [" ".join(l.split()) for l in open(sys.argv[2], encoding="utf-8") if l.startswith("(summary)")]
if not got or not got[0].startswith(want):
    print("summary row:", got, "\nwanted:", want)
    sys.exit(1)
PY
# a pipe or file without a width: as it always was
"$FP4DIAG" compare "$tmp/a.json" "$tmp/c.json" >"$tmp/out" 2>"$tmp/err"
head -n 1 "$tmp/out" | grep -q '^TENSOR  *RESULT  *SQNR_BASE  *SQNR_NEW  *dSQNR  *dALPHA  *dB15  *dB8  VERDICT$' ||
    { echo "no width: header"; cat "$tmp/out"; fail=1; }
grep -q '^model\.language_model\.layers\.2\.mlp\.down_proj\.weight  *e2m1/nvfp4/16/rht=off/rtne  .* REGRESSED missing$' "$tmp/out" ||
    { echo "no width: a row not in full"; cat "$tmp/out"; fail=1; }
[ "$(grep -c -v -e '^regression: ' -e '^fp4diag compare: ' "$tmp/err")" -eq 0 ] ||
    { echo "no width: stderr's lines wrapped"; cat "$tmp/err"; fail=1; }
# many rows: the answer first, 24 rows, the pooled one, the line that says so; -v all 56
python3 - "$tmp" <<'PY' || exit 77
import sys
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(7)
t = {f"model.layers.{l}.{m}.weight": rng.standard_normal((32, 64)).astype(np.float32)
     for l in range(8) for m in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                 "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")}
save_file(t, sys.argv[1] + "/m56.safetensors")
PY
"$FP4DIAG" sqnr "$tmp/m56.safetensors" --format nvfp4 -q -o "$tmp/n.json" || exit 1
"$FP4DIAG" sqnr "$tmp/m56.safetensors" --format mxfp4 -q -o "$tmp/x.json" || exit 1
for c in 80 0; do
    if [ $c -gt 0 ]; then COLUMNS=$c LC_ALL=C.UTF-8 "$FP4DIAG" compare "$tmp/n.json" "$tmp/x.json" --ignore-key scale,block >"$tmp/out" 2>/dev/null
    else "$FP4DIAG" compare "$tmp/n.json" "$tmp/x.json" --ignore-key scale,block >"$tmp/out" 2>/dev/null; fi
    python3 - "$tmp/out" "$tmp/x.json" "$tmp/n.json" "$c" <<'PY' || { echo "compare, many rows, COLUMNS=$c"; cat "$tmp/out"; fail=1; }
import json, re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
assert lines[0].startswith("sqnr reports: 57 results:"), lines[0]
assert any(l.startswith("overall: BASE is better") for l in lines[:5]), lines[:5]
rows = [l for l in lines if re.match(r"(model|mod…|model…|…)[^ ]*\d.* REGRESSED", l)]
assert len(rows) == 24, len(rows)
assert sum(l.startswith("(summary)") for l in lines) == 1
assert any(l.startswith("(rows of 24 of 56 results that differ") for l in lines), lines[-4:]
# the 24 with the largest SQNR drop (all regressed), in the reports' order
sq = lambda p: {t["name"]: t["results"][0]["sqnr_db"] for t in json.load(open(p))["tensors"]}
x, n = sq(sys.argv[2]), sq(sys.argv[3])
top = sorted(x, key=lambda k: -abs(x[k] - n[k]))[:24]
order = [k for k in n if k in top]
want = [x[k] - n[k] for k in order]
got = [float(r.split()[3 if sys.argv[4] != "0" else 4]) for r in rows]  # dSQNR, 3 or 4 places
assert all(abs(g - w) < 6e-4 for g, w in zip(got, want)), (got, want)
PY
done
COLUMNS=80 "$FP4DIAG" compare "$tmp/n.json" "$tmp/x.json" --ignore-key scale,block -v >"$tmp/out" 2>/dev/null
[ "$(grep -c ' REGRESSED' "$tmp/out")" -eq 57 ] || { echo "compare -v: not every row"; cat "$tmp/out"; fail=1; }
# a part that differs stays in the RESULT column (the format: e2m1 and int4 results of one
# tensor), at every compact width
for c in 80 120; do
    script -qec "COLUMNS=$c LC_ALL=C.UTF-8 '$FP4DIAG' compare '$PWD/testdata/reports/sample_sqnr.json' '$PWD/testdata/reports/sample_sqnr_drop.json' --all" /dev/null \
        </dev/null 2>/dev/null | tr -d '\r' >"$tmp/out"
    grep -q '^every result is ?/fp32/16/rht=off/rtne, ? in the RESULT column$' "$tmp/out" &&
        [ "$(grep -c ' e2m1  *[-0-9.]*  *[-0-9.]* ' "$tmp/out")" -ge 8 ] &&
        [ "$(grep -c ' int4  *[-0-9.]*  *[-0-9.]* ' "$tmp/out")" -ge 8 ] &&
        [ "$(grep -c ' ?  *[-0-9.]*  *[-0-9.]* ' "$tmp/out")" -eq 0 ] ||
        { echo "COLUMNS=$c: the format left out of the RESULT column"; cat "$tmp/out"; fail=1; }
done
exit $fail
