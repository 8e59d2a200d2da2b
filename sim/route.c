/* route.c: per-row kernel routing of one step.  The rules are in route.h. */
#include <stdlib.h>
#include <string.h>
#include "route.h"

static const char *const route_names[ROUTE__N] = {
    "prefill-generic", "prefill-bm32", "decode-xqa", "decode-scalar", "fp8-bridge", "varlen",
};

const char *route_name(route_t r) { return (unsigned)r < ROUTE__N ? route_names[r] : "?"; }

const char *route_variant_name(kvariant_t v)
{
    switch (v) {
    case VAR_BM32_BN64: return "bm32bn64";
    case VAR_BM16_BN128: return "bm16bn128";
    case VAR_BM32_BN128: return "bm32bn128";
    case VAR_BM64_BN32: return "bm64bn32";
    default: return "-";
    }
}

void route_plan_init(route_plan_t *p) { memset(p, 0, sizeof *p); }

void route_plan_free(route_plan_t *p)
{
    free(p->calls);
    free(p->arena);
    memset(p, 0, sizeof *p);
}

/* Make room for ncalls calls and nseg segments; pointers into the arena are fixed up
 * by the caller after all segments are placed (we reserve before placing). */
static int plan_reserve(route_plan_t *p, int ncalls, int nseg)
{
    if (ncalls > p->cap_calls) {
        kcall_t *c = realloc(p->calls, (size_t)ncalls * sizeof *c);
        if (!c) return -1;
        p->calls = c;
        p->cap_calls = ncalls;
    }
    if (nseg > p->nseg_cap) {
        kseg_t *a = realloc(p->arena, (size_t)nseg * sizeof *a);
        if (!a) return -1;
        p->arena = a;
        p->nseg_cap = nseg;
    }
    return 0;
}

/* This repo's generic kernel's tile for a q-row: the low-smem BM=16 one for 1 < q < 32. */
static kvariant_t generic_variant(int q) { return q > 1 && q < ROUTE_BM32_MIN_Q ? VAR_BM16_BN128 : VAR_BM32_BN64; }

/* fp16 dispatch (fused_mha_forward_paged.cu, launcher_flash_attention_forward_paged<256>):
 * M == 1 -> generic; M >= 32 on the fast page -> BM32 phase; every other M > 1 -> the
 * low-smem kernel in the fork (this repo: generic BM32/BN64 for M >= 32). */
route_t route_prefill_kernel(const route_cfg_t *cfg, int q, int page, kvariant_t *variant)
{
    int fast_page = page == ROUTE_NATIVE_PAGE || (cfg->bm32_any_page && page % 16 == 0);
    if (q >= ROUTE_BM32_MIN_Q && fast_page) {
        *variant = VAR_BM32_BN128;
        return ROUTE_PREFILL_BM32;
    }
    *variant = cfg->fork_kernels && q > 1 ? VAR_BM16_BN128 : generic_variant(q);
    return ROUTE_PREFILL_GENERIC;
}

static kcall_t *new_call(route_plan_t *p)
{
    kcall_t *c = &p->calls[p->ncalls++];
    memset(c, 0, sizeof *c);
    c->segs = p->arena + p->nseg_used;
    return c;
}

static void add_prefill_call(const route_cfg_t *cfg, route_plan_t *p, const kseg_t *row)
{
    kcall_t *c = new_call(p);
    c->segs[0] = *row;
    c->nseg = 1;
    p->nseg_used++;
    if (kv_is_fp8(cfg->kv_dtype) && row->q >= ROUTE_BM32_MIN_Q) {
        /* bridge: expand the whole sequence to an fp16 workspace, run an fp16 kernel on it
         * (the fork: FA2 split-D dense for q >= 1024, _try_sm70_fa2_d256_prefill) */
        c->route = ROUTE_FP8_BRIDGE;
        c->kv_dtype = KV_FP16;
        c->page = cfg->fp8_bridge_page;
        c->bridge_tokens = row->seq_len;
        if (cfg->fork_kernels && row->q >= ROUTE_SPLITD_MIN_Q) c->variant = VAR_BM64_BN32;
        else route_prefill_kernel(cfg, row->q, c->page, &c->variant);
        return;
    }
    c->kv_dtype = cfg->kv_dtype;
    c->page = cfg->page;
    if (kv_is_fp8(cfg->kv_dtype)) {
        /* in-kernel dequantisation: the fork's fp8 instantiation is the generic BM32/BN64
         * kernel for every M; this repo's has the low-smem variant too */
        c->route = ROUTE_PREFILL_GENERIC;
        c->variant = cfg->fork_kernels ? VAR_BM32_BN64 : generic_variant(row->q);
    } else {
        c->route = route_prefill_kernel(cfg, row->q, cfg->page, &c->variant);
        /* use_sw_pipeline_qk/pv: page_block_size == 784 */
        c->pipelined = c->variant == VAR_BM16_BN128 && cfg->fork_kernels && cfg->page == ROUTE_NATIVE_PAGE;
    }
}

int route_grouped(const route_cfg_t *cfg, int q)
{
    if (!cfg->grouped_verify || !cfg->fork_kernels) return 0;
    if (cfg->grouped_verify == ROUTE_GROUPED_DRAFT) return q > 1;
    if (cfg->kv_dtype == KV_FP8_E5M2) return q == 8 || q == 16;
    return cfg->kv_dtype == KV_FP8_E4M3 && q >= 2 && q <= 8;
}

/* Append the token-wise expansion of row into the current decode call; a row the grouped
 * verifier takes stays one segment (its q tokens, one scan of its context). */
static inline void expand_into(const route_cfg_t *cfg, kcall_t *c, route_plan_t *p, const kseg_t *row)
{
    /* a one-token row (a decode row without drafts) is its own expansion */
    if (row->q == 1 || (row->q > 1 && route_grouped(cfg, row->q))) {
        c->segs[c->nseg++] = *row;
        p->nseg_used++;
        return;
    }
    for (int t = 0; t < row->q; t++) {
        kseg_t *s = &c->segs[c->nseg++];
        s->req = row->req;
        s->q = 1;
        s->seq_len = row->seq_len - row->q + 1 + t;
        p->nseg_used++;
    }
}

/* flash_attn_v100.py: XQA needs q_per_kv in (6, 8), or 4 with a hint >= 32768
 * (_flash_v100_decode); fp8_e5m2 also a hint >= DECODE_FP8_XQA_MIN_SEQ_LEN and no group 4;
 * the small-q batch (_smallq_decode_xqa_allowed) a hint >= SMALLQ_DECODE_XQA_MIN_SEQ_LEN
 * (fp8: at least the fp8 one), groups 6 and 8 only. */
int route_decode_xqa(const route_cfg_t *cfg, long maxlen, int smallq)
{
    int fp8 = kv_is_fp8(cfg->kv_dtype);
    if (cfg->kv_dtype == KV_FP8_E4M3) return 0;
    int g68 = cfg->group == 6 || cfg->group == 8;
    if (smallq) {
        long min = fp8 ? ROUTE_FP8_XQA_MIN_CTX : ROUTE_SMALLQ_XQA_MIN_CTX;
        return g68 && maxlen >= min;
    }
    int ok = g68 || (cfg->group == 4 && maxlen >= ROUTE_XQA_LONG_CTX);
    if (fp8) ok = ok && cfg->group != 4 && maxlen >= ROUTE_FP8_XQA_MIN_CTX;
    return ok;
}

/* maxlen: the longest segment of the call (a row's expansion ends at its own seq_len) */
static void finish_decode_call(const route_cfg_t *cfg, kcall_t *c, int smallq, long maxlen)
{
    c->kv_dtype = cfg->kv_dtype;
    c->page = cfg->page;
    c->variant = VAR_NONE;
    c->route = route_decode_xqa(cfg, maxlen, smallq) ? ROUTE_DECODE_XQA : ROUTE_DECODE_SCALAR;
}

int route_step(const route_cfg_t *cfg, const kseg_t *rows, int n, route_plan_t *out)
{
    long qsum = 0, maxlen = 0;
    int maxq = 0, minq = 1, any_ctx = 0;
    for (int i = 0; i < n; i++) {
        qsum += rows[i].q;
        if (rows[i].q > maxq) maxq = rows[i].q;
        if (rows[i].q < minq) minq = rows[i].q;
        if (rows[i].seq_len > rows[i].q) any_ctx = 1;
        if (rows[i].seq_len > maxlen) maxlen = rows[i].seq_len;
    }
    out->ncalls = 0;
    out->nseg_used = 0;
    if (plan_reserve(out, n + 1, (int)(qsum > n ? qsum : n) + n) < 0) return -1;
    if (n == 0) return 0;

    if (cfg->varlen) {                          /* rule 0: one varlen call */
        kcall_t *c = new_call(out);
        for (int i = 0; i < n; i++) {
            c->segs[c->nseg++] = rows[i];
            out->nseg_used++;
        }
        c->route = ROUTE_VARLEN;
        c->variant = VAR_NONE;
        c->kv_dtype = cfg->kv_dtype;
        c->page = cfg->page;
        return 0;
    }
    if (maxq <= cfg->smallq_max_q) {            /* rule 1: whole batch small-q */
        kcall_t *c = new_call(out);
        if (minq == 1 && maxq == 1) {           /* one-token rows: their own expansion */
            memcpy(c->segs, rows, (size_t)n * sizeof *rows);
            c->nseg = n;
            out->nseg_used += n;
        } else {
            /* a row of q < 1 expands to nothing: the call's longest segment is over the others */
            maxlen = 0;
            for (int i = 0; i < n; i++) {
                expand_into(cfg, c, out, &rows[i]);
                if (rows[i].q >= 1 && rows[i].seq_len > maxlen) maxlen = rows[i].seq_len;
            }
        }
        finish_decode_call(cfg, c, maxq > 1, maxlen);   /* q = 1 only: the uniform decode path */
        return 0;
    }
    /* rules 2 and 3: prefill-kernel calls, optionally pulling decode rows out */
    int pull = any_ctx && cfg->prefix_decode_rows;
    for (int i = 0; i < n; i++) {
        const kseg_t *r = &rows[i];
        if (pull && r->q >= 1 && r->q <= cfg->smallq_max_q && r->seq_len > r->q) continue;
        add_prefill_call(cfg, out, r);
    }
    if (pull) {
        kcall_t *c = NULL;
        maxlen = 0;
        for (int i = 0; i < n; i++) {
            const kseg_t *r = &rows[i];
            if (!(r->q >= 1 && r->q <= cfg->smallq_max_q && r->seq_len > r->q)) continue;
            if (!c) c = new_call(out);
            expand_into(cfg, c, out, r);
            if (r->seq_len > maxlen) maxlen = r->seq_len;
        }
        if (c) finish_decode_call(cfg, c, 0, maxlen);
    }
    return 0;
}
