/* recipe.h — what 4-bit recipes quantize (SPEC §9 "Default selection"): the conventions of
 * NVIDIA ModelOpt (its default disabled quantizers: *lm_head*, *router*, *mlp.gate.*, ...) and
 * llm-compressor (targets: Linear; ignore: lm_head, MoE gates). A tensor one of these rules
 * matches is "kept in high precision by recipe": left out of the default selection and listed
 * with the rule that matched. The rules are data: fp4_recipe_rules, one table.
 *
 * Names are matched after normalisation: a leading '/' dropped, '/' read as '.' (HDF5 paths
 * and Hugging Face names alike). The "module" of a tensor is its name without the last
 * component ("model.layers.0.mlp.gate" of "model.layers.0.mlp.gate.weight"); the "leaf" is
 * that last component ("weight", "bias", "gate_up_proj_bias"). */
#ifndef FP4_RECIPE_H
#define FP4_RECIPE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum fp4_recipe_on {
    FP4_RECIPE_MODULE = 0, /* the glob is matched against the whole module path */
    FP4_RECIPE_LEAF = 1    /* against the leaf (the last component) */
} fp4_recipe_on;

typedef struct fp4_recipe_rule {
    const char *kind;  /* "embedding", "output head", "norm", "MoE router", "bias", "conv1d" */
    const char *glob;  /* fnmatch in lower case against the lower-cased subject (so
                          case-insensitive); '*' crosses dots ("*mlp.gate") */
    fp4_recipe_on on;
} fp4_recipe_rule;

/* The table, first match wins; fp4_recipe_nrules entries. */
extern const fp4_recipe_rule fp4_recipe_rules[];
extern const int fp4_recipe_nrules;

/* The rule that keeps tensor `name` in high precision, or NULL (a tensor recipes quantize). */
const fp4_recipe_rule *fp4_recipe_keeps(const char *name);

/* The normalised module path of tensor `name` into buf (n bytes; truncated, always
 * terminated): the name without a leading '/', '/' as '.', without its last component (a name
 * of one component is its own module). What ModelOpt's exclude_modules and llm-compressor's
 * ignore name. */
void fp4_recipe_module(const char *name, char *buf, size_t n);

/* Whether the pattern of a checkpoint's exclude list (hf_quant_config.json exclude_modules,
 * config.json quantization_config.ignore / modules_to_not_convert) names tensor `name`: the
 * pattern is matched against the module path and the whole normalised name, exactly or as an
 * fnmatch glob, or, written "re:REGEX" (compressed-tensors), when Python's re.match(REGEX,
 * name) would match (anchored at the start of the name, not at its end: base/match.h). A
 * REGEX base/match.h refuses matches nothing (io/quantized.c refuses such a list). */
bool fp4_recipe_exclude_matches(const char *pattern, const char *name);

#endif
