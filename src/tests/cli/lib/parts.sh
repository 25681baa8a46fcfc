# parts.sh — sourced by shard_merge.sh and mpi_run.sh (a run split in parts must give the report
# of one process): the stored checkpoint $C and GEMM file $G (skip without them), a temp dir $tmp
# removed on exit, fail, same (two reports equal outside "seconds" and "time"), and mixed_h5 (a file whose
# selection holds a failing tensor and a failing GEMM layer between good ones).
set -u
C=$PWD/testdata/gpt_ckpt_small.h5
G=$PWD/testdata/gpt_gemm_small.h5
[ -f "$C" ] && [ -f "$G" ] || { echo "no testdata"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

same() { # same A B WHAT: equal outside the "seconds" and provenance "time" lines, else fail WHAT
    grep -v '"seconds"\|"time"' "$1" >"$tmp/x1"; grep -v '"seconds"\|"time"' "$2" >"$tmp/x2"
    cmp -s "$tmp/x1" "$tmp/x2" || { diff "$tmp/x1" "$tmp/x2" | head -20; fail "$3"; }
}

# mixed_h5 PATH SEED [f64]: float tensors a/w, c/w (rank 1), d/w (rank 3) around a string dataset
# b/name (its errors entry must keep its place), with f64 also e/w (float64); GEMM groups ga,
# gb (in-features disagree: an errors entry) and gc. Needs python3 with h5py.
mixed_h5() {
    python3 - "$1" "$2" "${3:-}" <<'PY' || fail "cannot write $1"
import sys, h5py, numpy as np
r = np.random.default_rng(int(sys.argv[2]))
with h5py.File(sys.argv[1], "w") as f:
    f["a/w"] = r.standard_normal((64, 48)).astype(np.float32)
    f["b/name"] = np.array([b"not a tensor"])
    f["c/w"] = r.standard_normal((300,)).astype(np.float16)
    f["d/w"] = r.standard_normal((32, 32, 4)).astype(np.float32)
    if sys.argv[3] == "f64":
        f["e/w"] = r.standard_normal((8, 16)).astype(np.float64)
    f["ga/x"] = r.standard_normal((32, 48)).astype(np.float32)
    f["ga/w"] = r.standard_normal((16, 48)).astype(np.float32)
    f["ga/dy"] = r.standard_normal((32, 16)).astype(np.float32)
    f["gb/x"] = r.standard_normal((32, 40)).astype(np.float32)  # in-features disagree
    f["gb/w"] = r.standard_normal((16, 48)).astype(np.float32)
    f["gb/dy"] = r.standard_normal((32, 16)).astype(np.float32)
    f["gc/x"] = r.standard_normal((64, 32)).astype(np.float32)
    f["gc/w"] = r.standard_normal((32, 32)).astype(np.float32)
    f["gc/dy"] = r.standard_normal((64, 32)).astype(np.float32)
PY
}
