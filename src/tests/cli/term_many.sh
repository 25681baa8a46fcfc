#!/bin/sh
# term_many.sh — a checkpoint of many tensors on a terminal (SPEC §9 "Terminal output"): the
# table opens with the verdict, holds the rows of the 24 tensors first in its ranking (in the
# model's order) and says how many were left out and that -v shows them; -v prints every row
# and the verdict under them; 24 tensors or fewer are all shown. No line longer than $COLUMNS
# at 80 and 120 with long Hugging Face MoE names.
. src/tests/cli/lib/term.sh
need_script
python3 - "$tmp" <<'PY' || exit 77
import sys
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(3)
def name(l):
    return f"model.language_model.layers.{l}.block_sparse_moe.experts.{l % 8}.w1.weight"
# layer l gets heavier tails as l grows: the ranking by gap is not the model's order
t = {name(l): (rng.standard_normal((16, 64)) * np.exp(rng.standard_normal((16, 64)) * l / 15)).astype(np.float32)
     for l in range(30)}
save_file(t, sys.argv[1] + "/m.safetensors")
save_file({k: v for k, v in list(t.items())[:24]}, sys.argv[1] + "/m24.safetensors")
PY
M=$tmp/m.safetensors
rows() { grep -c '^model\.language_model\.layers\.[0-9]*\.block_sparse_moe\.experts\.[0-9]\.w1\.weight  *e2m1 ' "$tmp/tty"; }
pty "'$FP4DIAG' sqnr '$M' 2>/dev/null"
first=$(head -n 1 "$tmp/tty")
case $first in "verdict (pooled over 30 tensors):") ;; *) echo "30 tensors: the first line is not the verdict: $first"; fail=1 ;; esac
[ "$(rows)" -eq 24 ] || { echo "30 tensors: $(rows) e2m1 rows, wanted 24"; cat "$tmp/tty"; fail=1; }
grep -qF '(rows of 24 of 30 tensors, those first in the verdict' "$tmp/tty" && grep -qF -- '-v shows all 30 rows' "$tmp/tty" ||
    { echo "30 tensors: no line saying rows were left out"; cat "$tmp/tty"; fail=1; }
[ "$(grep -c '^verdict (pooled' "$tmp/tty")" -eq 1 ] || { echo "the verdict twice"; fail=1; }
# the table ends with the verdict in one line (then the note on the JSON): the answer is on
# the screen after the rows without scrolling back
last=$(grep -v '^(the JSON report' "$tmp/tty" | tail -n 1)
case $last in
"verdict over 30 tensors: "*" best, +"*" dB over "*" (fp32 scales)") ;;
*) echo "30 tensors: the last line is not the one-line verdict: $last"; fail=1 ;;
esac
# the rows shown are the 24 first in the ranking: the JSON's verdict ranking, in the model's order
"$FP4DIAG" sqnr "$M" --json -q >"$tmp/r.json" || { echo "--json failed"; fail=1; }
python3 - "$tmp/r.json" "$tmp/tty" <<'PY' || fail=1
import json, re, sys
r = json.load(open(sys.argv[1]))
names = [t["name"] for t in r["tensors"]]
def gap(t):
    s = [x["sqnr_db"] for x in t["results"] if x.get("sqnr_db") is not None]
    return max(s) - min(s)
shown = [l.split()[0] for l in open(sys.argv[2]) if re.match(r"^model\S+ +e2m1 ", l)]
want = sorted(names, key=lambda n: -gap(next(t for t in r["tensors"] if t["name"] == n)))[:24]
want = [n for n in names if n in want]
if shown != want:
    print("rows shown:", shown, "\nwanted (top 24 by gap, model order):", want)
    sys.exit(1)
PY
# the one-line verdict names the JSON's winner and margin
python3 - "$tmp/r.json" "$last" <<'PY' || fail=1
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]["winner"]
want = "verdict over 30 tensors: %s best, %+.3f dB over %s (fp32 scales)" % (
    v["format"], v["margin_db"], v["runner_up"]["format"])
if sys.argv[2] != want:
    print("one-line verdict:", sys.argv[2], "\nwanted:          ", want)
    sys.exit(1)
PY
# one quantizer (one config, or e1m2 and int4: the same values): no "+0.000" gap, no worst
# column; the ranking says it is by the keep score (no gap to rank by)
for f in e2m1 e1m2,int4; do
    pty "'$FP4DIAG' sqnr '$M' --format $f 2>/dev/null"
    grep -q '^  tensors, largest keep score first (one quantizer: no gap to rank by)' "$tmp/tty" &&
        ! grep -q -e ' gap  *[0-9]' -e ' worst ' "$tmp/tty" &&
        grep -q '^verdict over 30 tensors: .* dB; one quantizer, nothing to rank it against$' "$tmp/tty" ||
        { echo "--format $f: a gap ranking of one quantizer"; cat "$tmp/tty"; fail=1; }
done
pty "'$FP4DIAG' sqnr '$M' -v 2>/dev/null"
[ "$(rows)" -eq 30 ] || { echo "-v: $(rows) e2m1 rows, wanted 30"; fail=1; }
grep -q '(rows of' "$tmp/tty" && { echo "-v: rows left out"; fail=1; }
head -n 1 "$tmp/tty" | grep -q '^tensor ' || { echo "-v: the table does not open with its header"; head -n 3 "$tmp/tty"; fail=1; }
pty "'$FP4DIAG' sqnr '$tmp/m24.safetensors' 2>/dev/null"
[ "$(rows)" -eq 24 ] && ! grep -q '(rows of' "$tmp/tty" || { echo "24 tensors: not every row"; fail=1; }
# the width: no line longer than COLUMNS
for cols in 80 120; do
    for cmd in sqnr bias buckets rht; do
        pty "LC_ALL=C COLUMNS=$cols '$FP4DIAG' $cmd '$M' 2>/dev/null"
        long=$(awk -v w="$cols" 'length($0) > w' "$tmp/tty" | head -n 2)
        [ -z "$long" ] || { echo "$cmd at $cols columns: lines too long:"; echo "$long"; fail=1; }
    done
done
exit $fail
