/* runner: one scenario run -- assembled by setup.h (scenario + overrides, profile, cost
 * model, engine), run, and its results kept; plus its outputs (table, CSV, steps CSV,
 * requests CSV).
 *
 * run_result_t owns copies of everything it reports, so it outlives the scenario.
 * rc: 0 ok, 2 bad input (scenario, profile, trace), 1 runtime failure (an invariant,
 * the cost model).  err holds one line for rc != 0. */
#ifndef PACESIM_RUNNER_H
#define PACESIM_RUNNER_H

#include <stdio.h>
#include "engine.h"
#include "serve.h"

#define RUN_MAX_WIN SCN_MAX_WINDOWS   /* a run reports every window its scenario may hold */

/* The table lists each replica of a cluster of at most this many; the replicas CSV every one. */
#define RUN_TABLE_REPLICAS 16

/* A replica's or a pool's load over a run: what the table's pool and replica lines, the CSV's
 * pool columns and the replicas CSV show (run_load_figures). */
typedef struct run_load {
    char pool[SCN_ID_MAX];        /* its pool's name ("" without cluster:) */
    int replica;                  /* its index in the cluster; -1: a pool (its replicas added) */
    int replicas, tp;
    long served;                  /* requests finished there */
    long prefilled;               /* requests prefilled there and handed on (disaggregated) */
    long steps, peak_waiting, adm_tokens, adm_hit_tokens;
    double rows;                  /* rows over its steps */
    double kv_blocks, kv_cap;     /* KV blocks in use at its steps' ends, summed; capacity x steps */
    double kv_peak;               /* the highest share of its KV blocks in use (a pool: its highest replica's) */
    double queue;                 /* mean waiting requests, time-weighted over the run (a pool: added) */
    double busy_s, makespan;      /* time in steps (a pool: added); the run's last step end */
} run_load_t;

/* What the lines and columns show: NAN where undefined (no step, no admitted prompt token). */
typedef struct run_load_fig {
    double mean_batch;            /* running requests per step */
    double kv_use, kv_peak;       /* mean and peak share of the KV blocks in use */
    double prefix_hit;            /* share of admitted prompt tokens taken from the prefix cache */
    double queue_mean;            /* waiting requests, time-weighted mean (per replica for a pool) */
    double busy;                  /* time in steps / makespan (per replica for a pool) */
} run_load_fig_t;
void run_load_figures(const run_load_t *l, run_load_fig_t *f);

typedef struct run_result {
    int rc;
    char err[1200];
    char path[512], name[128], profile[512], gpu[96], model[64];
    char description[512];
    char cost_model[160];         /* what priced the steps: the profile's laws or the roofline */
    long kv_blocks;               /* KV cache capacity, blocks of `block` tokens */
    /* settings that vary between runs */
    int tp, block, spec_k, budget, max_seqs, pace, pdr, smallq, anypage;
    int upstream, varlen;         /* scheduler: upstream; attention_backend: varlen */
    int dflash2;                  /* the speculative method is dflash2 (else mtp) */
    kv_dtype_t kv;
    uint64_t seed;
    double max_time_s;            /* stop.max_time_s */
    int nwin;
    char win_name[RUN_MAX_WIN][SCN_ID_MAX];
    int win_kind[RUN_MAX_WIN];
    double win_val[RUN_MAX_WIN];
    int win_has_ref[RUN_MAX_WIN];
    double win_ref[RUN_MAX_WIN];
    int win_has_dist[RUN_MAX_WIN];
    win_dist_t win_dist[RUN_MAX_WIN];   /* latency windows over all requests */
    char ref_source[256];
    /* The reference values belong to the file's configuration as written: "" while this run
     * is it, else why they are not shown (the --set/--sweep keys that changed it). */
    char ref_off[512];
    double env_outside;           /* share of step time the profile priced outside its measured
                                     envelope (cost_profile_outside_share); 0 inside or without one */
    char warn[2048];              /* the run's warnings (the cost model's envelope), printed with its output */
    run_summary_t sum;
    int has_serve;                /* serve holds the serving benchmark's summary (runner_hooks_t.summary) */
    serve_summary_t serve;
    /* a cluster: per pool (its replicas added), in the pools' order; npools 0 without one */
    int npools;
    run_load_t pools[SCN_MAX_POOLS];
    /* every replica (also the one of a run without cluster:), the first RUN_TABLE_REPLICAS of nreps kept */
    int nreps;
    run_load_t reps[RUN_TABLE_REPLICAS];
    /* disaggregated prefill/decode: the KV link and the requests' transfer times after their
     * prefill (kv_xfer_s); disagg 0 otherwise */
    int disagg, kv_layerwise;
    char kv_link[32];             /* the link preset, "" with explicit figures only */
    double kv_bw, kv_lat;         /* bytes/s, seconds */
    long xfer_n;
    double xfer_mean, xfer_p99;
    int xfer_exact;
    /* run --error-bars P: the same run with every step costing (1 - P/100) [0] and (1 + P/100)
     * [1] times its price (borrowed; NULL: none).  The table and the CSV show, beside each
     * figure, the least and the most of it over this run and those two. */
    double bars_pct;
    const struct run_result *bars[2];
} run_result_t;

/* Whether a scenario is a serving load: its requests come from a generator or a trace
 * (workload.poisson, workload.trace), so the serving summary prints by default. */
int runner_is_serving(const scenario_t *s);

/* Run one scenario file with overrides.  steps_out (may be NULL) receives one CSV row
 * per engine step (with its header).  Always fills res (rc says how it went).
 * Reentrant: several threads may run at once (each with its own res and outputs). */
void runner_run(const char *path, const char *const *sets, int nsets, FILE *steps_out, run_result_t *res);

/* Extra observers of one run (trace, progress).  Every field may be NULL.  on_step is
 * called after each engine step (after the steps CSV row); on_end once after the run
 * (also after a failed engine_run), while the engine's requests are still readable. */
typedef struct runner_hooks {
    FILE *steps_out;
    FILE *requests_out;           /* one CSV row per request (report_requests_header) */
    FILE *replicas_out;           /* one CSV row per replica after the run (report_replicas_header) */
    int no_header;                /* steps_out/requests_out get rows only (the caller wrote the header) */
    const char *row_prefix;       /* NULL, or fields written before every steps/requests row ("3,") */
    int steps_replica;            /* steps rows get the replica column without cluster: too (a sweep's
                                   * header has it: one of its runs is a cluster) */
    step_observer_fn on_step;
    void (*on_end)(void *ctx, const engine_t *e);
    void *ctx;
    /* The serving summary (serve.h): 0 for serving loads (runner_is_serving) or with goodput
     * objectives, 1 for every run, -1 for none. */
    int summary;
    const goodput_slo_t *goodput; /* NULL, or the objectives goodput is counted against */
    double cost_scale;            /* 0 or 1: as priced; else every step costs this times its price
                                     (setup_open_scaled: run --error-bars's runs) */
} runner_hooks_t;

void runner_run_ex(const char *path, const char *const *sets, int nsets, const runner_hooks_t *h,
                   run_result_t *res);

void report_table(FILE *f, const run_result_t *r);
/* The serving summary as vLLM's benchmark prints it (nothing when r has none). */
void report_serve(FILE *f, const run_result_t *r);
/* The CSV (RFC 4180): settings and summary columns, then one per window of r. */
void report_csv_header(FILE *f, const run_result_t *r);
void report_csv_row(FILE *f, const run_result_t *r);
/* The same with the given window columns (the union of several runs'): a window of r not
 * among them is left out, one r does not have is empty. */
void report_csv_header_cols(FILE *f, const char *const *wins, int nwins);
void report_csv_row_cols(FILE *f, const run_result_t *r, const char *const *wins, int nwins);
/* The columns of a run CSV after the settings and the run's counts. */
typedef struct report_cols {
    int serve;                    /* the serving summary's (vLLM's result keys), empty for a run without */
    int goodput;                  /* request_goodput and goodput_share */
    const char *const *wins;      /* the windows' */
    int nwins;
    /* NULL, or per window 1: a latency window over all requests, followed by its distribution's
     * columns NAME_n, NAME_mean, NAME_p50, NAME_p90, NAME_p99 (the table's; empty for a run
     * whose window of that name has none) */
    const int *dist;
    const char *const *pools;     /* the pools' names: after the windows, per pool the columns pool_NAME_replicas,
                                   * _served, _mean_batch, _kv_use, _kv_peak, _prefix_hit, _queue_mean, _queue_peak,
                                   * _busy (empty for a run without that pool) */
    int npools;
    /* run --error-bars P (0: none): after every other column, error_bars_pct, then COL_lo and
     * COL_hi for makespan_s, the serving summary's figures and the windows' (a latency window's
     * NAME_mean, _p50, _p90, _p99 too: run_bars_each), then amplified and amplification */
    double bars;
} report_cols_t;
void report_csv_header_ex(FILE *f, const report_cols_t *c);
void report_csv_row_ex(FILE *f, const run_result_t *r, const report_cols_t *c);
/* The figures a run with error bars (r->bars set) shows a range for, in the CSV's order:
 * fn(ctx, column, value, least, most) with c's columns; r NULL: the names alone (values NAN).
 * A figure's range is the least and the most of it over the three runs (a queue can move a
 * window either way); NAN where the run has none. */
typedef void (*run_bar_fn)(void *ctx, const char *col, double v, double lo, double hi);
void run_bars_each(const run_result_t *r, const report_cols_t *c, run_bar_fn fn, void *ctx);
/* The same over r's own columns (its windows, its serving summary's where it has one). */
void run_bars_own(const run_result_t *r, run_bar_fn fn, void *ctx);
/* The figure that moves most per 1% of step error, (most - least) / |value| / (2 P) over the
 * figures of run_bars_each with r's own columns: its column into name (n bytes) and that
 * ratio, or NAN (no figure with a value) */
double run_bars_amplification(const run_result_t *r, char *name, size_t n);
/* A CSV field: as is, or in double quotes (quotes doubled) when it holds , " CR or LF. */
void report_csv_field(FILE *f, const char *s);
/* The header line of the steps CSV and of the requests CSV, after prefix (NULL: none); the
 * steps CSV's replica column (after prefix) with replica != 0: a cluster's run. */
void report_steps_header(FILE *f, const char *prefix, int replica);
void report_requests_header(FILE *f, const char *prefix);
/* The replicas CSV: one row per replica (replica, pool, tp, served, prefilled, steps, mean_batch,
 * kv_use, kv_peak, prefix_hit, queue_mean, queue_peak, busy). */
void report_replicas_header(FILE *f, const char *prefix);
/* The kernel route of request slot req in a step's plan ("prefill-bm32", "decode-xqa/...",
 * or "?"), written into buf. */
const char *report_row_route(const route_plan_t *p, int req, char *buf, size_t n);
/* Format a double for CSV: %.6g, or empty for NAN. */
void report_num(FILE *f, double v);

#endif
