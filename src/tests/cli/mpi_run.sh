#!/bin/sh
# mpi_run.sh — `mpirun -n N fp4diag ...` (N = 2, 3, oversubscribed on this machine) writes the
# report of one process, byte for byte outside "timing" (its seconds): sqnr on the stored
# checkpoint, rht with SR, bias with skipped tensors and (--all-tensors) a tensor that fails (its
# errors entry kept, exit 3), gemm on
# the GEMM file; to stdout, rank 0 alone prints one report. Skipped without an MPI build
# (MPI=0), without mpirun, and under the sanitizer build (Open MPI's own allocations).
. src/tests/cli/lib/parts.sh
command -v mpirun >/dev/null 2>&1 || { echo "no mpirun (apt-get install openmpi-bin)"; exit 77; }
ldd "$FP4DIAG" 2>/dev/null | grep -q libmpi || { echo "fp4diag built without MPI (MPI=0)"; exit 77; }
ldd "$FP4DIAG" 2>/dev/null | grep -q libasan && { echo "sanitizer build: mpirun case skipped"; exit 77; }
python3 -c 'import h5py' 2>/dev/null || { echo "no python3 h5py"; exit 77; }
# CI runs as root; Open MPI refuses root unless told
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none # containers without ptrace rights
mixed_h5 "$tmp/mixed.h5" 5
case_() { # case NAME EXPECTED_RC COMMAND ARGS...
    n=$1 want=$2; shift 2
    mkdir -p "$tmp/$n/one" "$tmp/$n/n2" "$tmp/$n/n3"
    (cd "$tmp/$n/one" && "$FP4DIAG" "$@" -q -o r.json 2>/dev/null); rc=$?
    [ "$rc" -eq "$want" ] || fail "$n: one process exit $rc, want $want"
    for N in 2 3; do
        (cd "$tmp/$n/n$N" && mpirun -n $N --oversubscribe "$FP4DIAG" "$@" -q -o r.json \
            >"$tmp/out" 2>"$tmp/err"); rc=$?
        [ "$rc" -eq "$want" ] || { cat "$tmp/err"; fail "$n: mpirun -n $N exit $rc, want $want"; }
        [ -s "$tmp/out" ] && { cat "$tmp/out"; fail "$n: mpirun -n $N printed on stdout"; }
        same "$tmp/$n/one/r.json" "$tmp/$n/n$N/r.json" "$n: mpirun -n $N differs"
    done
}
case_ sqnr 0 sqnr "$C"
case_ rht_sr 0 rht "$C" /blocks/0 --rounding sr --seed 7 --format e2m1,int4
case_ mixed 0 bias "$tmp/mixed.h5"
case_ mixed_all 3 bias "$tmp/mixed.h5" --all-tensors
case_ gemm 0 gemm "$G" --layers 4
case_ gemm_mixed 3 gemm "$tmp/mixed.h5" /ga /gb /gc
grep -q 'string class is not supported' "$tmp/mixed_all/n3/r.json" || fail "mixed_all: errors entry lost"
grep -q '"reason"' "$tmp/mixed/n3/r.json" || fail "mixed: skipped entries lost"
# stdout: one report, from rank 0 only
mpirun -n 3 --oversubscribe "$FP4DIAG" sqnr "$C" /blocks/0 -q >"$tmp/stdout.json" 2>"$tmp/err" ||
    { cat "$tmp/err"; fail "mpirun to stdout"; }
"$FP4DIAG" sqnr "$C" /blocks/0 -q >"$tmp/one.json" || fail "one to stdout"
same "$tmp/one.json" "$tmp/stdout.json" "stdout report differs"
# --shard is the launcher's business under mpirun
mpirun -n 2 --oversubscribe "$FP4DIAG" sqnr "$C" --shard 0/2 -q >/dev/null 2>"$tmp/err"
[ "$(grep -c 'fp4diag sqnr: --shard does not apply under mpirun' "$tmp/err")" -eq 1 ] ||
    { cat "$tmp/err"; fail "--shard under mpirun: not one message from rank 0"; }
exit 0
