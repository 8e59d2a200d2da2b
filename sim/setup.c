/* setup.c: scenario -> profile -> cost model -> engine, once for every command.
 * See setup.h. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ydoc.h"
#include <gsl/gsl_errno.h>
#include "setup.h"
#include "cost_scaled.h"
#include "law.h"

static pthread_once_t gsl_once = PTHREAD_ONCE_INIT;
static void gsl_quiet(void) { gsl_set_error_handler_off(); }

/* The link a profile without an all-reduce law prices TP's all-reduces over: hardware.link,
 * else the catalogue's link of the profile's GPU (hwcat.h), else NULL. */
static const hw_link_t *prof_link_for(const setup_t *u, const scenario_t *s)
{
    if (s->engine.tensor_parallel_size <= 1 || prof_find(&u->prof, "allreduce")) return NULL;
    if (s->link) return s->link;
    const hw_gpu_t *g = hw_gpu_match(u->prof.gpu);
    return g ? hw_link_find(g->link) : NULL;
}

/* The cost model of the scenario: the profile's (after checking that it has every law
 * the scenario needs) or the analytic one.  NULL with u->err set. */
static const hw_link_t *prof_link(const setup_t *u) { return prof_link_for(u, &u->s); }

static cost_model_t *cost_unscaled_for(const setup_t *u, const scenario_t *s, int check, char *err);

/* The cost model of scenario s (the setup's, or one of its cluster pools'): every step at
 * u->cost_scale times its price where that is set (setup_open_scaled). */
static cost_model_t *cost_for(const setup_t *u, const scenario_t *s, int check, char *err)
{
    cost_model_t *cm = cost_unscaled_for(u, s, check, err), *sm;
    if (!cm || u->cost_scale == 0 || u->cost_scale == 1) return cm;
    if (!(sm = cost_scaled_new(cm, u->cost_scale))) {
        cost_free(cm);
        snprintf(err, SETUP_ERR_MAX, "%s: out of memory", s->path);
    }
    return sm;
}

/* The cost model of the scenario: the profile's (after checking that it has every law
 * the scenario needs) or the analytic one.  NULL with err (SETUP_ERR_MAX bytes) set; u is
 * only read. */
static cost_model_t *cost_unscaled_for(const setup_t *u, const scenario_t *s, int check, char *err)
{
    int tp = s->engine.tensor_parallel_size;
    char cerr[COST_ERR_MAX];
    cost_model_t *cm;
    if (!u->has_prof) {
        cost_analytic_hw_t hw;
        if (s->gpu) cost_analytic_hw_gpu(s->gpu, &hw);
        else cost_analytic_hw_peaks(s->analytic_tflops, s->analytic_tbps, &hw);
        if (s->link) hw.link = s->link;
        cm = cost_analytic_new_hw(&s->model, tp, &hw);
        if (!cm) snprintf(err, SETUP_ERR_MAX, "%s: cannot build the analytic cost model", s->path);
        return cm;
    }
    const hw_link_t *link = prof_link_for(u, s);
    if (check) {
        model_rank_t rk;
        int group = model_rank(&s->model, tp, &rk) == 0 ? rk.group : 1;
        if (cost_profile_check_link(&u->prof, &s->model, tp, s->engine.kv_cache_dtype, group, link, cerr) < 0) {
            snprintf(err, SETUP_ERR_MAX, "%s", cerr);
            return NULL;
        }
    }
    cm = cost_profile_new_link(&u->prof, &s->model, tp, link, cerr);
    if (!cm) snprintf(err, SETUP_ERR_MAX, "%s", cerr);
    return cm;
}

static cost_model_t *cost_new(setup_t *u, int check) { return cost_for(u, &u->s, check, u->err); }

/* A cluster pool's replica's cost model (engine_cost_fn): its pool's model and TP degree,
 * the setup's profile or hardware, checked like the scenario's. */
static cost_model_t *pool_cost(void *ctx, const scenario_t *ps, char *err)
{
    char e[SETUP_ERR_MAX];
    cost_model_t *cm = cost_for(ctx, ps, 1, e);
    if (!cm) snprintf(err, ENG_ERR_MAX, "%s", e);
    return cm;
}

/* Append one warning line to u->warn. */
static void warn_add(setup_t *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_add(setup_t *u, const char *fmt, ...)
{
    size_t at = strlen(u->warn);
    if (at + 1 >= sizeof u->warn) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->warn + at, sizeof u->warn - at, fmt, ap);
    va_end(ap);
    at = strlen(u->warn);
    if (at + 1 < sizeof u->warn) snprintf(u->warn + at, sizeof u->warn - at, "\n");
}

/* The hardware's warnings: units that look wrong, what the analytic model assumes, an
 * all-reduce priced by a datasheet rather than measured. */
static void hw_warnings(setup_t *u)
{
    const scenario_t *s = &u->s;
    int tp = s->engine.tensor_parallel_size;
    if (u->has_prof) {
        const hw_link_t *l = prof_link(u);
        if (l)
            warn_add(u, "warning: %s has no all-reduce law: tensor_parallel_size %d's all-reduces priced over %s by its"
                     " datasheet figures (docs/hardware.md), not measured", u->prof.path, tp, l->name);
        return;
    }
    if (s->gpu) return;
    if (s->analytic_tflops >= 1e6)
        warn_add(u, "warning: %s: hardware.analytic.tflops %g is in TFLOP/s (10^12 FLOP/s): did you give FLOP/s?",
                 s->path, s->analytic_tflops);
    if (s->analytic_tbps >= 1e3)
        warn_add(u, "warning: %s: hardware.analytic.tbps %g is in TB/s (10^12 bytes/s): did you give GB/s or bytes/s?",
                 s->path, s->analytic_tbps);
    if (s->analytic_mem_gib >= 1e5)
        warn_add(u, "warning: %s: hardware.analytic.mem_gib %g is in GiB: did you give MiB or bytes?", s->path,
                 s->analytic_mem_gib);
    if (tp > 1 && !s->link)
        warn_add(u, "warning: %s: tensor_parallel_size %d without hardware.link: the analytic model prices the"
                 " all-reduces at 0 (give hardware.link or hardware.gpu)", s->path, tp);
    if (!(s->analytic_mem_gib > 0) && s->engine.num_gpu_blocks <= 0)
        warn_add(u, "warning: %s: hardware.analytic without mem_gib: the KV cache sized from 80 GiB a GPU", s->path);
}

/* A profile's law of no form this revision knows would price nothing (a misspelt optional
 * law, elementwse, left its work at 0 s): refused for a run, named where it stands. */
static int unknown_law(setup_t *u)
{
    for (int i = 0; i < u->prof.nlaws; i++) {
        const prof_law_t *l = &u->prof.laws[i];
        if (law_find(l->name)) continue;
        int n = snprintf(u->err, sizeof u->err, "%s:%d:%d: laws[%d].name: unknown law \"%s\" (it would price its work"
                         " at 0 s; this revision's laws:", u->s.profile_path, l->name_line, l->name_col, i, l->name);
        for (int k = 0; k < LAW__N && n > 0 && (size_t)n < sizeof u->err; k++)
            n += snprintf(u->err + n, sizeof u->err - (size_t)n, "%s%s", k ? ", " : " ", law_form((law_id_t)k)->name);
        if (n > 0 && (size_t)n < sizeof u->err) snprintf(u->err + n, sizeof u->err - (size_t)n, ")");
        setup_msg_line(u->err, sizeof u->err);
        return -1;
    }
    return 0;
}

static int open_parts(setup_t *u, const char *path, const char *const *sets, int nsets)
{
    pthread_once(&gsl_once, gsl_quiet);   /* GSL's handler is process-global: set it once */
    if (scn_load(path, sets, nsets, &u->s, u->err) < 0) return -1;
    u->has_scn = 1;
    const scenario_t *s = &u->s;
    if (s->profile_path[0]) {
        if (prof_load(s->profile_path, &u->prof, u->err) < 0) return -1;
        u->has_prof = 1;
        if (unknown_law(u) < 0) return -1;
        snprintf(u->hw, sizeof u->hw, "%s", u->prof.gpu);
    } else if (s->gpu) {
        snprintf(u->hw, sizeof u->hw, "%s (datasheet, analytic)", s->gpu->full);
    } else {
        snprintf(u->hw, sizeof u->hw, "analytic %.0f TFLOP/s %.2f TB/s", s->analytic_tflops, s->analytic_tbps);
    }
    if (!(u->cost = cost_new(u, 1))) return -1;
    u->has_eng = 1;
    if (setup_engine(u, u->cost, &u->e) < 0) {
        snprintf(u->err, sizeof u->err, "%s", u->e.err);
        return -1;
    }
    if (u->has_prof) {
        FILE *w = fmemopen(u->warn, sizeof u->warn, "w");
        prof_check_model(&u->prof, &s->model, s->engine.tensor_parallel_size, w);
        if (w) fclose(w);
    }
    hw_warnings(u);
    /* a fork knob the upstream scheduler never reads: it ran unpaced, unsaid */
    int up = s->engine.scheduler == SCHED_UPSTREAM;
    for (int i = 0; i < s->cluster.n_pools; i++)
        up |= s->cluster.pools[i].s && s->cluster.pools[i].s->engine.scheduler == SCHED_UPSTREAM;
    if (s->env.pace_steps > 0 && up)
        warn_add(u, "warning: %s: env.VLLM_1CAT_PREFILL_PACE_STEPS %d is the fork scheduler's knob: the upstream"
                 " scheduler (engine.scheduler: upstream) does not pace", s->path, s->env.pace_steps);
    return 0;
}

int setup_open(setup_t *u, const char *path, const char *const *sets, int nsets)
{
    return setup_open_scaled(u, path, sets, nsets, 1);
}

int setup_open_scaled(setup_t *u, const char *path, const char *const *sets, int nsets, double k)
{
    memset(u, 0, sizeof *u);
    u->cost_scale = k;
    if (open_parts(u, path, sets, nsets) < 0) {
        setup_msg_line(u->err, sizeof u->err);
        return -1;
    }
    return 0;
}

int setup_check_trace(setup_t *u)
{
    if (engine_check_trace(&u->e) < 0) {
        snprintf(u->err, sizeof u->err, "%s", u->e.err);
        setup_msg_line(u->err, sizeof u->err);
        return -1;
    }
    return 0;
}

cost_model_t *setup_cost_new(setup_t *u)
{
    return cost_new(u, 0);
}

cost_model_t *setup_cost_new_err(const setup_t *u, char *err)
{
    return cost_for(u, &u->s, 0, err);
}

int setup_engine(const setup_t *u, cost_model_t *cost, engine_t *e)
{
    return engine_init_ex(e, &u->s, cost, u->has_prof ? &u->prof : NULL, pool_cost, (void *)u);
}

void setup_close(setup_t *u)
{
    if (u->has_eng) engine_free(&u->e);
    cost_free(u->cost);
    if (u->has_prof) prof_free(&u->prof);
    if (u->has_scn) scn_free(&u->s);
    u->cost = NULL;
    u->has_eng = u->has_prof = u->has_scn = 0;
}

char *setup_msg_line(char *msg, size_t size)
{
    if (size) msg[size - 1] = 0;          /* a string within its buffer, whatever it held */
    return yd_one_line(msg);
}

void setup_msg(FILE *f, const char *fmt, ...)
{
    char m[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    fprintf(f, "%s\n", setup_msg_line(m, sizeof m));
}

int setup_opt_long(const char *prog, const char *opt, const char *v, long min, long *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno == ERANGE || n < min) {
        setup_msg(stderr, "%s: %s %s: expected an integer >= %ld", prog, opt, v, min);
        return -1;
    }
    *out = n;
    return 0;
}

int setup_opt_pct(const char *prog, const char *v, double *out)
{
    /* plain decimal digits, an optional fraction and '%': no sign, space, exponent, hex, inf or
     * nan, which strtod alone would take ("0x10" is 16) */
    const char *q = v;
    int digits = 0;
    while (*q >= '0' && *q <= '9') q++, digits++;
    if (*q == '.')
        for (q++; *q >= '0' && *q <= '9'; q++) digits++;
    if (*q == '%') q++;
    char *end;
    errno = 0;
    double p = strtod(v, &end);
    if (!digits || *q || errno == ERANGE || !(p > 0 && p <= 50)) {
        setup_msg(stderr, "%s: --error-bars: %s: expected a percentage P, 0 < P <= 50, in decimal digits (e.g. 3 or"
                  " 2.5%%: every step also at 0.97 and 1.03 times its price)", prog, v);
        return -1;
    }
    *out = p;
    return 0;
}

int setup_opt_twice(unsigned *seen, const char *const *once, const char *opt)
{
    size_t n = strlen(opt);
    for (int k = 0; once[k] && k < 32; k++)
        for (const char *p = once[k];; p++) {     /* each of its aliases */
            size_t l = strcspn(p, "|");
            if (l == n && !strncmp(p, opt, n)) {
                if (*seen & 1u << k) return 1;
                *seen |= 1u << k;
                return 0;
            }
            p += l;
            if (!*p) break;
        }
    return 0;
}
