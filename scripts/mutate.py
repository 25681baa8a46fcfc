#!/usr/bin/env python3
"""mutate.py — is every small, plausible mistake in the numbers caught by a unit test?

Each entry of MUTATIONS changes one source line (a sed-like replacement of a string that must
occur exactly once in its file): tie rules, E4M3/E8M0 rounding, grid values, RHT signs and norm,
the SQNR/alpha/delta formulas, the fixed fp64 merge orders, widening of subnormals and
infinities, the merge of shares, the default selection, the -o check, safetensors bounds.
They are applied one at a time to a scratch copy of the tree under /tmp (the build folder is
copied too, so only what a mutation touches is rebuilt), the copy is built, and ONLY the unit
suites (build/tests/test_*) are run, never the CLI goldens: a mutation that every suite passes
is a survivor. An unmutated copy is built and run first and must pass.

    make mutate                       (nice python3 scripts/mutate.py)
    python3 scripts/mutate.py --list  the mutations
    python3 scripts/mutate.py --only ID[,ID...] [--every] [--keep]

Prints one line per mutation (CAUGHT by which suite, SURVIVED, or BROKEN: the mutated tree does
not build or the string is not found once), then "mutate: N mutations, N caught, N survived,
N broken". Exit 0 only when every mutation is caught. Slow on 2 cores (a header mutation
rebuilds most of the library): about a minute per mutation.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

# (id, file, old, new, suites to try first)
MUTATIONS = [
    # --- RTNE ties (SPEC §2): the reference, the generic engine, the AVX2 kernel, closed forms
    ("tie-ref-mid1", "src/base/common.h",
     "(t > g->mid[0]) + (t >= g->mid[1])", "(t > g->mid[0]) + (t > g->mid[1])",
     ["test_format", "test_quant", "test_engine"]),
    ("tie-ref-mid4", "src/base/common.h",
     "(t > g->mid[4]) + (t >= g->mid[5])", "(t >= g->mid[4]) + (t >= g->mid[5])",
     ["test_format", "test_quant", "test_engine"]),
    ("tie-generic-p3", "src/engine/engine_impl.h",
     "p3 = tc >= md[3]", "p3 = tc > md[3]", ["test_engine", "test_quant"]),
    ("tie-generic-p6", "src/engine/engine_impl.h",
     "p6 = tc > md[6]", "p6 = tc >= md[6]", ["test_engine", "test_quant"]),
    ("tie-avx2-md5", "src/engine/arch/x86.c",
     "_mm256_cmp_ps(tc, md[5], _CMP_GE_OQ)", "_mm256_cmp_ps(tc, md[5], _CMP_GT_OQ)",
     ["test_engine", "test_quant"]),
    ("tie-avx2-md2", "src/engine/arch/x86.c",
     "_mm256_cmp_ps(tc, md[2], _CMP_GT_OQ)", "_mm256_cmp_ps(tc, md[2], _CMP_GE_OQ)",
     ["test_engine", "test_quant"]),
    ("tie-e2m1-closed-form", "src/base/common.h",
     "u += 0x1FFFFFu + ((u >> 22) & 1u);", "u += 0x200000u;",
     ["test_format", "test_engine", "test_quant"]),
    ("tie-rne-int", "src/base/common.h",
     "return (int)((y + 8388608.0f) - 8388608.0f);", "return (int)(y + 0.5f);",
     ["test_format", "test_engine", "test_quant"]),
    # --- E4M3 and E8M0 scales (SPEC §3)
    ("e4m3-normal-tie-away", "src/base/common.h",
     "b += 0x7FFFFu + ((b >> 20) & 1u);", "b += 0x80000u;", ["test_quant", "test_format"]),
    ("e4m3-subnormal-tie-away", "src/base/common.h",
     "float r = (v * 512.0f + 8388608.0f) - 8388608.0f;", "float r = floorf(v * 512.0f + 0.5f);",
     ["test_quant", "test_format"]),
    # (not "code > 0x7E" -> "code > 0x7F": no v < 448 rounds past 448, so that clamp never acts
    # and the mutant is equivalent)
    ("e4m3-subnormal-boundary", "src/base/common.h",
     "if (v < 0.015625f) {", "if (v < 0.0078125f) {", ["test_quant", "test_format"]),
    ("e8m0-floor-as-ceil", "src/base/common.h",
     "} else e = fp4c_floor_log2(a) - g->emax;", "} else e = fp4c_ceil_log2(a) - g->emax;",
     ["test_quant", "test_engine"]),
    ("e8m0-rceil-as-floor-plus-1", "src/base/common.h",
     "e = r > 0.0f ? fp4c_ceil_log2(r) : -127;", "e = r > 0.0f ? fp4c_floor_log2(r) + 1 : -127;",
     ["test_quant", "test_engine"]),
    # --- grid values (SPEC §2)
    ("grid-e2m1-1.5", "src/base/common.h",
     "case 3: return 1.5f;", "case 3: return 1.25f;", ["test_format", "test_quant"]),
    ("grid-e1m2-top", "src/base/common.h",
     "case FP4C_E1M2: return 0.5f * (float)i;",
     "case FP4C_E1M2: return 0.5f * (float)i + (i == 7 ? 0.5f : 0.0f);",
     ["test_format", "test_quant"]),
    # --- NVFP4 two-level scale, TE's fp32 order (SPEC §3)
    ("nvfp4-senc-order", "src/engine/plan.c",
     "(gmax * FP4C_E4M3_MAX) / tensor_amax", "gmax * (FP4C_E4M3_MAX / tensor_amax)",
     ["test_quant", "test_te_oracle", "test_engine"]),
    ("nvfp4-mul-order", "src/base/common.h",
     "b.mul = fp4c_minf(1.0f / (ef * nv_sdec), FP4C_FLT_MAX);",
     "b.mul = fp4c_minf((1.0f / ef) / nv_sdec, FP4C_FLT_MAX);",
     ["test_quant", "test_te_oracle", "test_engine"]),
    # --- RHT (SPEC §4): signs, norm, butterfly
    ("rht-te-mask", "src/base/common.h",
     "#define FP4C_RHT_TE_MASK 0xD7E8u", "#define FP4C_RHT_TE_MASK 0xD7E9u", ["test_rht"]),
    ("rht-sign-polarity", "src/num/rht.c",
     "(FP4C_RHT_TE_MASK >> (i % 16)) & 1u ? -1.0f : 1.0f;",
     "(FP4C_RHT_TE_MASK >> (i % 16)) & 1u ? 1.0f : -1.0f;", ["test_rht"]),
    ("rht-norm-scalar", "src/num/rht.c",
     "for (int i = 0; i < n; i++) y[g + i] = (float)(d[i] / rs);",
     "for (int i = 0; i < n; i++) y[g + i] = (float)(d[i] / (double)n);", ["test_rht"]),
    ("rht-norm-avx2", "src/num/rht.c",
     "const __m256d k = _mm256_set1_pd(mul ? 1.0 / sqrt((double)n) : sqrt((double)n));",
     "const __m256d k = _mm256_set1_pd(mul ? 1.0 / (double)n : sqrt((double)n));", ["test_rht"]),
    ("rht-butterfly", "src/base/common.h",
     "d[j + h] = a - b;", "d[j + h] = b - a;", ["test_rht"]),
    # --- metrics (SPEC §5)
    ("sqnr-sign", "src/num/metrics.c",
     "m->sqnr_db = -10.0 * log10(m->nmse);", "m->sqnr_db = 10.0 * log10(m->nmse);",
     ["test_metrics"]),
    ("sqnr-log-base", "src/num/metrics.c",
     "m->sqnr_db = -10.0 * log10(m->nmse);", "m->sqnr_db = -10.0 * log(m->nmse);",
     ["test_metrics"]),
    ("sqnr-energy-of-xq", "src/num/metrics.c",
     "sx += (double)x[i] * (double)x[i];", "sx += (double)xq[i] * (double)xq[i];",
     ["test_metrics"]),
    ("nmse-over-xq2", "src/num/metrics.c",
     "m->nmse = m->sum_err2 / m->sum_x2;", "m->nmse = m->sum_err2 / m->sum_xq2;",
     ["test_metrics"]),
    ("alpha-over-xq2", "src/num/metrics.c",
     "m->alpha = m->sum_xqx / m->sum_x2;", "m->alpha = m->sum_xqx / m->sum_xq2;",
     ["test_metrics"]),
    ("delta-sign", "src/num/metrics.c",
     "m->delta = 1.0 - m->alpha;", "m->delta = m->alpha - 1.0;", ["test_metrics"]),
    # --- the fixed fp64 merge orders (SPEC §7) and the merge of shares (§9)
    ("merge-order-cpu-chunks", "src/backend/cpu.c",
     "for (int64_t i = 0; i < k; i++) fp4_fsums_add(&ca->acc[c], &ca->sums[c][i]);",
     "for (int64_t i = k - 1; i >= 0; i--) fp4_fsums_add(&ca->acc[c], &ca->sums[c][i]);",
     ["test_backend", "test_driver"]),
    ("merge-order-pool", "src/run/driver.c",
     "fp4_metrics_merge(&run->pooled[c], &run->tensors[t].metrics[c]);",
     "fp4_metrics_merge(&run->pooled[c], &run->tensors[run->ntensors - 1 - t].metrics[c]);",
     ["test_driver", "test_merge"]),
    ("merge-fsums-field", "src/num/metrics.h",
     "m->sum_xq2 += s->xq2;", "m->sum_xq2 += s->xqx;", ["test_metrics", "test_backend"]),
    ("merge-counts-amax", "src/num/metrics.c",
     "if (src->tensor_amax > dst->tensor_amax) dst->tensor_amax = src->tensor_amax;",
     "dst->tensor_amax = src->tensor_amax;", ["test_metrics"]),
    ("merge-shares-unsorted", "src/report/merge.c",
     "qsort(u, (size_t)k, sizeof *u, unit_cmp);", "(void)unit_cmp;", ["test_merge"]),
    # --- widening stored words (io/widen.c)
    ("widen-f16-subnormal", "src/io/widen.c",
     "uint32_t u = f32_bits(bits_f32(mag << 13) * 0x1p112f);",
     "uint32_t u = (mag << 13) + 0x38000000u;", ["test_widen"]),
    ("widen-f16-inf", "src/io/widen.c",
     "if (mag >= 0x7c00u) u = mag > 0x7c00u ? WIDEN_NAN_BITS : 0x7f800000u;",
     "if (mag > 0x7c00u) u = WIDEN_NAN_BITS;", ["test_widen"]),
    ("widen-f64-overflow", "src/io/widen.c",
     "d[i] = x > FLT_MAX ? INFINITY : x < -FLT_MAX ? -INFINITY : (float)x;",
     "d[i] = (float)x;", ["test_widen"]),
    # --- the default selection (SPEC §8)
    ("default-selection-rank1", "src/io/source.c",
     'else if (t->rank == 1) snprintf(buf, n, "rank 1");',
     'else if (t->rank < 0) snprintf(buf, n, "rank 1");', ["test_selection", "test_h5io"]),
    ("default-selection-exact-name", "src/io/source.c",
     "if (exact) return FP4_OK;", "(void)exact;", ["test_selection", "test_h5io"]),
    # --- -o never the input (SPEC §9)
    ("output-same-inode", "src/report/output.c",
     "ib.st_dev != sb->st_dev || ib.st_ino != sb->st_ino)",
     "ib.st_dev != sb->st_dev || ib.st_ino == sb->st_ino)", ["test_output"]),
    ("output-first-input-only", "src/report/output.c",
     "if (inputs[i]) FP4_TRY(not_an_input(path, &sb, inputs[i]));",
     "if (inputs[i] && i == 0) FP4_TRY(not_an_input(path, &sb, inputs[i]));", ["test_output"]),
    # --- safetensors header bounds (io/st_parse.c)
    ("st-end-past-data", "src/io/st_parse.c",
     "if (e > data_len)", "if (e > data_len + 1)", ["test_st_parse"]),
    ("st-end-before-begin", "src/io/st_parse.c",
     "if (e < b)", "if (e + 1 < b)", ["test_st_parse"]),
    ("st-overlap", "src/io/st_parse.c",
     "if (s[i].t.begin < at) {", "if (s[i].t.begin < at && i > 1) {", ["test_st_parse"]),
]

SUITE_TIMEOUT = 600


def run(cmd, cwd, timeout=None, env=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, env=env)


def copy_tree(root, dst):
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root,
                           stdout=subprocess.PIPE, text=True, check=True).stdout.split("\n")
    for f in files:
        if not f or not os.path.isfile(os.path.join(root, f)):
            continue
        os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(os.path.join(root, f), os.path.join(dst, f))
    if os.path.isdir(os.path.join(root, "build")):  # objects and .d files: incremental builds
        shutil.copytree(os.path.join(root, "build"), os.path.join(dst, "build"), symlinks=True,
                        ignore=shutil.ignore_patterns("regress", "bench-bundle*"))


def build(tree, jobs, targets=("tests",)):
    r = run(["make", "-j%d" % jobs, "CUDA=0"] + list(targets), tree)
    return r.returncode == 0, r.stdout[-3000:]


def suites(tree):
    d = os.path.join(tree, "build", "tests")
    return sorted(f for f in os.listdir(d)
                  if f.startswith("test_") and not f.endswith(".d")
                  and os.access(os.path.join(d, f), os.X_OK))


def run_suite(tree, name):
    """(passed, detail) for one unit suite run from the tree's root."""
    env = dict(os.environ, FP4DIAG=os.path.join(tree, "fp4diag"), OMP_NUM_THREADS="2")
    try:
        r = run([os.path.join("build", "tests", name)], tree, timeout=SUITE_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return False, "timeout after %d s" % SUITE_TIMEOUT
    if r.returncode == 0:
        return True, ""
    failed = [l.split("]", 1)[1].strip() for l in r.stdout.splitlines()
              if l.startswith("[  FAILED  ]") and "test(s)" not in l]
    failed = list(dict.fromkeys(failed))  # cmocka lists each failed test twice
    return False, "exit %d%s" % (r.returncode, ": " + ", ".join(failed[:4]) if failed else "")


def apply(tree, m):
    mid, path, old, new = m[0], m[1], m[2], m[3]
    p = os.path.join(tree, path)
    with open(p) as f:
        text = f.read()
    if text.count(old) != 1:
        return None, "'%s' occurs %d times in %s (the mutation list needs updating)" % (
            old, text.count(old), path)
    with open(p, "w") as f:
        f.write(text.replace(old, new))
    return text, ""


def restore(tree, path, text):
    p = os.path.join(tree, path)
    with open(p, "w") as f:
        f.write(text)
    t = time.time() + 1  # newer than any object built from the mutant
    os.utime(p, (t, t))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="print the mutations and exit")
    ap.add_argument("--only", help="comma-separated mutation ids")
    ap.add_argument("--keep", action="store_true", help="keep the scratch copy")
    ap.add_argument("--every", action="store_true",
                    help="run every suite on each mutant and name every one that catches it "
                         "(slower; shows which mutants more than one suite catches)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    a = ap.parse_args()
    ids = [m[0] for m in MUTATIONS]
    assert len(ids) == len(set(ids)), "duplicate mutation id"
    if a.list:
        for m in MUTATIONS:
            print("%-30s %s: '%s' -> '%s'" % (m[0], m[1], m[2], m[3]))
        return 0
    todo = MUTATIONS
    if a.only:
        want = a.only.split(",")
        unknown = [w for w in want if w not in ids]
        if unknown:
            print("mutate: unknown mutation id(s): %s" % ", ".join(unknown), file=sys.stderr)
            return 2
        todo = [m for m in MUTATIONS if m[0] in want]
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    tree = tempfile.mkdtemp(prefix="fp4mutate-", dir="/tmp")
    t0 = time.time()
    try:
        print("mutate: scratch copy %s" % tree, flush=True)
        copy_tree(root, tree)
        ok, log = build(tree, a.jobs)
        if not ok:
            print("mutate: the unmutated copy does not build:\n" + log)
            return 2
        names = suites(tree)
        for s in names:
            passed, detail = run_suite(tree, s)
            if not passed:
                print("mutate: the unmutated copy fails %s (%s); fix that first" % (s, detail))
                return 2
        print("mutate: unmutated copy builds and passes %d unit suites (%.0f s)"
              % (len(names), time.time() - t0), flush=True)
        caught = survived = broken = 0
        survivors = []
        # .c files first: a header mutation rebuilds most of the library
        for m in sorted(todo, key=lambda m: m[1].endswith(".h")):
            t1 = time.time()
            orig, why = apply(tree, m)
            if orig is None:
                broken += 1
                print("[ BROKEN   ] %s: %s" % (m[0], why), flush=True)
                continue
            try:
                # the likely suites first, built alone (most mutants stop there), then the rest
                first = [s for s in m[4] if s in names]
                by = None
                for stage, group in (("first", first),
                                     ("rest", [s for s in names if s not in first])):
                    if not group:
                        continue
                    ok, log = build(tree, a.jobs, ["build/tests/" + s for s in group]
                                    if stage == "first" else ["tests"])
                    if not ok:
                        by = "BROKEN"
                        break
                    for s in group:
                        passed, detail = run_suite(tree, s)
                        if not passed:
                            by = (by + "; " if by else "") + "%s (%s)" % (s, detail)
                            if not a.every:
                                break
                    if by and not a.every:
                        break
                if by == "BROKEN":
                    broken += 1
                    tail = "\n".join(l for l in log.splitlines() if "error" in l)[-600:]
                    print("[ BROKEN   ] %s: the mutant does not build\n%s" % (m[0], tail),
                          flush=True)
                    continue
                if by:
                    caught += 1
                    print("[ CAUGHT   ] %s: by %s [%.0f s]" % (m[0], by, time.time() - t1),
                          flush=True)
                else:
                    survived += 1
                    survivors.append(m[0])
                    print("[ SURVIVED ] %s: %s: '%s' -> '%s' passes every unit suite [%.0f s]"
                          % (m[0], m[1], m[2], m[3], time.time() - t1), flush=True)
            finally:
                restore(tree, m[1], orig)
        print("mutate: %d mutations, %d caught, %d survived, %d broken (%.0f s)%s"
              % (len(todo), caught, survived, broken, time.time() - t0,
                 "; survivors: " + " ".join(survivors) if survivors else ""))
        return 0 if caught == len(todo) else 1
    finally:
        if a.keep:
            print("mutate: kept %s" % tree)
        else:
            shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
