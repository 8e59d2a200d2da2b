/* scenario.c: load and validate scenarios and models.  See scenario.h.
 *
 * Schema (every mapping is strict: an unknown key is an error).  Key paths in messages
 * use dots and [i] for list elements: workload.requests[1].prompt_tokens.
 *
 *   name: str (default: file stem)          description: str          seed: int >= 0 (1)
 *   model: PATH | {model mapping}           (PATH relative to the scenario's directory)
 *   profile: PATH                           (resolved, not read; null = none)
 *   hardware: {gpu: NAME (hwcat.h)} | {analytic: {tflops: >=0.01, tbps: >=0.001, mem_gib: >0}}  (instead of a
 *             profile), link: NAME (hwcat.h; also beside a profile: its all-reduce without a law)
 *   engine:
 *     max_num_batched_tokens: >0 (2048)     max_num_seqs: 1..2^20 (256)
 *     max_model_len: >0 (262144)            enable_prefix_caching: bool (true)
 *     kv_cache_dtype: auto|fp16|float16 (fp16) | fp8_e5m2 | fp8|fp8_e4m3 (vLLM: fp8 = e4m3)
 *     tensor_parallel_size: >0 (1), divides q_heads, kv_heads (or a multiple), GDN heads
 *     block_size: >=16, multiple of 16 (derived when absent)
 *     num_gpu_blocks: >0 (derived when absent)
 *     gpu_memory_utilization: (0, 1] (0.9)
 *     speculative_config: null | {method: mtp, num_speculative_tokens: 1..15}
 *     scheduler: fork|upstream (fork)       mamba_cache_mode: align|none|all (align)
 *     attention_backend: fork|varlen (fork; varlen under scheduler: upstream)
 *     upstream only: enable_chunked_prefill: bool (true), long_prefill_token_threshold: >=0
 *       (0 = none), max_num_partial_prefills: 1, max_long_partial_prefills: 1 (vLLM v1 accepts
 *       no other value), scheduling_policy: fcfs|priority (fcfs)
 *     prefix_cache_model: count (default: cached_tokens per request) | pool (sim/kvpool.c)
 *     prefix_cache_retention_interval: null (dense) | 0 | N > 0 (pool only; the engine
 *       checks N against the block size and the model's GDN layers)
 *   env: the four knobs of scn_env_t, integers (SMALLQ >= 1; the two switches 0/1)
 *   mtp_acceptance: {mean_accepted: 0..K} | {per_position: [K values in 0..1]}
 *                   (required when speculative_config is set)
 *   workload:       (at least one of requests, poisson, trace)
 *     requests:
 *       - id: [A-Za-z0-9_-]+ (unique)   prompt_tokens: >0   cached_tokens: 0..prompt (0)
 *         output_tokens: >0             prompt + output <= max_model_len
 *         prefix: {name: ID, tokens: 1..prompt} | follows: ID (an earlier request; its
 *           prompt + output <= prompt)   (pool only; cached_tokens > 0 is then refused)
 *         priority: int (0; lower first under scheduling_policy: priority)
 *         arrival: SECONDS (>= 0, default 0)
 *                | {after: ID, decoded: N (>= 0, <= what ID emits: its output,
 *                   cut at max_model_len), delay_s: >=0}
 *                | {after: ID, event: arrival|admitted|first_token|finished, delay_s: >=0}
 *     poisson: {rate_per_s: >0, count: 1..10^7, start_s: >=0 (0), prompt: DIST, output: DIST,
 *               cached_frac: DIST (fixed or uniform within [0,1]; default 0),
 *               prefix: {groups: 1..10^6, tokens: >0, share: [0,1] (1)}  (pool only),
 *               conversation: {turns: 1..10^4, think_s: >=0 (0)}  (pool only)}
 *       DIST: NUMBER (fixed)
 *           | {dist: fixed, value: V}      | {dist: uniform, low: A, high: B}
 *           | {dist: lognormal, mu: M, sigma: S (of ln)}  | {dist: exponential, mean: M}
 *           each with optional integer clamps min: N, max: N (0 = none)
 *     trace: PATH.csv (resolved, not read)
 *   measure: {NAME: WINDOW, ...}       NAME: [A-Za-z0-9_-]+, at most SCN_MAX_WINDOWS (32)
 *     WINDOW: {kind: K, request: ID|"*", type: T, from: MARK, to: MARK}; per kind:
 *       rate, tokens: request (an ID) required; from, to optional
 *       duration: from, to optional        steps: type required; from, to optional
 *       ttft, tpot, itl, e2e, queueing: request optional (ID or "*", default "*"),
 *         stat: mean|p50|p90|p99 (mean)
 *       throughput: nothing else
 *       prefix_hit: request optional (ID or "*", default "*")
 *       evictions: nothing else (the block pool's evictions over the run)
 *     T: any|decode_only|mixed|prefill_only
 *     MARK: start (from only) | end (to only) | ID.EVENT
 *   reference: {source: str, NAME: number, ...}   (NAME: a measure window)
 *   stop: {when: all_finished | ID.EVENT (all_finished), max_time_s: >0 (86400),
 *          max_steps: >=0 (0 = none)}
 *
 * Request ids named by triggers, windows and the stop rule must be explicit requests;
 * triggers may not refer to their own request or form cycles.  Ids are looked up in a
 * hash index and cycles found in one pass, so loading is linear in the requests.
 * Models must pass model_check() (derived shapes that fit their types). */
#include "scenario.h"
#include "simclock.h"
#include "kvpool.h"
#include "hwcat.h"
#include "workload.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_cdf.h>
#include "ydoc.h"

#define POS 1, INT_MAX
#define POSL 1, LONG_MAX
#define ANY_NUM (-INFINITY), INFINITY, 0
#define NONNEG_NUM 0.0, INFINITY, 0
#define POS_NUM 0.0, INFINITY, YD_LO_OPEN

static const char *const event_names[] = {"arrival", "admitted", "first_token", "finished", NULL};
static const char *const step_names[] = {"any", "decode_only", "mixed", "prefill_only", NULL};
static const char *const win_names[] = {"rate", "duration", "ttft", "tpot", "itl",
                                        "steps", "tokens", "throughput", "e2e", "queueing",
                                        "prefix_hit", "evictions", NULL};
static const char *const stat_names[] = {"mean", "p50", "p90", "p99", NULL};

const char *scn_event_name(req_event_t e)
{
    return e >= 0 && e < EV__N ? event_names[e] : "?";
}

const char *scn_stat_name(win_stat_t t)
{
    return t >= STAT_MEAN && t < STAT__N ? stat_names[t] : "?";
}

double scn_stat_quantile(win_stat_t t)
{
    static const double q[STAT__N] = {NAN, 0.50, 0.90, 0.99};
    return t >= STAT_MEAN && t < STAT__N ? q[t] : NAN;
}

int scn_win_is_latency(win_kind_t k)
{
    return k == WIN_TTFT || k == WIN_TPOT || k == WIN_ITL || k == WIN_E2E || k == WIN_QUEUEING;
}

const char *scn_step_type_name(step_type_t t)
{
    return t >= STEP_ANY && t <= STEP_PREFILL_ONLY ? step_names[t] : "?";
}

/* ---------------------------------------------------------------------------------- */
/* helpers                                                                             */

static int valid_id(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return 0;
    return 1;
}

/* rel resolved against the directory of base (then the cwd if only that exists). */
static int resolve(yd_err_t *e, const yd_node_t *n, const char *path, const char *base,
                   const char *rel, char out[SCN_PATH_MAX])
{
    const char *slash = strrchr(base, '/');
    int len;
    if (!rel[0]) return yd_fail(e, n, path, "an empty path (expected a file name)");   /* it opened "" or the directory */
    if (rel[0] == '/' || !slash) {
        len = snprintf(out, SCN_PATH_MAX, "%s", rel);
    } else {
        len = snprintf(out, SCN_PATH_MAX, "%.*s/%s", (int)(slash - base), base, rel);
        if (len < SCN_PATH_MAX && access(out, F_OK) != 0 && access(rel, F_OK) == 0)
            len = snprintf(out, SCN_PATH_MAX, "%s", rel);
    }
    if (len >= SCN_PATH_MAX)
        return yd_fail(e, n, path, "path too long (at most %d characters)", SCN_PATH_MAX - 1);
    return 0;
}

/* A file the scenario reads now (a model file) that cannot be read: said at the key that names
 * it (the profile and the trace are read later, by their own loaders). */
static int readable(yd_err_t *e, const yd_node_t *n, const char *path, const char *file)
{
    const char *why = NULL;
    FILE *f = yd_open_input(file, &why);
    if (!f) return yd_fail(e, n, path, "%s: %s", file, why);
    fclose(f);
    return 0;
}

/* Check a mapping's keys against allowed (strict map) for the given purpose. */
static int keys_only(yd_err_t *e, const yd_node_t *m, const char *path,
                     const char *const *allowed, const char *why)
{
    if (yd_expect(e, m, path, YD_MAP))
        return -1;
    for (int i = 0; i < m->n; i++) {
        int ok = 0;
        for (int j = 0; allowed[j] && !ok; j++)
            ok = !strcmp(m->keys[i]->text, allowed[j]);
        if (ok)
            continue;
        char list[256], kp[YD_PATH_MAX];
        size_t o = 0;
        list[0] = '\0';
        for (int j = 0; allowed[j] && o < sizeof list - 1; j++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", j ? ", " : "", allowed[j]);
        return yd_fail(e, m->keys[i], yd_path(kp, path, m->keys[i]->text),
                       "key \"%s\" is not used %s (allowed: %s)", m->keys[i]->text, why, list);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* model                                                                               */

static const char *const model_keys[] = {"name", "layers", "full_attention_layers", "hidden",
    "intermediate", "vocab", "attention", "gdn", "weight_bytes_per_param", "mtp_layers", "moe", NULL};
static const char *const moe_keys[] = {"experts", "experts_per_token", "shared_experts",
    "expert_intermediate", "shared_expert_intermediate", "first_k_dense", "decoder_sparse_step",
    "skew", NULL};
static const char *const attn_keys[] = {"q_heads", "kv_heads", "head_dim", "output_gate", NULL};
static const char *const gdn_keys[] = {"key_heads", "value_heads", "key_head_dim",
    "value_head_dim", "conv_kernel", "state_bytes", "conv_bytes", NULL};

/* The derived shapes fit (model_check()); the message names the key that sets them. */
static int check_model(yd_err_t *e, const yd_node_t *m, const char *mp, const model_t *md)
{
    char kp[YD_PATH_MAX], sp[YD_PATH_MAX];
    const yd_node_t *attn = yd_map_get(m, "attention"), *gdn = yd_map_get(m, "gdn");
    switch (model_check(md)) {
    case MODEL_OK:
        return 0;
    case MODEL_E_NO_ATTN:
        return yd_fail(e, yd_map_get(m, "full_attention_layers"),
                       yd_path(kp, mp, "full_attention_layers"),
                       "at least 1 (the KV cache is sized by the full-attention layers), got 0");
    case MODEL_E_ATTN_WIDTH:
        return yd_fail(e, attn, yd_path(kp, mp, "attention"),
                       "heads x head_dim (%d x %d) too large (the qkv width must fit %d)",
                       md->n_q_heads, md->head_dim, INT_MAX);
    case MODEL_E_MLP_WIDTH:
        return yd_fail(e, yd_map_get(m, "intermediate"), yd_path(kp, mp, "intermediate"),
                       "at most %d (the gate+up width, 2 x intermediate, must fit %d), got %d",
                       INT_MAX / 2, INT_MAX, md->intermediate);
    case MODEL_E_GDN_WIDTH:
        return yd_fail(e, gdn, yd_path(kp, mp, "gdn"),
                       "heads x head dims too large (the conv and in_proj widths must fit %d)",
                       INT_MAX);
    case MODEL_E_GDN_PAGE:
        return yd_fail(e, gdn, yd_path(kp, mp, "gdn"),
                       "the recurrent state of one layer and one request exceeds 2^48 bytes");
    case MODEL_E_BLOCK:
        yd_path(sp, mp, "gdn");
        return yd_fail(e, gdn, sp,
                       "the recurrent state is too large for the attention page: the derived "
                       "block size would exceed %d tokens", MODEL_BLOCK_MAX);
    }
    return yd_fail(e, m, mp, "invalid model shapes");
}

/* model.moe: routed experts replace the dense MLP of the sparse layers. */
static int parse_moe(yd_err_t *e, const yd_node_t *m, const char *mp, model_t *md)
{
    char kp[YD_PATH_MAX];
    md->moe_step = 1;
    if (yd_strict_map(e, m, mp, moe_keys) ||
        yd_get_int(e, m, mp, "experts", YD_REQ, 1, MODEL_MOE_MAX, &md->moe_experts) < 0 ||
        yd_get_int(e, m, mp, "experts_per_token", YD_REQ, POS, &md->moe_topk) < 0 ||
        yd_get_int(e, m, mp, "shared_experts", YD_OPT, 0, 64, &md->moe_shared) < 0 ||
        yd_get_int(e, m, mp, "expert_intermediate", YD_REQ, POS, &md->moe_inter) < 0 ||
        yd_get_int(e, m, mp, "first_k_dense", YD_OPT, 0, INT_MAX, &md->moe_first_dense) < 0 ||
        yd_get_int(e, m, mp, "decoder_sparse_step", YD_OPT, POS, &md->moe_step) < 0 ||
        yd_get_double(e, m, mp, "skew", YD_OPT, 0.0, 16.0, 0, &md->moe_skew) < 0)
        return -1;
    md->moe_shared_inter = md->moe_inter;
    if (yd_get_int(e, m, mp, "shared_expert_intermediate", YD_OPT, POS, &md->moe_shared_inter) < 0)
        return -1;
    if (md->moe_topk > md->moe_experts)
        return yd_fail(e, yd_map_get(m, "experts_per_token"), yd_path(kp, mp, "experts_per_token"),
                       "at most experts (%d), got %d", md->moe_experts, md->moe_topk);
    return 0;
}

static int parse_model(yd_err_t *e, const yd_node_t *m, const char *mp, model_t *md)
{
    char ap[YD_PATH_MAX], gp[YD_PATH_MAX], kp[YD_PATH_MAX];
    yd_node_t *attn, *gdn = NULL, *moe = NULL;
    memset(md, 0, sizeof *md);
    if (yd_strict_map(e, m, mp, model_keys) ||
        yd_get_str(e, m, mp, "name", YD_REQ, md->name, sizeof md->name) < 0 ||
        yd_get_int(e, m, mp, "layers", YD_REQ, POS, &md->n_layers) < 0 ||
        yd_get_int(e, m, mp, "full_attention_layers", YD_REQ, 0, INT_MAX, &md->n_full_attn) < 0 ||
        yd_get_int(e, m, mp, "hidden", YD_REQ, POS, &md->hidden) < 0 ||
        yd_get_int(e, m, mp, "intermediate", YD_REQ, POS, &md->intermediate) < 0 ||
        yd_get_int(e, m, mp, "vocab", YD_REQ, POS, &md->vocab) < 0 ||
        yd_get_double(e, m, mp, "weight_bytes_per_param", YD_REQ, 0.0, 64.0, YD_LO_OPEN,
                      &md->weight_bytes_per_param) < 0 ||
        yd_get_int(e, m, mp, "mtp_layers", YD_OPT, 0, 64, &md->mtp_layers) < 0 ||
        yd_get_node(e, m, mp, "attention", YD_REQ, YD_MAP, &attn) < 0 ||
        yd_get_node(e, m, mp, "gdn", YD_OPT, YD_MAP, &gdn) < 0 ||
        yd_get_node(e, m, mp, "moe", YD_OPT, YD_MAP, &moe) < 0)
        return -1;
    if (moe && parse_moe(e, moe, yd_path(kp, mp, "moe"), md))
        return -1;
    if (md->n_full_attn > md->n_layers)
        return yd_fail(e, yd_map_get(m, "full_attention_layers"),
                       yd_path(kp, mp, "full_attention_layers"),
                       "%d full-attention layers but only %d layers", md->n_full_attn,
                       md->n_layers);
    md->n_gdn = md->n_layers - md->n_full_attn;
    md->n_moe = model_moe_layers(md);
    if (moe && md->n_moe < 1)
        return yd_fail(e, moe, yd_path(kp, mp, "moe"),
                       "no sparse layer: first_k_dense (%d) and decoder_sparse_step (%d) leave all %d layers dense",
                       md->moe_first_dense, md->moe_step, md->n_layers);
    yd_path(ap, mp, "attention");
    if (yd_strict_map(e, attn, ap, attn_keys) ||
        yd_get_int(e, attn, ap, "q_heads", YD_REQ, POS, &md->n_q_heads) < 0 ||
        yd_get_int(e, attn, ap, "kv_heads", YD_REQ, POS, &md->n_kv_heads) < 0 ||
        yd_get_int(e, attn, ap, "head_dim", YD_REQ, POS, &md->head_dim) < 0 ||
        yd_get_bool(e, attn, ap, "output_gate", YD_OPT, &md->attn_output_gate) < 0)
        return -1;
    if (md->n_q_heads % md->n_kv_heads)
        return yd_fail(e, yd_map_get(attn, "kv_heads"), yd_path(kp, ap, "kv_heads"),
                       "q_heads (%d) must be a multiple of kv_heads (%d)", md->n_q_heads,
                       md->n_kv_heads);
    yd_path(gp, mp, "gdn");
    if (!gdn) {
        if (md->n_gdn > 0)
            return yd_fail(e, m, mp, "missing required key \"gdn\" (the model has %d GDN layers)",
                           md->n_gdn);
        return check_model(e, m, mp, md);
    }
    if (yd_strict_map(e, gdn, gp, gdn_keys) ||
        yd_get_int(e, gdn, gp, "key_heads", YD_REQ, POS, &md->gdn_k_heads) < 0 ||
        yd_get_int(e, gdn, gp, "value_heads", YD_REQ, POS, &md->gdn_v_heads) < 0 ||
        yd_get_int(e, gdn, gp, "key_head_dim", YD_REQ, POS, &md->gdn_head_dim_k) < 0 ||
        yd_get_int(e, gdn, gp, "value_head_dim", YD_REQ, POS, &md->gdn_head_dim_v) < 0 ||
        yd_get_int(e, gdn, gp, "conv_kernel", YD_REQ, POS, &md->gdn_conv_kernel) < 0 ||
        yd_get_int(e, gdn, gp, "state_bytes", YD_REQ, 1, 8, &md->gdn_state_bytes) < 0 ||
        yd_get_int(e, gdn, gp, "conv_bytes", YD_REQ, 1, 8, &md->gdn_conv_bytes) < 0)
        return -1;
    return check_model(e, m, mp, md);
}

static int load_model_file(yd_err_t *e, const char *path, model_t *out)
{
    static const char *const top[] = {"model", NULL};
    yd_doc_t *d = yd_load(path, e);
    if (!d)
        return -1;
    yd_node_t *m;
    int rc = 0;
    if (yd_strict_map(e, yd_root(d), "", top) ||
        yd_get_node(e, yd_root(d), "", "model", YD_REQ, YD_MAP, &m) < 0 ||
        parse_model(e, m, "model", out))
        rc = -1;
    yd_free(d);
    return rc;
}

int scn_load_model(const char *path, model_t *out, char err[SCN_ERR_MAX])
{
    yd_err_t e;
    yd_err_init(&e, err, SCN_ERR_MAX);
    return load_model_file(&e, path, out);
}

/* ---------------------------------------------------------------------------------- */
/* engine, env, acceptance                                                             */

static const char *const engine_keys[] = {"max_num_batched_tokens", "max_num_seqs",
    "max_model_len", "enable_prefix_caching", "kv_cache_dtype", "tensor_parallel_size",
    "block_size", "num_gpu_blocks", "gpu_memory_utilization", "speculative_config",
    "scheduler", "mamba_cache_mode", "enable_chunked_prefill", "long_prefill_token_threshold",
    "max_num_partial_prefills", "max_long_partial_prefills", "scheduling_policy",
    "attention_backend", "prefix_cache_model", "prefix_cache_retention_interval", NULL};
static const char *const pc_models[] = {"count", "pool", NULL};
static const char *const sched_names[] = {"fork", "upstream", NULL};
static const char *const mamba_names[] = {"align", "none", "all", NULL};
static const char *const policy_names[] = {"fcfs", "priority", NULL};
static const char *const backend_names[] = {"fork", "varlen", NULL};
static const char *const spec_keys[] = {"method", "num_speculative_tokens", "draft_layers", NULL};
static const char *const kv_names[] = {"auto", "fp16", "float16", "fp8_e5m2", "fp8", "fp8_e4m3",
                                       NULL};

static void engine_defaults(scn_engine_t *g)
{
    g->max_num_batched_tokens = 2048;
    g->max_num_seqs = 256;
    g->max_model_len = 262144;
    g->enable_prefix_caching = 1;
    g->kv_cache_dtype = KV_FP16;
    g->tensor_parallel_size = 1;
    g->gpu_memory_utilization = 0.9;
    g->enable_chunked_prefill = 1;
    g->max_num_partial_prefills = 1;
    g->max_long_partial_prefills = 1;
    g->retention = -1;
}

/* m's node for key, else `at` (a message about a key that is not written points at at). */
static const yd_node_t *key_at(const yd_node_t *m, const char *key, const yd_node_t *at)
{
    const yd_node_t *n = m ? yd_map_get(m, key) : NULL;
    return n ? n : at;
}

/* The engine mapping m (NULL: none) at path ep over g's values (the defaults, or the
 * scenario's engine for a cluster pool), checked against s->model; at: where a message
 * about a key m does not write points. */
static int engine_map(yd_err_t *e, const yd_node_t *m, const char *ep, const yd_node_t *at, scenario_t *s)
{
    scn_engine_t *g = &s->engine;
    char kp[YD_PATH_MAX];
    int kv = g->kv_cache_dtype == KV_FP8_E5M2 ? 3 : g->kv_cache_dtype == KV_FP8_E4M3 ? 4 : 0;
    int sk = g->scheduler, mm = g->mamba_cache_mode, pol = g->scheduling_policy, be = g->attention_backend;
    yd_node_t *spec = NULL;
    if (m && (yd_strict_map(e, m, ep, engine_keys) ||
        yd_get_int(e, m, ep, "max_num_batched_tokens", YD_OPT, POS, &g->max_num_batched_tokens) < 0 ||
        yd_get_int(e, m, ep, "max_num_seqs", YD_OPT, POS, &g->max_num_seqs) < 0 ||
        yd_get_long(e, m, ep, "max_model_len", YD_OPT, 1, SCN_MAX_TOKENS, &g->max_model_len) < 0 ||
        yd_get_bool(e, m, ep, "enable_prefix_caching", YD_OPT, &g->enable_prefix_caching) < 0 ||
        yd_get_enum(e, m, ep, "kv_cache_dtype", YD_OPT, kv_names, &kv) < 0 ||
        yd_get_int(e, m, ep, "tensor_parallel_size", YD_OPT, POS, &g->tensor_parallel_size) < 0 ||
        yd_get_int(e, m, ep, "block_size", YD_OPT, 16, SCN_MAX_BLOCK_SIZE, &g->block_size) < 0 ||
        yd_get_long(e, m, ep, "num_gpu_blocks", YD_OPT, 1, SCN_MAX_GPU_BLOCKS, &g->num_gpu_blocks) < 0 ||
        yd_get_double(e, m, ep, "gpu_memory_utilization", YD_OPT, 0.0, 1.0, YD_LO_OPEN,
                      &g->gpu_memory_utilization) < 0 ||
        yd_get_node(e, m, ep, "speculative_config", YD_OPT, YD_ANY, &spec) < 0 ||
        yd_get_enum(e, m, ep, "scheduler", YD_OPT, sched_names, &sk) < 0 ||
        yd_get_enum(e, m, ep, "mamba_cache_mode", YD_OPT, mamba_names, &mm) < 0 ||
        yd_get_bool(e, m, ep, "enable_chunked_prefill", YD_OPT, &g->enable_chunked_prefill) < 0 ||
        yd_get_long(e, m, ep, "long_prefill_token_threshold", YD_OPT, 0, LONG_MAX,
                    &g->long_prefill_token_threshold) < 0 ||
        yd_get_int(e, m, ep, "max_num_partial_prefills", YD_OPT, POS, &g->max_num_partial_prefills) < 0 ||
        yd_get_int(e, m, ep, "max_long_partial_prefills", YD_OPT, POS, &g->max_long_partial_prefills) < 0 ||
        yd_get_enum(e, m, ep, "scheduling_policy", YD_OPT, policy_names, &pol) < 0 ||
        yd_get_enum(e, m, ep, "attention_backend", YD_OPT, backend_names, &be) < 0 ||
        yd_get_enum(e, m, ep, "prefix_cache_model", YD_OPT, pc_models, &g->prefix_pool) < 0))
        return -1;
    yd_node_t *rn = m ? yd_map_get(m, "prefix_cache_retention_interval") : NULL;
    if (rn && !yd_is_null(rn)) {
        if (yd_as_long(e, rn, yd_path(kp, ep, "prefix_cache_retention_interval"), 0, LONG_MAX, &g->retention))
            return -1;
        g->retention_line = rn->line;
        g->retention_col = rn->col;
    } else if (rn) {
        g->retention = -1;
    }
    if (g->retention >= 0 && !g->prefix_pool)
        return yd_fail(e, key_at(m, "prefix_cache_retention_interval", at), yd_path(kp, ep, "prefix_cache_retention_interval"),
                       "needs engine.prefix_cache_model: pool");
    g->scheduler = (sched_kind_t)sk;
    /* absent: the fork aligns every hybrid model's chunks; vLLM
     * (HybridAttentionMambaModelConfig.verify_and_update_config) picks align with prefix
     * caching, none without.  A model without recurrent layers has no mamba cache: the mode
     * is moot there (sched.c aligns only where n_gdn > 0). */
    if (m && yd_map_get(m, "mamba_cache_mode")) {
        g->mamba_cache_mode = (mamba_mode_t)mm;
        g->mamba_set = 1;
    } else if (!g->mamba_set) {
        g->mamba_cache_mode = g->scheduler == SCHED_UPSTREAM && !g->enable_prefix_caching ? MAMBA_NONE : MAMBA_ALIGN;
    }
    /* the pool keeps ~45 bytes of state a block, all allocated at the start */
    if (g->prefix_pool && g->num_gpu_blocks > KVPOOL_MAX_BLOCKS)
        return yd_fail(e, key_at(m, "num_gpu_blocks", at), yd_path(kp, ep, "num_gpu_blocks"),
                       "at most %ld with prefix_cache_model: pool (its state is ~45 bytes a block, allocated at"
                       " the start: ~190 MB at the bound), got %ld", (long)KVPOOL_MAX_BLOCKS, g->num_gpu_blocks);
    if (g->prefix_pool && g->mamba_cache_mode == MAMBA_ALL)
        return yd_fail(e, key_at(m, "mamba_cache_mode", at), yd_path(kp, ep, "mamba_cache_mode"),
                       "all is not modelled by engine.prefix_cache_model: pool (align or none)");
    g->scheduling_policy = (sched_policy_t)pol;
    /* absent: upstream vLLM runs FlashAttention-style varlen attention (the whole step in one
     * call), the fork its own per-row router */
    if (m && yd_map_get(m, "attention_backend")) g->attention_backend_set = 1;
    g->attention_backend = g->attention_backend_set ? (attn_backend_t)be
                           : g->scheduler == SCHED_UPSTREAM ? ATTN_BACKEND_VARLEN : ATTN_BACKEND_FORK;
    /* vLLM (EngineArgs._check_feature_supported) refuses anything but 1 for either:
     * "NotImplementedError: Concurrent Partial Prefill is not supported"; v1's scheduler has
     * no partial-prefill limit, so 1 means none here too */
    static const char *const partial[] = {"max_num_partial_prefills", "max_long_partial_prefills", NULL};
    for (int i = 0; partial[i]; i++)
        if ((i ? g->max_long_partial_prefills : g->max_num_partial_prefills) != 1)
            return yd_fail(e, key_at(m, partial[i], at), yd_path(kp, ep, partial[i]),
                           "only 1 (vLLM v1 refuses others: Concurrent Partial Prefill is not supported), got %d",
                           i ? g->max_long_partial_prefills : g->max_num_partial_prefills);
    if (g->scheduler == SCHED_FORK) {
        /* the fork's scheduler has none of upstream's knobs: a set one would be ignored */
        static const char *const up_only[] = {"long_prefill_token_threshold", "max_num_partial_prefills",
            "max_long_partial_prefills", "scheduling_policy", NULL};
        for (int i = 0; up_only[i] && m; i++)
            if (yd_map_get(m, up_only[i]))
                return yd_fail(e, yd_map_get(m, up_only[i]), yd_path(kp, ep, up_only[i]),
                               "needs engine.scheduler: upstream (the fork's scheduler has no such knob)");
        if (!g->enable_chunked_prefill)
            return yd_fail(e, key_at(m, "enable_chunked_prefill", at), yd_path(kp, ep, "enable_chunked_prefill"),
                           "false needs engine.scheduler: upstream (the fork always chunks)");
    }
    /* vLLM refuses it at start-up (SchedulerConfig.verify_max_model_len,
     * vllm-project/vllm:vllm/config/scheduler.py@01230b40128e570a58e54e75f7e55c4d5cd9246d): a
     * prompt longer than the budget could never be admitted whole */
    if (g->scheduler == SCHED_UPSTREAM && !g->enable_chunked_prefill && g->max_num_batched_tokens < g->max_model_len)
        return yd_fail(e, key_at(m, "enable_chunked_prefill", at), yd_path(kp, ep, "enable_chunked_prefill"),
                       "false needs max_num_batched_tokens (%ld) >= max_model_len (%ld): vLLM refuses it, a longer"
                       " prompt could never be admitted whole", (long)g->max_num_batched_tokens, (long)g->max_model_len);
    if (g->max_num_seqs > SCN_MAX_SEQS)
        return yd_fail(e, key_at(m, "max_num_seqs", at), yd_path(kp, ep, "max_num_seqs"),
                       "at most %d (the engine sizes its per-step arrays by it), got %d",
                       SCN_MAX_SEQS, g->max_num_seqs);
    /* vLLM's "fp8" is e4m3 (CacheDType, vllm/config/cache.py) */
    g->kv_cache_dtype = kv == 3 ? KV_FP8_E5M2 : kv >= 4 ? KV_FP8_E4M3 : KV_FP16;
    if (g->block_size % 16)
        return yd_fail(e, key_at(m, "block_size", at), yd_path(kp, ep, "block_size"),
                       "expected a multiple of 16, got %d", g->block_size);
    const model_t *md = &s->model;
    int tp = g->tensor_parallel_size;
    model_rank_t r;
    if (model_rank(md, tp, &r) ||
        (md->n_kv_heads >= tp ? md->n_kv_heads % tp : tp % md->n_kv_heads))
        return yd_fail(e, key_at(m, "tensor_parallel_size", at), yd_path(kp, ep, "tensor_parallel_size"),
                       "%d does not divide the model's heads (q %d, kv %d, gdn key %d, gdn value %d)",
                       tp, md->n_q_heads, md->n_kv_heads, md->gdn_k_heads, md->gdn_v_heads);
    /* experts are split over the ranks (no expert parallelism): each one's width must divide */
    if (md->moe_experts > 0 && (md->moe_inter % tp || (md->moe_shared > 0 && md->moe_shared_inter % tp)))
        return yd_fail(e, key_at(m, "tensor_parallel_size", at), yd_path(kp, ep, "tensor_parallel_size"),
                       "%d does not divide the model's expert widths (expert %d, shared %d)", tp, md->moe_inter,
                       md->moe_shared_inter);
    if (spec && yd_is_null(spec)) {
        g->spec_mtp = 0;
        g->spec_dflash2 = 0;
        g->draft_layers = 0;
        g->num_speculative_tokens = 0;
    } else if (spec) {
        char sp[YD_PATH_MAX];
        yd_path(sp, ep, "speculative_config");
        static const char *const methods[] = {"mtp", "dflash2", NULL};
        int meth;
        if (yd_strict_map(e, spec, sp, spec_keys))
            return -1;
        yd_node_t *mn = yd_map_get(spec, "method");
        if (mn && mn->kind == YD_SCALAR && !yd_is_null(mn) && strcmp(mn->text, "mtp") && strcmp(mn->text, "dflash2"))
            return yd_fail(e, mn, yd_path(kp, sp, "method"),
                           "only methods mtp and dflash2 are modelled, got \"%s\"", mn->text);
        if (yd_get_enum(e, spec, sp, "method", YD_REQ, methods, &meth) < 0 ||
            yd_get_int(e, spec, sp, "num_speculative_tokens", YD_REQ, 1, 15,
                       &g->num_speculative_tokens) < 0)
            return -1;
        g->spec_dflash2 = meth == 1;
        g->draft_layers = g->spec_dflash2 ? 5 : 0;
        yd_node_t *dl = yd_map_get(spec, "draft_layers");
        if (dl && !g->spec_dflash2)
            return yd_fail(e, dl, yd_path(kp, sp, "draft_layers"),
                           "only method dflash2 has a draft model (mtp drafts with the model's MTP module)");
        if (yd_get_int(e, spec, sp, "draft_layers", YD_OPT, 1, 64, &g->draft_layers) < 0)
            return -1;
        if (!g->spec_dflash2 && md->mtp_layers < 1)
            return yd_fail(e, mn, yd_path(kp, sp, "method"),
                           "model %s has no MTP module (mtp_layers: 0)", md->name);
        g->spec_mtp = 1;
    } else if (g->spec_mtp && md->mtp_layers < 1) {
        return yd_fail(e, at, yd_path(kp, ep, "speculative_config"), "model %s has no MTP module (mtp_layers: 0)",
                       md->name);
    }
    return 0;
}

static int parse_engine(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    engine_defaults(&s->engine);
    yd_node_t *m = yd_map_get(root, "engine");
    s->engine_line = m ? m->line : 1;
    s->engine_col = m ? m->col : 1;
    if (!m || yd_is_null(m))
        return 0;
    return engine_map(e, m, "engine", m, s);
}

static const char *const env_keys[] = {"VLLM_1CAT_PREFILL_PACE_STEPS",
    "VLLM_FLASH_V100_PREFILL_PREFIX_DECODE_ROWS", "VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q",
    "VLLM_FLASH_V100_PREFILL_D256_BM32_ANY_PAGE", "VLLM_FLASH_V100_GROUPED_VERIFY_MULTI_KV_HEAD", NULL};

static int parse_env(yd_err_t *e, const yd_node_t *root, scn_env_t *v)
{
    v->pace_steps = 0;
    v->prefix_decode_rows = 0;
    v->smallq_decode_max_q = 16;
    v->d256_bm32_any_page = 0;
    v->grouped_verify = 0;
    yd_node_t *m = yd_map_get(root, "env");
    if (!m || yd_is_null(m))
        return 0;
    if (yd_strict_map(e, m, "env", env_keys) ||
        yd_get_int(e, m, "env", env_keys[0], YD_OPT, 0, INT_MAX, &v->pace_steps) < 0 ||
        yd_get_int(e, m, "env", env_keys[1], YD_OPT, 0, 1, &v->prefix_decode_rows) < 0 ||
        yd_get_int(e, m, "env", env_keys[2], YD_OPT, 1, SCN_MAX_SMALLQ, &v->smallq_decode_max_q) < 0 ||
        yd_get_int(e, m, "env", env_keys[3], YD_OPT, 0, 1, &v->d256_bm32_any_page) < 0 ||
        yd_get_int(e, m, "env", env_keys[4], YD_OPT, 0, 1, &v->grouped_verify) < 0)
        return -1;
    return 0;
}

static int parse_accept(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    static const char *const keys[] = {"mean_accepted", "per_position", NULL};
    const char *ap = "mtp_acceptance";
    scn_accept_t *a = &s->accept;
    int on = s->engine.spec_mtp, k = on ? s->engine.num_speculative_tokens : 16;
    yd_node_t *m = yd_map_get(root, ap), *pp = NULL;
    if (!m || yd_is_null(m)) {
        if (on)
            return yd_fail(e, root, "", "mtp_acceptance: required when speculative_config is set");
        return 0;
    }
    if (yd_strict_map(e, m, ap, keys))
        return -1;
    int has_mean = yd_map_get(m, "mean_accepted") != NULL;
    if (has_mean == (yd_map_get(m, "per_position") != NULL))
        return yd_fail(e, m, ap, "give exactly one of mean_accepted or per_position");
    if (has_mean) {
        a->per_position = 0;
        return yd_get_double(e, m, ap, "mean_accepted", YD_REQ, 0.0, k, 0, &a->mean_accepted) < 0
                   ? -1 : 0;
    }
    if (yd_get_node(e, m, ap, "per_position", YD_REQ, YD_SEQ, &pp) < 0)
        return -1;
    if (on ? pp->n != k : (pp->n < 1 || pp->n > 16))
        return on ? yd_fail(e, pp, "mtp_acceptance.per_position",
                            "expected %d probabilities (num_speculative_tokens), got %d", k, pp->n)
                  : yd_fail(e, pp, "mtp_acceptance.per_position",
                            "expected 1 to 16 probabilities, got %d", pp->n);
    a->per_position = 1;
    a->n_probs = pp->n;
    for (int i = 0; i < pp->n; i++) {
        char ip[YD_PATH_MAX];
        if (yd_as_double(e, pp->vals[i], yd_path_idx(ip, "mtp_acceptance.per_position", i), 0.0,
                         1.0, 0, &a->probs[i]))
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* workload                                                                            */

static const char *const req_keys[] = {"id", "prompt_tokens", "cached_tokens", "output_tokens",
                                       "arrival", "priority", "prefix", "follows", NULL};
static const char *const prefix_keys[] = {"name", "tokens", NULL};
static const char *const trig_keys[] = {"after", "decoded", "event", "delay_s", NULL};

/* Request ids hash into s->req_by_id (linear probing; -1 = empty), so loading n requests,
 * their triggers and the windows naming them is linear in n. */
static unsigned id_hash(const char *id)
{
    unsigned h = 2166136261u;
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619u;
    return h;
}

int scn_input_files(const scenario_t *s, const char *in[SCN_MAX_INPUTS])
{
    const char *all[SCN_MAX_INPUTS] = { s->model_path, s->profile_path, s->trace_path };
    int nall = 3, n = 0;
    for (int k = 0; k < s->cluster.n_pools; k++)
        if (s->cluster.pools[k].s) all[nall++] = s->cluster.pools[k].s->model_path;
    for (int k = 0; k < nall; k++)
        if (all[k][0]) in[n++] = all[k];
    return n;
}

int scn_find_request(const scenario_t *s, const char *id)
{
    if (!s->req_by_id)
        return -1;
    for (unsigned h = id_hash(id) & s->req_by_id_mask;; h = (h + 1) & s->req_by_id_mask) {
        int i = s->req_by_id[h];
        if (i < 0 || !strcmp(s->requests[i].id, id))
            return i;
    }
}

/* Add request i (its id is unique) to the index. */
static void index_request(scenario_t *s, int i)
{
    unsigned h = id_hash(s->requests[i].id) & s->req_by_id_mask;
    while (s->req_by_id[h] >= 0)
        h = (h + 1) & s->req_by_id_mask;
    s->req_by_id[h] = i;
}

static int find_req(const scenario_t *s, const char *id)
{
    return scn_find_request(s, id);
}

long scn_request_output(const scenario_t *s, int i)
{
    const scn_request_t *r = &s->requests[i];
    long room = s->engine.max_model_len - r->prompt_tokens;
    return r->output_tokens < room ? r->output_tokens : room > 0 ? room : 1;
}

long scn_dist_round(const scn_dist_t *d, double x)
{
    long lo = d->min > 1 ? d->min : 1, hi = d->max > 0 ? d->max : LONG_MAX;
    if (hi < lo)
        hi = lo;
    if (!(x > (double)lo))                 /* below, or NaN */
        return lo;
    if (x >= (double)hi || x >= 9.2e18)    /* (double)LONG_MAX rounds up: stay below it */
        return hi;
    long v = lround(x);
    return v < lo ? lo : v > hi ? hi : v;
}

static int parse_id(yd_err_t *e, const yd_node_t *n, const char *path, char out[SCN_ID_MAX])
{
    if (yd_as_str(e, n, path, out, SCN_ID_MAX))
        return -1;
    if (!valid_id(out))
        return yd_fail(e, n, path, "expected an id of letters, digits, _ and -, got \"%s\"", out);
    return 0;
}

static int parse_arrival(yd_err_t *e, const yd_node_t *a, const char *path, scn_trigger_t *t)
{
    memset(t, 0, sizeof *t);
    t->ref_idx = -1;
    if (a->kind == YD_SCALAR) {
        t->kind = TRIG_TIME;
        return yd_as_double(e, a, path, NONNEG_NUM, &t->time_s);
    }
    if (a->kind != YD_MAP)
        return yd_fail(e, a, path, "expected seconds or {after: ID, decoded: N | event: E}, got a list");
    int ev;
    if (yd_strict_map(e, a, path, trig_keys) ||
        yd_get_str(e, a, path, "after", YD_REQ, t->ref, sizeof t->ref) < 0 ||
        yd_get_double(e, a, path, "delay_s", YD_OPT, NONNEG_NUM, &t->delay_s) < 0)
        return -1;
    int has_dec = yd_map_get(a, "decoded") != NULL, has_ev = yd_map_get(a, "event") != NULL;
    if (has_dec == has_ev)
        return yd_fail(e, a, path, "give exactly one of decoded or event");
    if (has_dec) {
        t->kind = TRIG_AFTER_DECODED;
        return yd_get_long(e, a, path, "decoded", YD_REQ, 0, LONG_MAX, &t->decoded) < 0 ? -1 : 0;
    }
    t->kind = TRIG_AFTER_EVENT;
    if (yd_get_enum(e, a, path, "event", YD_REQ, event_names, &ev) < 0)
        return -1;
    t->event = (req_event_t)ev;
    return 0;
}

/* Request i's shared content (prefix: or follows:), and cached_tokens against the
 * prefix-cache model. */
static int parse_shared(yd_err_t *e, const yd_node_t *m, const char *rp, scenario_t *s, int i)
{
    scn_request_t *r = &s->requests[i];
    char kp[YD_PATH_MAX], fp[YD_PATH_MAX];
    yd_node_t *pn = yd_map_get(m, "prefix"), *fn = yd_map_get(m, "follows");
    r->follows = -1;
    if (s->engine.prefix_pool && r->cached_tokens > 0)
        return yd_fail(e, yd_map_get(m, "cached_tokens"), yd_path(kp, rp, "cached_tokens"),
                       "with engine.prefix_cache_model: pool hits come from the cache (use prefix or follows)");
    if ((pn || fn) && !s->engine.prefix_pool)
        return yd_fail(e, pn ? pn : fn, yd_path(kp, rp, pn ? "prefix" : "follows"),
                       "needs engine.prefix_cache_model: pool");
    if (pn && fn)
        return yd_fail(e, fn, yd_path(kp, rp, "follows"), "give one of prefix or follows");
    if (pn) {
        yd_node_t *nn;
        yd_path(kp, rp, "prefix");
        if (yd_strict_map(e, pn, kp, prefix_keys) ||
            yd_get_node(e, pn, kp, "name", YD_REQ, YD_SCALAR, &nn) < 0 ||
            parse_id(e, nn, yd_path(fp, kp, "name"), r->prefix) ||
            yd_get_long(e, pn, kp, "tokens", YD_REQ, 1, r->prompt_tokens, &r->prefix_tokens) < 0)
            return -1;
    }
    if (fn) {
        char id[SCN_ID_MAX];
        yd_path(kp, rp, "follows");
        if (parse_id(e, fn, kp, id))
            return -1;
        int j = find_req(s, id);
        if (j < 0 || j >= i)
            return yd_fail(e, fn, kp, "expected an earlier request's id, got \"%s\"", id);
        long len = s->requests[j].prompt_tokens + scn_request_output(s, j);
        if (len > r->prompt_tokens)
            return yd_fail(e, fn, kp, "request %s's prompt and output (%ld tokens) exceed this prompt (%ld)",
                           id, len, r->prompt_tokens);
        r->follows = j;
    }
    return 0;
}

static int parse_requests(yd_err_t *e, const yd_node_t *list, scenario_t *s)
{
    const char *lp = "workload.requests";
    if (yd_expect(e, list, lp, YD_SEQ))
        return -1;
    if (!list->n)
        return 0;
    s->requests = calloc((size_t)list->n, sizeof *s->requests);
    unsigned tab = 2;
    while (tab < 2u * (unsigned)list->n)
        tab *= 2;
    s->req_by_id = malloc(tab * sizeof *s->req_by_id);
    if (!s->requests || !s->req_by_id)
        return yd_fail(e, list, lp, "out of memory");
    memset(s->req_by_id, 0xff, tab * sizeof *s->req_by_id);   /* all -1 */
    s->req_by_id_mask = tab - 1;
    for (int i = 0; i < list->n; i++) {
        const yd_node_t *m = list->vals[i];
        scn_request_t *r = &s->requests[i];
        char rp[YD_PATH_MAX], kp[YD_PATH_MAX];
        yd_node_t *idn, *arr = NULL;
        yd_path_idx(rp, lp, i);
        r->line = m->line;
        r->col = m->col;
        if (yd_strict_map(e, m, rp, req_keys) ||
            yd_get_node(e, m, rp, "id", YD_REQ, YD_SCALAR, &idn) < 0 ||
            parse_id(e, idn, yd_path(kp, rp, "id"), r->id))
            return -1;
        int dup = find_req(s, r->id);
        if (dup >= 0)
            return yd_fail(e, idn, kp, "duplicate request id \"%s\" (also %s[%d])", r->id, lp, dup);
        s->n_requests = i + 1;
        index_request(s, i);
        if (yd_get_long(e, m, rp, "prompt_tokens", YD_REQ, POSL, &r->prompt_tokens) < 0 ||
            yd_get_long(e, m, rp, "cached_tokens", YD_OPT, 0, r->prompt_tokens, &r->cached_tokens) < 0 ||
            yd_get_long(e, m, rp, "output_tokens", YD_REQ, POSL, &r->output_tokens) < 0 ||
            yd_get_node(e, m, rp, "arrival", YD_OPT, YD_ANY, &arr) < 0 ||
            yd_get_long(e, m, rp, "priority", YD_OPT, LONG_MIN, LONG_MAX, &r->priority) < 0)
            return -1;
        if (arr && parse_arrival(e, arr, yd_path(kp, rp, "arrival"), &r->arrival))
            return -1;
        if (parse_shared(e, m, rp, s, i))
            return -1;
        /* vLLM rejects a prompt longer than max_model_len; generation past it is cut
         * short by the engine (the reference scenario's A decodes near the limit). */
        if (r->prompt_tokens > s->engine.max_model_len)
            return yd_fail(e, yd_map_get(m, "prompt_tokens"), yd_path(kp, rp, "prompt_tokens"),
                           "%ld exceeds engine.max_model_len (%ld)", r->prompt_tokens,
                           s->engine.max_model_len);
    }
    /* triggers: the referenced request exists, is another one, and there is no cycle */
    for (int i = 0; i < s->n_requests; i++) {
        scn_trigger_t *t = &s->requests[i].arrival;
        if (t->kind == TRIG_TIME)
            continue;
        char rp[YD_PATH_MAX], ap[YD_PATH_MAX], fp[YD_PATH_MAX];
        yd_node_t *arr = yd_map_get(list->vals[i], "arrival");
        yd_path(fp, yd_path(ap, yd_path_idx(rp, lp, i), "arrival"), "after");
        const yd_node_t *an = yd_map_get(arr, "after");
        int j = find_req(s, t->ref);
        if (j < 0)
            return yd_fail(e, an, fp, "no request with id \"%s\"", t->ref);
        if (j == i)
            return yd_fail(e, an, fp, "a request cannot wait for itself");
        t->ref_idx = j;
        long emits = scn_request_output(s, j);
        if (t->kind == TRIG_AFTER_DECODED && t->decoded > emits) {
            if (emits < s->requests[j].output_tokens)
                return yd_fail(e, yd_map_get(arr, "decoded"), yd_path(fp, ap, "decoded"),
                               "request %s only emits %ld tokens (its %ld-token prompt leaves that "
                               "much of engine.max_model_len %ld), got %ld", t->ref, emits,
                               s->requests[j].prompt_tokens, s->engine.max_model_len, t->decoded);
            return yd_fail(e, yd_map_get(arr, "decoded"), yd_path(fp, ap, "decoded"),
                           "request %s only emits %ld tokens, got %ld", t->ref,
                           s->requests[j].output_tokens, t->decoded);
        }
    }
    /* cycles: follow each chain of triggers once (0 unseen, 1 on the current walk, 2
     * done); the message names the cycle member that comes first in the file */
    char *mark = calloc((size_t)s->n_requests, 1);
    if (!mark)
        return yd_fail(e, list, lp, "out of memory");
    int first = -1;
    for (int i = 0; i < s->n_requests; i++) {
        int j = i;
        while (!mark[j] && s->requests[j].arrival.kind != TRIG_TIME) {
            mark[j] = 1;
            j = s->requests[j].arrival.ref_idx;
        }
        if (mark[j] == 1) {               /* back on this walk: j is on a cycle */
            int k = j;
            do {
                if (first < 0 || k < first)
                    first = k;
                k = s->requests[k].arrival.ref_idx;
            } while (k != j);
        }
        for (int k = i; mark[k] == 1; k = s->requests[k].arrival.ref_idx)
            mark[k] = 2;
    }
    free(mark);
    if (first >= 0) {
        char rp[YD_PATH_MAX], ap[YD_PATH_MAX], fp[YD_PATH_MAX], chain[256];
        size_t o = 0;
        int k = first;
        chain[0] = '\0';
        do {
            o += (size_t)snprintf(chain + o, o < sizeof chain ? sizeof chain - o : 0, "%s -> ",
                                  s->requests[k].id);
            k = s->requests[k].arrival.ref_idx;
        } while (k != first && o < sizeof chain);
        if (o < sizeof chain)
            snprintf(chain + o, sizeof chain - o, "%s", s->requests[first].id);
        yd_path(fp, yd_path(ap, yd_path_idx(rp, lp, first), "arrival"), "after");
        return yd_fail(e, yd_map_get(yd_map_get(list->vals[first], "arrival"), "after"), fp,
                       "arrival triggers form a cycle: %s", chain);
    }
    return 0;
}

static const char *const dist_names[] = {"fixed", "uniform", "lognormal", "exponential", NULL};

/* frac: a fraction in [0,1] (fixed or uniform only), else a token count. */
static int parse_dist(yd_err_t *e, const yd_node_t *n, const char *path, int frac, scn_dist_t *d)
{
    static const char *const k_fixed[] = {"dist", "value", "min", "max", NULL};
    static const char *const k_unif[] = {"dist", "low", "high", "min", "max", NULL};
    static const char *const k_logn[] = {"dist", "mu", "sigma", "min", "max", NULL};
    static const char *const k_exp[] = {"dist", "mean", "min", "max", NULL};
    static const char *const *const keys[] = {k_fixed, k_unif, k_logn, k_exp};
    static const char *const why[] = {"by dist fixed", "by dist uniform", "by dist lognormal",
                                      "by dist exponential"};
    double lo = 0, hi = frac ? 1.0 : INFINITY;
    int fl = frac ? 0 : YD_LO_OPEN;
    memset(d, 0, sizeof *d);
    if (n->kind == YD_SCALAR) {
        d->kind = DIST_FIXED;
        return yd_as_double(e, n, path, lo, hi, fl, &d->a);
    }
    int k;
    if (yd_expect(e, n, path, YD_MAP) ||
        yd_get_enum(e, n, path, "dist", YD_REQ, dist_names, &k) < 0 ||
        keys_only(e, n, path, keys[k], why[k]))
        return -1;
    d->kind = (dist_kind_t)k;
    char kp[YD_PATH_MAX];
    if (frac && k >= DIST_LOGNORMAL)
        return yd_fail(e, yd_map_get(n, "dist"), yd_path(kp, path, "dist"),
                       "a fraction takes dist fixed or uniform, got \"%s\"", dist_names[k]);
    switch (d->kind) {
    case DIST_FIXED:
        if (yd_get_double(e, n, path, "value", YD_REQ, lo, hi, fl, &d->a) < 0)
            return -1;
        break;
    case DIST_UNIFORM:
        if (yd_get_double(e, n, path, "low", YD_REQ, lo, hi, fl, &d->a) < 0 ||
            yd_get_double(e, n, path, "high", YD_REQ, lo, hi, fl, &d->b) < 0)
            return -1;
        if (d->b < d->a)
            return yd_fail(e, yd_map_get(n, "high"), yd_path(kp, path, "high"),
                           "high (%g) is below low (%g)", d->b, d->a);
        break;
    case DIST_LOGNORMAL:
        if (yd_get_double(e, n, path, "mu", YD_REQ, -700.0, 700.0, 0, &d->a) < 0 ||
            yd_get_double(e, n, path, "sigma", YD_REQ, 0.0, 100.0, 0, &d->b) < 0)
            return -1;
        break;
    case DIST_EXPONENTIAL:
        if (yd_get_double(e, n, path, "mean", YD_REQ, POS_NUM, &d->a) < 0)
            return -1;
        break;
    }
    if (yd_get_long(e, n, path, "min", YD_OPT, 0, LONG_MAX, &d->min) < 0 ||
        yd_get_long(e, n, path, "max", YD_OPT, 0, LONG_MAX, &d->max) < 0)
        return -1;
    if (d->max > 0 && d->max < d->min)
        return yd_fail(e, yd_map_get(n, "max"), yd_path(kp, path, "max"),
                       "max (%ld) is below min (%ld)", d->max, d->min);
    return 0;
}

static int parse_poisson(yd_err_t *e, const yd_node_t *m, const scenario_t *s, scn_poisson_t *p)
{
    static const char *const keys[] = {"rate_per_s", "count", "start_s", "prompt", "output",
                                       "cached_frac", "prefix", "conversation", NULL};
    static const char *const group_keys[] = {"groups", "tokens", "share", NULL};
    static const char *const conv_keys[] = {"turns", "think_s", NULL};
    const char *pp = "workload.poisson";
    char kp[YD_PATH_MAX];
    yd_node_t *pr, *out, *cf = NULL;
    if (yd_strict_map(e, m, pp, keys) ||
        yd_get_double(e, m, pp, "rate_per_s", YD_REQ, POS_NUM, &p->rate_per_s) < 0 ||
        yd_get_long(e, m, pp, "count", YD_REQ, 1, SCN_MAX_POISSON, &p->count) < 0 ||
        yd_get_double(e, m, pp, "start_s", YD_OPT, NONNEG_NUM, &p->start_s) < 0 ||
        yd_get_node(e, m, pp, "prompt", YD_REQ, YD_ANY, &pr) < 0 ||
        yd_get_node(e, m, pp, "output", YD_REQ, YD_ANY, &out) < 0 ||
        yd_get_node(e, m, pp, "cached_frac", YD_OPT, YD_ANY, &cf) < 0 ||
        parse_dist(e, pr, yd_path(kp, pp, "prompt"), 0, &p->prompt) ||
        parse_dist(e, out, yd_path(kp, pp, "output"), 0, &p->output) ||
        (cf && parse_dist(e, cf, yd_path(kp, pp, "cached_frac"), 1, &p->cached_frac)))
        return -1;
    yd_node_t *pg = yd_map_get(m, "prefix");
    if (pg) {
        yd_path(kp, pp, "prefix");
        p->prefix_share = 1.0;
        if (!s->engine.prefix_pool)
            return yd_fail(e, pg, kp, "needs engine.prefix_cache_model: pool");
        if (yd_strict_map(e, pg, kp, group_keys) ||
            yd_get_long(e, pg, kp, "groups", YD_REQ, 1, 1000000, &p->prefix_groups) < 0 ||
            yd_get_long(e, pg, kp, "tokens", YD_REQ, POSL, &p->prefix_tokens) < 0 ||
            yd_get_double(e, pg, kp, "share", YD_OPT, 0.0, 1.0, 0, &p->prefix_share) < 0)
            return -1;
    }
    yd_node_t *cv = yd_map_get(m, "conversation");
    if (cv) {
        yd_path(kp, pp, "conversation");
        if (!s->engine.prefix_pool)
            return yd_fail(e, cv, kp, "needs engine.prefix_cache_model: pool");
        if (yd_strict_map(e, cv, kp, conv_keys) ||
            yd_get_long(e, cv, kp, "turns", YD_REQ, 1, 10000, &p->conv_turns) < 0 ||
            yd_get_double(e, cv, kp, "think_s", YD_OPT, NONNEG_NUM, &p->conv_think_s) < 0)
            return -1;
    }
    if (cf && s->engine.prefix_pool && (p->cached_frac.a > 0 || (p->cached_frac.kind == DIST_UNIFORM && p->cached_frac.b > 0)))
        return yd_fail(e, cf, yd_path(kp, pp, "cached_frac"),
                       "with engine.prefix_cache_model: pool hits come from the cache (use prefix)");
    p->enabled = 1;
    return 0;
}

static int parse_workload(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    static const char *const keys[] = {"requests", "poisson", "trace", NULL};
    const char *wp = "workload";
    yd_node_t *w, *reqs = NULL, *poi = NULL, *tr = NULL;
    char tp[YD_PATH_MAX], rel[SCN_PATH_MAX];
    if (yd_get_node(e, root, "", "workload", YD_REQ, YD_MAP, &w) < 0 ||
        yd_strict_map(e, w, wp, keys) ||
        yd_get_node(e, w, wp, "requests", YD_OPT, YD_ANY, &reqs) < 0 ||
        yd_get_node(e, w, wp, "poisson", YD_OPT, YD_ANY, &poi) < 0 ||
        yd_get_node(e, w, wp, "trace", YD_OPT, YD_ANY, &tr) < 0)
        return -1;
    if (reqs && !yd_is_null(reqs) && parse_requests(e, reqs, s))
        return -1;
    if (poi && !yd_is_null(poi) && parse_poisson(e, poi, s, &s->poisson))
        return -1;
    if (poi) {
        s->poisson_line = poi->line;
        s->poisson_col = poi->col;
    }
    if (tr && !yd_is_null(tr)) {
        yd_path(tp, wp, "trace");
        if (yd_as_str(e, tr, tp, rel, sizeof rel) ||
            resolve(e, tr, tp, s->path, rel, s->trace_path))
            return -1;
    }
    if (!s->n_requests && !s->poisson.enabled && !s->trace_path[0])
        return yd_fail(e, w, wp, "no requests: give at least one of requests, poisson, trace");
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* measure, reference, stop                                                            */

/* "ID.event" (or start/end where allowed).  ok_word: "start", "end" or NULL. */
static int parse_mark(yd_err_t *e, const scenario_t *s, const yd_node_t *n, const char *path,
                      const char *ok_word, scn_mark_t *mk)
{
    char buf[SCN_ID_MAX + 24];
    memset(mk, 0, sizeof *mk);
    if (yd_as_str(e, n, path, buf, sizeof buf))
        return -1;
    if (ok_word && !strcmp(buf, ok_word))
        return 0;
    char *dot = strrchr(buf, '.');
    int ev = -1;
    if (dot) {
        *dot = '\0';
        for (int i = 0; event_names[i]; i++)
            if (!strcmp(dot + 1, event_names[i]))
                ev = i;
    }
    if (!dot || ev < 0 || !valid_id(buf) || strlen(buf) >= SCN_ID_MAX) {
        if (dot)
            *dot = '.';
        return yd_fail(e, n, path,
                       "expected %s%sID.EVENT (EVENT: arrival, admitted, first_token, finished), "
                       "got \"%s\"", ok_word ? ok_word : "", ok_word ? " or " : "", buf);
    }
    if (find_req(s, buf) < 0)
        return yd_fail(e, n, path, "no request with id \"%s\"", buf);
    mk->is_set = 1;
    snprintf(mk->ref, sizeof mk->ref, "%s", buf);
    mk->event = (req_event_t)ev;
    return 0;
}

static int parse_window(yd_err_t *e, const scenario_t *s, const yd_node_t *m, const char *wp,
                        scn_window_t *w)
{
    static const char *const k_req_range[] = {"kind", "request", "from", "to", NULL};
    static const char *const k_range[] = {"kind", "from", "to", NULL};
    static const char *const k_req[] = {"kind", "request", "stat", NULL};
    static const char *const k_steps[] = {"kind", "type", "from", "to", NULL};
    static const char *const k_none[] = {"kind", NULL};
    static const char *const k_req_only[] = {"kind", "request", NULL};
    static const char *const *const keys[WIN__N] = {
        [WIN_RATE] = k_req_range, [WIN_DURATION] = k_range, [WIN_TTFT] = k_req,
        [WIN_TPOT] = k_req, [WIN_ITL] = k_req, [WIN_STEPS] = k_steps,
        [WIN_TOKENS] = k_req_range, [WIN_THROUGHPUT] = k_none, [WIN_E2E] = k_req,
        [WIN_QUEUEING] = k_req, [WIN_PREFIX_HIT] = k_req_only, [WIN_EVICTIONS] = k_none};
    char kp[YD_PATH_MAX], why[48];
    int kind, t;
    yd_node_t *rq = NULL, *from = NULL, *to = NULL;
    if (yd_expect(e, m, wp, YD_MAP) ||
        yd_get_enum(e, m, wp, "kind", YD_REQ, win_names, &kind) < 0)
        return -1;
    snprintf(why, sizeof why, "by kind %s", win_names[kind]);
    if (keys_only(e, m, wp, keys[kind], why))
        return -1;
    w->kind = (win_kind_t)kind;
    int need_req = kind == WIN_RATE || kind == WIN_TOKENS;
    int star_ok = scn_win_is_latency((win_kind_t)kind) || kind == WIN_PREFIX_HIT;
    if (yd_get_node(e, m, wp, "request", need_req ? YD_REQ : YD_OPT, YD_SCALAR, &rq) < 0)
        return -1;
    if (star_ok)
        snprintf(w->request, sizeof w->request, "*");
    if (rq) {
        yd_path(kp, wp, "request");
        if (star_ok && rq->kind == YD_SCALAR && !strcmp(rq->text, "*"))
            ;
        else if (parse_id(e, rq, kp, w->request))
            return -1;
        else if (find_req(s, w->request) < 0)
            return yd_fail(e, rq, kp, "no request with id \"%s\"", w->request);
    }
    if (kind == WIN_STEPS) {
        if (yd_get_enum(e, m, wp, "type", YD_REQ, step_names, &t) < 0)
            return -1;
        w->step_type = (step_type_t)t;
    }
    if (scn_win_is_latency((win_kind_t)kind)) {
        t = STAT_MEAN;
        if (yd_get_enum(e, m, wp, "stat", YD_OPT, stat_names, &t) < 0)
            return -1;
        w->stat = (win_stat_t)t;
    }
    if (yd_get_node(e, m, wp, "from", YD_OPT, YD_ANY, &from) < 0 ||
        yd_get_node(e, m, wp, "to", YD_OPT, YD_ANY, &to) < 0 ||
        (from && parse_mark(e, s, from, yd_path(kp, wp, "from"), "start", &w->from)) ||
        (to && parse_mark(e, s, to, yd_path(kp, wp, "to"), "end", &w->to)))
        return -1;
    return 0;
}

static int parse_measure(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    yd_node_t *m = yd_map_get(root, "measure");
    if (!m || yd_is_null(m))
        return 0;
    if (yd_expect(e, m, "measure", YD_MAP))
        return -1;
    if (!m->n)
        return 0;
    if (m->n > SCN_MAX_WINDOWS) {
        char wp[YD_PATH_MAX];
        return yd_fail(e, m->keys[SCN_MAX_WINDOWS], yd_path(wp, "measure", m->keys[SCN_MAX_WINDOWS]->text),
                       "at most %d measure windows, this is window %d of %d", SCN_MAX_WINDOWS,
                       SCN_MAX_WINDOWS + 1, m->n);
    }
    s->windows = calloc((size_t)m->n, sizeof *s->windows);
    if (!s->windows)
        return yd_fail(e, m, "measure", "out of memory");
    for (int i = 0; i < m->n; i++) {
        scn_window_t *w = &s->windows[i];
        char wp[YD_PATH_MAX];
        const yd_node_t *k = m->keys[i];
        yd_path(wp, "measure", k->text);
        if (strlen(k->text) >= SCN_ID_MAX || !valid_id(k->text) || strlen(k->text) != k->len)
            return yd_fail(e, k, wp, "a window name is letters, digits, _ and - (at most %d)",
                           SCN_ID_MAX - 1);
        snprintf(w->name, sizeof w->name, "%s", k->text);
        s->n_windows = i + 1;
        if (parse_window(e, s, m->vals[i], wp, w))
            return -1;
    }
    return 0;
}

static int parse_reference(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    yd_node_t *m = yd_map_get(root, "reference");
    if (!m || yd_is_null(m))
        return 0;
    if (yd_expect(e, m, "reference", YD_MAP))
        return -1;
    for (int i = 0; i < m->n; i++) {
        const yd_node_t *k = m->keys[i];
        char kp[YD_PATH_MAX];
        yd_path(kp, "reference", k->text);
        if (!strcmp(k->text, "source")) {
            if (yd_as_str(e, m->vals[i], kp, s->reference_source, sizeof s->reference_source))
                return -1;
            continue;
        }
        scn_window_t *w = NULL;
        for (int j = 0; j < s->n_windows && !w; j++)
            if (!strcmp(s->windows[j].name, k->text) && strlen(k->text) == k->len)
                w = &s->windows[j];
        if (!w) {
            char list[400];
            size_t o = 0;
            list[0] = '\0';
            for (int j = 0; j < s->n_windows && o < sizeof list - 1; j++)
                o += (size_t)snprintf(list + o, sizeof list - o, ", %s", s->windows[j].name);
            return yd_fail(e, k, kp, "no measure window named \"%s\" (allowed: source%s)",
                           k->text, list);
        }
        if (yd_as_double(e, m->vals[i], kp, NONNEG_NUM, &w->reference))
            return -1;
        w->has_reference = 1;
    }
    return 0;
}

/* The earliest a request arrives: the first Poisson request (the seed's draw, as the run
 * makes it), the earliest explicit arrival at a time (the others follow a request); *src -1
 * the Poisson, i requests[i], -2 none known (a trace's arrivals are read at set-up: 0 then). */
static double first_arrival(const scenario_t *s, int *src)
{
    double t = INFINITY;
    *src = -2;
    if (s->trace_path[0]) return 0;
    if (s->poisson.enabled) t = workload_first_poisson(s), *src = -1;
    for (int i = 0; i < s->n_requests; i++)
        if (s->requests[i].arrival.kind == TRIG_TIME && s->requests[i].arrival.time_s < t)
            t = s->requests[i].arrival.time_s, *src = i;
    return *src == -2 ? 0 : t;
}

/* A workload whose first request arrives at or after stop.max_time_s (its default too)
 * would run nothing and print a table of nothing: refused at the first arrival's key. */
static int arrival_check(yd_err_t *e, const yd_node_t *root, const scenario_t *s)
{
    int src;
    double t = first_arrival(s, &src);
    if (src == -2 || t < s->stop.max_time_s) return 0;
    const char *dflt = yd_map_get(root, "stop") ? "" : ", its default";
    const yd_node_t *w = yd_map_get(root, "workload");
    if (src == -1 && s->poisson.start_s >= s->stop.max_time_s) {
        const yd_node_t *p = w ? yd_map_get(w, "poisson") : NULL, *at = p ? yd_map_get(p, "start_s") : NULL;
        return yd_fail(e, at ? at : p ? p : root, "workload.poisson.start_s",
                       "%g s: no request would arrive before stop.max_time_s (%g s%s)", s->poisson.start_s,
                       s->stop.max_time_s, dflt);
    }
    if (src == -1) {             /* the first inter-arrival draw passes the stop: the run would be empty */
        const yd_node_t *p = w ? yd_map_get(w, "poisson") : NULL, *at = p ? yd_map_get(p, "rate_per_s") : NULL;
        return yd_fail(e, at ? at : p ? p : root, "workload.poisson.rate_per_s",
                       "%g/s: the first request arrives at %.6g s (seed %llu): none would arrive before "
                       "stop.max_time_s (%g s%s)", s->poisson.rate_per_s, t, (unsigned long long)s->seed,
                       s->stop.max_time_s, dflt);
    }
    const yd_node_t *rq = w ? yd_map_get(w, "requests") : NULL;
    const yd_node_t *it = rq && rq->kind == YD_SEQ && src < rq->n ? rq->vals[src] : NULL;
    const yd_node_t *at = it && it->kind == YD_MAP ? yd_map_get(it, "arrival") : NULL;
    char kp[YD_PATH_MAX];
    snprintf(kp, sizeof kp, "workload.requests[%d].arrival", src);
    return yd_fail(e, at ? at : it ? it : root, kp,
                   "%g s, the first arrival: no request would arrive before stop.max_time_s (%g s%s)", t,
                   s->stop.max_time_s, dflt);
}

/* How likely a generated arrival past the clock's limit (SIM_CLOCK_MAX_S) may be. */
#define SCN_CLOCK_RISK 1e-9

/* Where stop.max_time_s lets a run go past the clock's limit, the Poisson arrivals and the
 * conversations' think times must end before it: the count arrivals span a Gamma(count,
 * 1/rate) time from start_s, a conversation's later turns arrive a Gamma(turns - 1, think_s)
 * time after its first (service aside).  Either past the limit with a probability above
 * SCN_CLOCK_RISK would end the run with "the clock cannot hold a step": refused at its key. */
int scn_clock_risk(const scenario_t *s, double limit, double *prob)
{
    const scn_poisson_t *p = &s->poisson;
    if (!p->enabled || !(s->stop.max_time_s > limit) || !(p->start_s < limit)) return 0;
    double span = limit - p->start_s;
    double q = gsl_cdf_gamma_Q(span, (double)p->count, 1.0 / p->rate_per_s);
    if (q > SCN_CLOCK_RISK) {
        *prob = q;
        return 1;
    }
    if (p->conv_turns < 2 || !(p->conv_think_s > 0)) return 0;
    /* the last first turn, at most (probability SCN_CLOCK_RISK beside): Q's inverse by bisection
     * (gsl_cdf_gamma_Qinv undershoots the mean at a count of 1e6) */
    double th = 1.0 / p->rate_per_s, lo = 0, hi = (2.0 * (double)p->count + 50) * th;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (gsl_cdf_gamma_Q(mid, (double)p->count, th) > SCN_CLOCK_RISK) lo = mid;
        else hi = mid;
    }
    double last = p->start_s + hi;
    double qt = last < limit
                ? (double)p->count * gsl_cdf_gamma_Q(limit - last, (double)(p->conv_turns - 1), p->conv_think_s)
                : 1;
    if (qt > SCN_CLOCK_RISK) {
        *prob = fmin(qt, 1);
        return 2;
    }
    return 0;
}

static int clock_check(yd_err_t *e, const yd_node_t *root, const scenario_t *s)
{
    const scn_poisson_t *p = &s->poisson;
    double q = 0;
    int which = scn_clock_risk(s, SIM_CLOCK_MAX_S, &q);
    const yd_node_t *w = yd_map_get(root, "workload"), *pn = w ? yd_map_get(w, "poisson") : NULL;
    if (which == 1) {
        const yd_node_t *at = pn ? yd_map_get(pn, "rate_per_s") : NULL;
        return yd_fail(e, at ? at : pn ? pn : root, "workload.poisson.rate_per_s",
                       "%g/s: the %ld arrivals from %g s pass %g s, the simulated clock's limit, with probability %.2g,"
                       " and stop.max_time_s (%g s) lets the run reach them: keep stop.max_time_s within %g s, or"
                       " arrivals within the limit (a higher rate, a smaller count)", p->rate_per_s, p->count,
                       p->start_s, SIM_CLOCK_MAX_S, q, s->stop.max_time_s, SIM_CLOCK_MAX_S);
    }
    if (which == 2) {
        const yd_node_t *cv = pn ? yd_map_get(pn, "conversation") : NULL, *at = cv ? yd_map_get(cv, "think_s") : NULL;
        return yd_fail(e, at ? at : cv ? cv : pn ? pn : root, "workload.poisson.conversation.think_s",
                       "%g s: a conversation's %ld later turns can arrive past %g s, the simulated clock's limit"
                       " (probability up to %.2g), and stop.max_time_s (%g s) lets the run reach them: keep"
                       " stop.max_time_s within %g s, or think_s shorter", p->conv_think_s, p->conv_turns - 1,
                       SIM_CLOCK_MAX_S, q, s->stop.max_time_s, SIM_CLOCK_MAX_S);
    }
    return 0;
}

static int parse_stop(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    static const char *const keys[] = {"when", "max_time_s", "max_steps", NULL};
    scn_stop_t *st = &s->stop;
    st->kind = 0;
    st->max_time_s = 86400;
    st->max_steps = 0;
    yd_node_t *m = yd_map_get(root, "stop"), *when = NULL;
    if (!m || yd_is_null(m))
        return arrival_check(e, root, s) || clock_check(e, root, s) ? -1 : 0;
    if (yd_strict_map(e, m, "stop", keys) ||
        yd_get_double(e, m, "stop", "max_time_s", YD_OPT, POS_NUM, &st->max_time_s) < 0 ||
        yd_get_long(e, m, "stop", "max_steps", YD_OPT, 0, LONG_MAX, &st->max_steps) < 0 ||
        yd_get_node(e, m, "stop", "when", YD_OPT, YD_ANY, &when) < 0)
        return -1;
    if (when) {
        scn_mark_t mk;
        if (parse_mark(e, s, when, "stop.when", "all_finished", &mk))
            return -1;
        if (mk.is_set) {
            st->kind = 1;
            snprintf(st->ref, sizeof st->ref, "%s", mk.ref);
            st->event = mk.event;
        }
    }
    return arrival_check(e, root, s) || clock_check(e, root, s) ? -1 : 0;
}

/* ---------------------------------------------------------------------------------- */

static const char *const top_keys[] = {"name", "description", "seed", "model", "profile",
    "hardware", "engine", "env", "workload", "measure", "stop", "reference", "mtp_acceptance",
    "cluster", NULL};

/* ---------------------------------------------------------------------------------- */
/* cluster                                                                             */

static const char *const router_names[] = {"round_robin", "random", "least_outstanding", "least_kv",
                                           "prefix_affinity", "session", NULL};
static const char *const cluster_keys[] = {"router", "router_latency_s", "balance_abs_threshold",
                                           "balance_rel_threshold", "pools", "kv_transfer", NULL};
static const char *const pool_keys[] = {"count", "role", "model", "engine", NULL};
static const char *const role_names[] = {"both", "prefill", "decode", NULL};

/* One pool: a copy of the base scenario with the pool's model and engine settings over it
 * (its engine: the scenario's engine with the pool's keys on top). */
static int parse_pool(yd_err_t *e, const yd_node_t *pm, const char *pp, const scenario_t *base, scn_pool_t *pool)
{
    char kp[YD_PATH_MAX];
    if (yd_strict_map(e, pm, pp, pool_keys) ||
        yd_get_int(e, pm, pp, "count", YD_REQ, 1, SCN_MAX_REPLICAS, &pool->count) < 0)
        return -1;
    int role = ROLE_BOTH;
    if (yd_get_enum(e, pm, pp, "role", YD_OPT, role_names, &role) < 0) return -1;
    pool->role = (pool_role_t)role;
    scenario_t *ps = malloc(sizeof *ps);
    if (!ps) return yd_fail(e, pm, pp, "out of memory");
    *ps = *base;
    ps->shared = 1;
    memset(&ps->cluster, 0, sizeof ps->cluster);
    pool->s = ps;
    pool->line = pm->line;
    pool->col = pm->col;
    yd_node_t *mn = yd_map_get(pm, "model");
    if (mn && !yd_is_null(mn)) {
        yd_path(kp, pp, "model");
        if (mn->kind == YD_MAP) {
            memset(&ps->model, 0, sizeof ps->model);
            if (parse_model(e, mn, kp, &ps->model)) return -1;
            ps->model_path[0] = 0;
        } else {
            char rel[SCN_PATH_MAX];
            if (yd_as_str(e, mn, kp, rel, sizeof rel) || resolve(e, mn, kp, base->path, rel, ps->model_path) ||
                readable(e, mn, kp, ps->model_path) || load_model_file(e, ps->model_path, &ps->model))
                return -1;
        }
    }
    yd_node_t *en = yd_map_get(pm, "engine");
    if (en && yd_is_null(en)) en = NULL;
    if (en) {
        ps->engine_line = en->line;
        ps->engine_col = en->col;
    }
    return engine_map(e, en, yd_path(kp, pp, "engine"), en ? en : pm, ps);
}

/* The KV of one token on one rank at TP 1 (every full-attention layer) and a request's
 * recurrent state: what a transfer between a prefill pool and a decode pool moves. */
static void kv_shape(const scenario_t *ps, long *tok, long *state)
{
    int kvb = kv_is_fp8(ps->engine.kv_cache_dtype) ? 1 : 2;
    *tok = model_attn_bytes_per_token(&ps->model, 1, kvb) * ps->model.n_full_attn;
    *state = (long)ps->model.n_gdn * model_gdn_page_bytes(&ps->model, 1, 0);
}

/* Disaggregation: the pools' roles and cluster.kv_transfer (0, or -1 with the message). */
static int parse_disagg(yd_err_t *e, const yd_node_t *m, const yd_node_t *pools, scenario_t *s)
{
    static const char *const kv_keys[] = {"link", "bandwidth_GBps", "latency_us", "layerwise", NULL};
    scn_cluster_t *c = &s->cluster;
    char kp[YD_PATH_MAX], pp[YD_PATH_MAX], name[64];
    int npre = 0, ndec = 0, nboth = 0, first_pre = -1, first_dec = -1;
    for (int i = 0; i < c->n_pools; i++) {
        pool_role_t r = c->pools[i].role;
        if (r == ROLE_PREFILL && npre++ == 0) first_pre = i;
        if (r == ROLE_DECODE && ndec++ == 0) first_dec = i;
        nboth += r == ROLE_BOTH;
    }
    yd_node_t *kv = yd_map_get(m, "kv_transfer");
    if (kv && yd_is_null(kv)) kv = NULL;
    if (!npre && !ndec) {
        if (kv)
            return yd_fail(e, kv, "cluster.kv_transfer",
                           "a KV transfer needs a pool with role prefill and one with role decode");
        return 0;
    }
#define ROLE_NODE(i) yd_map_get(pools->vals[i], "role"), yd_path(kp, yd_path(pp, "cluster.pools", c->pools[i].name), "role")
    if (!ndec) return yd_fail(e, ROLE_NODE(first_pre), "a prefill pool needs a pool with role decode");
    if (!npre) return yd_fail(e, ROLE_NODE(first_dec), "a decode pool needs a pool with role prefill");
    if (nboth)
        for (int i = 0; i < c->n_pools; i++)
            if (c->pools[i].role == ROLE_BOTH)
                return yd_fail(e, yd_map_get(pools->vals[i], "count"),
                               yd_path(kp, "cluster.pools", c->pools[i].name),
                               "a pool of role both (the default) beside prefill and decode pools is not modelled:"
                               " give every pool role prefill or decode");
    if (c->router == ROUTER_SESSION)
        return yd_fail(e, yd_map_get(m, "router"), "cluster.router",
                       "session is not modelled with prefill and decode pools");
    /* the decode pools take the prefill pools' KV as it is: same per-token bytes and state */
    long tok0, st0;
    kv_shape(c->pools[first_pre].s, &tok0, &st0);
    for (int i = 0; i < c->n_pools; i++) {
        long tok, st;
        kv_shape(c->pools[i].s, &tok, &st);
        if (tok == tok0 && st == st0) continue;
        const yd_node_t *at = yd_map_get(pools->vals[i], "model");
        if (!at) at = yd_map_get(pools->vals[i], "engine");
        if (!at) at = pools->vals[i];
        return yd_fail(e, at, yd_path(kp, "cluster.pools", c->pools[i].name),
                       "its KV (%ld bytes a token and %ld bytes of recurrent state, from its model and"
                       " kv_cache_dtype) differs from prefill pool %s's (%ld and %ld): a decode pool takes the"
                       " prefill pools' KV as it is",
                       tok, st, c->pools[first_pre].name, tok0, st0);
    }
#undef ROLE_NODE
    if (!kv)
        return yd_fail(e, m, "cluster.kv_transfer",
                       "prefill and decode pools need the link their KV crosses: kv_transfer: {link: PRESET} or"
                       " {bandwidth_GBps: X, latency_us: Y}");
    const char *kvp = "cluster.kv_transfer";
    double gbps = 0, lat_us = 0;
    int hl, hb, hlat;
    if (yd_strict_map(e, kv, kvp, kv_keys) || (hl = yd_get_str(e, kv, kvp, "link", YD_OPT, name, sizeof name)) < 0)
        return -1;
    if (hl && !(c->kv_link = hw_link_find(name)))
        return yd_fail(e, yd_map_get(kv, "link"), "cluster.kv_transfer.link", "unknown link \"%s\" (known: %s)", name,
                       hw_link_names());
    /* bandwidth from 0.1 GB/s (below 1 Gb/s Ethernet's 0.125, slower than any link a KV crosses:
     * a dust-slow link only ends the run at stop.max_time_s) to 10^6; latency up to 10 s */
    if ((hb = yd_get_double(e, kv, kvp, "bandwidth_GBps", YD_OPT, 0.1, 1e6, 0, &gbps)) < 0 ||
        (hlat = yd_get_double(e, kv, kvp, "latency_us", YD_OPT, 0.0, 1e7, 0, &lat_us)) < 0 ||
        yd_get_bool(e, kv, kvp, "layerwise", YD_OPT, &c->kv_layerwise) < 0)
        return -1;
    if (!hl && !hb)
        return yd_fail(e, kv, kvp, "give the link: link: PRESET (%s) or bandwidth_GBps", hw_link_names());
    c->kv_bandwidth = hb ? gbps * 1e9 : c->kv_link->bytes_per_s;
    c->kv_latency_s = hlat ? lat_us * 1e-6 : hl ? c->kv_link->latency_s : 0.0;
    int src;
    if (first_arrival(s, &src) + c->router_latency_s + c->kv_latency_s >= s->stop.max_time_s) {
        /* no first token before the stop */
        const yd_node_t *at = yd_map_get(kv, hlat ? "latency_us" : "link");
        return yd_fail(e, at ? at : kv, hlat ? "cluster.kv_transfer.latency_us" : "cluster.kv_transfer.link",
                       "%g s%s: no request's KV would reach a decode replica before stop.max_time_s (%g s)",
                       c->kv_latency_s, c->router_latency_s > 0 ? " after cluster.router_latency_s" : "",
                       s->stop.max_time_s);
    }
    c->disaggregated = 1;
    return 0;
}

static int parse_cluster(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    scn_cluster_t *c = &s->cluster;
    const char *cp = "cluster";
    char kp[YD_PATH_MAX], pp[YD_PATH_MAX];
    yd_node_t *m = yd_map_get(root, cp), *pools = NULL;
    c->balance_abs = 32;
    c->balance_rel = 1.0001;
    if (!m || yd_is_null(m)) return 0;
    int rt = 0;
    if (yd_strict_map(e, m, cp, cluster_keys) ||
        yd_get_enum(e, m, cp, "router", YD_OPT, router_names, &rt) < 0 ||
        yd_get_double(e, m, cp, "router_latency_s", YD_OPT, 0.0, 3600.0, 0, &c->router_latency_s) < 0 ||
        yd_get_long(e, m, cp, "balance_abs_threshold", YD_OPT, 0, SCN_MAX_SEQS, &c->balance_abs) < 0 ||
        yd_get_double(e, m, cp, "balance_rel_threshold", YD_OPT, 1.0, 1e6, 0, &c->balance_rel) < 0 ||
        yd_get_node(e, m, cp, "pools", YD_REQ, YD_MAP, &pools) < 0)
        return -1;
    int src;
    double t0 = first_arrival(s, &src);                      /* the first arrival, at the earliest */
    if (t0 + c->router_latency_s >= s->stop.max_time_s)   /* every request reaches a replica at or after it */
        return yd_fail(e, yd_map_get(m, "router_latency_s"), "cluster.router_latency_s",
                       "%g s%s: no request would reach a replica before stop.max_time_s (%g s): give a latency below it",
                       c->router_latency_s, t0 > 0 ? " after the first arrival" : "", s->stop.max_time_s);
    c->router = (router_kind_t)rt;
    /* the load thresholds are prefix_affinity's alone: under another router a set one would be ignored */
    static const char *const pa_only[] = {"balance_abs_threshold", "balance_rel_threshold", NULL};
    for (int i = 0; pa_only[i] && c->router != ROUTER_PREFIX_AFFINITY; i++)
        if (yd_map_get(m, pa_only[i]))
            return yd_fail(e, yd_map_get(m, pa_only[i]), yd_path(kp, cp, pa_only[i]),
                           "needs cluster.router: prefix_affinity (router %s has no load threshold)",
                           router_names[rt]);
    c->line = m->line;
    c->col = m->col;
    if (pools->n < 1 || pools->n > SCN_MAX_POOLS)
        return yd_fail(e, pools, "cluster.pools", "expected 1 to %d pools, got %d", SCN_MAX_POOLS, pools->n);
    long total = 0;
    for (int i = 0; i < pools->n; i++) {
        scn_pool_t *pl = &c->pools[i];
        const char *name = pools->keys[i]->text;
        yd_path(pp, "cluster.pools", name);
        if (!valid_id(name) || strlen(name) >= sizeof pl->name)
            return yd_fail(e, pools->keys[i], pp, "a pool's name is [A-Za-z0-9_-]+ (at most %d characters)",
                           (int)sizeof pl->name - 1);
        snprintf(pl->name, sizeof pl->name, "%s", name);
        c->n_pools = i + 1;
        if (parse_pool(e, pools->vals[i], pp, s, pl)) return -1;
        total += pl->count;
        if (total > SCN_MAX_REPLICAS)
            return yd_fail(e, yd_map_get(pools->vals[i], "count"), yd_path(kp, pp, "count"),
                           "the pools hold %ld replicas, more than %d", total, SCN_MAX_REPLICAS);
    }
    if (c->router == ROUTER_SESSION && !(s->poisson.enabled && s->poisson.conv_turns > 1))
        return yd_fail(e, yd_map_get(m, "router"), "cluster.router",
                       "session keeps a conversation's turns together: it needs workload.poisson.conversation"
                       " (turns > 1)");
    if (c->router == ROUTER_PREFIX_AFFINITY && !s->engine.prefix_pool)
        return yd_fail(e, yd_map_get(m, "router"), "cluster.router",
                       "prefix_affinity looks up the replicas' block pools: it needs engine.prefix_cache_model: pool");
    for (int i = 0; i < c->n_pools; i++)
        if (c->pools[i].s->engine.prefix_pool != s->engine.prefix_pool)
            return yd_fail(e, yd_map_get(pools->vals[i], "engine"), yd_path(kp, yd_path(pp, "cluster.pools", c->pools[i].name), "engine.prefix_cache_model"),
                           "every pool takes the scenario's prefix_cache_model (requests carry their content for it)");
    for (int i = 0; i < c->n_pools; i++)       /* the workload cuts requests to one length */
        if (c->pools[i].s->engine.max_model_len != s->engine.max_model_len) {
            const yd_node_t *en = yd_map_get(pools->vals[i], "engine"), *ml = yd_map_get(en, "max_model_len");
            return yd_fail(e, ml ? ml : en, yd_path(kp, yd_path(pp, "cluster.pools", c->pools[i].name), "engine.max_model_len"),
                           "every pool takes the scenario's engine.max_model_len (%ld; requests are cut to it, a"
                           " replica refusing what another takes is not modelled), got %ld", (long)s->engine.max_model_len,
                           (long)c->pools[i].s->engine.max_model_len);
        }
    if (parse_disagg(e, m, pools, s) < 0) return -1;
    c->enabled = 1;
    return 0;
}

#define SCN_MIN_TFLOPS 0.01       /* hardware.analytic.tflops at least (TFLOP/s) */
#define SCN_MIN_TBPS 0.001        /* hardware.analytic.tbps at least (TB/s) */
#define SCN_MIN_MEM_GIB 1.0       /* hardware.analytic.mem_gib, where given, at least (GiB) */

static int parse_hardware(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    static const char *const hw_keys[] = {"analytic", "gpu", "link", NULL};
    static const char *const an_keys[] = {"tflops", "tbps", "mem_gib", NULL};
    yd_node_t *hw = yd_map_get(root, "hardware"), *an = NULL, *pr = yd_map_get(root, "profile");
    char rel[SCN_PATH_MAX], name[64];
    if (pr && !yd_is_null(pr)) {
        if (yd_as_str(e, pr, "profile", rel, sizeof rel) ||
            resolve(e, pr, "profile", s->path, rel, s->profile_path))
            return -1;
    }
    if (hw && !yd_is_null(hw)) {
        const char *ap = "hardware.analytic";
        int ha, hg, hl;
        if (yd_strict_map(e, hw, "hardware", hw_keys) ||
            (ha = yd_get_node(e, hw, "hardware", "analytic", YD_OPT, YD_MAP, &an)) < 0)
            return -1;
        if (ha && (yd_strict_map(e, an, ap, an_keys) ||
                   yd_get_double(e, an, ap, "tflops", YD_REQ, POS_NUM, &s->analytic_tflops) < 0 ||
                   yd_get_double(e, an, ap, "tbps", YD_REQ, POS_NUM, &s->analytic_tbps) < 0 ||
                   yd_get_double(e, an, ap, "mem_gib", YD_OPT, POS_NUM, &s->analytic_mem_gib) < 0))
            return -1;
        /* a roofline's peaks: physically meaningful ones (a T4, the smallest datacenter GPU
         * priced here, has 65 TFLOP/s fp16 and 0.32 TB/s; 1e-300 would price a step at 1e290 s) */
        if (ha && s->analytic_tflops < SCN_MIN_TFLOPS)
            return yd_fail(e, yd_map_get(an, "tflops"), "hardware.analytic.tflops",
                           "%g TFLOP/s is below %g (10 GFLOP/s, thousands of times below any GPU's fp16 rate):"
                           " not a device's figure", s->analytic_tflops, SCN_MIN_TFLOPS);
        if (ha && s->analytic_tbps < SCN_MIN_TBPS)
            return yd_fail(e, yd_map_get(an, "tbps"), "hardware.analytic.tbps",
                           "%g TB/s is below %g (1 GB/s, hundreds of times below any GPU's memory bandwidth):"
                           " not a device's figure", s->analytic_tbps, SCN_MIN_TBPS);
        /* (absent: 0, the KV cache sized from 80 GiB with a warning) */
        if (ha && s->analytic_mem_gib > 0 && s->analytic_mem_gib < SCN_MIN_MEM_GIB)
            return yd_fail(e, yd_map_get(an, "mem_gib"), "hardware.analytic.mem_gib",
                           "%g GiB is below %g (sixteen times below any GPU's memory: a T4 has 16 GiB):"
                           " not a device's figure", s->analytic_mem_gib, SCN_MIN_MEM_GIB);
        if ((hg = yd_get_str(e, hw, "hardware", "gpu", YD_OPT, name, sizeof name)) < 0) return -1;
        if (hg && !(s->gpu = hw_gpu_find(name)))
            return yd_fail(e, yd_map_get(hw, "gpu"), "hardware.gpu", "unknown GPU \"%s\" (known: %s)", name,
                           hw_gpu_names());
        if ((hl = yd_get_str(e, hw, "hardware", "link", YD_OPT, name, sizeof name)) < 0) return -1;
        if (hl && !(s->link = hw_link_find(name)))
            return yd_fail(e, yd_map_get(hw, "link"), "hardware.link", "unknown link \"%s\" (known: %s)", name,
                           hw_link_names());
        if (ha && hg) return yd_fail(e, hw, "hardware", "give either hardware.gpu or hardware.analytic, not both");
        if (s->profile_path[0] && (ha || hg))
            return yd_fail(e, hw, "hardware",
                           "give either profile or hardware.%s, not both", ha ? "analytic" : "gpu");
        s->analytic = ha || hg;
        s->hw_mem_gib = hg ? s->gpu->mem_gib : s->analytic_mem_gib;
    }
    if (!s->profile_path[0] && !s->analytic)
        return yd_fail(e, root, "", "missing required key \"profile\" (or hardware.gpu, hardware.analytic)");
    return 0;
}

static int parse_top(yd_err_t *e, const yd_node_t *root, scenario_t *s)
{
    yd_node_t *mn;
    long seed = 1;
    if (yd_strict_map(e, root, "", top_keys) ||
        yd_get_str(e, root, "", "name", YD_OPT, s->name, sizeof s->name) < 0 ||
        yd_get_str(e, root, "", "description", YD_OPT, s->description, sizeof s->description) < 0 ||
        yd_get_long(e, root, "", "seed", YD_OPT, 0, LONG_MAX, &seed) < 0 ||
        yd_get_node(e, root, "", "model", YD_REQ, YD_ANY, &mn) < 0)
        return -1;
    s->seed = (uint64_t)seed;
    if (mn->kind == YD_MAP) {
        if (parse_model(e, mn, "model", &s->model))
            return -1;
    } else {
        char rel[SCN_PATH_MAX];
        if (mn->kind != YD_SCALAR || yd_is_null(mn))
            return yd_fail(e, mn, "model", "expected a model file path or a model mapping, got %s",
                           mn->kind == YD_SEQ ? "a list" : "null");
        if (yd_as_str(e, mn, "model", rel, sizeof rel) ||
            resolve(e, mn, "model", s->path, rel, s->model_path) || readable(e, mn, "model", s->model_path))
            return -1;
        if (load_model_file(e, s->model_path, &s->model))
            return -1;
    }
    return parse_hardware(e, root, s) || parse_engine(e, root, s) ||
                   parse_env(e, root, &s->env) || parse_accept(e, root, s) ||
                   parse_workload(e, root, s) || parse_measure(e, root, s) ||
                   parse_reference(e, root, s) || parse_stop(e, root, s) || parse_cluster(e, root, s)
               ? -1 : 0;
}

int scn_load(const char *path, const char *const *overrides, int n_overrides,
             scenario_t *out, char err[SCN_ERR_MAX])
{
    yd_err_t e;
    yd_err_init(&e, err, SCN_ERR_MAX);
    memset(out, 0, sizeof *out);
    if (strlen(path) >= sizeof out->path) {
        snprintf(err, SCN_ERR_MAX, "%.64s...: path too long (at most %d characters)", path,
                 SCN_PATH_MAX - 1);
        yd_one_line(err);                 /* one line, whatever the path holds */
        return -1;
    }
    snprintf(out->path, sizeof out->path, "%s", path);
    /* default name: the file stem */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    int blen = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(out->name, sizeof out->name, "%.*s", blen < 127 ? blen : 127, base);
    out->seed = 1;

    yd_doc_t *d = yd_load(path, &e);
    if (!d)
        return -1;
    for (int i = 0; i < n_overrides; i++)
        if (yd_apply_set(d, overrides[i], &e))
            goto fail;
    if (parse_top(&e, yd_root(d), out))
        goto fail;
    yd_free(d);
    return 0;
fail:
    yd_free(d);
    scn_free(out);
    return -1;
}

void scn_free(scenario_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->cluster.n_pools; i++) {
        free(s->cluster.pools[i].s);
        s->cluster.pools[i].s = NULL;
    }
    s->cluster.n_pools = 0;
    if (s->shared)
        return;
    free(s->requests);
    free(s->req_by_id);
    free(s->windows);
    s->requests = NULL;
    s->req_by_id = NULL;
    s->windows = NULL;
    s->n_requests = s->n_windows = 0;
}
