/* allreduce_gpu.cu: bin/calib_allreduce -- time NCCL all-reduce on N GPUs of this host
 * and put the fitted "allreduce" law into a profile.
 *
 *   bin/calib_allreduce --gpus N --model models/M.yaml --profile IN.yaml --out OUT.yaml
 *
 * One process drives N GPUs (ncclCommInitAll + group calls).  NVLink multicast stays
 * off (NCCL_NVLS_ENABLE=0), as this workplace's machines require.  Each timing: the
 * all-reduce launched on every GPU inside a group, CUDA events on every stream, the
 * slowest GPU's elapsed time; warm-up first; random fp16 data. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "allreduce.h"
#include "scenario.h"
}

#define MAXG 8
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return -1; } } while (0)
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, ncclGetErrorString(r_)); return -1; } } while (0)

typedef struct {
    int n;
    ncclComm_t comm[MAXG];
    cudaStream_t st[MAXG];
    cudaEvent_t e0[MAXG], e1[MAXG];
    half *buf[MAXG];
    size_t cap;
} ar_gpu_t;

__global__ void fill(half *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
        p[i] = __float2half(((x & 0xffff) / 65536.0f - 0.5f) * 0.01f);
    }
}

static int time_one(void *vctx, double bytes, int reps, double *sec)
{
    ar_gpu_t *g = (ar_gpu_t *)vctx;
    size_t count = (size_t)(bytes / 2);
    if (count > g->cap) return -1;
    for (int r = -3; r < reps; r++) {
        for (int i = 0; i < g->n; i++) { CK(cudaSetDevice(i)); CK(cudaEventRecord(g->e0[i], g->st[i])); }
        NK(ncclGroupStart());
        for (int i = 0; i < g->n; i++)
            NK(ncclAllReduce(g->buf[i], g->buf[i], count, ncclHalf, ncclSum, g->comm[i], g->st[i]));
        NK(ncclGroupEnd());
        double worst = 0;
        for (int i = 0; i < g->n; i++) {
            CK(cudaSetDevice(i));
            CK(cudaEventRecord(g->e1[i], g->st[i]));
            CK(cudaEventSynchronize(g->e1[i]));
            float ms;
            CK(cudaEventElapsedTime(&ms, g->e0[i], g->e1[i]));
            if (ms > worst) worst = ms;
        }
        if (r >= 0) sec[r] = worst * 1e-3;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *model = "models/qwen3.8-27b.yaml", *in = NULL, *out = NULL;
    int n = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpus") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--profile") && i + 1 < argc) in = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else {
            fprintf(stderr, "usage: calib_allreduce --gpus N [--model M.yaml] --profile IN.yaml --out OUT.yaml\n");
            return 2;
        }
    }
    if (!in || !out || n < 2 || n > MAXG) {
        fprintf(stderr, "calib_allreduce: need --profile, --out and 2 <= --gpus <= %d\n", MAXG);
        return 2;
    }
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    int have = 0;
    if (cudaGetDeviceCount(&have) != cudaSuccess || have < n) {
        fprintf(stderr, "calib_allreduce: %d GPU(s) visible, %d needed\n", have, n);
        return 1;
    }
    char err[SCN_ERR_MAX];
    model_t m;
    profile_t p;
    if (scn_load_model(model, &m, err) < 0 || prof_load(in, &p, err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    ar_gpu_t g;
    memset(&g, 0, sizeof g);
    g.n = n;
    g.cap = (size_t)8192 * m.hidden;
    int devs[MAXG];
    for (int i = 0; i < n; i++) devs[i] = i;
    if (ncclCommInitAll(g.comm, n, devs) != ncclSuccess) {
        fprintf(stderr, "calib_allreduce: ncclCommInitAll failed\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        cudaSetDevice(i);
        cudaStreamCreate(&g.st[i]);
        cudaEventCreate(&g.e0[i]);
        cudaEventCreate(&g.e1[i]);
        if (cudaMalloc(&g.buf[i], g.cap * sizeof(half)) != cudaSuccess) {
            fprintf(stderr, "calib_allreduce: out of device memory\n");
            return 1;
        }
        fill<<<256, 256, 0, g.st[i]>>>(g.buf[i], g.cap, 1234u + i);
    }
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    char e2[256];
    if (ar_measure(&p, &m, n, prop.name, time_one, &g, e2) < 0) {
        fprintf(stderr, "calib_allreduce: %s\n", e2);
        return 1;
    }
    const prof_law_t *l = prof_find(&p, "allreduce");
    printf("allreduce on %d x %s: alpha %.2f us, %.1f GB/s; fit median %.1f%%, max %.1f%%\n", n, prop.name,
           l->coef[0] * 1e6, l->coef[1] > 0 ? 1e-9 / l->coef[1] : 0.0, 100 * l->fit_median_rel, 100 * l->fit_max_rel);
    p.tp = n;
    if (prof_save(out, &p) < 0) {
        perror(out);
        return 1;
    }
    for (int i = 0; i < n; i++) ncclCommDestroy(g.comm[i]);
    prof_free(&p);
    return 0;
}
