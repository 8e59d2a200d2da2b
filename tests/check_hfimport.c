/* check_hfimport: `pacesim model import` on configs written from published config.json files
 * (tests/data/hf/): the imported models equal the library's hand-written ones, parameter
 * counts match the published sizes, sliding windows warn, MLA and unknown families are refused
 * with one positioned line. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "hfimport.h"
#include "model.h"
#include "scenario.h"

/* Import path into a temp file, load it as a model; rc of hf_import, err and warnings kept. */
static int import(const char *path, model_t *m, char *err, size_t errn, char *warn, size_t warnn)
{
    char tmp[] = "/tmp/check_hfimport-XXXXXX";
    int fd = mkstemp(tmp);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    warn[0] = 0;
    FILE *w = fmemopen(warn, warnn, "w");
    int rc = hf_import(path, NULL, f, w, err, errn);
    fclose(f);
    fclose(w);
    if (rc == 0) {
        char merr[SCN_ERR_MAX];
        ck_assert_msg(scn_load_model(tmp, m, merr) == 0, "%s", merr);
    }
    remove(tmp);
    return rc;
}

static void same_model(const model_t *a, const model_t *b)
{
#define EQ(f) ck_assert_msg(a->f == b->f, "%s: %s %g vs %g", a->name, #f, (double)a->f, (double)b->f)
    EQ(n_layers); EQ(n_full_attn); EQ(n_gdn); EQ(hidden); EQ(vocab); EQ(n_q_heads); EQ(n_kv_heads); EQ(head_dim);
    EQ(attn_output_gate); EQ(gdn_k_heads); EQ(gdn_v_heads); EQ(gdn_head_dim_k); EQ(gdn_head_dim_v);
    EQ(gdn_conv_kernel); EQ(gdn_state_bytes); EQ(gdn_conv_bytes); EQ(weight_bytes_per_param); EQ(mtp_layers);
    EQ(moe_experts); EQ(moe_topk); EQ(moe_shared); EQ(moe_inter); EQ(moe_shared_inter); EQ(moe_first_dense);
    EQ(moe_step); EQ(moe_skew); EQ(n_moe);
    /* the dense width matters only where a layer is dense */
    if (a->n_moe < a->n_layers) EQ(intermediate);
#undef EQ
}

static const struct { const char *json, *yaml; } LIB[] = {
    { "tests/data/hf/llama-3.1-8b.json", "models/llama-3.1-8b.yaml" },
    { "tests/data/hf/qwen3-30b-a3b.json", "models/qwen3-30b-a3b.yaml" },
    { "tests/data/hf/qwen3-next-80b-a3b.json", "models/qwen3-next-80b-a3b.yaml" },
};

START_TEST(imports_equal_library)
{
    model_t a, b;
    char err[1024], warn[1024], merr[SCN_ERR_MAX];
    ck_assert_msg(import(LIB[_i].json, &a, err, sizeof err, warn, sizeof warn) == 0, "%s", err);
    ck_assert_str_eq(warn, "");
    ck_assert_msg(scn_load_model(LIB[_i].yaml, &b, merr) == 0, "%s", merr);
    ck_assert_str_eq(a.name, b.name);
    same_model(&a, &b);
}
END_TEST

/* Parameter counts against the published sizes: the model's (every expert and lm_head, no
 * embedding table) plus the embedding table where it is not tied to lm_head. */
START_TEST(published_sizes)
{
    static const struct { const char *json; double params; int tied; } S[] = {
        { "tests/data/hf/llama-3.1-70b.json", 70.6e9, 0 },   /* Llama 3.1 70B: 70.6B (model card) */
        { "tests/data/hf/llama-3.1-8b.json", 8.03e9, 0 },    /* 8.03B */
        { "tests/data/hf/mixtral-8x7b.json", 46.7e9, 0 },    /* Mixtral 8x7B: 46.7B in all */
        { "tests/data/hf/qwen3-30b-a3b.json", 30.5e9, 0 },   /* Qwen3-30B-A3B: 30.5B */
        { "tests/data/hf/gemma-7b.json", 8.54e9, 1 },        /* Gemma 7B: 8.54B, embeddings tied */
        { "tests/data/hf/qwen2.5-7b.json", 7.61e9, 0 },      /* Qwen2.5-7B: 7.61B */
        { "tests/data/hf/gemma-2-9b.json", 9.24e9, 1 },      /* Gemma 2 9B: 9.24B, embeddings tied */
    };
    for (size_t i = 0; i < sizeof S / sizeof S[0]; i++) {
        model_t m;
        model_rank_t r;
        char err[1024], warn[1024];
        ck_assert_msg(import(S[i].json, &m, err, sizeof err, warn, sizeof warn) == 0, "%s", err);
        ck_assert_int_eq(model_rank(&m, 1, &r), 0);
        double p = r.params + (S[i].tied ? 0 : (double)m.vocab * m.hidden);
        ck_assert_msg(fabs(p / S[i].params - 1) < 0.02, "%s: %.4g params, published %.4g", S[i].json, p, S[i].params);
    }
}
END_TEST

START_TEST(mixtral_and_sliding)
{
    model_t m;
    char err[1024], warn[1024];
    ck_assert_msg(import("tests/data/hf/mixtral-8x7b.json", &m, err, sizeof err, warn, sizeof warn) == 0, "%s", err);
    ck_assert_int_eq(m.moe_experts, 8);
    ck_assert_int_eq(m.moe_topk, 2);
    ck_assert_int_eq(m.moe_inter, 14336);
    ck_assert_int_eq(m.n_moe, 32);
    ck_assert_str_eq(warn, "");   /* sliding_window: null */
    ck_assert_msg(import("tests/data/hf/mistral-7b-v0.1.json", &m, err, sizeof err, warn, sizeof warn) == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(warn, "sliding-window attention (window 4096) priced as full attention"));
    ck_assert_int_eq(m.n_moe, 0);
    ck_assert_int_eq(m.head_dim, 128);   /* hidden / heads: MistralConfig has no head_dim */
    /* Qwen2's sliding window is off unless use_sliding_window; Gemma 2's every other layer has one */
    ck_assert_msg(import("tests/data/hf/qwen2.5-7b.json", &m, err, sizeof err, warn, sizeof warn) == 0, "%s", err);
    ck_assert_str_eq(warn, "");
    ck_assert_msg(import("tests/data/hf/gemma-2-9b.json", &m, err, sizeof err, warn, sizeof warn) == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(warn, "window 4096"));
    ck_assert(m.weight_bytes_per_param == 4);   /* the published torch_dtype: float32 */
}
END_TEST

/* One positioned line for what is refused */
START_TEST(refusals)
{
    static const struct { const char *text, *want; } C[] = {
        { NULL, "deepseek-v3.json:17:17: model_type: \"deepseek_v3\" refused: DeepSeek-V3: multi-head latent attention" },
        { "{\"model_type\": \"falcon\", \"hidden_size\": 4}", ":1:16: model_type: \"falcon\" is not supported (supported: llama" },
        { "{\"model_type\": \"llama\", \"hidden_size\": 4096}", ":1:1: missing required key \"num_hidden_layers\"" },
        { "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 4096, \"num_attention_heads\": 32,"
          " \"vocab_size\": 10, \"intermediate_size\": 1e-05}", "intermediate_size: expected" },
        { "{\"model_type\": \"llama\",", "syntax error" },
        { "{\"hidden_size\": 4096}", ":1:1: missing required key \"model_type\"" },
        { "{\"model_type\": \"mystery\", \"kv_lora_rank\": 512}", ":1:43: kv_lora_rank: multi-head latent attention" },
        { "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 4096, \"num_attention_heads\": 32,"
          " \"vocab_size\": 10, \"intermediate_size\": 64, \"torch_dtype\": \"int3\"}", "torch_dtype: unknown dtype \"int3\"" },
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        char path[] = "/tmp/check_hfimport-bad-XXXXXX";
        const char *p = "tests/data/hf/deepseek-v3.json";
        if (C[i].text) {
            int fd = mkstemp(path);
            ck_assert_int_ge(fd, 0);
            ck_assert(write(fd, C[i].text, strlen(C[i].text)) == (ssize_t)strlen(C[i].text));
            close(fd);
            p = path;
        }
        char err[1024], warn[64];
        model_t m;
        ck_assert_int_eq(import(p, &m, err, sizeof err, warn, sizeof warn), -1);
        ck_assert_msg(strstr(err, C[i].want), "case %zu: %s", i, err);
        ck_assert_msg(!strchr(err, '\n'), "case %zu: more than one line", i);
        if (C[i].text) remove(path);
    }
}
END_TEST

/* The command: stdout or -o, exit 2 on a refused config. */
/* the binary: $PACESIM (check-asan hands it the ASan build) or bin/pacesim */
static int run_cmd(const char *args)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s", getenv("PACESIM") ? getenv("PACESIM") : "bin/pacesim", args);
    return system(cmd);
}

START_TEST(command)
{
    ck_assert_int_eq(run_cmd("model import tests/data/hf/mixtral-8x7b.json -o /tmp/check_hfimport_mx.yaml"), 0);
    model_t m;
    char merr[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("/tmp/check_hfimport_mx.yaml", &m, merr) == 0, "%s", merr);
    ck_assert_str_eq(m.name, "mixtral-8x7b");
    remove("/tmp/check_hfimport_mx.yaml");
    int rc = run_cmd("model import tests/data/hf/deepseek-v3.json >/dev/null 2>&1");
    ck_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    rc = run_cmd("model import tests/data/hf/llama-3.1-8b.json --name my-llama | grep -q 'name: \"my-llama\"'");
    ck_assert_int_eq(rc, 0);
    /* a --name YAML would read otherwise (a comment, a mapping, null) reads back as given */
    const char *names[] = { "a # b", "a: b", "null", "say \\\"hi\\\"" }, *want[] = { "a # b", "a: b", "null", "say \"hi\"" };
    for (int i = 0; i < 4; i++) {
        char args[256];
        snprintf(args, sizeof args, "model import tests/data/hf/llama-3.1-8b.json --name \"%s\" -o /tmp/check_hfimport_nm.yaml",
                 names[i]);
        ck_assert_int_eq(run_cmd(args), 0);
        ck_assert_msg(scn_load_model("/tmp/check_hfimport_nm.yaml", &m, merr) == 0, "%s", merr);
        ck_assert_str_eq(m.name, want[i]);
    }
    remove("/tmp/check_hfimport_nm.yaml");
    /* a config whose file name holds a newline: the header comment stays one line */
    const char *nl = "/tmp/check_hfimport_x\nlayers: 3.json";
    FILE *src = fopen("tests/data/hf/llama-3.1-8b.json", "rb"), *dst = fopen(nl, "wb");
    ck_assert(src && dst);
    for (int ch; (ch = getc(src)) != EOF;) putc(ch, dst);
    fclose(src);
    ck_assert_int_eq(fclose(dst), 0);
    ck_assert_int_eq(run_cmd("model import '/tmp/check_hfimport_x\nlayers: 3.json' -o /tmp/check_hfimport_nl.yaml"), 0);
    remove(nl);
    ck_assert_msg(scn_load_model("/tmp/check_hfimport_nl.yaml", &m, merr) == 0, "%s", merr);
    ck_assert_int_eq(m.n_layers, 32);
    remove("/tmp/check_hfimport_nl.yaml");
    /* an empty --name, one given twice, a name of two lines: refused */
    const char *bad[] = { "--name ''", "--name a --name b", "--name \"$(printf 'a\\nb')\"", "-o /tmp/x.yaml -o /tmp/y.yaml",
                          "--name" };
    for (int i = 0; i < 5; i++) {
        char args[256];
        snprintf(args, sizeof args, "model import tests/data/hf/llama-3.1-8b.json %s >/dev/null 2>&1", bad[i]);
        rc = run_cmd(args);
        ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "%s: rc %d", bad[i], rc);
    }
}
END_TEST

int main(void)
{
    const check_test_t tests[] = { CHECK_LOOP(imports_equal_library, (int)(sizeof LIB / sizeof LIB[0])),
                                   CHECK_TEST(published_sizes), CHECK_TEST(mixtral_and_sliding), CHECK_TEST(refusals),
                                   CHECK_TEST(command) };
    return check_main("hfimport", "import", tests, CHECK_N(tests), 0, NULL);
}
