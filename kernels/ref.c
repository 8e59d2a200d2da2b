/* ref.c -- CPU side of the attention kernels: the float64 reference, fp16/fp8 decoding,
 * the small-q token-wise expansion and the output checker. Needs no GPU except
 * attn_check_output, which copies device tensors back through the attn.h helpers. */
#include "attn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int attn_decode_partition(int seq_len) { return seq_len >= 32768 ? 1024 : 256; }

double attn_fp16_to_double(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0) v = ldexp((double)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp((double)(m | 1024), e - 25);
    return s ? -v : v;
}

/* float -> fp16 bits, round to nearest even (finite inputs in fp16 range) */
static uint16_t double_to_fp16(double x) {
    uint16_t sign = x < 0 ? 0x8000 : 0;
    double a = fabs(x);
    if (a == 0) return sign;
    if (a >= 65520.0) return sign | 0x7c00;
    int e;
    frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    int ex = e - 1 + 15;
    if (ex <= 0) { /* subnormal: units of 2^-24 */
        double q = nearbyint(a * 16777216.0);
        return sign | (uint16_t)q;
    }
    double q = nearbyint(ldexp(a, 10 - (e - 1))); /* 1024 .. 2048 */
    if (q >= 2048) { q /= 2; ex++; }
    if (ex >= 31) return sign | 0x7c00;
    return sign | (uint16_t)(ex << 10) | (uint16_t)((int)q - 1024);
}

double attn_fp8e5m2_to_double(uint8_t raw, float scale) {
    /* the kernels compute half(raw << 8) * half(scale) in half arithmetic, rounded to fp16 */
    double h = attn_fp16_to_double((uint16_t)(raw << 8));
    double sc = attn_fp16_to_double(double_to_fp16(scale));
    return attn_fp16_to_double(double_to_fp16(h * sc));
}

void attn_ref_one(const float *q_vec, const float *keys, const float *vals, int num_keys, int ld, int head_dim,
                  double sm_scale, double *out_vec) {
    double *s = malloc((size_t)num_keys * sizeof(double));
    double mx = -INFINITY, sum = 0;
    for (int t = 0; t < num_keys; t++) {
        double acc = 0;
        const float *k = keys + (size_t)t * ld;
        for (int d = 0; d < head_dim; d++) acc += (double)q_vec[d] * k[d];
        s[t] = acc * sm_scale;
        if (s[t] > mx) mx = s[t];
    }
    for (int d = 0; d < head_dim; d++) out_vec[d] = 0;
    for (int t = 0; t < num_keys; t++) {
        double p = exp(s[t] - mx);
        sum += p;
        const float *v = vals + (size_t)t * ld;
        for (int d = 0; d < head_dim; d++) out_vec[d] += p * v[d];
    }
    for (int d = 0; d < head_dim; d++) out_vec[d] /= sum;
    free(s);
}

int attn_expand_rows(int num_rows, const int *q_len, const int *seq_len, int *out_seq_len, int *out_src_row) {
    int n = 0;
    for (int r = 0; r < num_rows; r++)
        for (int i = 0; i < q_len[r]; i++) {
            out_seq_len[n] = seq_len[r] - q_len[r] + 1 + i;
            out_src_row[n] = r;
            n++;
        }
    return n;
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static float *fp16_lut(void) {
    static float *lut;
    if (!lut) {
        float *t = malloc(65536 * sizeof(float));
        if (!t) return NULL;
        for (int i = 0; i < 65536; i++) t[i] = (float)attn_fp16_to_double((uint16_t)i);
        lut = t;
    }
    return lut;
}

/* gather row r's keys or values: dst[kvh][t][D] as float, t < L */
static int gather_row(const attn_kv *kv, const attn_batch *b, int r, const void *cache, float *dst,
                      unsigned char *blk) {
    int L = b->seq_len[r], P = kv->page, H = kv->kv_heads, D = kv->head_dim;
    size_t es = kv->dtype == ATTN_FP16 ? 2 : 1, bb = (size_t)P * H * D * es;
    const float *lut = fp16_lut();
    float lut8[256];
    if (!lut) return ATTN_ENOMEM;
    if (es == 1)
        for (int i = 0; i < 256; i++) lut8[i] = (float)attn_fp8e5m2_to_double((uint8_t)i, cache == kv->k ? kv->k_scale : kv->v_scale);
    for (int pi = 0; pi * P < L; pi++) {
        int blkid = b->block_table[(size_t)r * b->max_pages + pi];
        int err = attn_memcpy_d2h(blk, (const char *)cache + (size_t)blkid * bb, bb);
        if (err) return err;
        for (int slot = 0; slot < P && pi * P + slot < L; slot++) {
            int t = pi * P + slot;
            for (int h = 0; h < H; h++) {
                float *o = dst + ((size_t)h * L + t) * D;
                size_t base = ((size_t)slot * H + h) * D;
                if (es == 2) {
                    const uint16_t *src = (const uint16_t *)blk + base;
                    for (int d = 0; d < D; d++) o[d] = lut[src[d]];
                } else {
                    const uint8_t *src = blk + base;
                    for (int d = 0; d < D; d++) o[d] = lut8[src[d]];
                }
            }
        }
    }
    return 0;
}

int attn_check_output(const attn_kv *kv, const attn_batch *b, const void *q, const void *out, float sm_scale,
                      int max_samples, uint64_t seed, double *rel_err, long *bad) {
    int D = kv->head_dim, H = b->num_q_heads, group = H / kv->kv_heads, err = 0;
    double num = 0, den = 0;
    long nbad = 0;
    uint64_t s = seed;
    size_t es = kv->dtype == ATTN_FP16 ? 2 : 1;
    unsigned char *blk = malloc((size_t)kv->page * kv->kv_heads * D * es);
    uint16_t *qh = malloc(D * sizeof(uint16_t)), *oh = malloc(D * sizeof(uint16_t));
    float *qf = malloc(D * sizeof(float));
    double *ref = malloc(D * sizeof(double));
    if (!blk || !qh || !oh || !qf || !ref) { err = ATTN_ENOMEM; goto done; }
    for (int r = 0; r < b->num_rows && !err; r++) {
        int L = b->seq_len[r], qn = b->q_len[r];
        long all = (long)qn * H;
        long n = max_samples <= 0 ? all : (max_samples + b->num_rows - 1) / b->num_rows;
        if (n > all) n = all;
        size_t kvn = (size_t)kv->kv_heads * L * D;
        float *K = malloc(kvn * sizeof(float)), *V = malloc(kvn * sizeof(float));
        if (!K || !V) { free(K); free(V); err = ATTN_ENOMEM; break; }
        err = gather_row(kv, b, r, kv->k, K, blk);
        if (!err) err = gather_row(kv, b, r, kv->v, V, blk);
        for (long i = 0; i < n && !err; i++) {
            long pick = n == all ? i : (i == 0 ? all - 1 : (long)(rng_next(&s) % (uint64_t)all));
            int qi = (int)(pick / H), h = (int)(pick % H), kvh = h / group;
            size_t off = ((size_t)(b->q_start[r] + qi) * H + h) * D;
            if ((err = attn_memcpy_d2h(qh, (const uint16_t *)q + off, D * 2))) break;
            if ((err = attn_memcpy_d2h(oh, (const uint16_t *)out + off, D * 2))) break;
            for (int d = 0; d < D; d++) qf[d] = (float)attn_fp16_to_double(qh[d]);
            int nk = L - qn + qi + 1;
            attn_ref_one(qf, K + (size_t)kvh * L * D, V + (size_t)kvh * L * D, nk, D, D, sm_scale, ref);
            for (int d = 0; d < D; d++) {
                double o = attn_fp16_to_double(oh[d]);
                if (!isfinite(o)) { nbad++; continue; }
                num += (o - ref[d]) * (o - ref[d]);
                den += ref[d] * ref[d];
            }
        }
        free(K);
        free(V);
    }
    *rel_err = den > 0 ? sqrt(num / den) : INFINITY;
    *bad = nbad;
done:
    free(blk); free(qh); free(oh); free(qf); free(ref);
    return err;
}
