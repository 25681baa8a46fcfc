#!/bin/sh
# merge_bounded.sh — merge and compare read reports in bounded memory (issue 26, item 10): a
# 30 MB part of tiny JSON values (15 million: about 1.2 GB once parsed; it peaked at 2.4 GB
# and took 51 s before) is refused before it is parsed, with one line saying how many values
# and the 1024 MiB budget, in well under the memory a parse would take; two parts that each fit
# but not together are refused at the second; a file over 256 MiB is refused before it is
# read. The real parts still merge and compare. Nothing is written on a refusal.
. src/tests/cli/lib/parts.sh
cd "$tmp" || exit 1
for i in 0 1; do
    "$FP4DIAG" sqnr "$C" /blocks/0 --format e2m1 -q --shard $i/2 -o s$i.json || fail "share $i"
done
"$FP4DIAG" merge s0.json s1.json -o ok.json 2>err || { cat err; fail "real parts refused"; }
"$FP4DIAG" compare ok.json ok.json >/dev/null 2>err || { cat err; fail "compare refused"; }
# dense.json: part 0 with "notes" holding N ones, compact (2 bytes a value)
dense() {
    python3 - s0.json "$1" "$2" <<'PY' || fail "dense"
import json, sys
d = json.load(open(sys.argv[1]))
d["notes"] = [1] * int(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d, separators=(",", ":")))
PY
}
dense d30.json 15000000
bad() { # bad WHAT GREP COMMAND...
    what=$1 pat=$2; shift 2
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%M" -o rss "$FP4DIAG" "$@" -o bad.json 2>err; rc=$?
    else
        "$FP4DIAG" "$@" -o bad.json 2>err; rc=$?
    fi
    [ "$rc" -eq 3 ] || { cat err; fail "$what: exit $rc, want 3"; }
    grep -q -- "$pat" err || { cat err; fail "$what: message lacks '$pat'"; }
    [ "$(wc -l <err)" -eq 1 ] || { cat err; fail "$what: not one line"; }
    [ -e bad.json ] && fail "$what: wrote a report"
    # the text (30 MB) and the program, far below a parse (1.2 GB; sanitizer builds add theirs)
    if [ -s rss ] && [ "$(tail -1 rss)" -gt 400000 ]; then fail "$what: peak RSS $(tail -1 rss) KB"; fi
    return 0
}
bad dense "d30.json: 1500[0-9]* JSON values in 28.6 MiB would take about 11[0-9][0-9] MiB to parse, more than the 1024 MiB left of the 1024 MiB" merge d30.json s1.json
bad dense_compare "d30.json: 1500[0-9]* JSON values" compare ok.json d30.json
# 7 M values each (about 560 MiB parsed): one fits, two together do not
dense d14.json 7000000
python3 - d14.json s1.json d14b.json <<'PY' || fail "d14b"
import json, sys
d = json.load(open(sys.argv[2]))
d["notes"] = [1] * 7000000
open(sys.argv[3], "w").write(json.dumps(d, separators=(",", ":")))
PY
bad together "d14b.json: 700[0-9]* JSON values in .* MiB left of the 1024 MiB" merge d14.json d14b.json
truncate -s 300M huge.json 2>/dev/null || { echo "no truncate -s"; exit 0; }
bad huge "huge.json: 314572800 bytes: larger than any report (at most 256 MiB are read)" merge huge.json s1.json
exit 0
