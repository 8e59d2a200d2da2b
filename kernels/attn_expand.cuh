// attn_expand.cuh -- the fp8 bridge's expansion: every page of each row of an fp8 KV cache
// expanded into an fp16 workspace laid out with page BRIDGE_PAGE and an identity block table,
// which the fp16 fast kernel then reads (attn_prefill.cu). The workspace: fp16 K, fp16 V, then
// the block table (rows x pages ints), 256-byte aligned as a whole (bridge_ws_bytes).
#pragma once
#include "attn.h"
#include "attn_common.cuh"

#define BRIDGE_PAGE 784

// expand one eighth of a destination page (98 of its 784 tokens, all kv heads) of one row from fp8
// to fp16: grid (pages x BRIDGE_PARTS, rows), U 16-byte chunks (2U loads) in flight a thread. A CTA
// per page is a ~100-step latency chain (a flat ~75 us for 2 kv heads below ~30K tokens, 2-40 CTAs
// on 132 SMs). Measured (kernels/results/bench_expand.txt, 2 kv heads, ms at 4K / 16K / 41K /
// 104K / 262K tokens): a CTA per page 0.076 / 0.081 / 0.090 / 0.119 / 0.240; 8 parts U=1 8 per SM
// (the library's) 0.016 / 0.023 / 0.052 / 0.126 / 0.311; 8 parts U=4 4 per SM 0.017 / 0.029 / 0.065
// / 0.135 / 0.316 (kernels/dev/expand_ab.cu times the three). Splitting wins below ~100K and loses
// beyond (a CTA per page streams a whole page); attn.h's ATTN_BRIDGE_* say which kernel runs to
// calib and the cost model.
#define BRIDGE_PARTS (BRIDGE_PAGE / ATTN_BRIDGE_CTA_TOKENS)
static_assert(BRIDGE_PARTS * ATTN_BRIDGE_CTA_TOKENS == BRIDGE_PAGE, "whole tokens per part");
__device__ __forceinline__ void fp8_expand16(uint4 raw, half2 sc, half *d) {
    uint4 a, b;
    a.x = fp8x2_to_half2(raw.x, 0x1404, sc); a.y = fp8x2_to_half2(raw.x, 0x3424, sc);
    a.z = fp8x2_to_half2(raw.y, 0x1404, sc); a.w = fp8x2_to_half2(raw.y, 0x3424, sc);
    b.x = fp8x2_to_half2(raw.z, 0x1404, sc); b.y = fp8x2_to_half2(raw.z, 0x3424, sc);
    b.z = fp8x2_to_half2(raw.w, 0x1404, sc); b.w = fp8x2_to_half2(raw.w, 0x3424, sc);
    *(uint4 *)d = a;
    *(uint4 *)(d + 8) = b;
}
template <int PARTS, int U, int OCC, int D = ATTN_D>
__global__ void __launch_bounds__(256, OCC)
fp8_expand_kernel(const uint8_t *k8, const uint8_t *v8, half *k16, half *v16, int *bt16, const int *block_table,
                  int max_pages, int page, const int *seq_len, int kv_heads, int mp16, float k_scale, float v_scale) {
    constexpr int CT = BRIDGE_PAGE / PARTS; // tokens per CTA
    int r = blockIdx.y, pg = blockIdx.x / PARTS, part = blockIdx.x % PARTS;
    int L = seq_len[r];
    int p0 = pg * BRIDGE_PAGE, t0 = p0 + part * CT; // the page's and this part's first token
    if (t0 >= L) return;
    int dblk = r * mp16 + pg;
    if (part == 0 && threadIdx.x == 0) bt16[dblk] = dblk;
    int ntok = min(CT, L - t0);
    int cpt = kv_heads * (D / 16); // 16-byte fp8 chunks per token
    int n = ntok * cpt;
    half2 ks = __float2half2_rn(k_scale), vs = __float2half2_rn(v_scale);
    const int *bt_row = block_table + (size_t)r * max_pages;
    for (int base = threadIdx.x; base < n; base += U * 256) {
        uint4 kr[U], vr[U];
        size_t dst[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int idx = base + u * 256;
            dst[u] = ~(size_t)0;
            if (idx < n) {
                int tok = idx / cpt, c = idx % cpt;
                int t = t0 + tok, pi = t / page, slot = t - pi * page;
                size_t src = ((size_t)bt_row[pi] * page + slot) * kv_heads * D + c * 16;
                dst[u] = ((size_t)dblk * BRIDGE_PAGE + (t - p0)) * kv_heads * D + c * 16;
                kr[u] = __ldg((const uint4 *)(k8 + src));
                vr[u] = __ldg((const uint4 *)(v8 + src));
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (dst[u] == ~(size_t)0) continue;
            fp8_expand16(kr[u], ks, k16 + dst[u]);
            fp8_expand16(vr[u], vs, v16 + dst[u]);
        }
    }
}

static inline int bridge_pages(const attn_batch *b) { return (b->max_seq + BRIDGE_PAGE - 1) / BRIDGE_PAGE; }

// the bridge's expansion workspace (fp16 K, V and the identity block table), 256-byte aligned
static inline size_t bridge_ws_bytes(const attn_kv *kv, const attn_batch *b) {
    size_t blocks = (size_t)b->num_rows * bridge_pages(b);
    size_t half_bytes = blocks * BRIDGE_PAGE * kv->kv_heads * kv->head_dim * 2;
    return (2 * half_bytes + blocks * sizeof(int) + 255) / 256 * 256;
}

// the parts of workspace ws for batch b
struct BridgeWs {
    half *k16, *v16; // [rows x pages, BRIDGE_PAGE, kv_heads, D]
    int *bt16;       // [rows, pages]: identity
    int pages;       // destination pages per row
};
static inline BridgeWs bridge_ws(const attn_kv *kv, const attn_batch *b, void *ws) {
    BridgeWs w;
    w.pages = bridge_pages(b);
    size_t nhalf = (size_t)b->num_rows * w.pages * BRIDGE_PAGE * kv->kv_heads * kv->head_dim;
    w.k16 = (half *)ws;
    w.v16 = w.k16 + nhalf;
    w.bt16 = (int *)(w.v16 + nhalf);
    return w;
}
