/* validate.c -- see validate.h */
#include "validate.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define VAL_GROUP 6 /* 12 q heads on 2 kv heads */
#define VAL_KVH 2
#define VAL_D 256

static long count_nonfinite(const uint16_t *h, size_t n) {
    long c = 0;
    for (size_t i = 0; i < n; i++)
        if (((h[i] >> 10) & 31) == 31) c++;
    return c;
}

int val_run(const val_case *c, uint64_t seed, val_result *res) {
    int err = 0;
    attn_kv kv;
    attn_batch *b0 = NULL, *b = NULL;
    void *q = NULL, *out = NULL, *out2 = NULL, *ws = NULL;
    uint16_t *h1 = NULL, *h2 = NULL;
    memset(res, 0, sizeof *res);
    res->rel_diff = -1;
    const int nh = VAL_KVH * (c->group > 0 ? c->group : VAL_GROUP), D = c->head_dim > 0 ? c->head_dim : VAL_D;
    long blocks = 4;
    for (int r = 0; r < c->num_rows; r++) blocks += (c->seq[r] + c->page - 1) / c->page;
    float scale = c->dtype == ATTN_FP8_E5M2 ? 0.5f : 1.f;
    if ((err = attn_kv_alloc_random(&kv, c->dtype, (int)blocks, c->page, VAL_KVH, D, scale, seed))) return err;
    b0 = attn_batch_create(&kv, c->num_rows, c->q, c->seq, nh, NULL, 0, seed ^ 0x5eed);
    if (!b0) { err = ATTN_ENOMEM; goto done; }
    b = c->expand ? attn_batch_expand(b0) : b0;
    if (!b) { err = ATTN_ENOMEM; goto done; }
    size_t n = (size_t)b->total_q * nh * D;
    q = attn_dev_alloc(n * 2);
    out = attn_dev_alloc(n * 2);
    size_t wsb = attn_ws_bytes(c->route, &kv, b);
    if (c->compare_to >= 0 && attn_ws_bytes(c->compare_to, &kv, b) > wsb) wsb = attn_ws_bytes(c->compare_to, &kv, b);
    ws = wsb ? attn_dev_alloc(wsb) : NULL;
    h1 = malloc(n * 2);
    if (!q || !out || (wsb && !ws) || !h1) { err = ATTN_ENOMEM; goto done; }
    if ((err = attn_fill_half_random(q, n, -2.f, 2.f, seed + 7))) goto done;
    if ((err = attn_fill_bytes(out, n * 2, 0xFF))) goto done;
    float sm = 1.f / sqrtf((float)D);
    res->err = attn_run(c->route, &kv, b, q, out, sm, ws, wsb, c->flags, NULL);
    if (res->err) goto done;
    if ((err = attn_sync())) goto done;
    if ((err = attn_memcpy_d2h(h1, out, n * 2))) goto done;
    res->unwritten = count_nonfinite(h1, n);
    if ((err = attn_check_output(&kv, b, q, out, sm, c->samples, seed + 11, &res->rel_err, &(long){0}))) goto done;
    if (c->compare_to >= 0) {
        out2 = attn_dev_alloc(n * 2);
        h2 = malloc(n * 2);
        if (!out2 || !h2) { err = ATTN_ENOMEM; goto done; }
        if ((err = attn_fill_bytes(out2, n * 2, 0xFF))) goto done;
        int e2 = attn_run(c->compare_to, &kv, b, q, out2, sm, ws, wsb, c->flags, NULL);
        if (e2) { res->err = e2; goto done; }
        if ((err = attn_sync()) || (err = attn_memcpy_d2h(h2, out2, n * 2))) goto done;
        double num = 0, den = 0;
        for (size_t i = 0; i < n; i++) {
            double x = attn_fp16_to_double(h1[i]), y = attn_fp16_to_double(h2[i]);
            num += (x - y) * (x - y);
            den += y * y;
        }
        res->rel_diff = den > 0 ? sqrt(num / den) : INFINITY;
        if (!isfinite(res->rel_diff)) res->rel_diff = INFINITY;
    }
done:
    free(h1);
    free(h2);
    attn_dev_free(q);
    attn_dev_free(out);
    attn_dev_free(out2);
    attn_dev_free(ws);
    if (b && b != b0) attn_batch_free(b);
    attn_batch_free(b0);
    attn_kv_free(&kv);
    return err;
}
