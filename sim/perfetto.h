/* perfetto: the simulated timeline of one run in Chrome Trace Event format (JSON), for
 * Perfetto (ui.perfetto.dev) and chrome://tracing.
 *
 * pid 1 is the run (a cluster: pid 1+k is replica k, "NAME: replica k (pool P)", each with
 * the tracks below for its own steps and the requests it ran; a request handed from one
 * replica to another has its track in both).  tid 0, "engine": one "X" slice per engine step (name = step type;
 * args: step, rows, tokens, preempted, the cost breakdown, and per row the request, phase,
 * q, context, route and tokens emitted), plus "C" counters (KV blocks, running, waiting).
 * tid 1+serial, one per request, named by its id: "queued" (arrival, preemption or a
 * hand-off to another replica to admission), "prefill" (first chunk start to last chunk end) with one nested "chunk"
 * slice per scheduled chunk, and "decode" (first decode step start to last step end).
 * Times are integer nanoseconds printed as microseconds with 3 decimals, so a child slice
 * always nests exactly inside its parent.  Events stream to the file as the run goes;
 * the per-request state is one small entry per request serial. */
#ifndef PACESIM_PERFETTO_H
#define PACESIM_PERFETTO_H

#include <stdio.h>
#include "runner.h"

typedef struct perfetto perfetto_t;

/* Open path for writing ("-" = stdout); NULL with err set.  Fill hooks with
 * trace_hooks, run, then trace_close (which frees the trace). */
perfetto_t *perfetto_open(const char *path, char *err, size_t errn);
void perfetto_hooks(perfetto_t *t, runner_hooks_t *h);
/* Finish the JSON and close the file; 0, or -1 on a write error (message on stderr). */
int perfetto_close(perfetto_t *t);

/* Write s as a JSON string literal (quotes included). */
void perfetto_json_str(FILE *f, const char *s);

#endif
