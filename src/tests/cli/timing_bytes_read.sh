#!/bin/sh
# timing_bytes_read.sh — timing.bytes_read counts only values actually read (SPEC §9): a
# safetensors file whose last tensor c is cut short (1 byte, 10 bytes, all of c) reports the
# fp32 bytes of a and b alone, never the whole file's; the whole file reports all three; a
# tensor not selected counts nothing; bf16 values count 4 bytes each (fp32, as analysed).
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null | head -5; exit 1; }
python3 - "$tmp" <<'PY' || fail "generator"
import json, struct, sys
d = sys.argv[1]
def write(path, ts, cut=0):
    h, data = {}, b""
    for k, (dt, shape, b) in ts.items():
        h[k] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    hb = json.dumps(h).encode()
    hb += b" " * (-len(hb) % 8)
    full = struct.pack("<Q", len(hb)) + hb + data
    open(path, "wb").write(full[:len(full) - cut])
f32 = lambda n, s: struct.pack("<%df" % n, *[((i * 37 + s) % 101) / 50.0 - 1 for i in range(n)])
ts = {"a": ("F32", [2, 32], f32(64, 1)), "b": ("F32", [32], f32(32, 2)), "c": ("F32", [32], f32(32, 3))}
write(d + "/full.safetensors", ts)
for cut in (1, 10, 128):
    write(d + "/cut%d.safetensors" % cut, ts, cut)
bf = struct.pack("<128H", *[0x3f80 + (i % 64) for i in range(128)])  # bf16 words, finite
write(d + "/bf16.safetensors", {"w": ("BF16", [4, 32], bf)})
PY
# bytes FILE WANT ARGS...: sqnr's timing.bytes_read
bytes() {
    f=$1 want=$2
    shift 2
    "$FP4DIAG" sqnr "$tmp/$f" "$@" -q -o "$tmp/r.json" 2>"$tmp/err"
    rc=$?
    { [ $rc -eq 0 ] || [ $rc -eq 3 ]; } || fail "$f $*: exit $rc"
    got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["timing"]["bytes_read"])' "$tmp/r.json")
    [ "$got" = "$want" ] || fail "$f $*: bytes_read $got, wanted $want"
}
bytes full.safetensors 512 --all-tensors
for c in 1 10 128; do
    bytes cut$c.safetensors 384 --all-tensors
    bytes cut$c.safetensors 256 a c
done
bytes full.safetensors 256 a
bytes bf16.safetensors 512
exit 0
