/* bench_kernels -- validate and time the paged attention kernels on the GPU at hand.
 *   bench_kernels --validate [--long]    correctness table (float64 reference), exit 1 on failure
 *   bench_kernels --bench [--peers F]    timing table: shape, ours, peer, ratio, % of roofline
 *   bench_kernels --xqa-ab [--peers F]   v5: the XQA variants (ATTN_DECODE_XQA) x CTAs per SM, one table
 *   bench_kernels --v6-ab [--peers F]    v6: XQA / combine / small-q / prefill-rounds A/B, one table
 *   bench_kernels --expand-ab            v6: the fp8 expansion variants (ATTN_EXPAND_VAR) x prefix
 *   bench_kernels --prefill-ab           v7: the prefill fast path's variants (ATTN_PREFILL_VAR), twice
 *   --smem-limit N   run the configurations a GPU with N bytes of smem per block gets (98304 = sm_70,
 *                    65536 = sm_75; same as env ATTN_SMEM_LIMIT); --filter A,B  validate / bench only
 *                    the cases whose route name (bench: or label) contains A or B
 * Shapes are the reference system's per-rank layer: 12 q heads, 2 kv heads, D = 256.
 * The peers file (kernels/peers.py writes it) holds "key value" lines: copy_TBps, gemm_tflops,
 * flash_q<Q>_<CTX>, cudnn_q<Q>_<CTX> in ms. Needs only the CUDA runtime (no Check). */
#include "attn.h"
#include "validate.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 12
#define KVH 2
#define D 256

static void print_tiles(void) {
    int major = 0, minor = 0, optin = 0;
    attn_device_smem(&major, &minor, &optin);
    int lim = attn_set_smem_limit(0);
    attn_set_smem_limit(lim);
    int use = lim > 0 ? lim : optin;
    printf("device sm_%d%d, smem per block %d%s; configurations:", major, minor, use, lim > 0 ? " (forced)" : "");
    for (int r = 0; r < ATTN_NUM_ROUTES; r++) {
        attn_tiles t;
        if (attn_route_tiles(r, use, &t)) printf(" %s=NONE", attn_route_name(r));
        else printf(" %s=%d/%d/%s/%d", attn_route_name(r), t.bm, t.bn, t.staging, t.smem_bytes);
    }
    printf("\n");
}

/* ---- validation ------------------------------------------------------------------------ */

static int nfail, ncase;
static int wanted(const char *label, int route);

static void vrun(const char *what, val_case c, double tol) {
    val_result r;
    static uint64_t seed = 1234;
    seed += 101;
    if (!wanted("", c.route)) return;
    int err = val_run(&c, seed, &r);
    int ok = !err && !r.err && r.unwritten == 0 && r.rel_err < tol && (r.rel_diff < 0 || r.rel_diff < tol);
    ncase++;
    if (!ok) nfail++;
    printf("%-4s %-16s %-5s page %4d rows %d q[0..] %5d seq[0] %6d  rel %.2e  diff %9.2e  unwritten %ld%s%s\n",
           ok ? "ok" : "FAIL", attn_route_name(c.route), c.dtype ? "fp8" : "fp16", c.page, c.num_rows, c.q[c.num_rows - 1],
           c.seq[0], r.rel_err, r.rel_diff, r.unwritten, err || r.err ? "  err " : "",
           err ? attn_strerror(err) : r.err ? attn_strerror(r.err) : "");
    (void)what;
    fflush(stdout);
}

static val_case mk(int route, int dtype, int page, int flags, int n, const int *q, const int *seq, int expand,
                   int samples, int cmp) {
    val_case c;
    memset(&c, 0, sizeof c);
    c.route = route; c.dtype = dtype; c.page = page; c.flags = flags; c.num_rows = n;
    for (int i = 0; i < n; i++) { c.q[i] = q[i]; c.seq[i] = seq[i]; }
    c.expand = expand; c.samples = samples; c.compare_to = cmp;
    return c;
}

static int validate(int long_ctx) {
    const double tol = 2e-3;
    const int pages[] = {16, 784, 816, 1568};
    const int pq[6] = {1, 5, 16, 32, 784, 1568};
    for (int pi = 0; pi < 4; pi++) {
        int page = pages[pi], any = page == 784 ? 0 : ATTN_F_ANY_PAGE;
        for (int ctx = 0; ctx < 2; ctx++) {
            int seq[6];
            const int pre_short[6] = {1, 0, 37, 100, 0, 1000};
            for (int i = 0; i < 6; i++) seq[i] = pq[i] + (ctx ? 20000 + 131 * i : pre_short[i]);
            /* fp16: generic (compared with fast), low-smem, fast (compared with generic) */
            vrun("", mk(ATTN_PREFILL_GENERIC, ATTN_FP16, page, any, 6, pq, seq, 0, 36, ATTN_PREFILL_FAST), tol);
            vrun("", mk(ATTN_PREFILL_LOWSMEM, ATTN_FP16, page, any, 6, pq, seq, 0, 36, ATTN_PREFILL_GENERIC), tol);
            vrun("", mk(ATTN_PREFILL_FAST, ATTN_FP16, page, any, 6, pq, seq, 0, 36, -1), tol);
            /* fp8: in-kernel dequant generic and low-smem, bridge */
            vrun("", mk(ATTN_PREFILL_GENERIC, ATTN_FP8_E5M2, page, 0, 6, pq, seq, 0, 36, ATTN_FP8_BRIDGE), tol);
            vrun("", mk(ATTN_PREFILL_LOWSMEM, ATTN_FP8_E5M2, page, 0, 6, pq, seq, 0, 36, -1), tol);
            vrun("", mk(ATTN_FP8_BRIDGE, ATTN_FP8_E5M2, page, 0, 6, pq, seq, 0, 36, -1), tol);
        }
        /* decode: rows q = 1, 5, 16 at short, medium and >= 32768 contexts, and a q = 1 row of 79
         * 256-token partitions (so the batch's reduce is the wide combine, attn_decode.cu) */
        const int dq[4] = {1, 5, 16, 1};
        const int dseq[4] = {1 + 50, 5 + 5000, 16 + 40000, 20000};
        for (int dt = 0; dt < 2; dt++) {
            vrun("", mk(ATTN_DECODE_XQA, dt, page, 0, 4, dq, dseq, 1, 30, ATTN_DECODE_SCALAR), tol);
            vrun("", mk(ATTN_DECODE_SCALAR, dt, page, 0, 4, dq, dseq, 1, 30, -1), tol);
            vrun("", mk(ATTN_DECODE_SMALLQ, dt, page, 0, 4, dq, dseq, 0, 30, -1), tol);
            /* the fused small-q route agrees with the expanded XQA route (same token order) */
        }
    }
    /* v8: one row whose CTAs leave a round of SMs idle, so the fast path splits its walk (auto:
     * 3 parts on 132 SMs at q = 784, 2 for the bridge's q = 1568; kernels/attn_split.h) */
    {
        int q784[1] = {784}, s17[1] = {784 + 16384}, q1568[1] = {1568}, s21[1] = {1568 + 20000};
        vrun("", mk(ATTN_PREFILL_FAST, ATTN_FP16, 784, 0, 1, q784, s17, 0, 24, ATTN_PREFILL_GENERIC), tol);
        vrun("", mk(ATTN_FP8_BRIDGE, ATTN_FP8_E5M2, 1568, 0, 1, q1568, s21, 0, 24, ATTN_PREFILL_GENERIC), tol);
    }
    /* fast path refuses pages it does not support */
    {
        attn_kv kv;
        int q1 = 32, s1 = 100;
        ncase++;
        if (attn_kv_alloc_random(&kv, ATTN_FP16, 4, 816, KVH, D, 1.f, 3) == 0) {
            attn_batch *b = attn_batch_create(&kv, 1, &q1, &s1, H, NULL, 0, 1);
            void *q = attn_dev_alloc((size_t)32 * H * D * 2), *o = attn_dev_alloc((size_t)32 * H * D * 2);
            int e = attn_run(ATTN_PREFILL_FAST, &kv, b, q, o, 0.0625f, NULL, 0, 0, NULL);
            printf("%-4s prefill-bm32 on page 816 without ANY_PAGE returns %d (%s)\n", e == ATTN_EPAGE ? "ok" : "FAIL",
                   e, attn_strerror(e));
            if (e != ATTN_EPAGE) nfail++;
            attn_dev_free(q); attn_dev_free(o); attn_batch_free(b); attn_kv_free(&kv);
        }
    }
    if (long_ctx) {
        int q1[1] = {1}, q5[1] = {5}, q16[1] = {16}, q784[1] = {784}, s240[1] = {240000}, s104[1] = {104000};
        vrun("", mk(ATTN_DECODE_XQA, ATTN_FP16, 784, 0, 1, q1, s240, 0, 6, ATTN_DECODE_SCALAR), tol);
        vrun("", mk(ATTN_DECODE_XQA, ATTN_FP8_E5M2, 1568, 0, 1, q1, s240, 0, 6, ATTN_DECODE_SCALAR), tol);
        vrun("", mk(ATTN_DECODE_SMALLQ, ATTN_FP16, 784, 0, 1, q5, s240, 0, 6, -1), tol);
        vrun("", mk(ATTN_DECODE_SMALLQ, ATTN_FP16, 816, 0, 1, q16, s240, 0, 6, -1), tol);
        vrun("", mk(ATTN_DECODE_XQA, ATTN_FP16, 16, 0, 1, q5, s240, 1, 6, -1), tol);
        vrun("", mk(ATTN_PREFILL_GENERIC, ATTN_FP16, 784, 0, 1, q1, s240, 0, 4, -1), tol);
        vrun("", mk(ATTN_PREFILL_FAST, ATTN_FP16, 784, 0, 1, q784, s104, 0, 6, ATTN_PREFILL_GENERIC), tol);
        vrun("", mk(ATTN_FP8_BRIDGE, ATTN_FP8_E5M2, 1568, 0, 1, q784, s104, 0, 6, ATTN_PREFILL_GENERIC), tol);
    }
    printf("validate: %d of %d cases passed\n", ncase - nfail, ncase);
    return nfail ? 1 : 0;
}

/* ---- timing -------------------------------------------------------------------------- */

static char peer_keys[64][64];
static double peer_vals[64];
static int npeers;

static void load_peers(const char *path) {
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return;
    while (npeers < 64 && fscanf(f, "%63s %lf", peer_keys[npeers], &peer_vals[npeers]) == 2) npeers++;
    fclose(f);
}
static double peer(const char *key, double dflt) {
    for (int i = 0; i < npeers; i++)
        if (!strcmp(peer_keys[i], key)) return peer_vals[i];
    return dflt;
}

static double copy_tbps, mma_tflops;
static const char *filter;

static int wanted(const char *label, int route) {
    if (!filter) return 1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", filter);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (strstr(label, tok) || strstr(attn_route_name(route), tok)) return 1;
    return 0;
}
static double t_xqa_q1, t_smallq_q5, t_generic_q1, t_fast_784, t_flash_784;
static void ab_env(const char *k, const char *v);

/* time one route on one shape; prints a table row; returns ms (or -1) */
static double bench_one(const char *label, int route, int dtype, int page, int flags, int q_len, int seq,
                        int expand, const char *peer_tag) {
    attn_kv kv;
    int blocks = (seq + page - 1) / page + 2;
    float ms = -1;
    if (!wanted(label, route)) return -1;
    if (attn_kv_alloc_random(&kv, dtype, blocks, page, KVH, D, 0.5f, 99)) return -1;
    attn_batch *b0 = attn_batch_create(&kv, 1, &q_len, &seq, H, NULL, 0, 5);
    attn_batch *b = b0 && expand ? attn_batch_expand(b0) : b0;
    size_t n = (size_t)q_len * H * D, wsb = b ? attn_ws_bytes(route, &kv, b) : 0;
    void *q = attn_dev_alloc(n * 2), *o = attn_dev_alloc(n * 2), *ws = wsb ? attn_dev_alloc(wsb) : NULL;
    if (b && q && o && (ws || !wsb) && !attn_fill_half_random(q, n, -2.f, 2.f, 17)) {
        int reps = seq * (double)q_len > 5e7 ? 10 : 30;
        int e = attn_time(route, &kv, b, q, o, 0.0625f, ws, wsb, flags, 3, reps, &ms);
        if (e) { printf("%s: %s\n", label, attn_strerror(e)); ms = -1; }
    }
    /* roofline: causal flops 4*H*D*sum(keys); bytes: K+V of the kv heads once, q and out */
    double keys = (double)q_len * (seq - q_len) + (double)q_len * (q_len + 1) / 2;
    double flops = 4.0 * H * D * keys;
    double es = dtype == ATTN_FP8_E5M2 ? 1 : 2;
    double bytes = 2.0 * KVH * seq * D * es + 2.0 * H * q_len * D * 2;
    if (route == ATTN_FP8_EXPAND) { flops = 0; bytes = 2.0 * KVH * seq * D * (1 + 2); }
    if (route == ATTN_FP8_BRIDGE) bytes += 2.0 * KVH * seq * D * (2 + 2);
    double tf = flops / (mma_tflops * 1e9), tb = bytes / (copy_tbps * 1e9);
    double roof = tf > tb ? tf : tb;
    char k1[64], k2[64];
    double pf = -1, pc = -1;
    if (peer_tag) {
        snprintf(k1, sizeof k1, "flash_%s", peer_tag);
        snprintf(k2, sizeof k2, "cudnn_%s", peer_tag);
        pf = peer(k1, -1);
        pc = peer(k2, -1);
    }
    double best = pf > 0 && (pc <= 0 || pf < pc) ? pf : pc;
    printf("| %-34s | %-15s | %-4s | %9.3f | %8.3f | %8.3f | %6s | %8.4f | %8.4f | %5.1f%% |\n", label,
           attn_route_name(route), dtype ? "fp8" : "fp16", ms, pf, pc,
           best > 0 && ms > 0 ? (snprintf(k1, sizeof k1, "%.2f", ms / best), k1) : "-", tf, tb,
           ms > 0 ? 100 * roof / ms : 0);
    fflush(stdout);
    attn_dev_free(q); attn_dev_free(o); attn_dev_free(ws);
    if (b && b != b0) attn_batch_free(b);
    attn_batch_free(b0);
    attn_kv_free(&kv);
    return ms;
}

static int bench(const char *peers_path) {
    load_peers(peers_path);
    copy_tbps = peer("copy_TBps", 4.24);
    mma_tflops = peer("gemm_tflops", 700);
    printf("ceilings: copy %.2f TB/s, fp16 GEMM %.0f TFLOP/s (%s)\n", copy_tbps, mma_tflops,
           npeers ? "measured this run" : "defaults");
    printf("| %-34s | %-15s | %-4s | %9s | %8s | %8s | %6s | %8s | %8s | %6s |\n", "shape (12q/2kv, D256)", "route",
           "kv", "ours ms", "flash ms", "cudnn ms", "ratio", "FLOP ms", "byte ms", "roof");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    t_xqa_q1 = bench_one("decode q=1 ctx 240000 p784", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
    bench_one("decode q=1 ctx 240000 p784", ATTN_DECODE_SCALAR, 0, 784, 0, 1, 240000, 0, "q1_240000");
    setenv("ATTN_DECODE_OCC", "1", 1);
    bench_one("decode q=1 ctx 240000 p784 occ1", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
    bench_one("decode q=1 ctx 240000 p1568 occ1", ATTN_DECODE_XQA, 1, 1568, 0, 1, 240000, 0, NULL);
    bench_one("decode q=1 ctx 131072 p784 occ1", ATTN_DECODE_XQA, 0, 784, 0, 1, 131072, 0, "q1_131072");
    bench_one("verify q=5 ctx 240000 p816 occ1", ATTN_DECODE_SMALLQ, 0, 816, 0, 5, 240000, 0, "q5_240000");
    setenv("ATTN_DECODE_OCC", "2", 1);
    bench_one("decode q=1 ctx 240000 p784 occ2", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
    bench_one("verify q=5 ctx 240000 p816 occ2", ATTN_DECODE_SMALLQ, 0, 816, 0, 5, 240000, 0, "q5_240000");
    /* A/B: v4's late K store undone (v3's K store after S), both occupancies (the v3 reduce's A/B
     * is in kernels/NOTES.md v4; the kernel is gone) */
    setenv("ATTN_DECODE_EARLYK", "1", 1);
    bench_one("A/B v3 K store: decode q=1 240000 occ2", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
    setenv("ATTN_DECODE_OCC", "1", 1);
    bench_one("A/B v3 K store: decode q=1 240000 occ1", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
    unsetenv("ATTN_DECODE_EARLYK");
    unsetenv("ATTN_DECODE_OCC");
    bench_one("decode q=1 ctx 240000 p1568", ATTN_DECODE_XQA, 1, 1568, 0, 1, 240000, 0, NULL);
    bench_one("decode q=1 ctx 131072 p784", ATTN_DECODE_XQA, 0, 784, 0, 1, 131072, 0, "q1_131072");
    bench_one("decode q=1 ctx 16384 p784", ATTN_DECODE_XQA, 0, 784, 0, 1, 16384, 0, NULL);
    t_smallq_q5 = bench_one("verify q=5 ctx 240000 p816", ATTN_DECODE_SMALLQ, 0, 816, 0, 5, 240000, 0, "q5_240000");
    bench_one("verify q=5 ctx 240000 p816 expanded", ATTN_DECODE_XQA, 0, 816, 0, 5, 240000, 1, "q5_240000");
    bench_one("verify q=5 ctx 240000 p1616", ATTN_DECODE_SMALLQ, 1, 1616, 0, 5, 240000, 0, NULL);
    bench_one("verify q=16 ctx 240000 p816", ATTN_DECODE_SMALLQ, 0, 816, 0, 16, 240000, 0, "q16_240000");
    t_generic_q1 = bench_one("q=1 on prefill ctx 240000 p784", ATTN_PREFILL_GENERIC, 0, 784, 0, 1, 240000, 0, "q1_240000");
    bench_one("q=1 on prefill ctx 240000 p1568", ATTN_PREFILL_GENERIC, 1, 1568, 0, 1, 240000, 0, NULL);
    t_fast_784 = bench_one("prefill q=784 ctx 104000 p784", ATTN_PREFILL_FAST, 0, 784, 0, 784, 104000, 0, "q784_104000");
    { /* v8: the same launch unsplit (the reference grid), so the table shows what the split buys */
        const char *was = getenv("ATTN_PREFILL_SPLIT");
        char keep[16];
        snprintf(keep, sizeof keep, "%s", was ? was : "");
        ab_env("ATTN_PREFILL_SPLIT", "1");
        bench_one("prefill q=784 ctx 104000 p784 unsplit", ATTN_PREFILL_FAST, 0, 784, 0, 784, 104000, 0, "q784_104000");
        ab_env("ATTN_PREFILL_SPLIT", was ? keep : NULL);
    }
    setenv("ATTN_PREFILL_PIPE", "1", 1); /* A/B: v3's 175 KB two-tile configuration */
    bench_one("A/B v3 pipe: prefill q=784 ctx 104000 p784", ATTN_PREFILL_FAST, 0, 784, 0, 784, 104000, 0, "q784_104000");
    unsetenv("ATTN_PREFILL_PIPE");
    bench_one("prefill q=784 ctx 104000 p784", ATTN_PREFILL_GENERIC, 0, 784, 0, 784, 104000, 0, "q784_104000");
    bench_one("prefill q=784 ctx 104000 p784", ATTN_PREFILL_LOWSMEM, 0, 784, 0, 784, 104000, 0, "q784_104000");
    bench_one("prefill q=816 ctx 104000 p816 any", ATTN_PREFILL_FAST, 0, 816, ATTN_F_ANY_PAGE, 816, 104000, 0, NULL);
    bench_one("prefill q=1568 ctx 104000 p1568", ATTN_FP8_BRIDGE, 1, 1568, 0, 1568, 104000, 0, NULL);
    bench_one("prefill q=1568 ctx 104000 p1568", ATTN_FP8_EXPAND, 1, 1568, 0, 1568, 104000, 0, NULL);
    bench_one("prefill q=1568 ctx 104000 p1568", ATTN_PREFILL_GENERIC, 1, 1568, 0, 1568, 104000, 0, NULL);
    bench_one("prefill q=2048 ctx 131072 p784", ATTN_PREFILL_FAST, 0, 784, 0, 2048, 131072, 0, "q2048_131072");
    /* the sm_70 / sm_75 configurations, timed on this GPU (not a V100/T4 number) */
    int prev = attn_set_smem_limit(96 * 1024);
    bench_one("cfg sm70: decode q=1 ctx 240000 p784", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, NULL);
    bench_one("cfg sm70: verify q=5 ctx 240000 p816", ATTN_DECODE_SMALLQ, 0, 816, 0, 5, 240000, 0, NULL);
    bench_one("cfg sm70: prefill q=784 ctx 104000 p784", ATTN_PREFILL_FAST, 0, 784, 0, 784, 104000, 0, NULL);
    bench_one("cfg sm70: prefill q=784 ctx 104000 p784", ATTN_PREFILL_GENERIC, 0, 784, 0, 784, 104000, 0, NULL);
    attn_set_smem_limit(64 * 1024);
    bench_one("cfg sm75: decode q=1 ctx 240000 p784", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, NULL);
    bench_one("cfg sm75: verify q=5 ctx 240000 p816", ATTN_DECODE_SMALLQ, 0, 816, 0, 5, 240000, 0, NULL);
    bench_one("cfg sm75: prefill q=784 ctx 104000 p784", ATTN_PREFILL_FAST, 0, 784, 0, 784, 104000, 0, NULL);
    bench_one("cfg sm75: prefill q=784 ctx 104000 p784", ATTN_PREFILL_GENERIC, 0, 784, 0, 784, 104000, 0, NULL);
    attn_set_smem_limit(prev);
    t_flash_784 = peer("flash_q784_104000", -1);
    printf("\ntargets:\n");
    if (t_xqa_q1 <= 0 || t_smallq_q5 <= 0 || t_generic_q1 <= 0 || t_fast_784 <= 0) {
        printf("  (rows filtered out: targets need the default decode, verify, pathology and prefill rows)\n");
        return 0;
    }
    double bytes = 2.0 * KVH * 240000 * D * 2;
    printf("  decode XQA q=1 240K: %.1f%% of copy bandwidth (target >= 80%%)  %s\n",
           100 * bytes / (t_xqa_q1 * 1e9) / copy_tbps, bytes / (t_xqa_q1 * 1e9) / copy_tbps >= 0.8 ? "MET" : "MISSED");
    printf("  verify q=5 small-q / XQA q=1: %.2fx (target <= 1.5x)  %s\n", t_smallq_q5 / t_xqa_q1,
           t_smallq_q5 / t_xqa_q1 <= 1.5 ? "MET" : "MISSED");
    if (t_flash_784 > 0)
        printf("  prefill fast q=784 104K: %.2fx torch flash throughput (target >= 0.4x)  %s\n", t_flash_784 / t_fast_784,
               t_flash_784 / t_fast_784 >= 0.4 ? "MET" : "MISSED");
    printf("  pathology: q=1 prefill-generic / decode-xqa at 240K: %.1fx (target >= 20x)  %s\n", t_generic_q1 / t_xqa_q1,
           t_generic_q1 / t_xqa_q1 >= 20 ? "MET" : "MISSED");
    return 0;
}

/* An A/B table's head: the peers file's ceilings (or the defaults) and the column titles. */
static void ab_header(const char *peers_path) {
    load_peers(peers_path);
    copy_tbps = peer("copy_TBps", 4.24);
    mma_tflops = peer("gemm_tflops", 700);
    printf("ceilings: copy %.2f TB/s (%s); 80%% of copy for the fp16 240K bytes = %.4f ms\n", copy_tbps,
           npeers ? "measured this run" : "default", 2.0 * KVH * 240000 * D * 2 / (copy_tbps * 1e9) / 0.8);
    printf("| %-34s | %-15s | %-4s | %9s | %8s | %8s | %6s | %8s | %8s | %6s |\n", "shape (12q/2kv, D256)", "route",
           "kv", "ours ms", "flash ms", "cudnn ms", "ratio", "FLOP ms", "byte ms", "roof");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
}

/* v5 A/B of the XQA variants (env ATTN_DECODE_XQA, attn_decode.cu) x CTAs per SM (ATTN_DECODE_OCC),
 * all in one run against the same ceilings; the default rows (no variable) come first and last so
 * drift within the run shows. */
static int bench_xqa_ab(const char *peers_path) {
    static const char *vars[] = {"v4", "split", "bn32", "bn32n", "pipe", "phase", "phases"};
    char label[96];
    ab_header(peers_path);
    unsetenv("ATTN_DECODE_XQA");
    unsetenv("ATTN_DECODE_OCC");
    double t1 = bench_one("default: decode q=1 240000 p784", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
    bench_one("default: decode q=1 240000 p1568", ATTN_DECODE_XQA, 1, 1568, 0, 1, 240000, 0, NULL);
    bench_one("default: decode q=1 131072 p784", ATTN_DECODE_XQA, 0, 784, 0, 1, 131072, 0, "q1_131072");
    double t5 = bench_one("default: verify q=5 240000 p816", ATTN_DECODE_SMALLQ, 0, 816, 0, 5, 240000, 0, "q5_240000");
    for (int v = 0; v < (int)(sizeof vars / sizeof vars[0]); v++) {
        setenv("ATTN_DECODE_XQA", vars[v], 1);
        for (int occ = 1; occ <= 3; occ++) {
            if (occ == 3 && (v < 2 || v == 4)) continue; /* occ3 only for the <= 53 KB variants */
            char o[2] = {(char)('0' + occ), 0};
            setenv("ATTN_DECODE_OCC", o, 1);
            snprintf(label, sizeof label, "%s occ%d: q=1 240000 p784", vars[v], occ);
            bench_one(label, ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
            snprintf(label, sizeof label, "%s occ%d: q=1 240000 p1568", vars[v], occ);
            bench_one(label, ATTN_DECODE_XQA, 1, 1568, 0, 1, 240000, 0, NULL);
            snprintf(label, sizeof label, "%s occ%d: q=1 131072 p784", vars[v], occ);
            bench_one(label, ATTN_DECODE_XQA, 0, 784, 0, 1, 131072, 0, "q1_131072");
        }
    }
    unsetenv("ATTN_DECODE_XQA");
    unsetenv("ATTN_DECODE_OCC");
    double t2 = bench_one("default again: decode q=1 240000 p784", ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
    if (t1 > 0 && t2 > 0 && t5 > 0)
        printf("default XQA fp16 240K: %.1f%% / %.1f%% of copy (first / last row); q=5 small-q / q=1: %.2fx\n",
               100 * 2.0 * KVH * 240000 * D * 2 / (t1 * 1e9) / copy_tbps,
               100 * 2.0 * KVH * 240000 * D * 2 / (t2 * 1e9) / copy_tbps, t5 / t1);
    return 0;
}

/* v6 A/B (kernels/NOTES.md v6), one run against the same ceilings, default rows first and last
 * (drift): XQA default (phasena + the v6 combine) beside v5's phase, v5's reduce and no reduce at
 * all (ATTN_AB_SKIP_REDUCE: timing only, the output is not written); small-q default (phase2na)
 * beside phase2 and v5's PIPE2 entry; the prefill fast path's rounds (q=704 is 22 x 12 = 264 CTAs,
 * 2 rounds of 132 at 1 CTA/SM; q=784 is 300, 3 rounds) and ATTN_PREFILL_VAR=shared2 (2 per SM). */
static void ab_env(const char *k, const char *v) { if (v) setenv(k, v, 1); else unsetenv(k); }

/* the fast path's three A/B rows under the current ATTN_PREFILL_VAR: q=784 (300 CTAs, 3 rounds of
 * 132 at 1 CTA/SM), q=704 (264 CTAs, 2 rounds) at 104K, q=2048 at 131K */
static void prefill_rounds_rows(const char *name, const char *again) {
    char label[128];
    snprintf(label, sizeof label, "%s: q784 104K%s", name, again);
    bench_one(label, ATTN_PREFILL_FAST, 0, 784, 0, 784, 104000, 0, "q784_104000");
    snprintf(label, sizeof label, "%s: q704 104K%s", name, again);
    bench_one(label, ATTN_PREFILL_FAST, 0, 784, 0, 704, 104000, 0, NULL);
    snprintf(label, sizeof label, "%s: q2048 131K%s", name, again);
    bench_one(label, ATTN_PREFILL_FAST, 0, 784, 0, 2048, 131072, 0, "q2048_131072");
    snprintf(label, sizeof label, "%s: q784 16K%s", name, again);
    bench_one(label, ATTN_PREFILL_FAST, 0, 784, 0, 784, 16384, 0, NULL);
    snprintf(label, sizeof label, "%s: bridge q1568 104K%s", name, again);
    bench_one(label, ATTN_FP8_BRIDGE, 1, 1568, 0, 1568, 104000, 0, NULL);
}
static int bench_v6_ab(const char *peers_path) {
    static const struct { const char *name, *xqa, *red, *skip; } dv[] = {
        {"xqa default", NULL, NULL, NULL}, {"xqa phase (v5)", "phase", NULL, NULL},
        {"xqa reduce v5", NULL, "v5", NULL}, {"xqa NO reduce", NULL, NULL, "1"}};
    static const char *sv[] = {NULL, "phase2", "v5"};
    static const char *pv[] = {NULL, "shared2"};
    char label[128];
    ab_header(peers_path);
    for (int pass = 0; pass < 2; pass++) {
        const char *ag = pass ? " (again)" : "";
        for (int i = 0; i < (int)(sizeof dv / sizeof dv[0]); i++) {
            ab_env("ATTN_DECODE_XQA", dv[i].xqa);
            ab_env("ATTN_DECODE_REDUCE", dv[i].red);
            ab_env("ATTN_AB_SKIP_REDUCE", dv[i].skip);
            snprintf(label, sizeof label, "%s: q1 240K%s", dv[i].name, ag);
            bench_one(label, ATTN_DECODE_XQA, 0, 784, 0, 1, 240000, 0, "q1_240000");
            snprintf(label, sizeof label, "%s: q1 131K%s", dv[i].name, ag);
            bench_one(label, ATTN_DECODE_XQA, 0, 784, 0, 1, 131072, 0, "q1_131072");
            snprintf(label, sizeof label, "%s: q1 240K fp8%s", dv[i].name, ag);
            bench_one(label, ATTN_DECODE_XQA, 1, 1568, 0, 1, 240000, 0, NULL);
        }
        ab_env("ATTN_DECODE_XQA", NULL);
        ab_env("ATTN_DECODE_REDUCE", NULL);
        ab_env("ATTN_AB_SKIP_REDUCE", NULL);
        for (int i = 0; i < (int)(sizeof sv / sizeof sv[0]); i++) {
            const char *n = sv[i] ? sv[i] : "default";
            ab_env("ATTN_DECODE_SMALLQ", sv[i]);
            snprintf(label, sizeof label, "smallq %s: q5 240K%s", n, ag);
            bench_one(label, ATTN_DECODE_SMALLQ, 0, 816, 0, 5, 240000, 0, "q5_240000");
            snprintf(label, sizeof label, "smallq %s: q16 240K%s", n, ag);
            bench_one(label, ATTN_DECODE_SMALLQ, 0, 816, 0, 16, 240000, 0, "q16_240000");
        }
        ab_env("ATTN_DECODE_SMALLQ", NULL);
        for (int i = 0; i < (int)(sizeof pv / sizeof pv[0]); i++) {
            ab_env("ATTN_PREFILL_VAR", pv[i]);
            prefill_rounds_rows(pv[i] ? pv[i] : "fast default", ag);
        }
        ab_env("ATTN_PREFILL_VAR", NULL);
    }
    return 0;
}

/* v7 A/B of the prefill fast path's variants (env ATTN_PREFILL_VAR, attn_prefill.cu
 * launch_prefill_var; a comma-separated list in env PREFILL_AB_VARS, "-" = the default, NAME=VALUE
 * = the default under that environment variable, e.g. ATTN_PREFILL_SPLIT=2), twice */
static int bench_prefill_ab(const char *peers_path) {
    const char *list = getenv("PREFILL_AB_VARS");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list ? list : "-,na,shared2,shared2na,phase64x2,phase64x2na");
    ab_header(peers_path);
    for (int pass = 0; pass < 2; pass++) {
        char work[512];
        memcpy(work, buf, sizeof work);
        for (char *sv = NULL, *v = strtok_r(work, ",", &sv); v; v = strtok_r(NULL, ",", &sv)) {
            int dflt = !strcmp(v, "-");
            char *eq = strchr(v, '=');
            if (eq) { /* NAME=VALUE: the default kernel under that knob */
                *eq = 0;
                ab_env(v, eq + 1);
                *eq = '=';
            } else {
                ab_env("ATTN_PREFILL_VAR", dflt ? NULL : v);
            }
            prefill_rounds_rows(dflt ? "fast default" : v, pass ? " (again)" : "");
            if (eq) {
                *eq = 0;
                ab_env(v, NULL);
                *eq = '=';
            }
        }
    }
    ab_env("ATTN_PREFILL_VAR", NULL);
    return 0;
}

/* v6 A/B of the fp8 expansion (env ATTN_EXPAND_VAR, attn_prefill.cu expand_pick): the route
 * ATTN_FP8_EXPAND alone at prefixes short to long, each variant, twice */
static int bench_expand_ab(const char *peers_path) {
    static const char *ev[] = {NULL, "v5", "p8u4"};
    static const int lens[] = {4096, 12040, 16384, 41285, 104032, 262144};
    char label[128];
    load_peers(peers_path);
    copy_tbps = peer("copy_TBps", 4.24);
    mma_tflops = peer("gemm_tflops", 700);
    printf("ceilings: copy %.2f TB/s\n", copy_tbps);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < (int)(sizeof ev / sizeof ev[0]); i++) {
            ab_env("ATTN_EXPAND_VAR", ev[i]);
            for (int l = 0; l < (int)(sizeof lens / sizeof lens[0]); l++) {
                snprintf(label, sizeof label, "expand %s: %d%s", ev[i] ? ev[i] : "default", lens[l], pass ? " (again)" : "");
                bench_one(label, ATTN_FP8_EXPAND, 1, 1568, 0, 784, lens[l], 0, NULL);
            }
        }
    ab_env("ATTN_EXPAND_VAR", NULL);
    return 0;
}

int main(int argc, char **argv) {
    int do_val = 0, do_bench = 0, long_ctx = 0;
    const char *peers = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--validate")) do_val = 1;
        else if (!strcmp(argv[i], "--bench")) do_bench = 1;
        else if (!strcmp(argv[i], "--xqa-ab")) do_bench = 2;
        else if (!strcmp(argv[i], "--v6-ab")) do_bench = 3;
        else if (!strcmp(argv[i], "--expand-ab")) do_bench = 4;
        else if (!strcmp(argv[i], "--prefill-ab")) do_bench = 5;
        else if (!strcmp(argv[i], "--long")) long_ctx = 1;
        else if (!strcmp(argv[i], "--peers") && i + 1 < argc) peers = argv[++i];
        else if (!strcmp(argv[i], "--smem-limit") && i + 1 < argc) attn_set_smem_limit(atoi(argv[++i]));
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--validate [--long]] [--bench|--xqa-ab|--v6-ab|--expand-ab|--prefill-ab [--peers FILE] [--filter A,B]] [--smem-limit N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!do_val && !do_bench) do_val = do_bench = 1;
    if (!attn_gpu_available()) {
        printf("no CUDA device: kernel validation and timing skipped\n");
        return 0;
    }
    int rc = 0;
    print_tiles();
    if (do_val) rc |= validate(long_ctx);
    if (do_bench == 5) rc |= bench_prefill_ab(peers);
    else if (do_bench == 4) rc |= bench_expand_ab(peers);
    else if (do_bench == 3) rc |= bench_v6_ab(peers);
    else if (do_bench == 2) rc |= bench_xqa_ab(peers);
    else if (do_bench) rc |= bench(peers);
    return rc;
}
