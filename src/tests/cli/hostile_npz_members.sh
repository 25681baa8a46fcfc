#!/bin/sh
# hostile_npz_members.sh — .npz members that cannot be read, and a safetensors tensor of rank 9
# (issue 26): each is an errors entry with its reason under the default selection, never
# skipped as "not numeric ()": a stored member failing its CRC-32 (numpy refuses it; it was
# analysed), encrypted, bzip2 and lzma members, a corrupt deflate stream, a bad .npy header,
# a header whose size contradicts the member's; the good member is still reported (exit 3).
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
python3 -c 'import numpy' 2>/dev/null || skip "python3 with numpy not found"
python3 - "$tmp" <<'PY' || fail "cannot write the inputs"
import io, json, os, struct, sys, zipfile, zlib
import numpy as np
d = sys.argv[1]
def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
good = np.linspace(-1, 1, 64, dtype="<f4").reshape(4, 16)
members = [("good.npy", npy(good), zipfile.ZIP_STORED),
           ("crc.npy", npy(good), zipfile.ZIP_STORED),
           ("enc.npy", npy(good), zipfile.ZIP_STORED),
           ("bz.npy", npy(good), zipfile.ZIP_STORED),
           ("xz.npy", npy(good), zipfile.ZIP_STORED),
           ("badhdr.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': 'zz'}\n" + b"\0" * 64, zipfile.ZIP_STORED),
           ("short.npy", npy(good)[:-32], zipfile.ZIP_STORED),
           ("inflate.npy", npy(good), zipfile.ZIP_DEFLATED)]
path = os.path.join(d, "m.npz")
with zipfile.ZipFile(path, "w") as z:
    for name, data, how in members:
        z.writestr(zipfile.ZipInfo(name), data, compress_type=how)
b = bytearray(open(path, "rb").read())
with zipfile.ZipFile(path) as z:
    info = {i.filename: i for i in z.infolist()}
cd = b.find(b"PK\x01\x02")
central = {}
p = cd
while b[p:p + 4] == b"PK\x01\x02":
    nlen, xlen, clen = struct.unpack_from("<HHH", b, p + 28)
    central[bytes(b[p + 46:p + 46 + nlen]).decode()] = p
    p += 46 + nlen + xlen + clen
def data_at(name):
    lh = info[name].header_offset
    nlen, xlen = struct.unpack_from("<HH", b, lh + 26)
    return lh + 30 + nlen + xlen
b[data_at("crc.npy") + 200] ^= 0x55                      # a data byte: CRC-32 fails
for name, flag, method in (("enc.npy", 1, None), ("bz.npy", 0, 12), ("xz.npy", 0, 14)):
    for off, fo, mo in ((info[name].header_offset, 6, 8), (central[name], 8, 10)):
        if flag: b[off + fo] |= flag
        if method: struct.pack_into("<H", b, off + mo, method)
i = data_at("inflate.npy")                               # a corrupt deflate stream
for k in range(8): b[i + 4 + k] ^= 0xA5
open(path, "wb").write(bytes(b))
# safetensors: an F32 tensor of rank 9 beside a good one
vals = good.tobytes()
hdr = {"w": {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]},
       "r9": {"dtype": "F32", "shape": [1] * 8 + [4], "data_offsets": [256, 272]}}
h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
open(os.path.join(d, "r9.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + vals + vals[:16])
PY
python3 -c 'import numpy as np, sys
z = np.load(sys.argv[1])
try:
    z["crc"]; print("numpy read crc.npy"); sys.exit(1)
except Exception: pass' "$tmp/m.npz" || fail "numpy reads the corrupt stored member: the fixture is wrong"

timeout 120 "$FP4DIAG" sqnr "$tmp/m.npz" -q -o "$tmp/r.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || fail "m.npz: exit $rc, want 3"
python3 - "$tmp/r.json" <<'PY' || fail "m.npz: errors entries"
import json, sys
r = json.load(open(sys.argv[1]))
names = [t["name"] for t in r["tensors"]]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
skipped = {s["tensor"] if isinstance(s, dict) and "tensor" in s else str(s) for s in r.get("skipped", [])}
assert names == ["good"], names
want = {"crc": "CRC-32", "enc": "encrypted", "bz": "method 12", "xz": "method 14",
        "inflate": "corrupt", "badhdr": "", "short": ""}
for n, w in want.items():
    assert n in errs, (n, "not an errors entry", errs, r.get("skipped"))
    assert w in errs[n], (n, errs[n])
    assert "not numeric" not in errs[n], (n, errs[n])
assert not any("not numeric ()" in json.dumps(s) for s in r.get("skipped", [])), r.get("skipped")
PY
timeout 120 "$FP4DIAG" sqnr "$tmp/r9.safetensors" -q -o "$tmp/r9.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || fail "r9.safetensors: exit $rc, want 3"
python3 - "$tmp/r9.json" <<'PY' || fail "r9.safetensors: the rank-9 tensor is not an errors entry with its reason"
import json, sys
r = json.load(open(sys.argv[1]))
assert [t["name"] for t in r["tensors"]] == ["w"], r["tensors"]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
assert "rank 9" in errs.get("r9", ""), (errs, r.get("skipped"))
PY
# ls still lists every member
timeout 60 "$FP4DIAG" ls "$tmp/m.npz" >"$tmp/out" 2>"$tmp/err" || fail "ls m.npz: exit $?"
exit 0
