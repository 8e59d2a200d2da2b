/* check_hwcat: the GPU and link catalogue: every entry complete and physically plausible, each
 * GPU's link resolves, aliases, the ring all-reduce formula, and the H200's calibrated
 * ceilings below its datasheet peaks. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <string.h>
#include "hwcat.h"
#include "profile.h"

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

int main(void)
{
    const check_test_t tests[] = {CHECK_TEST(links_complete), CHECK_TEST(gpus_complete), CHECK_TEST(allreduce_ring),
                                  CHECK_TEST(h200_profile_below_peaks)};
    return check_main("hwcat", "catalogue", tests, CHECK_N(tests), 0, NULL);
}
