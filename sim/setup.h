/* setup: the one way from a scenario file to an engine ready to run, for every command
 * that runs or checks a scenario (run, validate, rescore, bench, the GPU replay).
 *
 * setup_open() loads the scenario (with its --set overrides) and its profile, checks that
 * the profile has every law the scenario needs, builds the cost model (the profile's, or
 * the analytic stand-in when the scenario names none) and sets up the engine, which sizes
 * the KV cache, checks that every request can fit in it, opens the trace and reads its
 * first row.  Invariant: whatever setup_open() refuses, every command refuses, with the
 * same one-line message and exit status 2; whatever it accepts, `run` accepts up to its
 * first step.  `pacesim validate` is setup_open() plus setup_check_trace().
 * Ownership: the setup owns its scenario, profile, cost model and engine; setup_close()
 * frees them, also after a failed setup_open(). */
#ifndef PACESIM_SETUP_H
#define PACESIM_SETUP_H

#include <stdio.h>
#include "cost.h"
#include "engine.h"
#include "profile.h"
#include "scenario.h"

#define SETUP_ERR_MAX 1024        /* >= SCN_ERR_MAX, PROF_ERR_MAX, COST_ERR_MAX, ENG_ERR_MAX */

typedef struct setup {
    scenario_t s;
    profile_t prof;               /* valid when has_prof */
    cost_model_t *cost;           /* the profile's model, or the analytic one (owned) */
    engine_t e;                   /* set up, not yet run; priced by cost */
    char hw[96];                  /* the profile's GPU, or "analytic N TFLOP/s X TB/s" */
    int has_scn, has_prof, has_eng;
    char err[SETUP_ERR_MAX];      /* one line after a failure */
    char warn[SETUP_ERR_MAX];     /* warnings of a successful open ("" none), for the caller to print
                                     with the run's output (setup_open writes none to stderr) */
    double cost_scale;            /* every cost model it builds prices each step at this times its
                                     price (cost_scaled.h); 1: as priced (setup_open) */
} setup_t;

/* Assemble path with overrides sets[0..nsets) ("key.path=value").  0, or -1 with u->err
 * set: the input is refused (exit status 2).  Call setup_close() in both cases. */
int setup_open(setup_t *u, const char *path, const char *const *sets, int nsets);
/* The same with every step of every cost model it builds (the scenario's, its cluster pools',
 * setup_cost_new's) costing k (> 0) times its price: a uniform step-time error, the
 * scenario, its seed and its arrivals unchanged.  u->cost is then a scaled model
 * (cost_scaled_inner gives the profile's). */
int setup_open_scaled(setup_t *u, const char *path, const char *const *sets, int nsets, double k);
/* What only reading the whole trace finds (a malformed row, a request that can never fit
 * in the KV cache), with the messages a run gives when it reaches the row; a run reads
 * each row only when the previous one arrives.  0 (also with no trace), or -1 with u->err. */
int setup_check_trace(setup_t *u);
/* A second, fresh cost model like u->cost (models keep state from step to step), for a
 * second engine of the same scenario.  NULL with u->err set.  The caller frees it with
 * cost_free(), after the engines it prices. */
cost_model_t *setup_cost_new(setup_t *u);
/* The same with the error into err (SETUP_ERR_MAX bytes) and u only read: threads may
 * share u. */
cost_model_t *setup_cost_new_err(const setup_t *u, char *err);
/* A second engine of the scenario priced by cost (borrowed).  0, or -1 with e->err set;
 * engine_free(e) in both cases. */
int setup_engine(const setup_t *u, cost_model_t *cost, engine_t *e);
void setup_close(setup_t *u);

/* Messages are one line: every control character in msg (a newline or a tab in a path, a
 * byte of a binary file quoted back) becomes '?', in place (as the scenario loader's
 * messages have it), within size.  Returns msg.  setup_open() applies it to u->err; the
 * commands to whatever else they print with a user's text in it. */
char *setup_msg_line(char *msg, size_t size);
/* Print one message line to f: fmt formatted, setup_msg_line()'d, then a newline. */
void setup_msg(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A command line's options of one value, each to be given at most once (a second would drop the
 * first unsaid): once lists their names, NULL-ended, aliases joined by '|' ("-o|--out"); *seen
 * the ones met so far, one bit each (at most 32).  1 where opt is one of them met before; else
 * 0, opt marked (an option not in the list: 0, nothing marked). */
int setup_opt_twice(unsigned *seen, const char *const *once, const char *opt);
/* An option's whole-number value v (decimal, nothing around it) of at least min into *out: 0;
 * else -1 and one line on stderr, "prog: opt v: expected an integer >= min". */
int setup_opt_long(const char *prog, const char *opt, const char *v, long min, long *out);
/* --error-bars P (run's and capacity's): a percentage, 0 < P <= 50, in decimal digits ("3",
 * "2.5" or "3%"; not "0x10", "1e1", " 3") into *out: 0; else -1 and one line on stderr,
 * "prog: --error-bars: v: expected ...". */
int setup_opt_pct(const char *prog, const char *v, double *out);

#endif
