#!/bin/sh
# npz_memlimit.sh — a deflated .npz member holds to --mem-limit: its header is read by inflating
# only its first bytes (`ls` shows its shape and type without inflating the 32 MiB member: its
# peak RSS within 16 MiB of `ls` on the stored form); a member that would inflate to more than
# the decoding half of --mem-limit is an `errors` entry naming it and saying why (exit 3), and
# the other member is analysed; with room it is analysed, and its numbers equal those of the
# same arrays stored uncompressed.
set -u
python3 -c 'import numpy' 2>/dev/null || { echo "no python3 numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp" <<'PY' || exit 1
import sys, numpy as np
r = np.random.default_rng(7)
a = {"big": r.standard_normal((2048, 4096)).astype("<f4"), "small": r.standard_normal((64, 64)).astype("<f4")}
np.savez_compressed(sys.argv[1] + "/z.npz", **a)
np.savez(sys.argv[1] + "/s.npz", **a)
PY
if [ -x /usr/bin/time ]; then
    # against ls of the same arrays stored (only headers read): a member inflated whole would
    # add 32 MiB; the header prefix adds at most 1 MiB (the margin absorbs ASan/valgrind noise)
    /usr/bin/time -f %M "$FP4DIAG" ls "$tmp/s.npz" >/dev/null 2>"$tmp/rss0" || fail "ls stored: exit $?"
    /usr/bin/time -f %M "$FP4DIAG" ls "$tmp/z.npz" >"$tmp/ls" 2>"$tmp/rss" || fail "ls: exit $?"
    kb0=$(tail -n 1 "$tmp/rss0")
    kb=$(tail -n 1 "$tmp/rss")
    [ "$kb" -lt $((kb0 + 16384)) ] ||
        fail "ls on a 32 MiB deflated member: peak RSS $kb KiB, stored form $kb0 KiB (inflated whole?)"
else
    "$FP4DIAG" ls "$tmp/z.npz" >"$tmp/ls" || fail "ls: exit $?"
fi
grep -q '^big  *2048x4096  *f32 ' "$tmp/ls" || { cat "$tmp/ls"; fail "ls: no shape/type for big"; }
"$FP4DIAG" sqnr "$tmp/z.npz" --mem-limit 16M -q -o "$tmp/r.json" 2>"$tmp/err"
[ $? -eq 3 ] || { cat "$tmp/err"; fail "a member over --mem-limit: exit not 3"; }
python3 - "$tmp/r.json" <<'PY' || fail "the refusal"
import json, sys
r = json.load(open(sys.argv[1]))
assert [t["name"] for t in r["tensors"]] == ["small"], r["tensors"]
e, = r["errors"]
assert e["tensor"] == "big" and "inflates to 33554560 bytes" in e["message"] and "--mem-limit" in e["message"], e
PY
"$FP4DIAG" sqnr "$tmp/z.npz" --mem-limit 256M -q -o "$tmp/z.json" || fail "with room: exit $?"
"$FP4DIAG" sqnr "$tmp/s.npz" --mem-limit 256M -q -o "$tmp/s.json" || fail "stored: exit $?"
python3 - "$tmp/z.json" "$tmp/s.json" <<'PY' || fail "deflated and stored differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert all(x["results"] == y["results"] for x, y in zip(a["tensors"], b["tensors"])), "results differ"
assert [t["name"] for t in a["tensors"]] == ["big", "small"] and not a["errors"]
PY
exit 0
