#!/bin/sh
# hostile_env_values.sh — FP4DIAG_* values the code cannot hold (issue 26): FP4DIAG_READ_THREADS
# from 5 to 256 crashed reads of 2 MiB or more (the pool's arrays held 4); now 1..64 run with
# the report of 1 thread, anything else is exit 2 with one line naming the variable, before
# any input is read. Values are echoed escaped (FP4DIAG_ISA with a terminal escape).
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
python3 -c 'import numpy' 2>/dev/null || skip "python3 with numpy not found"
# a 4 MiB float32 safetensors file (reads of 2 MiB or more take the pool)
python3 - "$tmp/big.safetensors" <<'PY' || fail "cannot write the input"
import json, struct, sys
import numpy as np
a = np.random.default_rng(1).standard_normal((1024, 1024)).astype("<f4")
h = json.dumps({"w": {"dtype": "F32", "shape": [1024, 1024], "data_offsets": [0, a.nbytes]}}).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + a.tobytes())
PY
strip() { python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); r.pop("timing", None); r.pop("argv", None); r.pop("provenance", None)
print(json.dumps(r, sort_keys=True))' "$1"; }
FP4DIAG_READ_THREADS=1 timeout 120 "$FP4DIAG" sqnr "$tmp/big.safetensors" --threads 8 -q -o "$tmp/one.json" \
    2>"$tmp/err" || fail "FP4DIAG_READ_THREADS=1: exit $?"
for n in 2 5 64; do
    FP4DIAG_READ_THREADS=$n timeout 120 "$FP4DIAG" sqnr "$tmp/big.safetensors" --threads 8 -q \
        -o "$tmp/n$n.json" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 0 ] || fail "FP4DIAG_READ_THREADS=$n: exit $rc, want 0"
    [ "$(strip "$tmp/n$n.json")" = "$(strip "$tmp/one.json")" ] ||
        fail "FP4DIAG_READ_THREADS=$n: the report differs from 1 thread's"
done
# usage_fail VAR VALUE: exit 2, one line naming VAR, no report, no raw escape byte
usage_fail() {
    rm -f "$tmp/r.json"
    env "$1=$2" timeout 60 "$FP4DIAG" sqnr "$tmp/big.safetensors" -q -o "$tmp/r.json" \
        >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 2 ] || fail "$1='$2': exit $rc, want 2"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$1='$2': stderr is not one line"
    grep -qF "$1=" "$tmp/err" || fail "$1='$2': stderr does not name the variable"
    ! LC_ALL=C grep -q "$(printf '\033')" "$tmp/err" || fail "$1: the escape byte is echoed raw"
    [ ! -e "$tmp/r.json" ] && [ ! -s "$tmp/out" ] || fail "$1='$2': output written"
}
for v in 0 65 256 -1 +4 " 4" 4x 0x4 99999999999999999999 abc "$(printf '3\033[2J')"; do
    usage_fail FP4DIAG_READ_THREADS "$v"
done
for v in avx1024 "$(printf 'avx2\033]0;pwned\007')" GENERIC; do usage_fail FP4DIAG_ISA "$v"; done
for v in 3 yes "$(printf '1\n2')"; do usage_fail FP4DIAG_TRACE "$v"; done
for v in 2 no; do usage_fail FP4DIAG_CPU_WORDS "$v"; done
for v in -1 1e3 soon . 1.2.3 " 5" 1234567890 "$(printf '5\033[2J')"; do usage_fail FP4DIAG_PROGRESS_EVERY "$v"; done
for v in 0 0.5 10 .5; do
    env FP4DIAG_PROGRESS_EVERY=$v "$FP4DIAG" ls "$tmp/big.safetensors" >/dev/null 2>"$tmp/err" ||
        fail "FP4DIAG_PROGRESS_EVERY=$v: exit $?"
done
# the escaped form is shown
env "FP4DIAG_ISA=$(printf 'x\033[31m')" "$FP4DIAG" ls "$tmp/big.safetensors" >/dev/null 2>"$tmp/err"
grep -qiF 'x\x1b[31m' "$tmp/err" || fail "FP4DIAG_ISA: the value is not shown escaped"
# --version and help refuse too (they read FP4DIAG_ISA)
FP4DIAG_ISA=bogus "$FP4DIAG" --version >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || fail "--version under FP4DIAG_ISA=bogus: exit $rc, want 2"
# empty values are unset ones
FP4DIAG_READ_THREADS= FP4DIAG_ISA= FP4DIAG_TRACE= FP4DIAG_CPU_WORDS= FP4DIAG_PROGRESS_EVERY= "$FP4DIAG" ls \
    "$tmp/big.safetensors" >/dev/null 2>"$tmp/err" || fail "empty FP4DIAG_* values: exit $?"
exit 0
