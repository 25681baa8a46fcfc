/* io/mapguard.h — reads from a memory-mapped input made safe against the file shrinking while
 * it is read. Touching a page of a mapping past the file's new end raises SIGBUS, which kills
 * the process; inside fp4_mapguard_call the signal ends the call instead, on the thread that
 * touched the page, and the call says so: the read becomes that tensor's errors entry.
 *
 * Chosen over reading mapped inputs with pread (issue 26): on the shared 2-core EPYC VM (AVX2,
 * load 9-14), a 256 MiB file from the page cache in 8 MiB slabs on one thread, best of 7: mapped
 * and guarded 0.37-0.51x the time of pread (0.19-0.65 s vs 0.44-1.33 s over five runs; 1 MiB
 * slabs 0.39x; scripts/bench_mapread.c). The guard costs one sigsetjmp per slab or piece. */
#ifndef FP4_IO_MAPGUARD_H
#define FP4_IO_MAPGUARD_H

#include <stdbool.h>

/* fn(ctx) on this thread; true when it returned, false when it touched a mapped page the file
 * no longer holds (SIGBUS): fn was then abandoned where it faulted, so it must hold nothing
 * that needs releasing (no lock, no allocation of its own: it copies or converts mapped bytes
 * into memory the caller owns). Calls nest. A SIGBUS outside any call is handled as before
 * (the previous action: by default the process ends). Thread-safe. */
bool fp4_mapguard_call(void (*fn)(void *ctx), void *ctx);

#endif
