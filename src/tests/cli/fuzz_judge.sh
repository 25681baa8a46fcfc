#!/bin/sh
# fuzz_judge.sh — scripts/fuzz_run.sh judges a finding by the first frame of its stack outside
# the sanitizer runtime, libFuzzer and libc. Stacks from `make fuzz` (h5load, 2026-11-30) that
# lie inside libhdf5 were judged "ours" (make fuzz failed): glibc frames symbolized from debug
# info ("string/../sysdeps/...") and libFuzzer's own frames (fuzzer::PrintStackTrace, its
# malloc hook, on oom and timeout) were not skipped; nor was an ASan interceptor symbolized
# under its libc name (strdup, `make check`'s fuzz-ci on 2026-12-01: a heap overflow in
# H5G__ent_to_link on a corrupt group). A stack in our code must stay "ours".
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
J="$(dirname "$0")/../../../scripts/fuzz_run.sh"
cat >"$tmp/crash" <<'STACK'
    #0 0x7ffb69d80809 in __memcpy_avx512_unaligned_erms string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:273
    #1 0x55a5fa7a94f7 in __interceptor_memcpy (/src/build-fuzz/fuzz_h5load+0x804f7)
    #2 0x7ffb6c4c1fca in H5VM_memcpyvv (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x2c1fca)
    #3 0x7ffb6c2b22b7  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xb22b7)
    #4 0x7ffb6c2cb2c7  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xcb2c7)
    #5 0x7ffb6c2cbd3b in H5D__scatgath_read (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xcbd3b)
    #6 0x7ffb6c2b45b2 in H5D__contig_read (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xb45b2)
    #7 0x7ffb6c2c7a90 in H5D__read (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xc7a90)
    #8 0x7ffb6c2c7f74 in H5Dread (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xc7f74)
    #9 0x55a5fa855f70 in h5io_read /src/src/h5io.c:655:9
STACK
cat >"$tmp/timeout" <<'STACK'
    #0 0x555ba0bd7061 in __sanitizer_print_stack_trace (/src/build-fuzz/fuzz_h5load+0xf3061)
    #1 0x555ba0b499b8 in fuzzer::PrintStackTrace() (/src/build-fuzz/fuzz_h5load+0x659b8)
    #2 0x555ba0b2f1f9 in fuzzer::Fuzzer::AlarmCallback() (/src/build-fuzz/fuzz_h5load+0x4b1f9)
    #3 0x7f637bf6f04f  (/lib/x86_64-linux-gnu/libc.so.6+0x3c04f)
    #4 0x7f637c0a10b9 in __memset_avx512_unaligned_erms string/../sysdeps/x86_64/multiarch/memset-vec-unaligned-erms.S:235
    #5 0x555ba0b63ddd in __interceptor_memset (/src/build-fuzz/fuzz_h5load+0x7fddd)
    #6 0x7f637e6bd386 in H5D__fill_init (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xbd386)
    #7 0x7f637e6abba6  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xabba6)
    #8 0x7f637e6acdc6  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xacdc6)
    #9 0x7f637e6c7a90 in H5D__read (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xc7a90)
STACK
cat >"$tmp/oom" <<'STACK'
    #0 0x5643c28bc061 in __sanitizer_print_stack_trace (/src/build-fuzz/fuzz_h5load+0xf3061)
    #1 0x5643c282e9b8 in fuzzer::PrintStackTrace() (/src/build-fuzz/fuzz_h5load+0x659b8)
    #2 0x5643c28134c5 in fuzzer::Fuzzer::HandleMalloc(unsigned long) (/src/build-fuzz/fuzz_h5load+0x4a4c5)
    #3 0x5643c28133da in fuzzer::MallocHook(void const volatile*, unsigned long) (/src/build-fuzz/fuzz_h5load+0x4a3da)
    #4 0x5643c28c34e7 in __sanitizer::RunMallocHooks(void const*, unsigned long) (/src/build-fuzz/fuzz_h5load+0xfa4e7)
    #5 0x5643c2831be4 in __asan::Allocator::Allocate(unsigned long, unsigned long, __sanitizer::BufferedStackTrace*, __asan::AllocType, bool) (/src/build-fuzz/fuzz_h5load+0x68be4)
    #6 0x5643c2831523 in __asan::asan_malloc(unsigned long, __sanitizer::BufferedStackTrace*) (/src/build-fuzz/fuzz_h5load+0x68523)
    #7 0x5643c28b1fdd in malloc (/src/build-fuzz/fuzz_h5load+0xe8fdd)
    #8 0x7f3cc41233e4  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1233e4)
    #9 0x7f3cc4123af1 in H5FL_blk_malloc (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x123af1)
STACK
cat >"$tmp/strdup" <<'STACK'
    #0 0x561b3a22f8f5 in strdup (/tmp/fresh/build-fuzz/fuzz_h5load+0xd38f5) (BuildId: 33b6695fcceebdb5d56475eb2f41a5faa0f22fa5)
    #1 0x7fae949842ad in H5MM_xstrdup (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1842ad) (BuildId: e923ff058f7cfc1a31cc68764211396ffb3aeb91)
    #2 0x7fae9493c210 in H5G__ent_to_link (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x13c210) (BuildId: e923ff058f7cfc1a31cc68764211396ffb3aeb91)
    #10 0x561b3a285d3f in fp4_h5_select /tmp/fresh/src/h5io.c:506:17
STACK
cat >"$tmp/ours" <<'STACK'
    #0 0x7fe4ff380809 in __memcpy_avx512_unaligned_erms string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:273
    #1 0x561452a8b4f7 in __interceptor_memcpy (/src/build-fuzz/fuzz_h5load+0x804f7)
    #2 0x561452b37f70 in h5io_read /src/src/h5io.c:655:9
    #3 0x7fe5018c7f74 in H5Dread (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0xc7f74)
STACK
for k in crash timeout oom strdup; do
    v=$(sh "$J" --judge "$tmp/$k") || fail "fuzz_run.sh --judge $k: exit $?"
    [ "$v" = hdf5 ] || { cat "$tmp/$k"; fail "$k stack inside libhdf5 judged '$v'"; }
done
v=$(sh "$J" --judge "$tmp/ours") || fail "fuzz_run.sh --judge ours: exit $?"
[ "$v" = ours ] || fail "a stack in h5io.c judged '$v'"
exit 0
