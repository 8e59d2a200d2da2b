/* scenario: one runnable experiment, loaded from YAML (scenarios/NAME.yaml).
 *
 * A scenario names a model, a hardware profile, engine settings (vLLM's names), the
 * reference system's env knobs, a workload (explicit requests, a Poisson generator,
 * and/or a streamed CSV trace), measurement windows, a stop rule and optional
 * published reference values.  scn_load() validates everything; after it returns 0
 * every field is in range and every request id referenced by a trigger or a window
 * exists.  Errors are one line, "file:line:col: key.path: message", written into the
 * caller's buffer; the CLI prints it and exits 2. */
#ifndef PACESIM_SCENARIO_H
#define PACESIM_SCENARIO_H

#include <stdint.h>
#include "model.h"

#define SCN_ID_MAX 48
#define SCN_PATH_MAX 512
#define SCN_ERR_MAX 1024
#define SCN_MAX_SEQS (1 << 20)       /* engine.max_num_seqs upper bound (the engine sizes arrays by it) */
/* Token and block counts are bounded so that their products (tokens of KV = blocks x block
 * size, prompt + output + lookahead, a request's blocks) stay far inside a long: 2^40 tokens
 * or blocks times a block of at most 2^20 tokens is 2^60. */
#define SCN_MAX_TOKENS     (1L << 40)  /* engine.max_model_len */
#define SCN_MAX_GPU_BLOCKS (1L << 40)  /* engine.num_gpu_blocks (the block pool: KVPOOL_MAX_BLOCKS) */
#define SCN_MAX_BLOCK_SIZE (1 << 20)   /* engine.block_size */
#define SCN_MAX_SMALLQ     1024        /* VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q: a row of q <= it is priced as
                                        * q decode rows (memory for the expansion grows with it) */
#define SCN_MAX_WINDOWS 32           /* measure windows (a run reports at most this many) */
#define SCN_MAX_POISSON 10000000L    /* workload.poisson.count upper bound (a burst queues them all) */

typedef enum { KV_FP16 = 0, KV_FP8_E5M2 = 1, KV_FP8_E4M3 = 2 } kv_dtype_t;
/* 1 for either fp8 KV dtype (one byte per element). */
static inline int kv_is_fp8(kv_dtype_t d) { return d == KV_FP8_E5M2 || d == KV_FP8_E4M3; }

/* engine.scheduler: the reference fork's step loop (block-aligned chunks for hybrid models,
 * pacing) or upstream vLLM v1's (docs/reference-system.md, "Upstream vLLM v1"). */
typedef enum { SCHED_FORK = 0, SCHED_UPSTREAM = 1 } sched_kind_t;
/* engine.mamba_cache_mode (vLLM's mamba_cache_mode): align = chunks end on block
 * boundaries so the recurrent state is cached per block; none / all: no alignment. */
typedef enum { MAMBA_ALIGN = 0, MAMBA_NONE = 1, MAMBA_ALL = 2 } mamba_mode_t;
typedef enum { POLICY_FCFS = 0, POLICY_PRIORITY = 1 } sched_policy_t;
/* engine.attention_backend: the fork's per-row routing (route.h) or one varlen call for
 * the whole batch (FlashAttention / FlashInfer style, law attn.varlen.fp16). */
typedef enum { ATTN_BACKEND_FORK = 0, ATTN_BACKEND_VARLEN = 1 } attn_backend_t;

typedef struct scn_engine {
    int max_num_batched_tokens;   /* token budget per step (2048) */
    int max_num_seqs;             /* (3 in the reference runs) */
    long max_model_len;           /* (262144) */
    int enable_prefix_caching;    /* bool */
    kv_dtype_t kv_cache_dtype;    /* "auto"/"fp16", "fp8_e5m2", "fp8"/"fp8_e4m3" */
    int tensor_parallel_size;     /* 1, 2, 4, ... */
    int block_size;               /* 0 = derive (hybrid align), else override */
    long num_gpu_blocks;          /* 0 = derive from profile memory; else override */
    double gpu_memory_utilization;/* (0.9) used when deriving num_gpu_blocks */
    /* speculative_config */
    int spec_mtp;                 /* speculative decoding on (1: method mtp or dflash2) or off (0) */
    int spec_dflash2;             /* method dflash2: a block draft model of draft_layers layers */
    int draft_layers;             /* dflash2: the draft model's layers (5) */
    int num_speculative_tokens;   /* K */
    /* scheduling (vLLM's SchedulerConfig names) */
    sched_kind_t scheduler;       /* fork (default) | upstream */
    mamba_mode_t mamba_cache_mode;/* align (default for models with GDN layers) | none | all */
    int enable_chunked_prefill;   /* bool (true) */
    long long_prefill_token_threshold; /* 0 = none (upstream: a chunk's cap) */
    int max_num_partial_prefills; /* 1 (vLLM v1 refuses any other value; no limit) */
    int max_long_partial_prefills;/* 1 (likewise) */
    sched_policy_t scheduling_policy; /* fcfs (default) | priority */
    attn_backend_t attention_backend; /* fork | varlen (default: varlen under scheduler: upstream, else fork) */
    int attention_backend_set;        /* 1: given; 0: the default above */
    /* prefix cache: the per-request count (cached_tokens, 0) or the block pool of
     * sim/kvpool.c (1: shared blocks, LRU eviction, hybrid snapshots) */
    int prefix_pool;
    long retention;               /* prefix_cache_retention_interval: -1 null (dense), 0, N */
    int retention_line, retention_col;
    int mamba_set;                /* 1: mamba_cache_mode written (else derived) */
} scn_engine_t;

typedef struct scn_env {          /* the reference system's env knobs, same spelling in YAML */
    int pace_steps;               /* VLLM_1CAT_PREFILL_PACE_STEPS (0) */
    int prefix_decode_rows;       /* VLLM_FLASH_V100_PREFILL_PREFIX_DECODE_ROWS (0) */
    int smallq_decode_max_q;      /* VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q (16) */
    int grouped_verify;           /* VLLM_FLASH_V100_GROUPED_VERIFY_MULTI_KV_HEAD (0) */
    int d256_bm32_any_page;       /* VLLM_FLASH_V100_PREFILL_D256_BM32_ANY_PAGE (0) */
} scn_env_t;

/* MTP acceptance: either a fixed mean number of accepted drafts per step (deterministic,
 * fractional parts accumulate per request) or per-position probabilities (seeded RNG:
 * draft i is accepted with p[i] if drafts 0..i-1 were). */
typedef struct scn_accept {
    int per_position;             /* 0: mean, 1: probs */
    double mean_accepted;         /* in [0, K] */
    int n_probs;
    double probs[16];             /* each in [0,1] */
} scn_accept_t;

typedef enum { TRIG_TIME = 0, TRIG_AFTER_DECODED = 1, TRIG_AFTER_EVENT = 2 } trig_kind_t;
typedef enum { EV_ARRIVAL = 0, EV_ADMITTED, EV_FIRST_TOKEN, EV_FINISHED, EV__N } req_event_t;

typedef struct scn_trigger {
    trig_kind_t kind;
    double time_s;                /* TRIG_TIME: absolute arrival time */
    char ref[SCN_ID_MAX];         /* other request's id */
    int ref_idx;                  /* its index in scenario_t.requests (-1 for TRIG_TIME) */
    long decoded;                 /* TRIG_AFTER_DECODED: when ref has emitted this many tokens */
    req_event_t event;            /* TRIG_AFTER_EVENT: when ref reaches this event */
    double delay_s;               /* added to the trigger moment */
} scn_trigger_t;

typedef struct scn_request {
    char id[SCN_ID_MAX];
    long prompt_tokens;           /* > 0 */
    long cached_tokens;           /* 0..prompt_tokens: already in the prefix cache */
    long output_tokens;           /* > 0 */
    scn_trigger_t arrival;
    long priority;                /* scheduling_policy priority: lower runs first (0) */
    int line, col;                /* where the request is written (for engine-time messages) */
    /* shared content (engine.prefix_cache_model: pool): the prompt starts with the first
     * prefix_tokens tokens of the named prefix (two requests naming it share
     * min(their prefix_tokens)); or, follows >= 0, with an earlier request's whole prompt
     * and output (a conversation's next turn).  The rest of the prompt is its own. */
    char prefix[SCN_ID_MAX];      /* "" none */
    long prefix_tokens;
    int follows;                  /* index of an earlier request, or -1 */
} scn_request_t;

typedef enum { DIST_FIXED = 0, DIST_UNIFORM, DIST_LOGNORMAL, DIST_EXPONENTIAL } dist_kind_t;
typedef struct scn_dist {
    dist_kind_t kind;                 /* draws go through scn_dist_round() */
    double a, b;                  /* fixed: a; uniform: [a,b]; lognormal: mu=a sigma=b (of ln); exponential: mean a */
    long min, max;                /* clamp (max 0 = none) */
} scn_dist_t;

typedef struct scn_poisson {
    int enabled;
    double rate_per_s;            /* > 0 */
    long count;                   /* requests to generate (1..SCN_MAX_POISSON) */
    double start_s;
    scn_dist_t prompt, output, cached_frac; /* cached_frac in [0,1] of the prompt */
    /* prefix groups (prefix_cache_model: pool): a share of the requests starts with the
     * first prefix_tokens tokens of one of prefix_groups prefixes, drawn uniformly */
    long prefix_groups, prefix_tokens;
    double prefix_share;
    /* conversations (pool): each generated request is the first of conv_turns turns; a
     * later turn arrives an exponential time of mean conv_think_s after the last one
     * finished, its prompt that turn's prompt and output then a new prompt draw */
    long conv_turns;
    double conv_think_s;
} scn_poisson_t;

typedef enum {
    WIN_RATE = 0,    /* tokens emitted by `request` per second over [from, to] */
    WIN_DURATION,    /* seconds between from and to */
    WIN_TTFT,        /* first token - arrival, of `request` or mean over all ("*") */
    WIN_TPOT,        /* (finish - first token) / (output - 1), vLLM benchmark's definition */
    WIN_ITL,         /* mean inter-token latency of `request` (or all) */
    WIN_STEPS,       /* number of steps of `step_type` within [from, to] */
    WIN_TOKENS,      /* tokens emitted by `request` within [from, to] */
    WIN_THROUGHPUT,  /* total emitted tokens / makespan */
    WIN_E2E,         /* finished - arrival, of `request` or over all ("*") */
    WIN_QUEUEING,    /* first admission - arrival, of `request` or over all ("*") */
    WIN_PREFIX_HIT,  /* prompt tokens from the prefix cache / prompt tokens, of `request`'s last
                      * admission or over every admission ("*") */
    WIN_EVICTIONS,   /* cached blocks the block pool evicted over the run (prefix_cache_model: pool) */
    WIN__N
} win_kind_t;

/* What a latency window (ttft, tpot, itl, e2e, queueing) reports over its requests. */
typedef enum { STAT_MEAN = 0, STAT_P50, STAT_P90, STAT_P99, STAT__N } win_stat_t;

typedef enum { STEP_ANY = 0, STEP_DECODE_ONLY, STEP_MIXED, STEP_PREFILL_ONLY } step_type_t;

typedef struct scn_mark {         /* a moment: request `ref` reaches `event` (or run start/end) */
    int is_set;                   /* 0: unbounded (run start for from, run end for to) */
    char ref[SCN_ID_MAX];
    req_event_t event;
} scn_mark_t;

typedef struct scn_window {
    char name[SCN_ID_MAX];
    win_kind_t kind;
    char request[SCN_ID_MAX];     /* "" or "*" = all requests where the kind allows */
    step_type_t step_type;
    win_stat_t stat;              /* latency kinds: mean (default) or a percentile */
    scn_mark_t from, to;
    int has_reference;
    double reference;             /* published value (reference: block) */
} scn_window_t;

typedef enum { STOP_ALL_FINISHED = 0, STOP_AT_EVENT = 1 } stop_kind_t;
typedef struct scn_stop {
    int kind;                     /* stop_kind_t: all requests finished, or request ref reaches event */
    char ref[SCN_ID_MAX];
    req_event_t event;
    double max_time_s;            /* safety limit (0 = none); reaching it is reported */
    long max_steps;               /* (0 = none) */
} scn_stop_t;

/* cluster: routers (sim/router.c; one function each) */
typedef enum { ROUTER_ROUND_ROBIN = 0, ROUTER_RANDOM, ROUTER_LEAST_OUTSTANDING, ROUTER_LEAST_KV,
               ROUTER_PREFIX_AFFINITY, ROUTER_SESSION, ROUTER__N } router_kind_t;
/* a pool's part in disaggregated serving: both (prefill and decode), prefill, decode */
typedef enum { ROLE_BOTH = 0, ROLE_PREFILL, ROLE_DECODE } pool_role_t;

#define SCN_MAX_POOLS 16
#define SCN_MAX_REPLICAS 4096

struct scenario;
typedef struct scn_pool {
    char name[SCN_ID_MAX];
    int count;                    /* replicas (>= 1) */
    pool_role_t role;
    struct scenario *s;           /* its own scenario: the base one with the pool's model, profile,
                                     hardware and engine (owned; shares the base's requests and windows) */
    int line, col;
} scn_pool_t;

typedef struct scn_cluster {
    int enabled;                  /* 0: no cluster: key (one replica) */
    router_kind_t router;
    double router_latency_s;      /* a routing decision's latency (0) */
    long balance_abs;             /* prefix_affinity: imbalanced when max - min load > this (32) ... */
    double balance_rel;           /* ... and max load > this x min load (1.0001) (SGLang's defaults) */
    int n_pools;
    scn_pool_t pools[SCN_MAX_POOLS];
    int disaggregated;            /* a prefill pool and a decode pool */
    const struct hw_link *kv_link;/* kv_transfer.link (hwcat.h) */
    double kv_bandwidth, kv_latency_s; /* the link's figures (or kv_transfer's own) */
    int kv_layerwise;             /* 1: the transfer overlaps the prefill, layer by layer */
    int line, col;
} scn_cluster_t;

typedef struct scenario {
    char path[SCN_PATH_MAX];
    char name[128];
    char description[512];
    uint64_t seed;
    model_t model;
    char model_path[SCN_PATH_MAX];     /* "" when inline */
    char profile_path[SCN_PATH_MAX];   /* resolved relative to the scenario file's dir, then cwd */
    /* hardware: {analytic: {tflops: X, tbps: Y}}: a roofline stand-in for a profile
     * (profile_path may then be ""). */
    int analytic;                      /* 1: hardware.gpu or hardware.analytic prices the run */
    double analytic_tflops, analytic_tbps, analytic_mem_gib; /* hardware.analytic (mem_gib 0: not given) */
    const struct hw_gpu *gpu;          /* hardware.gpu: the catalogue's (hwcat.h), or NULL */
    const struct hw_link *link;        /* hardware.link (hwcat.h), or NULL: the GPU's own */
    double hw_mem_gib;                 /* memory per GPU without a profile: the GPU's, analytic.mem_gib, or 0 */
    scn_engine_t engine;
    scn_env_t env;
    scn_accept_t accept;
    int n_requests;
    scn_request_t *requests;           /* owned */
    int *req_by_id;                    /* owned: open-addressing table of request indices by id */
    unsigned req_by_id_mask;           /* its size - 1 (a power of two, at least 2 x n_requests) */
    scn_poisson_t poisson;
    int poisson_line, poisson_col;     /* where workload.poisson is written */
    int engine_line, engine_col;       /* where engine is written (1:1 when absent) */
    char trace_path[SCN_PATH_MAX];     /* CSV: arrival_s,prompt_tokens,output_tokens,cached_tokens */
    int n_windows;
    scn_window_t *windows;             /* owned */
    scn_stop_t stop;
    char reference_source[256];        /* where the reference values come from */
    scn_cluster_t cluster;             /* cluster: (enabled 0: one replica) */
    int shared;                        /* 1: a pool's copy (its arrays belong to the base scenario) */
} scenario_t;

/* Load and validate.  overrides: n strings "key.path=value" applied on top of the
 * file (errors name "--set key.path").  Returns 0, or -1 with err filled.  On success
 * the caller owns *out and frees it with scn_free(). */
int scn_load(const char *path, const char *const *overrides, int n_overrides,
             scenario_t *out, char err[SCN_ERR_MAX]);
void scn_free(scenario_t *s);

/* Load a model YAML file (models/NAME.yaml) on its own. */
int scn_load_model(const char *path, model_t *out, char err[SCN_ERR_MAX]);

/* The files the scenario reads (its model, profile and trace, each pool's model), those set:
 * their count, in in[] (pointers into s).  An output over one would empty it before it is read. */
#define SCN_MAX_INPUTS (3 + SCN_MAX_POOLS)
int scn_input_files(const scenario_t *s, const char *in[SCN_MAX_INPUTS]);

/* Index of the explicit request with this id, or -1 (constant time). */
int scn_find_request(const scenario_t *s, const char *id);
/* Where stop.max_time_s (above limit) lets the run reach them: 1 if the Poisson arrivals pass
 * limit (s) with a probability above 1e-9, 2 if a conversation's later turns can, with that
 * probability in *prob; 0 neither (scenario.c checks it at load against the clock's 1e7 s, the
 * engine against an earlier limit its shortest step sets). */
int scn_clock_risk(const scenario_t *s, double limit, double *prob);

/* Output tokens request i emits: output_tokens, cut at engine.max_model_len (vLLM's
 * finish reason "length"; at least 1). */
long scn_request_output(const scenario_t *s, int i);

/* A drawn value x as a token count within d's clamps: rounded, then at least d->min (and
 * 1) and at most d->max when set; a value past LONG_MAX (a huge lognormal draw) or +inf
 * saturates to the upper clamp instead of wrapping, NaN gives the lower one. */
long scn_dist_round(const scn_dist_t *d, double x);

const char *scn_event_name(req_event_t e);
const char *scn_step_type_name(step_type_t t);
/* "mean", "p50", "p90", "p99"; and the quantile of a percentile (NAN for the mean). */
const char *scn_stat_name(win_stat_t t);
double scn_stat_quantile(win_stat_t t);
/* 1 for the latency kinds (ttft, tpot, itl, e2e, queueing): per request, with a stat. */
int scn_win_is_latency(win_kind_t k);

#endif
