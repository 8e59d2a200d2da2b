/* check_kernels -- the attention kernels' suite: CPU checks (reference, fp16/fp8 decoding,
 * small-q expansion) always; GPU cases (every route vs the float64 reference) only where a
 * CUDA device is present, else skipped with a message. Plain C compiled by nvcc (a .cu
 * name keeps it out of CPU-only builds). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "attn.h"
#include "validate.h"

START_TEST(test_fp16_decode) {
    ck_assert(attn_fp16_to_double(0x3C00) == 1.0);
    ck_assert(attn_fp16_to_double(0xC000) == -2.0);
    ck_assert(attn_fp16_to_double(0x0001) == ldexp(1.0, -24));
    ck_assert(attn_fp16_to_double(0x7BFF) == 65504.0);
}
END_TEST

START_TEST(test_fp8_decode) {
    /* e5m2 byte = high byte of an fp16 */
    ck_assert(attn_fp8e5m2_to_double(0x3C, 1.f) == 1.0);
    ck_assert(attn_fp8e5m2_to_double(0xBC, 1.f) == -1.0);
    ck_assert(attn_fp8e5m2_to_double(0x3C, 0.5f) == 0.5);
    ck_assert(attn_fp8e5m2_to_double(0x3D, 1.f) == 1.25);
    ck_assert(attn_fp8e5m2_to_double(0x40, 3.f) == 6.0);
}
END_TEST

START_TEST(test_ref_uniform) {
    /* identical keys: softmax is uniform, the output is the mean of the values */
    enum { N = 7, DD = 256 };
    static float q[DD], k[N * DD], v[N * DD];
    double out[DD];
    for (int d = 0; d < DD; d++) q[d] = (float)(d % 5) - 2.f;
    for (int t = 0; t < N; t++)
        for (int d = 0; d < DD; d++) { k[t * DD + d] = 0.25f * (float)(d % 3); v[t * DD + d] = (float)(t * 3 + d % 11); }
    attn_ref_one(q, k, v, N, DD, DD, 0.0625, out);
    for (int d = 0; d < DD; d++) {
        double mean = 0;
        for (int t = 0; t < N; t++) mean += v[t * DD + d];
        ck_assert(fabs(out[d] - mean / N) < 1e-12);
    }
}
END_TEST

START_TEST(test_ref_two_keys) {
    /* two keys with scores 0 and ln 3: weights 1/4 and 3/4 */
    float q[2] = {1.f, 0.f}, k[4] = {0.f, 0.f, (float)log(3.0), 0.f}, v[4] = {4.f, 8.f, 0.f, -4.f};
    double out[2];
    attn_ref_one(q, k, v, 2, 2, 2, 1.0, out);
    ck_assert(fabs(out[0] - 1.0) < 1e-6);
    ck_assert(fabs(out[1] - (2.0 - 3.0)) < 1e-6);
}
END_TEST

START_TEST(test_expand_rows) {
    int q[3] = {1, 5, 2}, L[3] = {100, 240000, 7}, seq[8], src[8];
    int n = attn_expand_rows(3, q, L, seq, src);
    int want_seq[8] = {100, 239996, 239997, 239998, 239999, 240000, 6, 7};
    int want_src[8] = {0, 1, 1, 1, 1, 1, 2, 2};
    ck_assert_int_eq(n, 8);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(seq[i], want_seq[i]);
        ck_assert_int_eq(src[i], want_src[i]);
    }
}
END_TEST

START_TEST(test_partition) {
    ck_assert_int_eq(attn_decode_partition(1), 256);
    ck_assert_int_eq(attn_decode_partition(32767), 256);
    ck_assert_int_eq(attn_decode_partition(32768), 1024);
    ck_assert_int_eq(attn_decode_partition(240000), 1024);
}
END_TEST

START_TEST(test_no_device_is_safe) {
    int g = attn_gpu_available();
    ck_assert(g == 0 || g == 1);
    if (!g) {
        attn_kv kv;
        ck_assert_int_eq(attn_kv_alloc_random(&kv, ATTN_FP16, 4, 16, 2, 256, 1.f, 1), ATTN_ENODEV);
    }
}
END_TEST

/* GPU cases: small shapes, every route (long contexts live in bench_kernels --validate --long) */
static const struct { int route, dtype, page, flags, n, q[4], seq[4], expand; } gcases[] = {
    {ATTN_PREFILL_GENERIC, ATTN_FP16, 16, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_LOWSMEM, ATTN_FP16, 784, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_FAST, ATTN_FP16, 784, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_FAST, ATTN_FP16, 816, ATTN_F_ANY_PAGE, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_GENERIC, ATTN_FP8_E5M2, 1568, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_LOWSMEM, ATTN_FP8_E5M2, 16, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_FP8_BRIDGE, ATTN_FP8_E5M2, 816, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_DECODE_XQA, ATTN_FP16, 16, 0, 3, {1, 5, 16}, {40, 3000, 33000}, 1},
    {ATTN_DECODE_SCALAR, ATTN_FP16, 784, 0, 3, {1, 5, 16}, {40, 3000, 33000}, 1},
    {ATTN_DECODE_XQA, ATTN_FP8_E5M2, 1568, 0, 3, {1, 5, 16}, {40, 3000, 33000}, 1},
    {ATTN_DECODE_SMALLQ, ATTN_FP16, 816, 0, 3, {1, 5, 16}, {40, 3000, 33000}, 0},
    {ATTN_DECODE_SMALLQ, ATTN_FP8_E5M2, 16, 0, 3, {1, 5, 16}, {40, 3000, 33000}, 0},
};

START_TEST(test_gpu_route) {
    if (!attn_gpu_available()) {
        if (_i == 0) printf("no CUDA device: GPU kernel tests skipped\n");
        return;
    }
    val_case c = {0};
    c.route = gcases[_i].route;
    c.dtype = gcases[_i].dtype;
    c.page = gcases[_i].page;
    c.flags = gcases[_i].flags;
    c.num_rows = gcases[_i].n;
    for (int r = 0; r < c.num_rows; r++) { c.q[r] = gcases[_i].q[r]; c.seq[r] = gcases[_i].seq[r]; }
    c.expand = gcases[_i].expand;
    c.samples = 48;
    c.compare_to = -1;
    val_result res;
    ck_assert_int_eq(val_run(&c, 77 + _i, &res), 0);
    ck_assert_msg(res.err == 0, "%s: %s", attn_route_name(c.route), attn_strerror(res.err));
    ck_assert_int_eq(res.unwritten, 0);
    ck_assert_msg(res.rel_err < 2e-3, "%s rel err %g", attn_route_name(c.route), res.rel_err);
}
END_TEST

static Suite *kernels_suite(void) {
    Suite *s = suite_create("kernels");
    TCase *cpu = tcase_create("cpu");
    tcase_add_test(cpu, test_fp16_decode);
    tcase_add_test(cpu, test_fp8_decode);
    tcase_add_test(cpu, test_ref_uniform);
    tcase_add_test(cpu, test_ref_two_keys);
    tcase_add_test(cpu, test_expand_rows);
    tcase_add_test(cpu, test_partition);
    tcase_add_test(cpu, test_no_device_is_safe);
    suite_add_tcase(s, cpu);
    TCase *gpu = tcase_create("gpu");
    tcase_set_timeout(gpu, 60);
    tcase_add_loop_test(gpu, test_gpu_route, 0, (int)(sizeof gcases / sizeof gcases[0]));
    suite_add_tcase(s, gpu);
    return s;
}

int main(void) {
    if (!attn_gpu_available()) printf("no CUDA device: GPU kernel tests skipped (CPU checks run)\n");
    SRunner *sr = srunner_create(kernels_suite());
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
