/* cost_grid: a profile's measured points, grouped for interpolation.
 *
 * A law's points are grouped by every shape column but one, the law's axis (law.h: gemm m
 * within (n, k, wb); gdn tokens within seqs; elementwise tokens; attention seq_len within
 * (rows, q, page)); each group holds its axis values sorted, repeats averaged, with their
 * times.  The profile model prices an item inside a group by interpolating along the axis
 * (cost_profile.c); cost_grid_loo() (cost.h) says how well a law's groups predict
 * themselves.  Invariant after cost_grid_build(): every group has npts >= 1 strictly
 * increasing axis values, and edge[] point at the law's rows of its first and last; the
 * groups are sorted by (law, key), one group a key. */
#ifndef PACESIM_COST_GRID_H
#define PACESIM_COST_GRID_H

#include "profile.h"

typedef struct cost_grid_group {
    int law;                      /* index into the laws the grid was built from */
    double key[PROF_MAX_COLS];    /* the point's columns (the shape columns but the axis name it) */
    int npts;
    double *ax, *t;               /* sorted by axis, repeats averaged */
    const double **row;           /* row[i]: the law's first point row at ax[i] (its facts: a
                                     gemm point's kernel) */
    const double *edge[2];        /* the first and last point rows (for extrapolation) */
    int first;                    /* the group's point first in its law (its key's row) */
} cost_grid_group_t;

typedef struct cost_grid {
    int n;
    cost_grid_group_t *g;         /* owned, as is arena (every group's ax and t) */
    double *arena;
    const double **rows;          /* owned: every group's row */
} cost_grid_t;

/* The axis column of law l's points (-1: none, or a law not in the catalogue). */
int cost_grid_axis(const prof_law_t *l);
/* The columns that name a group of law l's points (law_shape_cols: a gemm point's kernel
 * choice is a fact measured with it, not part of its shape). */
int cost_grid_nkeys(const prof_law_t *l);
/* Group the points of laws[0..nlaws) (which must outlive the grid), in O(n log n) for n
 * points: the groups come ordered by law, then by key.  0, or -1 out of memory (g then
 * holds nothing).  The caller frees with cost_grid_free(). */
int cost_grid_build(cost_grid_t *g, const prof_law_t *laws, int nlaws);
/* The groups of law li: g->g[*lo .. *hi). */
void cost_grid_law(const cost_grid_t *g, int li, int *lo, int *hi);
/* The group of law li whose key is row's first nkeys columns but the axis, or NULL: a
 * binary search. */
const cost_grid_group_t *cost_grid_find(const cost_grid_t *g, int li, const double *row, int nkeys, int axis);
void cost_grid_free(cost_grid_t *g);

#endif
