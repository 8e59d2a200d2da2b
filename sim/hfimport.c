/* hfimport.c: `pacesim model import CONFIG.json [-o OUT.yaml] [--name NAME]` -- a model file
 * (docs/scenarios.md, "model") from a Hugging Face config.json.
 *
 * The JSON is read by the YAML loader (JSON is YAML's flow style: numbers such as 1e-05,
 * null, true and nested objects parse as they are), so a bad config is refused with the
 * loader's one line, file:line:col.  Each family maps its configuration class's fields
 * (huggingface/transformers, src/transformers/models/<family>/configuration_<family>.py):
 *
 *   llama      LlamaConfig   (llama/configuration_llama.py@4bdeeced9ce971bed8cca7ab203c3b70cffab4ca)
 *   mistral    MistralConfig (mistral/configuration_mistral.py@0b07a74c673bdf8fbd472a1c7df139b357495414)
 *   qwen2      Qwen2Config   (qwen2/configuration_qwen2.py@caa3177646255d2cf73626315c8582722af4749c)
 *   qwen3      Qwen3Config   (qwen3/configuration_qwen3.py@1f3ae2b3ac7e5b32262588602ff42efb372a6232)
 *   gemma      GemmaConfig   (gemma/configuration_gemma.py@3676fc805228e63d9ae97b622d715af847c276c6)
 *   gemma2     Gemma2Config  (gemma2/configuration_gemma2.py@19f5346140749359823ef26c4183bd8f1aed3db7)
 *     num_hidden_layers -> layers (all full attention), hidden_size -> hidden,
 *     intermediate_size -> intermediate, num_attention_heads -> q_heads,
 *     num_key_value_heads (default: num_attention_heads) -> kv_heads,
 *     head_dim (default: hidden_size / num_attention_heads) -> head_dim, vocab_size -> vocab.
 *   mixtral    MixtralConfig (mixtral/configuration_mixtral.py@ad467bd7633c63ba3ae55da29ff08a30a47cc008)
 *     as llama, and every layer sparse: num_local_experts -> moe.experts, num_experts_per_tok ->
 *     experts_per_token, intermediate_size -> expert_intermediate (MixtralSparseMoeBlock's experts
 *     are intermediate_size wide; no dense MLP remains).
 *   qwen3_moe  Qwen3MoeConfig (qwen3_moe/configuration_qwen3_moe.py@26f4b0f69f17118549a693ffe600c18e8505b636)
 *   qwen2_moe  Qwen2MoeConfig (qwen2_moe/configuration_qwen2_moe.py@765e4fbcdf84b2720f98be27665c839cdb579fcf)
 *     num_experts, num_experts_per_tok, moe_intermediate_size -> expert_intermediate,
 *     decoder_sparse_step; qwen2_moe's shared expert: shared_experts 1 of
 *     shared_expert_intermediate_size; a non-empty mlp_only_layers is refused unless it is the
 *     first k layers (first_k_dense).
 *   qwen3_next Qwen3NextConfig (qwen3_next/configuration_qwen3_next.py@249ef8164cfbd8e288c2f6d8395539b9e90e8300)
 *     as qwen3_moe with one shared expert, and the hybrid layers: layer_types (else
 *     full_attention_interval, default 4: layer i is full attention when (i + 1) % interval == 0)
 *     -> full_attention_layers; linear_num_key_heads / linear_num_value_heads /
 *     linear_key_head_dim / linear_value_head_dim / linear_conv_kernel_dim -> gdn; its attention
 *     has an output gate (Qwen3NextAttention's q_proj is twice as wide); the GDN state in
 *     mamba_ssm_dtype (float32 when absent), the conv state in the weights' dtype;
 *     mtp_num_hidden_layers -> mtp_layers.
 * Weights: torch_dtype (or dtype) bytes; a quantization_config of quant_method fp8 -> 1 byte,
 * one with `bits` -> bits / 8.  Sliding-window layers (Mistral v0.1's, Qwen2's
 * use_sliding_window, Gemma 2's every other layer) are priced as full attention, with a warning:
 * an upper bound at contexts past the window.  Refused by name: multi-head latent attention
 * (DeepSeek-V2/V3, kv_lora_rank), Llama 4, Gemma 3 (5 of 6 layers sliding), any other
 * model_type.  Invariant: what is written loads as a model file (it is checked before). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hfimport.h"
#include "model.h"
#include "scenario.h"
#include "ydoc.h"

typedef struct {
    yd_err_t *e;
    const yd_node_t *root;
    const char *file;
} cfg_t;

/* key present and not null */
static const yd_node_t *has(const cfg_t *c, const char *key)
{
    const yd_node_t *n = yd_map_get(c->root, key);
    return n && !yd_is_null(n) ? n : NULL;
}

/* An integer key: 1 found, 0 absent (or null; *out = def), -1 error.  req: absent is an error. */
static int get_int(const cfg_t *c, const char *key, int req, int lo, int def, int *out)
{
    *out = def;
    if (!has(c, key)) {
        if (req) return yd_fail(c->e, c->root, "", "missing required key \"%s\"", key);
        return 0;
    }
    return yd_get_int(c->e, c->root, "", key, YD_REQ, lo, 1 << 30, out);
}

static int get_str(const cfg_t *c, const char *key, char *buf, size_t n)
{
    buf[0] = 0;
    if (!has(c, key)) return 0;
    return yd_get_str(c->e, c->root, "", key, YD_REQ, buf, n);
}

static int get_bool(const cfg_t *c, const char *key, int *out)
{
    *out = 0;
    if (!has(c, key)) return 0;
    return yd_get_bool(c->e, c->root, "", key, YD_REQ, out);
}

/* bytes of a torch dtype name, 0 unknown */
static int dtype_bytes(const char *d)
{
    if (!strcmp(d, "bfloat16") || !strcmp(d, "float16") || !strcmp(d, "half")) return 2;
    if (!strcmp(d, "float32") || !strcmp(d, "float")) return 4;
    if (!strncmp(d, "float8", 6)) return 1;
    return 0;
}

typedef enum { F_DENSE, F_MIXTRAL, F_QWEN_MOE, F_QWEN2_MOE, F_QWEN3_NEXT } family_t;

static const struct { const char *type, *cls; family_t fam; } FAMILIES[] = {
    { "llama", "LlamaConfig", F_DENSE },          { "mistral", "MistralConfig", F_DENSE },
    { "qwen2", "Qwen2Config", F_DENSE },          { "qwen3", "Qwen3Config", F_DENSE },
    { "gemma", "GemmaConfig", F_DENSE },          { "gemma2", "Gemma2Config", F_DENSE },
    { "mixtral", "MixtralConfig", F_MIXTRAL },    { "qwen3_moe", "Qwen3MoeConfig", F_QWEN_MOE },
    { "qwen2_moe", "Qwen2MoeConfig", F_QWEN2_MOE }, { "qwen3_next", "Qwen3NextConfig", F_QWEN3_NEXT },
};
#define NFAM (int)(sizeof FAMILIES / sizeof FAMILIES[0])

static const struct { const char *type, *why; } REFUSED[] = {
    { "deepseek_v2", "DeepSeek-V2: multi-head latent attention (kv_lora_rank) is not modelled" },
    { "deepseek_v3", "DeepSeek-V3: multi-head latent attention (kv_lora_rank) is not modelled" },
    { "deepseek_v32", "DeepSeek-V3.2: multi-head latent attention and sparse attention are not modelled" },
    { "kimi_k2", "Kimi K2: multi-head latent attention (kv_lora_rank) is not modelled" },
    { "llama4", "Llama 4: chunked local attention and interleaved MoE layers are not modelled" },
    { "gemma3", "Gemma 3: 5 of 6 layers use sliding-window attention, which is not modelled" },
    { "gemma3_text", "Gemma 3: 5 of 6 layers use sliding-window attention, which is not modelled" },
    { "gpt_oss", "gpt-oss: alternating sliding-window layers and attention sinks are not modelled" },
};

static const char *supported_list(void)
{
    return "llama, mistral, qwen2, qwen3, gemma, gemma2, mixtral, qwen2_moe, qwen3_moe, qwen3_next";
}

/* A default name: the file's stem, or its folder's name for a file called config.json. */
static void default_name(const char *path, char *out, size_t n)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/'), *base = slash ? slash + 1 : buf;
    char *dot = strrchr(base, '.');
    if (dot && dot != base) *dot = 0;
    if (!strcmp(base, "config") && slash) {
        *slash = 0;
        char *up = strrchr(buf, '/');
        base = up ? up + 1 : buf;
    }
    size_t k = 0;
    for (const char *p = base; *p && k + 1 < n; p++)
        out[k++] = isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.' ? (char)tolower((unsigned char)*p) : '-';
    out[k] = 0;
    if (!k) snprintf(out, n, "imported");
}

int hf_import(const char *path, const char *name, FILE *out, FILE *warn, char *err, size_t errn)
{
    yd_err_t e;
    yd_err_init(&e, err, errn);
    yd_doc_t *d = yd_load(path, &e);
    if (!d) return -1;
    int rc = -1;
    cfg_t c = { &e, yd_root(d), path };
    char type[64], dt[32], qm[32], nm[128];
    model_t m;
    memset(&m, 0, sizeof m);
    if (yd_expect(&e, c.root, "", YD_MAP) < 0) goto done;
    if (get_str(&c, "model_type", type, sizeof type) < 0) goto done;
    if (!type[0]) {
        yd_fail(&e, c.root, "", "missing required key \"model_type\" (a Hugging Face config.json names its family)");
        goto done;
    }
    const yd_node_t *tn = yd_map_get(c.root, "model_type");
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++)
        if (!strcmp(type, REFUSED[i].type)) {
            yd_fail(&e, tn, "model_type", "\"%s\" refused: %s", type, REFUSED[i].why);
            goto done;
        }
    if (has(&c, "kv_lora_rank")) {
        yd_fail(&e, yd_map_get(c.root, "kv_lora_rank"), "kv_lora_rank",
                "multi-head latent attention (model_type \"%s\") is not modelled", type);
        goto done;
    }
    int fi = -1;
    for (int i = 0; i < NFAM; i++)
        if (!strcmp(type, FAMILIES[i].type)) fi = i;
    if (fi < 0) {
        yd_fail(&e, tn, "model_type", "\"%s\" is not supported (supported: %s)", type, supported_list());
        goto done;
    }
    family_t fam = FAMILIES[fi].fam;
    int heads, kv, hd, inter = 0, sliding = 0, win = 0;
    if (get_int(&c, "num_hidden_layers", 1, 1, 0, &m.n_layers) < 0 || get_int(&c, "hidden_size", 1, 1, 0, &m.hidden) < 0 ||
        get_int(&c, "num_attention_heads", 1, 1, 0, &heads) < 0 || get_int(&c, "num_key_value_heads", 0, 1, heads, &kv) < 0 ||
        get_int(&c, "vocab_size", 1, 1, 0, &m.vocab) < 0 ||
        get_int(&c, "intermediate_size", fam != F_QWEN3_NEXT, 1, 0, &inter) < 0)
        goto done;
    if (get_int(&c, "head_dim", 0, 1, 0, &hd) < 0) goto done;
    if (!hd) {
        if (m.hidden % heads) {
            yd_fail(&e, yd_map_get(c.root, "hidden_size"), "hidden_size",
                    "%d is not a multiple of num_attention_heads (%d) and no head_dim is given", m.hidden, heads);
            goto done;
        }
        hd = m.hidden / heads;
    }
    m.n_q_heads = heads;
    m.n_kv_heads = kv;
    m.head_dim = hd;
    m.intermediate = inter;
    m.n_full_attn = m.n_layers;
    /* weights */
    if (get_str(&c, "torch_dtype", dt, sizeof dt) < 0) goto done;
    if (!dt[0] && get_str(&c, "dtype", dt, sizeof dt) < 0) goto done;
    int wb = dt[0] ? dtype_bytes(dt) : 2;
    if (!wb) {
        yd_fail(&e, yd_map_get(c.root, has(&c, "torch_dtype") ? "torch_dtype" : "dtype"), "torch_dtype",
                "unknown dtype \"%s\" (bfloat16, float16, float32)", dt);
        goto done;
    }
    m.weight_bytes_per_param = wb;
    const yd_node_t *q = has(&c, "quantization_config");
    qm[0] = 0;
    if (q) {
        cfg_t qc = { &e, q, path };
        int bits = 0;
        if (yd_expect(&e, q, "quantization_config", YD_MAP) < 0 || get_str(&qc, "quant_method", qm, sizeof qm) < 0 ||
            get_int(&qc, "bits", 0, 1, 0, &bits) < 0)
            goto done;
        if (!strcmp(qm, "fp8")) m.weight_bytes_per_param = 1;
        else if (bits > 0 && bits <= 16) m.weight_bytes_per_param = bits / 8.0;
        else {
            yd_fail(&e, q, "quantization_config", "quant_method \"%s\" without bits is not modelled (fp8, or a `bits` field)", qm);
            goto done;
        }
    }
    /* sliding windows: priced as full attention, said so */
    int usw = 0;
    if (get_int(&c, "sliding_window", 0, 1, 0, &win) < 0 || get_bool(&c, "use_sliding_window", &usw) < 0) goto done;
    if (!strcmp(type, "mistral") || !strcmp(type, "gemma2")) sliding = win > 0;
    if (!strcmp(type, "qwen2")) sliding = usw && win > 0;
    /* families */
    int first_dense = 0, step = 1, sparse_every = 0;
    const yd_node_t *mlp_only = has(&c, "mlp_only_layers");
    if (mlp_only) {
        if (yd_expect(&e, mlp_only, "mlp_only_layers", YD_SEQ) < 0) goto done;
        for (int i = 0; i < mlp_only->n; i++) {
            int li;
            char ip[64];
            snprintf(ip, sizeof ip, "mlp_only_layers[%d]", i);
            if (yd_as_int(&e, mlp_only->vals[i], ip, 0, m.n_layers - 1, &li) < 0) goto done;
            if (li != i) {
                yd_fail(&e, mlp_only->vals[i], ip,
                        "dense layers other than the first ones are not modelled (layer %d after %d dense)", li, i);
                goto done;
            }
        }
        first_dense = mlp_only->n;
    }
    switch (fam) {
    case F_DENSE: break;
    case F_MIXTRAL:
        if (get_int(&c, "num_local_experts", 1, 1, 0, &m.moe_experts) < 0 ||
            get_int(&c, "num_experts_per_tok", 1, 1, 0, &m.moe_topk) < 0)
            goto done;
        m.moe_inter = inter;
        sparse_every = 1;
        break;
    case F_QWEN_MOE:
    case F_QWEN2_MOE:
    case F_QWEN3_NEXT:
        if (get_int(&c, "num_experts", 1, 1, 0, &m.moe_experts) < 0 ||
            get_int(&c, "num_experts_per_tok", 1, 1, 0, &m.moe_topk) < 0 ||
            get_int(&c, "moe_intermediate_size", 1, 1, 0, &m.moe_inter) < 0 ||
            get_int(&c, "decoder_sparse_step", 0, 1, 1, &step) < 0)
            goto done;
        if (fam != F_QWEN_MOE) {
            m.moe_shared = 1;
            if (get_int(&c, "shared_expert_intermediate_size", 1, 1, 0, &m.moe_shared_inter) < 0) goto done;
        }
        sparse_every = step;
        if (first_dense && step != 1) {
            yd_fail(&e, mlp_only, "mlp_only_layers", "dense first layers with decoder_sparse_step %d are not modelled", step);
            goto done;
        }
        break;
    }
    if (fam == F_DENSE || fam == F_MIXTRAL) first_dense = 0;
    if (fam == F_QWEN3_NEXT) {
        const yd_node_t *lt = has(&c, "layer_types");
        int interval = 4, full = 0;
        if (lt) {
            if (yd_expect(&e, lt, "layer_types", YD_SEQ) < 0) goto done;
            if (lt->n != m.n_layers) {
                yd_fail(&e, lt, "layer_types", "%d entries for %d layers", lt->n, m.n_layers);
                goto done;
            }
            for (int i = 0; i < lt->n; i++) {
                char s[32], ip[64];
                snprintf(ip, sizeof ip, "layer_types[%d]", i);
                if (yd_as_str(&e, lt->vals[i], ip, s, sizeof s) < 0) goto done;
                if (!strcmp(s, "full_attention")) full++;
                else if (strcmp(s, "linear_attention")) {
                    yd_fail(&e, lt->vals[i], ip, "expected full_attention or linear_attention, got \"%s\"", s);
                    goto done;
                }
            }
        } else {
            if (get_int(&c, "full_attention_interval", 0, 1, 4, &interval) < 0) goto done;
            for (int i = 0; i < m.n_layers; i++) full += (i + 1) % interval == 0;
        }
        m.n_full_attn = full;
        m.attn_output_gate = 1;
        char sd[32];
        if (get_int(&c, "linear_num_key_heads", 0, 1, 16, &m.gdn_k_heads) < 0 ||
            get_int(&c, "linear_num_value_heads", 0, 1, 32, &m.gdn_v_heads) < 0 ||
            get_int(&c, "linear_key_head_dim", 0, 1, 128, &m.gdn_head_dim_k) < 0 ||
            get_int(&c, "linear_value_head_dim", 0, 1, 128, &m.gdn_head_dim_v) < 0 ||
            get_int(&c, "linear_conv_kernel_dim", 0, 1, 4, &m.gdn_conv_kernel) < 0 ||
            get_int(&c, "mtp_num_hidden_layers", 0, 0, 0, &m.mtp_layers) < 0 || get_str(&c, "mamba_ssm_dtype", sd, sizeof sd) < 0)
            goto done;
        m.gdn_state_bytes = sd[0] ? dtype_bytes(sd) : 4;
        if (!m.gdn_state_bytes) {
            yd_fail(&e, yd_map_get(c.root, "mamba_ssm_dtype"), "mamba_ssm_dtype", "unknown dtype \"%s\"", sd);
            goto done;
        }
        m.gdn_conv_bytes = wb;
        if (!m.intermediate) m.intermediate = m.moe_inter;
    }
    if (name && name[0]) snprintf(nm, sizeof nm, "%s", name);
    else default_name(path, nm, sizeof nm);
    /* the file */
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (!f) {
        snprintf(err, errn, "out of memory");
        goto done;
    }
    fprintf(f, "# %s, imported by `pacesim model import` from ", nm);
    for (const char *p = path; *p; p++)   /* a comment of one line, whatever the file's name holds */
        fputc((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p, f);
    fprintf(f, "\n# (model_type %s: transformers' %s, mapped as sim/hfimport.c documents).\n", type, FAMILIES[fi].cls);
    if (sliding)
        fprintf(f, "# Its sliding-window attention (window %d) is priced as full attention: an upper bound past the window.\n", win);
    if (q) fprintf(f, "# Weights quantized (quant_method %s): %g bytes a parameter.\n", qm, m.weight_bytes_per_param);
    /* the name double-quoted: a --name such as "a # b", "a: b" or "null" reads back as given */
    char qn[2 * sizeof nm + 3];
    size_t k = 0;
    qn[k++] = '"';
    for (const char *p = nm; *p; p++) {
        if (*p == '"' || *p == '\\') qn[k++] = '\\';
        qn[k++] = *p;
    }
    qn[k++] = '"';
    qn[k] = 0;
    fprintf(f, "model:\n  name: %s\n  layers: %d\n  full_attention_layers: %d\n  hidden: %d\n  intermediate: %d\n"
               "  vocab: %d\n  attention:\n    q_heads: %d\n    kv_heads: %d\n    head_dim: %d\n",
            qn, m.n_layers, m.n_full_attn, m.hidden, m.intermediate, m.vocab, m.n_q_heads, m.n_kv_heads, m.head_dim);
    if (m.attn_output_gate) fprintf(f, "    output_gate: true\n");
    if (fam == F_QWEN3_NEXT)
        fprintf(f, "  gdn:\n    key_heads: %d\n    value_heads: %d\n    key_head_dim: %d\n    value_head_dim: %d\n"
                   "    conv_kernel: %d\n    state_bytes: %d\n    conv_bytes: %d\n",
                m.gdn_k_heads, m.gdn_v_heads, m.gdn_head_dim_k, m.gdn_head_dim_v, m.gdn_conv_kernel, m.gdn_state_bytes,
                m.gdn_conv_bytes);
    if (sparse_every) {
        fprintf(f, "  moe:\n    experts: %d\n    experts_per_token: %d\n", m.moe_experts, m.moe_topk);
        if (m.moe_shared) fprintf(f, "    shared_experts: %d\n", m.moe_shared);
        fprintf(f, "    expert_intermediate: %d\n", m.moe_inter);
        if (m.moe_shared) fprintf(f, "    shared_expert_intermediate: %d\n", m.moe_shared_inter);
        if (first_dense) fprintf(f, "    first_k_dense: %d\n", first_dense);
        fprintf(f, "    decoder_sparse_step: %d\n", sparse_every);
    }
    fprintf(f, "  weight_bytes_per_param: %g\n", m.weight_bytes_per_param);
    if (m.mtp_layers) fprintf(f, "  mtp_layers: %d\n", m.mtp_layers);
    if (fclose(f) != 0 || !text) {
        free(text);
        snprintf(err, errn, "out of memory");
        goto done;
    }
    /* what is written loads as a model file */
    char tmp[] = "/tmp/pacesim-import-XXXXXX";
    int fd = mkstemp(tmp);
    FILE *tf = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!tf) {
        if (fd >= 0) close(fd);
        free(text);
        snprintf(err, errn, "%s: cannot write a temporary file: %s", path, strerror(errno));
        rc = -2;
        goto done;
    }
    fwrite(text, 1, tlen, tf);
    fclose(tf);
    char merr[SCN_ERR_MAX];
    model_t chk;
    int ok = scn_load_model(tmp, &chk, merr);
    remove(tmp);
    if (ok < 0) {
        char *colon = strstr(merr, ": ");
        snprintf(err, errn, "%s: the imported model is not valid: %s", path, colon ? colon + 2 : merr);
        free(text);
        goto done;
    }
    if (sliding && warn)
        fprintf(warn, "warning: %s: sliding-window attention (window %d) priced as full attention\n", path, win);
    if (fwrite(text, 1, tlen, out) != tlen) {
        free(text);
        snprintf(err, errn, "cannot write the model: %s", strerror(errno));
        rc = -2;
        goto done;
    }
    free(text);
    rc = 0;
done:
    yd_free(d);
    return rc;
}
