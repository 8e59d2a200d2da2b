/* cost_grid.c: the measured points of a profile's laws, grouped along each law's axis,
 * and the grid's leave-one-out error (see cost_grid.h).
 *
 * Invariant: a group is every point of one law with the same shape but its axis value;
 * its repeats (points of one shape and axis value) count once, at their mean time. */
#include <math.h>
#include <stdlib.h>
#include "cost.h"
#include "cost_grid.h"
#include "law.h"

int cost_grid_axis(const prof_law_t *l)
{
    const law_form_t *f = law_find(l->name);
    return f ? f->axis : -1;
}

int cost_grid_nkeys(const prof_law_t *l)
{
    return law_shape_cols(law_find(l->name), l->ncols);
}

int cost_grid_same_key(const double *row, const double *key, int nkeys, int axis)
{
    for (int c = 0; c < nkeys; c++)
        if (c != axis && row[c] != key[c]) return 0;
    return 1;
}

static int cmp_pair(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

void cost_grid_free(cost_grid_t *g)
{
    free(g->g);
    free(g->arena);
    g->g = NULL;
    g->arena = NULL;
    g->n = 0;
}

int cost_grid_build(cost_grid_t *gs, const prof_law_t *laws, int nlaws)
{
    long total = 0;
    gs->n = 0;
    gs->g = NULL;
    gs->arena = NULL;
    for (int i = 0; i < nlaws; i++) total += laws[i].npts;
    if (total == 0) return 0;
    gs->g = calloc((size_t)total, sizeof *gs->g);
    gs->arena = malloc((size_t)total * 2 * sizeof *gs->arena);
    double *pairs = malloc((size_t)total * 3 * sizeof *pairs);
    if (!gs->g || !gs->arena || !pairs) {
        free(pairs);
        cost_grid_free(gs);
        return -1;
    }
    double *next = gs->arena;
    for (int li = 0; li < nlaws; li++) {
        const prof_law_t *l = &laws[li];
        int axis = cost_grid_axis(l), nc = l->ncols, nkeys = cost_grid_nkeys(l);
        if (axis < 0 || l->npts == 0 || axis >= nc - 1) continue;
        for (int i = 0; i < l->npts; i++) {
            const double *row = l->pts + (size_t)i * nc;
            int seen = 0;
            for (int g = 0; g < gs->n && !seen; g++)
                seen = gs->g[g].law == li && cost_grid_same_key(row, gs->g[g].key, nkeys, axis);
            if (seen) continue;
            cost_grid_group_t *gr = &gs->g[gs->n++];
            gr->law = li;
            for (int c = 0; c < nc - 1; c++) gr->key[c] = row[c];
            int np = 0;
            for (int j = i; j < l->npts; j++) {
                const double *rj = l->pts + (size_t)j * nc;
                if (!cost_grid_same_key(rj, gr->key, nkeys, axis)) continue;
                pairs[3 * np] = rj[axis];
                pairs[3 * np + 1] = rj[nc - 1];
                pairs[3 * np + 2] = (double)j;
                np++;
            }
            qsort(pairs, (size_t)np, 3 * sizeof *pairs, cmp_pair);
            gr->ax = next;
            gr->t = next + np;
            next += 2 * np;
            for (int j = 0; j < np; j++) {
                double sum = pairs[3 * j + 1];
                int c = 1, first = j;
                while (j + 1 < np && pairs[3 * (j + 1)] == pairs[3 * j]) {
                    sum += pairs[3 * (j + 1) + 1];
                    c++;
                    j++;
                }
                if (gr->npts == 0) gr->edge[0] = l->pts + (size_t)pairs[3 * first + 2] * nc;
                gr->edge[1] = l->pts + (size_t)pairs[3 * first + 2] * nc;
                gr->ax[gr->npts] = pairs[3 * j];
                gr->t[gr->npts] = sum / c;
                gr->npts++;
            }
        }
    }
    free(pairs);
    return 0;
}

/* ---- how well the grid predicts itself --------------------------------------
 * Leave-one-out along the axis: every interior point of a group is predicted by linear
 * interpolation between its two neighbours (the grid with that point removed).  This
 * doubles the local spacing, so it bounds the interpolation error from above. */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cost_grid_loo(const prof_law_t *l, double *median, double *maxe, int *n)
{
    cost_grid_t gs;
    *n = 0;
    *median = *maxe = NAN;
    if (l->npts < 3) return 0;
    if (cost_grid_build(&gs, l, 1) < 0) return -1;
    double *err = malloc((size_t)l->npts * sizeof *err);
    if (!err) {
        cost_grid_free(&gs);
        return -1;
    }
    for (int g = 0; g < gs.n; g++) {
        const cost_grid_group_t *gr = &gs.g[g];
        for (int j = 1; j + 1 < gr->npts; j++) {
            double x0 = gr->ax[j - 1], x1 = gr->ax[j + 1], w = (gr->ax[j] - x0) / (x1 - x0);
            double pred = gr->t[j - 1] + w * (gr->t[j + 1] - gr->t[j - 1]);
            err[(*n)++] = fabs(pred / gr->t[j] - 1);
        }
    }
    if (*n > 0) {
        qsort(err, (size_t)*n, sizeof *err, cmp_double);
        *median = err[*n / 2];
        *maxe = err[*n - 1];
    }
    free(err);
    cost_grid_free(&gs);
    return 0;
}
