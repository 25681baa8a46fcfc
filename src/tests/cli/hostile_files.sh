#!/bin/sh
# hostile_files.sh — files that are not (whole) HDF5 files, through `ls` and `ls --json`:
# truncated and byte-flipped copies of the real checkpoint and of small fixtures, garbage,
# an HDF5 signature followed by garbage, empty, a directory, a FIFO, /dev/null, a symlink loop,
# a name too long, and an unreadable file (as an unprivileged user). Each exits 3 with one line
# on stderr, or (a flip HDF5 does not notice in `ls`) exits 0; never a crash or a hang.
. "$(dirname "$0")/lib/hostile.sh"
[ -f "$CKPT" ] || skip "$CKPT not found"
command -v python3 >/dev/null 2>&1 || skip "python3 not found"
size=$(wc -c <"$CKPT")

# Truncated: HDF5 checks the stored end-of-file address, so every cut is caught at open.
cuts="0 7 8 100 2048 $((size / 2)) $((size - 1))"
[ "$SLOW" = 1 ] && cuts="8 $((size / 2))"
for n in $cuts; do
    head -c "$n" "$CKPT" >"$tmp/cut$n.h5"
    clean_fail "$tmp/cut$n.h5: " ls "$tmp/cut$n.h5"
    [ "$n" -ge 100 ] && { grep -q "truncated" "$tmp/err" || fail "cut at $n: stderr does not say truncated"; }
    clean_fail "$tmp/cut$n.h5: " ls --json "$tmp/cut$n.h5"
done

# Byte flips in the real checkpoint: metadata (superblock, object headers) and data.
n=30; [ "$SLOW" = 1 ] && n=4
flips "$CKPT" "$tmp/flips" $(offsets "$size" $n)
for g in "$tmp/flips"/*.h5; do
    no_crash "$g" ls "$g"
    no_crash "$g" ls --json "$g"
done

# Garbage: random-looking bytes; the HDF5 signature then garbage; empty.
python3 -c 'import sys, random
r = random.Random(9)
open(sys.argv[1], "wb").write(bytes(r.randrange(256) for _ in range(65536)))
open(sys.argv[2], "wb").write(b"\x89HDF\r\n\x1a\n" + bytes(r.randrange(256) for _ in range(4096)))
' "$tmp/garbage.h5" "$tmp/sig.h5"
clean_fail "$tmp/garbage.h5: not an HDF5, safetensors, PyTorch, GGUF or NumPy file" ls "$tmp/garbage.h5"
clean_fail "$tmp/sig.h5: " ls "$tmp/sig.h5"
: >"$tmp/empty.h5"
clean_fail "$tmp/empty.h5: not an HDF5, safetensors, PyTorch, GGUF or NumPy file" ls "$tmp/empty.h5"

# Not regular files: never read (a FIFO would block forever), never hang.
mkdir "$tmp/dir.h5"
clean_fail "$tmp/dir.h5: is a directory" ls "$tmp/dir.h5"
mkfifo "$tmp/fifo.h5" && clean_fail "$tmp/fifo.h5: not a regular file" ls "$tmp/fifo.h5"
clean_fail "/dev/null: not a regular file" ls /dev/null
ln -s loop.h5 "$tmp/loop.h5"
clean_fail "$tmp/loop.h5: " ls "$tmp/loop.h5"
long=$(python3 -c 'print("x" * 5000)')
run ls "$tmp/$long.h5"
[ "$rc" -eq 3 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "a 5000-character name: exit $rc, want 3 and one line"

# Unreadable: root reads everything, so check as an unprivileged user when we can.
cp "$CKPT" "$tmp/secret.h5" && chmod 000 "$tmp/secret.h5"
as_nobody=""
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
elif [ "$(id -u)" -ne 0 ]; then
    as_nobody="env"
fi
if [ -n "$as_nobody" ] && $as_nobody test -x "$FP4DIAG" && $as_nobody test -r testdata/gpt_ckpt_small.h5; then
    $as_nobody "$FP4DIAG" ls "$tmp/secret.h5" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 3 ] || fail "unreadable file: exit $rc, want 3"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "$tmp/secret.h5: permission denied" "$tmp/err" ||
        fail "unreadable file: stderr is not one line saying permission denied"
else
    echo "note: unreadable-file check skipped (no unprivileged user can run $FP4DIAG here)"
fi
exit 0
