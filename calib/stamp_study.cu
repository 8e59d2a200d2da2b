/* stamp_study.cu -- does the replay's step clock (pacesim-gpu replay --step-clock) read the
 * clock the kernels ran at?
 *
 * The step clock is each SM's clock64() over %globaltimer between a stamp kernel queued just
 * before a step and one just after it (sim/replay_gpu.cu, step_stamp).  On an H100 it read the
 * same first prefill-only steps 1751 MHz back to back and 2018 MHz item by item, and decode steps
 * 1861 MHz where NVML read 1974 (docs/validation.md section 2).  A meter of the clock must make
 * the work of a kernel bound by the SM clock alone cost the same number of cycles however fast
 * the card runs.  This study times such kernels (a dependent FMA chain; a WMMA fp16 chain, which
 * loads the card harder) between the same stamps (sim/step_stamp.cuh), reading NVML after each:
 *   fma-all   the FMA chain on every SM (4 blocks an SM)
 *   fma-one   the same chain in one block: one SM busy, the others idle between the stamps
 *   idle      no kernel: the host sleeps between the two stamps (every SM idle)
 *   half      the FMA chain on every SM for half the span, the host asleep the other half
 *   heat      the WMMA chain on every SM, back to back, each rep stamped (the card heats)
 * Per rep: the stamps' MHz (cycles over nanoseconds, summed over the SMs stamped at both ends),
 * the kernel's time (CUDA events), NVML's clock, power and clock-event reasons.  Per condition:
 * medians, and for the kernels the cycles a rep (MHz x time) by each meter, with their spread
 * over the reps: the meter whose cycles stay constant as the clock moves is the clock the
 * kernel ran at.  Build: make bin/stamp_study (CUDA only); run: bin/stamp_study [REPS] (default
 * 40 a condition, 200 heat reps).  A study, not part of calib's profile; about 10 s on an H200. */
#include "gpuclock.h"
#include "step_stamp.cuh"
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                                                                \
    do {                                                                                     \
        cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "stamp_study: %s: %s\n", #x, cudaGetErrorString(e_));            \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* A dependent FMA chain: its time is its issue cycles over the SM clock. */
__global__ void fma_chain(float *out, int iters)
{
    float a = threadIdx.x * 1e-3f, b = 0.999f, c = 1e-4f;
    for (int i = 0; i < iters; i++) a = fmaf(a, b, c);
    if (a == 12345.0f) out[threadIdx.x] = a;   /* never true: keeps the chain */
}

/* A WMMA fp16 chain on fragments held in registers: the tensor cores' load, no memory. */
__global__ void mma_chain(float *out, int iters)
{
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(fa, __float2half(1e-3f));
    wmma::fill_fragment(fb, __float2half(1e-3f));
    wmma::fill_fragment(acc, 0.0f);
    for (int i = 0; i < iters; i++) wmma::mma_sync(acc, fa, fb, acc);
    if (acc.x[0] == 12345.0f) out[threadIdx.x] = acc.x[0];
}

typedef struct {
    double mhz, ms, nvml, watts;
    unsigned long long why;
} rep_t;

static stamp_span_t st;
static int nsm;
static float *d_out;
static gpuclock_t nvm;

static double stamps_mhz(void)   /* as the replay reads its steps' stamps */
{
    double mhz;
    CK(stamp_span_mhz(&st, &mhz));
    return mhz;
}

static void sleep_ms(double ms)
{
    struct timespec t = { (time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6) };
    nanosleep(&t, NULL);
}

enum { FMA_ALL, FMA_ONE, IDLE, HALF, HEAT, NCOND };
static const char *cname[NCOND] = { "fma-all", "fma-one", "idle", "half", "heat" };

/* One rep of condition k: stamps around its body, one sync at the end (the kernels' time by
 * events), then NVML. */
static void rep(int k, int fma_iters, int mma_iters, double span_ms, rep_t *r)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(stamp_span_mark(&st, 0));
    CK(cudaEventRecord(e0));
    switch (k) {
    case FMA_ALL: fma_chain<<<4 * nsm, 256>>>(d_out, fma_iters); break;
    case FMA_ONE: fma_chain<<<1, 256>>>(d_out, fma_iters); break;
    case IDLE: CK(cudaDeviceSynchronize()); sleep_ms(span_ms); break;
    case HALF:
        fma_chain<<<4 * nsm, 256>>>(d_out, fma_iters / 2);
        CK(cudaDeviceSynchronize());
        sleep_ms(span_ms / 2);
        break;
    case HEAT: mma_chain<<<8 * nsm, 128>>>(d_out, mma_iters); break;
    }
    CK(cudaEventRecord(e1));
    CK(stamp_span_mark(&st, 1));
    CK(cudaDeviceSynchronize());
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    r->ms = ms;
    r->mhz = stamps_mhz();
    r->nvml = r->watts = 0;
    r->why = 0;
    if (nvm.lib) gpuclock_read(&nvm, &r->nvml, &r->watts, &r->why);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmpd);
    return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : NAN;
}

/* max/min - 1 of v, in percent */
static double spread(const double *v, int n)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
    return n && lo > 0 ? 100 * (hi / lo - 1) : NAN;
}

static void summary(int k, const rep_t *r, int n, double *cyc_stamps, double *cyc_nvml)
{
    double *a = (double *)malloc(6 * n * sizeof *a);
    if (!a) exit(1);
    double *m = a, *nm = a + n, *t = a + 2 * n, *w = a + 3 * n, *cs = a + 4 * n, *cn = a + 5 * n;
    int capped = 0;
    for (int i = 0; i < n; i++) {
        m[i] = r[i].mhz, nm[i] = r[i].nvml, t[i] = r[i].ms, w[i] = r[i].watts;
        cs[i] = r[i].mhz * r[i].ms, cn[i] = r[i].nvml * r[i].ms;   /* thousands of cycles */
        capped += (r[i].why & ~1ull) != 0;
    }
    double scs = spread(cs, n), scn = spread(cn, n), mcs = 1e3 * median(cs, n), mcn = 1e3 * median(cn, n);
    if (cyc_stamps) *cyc_stamps = mcs;
    if (cyc_nvml) *cyc_nvml = mcn;
    printf("stamp_study: %-8s %3d reps: stamps %7.1f MHz (%.1f%% spread), NVML %7.1f MHz, kernel %.3f ms, "
           "%5.0f W, %d reps with a clock-event reason",
           cname[k], n, median(m, n), spread(m, n), median(nm, n), median(t, n), median(w, n), capped);
    if (k != IDLE)
        printf("; cycles a rep: stamps %.4g (%.2f%% spread), NVML %.4g (%.2f%% spread)", mcs, scs, mcn, scn);
    printf("\n");
    free(a);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 40;
    if (reps < 2 || reps > 100000) {
        fprintf(stderr, "usage: bin/stamp_study [REPS]  (REPS 2 .. 100000, default 40)\n");
        return 2;
    }
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, dev));
    CK(cudaMalloc((void **)&d_out, 1024 * sizeof(float)));
    if (gpuclock_open(&nvm, dev) != 0) printf("stamp_study: no NVML: its columns read 0\n");
    printf("stamp_study: %s, %d SMs\n", p.name, nsm);

    /* size the chains to ~5 ms each on this card (cold) */
    rep_t r;
    int fi = 1 << 16, mi = 1 << 12;
    for (int i = 0; i < 8; i++) {
        rep(FMA_ALL, fi, mi, 0, &r);
        if (r.ms > 0) fi = (int)fmin(1e9, fi * 5.0 / r.ms);
        rep(HEAT, fi, mi, 0, &r);
        if (r.ms > 0) mi = (int)fmin(1e9, mi * 5.0 / r.ms);
    }
    printf("stamp_study: fma chain %d iterations, wmma chain %d (about 5 ms each at the start)\n", fi, mi);

    rep_t *rs = (rep_t *)malloc((size_t)(5 * reps) * sizeof *rs);
    if (!rs) return 1;
    /* cold conditions, interleaved, with 50 ms of idle between reps */
    int order[4] = { FMA_ALL, FMA_ONE, IDLE, HALF };
    rep_t *by[4];
    for (int c = 0; c < 4; c++) by[c] = rs + c * reps;
    for (int i = 0; i < reps; i++)
        for (int c = 0; c < 4; c++) {
            sleep_ms(50);
            rep(order[c], fi, mi, 5, &by[c][i]);
        }
    double cold_s = 0, cold_n = 0, hot_s = 0, hot_n = 0;
    for (int c = 0; c < 4; c++) summary(order[c], by[c], reps, c == 0 ? &cold_s : NULL, c == 0 ? &cold_n : NULL);
    /* the card heated: 5 x REPS WMMA reps back to back, each stamped; then FMA reps on the hot
     * card, back to back, against the cold FMA reps above */
    int nh = 5 * reps;
    rep_t *h = (rep_t *)malloc((size_t)nh * sizeof *h);
    if (!h) return 1;
    for (int i = 0; i < nh; i++) {
        rep(HEAT, fi, mi, 0, &h[i]);
        if (i < 10 || i % (nh / 10) == 0)
            printf("stamp_study: heat rep %4d: stamps %7.1f MHz, NVML %7.1f MHz, %.3f ms, %4.0f W, reasons 0x%llx\n", i,
                   h[i].mhz, h[i].nvml, h[i].ms, h[i].watts, h[i].why);
    }
    summary(HEAT, h, nh, NULL, NULL);   /* every rep, from cold to hot */
    for (int i = 0; i < reps; i++) {
        rep(HEAT, fi, mi, 0, &r);   /* keep the card hot between the FMA reps */
        rep(FMA_ALL, fi, mi, 0, &by[0][i]);
    }
    printf("stamp_study: fma-all between wmma reps (the card hot):\n");
    summary(FMA_ALL, by[0], reps, &hot_s, &hot_n);
    printf("stamp_study: the fma chain's cycles a rep, hot over cold: by the stamps %.4f, by NVML %.4f "
           "(1: the meter reads the clock the chain ran at)\n", hot_s / cold_s, hot_n / cold_n);
    free(h);
    free(rs);
    gpuclock_close(&nvm);
    return 0;
}
