#!/bin/sh
# hostile_hf.sh — hostile safetensors, index and .npy/.npz files: each gets a one-line error
# naming the file and what is wrong, exit 3, no report, no crash (run under ASan by
# check-san, valgrind by check-valgrind); a bad tensor type is an errors entry and the other
# tensors still run.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY' || exit 1
import json, os, struct, sys, zipfile
d = sys.argv[1]
def st(name, header, data=b"", hlen=None):
    h = header.encode() if isinstance(header, str) else header
    open(os.path.join(d, name), "wb").write(struct.pack("<Q", len(h) if hlen is None else hlen) + h + data)
T = lambda dt, shape, b, e: {"dtype": dt, "shape": shape, "data_offsets": [b, e]}
st("hsize63.safetensors", '{"a":' + json.dumps(T("F32", [1], 0, 4)) + "}", b"\0" * 4, hlen=1 << 63)
st("hpastend.safetensors", '{"a":' + json.dumps(T("F32", [1], 0, 4)) + "}", b"\0" * 4, hlen=4000)
st("notjson.safetensors", "{this is not json}  ")
st("notobject.safetensors", "[1, 2, 3]")
st("overlap.safetensors", json.dumps({"a": T("F32", [2], 0, 8), "b": T("F32", [2], 4, 12)}), b"\0" * 12)
st("oob.safetensors", json.dumps({"a": T("F32", [4], 0, 16)}), b"\0" * 8)
st("shapeoverflow.safetensors", json.dumps({"a": T("F32", [1 << 32, 1 << 32, 16], 0, 4)}), b"\0" * 4)
st("sizemismatch.safetensors", json.dumps({"a": T("F32", [3], 0, 8)}), b"\0" * 8)
st("truncated.safetensors", json.dumps({"a": T("F32", [2], 0, 8), "b": T("F32", [2], 8, 16)}), b"\0" * 12)
st("duplicate.safetensors", '{"a":%s,"a":%s}' % (json.dumps(T("F32", [1], 0, 4)), json.dumps(T("F32", [1], 4, 8))), b"\0" * 8)
st("notutf8.safetensors", b'{"a\xff\xfe":' + json.dumps(T("F32", [1], 0, 4)).encode() + b"}", b"\0" * 4)
st("nul.safetensors", '{"a\\u0000b":' + json.dumps(T("F32", [1], 0, 4)) + "}", b"\0" * 4)
st("gap.safetensors", json.dumps({"a": T("F32", [1], 0, 4), "b": T("F32", [1], 8, 12)}), b"\0" * 12)
st("badmeta.safetensors", json.dumps({"__metadata__": {"k": 1}}))
# a shard cut short: its cut tensor an errors entry, the others (and the other shard) read
os.makedirs(os.path.join(d, "cutshard"))
w = struct.pack("<64f", *[i / 32 - 1 for i in range(64)])
st("cutshard/s1.safetensors", json.dumps({"x": T("F32", [64], 0, 256)}), w)
st("cutshard/s2.safetensors", json.dumps({"y": T("F32", [64], 0, 256), "z": T("F32", [64], 256, 512)}), w + w[:-1])
json.dump({"weight_map": {"x": "s1.safetensors", "y": "s2.safetensors", "z": "s2.safetensors"}},
          open(os.path.join(d, "cutshard/model.safetensors.index.json"), "w"))
# a shard cut inside its header (5 bytes; 40 bytes, the JSON cut): the tensors the index gives
# it are errors entries naming it, the other shard is read
for cut_at in (5, 40):
    c = os.path.join(d, "cuthead%d" % cut_at)
    os.makedirs(c)
    st("cuthead%d/s1.safetensors" % cut_at, json.dumps({"x": T("F32", [64], 0, 256)}), w)
    st("cuthead%d/s2.safetensors" % cut_at, json.dumps({"y": T("F32", [64], 0, 256), "z": T("F32", [64], 256, 512)}), w + w)
    b = open(os.path.join(c, "s2.safetensors"), "rb").read()
    open(os.path.join(c, "s2.safetensors"), "wb").write(b[:cut_at])
    json.dump({"weight_map": {"x": "s1.safetensors", "y": "s2.safetensors", "z": "s2.safetensors"}},
              open(os.path.join(c, "model.safetensors.index.json"), "w"))
    # the same two files in a directory without an index: s2's tensors cannot be named, it is
    # one errors entry "[s2.safetensors]", s1 is read
    c2 = os.path.join(d, "cutdir%d" % cut_at)
    os.makedirs(c2)
    for n in ("s1.safetensors", "s2.safetensors"):
        open(os.path.join(c2, n), "wb").write(open(os.path.join(c, n), "rb").read())
# an index naming a shard that is missing: only the tensors it maps there fail
os.makedirs(os.path.join(d, "missshard"))
st("missshard/s1.safetensors", json.dumps({"x": T("F32", [64], 0, 256)}), w)
json.dump({"weight_map": {"x": "s1.safetensors", "y": "s2.safetensors", "z": "s2.safetensors"}},
          open(os.path.join(d, "missshard/model.safetensors.index.json"), "w"))
json.dump({"weight_map": {"w": "self.safetensors.index.json"}}, open(os.path.join(d, "self.safetensors.index.json"), "w"))
# cut past any size: [8, 2^64 - 1] of an unknown type after 8 bytes of data
st("hugecut.safetensors", json.dumps({"a": T("F32", [2], 0, 8), "u": T("X9", [1], 8, (1 << 64) - 1)}), b"\0" * 8)
os.makedirs(os.path.join(d, "missing"))
json.dump({"weight_map": {"a": "model-00001-of-00002.safetensors"}}, open(os.path.join(d, "missing/model.safetensors.index.json"), "w"))
os.makedirs(os.path.join(d, "notheld"))
st("notheld/s1.safetensors", json.dumps({"a": T("F32", [1], 0, 4)}), b"\0" * 4)
json.dump({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}}, open(os.path.join(d, "notheld/model.safetensors.index.json"), "w"))
os.makedirs(os.path.join(d, "escape"))
json.dump({"weight_map": {"a": "../oob.safetensors"}}, open(os.path.join(d, "escape/model.safetensors.index.json"), "w"))
# types fp4diag does not read: errors entries, the F32 tensor still runs
import numpy as np
st("types.safetensors", json.dumps({"w": T("F32", [32], 0, 128), "m": T("BOOL", [4], 128, 132),
   "s": T("F8_E8M0", [4], 132, 136), "p": T("F4", [8], 136, 140), "u": T("X7", [2], 140, 144)}),
   np.linspace(-1, 1, 32, dtype="<f4").tobytes() + b"\1" * 16)
# .npy / .npz
def npy(dict_text, data, ver=1):
    pre = 10 if ver == 1 else 12
    hl = ((pre + len(dict_text) + 1 + 63) // 64) * 64 - pre
    h = (dict_text + " " * (hl - len(dict_text) - 1) + "\n").encode()
    return b"\x93NUMPY" + bytes([ver, 0]) + (struct.pack("<H", hl) if ver == 1 else struct.pack("<I", hl)) + h + data
open(os.path.join(d, "trunc.npy"), "wb").write(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4), }", b"\0" * 60))
open(os.path.join(d, "baddict.npy"), "wb").write(npy("{'descr': '<f4', 'shape': (4,), }", b"\0" * 16))
with zipfile.ZipFile(os.path.join(d, "mixed.npz"), "w") as z:
    z.writestr("good.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (32,), }", np.linspace(-1, 1, 32, dtype="<f4").tobytes()))
    z.writestr("bf16.npy", npy("{'descr': '<V2', 'fortran_order': False, 'shape': (4,), }", b"\0" * 8))
    z.writestr("obj.npy", npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\x80\x04N."))
open(os.path.join(d, "cut.npz"), "wb").write(open(os.path.join(d, "mixed.npz"), "rb").read()[:-30])
PY
fail=0
bad() { # FILE WANT: exit 3, one line on stderr naming FILE and holding WANT, nothing on stdout
    f=$tmp/$1
    "$FP4DIAG" sqnr "$f" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 3 ] || [ -s "$tmp/out" ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] ||
        ! grep -q "$2" "$tmp/err" || ! grep -qF "$1" "$tmp/err"; then
        echo "$1: exit $rc, wanted 3 and '$2':"; cat "$tmp/err"; head -c 300 "$tmp/out"; fail=1
    fi
}
bad hsize63.safetensors "exceeds the 100 MB limit"
bad hpastend.safetensors "runs past the end of the file"
bad notjson.safetensors "not valid JSON"
bad notobject.safetensors "not a JSON object"
bad overlap.safetensors "overlap"
bad shapeoverflow.safetensors "overflows 64 bits"
bad sizemismatch.safetensors "hold 8 bytes; 3 elements of F32 take 12"
bad duplicate.safetensors "appears twice"
bad notutf8.safetensors "not valid UTF-8"
bad nul.safetensors "NUL"
bad gap.safetensors "belong to no tensor"
bad badmeta.safetensors "not a string"
bad self.safetensors.index.json "self.safetensors.index.json: weight_map names the index itself as a shard"
bad notheld/model.safetensors.index.json "b: listed in .*s1.safetensors, which does not hold it"
bad escape/model.safetensors.index.json "not a file beside the index"
bad trunc.npy "data truncated"
bad baddict.npy "lacks 'fortran_order'"
bad cut.npz "end-of-central-directory"
# a file cut short inside its data section (or a tensor past its end): the tensors whose bytes
# are there are reported, each cut one is an errors entry naming its file and offsets, exit 3;
# a cut tensor not selected stops nothing (exit 0)
cut() { # FILE ARGS... -- WANT_NAMES WANT_ERRORS (each a comma list)
    f=$1; shift; a=""
    while [ "$1" != "--" ]; do a="$a $1"; shift; done
    "$FP4DIAG" sqnr $a "$tmp/$f" -q -o "$tmp/r.json" 2>"$tmp/err"
    rc=$?
    python3 - "$tmp/r.json" "$2" "$3" "$rc" "$f" <<'PY' || { echo "$f$a: exit $rc"; cat "$tmp/err"; fail=1; }
import json, sys
r = json.load(open(sys.argv[1]))
names = [t["name"] for t in r["tensors"]]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
want_n = [x for x in sys.argv[2].split(",") if x]
want_e = [x for x in sys.argv[3].split(",") if x]
assert names == want_n, names
assert sorted(errs) == want_e, errs
for m in errs.values():
    assert "past the file's end (truncated to" in m, m
    assert sys.argv[5].split("/")[0] in m, m
    if sys.argv[5].startswith("cutshard"):
        assert "s2.safetensors: data_offsets [256, 512]" in m, m
assert int(sys.argv[4]) == (3 if want_e else 0), sys.argv[4]
PY
}
cut truncated.safetensors --all-tensors -- a b
cut oob.safetensors --all-tensors -- "" a
cut cutshard --all-tensors -- x,y z
cut cutshard/model.safetensors.index.json --all-tensors -- x,y z
cut cutshard/model.safetensors.index.json --all-tensors --exclude z -- x,y ""
cut hugecut.safetensors --all-tensors -- a u
# a shard cut inside its header: x analysed (equal to the same tensor read alone), y and z
# errors entries naming the shard and why, exit 3; ls lists all three, exit 0
"$FP4DIAG" sqnr --all-tensors "$tmp/cutshard/s1.safetensors" -q -o "$tmp/x.json" 2>"$tmp/err" || { cat "$tmp/err"; fail=1; }
for c in cuthead5 cuthead40 cuthead5/model.safetensors.index.json; do
    rm -f "$tmp/r.json"
    "$FP4DIAG" sqnr --all-tensors "$tmp/$c" -q -o "$tmp/r.json" 2>"$tmp/err"
    rc=$?
    python3 - "$tmp/r.json" "$tmp/x.json" "$c" <<'PY' || { echo "$c: exit $rc"; cat "$tmp/err"; fail=1; }
import json, sys
r, x = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [t["name"] for t in r["tensors"]] == ["x"], r["tensors"]
assert r["tensors"][0]["results"] == x["tensors"][0]["results"]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
assert sorted(errs) == ["y", "z"], errs
want = ("s2.safetensors: 5 bytes: too short for a safetensors header (truncated)"
        if "cuthead5" in sys.argv[3] else
        "s2.safetensors: header size 130 runs past the end of the file (40 bytes): truncated")
for n, m in errs.items():
    assert m.endswith("/" + sys.argv[3] + ": " + n + ": " + want), m
PY
    [ $rc -eq 3 ] || { echo "$c: exit $rc, wanted 3"; fail=1; }
    "$FP4DIAG" ls --json "$tmp/$c" >"$tmp/ls.json" 2>"$tmp/err" || { echo "$c: ls"; cat "$tmp/err"; fail=1; }
    python3 - "$tmp/ls.json" "$PWD/schema/ls.schema.json" <<'PY' || { echo "$c: ls --json"; fail=1; }
import json, sys
r = json.load(open(sys.argv[1]))
ds = {t["name"]: t for t in r["datasets"]}
assert sorted(ds) == ["x", "y", "z"], ds
assert ds["x"]["problem"] is None, ds["x"]
for n in "yz":
    t = ds[n]
    assert t["shape"] is None and t["dtype"] == "unknown" and t["logical_bytes"] is None, t
    assert t["stored_bytes"] == 0 and t["offset"] is None and t["shard"] == "s2.safetensors", t
    assert t["problem"].startswith("s2.safetensors: ") and "truncated" in t["problem"], t
try:
    import jsonschema
except ImportError:
    sys.exit(0)
jsonschema.Draft202012Validator(json.load(open(sys.argv[2]))).validate(r)
PY
done
"$FP4DIAG" ls "$tmp/cuthead5" >"$tmp/out" 2>"$tmp/err" && grep -q '^y  *? *unknown ' "$tmp/out" ||
    { echo "cuthead5: ls table"; cat "$tmp/out" "$tmp/err"; fail=1; }
# a single file cut inside its header is refused whole: nothing names its tensors
bad cuthead40/s2.safetensors "header size 130 runs past the end of the file (40 bytes)"
# a directory without an index holding such a file: that file one errors entry naming it
# ("[s2.safetensors]": its tensors' names are unknown), x analysed as read alone, exit 3; an
# index naming a missing shard: each tensor it maps there an errors entry naming the tensor and
# the shard, x analysed, exit 3; ls lists them (exit 0), its JSON the schema's
for c in cutdir5 cutdir40 missshard missshard/model.safetensors.index.json missing; do
    rm -f "$tmp/r.json"
    "$FP4DIAG" sqnr --all-tensors "$tmp/$c" -q -o "$tmp/r.json" 2>"$tmp/err"
    rc=$?
    python3 - "$tmp/r.json" "$tmp/x.json" "$c" <<'PY' || { echo "$c: exit $rc"; cat "$tmp/err"; fail=1; }
import json, sys
r, x, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
if c == "missing":  # its only shard missing: its only tensor an errors entry
    assert r["tensors"] == [] and list(errs) == ["a"], (r["tensors"], errs)
    assert errs["a"].endswith("/missing: a: model-00001-of-00002.safetensors: no such file "
                              "(a shard the index names)"), errs
    sys.exit(0)
assert [t["name"] for t in r["tensors"]] == ["x"], r["tensors"]
assert r["tensors"][0]["results"] == x["tensors"][0]["results"]
if c.startswith("miss"):
    assert sorted(errs) == ["y", "z"], errs
    for n, m in errs.items():
        assert m.endswith("/" + c + ": " + n + ": s2.safetensors: no such file (a shard the "
                          "index names)"), m
else:
    assert list(errs) == ["[s2.safetensors]"], errs
    why = ("5 bytes: too short for a safetensors header (truncated)" if c == "cutdir5" else
           "header size 130 runs past the end of the file (40 bytes): truncated")
    assert errs["[s2.safetensors]"].endswith("/%s: [s2.safetensors]: s2.safetensors: %s: none "
                                             "of its tensors can be named" % (c, why)), errs
PY
    [ $rc -eq 3 ] || { echo "$c: exit $rc, wanted 3"; fail=1; }
    "$FP4DIAG" ls --json "$tmp/$c" >"$tmp/ls.json" 2>"$tmp/err" || { echo "$c: ls"; cat "$tmp/err"; fail=1; }
    python3 - "$tmp/ls.json" "$PWD/schema/ls.schema.json" "$c" <<'PY' || { echo "$c: ls --json"; fail=1; }
import json, sys
r, c = json.load(open(sys.argv[1])), sys.argv[3]
ds = {t["name"]: t for t in r["datasets"]}
bad = ["a"] if c == "missing" else ["y", "z"] if c.startswith("miss") else ["[s2.safetensors]"]
assert sorted(ds) == sorted(bad + ([] if c == "missing" else ["x"])), ds
for n in bad:
    t = ds[n]
    assert t["shape"] is None and t["dtype"] == "unknown" and t["logical_bytes"] is None, t
    assert t["stored_bytes"] == 0 and t["offset"] is None, t
    assert t["problem"].startswith(t["shard"] + ": "), t
try:
    import jsonschema
except ImportError:
    sys.exit(0)
jsonschema.Draft202012Validator(json.load(open(sys.argv[2]))).validate(r)
PY
done
# ls of it: its sizes null or what the file holds (never negative), the schema's
"$FP4DIAG" ls --json "$tmp/hugecut.safetensors" >"$tmp/ls.json" 2>"$tmp/err" || { cat "$tmp/err"; fail=1; }
python3 - "$tmp/ls.json" "$PWD/schema/ls.schema.json" <<'PY' || { echo "hugecut: ls"; fail=1; }
import json, sys
r = json.load(open(sys.argv[1]))
u = [t for t in r["datasets"] if t["name"] == "u"][0]
assert u["logical_bytes"] is None and u["stored_bytes"] == 0 and u["offset"] > 0, u
assert "past the file's end" in u["problem"], u
try:
    import jsonschema
except ImportError:
    sys.exit(0)
jsonschema.Draft202012Validator(json.load(open(sys.argv[2]))).validate(r)
PY
# unreadable types (selected: --all-tensors): errors entries naming tensor and type, the
# readable tensor reported, exit 3
for f in types.safetensors mixed.npz; do
    "$FP4DIAG" sqnr --all-tensors "$tmp/$f" -q -o "$tmp/r.json" 2>"$tmp/err"
    rc=$?
    python3 - "$tmp/r.json" "$f" <<'PY' || { echo "$f: exit $rc"; cat "$tmp/err"; fail=1; }
import json, sys
r = json.load(open(sys.argv[1]))
names = [t["name"] for t in r["tensors"]]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
if sys.argv[2] == "types.safetensors":
    assert names == ["w"], names
    for n, want in (("m", "BOOL"), ("s", "F8_E8M0"), ("p", "F4"), ("u", "X7")):
        assert want in errs.get(n, ""), (n, errs)
else:
    assert names == ["good"], names
    assert "ml_dtypes" in errs.get("bf16", ""), errs
    assert "object array" in errs.get("obj", ""), errs
PY
    [ $rc -eq 3 ] || { echo "$f: exit $rc, wanted 3"; fail=1; }
done
exit $fail
