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

int evq_pop(evq_t *q, event_t *out)
{
    if (!q->n) return 0;
    *out = q->heap[0];
    event_t last = q->heap[--q->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        const event_t *best = &last;
        if (l < q->n && before(&q->heap[l], best)) { m = l; best = &q->heap[l]; }
        if (r < q->n && before(&q->heap[r], best)) { m = r; }
        if (m == i) break;
        q->heap[i] = q->heap[m];
        i = m;
    }
    if (q->n) q->heap[i] = last;
    return 1;
}
