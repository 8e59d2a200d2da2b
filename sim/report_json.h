/* report_json: the runs of `pacesim run --json FILE` as one JSON document (RFC 8259).
 *
 * An array with one object per run that succeeded, in run order (the CSV's rows): the scenario,
 * file, profile, the sweep point and its swept values, the settings, the run's counts, the
 * serving summary under vLLM's result keys (`serving`, when the run has it; its goodput keys
 * when --goodput was given) and every window's value with its published value and, for a
 * latency window over all requests, its distribution.  Numbers are written with 10
 * significant digits; an undefined value is null.  Same input, same bytes. */
#ifndef PACESIM_REPORT_JSON_H
#define PACESIM_REPORT_JSON_H

#include <stdio.h>
#include "sweep.h"

/* One run's object (no separator).  sw and sel (the point's value index per axis) may be
 * NULL: no sweep; point < 0: no point. */
void report_json_run(FILE *f, const run_result_t *r, long point, const sweep_t *sw, const int *sel);
/* A JSON string literal of s. */
void report_json_string(FILE *f, const char *s);

#endif
