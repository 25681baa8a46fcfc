/* io/pickle.h — a strict reader of the pickle that torch.save writes for a state dict (the
 * data.pkl of a PyTorch zip checkpoint). Nothing is ever executed or imported: the opcodes are
 * interpreted here over a few passive values, and the only callables it knows (the globals
 * below) are recognised by name and stand for data. Anything else is refused by name. A pure
 * parser over bytes in memory (SPEC §8, "PyTorch checkpoints"). */
#ifndef FP4_PICKLE_H
#define FP4_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Dimensions kept per tensor; a tensor of higher rank gets `problem`. */
#define FP4_PKL_MAX_RANK 8

/* One tensor of the state dict: a view (offset, size, stride, in elements) into a storage. */
typedef struct fp4_pkl_tensor {
    char *name;              /* the dict keys from the top down joined by '.' (owned, UTF-8, no
                                NUL or control character): "model.layers.0.mlp.up_proj.weight";
                                an integer key (an optimizer's state) in decimal, a list
                                element by its index */
    char *storage_key;       /* the storage's key: its bytes are the zip member data/KEY (owned) */
    char storage_type[48];   /* the storage class as written: "FloatStorage", "BFloat16Storage" */
    char location[32];       /* where it was saved from: "cpu", "cuda:0" (truncated) */
    int64_t storage_numel;   /* elements of the storage (as recorded in the pickle) */
    int64_t offset;          /* storage_offset, elements */
    int rank;                /* may exceed FP4_PKL_MAX_RANK (then `problem` is set) */
    int64_t size[FP4_PKL_MAX_RANK];
    int64_t stride[FP4_PKL_MAX_RANK];
    char problem[160];       /* "" when the view can be read as far as the pickle says; else why
                                not ("rank 9 exceeds 8"; a negative stride or storage offset,
                                which torch.save never writes; a persistent id naming its storage key
                                with another class or element count than the key's first id,
                                which torch.load builds the storage from and reuses) */
} fp4_pkl_tensor;

/* Read the pickle buf[0..size) (protocols 2 to 5) and list the tensors of the dict it builds.
 * Accepted opcodes: PROTO, FRAME, STOP, MARK, EMPTY_DICT/LIST/TUPLE, TUPLE/TUPLE1-3,
 * SETITEM(S), APPEND(S), BININT/BININT1/BININT2/LONG1, BINFLOAT, NONE, NEWTRUE/NEWFALSE,
 * BINUNICODE/SHORT_BINUNICODE/BINUNICODE8, BINPUT/LONG_BINPUT/MEMOIZE, BINGET/LONG_BINGET,
 * GLOBAL/STACK_GLOBAL, REDUCE, BUILD, BINPERSID. Accepted globals: collections.OrderedDict
 * (REDUCE with no arguments: an empty dict; BUILD on it: its attributes, ignored),
 * torch._utils._rebuild_tensor_v2 (storage, offset, size, stride, requires_grad, hooks
 * [, metadata]), torch._utils._rebuild_parameter (tensor, requires_grad, hooks),
 * torch.NAMEStorage (a typed storage class, as the persistent id ('storage', class, key,
 * location, numel) names it) and torch.DTYPE (float32, bfloat16, ...: values only).
 * The result must be a dict; tensors are collected from it and from the dicts and lists in it
 * (other values — numbers, strings, None — are ignored). A dict key that cannot name a tensor
 * does not stop the others: where a tensor lies under it, one entry with no storage
 * (storage_key "", storage_type "") and `problem` set stands for it — a key that is not a
 * string or an integer or is empty (named "[key I: KIND]", I its position in the dict), a key
 * holding control characters, a NUL or bytes that are not valid UTF-8 (named with them
 * escaped as \xNN), dicts nested deeper than 32 (named by the path down to there). A name
 * given twice (a key set twice, "a.b" beside {"a": {"b": ...}}) is listed twice: the caller
 * refuses it (SPEC §8). A storage key is one storage: a tensor whose persistent id gives its
 * key another class or element count than the key's first persistent id in the stream has
 * `problem` set, naming the key, both and a tensor read through the first (SPEC §8).
 * FP4_ERR_INPUT "FILE: <what is wrong>" for: any other opcode ("pickle opcode 0x.. (NAME) at
 * byte N refused"), any other global ("pickle global os.system refused"), a REDUCE or BUILD
 * on anything else, an argument of the wrong kind, a truncated stream, a stack or memo misuse,
 * a global's name or storage location that is not valid UTF-8, negative sizes (a negative
 * stride or offset is that tensor's `problem`), a size, stride or offset not an integer,
 * or shared objects that would list more entries than the pickle has bytes.
 * *out (free with fp4_pkl_free) only on FP4_OK; FP4_ERR_INTERNAL when out of memory. Every
 * byte read lies in buf[0..size). */
fp4_status fp4_pickle_state_dict(const char *file, const uint8_t *buf, size_t size,
                                 fp4_pkl_tensor **out, int *n);
void fp4_pkl_free(fp4_pkl_tensor *t, int n);

#endif
