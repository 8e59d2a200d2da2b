/* allreduce.c: the host side of the all-reduce calibration.  See allreduce.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "allreduce.h"
#include "fit.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int ar_measure(profile_t *p, const model_t *m, int ngpus, const char *what, ar_timer_fn timer, void *ctx,
               char err[256])
{
    static const long tokens[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 784, 816, 1024, 1568, 2048, 4096, 8192 };
    enum { NT = sizeof tokens / sizeof *tokens, REPS = 15 };
    prof_law_t l;
    double pts[NT * 2], sec[REPS];
    memset(&l, 0, sizeof l);
    for (int i = 0; i < NT; i++) {
        double bytes = (double)tokens[i] * m->hidden * 2.0;
        if (timer(ctx, bytes, REPS, sec) < 0) {
            snprintf(err, 256, "all-reduce timing failed at %.0f bytes", bytes);
            return -1;
        }
        qsort(sec, REPS, sizeof *sec, cmp_d);
        if (!(sec[REPS / 2] > 0) || !isfinite(sec[REPS / 2])) {
            snprintf(err, 256, "all-reduce timing gave %g s at %.0f bytes", sec[REPS / 2], bytes);
            return -1;
        }
        pts[2 * i] = bytes;
        pts[2 * i + 1] = sec[REPS / 2];
    }
    snprintf(l.name, sizeof l.name, "allreduce");
    l.ncols = 2;
    snprintf(l.cols[0], sizeof l.cols[0], "bytes");
    snprintf(l.cols[1], sizeof l.cols[1], "t_s");
    l.npts = NT;
    l.pts = pts;
    snprintf(l.provenance, sizeof l.provenance,
             "measured: NCCL all-reduce (sum, fp16) on %d x %s, one process, NCCL_NVLS_ENABLE=0; "
             "median of %d per size; fitted alpha-beta", ngpus, what, REPS);
    model_rank_t r;
    if (model_rank(m, ngpus, &r) < 0) model_rank(m, 1, &r);
    if (fit_law(&l, m, &r) < 0) {
        snprintf(err, 256, "all-reduce fit failed");
        return -1;
    }
    if (prof_put(p, &l) < 0) {
        snprintf(err, 256, "out of memory");
        return -1;
    }
    return 0;
}
