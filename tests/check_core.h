/* check_core.h: helpers shared by the core suites (engine, scheduler): write a
 * scenario to a temp file, run it on the analytic cost model, record every step. */
#ifndef CHECK_CORE_H
#define CHECK_CORE_H

#include <check.h>
#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine.h"

#define REC_MAX 4096
#define ROW_MAX 8

typedef struct {
    int n;
    long no[REC_MAX];
    int nrows[REC_MAX];
    step_type_t type[REC_MAX];
    long tokens[REC_MAX];
    step_row_t rows[REC_MAX][ROW_MAX];
    route_t route[REC_MAX][ROW_MAX];   /* route of each row's call */
    long next_eligible[REC_MAX][ROW_MAX];
} recorder_t;

static inline void record_step(void *ctx, const engine_t *e, const step_rec_t *st)
{
    recorder_t *r = ctx;
    if (r->n >= REC_MAX) return;
    int k = r->n++;
    r->no[k] = st->no;
    r->nrows[k] = st->nrows;
    r->type[k] = st->type;
    r->tokens[k] = st->tokens;
    for (int i = 0; i < st->nrows && i < ROW_MAX; i++) {
        r->rows[k][i] = st->rows[i];
        r->next_eligible[k][i] = e->rp.r[st->rows[i].req].next_eligible;
        r->route[k][i] = ROUTE__N;
        for (int c = 0; c < st->plan->ncalls; c++)
            for (int s = 0; s < st->plan->calls[c].nseg; s++)
                if (st->plan->calls[c].segs[s].req == st->rows[i].req) r->route[k][i] = st->plan->calls[c].route;
    }
}

/* A scenario around the reference model; body is appended to the common head. */
static inline const char *scenario_file(const char *body)
{
    static char path[128];
    check_tmp_path(path, sizeof path, "pacesim-check");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "name: t\nseed: 7\nmodel: %s/models/qwen3.8-27b.yaml\n"
               "hardware: {analytic: {tflops: 100, tbps: 1.0}}\n%s", getcwd((char[512]){0}, 512), body);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* Load + run; fills rec (may be NULL) and the engine (caller engine_free()s it). */
static inline int run_engine(const char *body, const char *const *sets, int nsets, recorder_t *rec,
                             engine_t *e, scenario_t *s, cost_model_t **cm)
{
    char err[SCN_ERR_MAX];
    const char *path = scenario_file(body);
    if (scn_load(path, sets, nsets, s, err) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *cm = cost_analytic_new(&s->model, s->engine.tensor_parallel_size, s->analytic_tflops, s->analytic_tbps);
    ck_assert_ptr_nonnull(*cm);
    if (engine_init(e, s, *cm, NULL) < 0) {
        fprintf(stderr, "%s\n", e->err);
        return -1;
    }
    if (rec) {
        memset(rec, 0, sizeof *rec);
        e->observer = record_step;
        e->observer_ctx = rec;
    }
    int rc = engine_run(e);
    if (rc < 0) fprintf(stderr, "%s\n", e->err);
    return rc;
}

static inline void done_engine(engine_t *e, scenario_t *s, cost_model_t *cm)
{
    engine_free(e);
    cost_free(cm);
    scn_free(s);
}

#endif
