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
    /* llm-compressor ignore: "re:" as Python's re.match, against the module or the name */
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

/* "re:" patterns (base/match.h) against the known answers of Python's re.match, written by
 * scripts/make_re_table.py: every supported pattern answers as Python does on every name,
 * every pattern Python refuses is refused, and every construct outside the subset
 * (backreferences, lookaround, flags, ...) is refused with its reason. */
#include "re_table.h"

static void test_regex_python_table(void **state)
{
    (void)state;
    int rows = 0, refused = 0;
    for (size_t i = 0; i < sizeof re_table / sizeof *re_table; i++) {
        const struct re_row *r = &re_table[i];
        char why[160];
        fp4_re *re = fp4_re_compile(r->pattern, why, sizeof why);
        if (r->expected == 'E' || r->expected == 'R') {
            if (re) fail_msg("row %zu: %s compiled, Python %s", i, r->pattern,
                             r->expected == 'E' ? "refuses it" : "takes it, outside the subset");
            assert_true(why[0] != '\0' && !strchr(why, '\n'));
            refused++;
            continue;
        }
        if (!re) fail_msg("row %zu: %s refused (%s)", i, r->pattern, why);
        if (fp4_re_match(re, r->name, NULL) != (r->expected == '1'))
            fail_msg("row %zu: %s on \"%s\": Python says %c", i, r->pattern, r->name, r->expected);
        assert_int_equal(fp4_regex_match(r->pattern, r->name), r->expected == '1');
        fp4_re_free(re);
        rows++;
    }
    assert_true(rows > 5000 && refused > 50);
}

/* The reasons, one line each, name what is refused. */
static void test_regex_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *re, *why;
    } cases[] = {
        {"(a)\\1", "backreference \\1 is not supported"},
        {"(?P<n>a)(?P=n)", "backreference (?P=...) is not supported"},
        {"a(?=b)", "lookahead (?=...) is not supported"},
        {"(?<!a)b", "lookbehind (?<!...) is not supported"},
        {"(?i)lm_head", "inline flags (?i...) are not supported"},
        {"a++", "possessive quantifier is not supported"},
        {"(", "missing ), unterminated subpattern"},
        {"a)", "unbalanced parenthesis"},
        {"[z-a]", "bad character range"},
        {"*a", "nothing to repeat"},
        {"a**", "multiple repeat"},
        {"\\q", "bad escape \\q"},
        {"(?\n)", "unknown extension (? followed by byte 0x0A"}, /* found by fuzz_regex */
        {"(?", "unknown extension (? followed by byte 0x00"},
        {"(?Q)", "unknown extension (?Q"},
        {"((a{100}){100}){2}", "over 16384 instructions once its counted repetitions are "
                               "written out"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char why[160];
        assert_null(fp4_re_compile(cases[i].re, why, sizeof why));
        assert_string_equal(why, cases[i].why);
        assert_false(fp4_regex_match(cases[i].re, "a"));
    }
    char deep[200] = "", why[160];
    for (int i = 0; i < 65; i++) strcat(deep, "(");
    strcat(deep, "a");
    for (int i = 0; i < 65; i++) strcat(deep, ")");
    assert_null(fp4_re_compile(deep, why, sizeof why));
    assert_string_equal(why, "groups nested deeper than 64");
    char big[FP4_RE_MAX_BYTES + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_null(fp4_re_compile(big, why, sizeof why));
    assert_string_equal(why, "longer than 4096 bytes");
    big[FP4_RE_MAX_BYTES] = '\0';
    fp4_re *re = fp4_re_compile(big, why, sizeof why);
    assert_non_null(re);
    fp4_re_free(re);
}

/* Linear cost: patterns that take backtracking matchers exponential time (and glibc's regexec
 * seconds) cost at most (instructions + 1) x (characters + 1) thread visits plus as many
 * character tests here. No timing: the VM's own step count. */
static void test_regex_linear(void **state)
{
    (void)state;
    char name[1100];
    memset(name, 'a', 1000);
    name[1000] = '\0';
    static const char *const evil[] = {
        "(a*)*b", "(a+)+b", "(a|aa)*b", "(a|a)*b", "((a*)*)*b", "(a*)+(a*)+(a*)+x",
        "(.*){30}b", "(a?){30}a{30}b", "([a-z]*[a-z]*){64}b", "(x+x+)+y", "(\\w|\\d)*b",
        "a{1000}b", "((a{,30}){,30}){,5}b",
    };
    for (size_t i = 0; i < sizeof evil / sizeof *evil; i++) {
        char why[160];
        fp4_re *re = fp4_re_compile(evil[i], why, sizeof why);
        if (!re) fail_msg("%s: %s", evil[i], why);
        uint64_t steps = 0;
        assert_false(fp4_re_match(re, name, &steps));
        const uint64_t bound = 2 * (uint64_t)(fp4_re_insns(re) + 1) * (1000 + 1);
        if (steps == 0 || steps > bound)
            fail_msg("%s: %llu steps, bound %llu", evil[i], (unsigned long long)steps,
                     (unsigned long long)bound);
        fp4_re_free(re);
    }
    /* the literal start is checked first: a pattern that cannot start the name costs nothing */
    fp4_re *re = fp4_re_compile("model\\.layers\\.(a*)*b", NULL, 0);
    uint64_t steps = 1;
    assert_false(fp4_re_match(re, name, &steps));
    assert_int_equal(steps, 0);
    fp4_re_free(re);
}

/* The exclude list's patterns are kept compiled (up to 131072 of them), then compiled per
 * call: the same answers either way. */
static void test_regex_kept(void **state)
{
    (void)state;
    for (int i = 0; i < 5000; i++) {
        char re[32], yes[32];
        snprintf(re, sizeof re, "x%d(_[0-9]+)?$", i);
        snprintf(yes, sizeof yes, "x%d_7", i);
        assert_true(fp4_regex_match(re, yes));
        assert_true(fp4_regex_match(re, yes)); /* kept */
        assert_false(fp4_regex_match(re, "x_7"));
    }
    /* re.match: anchored at the start, not at the end */
    assert_true(fp4_recipe_exclude_matches("re:model\\.layers\\.[0-9]{1,3}\\.mlp\\.gate",
                                           "model.layers.12.mlp.gate.weight"));
    assert_false(fp4_recipe_exclude_matches("re:model\\.layers\\.[0-9]{1,3}\\.mlp\\.gate",
                                            "model.layers.1234.mlp.gate.weight"));
    assert_true(fp4_recipe_exclude_matches("re:model.layers.1", "model.layers.12.mlp.weight"));
    assert_false(fp4_recipe_exclude_matches("re:layers.1", "model.layers.12.mlp.weight"));
    assert_true(fp4_recipe_exclude_matches("re:.*layers.1", "model.layers.12.mlp.weight"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama),           cmocka_unit_test(test_moe),
        cmocka_unit_test(test_gpt2),            cmocka_unit_test(test_t5_whisper),
        cmocka_unit_test(test_module_and_rules), cmocka_unit_test(test_checkpoint_exclude),
        cmocka_unit_test(test_regex_python_table), cmocka_unit_test(test_regex_refusals),
        cmocka_unit_test(test_regex_linear), cmocka_unit_test(test_regex_kept), cmocka_unit_test(test_optimizer_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
