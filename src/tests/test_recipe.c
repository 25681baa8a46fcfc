/* test_recipe.c — the table of what 4-bit recipes keep in high precision (run/recipe.h, SPEC §9
 * "Default selection") on the names of Llama, Mixtral, Qwen-MoE, GPT-2, gpt-oss, T5 and
 * Whisper checkpoints, HDF5 paths, and a checkpoint's own exclude patterns ("re:" included). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/match.h"
#include "run/recipe.h"

/* The kind of the rule that keeps `name`, or "" when recipes quantize it. */
static const char *kind(const char *name)
{
    const fp4_recipe_rule *r = fp4_recipe_keeps(name);
    return r ? r->kind : "";
}

#define KEPT(name, k) assert_string_equal(kind(name), k)
#define QUANTIZED(name) assert_string_equal(kind(name), "")

static void test_llama(void **state)
{
    (void)state;
    KEPT("model.embed_tokens.weight", "embedding");
    KEPT("lm_head.weight", "output head");
    KEPT("model.norm.weight", "norm");
    KEPT("model.layers.0.input_layernorm.weight", "norm");
    KEPT("model.layers.0.post_attention_layernorm.weight", "norm");
    KEPT("model.layers.0.self_attn.q_proj.bias", "bias"); /* Qwen2 attention biases */
    QUANTIZED("model.layers.0.self_attn.q_proj.weight");
    QUANTIZED("model.layers.0.self_attn.o_proj.weight");
    QUANTIZED("model.layers.10.mlp.gate_proj.weight");
    QUANTIZED("model.layers.10.mlp.up_proj.weight");
    QUANTIZED("model.layers.10.mlp.down_proj.weight");
    /* HDF5 paths: '/' reads as '.' */
    KEPT("/model/embed_tokens/weight", "embedding");
    QUANTIZED("/blocks/0/qkv/weight");
    KEPT("/blocks/0/qkv/bias", "bias");
    KEPT("/lnf/weight", "norm");
}

static void test_moe(void **state)
{
    (void)state;
    /* Mixtral */
    KEPT("model.layers.3.block_sparse_moe.gate.weight", "MoE router");
    QUANTIZED("model.layers.3.block_sparse_moe.experts.7.w1.weight");
    QUANTIZED("model.layers.3.block_sparse_moe.experts.7.w2.weight");
    QUANTIZED("model.layers.3.block_sparse_moe.experts.7.w3.weight");
    /* Qwen2-MoE / Qwen3-MoE / DeepSeek: mlp.gate is the router, mlp.gate_proj a Linear */
    KEPT("model.layers.0.mlp.gate.weight", "MoE router");
    KEPT("model.layers.0.mlp.shared_expert_gate.weight", "MoE router");
    QUANTIZED("model.layers.0.mlp.experts.12.gate_proj.weight");
    QUANTIZED("model.layers.0.mlp.shared_expert.gate_proj.weight");
    QUANTIZED("model.layers.0.mlp.shared_expert.down_proj.weight");
    /* gpt-oss (Hugging Face layout): fused expert parameters without ".weight" */
    KEPT("model.layers.0.mlp.router.weight", "MoE router");
    KEPT("model.layers.0.mlp.router.bias", "bias");
    QUANTIZED("model.layers.0.mlp.experts.gate_up_proj");
    QUANTIZED("model.layers.0.mlp.experts.down_proj");
    KEPT("model.layers.0.mlp.experts.gate_up_proj_bias", "bias");
    KEPT("model.layers.0.mlp.experts.down_proj_bias", "bias");
    QUANTIZED("model.layers.0.self_attn.q_proj.weight");
    KEPT("model.embed_tokens.weight", "embedding");
    /* gpt-oss original layout */
    KEPT("embedding.weight", "embedding");
    KEPT("unembedding.weight", "output head");
    KEPT("gpt_neox.embed_out.weight", "output head");
    KEPT("block.0.mlp.gate.weight", "MoE router");
    KEPT("block.0.attn.norm.scale", "norm");
    QUANTIZED("block.0.attn.qkv.weight");
}

static void test_gpt2(void **state)
{
    (void)state;
    KEPT("wte.weight", "embedding");
    KEPT("wpe.weight", "embedding");
    KEPT("transformer.wte.weight", "embedding");
    KEPT("h.0.ln_1.weight", "norm");
    KEPT("transformer.ln_f.weight", "norm");
    KEPT("h.0.attn.bias", "bias"); /* the causal-mask buffer of old checkpoints (rank 4) */
    KEPT("h.0.attn.masked_bias", "bias");
    /* Conv1D is a Linear with its weight transposed: quantized */
    QUANTIZED("h.0.attn.c_attn.weight");
    QUANTIZED("h.0.attn.c_proj.weight");
    QUANTIZED("transformer.h.11.mlp.c_fc.weight");
    QUANTIZED("transformer.h.11.mlp.c_proj.weight");
}

static void test_t5_whisper(void **state)
{
    (void)state;
    KEPT("shared.weight", "embedding");
    KEPT("encoder.embed_tokens.weight", "embedding");
    KEPT("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", "embedding");
    KEPT("encoder.block.0.layer.0.layer_norm.weight", "norm");
    KEPT("decoder.final_layer_norm.weight", "norm");
    KEPT("lm_head.weight", "output head");
    QUANTIZED("encoder.block.0.layer.0.SelfAttention.q.weight");
    QUANTIZED("encoder.block.0.layer.0.SelfAttention.o.weight");
    QUANTIZED("decoder.block.3.layer.1.EncDecAttention.k.weight");
    QUANTIZED("encoder.block.0.layer.1.DenseReluDense.wi_0.weight");
    QUANTIZED("encoder.block.0.layer.1.DenseReluDense.wo.weight");
    /* Whisper: proj_out is its lm_head; BERT-style capitalised LayerNorm */
    KEPT("proj_out.weight", "output head");
    KEPT("bert.encoder.layer.0.attention.output.LayerNorm.weight", "norm");
    KEPT("bert.embeddings.word_embeddings.weight", "embedding");
    QUANTIZED("bert.encoder.layer.0.attention.self.query.weight");
    /* Megatron / llama.cpp style heads; state-space convolutions */
    KEPT("output.weight", "output head");
    KEPT("model.output_layer.weight", "output head");
    KEPT("backbone.layers.0.mixer.conv1d.weight", "conv1d");
    QUANTIZED("backbone.layers.0.mixer.in_proj.weight");
}

/* A training checkpoint's optimizer state is no weight: torch's integer-keyed state, Lightning's
 * optimizer_states, states keyed by parameter name (before the norm and embedding rules), and
 * the moments under any top-level name. */
static void test_optimizer_state(void **state)
{
    (void)state;
    KEPT("optimizer.state.0.exp_avg", "optimizer state");
    KEPT("optimizer.state.0.exp_avg_sq", "optimizer state");
    KEPT("optimizer_states.0.state.3.momentum_buffer", "optimizer state");
    KEPT("optimizer.state.model.layers.0.input_layernorm.weight.exp_avg", "optimizer state");
    KEPT("optimizer.state.model.embed_tokens.weight.exp_avg_sq", "optimizer state");
    KEPT("opt.state.7.max_exp_avg_sq", "optimizer state");
    KEPT("opt.state.7.momentum_buffer", "optimizer state");
    KEPT("/optimizer/state/0/exp_avg", "optimizer state");
    QUANTIZED("model.model.layers.0.mlp.down_proj.weight"); /* the same checkpoint's weights */
    QUANTIZED("model.layers.0.self_attn.q_proj.weight");
    KEPT("model.model.embed_tokens.weight", "embedding");
}

static void test_module_and_rules(void **state)
{
    (void)state;
    char m[64];
    fp4_recipe_module("model.layers.0.mlp.gate.weight", m, sizeof m);
    assert_string_equal(m, "model.layers.0.mlp.gate");
    fp4_recipe_module("/blocks/0/qkv/weight", m, sizeof m);
    assert_string_equal(m, "blocks.0.qkv");
    fp4_recipe_module("lm_head", m, sizeof m);
    assert_string_equal(m, "lm_head");
    fp4_recipe_module("model.layers.0.mlp.experts.gate_up_proj", m, sizeof m);
    assert_string_equal(m, "model.layers.0.mlp.experts");
    char small[5];
    fp4_recipe_module("model.layers.0.mlp.gate.weight", small, sizeof small);
    assert_string_equal(small, "mode"); /* truncated, terminated */
    /* every rule of the table is reachable: its own glob's literal form matches it first or
     * an earlier rule of the same kind does */
    assert_true(fp4_recipe_nrules > 10);
    for (int i = 0; i < fp4_recipe_nrules; i++) {
        assert_non_null(fp4_recipe_rules[i].kind);
        assert_non_null(fp4_recipe_rules[i].glob);
        for (const char *p = fp4_recipe_rules[i].glob; *p; p++)
            assert_false(*p >= 'A' && *p <= 'Z'); /* globs in lower case (see recipe.h) */
    }
}

static void test_checkpoint_exclude(void **state)
{
    (void)state;
    /* ModelOpt exclude_modules: module names and globs */
    assert_true(fp4_recipe_exclude_matches("lm_head", "lm_head.weight"));
    assert_true(fp4_recipe_exclude_matches("model.layers.1.mlp.down_proj",
                                           "model.layers.1.mlp.down_proj.weight"));
    assert_false(fp4_recipe_exclude_matches("model.layers.1.mlp.down_proj",
                                            "model.layers.11.mlp.down_proj.weight"));
    assert_true(fp4_recipe_exclude_matches("*self_attn*", "model.layers.0.self_attn.q_proj.weight"));
    assert_false(fp4_recipe_exclude_matches("*self_attn*", "model.layers.0.mlp.up_proj.weight"));
    /* llm-compressor ignore: "re:" matched in full against the module */
    assert_true(fp4_recipe_exclude_matches("re:.*mlp.gate$", "model.layers.3.mlp.gate.weight"));
    assert_false(fp4_recipe_exclude_matches("re:.*mlp.gate$",
                                            "model.layers.3.mlp.gate_proj.weight"));
    assert_true(fp4_recipe_exclude_matches("re:model\\.layers\\.[0-2]\\..*",
                                           "model.layers.2.self_attn.o_proj.weight"));
    assert_false(fp4_recipe_exclude_matches("re:model\\.layers\\.[0-2]\\..*",
                                            "model.layers.3.self_attn.o_proj.weight"));
    assert_false(fp4_recipe_exclude_matches("re:(", "lm_head.weight")); /* bad regex: none */
    /* HDF5 paths normalised */
    assert_true(fp4_recipe_exclude_matches("blocks.0.fc1", "/blocks/0/fc1/weight"));
}

/* "re:" patterns from a hostile config (base/match.h): a backreference (exponential matching in
 * glibc) and nested counted repetitions (compiled as that many copies) match nothing, at once;
 * before, each of these ran for minutes on a 200-character name. alarm() turns a hang into a
 * failure. Counted repetitions within the bound, and braces in brackets, still work. */
static void test_exclude_regex_bounded(void **state)
{
    (void)state;
    char name[1100];
    memset(name, 'a', 1000);
    strcpy(name + 1000, ".weight");
    alarm(60);
    assert_false(fp4_recipe_exclude_matches("re:(a*)+(a*)+(a*)+\\3x", name));
    assert_false(fp4_recipe_exclude_matches("re:(a*)*\\1", "aaaa.weight"));
    assert_false(fp4_recipe_exclude_matches("re:((a{1,100}){1,100}){1,100}", name));
    assert_false(fp4_recipe_exclude_matches("re:(((a{0,32767}){0,32767}))", name));
    assert_false(fp4_recipe_exclude_matches("re:a{1,32767}a{1,32767}a{1,32767}", name));
    assert_false(fp4_recipe_exclude_matches("re:a{5000,}", name));
    assert_false(fp4_recipe_exclude_matches("re:(a*)+(a*)+(a*)+x", name)); /* no backref: fast */
    assert_true(fp4_recipe_exclude_matches("re:a*", name));
    alarm(0);
    assert_false(fp4_regex_bounded("(a)\\1"));
    assert_false(fp4_regex_bounded("(a{9}){9}"));          /* 81 copies */
    assert_true(fp4_regex_bounded("(a{8}){8}"));           /* 64 */
    assert_true(fp4_regex_bounded("[{]{0,1}x\\{99\\}"));  /* literal braces */
    assert_true(fp4_regex_bounded("[[:digit:]{]{1,3}"));
    assert_true(fp4_regex_bounded("a{63,}"));
    assert_false(fp4_regex_bounded("a{64,}"));
    /* {,n} is glibc's {0,n}: counted like the others (before, nested ones ran 25 s and took
     * 2.5 GB on a 100-character name) */
    assert_true(fp4_regex_bounded("a{,64}"));
    assert_false(fp4_regex_bounded("(a{,8}){,9}"));
    assert_false(fp4_regex_bounded("((a{,30}){,30}){,30}"));
    /* what a counted repetition repeats is written out: 64 copies of a 700-byte group are
     * refused (before: 5 s and 1.3 GB for one name), of a short one kept */
    {
        char re[1001] = "(";
        for (int i = 0; i < 100; i++) strcat(re, "[a-z]*");
        strcat(re, "){64}");
        assert_false(fp4_regex_bounded(re));
        assert_true(fp4_regex_bounded("([a-z]*){64}"));
        assert_true(fp4_regex_bounded("([a-z]*[a-z]*){64}"));        /* 900 */
        assert_false(fp4_regex_bounded("([a-z]*[a-z]*[a-z]*){64}")); /* 1284 */
        assert_false(fp4_regex_bounded("(((((((((((((((((((x){2}){2}){2}){2}){2}){2}){2})))))))))))"));
        memset(re, '(', 1000);
        re[1000] = '\0';
        assert_true(fp4_regex_bounded(re)); /* invalid (regcomp says so), but no overflow */
    }
    alarm(60);
    assert_false(fp4_recipe_exclude_matches("re:((a{,30}){,30}){,30}", name));
    alarm(0);
    assert_true(fp4_recipe_exclude_matches("re:model\\.layers\\.[0-9]{1,3}\\.mlp\\.gate",
                                           "model.layers.12.mlp.gate.weight"));
    assert_false(fp4_recipe_exclude_matches("re:model\\.layers\\.[0-9]{1,3}\\.mlp\\.gate",
                                            "model.layers.1234.mlp.gate.weight"));
    assert_true(fp4_regex_full("x[}{]y", "x{y"));
    /* compiled once and kept (4096 of them), then compiled per call: the same answers */
    for (int i = 0; i < 5000; i++) {
        char re[32], yes[32];
        snprintf(re, sizeof re, "x%d(_[0-9]+)?", i);
        snprintf(yes, sizeof yes, "x%d_7", i);
        assert_true(fp4_regex_full(re, yes));
        assert_true(fp4_regex_full(re, yes)); /* from the cache */
        assert_false(fp4_regex_full(re, "x_7"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama),           cmocka_unit_test(test_moe),
        cmocka_unit_test(test_gpt2),            cmocka_unit_test(test_t5_whisper),
        cmocka_unit_test(test_module_and_rules), cmocka_unit_test(test_checkpoint_exclude),
        cmocka_unit_test(test_exclude_regex_bounded), cmocka_unit_test(test_optimizer_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
