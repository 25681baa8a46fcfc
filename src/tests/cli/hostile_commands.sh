#!/bin/sh
# hostile_commands.sh — the analysis commands (sqnr, bias, buckets, rht) on hostile inputs,
# against the documented CLI `fp4diag CMD FILE [DSETS] -o OUT` (SPEC §8, §9):
#  - NaN, Inf, denormal, all-zero tensors: exit 0, counted, no bare NaN/Infinity in the JSON;
#  - zero-sized and scalar datasets run; declared sizes overflowing 64 bits are error entries;
#  - one bad tensor (string, unavailable filter, compound) among good ones: an `errors` entry
#    each, the good tensors reported, exit 3 after the whole report is written, one stderr line;
#  - a missing dataset, a truncated or garbage file: exit 3, one line, no report, and an
#    existing -o FILE left untouched;
#  - an unwritable -o (/dev/full, a missing directory, a directory, stdout on /dev/full): exit
#    3, one line, no partial report; /dev/full is still a character device afterwards.
# Skips while `fp4diag sqnr` is not implemented yet.
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
need_fixtures
fx=$tmp/fx
out=$tmp/out.d
mkdir "$out"

# report_run WANT_RC CMD FILE ARGS...: run CMD with -o $out/r.json; check rc, JSON whole.
report_run() {
    want=$1; shift
    rm -f "$out/r.json"
    run "$@" -o "$out/r.json"
    [ "$rc" -eq "$want" ] || fail "$*: exit $rc, want $want"
    [ -f "$out/r.json" ] || fail "$*: no report written"
    json_ok "$out/r.json" || fail "$*: report is not whole JSON"
    no_temp "$out"
    if [ "$want" -eq 0 ]; then [ ! -s "$tmp/err" ] || fail "$*: stderr not empty on success"
    else [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: stderr is not one line"; fi
}

# check PYTHON-EXPR on the report (r = the report dict, t = {name: tensor}, e = {name: error}).
check() {
    python3 - "$out/r.json" "$1" <<'PY' || fail "report check failed: $1"
import json, sys
r = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in r["tensors"]}
e = {x["tensor"]: x for x in r["errors"]}
ok = eval(sys.argv[2])
if not ok:
    print("report:", json.dumps({"tensors": {k: v["results"][0] for k, v in t.items()}, "errors": r["errors"]})[:3000])
    sys.exit(1)
PY
}

cmds="sqnr bias buckets rht"
[ "$SLOW" = 1 ] && cmds="sqnr rht"
for cmd in $cmds; do
    is_command_ready "$cmd" || { echo "note: $cmd not implemented yet"; continue; }
    # Non-finite, denormal and zero values.
    report_run 0 "$cmd" "$fx/values.h5" --all-tensors
    check 'all(t[n]["results"] for n in ("/nan", "/inf", "/denormal", "/zeros", "/mixed"))'
    check 'all(x["counts"]["nan"] == 128 for x in t["/nan"]["results"])'
    check 'all(x["counts"]["inf"] == 2 and x["counts"]["nonfinite_blocks"] == 2 for x in t["/inf"]["results"])'
    check 'all(x["counts"]["nan"] == 1 and x["counts"]["inf"] == 1 for x in t["/mixed"]["results"])'
    check 'all(x["sqnr_db"] is None and x["sqnr_status"] == "zero_signal" for x in t["/zeros"]["results"])'
    check 'all(x["counts"]["zero_blocks"] == 8 for x in t["/zeros"]["results"])'
    check 'all(x["sqnr_db"] is not None for x in t["/denormal"]["results"] + t["/inf"]["results"])'
    # Zero-sized, scalar, one element; sizes that overflow are errors, not wrapped to 0.
    report_run 3 "$cmd" "$fx/shapes.h5" --all-tensors
    check 'set(t) == {"/empty", "/scalar", "/one"} and set(e) == {"/huge", "/wide"}'
    check 'all("overflows" in e[n]["message"] and e[n]["status"] == "input_error" for n in e)'
    check 't["/empty"]["results"][0]["counts"]["elements"] == 0'
    check 't["/scalar"]["results"][0]["counts"]["elements"] == 1'
    grep -qF "$fx/shapes.h5: /" "$tmp/err" || fail "$cmd shapes.h5: stderr does not name a tensor"
    # One bad tensor among good ones: errors named, good ones reported, exit 3 after the report.
    report_run 3 "$cmd" "$fx/mixed.h5" --all-tensors
    check 'set(t) == {"/a/good", "/b/good"} and set(e) == {"/a/name", "/a/blosc", "/c/compound"}'
    check '"string" in e["/a/name"]["message"] and "32001" in e["/a/blosc"]["message"]'
    check '"compound" in e["/c/compound"]["message"]'
    check 'r["input"]["datasets"] and all(x["sqnr_db"] is not None for x in t["/a/good"]["results"])'
done

# Fatal input errors: no report at all, and an existing report stays as it was.
echo '{"old": true}' >"$out/keep.json"
fatal() { # WHAT ARGS... (with -o $out/keep.json appended)
    what=$1; shift
    run "$@" -o "$out/keep.json"
    [ "$rc" -eq 3 ] || fail "$*: exit $rc, want 3"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: stderr is not one line"
    grep -qF -- "$what" "$tmp/err" || fail "$*: stderr does not name '$what'"
    [ "$(cat "$out/keep.json")" = '{"old": true}' ] || fail "$*: the existing -o FILE was touched"
    no_temp "$out"
}
fatal "$fx/mixed.h5: /nope: no such dataset or group" sqnr "$fx/mixed.h5" /nope
head -c 100000 "$CKPT" >"$tmp/cut.h5"
fatal "$tmp/cut.h5: " sqnr "$tmp/cut.h5"
printf 'garbage' >"$tmp/garbage.h5"
fatal "$tmp/garbage.h5: not an HDF5, safetensors, PyTorch, GGUF or NumPy file" sqnr "$tmp/garbage.h5"
fatal "$tmp/none.h5: no such file" sqnr "$tmp/none.h5"
fatal "$out: is a directory" sqnr "$out"

# Corrupt data chunks in the real checkpoint (deflate streams): each tensor that cannot be
# decoded is an error entry; the run ends 0 or 3 with a whole report, never a crash.
size=$(wc -c <"$CKPT")
n=6; [ "$SLOW" = 1 ] && n=2
flips "$CKPT" "$tmp/flips" $(offsets "$size" $n | cut -d' ' -f3-)
for g in "$tmp/flips"/*.h5; do
    rm -f "$out/r.json"
    run sqnr "$g" -o "$out/r.json"
    case $rc in
        0) json_ok "$out/r.json" || fail "sqnr $g: exit 0 but the report is not whole" ;;
        3) [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "sqnr $g: exit 3 but stderr is not one line"
           [ ! -e "$out/r.json" ] || json_ok "$out/r.json" || fail "sqnr $g: partial report" ;;
        *) fail "sqnr $g: exit $rc" ;;
    esac
    no_temp "$out"
done

# Unwritable outputs.
[ -c /dev/full ] || skip "/dev/full is not a character device here"
clean_fail "/dev/full" sqnr "$fx/small.h5" -o /dev/full
[ -c /dev/full ] || fail "/dev/full is no longer a character device"
ls -la /dev | grep -q 'full.*tmp' && fail "a temporary file was left in /dev"
clean_fail "$tmp/no/such/dir/r.json" sqnr "$fx/small.h5" -o "$tmp/no/such/dir/r.json"
[ ! -e "$tmp/no" ] || fail "-o into a missing directory created something"
clean_fail "$out" sqnr "$fx/small.h5" -o "$out"
[ -d "$out" ] || fail "-o DIR replaced the directory"
"$FP4DIAG" sqnr "$fx/small.h5" >/dev/full 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "stdout on /dev/full: exit $rc, want 3 and one line"
[ -c /dev/full ] || fail "/dev/full is no longer a character device"
exit 0
