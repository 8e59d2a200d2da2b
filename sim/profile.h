/* profile: a GPU's calibrated cost laws (calib/profiles/NAME.yaml).
 *
 * A profile is metadata plus a list of named laws.  Each law is linear in its
 * coefficients, t = sum_i coef[i] * feature[i] (seconds), except for a law's roofline
 * pair, whose two terms combine as their max, and its knee (sim/law.h, the catalogue of
 * law forms); the features of a shape are computed by cost_point_features() /
 * cost_item_features() (sim/cost.h) -- the same functions for calib's fit and for the
 * simulator's prediction, so a profile means one thing.
 * A law keeps the raw points it was fitted on (columns named per law, the last one
 * is always "t_s"), the fit's median/max relative error against those points, and
 * its provenance (measured by calib on a named GPU, or derived from a cited figure).
 * Invariant after prof_load(): at most PROF_MAX_LAWS laws; every law has 1..PROF_MAX_COEF
 * coefficients in [0, 100] (a law of the catalogue no more than its form has, law_ncoef,
 * and not all 0 but for the step law's); a catalogue law's columns are its form's; a law
 * has at most PROF_MAX_POINTS points, each row exactly ncols values within its column's
 * range (below; t_s in [1e-9, 1000] s for every law, a law outside the catalogue's other
 * columns finite); metadata within bounds (sms <= 4096, tp <= 1024).  The cost model's
 * work per call is bounded by these. */
#ifndef PACESIM_PROFILE_H
#define PACESIM_PROFILE_H

#include <stdio.h>

#include "law.h"
#include "model.h"

#define PROF_MAX_COEF 10               /* coefficients a law may have in a file */
#define PROF_MAX_CURVE 32          /* points of the card's clock against load */
#define PROF_MAX_INTER 32          /* rows of the layer-interleaved load */
#define PROF_MAX_GPROBE 16         /* calib's GEMM probes across shapes */
#define PROF_MAX_COLS LAW_MAX_COLS
#define PROF_ERR_MAX 1024
#define PROF_MAX_LAWS 1024             /* laws a profile may have (the catalogue has 15) */
#define PROF_MAX_POINTS 100000         /* points a law may have */
/* a point's columns (law.h), whole numbers from 1 up to: */
#define PROF_MAX_ROWS 1024             /* attention rows of one call */
#define PROF_MAX_Q (1 << 20)           /* a prefill or bridge row's query tokens (decode: 64) */
#define PROF_MAX_SEQ_LEN (1L << 24)    /* a row's context, and its q at most that */
#define PROF_MAX_PAGE (1 << 20)        /* tokens a KV page */
#define PROF_MAX_HEADS 4096            /* attention q heads, kv heads, head_dim per rank */
#define PROF_MAX_DIM (1L << 24)        /* gemm m, n, k; gdn tokens and seqs; elementwise
                                          tokens; step rows; allreduce bytes: its square */

typedef struct prof_law {
    char name[48];                 /* see law.h for the known names */
    int ncoef;
    double coef[PROF_MAX_COEF];
    char provenance[320];
    int ncols;
    char cols[PROF_MAX_COLS][16];
    int npts;
    double *pts;                   /* npts * ncols, row-major; owned */
    double fit_median_rel, fit_max_rel; /* -1 when not fitted on points */
    int has_sustained;             /* calib's sustained-load probe of this law (sim/heat.h): */
    double hot;                    /*   time at the heater's capped clock / calibrated time */
    double heat;                   /*   its own load's clock drop / the heater's, 0..1 */
    int nkern;                     /* gemm: the kernel cuBLAS picks, by ranges of m (calib asks */
    double *kern;                  /*   cuBLASLt's heuristic at every m of each shape): nkern x
                                      PROF_KERN_COLS, enum prof_kern_col; owned; a shape's rows
                                      consecutive, ascending in m, not overlapping */
    int name_line, name_col;       /* where its name stands in the file (0 if not loaded from one) */
} prof_law_t;

enum prof_kern_col { KERN_N = 0, KERN_K, KERN_WB, KERN_M_LO, KERN_M_HI, KERN_TILE_N, KERN_TILE_M, KERN_SPLITS,
                     PROF_KERN_COLS };
#define PROF_MAX_KERN 200000           /* kernel ranges a gemm law may hold */

/* The kernel row of gemm law l for m of shape (n, k, wb), or NULL (no range holds it). */
const double *prof_kernel_at(const prof_law_t *l, double m, double n, double k, double wb);
/* Its two halves: the rows [*lo, *hi) of shape (n, k, wb) (0 if it has none), a scan of the
 * ranges; and the row of [lo, hi) holding m (NULL: none), a bisection. */
int prof_kernel_block(const prof_law_t *l, double n, double k, double wb, int *lo, int *hi);
const double *prof_kernel_in(const prof_law_t *l, int lo, int hi, double m);

typedef struct profile {
    char path[512];
    /* metadata */
    char gpu[96];
    int sms;
    double mem_gib;                /* device memory per GPU */
    double mem_bw_gbs;             /* copy bandwidth (measured or datasheet) */
    double peak_fp16_tflops;
    int tp;                        /* tensor-parallel degree the laws were made for */
    char model[64];                /* model the GEMM shapes were taken from */
    char toolkit[64], driver[64], date[32], revision[48];
    char method[448];              /* how it was obtained */
    double calib_seconds;
    double sm_clock_mhz;
    int has_sustained;             /* the card under sustained load (sim/heat.h): */
    double clock_cold_mhz, clock_hot_mhz;   /* settled under a light load / the heater */
    double tau_up_s, tau_down_s;   /* the clock's time constants, falling / recovering */
    double tau_up_runs_s;          /* the fall read from a compute-bound GEMM's own times
                                      (sustained.tau_up_runs_s; 0: not measured); where given,
                                      pricing uses it instead of tau_up_s, NVML's trace, which
                                      NVML's ~0.1 s reading bounds (prof_tau_up) */
    double tau_up_runs_range_s[2], tau_down_range_s[2];   /* the fastest and slowest of calib's
                                      traces of each priced time constant (sustained.
                                      tau_up_runs_range_s, tau_down_range_s; 0, 0: not given):
                                      the range rescore prices each window's calib band over */
    double stamp_cold_mhz, stamp_hot_mhz;   /* the same settled spans by the SMs' cycle counters
                                      (sustained.stamp_cold_mhz, stamp_hot_mhz; 0: not read):
                                      the meter of the replay's step stamps, which rescore
                                      --recorded-clock prices against (cost_profile_clock_units) */
    int ncurve;                    /* calib's clock against load (sustained.curve; 0: not measured; */
    double curve[PROF_MAX_CURVE][3];  /* recorded, not priced by): duty, MHz, W (0: not read), duty rising */
    int has_chot;                  /* calib's compute-bound GEMM hot (sustained.gemm_compute_hot; */
    double chot[4];                /* recorded, not priced by): its m, n, k, hot */
    int has_ehot;                  /* calib's elementwise proxy at a serving budget, L2-cold, its */
    double ehot[2];                /* hot (sustained.elementwise_hot; recorded, not priced by):
                                      its tokens, hot */
    int ngprobe;                   /* calib's GEMMs across shapes (sustained.gemm_hot_probes; 0: not */
    double gprobe[PROF_MAX_GPROBE][6];   /* measured; recorded, not priced by): m, n, k, calibrated
                                         seconds, two passes' hot; calibrated time rising */
    int ninter;                    /* calib's layer-interleaved load (sustained.interleave; 0: not */
    double inter[PROF_MAX_INTER][7];  /* measured; recorded, not priced by): gemm share, layer ms,
                                         MHz, W (0: not read), the GEMM's and the decode's time
                                         over their times after the light load, the duty (the
                                         card's busy over the wall time; 0: not measured, as in
                                         profiles from before calib measured it) */
    int expand_cta_tokens;         /* the fp8 bridge's expansion kernel: tokens per CTA and */
    int expand_ctas_per_sm;        /* CTAs per SM (0 = not recorded: 784 and 8) */
    int split_max, split_min_tiles, split_cost_tiles, split_ctas_per_sm;
                                   /* the fast prefill kernel's split of its walk (kernels/
                                      attn_split.h; split_max 0 = not recorded: it does not split) */
    int has_envelope;              /* the shapes calib measured (its `envelope`): a law's points */
    int env_tp, env_q_heads, env_kv_heads, env_head_dim; /* cover these per-rank attention heads and
                                                          head size at this TP degree; an item
                                                          outside them, or past its law's points'
                                                          ranges (prof_law_range), is priced by
                                                          the law's extrapolation (cost_profile.c
                                                          warns); 0 = no envelope recorded */
    int nlaws;
    prof_law_t *laws;              /* owned */
    int laws_line, laws_col;       /* where `laws:` stands in the file (0 if not loaded from one) */
} profile_t;

/* Read a profile.  0, or -1 with "file:line:col: key: message" in err.
 * On success the caller frees with prof_free(). */
int prof_load(const char *path, profile_t *out, char err[PROF_ERR_MAX]);
/* The same, but a law of the catalogue with more coefficients than its form has (law_ncoef)
 * -- which prof_load refuses -- is read as it is: for calib --refit, which refits such laws
 * from their points. */
int prof_load_any(const char *path, profile_t *out, char err[PROF_ERR_MAX]);
/* Write a profile (all laws, points, metadata).  0 or -1 (errno set; EDOM: a law holds a
 * value prof_load would refuse, so nothing is written that does not load back). */
int prof_save(const char *path, const profile_t *p);
void prof_free(profile_t *p);

/* An empty law of form f (law.h): its name, its coefficients (all 0), its columns; no
 * points, provenance or sustained-load probe, not fitted. */
void prof_law_init(prof_law_t *l, const law_form_t *f);
/* The clock's fall time constant pricing uses (sim/heat.h): the one read from a compute-bound
 * GEMM's own times (tau_up_runs_s) where calib measured it, else NVML's trace (tau_up_s). */
double prof_tau_up(const profile_t *p);
/* The law called name, or NULL. */
const prof_law_t *prof_find(const profile_t *p, const char *name);
/* Add (or replace) a law; copies pts.  0 or -1 on allocation failure. */
int prof_put(profile_t *p, const prof_law_t *law);

/* Whether the profile measured the shapes a scenario running model m at TP degree tp
 * prices: the profile's model (its `model` and `tp`) is m when the names and TP degrees
 * agree, or when its gemm law's points hold every GEMM shape (n, k) m has per rank at tp
 * (models are compared by shape: the same widths under another name are the same model).
 * When they differ, one line on warn ("warning: PATH: profile measured ...", none when warn
 * is NULL) and 1; else (also for a profile that records no model) 0. */
int prof_check_model(const profile_t *p, const model_t *m, int tp, FILE *warn);

/* The envelope of law l's points: per shape column (law_shape_cols) the least and the
 * greatest value measured, in lo[] and hi[].  The number of shape columns (0: no points). */
int prof_law_range(const prof_law_t *l, double lo[PROF_MAX_COLS], double hi[PROF_MAX_COLS]);
/* `pacesim profile`'s envelope section: the shapes measured and every law's ranges. */
void prof_envelope_print(FILE *f, const profile_t *p);

/* Evaluate a law on a feature vector (ncoef values): the sum of coef[i] * feat[i], its
 * roofline pair (if any) taken as max(coef[a] feat[a], coef[b] feat[b]), its knee (if
 * any) adding coef[a] feat[a] only where feat[b] > coef[b].  Terms past ncoef are absent:
 * a law with fewer coefficients than its form prices without them. */
double prof_eval(const prof_law_t *l, const double *feat);

#endif
