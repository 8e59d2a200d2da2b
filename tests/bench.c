/* bench: how fast pacesim simulates, and whether its memory follows the requests in
 * flight rather than the workload's length.
 *
 *   bench SCENARIO [--set key.path=value]... [--label NAME]
 *
 * Runs one scenario (assembled by setup.h and stepped exactly as `pacesim run` does) with a
 * step observer and prints one line:
 *   label requests steps request_steps wall_s req_per_s request_steps_per_s
 *   first_tenth_rs_per_s last_tenth_rs_per_s slowdown peak_rss_mib peak_pool
 *   cpu_s request_steps_per_cpu_s
 * request_steps is the sum over steps of the rows scheduled; the tenths are the
 * request-steps/s of the first and last tenth of the steps (slowdown = first / last,
 * about 1 when nothing degrades over time); peak_rss is VmHWM of this process; cpu_s the
 * process's CPU time over the engine loop (wall_s too, less the time it was descheduled).
 * Exit status: 0, or the runner's 1/2 with its message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "setup.h"

#define MAX_SETS 32
#define CHUNK 4096                 /* steps per checkpoint */

typedef struct {
    long steps, rows;
    double *t;                     /* wall time at every CHUNK-th step */
    long *r;                       /* request-steps at every CHUNK-th step */
    long n, cap;
} bench_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_step(void *ctx, const engine_t *e, const step_rec_t *st)
{
    bench_t *b = ctx;
    (void)e;
    b->steps++;
    b->rows += st->nrows;
    if (b->steps % CHUNK) return;
    if (b->n == b->cap) {
        long cap = b->cap ? 2 * b->cap : 1024;
        double *t = realloc(b->t, (size_t)cap * sizeof *t);
        if (!t) return;
        b->t = t;
        long *r = realloc(b->r, (size_t)cap * sizeof *r);
        if (!r) return;
        b->r = r;
        b->cap = cap;
    }
    b->t[b->n] = now_s();
    b->r[b->n++] = b->rows;
}

/* This process's CPU time: a machine shared with other jobs deschedules it for a while
 * (wall time goes on), but its CPU time counts the loop's own work. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double peak_rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kib = atof(line + 6);
    fclose(f);
    return kib / 1024.0;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *label = NULL;
    const char *sets[MAX_SETS];
    int nsets = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < MAX_SETS) sets[nsets++] = argv[++i];
        else if (!strcmp(argv[i], "--label") && i + 1 < argc) label = argv[++i];
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fprintf(stderr, "usage: bench SCENARIO [--set key.path=value]... [--label NAME]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: bench SCENARIO [--set key.path=value]... [--label NAME]\n");
        return 2;
    }
    setup_t u;
    int rc = 0;
    bench_t b = { 0 };
    if (setup_open(&u, path, sets, nsets) < 0) {
        fprintf(stderr, "%s\n", u.err);
        setup_close(&u);
        return 2;
    }
    fputs(u.warn, stderr);
    engine_t *e = &u.e;
    e->observer = on_step;
    e->observer_ctx = &b;
    double t0 = now_s(), c0 = cpu_s();
    int erc = engine_run(e);
    double cpu = cpu_s() - c0;
    if (erc < 0) {
        fprintf(stderr, "%s\n", e->err);
        rc = erc == ENG_EINPUT ? 2 : 1;
    }
    double wall = now_s() - t0;
    if (!rc) {
        /* first and last tenth of the checkpoints */
        double first = 0, last = 0;
        long k = b.n / 10;
        if (k >= 1) {
            first = (double)(b.r[k] - b.r[0]) / (b.t[k] - b.t[0]);
            last = (double)(b.r[b.n - 1] - b.r[b.n - 1 - k]) / (b.t[b.n - 1] - b.t[b.n - 1 - k]);
        }
        printf("%-12s requests %ld steps %ld request_steps %ld wall_s %.3f req_per_s %.0f "
               "request_steps_per_s %.0f first_tenth %.0f last_tenth %.0f slowdown %.3f peak_rss_mib %.1f "
               "peak_pool %ld cpu_s %.3f request_steps_per_cpu_s %.0f\n",
               label ? label : u.s.name, e->sum.requests_finished, b.steps, b.rows, wall,
               (double)e->sum.requests_finished / wall, (double)b.rows / wall, first, last,
               last > 0 ? first / last : 0.0, peak_rss_mib(), e->sum.peak_pool, cpu,
               cpu > 0 ? (double)b.rows / cpu : 0.0);
    }
    free(b.t);
    free(b.r);
    setup_close(&u);
    return rc;
}
