/* cost: what one engine step costs, in seconds.
 *
 * The engine asks one interface, cost_model_t.step(), for a step's duration given the
 * step's routed attention plan and token counts.  Implementations are swappable: the
 * profile model (cost_profile.c: laws fitted by calib or derived from published figures),
 * an analytic roofline model (cost_analytic.c: no profile), and the GPU replay
 * (replay_gpu.cu: runs the step for real).  All three price the items of one step
 * decomposition, cost_enumerate() (cost.c):
 *   a step = overhead + sum over full-attention layers of the plan's calls + per layer
 *   GEMMs/GDN/elementwise for the step's tokens + lm_head for sampled tokens + 2
 *   all-reduces per layer (TP>1) + the MTP draft passes (first pass: one full-attention
 *   layer over every scheduled token, same plan; K-1 more: one token per scheduled request,
 *   prefilling ones included, as EagleSpeculator.multi_step_decode runs them).
 * Each item is priced by one law of the catalogue (law.h: names, point columns, named
 * features, roofline pairs and knees); cost_feat.c defines every feature and why it is
 * there.  Waves and the GEMM roofline need the GPU's SM count and ceilings (cost_hw_t, from
 * the profile's metadata).  "rows" in attention points = identical rows (q, seq_len) in
 * one call; kv heads, q heads and head_dim are the point's own where it records them
 * (law.h's attention columns; its grid group is then of that shape), else the model's at
 * the run's TP degree.
 * Invariant: a law's features are computed by the same functions for calib's fit and for
 * the simulator's prices, so a fitted coefficient means one thing everywhere. */
#ifndef PACESIM_COST_H
#define PACESIM_COST_H

#include "hwcat.h"
#include "law.h"
#include "model.h"
#include "profile.h"
#include "route.h"

#define COST_ERR_MAX 1024

typedef struct cost_step {
    const route_plan_t *plan;     /* main model attention, one full-attention layer */
    const route_plan_t *draft_plan; /* MTP passes 2..K: one q=1 row per scheduled request; DFlash2: the
                                       draft model's rows, a decoding row's block one scan (may be NULL) */
    long tokens;                  /* query tokens scheduled this step (all rows) */
    int rows;                     /* requests scheduled */
    int decode_rows;              /* rows that are decoding (q = 1 + K) */
    long sampled;                 /* positions whose logits are computed (lm_head rows) */
    int spec_k;                   /* MTP drafts per decoding row (0 = off) */
    long resent_tokens;           /* token ids of the rows whose request the previous step did not
                                     schedule (their whole token list is sent again) */
    int resident;                 /* requests in the running list this step, scheduled or not
                                     (0: not known, taken as `rows`) */
    int draft_layers;             /* 0: MTP drafting (the model's MTP module, K passes); > 0: DFlash2,
                                     one pass of a draft model of this many layers */
} cost_step_t;

typedef struct cost_breakdown {
    double total;
    double attn;                  /* all attention calls, main model */
    double attn_route[ROUTE__N];  /* of which, per route */
    double linear;                /* GEMMs + lm_head */
    double gdn, elementwise, allreduce, overhead;
    double mtp;                   /* all draft passes */
} cost_breakdown_t;

typedef struct cost_model cost_model_t;
struct cost_model {
    const char *name;
    int (*step)(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *out); /* 0 / -1 */
    void (*destroy)(cost_model_t *cm);
    void *impl;
    char err[COST_ERR_MAX];
};

/* ---- the step decomposition ------------------------------------------------------
 * cost_enumerate() lists what one step runs, as items each priced by one law: the
 * plan's attention calls x full-attention layers, each layer's GEMMs / GDN core /
 * elementwise / all-reduces, lm_head, the step overhead, the MTP passes.  The profile
 * model prices every item with its law; the GPU replay runs every item for real.  One
 * decomposition, so prediction and measurement differ only in the pricing. */
typedef enum { CI_ATTN = 0, CI_BRIDGE, CI_GEMM, CI_GDN, CI_ELEM, CI_ALLREDUCE, CI_STEP } cost_item_kind_t;
typedef enum { CP_ATTN = 0, CP_LINEAR, CP_GDN, CP_ELEM, CP_ALLREDUCE, CP_OVERHEAD, CP_MTP } cost_part_t;

/* What some features need to know of the GPU, from its profile's metadata: the SM count
 * (waves = ceil(CTAs / (SMs x the CTAs an SM holds))) and the measured fp16 GEMM and copy
 * ceilings (the GEMM roofline).  A zero field is unknown: features that need it are 0,
 * and their coefficients are never fitted. */
typedef struct cost_hw {
    int sms;
    double flops;                 /* FLOP/s */
    double bw;                    /* bytes/s */
    int expand_tokens, expand_occ; /* the fp8 expansion kernel: tokens per CTA, CTAs per SM
                                      (0: not recorded, a CTA per 784-token page, 8 per SM) */
    int split_max, split_min_tiles, split_cost_tiles, split_occ;
                                  /* the fast prefill kernel's split (kernels/attn_split.h):
                                     split_max 0 = not recorded: it does not split */
} cost_hw_t;

/* The hardware facts of a profile (p may be NULL: all unknown). */
cost_hw_t cost_hw_of(const profile_t *p);

typedef struct cost_item {
    cost_item_kind_t kind;
    const kcall_t *call;          /* CI_ATTN, CI_BRIDGE */
    double m, n, k, wb;           /* CI_GEMM: C[m,n] = A[m,k] W[n,k]^T, wb bytes per weight */
    int moe;                      /* CI_GEMM: a group of routed experts with equal token counts, one
                                     expert's GEMM (count = experts x layers): 2 for the busiest
                                     group of the layer's grouped GEMM, 1 for the others, 0 dense */
    double experts;               /* CI_GEMM with moe: experts in the group (tokens: the layer's tokens) */
    double tokens, seqs;          /* CI_GDN (both), CI_ELEM (tokens), CI_STEP (seqs = rows), CI_GEMM moe (tokens) */
    double eager, eager_passes;   /* CI_STEP */
    double resent_tokens, host_expansions; /* CI_STEP (law.h step_feat) */
    double spec_resident;         /* CI_STEP: a speculative decode-only step's resident requests beyond
                                     the first */
    double bytes;                 /* CI_ALLREDUCE: one all-reduce's payload */
    double count;                 /* how many times the step runs it (layers, passes) */
    cost_part_t part;             /* breakdown bucket */
} cost_item_t;

typedef int (*cost_item_fn)(void *ctx, const cost_item_t *it);   /* 0, or -1 to stop */

/* Call fn for every item of the step, in execution order.  0, or fn's -1. */
int cost_enumerate(const model_t *m, const model_rank_t *r, const cost_step_t *in, cost_item_fn fn, void *ctx);
/* The law that prices an item (buf is used for attention names). */
const char *cost_item_law(const cost_item_t *it, char *buf, size_t n);
/* The item's feature vector for its law.  0 or -1. */
int cost_item_features(const cost_item_t *it, const model_t *m, const model_rank_t *r, const cost_hw_t *hw,
                       double feat[PROF_MAX_COEF]);
/* A GEMM's bytes moved (the gemm law's GEMM_BYTES): A and C in fp16, the weights at wb
 * bytes a parameter.  Inline: the analytic model prices it for every GEMM of every step. */
static inline double cost_gemm_bytes(double mm, double n, double k, double wb)
{
    return 2.0 * (mm * k + mm * n) + wb * n * k;
}
/* Tensor-core FLOPs of one run of an item (GEMMs, attention calls; 0 for the rest). */
double cost_item_flops(const cost_item_t *it, const model_t *m, const model_rank_t *r);
/* The least work one run of an item does (its roofline's operands): tensor-core FLOPs and
 * bytes moved -- attention: every KV token of the call's requests read once; a GEMM: its
 * weights once and its activations in and out at a byte an element; elementwise work: the
 * hidden state read and written once in fp16; the fp8 bridge: K and V read in fp8 and written
 * in fp16; 0 and 0 for GDN, the all-reduce and the step (no floor). */
void cost_item_traffic(const cost_item_t *it, const model_t *m, const model_rank_t *r, double *flops, double *bytes);
/* Add seconds (already x count) to the breakdown bucket of the item (inline: every item of
 * every step goes through it). */
static inline void cost_breakdown_add(cost_breakdown_t *o, const cost_item_t *it, double seconds)
{
    switch (it->part) {
    case CP_ATTN:
        o->attn += seconds;
        o->attn_route[it->call->route] += seconds;
        break;
    case CP_LINEAR: o->linear += seconds; break;
    case CP_GDN: o->gdn += seconds; break;
    case CP_ELEM: o->elementwise += seconds; break;
    case CP_ALLREDUCE: o->allreduce += seconds; break;
    case CP_OVERHEAD: o->overhead += seconds; break;
    case CP_MTP: o->mtp += seconds; break;
    }
    o->total += seconds;
}

/* An empty breakdown, written field by field (a memset of the struct compiles to a block
 * clear, rep stos, whose stores the step's first adds then wait on: once a step). */
static inline void cost_breakdown_clear(cost_breakdown_t *o)
{
    o->total = o->attn = 0;
    for (int i = 0; i < ROUTE__N; i++) o->attn_route[i] = 0;
    o->linear = o->gdn = o->elementwise = o->allreduce = o->overhead = o->mtp = 0;
}
#ifdef __cplusplus  /* the GPU replay includes this header as CUDA C++ */
static_assert(sizeof(cost_breakdown_t) == (8 + ROUTE__N) * sizeof(double),
               "cost_breakdown_t changed: clear its new fields in cost_breakdown_clear()");
#else
_Static_assert(sizeof(cost_breakdown_t) == (8 + ROUTE__N) * sizeof(double),
               "cost_breakdown_t changed: clear its new fields in cost_breakdown_clear()");
#endif

/* Profile-backed model.  Borrows p and m (they must outlive the model).
 * NULL with err filled if a required law is missing. */
cost_model_t *cost_profile_new(const profile_t *p, const model_t *m, int tp, char err[COST_ERR_MAX]);
/* The same, the all-reduce priced over link by its datasheet figures (hw_allreduce_s) where the
 * profile has no "allreduce" law (link NULL: such a profile refuses tp > 1). */
cost_model_t *cost_profile_new_link(const profile_t *p, const model_t *m, int tp, const hw_link_t *link,
                                    char err[COST_ERR_MAX]);
/* The price of one item (seconds, already x count) by a model cost_profile_new made;
 * *grid is 1 when measured points priced it, 0 when the fitted law did.  0 / -1. */
int cost_profile_item(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid);
/* The share of the step time a model cost_profile_new made has priced so far outside its
 * profile's measured envelope (profile.h), 0..1; 0 inside it, for a profile that records no
 * envelope, and for any other model (or NULL). */
double cost_profile_outside_share(const cost_model_t *cm);
/* The engine's debug invariant (-DPACESIM_DEBUG): every item of the step, as a model
 * cost_profile_new made prices it (at the card's heat), at or above its roofline floor.  0, or
 * -1 with "invariant violated: ..." in err; 0 for other models (the analytic model prices every
 * item at a roofline of its own peaks, above cost_item_traffic's least work). */
int cost_floor_check(cost_model_t *cm, const cost_step_t *in, char *err, size_t n);
/* Bounds on (1, the default) or off (0: the laws' prices as they are; for tests). */
void cost_profile_set_bounds(cost_model_t *cm, int on);
/* An item's roofline floor (seconds, x count) by a model cost_profile_new made; 0 without one. */
double cost_profile_item_floor(cost_model_t *cm, const cost_item_t *it);
/* What the physical bounds of a model cost_profile_new made (cost_profile.c: roofline floor,
 * efficiency cap outside the envelope) moved so far: items raised to their floor and the
 * seconds added, items capped and the seconds removed (0 for any other model). */
void cost_profile_bounds(const cost_model_t *cm, long *n_floor, double *s_floor, long *n_cap, double *s_cap);
/* The envelope warnings of a model cost_profile_new made (one line each, "" when none) into
 * buf, for a caller that prints them with its run's output (the runs of a sweep finish in any
 * order); the model then prints nothing of them when freed.  0, or -1 when buf was too small
 * (what fitted is kept). */
int cost_profile_envelope_warnings(cost_model_t *cm, char *buf, size_t n);
/* The model prints none of its envelope warnings when freed: the pricing beside a second run of
 * a command whose first run (the prediction) already warned of the same items. */
void cost_profile_envelope_quiet(cost_model_t *cm);
/* A diagnostic (pacesim rescore --recorded-clock): the model cost_profile_new made prices
 * its k-th step from now (k < n) at the SM clock mhz[k] (MHz; NAN or <= 0: the modelled
 * clock) instead of the clock its heat state stands for (heat.h); the array is borrowed.
 * NULL ends it.  Nothing for another model or a profile without the sustained probes. */
void cost_profile_clock_schedule(cost_model_t *cm, const double *mhz, long n);
/* The meter of those clocks: stamps 1 (the replay's step stamps, sm_mhz_step) maps the heat
 * state between the profile's clocks by the SMs' cycle counters (sustained.stamp_cold_mhz,
 * stamp_hot_mhz), so that a step's clock and the light load's and heater's are one meter's,
 * and the model's own clock reads in that meter too; 0, or a profile without that pair:
 * NVML's (clock_cold_mhz, clock_hot_mhz), as priced by default.  Returns 1 where the stamps'
 * pair is used, else 0. */
int cost_profile_clock_units(cost_model_t *cm, int stamps);
/* The GPU's idle before each step (pacesim rescore, from a back-to-back replay's recorded
 * gap_s): the model cost_profile_new made lets its heat state relax over idle_s[k] seconds
 * before its k-th step from now (k < n; NAN or < 0: the step law's host time, as without a
 * schedule) instead of over the step law's host time (heat.h); the array is borrowed.  NULL
 * ends it.  Nothing for another model or a profile without the sustained probes. */
void cost_profile_idle_schedule(cost_model_t *cm, const double *idle_s, long n);
/* The idle (s) the heat state relaxed over before that model's last step; NAN for another
 * model or without the probes. */
double cost_profile_idle(const cost_model_t *cm);
/* calib's compute-bound GEMM probe (the profile's sustained.gemm_compute_hot) in the price of a
 * cuBLAS GEMM: its hot moved from the gemm law's towards the probe's by its FLOP rate
 * (sim/cost_profile.c item_factor).  2: at every step's clock, the model's own included (the
 * default of a new model whose profile's step law prices a host time, the idle before each
 * step: not all 0; rescore where every run records its idle); 1 (pacesim rescore
 * --recorded-clock --compute-hot): only at a clock a schedule gave; 0: never, the gemm law's
 * hot (the default where the step law is 0, not measured; rescore where the runs do not
 * record their idle, or --no-compute-hot).  Nothing for another model or a profile without
 * the probe. */
void cost_profile_compute_hot(cost_model_t *cm, int on);
/* The clock (MHz) the heat state of that model stood for over its last step (its mean;
 * the modelled one also under a schedule); NAN for another model or without the probes. */
double cost_profile_model_clock(const cost_model_t *cm);
/* Every law a scenario with this model, TP degree, KV dtype and GQA group needs is in
 * the profile: 0, or -1 with "path:line:col: laws: no law ..." in err. */
int cost_profile_check(const profile_t *p, const model_t *m, int tp, kv_dtype_t kv, int group,
                       char err[COST_ERR_MAX]);
int cost_profile_check_link(const profile_t *p, const model_t *m, int tp, kv_dtype_t kv, int group,
                            const hw_link_t *link, char err[COST_ERR_MAX]);
/* 1 when the profile prices the reference fork's kernel library (it holds the law of the
 * fork-only FA2 split-D kernel, attn.prefill_splitd.fp16), so the router takes the fork's
 * kernel dispatch (route.h); 0 for calib's profiles of this repo's kernels and for NULL. */
int cost_profile_fork_kernels(const profile_t *p);
/* The law that prices an item of law name where the profile has none of that name, or NULL:
 * attn.prefill_lowsmem_pipe.fp16 -> attn.prefill_lowsmem.fp16, attn.prefill_splitd.fp16
 * -> attn.prefill_bm32.fp16. */
const char *cost_law_fallback(const char *law);
/* Roofline model from peak numbers (documented in cost_analytic.c): hardware.analytic's
 * peaks as given, 5 us a launch, 2 ms a step, no link. */
cost_model_t *cost_analytic_new(const model_t *m, int tp, double tflops, double tbps);
/* What the analytic model prices with. */
typedef struct cost_analytic_hw {
    double flops, flops_fp8;      /* FLOP/s it prices fp16 and 1-byte-weight GEMMs at (fp8 0: fp16's) */
    double bw;                    /* bytes/s */
    double launch_s, host_s;      /* a kernel's launch, a step's host overhead */
    int sms;                      /* 0: 100 */
    const hw_link_t *link;        /* TP's all-reduce ring (NULL: not priced) */
    int tp;                       /* set by cost_analytic_new_hw */
} cost_analytic_hw_t;
/* The fractions and fixed costs a catalogue GPU is priced with, and what a profile achieved. */
typedef struct cost_analytic_fracs {
    double flops_frac, bw_frac, launch_s, host_s;
} cost_analytic_fracs_t;
cost_model_t *cost_analytic_new_hw(const model_t *m, int tp, const cost_analytic_hw_t *hw);
void cost_analytic_hw_peaks(double tflops, double tbps, cost_analytic_hw_t *o);
/* A catalogue GPU: its datasheet peaks x the constants below, its link. */
void cost_analytic_hw_gpu(const hw_gpu_t *g, cost_analytic_hw_t *o);
/* The constants the catalogue's GPUs are priced with (derived from calib/profiles/h200.yaml). */
void cost_analytic_constants(cost_analytic_fracs_t *o);
/* What profile p achieved against GPU g's datasheet: its measured fp16 GEMM ceiling over g's
 * FP16 peak, its copy bandwidth over g's, the median constant term of its kernel laws, its
 * step law's constant.  0, or -1 when p lacks one of them. */
int cost_analytic_derive(const profile_t *p, const hw_gpu_t *g, cost_analytic_fracs_t *o);
void cost_free(cost_model_t *cm);

/* Features of one attention call for law family `law` (an attn.* name).  hw may be NULL
 * (unknown).  0, or -1 for an unknown law name. */
int cost_attn_features(const char *law, const kcall_t *call, const model_t *m,
                       const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF]);
/* Features of one profile point (a row of the law's columns); the route/variant of an
 * attention law comes from its name; the rows of a point are distinct requests.  hw may
 * be NULL (unknown).  0, or -1 for an unknown law name or an impossible point. */
int cost_point_features(const char *law, const double *row, const model_t *m,
                        const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF]);
/* The same for a row of ncols columns (t_s included; 0: the law's shape columns alone): a
 * gemm row of GEMM_COLS_CFG columns carries the kernel cuBLAS picked (tile_n, tile_m,
 * splits), which prices its features from GEMM_SPLIT on (law.h). */
#define GEMM_COLS_CFG LAW_GEMM_NCOLS
int cost_point_features_n(const char *law, const double *row, int ncols, const model_t *m,
                          const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF]);
/* Leave-one-out error of a law's measured grid along its axis (each interior point
 * predicted from its two neighbours): median and max relative error over *n points
 * (NAN and 0 when the law has no grid).  0, or -1 out of memory. */
int cost_grid_loo(const prof_law_t *l, double *median, double *maxe, int *n);
/* The catalogue's (law.h) number of coefficients of a law (0 if unknown). */
int cost_law_ncoef(const char *law);
/* The law's roofline pair (law.h): 1 and the two feature indices *a < *b whose terms
 * combine as max(c_a f_a, c_b f_b), or 0 when every term adds. */
int cost_law_roof(const char *law, int *a, int *b);
/* The law's knee (law.h): 1 and the feature indices *a, *b (term a counts only where
 * feature b exceeds coefficient b, a fitted threshold), or 0 when it has none. */
int cost_law_knee(const char *law, int *a, int *b);

#endif
