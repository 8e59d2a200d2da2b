/* copy_gpu.cu: bin/calib_copy -- time one GPU's copies (device to device, pinned host to
 * device, device to pinned host) with cudaMemcpyAsync and put the fitted laws copy.d2d,
 * copy.h2d and copy.d2h into a profile (calib/copy.h).
 *
 *   bin/calib_copy --profile IN.yaml --out OUT.yaml [--max-mib N (1024)] [--device D (0)]
 *
 * Each timing: CUDA events around `iters` copies back to back on one stream (iters so that a
 * timing covers >= 2 ms, at most 200), elapsed / iters; three warm-up copies first.  The
 * buffers are filled before, so no page is touched for the first time in a timing. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "copy.h"
#include "scenario.h"
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return -1; } } while (0)

typedef struct {
    char *dev_a, *dev_b, *host;
    size_t cap;
    cudaStream_t st;
    cudaEvent_t e0, e1;
} cp_gpu_t;

static int copy_n(cp_gpu_t *g, cp_dir_t d, size_t n, int iters)
{
    for (int i = 0; i < iters; i++) {
        if (d == CP_D2D) CK(cudaMemcpyAsync(g->dev_b, g->dev_a, n, cudaMemcpyDeviceToDevice, g->st));
        else if (d == CP_H2D) CK(cudaMemcpyAsync(g->dev_a, g->host, n, cudaMemcpyHostToDevice, g->st));
        else CK(cudaMemcpyAsync(g->host, g->dev_a, n, cudaMemcpyDeviceToHost, g->st));
    }
    return 0;
}

static int time_iters(cp_gpu_t *g, cp_dir_t d, size_t n, int iters, double *sec)
{
    CK(cudaEventRecord(g->e0, g->st));
    if (copy_n(g, d, n, iters) < 0) return -1;
    CK(cudaEventRecord(g->e1, g->st));
    CK(cudaEventSynchronize(g->e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, g->e0, g->e1));
    *sec = ms * 1e-3 / iters;
    return 0;
}

static int time_one(void *vctx, cp_dir_t d, double bytes, int reps, double *sec)
{
    cp_gpu_t *g = (cp_gpu_t *)vctx;
    size_t n = (size_t)bytes;
    if (n > g->cap) return -1;
    double est;
    if (copy_n(g, d, n, 3) < 0 || time_iters(g, d, n, 1, &est) < 0) return -1;
    int iters = est > 0 ? (int)(2e-3 / est) + 1 : 200;
    if (iters > 200) iters = 200;
    for (int r = 0; r < reps; r++)
        if (time_iters(g, d, n, iters, &sec[r]) < 0) return -1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    double max_mib = 1024;
    int dev = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--profile") && i + 1 < argc) in = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--max-mib") && i + 1 < argc) max_mib = atof(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) dev = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: calib_copy --profile IN.yaml --out OUT.yaml [--max-mib N] [--device D]\n");
            return 2;
        }
    }
    if (!in || !out || !(max_mib >= 0.00390625) || max_mib > 65536) {
        fprintf(stderr, "calib_copy: need --profile and --out, and --max-mib in [1/256, 65536]\n");
        return 2;
    }
    char err[SCN_ERR_MAX];
    profile_t p;
    if (prof_load(in, &p, err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    int have = 0;
    if (cudaGetDeviceCount(&have) != cudaSuccess || have <= dev) {
        fprintf(stderr, "calib_copy: device %d not visible (%d GPU(s))\n", dev, have);
        return 1;
    }
    cp_gpu_t g;
    memset(&g, 0, sizeof g);
    g.cap = (size_t)(max_mib * 1048576.0);
    if (cudaSetDevice(dev) != cudaSuccess || cudaStreamCreate(&g.st) != cudaSuccess ||
        cudaEventCreate(&g.e0) != cudaSuccess || cudaEventCreate(&g.e1) != cudaSuccess ||
        cudaMalloc(&g.dev_a, g.cap) != cudaSuccess || cudaMalloc(&g.dev_b, g.cap) != cudaSuccess ||
        cudaMallocHost(&g.host, g.cap) != cudaSuccess) {
        fprintf(stderr, "calib_copy: cannot allocate 2 x %.0f MiB on the device and %.0f MiB pinned\n", max_mib, max_mib);
        return 1;
    }
    memset(g.host, 0x5a, g.cap);
    cudaMemset(g.dev_a, 0x3c, g.cap);
    cudaMemset(g.dev_b, 0x00, g.cap);
    cudaDeviceSynchronize();
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    char e2[256];
    if (cp_measure(&p, prop.name, (double)g.cap, time_one, &g, e2) < 0) {
        fprintf(stderr, "calib_copy: %s\n", e2);
        return 1;
    }
    for (int d = 0; d < CP__N; d++) {
        const prof_law_t *l = prof_find(&p, cp_law_name((cp_dir_t)d));
        printf("%s on %s: latency %.2f us, %.1f GB/s; fit median %.1f%%, max %.1f%%\n", l->name, prop.name,
               l->coef[0] * 1e6, l->coef[1] > 0 ? 1e-9 / l->coef[1] : 0.0, 100 * l->fit_median_rel,
               100 * l->fit_max_rel);
        for (int i = 0; i < l->npts; i++)
            printf("  %12.0f B  %10.3f us  %8.2f GB/s\n", l->pts[2 * i], l->pts[2 * i + 1] * 1e6,
                   l->pts[2 * i] / l->pts[2 * i + 1] * 1e-9);
    }
    if (prof_save(out, &p) < 0) {
        perror(out);
        return 1;
    }
    cudaFree(g.dev_a);
    cudaFree(g.dev_b);
    cudaFreeHost(g.host);
    prof_free(&p);
    return 0;
}
