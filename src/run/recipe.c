/* recipe.c — the table of what 4-bit recipes keep in high precision (run/recipe.h). */
#include "run/recipe.h"

#include <ctype.h>
#include <fnmatch.h>
#include "base/match.h"
#include <stdio.h>
#include <string.h>

/* First match wins. Sources: ModelOpt's _default_disabled_quantizer_cfg ("*lm_head*",
 * "*proj_out.*", "*block_sparse_moe.gate*", "*router*", "*mlp.gate.*",
 * "*mlp.shared_expert_gate.*", "*linear_attn.conv1d*", "*mixer.conv1d*", "*output_layer*",
 * "output.*") and its targets (Linear and Conv1D-like layers: embeddings and norms get no
 * quantizer); llm-compressor's scheme targets ["Linear"] with ignore ["lm_head"] and MoE gates
 * ("re:.*mlp.gate$"). GPT-2's Conv1D (c_attn, c_fc, c_proj) is a Linear with its weight
 * transposed: quantized, so no rule names it. */
const fp4_recipe_rule fp4_recipe_rules[] = {
    /* optimizer state of a training checkpoint (torch.save({"model": ..., "optimizer": ...}):
     * optimizer.state.N.exp_avg; Lightning's optimizer_states; states keyed by parameter name,
     * hence first): Adam's moments, SGD's momentum; not a weight a recipe quantizes */
    {"optimizer state", "*optimizer*", FP4_RECIPE_MODULE},
    {"optimizer state", "*exp_avg*", FP4_RECIPE_LEAF},   /* exp_avg, exp_avg_sq, max_exp_avg_sq */
    {"optimizer state", "momentum_buffer", FP4_RECIPE_LEAF},
    /* biases: any leaf ending in "bias" (gpt-oss gate_up_proj_bias [E, 2I], GPT-2's attn.bias
     * mask buffer); recipes quantize weights only */
    {"bias", "*bias", FP4_RECIPE_LEAF},
    /* output heads (before embeddings: "unembedding", "embed_out") */
    {"output head", "*lm_head*", FP4_RECIPE_MODULE},
    {"output head", "*embed_out", FP4_RECIPE_MODULE},     /* GPT-NeoX */
    {"output head", "*unembedding*", FP4_RECIPE_MODULE},   /* gpt-oss original layout */
    {"output head", "*proj_out", FP4_RECIPE_MODULE},       /* Whisper's lm_head */
    {"output head", "*output_layer*", FP4_RECIPE_MODULE},
    {"output head", "output", FP4_RECIPE_MODULE},
    /* embeddings: Embedding modules, never a Linear target */
    {"embedding", "*embed*", FP4_RECIPE_MODULE},          /* embed_tokens, word_embeddings,
                                                              embed_positions */
    {"embedding", "wte", FP4_RECIPE_MODULE},               /* GPT-2 token embedding */
    {"embedding", "*.wte", FP4_RECIPE_MODULE},
    {"embedding", "wpe", FP4_RECIPE_MODULE},               /* GPT-2 position embedding */
    {"embedding", "*.wpe", FP4_RECIPE_MODULE},
    {"embedding", "shared", FP4_RECIPE_MODULE},            /* T5's shared embedding */
    {"embedding", "*relative_attention_bias", FP4_RECIPE_MODULE}, /* T5 position buckets */
    /* normalisation layers (no Linear) */
    {"norm", "*norm*", FP4_RECIPE_MODULE},                 /* input_layernorm, LayerNorm, norm */
    {"norm", "ln[_f0-9]*", FP4_RECIPE_MODULE},             /* GPT-2 ln_1, ln_f; ln1, lnf */
    {"norm", "*.ln[_f0-9]*", FP4_RECIPE_MODULE},
    /* MoE routers and gates */
    {"MoE router", "*router*", FP4_RECIPE_MODULE},         /* gpt-oss, Switch */
    {"MoE router", "*block_sparse_moe.gate", FP4_RECIPE_MODULE}, /* Mixtral */
    {"MoE router", "*mlp.gate", FP4_RECIPE_MODULE},        /* Qwen-MoE, DeepSeek, gpt-oss orig */
    {"MoE router", "*shared_expert_gate", FP4_RECIPE_MODULE}, /* Qwen2-MoE */
    /* state-space convolutions */
    {"conv1d", "*mixer.conv1d", FP4_RECIPE_MODULE},
    {"conv1d", "*linear_attn.conv1d", FP4_RECIPE_MODULE},
};
const int fp4_recipe_nrules = (int)(sizeof fp4_recipe_rules / sizeof fp4_recipe_rules[0]);

/* name normalised: no leading '/', '/' as '.' */
static void normalise(const char *name, char *buf, size_t n)
{
    while (*name == '/') name++;
    snprintf(buf, n, "%s", name);
    for (char *p = buf; *p; p++)
        if (*p == '/') *p = '.';
}

void fp4_recipe_module(const char *name, char *buf, size_t n)
{
    if (n == 0) return;
    normalise(name, buf, n);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = '\0';
}

const fp4_recipe_rule *fp4_recipe_keeps(const char *name)
{
    char full[1024], mod[1024];
    normalise(name, full, sizeof full);
    fp4_recipe_module(name, mod, sizeof mod);
    for (char *p = full; *p; p++) *p = (char)tolower((unsigned char)*p);
    for (char *p = mod; *p; p++) *p = (char)tolower((unsigned char)*p);
    const char *dot = strrchr(full, '.');
    const char *leaf = dot ? dot + 1 : full;
    for (int i = 0; i < fp4_recipe_nrules; i++) {
        const fp4_recipe_rule *r = &fp4_recipe_rules[i];
        const char *subject = r->on == FP4_RECIPE_LEAF ? leaf : mod;
        if (fnmatch(r->glob, subject, 0) == 0) return r; /* globs and subject in lower case */
    }
    return NULL;
}

bool fp4_recipe_exclude_matches(const char *pattern, const char *name)
{
    char full[1024], mod[1024];
    normalise(name, full, sizeof full);
    fp4_recipe_module(name, mod, sizeof mod);
    if (!strncmp(pattern, "re:", 3))
        return fp4_regex_match(pattern + 3, mod) || fp4_regex_match(pattern + 3, full);
    return !strcmp(pattern, mod) || !strcmp(pattern, full) || fnmatch(pattern, mod, 0) == 0 ||
           fnmatch(pattern, full, 0) == 0;
}
