/* evq: binary min-heap of events keyed by (time, seq); equal times pop in insertion
 * order, so every run is reproducible bit for bit.
 *
 * seq is a counter the queue assigns at push and never reuses.  The heap stores
 * events by value (they are small); the queue owns its array.  Invariant: for every
 * i > 0, key(heap[(i-1)/2]) <= key(heap[i]). */
#ifndef PACESIM_EVQ_H
#define PACESIM_EVQ_H

#include <stdint.h>

/* EVT_ARRIVAL: request a arrives; EVT_STEP_END: replica a's step ends;
 * EVT_SOURCE: generator a (workload.h's SRC_*) has its next request due;
 * EVT_ROUTED: request a reaches replica b (after the router's decision latency);
 * EVT_KV_SENT: request a's KV has left its prefill replica for decode replica b (b < 0: it
 * reaches b later, an EVT_ROUTED). */
typedef enum { EVT_ARRIVAL = 0, EVT_STEP_END, EVT_SOURCE, EVT_ROUTED, EVT_KV_SENT } evt_kind_t;

typedef struct event {
    double time;
    uint64_t seq;                 /* set by evq_push */
    evt_kind_t kind;
    int a;                        /* kind-specific: request index, source id, ... */
    long b;
} event_t;

typedef struct evq {
    event_t *heap;
    int n, cap;
    uint64_t next_seq;
} evq_t;

void evq_init(evq_t *q);          /* empty queue; evq_free releases it */
void evq_free(evq_t *q);
int evq_push(evq_t *q, event_t ev);   /* 0, or -1 out of memory */
int evq_pop(evq_t *q, event_t *out);  /* 1 popped, 0 empty */
const event_t *evq_peek(const evq_t *q); /* NULL when empty */
static inline int evq_size(const evq_t *q) { return q->n; }

#endif
