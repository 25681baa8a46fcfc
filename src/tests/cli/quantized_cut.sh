#!/bin/sh
# quantized_cut.sh — a quantized export cut short (SPEC §10): a member of a quantized tensor
# (its packed codes, block scales or per-tensor scale) ending past the file's end makes that
# tensor's problem name the member and its byte range, as a cut plain tensor's does
# ("data_offsets [A, B] past the file's end (truncated to N data bytes)"): `ls` notes it, and
# `sqnr` and `audit` give it as the tensor's errors entry (never only "cannot be read"), the
# other tensors analysed, exit 3.
. "$(dirname "$0")/lib/quantized.sh"
# cut SRC DST MEMBER: SRC rewritten with MEMBER its last tensor, the file 2 bytes short
cut() {
    python3 - "$1" "$2" "$3" <<'PY' || fail "cutting $1"
import json, struct, sys
src, dst, name = sys.argv[1:4]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
meta = h.pop("__metadata__", None)
data = b[8 + n:]
order = sorted(h, key=lambda k: h[k]["data_offsets"][0])
order.remove(name)
order.append(name)
out, nh = b"", {} if meta is None else {"__metadata__": meta}
for k in order:
    s, e = h[k]["data_offsets"]
    nh[k] = dict(h[k], data_offsets=[len(out), len(out) + e - s])
    out += data[s:e]
hb = json.dumps(nh).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
full = struct.pack("<Q", len(hb)) + hb + out
open(dst, "wb").write(full[:-2])
PY
}
M=model.layers.0.self_attn.q_proj
for c in modelopt_nvfp4:weight_scale modelopt_nvfp4:weight_scale_2 modelopt_nvfp4:weight \
         ct_nvfp4:weight_global_scale ct_nvfp4:weight_packed; do
    fx=${c%%:*} m=$M.${c#*:}
    q=$M.weight
    d=$tmp/$fx.${c#*:}
    mkdir "$d" || exit 1
    for f in "$Q/$fx"/*.json; do cp "$f" "$d/"; done
    cut "$Q/$fx/model.safetensors" "$d/model.safetensors" "$m"
    # what the cut member's own ls row says: its problem, as a plain tensor's
    want=$(python3 - "$d/model.safetensors" "$m" <<'PY'
import json, os, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
s, e = json.loads(b[8:8 + n])[sys.argv[2]]["data_offsets"]
print("data_offsets [%d, %d] past the file's end (truncated to %d data bytes)" % (s, e, len(b) - 8 - n))
PY
)
    [ "$m" = "$q" ] && who="" || who="$m: "
    "$FP4DIAG" ls --json "$d" >"$tmp/ls.json" 2>"$tmp/err" || fail "$c: ls: exit $?"
    python3 - "$tmp/ls.json" "$q" "$who" "$want" <<'PY' || fail "$c: ls --json"
import json, sys
r = json.load(open(sys.argv[1]))
row = [t for t in r["datasets"] if t["name"] == sys.argv[2]][0]
assert row["quant"] is not None, row
assert row["problem"] is not None and row["problem"].startswith(sys.argv[3]), row["problem"]
assert row["problem"].endswith(sys.argv[4]), (row["problem"], sys.argv[4])
others = [t for t in r["datasets"] if t["quant"] and t["name"] != sys.argv[2]]
assert others and all(t["problem"] is None for t in others), others
PY
    "$FP4DIAG" ls "$d" >"$tmp/out" 2>"$tmp/err" || fail "$c: ls: exit $?"
    grep "^$q " "$tmp/out" | grep -qF "$want" || fail "$c: ls does not note '$want'"
    "$FP4DIAG" sqnr "$d" -q -o "$tmp/s.json" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 3 ] || fail "$c: sqnr: exit $rc, wanted 3"
    "$FP4DIAG" audit "$Q/source" "$d" -q -o "$tmp/a.json" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 3 ] || fail "$c: audit: exit $rc, wanted 3"
    python3 - "$tmp/s.json" "$tmp/a.json" "$q" "${who}model.safetensors: $want" <<'PY' || fail "$c: sqnr/audit errors"
import json, sys
for f in sys.argv[1:3]:
    r = json.load(open(f))
    errs = {e["tensor"]: e["message"] for e in r["errors"]}
    assert list(errs) == [sys.argv[3]], (f, errs)
    assert errs[sys.argv[3]].endswith(": " + sys.argv[3] + ": " + sys.argv[4]), (f, errs)
    # the others: audited (audit), summarised as already quantized (sqnr)
    done = r["tensors"] if f == sys.argv[2] else [t for t in r["skipped"] if t.get("quant")]
    assert len(done) == 3, (f, [t["name"] for t in done])
PY
done
exit 0
