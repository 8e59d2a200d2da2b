/* profile_compare.c: pacesim profile A.yaml --compare B.yaml (profile_compare.h).
 *
 * Four parts, each closing on how many of its lines differ:
 *   metadata   the GPU, its ceilings, the TP degree and model the laws were made for, the
 *              toolkit, the sustained-load clock, the kernels' recorded configurations;
 *   laws       per law of either profile: its points, its fit's error, and per coefficient
 *              (by the catalogue's feature name) A's and B's value and B / A;
 *   items      the reference experiment as the simulator runs it (its own profile and
 *              scheduler): every item of every step (cost_enumerate) priced by A and by B as
 *              the simulator prices it (cost_profile_item: the measured points where they
 *              hold the item, else the law, at the card's heat the profile's own run of
 *              these steps would have); per law the items, the seconds A and B give them,
 *              B / A and the share of them priced from points; beside, the steps priced
 *              whole by each model (the same sum); a profile whose model refuses the scenario
 *              prices an item by its law (or its fallback, cost_law_fallback) or counts it
 *              unpriced;
 *   envelope   the shapes each profile measured, and per law its points' ranges.
 * "no difference" when all four agree. */
#include "profile_compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "engine.h"
#include "hwcat.h"
#include "law.h"
#include "model.h"
#include "profile.h"
#include "setup.h"

#define CMP_MAX_LAWS 256

typedef struct cmp_law {          /* the items of one law, priced by both profiles */
    char name[64];
    double items;                 /* item runs (x count) */
    double sec[2];                /* seconds each profile gives them */
    double grid[2];               /* of which item runs priced from measured points */
    double unpriced[2];           /* item runs the profile has no law for */
} cmp_law_t;

typedef struct cmp_run {
    cost_model_t *inner;          /* the scenario's own model: the engine's prices */
    cost_model_t *pm[2];          /* A's and B's models, NULL where one cannot be built */
    const profile_t *p[2];
    cost_hw_t hw[2];
    char why[2][COST_ERR_MAX];    /* why pm[i] is NULL */
    char link[2][32];             /* the link its all-reduces are priced over ("" none) */
    const model_t *m;
    model_rank_t r;
    cmp_law_t law[CMP_MAX_LAWS];
    int nlaw, overflow;
    int dropped;                  /* a model refused a step of the run: it is left out, the run redone */
    long steps;
    double step_sec[2];           /* the steps' items summed, per profile */
    double whole_sec[2];          /* the steps priced whole by each profile's model */
} cmp_run_t;

static int same(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* the price of an item by profile i: the simulator's (the profile's model), else the law's
 * (or its fallback's) value at the item's features; -1 when neither prices it */
static int price(cmp_run_t *c, int i, const cost_item_t *it, const char *lawname, double *sec, int *grid)
{
    *grid = 0;
    if (c->pm[i] && cost_profile_item(c->pm[i], it, sec, grid) == 0) return 0;
    const prof_law_t *l = prof_find(c->p[i], lawname);
    const char *fb = cost_law_fallback(lawname);
    if (!l && fb) l = prof_find(c->p[i], fb);
    double feat[PROF_MAX_COEF];
    if (!l || cost_item_features(it, c->m, &c->r, &c->hw[i], feat) < 0) return -1;
    *grid = 0;
    *sec = prof_eval(l, feat) * it->count;
    return 0;
}

static int on_item(void *ctx, const cost_item_t *it)
{
    cmp_run_t *c = ctx;
    char buf[96];
    const char *name = cost_item_law(it, buf, sizeof buf);
    int k;
    for (k = 0; k < c->nlaw && strcmp(c->law[k].name, name); k++)
        ;
    if (k == c->nlaw) {
        if (c->nlaw == CMP_MAX_LAWS) {
            c->overflow = 1;
            return 0;
        }
        snprintf(c->law[c->nlaw++].name, sizeof c->law[0].name, "%s", name);
    }
    cmp_law_t *l = &c->law[k];
    l->items += it->count;
    for (int i = 0; i < 2; i++) {
        double s;
        int g;
        if (price(c, i, it, name, &s, &g) < 0) {
            l->unpriced[i] += it->count;
            continue;
        }
        l->sec[i] += s;
        c->step_sec[i] += s;
        if (g) l->grid[i] += it->count;
    }
    return 0;
}

/* the engine's cost model: the scenario's own prices, the step's items priced by A and B beside */
static int cmp_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *out)
{
    cmp_run_t *c = cm->impl;
    if (c->inner->step(c->inner, in, out) < 0) {
        snprintf(cm->err, sizeof cm->err, "%s", c->inner->err);
        return -1;
    }
    c->steps++;
    /* each profile's model prices the step whole first, as a run priced by it would: its state
     * (the card's heat over this step) is then the one its items are priced at below */
    for (int i = 0; i < 2; i++) {
        cost_breakdown_t b;
        if (!c->pm[i]) continue;
        if (c->pm[i]->step(c->pm[i], in, &b) < 0) {   /* e.g. a law one of its steps needs is missing */
            snprintf(c->why[i], sizeof c->why[i], "%s", c->pm[i]->err);
            snprintf(cm->err, sizeof cm->err, "%s: %s", c->p[i]->path, c->pm[i]->err);
            cost_free(c->pm[i]);
            c->pm[i] = NULL;
            c->dropped = 1;
            return -1;
        }
        c->whole_sec[i] += b.total;
    }
    return cost_enumerate(c->m, &c->r, in, on_item, c);
}

static void cmp_destroy(cost_model_t *cm) { (void)cm; }

/* ---- the printed parts ------------------------------------------------------------ */

static int meta_line(FILE *o, const char *what, const char *a, const char *b)
{
    int d = strcmp(a, b) != 0;
    fprintf(o, "   %-24s %-32s %-32s%s\n", what, a, b, d ? "  *" : "");
    return d;
}

static int meta_num(FILE *o, const char *what, double a, double b, const char *fmt)
{
    char x[64], y[64];
    if (isnan(a)) snprintf(x, sizeof x, "-");
    else snprintf(x, sizeof x, fmt, a);
    if (isnan(b)) snprintf(y, sizeof y, "-");
    else snprintf(y, sizeof y, fmt, b);
    fprintf(o, "   %-24s %-32s %-32s%s\n", what, x, y, same(a, b) ? "" : "  *");
    return !same(a, b);
}

/* the clock's fall as pricing takes it (prof_tau_up) */
static double fall_ms(const profile_t *p) { return p->has_sustained ? 1e3 * prof_tau_up(p) : NAN; }

static int print_meta(FILE *o, const profile_t *a, const profile_t *b)
{
    int d = 0;
    fprintf(o, "metadata                    %-32s %-32s\n", "A", "B");
    d += meta_line(o, "gpu", a->gpu, b->gpu);
    d += meta_num(o, "SMs", a->sms, b->sms, "%.0f");
    d += meta_num(o, "memory GiB", a->mem_gib, b->mem_gib, "%.1f");
    d += meta_num(o, "copy GB/s", a->mem_bw_gbs, b->mem_bw_gbs, "%.0f");
    d += meta_num(o, "fp16 TFLOP/s", a->peak_fp16_tflops, b->peak_fp16_tflops, "%.1f");
    d += meta_num(o, "TP degree", a->tp, b->tp, "%.0f");
    d += meta_line(o, "model", a->model, b->model);
    d += meta_line(o, "toolkit", a->toolkit, b->toolkit);
    d += meta_line(o, "driver", a->driver, b->driver);
    d += meta_num(o, "SM clock MHz", a->sm_clock_mhz, b->sm_clock_mhz, "%.0f");
    d += meta_num(o, "sustained: cold MHz", a->has_sustained ? a->clock_cold_mhz : NAN,
                  b->has_sustained ? b->clock_cold_mhz : NAN, "%.0f");
    d += meta_num(o, "sustained: hot MHz", a->has_sustained ? a->clock_hot_mhz : NAN,
                  b->has_sustained ? b->clock_hot_mhz : NAN, "%.0f");
    /* the clock's time constants: the heat model's least repeatable inputs (two calibs of one
     * card can differ twofold: docs/validation.md, "One card, two calibs") */
    d += meta_num(o, "sustained: fall ms", fall_ms(a), fall_ms(b), "%.1f");
    d += meta_num(o, "sustained: recovery ms", a->has_sustained ? 1e3 * a->tau_down_s : NAN,
                  b->has_sustained ? 1e3 * b->tau_down_s : NAN, "%.1f");
    d += meta_num(o, "fp8 expansion tok/CTA", a->expand_cta_tokens, b->expand_cta_tokens, "%.0f");
    d += meta_num(o, "prefill split max", a->split_max, b->split_max, "%.0f");
    fprintf(o, "   %d of 16 differ (*)\n", d);
    return d;
}

static const char *feat_name(const char *law, int i, char *buf, size_t n)
{
    const law_form_t *f = law_find(law);
    if (f && f->feat && i < f->ncoef) return f->feat[i];
    snprintf(buf, n, "c%d", i);
    return buf;
}

static void ratio(FILE *o, double a, double b)
{
    if (a != 0 && isfinite(a) && isfinite(b)) fprintf(o, " %9.3f", b / a);
    else fprintf(o, " %9s", "-");
}

/* per law of A, then the laws only B has: 1 per law that differs */
static int print_laws(FILE *o, const profile_t *a, const profile_t *b, int *only_a, int *only_b)
{
    int d = 0;
    *only_a = *only_b = 0;
    fprintf(o, "laws: per coefficient A, B and B / A (features: sim/law.h)\n");
    for (int pass = 0; pass < 2; pass++) {
        const profile_t *x = pass ? b : a, *y = pass ? a : b;
        for (int k = 0; k < x->nlaws; k++) {
            const prof_law_t *la = &x->laws[k], *lb = prof_find(y, la->name);
            if (pass && lb) continue;            /* both have it: printed in the first pass */
            if (!lb) {
                fprintf(o, "   %-34s only in %s (%d coefficients, %d points)\n", la->name, pass ? "B" : "A",
                        la->ncoef, la->npts);
                if (pass) (*only_b)++;
                else (*only_a)++;
                continue;
            }
            int n = la->ncoef > lb->ncoef ? la->ncoef : lb->ncoef, diff = la->ncoef != lb->ncoef;
            for (int i = 0; i < n && !diff; i++) diff = !same(la->coef[i], lb->coef[i]);
            char fa[32], fb[32];
            if (la->fit_median_rel >= 0) snprintf(fa, sizeof fa, "%.1f%%", 100 * la->fit_median_rel);
            else snprintf(fa, sizeof fa, "-");
            if (lb->fit_median_rel >= 0) snprintf(fb, sizeof fb, "%.1f%%", 100 * lb->fit_median_rel);
            else snprintf(fb, sizeof fb, "-");
            /* the law's slowdown at the heater's clock (sustained.hot): every item of the law is priced
             * by it at a lower clock */
            int hdiff = la->has_sustained != lb->has_sustained || (la->has_sustained && !same(la->hot, lb->hot));
            fprintf(o, "   %-34s points %d / %d, fit median %s / %s: %s\n", la->name, la->npts, lb->npts, fa, fb,
                    diff ? "coefficients differ" : hdiff ? "same coefficients, other sustained hot" : "same coefficients");
            if (!diff && !hdiff) continue;
            d++;
            if (la->has_sustained || lb->has_sustained) {
                char xa[24] = "-", xb[24] = "-";
                if (la->has_sustained) snprintf(xa, sizeof xa, "%.4g", la->hot);
                if (lb->has_sustained) snprintf(xb, sizeof xb, "%.4g", lb->hot);
                fprintf(o, "      %-30s %12s %12s", "sustained hot", xa, xb);
                ratio(o, la->has_sustained ? la->hot : NAN, lb->has_sustained ? lb->hot : NAN);
                fprintf(o, "%s\n", hdiff ? "  *" : "");
            }
            for (int i = 0; i < n && diff; i++) {
                char buf[16];
                double ca = i < la->ncoef ? la->coef[i] : NAN, cb = i < lb->ncoef ? lb->coef[i] : NAN;
                char xa[24], xb[24];
                if (i < la->ncoef) snprintf(xa, sizeof xa, "%.4g", ca);
                else snprintf(xa, sizeof xa, "-");
                if (i < lb->ncoef) snprintf(xb, sizeof xb, "%.4g", cb);
                else snprintf(xb, sizeof xb, "-");
                fprintf(o, "      %-30s %12s %12s", feat_name(la->name, i, buf, sizeof buf), xa, xb);
                ratio(o, ca, cb);
                fprintf(o, "%s\n", same(ca, cb) ? "" : "  *");
            }
        }
    }
    fprintf(o, "   %d laws in both with other coefficients or sustained hot, %d only in A, %d only in B\n", d, *only_a,
            *only_b);
    return d + *only_a + *only_b;
}

/* calib's GEMMs across shapes (sustained.gemm_hot_probes; recorded, not priced): per shape in
 * either profile, the two passes' geometric mean in A and B and B / A.  Printed only where one has
 * them; not counted among the differences, as nothing is priced by them. */
static void print_gprobes(FILE *o, const profile_t *a, const profile_t *b)
{
    if (!a->ngprobe && !b->ngprobe) return;
    fprintf(o, "calib's GEMMs after the heater over after the light load (recorded, not priced): the two passes' "
               "mean, A, B and B / A\n");
    for (int pass = 0; pass < 2; pass++) {
        const profile_t *x = pass ? b : a, *y = pass ? a : b;
        for (int i = 0; i < x->ngprobe; i++) {
            const double *r = x->gprobe[i];
            int j = 0;
            while (j < y->ngprobe && !(y->gprobe[j][0] == r[0] && y->gprobe[j][1] == r[1] && y->gprobe[j][2] == r[2]))
                j++;
            if (pass && j < y->ngprobe) continue;   /* in both: printed in A's pass */
            char shape[96], ha[16] = "-", hb[16] = "-";
            double hx = sqrt(r[4] * r[5]), hy = j < y->ngprobe ? sqrt(y->gprobe[j][4] * y->gprobe[j][5]) : NAN;
            snprintf(shape, sizeof shape, "gemm %.0f x %.0f x %.0f", r[0], r[1], r[2]);
            snprintf(pass ? hb : ha, 16, "%.3f", hx);
            if (!isnan(hy)) snprintf(hb, sizeof hb, "%.3f", hy);
            fprintf(o, "   %-34s %12s %12s", shape, ha, hb);
            if (!isnan(hy)) fprintf(o, " %9.3f\n", hy / hx);
            else fprintf(o, "  (only in %s)\n", pass ? "B" : "A");
        }
    }
}

static int print_items(FILE *o, const cmp_run_t *c, const char *scn)
{
    int d = 0;
    fprintf(o, "items of %s (%ld steps, as the simulator runs it with its own profile), each priced by A and B\n",
            scn, c->steps);
    for (int i = 0; i < 2; i++)
        if (c->pm[i] && c->link[i][0])
            fprintf(o, "   %s: no all-reduce law: its all-reduces priced over %s by the link's datasheet (docs/hardware.md)\n",
                    i ? "B" : "A", c->link[i]);
    for (int i = 0; i < 2; i++)
        if (!c->pm[i])
            fprintf(o, "   %s: its cost model does not take this scenario (%s): its items priced by their laws\n",
                    i ? "B" : "A", c->why[i]);
    fprintf(o, "   %-34s %12s %12s %12s %9s %8s %8s\n", "law", "item runs", "A s", "B s", "B / A", "A grid", "B grid");
    for (int k = 0; k < c->nlaw; k++) {
        const cmp_law_t *l = &c->law[k];
        int diff = !same(l->sec[0], l->sec[1]) || !same(l->unpriced[0], l->unpriced[1]) ||
                   !same(l->grid[0], l->grid[1]);
        d += diff;
        fprintf(o, "   %-34s %12.0f %12.6g %12.6g", l->name, l->items, l->sec[0], l->sec[1]);
        ratio(o, l->sec[0], l->sec[1]);
        fprintf(o, " %7.0f%% %7.0f%%%s", 100 * l->grid[0] / l->items, 100 * l->grid[1] / l->items, diff ? "  *" : "");
        if (l->unpriced[0] > 0 || l->unpriced[1] > 0)
            fprintf(o, "  (no law: A %.0f, B %.0f item runs)", l->unpriced[0], l->unpriced[1]);
        fprintf(o, "\n");
    }
    fprintf(o, "   %-34s %12s %12.6g %12.6g", "all items", "", c->step_sec[0], c->step_sec[1]);
    ratio(o, c->step_sec[0], c->step_sec[1]);
    fprintf(o, "\n   %-34s %12s", "the steps priced whole", "");
    for (int i = 0; i < 2; i++)
        if (c->pm[i]) fprintf(o, " %12.6g", c->whole_sec[i]);
        else fprintf(o, " %12s", "-");
    fprintf(o, "\n   %d of %d laws' items priced otherwise (*)%s\n", d, c->nlaw,
            c->overflow ? "; more laws than listed (the rest left out)" : "");
    return d;
}

static int print_envelope(FILE *o, const profile_t *a, const profile_t *b)
{
    int d = 0;
    char x[96], y[96];
    const profile_t *p[2] = {a, b};
    char *s[2] = {x, y};
    for (int i = 0; i < 2; i++) {
        if (p[i]->has_envelope)
            snprintf(s[i], 96, "TP%d, %d q / %d kv heads, head_dim %d", p[i]->env_tp, p[i]->env_q_heads,
                     p[i]->env_kv_heads, p[i]->env_head_dim);
        else snprintf(s[i], 96, "not recorded");
    }
    fprintf(o, "envelope: the shapes measured, per law its points' ranges (A | B)\n");
    d += meta_line(o, "attention shapes", x, y);
    for (int k = 0; k < a->nlaws; k++) {
        const prof_law_t *la = &a->laws[k], *lb = prof_find(b, la->name);
        if (!lb) continue;
        double lo[2][PROF_MAX_COLS], hi[2][PROF_MAX_COLS];
        int na = prof_law_range(la, lo[0], hi[0]), nb = prof_law_range(lb, lo[1], hi[1]);
        if (!na && !nb) continue;
        int diff = na != nb;
        for (int c = 0; c < na && !diff; c++) diff = !same(lo[0][c], lo[1][c]) || !same(hi[0][c], hi[1][c]);
        if (!diff) continue;
        d++;
        fprintf(o, "   %-34s", la->name);
        for (int c = 0; c < na; c++) fprintf(o, " %s %g..%g", la->cols[c], lo[0][c], hi[0][c]);
        if (!na) fprintf(o, " no points");
        fprintf(o, "\n   %-34s", "");
        for (int c = 0; c < nb; c++) fprintf(o, " %s %g..%g", lb->cols[c], lo[1][c], hi[1][c]);
        if (!nb) fprintf(o, " no points");
        fprintf(o, "\n");
    }
    fprintf(o, "   %d differ (laws in both; the others are listed under laws)\n", d);
    return d;
}

int profile_compare_cmd(int argc, char **argv, FILE *out)
{
    const char *fa = NULL, *fb = NULL, *scn = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--compare") || !strcmp(argv[i], "--scenario")) {
            const char **v = argv[i][2] == 'c' ? &fb : &scn;
            if (i + 1 >= argc || *v) {   /* a second one: which is meant? */
                fprintf(stderr, "pacesim: profile %s %s (pacesim profile A.yaml --compare B.yaml [--scenario FILE])\n",
                        argv[i], *v ? "given twice" : "needs a file");
                return 2;
            }
            *v = argv[++i];
        } else if (argv[i][0] == '-' || fa) {
            fprintf(stderr, "pacesim: profile --compare: unexpected argument %s (pacesim profile A.yaml --compare "
                            "B.yaml [--scenario FILE])\n", argv[i]);
            return 2;
        } else fa = argv[i];
    }
    if (!fa || !fb) {
        fprintf(stderr, "pacesim: profile --compare needs two profiles: pacesim profile A.yaml --compare B.yaml\n");
        return 2;
    }
    if (!scn) scn = PROFILE_COMPARE_SCENARIO;
    profile_t pa, pb;
    char err[PROF_ERR_MAX];
    if (prof_load(fa, &pa, err) < 0) {
        setup_msg(stderr, "%s", err);
        return 2;
    }
    if (prof_load(fb, &pb, err) < 0) {
        setup_msg(stderr, "%s", err);
        prof_free(&pa);
        return 2;
    }
    int rc = 0;
    setup_t u;
    cmp_run_t *c = calloc(1, sizeof *c);
    cost_model_t wrap = {.name = "compare", .step = cmp_step, .destroy = cmp_destroy};
    engine_t e;
    cost_model_t *fresh = NULL;  /* the scenario's model for a run redone (u.cost the first's) */
    int has_e = 0, refused[2] = {0, 0};
    if (!c) {
        fprintf(stderr, "pacesim: profile --compare: out of memory\n");
        prof_free(&pa);
        prof_free(&pb);
        return 1;
    }
    memset(&u, 0, sizeof u);
    if (setup_open(&u, scn, NULL, 0) < 0) {
        setup_msg(stderr, "%s", u.err);
        rc = 2;
        goto done;
    }
    const scenario_t *s = &u.s;
    int tp = s->engine.tensor_parallel_size;
    if (s->cluster.enabled) {    /* its steps are its replicas', not one engine's run of its workload */
        setup_msg(stderr, "%s:%d:%d: cluster: --compare prices the steps of one engine; give --scenario a scenario "
                  "without cluster:", scn, s->cluster.line, s->cluster.col);
        rc = 2;
        goto done;
    }
    c->inner = u.cost;
    c->m = &s->model;
    c->p[0] = &pa;
    c->p[1] = &pb;
    if (model_rank(&s->model, tp, &c->r) != 0) {
        setup_msg(stderr, "%s: model %s does not split at TP%d", scn, s->model.name, tp);
        rc = 2;
        goto done;
    }
    wrap.impl = c;
    for (;;) {                   /* a run; again from the start where a model refused a step */
        for (int i = 0; i < 2; i++) {
            char cerr[COST_ERR_MAX];
            if (refused[i]) continue;
            cost_free(c->pm[i]);  /* a fresh one: a run left off left its state (the card's heat) */
            c->hw[i] = cost_hw_of(c->p[i]);
            /* as the simulator builds it (sim/setup.c): a profile without an all-reduce law at TP > 1
             * prices the all-reduces over the scenario's link, else its GPU's catalogue link */
            const hw_link_t *link = NULL;
            if (tp > 1 && !prof_find(c->p[i], "allreduce")) {
                const hw_gpu_t *g = hw_gpu_match(c->p[i]->gpu);
                link = s->link ? s->link : g ? hw_link_find(g->link) : NULL;
                if (link) snprintf(c->link[i], sizeof c->link[i], "%s", link->name);
            }
            c->pm[i] = cost_profile_new_link(c->p[i], &s->model, tp, link, cerr);   /* NULL: priced by the laws alone */
            if (!c->pm[i]) snprintf(c->why[i], sizeof c->why[i], "%s", setup_msg_line(cerr, sizeof cerr));
            if (c->pm[i]) cost_profile_envelope_quiet(c->pm[i]);
        }
        has_e = 1;               /* engine_free releases what engine_init acquired, also after failure */
        if (setup_engine(&u, &wrap, &e) < 0) {
            setup_msg(stderr, "%s", e.err);
            rc = 1;
            goto done;
        }
        if (engine_run(&e) == 0) break;
        if (!c->dropped) {
            setup_msg(stderr, "%s", e.err);
            rc = 1;
            goto done;
        }
        /* a profile's model refused a step (it does not take this scenario): the run again from
         * the start without it, its items priced by their laws (at most once per profile) */
        for (int i = 0; i < 2; i++) refused[i] |= !c->pm[i];
        engine_free(&e);
        has_e = 0;
        cost_profile_envelope_quiet(c->inner);   /* a run left off: its warnings are the next one's */
        cost_model_t *f = setup_cost_new(&u);
        if (!f) {
            setup_msg(stderr, "%s", u.err);
            rc = 1;
            goto done;
        }
        cost_free(fresh);
        c->inner = fresh = f;
        c->dropped = c->nlaw = c->overflow = 0;
        c->steps = 0;
        memset(c->law, 0, sizeof c->law);
        memset(c->step_sec, 0, sizeof c->step_sec);
        memset(c->whole_sec, 0, sizeof c->whole_sec);
    }
    fprintf(out, "== A %s: %s, TP%d, model %s\n== B %s: %s, TP%d, model %s\n", fa, pa.gpu, pa.tp, pa.model, fb, pb.gpu,
            pb.tp, pb.model);
    int dm = print_meta(out, &pa, &pb), oa, ob;
    int dl = print_laws(out, &pa, &pb, &oa, &ob);
    print_gprobes(out, &pa, &pb);
    int di = print_items(out, c, scn);
    int de = print_envelope(out, &pa, &pb);
    if (!dm && !dl && !di && !de) fprintf(out, "no difference: metadata, laws, item prices and envelope agree\n");
    else
        fprintf(out, "differences: metadata %d, laws %d (%d only in A, %d only in B), item prices %d of %d laws, "
                     "envelope %d\n", dm, dl, oa, ob, di, c->nlaw, de);
done:
    if (has_e) engine_free(&e);
    cost_free(fresh);
    for (int i = 0; i < 2; i++) cost_free(c->pm[i]);
    setup_close(&u);
    free(c);
    prof_free(&pa);
    prof_free(&pb);
    return rc;
}
