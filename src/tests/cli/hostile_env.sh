#!/bin/sh
# hostile_env.sh — limits set by the environment: OMP_NUM_THREADS far above the CPUs (the
# default thread count is capped at the CPUs: the same report, exit 0, no crash or exit 1),
# a report over `ulimit -f` (exit 3, one line, no report and no temporary file: never death
# by SIGXFSZ), stdout a pipe whose reader has gone (exit 3 and a message, not SIGPIPE), and
# 10,000 tiny tensors with the default thread count (no per-tensor thread start-up: the run
# ends well inside its timeout, under ASan too). Every run has a timeout: a hang fails.
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
need_fixtures small.h5 many.h5
fx=$tmp/fx
out=$tmp/out.d
mkdir "$out"
strip_timing() { python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); r.pop("timing", None); r.pop("argv", None); r.pop("provenance", None)
print(json.dumps(r, sort_keys=True))' "$1"; }

timeout 120 "$FP4DIAG" sqnr --format all "$fx/small.h5" -o "$out/ref.json" 2>"$tmp/err" ||
    fail "sqnr small.h5: exit $?"
for n in 100000 50000; do
    OMP_NUM_THREADS=$n timeout 120 "$FP4DIAG" sqnr --format all "$fx/small.h5" \
        -o "$out/omp$n.json" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 0 ] || fail "OMP_NUM_THREADS=$n: exit $rc, want 0"
    [ "$(strip_timing "$out/omp$n.json")" = "$(strip_timing "$out/ref.json")" ] ||
        fail "OMP_NUM_THREADS=$n: the report differs"
done
OMP_NUM_THREADS=100000 timeout 120 "$FP4DIAG" ls "$fx/small.h5" >/dev/null 2>"$tmp/err" ||
    fail "ls under OMP_NUM_THREADS=100000: exit $?"

# A report larger than the file size limit: EFBIG, not SIGXFSZ.
rm -f "$out/big.json"
(ulimit -f 1 && exec timeout 120 "$FP4DIAG" sqnr --format all "$fx/small.h5" \
    -o "$out/big.json") >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || fail "-o over ulimit -f: exit $rc, want 3"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "$out/big.json" "$tmp/err" ||
    fail "-o over ulimit -f: stderr is not one line naming the file"
[ ! -e "$out/big.json" ] || fail "-o over ulimit -f: a partial report was left"
no_temp "$out"
(ulimit -f 1 && exec timeout 120 "$FP4DIAG" sqnr --format all "$fx/small.h5") \
    >"$out/stdout.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] ||
    fail "stdout over ulimit -f: exit $rc, want 3 and one line"

# stdout a pipe whose reading end is closed before the report is written.
for args in "sqnr $fx/small.h5" "ls $fx/small.h5" "ls --json $fx/small.h5"; do
    python3 - "$FP4DIAG" $args >"$tmp/out" 2>"$tmp/err" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE, timeout=120)
sys.stderr.write(p.stderr.decode("utf-8", "replace"))
sys.exit(p.returncode if p.returncode >= 0 else 128 - p.returncode)
PY
    rc=$?
    [ "$rc" -eq 3 ] || fail "$args into a closed pipe: exit $rc, want 3"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "stdout: write error" "$tmp/err" ||
        fail "$args into a closed pipe: stderr is not one line saying stdout cannot be written"
done

# 10,000 tiny tensors with the default thread count (plain and under ASan; under valgrind,
# which runs everything ~50x slower, the first 100).
sel=""; want=10000
[ "$SLOW" = 1 ] && [ -z "${ASAN_OPTIONS:-}" ] && sel="/d000*" && want=100
# (fast unwinding under ASan: this file has no HDF5 leaks for slow stacks to tell apart)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:fast_unwind_on_malloc=1}" \
    timeout 300 "$FP4DIAG" sqnr "$fx/many.h5" --all-tensors $sel -o "$out/many.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 0 ] || fail "sqnr on $want tiny tensors: exit $rc (124: over 300 s)"
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["tensors"]) == int(sys.argv[2]) and not r["errors"], (len(r["tensors"]), r["errors"][:3])
' "$out/many.json" "$want" || fail "sqnr on $want tiny tensors: not $want results"
exit 0
