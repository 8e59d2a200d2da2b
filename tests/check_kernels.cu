/* check_kernels -- the attention kernels' suite: CPU checks (reference, fp16/fp8 decoding,
 * small-q expansion) always; GPU cases (every route vs the float64 reference) only where a
 * CUDA device is present, else skipped with a message. Plain C compiled by nvcc (a .cu
 * name keeps it out of CPU-only builds). */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attn.h"
#include "attn_split.h"
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

/* v8's split of the fast path's walk (attn_split.h), by hand on an H200 (132 SMs, 1 CTA each):
 * q=784 at 104K: 300 CTAs of 813 tiles: S=1 3 rounds x 813 = 2439, S=2 5 x 407 + 4 = 2039,
 * S=3 7 x 271 + 4 = 1901, S=4 10 x 204 + 4 = 2044 -> 3; q=2048 at 131K: 768 CTAs of 1024 tiles:
 * 6 x 1024 = 6144 against 12 x 512 + 4, 18 x 342 + 4, 24 x 256 + 4 -> 1 (no gain, no split);
 * the bridge's q=1568 at 104K: 588 CTAs: 5 x 825 = 4125, 9 x 413 + 4 = 3721, 14 x 275 + 4 = 3854 -> 2;
 * 7 tiles: parts under ATTN_SPLIT_MIN_TILES -> 1; two CTAs an SM (264 slots) at q=784: 2 x 813 = 1626,
 * 3 x 407 + 4 = 1225, 4 x 271 + 4 = 1088, 5 x 204 + 4 = 1024 -> 4. */
START_TEST(test_split_parts) {
    ck_assert_int_eq(attn_split_parts(300, 813, 132, 1), 3);
    ck_assert_int_eq(attn_split_parts(768, 1024, 132, 1), 1);
    ck_assert_int_eq(attn_split_parts(588, 825, 132, 1), 2);
    ck_assert_int_eq(attn_split_parts(300, 7, 132, 1), 1);
    ck_assert_int_eq(attn_split_parts(300, 20, 132, 1), 2);  /* 3 x 20 = 60 > 5 x 10 + 4 = 54; S=3 has 7-tile parts */
    ck_assert_int_eq(attn_split_parts(100, 813, 132, 1), 1); /* one round already: 813 < 2 x 407 + 4 */
    ck_assert_int_eq(attn_split_parts(300, 813, 132, 2), 4);
    ck_assert_int_eq(attn_split_parts(0, 813, 132, 1), 1);
    ck_assert_int_eq(attn_split_parts(300, 813, 0, 1), 1);
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

/* Shared memory per arch, from the constants the kernels are sized with: every route fits the
 * per-block limit of every listed compute capability, in particular 96 KB on sm_70 and 64 KB on
 * sm_75 (the kernels have no static smem beyond what attn_smem_bytes counts: check_smem.sh). */
static const int archs[][2] = {{7, 0}, {7, 2}, {7, 5}, {8, 0}, {8, 6}, {8, 7}, {8, 9}, {9, 0},
                               {10, 0}, {10, 3}, {11, 0}, {12, 0}};

START_TEST(test_smem_fits_every_arch) {
    ck_assert_int_eq(attn_smem_limit(7, 0), 96 * 1024);
    ck_assert_int_eq(attn_smem_limit(7, 5), 64 * 1024);
    ck_assert_int_eq(attn_smem_limit(9, 0), 227 * 1024);
    ck_assert_int_eq(attn_smem_limit(6, 1), 0);
    for (int route = 0; route < ATTN_NUM_ROUTES; route++) {
        int b70 = attn_smem_bytes(route, 7, 0), b75 = attn_smem_bytes(route, 7, 5);
        ck_assert_msg(b70 >= 0 && b70 <= 96 * 1024, "%s: %d bytes on sm_70", attn_route_name(route), b70);
        ck_assert_msg(b75 >= 0 && b75 <= 64 * 1024, "%s: %d bytes on sm_75", attn_route_name(route), b75);
        for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
            int lim = attn_smem_limit(archs[a][0], archs[a][1]), b = attn_smem_bytes(route, archs[a][0], archs[a][1]);
            ck_assert_msg(lim > 0 && b >= 0 && b <= lim, "%s: %d bytes on sm_%d%d (limit %d)", attn_route_name(route),
                          b, archs[a][0], archs[a][1], lim);
        }
    }
    ck_assert_int_eq(attn_smem_bytes(ATTN_PREFILL_FAST, 6, 1), ATTN_EINVAL);
    attn_tiles t;
    ck_assert_int_eq(attn_route_tiles(ATTN_PREFILL_FAST, 32 * 1024, &t), ATTN_ESMEM);
    ck_assert_int_eq(attn_route_tiles(ATTN_NUM_ROUTES, 1 << 20, &t), ATTN_EINVAL);
}
END_TEST

START_TEST(test_smem_configs) {
    /* sm_90 runs the configurations measured in NOTES.md (v4; the fast path's v7), byte for byte */
    static const struct { int route, bm, bn, bytes; const char *staging; } h200[] = {
        {ATTN_PREFILL_GENERIC, 32, 64, 98816, "generic"},      {ATTN_PREFILL_LOWSMEM, 16, 128, 90112, "shared"},
        {ATTN_PREFILL_FAST, 32, 128, 94720, "phase/s-in-kv+qreg+spad+askip+leansm+ex2+kvsplit"},
        {ATTN_FP8_BRIDGE, 32, 128, 94720, "phase/s-in-kv+qreg+spad+askip+leansm+ex2+kvsplit"},
        {ATTN_DECODE_XQA, 16, 64, 83456, "pipe2"},             {ATTN_DECODE_SMALLQ, 32, 64, 98816, "pipe2"},
    };
    attn_tiles t;
    for (size_t i = 0; i < sizeof h200 / sizeof h200[0]; i++) {
        ck_assert_int_eq(attn_route_tiles(h200[i].route, attn_smem_limit(9, 0), &t), 0);
        ck_assert_int_eq(t.bm, h200[i].bm);
        ck_assert_int_eq(t.bn, h200[i].bn);
        ck_assert_int_eq(t.smem_bytes, h200[i].bytes);
        ck_assert_str_eq(t.staging, h200[i].staging);
    }
    /* the launch structure (BM, hence the grid) is the same on every arch; BN changes only
     * where NOTES.md says: sm_75 runs prefill-bm32 / fp8-bridge / prefill-lowsmem at BN 64 */
    for (int route = 0; route < ATTN_NUM_ROUTES; route++) {
        attn_tiles ref;
        ck_assert_int_eq(attn_route_tiles(route, attn_smem_limit(9, 0), &ref), 0);
        for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
            ck_assert_int_eq(attn_route_tiles(route, attn_smem_limit(archs[a][0], archs[a][1]), &t), 0);
            ck_assert_int_eq(t.bm, ref.bm);
            int halved = archs[a][0] == 7 && archs[a][1] == 5 &&
                         (route == ATTN_PREFILL_FAST || route == ATTN_FP8_BRIDGE || route == ATTN_PREFILL_LOWSMEM);
            ck_assert_int_eq(t.bn, halved ? ref.bn / 2 : ref.bn);
        }
    }
}
END_TEST

/* The shapes the routes take: head_dim 64, 128, 256 and 1..16 q heads per kv head, on every route;
 * anything else is ATTN_ESHAPE, from attn_shape_ok and from attn_run before any launch (so a host
 * batch with no device memory behind it is enough) */
START_TEST(test_shapes) {
    static const int dims[3] = {64, 128, 256}, bad_dims[5] = {0, 32, 96, 192, 512};
    for (int route = 0; route < ATTN_NUM_ROUTES; route++) {
        for (int d = 0; d < 3; d++)
            for (int g = 1; g <= 16; g++) ck_assert_int_eq(attn_shape_ok(route, dims[d], g), 0);
        for (int d = 0; d < 5; d++) ck_assert_int_eq(attn_shape_ok(route, bad_dims[d], 6), ATTN_ESHAPE);
        ck_assert_int_eq(attn_shape_ok(route, 128, 0), ATTN_ESHAPE);
        ck_assert_int_eq(attn_shape_ok(route, 128, 17), ATTN_ESHAPE);
    }
    ck_assert_int_eq(attn_shape_ok(ATTN_NUM_ROUTES, 128, 4), ATTN_EINVAL);
    ck_assert_int_eq(attn_shape_ok(-1, 128, 4), ATTN_EINVAL);
    static const struct { int head_dim, kv_heads, q_heads; } bad[] = {{96, 2, 12}, {512, 2, 12}, {32, 1, 8},
                                                                      {128, 1, 17}, {64, 2, 64}, {256, 4, 6}};
    int dummy[4] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        attn_kv kv = {0};
        attn_batch b = {0};
        kv.dtype = ATTN_FP16;
        kv.num_blocks = 1;
        kv.page = 16;
        kv.kv_heads = bad[i].kv_heads;
        kv.head_dim = bad[i].head_dim;
        kv.k = kv.v = dummy;
        b.num_rows = 1;
        b.num_q_heads = bad[i].q_heads;
        for (int route = 0; route < ATTN_NUM_ROUTES; route++)
            ck_assert_msg(attn_run(route, &kv, &b, dummy, dummy, 0.1f, dummy, 16, 0, NULL) == ATTN_ESHAPE,
                          "%s: head_dim %d, %d q heads on %d kv heads not refused", attn_route_name(route),
                          bad[i].head_dim, bad[i].q_heads, bad[i].kv_heads);
    }
}
END_TEST

/* Shared memory per head_dim: every route fits every listed arch at 64 and 128 as at 256, each
 * with the same BM (the grid); a head_dim no kernel has is refused */
START_TEST(test_smem_head_dims) {
    static const int dims[2] = {64, 128};
    for (int route = 0; route < ATTN_NUM_ROUTES; route++)
        for (int d = 0; d < 2; d++)
            for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
                int lim = attn_smem_limit(archs[a][0], archs[a][1]);
                int b = attn_smem_bytes_hd(route, dims[d], archs[a][0], archs[a][1]);
                int b256 = attn_smem_bytes_hd(route, 256, archs[a][0], archs[a][1]);
                ck_assert_msg(b >= 0 && b <= lim, "%s D %d: %d bytes on sm_%d%d (limit %d)", attn_route_name(route),
                              dims[d], b, archs[a][0], archs[a][1], lim);
                ck_assert_int_eq(b256, attn_smem_bytes(route, archs[a][0], archs[a][1]));
                attn_tiles t, t256;
                ck_assert_int_eq(attn_route_tiles_hd(route, dims[d], lim, &t), 0);
                ck_assert_int_eq(attn_route_tiles_hd(route, 256, lim, &t256), 0);
                ck_assert_int_eq(t.bm, t256.bm);
            }
    attn_tiles t;
    ck_assert_int_eq(attn_route_tiles_hd(ATTN_PREFILL_GENERIC, 96, 1 << 20, &t), ATTN_ESHAPE);
    ck_assert_int_eq(attn_smem_bytes_hd(ATTN_DECODE_XQA, 512, 9, 0), ATTN_ESHAPE);
    /* the scalar decode's static smem: its o[8][D] floats */
    ck_assert_int_eq(attn_smem_bytes_hd(ATTN_DECODE_SCALAR, 128, 9, 0), (64 + 8 * 128 * 4 + 127) / 128 * 128);
    ck_assert_int_eq(attn_smem_bytes_hd(ATTN_DECODE_SCALAR, 64, 9, 0), (64 + 8 * 64 * 4 + 127) / 128 * 128);
}
END_TEST

/* GPU cases: small shapes, every route (long contexts live in bench_kernels --validate --long); the
 * decode batches' 20000-token row (79 partitions of 256) takes them through the wide combine */
static const struct { int route, dtype, page, flags, n, q[4], seq[4], expand; } gcases[] = {
    {ATTN_PREFILL_GENERIC, ATTN_FP16, 16, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_LOWSMEM, ATTN_FP16, 784, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_FAST, ATTN_FP16, 784, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_FAST, ATTN_FP16, 816, ATTN_F_ANY_PAGE, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_FAST, ATTN_FP16, 784, 0, 1, {784}, {784 + 16384}, 0}, /* 300 CTAs: split in parts (v8) */
    {ATTN_PREFILL_GENERIC, ATTN_FP8_E5M2, 1568, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_PREFILL_LOWSMEM, ATTN_FP8_E5M2, 16, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_FP8_BRIDGE, ATTN_FP8_E5M2, 816, 0, 4, {1, 5, 32, 200}, {1, 300, 32, 1000}, 0},
    {ATTN_DECODE_XQA, ATTN_FP16, 16, 0, 4, {1, 5, 16, 1}, {40, 3000, 33000, 20000}, 1},
    {ATTN_DECODE_SCALAR, ATTN_FP16, 784, 0, 4, {1, 5, 16, 1}, {40, 3000, 33000, 20000}, 1},
    {ATTN_DECODE_XQA, ATTN_FP8_E5M2, 1568, 0, 4, {1, 5, 16, 1}, {40, 3000, 33000, 20000}, 1},
    {ATTN_DECODE_SMALLQ, ATTN_FP16, 816, 0, 4, {1, 5, 16, 1}, {40, 3000, 33000, 20000}, 0},
    {ATTN_DECODE_SMALLQ, ATTN_FP8_E5M2, 16, 0, 4, {1, 5, 16, 1}, {40, 3000, 33000, 20000}, 0},
};

#define NGCASES ((int)(sizeof gcases / sizeof gcases[0]))
/* every case at the device's own limit, and as if it were an sm_70 (96 KB) and an sm_75 (64 KB) */
static const int glimits[3] = {0, 96 * 1024, 64 * 1024};

START_TEST(test_gpu_route) {
    if (!attn_gpu_available()) {
        if (_i == 0) printf("no CUDA device: GPU kernel tests skipped\n");
        return;
    }
    int lim = glimits[_i / NGCASES];
    attn_set_smem_limit(lim);
    _i %= NGCASES;
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
    ck_assert_msg(res.err == 0, "%s (smem limit %d): %s", attn_route_name(c.route), lim, attn_strerror(res.err));
    ck_assert_int_eq(res.unwritten, 0);
    ck_assert_msg(res.rel_err < 2e-3, "%s (smem limit %d) rel err %g", attn_route_name(c.route), lim, res.rel_err);
    attn_set_smem_limit(0);
}
END_TEST

/* GPU cases at head_dim 64 and 128 and GQA groups 1, 4, 16 (bench_kernels --validate --shapes all
 * covers every group, long contexts and the sm_70 / sm_75 configurations) */
static const struct { int route, dtype, page, flags, n, q[4], seq[4], expand; } scases[] = {
    {ATTN_PREFILL_GENERIC, ATTN_FP16, 16, 0, 3, {1, 5, 100}, {1, 300, 700}, 0},
    {ATTN_PREFILL_LOWSMEM, ATTN_FP8_E5M2, 16, 0, 3, {1, 5, 100}, {1, 300, 700}, 0},
    {ATTN_PREFILL_FAST, ATTN_FP16, 16, ATTN_F_ANY_PAGE, 3, {1, 5, 100}, {1, 300, 700}, 0},
    {ATTN_FP8_BRIDGE, ATTN_FP8_E5M2, 784, 0, 3, {1, 5, 100}, {1, 300, 700}, 0},
    {ATTN_DECODE_XQA, ATTN_FP16, 16, 0, 3, {1, 5, 1}, {40, 3000, 20000}, 1},
    {ATTN_DECODE_SCALAR, ATTN_FP8_E5M2, 784, 0, 3, {1, 5, 1}, {40, 3000, 20000}, 1},
    {ATTN_DECODE_SMALLQ, ATTN_FP16, 816, 0, 3, {1, 5, 16}, {40, 3000, 33000}, 0},
};
#define NSCASES ((int)(sizeof scases / sizeof scases[0]))
static const int sdims[2] = {64, 128}, sgroups[3] = {1, 4, 16};

START_TEST(test_gpu_shapes) {
    if (!attn_gpu_available()) return;
    int i = _i % NSCASES, d = sdims[_i / NSCASES % 2], g = sgroups[_i / NSCASES / 2];
    val_case c = {0};
    c.route = scases[i].route;
    c.dtype = scases[i].dtype;
    c.page = scases[i].page;
    c.flags = scases[i].flags;
    c.num_rows = scases[i].n;
    for (int r = 0; r < c.num_rows; r++) { c.q[r] = scases[i].q[r]; c.seq[r] = scases[i].seq[r]; }
    c.expand = scases[i].expand;
    c.samples = 24;
    c.compare_to = -1;
    c.head_dim = d;
    c.group = g;
    val_result res;
    ck_assert_int_eq(val_run(&c, 177 + _i, &res), 0);
    ck_assert_msg(res.err == 0, "%s D %d group %d: %s", attn_route_name(c.route), d, g, attn_strerror(res.err));
    ck_assert_int_eq(res.unwritten, 0);
    ck_assert_msg(res.rel_err < 2e-3, "%s D %d group %d: rel err %g", attn_route_name(c.route), d, g, res.rel_err);
}
END_TEST

START_TEST(test_gpu_smem_limit_table) {
    /* the per-arch table agrees with the device at hand */
    int major = 0, minor = 0, optin = 0;
    if (!attn_gpu_available() || attn_device_smem(&major, &minor, &optin)) return;
    int lim = attn_smem_limit(major, minor);
    if (lim > 0) ck_assert_int_eq(lim, optin);
}
END_TEST

/* varlen (attn_varlen.cu): the configurations fit sm_75's 64 KB a block (hence every arch), an
 * unsupported head_dim is refused */
START_TEST(test_varlen_config) {
    for (int d = 64; d <= 256; d *= 2) {
        int bm = 0, bn = 0, smem = 0;
        ck_assert_int_eq(attn_varlen_config(d, &bm, &bn, &smem), 0);
        ck_assert_int_eq(bn, 64);
        ck_assert_int_eq(bm, d == 256 ? 32 : 64);
        ck_assert_msg(smem > 0 && smem <= attn_smem_limit(7, 5), "D %d: %d bytes", d, smem);
    }
    ck_assert_int_eq(attn_varlen_config(96, NULL, NULL, NULL), ATTN_ESHAPE);
    attn_varlen_shape sh;
    int q = 1, L = 10;
    ck_assert_int_eq(attn_varlen_count(1, &q, &L, 8, 2, 96, 0, 0, &sh), ATTN_EINVAL);
}
END_TEST

/* the launch's counts by hand: D 128 (BM 64, BN 64), group 8, 2 kv heads; row 0: q 1 at 1000 is one
 * M-tile of 8 rows walking ceil(1000/64) = 16 tiles; row 1: q 16 at 200 is 128 rows = 2 M-tiles,
 * tokens 0..7 walking keys 0..191 (3 tiles), tokens 8..15 keys 0..199 (4 tiles). CTAs 3 x 2 = 6,
 * tiles 2 x (16 + 3 + 4) = 46, critical path 16; 2 SMs of one slot, longest first to the least
 * loaded: 16 | 16, 4 | 4, 3 | 3 -> 23 each. */
START_TEST(test_varlen_count) {
    int q[2] = {1, 16}, L[2] = {1000, 200};
    attn_varlen_shape sh;
    ck_assert_int_eq(attn_varlen_count(2, q, L, 8, 2, 128, 2, 1, &sh), 0);
    ck_assert_int_eq(sh.entries, 3);
    ck_assert_int_eq(sh.ctas, 6);
    ck_assert_int_eq(sh.tiles, 46);
    ck_assert_int_eq(sh.max_tiles, 16);
    ck_assert_int_eq(sh.busiest_sm_tiles, 23);
    /* one SM of 6 slots holds every CTA: its tiles are all of them */
    ck_assert_int_eq(attn_varlen_count(2, q, L, 8, 2, 128, 1, 6, &sh), 0);
    ck_assert_int_eq(sh.busiest_sm_tiles, 46);
    /* no SM count: no placement */
    ck_assert_int_eq(attn_varlen_count(2, q, L, 8, 2, 128, 0, 0, &sh), 0);
    ck_assert_int_eq(sh.busiest_sm_tiles, 0);
}
END_TEST

/* GPU: mixed batches (decode rows with chunks) against the float64 reference, each head_dim */
static const struct { int d, kvh, group, page, n, q[5], seq[5]; } vcases[] = {
    {128, 2, 8, 16, 5, {1, 1, 300, 40, 1}, {60, 9000, 300, 40 + 2000, 1}},
    {256, 2, 6, 784, 5, {1, 1, 300, 40, 1}, {60, 9000, 300, 40 + 2000, 1}},
    {64, 4, 1, 32, 5, {1, 1, 300, 40, 1}, {60, 9000, 300, 40 + 2000, 1}},
    {128, 1, 16, 1, 3, {1, 17, 2}, {700, 17 + 100, 2}},
    {256, 1, 12, 48, 3, {1, 17, 2}, {700, 17 + 100, 2}},
};
#define NVCASES ((int)(sizeof vcases / sizeof vcases[0]))

START_TEST(test_gpu_varlen) {
    if (!attn_gpu_available()) return;
    attn_varlen_case c;
    memset(&c, 0, sizeof c);
    c.head_dim = vcases[_i].d;
    c.kv_heads = vcases[_i].kvh;
    c.group = vcases[_i].group;
    c.page = vcases[_i].page;
    c.samples = 40;
    c.num_rows = vcases[_i].n;
    for (int r = 0; r < c.num_rows; r++) { c.q[r] = vcases[_i].q[r]; c.seq[r] = vcases[_i].seq[r]; }
    double rel = 0;
    long unw = 0;
    ck_assert_int_eq(attn_varlen_validate(&c, 500 + _i, &rel, &unw), 0);
    ck_assert_int_eq(unw, 0);
    ck_assert_msg(rel < 2e-3, "varlen D %d group %d: rel err %g", c.head_dim, c.group, rel);
}
END_TEST

int main(void) {
    const check_test_t cpu[] = {
        CHECK_TEST(test_fp16_decode),  CHECK_TEST(test_fp8_decode),        CHECK_TEST(test_ref_uniform),
        CHECK_TEST(test_ref_two_keys), CHECK_TEST(test_expand_rows),       CHECK_TEST(test_partition),
        CHECK_TEST(test_split_parts),  CHECK_TEST(test_no_device_is_safe), CHECK_TEST(test_smem_fits_every_arch),
        CHECK_TEST(test_smem_configs), CHECK_TEST(test_varlen_config), CHECK_TEST(test_varlen_count),
        CHECK_TEST(test_shapes), CHECK_TEST(test_smem_head_dims)};
    const check_test_t gpu_cases[] = {CHECK_LOOP(test_gpu_route, 3 * NGCASES), CHECK_LOOP(test_gpu_shapes, 6 * NSCASES),
                                      CHECK_TEST(test_gpu_smem_limit_table), CHECK_LOOP(test_gpu_varlen, NVCASES)};
    int gpu = attn_gpu_available();
    if (!gpu) printf("no CUDA device: GPU kernel tests skipped (CPU checks run)\n");
    Suite *s = suite_create("kernels");
    check_case(s, "cpu", cpu, CHECK_N(cpu), 0, NULL);
    check_case(s, "gpu", gpu_cases, CHECK_N(gpu_cases), 60, NULL);
    /* CUDA does not survive fork(): once this process has touched the device (above), Check's
     * forked children fail with "initialization error"; with a GPU the tests run in-process */
    return check_run_in(s, gpu);
}
