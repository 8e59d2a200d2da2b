/* cost.c: the step decomposition -- what one engine step runs, as items each priced by
 * one law (cost.h), and the breakdown the prices add up in.
 *
 * cost_enumerate() is the only place that says what a step is made of: the profile model
 * (cost_profile.c), the analytic model (cost_analytic.c) and the GPU replay (replay_gpu.cu)
 * all price or run exactly its items.  Invariant: the items come in execution order, each
 * with count > 0, and every second of a price lands in exactly one breakdown bucket. */
#include <stdio.h>
#include "cost.h"

static void item_emit(cost_item_fn fn, void *ctx, int *rc, const cost_item_t *it)
{
    if (*rc == 0 && it->count > 0) *rc = fn(ctx, it);
}

/* An item of this kind, every other field 0, written field by field: a designated
 * initializer of the whole struct compiles to a block clear (rep stos) whose stores the
 * pricing's loads of the zero fields then wait on, ~15 items a step (the 100K bench ran 1.5x
 * slower).  Every field of cost.h's cost_item_t is cleared here: the size check below fails
 * when one is added, to be added here too. */
_Static_assert(sizeof(cost_item_t) == 144, "cost_item_t changed: clear its new fields in item_of()");
static inline cost_item_t item_of(cost_item_kind_t kind, double count, cost_part_t part)
{
    cost_item_t it;
    it.kind = kind;
    it.call = NULL;
    it.m = it.n = it.k = it.wb = 0;
    it.moe = 0;
    it.experts = it.tokens = it.seqs = 0;
    it.eager = it.eager_passes = it.resent_tokens = it.host_expansions = it.spec_resident = 0;
    it.bytes = 0;
    it.count = count;
    it.part = part;
    return it;
}

/* The plan's attention calls, `layers` times each (bridge calls: expansion + kernel). */
static void emit_plan(const route_plan_t *plan, double layers, cost_part_t part, cost_item_fn fn, void *ctx, int *rc)
{
    for (int i = 0; plan && i < plan->ncalls; i++) {
        const kcall_t *c = &plan->calls[i];
        cost_item_t it = item_of(CI_BRIDGE, layers, part);
        it.call = c;
        if (c->route == ROUTE_FP8_BRIDGE) item_emit(fn, ctx, rc, &it);
        it.kind = CI_ATTN;
        item_emit(fn, ctx, rc, &it);
    }
}

static void emit_gemm(double mm, double n, double k, double wb, double count, cost_part_t part, cost_item_fn fn,
                      void *ctx, int *rc)
{
    if (mm <= 0) return;
    cost_item_t it = item_of(CI_GEMM, count, part);
    it.m = mm;
    it.n = n;
    it.k = k;
    it.wb = wb;
    item_emit(fn, ctx, rc, &it);
}

/* A dense GEMM of g's tokens (g: item_of(CI_GEMM) with m and wb set, as emit_gemm makes it),
 * its n and k set: a layer's GEMMs share one item rather than clear one each. */
static inline void emit_gemm_nk(cost_item_t *g, double n, double k, cost_item_fn fn, void *ctx, int *rc)
{
    g->n = n;
    g->k = k;
    item_emit(fn, ctx, rc, g);
}

/* One sparse layer's MLP for mm tokens, `count` times: the router, the shared experts
 * (dense over every token), and the routed experts as a grouped GEMM -- the tokens spread
 * over the experts as law gemm.moe.fp16 spreads them (law_moe_counts: uniform, or Zipf by
 * moe_skew), experts with equal counts one item each (an expert that receives no token
 * reads no weight); the busiest group (moe 2) carries the layer's tokens for the law. */
static void emit_moe(const model_t *m, const model_rank_t *r, double mm, double count, cost_part_t part,
                     cost_item_fn fn, void *ctx, int *rc)
{
    double h = m->hidden, wb = m->weight_bytes_per_param;
    long spread[MODEL_MOE_MAX];
    if (mm <= 0) return;
    emit_gemm(mm, m->moe_experts, h, wb, count, part, fn, ctx, rc);
    if (m->moe_shared > 0) {
        emit_gemm(mm, (double)r->moe_shared_up_n, h, wb, count, part, fn, ctx, rc);
        emit_gemm(mm, h, (double)r->moe_shared_down_k, wb, count, part, fn, ctx, rc);
    }
    if (law_moe_counts((long)mm, m->moe_experts, m->moe_topk, m->moe_skew, spread) < 0) return;  /* model_check bounds them */
    for (int i = 0; i < m->moe_experts && *rc == 0;) {
        int j = i;
        while (j < m->moe_experts && spread[j] == spread[i]) j++;
        double t = (double)spread[i], g = j - i;
        if (t > 0) {
            cost_item_t it = item_of(CI_GEMM, g * count, part);
            it.moe = i == 0 ? 2 : 1;       /* the busiest group stands for the grouped call's launch */
            it.experts = g;
            it.tokens = mm;
            it.m = t;
            it.wb = wb;
            it.n = (double)r->moe_up_n;    /* gate + up */
            it.k = h;
            item_emit(fn, ctx, rc, &it);
            it.n = h;                      /* down */
            it.k = (double)r->moe_down_k;
            item_emit(fn, ctx, rc, &it);
        }
        i = j;
    }
}

/* One transformer layer's non-attention work for mm tokens of seqs sequences; the MLP
 * dense (mlp 1), sparse (2, emit_moe) or left to the caller (0). */
static void emit_layer(const model_t *m, const model_rank_t *r, int full_attn, int mlp, double mm, double seqs,
                       double count, cost_part_t part, cost_item_fn fn, void *ctx, int *rc)
{
    double h = m->hidden, wb = m->weight_bytes_per_param;
    if (mm <= 0) return;
    cost_item_t g = item_of(CI_GEMM, count, part);
    g.m = mm;
    g.wb = wb;
    if (full_attn) {
        emit_gemm_nk(&g, (double)r->attn_qkv_n, h, fn, ctx, rc);
        emit_gemm_nk(&g, h, (double)r->attn_o_k, fn, ctx, rc);
    } else {
        emit_gemm_nk(&g, (double)r->gdn_in_n, h, fn, ctx, rc);
        emit_gemm_nk(&g, h, (double)r->gdn_out_k, fn, ctx, rc);
        cost_item_t it = item_of(CI_GDN, count, part == CP_MTP ? CP_MTP : CP_GDN);
        it.tokens = mm;
        it.seqs = seqs;
        item_emit(fn, ctx, rc, &it);
    }
    if (mlp == 1) {
        emit_gemm_nk(&g, (double)r->mlp_up_n, h, fn, ctx, rc);
        emit_gemm_nk(&g, h, (double)r->mlp_down_k, fn, ctx, rc);
    } else if (mlp == 2) {
        emit_moe(m, r, mm, count, part, fn, ctx, rc);
    }
    cost_item_t el = item_of(CI_ELEM, count, part == CP_MTP ? CP_MTP : CP_ELEM);
    el.tokens = mm;
    item_emit(fn, ctx, rc, &el);
    if (r->tp > 1) {
        cost_item_t ar = item_of(CI_ALLREDUCE, 2 * count, part == CP_MTP ? CP_MTP : CP_ALLREDUCE);
        ar.bytes = mm * h * 2.0;
        item_emit(fn, ctx, rc, &ar);
    }
}

/* The plan took the decode-rows path (_run_prefill_prefix_decode_rows): a decode call
 * beside prefill-kernel calls. */
static int decode_rows_path(const route_plan_t *plan)
{
    int dec = 0, pre = 0;
    for (int i = 0; plan && i < plan->ncalls; i++) {
        route_t r = plan->calls[i].route;
        if (r == ROUTE_DECODE_XQA || r == ROUTE_DECODE_SCALAR) dec = 1;
        else pre = 1;
    }
    return dec && pre;
}

int cost_enumerate(const model_t *m, const model_rank_t *r, const cost_step_t *in, cost_item_fn fn, void *ctx)
{
    int rc = 0;
    double T = (double)in->tokens, seqs = in->rows, h = m->hidden, wb = m->weight_bytes_per_param;
    /* the main model: attention of every full-attention layer, then each layer's linear work */
    emit_plan(in->plan, m->n_full_attn, CP_ATTN, fn, ctx, &rc);
    if (m->n_moe == 0) {
        emit_layer(m, r, 1, 1, T, seqs, m->n_full_attn, CP_LINEAR, fn, ctx, &rc);
        emit_layer(m, r, 0, 1, T, seqs, m->n_gdn, CP_LINEAR, fn, ctx, &rc);
    } else {
        /* which layers are sparse is independent of the attention type: the MLPs apart */
        emit_layer(m, r, 1, 0, T, seqs, m->n_full_attn, CP_LINEAR, fn, ctx, &rc);
        emit_layer(m, r, 0, 0, T, seqs, m->n_gdn, CP_LINEAR, fn, ctx, &rc);
        if (m->n_layers > m->n_moe) {
            emit_gemm(T, (double)r->mlp_up_n, h, wb, m->n_layers - m->n_moe, CP_LINEAR, fn, ctx, &rc);
            emit_gemm(T, h, (double)r->mlp_down_k, wb, m->n_layers - m->n_moe, CP_LINEAR, fn, ctx, &rc);
        }
        if (T > 0) emit_moe(m, r, T, m->n_moe, CP_LINEAR, fn, ctx, &rc);
    }
    emit_gemm((double)in->sampled, (double)r->vocab_n, h, wb, 1, CP_LINEAR, fn, ctx, &rc);
    /* per-step overhead; steps holding a prompt chunk run eagerly (no CUDA graph: not a
     * uniform decode batch, docs/reference-system.md "CUDA graphs and host work"); the token
     * lists re-sent; the decode-rows expansion the host rebuilds per full-attention layer */
    double eager = in->rows > in->decode_rows ? 1.0 : 0.0;
    int dflash = in->spec_k > 0 && in->draft_layers > 0;
    int mtp = !dflash && in->spec_k > 0 && m->mtp_layers > 0;
    /* a speculative decode-only step with other requests resident in the running list
     * (decoding beside it, or a paced prefill waiting for its step): the multi-request
     * verify step's host work (docs/reference-system.md, "Multi-request speculative steps") */
    int resident = in->resident > in->rows ? in->resident : in->rows;
    double spec_resident = !eager && in->spec_k > 0 && resident > 1 ? resident - 1 : 0;
    {
        cost_item_t it = item_of(CI_STEP, 1, CP_OVERHEAD);
        it.seqs = seqs;
        it.eager = eager;
        it.eager_passes = eager * (mtp ? in->spec_k : dflash ? 1 : 0);
        it.resent_tokens = (double)in->resent_tokens;
        it.host_expansions = decode_rows_path(in->plan) ? m->n_full_attn : 0;
        it.spec_resident = spec_resident;
        item_emit(fn, ctx, &rc, &it);
    }
    if (dflash) {
        /* DFlash2: the block draft model, once: its layers (the model's layer shape) over every
         * scheduled token, the attention as the draft plan routes it (a prompt chunk feeds the
         * draft's context; a decoding row drafts its block of K, one scan of its context:
         * engine_run routes it with ROUTE_GROUPED_DRAFT), the target-feature projection, and the
         * drafted positions' logits (K per decoding row) */
        double dl = in->draft_layers;
        emit_plan(in->draft_plan ? in->draft_plan : in->plan, dl, CP_MTP, fn, ctx, &rc);
        emit_layer(m, r, 1, m->n_moe ? 2 : 1, T, seqs, dl, CP_MTP, fn, ctx, &rc);
        emit_gemm(T, h, 2.0 * h, wb, 1, CP_MTP, fn, ctx, &rc);
        emit_gemm((double)in->decode_rows * in->spec_k, (double)r->vocab_n, h, wb, 1, CP_MTP, fn, ctx, &rc);
        return rc;
    }
    if (!mtp) return rc;
    /* MTP pass 1: the MTP layer over every scheduled token (a mixed batch too) */
    emit_plan(in->plan, 1, CP_MTP, fn, ctx, &rc);
    emit_layer(m, r, 1, m->n_moe ? 2 : 1, T, seqs, 1, CP_MTP, fn, ctx, &rc);
    emit_gemm(T, h, 2.0 * h, wb, 1, CP_MTP, fn, ctx, &rc);                       /* eh_proj */
    emit_gemm((double)in->rows, (double)r->vocab_n, h, wb, 1, CP_MTP, fn, ctx, &rc);
    /* passes 2..K: one token per scheduled request (the draft plan's rows) */
    if (in->draft_plan && in->rows > 0 && in->spec_k > 1) {
        double d = in->rows, k1 = in->spec_k - 1;
        emit_plan(in->draft_plan, k1, CP_MTP, fn, ctx, &rc);
        emit_layer(m, r, 1, m->n_moe ? 2 : 1, d, d, k1, CP_MTP, fn, ctx, &rc);
        emit_gemm(d, h, 2.0 * h, wb, k1, CP_MTP, fn, ctx, &rc);
        emit_gemm(d, (double)r->vocab_n, h, wb, k1, CP_MTP, fn, ctx, &rc);
    }
    return rc;
}

const char *cost_item_law(const cost_item_t *it, char *buf, size_t n)
{
    switch (it->kind) {
    case CI_ATTN: {
        const kcall_t *c = it->call;
        const char *dt = kv_is_fp8(c->kv_dtype) ? "fp8" : "fp16";
        const char *k;
        switch (c->route) {
        case ROUTE_DECODE_XQA: k = "decode_xqa"; break;
        case ROUTE_DECODE_SCALAR: k = "decode_scalar"; break;
        case ROUTE_VARLEN: k = "varlen"; break;
        default:
            k = c->variant == VAR_BM32_BN128 ? "prefill_bm32"
              : c->variant == VAR_BM64_BN32 ? "prefill_splitd"
              : c->variant == VAR_BM16_BN128 ? (c->pipelined ? "prefill_lowsmem_pipe" : "prefill_lowsmem")
              : "prefill_generic";
        }
        snprintf(buf, n, "attn.%s.%s", k, dt);
        return buf;
    }
    case CI_BRIDGE: return "attn.fp8_bridge";
    case CI_GEMM: return "gemm";
    case CI_GDN: return "gdn";
    case CI_ELEM: return "elementwise";
    case CI_ALLREDUCE: return "allreduce";
    default: return "step";
    }
}

void cost_item_traffic(const cost_item_t *it, const model_t *m, const model_rank_t *r, double *flops, double *bytes)
{
    double fl = 0, by = 0;
    switch (it->kind) {
    case CI_ATTN: {
        /* every KV token of the call's requests read once (a request's rows share it) */
        const kcall_t *c = it->call;
        double per = 2.0 * r->kv_heads * m->head_dim * (kv_is_fp8(c->kv_dtype) ? 1 : 2);
        long run = 0;
        fl = cost_item_flops(it, m, r);
        for (int i = 0; i < c->nseg; i++) {
            long L = c->segs[i].seq_len;
            if (!(i > 0 && c->segs[i].req >= 0 && c->segs[i].req == c->segs[i - 1].req)) run = 0;
            if (L > run) {
                by += (double)(L - run) * per;
                run = L;
            }
        }
        break;
    }
    case CI_BRIDGE:   /* fp8 K and V read, fp16 written */
        by = 2.0 * (double)it->call->bridge_tokens * r->kv_heads * m->head_dim * 3;
        break;
    case CI_GEMM:     /* the weights once, activations in and out at a byte each at least */
        fl = 2 * it->m * it->n * it->k;
        by = it->n * it->k * it->wb + it->m * (it->k + it->n);
        break;
    case CI_ELEM:     /* the hidden state read and written once, fp16 */
        by = 4.0 * it->tokens * m->hidden;
        break;
    default: break;
    }
    *flops = fl;
    *bytes = by;
}


void cost_free(cost_model_t *cm)
{
    if (cm) cm->destroy(cm);
}
