/* sweep: run the cartesian product of swept scenario keys over one or more scenario
 * files on a pool of threads, and report every point in index order.
 *
 * A job is (file, point); job j = file_index * npoints + point, and points enumerate the
 * axes like nested loops (the first --sweep is the outermost).  Jobs run in any order on
 * any thread, but tables, CSV rows, steps rows and error lines are written strictly in
 * job order by one thread, so the output depends on the inputs only, never on -j.
 * The CSV of a sweep is runner's CSV with a leading `point` column (global index) and one
 * column per swept key, named by its key path.  Its window columns are the union of every
 * run's windows, known before the first run (from the scenarios as loaded), so several
 * runs write one header and rows of its width, empty where a run lacks a window; likewise
 * the cluster pools' columns after them.  The
 * steps, requests and replicas CSVs of several runs have one header and lead with `run` (the job
 * index, 0-based, in output order) and, in a sweep, `point`.  CSV is RFC 4180: a field holding a comma,
 * a quote or a line break is quoted on write (sweep_csv_field) and unquoted on read.
 * Every output stream is flushed and checked at the end: a write error is a failure
 * (rc 1), never a silently short file.
 *
 * The objective (`max:COL` / `min:COL` under constraints `COL<=1.10*base`) reads CSV
 * rows, so it works on a live sweep and on a merged CSV alike (see sweep_best_*). */
#ifndef PACESIM_SWEEP_H
#define PACESIM_SWEEP_H

#include <stdio.h>
#include "runner.h"

#define SWEEP_KEY_MAX 256
#define SWEEP_ERR_MAX 512
#define SWEEP_RECORD_MAX (1L << 20)          /* longest CSV record merge and best read */
#define SWEEP_RECORD_MAX_TEXT "1 MiB"

typedef struct sweep_axis {
    char key[SWEEP_KEY_MAX];      /* scenario key path, e.g. env.VLLM_1CAT_PREFILL_PACE_STEPS */
    int n;
    char **vals;                  /* owned, n strings */
} sweep_axis_t;

typedef struct sweep {
    int naxes;
    sweep_axis_t *axes;           /* owned */
} sweep_t;

/* A key set twice on the command line: two --set of one key path, or a --set of a key the
 * sweep's axes also set (swept by axis_opt, "--sweep" or "--search"); the later would drop the
 * earlier unsaid.  1 with one line in err, or 0. */
int sweep_set_clash(const char *const *sets, int ns, const sweep_t *sw, const char *axis_opt, char *err, size_t errn);

/* Expand a value list: comma-separated items, each a literal or an integer range
 * "A..B" (step 1, or -1 when B < A) or "A..B:S" (S > 0, stepping towards B; B is
 * included only when reached), or a decimal range "0.5..2:0.5" (ends and step plain
 * decimals, at most 9 decimals: values printed with the most decimals the three have,
 * 0.5 1.0 1.5 2.0).  An item with ".." whose ends are not numbers is a literal.  On success *vals (caller frees with sweep_free_values) holds *n >= 1 values;
 * -1 with err set on an empty item, a bad step or more than 100000 values. */
int sweep_values(const char *list, char ***vals, int *n, char *err, size_t errn);
void sweep_free_values(char **vals, int n);

/* A value's identity for sweep_find_dup: its canonical text into out (n bytes), 1; or 0:
 * the default (a number by its value, so 4 and 4.0 are one; any other text as it is). */
typedef int (*sweep_canon_fn)(const char *v, char *out, size_t n, void *ctx);
/* The first value (by position) that repeats an earlier one of vals: 1 with *first and
 * *second their indices, 0 none, -1 out of memory.  canon NULL: the default identity. */
int sweep_find_dup(char *const *vals, int n, sweep_canon_fn canon, void *ctx, int *first, int *second);

/* Add an axis from "key.path=LIST"; 0, or -1 with err set (no '=', empty key, bad
 * list, key swept twice, a value given twice: it would run one point twice). */
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
    FILE *replicas;               /* NULL: no replicas CSV (one row per replica) */
    FILE *json;                   /* NULL: no JSON (report_json.h: an array, one object per run) */
    FILE *err;                    /* error lines (stderr) */
    FILE *best;                   /* where the objective's answer goes */
    int progress;                 /* draw a progress bar on stderr */
    const runner_hooks_t *hooks;  /* extra observers; only with exactly one job */
    const char *objective;        /* NULL, or "max:COL" / "min:COL" */
    const char *const *constraints;
    int nconstraints;
    int summary;                  /* runner_hooks_t.summary: 0 serving loads, 1 all, -1 none */
    const goodput_slo_t *goodput; /* NULL, or the goodput objectives */
    double error_bars;            /* run --error-bars P (0 < P <= 50; 0: none): every run also at
                                     (1 - P/100) and (1 + P/100) times every step's price, the
                                     table and the CSV with each figure's range (runner.h) */
} sweep_cfg_t;

/* Run everything; returns the worst run's rc (0 ok, 1 runtime or a write error on an
 * output, 2 bad input), or 2 on a bad objective/constraint, hooks with several jobs, more
 * than 10^8 runs or a point_base whose last index would pass LONG_MAX (checked before
 * any run). */
int sweep_run(const sweep_cfg_t *cfg);

/* The thread pool under sweep_run (and pacesim capacity): run(ctx, j, prog) for every job
 * 0..njobs-1 on `threads` threads in any order, and emit(ctx, j) on the calling thread
 * strictly in order 0..njobs-1, each once its job is done; so what emit writes depends on
 * the jobs alone, never on the thread count.  prog is an opaque progress state handed to a
 * job that runs on the calling thread (threads == 1), else NULL; with progress set, a bar
 * of jobs done is drawn on stderr.  0, or -1 out of memory (before any job ran). */
typedef struct sweep_pool {
    long njobs;
    int threads;
    int progress;
    void (*run)(void *ctx, long j, void *prog);
    void (*emit)(void *ctx, long j);
    void *ctx;
} sweep_pool_t;
int sweep_pool(const sweep_pool_t *cfg);

/* Write s as one CSV field: as is, or quoted (quotes doubled) when it holds a comma, a
 * quote or a line break.  For every text column of a CSV that merge and best read back. */
void sweep_csv_field(FILE *f, const char *s);

/* pacesim points: one `argv0 run FILE --set ... --sweep KEY=V ... --point-index J --csv
 * DIR/point-NNNN.csv --quiet -j 1` line per (file, point), numbered like the sweep.  0, 1
 * on a write error (message on err), 2 for more than 10^8 commands. */
int sweep_print_points(FILE *out, FILE *err, const char *argv0, const char *const *files, int nf,
                       const char *const *sets, int ns, const sweep_t *sw, const char *dir);
/* The same for another command (cmd, e.g. "capacity", whose axes are given by axis_opt, e.g.
 * "--search"), with extra words (its options, each one shell word) after the --set ones. */
int sweep_print_points_ex(FILE *out, FILE *err, const char *argv0, const char *cmd, const char *axis_opt,
                          const char *const *files, int nf, const char *const *sets, int ns,
                          const char *const *extra, int nextra, const sweep_t *sw, const char *dir);

/* -- the objective over CSV rows ------------------------------------------------- */
typedef struct sweep_best sweep_best_t;

/* Parse objective and constraints; NULL with err set on bad syntax.  Constraint:
 * COL OP RHS, OP one of <= < >= >, RHS a number, `base`, `K*base`, `base*K`,
 * `base+K` or `base-K`; base is COL's value in the base row of the same group (the
 * group's first row: with the CSV in point order, the point where every swept key has
 * its first value).  A group is one scenario file (the `file` column).  A column name
 * that occurs twice (a window named like a fixed column) means the last
 * one (the window).  Rows with an empty (n/a) value in a used column never win. */
sweep_best_t *sweep_best_new(const char *objective, const char *const *cons, int ncons, char *err, size_t errn);
/* Feed the CSV header line, then each row (with or without the newline).  -1 with
 * err set when a named column is missing. */
int sweep_best_header(sweep_best_t *b, const char *line, char *err, size_t errn);
int sweep_best_row(sweep_best_t *b, const char *line);    /* 0, or its field count if not the header's */
/* Print the winner of each group; returns the number of groups without a winner. */
int sweep_best_report(const sweep_best_t *b, FILE *f);
/* The objective or a constraint met a value of text in its column (max:scenario, or "inf" or
 * "xx" among numbers; an empty value is an undefined window, passed over): the message, or
 * NULL.  Such a search has no answer: the commands refuse it (exit 2).  _row: also the row
 * of that value (1: the first after the header). */
const char *sweep_best_error(const sweep_best_t *b);
const char *sweep_best_error_row(const sweep_best_t *b, long *row);
void sweep_best_free(sweep_best_t *b);

/* pacesim best: the objective over each CSV file (its own header and groups), reports to
 * out.  Records are read as RFC 4180 (at most SWEEP_RECORD_MAX bytes each); refused with
 * exit 2 and "FILE:LINE: message" on err: an unreadable or non-regular file, an empty
 * file, a header without rows, binary data, a row whose field count is not the header's,
 * a missing column.  1 on a write error on out. */
int sweep_best_files(const char *const *paths, int n, const char *objective, const char *const *cons, int ncons,
                     FILE *out, FILE *err);

/* Join CSVs written by single points of a sweep (pacesim merge): one header, the
 * union of the files' columns in first-seen order (the first file's order, then each
 * new column as a later file brings it; a name one header repeats is matched by
 * occurrence), then the rows under it (each field as its file wrote it, empty where its
 * file lacks the column), sorted by the `point` column when the union starts with it
 * (stable; input order otherwise).  Empty files (a failed point) are skipped with a
 * warning on err.  0 ok, 1 when a file was empty or unreadable or out could not be
 * written, 2 on a header without the `point` the union starts with, or a record that
 * is not its header's shape
 * (binary data, a longer record than SWEEP_RECORD_MAX, another field count, a `point`
 * that is not an integer). */
int sweep_merge(const char *const *paths, int n, FILE *out, FILE *err);

#endif
