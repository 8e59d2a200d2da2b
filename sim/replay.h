/* replay: price a scenario's steps by running them on the GPU (pacesim replay --gpu).
 *
 * The GPU cost model runs, for every step, exactly the items cost_enumerate() lists --
 * each attention call of the routed plan with this repo's kernels over a real paged KV
 * cache (every request's pages are its own blocks of one pool, so a request's expanded
 * decode rows share their pages as in the engine, and each layer of a call reads pages of
 * its own, as the engine's per-layer caches are read), the GEMMs of the model's per-rank
 * shapes through cuBLAS, the GDN and elementwise proxies -- each item `count` times back
 * to back between CUDA events.  The measured time advances the clock.  Beside it the
 * profile model prices the same step, so prediction and measurement differ only in the
 * pricing.  What no kernel can measure (the engine's host overhead, "step"; the
 * all-reduce at TP > 1) is taken from the profile and reported as such.
 * Built only with nvcc (bin/pacesim-gpu); the CPU build never sees it. */
#ifndef PACESIM_REPLAY_H
#define PACESIM_REPLAY_H

#include <stdio.h>
#include "cost.h"
#include "engine.h"
#include "stamp.h"          /* replay_stamp_t, replay_stamp_mhz: --step-clock's stamps */

typedef struct replay_rec {       /* one step */
    long no;
    int type;                     /* step_type_t */
    double predicted, measured;   /* seconds (measured includes the profile's step overhead) */
    double pred_attn, meas_attn;
    double clock_mhz, power_w;    /* means over the step's wall time (NAN: not sampled) */
    unsigned long long clock_why; /* NVML clock-event (throttle) reasons seen during it */
    /* back to back (pacesim-gpu replay --back-to-back): the step's items queued on one stream,
     * one host synchronisation; measured = span - reprep + the profile's overhead (and all-reduce) */
    int b2b;                      /* 1: the five below are recorded (the --steps file has them) */
    double span;                  /* first item's start event to the last item's end event (s) */
    double items_sum;             /* the items' own event times summed (s): span - items_sum = gaps */
    double wall;                  /* host clock from the first launch to the step's synchronisation (s) */
    double reprep;                /* the GPU's gaps in the span before items re-prepared inside the
                                     step (a replay artifact: left out of measured) (s) */
    double gap;                   /* the GPU's time from the last step's last end event to this step's
                                     first start event: the card idle while the host prepared the
                                     step, besides untimed preparation work (s; 0 for the first step) */
    /* pacesim-gpu replay --step-clock: the SM clock over the step itself, from stamps on the GPU
     * (replay_stamp_mhz) */
    int step_clk;                 /* 1: step_mhz is recorded (the --steps file has sm_mhz_step) */
    double step_mhz;              /* the step's mean SM clock (MHz; NAN: no SM stamped at both ends) */
    unsigned long long shape;     /* the step's work (replay_step_shape): two runs' steps of one
                                     shape ran the same kernels (0: not known) */
    /* pacesim-gpu replay --back-to-back --layer-order: the items queued layer by layer */
    int lo;                       /* 1: --layer-order was given (the --steps file has layer_order) */
    int layered;                  /* 1: this step ran layer by layer; 0: in item order (items in
                                     some layers only: replay_layer_count) */
} replay_rec_t;

/* A fingerprint of a step's work: its tokens, rows, decode rows, sampled positions and every
 * attention call's rows (q, context).  Two runs of a scenario schedule the same steps until
 * their step times first order an event differently; rescore pairs their steps up to there. */
unsigned long long replay_step_shape(const cost_step_t *in);


typedef struct replay_log {      /* the steps so far */
    replay_rec_t *rec;
    long n, cap;
} replay_log_t;

typedef struct replay_stats {    /* one step type's errors, |predicted / measured - 1| */
    long n;
    double predicted, measured;   /* summed seconds */
    double median, max;
    double pred_attn, meas_attn;  /* the steps' attention items, summed seconds */
} replay_stats_t;

/* Append a record.  0, or -1 out of memory. */
int replay_log_add(replay_log_t *log, const replay_rec_t *r);
/* The errors of the steps of one type (step_type_t).  0, or -1 out of memory. */
int replay_stats(const replay_rec_t *rec, long n, int type, replay_stats_t *st);
/* The report: per step type the median and max error; per measurement window the
 * predicted run's value (ep) beside the measured run's (eg).  0, or -1 out of memory. */
int replay_report(FILE *f, const scenario_t *s, const char *file, const char *gpu, const replay_rec_t *rec, long n,
                  const engine_t *ep, const engine_t *eg);
/* Every step as a CSV row (the --steps file `pacesim rescore` reads back) to f, which the
 * caller opened (outfile_open: no hang on a FIFO without a reader) and this closes (stdout
 * flushed).  Records of a back-to-back replay (rec[0].b2b) add the columns gpu_span_s,
 * items_sum_s, wall_s, reprep_s and gap_s (the reader reads gap_s and reprep_s); records with
 * the step's own clock (rec[0].step_clk) add sm_mhz_step last.  0, or -1 a write error (errno
 * says why). */
int replay_steps_csv(FILE *f, const replay_rec_t *rec, long n);

/* A replay's cost model around impl: name (static), step, destroy (frees impl and the
 * model).  NULL out of memory (impl is then the caller's to free). */
typedef int (*replay_step_fn)(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *out);
cost_model_t *replay_model_new(const char *name, void *impl, replay_step_fn step, void (*destroy)(cost_model_t *cm));

/* The recorded model (pacesim rescore): step i costs what a replay's --steps file says
 * step i measured, and pred (borrowed) prices it beside; a step whose type differs from
 * the recording's, or one past its end, is an error (not the recorded scenario).  NULL
 * with err filled ("file:line: ..." for a malformed file). */
cost_model_t *replay_recorded_new(const char *csv, cost_model_t *pred, char err[COST_ERR_MAX]);
/* Where the run so far does not match the recording (its steps' types; their count too where
 * the run ended, ended 1): "file:line:col: type|step: ...: not the recorded scenario (...)" in buf (a
 * bad input, exit 2), or NULL when every step matched. */
const char *replay_recorded_mismatch(const cost_model_t *cm, int ended, char *buf, size_t size);
/* Its records so far, and how many steps the file holds. */
const replay_rec_t *replay_recorded_records(const cost_model_t *cm, long *n, long *nrecorded);
/* The recording's SM clock per step (its sm_clock_mhz column; NAN where it has none) and,
 * for the steps priced so far, the clock pred's heat state stood for (cost.h:
 * cost_profile_model_clock; NAN beyond them or without the probes).  Returns the steps
 * recorded; the arrays are the model's. */
long replay_recorded_clocks(const cost_model_t *cm, const double **recorded, const double **model);
/* 1 where the recording has the sm_mhz_step column (pacesim-gpu replay --step-clock: each step's
 * SM clock over the step itself, stamped on the GPU; NVML's sm_clock_mhz mostly reads an earlier
 * step's), else 0.  replay_recorded_use_step_clock then makes replay_recorded_clocks return
 * that column (NAN where a step has none) instead of sm_clock_mhz; -1 (nothing changed) where the
 * recording lacks it. */
int replay_recorded_has_step_clock(const cost_model_t *cm);
/* A recording's queue order (its layer_order column, pacesim-gpu replay --layer-order): 1 and
 * *layered the steps run layer by layer, *steps all its steps; 0 (*layered 0) where the file
 * has no such column: each step's items queued with their layers together, or item by item. */
int replay_recorded_layer_order(const cost_model_t *cm, long *layered, long *steps);
int replay_recorded_use_step_clock(cost_model_t *cm);
/* The recording's GPU idle before each step (its gap_s column, seconds: a back-to-back
 * replay's time from the previous step's last kernel to this step's first; plus its reprep_s,
 * where recorded: the idle that re-preparations left inside the step, counted before it).  Returns the
 * steps recorded, *gap the model's array; 0 and NULL when the recording has no such column. */
long replay_recorded_gaps(const cost_model_t *cm, const double **gap);
/* 1 where two recordings hold the same steps (types) with the same measured times: one GPU
 * run given twice (its other columns edited or not), whose spread would be 0; else 0. */
int replay_recorded_same(const cost_model_t *a, const cost_model_t *b);

/* The engine keeps a KV cache per layer, so a call's later layers never find its KV in
 * L2 (the GEMMs between them stream far more than L2 holds).  The GPU replay runs a call's
 * `reps` layers over page sets of their own: as many sets as make 3x the L2 together (calib's
 * rule for its attention points), at least 1, at most reps and REPLAY_MAX_SETS. */
#define REPLAY_MAX_SETS 64
int replay_layer_sets(double call_kv_bytes, double l2_bytes, int reps);
/* The sets as views of one pool of nblocks: a call's block table holds ids below *limit, and
 * set s reads the pool from block s * *stride on (the same table, other memory), so
 * (nsets - 1) * stride + limit <= nblocks and limit >= nblocks / 2.  Returns the number of
 * sets the pool allows (nsets, or 1 when it has fewer than 2 * nsets blocks: then stride 0). */
int replay_layer_views(long nblocks, int nsets, long *stride, long *limit);

/* --layer-order (pacesim-gpu replay --back-to-back --layer-order): a step's items queued as a
 * forward pass runs them, layer by layer.  reps[i]: item i's runs in the step (0: no GPU work).
 * The layers: the most runs any item has; the items run that many times go layer by layer
 * (each layer's in item order), one run once (lm_head) after them.  0 when no item has GPU
 * work; -1 when an item runs in some layers only (more than once, fewer than the layers: a
 * hybrid model's attention or GDN layers), whose place among the layers the items do not say:
 * such a step runs in item order. */
int replay_layer_count(const int *reps, int n);
/* Each item's seconds from the events lo_run records: an item of the layers gets the layers'
 * span `block` shared as its launch in the middle layer shares that layer's time (sample[i],
 * the event pair around it; the layers' items all run once a layer on the same batch); an item
 * after the layers keeps its own span (after[i]); an item without GPU work (reps 0) keeps sec[i].
 * A middle layer of no measurable time (every sample 0) shares the block equally. */
void replay_layer_share(const int *reps, int n, int layers, const double *sample, const double *after,
                        double block, double *sec);

/* --back-to-back: a step's grouped MoE GEMMs (a layer's gate_up and down, the MTP passes' at
 * their own token counts) each kept prepared in a slot of its own in the GPU timer (calib.h:
 * calib_job_t.slot; REPLAY_MOE_SLOTS is CALIB_MOE_SLOTS), so that every item of a step is
 * prepared before the first one is launched.  One shape twice in a step shares its slot. */
#define REPLAY_MOE_SLOTS 8
typedef struct replay_moe_slots {
    double key[REPLAY_MOE_SLOTS][6];   /* tokens, experts, topk, skew, n, k */
    int n;                             /* slots taken this step (the caller sets 0 for the next) */
} replay_moe_slots_t;
/* The slot of a grouped GEMM of shape key in this step: the one an identical key took (*fresh
 * 0), else the next one (*fresh 1); -1 when all REPLAY_MOE_SLOTS hold other shapes. */
int replay_moe_slot(replay_moe_slots_t *s, const double key[6], int *fresh);

/* The GPU model; pred (borrowed, may be NULL) prices each step beside it.  page and
 * kv are the engine's block size and KV dtype.  NULL with err filled (no GPU, ...). */
cost_model_t *replay_gpu_new(const model_t *m, int tp, int page, int kv_fp8, cost_model_t *pred,
                             char err[COST_ERR_MAX]);
/* Log every item of every step to f (CSV: step, type, law, shape a..d, count, the
 * profile's seconds, the GPU's seconds, 1 if measured points priced it); the model
 * closes f.  Items of the step overhead and all-reduce (not measured) are left out. */
void replay_items_log(cost_model_t *cm, FILE *f);
/* The per-step records so far (owned by the model). */
const replay_rec_t *replay_records(const cost_model_t *cm, long *n);

#endif
