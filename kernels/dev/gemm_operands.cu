// gemm_operands.cu -- does a cuBLAS GEMM's speed on a power-capped card depend on the values it
// multiplies? The same fp16 GEMM (fp32 accumulate, C = A W^T as calib times it) with W uniform
// in [-1, 1] and A of each kind below, each timed as 48 back-to-back GEMMs (a layer's worth of
// one serving step) after 200 ms of rest, three times, and once as 400 in a row:
//   random    uniform [-1, 1] (calib's operands)
//   drift-y   the output of an RMS norm whose residual was added to itself `R` times (res += y;
//             y = res / rms(res) * w, w in [0.5, 1.5]): what the elementwise proxy leaves in a
//             buffer it keeps updating
//   drift-res that residual
//   sparse    90% zeros, the rest uniform [-1, 1]
//   zeros     all zero
//     bin/dev/gemm_operands [M N K [R]]      (default 1547 34816 5120, R 4000)
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CUDA(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// uniform [lo, hi), a share `zero` of the entries 0
__global__ void fill(half *p, size_t n, float lo, float hi, float zero, unsigned long long seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long r = mix(seed * 0x100000001b3ull + i);
        float u = (float)(r >> 40) * (1.f / 16777216.f), z = (float)(r & 0xffffff) * (1.f / 16777216.f);
        p[i] = __float2half(z < zero ? 0.f : lo + (hi - lo) * u);
    }
}

// one block per row of H: res += y; y = res * rsqrt(mean(res^2) + eps) * w
__global__ void norm_step(half *res, half *y, const half *w, int H) {
    __shared__ float red[32];
    size_t base = (size_t)blockIdx.x * H;
    float ss = 0;
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        float r = __half2float(res[base + i]) + __half2float(y[base + i]);
        res[base + i] = __float2half(r);
        ss += r * r;
    }
    for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        float v = 0;
        for (int k = 0; k < (int)blockDim.x / 32; k++) v += red[k];
        red[0] = v;
    }
    __syncthreads();
    float inv = rsqrtf(red[0] / H + 1e-6f);
    for (int i = threadIdx.x; i < H; i += blockDim.x)
        y[base + i] = __float2half(__half2float(res[base + i]) * inv * __half2float(w[i]));
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static float time_gemms(cublasHandle_t h, int m, int n, int k, const half *W, const half *A, half *C, int reps) {
    const float one = 1.f, zero = 0.f;
    cudaEvent_t e0, e1;
    CUDA(cudaEventCreate(&e0));
    CUDA(cudaEventCreate(&e1));
    CUDA(cudaEventRecord(e0));
    for (int r = 0; r < reps; r++)
        if (cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, W, CUDA_R_16F, k, A, CUDA_R_16F, k, &zero, C,
                         CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "cublasGemmEx failed\n");
            exit(1);
        }
    CUDA(cudaEventRecord(e1));
    CUDA(cudaEventSynchronize(e1));
    float ms;
    CUDA(cudaEventElapsedTime(&ms, e0, e1));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms / reps;
}

static int cmpf(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int m = argc > 3 ? atoi(argv[1]) : 1547, n = argc > 3 ? atoi(argv[2]) : 34816, k = argc > 3 ? atoi(argv[3]) : 5120;
    int R = argc > 4 ? atoi(argv[4]) : 4000;
    if (m < 1 || n < 1 || k < 1 || R < 0) {
        fprintf(stderr, "usage: gemm_operands [M N K [R]]\n");
        return 2;
    }
    size_t na = (size_t)m * k, nw = (size_t)n * k;
    half *W, *A, *res, *y, *w, *C;
    CUDA(cudaMalloc(&W, nw * 2));
    CUDA(cudaMalloc(&A, na * 2));
    CUDA(cudaMalloc(&res, na * 2));
    CUDA(cudaMalloc(&y, na * 2));
    CUDA(cudaMalloc(&w, (size_t)k * 2));
    CUDA(cudaMalloc(&C, (size_t)m * n * 2));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    fill<<<1024, 256>>>(W, nw, -1.f, 1.f, 0.f, 1);
    fill<<<64, 256>>>(w, k, 0.5f, 1.5f, 0.f, 2);
    // the drifted tensors: a residual stream of random rows normalised and added R times
    fill<<<1024, 256>>>(res, na, -1.f, 1.f, 0.f, 3);
    fill<<<1024, 256>>>(y, na, -1.f, 1.f, 0.f, 4);
    for (int r = 0; r < R; r++) norm_step<<<m, 256>>>(res, y, w, k);
    CUDA(cudaDeviceSynchronize());
    // what the drift did: the share of entries under 1/1000 of the row's largest
    half *hy = (half *)malloc(na * 2);
    CUDA(cudaMemcpy(hy, y, na * 2, cudaMemcpyDeviceToHost));
    long small = 0;
    for (int i = 0; i < m; i++) {
        float mx = 0;
        for (int j = 0; j < k; j++) mx = fmaxf(mx, fabsf(__half2float(hy[(size_t)i * k + j])));
        for (int j = 0; j < k; j++) small += fabsf(__half2float(hy[(size_t)i * k + j])) < mx * 1e-3f;
    }
    free(hy);
    cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, 0));
    printf("gemm_operands on %s: m %d n %d k %d; drift-y after %d norm steps: %.1f%% of entries under 1/1000 of their row's largest\n",
           prop.name, m, n, k, R, 100.0 * small / na);
    printf("%-10s %12s %10s %14s %10s\n", "A", "48 after rest", "TFLOP/s", "400 in a row", "TFLOP/s");
    const char *kinds[] = { "random", "drift-y", "drift-res", "sparse", "zeros" };
    double flop = 2.0 * m * n * k;
    time_gemms(h, m, n, k, W, A, C, 4); // warm-up: module load, algorithm pick
    for (int q = 0; q < 5; q++) {
        const half *src = A;
        switch (q) {
        case 0: fill<<<1024, 256>>>(A, na, -1.f, 1.f, 0.f, 5); break;
        case 1: src = y; break;
        case 2: src = res; break;
        case 3: fill<<<1024, 256>>>(A, na, -1.f, 1.f, 0.9f, 6); break;
        case 4: CUDA(cudaMemset(A, 0, na * 2)); break;
        }
        CUDA(cudaDeviceSynchronize());
        float t[3];
        for (int i = 0; i < 3; i++) {
            double t0 = now();
            while (now() - t0 < 0.2) usleep(1000);
            t[i] = time_gemms(h, m, n, k, W, src, C, 48);
        }
        qsort(t, 3, sizeof *t, cmpf);
        double t0 = now();
        while (now() - t0 < 0.2) usleep(1000);
        float s = time_gemms(h, m, n, k, W, src, C, 400);
        printf("%-10s %10.3f ms %10.0f %12.3f ms %10.0f\n", kinds[q], t[1], flop / (t[1] * 1e-3) / 1e12, s,
               flop / (s * 1e-3) / 1e12);
    }
    cublasDestroy(h);
    return 0;
}
