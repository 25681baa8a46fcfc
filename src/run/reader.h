/* reader.h — the reader pipeline of a run (SPEC §8): one thread per run reads every slab of
 * every tensor, in the order the analysis takes them, into a queue of ready slabs, so that the
 * next slabs and the next tensor are read and decoded while the current one is analysed.
 * How each tensor is read (fp4_read_plan) is decided before the reader starts, so reader and
 * analysis agree on every slab. Memory: slab buffers, kept rows and transposition targets
 * together stay within a budget (--mem-limit), except when the analysis waits on an empty
 * queue (then the reader may take what the current tensor needs: it never deadlocks on its own
 * read-ahead); at most one tensor ahead holds buffers of its own. The io/ source is called
 * from the reader's thread alone while it runs. */
#ifndef FP4_RUN_READER_H
#define FP4_RUN_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/status.h"
#include "io/source.h"
#include "run/driver.h"

/* How one tensor is read and analysed: decided before the reader starts, from the description
 * and the config alone (driver.c's plan_tensor), so that reader and analysis agree on every
 * slab. The reader reads slabs [k * count_max, +count_max) of dimension L.slab_dim (the last
 * one shorter), read_passes times, as fp32 or, when words != 0, as stored 16-bit words
 * (fp4_source_read_raw); a tensor with err != FP4_OK or !reads has no slab. keep: the slabs
 * are read into one buffer holding the whole tensor (fp4_tensor_mem.kept), in place when no
 * transposition is needed; need_transpose && !keep: a rows buffer of buf_elems floats is made
 * for the analysis. skip_zero: runs of never-written zero slabs come as one entry (zend). */
typedef struct fp4_read_plan {
    fp4_status err; /* FP4_OK, or why the tensor is an error entry before any read */
    char *msg;
    int axis;
    fp4_layout L;
    int64_t count_max, total, buf_elems;
    bool need_transpose, two_pass, keep, reads;
    bool skip_zero;  /* ask the source for slabs of never-written zeros: counted, not read
                        (rows not kept, several slabs) */
    int nbuf;       /* 1: the whole tensor is one slab (read once for both passes) */
    int read_passes; /* 2 when the second pass reads the tensor again (too large to keep) */
    int words;       /* 0: fp32; else the stored 16-bit words, fp4_words of that kind */
    int64_t esz;     /* bytes per element as read */
} fp4_read_plan;

/* One slab read ahead: the values of [k * count_max, +cnt) along slab_dim of tensor `seq`. */
typedef struct fp4_ready_slab {
    int seq, pass;
    int64_t k, cnt;
    int64_t zend;       /* > 0: slabs k .. zend-1 are never-written zeros, nothing read */
    unsigned char *buf; /* the values (NULL on failure); inside the kept rows when !own */
    int64_t cap;    /* bytes of buf when owned */
    bool own, last; /* last: no more slabs of this tensor follow */
    fp4_status st;  /* a read failure of this tensor, detail in err */
    char *err;
} fp4_ready_slab;

/* The buffers a tensor holds for its whole analysis (allocated by the reader before its first
 * slab, freed by the analysis after its last use): the kept rows, the transposition target. */
typedef struct fp4_tensor_mem {
    unsigned char *kept; /* the whole tensor as read (fp32 or words) */
    float *rows;
    int64_t kept_cap, rows_cap; /* their sizes in bytes (what they hold of the budget) */
} fp4_tensor_mem;


typedef struct fp4_reader fp4_reader;

/* Bytes of one element as read: a stored 16-bit word (words != 0), or fp32. */
size_t fp4_read_elem_size(int words);

/* Start the reader thread over the n tensors infos[0..n) (the analysis' order) with their
 * plans (both borrowed until fp4_reader_join), within `budget` bytes. be receives the kept
 * buffers to register (fp4_reader_register_kept); NULL: none is. FP4_ERR_INTERNAL when out
 * of memory or no thread starts (then *out is NULL). */
fp4_status fp4_reader_start(fp4_source *src, fp4_backend *be,
                            const fp4_tensor_desc *const *infos, const fp4_read_plan *plans,
                            int n, int64_t budget, fp4_reader **out);

/* The next ready slab, which must be of tensor seq (the reader's order is the analysis'):
 * waits for it. A read failure is recorded on this thread (fp4_last_error, naming the file and
 * tensor) and returned, FP4_ERR_INPUT; that slab is the tensor's last (s->last). Slabs of
 * another tensor than seq: FP4_ERR_INTERNAL. Give each slab back with fp4_reader_release. */
fp4_status fp4_reader_next(fp4_reader *r, int seq, fp4_ready_slab *s);

/* Give a slab's buffer back (kept for reuse, or freed); a slab inside kept rows, or a zero
 * run, holds none. Idempotent. */
void fp4_reader_release(fp4_reader *r, fp4_ready_slab *s);

/* The analysis is through with tensor seq (analysed, or an error entry): the reader may take
 * buffers for tensor seq + 2. */
void fp4_reader_passed(fp4_reader *r, int seq);

/* Tensor seq's own buffers (kept rows, rows) are given back; call once its analysis is over. */
void fp4_reader_tensor_done(fp4_reader *r, int seq);

/* The analysis gives tensor seq up; seen_last says whether its last slab already came. The
 * reader reads no more of it and its remaining slabs are dropped here. */
void fp4_reader_skip(fp4_reader *r, int seq, bool seen_last);

/* Tensor seq's own buffers as the reader made them (valid once its first slab came). */
const fp4_tensor_mem *fp4_reader_mem(const fp4_reader *r, int seq);

/* Hand tensor seq's kept buffer to the backend as a stable range (fp4_backend_host_register:
 * CUDA pins it at its first use) unless it is registered already; at most FP4_HOST_REGS at a
 * time (a buffer beyond those goes through staging). No-op without a backend or kept rows. */
void fp4_reader_register_kept(fp4_reader *r, int seq);

/* Stop and join the reader thread and free everything it holds (slabs not taken, cached
 * buffers, kept rows; registered buffers unregistered first). Call it on the thread that
 * analyses, before the source closes. NULL is fine. */
void fp4_reader_join(fp4_reader *r);

#endif
