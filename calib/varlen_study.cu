/* varlen_study.cu -- one varlen batch timed the way calib times its point and the way the GPU
 * replay times the call, side by side on one card (docs/validation.md section 2, "Why the
 * replay's wide varlen calls run below the law").
 *   calib    calib/calib_gpu.cu prepare_varlen + calib.c calib_measure: a pool of need +
 *            max(need / 2, 512 MB) + 64 blocks, max(4, 3 x L2 / KV) block tables of distinct random
 *            blocks rotated over it, a warm-up and an estimate, then ceil(0.5 ms / t) runs back
 *            to back, the median of 5 timings
 *   calib32  the same with 32 runs a timing (the replay's count)
 *   replay   sim/replay_gpu.cu run_attn + pool_make: a pool of the engine's size (50,000 blocks),
 *            request r's page j at block perm[(r * 337 + j) % blocks] % limit, the layers' page
 *            sets of replay_layer_sets (one set for a call over 3 x L2), one warm-up, 32 runs back
 *            to back, the median of 5
 *   layer32  the replay's with 32 page sets (each layer its own KV, as the engine's cache)
 *   flush32  layer32 with a 512 MB write before each run (a layer's GEMMs between its calls
 *            stream their weights through the L2), each run between its own events
 *   own32    flush32, then the pages of the tokens the call adds (a chunk's new tokens, a decode
 *            row's last page) read and written back before the run: the engine's cache write
 *            leaves them in the L2 just before its attention
 * Llama-3.1-8B's attention (32 q heads, 8 kv heads, head_dim 128, page 16) or, with the argument
 * "qwen", Qwen3-30B-A3B's (4 kv heads).  Build: make bin/varlen_study (nvcc); about 5 s a model
 * on an H200. */
#include "attn.h"
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "varlen_study: %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)
#define CA(x) do { int e_ = (x); if (e_) { fprintf(stderr, "varlen_study: %s:%d: attn error %d: %s\n", __FILE__, __LINE__, e_, attn_strerror(e_)); exit(1);} } while (0)

static int QH = 32, KVH = 8, D = 128, PG = 16;
static double L2;
static cudaEvent_t e0, e1;
static void *qbuf, *obuf;
static size_t qcap = 64ul << 20;
static void *flushbuf, *scratch;
static size_t flushbytes = 512ul << 20;

static long row_ctx(long nd, long lo, long hi, long i) {
    if (lo <= 0 || lo >= hi || nd <= 1) return hi;
    return lo + (hi - lo) * i / (nd - 1);
}

struct Shape { const char *name; int nd; int lo, hi; int nc, cq, cp; int shuffled; };

static void rows_of(const Shape &s, std::vector<int> &ql, std::vector<int> &sl) {
    int n = s.nd + s.nc;
    ql.resize(n); sl.resize(n);
    for (int i = 0; i < n; i++) {
        ql[i] = i < s.nd ? 1 : s.cq;
        sl[i] = i < s.nd ? (int)row_ctx(s.nd, s.lo, s.hi, i) : s.cp + s.cq;
    }
    if (s.shuffled == 2)   // skewed: many short rows, a few long (u^2), ascending
        for (int i = 0; i < s.nd; i++) { double u = s.nd > 1 ? (double)i / (s.nd - 1) : 1; sl[i] = s.lo + (int)((s.hi - s.lo) * u * u); }
    if (s.shuffled) {   // a serving batch's order: contexts not sorted
        unsigned r = 777;
        for (int i = s.nd - 1; i > 0; i--) { r = r * 1103515245u + 12345u; int j = (r >> 8) % (i + 1); std::swap(sl[i], sl[j]); }
    }
}

static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// calib: prepare_varlen + calib_measure (warm-up, estimate, iters = ceil(0.5 ms / est), 5 repeats, median)
static double t_calib(const Shape &s, int force_iters) {
    std::vector<int> ql, sl; rows_of(s, ql, sl);
    int rows = (int)ql.size();
    long need = 0;
    for (int i = 0; i < rows; i++) need += (sl[i] + PG - 1) / PG;
    long extra = (long)(512ul * 1024 * 1024 / ((size_t)PG * KVH * D * 2 * 2)) + 1;
    long nb = need + (need / 2 > extra ? need / 2 : extra) + 64;
    attn_kv kv;
    CA(attn_varlen_kv_alloc(&kv, (int)nb, PG, KVH, D, 4242u + PG));
    double kv_bytes = (double)need * PG * KVH * D * 2 * 2;
    int nrot = (int)ceil(3 * L2 / kv_bytes); if (nrot < 4) nrot = 4; if (nrot > 64) nrot = 64;
    std::vector<attn_batch *> b(nrot); std::vector<attn_varlen_plan *> pl(nrot);
    for (int i = 0; i < nrot; i++) {
        b[i] = attn_batch_create(&kv, rows, ql.data(), sl.data(), QH, NULL, 0, 91u + 131u * i);
        pl[i] = attn_varlen_plan_create(&kv, b[i]);
        if (!b[i] || !pl[i]) { fprintf(stderr, "varlen_study: no calib batch of %d rows\n", rows); exit(1); }
    }
    size_t qbytes = (size_t)b[0]->total_q * QH * D * 2, qb = (qbytes + 255) & ~(size_t)255;
    int qsets = (int)std::min<size_t>(16, std::max<size_t>(1, (qcap / 2) / qb));
    unsigned it = 0;
    float sc = 1.f / sqrtf((float)D), ms;
    auto run = [&](int iters) {
        CK(cudaEventRecord(e0));
        for (int k = 0; k < iters; k++, it++)
            CA(attn_varlen_run(pl[it % nrot], &kv, b[it % nrot], (char *)qbuf + (it % qsets) * qb, obuf, sc, NULL));
        CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        return ms * 1e-3 / iters;
    };
    run(1);
    double est = run(1);
    int iters = force_iters ? force_iters : (est < 5e-4 ? std::min(500, (int)ceil(5e-4 / est)) : 1);
    std::vector<double> v;
    for (int r = 0; r < 5; r++) v.push_back(run(iters));
    for (int i = 0; i < nrot; i++) { attn_varlen_plan_free(pl[i]); attn_batch_free(b[i]); }
    attn_kv_free(&kv);
    return median(v);
}

// the replay: pool_make's pool (shuffled perm), request r's page j = perm[(r*337+j) % nblocks] % limit,
// layer sets (replay_layer_sets / views), reps back-to-back calls, one event pair.
// mode 0: the replay's sets; 1: a set per layer (32 distinct layer caches); 2: a set per layer + an L2
// flush before each call (per-call events); 3: as 2, then the pages of the tokens the step adds (a
// chunk's new tokens, a decode row's last page) written again before the call, as the engine's
// cache write leaves them in the L2 just before its attention
static attn_kv pool; static std::vector<int> perm;
static double t_replay(const Shape &s, int mode, int *nsets_out) {
    std::vector<int> ql, sl; rows_of(s, ql, sl);
    int rows = (int)ql.size(), reps = 32, maxp = 0;
    long nblocks = pool.num_blocks;
    double call_bytes = 0;
    for (int i = 0; i < rows; i++) {
        int np = (sl[i] + PG - 1) / PG; maxp = std::max(maxp, np);
        call_bytes += (double)np * PG * KVH * D * 2 * 2;
    }
    int nsets;
    if (mode == 0) { double n = ceil(3 * L2 / call_bytes); nsets = n >= 32 ? 32 : n < 1 ? 1 : (int)n; }
    else nsets = 32;
    long stride = 0, limit = nblocks;
    if (nsets > 1 && nblocks >= 2L * nsets) { stride = nblocks / (2L * nsets); limit = nblocks - (nsets - 1) * stride; }
    else nsets = 1;
    *nsets_out = nsets;
    std::vector<attn_kv> views(nsets);
    size_t bb = (size_t)PG * KVH * D * 2;
    for (int k = 0; k < nsets; k++) {
        views[k] = pool;
        views[k].k = (char *)pool.k + (size_t)k * stride * bb;
        views[k].v = (char *)pool.v + (size_t)k * stride * bb;
        views[k].num_blocks = (int)(nblocks - k * stride);
    }
    std::vector<int> bt((size_t)rows * maxp);
    for (int i = 0; i < rows; i++) {
        long base = (long)(5000 + 3 * i) * 337;
        for (int j = 0; j < maxp; j++) bt[(size_t)i * maxp + j] = perm[(base + j) % nblocks] % (int)limit;
    }
    attn_batch *b = attn_batch_create(&pool, rows, ql.data(), sl.data(), QH, bt.data(), maxp, 7);
    attn_varlen_plan *pl = attn_varlen_plan_create(&pool, b);
    if (!b || !pl) { fprintf(stderr, "varlen_study: no replay batch of %d rows\n", rows); exit(1); }
    float ms;
    CA(attn_varlen_run(pl, &views[0], b, qbuf, obuf, 1.f / 16, NULL));   // first_time
    std::vector<double> v;
    for (int r = 0; r < 5; r++) {
        if (mode < 2) {
            CK(cudaEventRecord(e0));
            for (int k = 0; k < reps; k++) CA(attn_varlen_run(pl, &views[k % nsets], b, qbuf, obuf, 1.f / 16, NULL));
            CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            v.push_back(ms * 1e-3 / reps);
        } else {
            double tot = 0;
            for (int k = 0; k < reps; k++) {
                CK(cudaMemsetAsync(flushbuf, k & 0xff, flushbytes));
                if (mode == 3)   // each new token's page, K and V, read out and written back
                    for (int i = 0; i < rows; i++) {
                        int np = (sl[i] + PG - 1) / PG, first = (sl[i] - ql[i]) / PG;
                        for (int j = first; j < np; j++) {
                            size_t off = (size_t)bt[(size_t)i * maxp + j] * bb;
                            for (int kv = 0; kv < 2; kv++) {
                                char *pg = (char *)(kv ? views[k % nsets].v : views[k % nsets].k) + off;
                                CK(cudaMemcpyAsync(scratch, pg, bb, cudaMemcpyDeviceToDevice));
                                CK(cudaMemcpyAsync(pg, scratch, bb, cudaMemcpyDeviceToDevice));
                            }
                        }
                    }
                CK(cudaEventRecord(e0));
                CA(attn_varlen_run(pl, &views[k % nsets], b, qbuf, obuf, 1.f / 16, NULL));
                CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms, e0, e1));
                tot += ms * 1e-3;
            }
            v.push_back(tot / reps);
        }
    }
    attn_varlen_plan_free(pl); attn_batch_free(b);
    return median(v);
}

int main(int argc, char **argv) {
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "llama") && strcmp(argv[1], "qwen"))) {
        fprintf(stderr, "usage: varlen_study [llama|qwen]\n");
        return 2;
    }
    if (argc == 2 && !strcmp(argv[1], "qwen")) KVH = 4;
    if (!attn_gpu_available()) {
        fprintf(stderr, "varlen_study: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
    L2 = p.l2CacheSize;
    printf("# %s, %d SMs, L2 %.1f MB, kv_heads %d q_heads %d D %d page %d, varlen CTAs/SM %d\n", p.name,
           p.multiProcessorCount, L2 / 1e6, KVH, QH, D, PG, attn_varlen_ctas_per_sm(D));
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    CK(cudaMalloc(&qbuf, qcap)); CK(cudaMalloc(&obuf, qcap)); CK(cudaMalloc(&flushbuf, flushbytes));
    CK(cudaMalloc(&scratch, (size_t)PG * KVH * D * 2));
    CA(attn_fill_half_random(qbuf, qcap / 2, -1.f, 1.f, 3));
    long nblocks = 50000;   // ~3.2 GB a layer at 8 kv heads: the engine's capacity (per_req, kv_tokens)
    CA(attn_kv_alloc_random(&pool, ATTN_FP16, (int)nblocks, PG, KVH, D, 1.0f, 99));
    perm.resize(nblocks);
    for (int i = 0; i < nblocks; i++) perm[i] = i;
    unsigned s = 12345;
    for (int i = (int)nblocks - 1; i > 0; i--) { s = s * 1103515245u + 12345u; int j = (int)((s >> 8) % (unsigned)(i + 1)); std::swap(perm[i], perm[j]); }
    Shape sh[] = {
        {"256@128-512", 256, 128, 512, 0, 0, 0, 0},
        {"208@143-950", 208, 143, 950, 0, 0, 0, 0},
        {"208@143-950 shuffled", 208, 143, 950, 0, 0, 0, 1},
        {"256@128-2048", 256, 128, 2048, 0, 0, 0, 0},
        {"256@128-512+16x256", 256, 128, 512, 16, 256, 0, 0},
        {"128@128-512", 128, 128, 512, 0, 0, 0, 0},
        {"64@128-512", 64, 128, 512, 0, 0, 0, 0},
        {"128@1024", 128, 1024, 1024, 0, 0, 0, 0},
        {"208@143-950 skew", 208, 143, 950, 0, 0, 0, 2},
        {"200@143-950+6x150", 200, 143, 950, 6, 150, 0, 0},
        {"32@128-512", 32, 128, 512, 0, 0, 0, 0},
        {"16@128-2048", 16, 128, 2048, 0, 0, 0, 0},
        /* the 48-request Poisson load's calls: prompts of a few hundred tokens alone or beside a
         * few decode rows at 400-700 keys, and those rows alone */
        {"1x200", 0, 0, 0, 1, 200, 0, 0},
        {"1x440", 0, 0, 0, 1, 440, 0, 0},
        {"3x440", 0, 0, 0, 3, 440, 0, 0},
        {"8@400-700+1x440", 8, 400, 700, 1, 440, 0, 1},
        {"24@400-700+1x440", 24, 400, 700, 1, 440, 0, 1},
        {"4@400-700", 4, 400, 700, 0, 0, 0, 1},
        {"16@400-700", 16, 400, 700, 0, 0, 0, 1},
        {"32@400-700", 32, 400, 700, 0, 0, 0, 1},
    };
    printf("%-22s %9s %9s %9s %6s %9s %9s %9s | %6s %6s %6s %6s %6s\n", "shape", "calib_us", "calib32", "replay", "sets", "layer32",
           "flush32", "own32", "rp/ca", "l32/ca", "fl/ca", "ow/ca", "c32/ca");
    for (int pass = 0; pass < 2; pass++)
        for (auto &x : sh) {
            int ns, ns2;
            double c = t_calib(x, 0), c32 = t_calib(x, 32), r = t_replay(x, 0, &ns), l = t_replay(x, 1, &ns2), f = t_replay(x, 2, &ns2),
                   o = t_replay(x, 3, &ns2);
            printf("%-22s %9.2f %9.2f %9.2f %6d %9.2f %9.2f %9.2f | %6.3f %6.3f %6.3f %6.3f %6.3f\n", x.name, c * 1e6, c32 * 1e6,
                   r * 1e6, ns, l * 1e6, f * 1e6, o * 1e6, r / c, l / c, f / c, o / c, c32 / c);
            fflush(stdout);
        }
    return 0;
}
