// sm70_launches.cu -- the tile engine's kernels a GPU with sm_70's shared memory (96 KB a block,
// 96 KB an SM) launches, as the launchers pick them (attn_cfg_pick; decode: attn_two_per_sm), one
// line each: the mangled-name fragment of attn_wmma_kernel<MR, BN, MODE, PLAN, FP8, DEC, OCC, D>,
// its dynamic shared memory in bytes, the route and head_dim D (64, 128, 256). kernels/check_sm70.sh reads it. Host code only:
// needs no GPU. Every other kernel (scalar decode, reduce, combine, merge, expansion) runs on
// every GPU.
#include "attn.h"
#include "attn_common.cuh"
#include <stdio.h>

#define SM70_SMEM (96 * 1024)

int main(void) {
    static const struct {
        int route, fp8_too, dec;
        const char *name;
    } routes[] = {{ATTN_PREFILL_GENERIC, 1, 0, "prefill-generic"},
                  {ATTN_PREFILL_LOWSMEM, 1, 0, "prefill-lowsmem"},
                  {ATTN_PREFILL_FAST, 0, 0, "prefill-bm32/fp8-bridge"},
                  {ATTN_DECODE_XQA, 1, 1, "decode-xqa"},
                  {ATTN_DECODE_SMALLQ, 1, 1, "decode-smallq"}};
    static const int dims[] = {64, 128, 256};
    for (int d : dims)
        for (const auto &r : routes) {
            int i = attn_cfg_pick(r.route, SM70_SMEM, d);
            if (i < 0) {
                printf("none 0 %s D%d\n", r.name, d);
                continue;
            }
            KCfg c = attn_cfg(r.route, i);
            KCfg two = r.route == ATTN_DECODE_XQA ? ATTN_XQA_TWO_PER_SM : ATTN_SMALLQ_TWO_PER_SM;
            if (r.dec && attn_two_per_sm(two, i, SM70_SMEM, SM70_SMEM, d)) c = two;
            for (int fp8 = 0; fp8 <= r.fp8_too; fp8++)
                printf("attn_wmma_kernelILi%dELi%dELi%dELi%dELb%dELb%dELi%dELi%dE %d %s%s D%d\n", c.mr, c.bn, c.mode,
                       c.plan, fp8, r.dec, c.occ, d, attn_cfg_bytes(c, d), r.name, fp8 ? " fp8" : "", d);
        }
    return 0;
}
