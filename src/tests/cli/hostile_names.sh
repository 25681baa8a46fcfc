#!/bin/sh
# hostile_names.sh — dataset names that are not valid UTF-8 or hold control characters
# (scripts/make_hostile.py names.h5): every report and `ls --json` stays valid JSON (each
# invalid byte written as the text \xNN, and a "notes" entry says so), names on stderr and in
# the tables have their control characters escaped (no raw newline or ESC), error messages stay
# one line, scripts/plot_sqnr.py reads the report, `compare` shows the names it reads back from
# reports escaped; long error details keep their reason.
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
need_fixtures names.h5
f=$tmp/fx/names.h5
out=$tmp/out.d
mkdir "$out"

# valid_json FILE PYTHON-EXPR: strict UTF-8 JSON, and EXPR holds (r = the document).
valid_json() {
    python3 - "$1" "$2" <<'PY' || fail "$1: not valid UTF-8 JSON, or: $2"
import json, sys
raw = open(sys.argv[1], "rb").read()
r = json.loads(raw.decode("utf-8", "strict"))
ok = eval(sys.argv[2])
if not ok:
    print(json.dumps(r, ensure_ascii=True)[:2000])
    sys.exit(1)
PY
}
no_raw_controls() { # FILE: no ESC, no C1 0x9B, one line per message
    python3 - "$1" <<'PY' || fail "$1: raw control characters"
import sys
b = open(sys.argv[1], "rb").read()
assert b"\x1b" not in b and b"\xc2\x9b" not in b and b"\xff" not in b, b[:300]
PY
}

timeout 120 "$FP4DIAG" ls --json "$f" >"$tmp/ls.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 0 ] || fail "ls --json: exit $rc"
valid_json "$tmp/ls.json" 'len(r["datasets"]) == 6 and "/bad\\xFF\\xFEname" in [d["name"] for d in r["datasets"]] and "/nl\nname" in [d["name"] for d in r["datasets"]] and "/\u00fcn\u00efcode" in [d["name"] for d in r["datasets"]] and any("UTF-8" in n for n in r["notes"])'

timeout 120 "$FP4DIAG" ls "$f" >"$tmp/ls.txt" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 0 ] || fail "ls: exit $rc"
no_raw_controls "$tmp/ls.txt"
[ "$(wc -l <"$tmp/ls.txt")" -eq 7 ] || fail "ls: a name broke the table into more lines"
grep -qF '/nl\x0Aname' "$tmp/ls.txt" && grep -qF '/esc\x1B[31mred' "$tmp/ls.txt" ||
    fail "ls: names not shown escaped"

timeout 120 "$FP4DIAG" sqnr -v --all-tensors "$f" -o "$out/r.json" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || fail "sqnr: exit $rc, want 3 (one string dataset)"
[ "$(wc -l <"$tmp/err" )" -ge 1 ] || fail "sqnr: nothing on stderr"
no_raw_controls "$tmp/err"
grep -qF 'str\xFF\x0Ax' "$tmp/err" || fail "sqnr: the failed dataset's name is not escaped on stderr"
valid_json "$out/r.json" 'len(r["tensors"]) == 5 and len(r["errors"]) == 1 and "\n" not in r["errors"][0]["message"] and "/bad\\xFF\\xFEname" in [t["name"] for t in r["tensors"]] and r["notes"]'
json_ok "$out/r.json" || fail "sqnr report is not whole JSON"
if python3 -c 'import matplotlib' 2>/dev/null; then
    python3 scripts/plot_sqnr.py "$out/r.json" --out "$out/p.png" >"$tmp/plot" 2>&1 ||
        { cat "$tmp/plot"; fail "plot_sqnr.py died on the report"; }
fi

# compare reads those names back from reports: its table and its stderr lines show them
# escaped too (a name with ESC or a newline in a report is no terminal command, no extra line)
timeout 120 "$FP4DIAG" sqnr --all-tensors --format e2m1 --block 32 "$f" -o "$out/r2.json" \
    2>"$tmp/err"
timeout 120 "$FP4DIAG" compare "$out/r.json" "$out/r2.json" >"$tmp/cmp.txt" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 1 ] || fail "compare: exit $rc, want 1 (results missing from NEW)"
no_raw_controls "$tmp/cmp.txt"
no_raw_controls "$tmp/err"
grep -qF '/esc\x1B[31mred' "$tmp/cmp.txt" && grep -qF '/nl\x0Aname' "$tmp/err" ||
    fail "compare: names not shown escaped"
[ "$(grep -vc '^regression: \|^fp4diag compare: ' "$tmp/err")" -eq 0 ] ||
    fail "compare: a name broke a stderr line"

# A message longer than the detail buffer keeps its end (the reason).
long=$(python3 -c 'print("d" * 3000)')
run ls "$f" "/$long/$long"
[ "$rc" -eq 3 ] || fail "a 6000-character selector: exit $rc, want 3"
grep -q "no such dataset or group$" "$tmp/err" || fail "a 6000-character selector: the reason was cut"
exit 0
