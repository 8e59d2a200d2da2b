/* order_study.cu -- does the order a step's kernels run in move their time?
 *
 * The GPU replay (sim/replay_gpu.cu) runs a step item by item: an item's calls for every layer
 * back to back (the varlen calls, then each GEMM's: qkv, o, gate|up, down), each item after a
 * host sync.  The engine runs the step layer by layer: each layer's attention between that
 * layer's GEMMs.  On the H200 a mixed step's GEMMs hold the card at its power cap (the SM clock
 * falls), and the replay's varlen calls of wide loads ran at about calib's cold-clock times while
 * the heat model prices them at the step's mean clock (docs/validation.md section 2, "Why the
 * replay's wide varlen calls run below the law"); in wide mixed steps the replay's down GEMMs, run
 * last, came out 4-17% over their price.  This study times three step shapes of one model both
 * ways on one card, so that which order the clock follows is measured, not assumed:
 *   engine  for each layer: qkv GEMM, varlen attention, o GEMM, gate|up GEMM, down GEMM
 *   replay  a varlen call a layer, then each GEMM for every layer, a host sync after each item
 *   alone   a varlen call a layer, back to back (calib's context: no GEMM in the step)
 * Shapes: 207 decode rows with 4 prompt chunks of 98 tokens (599 tokens), the same rows alone,
 * and 64 decode rows with a 4032-token chunk (4096 tokens, a 4K budget's step).  Every layer has
 * its own weights and its own KV pages (one block table, a KV region a layer, as the engine's
 * cache).  Each kernel is bracketed by CUDA events; per mode the varlen call's mean time, the
 * GEMMs' time a step (and each GEMM's), the SM clock / board power (NVML, one sample a step);
 * per shape the replay's GEMM time over the engine's.  Modes alternate (engine, replay, alone,
 * twice each) after a warm-up.  Build: make bin/order_study (needs nvcc and cuBLAS); run:
 * bin/order_study [STEPS [llama8b|qwen3-14b]] (default 40 a mode, Llama-3.1-8B's layers).
 * A study, not part of calib's profile; both models at 20 steps a mode: about a minute on an H100. */
#include "../kernels/attn.h"
#include "gpuclock.h"
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXL 40                /* layers, at most */
#define KVH 8
#define HD 128
#define PAGE 16
#define NG 4                   /* the GEMMs of a layer */
#define WSETS 8                /* weight sets: 8 x 218-660 MB, far above the L2 (as the layers are) */
#define MAXTOK 4096            /* a step's tokens, at most */

/* The layer shapes: Llama-3.1-8B (the default) or Qwen3-14B */
typedef struct {
    const char *name;
    int layers, hid, inter, qh;
} lmodel_t;
static const lmodel_t models[2] = {
    { "llama8b", 32, 4096, 14336, 32 },
    { "qwen3-14b", 40, 5120, 17408, 40 },
};
static int LAYERS, HID, INTER, QH;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "order_study: %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t e_ = (x); if (e_ != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "order_study: %s:%d: cuBLAS status %d\n", __FILE__, __LINE__, (int)e_); exit(1); } } while (0)
#define CA(x) do { int e_ = (x); if (e_) { \
    fprintf(stderr, "order_study: %s:%d: %s\n", __FILE__, __LINE__, attn_strerror(e_)); exit(1); } } while (0)

static long gn[NG], gk[NG];     /* qkv, o, gate|up, down: set from the model */
static const char *gname[NG] = { "qkv", "o", "gate|up", "down" };

typedef struct {
    const char *name;
    int decode_rows, lo, hi, chunks, chunk_q;
} shape_t;

typedef struct {
    double attn_s, gemm_s, step_s, mhz, watts, g_s[NG];
    long calls, steps, samples;
} acc_t;

static cublasHandle_t hb;
static void *w[WSETS][NG], *act, *gout;
static cudaEvent_t ev[2 * MAXL * (NG + 1) + 2];
static gpuclock_t nvml;
static int nvml_ok;

static void gemm(int tokens, int layer, int g)
{
    const float one = 1.f, zero = 0.f;
    CB(cublasGemmEx(hb, CUBLAS_OP_T, CUBLAS_OP_N, (int)gn[g], tokens, (int)gk[g], &one, w[layer % WSETS][g], CUDA_R_16F,
                    (int)gk[g], act, CUDA_R_16F, (int)gk[g], &zero, gout, CUDA_R_16F, (int)gn[g], CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
}

static double ms_between(int a, int b)
{
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev[a], ev[b]));
    return ms * 1e-3;
}

/* one step in mode m (0 engine, 1 replay, 2 alone); adds to *acc when acc != NULL */
static void step(int m, int tokens, const attn_varlen_plan *pl, const attn_kv *views, const attn_batch *b,
                 const void *q, void *out, acc_t *acc)
{
    int e = 0, ae[MAXL], ge[MAXL * NG], gg[MAXL * NG], na = 0, ng = 0;
    CK(cudaEventRecord(ev[e++]));
    if (m == 0) {
        for (int l = 0; l < LAYERS; l++)
            for (int g = -1; g < NG; g++) {
                int k = g < 0 ? 0 : g == 0 ? -1 : g;    /* qkv, attention, o, gate|up, down */
                CK(cudaEventRecord(ev[e++]));
                if (k < 0) {
                    CA(attn_varlen_run(pl, &views[l], b, q, out, 1.f / sqrtf((float)HD), NULL));
                    ae[na++] = e - 1;
                } else {
                    gemm(tokens, l, k);
                    gg[ng] = k;
                    ge[ng++] = e - 1;
                }
                CK(cudaEventRecord(ev[e++]));
            }
    } else {
        for (int g = -1; g < (m == 1 ? NG : 0); g++) {
            for (int l = 0; l < LAYERS; l++) {
                CK(cudaEventRecord(ev[e++]));
                if (g < 0) {
                    CA(attn_varlen_run(pl, &views[l], b, q, out, 1.f / sqrtf((float)HD), NULL));
                    ae[na++] = e - 1;
                } else {
                    gemm(tokens, l, g);
                    gg[ng] = g;
                    ge[ng++] = e - 1;
                }
                CK(cudaEventRecord(ev[e++]));
            }
            CK(cudaEventSynchronize(ev[e - 1]));     /* the replay syncs after each item */
        }
    }
    CK(cudaEventRecord(ev[e++]));
    CK(cudaEventSynchronize(ev[e - 1]));
    if (!acc) return;
    for (int i = 0; i < na; i++) acc->attn_s += ms_between(ae[i], ae[i] + 1);
    for (int i = 0; i < ng; i++) {
        double t = ms_between(ge[i], ge[i] + 1);
        acc->gemm_s += t;
        acc->g_s[gg[i]] += t;
    }
    acc->step_s += ms_between(0, e - 1);
    acc->calls += na;
    acc->steps++;
    double mhz, watts;
    unsigned long long why;
    if (nvml_ok && gpuclock_read(&nvml, &mhz, &watts, &why) == 0) {
        acc->mhz += mhz;
        acc->watts += watts;
        acc->samples++;
    }
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 40;
    const lmodel_t *md = &models[0];
    if (argc > 2) {
        md = NULL;
        for (int i = 0; i < 2; i++)
            if (!strcmp(argv[2], models[i].name)) md = &models[i];
    }
    if (steps < 1 || steps > 10000 || !md || argc > 3) {
        fprintf(stderr, "usage: order_study [STEPS a mode, 1..10000 [llama8b|qwen3-14b]]\n");
        return 2;
    }
    LAYERS = md->layers, HID = md->hid, INTER = md->inter, QH = md->qh;
    const long n0[NG] = { (long)(QH + 2 * KVH) * HD, HID, 2L * INTER, HID }, k0[NG] = { HID, (long)QH * HD, HID, INTER };
    for (int g = 0; g < NG; g++) gn[g] = n0[g], gk[g] = k0[g];
    if (!attn_gpu_available()) {
        fprintf(stderr, "order_study: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    nvml_ok = gpuclock_open(&nvml, 0) == 0;
    CB(cublasCreate(&hb));
    size_t wbytes = 0;
    for (int g = 0; g < NG; g++) wbytes += (size_t)gn[g] * gk[g] * 2;
    for (int s = 0; s < WSETS; s++)
        for (int g = 0; g < NG; g++) {
            CK(cudaMalloc(&w[s][g], (size_t)gn[g] * gk[g] * 2));
            CA(attn_fill_half_random(w[s][g], (size_t)gn[g] * gk[g], -0.02f, 0.02f, 11 + 7 * s + g));
        }
    const shape_t shapes[3] = {
        { "mixed: 207 decode rows at 143-950 keys + 4 prompt chunks of 98", 207, 143, 950, 4, 98 },
        { "decode: 207 rows at 143-950 keys", 207, 143, 950, 0, 0 },
        { "wide mixed: 64 decode rows at 143-950 keys + a prompt chunk of 4032", 64, 143, 950, 1, 4032 },
    };
    CK(cudaMalloc(&act, (size_t)MAXTOK * INTER * 2));
    CK(cudaMalloc(&gout, (size_t)MAXTOK * 2 * INTER * 2));
    CA(attn_fill_half_random(act, (size_t)MAXTOK * INTER, -1.f, 1.f, 5));
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) CK(cudaEventCreate(&ev[i]));
    printf("# %s, %d SMs, L2 %.0f MB; %s layer shapes, %d layers, %d weight sets (%.0f MB each), NVML %s\n",
           prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1e6, md->name, LAYERS, WSETS, wbytes / 1e6,
           nvml_ok ? "on" : "off");
    for (int si = 0; si < 3; si++) {
        const shape_t *sh = &shapes[si];
        int rows = sh->decode_rows + sh->chunks, tokens = sh->decode_rows + sh->chunks * sh->chunk_q;
        int ql[512], sl[512];
        long need = 0;
        for (int i = 0; i < rows; i++) {
            ql[i] = i < sh->decode_rows ? 1 : sh->chunk_q;
            sl[i] = i < sh->decode_rows ? sh->lo + (sh->hi - sh->lo) * i / (sh->decode_rows - 1) : sh->chunk_q;
            need += (sl[i] + PAGE - 1) / PAGE;
        }
        long region = need + need / 4 + 64;             /* a layer's KV region, in blocks */
        attn_kv pool;
        CA(attn_varlen_kv_alloc(&pool, (int)(region * LAYERS), PAGE, KVH, HD, 4242));
        attn_kv views[LAYERS];
        size_t bb = (size_t)PAGE * KVH * HD * 2;
        for (int l = 0; l < LAYERS; l++) {
            views[l] = pool;
            views[l].k = (char *)pool.k + (size_t)l * region * bb;
            views[l].v = (char *)pool.v + (size_t)l * region * bb;
            views[l].num_blocks = (int)region;
        }
        attn_batch *b = attn_batch_create(&views[0], rows, ql, sl, QH, NULL, 0, 91);   /* pages within a region */
        attn_varlen_plan *pl = b ? attn_varlen_plan_create(&views[0], b) : NULL;
        if (!pl) {
            fprintf(stderr, "order_study: no varlen batch of %d rows\n", rows);
            return 1;
        }
        void *q, *out;
        CK(cudaMalloc(&q, (size_t)tokens * QH * HD * 2));
        CK(cudaMalloc(&out, (size_t)tokens * QH * HD * 2));
        CA(attn_fill_half_random(q, (size_t)tokens * QH * HD, -1.f, 1.f, 3));
        printf("\n## %s (%d tokens, KV %.0f MB a layer)\n", sh->name, tokens, need * bb * 2 / 1e6);
        printf("%-8s %5s %12s %14s %12s %8s %7s   %s\n", "mode", "steps", "varlen us", "GEMMs ms/step", "step ms", "SM MHz", "W",
               "ms/step: qkv o gate|up down");
        static const char *mname[3] = { "engine", "replay", "alone" };
        for (int w0 = 0; w0 < 15; w0++) step(0, tokens, pl, views, b, q, out, NULL);   /* warm-up: the clock settles */
        acc_t tot[3];
        memset(tot, 0, sizeof tot);
        for (int rep = 0; rep < 2; rep++)
            for (int m = 0; m < 3; m++) {
                acc_t a;
                memset(&a, 0, sizeof a);
                for (int i = 0; i < 5; i++) step(m, tokens, pl, views, b, q, out, NULL);   /* the mode's own state */
                for (int i = 0; i < steps; i++) step(m, tokens, pl, views, b, q, out, &a);
                printf("%-8s %5ld %12.2f %14.3f %12.3f %8.0f %7.0f  ", mname[m], a.steps, 1e6 * a.attn_s / a.calls,
                       m == 2 ? 0 : 1e3 * a.gemm_s / a.steps, 1e3 * a.step_s / a.steps,
                       a.samples ? a.mhz / a.samples : NAN, a.samples ? a.watts / a.samples : NAN);
                for (int g = 0; g < NG; g++) printf(" %.3f", 1e3 * a.g_s[g] / a.steps);
                printf("\n");
                for (int g = 0; g < NG; g++) tot[m].g_s[g] += a.g_s[g];
                tot[m].gemm_s += a.gemm_s;
                tot[m].attn_s += a.attn_s;
                tot[m].calls += a.calls;
                fflush(stdout);
            }
        double al = tot[2].attn_s / tot[2].calls;
        printf("varlen call over its time alone: engine %.3f, replay %.3f\n", tot[0].attn_s / tot[0].calls / al,
               tot[1].attn_s / tot[1].calls / al);
        printf("GEMMs, the replay's order over the engine's: all %.3f;", tot[1].gemm_s / tot[0].gemm_s);
        for (int g = 0; g < NG; g++) printf(" %s %.3f", gname[g], tot[1].g_s[g] / tot[0].g_s[g]);
        printf("\n");
        attn_varlen_plan_free(pl);
        attn_batch_free(b);
        attn_kv_free(&pool);
        CK(cudaFree(q));
        CK(cudaFree(out));
    }
    if (nvml_ok) gpuclock_close(&nvml);
    cublasDestroy(hb);
    return 0;
}
