/* kvxfer: the KV transfer law of disaggregated prefill/decode (sim/cluster.c hands a request
 * from a prefill replica to a decode replica over it).
 *
 * A link moves bytes at bw bytes/s one way after a fixed latency lat:
 *     t(bytes) = bytes / bw + lat.
 * With tensor parallelism each rank of the prefill replica sends its own shard of the KV
 * (its KV heads) to its peer rank over a link of its own, in parallel, so a request's
 * transfer takes t(per-rank bytes); links are not shared between transfers (no contention).
 *
 * Layer-wise transfer (kv_transfer.layerwise): a prefill chunk of duration d that produces
 * b bytes of KV yields them in L equal pieces, piece i (1..L) when its layer's forward ends
 * at t0 + i d / L; the link sends the pieces in order, each as soon as it is ready and the
 * link is free.  With the link free at f0 the last piece is sent at
 *     f = max(f0 + b / bw,  t0 + d / L + b / bw,  t0 + d + b / (L bw))
 * (the pieces' finish times are linear in i, so the largest is at i = 1 or i = L), and the
 * KV has arrived at f + lat.  When the link keeps up (b / bw <= d) only the last layer's
 * share, b / (L bw), plus the latency remains after the prefill.
 * Invariant: every time returned is >= its inputs' start; no state. */
#ifndef PACESIM_KVXFER_H
#define PACESIM_KVXFER_H

typedef struct kvx_link {
    double bw;                    /* bytes/s, one direction, per rank */
    double lat;                   /* seconds */
    int layerwise;                /* 1: pieces sent as each layer's prefill ends */
    int layers;                   /* L: layers whose forward yields KV or state */
} kvx_link_t;

/* One transfer of `bytes` (per rank) started at once: bytes / bw + lat. */
static inline double kvx_time(const kvx_link_t *l, double bytes) { return bytes / l->bw + l->lat; }

/* Layer-wise: the time the link has sent the last piece of a chunk of `bytes` computed over
 * [t0, t0 + d], the link free from f0 (see above; without the latency). */
double kvx_layer_chunk(const kvx_link_t *l, double f0, double t0, double d, double bytes);

#endif
