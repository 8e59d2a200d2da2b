/* bench_kernels -- validate and time the paged attention kernels on the GPU at hand.
 *   bench_kernels --validate [--long]    correctness table (float64 reference), exit 1 on failure
 *   bench_kernels --validate --shapes all  instead: every route at head_dim 64, 128, 256 x GQA groups
 *                    1, 2, 4, 6, 8, 16 x short / long contexts x fp16 / fp8 (the short ones also as
 *                    an sm_70 and an sm_75 would run them); --shapes 64 (128, 256): one head_dim
 *   bench_kernels --bench [--peers F]    timing table: shape, ours, peer, ratio, % of roofline
 *   --varlen         validate (--validate) / time (--bench) the varlen kernel (attn_varlen.cu) on mixed
 *                    batches of decode rows and chunks instead of the routes
 *   --smem-limit N   run the configurations a GPU with N bytes of smem per block gets (98304 = sm_70,
 *                    65536 = sm_75; same as env ATTN_SMEM_LIMIT); --filter A,B  validate / bench only
 *                    the cases whose route name (bench: or label) contains A or B
 * Shapes are the reference system's per-rank layer: 12 q heads, 2 kv heads, D = 256.
 * The peers file (kernels/peers.py writes it) holds "key value" lines: copy_TBps, gemm_tflops,
 * flash_q<Q>_<CTX>, cudnn_q<Q>_<CTX> in ms. Needs only the CUDA runtime (no Check). The kernels'
 * A/B variants (other configurations of the tile engine) are timed by kernels/dev/. */
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
    char shape[64] = "";
    if (c.head_dim || c.group) {
        int lim = attn_set_smem_limit(0);
        attn_set_smem_limit(lim);
        snprintf(shape, sizeof shape, "  D %3d g %2d smem %s", c.head_dim, c.group,
                 lim == 96 * 1024 ? "sm70" : lim == 64 * 1024 ? "sm75" : lim ? "forced" : "own");
    }
    printf("%-4s %-16s %-5s page %4d rows %d q[0..] %5d seq[0] %6d  rel %.2e  diff %9.2e  unwritten %ld%s%s%s\n",
           ok ? "ok" : "FAIL", attn_route_name(c.route), c.dtype ? "fp8" : "fp16", c.page, c.num_rows, c.q[c.num_rows - 1],
           c.seq[0], r.rel_err, r.rel_diff, r.unwritten, shape, err || r.err ? "  err " : "",
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
    /* one row whose CTAs leave a round of SMs idle, so the fast path splits its walk (auto:
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

/* ---- varlen: mixed batches (decode rows with long contexts together with chunks) ------------ */

static attn_varlen_case vl_mk(int head_dim, int kv_heads, int group, int page, int samples, int n, const int *q,
                              const int *seq) {
    attn_varlen_case c;
    memset(&c, 0, sizeof c);
    c.head_dim = head_dim; c.kv_heads = kv_heads; c.group = group; c.page = page; c.samples = samples;
    c.num_rows = n;
    for (int i = 0; i < n; i++) { c.q[i] = q[i]; c.seq[i] = seq[i]; }
    return c;
}

static void vl_run(const char *what, attn_varlen_case c, double tol) {
    static uint64_t seed = 4321;
    double rel = 0;
    long unw = 0;
    seed += 97;
    int err = attn_varlen_validate(&c, seed, &rel, &unw);
    int ok = !err && unw == 0 && rel < tol, dec = 0, tok = 0;
    for (int r = 0; r < c.num_rows; r++) { dec += c.q[r] == 1; tok += c.q[r]; }
    ncase++;
    if (!ok) nfail++;
    printf("%-4s varlen %-22s D %3d group %2d kvh %d page %4d rows %2d (decode %2d) tokens %5d  rel %.2e  unwritten %ld%s%s\n",
           ok ? "ok" : "FAIL", what, c.head_dim, c.group, c.kv_heads, c.page, c.num_rows, dec, tok, rel, unw,
           err ? "  err " : "", err ? attn_strerror(err) : "");
    fflush(stdout);
}

static int validate_varlen(int long_ctx) {
    const double tol = 2e-3;
    /* decode rows at short, medium and long contexts, a fresh chunk, chunks with a prefix */
    const int q6[6] = {1, 1, 1, 512, 100, 1}, s6[6] = {50, 5000, 20000, 512, 3000, 1};
    vl_run("decode+chunks", vl_mk(128, 2, 8, 16, 48, 6, q6, s6), tol);
    vl_run("decode+chunks", vl_mk(256, 2, 6, 784, 48, 6, q6, s6), tol);
    vl_run("decode+chunks", vl_mk(64, 4, 1, 32, 48, 6, q6, s6), tol);
    /* chunk 784 after a 16K prefix among decode rows at 40K (page 784, D 256 as the routes) */
    const int q4[4] = {1, 784, 37, 1}, s4[4] = {40000, 784 + 16384, 137, 1000};
    vl_run("chunk784+decode", vl_mk(256, 2, 6, 784, 40, 4, q4, s4), tol);
    vl_run("chunk784+decode", vl_mk(128, 8, 4, 816, 40, 4, q4, s4), tol);
    /* GQA 16 (one kv head), page 1; a group of 12 (not a power of two), page 48; MHA on 64 */
    const int q5[5] = {3, 1, 64, 1, 17}, s5[5] = {3, 700, 64 + 129, 2, 17 + 4000};
    vl_run("gqa16 page1", vl_mk(128, 1, 16, 1, 40, 5, q5, s5), tol);
    vl_run("gqa12 page48", vl_mk(256, 1, 12, 48, 40, 5, q5, s5), tol);
    vl_run("gqa5 page48", vl_mk(64, 2, 5, 48, 40, 5, q5, s5), tol);
    /* many decode rows (contexts 1 .. ~30K) with two chunks: the shape of a busy step */
    {
        int q[40], sq[40];
        for (int r = 0; r < 38; r++) { q[r] = 1; sq[r] = 1 + (r * 7919) % 30000; }
        q[38] = 256; sq[38] = 256 + 8192;
        q[39] = 1000; sq[39] = 1000;
        vl_run("38 decode+2 chunks", vl_mk(128, 8, 8, 16, 80, 40, q, sq), tol);
        vl_run("38 decode+2 chunks", vl_mk(256, 2, 4, 784, 80, 40, q, sq), tol);
    }
    /* every output of a small mixed batch against the reference (no sampling) */
    {
        const int q3[3] = {1, 9, 70}, s3[3] = {333, 9 + 65, 70};
        vl_run("all outputs", vl_mk(128, 2, 3, 16, 0, 3, q3, s3), tol);
        vl_run("all outputs", vl_mk(256, 2, 8, 32, 0, 3, q3, s3), tol);
    }
    /* shapes the kernel refuses: head_dim 96, an fp8 cache */
    {
        int bm = 0, e = attn_varlen_config(96, &bm, NULL, NULL);
        ncase++;
        if (e != ATTN_ESHAPE) nfail++;
        printf("%-4s varlen head_dim 96 returns %d (%s)\n", e == ATTN_ESHAPE ? "ok" : "FAIL", e, attn_strerror(e));
        attn_kv kv;
        int q1 = 1, s1 = 100;
        ncase++;
        if (attn_kv_alloc_random(&kv, ATTN_FP8_E5M2, 4, 64, KVH, D, 0.5f, 3) == 0) {
            attn_batch *b = attn_batch_create(&kv, 1, &q1, &s1, H, NULL, 0, 1);
            attn_varlen_plan *pl = b ? attn_varlen_plan_create(&kv, b) : NULL;
            void *qd = attn_dev_alloc((size_t)H * D * 2), *o = attn_dev_alloc((size_t)H * D * 2);
            int e2 = pl && qd && o ? attn_varlen_run(pl, &kv, b, qd, o, 0.0625f, NULL) : ATTN_ENOMEM;
            printf("%-4s varlen on an fp8 cache returns %d (%s)\n", e2 == ATTN_ESHAPE ? "ok" : "FAIL", e2, attn_strerror(e2));
            if (e2 != ATTN_ESHAPE) nfail++;
            attn_dev_free(qd); attn_dev_free(o); attn_varlen_plan_free(pl); attn_batch_free(b); attn_kv_free(&kv);
        } else {
            nfail++;
            printf("FAIL varlen fp8 cache: allocation\n");
        }
    }
    if (long_ctx) {
        const int ql[3] = {1, 2048, 1}, sl[3] = {240000, 2048 + 100000, 131072};
        vl_run("long", vl_mk(256, 2, 6, 784, 12, 3, ql, sl), tol);
        vl_run("long", vl_mk(128, 8, 8, 16, 12, 3, ql, sl), tol);
    }
    printf("validate varlen: %d of %d cases passed\n", ncase - nfail, ncase);
    return nfail ? 1 : 0;
}

/* time the varlen kernel on mixed batches: n decode rows at ctx plus one chunk of c tokens */
static int bench_varlen(void) {
    static const struct { int d, kvh, group, n, ctx, chunk; } cases[] = {
        {128, 8, 8, 64, 8192, 0},   {128, 8, 8, 64, 8192, 2048}, {128, 8, 8, 256, 4096, 512},
        {128, 8, 8, 0, 0, 8192},    {256, 2, 6, 64, 32768, 0},   {256, 2, 6, 16, 32768, 2048},
        {256, 2, 6, 0, 0, 4096},
    };
    printf("%-44s %10s %10s %8s\n", "varlen batch", "ms", "TB/s KV", "TFLOP/s");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int d = cases[i].d, n = cases[i].n, rows = n + (cases[i].chunk > 0), page = 16;
        int *q = malloc(rows * sizeof(int)), *sq = malloc(rows * sizeof(int));
        long blocks = 4;
        for (int r = 0; r < n; r++) { q[r] = 1; sq[r] = cases[i].ctx; }
        if (cases[i].chunk > 0) { q[n] = cases[i].chunk; sq[n] = cases[i].chunk; }
        for (int r = 0; r < rows; r++) blocks += (sq[r] + page - 1) / page;
        attn_kv kv;
        float ms = -1;
        int err = attn_varlen_kv_alloc(&kv, (int)blocks, page, cases[i].kvh, d, 9);
        attn_batch *b = err ? NULL : attn_batch_create(&kv, rows, q, sq, cases[i].kvh * cases[i].group, NULL, 0, 3);
        attn_varlen_plan *pl = b ? attn_varlen_plan_create(&kv, b) : NULL;
        size_t nq = b ? (size_t)b->total_q * b->num_q_heads * d : 0;
        void *qd = nq ? attn_dev_alloc(nq * 2) : NULL, *o = nq ? attn_dev_alloc(nq * 2) : NULL;
        if (pl && qd && o && !attn_fill_half_random(qd, nq, -2.f, 2.f, 5))
            err = attn_varlen_time(pl, &kv, b, qd, o, 1.f / sqrtf((float)d), 3, 20, &ms);
        double keys = 0, kvb = 0;
        for (int r = 0; r < rows; r++) {
            keys += (double)q[r] * (sq[r] - q[r]) + (double)q[r] * (q[r] + 1) / 2;
            kvb += 2.0 * cases[i].kvh * sq[r] * d * 2;
        }
        char label[64];
        snprintf(label, sizeof label, "D%d g%d: %d decode @%d + chunk %d", d, cases[i].group, n, cases[i].ctx, cases[i].chunk);
        if (ms > 0)
            printf("%-44s %10.4f %10.2f %8.1f\n", label, ms, kvb / (ms * 1e9),
                   4.0 * cases[i].kvh * cases[i].group * d * keys / (ms * 1e9));
        else
            printf("%-44s %10s  %s\n", label, "-", attn_strerror(err));
        attn_dev_free(qd); attn_dev_free(o); attn_varlen_plan_free(pl); attn_batch_free(b);
        attn_kv_free(&kv);
        free(q); free(sq);
    }
    return 0;
}

/* Every route at every head_dim and GQA group the kernels take (d: one head_dim, 0: all three):
 * short contexts (page 16: a page boundary every 16 keys; the fast path with ATTN_F_ANY_PAGE) at
 * the device's own shared memory and as an sm_70 (96 KB) and an sm_75 (64 KB) run them, long ones
 * (page 784: several 64/128-key tiles a page; decode past 32768 keys, where partitions are 1024
 * long, and a row of 79 partitions, where the reduce is the wide combine) at the device's own.
 * Then the shapes no route takes return ATTN_ESHAPE. */
static int validate_shapes(int d) {
    const double tol = 2e-3;
    static const int dims[3] = {64, 128, 256}, groups[6] = {1, 2, 4, 6, 8, 16}, tiers[3] = {0, 96 * 1024, 64 * 1024};
    const int pq_s[4] = {1, 5, 37, 200}, ps_s[4] = {1, 45, 137, 500};          /* prefill, short */
    const int pq_l[3] = {1, 33, 300}, ps_l[3] = {6000, 4133, 5300};            /* prefill, long */
    const int dq_s[3] = {1, 5, 16}, ds_s[3] = {40, 300, 700};                  /* decode, short */
    const int xq_l[3] = {1, 1, 1}, sq_l[3] = {5, 16, 1}, ds_l[3] = {5000, 33000, 20000}; /* decode, long */
    int prev = attn_set_smem_limit(0);
    for (int di = 0; di < 3; di++) {
        if (d && dims[di] != d) continue;
        for (int gi = 0; gi < 6; gi++)
            for (int ctx = 0; ctx < 2; ctx++)
                for (int ti = 0; ti < (ctx ? 1 : 3); ti++) {
                    attn_set_smem_limit(tiers[ti]);
                    int page = ctx ? 784 : 16, any = ctx ? 0 : ATTN_F_ANY_PAGE, ns = ctx ? 12 : 24;
                    const int *pq = ctx ? pq_l : pq_s, *ps = ctx ? ps_l : ps_s, np = ctx ? 3 : 4;
                    val_case cs[11];
                    int n = 0;
                    cs[n++] = mk(ATTN_PREFILL_GENERIC, ATTN_FP16, page, 0, np, pq, ps, 0, ns, -1);
                    cs[n++] = mk(ATTN_PREFILL_LOWSMEM, ATTN_FP16, page, 0, np, pq, ps, 0, ns, -1);
                    cs[n++] = mk(ATTN_PREFILL_FAST, ATTN_FP16, page, any, np, pq, ps, 0, ns, -1);
                    cs[n++] = mk(ATTN_PREFILL_GENERIC, ATTN_FP8_E5M2, page, 0, np, pq, ps, 0, ns, -1);
                    cs[n++] = mk(ATTN_PREFILL_LOWSMEM, ATTN_FP8_E5M2, page, 0, np, pq, ps, 0, ns, -1);
                    cs[n++] = mk(ATTN_FP8_BRIDGE, ATTN_FP8_E5M2, page, 0, np, pq, ps, 0, ns, -1);
                    for (int dt = 0; dt < 2; dt++) {
                        cs[n++] = mk(ATTN_DECODE_XQA, dt, page, 0, 3, ctx ? xq_l : dq_s, ctx ? ds_l : ds_s, 1, ns, -1);
                        cs[n++] = mk(ATTN_DECODE_SCALAR, dt, page, 0, 3, ctx ? xq_l : dq_s, ctx ? ds_l : ds_s, 1, ns, -1);
                    }
                    cs[n++] = mk(ATTN_DECODE_SMALLQ, ATTN_FP16, page, 0, 3, ctx ? sq_l : dq_s, ctx ? ds_l : ds_s, 0, ns, -1);
                    for (int i = 0; i < n; i++) {
                        cs[i].head_dim = dims[di];
                        cs[i].group = groups[gi];
                        if (i == n - 1 && (gi + ctx) % 2) cs[i].dtype = ATTN_FP8_E5M2; /* small-q: fp16 and fp8 in turn */
                        vrun("", cs[i], tol);
                    }
                }
    }
    attn_set_smem_limit(prev);
    /* shapes no route takes: head_dim 32, 96, 512; a GQA group of 17 or 32 */
    static const struct { int head_dim, kv_heads, q_heads; } bad[] = {{32, 2, 12}, {96, 2, 12}, {512, 2, 12},
                                                                      {128, 1, 17}, {64, 2, 64}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        attn_kv kv = {0};
        int q1 = 1, s1 = 40;
        kv.dtype = ATTN_FP16;
        kv.num_blocks = 4;
        kv.page = 16;
        kv.kv_heads = bad[i].kv_heads;
        kv.head_dim = bad[i].head_dim;
        kv.k_scale = kv.v_scale = 1.f;
        kv.k = kv.v = attn_dev_alloc(4 * 16 * 2);
        attn_batch *b = attn_batch_create(&kv, 1, &q1, &s1, bad[i].q_heads, NULL, 0, 1);
        void *buf = attn_dev_alloc(4096);
        for (int route = 0; route < ATTN_NUM_ROUTES; route++) {
            int e = b && buf ? attn_run(route, &kv, b, buf, buf, 0.1f, buf, 4096, ATTN_F_ANY_PAGE, NULL) : ATTN_ENOMEM;
            ncase++;
            if (e != ATTN_ESHAPE) nfail++;
            printf("%-4s %-16s head_dim %d, %d q heads on %d kv heads returns %d (%s)\n", e == ATTN_ESHAPE ? "ok" : "FAIL",
                   attn_route_name(route), bad[i].head_dim, bad[i].q_heads, bad[i].kv_heads, e, attn_strerror(e));
        }
        attn_dev_free(buf);
        attn_batch_free(b);
        attn_dev_free(kv.k);
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
static void env_set(const char *k, const char *v);

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
    { /* the same launch unsplit (the reference grid), so the table shows what the split buys */
        const char *prev = getenv("ATTN_PREFILL_SPLIT");
        char keep[16];
        snprintf(keep, sizeof keep, "%s", prev ? prev : "");
        env_set("ATTN_PREFILL_SPLIT", "1");
        bench_one("prefill q=784 ctx 104000 p784 unsplit", ATTN_PREFILL_FAST, 0, 784, 0, 784, 104000, 0, "q784_104000");
        env_set("ATTN_PREFILL_SPLIT", prev ? keep : NULL);
    }
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

static void env_set(const char *k, const char *v) { if (v) setenv(k, v, 1); else unsetenv(k); }

int main(int argc, char **argv) {
    int do_val = 0, do_bench = 0, long_ctx = 0, varlen = 0, shapes = -1;
    const char *peers = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--validate")) do_val = 1;
        else if (!strcmp(argv[i], "--bench")) do_bench = 1;
        else if (!strcmp(argv[i], "--long")) long_ctx = 1;
        else if (!strcmp(argv[i], "--varlen")) varlen = 1;
        else if (!strcmp(argv[i], "--peers") && i + 1 < argc) peers = argv[++i];
        else if (!strcmp(argv[i], "--smem-limit") && i + 1 < argc) attn_set_smem_limit(atoi(argv[++i]));
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) {
            const char *v = argv[++i];
            shapes = !strcmp(v, "all") ? 0 : !strcmp(v, "64") ? 64 : !strcmp(v, "128") ? 128 : !strcmp(v, "256") ? 256 : -2;
            if (shapes == -2) {
                fprintf(stderr, "%s: --shapes takes all, 64, 128 or 256, not '%s'\n", argv[0], v);
                return 2;
            }
        }
        else {
            fprintf(stderr, "usage: %s [--validate [--long | --shapes all|64|128|256]] [--bench [--peers FILE]] [--varlen] "
                            "[--filter A,B] [--smem-limit N]\n",
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
    if (varlen) {
        for (int d = 64; d <= 256; d *= 2) {
            int bm = 0, bn = 0, smem = 0;
            attn_varlen_config(d, &bm, &bn, &smem);
            printf("varlen D %d: BM %d BN %d smem %d, %d CTAs an SM\n", d, bm, bn, smem, attn_varlen_ctas_per_sm(d));
        }
        if (do_val) rc |= validate_varlen(long_ctx);
        if (do_bench) rc |= bench_varlen();
        return rc;
    }
    print_tiles();
    if (do_val) rc |= shapes >= 0 ? validate_shapes(shapes) : validate(long_ctx);
    if (do_bench) rc |= bench(peers);
    return rc;
}
