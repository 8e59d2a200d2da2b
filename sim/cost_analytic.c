/* cost_analytic.c: the analytic cost model -- a plain roofline from peak numbers, no
 * calibration, pricing the same items cost_enumerate() lists.
 *
 * Every kernel takes max(flops / peak, bytes / bandwidth) + a launch; a prefill-kernel CTA
 * walking its keys alone runs at peak / SMs (one SM's share), which is what makes a q=1 row
 * on the prefill route slow; elementwise work is 8 passes over tokens x hidden fp16; the
 * bridge reads fp8 and writes fp16; the routed experts of a sparse layer are one grouped GEMM
 * (each expert's roofline, one launch); a GEMM of 1-byte weights runs at the FP8 peak where
 * the GPU has one; the all-reduces of TP are a ring over the link (hw_allreduce_s: latency +
 * 2(n-1)/n x bytes / bandwidth), 0 where no link is known; and a host overhead per step.
 *
 * Two ways to give the hardware:
 *   hardware: {gpu: NAME}  the catalogue's datasheet peaks (hwcat.h) times the fractions the
 *       calibrated H200 profile achieved of the H200's own datasheet peaks, its kernels' median
 *       launch intercept and its host overhead per step (cost_analytic_derive() recomputes
 *       them from calib/profiles/h200.yaml; tests/check_cost.c holds the constants below to it);
 *   hardware: {analytic: {tflops, tbps}}  those peaks as they are, 5 us a launch, 2 ms a step.
 * Use it to run a scenario before any profile exists.
 * Invariant: a step's price depends on the step alone (the model keeps no state). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "hwcat.h"
#include "law.h"

/* What calib/profiles/h200.yaml achieved against the H200's datasheet (cost_analytic_derive,
 * rounded to 4 digits): its measured fp16 GEMM ceiling 752.8 TFLOP/s of 989.5, its copy
 * 4,253 GB/s of 4,800, the median constant term of its kernel laws, its step law's constant. */
#define AM_FLOPS_FRAC 0.7608
#define AM_BW_FRAC 0.8860
#define AM_LAUNCH_S 4.333e-6
#define AM_HOST_S 0.0

typedef struct {
    const model_t *m;
    model_rank_t r;
    cost_analytic_hw_t hw;
} am_t;

static double roof_at(const am_t *a, double peak, double flops, double bytes)
{
    double t = flops / peak, b = bytes / a->hw.bw;
    return (t > b ? t : b) + a->hw.launch_s;
}

static double roof(const am_t *a, double flops, double bytes) { return roof_at(a, a->hw.flops, flops, bytes); }

static double am_call(const am_t *a, const cost_item_t *it)
{
    const model_t *m = a->m;
    const kcall_t *c = it->call;
    double D = m->head_dim, kvb = kv_is_fp8(c->kv_dtype) ? 1 : 2;
    double fl = 0, by = 0, serial = 0;
    /* the route's terms outside the loop over segments (the same products in the same order) */
    double qh4 = 4.0 * a->r.q_heads, kvh = a->r.kv_heads, g = c->route == ROUTE_DECODE_SCALAR ? a->r.group : 1;
    if (c->route == ROUTE_PREFILL_GENERIC || c->route == ROUTE_PREFILL_BM32 || c->route == ROUTE_FP8_BRIDGE) {
        double bm = c->variant == VAR_BM16_BN128 ? 16 : 32, sm = a->hw.flops / a->hw.sms;
        for (int i = 0; i < c->nseg; i++) {
            double q = c->segs[i].q, L = (double)c->segs[i].seq_len;
            fl += qh4 * q * (L - q / 2) * D;                  /* cost_item_flops' call FLOPs */
            by += 2.0 * L * kvh * D * kvb * g;
            double s = 4.0 * bm * L * D / sm;
            if (s > serial) serial = s;
        }
    } else {
        for (int i = 0; i < c->nseg; i++) {
            double q = c->segs[i].q, L = (double)c->segs[i].seq_len;
            fl += qh4 * q * (L - q / 2) * D;
            by += 2.0 * L * kvh * D * kvb * g;
        }
    }
    double t = roof(a, fl, by);
    return serial + a->hw.launch_s > t ? serial + a->hw.launch_s : t;
}

typedef struct {
    const am_t *a;
    cost_breakdown_t *o;
} am_ctx_t;

static int am_price(void *vctx, const cost_item_t *it)
{
    am_ctx_t *x = vctx;
    const am_t *a = x->a;
    const model_t *m = a->m;
    double t = 0, L = a->hw.launch_s;
    switch (it->kind) {
    case CI_ATTN: t = am_call(a, it); break;
    case CI_BRIDGE: t = roof(a, 0, 2.0 * (double)it->call->bridge_tokens * a->r.kv_heads * m->head_dim * 3); break;
    case CI_GEMM: {
        double peak = it->wb <= 1 && a->hw.flops_fp8 > 0 ? a->hw.flops_fp8 : a->hw.flops;
        t = roof_at(a, peak, 2.0 * it->m * it->n * it->k, cost_gemm_bytes(it->m, it->n, it->k, it->wb));
        /* routed experts: one grouped launch per layer, carried by the busiest group */
        if (it->moe) t += -L + (it->moe == 2 ? L / it->experts : 0);
        break;
    }
    case CI_GDN:
        t = roof(a, 8.0 * it->tokens * a->r.gdn_v_heads * m->gdn_head_dim_k * m->gdn_head_dim_v, 0);
        break;
    case CI_ELEM: t = roof(a, 0, 8.0 * it->tokens * m->hidden * 2); break;
    case CI_ALLREDUCE: t = hw_allreduce_s(a->hw.link, a->hw.tp, it->bytes); break;
    case CI_STEP: t = a->hw.host_s; break;
    }
    cost_breakdown_add(x->o, it, t * it->count);
    return 0;
}

static int am_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    am_t *a = cm->impl;
    cost_breakdown_clear(o);
    am_ctx_t x = { a, o };
    return cost_enumerate(a->m, &a->r, in, am_price, &x);
}

static void am_destroy(cost_model_t *cm)
{
    free(cm->impl);
    free(cm);
}

cost_model_t *cost_analytic_new_hw(const model_t *m, int tp, const cost_analytic_hw_t *hw)
{
    cost_model_t *cm = calloc(1, sizeof *cm);
    am_t *a = calloc(1, sizeof *a);
    if (!cm || !a || model_rank(m, tp, &a->r) < 0 || !(hw->flops > 0) || !(hw->bw > 0)) {
        free(cm);
        free(a);
        return NULL;
    }
    a->m = m;
    a->hw = *hw;
    a->hw.tp = tp;
    if (a->hw.sms <= 0) a->hw.sms = 100;
    cm->name = "analytic";
    cm->step = am_step;
    cm->destroy = am_destroy;
    cm->impl = a;
    return cm;
}

void cost_analytic_hw_peaks(double tflops, double tbps, cost_analytic_hw_t *o)
{
    memset(o, 0, sizeof *o);
    o->flops = tflops * 1e12;
    o->bw = tbps * 1e12;
    o->launch_s = 5e-6;
    o->host_s = 2e-3;
    o->sms = 100;
}

void cost_analytic_hw_gpu(const hw_gpu_t *g, cost_analytic_hw_t *o)
{
    memset(o, 0, sizeof *o);
    o->flops = g->fp16_flops * AM_FLOPS_FRAC;
    o->flops_fp8 = g->fp8_flops * AM_FLOPS_FRAC;
    o->bw = g->mem_bw * AM_BW_FRAC;
    o->launch_s = AM_LAUNCH_S;
    o->host_s = AM_HOST_S;
    o->sms = g->sms;
    o->link = hw_link_find(g->link);
}

void cost_analytic_constants(cost_analytic_fracs_t *o)
{
    o->flops_frac = AM_FLOPS_FRAC;
    o->bw_frac = AM_BW_FRAC;
    o->launch_s = AM_LAUNCH_S;
    o->host_s = AM_HOST_S;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cost_analytic_derive(const profile_t *p, const hw_gpu_t *g, cost_analytic_fracs_t *o)
{
    const prof_law_t *st = prof_find(p, "step");
    if (!(p->peak_fp16_tflops > 0) || !(p->mem_bw_gbs > 0) || !st || st->ncoef < 1) return -1;
    o->flops_frac = p->peak_fp16_tflops * 1e12 / g->fp16_flops;
    o->bw_frac = p->mem_bw_gbs * 1e9 / g->mem_bw;
    o->host_s = st->coef[STEP_ONE];
    /* the launch: the median constant term (feature FEAT_ONE) over the kernel laws that
     * have one: attention, GEMMs, GDN, elementwise (not the step, not the all-reduce) */
    double *c = malloc(sizeof *c * (size_t)(p->nlaws > 0 ? p->nlaws : 1));
    int n = 0;
    if (!c) return -1;
    for (int i = 0; i < p->nlaws; i++) {
        const prof_law_t *l = &p->laws[i];
        if (strcmp(l->name, "step") && strcmp(l->name, "allreduce") && l->ncoef > 0 && l->coef[FEAT_ONE] > 0)
            c[n++] = l->coef[FEAT_ONE];
    }
    if (!n) {
        free(c);
        return -1;
    }
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    o->launch_s = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return 0;
}

cost_model_t *cost_analytic_new(const model_t *m, int tp, double tflops, double tbps)
{
    cost_analytic_hw_t hw;
    cost_analytic_hw_peaks(tflops, tbps, &hw);
    return cost_analytic_new_hw(m, tp, &hw);
}
