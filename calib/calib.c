/* calib.c: calib's host logic -- the grid, the measuring loop, the profile it
 * assembles and the command line.  No CUDA here: the timer interface (calib.h) is
 * the only way out to a GPU, so all of this runs in CI against a fake timer. */
#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gsl/gsl_errno.h>
#include "calib.h"
#include "sustain.h"
#include "cost.h"
#include "law.h"
#include "attn.h"
#include "attn_split.h"
#include "fit.h"
#include "scenario.h"

#ifndef PACESIM_REV
#define PACESIM_REV "unknown"
#endif

/* ---- the laws ------------------------------------------------------------- */

static calib_law_spec_t law_table[] = {
    { .law = LAW_PREFILL_BM32_FP16, .kernel = CK_PREFILL_FAST, .fp8 = 0, .what =
      "paged prefill, BM32/BN128 pipelined fast path, fp16 KV, one row per call" },
    { .law = LAW_PREFILL_GENERIC_FP16, .kernel = CK_PREFILL_GENERIC, .fp8 = 0, .what =
      "paged prefill, generic BM32/BN64, fp16 KV, one row per call" },
    { .law = LAW_PREFILL_LOWSMEM_FP16, .kernel = CK_PREFILL_LOWSMEM, .fp8 = 0, .what =
      "paged prefill, low-smem BM16/BN128, fp16 KV, one row per call" },
    { .law = LAW_PREFILL_GENERIC_FP8, .kernel = CK_PREFILL_GENERIC, .fp8 = 1, .what =
      "paged prefill, generic BM32/BN64, fp8_e5m2 KV dequantised in kernel, one row per call" },
    { .law = LAW_PREFILL_LOWSMEM_FP8, .kernel = CK_PREFILL_LOWSMEM, .fp8 = 1, .what =
      "paged prefill, low-smem BM16/BN128, fp8_e5m2 KV dequantised in kernel, one row per call" },
    { .law = LAW_DECODE_XQA_FP16, .kernel = CK_DECODE_XQA, .fp8 = 0, .what =
      "paged decode XQA (split-K, a CTA per kv head) + reduce, fp16 KV; q>1 = token-wise expansion" },
    { .law = LAW_DECODE_XQA_FP8, .kernel = CK_DECODE_XQA, .fp8 = 1, .what =
      "paged decode XQA (split-K, a CTA per kv head) + reduce, fp8_e5m2 KV; q>1 = token-wise expansion" },
    { .law = LAW_DECODE_SCALAR_FP16, .kernel = CK_DECODE_SCALAR, .fp8 = 0, .what =
      "paged decode scalar (split-K, a CTA per q head) + reduce, fp16 KV; q>1 = token-wise expansion" },
    { .law = LAW_DECODE_SCALAR_FP8, .kernel = CK_DECODE_SCALAR, .fp8 = 1, .what =
      "paged decode scalar (split-K, a CTA per q head) + reduce, fp8_e5m2 KV; q>1 = token-wise expansion" },
    { .law = LAW_FP8_BRIDGE, .kernel = CK_FP8_EXPAND, .fp8 = 1, .what =
      "fp8 bridge expansion alone: every page of the row's fp8 cache to an fp16 workspace (page 784)" },
    { .law = LAW_GEMM, .kernel = CK_GEMM, .fp8 = 0, .what =
      "cuBLAS GemmEx fp16, fp32 accumulate, C = A W^T, the model's per-rank shapes; tile/splits: cuBLASLt's pick" },
    { .law = LAW_GDN, .kernel = CK_GDN, .fp8 = 0, .what =
      "GDN core proxy: causal conv1d + L2 norm + gated delta rule, 128x128 fp32 state per v head; "
      "tokens = one long row + seqs-1 one-token rows" },
    { .law = LAW_ELEMENTWISE, .kernel = CK_ELEM, .fp8 = 0, .what =
      "one layer's elementwise proxy: 2 x (residual add + RMSNorm over hidden) + SiLU-mul over the MLP width" },
    { .law = LAW_ELEMENTWISE_COLD, .kernel = CK_ELEM, .fp8 = 0, .what =
      "the elementwise proxy L2-cold: each run on its own tensors and norm weight, over 3x the L2, evicted first" },
    { .law = LAW_VARLEN_FP16, .kernel = CK_VARLEN, .fp8 = 0, .what =
      "varlen paged attention (kernels/attn_varlen.cu), one launch over a mixed batch: decode rows (q=1) at ctx "
      "+ chunks of chunk_q after chunk_prefix, fp16 KV" },
    { .law = LAW_GEMM_MOE, .kernel = CK_GEMM_MOE, .fp8 = 0, .what =
      "an MoE layer's expert GEMMs, one cuBLAS grouped GEMM (GemmGroupedBatchedEx, a group per active expert), "
      "fp16, fp32 accumulate; tokens x topk over experts by law_moe_counts(skew)" },
};
#define NLAWS ((int)(sizeof law_table / sizeof law_table[0]))

const calib_law_spec_t *calib_laws(int *n)
{
    for (int i = 0; i < NLAWS; i++) {
        const law_form_t *f = law_form(law_table[i].law);
        law_table[i].name = f->name;
        law_table[i].ncols = f->ncols;
        law_table[i].cols = f->cols;
    }
    if (n)
        *n = NLAWS;
    return law_table;
}

/* Law l of the table, its names and columns filled in. */
static const calib_law_spec_t *law_spec(int l)
{
    return &calib_laws(NULL)[l];
}

/* ---- options -------------------------------------------------------------- */

void calib_opts_default(calib_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->tp = 1;
    o->repeats = 5;
    o->min_batch_s = 5e-4;
    o->max_iters = 500;
    o->long_point_s = 0.02;
    o->long_repeats = 3;
}

void calib_opts_model(calib_opts_t *o, const model_t *m)
{
    if (m->n_moe > 0 && m->moe_experts > 0 && o->moe_experts == 0) {
        o->moe_experts = m->moe_experts;
        o->moe_topk = m->moe_topk;
        o->moe_width = m->moe_inter;
    }
}

static int law_selected(const calib_opts_t *o, const char *name)
{
    if (!o->only || !*o->only)
        return 1;
    const char *s = o->only;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n > 0 && !strncmp(name, s, n))
            return 1;
        if (!e)
            break;
        s = e + 1;
    }
    return 0;
}

/* ---- the grid ------------------------------------------------------------- */

typedef struct {
    calib_job_t *v;
    int n, cap;
    int failed;
} jobvec_t;

static calib_job_t *jv_push(jobvec_t *jv)
{
    if (jv->n == jv->cap) {
        int cap = jv->cap ? 2 * jv->cap : 256;
        calib_job_t *v = realloc(jv->v, (size_t)cap * sizeof *v);
        if (!v) {
            jv->failed = 1;
            return NULL;
        }
        jv->v = v;
        jv->cap = cap;
    }
    calib_job_t *j = &jv->v[jv->n++];
    memset(j, 0, sizeof *j);
    j->what = "";
    return j;
}

static int law_index(calib_kernel_t k, int fp8)
{
    for (int i = 0; i < NLAWS; i++)
        if (law_table[i].kernel == k && law_table[i].fp8 == fp8)
            return i;
    return -1;
}

/* The table's index of law id (-1: none). */
static int law_index_id(law_id_t id)
{
    for (int i = 0; i < NLAWS; i++)
        if (law_table[i].law == id)
            return i;
    return -1;
}

/* A rough a-priori time (H100-class numbers); only orders the grid. */
static double estimate(const calib_job_t *j, const model_t *m, const model_rank_t *r)
{
    const double flops = 100e12, bw = 3e12, launch = 5e-6, D = m->head_dim;
    double t = 0;
    switch (j->kernel) {
    case CK_PREFILL_FAST: case CK_PREFILL_GENERIC: case CK_PREFILL_LOWSMEM: {
        double bm = j->kernel == CK_PREFILL_LOWSMEM ? 16 : 32, L = (double)j->seq_len, q = j->q;
        double fl = 4.0 * r->q_heads * q * (L - q / 2) * D;
        double serial = 4.0 * bm * L * D / (flops / 150);
        t = fmax(fl / flops, serial) * (j->kernel == CK_PREFILL_FAST ? 1 : 2.3);
        break;
    }
    case CK_DECODE_XQA: case CK_DECODE_SCALAR: {
        double heads = j->kernel == CK_DECODE_XQA ? r->kv_heads : r->q_heads;
        double L = j->ctx_min > 0 ? (j->ctx_min + (double)j->seq_len) / 2 : (double)j->seq_len;
        t = (double)j->rows * j->q * L * heads * D * 2 * (j->fp8 ? 1 : 2) / bw;
        break;
    }
    case CK_FP8_EXPAND:
        t = (double)j->seq_len * r->kv_heads * D * 2 * 3 / bw;
        break;
    case CK_GEMM:
        t = fmax(2.0 * j->m * j->n * j->k / (6 * flops), (2.0 * j->n * j->k + 2.0 * j->m * (j->n + j->k)) / bw);
        break;
    case CK_GDN:
        t = (double)(j->tokens - j->seqs + 1) * 1e-7
            + (double)j->seqs * r->gdn_v_heads * m->gdn_head_dim_k * m->gdn_head_dim_v * 8.0 / bw;
        break;
    case CK_ELEM:
        t = (double)j->tokens * (m->hidden * 12.0 + m->intermediate / (double)r->tp * 6.0) / bw;
        break;
    case CK_VARLEN: {
        double dkeys = (double)j->rows * (j->ctx_min > 0 ? (j->ctx_min + (double)j->seq_len) / 2 : (double)j->seq_len);
        double keys = dkeys + (double)j->chunks * j->q * ((double)j->prefix + j->q / 2.0);
        double kv = (dkeys + (double)j->chunks * (j->prefix + j->q)) * r->kv_heads * D * 4;
        t = fmax(4.0 * r->q_heads * D * keys / (flops / 2), kv / bw);
        break;
    }
    case CK_GEMM_MOE: {
        double a = (double)j->tokens * j->topk, act = fmin((double)j->experts, a);
        t = fmax(2.0 * a * j->n * j->k / (6 * flops), (2.0 * act * j->n * j->k + 2.0 * a * (j->n + j->k)) / bw);
        break;
    }
    default:
        break;
    }
    return t + launch;
}

static void add_attn(jobvec_t *jv, calib_kernel_t k, int fp8, int rows, int q, long seq_len, int page)
{
    calib_job_t *j = jv_push(jv);
    if (!j)
        return;
    j->kernel = k;
    j->fp8 = fp8;
    j->law = law_index(k, fp8);
    j->rows = rows;
    j->q = q;
    j->seq_len = seq_len;
    j->page = page;
    j->x[ATTN_COL_ROWS] = rows;
    j->x[ATTN_COL_Q] = q;
    j->x[ATTN_COL_SEQ_LEN] = (double)seq_len;
    j->x[ATTN_COL_PAGE] = page;
}

/* A decode point of rows requests of q at contexts spread evenly from ctx_min to seq_len
 * (ATTN_COL_CTX_MIN: law.h), as a serving batch's requests differ. */
static void add_attn_spread(jobvec_t *jv, calib_kernel_t k, int fp8, int rows, int q, long ctx_min, long seq_len,
                            int page)
{
    add_attn(jv, k, fp8, rows, q, seq_len, page);
    if (jv->failed) return;
    calib_job_t *j = &jv->v[jv->n - 1];
    j->ctx_min = rows > 1 && ctx_min >= q && ctx_min < seq_len ? ctx_min : 0;
    j->x[ATTN_COL_CTX_MIN] = (double)j->ctx_min;
}

static void add_gemm(jobvec_t *jv, const char *what, long mm, long n, long k)
{
    calib_job_t *j = jv_push(jv);
    if (!j)
        return;
    j->kernel = CK_GEMM;
    j->law = law_index(CK_GEMM, 0);
    j->what = what;
    j->m = mm;
    j->n = n;
    j->k = k;
    j->x[GEMM_COL_M] = (double)mm;
    j->x[GEMM_COL_N] = (double)n;
    j->x[GEMM_COL_K] = (double)k;
    j->x[GEMM_COL_WB] = 2; /* fp16 weights */
}

/* Prefill rows: q tokens at the end of max(ctx, q) for every ctx, plus the fresh prompt
 * (seq_len = q) when q is a chunk-sized query; duplicates skipped. */
static void prefill_series(jobvec_t *jv, calib_kernel_t k, int fp8, const int *qs, int nq,
                           const long *ctx, int nctx, const int *pages, int npages)
{
    for (int p = 0; p < npages; p++)
        for (int a = 0; a < nq; a++) {
            long last = -1;
            if (qs[a] >= 64)
                add_attn(jv, k, fp8, 1, qs[a], qs[a], pages[p]), last = qs[a];
            for (int c = 0; c < nctx; c++) {
                long L = ctx[c] > qs[a] ? ctx[c] : qs[a];
                if (L == last)
                    continue;
                add_attn(jv, k, fp8, 1, qs[a], L, pages[p]);
                last = L;
            }
        }
}

/* varlen: nd decode rows at ctx (ctx_min > 0: spread from ctx_min to ctx) plus nc chunks of q new
 * tokens after prefix */
static void add_varlen_spread(jobvec_t *jv, int nd, long ctx_min, long ctx, int nc, int q, long prefix, int page)
{
    calib_job_t *j = jv_push(jv);
    if (!j)
        return;
    j->kernel = CK_VARLEN;
    j->law = law_index(CK_VARLEN, 0);
    j->rows = nd;
    j->seq_len = nd > 0 ? ctx : 0;
    j->chunks = nc;
    j->q = nc > 0 ? q : 0;
    j->prefix = nc > 0 ? prefix : 0;
    j->page = page;
    j->x[VARLEN_COL_DECODE_ROWS] = nd;
    j->x[VARLEN_COL_CTX] = (double)j->seq_len;
    j->x[VARLEN_COL_CHUNKS] = nc;
    j->x[VARLEN_COL_CHUNK_Q] = j->q;
    j->x[VARLEN_COL_CHUNK_PREFIX] = (double)j->prefix;
    j->x[VARLEN_COL_PAGE] = page;
    j->ctx_min = nd > 1 && ctx_min > 0 && ctx_min < ctx ? ctx_min : 0;
    j->x[VARLEN_COL_CTX_MIN] = (double)j->ctx_min;
}

static void add_varlen(jobvec_t *jv, int nd, long ctx, int nc, int q, long prefix, int page)
{
    add_varlen_spread(jv, nd, 0, ctx, nc, q, prefix, page);
}

static void add_moe(jobvec_t *jv, const char *what, long tokens, int experts, int topk, long n, long k, double skew)
{
    calib_job_t *j = jv_push(jv);
    if (!j)
        return;
    j->kernel = CK_GEMM_MOE;
    j->law = law_index(CK_GEMM_MOE, 0);
    j->what = what;
    j->tokens = tokens;
    j->experts = experts;
    j->topk = topk;
    j->n = n;
    j->k = k;
    j->skew = skew;
    j->x[MOE_COL_TOKENS] = (double)tokens;
    j->x[MOE_COL_EXPERTS] = experts;
    j->x[MOE_COL_TOPK] = topk;
    j->x[MOE_COL_N] = (double)n;
    j->x[MOE_COL_K] = (double)k;
    j->x[MOE_COL_SKEW] = skew;
}

/* The varlen kernel's grid (with --varlen): n decode rows x context pairs (at most 2M KV
 * tokens a batch) x one chunk of 0 / 512 / 2048 fresh tokens, chunks alone, and a chunk after
 * a 16K prefix; page 16 (the upstream engine's block); wide batches; serving batches, their
 * decode rows at contexts spread over 128-2K keys; a light load's batches of 1-16 rows; a light
 * load's short prompts alone and beside a few rows.  127 points (smoke: 4). */
static void varlen_grid(jobvec_t *jv, int smoke)
{
    static const struct { int n; long ctx; } dec[] = { { 8, 1024 },  { 8, 8192 },   { 8, 65536 },
                                                       { 32, 1024 }, { 32, 8192 },  { 32, 32768 },
                                                       { 128, 1024 }, { 128, 4096 }, { 128, 16384 } };
    static const int chunk[] = { 0, 512, 2048 };
    const int page = 16;
    if (smoke) {
        add_varlen(jv, 32, 8192, 0, 0, 0, page);
        add_varlen(jv, 32, 8192, 1, 512, 0, page);
        add_varlen(jv, 0, 0, 1, 2048, 0, page);
        add_varlen_spread(jv, 64, 128, 2048, 0, 0, 0, page);
        return;
    }
    for (size_t d = 0; d < sizeof dec / sizeof dec[0]; d++)
        for (size_t c = 0; c < sizeof chunk / sizeof chunk[0]; c++)
            add_varlen(jv, dec[d].n, dec[d].ctx, chunk[c] > 0, chunk[c], 0, page);
    static const int alone[] = { 512, 2048, 8192 };
    for (size_t c = 0; c < sizeof alone / sizeof alone[0]; c++)
        add_varlen(jv, 0, 0, 1, alone[c], 0, page);
    add_varlen(jv, 0, 0, 1, 512, 16384, page);
    add_varlen(jv, 32, 8192, 1, 512, 16384, page);
    /* wide batches (upstream scheduling at budgets of 4K-16K and 64-256 sequences): more decode
     * rows than the grid above, and many short prompts' chunks beside many decode rows */
    static const struct { int n; long ctx; } wide[] = { { 64, 2048 }, { 256, 1024 }, { 256, 4096 } };
    for (size_t d = 0; d < sizeof wide / sizeof wide[0]; d++)
        for (size_t c = 0; c < 2; c++)
            add_varlen(jv, wide[d].n, wide[d].ctx, c > 0, c > 0 ? 512 : 0, 0, page);
    static const struct { int nc, q; } many[] = { { 4, 512 }, { 8, 1024 }, { 16, 256 }, { 32, 128 }, { 64, 64 } };
    static const int many_rows[] = { 0, 128, 256 };
    for (size_t d = 0; d < sizeof many_rows / sizeof many_rows[0]; d++)
        for (size_t c = 0; c < sizeof many / sizeof many[0]; c++)
            add_varlen(jv, many_rows[d], many_rows[d] ? 1024 : 0, many[c].nc, many[c].q, 0, page);
    /* serving batches: a wide load's decode rows sit at a few hundred to a few thousand keys,
     * every row at its own length (most not a multiple of a 64-key tile, the last tile part
     * full), where the points above hold every row at one context of 1K or more: 32-256 rows
     * spread evenly over 128-512, 128-2048 and 512-2048 keys, alone, beside one 512-token
     * chunk, beside 16 prompts' chunks of 256 and beside 4 of 1024 (a budget's worth of short
     * prompts).  48 points. */
    static const struct { long lo, hi; } spread[] = { { 128, 512 }, { 128, 2048 }, { 512, 2048 } };
    static const int spread_rows[] = { 32, 64, 128, 256 };
    static const struct { int nc, q; } beside[] = { { 0, 0 }, { 1, 512 }, { 16, 256 }, { 4, 1024 } };
    for (size_t s = 0; s < sizeof spread / sizeof spread[0]; s++)
        for (size_t d = 0; d < sizeof spread_rows / sizeof spread_rows[0]; d++)
            for (size_t c = 0; c < sizeof beside / sizeof beside[0]; c++)
                add_varlen_spread(jv, spread_rows[d], spread[s].lo, spread[s].hi, beside[c].nc, beside[c].q, 0, page);
    /* a light load's decode steps: 1-16 rows at a few hundred to 2K keys, every CTA alone on
     * its SM (the grid above starts at 8 rows of 1K+; the replays' decode calls of 1-15 rows
     * ran 6-12% over a law fitted without them): one row at 300, 1000 and 2000 keys, 2-16 rows
     * spread as above, and 4 and 16 rows beside a 512-token chunk.  17 points. */
    static const long lone[] = { 300, 1000, 2000 };
    for (size_t c = 0; c < sizeof lone / sizeof lone[0]; c++)
        add_varlen(jv, 1, lone[c], 0, 0, 0, page);
    static const int few_rows[] = { 2, 4, 8, 16 };
    for (size_t s = 0; s < sizeof spread / sizeof spread[0]; s++)
        for (size_t d = 0; d < sizeof few_rows / sizeof few_rows[0]; d++)
            add_varlen_spread(jv, few_rows[d], spread[s].lo, spread[s].hi, 0, 0, 0, page);
    add_varlen_spread(jv, 4, 128, 2048, 1, 512, 0, page);
    add_varlen_spread(jv, 16, 128, 2048, 1, 512, 0, page);
    /* a light serving load's prompts (Poisson loads of ~500-token prompts at a 2K budget): the
     * grid above holds one prompt of 512 or more alone, where these calls carry 1-3 prompts of
     * 200-1350 tokens, most not a multiple of a 64-row tile (an H100's single prompts of 200-441
     * tokens were priced 10-17% over): one prompt of 200, 300 and 440 alone,
     * 2 x 300 and 3 x 440 alone, and 8 and 24 rows spread over 128-2048 keys beside one prompt of
     * 300 and beside 3 x 440.  9 points. */
    static const int short_q[] = { 200, 300, 440 };
    for (size_t c = 0; c < sizeof short_q / sizeof short_q[0]; c++)
        add_varlen(jv, 0, 0, 1, short_q[c], 0, page);
    add_varlen(jv, 0, 0, 2, 300, 0, page);
    add_varlen(jv, 0, 0, 3, 440, 0, page);
    static const int light_rows[] = { 8, 24 };
    for (size_t d = 0; d < sizeof light_rows / sizeof light_rows[0]; d++) {
        add_varlen_spread(jv, light_rows[d], 128, 2048, 1, 300, 0, page);
        add_varlen_spread(jv, light_rows[d], 128, 2048, 3, 440, 0, page);
    }
}

/* The MoE expert GEMMs' grid (with --moe E,TOPK,WIDTH): the up projection (gate and up fused,
 * n = 2 x width / tp, k = hidden) and the down projection (n = hidden, k = width / tp) over
 * tokens 1 .. 4096, uniform, and skewed (Zipf 1.0) from 16 tokens; a decode batch's every
 * token count 1-16, then 24, 32, 48 (the layer's time there steps with the experts touched, not
 * smoothly: an H200 layer of Qwen3-30B-A3B's down projection took 15 / 19 / 31 / 34 / 45 / 49 /
 * 60 / 63 us at 1-8 tokens, a step at every odd count, which points at 1, 4, 16 left to the law
 * -- 17 / 24 / 30 / 37 / 44 / 50 / 57 / 64); and, uniform, where each
 * expert gets just past 64 and 128 rows and between (65, 96, 129, 192 rows an expert): the
 * grouped GEMM's time steps with its row tiles (an H200 layer of 63-64 rows an expert took
 * 0.224 ms, of 74-75 rows 0.329 ms), which points at 64, 128, 256 rows alone do not show.
 * 74 points (smoke: 4). */
static void moe_grid(jobvec_t *jv, const calib_opts_t *o, const model_t *m)
{
    static const long tok_f[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 32, 48, 64, 256, 1024, 2048, 4096 }, tok_s[] = { 16, 1024 };
    static const long rows_past[] = { 65, 96, 129, 192 };
    const long *tok = o->smoke ? tok_s : tok_f;
    int nt = o->smoke ? 2 : (int)(sizeof tok_f / sizeof *tok_f);
    long w = o->moe_width / (o->tp > 0 ? o->tp : 1);
    for (int i = 0; i < nt; i++) {
        add_moe(jv, "moe_up", tok[i], o->moe_experts, o->moe_topk, 2 * w, m->hidden, 0);
        add_moe(jv, "moe_down", tok[i], o->moe_experts, o->moe_topk, m->hidden, w, 0);
        if (!o->smoke && tok[i] >= 16) {
            add_moe(jv, "moe_up", tok[i], o->moe_experts, o->moe_topk, 2 * w, m->hidden, 1.0);
            add_moe(jv, "moe_down", tok[i], o->moe_experts, o->moe_topk, m->hidden, w, 1.0);
        }
    }
    for (int i = 0; !o->smoke && i < (int)(sizeof rows_past / sizeof *rows_past); i++) {
        long t = (rows_past[i] * o->moe_experts + o->moe_topk - 1) / o->moe_topk;
        add_moe(jv, "moe_up", t, o->moe_experts, o->moe_topk, 2 * w, m->hidden, 0);
        add_moe(jv, "moe_down", t, o->moe_experts, o->moe_topk, m->hidden, w, 0);
    }
}

static int cmp_est(const void *a, const void *b)
{
    const calib_job_t *x = a, *y = b;
    if (x->est_s != y->est_s)
        return x->est_s < y->est_s ? -1 : 1;
    return (x->law > y->law) - (x->law < y->law);
}

int calib_grid_build(const calib_opts_t *o, const model_t *m, const model_rank_t *r,
                     calib_job_t **jobs, int *njobs)
{
    jobvec_t jv = { 0 };
    long ctx[16];
    int nctx = o->smoke ? 3 : 10;
    /* log-spaced 1K .. 256K */
    for (int i = 0; i < nctx; i++)
        ctx[i] = lround(1024.0 * pow(256.0, (double)i / (nctx - 1)));

    static const int pages16[] = { 784, 816, 1568 }, pages8[] = { 1568, 1616 };
    static const int q_fast[] = { 64, 256, 784, 816, 1568, 2048 };
    /* generic: the q = 1 row (one CTA per head walking the context) and the chunks.  A final
     * partial chunk (32 < q < 784) is left out on purpose: no law of the catalogue's form fits both
     * that regime and q = 1, and q = 1 is what the mixed steps are made of. */
    static const int q_gen[] = { 1, 784, 816, 1568, 2048 };
    /* lowsmem: the 1 < q < ROUTE_BM32_MIN_Q rows the router gives it, up to its last (a
     * batch's short prompt tails and MTP rows reach 17-31) */
    static const int q_low[] = { 2, 5, 16, ROUTE_BM32_MIN_Q - 1 };
    static const int q_one[] = { 1 };
    static const int q_fast_s[] = { 784 }, q_gen_s[] = { 1, 784 }, q_low_s[] = { 5 };
    int np16 = o->smoke ? 1 : 3, np8 = o->smoke ? 1 : 2;
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))
    if (o->smoke) {
        prefill_series(&jv, CK_PREFILL_FAST, 0, q_fast_s, N(q_fast_s), ctx, nctx, pages16, np16);
        prefill_series(&jv, CK_PREFILL_GENERIC, 0, q_gen_s, N(q_gen_s), ctx, nctx, pages16, np16);
        prefill_series(&jv, CK_PREFILL_LOWSMEM, 0, q_low_s, N(q_low_s), ctx, nctx, pages16, np16);
        prefill_series(&jv, CK_PREFILL_GENERIC, 1, q_one, 1, ctx, nctx, pages8, np8);
        prefill_series(&jv, CK_PREFILL_LOWSMEM, 1, q_low_s, N(q_low_s), ctx, nctx, pages8, np8);
    } else {
        prefill_series(&jv, CK_PREFILL_FAST, 0, q_fast, N(q_fast), ctx, nctx, pages16, np16);
        prefill_series(&jv, CK_PREFILL_GENERIC, 0, q_gen, N(q_gen), ctx, nctx, pages16, np16);
        prefill_series(&jv, CK_PREFILL_LOWSMEM, 0, q_low, N(q_low), ctx, nctx, pages16, np16);
        prefill_series(&jv, CK_PREFILL_GENERIC, 1, q_one, 1, ctx, nctx, pages8, np8);
        prefill_series(&jv, CK_PREFILL_LOWSMEM, 1, q_low, N(q_low), ctx, nctx, pages8, np8);
    }

    /* decode: rows x (q = 1, or a small-q row expanded token-wise) x context */
    static const int rows_d[] = { 1, 2, 4, 8, 16 }, rows_s[] = { 1, 4 };
    static const int q_dec[] = { 1, 5 }; /* q = 1 rows, MTP4 verify rows expanded token-wise */
    const int *rows = o->smoke ? rows_s : rows_d;
    int nrows = o->smoke ? N(rows_s) : N(rows_d);
    for (int f = 0; f <= 1; f++)
        for (int kk = 0; kk < 2; kk++) {
            calib_kernel_t k = kk ? CK_DECODE_SCALAR : CK_DECODE_XQA;
            for (int a = 0; a < nrows; a++)
                for (int b = 0; b < N(q_dec); b++) {
                    for (int c = 0; c < nctx; c++)
                        add_attn(&jv, k, f, rows[a], q_dec[b], ctx[c], f ? 1568 : 784);
                }
        }
    /* the serving envelope: decode calls of many requests (a batch's decode rows share one
     * launch, cost_profile.c's pack) at short and middle contexts (a call's KV held to 1M
     * tokens), at the KV page the engine takes for each MTP depth (model_block_size: no MTP,
     * MTP2, MTP4), with q = 1 (decode rows; the draft passes) and the depth's verify rows
     * (q = 1 + K, expanded token-wise); the reference row counts (1..16) too, below 1K at the
     * reference pages and over the short contexts at the others */
    if (!o->smoke) {
        static const int rows_v[] = { 32, 64, 128, 256 }, spec_v[] = { 0, 2, 4 };
        static const long ctx_v[] = { 128, 512, 1024, 2048, 4096, 8192, 16384 };
        static const long ctx_ref[] = { 128, 512, 2048, 8192 }, ctx_short[] = { 128, 512 };
        static const int rows_sp[] = { 8, 16, 32, 64 };
        static const long spread_sp[][2] = { { 512, 3584 }, { 2048, 14336 } };
        for (int f = 0; f <= 1; f++)
            for (int kk = 0; kk < 2; kk++) {
                calib_kernel_t k = kk ? CK_DECODE_SCALAR : CK_DECODE_XQA;
                int ref_page = f ? 1568 : 784, done[N(spec_v)] = { 0 };
                for (int sv = 0; sv < N(spec_v); sv++) {
                    int K = spec_v[sv], page = model_block_size(m, o->tp, f ? 1 : 2, K);
                    done[sv] = page;
                    int dup = 0;
                    for (int e = 0; e < sv; e++) dup |= done[e] == page && spec_v[e] == K;
                    if (dup || page < 1) continue;
                    int qs[2] = { 1, 1 + K }, nq = K ? 2 : 1;
                    for (int b = 0; b < nq; b++) {
                        for (int a = 0; a < N(rows_v); a++)
                            for (int c = 0; c < N(ctx_v); c++)
                                if ((long)rows_v[a] * ctx_v[c] <= (1L << 20))
                                    add_attn(&jv, k, f, rows_v[a], qs[b], ctx_v[c], page);
                        /* the reference grid holds q 1 and 5 at the reference page from 1K */
                        int ref = page == ref_page && (qs[b] == 1 || qs[b] == 5);
                        for (int a = 0; a < nrows; a++)
                            for (int c = 0; c < (ref ? N(ctx_short) : N(ctx_ref)); c++)
                                add_attn(&jv, k, f, rows[a], qs[b], ref ? ctx_short[c] : ctx_ref[c], page);
                    }
                    /* the verify rows of a serving batch's requests at unlike contexts (a
                     * lognormal load's 3K-15K): 8-64 requests spread over 512-3584 and
                     * 2048-14336 keys, whose mean contexts (2K, 8K) the identical-row points
                     * above measure at the same request counts (cost_profile.c's pack prices a
                     * spread by the ratio of the two) */
                    for (int a = 0; K && a < N(rows_sp); a++)
                        for (int c = 0; c < N(spread_sp); c++)
                            add_attn_spread(&jv, k, f, rows_sp[a], 1 + K, spread_sp[c][0], spread_sp[c][1], page);
                }
            }
    }
    /* the fp8 bridge's expansion over the prefix length */
    for (int c = 0; c < nctx; c++)
        add_attn(&jv, CK_FP8_EXPAND, 1, 1, 784, ctx[c], 1568);
    if (!o->smoke) {
        for (int c = 0; c + 1 < nctx; c++) /* midpoints */
            add_attn(&jv, CK_FP8_EXPAND, 1, 1, 784, lround(sqrt((double)ctx[c] * ctx[c + 1])), 1568);
        /* and three between the midpoints 30,339 and 41,285, where on an H200 the busiest SM
         * goes from 3 of the expansion's CTAs at once to 4 and every token gets dearer (the
         * law's knee, calib/README.md): 337, 368 and 404 CTAs of 98 tokens on 132 SMs */
        static const long knee[] = { 33000, 36000, 39500 };
        for (int c = 0; c < N(knee); c++)
            add_attn(&jv, CK_FP8_EXPAND, 1, 1, 784, knee[c], 1568);
    }

    /* GEMMs of the model's per-rank shapes x token count */
    static const long ms_full[] = { 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192,
                                    256, 384, 512, 784, 816, 1024, 1568, 2048, 2064, 3072, 4096 };
    static const long ms_smoke[] = { 1, 16, 784, 2048 };
    const long *ms = o->smoke ? ms_smoke : ms_full;
    int nm = o->smoke ? N(ms_smoke) : N(ms_full);
    const long h = m->hidden;
    /* lm_head runs on the sampled positions only (decode rows x (1+K), finishing prompts) */
    struct { const char *what; long n, k; int need; long max_m; } shapes[] = {
        { "qkv", r->attn_qkv_n, h, m->n_full_attn > 0, 1L << 30 },
        { "o_proj", h, r->attn_o_k, m->n_full_attn > 0, 1L << 30 },
        { "gdn_in", r->gdn_in_n, h, m->n_gdn > 0, 1L << 30 },
        { "gdn_out", h, r->gdn_out_k, m->n_gdn > 0, 1L << 30 },
        { "mlp_up", r->mlp_up_n, h, m->n_layers > m->n_moe, 1L << 30 },
        { "mlp_down", h, r->mlp_down_k, m->n_layers > m->n_moe, 1L << 30 },
        /* a sparse layer's dense GEMMs: the router (not sharded) and the shared experts */
        { "router", m->moe_experts, h, m->n_moe > 0, 1L << 30 },
        { "shared_up", r->moe_shared_up_n, h, m->n_moe > 0 && m->moe_shared > 0, 1L << 30 },
        { "shared_down", h, r->moe_shared_down_k, m->n_moe > 0 && m->moe_shared > 0, 1L << 30 },
        { "lm_head", r->vocab_n, h, 1, 512 },
        { "mtp_eh", h, 2 * h, m->mtp_layers > 0, 1L << 30 },
    };
    for (int s = 0; s < N(shapes); s++)
        if (shapes[s].need && shapes[s].n > 0 && shapes[s].k > 0)
            for (int i = 0; i < nm && ms[i] <= shapes[s].max_m; i++)
                add_gemm(&jv, shapes[s].what, ms[i], shapes[s].n, shapes[s].k);
    /* the serving envelope: a step's tokens at budgets up to 16K */
    static const long ms_serve[] = { 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384 };
    if (!o->smoke)
        for (int s = 0; s < N(shapes); s++)
            if (shapes[s].need && shapes[s].n > 0 && shapes[s].k > 0)
                for (int i = 0; i < N(ms_serve) && ms_serve[i] <= shapes[s].max_m; i++)
                    add_gemm(&jv, shapes[s].what, ms_serve[i], shapes[s].n, shapes[s].k);

    /* the GDN core: seqs x the long row's tokens */
    if (m->n_gdn > 0) {
        static const int seqs_f[] = { 1, 2, 4, 8, 16 }, seqs_s[] = { 1, 4 };
        static const long long_f[] = { 1, 2, 5, 16, 64, 256, 784, 816, 1568, 2048 }, long_s[] = { 1, 784 };
        const int *sq = o->smoke ? seqs_s : seqs_f;
        const long *lr = o->smoke ? long_s : long_f;
        int nsq = o->smoke ? N(seqs_s) : N(seqs_f), nlr = o->smoke ? N(long_s) : N(long_f);
        for (int a = 0; a < nsq; a++)
            for (int b = 0; b < nlr; b++) {
                calib_job_t *j = jv_push(&jv);
                if (!j)
                    break;
                j->kernel = CK_GDN;
                j->law = law_index(CK_GDN, 0);
                j->seqs = sq[a];
                j->tokens = lr[b] + sq[a] - 1;
                j->x[GDN_COL_TOKENS] = (double)j->tokens;
                j->x[GDN_COL_SEQS] = sq[a];
            }
        /* the serving envelope: many sequences (a batch's decode rows beside a chunk) */
        static const int seqs_v[] = { 32, 64, 128, 256 };
        static const long long_v[] = { 1, 16, 256, 2048, 8192 };
        for (int a = 0; a < (o->smoke ? 0 : N(seqs_v)); a++)
            for (int b = 0; b < N(long_v); b++) {
                calib_job_t *j = jv_push(&jv);
                if (!j)
                    break;
                j->kernel = CK_GDN;
                j->law = law_index(CK_GDN, 0);
                j->seqs = seqs_v[a];
                j->tokens = long_v[b] + seqs_v[a] - 1;
                j->x[GDN_COL_TOKENS] = (double)j->tokens;
                j->x[GDN_COL_SEQS] = seqs_v[a];
            }
    }
    /* one layer's elementwise work */
    static const long tok_f[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 784, 1024, 1568, 2048, 3072, 4096 };
    static const long tok_s[] = { 1, 64, 2048 };
    /* the serving envelope: batch sizes between them, and budgets up to 16K */
    static const long tok_v[] = { 3, 6, 12, 24, 48, 96, 192, 384, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384 };
    for (int i = 0; i < (o->smoke ? 0 : N(tok_v)); i++) {
        calib_job_t *j = jv_push(&jv);
        if (!j)
            break;
        j->kernel = CK_ELEM;
        j->law = law_index(CK_ELEM, 0);
        j->tokens = tok_v[i];
        j->x[0] = (double)j->tokens;
    }
    for (int i = 0; i < (o->smoke ? N(tok_s) : N(tok_f)); i++) {
        calib_job_t *j = jv_push(&jv);
        if (!j)
            break;
        j->kernel = CK_ELEM;
        j->law = law_index(CK_ELEM, 0);
        j->tokens = o->smoke ? tok_s[i] : tok_f[i];
        j->x[0] = (double)j->tokens;
    }
    /* L2-cold up to CALIB_ELEM_COLD_MAX: in a step every layer's norms follow its GEMMs, which
     * stream far more than the L2 (docs/validation.md) */
    for (int v = 0; v < 2; v++)
        for (int i = 0; i < (v ? (o->smoke ? N(tok_s) : N(tok_f)) : (o->smoke ? 0 : N(tok_v))); i++) {
            long tk = v ? (o->smoke ? tok_s[i] : tok_f[i]) : tok_v[i];
            if (tk > CALIB_ELEM_COLD_MAX || (o->smoke && tk > 1))
                continue;
            calib_job_t *j = jv_push(&jv);
            if (!j)
                break;
            j->kernel = CK_ELEM;
            j->law = law_index_id(LAW_ELEMENTWISE_COLD);
            j->cold = 1;
            j->tokens = tk;
            j->x[0] = (double)j->tokens;
        }
    /* the varlen backend and the MoE expert GEMMs only where asked for (calib_opts_t) */
    if (o->varlen)
        varlen_grid(&jv, o->smoke);
    if (o->moe_experts > 0 && o->moe_topk > 0 && o->moe_width > 0)
        moe_grid(&jv, o, m);
#undef N
    if (jv.failed) {
        free(jv.v);
        return -1;
    }
    /* attention points record the per-rank shape they ran (the grid's key: sim/law.h) */
    for (int i = 0; i < jv.n; i++) {
        calib_job_t *j = &jv.v[i];
        if (j->kernel <= CK_FP8_EXPAND) {
            j->x[ATTN_COL_Q_HEADS] = r->q_heads;
            j->x[ATTN_COL_KV_HEADS] = r->kv_heads;
            j->x[ATTN_COL_HEAD_DIM] = m->head_dim;
        }
    }
    /* keep the selected laws, estimate, order cheapest first */
    int n = 0;
    for (int i = 0; i < jv.n; i++) {
        calib_job_t *j = &jv.v[i];
        if (j->law < 0 || !law_selected(o, law_spec(j->law)->name))
            continue;
        j->est_s = estimate(j, m, r);
        jv.v[n++] = *j;
    }
    qsort(jv.v, (size_t)n, sizeof *jv.v, cmp_est);
    *jobs = jv.v;
    *njobs = n;
    return 0;
}

/* ---- measuring ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

size_t calib_mem_avail(size_t free_bytes, size_t held)
{
    size_t have = free_bytes + held;
    if (have < free_bytes) /* wrapped */
        have = SIZE_MAX;
    return have > CALIB_MEM_MARGIN ? have - CALIB_MEM_MARGIN : 0;
}

static size_t round256(size_t b)
{
    return b > SIZE_MAX - 255 ? SIZE_MAX & ~(size_t)255 : (b + 255) & ~(size_t)255;
}

size_t calib_rot_plan(size_t full, size_t slice, int want, size_t avail, int *sets)
{
    *sets = 0;
    if (want < 1 || slice == 0)
        return 0;
    size_t head = full > SIZE_MAX - full / 4 ? SIZE_MAX : full + full / 4;
    size_t c = round256(head);
    if (c <= avail) {
        *sets = want;
        return c;
    }
    c = round256(full);
    if (c <= avail) {
        *sets = want;
        return c;
    }
    size_t n = avail / slice;
    if (n < 1)
        return 0;
    if (n >= (size_t)want) /* full < slice * want <= avail: only where full was not slice * want */
        n = (size_t)want;
    *sets = (int)n;
    return n * slice;
}

long calib_pool_plan(long want, size_t block, size_t avail)
{
    if (want < 1 || block == 0)
        return 0;
    size_t fit = avail / block;
    long grow = want + want / 2;
    if ((size_t)grow <= fit)
        return grow;
    return (size_t)want <= fit ? want : 0;
}

double calib_median(double *v, int n)
{
    if (n < 1)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int calib_measure(calib_timer_t *t, const calib_opts_t *o, const calib_job_t *j,
                  double *t_s, int *iters_used, int *repeats_used)
{
    double s[64], est;
    int rc = t->prepare(t, j);
    if (rc != 0)
        return rc < 0 ? -1 : 1;
    rc = t->run(t, j, 1, &est); /* warm-up */
    if (rc != 0)
        return rc < 0 ? -1 : 1;
    if (t->run(t, j, 1, &est) != 0) /* an estimate */
        return -1;
    if (!(est > 0) || !isfinite(est)) {
        snprintf(t->err, sizeof t->err, "non-positive time %g", est);
        return -1;
    }
    int iters = 1;
    if (est < o->min_batch_s) {
        iters = (int)ceil(o->min_batch_s / est);
        if (iters > o->max_iters)
            iters = o->max_iters;
    }
    int reps = est > o->long_point_s ? o->long_repeats : o->repeats;
    if (reps < 1)
        reps = 1;
    if (reps > 64)
        reps = 64;
    for (int r = 0; r < reps; r++) {
        if (t->run(t, j, iters, &s[r]) != 0)
            return -1;
        if (!(s[r] > 0) || !isfinite(s[r])) {
            snprintf(t->err, sizeof t->err, "non-positive time %g", s[r]);
            return -1;
        }
    }
    *t_s = calib_median(s, reps);
    if (iters_used)
        *iters_used = iters;
    if (repeats_used)
        *repeats_used = reps;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void job_label(const calib_job_t *j, char *buf, size_t n)
{
    const char *law = law_spec(j->law)->name;
    switch (j->kernel) {
    case CK_GEMM:
        snprintf(buf, n, "%s %s m=%ld n=%ld k=%ld", law, j->what, j->m, j->n, j->k);
        break;
    case CK_GDN:
        snprintf(buf, n, "%s tokens=%ld seqs=%d", law, j->tokens, j->seqs);
        break;
    case CK_ELEM:
        snprintf(buf, n, "%s tokens=%ld", law, j->tokens);
        break;
    case CK_VARLEN:
        if (j->ctx_min > 0)
            snprintf(buf, n, "%s decode=%d@%ld-%ld chunks=%d q=%d prefix=%ld page=%d", law, j->rows, j->ctx_min,
                     j->seq_len, j->chunks, j->q, j->prefix, j->page);
        else
            snprintf(buf, n, "%s decode=%d@%ld chunks=%d q=%d prefix=%ld page=%d", law, j->rows, j->seq_len,
                     j->chunks, j->q, j->prefix, j->page);
        break;
    case CK_GEMM_MOE:
        snprintf(buf, n, "%s %s tokens=%ld E=%d top%d n=%ld k=%ld skew=%g", law, j->what, j->tokens, j->experts,
                 j->topk, j->n, j->k, j->skew);
        break;
    default:
        if (j->ctx_min > 0)
            snprintf(buf, n, "%s rows=%d q=%d L=%ld-%ld page=%d", law, j->rows, j->q, j->ctx_min, j->seq_len, j->page);
        else
            snprintf(buf, n, "%s rows=%d q=%d L=%ld page=%d", law, j->rows, j->q, j->seq_len, j->page);
    }
}

static void fmt_dur(double s, char *buf, size_t n)
{
    if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}

/* ---- the driver ----------------------------------------------------------- */

typedef struct {
    double *pts;
    int *job;                     /* each point's index in the grid */
    int n, cap;
} ptbuf_t;

static int pt_add(ptbuf_t *b, int ncols, const double *x, double t, int job)
{
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 64;
        double *p = realloc(b->pts, (size_t)cap * ncols * sizeof *p);
        if (!p)
            return -1;
        b->pts = p;
        int *jb = realloc(b->job, (size_t)cap * sizeof *jb);
        if (!jb)
            return -1;
        b->job = jb;
        b->cap = cap;
    }
    b->job[b->n] = job;
    double *row = b->pts + (size_t)b->n * ncols;
    memcpy(row, x, (size_t)(ncols - 1) * sizeof *row);
    row[ncols - 1] = t;
    b->n++;
    return 0;
}

/* The SM clock now (MHz), NAN where it cannot be read. */
static double clock_now(calib_timer_t *t)
{
    double f;
    return t->clock && t->clock(t, &f) == 0 && f > 0 ? f : NAN;
}

/* The second look (calib.h, CALIB_RECHECK_*) at law l's points: fit, flag, time the
 * flagged points twice more, keep each one's median of three.  The number re-timed, or -1
 * with t->err filled (a timing failed). */
static int recheck_law(const calib_opts_t *o, calib_timer_t *t, const model_t *m, const model_rank_t *r,
                       const cost_hw_t *hw, int l, const calib_job_t *jobs, double *jt, ptbuf_t *b, FILE *progress)
{
    const calib_law_spec_t *ls = law_spec(l);
    prof_law_t law;
    prof_law_init(&law, law_form(ls->law));
    law.npts = b->n;
    law.pts = b->pts;
    if (law.ncoef < 1 || b->n < 3 * law.ncoef || fit_law_hw(&law, m, r, hw) < 0)
        return 0; /* too few points to tell an outlier from the law */
    fit_resid_t *res = malloc((size_t)b->n * sizeof *res);
    double *abs_rel = malloc((size_t)b->n * sizeof *abs_rel);
    int n = 0;
    if (!res || !abs_rel || fit_law_residuals(&law, m, r, hw, res) < 0)
        goto done;
    for (int i = 0; i < b->n; i++)
        abs_rel[i] = fabs(res[i].rel);
    double med = calib_median(abs_rel, b->n);
    double thr = fmax(CALIB_RECHECK_FACTOR * med, CALIB_RECHECK_MIN);
    int cap = b->n / 10 > 1 ? b->n / 10 : 1;
    for (int i = 0; i < b->n && n < cap && fabs(res[i].rel) > thr; i++) {
        int pi = res[i].index, ji = b->job[pi];
        double v[3] = { res[i].t, 0, 0 };
        if (t->idle) /* the grid ended with its heaviest points: from rest, as the first timing */
            t->idle(t, CALIB_SETTLE_MAX);
        for (int k = 1; k < 3; k++)
            if (calib_measure(t, o, &jobs[ji], &v[k], NULL, NULL) != 0) {
                n = -1;
                goto done;
            }
        double was = v[0], now = calib_median(v, 3);
        b->pts[(size_t)pi * ls->ncols + ls->ncols - 1] = now;
        jt[ji] = now;
        n++;
        if (progress && !o->quiet) {
            char label[160];
            job_label(&jobs[ji], label, sizeof label);
            fprintf(progress, "calib: second look: %-64.64s %10.4f -> %10.4f ms (fit %+.1f%%)\n", label, was * 1e3,
                    now * 1e3, 100 * res[i].rel);
        }
    }
done:
    free(res);
    free(abs_rel);
    return n;
}

/* What the cost model must know of the kernels this build times (written into the profile):
 * the fp8 expansion's CTAs, and the fast prefill path's split rule (kernels/attn_split.h; its
 * CTAs per SM from the timer's describe, 1 where it does not say). */
static void kernel_facts(profile_t *p)
{
    p->expand_cta_tokens = ATTN_BRIDGE_CTA_TOKENS;
    p->expand_ctas_per_sm = ATTN_BRIDGE_CTAS_PER_SM;
    p->split_max = ATTN_SPLIT_MAX;
    p->split_min_tiles = ATTN_SPLIT_MIN_TILES;
    p->split_cost_tiles = ATTN_SPLIT_COST_TILES;
    if (p->split_ctas_per_sm <= 0)
        p->split_ctas_per_sm = 1;
}

static void utc_date(char *buf, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* cuBLAS's kernel at every m of each GEMM shape the jobs hold (m 1 .. the shape's largest), as
 * ranges of one kernel: rows of PROF_KERN_COLS (profile.h) in *out (caller frees), *nout of
 * them.  A query the timer cannot answer (gemm_choice 1) breaks a range.  0, or -1 (err). */
static int gemm_kernel_map(calib_timer_t *t, const calib_job_t *jobs, int njobs, double **out, int *nout,
                           char err[256])
{
    *out = NULL;
    *nout = 0;
    int ns = 0, cap = 0;
    double (*sh)[4] = NULL;                /* n, k, wb, largest m */
    for (int i = 0; i < njobs; i++) {
        const calib_job_t *j = &jobs[i];
        if (j->kernel != CK_GEMM) continue;
        int s = 0;
        while (s < ns && !(sh[s][0] == j->n && sh[s][1] == j->k && sh[s][2] == j->x[GEMM_COL_WB])) s++;
        if (s == ns) {
            if (ns == cap) {
                double (*g)[4] = realloc(sh, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *sh);
                if (!g) goto oom;
                sh = g;
            }
            sh[ns][0] = (double)j->n, sh[ns][1] = (double)j->k, sh[ns][2] = j->x[GEMM_COL_WB], sh[ns][3] = 0;
            ns++;
        }
        if ((double)j->m > sh[s][3]) sh[s][3] = (double)j->m;
    }
    int nr = 0, rcap = 0;
    double *rows = NULL;
    for (int s = 0; s < ns; s++) {
        double *cur = NULL;
        for (long m = 1; m <= (long)sh[s][3]; m++) {
            calib_job_t q;
            memset(&q, 0, sizeof q);
            q.kernel = CK_GEMM;
            q.m = m, q.n = (long)sh[s][0], q.k = (long)sh[s][1];
            double ch[3] = { 0, 0, 0 };
            int gc = t->gemm_choice(t, &q, ch);
            if (gc < 0) {
                snprintf(err, 256, "gemm m=%ld n=%ld k=%ld: %.180s", q.m, q.n, q.k, t->err);
                free(rows);
                free(sh);
                return -1;
            }
            if (gc != 0 || !(ch[0] >= 1 && ch[1] >= 1 && ch[2] >= 1)) {
                cur = NULL;
                continue;
            }
            if (cur && cur[KERN_M_HI] == (double)(m - 1) && cur[KERN_TILE_N] == ch[0] && cur[KERN_TILE_M] == ch[1] &&
                cur[KERN_SPLITS] == ch[2]) {
                cur[KERN_M_HI] = (double)m;
                continue;
            }
            if (nr == rcap) {
                double *g = realloc(rows, (size_t)(rcap = rcap ? 2 * rcap : 256) * PROF_KERN_COLS * sizeof *rows);
                if (!g) {
                    free(rows);
                    goto oom;
                }
                rows = g;
            }
            cur = rows + (size_t)nr++ * PROF_KERN_COLS;
            double v[PROF_KERN_COLS] = { sh[s][0], sh[s][1], sh[s][2], (double)m, (double)m, ch[0], ch[1], ch[2] };
            memcpy(cur, v, sizeof v);
        }
    }
    free(sh);
    *out = rows;
    *nout = nr > PROF_MAX_KERN ? PROF_MAX_KERN : nr;
    return 0;
oom:
    free(sh);
    snprintf(err, 256, "out of memory");
    return -1;
}

/* Whether kmap rows a and b are the same shape's (n, k, wb). */
static int kmap_same_shape(const double *a, const double *b)
{
    return a[KERN_N] == b[KERN_N] && a[KERN_K] == b[KERN_K] && a[KERN_WB] == b[KERN_WB];
}

/* Whether kmap rows a and b name the same kernel (tile_n, tile_m, splits) of one shape. */
static int kmap_same_kernel(const double *a, const double *b)
{
    return kmap_same_shape(a, b) && a[KERN_TILE_N] == b[KERN_TILE_N] && a[KERN_TILE_M] == b[KERN_TILE_M] &&
           a[KERN_SPLITS] == b[KERN_SPLITS];
}

/* One GEMM job for each kernel of kmap (gemm_kernel_map's ranges of jobs[0 .. *njobs)) that
 * no job of its shape runs, at the middle of its widest range within m 1 ..
 * CALIB_KERN_POINT_M_MAX if that range spans at least CALIB_KERN_POINT_MIN_M m; appended to
 * *jobs, which are then ordered cheapest first again.  The number added, or -1 (out of memory). */
static int gemm_kernel_points(calib_job_t **jobs, int *njobs, const double *kmap, int nk, const model_t *m,
                              const model_rank_t *r)
{
    int n0 = *njobs, nadd = 0, cap = 0;
    calib_job_t *add = NULL;
    /* the kmap row of each range a job runs (a job's m lies in one range of its shape), 1 = run */
    char *run = calloc(nk ? (size_t)nk : 1, 1);
    const calib_job_t **shape = calloc(nk ? (size_t)nk : 1, sizeof *shape);   /* a job of row a's shape */
    if (!run || !shape) goto oom;
    for (int a = 0; a < nk; a++) {
        const double *v = kmap + (size_t)a * PROF_KERN_COLS;
        for (int i = 0; i < n0; i++) {
            const calib_job_t *jb = &(*jobs)[i];
            if (jb->kernel != CK_GEMM || jb->n != (long)v[KERN_N] || jb->k != (long)v[KERN_K] ||
                jb->x[GEMM_COL_WB] != v[KERN_WB])
                continue;
            if (!shape[a]) shape[a] = jb;
            if (jb->m >= (long)v[KERN_M_LO] && jb->m <= (long)v[KERN_M_HI]) run[a] = 1;
        }
    }
    for (int a = 0; a < nk; a++) {
        const double *v = kmap + (size_t)a * PROF_KERN_COLS;
        if (!shape[a] || run[a] || v[KERN_M_LO] > CALIB_KERN_POINT_M_MAX) continue;
        /* the kernel's widest range within the limit; none if a range of it was run (or was given
         * its point) */
        int best = -1, ran = 0;
        long lo = 0, hi = -1;
        for (int b = 0; b < nk && !ran; b++) {
            const double *w = kmap + (size_t)b * PROF_KERN_COLS;
            if (!kmap_same_kernel(v, w)) continue;
            ran = run[b];
            long wl = (long)w[KERN_M_LO], wh = (long)fmin(w[KERN_M_HI], CALIB_KERN_POINT_M_MAX);
            if (wh - wl > hi - lo) best = b, lo = wl, hi = wh;
        }
        if (ran || best < 0 || hi - lo + 1 < CALIB_KERN_POINT_MIN_M) continue;
        run[best] = 1;
        if (nadd == cap) {
            calib_job_t *g = realloc(add, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *add);
            if (!g) goto oom;
            add = g;
        }
        calib_job_t *j = &add[nadd++];
        *j = *shape[a];
        j->m = lo + (hi - lo) / 2;
        j->kpoint = 1;
        j->x[GEMM_COL_M] = (double)j->m;
        j->est_s = estimate(j, m, r);
    }
    if (nadd) {
        calib_job_t *g = realloc(*jobs, (size_t)(n0 + nadd) * sizeof *g);
        if (!g) goto oom;
        memcpy(g + n0, add, (size_t)nadd * sizeof *add);
        qsort(g, (size_t)(n0 + nadd), sizeof *g, cmp_est);
        *jobs = g;
        *njobs = n0 + nadd;
    }
    free(add);
    free(run);
    free(shape);
    return nadd;
oom:
    free(add);
    free(run);
    free(shape);
    return -1;
}

int calib_run(const calib_opts_t *o, calib_timer_t *t, const model_t *m, profile_t *out,
              FILE *progress, char err[256])
{
    int rc = -1, njobs = 0, nskip = 0, nbudget = 0, nfail = 0, inarow = 0;
    calib_job_t *jobs = NULL;
    double *jt = NULL;            /* each job's measured seconds (NAN: not measured) */
    double *jw = NULL;            /* per job (x4): wall time before and after it, its time on the
                                     card, the SM clock read after it (--points-log) */
    FILE *pl = NULL;              /* --points-log, opened before anything is measured */
    double *kmap = NULL;          /* cuBLAS's kernel by ranges of m (gemm_kernel_map) */
    int nkmap = 0;
    ptbuf_t pb[NLAWS];
    model_rank_t r;
    double t0 = now_s(), last_print = -1e9, busy = 0; /* busy: the last job's time on the card */
    int tty = progress && isatty(fileno(progress));

    memset(pb, 0, sizeof pb);
    memset(out, 0, sizeof *out);
    const char *forced = getenv("ATTN_PREFILL_SPLIT");
    if (forced && *forced) {
        snprintf(err, 256, "ATTN_PREFILL_SPLIT=%.20s forces the fast path's parts, and a profile records the kernels' "
                 "own rule (kernels/attn_split.h): unset it", forced);
        return -1;
    }
    if (model_rank(m, o->tp, &r) < 0) {
        snprintf(err, 256, "tp %d does not divide the model's heads", o->tp);
        return -1;
    }
    if (calib_grid_build(o, m, &r, &jobs, &njobs) < 0) {
        snprintf(err, 256, "out of memory building the grid");
        return -1;
    }
    if (o->points_log && !(pl = fopen(o->points_log, "w"))) {
        snprintf(err, 256, "%.120s: %s", o->points_log, strerror(errno));
        goto fail;
    }
    if (t->setup && t->setup(t, m, &r) < 0) {
        snprintf(err, 256, "%s: %.200s", t->name, t->err);
        goto fail;
    }
    /* cuBLAS's pick at every m of each GEMM shape (the grid interpolates only within one
     * kernel), and a point for each kernel no grid point runs (gemm_kernel_points) */
    int ngemm = 0;
    for (int i = 0; i < njobs; i++) ngemm += jobs[i].kernel == CK_GEMM;
    if (ngemm && t->gemm_choice) {
        double k0 = now_s();
        if (gemm_kernel_map(t, jobs, njobs, &kmap, &nkmap, err) < 0) goto fail;
        int added = o->smoke ? 0 : gemm_kernel_points(&jobs, &njobs, kmap, nkmap, m, &r);
        if (added < 0) {
            snprintf(err, 256, "out of memory building the grid");
            goto fail;
        }
        if (progress && !o->quiet)
            fprintf(progress, "calib: cuBLAS's kernel at every m of each GEMM shape: %d ranges, %d points for kernels"
                              " no grid point runs (%.1f s)\n", nkmap, added, now_s() - k0);
    }
    if (!(jt = malloc((njobs ? njobs : 1) * sizeof *jt)) || !(jw = malloc(4 * (njobs ? njobs : 1) * sizeof *jw))) {
        snprintf(err, 256, "out of memory building the grid");
        goto fail;
    }
    for (int i = 0; i < njobs; i++)
        jt[i] = jw[i] = jw[njobs + i] = jw[3 * njobs + i] = NAN, jw[2 * njobs + i] = 0;
    if (progress && !o->quiet)
        fprintf(progress, "calib: %d points over %s, %s at tp %d\n", njobs, t->name, m->name, o->tp);

    for (int i = 0; i < njobs; i++) {
        const calib_job_t *j = &jobs[i];
        const calib_law_spec_t *ls = law_spec(j->law);
        double el = now_s() - t0;
        char label[160];
        if (o->budget_s > 0 && el > o->budget_s) {
            nbudget = njobs - i;
            if (progress)
                fprintf(progress, "%scalib: time budget %.0fs spent; %d most expensive points not measured\n",
                        tty ? "\n" : "", o->budget_s, nbudget);
            break;
        }
        if (j->kernel == CK_GEMM && t->gemm_choice) {
            double ch[3] = { 0, 0, 0 };
            int gc = t->gemm_choice(t, j, ch);
            if (gc < 0) {
                job_label(j, label, sizeof label);
                snprintf(err, 256, "%.100s: %.150s", label, t->err);
                goto fail;
            }
            if (gc == 0 && ch[0] >= 1 && ch[1] >= 1 && ch[2] >= 1)
                memcpy(&jobs[i].x[GEMM_COL_TILE_N], ch, sizeof ch);
        }
        if (t->idle && busy > CALIB_SETTLE_MIN)
            t->idle(t, fmin(CALIB_SETTLE_FRAC * busy, CALIB_SETTLE_MAX));
        busy = 0;
        double ts = 0;
        int iters = 0, reps = 0;
        jw[i] = now_s();
        int mr = calib_measure(t, o, j, &ts, &iters, &reps);
        jw[njobs + i] = now_s();
        if (mr == 0)
            busy = ts * (2.0 + (double)iters * reps); /* warm-up, estimate, the timings */
        jw[2 * njobs + i] = busy;
        if (o->points_log) jw[3 * njobs + i] = clock_now(t);
        job_label(j, label, sizeof label);
        if (mr < 0 && o->keep_going) {
            nfail++;
            if (progress)
                fprintf(progress, "%scalib: FAILED: %s: %s\n", tty ? "\n" : "", label, t->err);
            t->err[0] = 0;
            if (++inarow >= 8) {
                if (progress)
                    fprintf(progress, "calib: 8 failures in a row; measuring stops here\n");
                nbudget = njobs - i - 1;
                break;
            }
            continue;
        }
        if (mr < 0) {
            snprintf(err, 256, "%.100s: %.150s", label, t->err);
            goto fail;
        }
        inarow = 0;
        if (mr > 0) {
            nskip++;
            if (progress)
                fprintf(progress, "%scalib: skipped (not supported here): %s%s%s\n", tty ? "\n" : "", label,
                        t->err[0] ? ": " : "", t->err);
            t->err[0] = 0;
            continue;
        }
        jt[i] = ts;
        if (pt_add(&pb[j->law], ls->ncols, j->x, ts, i) < 0) {
            snprintf(err, 256, "out of memory");
            goto fail;
        }
        el = now_s() - t0;
        if (progress && !o->quiet && (tty || el - last_print >= 3.0 || i + 1 == njobs)) {
            char e1[32], e2[32];
            fmt_dur(el, e1, sizeof e1);
            fmt_dur(el / (i + 1) * (njobs - i - 1), e2, sizeof e2);
            fprintf(progress, "%s[%4d/%4d] %3d%%  %-64.64s %10.4f ms  (%dx%d)  %s, eta %s%s",
                    tty ? "\r" : "", i + 1, njobs, (int)(100.0 * (i + 1) / njobs), label, ts * 1e3, reps,
                    iters, e1, e2, tty ? "\033[K" : "\n");
            fflush(progress);
            last_print = el;
        }
    }
    if (tty && !o->quiet)
        fputc('\n', progress);

    /* the second look at the points that stand out (calib.h), before anything uses them */
    int nrecheck = 0;
    if (!o->no_recheck && nbudget == 0) {
        profile_t hwp;
        memset(&hwp, 0, sizeof hwp);
        t->describe(t, &hwp);
        kernel_facts(&hwp);
        cost_hw_t hw = cost_hw_of(&hwp);
        for (int l = 0; l < NLAWS; l++) {
            int n = recheck_law(o, t, m, &r, &hw, l, jobs, jt, &pb[l], progress);
            if (n < 0) {
                snprintf(err, 256, "second look at %s: %.200s", law_spec(l)->name, t->err);
                goto fail;
            }
            nrecheck += n;
        }
    }

    if (pl) {
        fprintf(pl, "law,point,t_s,sm_clock_mhz,wall_start_s,wall_end_s,busy_s\n");
        for (int i = 0; i < njobs; i++) {
            if (!(jt[i] > 0)) continue;
            char label[160];
            job_label(&jobs[i], label, sizeof label);
            for (char *c = label; *c; c++)
                if (*c == ',' || *c == '"') *c = ' ';
            fprintf(pl, "%s,%s,%.9g,%.6g,%.6f,%.6f,%.6g\n", law_spec(jobs[i].law)->name, label, jt[i],
                    jw[3 * njobs + i], jw[i] - t0, jw[njobs + i] - t0, jw[2 * njobs + i]);
        }
        int bad = ferror(pl);
        bad |= fclose(pl) != 0;
        pl = NULL;
        if (bad) {
            snprintf(err, 256, "%.120s: %s", o->points_log, strerror(errno ? errno : EIO));
            goto fail;
        }
    }

    /* the card under sustained load (calib/sustain.h), over the points just measured */
    calib_sustain_t sus;
    memset(&sus, 0, sizeof sus);
    if (!o->no_sustain && !o->smoke && (!o->only || o->sustain) && nbudget == 0) {
        if (calib_sustain(t, jobs, jt, njobs, NLAWS < SUSTAIN_MAX_LAWS ? NLAWS : SUSTAIN_MAX_LAWS, &sus, progress) < 0) {
            snprintf(err, 256, "sustained-load probes: %.200s", t->err);
            goto fail;
        }
        if (!sus.ok && progress)
            fprintf(progress, "calib: sustained-load probes skipped: %s\n", sus.why);
    }
    if (o->preload_study && nbudget == 0
        && calib_preload_study(t, jobs, jt, njobs, NLAWS < SUSTAIN_MAX_LAWS ? NLAWS : SUSTAIN_MAX_LAWS, progress) < 0) {
        snprintf(err, 256, "preload study: %.200s", t->err);
        goto fail;
    }

    /* assemble */
    t->describe(t, out);
    kernel_facts(out);
    if (sus.ok) {
        out->has_sustained = 1;
        out->clock_cold_mhz = sus.clock_cold;
        out->clock_hot_mhz = sus.clock_hot;
        out->tau_up_s = sus.tau_up;
        out->tau_down_s = sus.tau_down;
        if (sus.tau_up_runs > 0 && sus.tau_up_runs <= 10) out->tau_up_runs_s = sus.tau_up_runs;
        /* the traces' range of each, where two or more resolved one: rescore's calib band */
        if (out->tau_up_runs_s > 0 && sus.ntau_up_runs >= 2 && sus.tau_up_runs_range[0] > 0
            && sus.tau_up_runs_range[1] <= 10) {
            out->tau_up_runs_range_s[0] = sus.tau_up_runs_range[0];
            out->tau_up_runs_range_s[1] = sus.tau_up_runs_range[1];
        }
        if (sus.ntau_down >= 2 && sus.tau_down_range[0] > 0 && sus.tau_down_range[1] <= 10) {
            out->tau_down_range_s[0] = sus.tau_down_range[0];
            out->tau_down_range_s[1] = sus.tau_down_range[1];
        }
        /* the same spans by the SMs' counters, the step stamps' meter: a pair that loads back */
        if (isfinite(sus.stamp_cold) && isfinite(sus.stamp_hot) && sus.stamp_hot > 0 && sus.stamp_hot < sus.stamp_cold
            && sus.stamp_cold < 1e5) {
            out->stamp_cold_mhz = sus.stamp_cold;
            out->stamp_hot_mhz = sus.stamp_hot;
        }
        out->ncurve = sus.ncurve < PROF_MAX_CURVE ? sus.ncurve : PROF_MAX_CURVE;
        for (int q = 0; q < out->ncurve; q++)
            for (int c = 0; c < 3; c++) out->curve[q][c] = sus.curve[q][c];
        /* recorded, not priced by (calib/sustain.h 6. and 7.); a value outside the profile's
         * range is left out, so what is written loads back */
        if (sus.has_chot && sus.chot[3] >= 0.5 && sus.chot[3] <= 5) {
            out->has_chot = 1;
            for (int c = 0; c < 4; c++) out->chot[c] = sus.chot[c];
        }
        if (sus.has_ehot && sus.ehot[1] >= 0.5 && sus.ehot[1] <= 5) {
            out->has_ehot = 1;
            out->ehot[0] = sus.ehot[0], out->ehot[1] = sus.ehot[1];
        }
        _Static_assert(SUSTAIN_GPROBE_COLS == sizeof out->gprobe[0] / sizeof out->gprobe[0][0]
                       && SUSTAIN_GPROBE_MAX <= PROF_MAX_GPROBE, "calib's GEMM probes fit the profile's");
        for (int q = 0; q < sus.ngprobe; q++) {   /* rising times (sustain.c sorts them), in range */
            const double *row = sus.gprobe[q];
            if (!(row[3] > 0 && row[3] <= 10 && row[4] >= 0.5 && row[4] <= 5 && row[5] >= 0.5 && row[5] <= 5)
                || (out->ngprobe && !(row[3] > out->gprobe[out->ngprobe - 1][3])))
                continue;
            for (int c = 0; c < SUSTAIN_GPROBE_COLS; c++) out->gprobe[out->ngprobe][c] = row[c];
            out->ngprobe++;
        }
        _Static_assert(SUSTAIN_INTER_COLS == sizeof out->inter[0] / sizeof out->inter[0][0],
                       "calib_sustain_t's interleave rows and the profile's have the same columns");
        for (int q = 0; q < sus.ninter && out->ninter < PROF_MAX_INTER; q++) {
            const double *row = sus.inter[q];
            if (!(row[1] <= 1000 && row[4] >= 0.5 && row[4] <= 5 && row[5] >= 0.5 && row[5] <= 5)) continue;
            for (int c = 0; c < SUSTAIN_INTER_COLS; c++) out->inter[out->ninter][c] = row[c];
            if (!(row[6] >= 0 && row[6] <= 2)) out->inter[out->ninter][6] = 0;   /* not a duty: not measured */
            out->ninter++;
        }
    }
    snprintf(out->model, sizeof out->model, "%s", m->name);
    out->tp = o->tp;
    /* the envelope: the per-rank attention shape the grid measured (its points' ranges are
     * the rest of it, profile.h) */
    out->has_envelope = 1;
    out->env_tp = o->tp;
    out->env_q_heads = r.q_heads;
    out->env_kv_heads = r.kv_heads;
    out->env_head_dim = m->head_dim;
    utc_date(out->date, sizeof out->date);
    snprintf(out->revision, sizeof out->revision, "%s", PACESIM_REV);
    snprintf(out->method, sizeof out->method,
             "calib %s grid: CUDA events around batches of back-to-back runs (>= %.1f ms a timing), "
             "median of %d timings (%d for runs > %.0f ms) after a warm-up; rotated buffer sets, random data; "
             "%d points, %d unsupported, %d failed, %d cut by the time budget; %d re-timed on a second look "
             "(off the first fit by > %.0fx its median error and >= %.0f%%: median of three timings)",
             o->smoke ? "smoke" : "default", o->min_batch_s * 1e3, o->repeats, o->long_repeats,
             o->long_point_s * 1e3, njobs - nskip - nbudget - nfail, nskip, nfail, nbudget, nrecheck,
             CALIB_RECHECK_FACTOR, 100 * CALIB_RECHECK_MIN);
    for (int l = 0; l < NLAWS; l++) {
        const calib_law_spec_t *ls = law_spec(l);
        if (pb[l].n == 0)
            continue;
        prof_law_t law;
        prof_law_init(&law, law_form(ls->law));
        if (ls->law == LAW_GEMM && kmap) {
            law.nkern = nkmap;
            law.kern = kmap;
        }
        snprintf(law.provenance, sizeof law.provenance, "measured by calib on %s, %s, tp %d (%d q/%d kv heads, %d GDN v heads): %s",
                 out->gpu, out->date, o->tp, r.q_heads, r.kv_heads, r.gdn_v_heads, ls->what);
        law.npts = pb[l].n;
        law.pts = pb[l].pts;
        if (sus.ok && l < SUSTAIN_MAX_LAWS && isfinite(sus.hot[l]) && isfinite(sus.heat[l])) {
            law.has_sustained = 1;   /* the profile's range: a probe outside it is clamped */
            law.hot = fmin(5.0, fmax(0.5, sus.hot[l]));
            law.heat = sus.heat[l];
        }
        cost_hw_t hw = cost_hw_of(out);
        if (fit_law_hw(&law, m, &r, &hw) < 0) {
            snprintf(err, 256, "%s: the fit failed (%d points)", ls->name, law.npts);
            goto fail;
        }
        if (prof_put(out, &law) < 0) {
            snprintf(err, 256, "out of memory");
            goto fail;
        }
    }
    /* the engine's per-step host overhead is not a kernel: calib cannot time it */
    if (!prof_find(out, "step")) {
        prof_law_t law;
        prof_law_init(&law, law_form(LAW_STEP));
        snprintf(law.provenance, sizeof law.provenance,
                 "not measured: the serving engine's per-step host overhead is no kernel calib can time; "
                 "0 here, set it from an engine trace of this GPU");
        if (prof_put(out, &law) < 0) {
            snprintf(err, 256, "out of memory");
            goto fail;
        }
    }
    out->calib_seconds = now_s() - t0;
    rc = nfail;
fail:
    if (rc < 0)
        prof_free(out);
    for (int l = 0; l < NLAWS; l++) {
        free(pb[l].pts);
        free(pb[l].job);
    }
    free(kmap);
    if (pl) fclose(pl);
    free(jobs);
    free(jt);
    free(jw);
    return rc;
}

/* The note a refit leaves in a law's provenance (replaced, not repeated, by the next). */
#define REFIT_NOTE "; law refit from these points by calib --refit at revision "

int calib_refit(profile_t *p, const model_t *m, char err[256])
{
    model_rank_t r;
    if (model_rank(m, p->tp, &r) < 0) {
        snprintf(err, 256, "tp %d does not divide %s's heads", p->tp, m->name);
        return -1;
    }
    cost_hw_t hw = cost_hw_of(p);
    for (int i = 0; i < p->nlaws; i++) {
        prof_law_t *l = &p->laws[i];
        if (l->npts == 0)
            continue; /* figures or assumptions, not points: nothing to refit */
        if (law_ncoef(l->name) < 1) {
            snprintf(err, 256, "%s: no such law in this revision", l->name);
            return -1;
        }
        if (fit_law_hw(l, m, &r, &hw) < 0) {
            snprintf(err, 256, "%s: the fit failed (%d points)", l->name, l->npts);
            return -1;
        }
        char *note = strstr(l->provenance, REFIT_NOTE);
        if (note)
            *note = 0;
        size_t len = strlen(l->provenance);
        if (len + strlen(REFIT_NOTE) + strlen(PACESIM_REV) < sizeof l->provenance)
            snprintf(l->provenance + len, sizeof l->provenance - len, "%s%s", REFIT_NOTE, PACESIM_REV);
    }
    return 0;
}

/* What calib_merge does with b's law lb: 1 merge it as attention points keyed by their
 * shape facts, 2 as gemm points keyed by (n, k, weight bytes), 0 leave it out. */
static int merge_kind(const prof_law_t *lb)
{
    const law_form_t *f = law_find(lb->name);
    if (f && f->shape_facts && f->family != LF_GEMM && f->family != LF_VARLEN && law_has_facts(f, lb->ncols))
        return 1;
    if (f && f->family == LF_GEMM && lb->ncols > GEMM_COL_WB) return 2;
    return 0;
}

/* b's gemm kernel ranges of the shapes la's do not hold, appended to la's (a shape's rows stay
 * consecutive).  0, or -1 out of memory (la as it was). */
static int merge_kernels(prof_law_t *la, const prof_law_t *lb)
{
    if (!lb->nkern) return 0;
    double *kern = malloc((size_t)(la->nkern + lb->nkern) * PROF_KERN_COLS * sizeof *kern);
    if (!kern) return -1;
    if (la->nkern) memcpy(kern, la->kern, (size_t)la->nkern * PROF_KERN_COLS * sizeof *kern);
    int n = la->nkern, lo, hi;
    for (int i = 0; i < lb->nkern && n < PROF_MAX_KERN; i++) {
        const double *v = lb->kern + (size_t)i * PROF_KERN_COLS;
        if (!prof_kernel_block(la, v[KERN_N], v[KERN_K], v[KERN_WB], &lo, &hi))
            memcpy(kern + (size_t)n++ * PROF_KERN_COLS, v, PROF_KERN_COLS * sizeof *v);
    }
    free(la->kern);
    la->kern = kern;
    la->nkern = n;
    return 0;
}

/* Whether la (may be NULL) already holds the shape of b's row: the same heads and head size
 * (kind 1), the same n, k and weight bytes (kind 2). */
static int merge_has_shape(const prof_law_t *la, const double *row, int kind)
{
    for (int k = 0; la && k < la->npts; k++) {
        const double *y = la->pts + (size_t)k * la->ncols;
        if (kind == 1 ? row[ATTN_COL_Q_HEADS] == y[ATTN_COL_Q_HEADS] && row[ATTN_COL_KV_HEADS] == y[ATTN_COL_KV_HEADS] &&
                            row[ATTN_COL_HEAD_DIM] == y[ATTN_COL_HEAD_DIM]
                      : row[GEMM_COL_N] == y[GEMM_COL_N] && row[GEMM_COL_K] == y[GEMM_COL_K] &&
                            row[GEMM_COL_WB] == y[GEMM_COL_WB])
            return 1;
    }
    return 0;
}

#define MERGE_NOTE "; with points of "

int calib_merge(profile_t *a, const profile_t *b, FILE *note, char err[256])
{
    if (strcmp(a->gpu, b->gpu) || a->sms != b->sms || a->tp != b->tp) {
        snprintf(err, 256, "%.60s was measured on %.40s (%d SMs) at tp %d, %.60s on %.40s (%d SMs) at tp %d: "
                 "merge the profiles of one card and TP degree", b->path, b->gpu, b->sms, b->tp, a->path, a->gpu,
                 a->sms, a->tp);
        return -1;
    }
    /* the checks first, so that a refusal leaves a as it was */
    for (int li = 0; li < b->nlaws; li++) {
        const prof_law_t *lb = &b->laws[li], *la = prof_find(a, lb->name);
        int kind = merge_kind(lb), keep = 0;
        if (!kind || lb->npts == 0) continue;
        if (la && la->ncols != lb->ncols) {
            snprintf(err, 256, "%s: %.60s's points have %d columns, %.60s's %d", lb->name, b->path, lb->ncols,
                     a->path, la->ncols);
            return -1;
        }
        for (int i = 0; i < lb->npts; i++) {
            const double *row = lb->pts + (size_t)i * lb->ncols;
            int has = merge_has_shape(la, row, kind);
            if (has && kind == 1) {
                snprintf(err, 256, "%s: %.60s holds points of %g q / %g kv heads, head_dim %g, as %.60s does: "
                         "merge calibrations of other shapes", lb->name, b->path, row[ATTN_COL_Q_HEADS],
                         row[ATTN_COL_KV_HEADS], row[ATTN_COL_HEAD_DIM], a->path);
                return -1;
            }
            keep += !has;
        }
        if ((la ? la->npts : 0) + keep > PROF_MAX_POINTS) {
            snprintf(err, 256, "%s: %d points merged, more than a law may hold (%d)", lb->name,
                     (la ? la->npts : 0) + keep, PROF_MAX_POINTS);
            return -1;
        }
    }
    int taken = 0;
    for (int li = 0; li < b->nlaws; li++) {
        const prof_law_t *lb = &b->laws[li];
        int kind = merge_kind(lb), nc = lb->ncols;
        if (lb->npts == 0) continue;
        if (!kind) {
            if (note)
                fprintf(note, "calib: --merge: %s's %d %s points left out (not keyed by shape: %s's stay)\n",
                        b->path, lb->npts, lb->name, a->path);
            continue;
        }
        prof_law_t *la = (prof_law_t *)prof_find(a, lb->name);
        int base = la ? la->npts : 0, keep = 0;
        double *pts = malloc((size_t)(base + lb->npts) * nc * sizeof *pts);
        if (!pts) {
            snprintf(err, 256, "out of memory");
            return -1;
        }
        if (la) memcpy(pts, la->pts, (size_t)base * nc * sizeof *pts);
        for (int i = 0; i < lb->npts; i++) {
            const double *row = lb->pts + (size_t)i * nc;
            if (!merge_has_shape(la, row, kind)) memcpy(pts + (size_t)(base + keep++) * nc, row, (size_t)nc * sizeof *pts);
        }
        if (keep < lb->npts && note)
            fprintf(note, "calib: --merge: %s's %d %s points of shapes %s holds left out\n", b->path,
                    lb->npts - keep, lb->name, a->path);
        if (!keep) {
            free(pts);
            continue;
        }
        int added = !la;
        if (added) {            /* b's law as it is, its provenance b's */
            prof_law_t nl = *lb;
            nl.npts = 0;
            nl.pts = NULL;
            if (prof_put(a, &nl) < 0) {
                free(pts);
                snprintf(err, 256, "out of memory");
                return -1;
            }
            la = (prof_law_t *)prof_find(a, lb->name);
        }
        free(la->pts);
        la->pts = pts;
        la->npts = base + keep;
        taken += keep;
        if (kind == 2 && !added && merge_kernels(la, lb) < 0) {
            snprintf(err, 256, "out of memory");
            return -1;
        }
        char *refit = strstr(la->provenance, REFIT_NOTE);   /* a refit follows: its note goes */
        if (refit) *refit = 0;
        size_t len = strlen(la->provenance);
        if (!added)
            snprintf(la->provenance + len, sizeof la->provenance - len, "%s%s (%s, revision %s)", MERGE_NOTE, b->model,
                     b->date, b->revision);
    }
    return taken;
}

void calib_print_fits(const profile_t *p, FILE *f)
{
    fprintf(f, "%-26s %6s %9s %9s  %s\n", "law", "points", "median%", "max%", "coefficients");
    for (int i = 0; i < p->nlaws; i++) {
        const prof_law_t *l = &p->laws[i];
        if (l->npts == 0) {
            fprintf(f, "%-26s %6d %9s %9s  (not measured)\n", l->name, 0, "-", "-");
            continue;
        }
        fprintf(f, "%-26s %6d %9.2f %9.2f ", l->name, l->npts, 100 * l->fit_median_rel, 100 * l->fit_max_rel);
        for (int c = 0; c < l->ncoef; c++)
            fprintf(f, " %.4g", l->coef[c]);
        fputc('\n', f);
    }
}

int calib_print_residuals(const profile_t *p, const model_t *m, int n, const char *only, FILE *f, char err[256])
{
    model_rank_t r;
    calib_opts_t sel;
    calib_opts_default(&sel);
    sel.only = only;
    if (model_rank(m, p->tp, &r) < 0) {
        snprintf(err, 256, "tp %d does not divide %s's heads", p->tp, m->name);
        return -1;
    }
    cost_hw_t hw = cost_hw_of(p);
    fprintf(f, "residuals: each law's %d points farthest from its fit, error = (fitted - measured) / measured\n", n);
    for (int i = 0; i < p->nlaws; i++) {
        const prof_law_t *l = &p->laws[i];
        if (l->npts == 0 || !law_selected(&sel, l->name))
            continue;
        fit_resid_t *res = malloc((size_t)l->npts * sizeof *res);
        if (!res) {
            snprintf(err, 256, "out of memory");
            return -1;
        }
        if (fit_law_residuals(l, m, &r, &hw, res) < 0) {
            snprintf(err, 256, "%s: cannot compute its residuals", l->name);
            free(res);
            return -1;
        }
        fprintf(f, "%s (%d points, median %.2f%%, max %.2f%%)\n  %5s", l->name, l->npts, 100 * l->fit_median_rel,
                100 * l->fit_max_rel, "point");
        for (int c = 0; c + 1 < l->ncols; c++)
            fprintf(f, " %9s", l->cols[c]);
        fprintf(f, " %12s %12s %8s\n", "measured_us", "fitted_us", "error");
        for (int k = 0; k < n && k < l->npts; k++) {
            const double *row = l->pts + (size_t)res[k].index * l->ncols;
            fprintf(f, "  %5d", res[k].index);
            for (int c = 0; c + 1 < l->ncols; c++)
                fprintf(f, " %9.10g", row[c]);
            fprintf(f, " %12.2f %12.2f %+7.2f%%\n", 1e6 * res[k].t, 1e6 * res[k].pred, 100 * res[k].rel);
        }
        free(res);
    }
    return 0;
}

/* ---- the command line ----------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: calib --model models/<m>.yaml [--tp N] --out calib/profiles/<gpu>.yaml\n"
            "             [--smoke] [--only law[,law...]] [--repeats N] [--budget-s S] [--keep-going] [--no-sustain]\n"
            "             [--sustain] [--no-recheck] [--quiet] [--varlen] [--moe E,TOPK,WIDTH] [--points-log F.csv]\n"
            "             [--preload-study]\n"
            "       calib --refit IN.yaml [--merge B.yaml] --model models/<m>.yaml [--out OUT.yaml]\n"
            "             [--residuals N [--only law,...]]\n"
            "Times this repo's attention kernels, cuBLAS GEMMs of the model's per-rank shapes and\n"
            "the GDN / elementwise proxies on the GPU at hand, fits the cost laws and writes the\n"
            "profile.  --only keeps laws whose names start with one of the prefixes.  A point far\n"
            "off its law's first fit is timed twice more and keeps the median of its three timings\n"
            "(--no-recheck: not).  --varlen adds the varlen kernel's mixed batches (attn.varlen.fp16),\n"
            "--moe E,TOPK,WIDTH the expert GEMMs of E experts, top-TOPK routing, WIDTH wide experts\n"
            "(gemm.moe.fp16, per rank WIDTH / tp; a model with moe: gives them without --moe).\n"
            "--sustain runs the sustained-load probes with --only too (it needs attn.decode_xqa.fp16\n"
            "and gemm among the laws).  --points-log writes each point as timed (law, shape, seconds,\n"
            "the SM clock read right after it, its wall start and end, its time on the card) as CSV.\n"
            "--preload-study times each law's probes right after rests and loads of known kinds and\n"
            "prints them beside the grid's times (calib/sustain.h; for studies of the power limit).\n"
            "--refit needs no GPU: it refits every law of IN that has points from those points\n"
            "(this revision's law forms, IN's SMs and ceilings, the model at IN's TP degree) and\n"
            "writes OUT (IN may be OUT); points and metadata are kept as they are.  --residuals N\n"
            "lists each law's N points farthest from the refit law (shape, measured, fitted,\n"
            "error), --only limiting it to some laws; without --out nothing is written.  --merge B\n"
            "first adds B's points of other shapes (attention laws with their heads and head size,\n"
            "gemm by (n, k)) from a calibration of another model on the same card and TP degree, so\n"
            "one profile measures both models' attention and GEMMs (calib_merge, calib.h).\n");
}

/* calib --refit: load, check the model and TP against the profile's, refit, save. */
static int refit_main(const char *in, const char *merge, const char *out, const model_t *m, int tp, int residuals,
                      const char *only)
{
    profile_t p;
    char perr[PROF_ERR_MAX], err[256];
    if (prof_load_any(in, &p, perr) < 0) {
        fprintf(stderr, "calib: %s\n", perr);
        return 2;
    }
    if (strcmp(p.model, m->name) || (tp && tp != p.tp)) {
        fprintf(stderr, "calib: %s was measured for %s at tp %d, not %s at tp %d\n", in, p.model, p.tp, m->name,
                tp ? tp : p.tp);
        prof_free(&p);
        return 2;
    }
    if (merge) {
        profile_t b;
        if (prof_load_any(merge, &b, perr) < 0) {
            fprintf(stderr, "calib: %s\n", perr);
            prof_free(&p);
            return 2;
        }
        int n = calib_merge(&p, &b, stderr, err);
        if (n < 0) {
            fprintf(stderr, "calib: --merge: %s\n", err);
            prof_free(&b);
            prof_free(&p);
            return 2;
        }
        printf("calib: merged %d points of %s (%s at tp %d) into %s\n", n, merge, b.model, b.tp, in);
        prof_free(&b);
    }
    if (calib_refit(&p, m, err) < 0) {
        fprintf(stderr, "calib: %s: %s\n", in, err);
        prof_free(&p);
        return 1;
    }
    printf("calib: refit %s (%s, %s at tp %d) from its points\n", in, p.gpu, p.model, p.tp);
    calib_print_fits(&p, stdout);
    if (residuals > 0 && calib_print_residuals(&p, m, residuals, only, stdout, err) < 0) {
        fprintf(stderr, "calib: %s: %s\n", in, err);
        prof_free(&p);
        return 1;
    }
    if (!out) {
        prof_free(&p);
        return 0;
    }
    if (prof_save(out, &p) < 0) {
        fprintf(stderr, "calib: %s: %s\n", out, strerror(errno));
        prof_free(&p);
        return 1;
    }
    printf("calib: wrote %s\n", out);
    prof_free(&p);
    return 0;
}

int calib_main(int argc, char **argv, calib_timer_ctor mk)
{
    calib_opts_t o;
    const char *refit = NULL, *merge = NULL;
    int tp_set = 0, residuals = 0;
    calib_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--smoke")) {
            o.smoke = 1;
        } else if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--preload-study")) {
            o.preload_study = 1;
        } else if (!strcmp(a, "--points-log") && v) {
            o.points_log = v;
            i++;
        } else if (!strcmp(a, "--keep-going")) {
            o.keep_going = 1;
        } else if (!strcmp(a, "--sustain")) {
            o.sustain = 1;
        } else if (!strcmp(a, "--no-sustain")) {
            o.no_sustain = 1;
        } else if (!strcmp(a, "--no-recheck")) {
            o.no_recheck = 1;
        } else if (!strcmp(a, "--varlen")) {
            o.varlen = 1;
        } else if (!v) {                /* an unknown last argument is no option missing its value */
            static const char *const valued[] = { "--model", "--out", "--refit", "--merge", "--only", "--residuals",
                                                  "--tp", "--repeats", "--moe", "--budget-s", NULL };
            int known = 0;
            for (int k = 0; valued[k]; k++) known |= !strcmp(a, valued[k]);
            if (known) fprintf(stderr, "calib: %s: missing value\n", a);
            else fprintf(stderr, "calib: unknown argument \"%s\"\n", a);
            usage(stderr);
            return 2;
        } else if (!strcmp(a, "--model")) {
            o.model_path = v, i++;
        } else if (!strcmp(a, "--out")) {
            o.out_path = v, i++;
        } else if (!strcmp(a, "--refit")) {
            refit = v, i++;
        } else if (!strcmp(a, "--merge")) {
            merge = v, i++;
        } else if (!strcmp(a, "--only")) {
            o.only = v, i++;
        } else if (!strcmp(a, "--residuals")) {
            errno = 0;
            long n = strtol(v, &end, 10);
            if (errno || *end || n < 1 || n > 100000) {
                fprintf(stderr, "calib: --residuals: expected a number of points >= 1, got \"%s\"\n", v);
                return 2;
            }
            residuals = (int)n;
            i++;
        } else if (!strcmp(a, "--tp") || !strcmp(a, "--repeats")) {
            errno = 0;
            long n = strtol(v, &end, 10);
            if (errno || *end || n < 1 || n > 64) {
                fprintf(stderr, "calib: %s: expected an integer in 1..64, got \"%s\"\n", a, v);
                return 2;
            }
            if (!strcmp(a, "--tp"))
                o.tp = (int)n, tp_set = 1;
            else
                o.repeats = o.long_repeats = (int)n;
            i++;
        } else if (!strcmp(a, "--moe")) {
            long e = 0, k = 0, w = 0;
            int used = 0;
            if (sscanf(v, "%ld,%ld,%ld%n", &e, &k, &w, &used) != 3 || v[used] || e < 1 || e > LAW_MOE_MAX_EXPERTS ||
                k < 1 || k > e || w < 1 || w > (1L << 20)) {
                fprintf(stderr, "calib: --moe: expected EXPERTS,TOPK,WIDTH (1 <= TOPK <= EXPERTS <= %d), got \"%s\"\n",
                        LAW_MOE_MAX_EXPERTS, v);
                return 2;
            }
            o.moe_experts = (int)e, o.moe_topk = (int)k, o.moe_width = w;
            i++;
        } else if (!strcmp(a, "--budget-s")) {
            errno = 0;
            double d = strtod(v, &end);
            if (errno || *end || !(d >= 0)) {
                fprintf(stderr, "calib: --budget-s: expected seconds >= 0, got \"%s\"\n", v);
                return 2;
            }
            o.budget_s = d;
            i++;
        } else {
            fprintf(stderr, "calib: unknown argument \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (merge && !refit) {
        fprintf(stderr, "calib: --merge needs --refit (the profile to merge into)\n");
        usage(stderr);
        return 2;
    }
    if (residuals && !refit) {
        fprintf(stderr, "calib: --residuals needs --refit\n");
        usage(stderr);
        return 2;
    }
    if (!o.model_path || (!o.out_path && !residuals)) {
        usage(stderr);
        return 2;
    }
    gsl_set_error_handler_off();

    model_t m;
    char serr[SCN_ERR_MAX], err[256];
    if (scn_load_model(o.model_path, &m, serr) < 0) {
        fprintf(stderr, "calib: %s\n", serr);
        return 2;                       /* a bad --model is bad input */
    }
    if (refit)
        return refit_main(refit, merge, o.out_path, &m, tp_set ? o.tp : 0, residuals, o.only);
    model_rank_t r;
    if (model_rank(&m, o.tp, &r) < 0) {
        fprintf(stderr, "calib: --tp %d does not divide %s's heads\n", o.tp, m.name);
        return 2;
    }
    calib_opts_model(&o, &m);
    if (o.moe_width > 0 && o.moe_width % o.tp) {
        fprintf(stderr, "calib: --tp %d does not divide the expert width %ld\n", o.tp, o.moe_width);
        return 2;
    }
    calib_timer_t *t = mk(err);
    if (!t) {
        fprintf(stderr, "calib: %s\n", err);
        return 1;
    }
    profile_t p;
    int rc = calib_run(&o, t, &m, &p, stderr, err);
    t->destroy(t);
    if (rc < 0) {
        fprintf(stderr, "calib: %s\n", err);
        return 1;
    }
    int nfail = rc;
    snprintf(p.path, sizeof p.path, "%s", o.out_path);
    printf("calib: %s (%d SMs, %.0f GiB, %.0f MHz seen), %s at tp %d, %.1f s\n", p.gpu, p.sms, p.mem_gib,
           p.sm_clock_mhz, p.model, p.tp, p.calib_seconds);
    calib_print_fits(&p, stdout);
    if (prof_save(o.out_path, &p) < 0) {
        fprintf(stderr, "calib: %s: %s\n", o.out_path, strerror(errno));
        prof_free(&p);
        return 1;
    }
    printf("calib: wrote %s\n", o.out_path);
    prof_free(&p);
    if (nfail) {
        fprintf(stderr, "calib: %d points failed (see above); the profile holds the others\n", nfail);
        return 1;
    }
    return 0;
}
