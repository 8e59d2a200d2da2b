/* check_hwcat: the GPU and link catalogue: every entry complete and physically plausible, each
 * GPU's link resolves, aliases, the ring all-reduce formula, and the H200's calibrated
 * ceilings below its datasheet peaks. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>
#include "cost.h"
#include "hwcat.h"
#include "profile.h"
#include "route.h"
#include "scenario.h"
#include "setup.h"

START_TEST(links_complete)
{
    int n = 0;
    for (const hw_link_t *l; (l = hw_link_at(n)); n++) {
        ck_assert_ptr_nonnull(l->name);
        ck_assert_msg(l->bytes_per_s >= 10e9 && l->bytes_per_s <= 2e12, "%s %g", l->name, l->bytes_per_s);
        ck_assert_msg(l->latency_s > 0 && l->latency_s < 20e-6, "%s %g", l->name, l->latency_s);
        ck_assert_msg(l->source && strlen(l->source) > 40, "%s: no source", l->name);
        ck_assert_ptr_eq(hw_link_find(l->name), l);
        ck_assert_msg(strstr(hw_link_names(), l->name), "%s not in hw_link_names()", l->name);
    }
    ck_assert_int_ge(n, 13);
    ck_assert_ptr_null(hw_link_find("nvlink9"));
    ck_assert_ptr_null(hw_link_find(NULL));
    ck_assert_ptr_eq(hw_link_find("ib-ndr"), hw_link_find("ib-400"));
    /* one direction: NVLink 4's datasheet 900 GB/s is 450 each way; PCIe 5 x16 63 GB/s */
    ck_assert(hw_link_find("nvlink4")->bytes_per_s == 450e9);
    ck_assert(fabs(hw_link_find("pcie5")->bytes_per_s - 32e9 * 16 / 8 * 128 / 130) < 1e8);
    ck_assert(hw_link_find("ib-400")->bytes_per_s == 400e9 / 8);
    /* each NVLink generation doubles the last from 3 on */
    ck_assert(hw_link_find("nvlink5")->bytes_per_s == 2 * hw_link_find("nvlink4")->bytes_per_s * 1.0);
}
END_TEST

START_TEST(gpus_complete)
{
    int n = 0;
    for (const hw_gpu_t *g; (g = hw_gpu_at(n)); n++) {
        ck_assert_msg(hw_link_find(g->link), "%s: link %s unknown", g->name, g->link);
        ck_assert_msg(g->fp16_flops >= 50e12 && g->fp16_flops <= 5e15, "%s", g->name);
        ck_assert_msg(g->fp8_flops == 0 || fabs(g->fp8_flops / g->fp16_flops - 2) < 0.05, "%s: fp8 = 2x fp16", g->name);
        ck_assert_msg(g->mem_bw >= 300e9 && g->mem_bw <= 10e12, "%s", g->name);
        ck_assert_msg(g->mem_gib >= 16 && g->mem_gib <= 256, "%s", g->name);
        ck_assert_msg(g->sms > 0, "%s", g->name);
        ck_assert_msg(g->source && strlen(g->source) > 40, "%s: no source", g->name);
        ck_assert_ptr_eq(hw_gpu_find(g->name), g);
        ck_assert_msg(strstr(hw_gpu_names(), g->name), "%s not in hw_gpu_names()", g->name);
    }
    ck_assert_int_ge(n, 11);
    static const char *const want[] = {"h100-sxm", "h100-pcie", "h200", "b200", "a100-40gb", "a100-80gb",
                                       "l40s", "a10", "v100-pcie", "v100-sxm2", "mi300x"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) ck_assert_msg(hw_gpu_find(want[i]), "%s", want[i]);
    ck_assert_ptr_null(hw_gpu_find("h100"));
    /* ridge points (FLOP per byte) of the HBM parts lie between 100 and 600 */
    const hw_gpu_t *h = hw_gpu_find("h100-sxm");
    ck_assert(h->fp16_flops / h->mem_bw > 250 && h->fp16_flops / h->mem_bw < 350);
}
END_TEST

START_TEST(allreduce_ring)
{
    const hw_link_t *l = hw_link_find("nvlink4");
    ck_assert(hw_allreduce_s(l, 1, 1e6) == 0);
    ck_assert(hw_allreduce_s(NULL, 4, 1e6) == 0);
    /* 4 GPUs, 16 MiB: 6.6 us + 6 hops x 0.6 us + 1.5 x 16 MiB / 450 GB/s */
    double b = 16.0 * 1024 * 1024, want = 6.6e-6 + 6 * 0.6e-6 + 1.5 * b / 450e9;
    ck_assert(fabs(hw_allreduce_s(l, 4, b) / want - 1) < 1e-12);
    /* the bandwidth term tends to 2 x bytes / bw as n grows; the latency term grows linearly */
    double t2 = hw_allreduce_s(l, 2, 1e9), t8 = hw_allreduce_s(l, 8, 1e9);
    ck_assert(t2 < t8 && t8 < 2 * 1e9 / 450e9 + 1e-4);
    /* PCIe is slower than NVLink for the same payload */
    ck_assert(hw_allreduce_s(hw_link_find("pcie4"), 4, b) > 10 * hw_allreduce_s(l, 4, b));
}
END_TEST

/* The shipped H200 profile's measured ceilings lie below the catalogue's H200 peaks (calib
 * measures a GEMM and a copy: what this card achieved, not its datasheet). */
START_TEST(h200_profile_below_peaks)
{
    profile_t p;
    char err[PROF_ERR_MAX];
    ck_assert_msg(prof_load("calib/profiles/h200.yaml", &p, err) == 0, "%s", err);
    const hw_gpu_t *g = hw_gpu_find("h200");
    ck_assert(p.peak_fp16_tflops * 1e12 < g->fp16_flops && p.peak_fp16_tflops * 1e12 > 0.5 * g->fp16_flops);
    ck_assert(p.mem_bw_gbs * 1e9 < g->mem_bw && p.mem_bw_gbs * 1e9 > 0.5 * g->mem_bw);
    ck_assert(p.mem_gib < g->mem_gib && p.mem_gib > 0.95 * g->mem_gib);
    ck_assert_int_eq(p.sms, g->sms);
    prof_free(&p);
}
END_TEST

/* The analytic model's constants for catalogue GPUs are what the shipped H200 profile achieved
 * against the H200's datasheet: recomputed here from the profile (cost_analytic_derive). */
START_TEST(analytic_constants_from_h200_profile)
{
    profile_t p;
    char err[PROF_ERR_MAX];
    ck_assert_msg(prof_load("calib/profiles/h200.yaml", &p, err) == 0, "%s", err);
    cost_analytic_fracs_t d, c;
    ck_assert_int_eq(cost_analytic_derive(&p, hw_gpu_find("h200"), &d), 0);
    cost_analytic_constants(&c);
    ck_assert_msg(fabs(c.flops_frac / d.flops_frac - 1) < 5e-4, "flops %g vs %g", c.flops_frac, d.flops_frac);
    ck_assert_msg(fabs(c.bw_frac / d.bw_frac - 1) < 5e-4, "bw %g vs %g", c.bw_frac, d.bw_frac);
    ck_assert_msg(fabs(c.launch_s / d.launch_s - 1) < 5e-4, "launch %g vs %g", c.launch_s, d.launch_s);
    ck_assert_msg(fabs(c.host_s - d.host_s) < 1e-7, "host %g vs %g", c.host_s, d.host_s);
    ck_assert(d.flops_frac > 0.5 && d.flops_frac < 1 && d.bw_frac > 0.5 && d.bw_frac < 1);
    prof_free(&p);
}
END_TEST

static model_t load_model(const char *path)
{
    model_t m;
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model(path, &m, err) == 0, "%s", err);
    return m;
}

/* One decode step of B rows at context L on the analytic model of hw. */
static cost_breakdown_t decode_step(const model_t *m, int tp, const cost_analytic_hw_t *hw, int B, long L)
{
    model_rank_t r;
    ck_assert_int_eq(model_rank(m, tp, &r), 0);
    kseg_t *rows = calloc((size_t)B, sizeof *rows);
    for (int k = 0; k < B; k++) rows[k] = (kseg_t){ .req = k, .q = 1, .seq_len = L };
    route_cfg_t cfg = { .smallq_max_q = 16, .page = 16, .kv_dtype = KV_FP16, .group = r.group,
                        .fp8_bridge_page = ROUTE_NATIVE_PAGE, .varlen = 1 };
    route_plan_t plan;
    route_plan_init(&plan);
    ck_assert_int_eq(route_step(&cfg, rows, B, &plan), 0);
    cost_step_t in = { .plan = &plan, .tokens = B, .rows = B, .decode_rows = B, .sampled = B };
    cost_model_t *cm = cost_analytic_new_hw(m, tp, hw);
    ck_assert_ptr_nonnull(cm);
    cost_breakdown_t o;
    ck_assert_int_eq(cm->step(cm, &in, &o), 0);
    cost_free(cm);
    route_plan_free(&plan);
    free(rows);
    return o;
}

/* TP's all-reduces on the analytic model: two a layer of tokens x hidden fp16, each a ring over
 * the GPU's link; none at TP1, and 0 without a link. */
START_TEST(analytic_allreduce_ring)
{
    model_t m = load_model("models/qwen3-32b.yaml");
    const hw_gpu_t *g = hw_gpu_find("h100-sxm");
    cost_analytic_hw_t hw;
    cost_analytic_hw_gpu(g, &hw);
    ck_assert_ptr_eq(hw.link, hw_link_find("nvlink4"));
    int B = 64;
    cost_breakdown_t o4 = decode_step(&m, 4, &hw, B, 4096), o1 = decode_step(&m, 1, &hw, B, 4096);
    double want = 2.0 * m.n_layers * hw_allreduce_s(hw.link, 4, (double)B * m.hidden * 2);
    ck_assert_msg(fabs(o4.allreduce / want - 1) < 1e-9, "all-reduce %g, want %g", o4.allreduce, want);
    ck_assert(o1.allreduce == 0);
    /* TP4 splits the GEMMs: faster than TP1 despite the all-reduce, on NVLink */
    ck_assert(o4.total < o1.total);
    /* over PCIe 4 the same all-reduce is dearer: 43.8 us against 12.4 us for 655 KB */
    hw.link = hw_link_find("pcie4");
    cost_breakdown_t op = decode_step(&m, 4, &hw, B, 4096);
    ck_assert(op.allreduce > 3 * o4.allreduce);
    hw.link = NULL;
    ck_assert(decode_step(&m, 4, &hw, B, 4096).allreduce == 0);
}
END_TEST

/* A catalogue GPU's analytic price: above the datasheet roofline (achievable fractions < 1),
 * and the faster card prices the same step faster. */
START_TEST(analytic_gpu_orders)
{
    model_t m = load_model("models/llama-3.1-8b.yaml");
    cost_analytic_hw_t a, b, peak;
    cost_analytic_hw_gpu(hw_gpu_find("a100-80gb"), &a);
    cost_analytic_hw_gpu(hw_gpu_find("h200"), &b);
    cost_breakdown_t oa = decode_step(&m, 1, &a, 32, 8192), ob = decode_step(&m, 1, &b, 32, 8192);
    ck_assert(ob.total < oa.total);
    const hw_gpu_t *g = hw_gpu_find("h200");
    cost_analytic_hw_peaks(g->fp16_flops / 1e12, g->mem_bw / 1e12, &peak);
    peak.host_s = 0;
    ck_assert(decode_step(&m, 1, &peak, 32, 8192).total < ob.total);
}
END_TEST

static const char *tmp_scenario(const char *tag, const char *body)
{
    static char path[128];
    snprintf(path, sizeof path, "/tmp/check_hwcat_%s_%d.yaml", tag, (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "model: %s/models/qwen3-32b.yaml\n%s", getcwd((char[512]){0}, 512),  body);
    fclose(f);
    return path;
}

#define WL "workload:\n  requests:\n    - {id: A, prompt_tokens: 1000, output_tokens: 4}\n"

/* hardware.gpu sizes the KV cache from the GPU's memory; the scenario keys are checked */
START_TEST(scenario_gpu_keys)
{
    setup_t u;
    const char *p = tmp_scenario("a100", "hardware: {gpu: a100-40gb}\nengine: {tensor_parallel_size: 2}\n" WL);
    ck_assert_msg(setup_open(&u, p, NULL, 0) == 0, "%s", u.err);
    long cap40 = u.e.rep[0].sc.capacity;
    ck_assert_ptr_nonnull(strstr(u.hw, "A100"));
    ck_assert_str_eq(u.warn, "");
    setup_close(&u);
    p = tmp_scenario("a100b", "hardware: {gpu: a100-80gb}\nengine: {tensor_parallel_size: 2}\n" WL);
    ck_assert_msg(setup_open(&u, p, NULL, 0) == 0, "%s", u.err);
    ck_assert(u.e.rep[0].sc.capacity > 2 * cap40);
    setup_close(&u);
    /* unknown names, both kinds of hardware at once */
    p = tmp_scenario("bad", "hardware: {gpu: h900}\n" WL);
    ck_assert_int_eq(setup_open(&u, p, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(u.err, "hardware.gpu: unknown GPU \"h900\" (known: h100-sxm"));
    setup_close(&u);
    p = tmp_scenario("bad2", "hardware: {gpu: h200, link: nvlink7}\n" WL);
    ck_assert_int_eq(setup_open(&u, p, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(u.err, "hardware.link: unknown link \"nvlink7\""));
    setup_close(&u);
    p = tmp_scenario("bad3", "hardware: {gpu: h200, analytic: {tflops: 1, tbps: 1}}\n" WL);
    ck_assert_int_eq(setup_open(&u, p, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(u.err, "give either hardware.gpu or hardware.analytic"));
    setup_close(&u);
    /* the analytic peaks: units that look wrong, TP without a link, memory assumed: warnings */
    p = tmp_scenario("units", "hardware: {analytic: {tflops: 989e12, tbps: 3350}}\nengine: {tensor_parallel_size: 2}\n" WL);
    ck_assert_msg(setup_open(&u, p, NULL, 0) == 0, "%s", u.err);
    ck_assert_ptr_nonnull(strstr(u.warn, "tflops 9.89e+14 is in TFLOP/s"));
    ck_assert_ptr_nonnull(strstr(u.warn, "tbps 3350 is in TB/s"));
    ck_assert_ptr_nonnull(strstr(u.warn, "all-reduces at 0"));
    ck_assert_ptr_nonnull(strstr(u.warn, "80 GiB"));
    setup_close(&u);
    p = tmp_scenario("mem", "hardware: {analytic: {tflops: 989, tbps: 3.35, mem_gib: 40}, link: nvlink4}\n"
                            "engine: {tensor_parallel_size: 2}\n" WL);
    ck_assert_msg(setup_open(&u, p, NULL, 0) == 0, "%s", u.err);
    ck_assert_str_eq(u.warn, "");
    ck_assert_int_eq(u.e.rep[0].sc.capacity, cap40);
    setup_close(&u);
}
END_TEST

/* The calibrated path at TP > 1 without an all-reduce law: the profile's GPU's catalogue link
 * (or hardware.link), with a warning that it is not measured. */
START_TEST(profile_allreduce_from_link)
{
    setup_t u;
    char body[512];
    snprintf(body, sizeof body, "profile: %s/calib/profiles/h200.yaml\nengine: {tensor_parallel_size: 4}\n" WL,
             getcwd((char[512]){0}, 512));
    const char *p = tmp_scenario("prof", body);
    ck_assert_msg(setup_open(&u, p, NULL, 0) == 0, "%s", u.err);
    ck_assert_ptr_nonnull(strstr(u.warn, "no all-reduce law: tensor_parallel_size 4's all-reduces priced over nvlink4"));
    setup_close(&u);
    const char *sets[] = { "hardware={link: pcie5}" };
    ck_assert_msg(setup_open(&u, p, sets, 1) == 0, "%s", u.err);
    ck_assert_ptr_nonnull(strstr(u.warn, "over pcie5"));
    setup_close(&u);
    ck_assert_ptr_eq(hw_gpu_match("NVIDIA H200"), hw_gpu_find("h200"));
    ck_assert_ptr_eq(hw_gpu_match("Tesla V100-PCIE-32GB"), hw_gpu_find("v100-pcie"));
    ck_assert_ptr_eq(hw_gpu_match("NVIDIA A100-SXM4-40GB"), hw_gpu_find("a100-40gb"));
    ck_assert_ptr_eq(hw_gpu_match("NVIDIA A10"), hw_gpu_find("a10"));
    ck_assert_ptr_null(hw_gpu_match("FakeGPU"));
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {CHECK_TEST(links_complete), CHECK_TEST(gpus_complete), CHECK_TEST(allreduce_ring),
                                  CHECK_TEST(h200_profile_below_peaks),
                                  CHECK_TEST(analytic_constants_from_h200_profile), CHECK_TEST(analytic_allreduce_ring),
                                  CHECK_TEST(analytic_gpu_orders), CHECK_TEST(scenario_gpu_keys),
                                  CHECK_TEST(profile_allreduce_from_link)};
    return check_main("hwcat", "catalogue", tests, CHECK_N(tests), 0, NULL);
}
