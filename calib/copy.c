/* copy.c: the host side of the copy calibration.  See copy.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "copy.h"
#include "fit.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

const char *cp_law_name(cp_dir_t dir)
{
    static const char *const names[CP__N] = { "copy.d2d", "copy.h2d", "copy.d2h" };
    return dir >= 0 && dir < CP__N ? names[dir] : "?";
}

int cp_measure(profile_t *p, const char *what, double max_bytes, cp_timer_fn timer, void *ctx, char err[256])
{
    static const char *const how[CP__N] = {
        "cudaMemcpyAsync device to device within one GPU (a read and a write of each byte)",
        "cudaMemcpyAsync pinned host to device", "cudaMemcpyAsync device to pinned host" };
    enum { MAXN = 48 };
    double pts[MAXN * 2], sec[CP_REPS];
    if (!(max_bytes >= CP_MIN_BYTES) || max_bytes > 1e15) {
        snprintf(err, 256, "copy sizes: the largest (%g bytes) must be in [4 KiB, 1 PB]", max_bytes);
        return -1;
    }
    for (int d = 0; d < CP__N; d++) {
        int n = 0;
        for (double b = CP_MIN_BYTES; b <= max_bytes && n < MAXN; b *= 2, n++) {
            if (timer(ctx, (cp_dir_t)d, b, CP_REPS, sec) < 0) {
                snprintf(err, 256, "%s timing failed at %.0f bytes", cp_law_name((cp_dir_t)d), b);
                return -1;
            }
            qsort(sec, CP_REPS, sizeof *sec, cmp_d);
            double med = sec[CP_REPS / 2];
            if (!(med > 0) || !isfinite(med)) {
                snprintf(err, 256, "%s timing gave %g s at %.0f bytes", cp_law_name((cp_dir_t)d), med, b);
                return -1;
            }
            pts[2 * n] = b;
            pts[2 * n + 1] = med;
        }
        if (n < 2) {
            snprintf(err, 256, "copy sizes: %d point(s), a law needs 2", n);
            return -1;
        }
        prof_law_t l;
        memset(&l, 0, sizeof l);
        snprintf(l.name, sizeof l.name, "%s", cp_law_name((cp_dir_t)d));
        l.ncols = 2;
        snprintf(l.cols[0], sizeof l.cols[0], "bytes");
        snprintf(l.cols[1], sizeof l.cols[1], "t_s");
        l.npts = n;
        l.pts = pts;
        snprintf(l.provenance, sizeof l.provenance,
                 "measured: %s on one %s, %.0f B to %.0f B, median of %d per size (CUDA events); fitted latency +"
                 " bytes / bandwidth", how[d], what, CP_MIN_BYTES, pts[2 * (n - 1)], CP_REPS);
        if (fit_law(&l, NULL, NULL) < 0) {
            snprintf(err, 256, "%s fit failed", l.name);
            return -1;
        }
        if (prof_put(p, &l) < 0) {
            snprintf(err, 256, "out of memory");
            return -1;
        }
    }
    return 0;
}
