/* cost_analytic.c: the analytic cost model -- a plain roofline from peak numbers, no
 * calibration, pricing the same items cost_enumerate() lists.
 *
 * Every kernel takes max(flops / peak, bytes / bandwidth) + 5 us launch; a prefill-kernel
 * CTA walking its keys alone runs at peak / 100 (one SM of a ~100-SM part), which is what
 * makes a q=1 row on the prefill route slow; elementwise work is 8 passes over tokens x
 * hidden fp16; the bridge reads fp8 and writes fp16; the routed experts of a sparse layer
 * are one grouped GEMM (each expert's roofline, one launch); no interconnect (all-reduce 0); 2 ms
 * of host overhead per step.  Use it to run a scenario before any profile exists.
 * Invariant: a step's price depends on the step alone (the model keeps no state). */
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "law.h"

typedef struct {
    const model_t *m;
    model_rank_t r;
    double flops, bw;
} am_t;

static double roof(const am_t *a, double flops, double bytes)
{
    double t = flops / a->flops, b = bytes / a->bw;
    return (t > b ? t : b) + 5e-6;
}

static double am_call(const am_t *a, const cost_item_t *it)
{
    const model_t *m = a->m;
    const kcall_t *c = it->call;
    double D = m->head_dim, kvb = kv_is_fp8(c->kv_dtype) ? 1 : 2;
    double fl = 0, by = 0, serial = 0;
    for (int i = 0; i < c->nseg; i++) {
        double q = c->segs[i].q, L = (double)c->segs[i].seq_len;
        fl += 4.0 * a->r.q_heads * q * (L - q / 2) * D;      /* cost_item_flops' call FLOPs */
        by += 2.0 * L * a->r.kv_heads * D * kvb
              * (c->route == ROUTE_DECODE_SCALAR ? a->r.group : 1);
        if (c->route == ROUTE_PREFILL_GENERIC || c->route == ROUTE_PREFILL_BM32 || c->route == ROUTE_FP8_BRIDGE) {
            double bm = c->variant == VAR_BM16_BN128 ? 16 : 32;
            double s = 4.0 * bm * L * D / (a->flops / 100.0);
            if (s > serial) serial = s;
        }
    }
    double t = roof(a, fl, by);
    return serial + 5e-6 > t ? serial + 5e-6 : t;
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
    double t = 0;
    switch (it->kind) {
    case CI_ATTN: t = am_call(a, it); break;
    case CI_BRIDGE: t = roof(a, 0, 2.0 * (double)it->call->bridge_tokens * a->r.kv_heads * m->head_dim * 3); break;
    case CI_GEMM: {
        t = roof(a, 2.0 * it->m * it->n * it->k, cost_gemm_bytes(it->m, it->n, it->k, it->wb));
        /* routed experts: one grouped launch per layer, carried by the busiest group */
        if (it->moe) t += -5e-6 + (it->moe == 2 ? 5e-6 / it->experts : 0);
        break;
    }
    case CI_GDN:
        t = roof(a, 8.0 * it->tokens * a->r.gdn_v_heads * m->gdn_head_dim_k * m->gdn_head_dim_v, 0);
        break;
    case CI_ELEM: t = roof(a, 0, 8.0 * it->tokens * m->hidden * 2); break;
    case CI_ALLREDUCE: t = 0; break;
    case CI_STEP: t = 2e-3; break;
    }
    cost_breakdown_add(x->o, it, t * it->count);
    return 0;
}

static int am_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    am_t *a = cm->impl;
    memset(o, 0, sizeof *o);
    am_ctx_t x = { a, o };
    return cost_enumerate(a->m, &a->r, in, am_price, &x);
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
