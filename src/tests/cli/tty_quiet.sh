#!/bin/sh
# tty_quiet.sh — on a terminal (a pseudo-terminal on stdout and stderr) with no -o and no
# --json: -q prints nothing on stdout (no table, no JSON) in every report command, and one
# stderr line says no report was written; grid follows the terminal-first rule of the
# analyses (its table on stdout, no JSON; --json or a pipe gives the JSON).
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# runs FP4DIAG ARGS on a pseudo-terminal; prints what the terminal showed (stdout and stderr)
tty_run() {
    python3 - "$FP4DIAG" "$@" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(st))
PY
}
"$FP4DIAG" sqnr "$F" /qkv/w --format e2m1 -q >"$tmp/r.json" || fail "sqnr -q to a pipe"
python3 -m json.tool "$tmp/r.json" >/dev/null || fail "-q to a pipe: not the JSON"
"$FP4DIAG" sqnr "$F" /qkv/w --format e2m1 --shard 0/1 -q -o "$tmp/p0.json" || fail "--shard 0/1"
for c in "sqnr $F /qkv/w" "bias $F /qkv/w" "buckets $F /qkv/w" "rht $F /qkv/w" \
    "gemm $F /qkv" "grid" "merge $tmp/p0.json"; do
    # shellcheck disable=SC2086
    tty_run $c -q >"$tmp/out" || fail "$c -q: exit $?"
    [ "$(wc -l <"$tmp/out")" -eq 1 ] || { head -5 "$tmp/out"; fail "$c -q: more than one line"; }
    grep -q "no report written" "$tmp/out" || { cat "$tmp/out"; fail "$c -q: no note"; }
    # shellcheck disable=SC2086
    tty_run $c -q --json >"$tmp/out" || fail "$c -q --json: exit $?"
    grep -q '"schema"' "$tmp/out" || fail "$c -q --json: no JSON"
done
tty_run grid --format e2m1 >"$tmp/g" || fail "grid on a terminal"
grep -q '"schema"' "$tmp/g" && fail "grid: JSON on a terminal"
grep -q "code" "$tmp/g" || fail "grid: no table on a terminal"
grep -q -- "--json" "$tmp/g" || fail "grid: no line saying how to get the JSON"
[ "$(wc -l <"$tmp/g")" -le 12 ] || fail "grid e2m1: $(wc -l <"$tmp/g") lines on a terminal"
"$FP4DIAG" grid --format e2m1 2>/dev/null | python3 -m json.tool >/dev/null || fail "grid | : not JSON"
exit 0
