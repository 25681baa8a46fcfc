#!/bin/sh
# hostile_links.sh — files that point at other files (scripts/make_hostile.py links): virtual
# datasets (VDS), external links and external raw storage are followed only to regular HDF5
# (or raw) files in the file's own directory tree, resolved against that directory, checked
# before anything is read; never to a device or a FIFO (no hang), never in a cycle (no crash).
# Each refused or unreadable pointer is an `errors` entry naming why (exit 3, the other
# datasets still reported); --allow-external follows regular files outside the tree. Also:
# datasets never written with fill time "never" and NULL dataspaces are errors entries (never
# uninitialised memory), a rank-32 dataset is named as such, paths of 1,100 and 4,500
# characters are listed and analysed (globs included), a dataset this HDF5 cannot open is
# listed and an errors entry, and a file truncated while it is read gives errors, never zeros.
# Every run under `timeout`: a hang fails the case.
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
need_fixtures links
L=$tmp/fx/links
T=60

# sq WANT_RC FILE ARGS...: sqnr FILE -o $tmp/r.json under a timeout; checks rc, whole JSON.
sq() {
    want=$1; shift
    rm -f "$tmp/r.json"
    timeout $T "$FP4DIAG" sqnr "$@" -o "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq "$want" ] || fail "sqnr $*: exit $rc, want $want (124: a hang)"
    json_ok "$tmp/r.json" || fail "sqnr $*: the report is not whole JSON"
    [ "$(wc -l <"$tmp/err")" -le 1 ] || fail "sqnr $*: stderr is more than one line"
}
# check PYTHON-EXPR on $tmp/r.json (t = {name: tensor}, e = {name: message}).
check() {
    python3 - "$tmp/r.json" "$1" <<'PY' || fail "report check failed: $1"
import json, sys
r = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in r["tensors"]}
e = {x["tensor"]: x["message"] for x in r["errors"]}
if not eval(sys.argv[2]):
    print("tensors:", sorted(t), "errors:", e)
    sys.exit(1)
PY
}
lsok() { # ls ARGS under a timeout, exit 0 wanted
    timeout $T "$FP4DIAG" ls "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 0 ] || fail "ls $*: exit $rc, want 0 (124: a hang)"
}

# Virtual datasets.
sq 0 "$L/src.h5"
cp "$tmp/r.json" "$tmp/src.json"
sq 0 "$L/vds_good.h5"
check 't["/v"]["results"][0]["counts"]["elements"] == 64 and not e'
python3 - "$tmp/src.json" "$tmp/r.json" <<'PY' || fail "the VDS does not give its source's numbers"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["tensors"][0]["results"] == b["tensors"][0]["results"]
PY
# vds_check FILE WHAT: sqnr is exit 3 with /v an errors entry saying WHAT; ls lists /v.
vds_check() {
    sq 3 "$L/$1.h5"
    check "set(e) == {'/v'} and not t and '$2' in e['/v']"
    [ "$SLOW" = 1 ] && return # fewer runs where each is slow
    lsok "$L/$1.h5"
    grep -q '^/v ' "$tmp/out" || fail "ls $1.h5: /v not listed"
}
vds_check vds_self "cycle"
vds_check vds_a "cycle"
vds_check vds_missing "gone.h5 is missing"
vds_check vds_fifo "not a regular file"
vds_check vds_dev "not a regular file"
vds_check vds_out "outside the file"
sq 0 --allow-external "$L/vds_out.h5"; check 't["/v"] and not e'

# External links: only when named (the walk does not follow links).
sq 0 "$L/elink.h5" /ok; check 'set(t) == {"/ok"}'
for l in fifo dev outside; do
    rm -f "$tmp/r.json"
    timeout $T "$FP4DIAG" sqnr "$L/elink.h5" /good /$l -o "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 3 ] || fail "sqnr elink.h5 /$l: exit $rc, want 3 (124: a hang)"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "sqnr elink.h5 /$l: stderr is not one line"
    lsok "$L/elink.h5" /$l
    grep -q "^/$l .*external link target" "$tmp/out" || fail "ls elink.h5 /$l: no note"
done
grep -q "outside the file's directory" "$tmp/out" || fail "elink /outside: not said why"
timeout $T "$FP4DIAG" sqnr --allow-external "$L/elink.h5" /outside >/dev/null 2>"$tmp/err" ||
    fail "sqnr --allow-external elink.h5 /outside: exit $?"

# External raw storage, analysed from another directory (resolved against the file's own).
mkdir "$tmp/elsewhere"
(cd "$tmp/elsewhere" && timeout $T "$FP4DIAG" sqnr "$L/ext.h5" -o "$tmp/r.json") >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] || fail "sqnr ext.h5: exit $rc, want 3 (124: a hang)"
check 'set(t) == {"/good", "/abs"} and set(e) == {"/short", "/zero", "/urandom", "/fifo", "/outside"}'
check '"fewer" in e["/short"] and "not a regular file" in e["/zero"] and "not a regular file" in e["/urandom"]'
check '"not a regular file" in e["/fifo"] and "outside" in e["/outside"]'
check 't["/good"]["results"][0]["sqnr_db"] == t["/abs"]["results"][0]["sqnr_db"]'
lsok "$L/ext.h5"

# A dataset this HDF5 cannot open (an unknown datatype class): listed, and an errors entry.
lsok "$L/badtype.h5"
grep -q '^/bad .*cannot open' "$tmp/out" || fail "ls badtype.h5: /bad not listed with a note"
sq 3 "$L/badtype.h5"; check 'set(t) == {"/good"} and set(e) == {"/bad"}'

# Never written without a fill value, NULL dataspace, rank 32.
sq 3 "$L/never.h5"
check 'set(t) == {"/good"} and set(e) == {"/never", "/null", "/r32"}'
check '"never written" in e["/never"] and "null dataspace" in e["/null"] and "rank 32" in e["/r32"]'
lsok "$L/never.h5"

# Long paths: listed, analysed, selected by glob.
lsok "$L/long.h5"
[ "$(grep -c '/d ' "$tmp/out")" -eq 2 ] || fail "ls long.h5: the long paths are not both listed"
sq 0 "$L/long.h5"; check 'len(t) == 3 and max(len(n) for n in t) > 4096'
sq 0 "$L/long.h5" '/g/*/*/*/*/d'; check 'len(t) == 1 and len(list(t)[0]) > 1024'
sq 0 "$L/long.h5" '/g/*'; check 'len(t) == 1'
exit 0
