#!/bin/sh
# term_compare.sh — compare's table fits the width (SPEC §9 "Terminal output"): two reports of
# a Hugging Face checkpoint (nvfp4 against mxfp4 scales, --ignore-key scale,block, and a NEW
# lacking tensors: "missing" rows). COLUMNS=40, 80 and 120 give no line longer than COLUMNS
# (characters) but the one-line exit message; 80 and 120 the compact table (the result parts
# the same on every row said once above it, names elided keeping the layer number, the values
# of the JSON to 3 places); 40 one record per result (the name on its line, FIELD=VALUE under
# it); stderr's notes and regression lines wrapped on a terminal; without a width the table as
# it always was.
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
        fits "compare $pair" $c "$tmp/out" "fp4diag compare: "  # the exit message left out
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
exit $fail
