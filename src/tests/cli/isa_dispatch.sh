#!/bin/sh
# isa_dispatch.sh — FP4DIAG_ISA reaches every CPU dispatch (issue 25): under generic and avx2
# the quantizer, the RHT, the amax on fp32 rows and on stored words, the input counts and the
# f16 widening each run that variant's code (the trace's "isa ran:" line), with generic's
# report. avx512: isa_dispatch_avx512.sh. Run alone: FP4DIAG=$PWD/fp4diag sh src/tests/cli/isa_dispatch.sh
. "$(dirname "$0")/lib/isa.sh"
case $(uname -m) in
    x86_64) isa_case avx2 ;;
    aarch64) isa_case neon ;;
    *) isa_case ;;
esac
