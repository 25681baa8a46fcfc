#!/bin/sh
# stats_cuda.sh — the recipe statistics of SPEC §5.1 on the CUDA backend are the CPU's, bit for
# bit (the same JSON numbers): stats_status "ok", the counts, underflows, saturation, max abs
# error, non-amax SQNR, block amax and relative-error percentiles, the scale-byte histogram and
# Four over Six, per tensor and pooled, for nvfp4 (also --weight-2d, RHT 16 and 64), mxfp4
# (both E8M0 rules), fp32 scales of 16 and 32 on e2m1 / e1m2 / int4, tensor scales and SR.
# Four over Six's sqnr_db and gain_db also carry Σx² of the main pass, equal within 1e-12
# relative across backends (SPEC §7); everything else must be equal, the error split of
# --error-split too (its shares divide the split's own sums, the same bits on both: every
# scale mode, RHT 16/64/256, --weight-2d, e1m2/int4 grids; absent without the flag, null under
# SR). Skips without a GPU.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -s "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" | head -n 20; exit 1; }
for f in testdata/gpt_gemm_small.h5 testdata/gpt_ckpt_small.h5; do
    [ -f "$f" ] || { echo "skip: no $f"; exit 77; }
done
"$FP4DIAG" sqnr --device cuda -q testdata/gpt_gemm_small.h5 >/dev/null 2>&1 ||
    { echo "skip: --device cuda does not run here"; exit 77; }
i=0
while IFS='|' read -r args; do
    [ -n "$args" ] || continue
    i=$((i + 1))
    for f in testdata/gpt_gemm_small.h5 testdata/gpt_ckpt_small.h5; do
        for dev in cpu cuda; do
            # shellcheck disable=SC2086
            "$FP4DIAG" sqnr --device "$dev" $args -q "$f" -o "$tmp/$i-$(basename "$f")-$dev.json" </dev/null \
                2>"$tmp/err" || fail "--device $dev $args $f: exit $?"
        done
        python3 - "$tmp/$i-$(basename "$f")-cpu.json" "$tmp/$i-$(basename "$f")-cuda.json" "$args" <<'PY' ||
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["config"]["device"] == "cuda", b["config"]
KEYS = ("stats_status", "underflows_pct", "underflow_share", "saturated_pct", "max_abs_err",
        "sqnr_nonamax_db", "sqnr_nonamax_status", "counts", "block_amax_percentiles",
        "rel_err_percentiles", "scale_histogram", "error_split")
def same(x, y, where):
    assert x["stats_status"] == "ok", (where, x["stats_status"])
    for k in KEYS:
        assert x.get(k) == y.get(k), (where, k, x.get(k), y.get(k))
    fx, fy = x.get("four_over_six"), y.get("four_over_six")
    assert (fx is None) == (fy is None), (where, fx, fy)
    if fx is not None:
        for k in ("blocks", "blocks4", "block_share4"):
            assert fx[k] == fy[k], (where, k, fx, fy)
        for k in ("sqnr_db", "gain_db"):
            u, v = fx[k], fy[k]
            assert (u is None) == (v is None) and (u is None or abs(u - v) <= 1e-12 * max(abs(u), 1.0)), (where, k, fx, fy)
n = 0
for ta, tb in zip(a["tensors"], b["tensors"]):
    assert ta["name"] == tb["name"]
    for x, y in zip(ta["results"], tb["results"]):
        same(x, y, ta["name"]); n += 1
for x, y in zip(a["summary"]["results"], b["summary"]["results"]):
    same(x, y, "pooled"); n += 1
assert n > 1, n
want = "--error-split" in sys.argv[3]
for r in [x for t in b["tensors"] for x in t["results"]] + b["summary"]["results"]:
    assert ("error_split" in r) == want, ("error_split present", want)
    if want and "--rounding sr" not in sys.argv[3]:
        assert r["error_split"] is not None, ("error_split null", r["format"])
PY
            fail "--device cuda $args $f: statistics differ from the CPU's"
    done
done <<'CFGS'
--format e2m1 --scale nvfp4
--format e2m1 --scale nvfp4 --weight-2d
--format e2m1 --scale nvfp4 --rht on
--format e2m1 --scale nvfp4 --rht on --rht-size 64
--format e2m1 --scale mxfp4
--format e2m1 --scale mxfp4 --mx-rule rceil
--format e2m1 --scale mxfp4 --rht on --rht-size 256
--format e2m1,e1m2,int4 --scale fp32
--format e2m1,e1m2,int4 --scale fp32 --block 32
--format e2m1,int4 --scale tensor
--format e2m1,e1m2 --scale fp32 --rounding sr --seed 7
--format e2m1 --scale nvfp4 --rounding sr --sr-bits 8 --seed 3
--format e2m1 --scale nvfp4 --error-split
--format e2m1 --scale nvfp4 --weight-2d --rht on --error-split
--format e2m1 --scale nvfp4 --rht on --rht-size 64 --error-split
--format e2m1 --scale mxfp4 --error-split
--format e2m1 --scale mxfp4 --mx-rule rceil --rht on --rht-size 256 --error-split
--format e2m1,e1m2,int4 --scale fp32 --rht both --error-split
--format e2m1,e1m2,int4 --scale fp32 --block 64 --error-split
--format e2m1,int4 --scale tensor --rht both --error-split
--format e2m1,e1m2 --scale fp32 --rounding sr --seed 7 --error-split
CFGS
echo "ok: $i configs x 2 files, cpu == cuda"
exit 0
