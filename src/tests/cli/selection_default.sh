#!/bin/sh
# selection_default.sh — the analysis commands take, by default, the floating-point tensors of
# rank >= 2: rank 0/1, integer, string and compound datasets are listed in `skipped` with their
# reason (not pooled, not errors: exit 0); the pooled numbers equal a run naming the rank-2
# tensors exactly; a tensor named exactly runs whatever its rank; --all-tensors brings back
# every numeric tensor (non-numeric ones are errors again); --exclude GLOB (repeatable) takes
# tensors out of any selection (a run left with nothing exits 3). Terminal first: on a terminal with no -o the table goes to
# stdout with one line on how to get the JSON; --json forces JSON (-q: tty_quiet.sh).
set -u
F=testdata/gpt_ckpt_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "no python3 h5py/numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
q() { python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = [x["name"] for x in r["tensors"]]
sk = {x["name"]: x["reason"] for x in r["skipped"]}
ok = eval(sys.argv[2])
if not ok:
    print("tensors", t, "skipped", sk, "errors", r["errors"])
    sys.exit(1)
PY
}
"$FP4DIAG" sqnr "$F" -q -o "$tmp/d.json" || fail "default run exit $?"
q "$tmp/d.json" 'len(t) == 5 and all(x.endswith("/weight") for x in t) and len(sk) == 18' ||
    fail "default selection"
q "$tmp/d.json" 'sk["/blocks/0/fc1/bias"] == "rank 1" and r["config"]["all_tensors"] is False' ||
    fail "skipped reason"
names=$(python3 -c "import json; print(' '.join(x['name'] for x in json.load(open('$tmp/d.json'))['tensors']))")
# shellcheck disable=SC2086
"$FP4DIAG" sqnr "$F" $names -q -o "$tmp/named.json" || fail "named run"
python3 - "$tmp/d.json" "$tmp/named.json" <<'PY' || fail "pooled numbers differ from the named run"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["summary"] == b["summary"], "summary"
PY
"$FP4DIAG" sqnr "$F" /blocks/0/fc1/bias /blocks/0/qkv -q -o "$tmp/x.json" || fail "exact"
q "$tmp/x.json" 't == ["/blocks/0/fc1/bias", "/blocks/0/qkv/weight"] and list(sk) == ["/blocks/0/qkv/bias"]' ||
    fail "a tensor named exactly runs whatever its rank; a group keeps the default"
"$FP4DIAG" sqnr "$F" --all-tensors -q -o "$tmp/a.json" || fail "--all-tensors"
q "$tmp/a.json" 'len(t) == 23 and not sk' || fail "--all-tensors takes every tensor"
"$FP4DIAG" bias "$F" --exclude '/blocks/0/fc*' --exclude '/blocks/*/proj/weight' -q -o "$tmp/e.json" ||
    fail "--exclude"
q "$tmp/e.json" 't == ["/blocks/0/qkv/weight"] and sk["/blocks/0/fc1/weight"] == "excluded by --exclude /blocks/0/fc*" and r["config"]["exclude"] == ["/blocks/0/fc*", "/blocks/*/proj/weight"]' ||
    fail "--exclude removes its matches"
"$FP4DIAG" sqnr "$F" /blocks/0/fc1/bias /blocks/0/qkv/weight --exclude '/blocks/0/*/bias' -q -o "$tmp/e2.json" || fail "exclude exact"
q "$tmp/e2.json" 't == ["/blocks/0/qkv/weight"] and list(sk) == ["/blocks/0/fc1/bias"]' || fail "--exclude beats an exact name"
# excluded alone, nothing is left: exit 3, no report (empty_runs.sh)
rm -f "$tmp/e3.json"
"$FP4DIAG" sqnr "$F" /blocks/0/fc1/bias --exclude '/blocks/0/*/bias' -q -o "$tmp/e3.json" 2>/dev/null
[ $? -eq 3 ] && [ ! -e "$tmp/e3.json" ] || fail "a run left with nothing to analyse exits 3"

# integers, strings, compounds, a scalar: skipped by default, not errors
python3 - "$tmp/m.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["w"] = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)
    f["step"] = np.int64(1000)
    f["q8"] = np.ones((32, 64), dtype=np.int8)
    f["lr"] = np.float32(1e-3)
    f["name"] = "run-7"
    f["pair"] = np.zeros(4, dtype=[("a", "<i4"), ("b", "<f4")])
PY
"$FP4DIAG" sqnr "$tmp/m.h5" -q -o "$tmp/m.json" || fail "mixed file: exit $?, want 0"
q "$tmp/m.json" 't == ["/w"] and sk["/q8"] == "integer (i8)" and sk["/step"] == "integer (i64)" and sk["/lr"] == "rank 0 (scalar)" and sk["/name"].startswith("not numeric") and sk["/pair"].startswith("not numeric") and not r["errors"]' ||
    fail "mixed file skipped list"
"$FP4DIAG" sqnr "$tmp/m.h5" --all-tensors -q -o "$tmp/m2.json" 2>/dev/null
[ $? -eq 3 ] || fail "--all-tensors: a string dataset is an error again"
q "$tmp/m2.json" 'set(t) == {"/w", "/step", "/q8", "/lr"} and len(r["errors"]) == 2' || fail "--all-tensors list"
python3 -c 'import jsonschema' 2>/dev/null &&
    { python3 scripts/check_golden.py --schema schema/report.schema.json "$tmp/m.json" "$tmp/m.json" ||
      fail "schema"; }

# terminal first (a pseudo-terminal on stdout)
tty_run() {
    python3 - "$FP4DIAG" "$@" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(st))
PY
}
tty_run sqnr "$F" /blocks/0/qkv/weight >"$tmp/tty" || fail "tty run"
grep -q "SQNR_dB" "$tmp/tty" || { cat "$tmp/tty"; fail "no table on a terminal"; }
grep -q '"schema"' "$tmp/tty" && fail "JSON on a terminal without --json"
grep -q -- "--json" "$tmp/tty" || fail "no line saying how to get the JSON"
tty_run sqnr "$F" /blocks/0/qkv/weight --json >"$tmp/tty2" || fail "tty --json"
grep -q '"schema"' "$tmp/tty2" || fail "--json: no JSON on the terminal"
tty_run gemm testdata/gpt_gemm_small.h5 /qkv >"$tmp/tty3" || fail "tty gemm"
grep -q '"schema"' "$tmp/tty3" && fail "gemm: JSON on a terminal"
grep -q "fprop" "$tmp/tty3" || fail "gemm: no table on a terminal"
"$FP4DIAG" sqnr "$F" /blocks/0/qkv/weight | python3 -m json.tool >/dev/null || fail "pipe: JSON"
exit 0
