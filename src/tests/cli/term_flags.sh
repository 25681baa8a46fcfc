#!/bin/sh
# term_flags.sh — a table row's flag (audit's LAYOUT/KEEP, the analyses' "! non-finite input")
# never costs the row its columns (SPEC §9 "Terminal output"): under a width every row keeps
# the header's column ends, a flag that does not fit goes on a continuation line of its own,
# and no line is longer than COLUMNS. audit at 80 columns of an export with a layout finding;
# sqnr at 120 and 80 of a source with a NaN.
. src/tests/cli/lib/term.sh
COLUMNS=80 LC_ALL=C.UTF-8 "$FP4DIAG" audit testdata/quantized/source testdata/quantized/bad_nibble \
    >"$tmp/a" 2>&1 || { echo "audit exited $?"; cat "$tmp/a"; fail=1; }
fits audit 80 "$tmp/a"
grep -q '^  LAYOUT$' "$tmp/a" || { echo "audit: LAYOUT not on a line of its own"; cat "$tmp/a"; fail=1; }
grep -B1 '^  LAYOUT$' "$tmp/a" | head -n 1 | grep -q ' +0\.000  *0\.0488 100\.0000$' ||
    { echo "audit: the flagged row lost its columns"; cat "$tmp/a"; fail=1; }
python3 - "$tmp/a" <<'PY' || fail=1
import re, sys
L = open(sys.argv[1], encoding="utf-8").read().split("\n")
h = next(i for i, l in enumerate(L) if l.startswith("tensor "))
ends = lambda l: [m.end() for m in re.finditer(r"\S+", l)]
want = ends(L[h])[1:]
for l in L[h + 1:]:
    if l.startswith("  "):
        continue
    got = ends(l)[1:]
    if l.startswith("(pooled"):
        want2 = want[:5] + want[6:]  # no gain on the pooled row
        if got[-7:] != want2[-7:]:
            print("audit pooled row not aligned:", repr(l)); sys.exit(1)
        break
    if got != want:
        print("audit row not aligned:", repr(l), got, want); sys.exit(1)
PY
# no width (a file): the flag in line, as always
"$FP4DIAG" audit testdata/quantized/source testdata/quantized/bad_nibble >"$tmp/a" 2>&1
grep -q ' LAYOUT$' "$tmp/a" && ! grep -q "$(printf '\037')" "$tmp/a" ||
    { echo "audit, no width: the flag not in line"; cat -A "$tmp/a"; fail=1; }

python3 - "$tmp/nan.npz" <<'PY' || exit 77
import sys
import numpy as np
r = np.random.default_rng(1)
d = {}
for l in (3, 31):
    for m in ("self_attn.q_proj", "mlp.down_proj"):
        a = r.standard_normal((64, 64)).astype(np.float32)
        if l == 31 and m == "mlp.down_proj":
            a[0, 0] = np.nan
        d[f"model.layers.{l}.{m}.weight"] = a
np.savez(sys.argv[1], **d)
PY
for c in 120 80; do
    COLUMNS=$c LC_ALL=C.UTF-8 "$FP4DIAG" sqnr -v -o "$tmp/r.json" "$tmp/nan.npz" 2>"$tmp/s" ||
        { echo "sqnr COLUMNS=$c exited $?"; cat "$tmp/s"; fail=1; }
    fits sqnr $c "$tmp/s" '['
    [ "$(grep -c '^  ! non-finite input: 1 NaN, 0 Inf$' "$tmp/s")" -eq 6 ] ||
        { echo "sqnr COLUMNS=$c: the flag not on its own lines"; cat "$tmp/s"; fail=1; }
    python3 - "$tmp/s" <<'PY' || { echo "sqnr COLUMNS=$c: rows not aligned"; cat "$tmp/s"; fail=1; }
import re, sys
L = open(sys.argv[1], encoding="utf-8").read().split("\n")
h = next(i for i, l in enumerate(L) if l.startswith("tensor "))
ends = lambda l: [m.end() for m in re.finditer(r"\S+", l)]
want = ends(L[h])[2:]  # the number columns
for l in L[h + 1:]:
    if not l:
        break
    if l.startswith("  "):
        continue
    if ends(l)[-len(want):] != want:
        print("not aligned:", repr(l)); sys.exit(1)
PY
done
exit $fail
