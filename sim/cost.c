/* cost.c: the profile cost model, the analytic roofline model, and the feature
 * functions that give every profile law its meaning (see cost.h).
 *
 * Attention features, per kernel call (rows are (q, seq_len); H = q heads per rank,
 * Hkv = kv heads per rank):
 *  prefill kernels (tile BM x BN): a row's M-tile i covers queries up to
 *    min(q, (i+1)BM) and so walks kv_len_i = (seq_len - q) + min(q, (i+1)BM) keys in
 *    ceil(kv_len_i / BN) tiles; each M-tile is one CTA per q head.
 *      tiles_total = H * sum_rows sum_i ceil(kv_len_i/BN)   (throughput term)
 *      tiles_max   = max over CTAs of its tiles             (critical path: a q=1 row
 *                                                            is one CTA walking it all)
 *      ctas        = H * sum_rows ceil(q/BM)
 *  decode kernels: partition P = 256 tokens (1024 when seq_len >= 32768);
 *      kv_tokens_total = sum_rows seq_len * Hkv (XQA: a CTA serves its whole GQA group)
 *                        or * H (scalar: every q head re-reads), part_tokens_max =
 *      min(P, longest seq_len), ctas = sum_rows ceil(seq_len/P) * (Hkv or H).
 *  fp8 bridge: expanded_tokens = sum_rows seq_len * Hkv.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"

/* ---- features ------------------------------------------------------------ */

typedef enum { FAM_PREFILL, FAM_DECODE_XQA, FAM_DECODE_SCALAR, FAM_BRIDGE, FAM_OTHER } fam_t;

static fam_t law_family(const char *law, int *bm, int *bn)
{
    *bm = *bn = 0;
    if (!strncmp(law, "attn.prefill_bm32.", 18)) { *bm = 32; *bn = 128; return FAM_PREFILL; }
    if (!strncmp(law, "attn.prefill_generic.", 21)) { *bm = 32; *bn = 64; return FAM_PREFILL; }
    if (!strncmp(law, "attn.prefill_lowsmem.", 21)) { *bm = 16; *bn = 128; return FAM_PREFILL; }
    if (!strncmp(law, "attn.decode_xqa.", 16)) return FAM_DECODE_XQA;
    if (!strncmp(law, "attn.decode_scalar.", 19)) return FAM_DECODE_SCALAR;
    if (!strcmp(law, "attn.fp8_bridge")) return FAM_BRIDGE;
    return FAM_OTHER;
}

int cost_law_ncoef(const char *law)
{
    int bm, bn;
    switch (law_family(law, &bm, &bn)) {
    case FAM_PREFILL: case FAM_DECODE_XQA: case FAM_DECODE_SCALAR: return 4;
    case FAM_BRIDGE: return 2;
    default: break;
    }
    if (!strcmp(law, "gemm") || !strcmp(law, "gdn")) return 3;
    if (!strcmp(law, "step")) return 4;
    if (!strcmp(law, "elementwise") || !strcmp(law, "allreduce")) return 2;
    return 0;
}

static long cdiv(long a, long b) { return (a + b - 1) / b; }

static void prefill_row(int bm, int bn, int q, long seq_len, double *tot, double *mx, double *ctas)
{
    long prefix = seq_len - q;
    long mt = cdiv(q, bm);
    for (long i = 0; i < mt; i++) {
        long last = (i + 1) * bm < q ? (i + 1) * bm : q;
        long t = cdiv(prefix + last, bn);
        *tot += (double)t;
        if ((double)t > *mx) *mx = (double)t;
    }
    *ctas += (double)mt;
}

static void attn_features(fam_t fam, int bm, int bn, const kseg_t *segs, int nseg, long rows_mult,
                          const model_rank_t *r, double feat[PROF_MAX_COEF])
{
    double tot = 0, mx = 0, ctas = 0;
    for (int s = 0; s < PROF_MAX_COEF; s++) feat[s] = 0;
    feat[0] = 1;
    for (int i = 0; i < nseg; i++) {
        long L = segs[i].seq_len;
        if (fam == FAM_PREFILL) {
            prefill_row(bm, bn, segs[i].q, L, &tot, &mx, &ctas);
        } else if (fam == FAM_BRIDGE) {
            tot += (double)L;
        } else {
            long P = L >= 32768 ? 1024 : 256;
            tot += (double)L;
            ctas += (double)cdiv(L, P);
            double pm = (double)(L < P ? L : P);
            if (pm > mx) mx = pm;
        }
    }
    double heads = fam == FAM_PREFILL || fam == FAM_DECODE_SCALAR ? r->q_heads : r->kv_heads;
    feat[1] = tot * heads * (double)rows_mult;
    if (fam == FAM_BRIDGE) return;
    feat[2] = mx;
    feat[3] = ctas * heads * (double)rows_mult;
}

int cost_attn_features(const char *law, const kcall_t *call, const model_t *m,
                       const model_rank_t *r, double feat[PROF_MAX_COEF])
{
    (void)m;
    int bm, bn;
    fam_t fam = law_family(law, &bm, &bn);
    if (fam == FAM_OTHER) return -1;
    attn_features(fam, bm, bn, call->segs, call->nseg, 1, r, feat);
    return 0;
}

static double gemm_bytes(double mm, double n, double k, double wb)
{
    return 2.0 * (mm * k + mm * n) + wb * n * k;
}

int cost_point_features(const char *law, const double *row, const model_t *m,
                        const model_rank_t *r, double feat[PROF_MAX_COEF])
{
    (void)m;
    int bm, bn;
    fam_t fam = law_family(law, &bm, &bn);
    for (int i = 0; i < PROF_MAX_COEF; i++) feat[i] = 0;
    if (fam != FAM_OTHER) {                    /* rows, q, seq_len, page */
        kseg_t seg = { -1, (int)row[1], (long)row[2] };
        if (seg.q < 1 || seg.seq_len < seg.q || row[0] < 1) return -1;
        if (fam == FAM_DECODE_XQA || fam == FAM_DECODE_SCALAR) {
            /* a point with q > 1 is a small-q call: its token-wise expansion */
            kseg_t ex[64];
            if (seg.q > 64) return -1;
            for (int t = 0; t < seg.q; t++)
                ex[t] = (kseg_t){ -1, 1, seg.seq_len - seg.q + 1 + t };
            attn_features(fam, bm, bn, ex, seg.q, (long)row[0], r, feat);
        } else {
            attn_features(fam, bm, bn, &seg, 1, (long)row[0], r, feat);
        }
        return 0;
    }
    feat[0] = 1;
    if (!strcmp(law, "gemm")) {                /* m, n, k, wb */
        feat[1] = 2.0 * row[0] * row[1] * row[2];
        feat[2] = gemm_bytes(row[0], row[1], row[2], row[3]);
    } else if (!strcmp(law, "gdn")) {          /* tokens, seqs */
        feat[1] = row[0];
        feat[2] = row[1];
    } else if (!strcmp(law, "elementwise") || !strcmp(law, "allreduce") || !strcmp(law, "step")) {
        feat[1] = row[0];
    } else {
        return -1;
    }
    return 0;
}

/* ---- the profile model ---------------------------------------------------- */

typedef struct {
    const profile_t *p;
    const model_t *m;
    model_rank_t r;
    const prof_law_t *gemm, *gdn, *elem, *ar, *step;
} pm_t;

static const char *attn_law_name(const kcall_t *c, char *buf, size_t n)
{
    const char *dt = c->kv_dtype == KV_FP8_E5M2 ? "fp8" : "fp16";
    const char *k;
    switch (c->route) {
    case ROUTE_DECODE_XQA: k = "decode_xqa"; break;
    case ROUTE_DECODE_SCALAR: k = "decode_scalar"; break;
    default:
        k = c->variant == VAR_BM32_BN128 ? "prefill_bm32"
          : c->variant == VAR_BM16_BN128 ? "prefill_lowsmem" : "prefill_generic";
    }
    snprintf(buf, n, "attn.%s.%s", k, dt);
    return buf;
}

static int price_law(cost_model_t *cm, const prof_law_t *l, const char *name, const double *feat, double *t)
{
    if (!l) {
        snprintf(cm->err, sizeof cm->err, "profile has no law \"%s\" (needed by this scenario)", name);
        return -1;
    }
    *t = prof_eval(l, feat);
    if (*t < 0) *t = 0;
    return 0;
}

static int price_plan(cost_model_t *cm, const route_plan_t *plan, double *total, double *per_route)
{
    pm_t *pm = cm->impl;
    char name[64];
    double feat[PROF_MAX_COEF];
    *total = 0;
    for (int i = 0; i < plan->ncalls; i++) {
        const kcall_t *c = &plan->calls[i];
        double t = 0, tb = 0;
        attn_law_name(c, name, sizeof name);
        if (cost_attn_features(name, c, pm->m, &pm->r, feat) < 0) return -1;
        if (price_law(cm, prof_find(pm->p, name), name, feat, &t) < 0) return -1;
        if (c->route == ROUTE_FP8_BRIDGE) {
            cost_attn_features("attn.fp8_bridge", c, pm->m, &pm->r, feat);
            if (price_law(cm, prof_find(pm->p, "attn.fp8_bridge"), "attn.fp8_bridge", feat, &tb) < 0)
                return -1;
        }
        *total += t + tb;
        if (per_route) per_route[c->route] += t + tb;
    }
    return 0;
}

static double gemm_t(const pm_t *pm, double mm, double n, double k)
{
    if (mm <= 0) return 0;
    double f[PROF_MAX_COEF] = { 1, 2.0 * mm * n * k, gemm_bytes(mm, n, k, pm->m->weight_bytes_per_param), 0 };
    double t = prof_eval(pm->gemm, f);
    return t > 0 ? t : 0;
}

static double law2(const prof_law_t *l, double x)
{
    if (!l) return 0;
    double f[PROF_MAX_COEF] = { 1, x, 0, 0 };
    double t = prof_eval(l, f);
    return t > 0 ? t : 0;
}

/* Linear work of one layer for mm tokens over seqs sequences (no attention). */
static double layer_linear(const pm_t *pm, int full_attn, double mm, double seqs, double *gdn_t, double *elem_t)
{
    const model_rank_t *r = &pm->r;
    double h = pm->m->hidden, t = 0;
    if (mm <= 0) return 0;
    if (full_attn) {
        t += gemm_t(pm, mm, (double)r->attn_qkv_n, h) + gemm_t(pm, mm, h, (double)r->attn_o_k);
    } else {
        t += gemm_t(pm, mm, (double)r->gdn_in_n, h) + gemm_t(pm, mm, h, (double)r->gdn_out_k);
        if (pm->gdn) {
            double f[PROF_MAX_COEF] = { 1, mm, seqs, 0 };
            double g = prof_eval(pm->gdn, f);
            *gdn_t += g > 0 ? g : 0;
        }
    }
    t += gemm_t(pm, mm, (double)r->mlp_up_n, h) + gemm_t(pm, mm, h, (double)r->mlp_down_k);
    *elem_t += law2(pm->elem, mm);
    return t;
}

static double allreduce_t(const pm_t *pm, double mm)
{
    if (pm->r.tp <= 1 || mm <= 0) return 0;
    return law2(pm->ar, mm * pm->m->hidden * 2.0);
}

static int pm_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    pm_t *pm = cm->impl;
    const model_t *m = pm->m;
    memset(o, 0, sizeof *o);
    double T = (double)in->tokens, seqs = in->rows;
    double attn_layer;
    if (price_plan(cm, in->plan, &attn_layer, o->attn_route) < 0) return -1;
    o->attn = attn_layer * m->n_full_attn;
    for (int k = 0; k < ROUTE__N; k++) o->attn_route[k] *= m->n_full_attn;

    double gdn = 0, elem = 0, lin = 0, g1 = 0, e1 = 0;
    lin += m->n_full_attn * layer_linear(pm, 1, T, seqs, &g1, &e1);
    lin += m->n_gdn * layer_linear(pm, 0, T, seqs, &gdn, &e1);
    gdn *= m->n_gdn;
    elem = law2(pm->elem, T) * m->n_layers;
    lin += gemm_t(pm, (double)in->sampled, (double)pm->r.vocab_n, m->hidden);
    o->linear = lin;
    o->gdn = gdn;
    o->elementwise = elem;
    o->allreduce = 2.0 * m->n_layers * allreduce_t(pm, T);
    /* steps holding a prompt chunk run eagerly (no CUDA graph): a fixed cost per such
     * step and per extra eager forward pass (the MTP draft passes of that step) */
    double eager = in->rows > in->decode_rows ? 1.0 : 0.0;
    double sf[PROF_MAX_COEF] = { 1, seqs, eager, eager * (in->spec_k > 0 && m->mtp_layers > 0 ? in->spec_k : 0) };
    o->overhead = prof_eval(pm->step, sf);
    if (o->overhead < 0) o->overhead = 0;

    if (in->spec_k > 0 && m->mtp_layers > 0) {
        /* pass 1: the MTP layer over every scheduled token (a mixed batch too) */
        double mtp = 0, a1 = 0, gd = 0, el = 0;
        if (price_plan(cm, in->plan, &a1, NULL) < 0) return -1;
        mtp += a1 + layer_linear(pm, 1, T, seqs, &gd, &el) + el;
        mtp += gemm_t(pm, T, m->hidden, 2.0 * m->hidden);          /* eh_proj */
        mtp += gemm_t(pm, (double)in->rows, (double)pm->r.vocab_n, m->hidden);
        mtp += 2.0 * allreduce_t(pm, T);
        /* passes 2..K: one token per decoding request */
        if (in->draft_plan && in->decode_rows > 0 && in->spec_k > 1) {
            double d = (double)in->decode_rows, ad = 0, pass = 0;
            gd = el = 0;
            if (price_plan(cm, in->draft_plan, &ad, NULL) < 0) return -1;
            pass = ad + layer_linear(pm, 1, d, d, &gd, &el) + el
                 + gemm_t(pm, d, m->hidden, 2.0 * m->hidden)
                 + gemm_t(pm, d, (double)pm->r.vocab_n, m->hidden) + 2.0 * allreduce_t(pm, d);
            mtp += (in->spec_k - 1) * pass;
        }
        o->mtp = mtp;
    }
    o->total = o->attn + o->linear + o->gdn + o->elementwise + o->allreduce + o->overhead + o->mtp;
    return 0;
}

static void pm_destroy(cost_model_t *cm)
{
    free(cm->impl);
    free(cm);
}

cost_model_t *cost_profile_new(const profile_t *p, const model_t *m, int tp, char err[COST_ERR_MAX])
{
    cost_model_t *cm = calloc(1, sizeof *cm);
    pm_t *pm = calloc(1, sizeof *pm);
    if (!cm || !pm) {
        snprintf(err, COST_ERR_MAX, "out of memory");
        goto fail;
    }
    pm->p = p;
    pm->m = m;
    if (model_rank(m, tp, &pm->r) < 0) {
        snprintf(err, COST_ERR_MAX, "tensor_parallel_size %d does not divide the model's heads", tp);
        goto fail;
    }
    static const char *const need[] = { "gemm", "step" };
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!prof_find(p, need[i])) {
            snprintf(err, COST_ERR_MAX, "%s: profile has no law \"%s\"", p->path, need[i]);
            goto fail;
        }
    pm->gemm = prof_find(p, "gemm");
    pm->step = prof_find(p, "step");
    pm->gdn = prof_find(p, "gdn");
    pm->elem = prof_find(p, "elementwise");
    pm->ar = prof_find(p, "allreduce");
    if (m->n_gdn > 0 && !pm->gdn) {
        snprintf(err, COST_ERR_MAX, "%s: profile has no law \"gdn\" (the model has GDN layers)", p->path);
        goto fail;
    }
    if (tp > 1 && !pm->ar) {
        snprintf(err, COST_ERR_MAX, "%s: profile has no law \"allreduce\" (tensor_parallel_size %d)", p->path, tp);
        goto fail;
    }
    cm->name = "profile";
    cm->step = pm_step;
    cm->destroy = pm_destroy;
    cm->impl = pm;
    return cm;
fail:
    free(pm);
    free(cm);
    return NULL;
}

/* ---- the analytic model ----------------------------------------------------
 * A plain roofline with no calibration: every kernel takes max(flops / peak,
 * bytes / bandwidth) + 5 us launch; a prefill-kernel CTA walking its keys alone runs
 * at peak / 100 (one SM of a ~100-SM part), which is what makes a q=1 row on the
 * prefill route slow.  Use it to run a scenario before any profile exists. */

typedef struct {
    const model_t *m;
    model_rank_t r;
    double flops, bw;
} am_t;

static double am_call(const am_t *a, const kcall_t *c)
{
    const model_t *m = a->m;
    double D = m->head_dim, kvb = c->kv_dtype == KV_FP8_E5M2 ? 1 : 2;
    double fl = 0, by = 0, serial = 0;
    for (int i = 0; i < c->nseg; i++) {
        double q = c->segs[i].q, L = (double)c->segs[i].seq_len;
        fl += 4.0 * a->r.q_heads * q * (L - q / 2) * D;
        by += 2.0 * L * a->r.kv_heads * D * kvb
              * (c->route == ROUTE_DECODE_SCALAR ? a->r.group : 1);
        if (c->route == ROUTE_PREFILL_GENERIC || c->route == ROUTE_PREFILL_BM32 || c->route == ROUTE_FP8_BRIDGE) {
            double bm = c->variant == VAR_BM16_BN128 ? 16 : 32;
            double s = 4.0 * bm * L * D / (a->flops / 100.0);
            if (s > serial) serial = s;
        }
    }
    if (c->route == ROUTE_FP8_BRIDGE) by += 3.0 * (double)c->bridge_tokens * a->r.kv_heads * D * 2;
    double t = fl / a->flops;
    if (by / a->bw > t) t = by / a->bw;
    if (serial > t) t = serial;
    return t + 5e-6;
}

static double am_gemm(const am_t *a, double mm, double n, double k)
{
    if (mm <= 0) return 0;
    double t = 2 * mm * n * k / a->flops, b = gemm_bytes(mm, n, k, a->m->weight_bytes_per_param) / a->bw;
    return (t > b ? t : b) + 5e-6;
}

static int am_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    am_t *a = cm->impl;
    const model_t *m = a->m;
    const model_rank_t *r = &a->r;
    double T = (double)in->tokens, h = m->hidden;
    memset(o, 0, sizeof *o);
    for (int i = 0; i < in->plan->ncalls; i++) {
        double t = am_call(a, &in->plan->calls[i]) * m->n_full_attn;
        o->attn += t;
        o->attn_route[in->plan->calls[i].route] += t;
    }
    double mlp = am_gemm(a, T, (double)r->mlp_up_n, h) + am_gemm(a, T, h, (double)r->mlp_down_k);
    o->linear = m->n_full_attn * (am_gemm(a, T, (double)r->attn_qkv_n, h) + am_gemm(a, T, h, (double)r->attn_o_k))
              + m->n_gdn * (am_gemm(a, T, (double)r->gdn_in_n, h) + am_gemm(a, T, h, (double)r->gdn_out_k))
              + m->n_layers * mlp + am_gemm(a, (double)in->sampled, (double)r->vocab_n, h);
    o->gdn = m->n_gdn * (8.0 * T * r->gdn_v_heads * m->gdn_head_dim_k * m->gdn_head_dim_v / a->flops + 5e-6);
    o->overhead = 2e-3;
    if (in->spec_k > 0 && m->mtp_layers > 0) {
        double a1 = 0;
        for (int i = 0; i < in->plan->ncalls; i++) a1 += am_call(a, &in->plan->calls[i]);
        o->mtp = a1 + o->linear / (m->n_layers + 1) * 1.0;
        if (in->draft_plan)
            for (int i = 0; i < in->draft_plan->ncalls; i++)
                o->mtp += (in->spec_k - 1) * am_call(a, &in->draft_plan->calls[i]);
    }
    o->total = o->attn + o->linear + o->gdn + o->overhead + o->mtp;
    return 0;
}

static void am_destroy(cost_model_t *cm)
{
    free(cm->impl);
    free(cm);
}

cost_model_t *cost_analytic_new(const model_t *m, int tp, double tflops, double tbps)
{
    cost_model_t *cm = calloc(1, sizeof *cm);
    am_t *a = calloc(1, sizeof *a);
    if (!cm || !a || model_rank(m, tp, &a->r) < 0) {
        free(cm);
        free(a);
        return NULL;
    }
    a->m = m;
    a->flops = tflops * 1e12;
    a->bw = tbps * 1e12;
    cm->name = "analytic";
    cm->step = am_step;
    cm->destroy = am_destroy;
    cm->impl = a;
    return cm;
}

void cost_free(cost_model_t *cm)
{
    if (cm) cm->destroy(cm);
}
