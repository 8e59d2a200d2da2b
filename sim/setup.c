/* setup.c: scenario -> profile -> cost model -> engine, once for every command.
 * See setup.h. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ydoc.h"
#include <gsl/gsl_errno.h>
#include "setup.h"

static pthread_once_t gsl_once = PTHREAD_ONCE_INIT;
static void gsl_quiet(void) { gsl_set_error_handler_off(); }

/* The cost model of the scenario: the profile's (after checking that it has every law
 * the scenario needs) or the analytic one.  NULL with u->err set. */
static cost_model_t *cost_new(setup_t *u, int check)
{
    const scenario_t *s = &u->s;
    int tp = s->engine.tensor_parallel_size;
    char cerr[COST_ERR_MAX];
    cost_model_t *cm;
    if (!u->has_prof) {
        cm = cost_analytic_new(&s->model, tp, s->analytic_tflops, s->analytic_tbps);
        if (!cm) snprintf(u->err, sizeof u->err, "%s: cannot build the analytic cost model", s->path);
        return cm;
    }
    if (check) {
        model_rank_t rk;
        int group = model_rank(&s->model, tp, &rk) == 0 ? rk.group : 1;
        if (cost_profile_check(&u->prof, &s->model, tp, s->engine.kv_cache_dtype, group, cerr) < 0) {
            snprintf(u->err, sizeof u->err, "%s", cerr);
            return NULL;
        }
    }
    cm = cost_profile_new(&u->prof, &s->model, tp, cerr);
    if (!cm) snprintf(u->err, sizeof u->err, "%s", cerr);
    return cm;
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
        snprintf(u->hw, sizeof u->hw, "%s", u->prof.gpu);
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
    return 0;
}

int setup_open(setup_t *u, const char *path, const char *const *sets, int nsets)
{
    memset(u, 0, sizeof *u);
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

int setup_engine(const setup_t *u, cost_model_t *cost, engine_t *e)
{
    return engine_init(e, &u->s, cost, u->has_prof ? &u->prof : NULL);
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
