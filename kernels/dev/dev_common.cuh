// dev_common.cuh -- what the kernels/dev/ programs share. Each program times other configurations
// of the tile engine (attn_common.cuh) against the library's (kernels/libattn.a) on the reference
// shapes (12 q heads, 2 kv heads, D = 256): one shape's inputs on the GPU, each variant's output
// checked against the float64 reference (attn_check_output) and its launch timed (median of
// event-timed runs). Invariant: a variant's row is printed only after its output was checked.
#pragma once
#include "attn.h"
#include "attn_common.cuh"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEV_H 12
#define DEV_KVH 2
#define DEV_SCALE 0.0625f

// one shape: a single row of q_len query tokens at the end of seq tokens
struct DevShape {
    const char *label;
    int dtype, page, q_len, seq;
};

// the shape's inputs; ws holds ws_bytes (at least the library's workspace for ws_route)
struct DevInputs {
    attn_kv kv;
    attn_batch *b;
    void *q, *out, *ws;
    size_t ws_bytes;
};

// a variant's launch on the inputs (asynchronous; 0 or an ATTN_E* code)
typedef int (*dev_launch_t)(const void *variant, const DevInputs &in);

static int dev_inputs(DevInputs *in, const DevShape &sh, int ws_route) {
    memset(in, 0, sizeof *in);
    int blocks = (sh.seq + sh.page - 1) / sh.page + 2;
    if (attn_kv_alloc_random(&in->kv, sh.dtype, blocks, sh.page, DEV_KVH, ATTN_D, 0.5f, 99)) return ATTN_ENOMEM;
    in->b = attn_batch_create(&in->kv, 1, &sh.q_len, &sh.seq, DEV_H, NULL, 0, 5);
    if (!in->b) return ATTN_ENOMEM;
    size_t n = (size_t)sh.q_len * DEV_H * ATTN_D;
    in->ws_bytes = attn_ws_bytes(ws_route, &in->kv, in->b);
    in->q = attn_dev_alloc(n * 2);
    in->out = attn_dev_alloc(n * 2);
    in->ws = attn_dev_alloc(in->ws_bytes);
    if (!in->q || !in->out || !in->ws) return ATTN_ENOMEM;
    return attn_fill_half_random(in->q, n, -2.f, 2.f, 17);
}

static void dev_free(DevInputs *in) {
    attn_dev_free(in->q);
    attn_dev_free(in->out);
    attn_dev_free(in->ws);
    attn_batch_free(in->b);
    attn_kv_free(&in->kv);
}

static int dev_cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

// median ms of reps launches of f (after 3 warm-up launches), or a negative ATTN_E* code
static float dev_time(const DevInputs &in, dev_launch_t f, const void *variant, int reps) {
    float t[64];
    cudaEvent_t e0, e1;
    int err = 0;
    if (reps > 64) reps = 64;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) return ATTN_ECUDA;
    for (int i = 0; i < 3 && !err; i++) err = f(variant, in);
    for (int i = 0; i < reps && !err; i++) {
        cudaEventRecord(e0);
        err = f(variant, in);
        cudaEventRecord(e1);
        if (!err && (cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&t[i], e0, e1) != cudaSuccess))
            err = ATTN_ECUDA;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (err) return (float)err;
    qsort(t, reps, sizeof *t, dev_cmp_float);
    return t[reps / 2];
}

// one table row: the variant's output (out poisoned with fp16 NaN first) against the float64
// reference on 24 sampled (token, head) pairs, then its median time (of 10 launches for a shape of
// more than 5e7 query-key pairs, else 30). unchecked: NULL, or the row's note where the variant's
// output is not out (then it is not checked here).
static void dev_row(const char *shape, const char *name, const DevInputs &in, dev_launch_t f, const void *variant,
                    const char *unchecked) {
    double rel = -1;
    long bad = 0;
    int err = 0;
    if (!unchecked) {
        size_t n = (size_t)in.b->total_q * DEV_H * ATTN_D * 2;
        err = attn_fill_bytes(in.out, n, 0xFF);
        if (!err) err = f(variant, in);
        if (!err) err = attn_sync();
        if (!err) err = attn_check_output(&in.kv, in.b, in.q, in.out, DEV_SCALE, 24, 7, &rel, &bad);
    }
    float ms = err ? (float)err : dev_time(in, f, variant, in.b->total_q * (double)in.b->max_seq > 5e7 ? 10 : 30);
    if (ms < 0) err = (int)ms;
    if (err)
        printf("| %-28s | %-22s | %9s | %9s | %s\n", shape, name, "-", "-", attn_strerror(err));
    else if (unchecked)
        printf("| %-28s | %-22s | %9.4f | %9s | %s\n", shape, name, ms, "-", unchecked);
    else
        printf("| %-28s | %-22s | %9.4f | %9.2e |%s\n", shape, name, ms, rel, bad || rel > 2e-3 ? " FAIL" : "");
    fflush(stdout);
}

static void dev_header(void) {
    int major = 0, minor = 0, optin = 0;
    attn_device_smem(&major, &minor, &optin);
    printf("device sm_%d%d, smem per block %d, per SM %d\n", major, minor, attn_smem_budget(), attn_smem_per_sm());
    printf("| %-28s | %-22s | %9s | %9s |\n|---|---|---|---|\n", "shape (12q/2kv, D256)", "variant", "ms", "rel err");
}

// the table's head, or 0 where there is no GPU (said)
static int dev_start(void) {
    if (!attn_gpu_available()) {
        printf("no CUDA device\n");
        return 0;
    }
    dev_header();
    return 1;
}

// the shape's inputs (dev_inputs), or 0 when they do not fit the GPU (said; nothing left allocated)
static int dev_open(DevInputs *in, const DevShape &sh, int ws_route) {
    int err = dev_inputs(in, sh, ws_route);
    if (!err) return 1;
    printf("%s: inputs: %s\n", sh.label, attn_strerror(err));
    dev_free(in);
    return 0;
}

// whether variant `name` is wanted: argv[1] is a comma-separated list of names (none: every one)
static int dev_wanted(int argc, char **argv, const char *name) {
    if (argc < 2) return 1;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", argv[1]);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (!strcmp(tok, name)) return 1;
    return 0;
}
