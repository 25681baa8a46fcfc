#!/bin/sh
# audit_flushed.sh — the audit table's flushed share (issue 29): per tensor, the source's non-zero
# values the export stores as ±0 over those values, equal to an independent count from the bf16
# source and the writer's own decodes (testdata/quantized), and the pooled line over all; with 4
# or more tensors the rows say they are ranked by the keep score; -v and -vv are accepted.
. src/tests/cli/lib/quantized.sh
for fx in modelopt_nvfp4 ct_mxfp4; do
    "$FP4DIAG" audit "$Q/source" "$Q/$fx" -v >"$tmp/$fx.txt" || fail "audit -v $fx exited $?"
    python3 - "$tmp/$fx.txt" "$Q/source/model.safetensors" "$Q/expected/$fx.safetensors" <<'PY' || { cat "$tmp/$fx.txt"; fail "flushed share of $fx"; }
import sys
import numpy as np
from st_load import load
lines = open(sys.argv[1]).read().splitlines()
src = load(sys.argv[2]); dec = load(sys.argv[3])
head = lines[0].split()
assert head[:6] == ["tensor", "format/producer", "export", "dB", "alpha", "flushed%"], head
F = N = 0
for name in dec:
    x, q = src[name], dec[name]
    nz = x != 0
    f, n = int(np.count_nonzero(nz & (q == 0))), int(np.count_nonzero(nz))
    F += f; N += n
    row = [l for l in lines if l.startswith(name + " ")]
    assert len(row) == 1, (name, row)
    assert row[0].split()[5] == "%.4f" % (100.0 * f / n), (row[0], f, n)
pooled = [l for l in lines if l.startswith("(pooled, ")][0].split()
assert pooled[5] == "%.4f" % (100.0 * F / N), (pooled, F, N)
want = "most outlying first" if len(dec) >= 4 else "lowest export SQNR first"
assert any(l.startswith("flushed%: non-zero source values the export stores as +-0; rows: " + want)
           for l in lines), lines[-6:]
PY
done
"$FP4DIAG" audit "$Q/source" "$Q/modelopt_nvfp4" -vv -q >/dev/null || fail "audit -vv -q exited $?"
exit 0
