#!/bin/sh
# hostile_signals.sh — SIGINT or SIGTERM at any moment of `sqnr -o FILE` leaves no partial
# report (SPEC §9): after each interrupted run there is no temporary file beside FILE, and FILE
# is either absent (or the previous report, untouched) when the run was killed, or a whole new
# report when it finished first. The assertions hold whenever the signal lands; several delays
# only make it likely that some land mid-run (nothing here measures time).
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
[ -f testdata/gpt_gemm_small.h5 ] || skip "testdata/gpt_gemm_small.h5 not found"
out=$tmp/out.d
mkdir "$out"
in=testdata/gpt_gemm_small.h5
delays="0 0.05 0.1 0.2 0.4 0.8"
[ "$SLOW" = 1 ] && delays="0.5 2"
i=0
killed=0
if env --default-signal=INT true 2>/dev/null; then dfl="env --default-signal=INT"
else dfl=""; echo "note: env --default-signal missing: SIGINT runs are not interrupted"; fi
for sig in INT TERM; do
    for d in $delays; do
        i=$((i + 1))
        old=""
        if [ $((i % 2)) -eq 0 ]; then old='{"previous": true}'; echo "$old" >"$out/r.json"
        else rm -f "$out/r.json"; fi
        # A background job of a script starts with SIGINT ignored: give it the default back.
        $dfl "$FP4DIAG" sqnr --format all --rht both --scale nvfp4 -q "$in" -o "$out/r.json" \
            >/dev/null 2>"$tmp/err" &
        pid=$!
        sleep "$d"
        kill -s "$sig" "$pid" 2>/dev/null
        wait "$pid"; rc=$?
        no_temp "$out"
        case $rc in
            0) json_ok "$out/r.json" || fail "SIG$sig after ${d}s: exit 0 but the report is not whole"
               grep -q '"schema"' "$out/r.json" || fail "SIG$sig after ${d}s: exit 0, old report kept" ;;
            130|143)
               killed=$((killed + 1))
               if [ -n "$old" ]; then
                   [ "$(cat "$out/r.json")" = "$old" ] || json_ok "$out/r.json" ||
                       fail "SIG$sig after ${d}s: the previous report was damaged"
               else
                   [ ! -e "$out/r.json" ] || json_ok "$out/r.json" ||
                       fail "SIG$sig after ${d}s: a partial report was left"
               fi ;;
            *) fail "SIG$sig after ${d}s: exit $rc" ;;
        esac
    done
done
echo "runs killed mid-way: $killed of $i"
exit 0
