/* kvxfer.c: the KV transfer law (kvxfer.h). */
#include "kvxfer.h"

double kvx_layer_chunk(const kvx_link_t *l, double f0, double t0, double d, double bytes)
{
    int L = l->layers > 0 ? l->layers : 1;
    double all = bytes / l->bw, piece = all / L;
    double f = f0 + all;                       /* the link busy from before: back to back */
    double a = t0 + d / L + all;               /* the first layer's piece sets the pace */
    double b = t0 + d + piece;                 /* the last layer's piece, sent after the prefill */
    if (a > f) f = a;
    if (b > f) f = b;
    return f;
}
