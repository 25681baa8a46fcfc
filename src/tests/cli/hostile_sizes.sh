#!/bin/sh
# hostile_sizes.sh — declared sizes no memory can hold, and inputs that are not reports:
#  - `gemm` on int8 operands of 2^62 values (the fp32 copy's byte count overflows 64 bits),
#    on 16 GiB and 4 TiB f32 operands (more than the memory there is, or than `ulimit -v`):
#    refused before anything is allocated, exit 3, one line; never a crash or exit 5;
#  - `gemm` over several layers, some bad: an `errors` entry per bad layer, the good layers
#    reported, exit 3 after the whole report;
#    each on --device cpu and, where a GPU is present, --device cuda (cuBLAS products: the
#    same refusals, the same layers and errors, the good layer within 1e-9 relative);
#  - `compare` refuses devices and directories (never reads /dev/zero), binary data from a
#    pipe at once, and regular files larger than any report (256 MiB) before reading them.
. "$(dirname "$0")/lib/hostile.sh"
need_command gemm
need_fixtures gemm.h5
g=$tmp/fx/gemm.h5
t() { timeout 120 "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

# /big16's operands need 48 GiB as fp32: refused where the memory cap (physical memory, or
# ulimit -v) is smaller. A machine with more memory (the GPU host: 128 GiB) would start the
# product, so the /big16 refusals run under ulimit -v, the same everywhere; ASan and valgrind
# need the address space: there they run as they are, and only on a machine under 48 GiB.
printf '#!/bin/sh\nulimit -v 8000000 && exec "%s" "$@"\n' "$FP4DIAG" >"$tmp/capped"
chmod +x "$tmp/capped"
capped=$tmp/capped big16=1
if [ -n "${ASAN_OPTIONS:-}" ] || [ "$SLOW" = 1 ]; then
    capped=$FP4DIAG
    [ "$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)" -lt 50000000 ] || big16=0
fi
big16_fail() { # WHAT ARGS...: clean_fail with the program under the cap above
    [ "$big16" = 1 ] || return 0
    real=$FP4DIAG FP4DIAG=$capped
    clean_fail "$@"
    FP4DIAG=$real
}

gemm_cases() { # DEV: the refusals and the bad layers on --device DEV
dev=$1
D="--device $dev"
clean_fail "/huge/x: the operand's size overflows 64 bits" gemm $D "$g" /huge
clean_fail "/big: the operands need" gemm $D "$g" /big
clean_fail "/big: the operands need" gemm $D --x "$g:/big/x" --w "$g:/big/w" --path fprop
if [ -z "${ASAN_OPTIONS:-}" ] && [ "$SLOW" != 1 ]; then # ASan and valgrind need the address space
    (ulimit -v 4000000 && exec "$FP4DIAG" gemm $D "$g" /big16) >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$dev" = cuda ] && [ "$rc" -eq 4 ] && grep -q "no CUDA GPU/driver" "$tmp/err"; then
        # the CUDA driver cannot start in 4 GB of address space: exit 4, one line, as without a GPU
        echo "note: --device cuda under ulimit -v 4000000: CUDA cannot start (exit 4)"
    else
        [ "$rc" -eq 3 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "memory available" "$tmp/err" ||
            fail "$D gemm on 16 GiB operands under ulimit -v: exit $rc, want 3 and one line"
    fi
fi
big16_fail "/big16: the operands need" gemm $D "$g" /big16 /big

# Bad layers among good ones.
t gemm $D "$g" /good /bad /huge /big /nope -o "$tmp/r.json"
[ "$rc" -eq 3 ] || fail "$D gemm with bad layers: exit $rc, want 3"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "4 of 5 layers failed" "$tmp/err" ||
    fail "$D gemm with bad layers: stderr is not one line counting the failed layers"
python3 - "$tmp/r.json" <<'PY' || fail "$D gemm with bad layers: wrong report"
import json, sys
r = json.load(open(sys.argv[1]))
assert [l["name"] for l in r["layers"]] == ["/good"], r["layers"]
e = {x["tensor"]: x for x in r["errors"]}
assert set(e) == {"/bad", "/huge", "/big", "/nope"}, e
assert "in-features K differ" in e["/bad"]["message"]
assert "overflows" in e["/huge"]["message"] and "memory" in e["/big"]["message"]
assert all(x["status"] == "input_error" for x in r["errors"])
assert [p["path"] for p in r["summary"]["paths"]] == ["fprop", "dgrad", "wgrad"]
PY
t gemm $D "$g" /good -o "$tmp/good-$dev.json"
[ "$rc" -eq 0 ] || fail "$D gemm /good: exit $rc"
python3 - "$tmp/r.json" "$tmp/good-$dev.json" <<'PY' || fail "$D: the good layer's numbers changed"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["layers"] == b["layers"] and a["summary"] == b["summary"]
PY
}
gemm_cases cpu
if gpu_here; then
    gemm_cases cuda
    python3 scripts/check_golden.py "$tmp/good-cpu.json" "$tmp/good-cuda.json" >"$tmp/d" 2>&1 ||
        { head -20 "$tmp/d"; fail "gemm /good: --device cuda is not the CPU's report"; }
fi
cp "$tmp/good-cpu.json" "$tmp/good.json"

# compare: only regular files and pipes, at most 256 MiB.
clean_fail "/dev/zero: not a regular file or a pipe" compare "$tmp/good.json" /dev/zero
clean_fail "/dev/null: not a regular file or a pipe" compare /dev/null "$tmp/good.json"
clean_fail "$tmp/fx: is a directory" compare "$tmp/good.json" "$tmp/fx"
head -c 100000 /dev/zero | timeout 60 "$FP4DIAG" compare "$tmp/good.json" - >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] && grep -q "stdin: not JSON (binary data)" "$tmp/err" ||
    fail "compare with zeros on stdin: exit $rc, want 3 saying binary data"
truncate -s 1200M "$tmp/huge.json" 2>/dev/null || skip "truncate -s not available"
clean_fail "$tmp/huge.json: 1258291200 bytes: larger than any report" \
    compare "$tmp/good.json" "$tmp/huge.json"
exit 0
