/* calib: measure a GPU's cost laws and write a profile (calib/profiles/<gpu>.yaml).
 *
 * The host side (calib.c, pure C, no GPU) builds the grid of points -- one job per
 * (law, shape) -- drives a timer over it (warm-up, an adaptive number of back-to-back
 * runs per timing so that short kernels sit well above the event resolution, the
 * median of several timings), assembles the profile (raw points per law, metadata) and
 * fits every law with fit_law().  The timer is an interface: calib_gpu.cu implements it
 * with CUDA events around this repo's attention kernels (kernels/attn.h), cuBLAS GEMMs
 * and the GDN / elementwise proxy kernels; tests/check_calib.c implements it with times
 * drawn from a known law, so the whole driver runs in CI with no GPU.
 * Invariant: every point stored in the profile is the median of >= 1 timings of a
 * job that prepared and ran without error; a job the timer does not support is
 * skipped (and counted), never stored. */
#ifndef PACESIM_CALIB_H
#define PACESIM_CALIB_H

#include <stdio.h>
#include "model.h"
#include "profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a job runs. */
typedef enum {
    CK_PREFILL_FAST = 0,  /* paged prefill "BM32 phase" (BM32/BN128), law attn.prefill_bm32.fp16 */
    CK_PREFILL_GENERIC,   /* paged prefill BM32/BN64 (fp16, or fp8 dequantised in kernel) */
    CK_PREFILL_LOWSMEM,   /* paged prefill BM16/BN128 */
    CK_DECODE_XQA,        /* split-K decode, a CTA per kv head; q > 1 = token-wise expansion */
    CK_DECODE_SCALAR,     /* split-K decode, a CTA per q head */
    CK_FP8_EXPAND,        /* the fp8 bridge's expansion of every page to an fp16 workspace */
    CK_GEMM,              /* C[m,n] = A[m,k] W[n,k]^T through cuBLAS, fp16 in, fp32 accumulate */
    CK_GDN,               /* one GDN layer's core: causal conv1d + gated delta rule recurrence */
    CK_ELEM,              /* one layer's elementwise work: 2 RMSNorms (+residual) + SiLU-mul */
    CK_VARLEN,            /* the varlen kernel over a mixed batch (decode rows + chunks), law attn.varlen.fp16 */
    CK_GEMM_MOE,          /* an MoE layer's expert GEMMs as one grouped cuBLAS GEMM, law gemm.moe.fp16 */
    CK__N
} calib_kernel_t;

typedef struct calib_job {
    calib_kernel_t kernel;
    int law;                      /* index into calib_laws() */
    const char *what;             /* a label for the progress line ("qkv", "lm_head", "") */
    double x[PROF_MAX_COLS];      /* the point's columns, t_s excluded (calib_laws()[law].ncols - 1 of them) */
    /* the same, decoded */
    int fp8;                      /* KV dtype: 0 fp16, 1 fp8_e5m2 */
    int rows, q, page;            /* attention: identical rows of q query tokens */
    long seq_len;
    long m, n, k;                 /* gemm */
    int kpoint;                   /* gemm: a point for a kernel no grid point runs (calib.c's
                                     gemm_kernel_points): cuBLAS picks it over a narrow range of m,
                                     often well under the shape's FLOP rate, so it is never the
                                     sustained probes' compute-bound GEMM (sustain.h 6.) */
    long tokens;                  /* gdn, elementwise */
    int cold;                     /* elementwise: every run on tensors not in L2 (law elementwise.cold):
                                     the timer rotates them through several times the L2 and
                                     evicts it before the timings, as a layer's GEMMs do */
    int seqs;                     /* gdn: tokens are split as seqs-1 one-token rows + one long row */
    double est_s;                 /* a rough a-priori time, used only to order the grid */
    /* varlen: rows decode rows of q = 1 at seq_len (ctx_min > 0: at contexts spread from ctx_min
     * to seq_len, law_varlen_row_ctx), plus chunks rows of q new tokens after prefix tokens of
     * context; page as above.  decode (ctx_min > 0): the rows requests' contexts spread from
     * ctx_min to seq_len the same way (ATTN_COL_CTX_MIN) */
    int chunks;
    long prefix, ctx_min;
    /* moe: tokens x topk assignments over experts (law_moe_counts with skew), each expert's
     * C[m_e, n] = A[m_e, k] W_e[n, k]^T (n, k as gemm) */
    int experts, topk;
    double skew;
    int slot;                     /* moe: the prepared state it keeps (0 .. CALIB_MOE_SLOTS-1): jobs of
                                     different slots stay prepared side by side (calib_gpu_ready);
                                     calib's own jobs use slot 0 */
} calib_job_t;

/* The grouped MoE GEMMs the GPU timer keeps prepared at once (calib_job_t.slot): each slot its
 * groups' shapes and its device arrays of operand pointers, at most LAW_MOE_MAX_EXPERTS groups
 * x 16 rotation sets x 3 pointers (384 KiB of device memory, 32 KiB of host memory a slot; 3 MiB
 * and 256 KiB for all).  The operands themselves are the timer's shared rotation buffers. */
#define CALIB_MOE_SLOTS 8

typedef struct calib_law_spec {
    law_id_t law;                 /* the law's form in the catalogue (sim/law.h) */
    calib_kernel_t kernel;
    int fp8;
    const char *what;             /* one line for the provenance */
    const char *name;             /* the form's name, */
    int ncols;                    /*   its point columns (t_s included), */
    const char *const *cols;      /*   and their names */
} calib_law_spec_t;

/* The laws calib measures (a static table, its names and columns the catalogue's), and
 * how many. */
const calib_law_spec_t *calib_laws(int *n);

/* The timer's back-to-back sequences (seq_queue, below) */
#define CALIB_SEQ_PARTS 4
#define CALIB_SEQ_LAYERS 64
#define CALIB_SEQ_DEPTH 3

/* The timer a driver calls.  Each function returns 0, or -1 with err filled;
 * prepare() may also return 1: "this job is not supported here" (the point is skipped). */
typedef struct calib_timer calib_timer_t;
struct calib_timer {
    const char *name;
    /* Once, before the first job: the model and its per-rank shapes (heads, widths). */
    int (*setup)(calib_timer_t *t, const model_t *m, const model_rank_t *r);
    /* Get ready to run j (allocate and fill buffers with random data). */
    int (*prepare)(calib_timer_t *t, const calib_job_t *j);
    /* Run j iters times back to back (rotating among its buffer sets) between two
     * timestamps; *sec = elapsed / iters.  1 = the kernel refused the shape before
     * launching anything (honoured on the first run of a job only: skip it). */
    int (*run)(calib_timer_t *t, const calib_job_t *j, int iters, double *sec);
    /* The kernel a GEMM job runs where the library picks it by shape (cuBLAS: its tile along
     * n and along m, and its split of k -> choice[0..2]), recorded with the job's point
     * (the gemm law's tile_n, tile_m, splits columns).  0, 1 (not known: the point records
     * 0s, and the law prices it by its first four terms), or -1 with err filled.  May be
     * NULL (never known). */
    int (*gemm_choice)(calib_timer_t *t, const calib_job_t *j, double choice[3]);
    /* Let the card rest this long with nothing queued (calib's settle, below).  May be NULL. */
    void (*idle)(calib_timer_t *t, double seconds);
    /* Fill the profile's hardware metadata (gpu, sms, memory, clocks, driver, toolkit). */
    void (*describe)(calib_timer_t *t, profile_t *p);
    /* The SM clock now, in MHz: 0, or -1 where it cannot be read (then the sustained-load
     * probes are skipped).  May be NULL. */
    int (*clock)(calib_timer_t *t, double *mhz);
    /* The SM clock over a span by the SMs' own cycle counters over the GPU's nanosecond timer
     * (the replay's step stamps, sim/step_stamp.cuh), not NVML's reading: end 0 stamps the span's
     * start behind what is queued, end 1 its end, and gives the span's mean in *mhz.  0, or -1
     * where it cannot be read.  May be NULL. */
    int (*span_clock)(calib_timer_t *t, int end, double *mhz);
    /* The board power now, in W: 0, or -1 where it cannot be read.  May be NULL. */
    int (*power)(calib_timer_t *t, double *watts);
    /* The host's wall clock (monotonic seconds), for the probes' duty: the share of the wall time
     * the card was busy (calib/sustain.h 7.).  May be NULL (no duty measured). */
    double (*wall)(calib_timer_t *t);
    /* A sequence run back to back (calib/sustain.h 7.): seq_queue() queues a batch of nlayers
     * layers (1 .. CALIB_SEQ_LAYERS), each layer its nparts parts (1 .. CALIB_SEQ_PARTS) in order,
     * part p job jobs[p] run iters[p] times, with an event between parts; the jobs were prepared
     * (an attention job keeps its state while a GEMM is prepared and run).  The batch goes behind
     * what the card still has queued and the host does not wait, so batches queued ahead (at most
     * CALIB_SEQ_DEPTH not yet waited for) run with no host work between them.  seq_wait() waits
     * for the oldest queued batch: each part's seconds on the card over the batch (its events).
     * Both 0, or -1 with err filled.  May be NULL (then the layer-scale rows are not measured). */
    int (*seq_queue)(calib_timer_t *t, const calib_job_t *const *jobs, const int *iters, int nparts, int nlayers);
    int (*seq_wait)(calib_timer_t *t, double part_s[]);
    void (*destroy)(calib_timer_t *t);
    void *impl;
    char err[256];
};

typedef struct calib_opts {
    const char *model_path;       /* models/<m>.yaml (calib_main) */
    const char *out_path;         /* the profile to write */
    int tp;                       /* tensor-parallel degree the per-rank shapes are taken at */
    int smoke;                    /* 1: a tiny grid (seconds), for a first look */
    const char *only;             /* comma-separated law-name prefixes, NULL = all */
    int repeats;                  /* timings per point; the median is kept (5) */
    double min_batch_s;           /* a timing covers at least this long (runs batched) (5e-4) */
    int max_iters;                /* at most this many runs per timing (500) */
    double long_point_s;          /* a run longer than this gets long_repeats timings (0.02) */
    int long_repeats;             /* (3) */
    double budget_s;              /* stop measuring after this many seconds; 0 = none */
    int quiet;                    /* no progress line */
    int preload_study;            /* --preload-study: after the probes, calib_preload_study (sustain.h) */
    const char *points_log;       /* --points-log: each measured point's law, shape, seconds, the
                                     SM clock read right after its timings, its wall start and end
                                     (s from calib's start) and its time on the card, as CSV (NULL:
                                     none) -- what the sustained-load analysis of a run needs */
    int keep_going;               /* a failing point is reported and skipped (8 in a row stop the
                                     measuring); what was measured is still fitted and returned */
    int no_sustain;               /* 1: skip the sustained-load probes (calib/sustain.h; also
                                     skipped by --smoke, --only and timers without a clock) */
    int sustain;                  /* 1: the probes even with only (--sustain; the selected laws must
                                     hold an fp16 XQA decode point and a GEMM, sustain.h) */
    int no_recheck;               /* 1: no second look at the points that stand out (below) */
    int varlen;                   /* 1: also the varlen kernel's grid (attn.varlen.fp16; --varlen) */
    int moe_experts, moe_topk;    /* > 0: also the MoE expert GEMMs' grid (gemm.moe.fp16; --moe E,TOPK,WIDTH) */
    long moe_width;               /*   at this expert width (intermediate size of one expert, before TP) */
} calib_opts_t;

/* The second look (calib_run, after the grid): per law with at least 3 points a coefficient,
 * a first fit; a point off it by more than CALIB_RECHECK_FACTOR times the law's median error
 * and by at least CALIB_RECHECK_MIN (at most a tenth of the law's points, the farthest first)
 * is timed twice more, and the median of its three timings replaces it -- the one it had
 * included, so a point whose first timing was right stays where it was.  A transient
 * disturbance (another tenant, a clock dip) then costs the profile nothing: on the H200 two
 * prefill points of one shape have come out 11% slow while their third page and every shape
 * around them agreed within 0.5%. */
/* Settling.  A card under load lowers its clock within ~0.1 s and recovers within ~0.02 s
 * of light load (the H200's sustained-load probes), and a latency-bound kernel's time follows
 * the clock: a second look run right after the grid's heaviest points can re-time the GDN
 * proxy's 256- and 784-token rows up to 19% slower than their first timings (0-4% in
 * another calibration).  So a point is measured from rest: before each job whose predecessor kept the card
 * busy longer than CALIB_SETTLE_MIN, the timer idles CALIB_SETTLE_FRAC of that time (at most
 * CALIB_SETTLE_MAX), and CALIB_SETTLE_MAX before each point the second look re-times.  The
 * sustained-load probes (sustain.h) price the hot card from there. */
#define CALIB_SETTLE_MIN 0.02
#define CALIB_SETTLE_FRAC 0.25
#define CALIB_SETTLE_MAX 0.1
#define CALIB_RECHECK_FACTOR 3.0
#define CALIB_RECHECK_MIN 0.05

/* The elementwise proxy is timed L2-cold too (law elementwise.cold) at the grid's token counts up
 * to this, the largest step budget the grid reaches: the warm points' rotation stays partly in
 * the L2 up to a few hundred tokens, and an engine's step runs its norms after GEMMs that stream
 * far more than the L2 at every batch (docs/validation.md section 2). */
#define CALIB_ELEM_COLD_MAX 16384
/* A GEMM point for each kernel cuBLAS picks at some m up to CALIB_KERN_POINT_M_MAX that no
 * grid point of its shape runs, where it picks it for at least CALIB_KERN_POINT_MIN_M
 * consecutive m: between grid points of other kernels an item's price follows the law scaled
 * to the nearest point of its own kernel (sim/cost_profile.c), and a kernel the heuristic
 * picks over a few dozen m can run 1.3-1.4x what the law's tiles say (docs/validation.md) */
#define CALIB_KERN_POINT_M_MAX 4096
#define CALIB_KERN_POINT_MIN_M 8

void calib_opts_default(calib_opts_t *o);
/* The MoE grid's shape from the model (its experts, top-k and expert width) where the model
 * has MoE layers and no --moe set one. */
void calib_opts_model(calib_opts_t *o, const model_t *m);

/* The grid for model m at rank shapes r (caller frees *jobs).  Jobs come ordered by
 * est_s, cheapest first, so a budget cut drops the most expensive points.  0 / -1. */
int calib_grid_build(const calib_opts_t *o, const model_t *m, const model_rank_t *r,
                     calib_job_t **jobs, int *njobs);

/* Device memory of the GPU timer's cached buffers (calib_gpu.cu): its operand rotations and KV
 * pools stay allocated between points and only grow, so each allocation is sized against the
 * device's free memory (cudaMemGetInfo) less CALIB_MEM_MARGIN, left to cuBLAS's and the kernels'
 * workspaces and the CUDA context.  Where the full size fits, it is what a card with room gets
 * (its timings unchanged); where not, a rotation gets fewer slices, a KV pool no room to grow. */
#define CALIB_MEM_MARGIN (1ul << 30)
/* The bytes an allocation may take: free (the device's free memory) plus held (what the buffer
 * to be replaced holds: it is given back first) less CALIB_MEM_MARGIN; 0 when that is negative. */
size_t calib_mem_avail(size_t free_bytes, size_t held);
/* A rotation buffer's allocation for a request of full bytes made of want slices of slice bytes
 * each (slice * want >= full; a single buffer is want 1, slice full rounded up to 256): full plus
 * a quarter of headroom rounded up to 256 bytes where that fits avail, else full rounded up to
 * 256, else as many whole slices as fit -- *sets gets the slices it holds (want, or fewer);
 * 0 with *sets = 0 where not one slice fits avail. */
size_t calib_rot_plan(size_t full, size_t slice, int want, size_t avail, int *sets);
/* A KV pool's blocks of block bytes for a job wanting want of them: want and half as many again
 * (room to grow) where that fits avail, else want where it fits, else 0. */
long calib_pool_plan(long want, size_t block, size_t avail);

/* Median of v[0..n) (sorts v in place).  NAN for n < 1. */
double calib_median(double *v, int n);

/* Time one job: prepare, a warm-up run, an estimate, then repeats timings of iters
 * runs each; *t_s = median seconds per run.  0, 1 (unsupported: skip), -1 error. */
int calib_measure(calib_timer_t *t, const calib_opts_t *o, const calib_job_t *j,
                  double *t_s, int *iters_used, int *repeats_used);

/* The whole driver: grid, measurements (progress on `progress`, may be NULL), profile
 * assembly (laws with their raw points, metadata from the timer and from the run),
 * fits.  out is initialised here; the caller frees it with prof_free() unless -1 is
 * returned (err filled).  Otherwise returns the number of points that failed (always 0
 * without keep_going). */
int calib_run(const calib_opts_t *o, calib_timer_t *t, const model_t *m, profile_t *out,
              FILE *progress, char err[256]);

/* Refit every law of p that has points, from those points, with the catalogue's law forms
 * (sim/law.h), p's SMs and ceilings (cost_hw_of) and model m at p's TP degree -- no GPU.
 * Points and metadata are left as they are; each refit law's provenance says so (with the
 * build's git revision).  0, or -1 with err filled (the law whose fit failed). */
int calib_refit(profile_t *p, const model_t *m, char err[256]);

/* The fit table: law, points, median and max relative error, coefficients. */
void calib_print_fits(const profile_t *p, FILE *f);
/* calib --merge: b's points of the laws keyed by shape -- the attention laws whose points
 * record their heads and head size, and gemm, keyed by (n, k) -- added to a's, so that one
 * profile holds a calibration of another model's attention and GEMM shapes beside a's own
 * (the grid interpolates within a shape, the laws fit over all).  b must be of a's card (gpu
 * and SMs) and TP degree; an attention shape a already holds is refused (two calibrations of
 * one shape); b's gemm points of an (n, k, weight bytes) a already holds are left out, as are
 * b's laws not keyed by shape (gdn, elementwise, varlen, MoE: a's stay), each named on note.
 * The laws that took points say so in their provenance; a caller refits them (calib_refit).
 * Returns the points taken, or -1 with err filled (a refusal leaves a as it was; out of
 * memory may leave some laws merged). */
int calib_merge(profile_t *a, const profile_t *b, FILE *note, char err[256]);

/* Per law of p that has points (and whose name starts with one of only's comma-separated
 * prefixes; NULL = all): its n points of largest relative residual under its current
 * coefficients (fit_law_residuals), each with its shape (the law's columns), measured and
 * fitted microseconds and the signed error.  0, or -1 with err filled. */
int calib_print_residuals(const profile_t *p, const model_t *m, int n, const char *only, FILE *f, char err[256]);

/* The command line (bin/calib): parse, load the model, make the timer with mk, run,
 * print the fit table, save; with --refit IN, calib_refit() IN instead (mk is never
 * called), and with --residuals N print each law's N worst points after the fit table
 * (--out may then be left out: nothing is written).  Exit status: 0 ok, 1 failure, 2 usage. */
typedef calib_timer_t *(*calib_timer_ctor)(char err[256]);
int calib_main(int argc, char **argv, calib_timer_ctor mk);

/* The CUDA timer (calib_gpu.cu; linked into bin/calib only).  NULL with err filled
 * when no device can be used. */
calib_timer_t *calib_gpu_timer_new(char err[256]);

/* The launch gate (calib_gpu.cu): a timing measures the GPU, not the host's launch rate.
 * calib_gpu_gate_close() puts a kernel on the default stream that holds the launches after it
 * until calib_gpu_gate_open() (or CALIB_GATE_MAX_S, so a host that blocks cannot hang it);
 * between the two the host queues the timed runs and their events, so they run back to back
 * as an engine's CUDA graphs run them.  At most CALIB_GATE_MAX_CALLS calls are queued behind
 * one gate (the launch queue is finite): callers open it after that many.  close returns 0 or
 * -1 (calib_gpu_gate_error says why); open returns 1 if the gate let go by its time limit, else 0, and may be
 * called again before the next close (cuBLAS's first call of a new GEMM shape waits on the
 * GPU: a warm-up run's gate lets go by the limit). */
#define CALIB_GATE_MAX_CALLS 256
#define CALIB_GATE_MAX_S 0.02
int calib_gpu_gate_close(void);
/* What the last close that returned -1 ran into ("the gate kernel's launch: <CUDA error>", ...) */
const char *calib_gpu_gate_error(void);
int calib_gpu_gate_open(void);
/* Queue iters runs of a prepared job j on the default stream (no events, no synchronisation:
 * the caller times them, e.g. pacesim-gpu replay --back-to-back, between its own events and
 * behind its own gate).  *queued counts the calls queued behind the caller's gate: the gate is
 * opened when it reaches CALIB_GATE_MAX_CALLS.  0, 1 (the kernel refused the shape before
 * launching), or -1 with t->err filled. */
int calib_gpu_launch(calib_timer_t *t, const calib_job_t *j, int iters, long *queued);
/* 1 if a prepared job j can be launched as it stands (calib_gpu_launch): its state in the timer
 * is still its own -- a GEMM's or the elementwise proxy's buffers are large enough (they only
 * grow), a GDN job is the last GDN job prepared (one set of sequence offsets), a grouped MoE GEMM's
 * slot holds j's shape and no buffer its pointers point into was reallocated since -- else 0
 * (prepare it again first).  Kernels not tracked (attention, varlen): 0. */
int calib_gpu_ready(calib_timer_t *t, const calib_job_t *j);

#ifdef __cplusplus
}
#endif
#endif
