#!/bin/sh
# trace_phases.sh — FP4DIAG_TRACE=1 (docs/trace.md) writes timestamped phase lines to stderr in
# order (main, backend open, source open/select, per tensor begin/amax/feed/end, report, main
# returns) and changes nothing else: the same report, byte for byte but for timing.seconds.
# FP4DIAG_TRACE=2 adds a line per slab; 0 or unset: no trace line.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
in=testdata/gpt_ckpt_small.h5
[ -f "$in" ] || { echo "no $in"; exit 77; }
args="sqnr $in --format e2m1 --scale nvfp4 --threads 2 --device cpu -q"
FP4DIAG_TRACE=1 "$FP4DIAG" $args -o "$tmp/t.json" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
"$FP4DIAG" $args -o "$tmp/p.json" 2>"$tmp/err0" || { cat "$tmp/err0"; exit 1; }
[ ! -s "$tmp/err0" ] || { echo "stderr without the trace:"; cat "$tmp/err0"; exit 1; }
FP4DIAG_TRACE=0 "$FP4DIAG" $args -o "$tmp/z.json" 2>"$tmp/errz" || exit 1
[ ! -s "$tmp/errz" ] || { echo "FP4DIAG_TRACE=0 traced:"; cat "$tmp/errz"; exit 1; }
# every line has the format; the phases come in this order
bad=$(grep -v -E '^fp4diag trace \+[0-9]+\.[0-9]{6} s \[[0-9]+\] ' "$tmp/err")
[ -z "$bad" ] || { echo "not trace lines:"; echo "$bad"; exit 1; }
want="main: sqnr|backend open: cpu, 2 threads|source open: $in|source select: 23 tensors|tensor 1/5: /blocks/0/fc1/weight|tensor begin: 1024 x 256, 1 configs|amax: 1024 of 1024 rows (pass done)|feed: 1024 of 1024 rows (pass done)|tensor end|backend closed|report written|main returns 0"
got=$(sed 's/^fp4diag trace +[0-9.]* s \[[0-9]*\] //' "$tmp/err" | tr '\n' '|')
rest=$got
old_ifs=$IFS; IFS='|'
for phase in $want; do
    case "$rest" in
    *"$phase"*) rest=${rest#*"$phase"} ;;
    *) IFS=$old_ifs; echo "phase '$phase' missing or out of order in:"; cat "$tmp/err"; exit 1 ;;
    esac
done
IFS=$old_ifs
# timestamps never go backwards on the main thread
main=$(sed -n 's/^fp4diag trace +\([0-9.]*\) s \[\([0-9]*\)\] main: .*/\2/p' "$tmp/err")
sed -n "s/^fp4diag trace +\([0-9.]*\) s \[$main\] .*/\1/p" "$tmp/err" | sort -c -n ||
    { echo "main-thread timestamps out of order"; exit 1; }
python3 - "$tmp/t.json" "$tmp/p.json" <<'PY' || exit 1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d["timing"].pop("seconds", None)
    d.pop("provenance", None)
    d.pop("argv", None)
sys.exit(0 if a == b else "the trace changed the report")
PY
# the per-phase sums: the reader's reads and waits, the CPU backend's loops and merge,
# one line per tensor read and per tensor analysed (5), and the reader's totals
nt=5
for pat in 'reader: tensor [0-9]+ read: [0-9]+ bytes, [0-9.]+ s in reads \([0-9.]+ GB/s\), [0-9.]+ s waiting for room, [0-9.]+ s in all' \
           "reader: the analysis waited [0-9.]+ s for tensor [0-9]+'s slabs" \
           'cpu: amax loops [0-9.]+ s, quantization loops [0-9.]+ s \(threads busy [0-9.]+ of 2\), merge [0-9.]+ s, batch [0-9]+ rows'; do
    n=$(grep -c -E "$pat" "$tmp/err")
    [ "$n" -eq "$nt" ] || { echo "want $nt lines matching '$pat', got $n:"; cat "$tmp/err"; exit 1; }
done
grep -q -E 'reader: totals: [0-9.]+ s in reads, [0-9.]+ s waiting for room or the analysis; the analysis waited [0-9.]+ s for slabs' "$tmp/err" ||
    { echo "no reader totals line"; cat "$tmp/err"; exit 1; }
FP4DIAG_TRACE=2 "$FP4DIAG" sqnr "$in" --format e2m1 --scale nvfp4 --threads 2 --mem-limit 1M -q \
    -o "$tmp/t2.json" 2>"$tmp/err2" || { cat "$tmp/err2"; exit 1; }
n1=$(grep -c 'amax: ' "$tmp/err"); n2=$(grep -c 'amax: ' "$tmp/err2")
[ "$n2" -gt "$n1" ] || { echo "FP4DIAG_TRACE=2: no per-slab lines ($n2 vs $n1)"; exit 1; }
exit 0
