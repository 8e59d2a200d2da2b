/* check_models: the model library (models/NAME.yaml) against what is published about each
 * model and against physical floors.
 *  - every library model loads, and its parameter count (all experts, the input embedding
 *    added back) is within 1.5% of the published total (norms and biases are not modelled);
 *  - a decode step of B rows at context L priced by the analytic model is at least each
 *    physical floor -- (weights the step touches + KV it reads) / bandwidth, FLOPs / peak --
 *    and at most twice their sum plus the launches and the host overhead the model adds
 *    (the fork's scalar decode kernel reads the KV once per query head of a group: its KV
 *    term is that many times larger);
 *  - every library scenario (scenarios/lib/) runs on the H200 profile and on the roofline
 *    stand-in, or -- the varlen backend without its law in the profile -- is refused with
 *    one message naming the missing law, and runs on a profile that has it
 *    (tests/data/profiles/h200-varlen-moe.yaml: the H200 profile plus the two laws with
 *    hand-set coefficients, a fixture for the pricing path);
 *  - MoE: a step's routed-expert items hold every token-expert assignment once per sparse
 *    layer and one grouped launch per layer and GEMM, uniform or skewed. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check_run.h"
#include "cost.h"
#include "runner.h"
#include "scenario.h"

static const struct { const char *path; double published; } lib[] = {
    /* totals from the model cards / safetensors index of each published checkpoint */
    { "models/llama-3.1-8b.yaml", 8.03e9 },
    { "models/qwen3-14b.yaml", 14.8e9 },
    { "models/qwen3-32b.yaml", 32.8e9 },
    { "models/qwen3-30b-a3b.yaml", 30.5e9 },
    { "models/qwen3-next-80b-a3b.yaml", 79.674391296e9 },
    { "models/qwen3-next-80b-a3b-fp8.yaml", 79.674391296e9 },
};

#define TFLOPS 990.0
#define TBPS 4.8
#define LAUNCH 5e-6      /* cost_analytic.c: per kernel */
#define HOST 2e-3        /* cost_analytic.c: per step */

static model_t load(const char *path)
{
    model_t m;
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model(path, &m, err) == 0, "%s", err);
    return m;
}

START_TEST(published_parameter_count)
{
    model_t m = load(lib[_i].path);
    model_rank_t r;
    ck_assert_int_eq(model_rank(&m, 1, &r), 0);
    double total = r.params + (double)m.vocab * m.hidden;     /* + the input embedding */
    ck_assert_msg(fabs(total / lib[_i].published - 1) < 0.015, "%s: %.4g parameters, published %.4g", lib[_i].path,
                  total, lib[_i].published);
}
END_TEST

/* Weights one step of T tokens reads, from the model's fields (not model_rank's sums). */
static double touched_params(const model_t *m, long T)
{
    double h = m->hidden, D = m->head_dim;
    double attn = h * (m->n_q_heads * D * (m->attn_output_gate ? 2 : 1) + 2.0 * m->n_kv_heads * D) + m->n_q_heads * D * h;
    double gv = (double)m->gdn_v_heads * m->gdn_head_dim_v;
    double gdn = h * (2.0 * m->gdn_k_heads * m->gdn_head_dim_k + 2 * gv + 2.0 * m->gdn_v_heads) + gv * h;
    double dense = 3.0 * h * m->intermediate;
    int n_moe = model_moe_layers(m);
    double moe = 0;
    if (n_moe) {
        long used = T * m->moe_topk < m->moe_experts ? T * m->moe_topk : m->moe_experts;
        moe = h * m->moe_experts + 3.0 * h * m->moe_shared * m->moe_shared_inter + used * 3.0 * h * m->moe_inter;
    }
    return m->n_full_attn * attn + m->n_gdn * gdn + (m->n_layers - n_moe) * dense + n_moe * moe + h * m->vocab;
}

typedef struct { int items; double launches; } tally_t;
static int count_item(void *ctx, const cost_item_t *it)
{
    tally_t *t = ctx;
    t->items++;
    t->launches += it->kind == CI_STEP || it->kind == CI_ALLREDUCE ? 0 : it->count;
    return 0;
}

static const struct { int rows; long ctx; } steps[] = { { 1, 1024 }, { 32, 4096 }, { 128, 2048 }, { 8, 32768 } };

START_TEST(decode_step_above_physical_floors)
{
    for (int li = 0; li < CHECK_N(lib); li++) {
        model_t m = load(lib[li].path);
        model_rank_t r;
        ck_assert_int_eq(model_rank(&m, 1, &r), 0);
        int B = steps[_i].rows;
        long L = steps[_i].ctx;
        kseg_t *rows = calloc((size_t)B, sizeof *rows);
        for (int k = 0; k < B; k++) rows[k] = (kseg_t){ .req = k, .q = 1, .seq_len = L };
        for (int varlen = 0; varlen < 2; varlen++) {
            route_cfg_t cfg = { .smallq_max_q = 16, .page = 16, .kv_dtype = KV_FP16, .group = r.group,
                                .fp8_bridge_page = ROUTE_NATIVE_PAGE, .varlen = varlen };
            route_plan_t plan;
            route_plan_init(&plan);
            ck_assert_int_eq(route_step(&cfg, rows, B, &plan), 0);
            cost_step_t in = { .plan = &plan, .tokens = B, .rows = B, .decode_rows = B, .sampled = B };
            cost_model_t *cm = cost_analytic_new(&m, 1, TFLOPS, TBPS);
            ck_assert_ptr_nonnull(cm);
            cost_breakdown_t o;
            ck_assert_int_eq(cm->step(cm, &in, &o), 0);
            tally_t t = { 0, 0 };
            cost_enumerate(&m, &r, &in, count_item, &t);
            double kv = (double)B * L * m.n_full_attn * model_attn_bytes_per_token(&m, 1, 2);
            double wbytes = touched_params(&m, B) * m.weight_bytes_per_param;
            double bytes_floor = (wbytes + kv) / (TBPS * 1e12);
            double flops = 2.0 * touched_params(&m, B) * B;
            if (model_moe_layers(&m)) {   /* a token runs its top-k experts, not every touched one */
                double h = m.hidden;
                long used = (long)B * m.moe_topk < m.moe_experts ? (long)B * m.moe_topk : m.moe_experts;
                flops -= 2.0 * B * model_moe_layers(&m) * 3.0 * h * m.moe_inter * (used - m.moe_topk);
            }
            flops += 4.0 * m.n_q_heads * (double)L * m.head_dim * m.n_full_attn * B;
            double flops_floor = flops / (TFLOPS * 1e12);
            int scalar = plan.ncalls == 1 && plan.calls[0].route == ROUTE_DECODE_SCALAR;
            double kv_read = scalar ? kv * r.group : kv;
            double ceiling = 2 * ((wbytes + kv_read) / (TBPS * 1e12) + flops_floor) + t.launches * LAUNCH + HOST;
            ck_assert_msg(o.total >= bytes_floor && o.total >= flops_floor,
                          "%s B=%d L=%ld varlen=%d: %.4g s under a floor (bytes %.4g, flops %.4g)", lib[li].path, B,
                          L, varlen, o.total, bytes_floor, flops_floor);
            ck_assert_msg(o.total <= ceiling, "%s B=%d L=%ld varlen=%d: %.4g s past %.4g (floors %.4g, %.4g)",
                          lib[li].path, B, L, varlen, o.total, ceiling, bytes_floor, flops_floor);
            cost_free(cm);
            route_plan_free(&plan);
        }
        free(rows);
    }
}
END_TEST

typedef struct { double assigned, launches, up_n; } moe_tally_t;
static int moe_item(void *ctx, const cost_item_t *it)
{
    moe_tally_t *t = ctx;
    if (it->kind != CI_GEMM || !it->moe) return 0;
    if (it->n == t->up_n) t->assigned += it->m * it->count;   /* gate+up: every assignment once */
    if (it->moe == 2) t->launches += it->count / it->experts;
    return 0;
}

/* The routed experts of a step: the items hold every token-expert assignment exactly once
 * per sparse layer (tokens x experts_per_token), and one grouped launch per layer for each
 * of the two GEMMs, uniform or skewed. */
START_TEST(moe_items_conserve_assignments)
{
    const char *paths[] = { "models/qwen3-30b-a3b.yaml", "models/qwen3-next-80b-a3b.yaml" };
    const long tokens[] = { 1, 3, 16, 100, 4096 };
    const double skews[] = { 0, 0.5, 1.0, 2.0, 8.0 };
    for (int pi = 0; pi < 2; pi++) {
        model_t m = load(paths[pi]);
        model_rank_t r;
        ck_assert_int_eq(model_rank(&m, 1, &r), 0);
        for (int ti = 0; ti < CHECK_N(tokens); ti++)
            for (int si = 0; si < CHECK_N(skews); si++) {
                m.moe_skew = skews[si];
                cost_step_t in = { .tokens = tokens[ti], .rows = 1, .sampled = 1 };
                moe_tally_t t = { 0, 0, (double)r.moe_up_n };
                ck_assert_int_eq(cost_enumerate(&m, &r, &in, moe_item, &t), 0);
                ck_assert_double_eq_tol(t.assigned, (double)tokens[ti] * m.moe_topk * m.n_moe, 1e-6);
                ck_assert_double_eq_tol(t.launches, 2.0 * m.n_moe, 1e-9);
            }
    }
}
END_TEST

static const struct { const char *path; int varlen; } scen[] = {
    { "scenarios/lib/llama-3.1-8b.yaml", 0 }, { "scenarios/lib/qwen3-32b.yaml", 0 },
    { "scenarios/lib/qwen3-30b-a3b.yaml", 0 },
    { "scenarios/lib/qwen3-next-80b-a3b.yaml", 0 },   /* the roofline's 80 GiB: 400 blocks set */
    { "scenarios/lib/h200-llama8b-poisson.yaml", 1 }, { "scenarios/lib/h200-qwen3-30b-a3b-poisson.yaml", 1 },
};

/* The fixture profile with its varlen law left out, written to path: a profile without it. */
static void write_without_varlen(const char *path)
{
    FILE *in = fopen("tests/data/profiles/h200-varlen-moe.yaml", "r"), *out = fopen(path, "w");
    ck_assert(in && out);
    char line[4096];
    int skip = 0;
    while (fgets(line, sizeof line, in)) {
        if (!strncmp(line, "  - name:", 9)) skip = strstr(line, "\"attn.varlen.fp16\"") != NULL;
        if (!skip) fputs(line, out);
    }
    fclose(in);
    ck_assert_int_eq(fclose(out), 0);
}

START_TEST(library_scenarios_run)
{
    run_result_t *r = malloc(sizeof *r);
    const char *roof[] = { "profile=null", "hardware.analytic.tflops=990", "hardware.analytic.tbps=4.8",
                           "engine.num_gpu_blocks=400", "workload.poisson.count=40" };
    int hybrid = strstr(scen[_i].path, "next") != NULL;
    const char *roof_few[] = { roof[0], roof[1], roof[2], roof[4] };
    runner_run(scen[_i].path, hybrid ? roof : roof_few, hybrid ? 5 : 4, NULL, r);
    ck_assert_msg(r->rc == 0, "%s (roofline): %s", scen[_i].path, r->err);
    ck_assert_int_eq(r->sum.requests_finished, 40);
    const char *few[] = { "workload.poisson.count=40" };
    runner_run(scen[_i].path, few, 1, NULL, r);
    if (scen[_i].varlen) {
        /* the H200 profile measured the varlen kernel and the grouped expert GEMMs */
        ck_assert_msg(r->rc == 0, "%s (H200 profile): %s", scen[_i].path, r->err);
        ck_assert_int_eq(r->sum.requests_finished, 40);
        /* a profile without the varlen law is refused, naming it */
        char tmp[] = "/tmp/pacesim-novarlen-XXXXXX", set[64];
        int fd = mkstemp(tmp);
        ck_assert_int_ge(fd, 0);
        close(fd);
        write_without_varlen(tmp);
        snprintf(set, sizeof set, "profile=%s", tmp);
        const char *old[] = { "workload.poisson.count=40", set };
        runner_run(scen[_i].path, old, 2, NULL, r);
        unlink(tmp);
        ck_assert_int_eq(r->rc, 2);
        ck_assert_msg(strstr(r->err, "lacks attn.varlen.fp16") != NULL, "%s", r->err);
        /* a profile with the two laws (a fixture: hand-set coefficients) prices the step's
         * one varlen call and the grouped expert GEMMs */
        const char *fx[] = { "workload.poisson.count=40", "profile=../../tests/data/profiles/h200-varlen-moe.yaml" };
        runner_run(scen[_i].path, fx, 2, NULL, r);
        ck_assert_msg(r->rc == 0, "%s (fixture profile): %s", scen[_i].path, r->err);
        ck_assert_int_eq(r->sum.requests_finished, 40);
    } else {
        ck_assert_msg(r->rc == 0, "%s (H200 profile): %s", scen[_i].path, r->err);
        ck_assert_int_eq(r->sum.requests_finished, 40);
    }
    free(r);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = { CHECK_LOOP(published_parameter_count, CHECK_N(lib)),
                                   CHECK_LOOP(decode_step_above_physical_floors, CHECK_N(steps)),
                                   CHECK_TEST(moe_items_conserve_assignments), CHECK_LOOP(library_scenarios_run, CHECK_N(scen)) };
    return check_main("models", "core", tests, CHECK_N(tests), 60, NULL);
}
