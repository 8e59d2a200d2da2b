/* router: where the cluster (cluster.c) sends an arriving request.  One function a router,
 * each cited from the system it models; adding one is a function here, a name in
 * scenario.c's router_names and a line in router_get.  A router reads the replicas through
 * their narrow interface (replica.h: load, KV use, cached prefix) and changes nothing but its
 * own state (the round-robin cursor, the random stream, the session table). */
#ifndef PACESIM_ROUTER_H
#define PACESIM_ROUTER_H

#include "replica.h"

typedef struct router_ctx {
    const replica_t *rep;         /* the replicas that may take the request */
    int n;
    const req_t *q;               /* the request */
    const scn_cluster_t *cfg;
    void *rng;                    /* gsl_rng*: random's draws */
    long *rr;                     /* round_robin's cursor */
    int session_rep;              /* session: the replica its conversation went to (-1: none yet) */
} router_ctx_t;

typedef int (*router_fn)(const router_ctx_t *c);

int router_round_robin(const router_ctx_t *c);
int router_random(const router_ctx_t *c);
int router_least_outstanding(const router_ctx_t *c);
int router_least_kv(const router_ctx_t *c);
int router_prefix_affinity(const router_ctx_t *c);
int router_session(const router_ctx_t *c);

router_fn router_get(router_kind_t k);

#endif
