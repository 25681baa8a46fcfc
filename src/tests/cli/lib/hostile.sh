# hostile.sh — sourced by src/tests/cli/hostile_*.sh: a temp dir, the fixtures of
# scripts/make_hostile.py, byte surgery on copies, and the checks every bad input must pass:
# a clean failure is exit 3, exactly one line on stderr naming the file, nothing (or no partial
# report) on stdout / -o; never a crash, a sanitizer report (exit 99) or a hang.
# Env: FP4DIAG (the program), FP4T_SLOW=1 (fewer variants: each run is slow).
set -u
tmp=$(mktemp -d) || exit 1
chmod 755 "$tmp"
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
CKPT=testdata/gpt_ckpt_small.h5
# Fewer variants where each run is slow (FP4T_SLOW=1: check-san, check-valgrind).
SLOW=${FP4T_SLOW:-0}
# Under ASan, whole stacks through libhdf5, so scripts/lsan.supp can tell HDF5's leaks on
# corrupt files (suppressed) from ours.
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"

skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; [ -s "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" | head -n 20; exit 1; }

need_fixtures() { # [NAME...]: make $tmp/fx/*.h5 (the default set, or NAMEs), or skip when
    # h5py is missing
    python3 -c 'import h5py, numpy' 2>/dev/null || skip "python3 with h5py and numpy not found"
    python3 scripts/make_hostile.py "$tmp/fx" "$@" >"$tmp/err" 2>&1 || fail "make_hostile.py failed"
}

# gpu_here: true when `--device cuda` runs here (a CUDA build on a machine with a GPU); the
# GPU variants of a case run only then (without, --device cuda is exit 4).
gpu_here() {
    "$FP4DIAG" sqnr --device cuda -q "$CKPT" >/dev/null 2>&1
}

# run ARGS...: $rc, $tmp/out, $tmp/err
run() { "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

# clean_fail WHAT ARGS...: exit 3, one stderr line containing WHAT, empty stdout.
clean_fail() {
    what=$1; shift
    run "$@"
    [ "$rc" -eq 3 ] || fail "$*: exit $rc, want 3"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: stderr is not one line"
    grep -qF -- "$what" "$tmp/err" || fail "$*: stderr does not name '$what'"
    [ ! -s "$tmp/out" ] || fail "$*: stdout is not empty"
}

# no_crash WHAT ARGS...: exit 0, or a clean failure (as above); never 5, a signal or 99.
no_crash() {
    what=$1; shift
    run "$@"
    case $rc in
        0) ;;
        3) [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: exit 3 but stderr is not one line"
           grep -qF -- "$what" "$tmp/err" || fail "$*: stderr does not name '$what'" ;;
        *) fail "$*: exit $rc (a crash, a sanitizer/valgrind report or an internal error)" ;;
    esac
}

# flip FILE OFFSET OUT: copy FILE with the byte at OFFSET inverted.
flip() {
    cp "$1" "$3" && chmod u+w "$3" &&
        python3 -c 'import sys
p, o = sys.argv[1], int(sys.argv[2])
with open(p, "r+b") as f:
    f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 0xFF]))' "$3" "$2" ||
        fail "cannot corrupt $1"
}

# flips FILE OUTDIR OFFSET...: one copy of FILE per offset, that byte inverted, as
# OUTDIR/flip-OFFSET.h5 (one python start for all).
flips() {
    mkdir -p "$2" && python3 -c 'import sys, os
src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
for o in map(int, sys.argv[3:]):
    b = bytearray(data); b[o] ^= 0xFF
    open(os.path.join(out, "flip-%d.h5" % o), "wb").write(b)' "$@" || fail "cannot corrupt $1"
}

# offsets SIZE N: N offsets spread over [0, SIZE), the first few in the superblock.
offsets() { python3 -c 'import sys
s, n = int(sys.argv[1]), int(sys.argv[2])
pts = [0, 8, 9, 13, 20, 24, 40, 56, 64, 96][: max(1, n // 3)]
pts += [(s * k) // (n - len(pts) + 1) for k in range(1, n - len(pts) + 1)]
print(" ".join(str(p) for p in sorted(set(x for x in pts if x < s))))' "$1" "$2"; }

# is_command_ready CMD: false while CMD still says "not implemented yet".
is_command_ready() {
    "$FP4DIAG" "$1" --help >"$tmp/help" 2>&1
    ! grep -q "not implemented yet" "$tmp/help"
}

# need_command CMD: skip (77) while `fp4diag CMD` is not implemented yet.
need_command() {
    is_command_ready "$1" || skip "'fp4diag $1' is not implemented yet"
}

# json_ok FILE: FILE is one whole JSON document without NaN/Infinity tokens (SPEC §9).
json_ok() {
    python3 - "$1" <<'PY'
import json, sys
def bad(tok): raise ValueError("bare %s in the report" % tok)
json.load(open(sys.argv[1]), parse_constant=bad)
PY
}

# cut_run FILE DELAY ARGS...: FILE cut short by another process while `fp4diag sqnr ARGS`
# reads it: a copy (same name, in $tmp/cut) read in the background, truncated to a third of
# its size after DELAY seconds. Whenever the cut lands: exit 0 with $tmp/ref.json's report, or
# exit 3 with one stderr line, errors entries whose messages each match $cut_msgs (a Python
# regular expression) and every reported tensor equal to the reference; never a signal (135:
# SIGBUS). $cut counts the runs cut mid-way (exit 3).
cut=0
cut_run() {
    cr_src=$1 cr_d=$2
    shift 2
    cr_what="$(basename "$cr_src"): cut after ${cr_d}s"
    mkdir -p "$tmp/cut"
    cr_copy=$tmp/cut/$(basename "$cr_src")
    cr_size=$(wc -c <"$cr_src")
    cp "$cr_src" "$cr_copy"
    rm -f "$tmp/r.json"
    timeout 300 "$FP4DIAG" sqnr "$@" "$cr_copy" -o "$tmp/r.json" >/dev/null 2>"$tmp/err" &
    cr_pid=$!
    sleep "$cr_d"
    truncate -s $((cr_size / 3)) "$cr_copy"
    wait "$cr_pid"; rc=$?
    case $rc in
        0|3) ;;
        *) fail "$cr_what: exit $rc (135: SIGBUS)" ;;
    esac
    [ "$(wc -l <"$tmp/err")" -le 1 ] || fail "$cr_what: stderr is more than one line"
    [ -e "$tmp/r.json" ] || return 0 # cut before the file was opened: no report
    python3 - "$tmp/ref.json" "$tmp/r.json" "$rc" "$cut_msgs" <<'PY' || fail "$cr_what: not the tensors' numbers"
import json, re, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
rt = {t["name"]: t["results"] for t in ref["tensors"]}
for t in got["tensors"]:
    assert t["results"] == rt[t["name"]], t["name"]
if sys.argv[3] == "0":
    assert not got["errors"] and len(got["tensors"]) == len(rt)
else:
    assert got["errors"], "exit 3 without errors entries"
    assert all(re.search(sys.argv[4], e["message"]) for e in got["errors"]), got["errors"][:2]
PY
    [ "$rc" -eq 3 ] && cut=$((cut + 1))
    return 0
}

# no_temp DIR: no temporary report file (.NAME.tmpXXXXXX) is left in DIR.
no_temp() {
    left=$(find "$1" -maxdepth 1 -name '.*tmp*' 2>/dev/null)
    [ -z "$left" ] || fail "temporary file left behind: $left"
}
