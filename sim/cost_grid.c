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

/* One point of a law, for sorting: by its key (the shape columns but the axis), then its
 * axis value, then its place in the law (so repeats keep the file's order). */
typedef struct {
    const double *row;
    int idx;
    int nkeys, axis;
} grid_pt_t;

static int key_cmp(const double *a, const double *b, int nkeys, int axis)
{
    for (int c = 0; c < nkeys; c++)
        if (c != axis && a[c] != b[c]) return a[c] < b[c] ? -1 : 1;
    return 0;
}

static int cmp_pt(const void *va, const void *vb)
{
    const grid_pt_t *a = va, *b = vb;
    int k = key_cmp(a->row, b->row, a->nkeys, a->axis);
    if (k) return k;
    if (a->row[a->axis] != b->row[b->axis]) return a->row[a->axis] < b->row[b->axis] ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

void cost_grid_free(cost_grid_t *g)
{
    free(g->g);
    free(g->arena);
    free(g->rows);
    g->g = NULL;
    g->arena = NULL;
    g->rows = NULL;
    g->n = 0;
}

/* A law's points sorted (cmp_pt), then cut into groups of one key: O(n log n). */
int cost_grid_build(cost_grid_t *gs, const prof_law_t *laws, int nlaws)
{
    long total = 0, most = 0;
    gs->n = 0;
    gs->g = NULL;
    gs->arena = NULL;
    gs->rows = NULL;
    for (int i = 0; i < nlaws; i++) {
        total += laws[i].npts;
        if (laws[i].npts > most) most = laws[i].npts;
    }
    if (total == 0) return 0;
    gs->g = calloc((size_t)total, sizeof *gs->g);
    gs->arena = malloc((size_t)total * 2 * sizeof *gs->arena);
    gs->rows = malloc((size_t)total * sizeof *gs->rows);
    grid_pt_t *pt = malloc((size_t)most * sizeof *pt);
    if (!gs->g || !gs->arena || !gs->rows || !pt) {
        free(pt);
        cost_grid_free(gs);
        return -1;
    }
    double *next = gs->arena;
    const double **next_row = gs->rows;
    for (int li = 0; li < nlaws; li++) {
        const prof_law_t *l = &laws[li];
        int axis = cost_grid_axis(l), nc = l->ncols, nkeys = cost_grid_nkeys(l);
        if (axis < 0 || l->npts == 0 || axis >= nc - 1) continue;
        for (int i = 0; i < l->npts; i++)
            pt[i] = (grid_pt_t){ l->pts + (size_t)i * nc, i, nkeys, axis };
        qsort(pt, (size_t)l->npts, sizeof *pt, cmp_pt);
        for (int i = 0; i < l->npts;) {
            int end = i + 1;
            while (end < l->npts && key_cmp(pt[end].row, pt[i].row, nkeys, axis) == 0) end++;
            cost_grid_group_t *gr = &gs->g[gs->n++];
            gr->law = li;
            gr->ax = next;
            gr->t = next + (end - i);
            next += 2 * (end - i);
            gr->row = next_row;
            next_row += end - i;
            int first = i;                 /* the group's key: its point first in the law */
            for (int j = i; j < end; j++)
                if (pt[j].idx < pt[first].idx) first = j;
            gr->first = pt[first].idx;
            for (int c = 0; c < nc - 1; c++) gr->key[c] = pt[first].row[c];
            for (int j = i; j < end; j++) {
                double sum = pt[j].row[nc - 1];
                int c = 1, rep = j;
                while (j + 1 < end && pt[j + 1].row[axis] == pt[j].row[axis]) {
                    sum += pt[++j].row[nc - 1];
                    c++;
                }
                if (gr->npts == 0) gr->edge[0] = pt[rep].row;
                gr->edge[1] = pt[rep].row;
                gr->row[gr->npts] = pt[rep].row;
                gr->ax[gr->npts] = pt[j].row[axis];
                gr->t[gr->npts] = sum / c;
                gr->npts++;
            }
            i = end;
        }
    }
    free(pt);
    return 0;
}

/* The first group of law li at or after the place key would take (binary search). */
static int lower_bound(const cost_grid_t *g, int li, const double *row, int nkeys, int axis)
{
    int lo = 0, hi = g->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const cost_grid_group_t *gr = &g->g[mid];
        int c = gr->law != li ? (gr->law < li ? -1 : 1) : row ? key_cmp(gr->key, row, nkeys, axis) : 0;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void cost_grid_law(const cost_grid_t *g, int li, int *lo, int *hi)
{
    *lo = lower_bound(g, li, NULL, 0, -1);
    *hi = lower_bound(g, li + 1, NULL, 0, -1);
}

const cost_grid_group_t *cost_grid_find(const cost_grid_t *g, int li, const double *row, int nkeys, int axis)
{
    int i = lower_bound(g, li, row, nkeys, axis);
    if (i < g->n && g->g[i].law == li && key_cmp(g->g[i].key, row, nkeys, axis) == 0) return &g->g[i];
    return NULL;
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
