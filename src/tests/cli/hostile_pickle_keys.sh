#!/bin/sh
# hostile_pickle_keys.sh — a PyTorch state dict whose dict keys cannot name a tensor (issue 26):
# a float, None or tuple key, an empty key, keys holding a NUL, a terminal escape or a lone
# surrogate, a key set twice in the pickle, "a.b" beside {"a": {"b": ...}}, dicts nested 40
# deep, and the same name in two files of a directory. Each is an errors entry with its reason
# (names escaped), the good tensors beside them are analysed, exit 3: never a crash, never a
# tensor left out silently, never the whole file refused.
. "$(dirname "$0")/lib/hostile.sh"
python3 -c 'import numpy' 2>/dev/null || skip "python3 with numpy not found"
python3 - "$tmp" <<'PY' || fail "cannot write the checkpoints"
import collections, os, struct, sys
sys.path.insert(0, "scripts")
import torch_writer as tw  # a torch.save archive, written without torch
out = sys.argv[1]
vals = struct.pack("<64f", *[(i % 7 - 3) * 0.25 for i in range(64)])
n = [0]
def t():
    n[0] += 1
    return tw.contiguous("FloatStorage", vals, (8, 8), str(n[0]))
d = collections.OrderedDict()
d["good.weight"] = t()
d[1.5] = t()
d[None] = t()
d[(1, 2)] = {"w": t()}
d[""] = t()
d["nul\0key"] = t()
d["esc\x1b[2Jkey"] = t()
d["sur\ud800key"] = t()
d["dupA"] = t()
d["dupB"] = t()
d["a.b"] = t()
d["a"] = {"b": t()}
deep = t()
for _ in range(40):
    deep = {"d": deep}
d["deep"] = deep
d["epoch"] = 3
d[2.5] = {"lr": 0.1}   # an odd key over no tensor: nothing lost, nothing listed
pk, seen = tw.pickle_bytes(d)
pk = pk.replace(b"dupB", b"dupA")   # the same key set twice
import zipfile
with zipfile.ZipFile(os.path.join(out, "odd.pt"), "w") as z:
    for name, data in [("archive/data.pkl", pk), ("archive/byteorder", "little")] + \
            [("archive/data/" + k, seen[k].data) for k in sorted(seen)]:
        z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
os.mkdir(os.path.join(out, "dir"))
n[0] = 0
tw.save(os.path.join(out, "dir", "a.bin"), collections.OrderedDict([("x", t()), ("shared", t())]))
tw.save(os.path.join(out, "dir", "b.bin"), collections.OrderedDict([("y", t()), ("shared", t())]))
PY
run sqnr --all-tensors -q -o "$tmp/r.json" "$tmp/odd.pt"
[ "$rc" -eq 3 ] || fail "odd.pt: exit $rc, want 3"
python3 - "$tmp/r.json" <<'PY' || fail "odd.pt: report"
import json, sys
r = json.load(open(sys.argv[1]))
got = [t["name"] for t in r["tensors"]]
assert got == ["good.weight"], got
errs = {e["tensor"]: e["message"] for e in r["errors"]}
want = {
    "[key 1: a float]": "its dict key is a float, not a tensor name",
    "[key 2: None]": "its dict key is None",
    "[key 3: a tuple]": "its dict key is a tuple",
    "[key 4: empty]": "its dict key is an empty string",
    "nul\\x00key": "control characters",
    "esc\\x1B[2Jkey": "control characters",
    "sur\\xED\\xA0\\x80key": "not valid UTF-8",
    "dupA": "the name appears 2 times in the pickle",
    "a.b": "the name appears 2 times in the pickle",
    ".".join(["deep"] + ["d"] * 32): "nested deeper than 32",
}
for k, w in want.items():
    assert w in errs.get(k, ""), (k, errs.get(k), sorted(errs))
assert len(errs) == len(want), sorted(errs)
assert not r.get("skipped"), r.get("skipped")
PY
# ls lists them with their reasons, exit 0; no raw escape reaches the terminal
run ls "$tmp/odd.pt"
[ "$rc" -eq 0 ] || fail "ls odd.pt: exit $rc"
grep -q "^dupA .*appears 2 times" "$tmp/out" || fail "ls odd.pt: no dupA line: $(cat "$tmp/out")"
if grep -q "$(printf '\033')" "$tmp/out" "$tmp/err"; then fail "ls odd.pt: a raw escape"; fi
# the same name in two files of a directory: one errors entry naming both, the rest analysed
run sqnr --all-tensors -q -o "$tmp/d.json" "$tmp/dir"
[ "$rc" -eq 3 ] || fail "dir: exit $rc, want 3"
python3 - "$tmp/d.json" <<'PY' || fail "dir: report"
import json, sys
r = json.load(open(sys.argv[1]))
assert sorted(t["name"] for t in r["tensors"]) == ["x", "y"], r["tensors"]
errs = {e["tensor"]: e["message"] for e in r["errors"]}
assert "the name appears in a.bin and b.bin" in errs.get("shared", ""), errs
assert len(errs) == 1, errs
PY
[ -n "${KEEP:-}" ] && cp -r "$tmp" "$KEEP"
exit 0
