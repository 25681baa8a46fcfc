#!/bin/sh
# output_never_input.sh — -o never writes over an input and is checked before anything is read:
# -o naming the analysed file (as given, through a symlink, a hard link, /proc/self/cwd/...), a
# gemm operand file or a compare input is exit 2 and the input is unchanged; a directory or a
# missing directory is exit 3, both before the input is opened (a missing input is not
# the error reported); a read-only report file is refused (exit 3, unchanged); a FIFO with no
# reader fails at once (exit 3), one with a reader gets the whole report; an existing file
# reached through /proc is replaced whole, never appended to.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cp "$F" "$tmp/in.h5"
sum=$(cksum <"$tmp/in.h5")
expect() { # expect RC PATTERN ARGS...: exit RC, one stderr line matching PATTERN, no stdout
    want=$1; pat=$2; shift 2
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq "$want" ] || { cat "$tmp/err"; fail "fp4diag $*: exit $rc, want $want"; }
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "fp4diag $*: want one line"; }
    [ ! -s "$tmp/out" ] || fail "fp4diag $*: output on stdout"
    grep -q -- "$pat" "$tmp/err" || { cat "$tmp/err"; fail "fp4diag $*: no '$pat'"; }
    [ "$(cksum <"$tmp/in.h5")" = "$sum" ] || fail "fp4diag $*: the input changed"
}
ln -s in.h5 "$tmp/link.h5"
ln "$tmp/in.h5" "$tmp/hard.h5"
expect 2 "is the input" sqnr "$tmp/in.h5" /qkv/w -o "$tmp/in.h5"
expect 2 "is the input" sqnr "$tmp/in.h5" /qkv/w -o "$tmp/link.h5"
expect 2 "is the input" bias "$tmp/link.h5" /qkv/w -o "$tmp/in.h5"
expect 2 "is the input" buckets "$tmp/in.h5" -o "$tmp/hard.h5"
expect 2 "is the input" rht "$tmp/in.h5" -o "$tmp/./in.h5"
(cd "$tmp" && "$FP4DIAG" sqnr in.h5 /qkv/w -o /proc/self/cwd/in.h5 >out 2>err)
[ $? -eq 2 ] || fail "-o /proc/self/cwd/in.h5: exit not 2"
[ "$(cksum <"$tmp/in.h5")" = "$sum" ] || fail "-o /proc/self/cwd/in.h5: the input changed"
expect 2 "is the input" gemm "$tmp/in.h5" /qkv -o "$tmp/in.h5"
expect 2 "is the input" gemm --x "$F:/qkv/x" --w "$tmp/in.h5:/qkv/w" --dy "$F:/qkv/dy" \
    -o "$tmp/link.h5"
"$FP4DIAG" sqnr "$F" /qkv/w -q -o "$tmp/a.json" || fail "a.json"
cp "$tmp/a.json" "$tmp/b.json"
asum=$(cksum <"$tmp/a.json")
"$FP4DIAG" compare "$tmp/a.json" "$tmp/b.json" -o "$tmp/a.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "compare -o BASE: exit not 2"
[ "$(cksum <"$tmp/a.json")" = "$asum" ] || fail "compare -o BASE: the base changed"
# before any reading: a missing input is not what is reported
expect 3 "is a directory" sqnr "$tmp/missing.h5" -o "$tmp"
expect 3 "does not exist" sqnr "$tmp/missing.h5" -o "$tmp/nodir/r.json"
expect 3 "does not exist" gemm "$tmp/missing.h5" -o "$tmp/nodir/r.json"
expect 3 "does not exist" compare "$tmp/missing.json" "$tmp/b.json" -o "$tmp/nodir/r.json"
# a read-only report file: refused, left as it is
echo "keep" >"$tmp/ro.json"
chmod 444 "$tmp/ro.json"
expect 3 "read-only" sqnr "$tmp/in.h5" /qkv/w -o "$tmp/ro.json"
[ "$(cat "$tmp/ro.json")" = "keep" ] || fail "read-only report replaced"
# a FIFO with no reader: fails at once, never blocks
mkfifo "$tmp/fifo" || exit 77
timeout 20 "$FP4DIAG" sqnr "$tmp/in.h5" /qkv/w -o "$tmp/fifo" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] || { cat "$tmp/err"; fail "FIFO without reader: exit $rc, want 3"; }
grep -q "no reader" "$tmp/err" || { cat "$tmp/err"; fail "FIFO without reader: message"; }
# with a reader it gets the whole report
cat "$tmp/fifo" >"$tmp/fromfifo" &
reader=$!
timeout 60 "$FP4DIAG" sqnr "$tmp/in.h5" /qkv/w -q -o "$tmp/fifo" || fail "FIFO with reader"
wait "$reader"
python3 -m json.tool "$tmp/fromfifo" >/dev/null || fail "FIFO: not a whole report"
# an existing file reached through /proc is replaced whole, not appended to
echo "old contents" >"$tmp/r.json"
(cd "$tmp" && "$FP4DIAG" sqnr in.h5 /qkv/w -q -o /proc/self/cwd/r.json) || fail "/proc path"
python3 -m json.tool "$tmp/r.json" >/dev/null || fail "/proc path: appended, not replaced"
"$FP4DIAG" sqnr "$tmp/in.h5" /qkv/w -q -o /dev/null || fail "-o /dev/null"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
exit 0
