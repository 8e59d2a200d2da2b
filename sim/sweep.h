/* sweep: run the cartesian product of swept scenario keys over one or more scenario
 * files on a pool of threads, and report every point in index order.
 *
 * A job is (file, point); job j = file_index * npoints + point, and points enumerate the
 * axes like nested loops (the first --sweep is the outermost).  Jobs run in any order on
 * any thread, but tables, CSV rows, steps rows and error lines are written strictly in
 * job order by one thread, so the output depends on the inputs only, never on -j.
 * The CSV of a sweep is runner's CSV with a leading `point` column (global index) and one
 * column per swept key, named by its key path.
 *
 * The objective (`max:COL` / `min:COL` under constraints `COL<=1.10*base`) reads CSV
 * rows, so it works on a live sweep and on a merged CSV alike (see sweep_best_*). */
#ifndef PACESIM_SWEEP_H
#define PACESIM_SWEEP_H

#include <stdio.h>
#include "runner.h"

#define SWEEP_KEY_MAX 256
#define SWEEP_ERR_MAX 512

typedef struct sweep_axis {
    char key[SWEEP_KEY_MAX];      /* scenario key path, e.g. env.VLLM_1CAT_PREFILL_PACE_STEPS */
    int n;
    char **vals;                  /* owned, n strings */
} sweep_axis_t;

typedef struct sweep {
    int naxes;
    sweep_axis_t *axes;           /* owned */
} sweep_t;

/* Expand a value list: comma-separated items, each a literal or an integer range
 * "A..B" (step 1, or -1 when B < A) or "A..B:S" (S > 0, stepping towards B; B is
 * included only when reached).  An item with ".." whose ends are not integers is a
 * literal.  On success *vals (caller frees with sweep_free_values) holds *n >= 1 values;
 * -1 with err set on an empty item, a bad step or more than 100000 values. */
int sweep_values(const char *list, char ***vals, int *n, char *err, size_t errn);
void sweep_free_values(char **vals, int n);

/* Add an axis from "key.path=LIST"; 0, or -1 with err set (no '=', empty key, bad
 * list, key swept twice). */
int sweep_add(sweep_t *sw, const char *spec, char *err, size_t errn);
/* Points in the product (1 with no axes). */
long sweep_npoints(const sweep_t *sw);
/* Value index per axis of point p (sel has naxes entries). */
void sweep_point(const sweep_t *sw, long p, int *sel);
/* Releases the axes (sw itself is the caller's). */
void sweep_free(sweep_t *sw);

/* One `pacesim run` over files x points. */
typedef struct sweep_cfg {
    const char *const *files;
    int nfiles;
    const char *const *sets;      /* --set overrides; the point's assignments come after them */
    int nsets;
    const sweep_t *sw;            /* NULL or no axes: plain runs, runner's CSV unchanged */
    long point_base;              /* `point` of job 0 (a single point of a distributed sweep) */
    int jobs;                     /* threads (>= 1) */
    FILE *table;                  /* NULL: quiet */
    FILE *csv;                    /* NULL: no CSV */
    FILE *steps;                  /* NULL: no steps CSV */
    FILE *requests;               /* NULL: no requests CSV (one row per request) */
    FILE *err;                    /* error lines (stderr) */
    FILE *best;                   /* where the objective's answer goes */
    int progress;                 /* draw a progress bar on stderr */
    const runner_hooks_t *hooks;  /* extra observers; only with exactly one job */
    const char *objective;        /* NULL, or "max:COL" / "min:COL" */
    const char *const *constraints;
    int nconstraints;
} sweep_cfg_t;

/* Run everything; returns the worst run's rc (0 ok, 1 runtime, 2 bad input), or 2 on
 * a bad objective/constraint or hooks with several jobs (checked before any run). */
int sweep_run(const sweep_cfg_t *cfg);

/* -- the objective over CSV rows ------------------------------------------------- */
typedef struct sweep_best sweep_best_t;

/* Parse objective and constraints; NULL with err set on bad syntax.  Constraint:
 * COL OP RHS, OP one of <= < >= >, RHS a number, `base`, `K*base`, `base*K`,
 * `base+K` or `base-K`; base is COL's value in the base row of the same group (the
 * group's first row: with the CSV in point order, the point where every swept key has
 * its first value).  A group is one scenario file (the `file` column).  A column name
 * that occurs twice (e.g. mixed_steps, a summary column and a window) means the last
 * one (the window).  Rows with an empty (n/a) value in a used column never win. */
sweep_best_t *sweep_best_new(const char *objective, const char *const *cons, int ncons, char *err, size_t errn);
/* Feed the CSV header line, then each row (with or without the newline).  -1 with
 * err set when a named column is missing. */
int sweep_best_header(sweep_best_t *b, const char *line, char *err, size_t errn);
void sweep_best_row(sweep_best_t *b, const char *line);
/* Print the winner of each group; returns the number of groups without a winner. */
int sweep_best_report(const sweep_best_t *b, FILE *f);
void sweep_best_free(sweep_best_t *b);

/* Join CSVs written by single points of a sweep (pacesim merge): the header once
 * (every non-empty file must carry the same one), then the rows, sorted by the
 * `point` column when the header starts with it (stable; input order otherwise).
 * Empty files (a failed point) are skipped with a warning on err.  0 ok, 1 when a
 * file was empty or unreadable, 2 on mismatched headers. */
int sweep_merge(const char *const *paths, int n, FILE *out, FILE *err);

#endif
