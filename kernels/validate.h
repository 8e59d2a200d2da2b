/* validate: one correctness case of the attention kernels, shared by the Check suite
 * (tests/check_kernels.c) and the device bench (kernels/bench_kernels.cu).
 * A case = route, KV dtype, page, rows (q, seq_len), head_dim, GQA group; fresh random inputs every call,
 * output poisoned (fp16 NaN) before the run, every output element checked written,
 * sampled (row, token, head) triples compared with the float64 reference. */
#ifndef ATTN_VALIDATE_H
#define ATTN_VALIDATE_H
#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VAL_MAX_ROWS 8
typedef struct val_case {
    int route, dtype, page, flags;
    int num_rows;
    int q[VAL_MAX_ROWS], seq[VAL_MAX_ROWS];
    int expand;       /* run on the token-wise expanded batch (decode XQA / scalar) */
    int samples;      /* sampled triples (<= 0: all) */
    int compare_to;   /* >= 0: also run this route on the same inputs; report max rel diff */
    int head_dim;     /* 64, 128, 256 (0: 256) */
    int group;        /* q heads per kv head, 2 kv heads (0: 6, i.e. 12 q heads) */
} val_case;

typedef struct val_result {
    int err;          /* attn_run's code */
    double rel_err;   /* vs float64 reference */
    long unwritten;   /* non-finite output elements (poison left or NaN produced) */
    double rel_diff;  /* vs compare_to route, or -1 */
} val_result;

/* Run a case with 2 kv heads and 2 x group q heads at head_dim D (defaults: 12 q heads, D = 256),
 * softmax scale 1/sqrt(D); 0, or a negative code on setup failure. */
int val_run(const val_case *c, uint64_t seed, val_result *res);

#ifdef __cplusplus
}
#endif
#endif
