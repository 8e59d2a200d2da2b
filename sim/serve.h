/* serve: the serving benchmark's summary of a run, as vLLM's benchmark prints it, and goodput.
 *
 * What `vllm bench serve` (benchmark_serving.py) reports, over the requests that finished
 * (its "successful requests"), computed as vllm-project/vllm:vllm/benchmarks/serve.py@009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1
 * (calculate_metrics, check_goodput_args, parse_goodput) computes it:
 *   - duration: the benchmark's wall time; here the simulated time of the run's last step end
 *     (the run starts at 0, the first arrival at or after it);
 *   - request throughput = finished / duration; input, output and total token throughput =
 *     the finished requests' prompt tokens, output tokens and their sum / duration
 *     (vLLM prints no input throughput; it is input / duration here);
 *   - TTFT = first token - arrival; TPOT = (finished - first token) / (output - 1) over the
 *     requests with output > 1; ITL = every gap between two token emissions of a request (one
 *     step that emits several tokens, MTP's accepted drafts, is one gap, as one streamed chunk);
 *     E2EL = finished - arrival.  Mean, median and the 99th percentile (numpy's linear
 *     interpolation, quant.h), printed in ms;
 *   - goodput, with service level objectives `ttft:MS tpot:MS e2el:MS` (any subset, each >= 0):
 *     a finished request is good when every objective given holds, value <= objective (vLLM's
 *     `s >= r`), its TPOT counting as 0 when it has one output token (vLLM's all_tpots);
 *     request goodput = good requests / duration, and the share of good among the finished.
 * Requests not finished at the stop (max_time_s, max_steps) are not counted, as vLLM counts
 * failed requests out; ITL takes their gaps too (a gap is recorded as it happens). */
#ifndef PACESIM_SERVE_H
#define PACESIM_SERVE_H

#include <stddef.h>

/* Service level objectives in milliseconds; a negative value: no objective on that metric. */
typedef struct goodput_slo {
    double ttft_ms, tpot_ms, e2el_ms;
} goodput_slo_t;

#define GOODPUT_SLO_NONE ((goodput_slo_t){ -1.0, -1.0, -1.0 })

/* Add one "KEY:MS" pair (vLLM's --goodput syntax: ttft, tpot or e2el, a finite number >= 0
 * of milliseconds) to *slo; a key given again replaces its value.  0, or -1 with err set. */
int goodput_slo_parse(goodput_slo_t *slo, const char *pair, char *err, size_t errn);
/* 1 when at least one objective is set. */
int goodput_slo_any(const goodput_slo_t *slo);
/* "ttft <= 500 ms, tpot <= 50 ms" into buf. */
const char *goodput_slo_text(const goodput_slo_t *slo, char *buf, size_t n);

/* vLLM's rule for one finished request (latencies in seconds; tpot_s is 0 for a request with
 * one output token): 1 good, 0 not. */
int metrics_goodput_good(const goodput_slo_t *slo, double ttft_s, double tpot_s, double e2el_s);

/* One finished request's latencies (seconds), for metrics_goodput. */
typedef struct goodput_req {
    double ttft_s, tpot_s, e2el_s;    /* tpot_s: 0 with one output token */
} goodput_req_t;

typedef struct goodput {
    long completed, good;
    double share;                     /* good / completed (NAN with none finished) */
    double req_s;                     /* request goodput: good / duration (NAN with duration <= 0) */
} goodput_t;

/* Goodput of n finished requests over duration_s: each judged by metrics_goodput_good. */
goodput_t metrics_goodput(const goodput_slo_t *slo, const goodput_req_t *reqs, long n, double duration_s);
/* The same from counts already made (the engine judges each request as it finishes). */
goodput_t metrics_goodput_counts(long good, long completed, double duration_s);

/* One latency metric's statistics in seconds (NAN where there is no value). */
typedef struct serve_stat {
    long n;
    double mean, median, p90, p99;
    int exact;                        /* 1 exact; 0 quant.h's sketch (QUANT_REL_ERR) */
} serve_stat_t;

enum { SERVE_TTFT, SERVE_TPOT, SERVE_ITL, SERVE_E2EL, SERVE__N };

typedef struct serve_summary {
    long completed;                   /* finished requests */
    long input_tokens, output_tokens; /* theirs: prompt tokens (cached ones too), output tokens */
    double duration_s;
    double req_s, input_tok_s, output_tok_s, total_tok_s;
    serve_stat_t lat[SERVE__N];
    int has_goodput;
    goodput_slo_t slo;
    goodput_t goodput;
} serve_summary_t;

/* The metrics' names as vLLM spells them in its result keys and printout. */
const char *serve_metric_key(int m);      /* "ttft", "tpot", "itl", "e2el" */
const char *serve_metric_name(int m);     /* "TTFT", ... */

/* The running state of one run (the engine feeds it; engine.h's e->serve). */
typedef struct serve_acc serve_acc_t;
struct req;
/* NULL when out of memory.  slo may be NULL (no goodput). */
serve_acc_t *serve_acc_new(const goodput_slo_t *slo);
/* A request finished / a token gap went by.  0, or -1 out of memory. */
int serve_acc_finish(serve_acc_t *a, const struct req *r);
int serve_acc_itl(serve_acc_t *a, double gap_s);
/* The summary over a run of duration_s. */
void serve_acc_summary(serve_acc_t *a, double duration_s, serve_summary_t *out);
void serve_acc_free(serve_acc_t *a);

#endif
