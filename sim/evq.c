/* evq.c: the (time, seq) min-heap.  See evq.h. */
#include <stdlib.h>
#include "evq.h"

static int before(const event_t *x, const event_t *y)
{
    return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

void evq_init(evq_t *q) { q->heap = NULL; q->n = q->cap = 0; q->next_seq = 0; }

void evq_free(evq_t *q) { free(q->heap); evq_init(q); }

int evq_push(evq_t *q, event_t ev)
{
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 64;
        event_t *h = realloc(q->heap, (size_t)cap * sizeof *h);
        if (!h) return -1;
        q->heap = h;
        q->cap = cap;
    }
    ev.seq = q->next_seq++;
    int i = q->n++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!before(&ev, &q->heap[p])) break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = ev;
    return 0;
}

const event_t *evq_peek(const evq_t *q) { return q->n ? &q->heap[0] : NULL; }

/* before() without branches: which of two children is smaller is a coin toss the branch
 * predictor loses half the time (a cluster's queue holds a step end per replica) */
static inline int before_nb(const event_t *x, const event_t *y)
{
    return (x->time < y->time) | ((x->time == y->time) & (x->seq < y->seq));
}

int evq_pop(evq_t *q, event_t *out)
{
    if (!q->n) return 0;
    event_t *h = q->heap;
    *out = h[0];
    event_t last = h[--q->n];
    int n = q->n, i = 0;
    /* keys are unique (seq): the smaller child moves up while it is before the last event */
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n) c += before_nb(&h[c + 1], &h[c]);
        if (!before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return 1;
}
