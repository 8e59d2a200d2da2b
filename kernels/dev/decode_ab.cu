// decode_ab.cu -- the decode routes' A/B variants against the library's kernels.
// Each variant is the tile engine (attn_common.cuh) on the route's grid (XQA MR 16, small-q MR 32:
// the grid depends on MR) with another tile width, staging, plan or CTAs per SM, launched through
// attn_decode_launch_with (the library's grid, partitions and reduce); the library's own kernel
// also with each reduce forced, and with none (timing only, not checked). kernels/NOTES.md (v4,
// v5, v6) has the measurements and why the library's won. Every shape twice (drift shows).
//     bin/dev/decode_ab [NAME,NAME,...]     (no list: every variant)
#include "dev_common.cuh"

struct DecodeVar {
    const char *name;
    int route;
    KCfg c;
    attn_kernel_t k16, k8; // nullptr: the library's choice (k16 and k8 both) or not built for fp8
    int reduce;
};

#define XQA_VAR(name, BN, MODE, PLAN, OCC)                                                                          \
    {name, ATTN_DECODE_XQA, {16, BN, MODE, PLAN, OCC}, attn_wmma_kernel<16, BN, MODE, PLAN, false, true, OCC>,    \
     attn_wmma_kernel<16, BN, MODE, PLAN, true, true, OCC>, ATTN_REDUCE_AUTO}
#define SMALLQ_VAR(name, MODE, PLAN, OCC)                                                                           \
    {name, ATTN_DECODE_SMALLQ, {32, 64, MODE, PLAN, OCC}, attn_wmma_kernel<32, 64, MODE, PLAN, false, true, OCC>, \
     attn_wmma_kernel<32, 64, MODE, PLAN, true, true, OCC>, ATTN_REDUCE_AUTO}
#define LIB_VAR(name, route, reduce) {name, route, {0, 0, 0, 0, 0}, nullptr, nullptr, reduce}
static const DecodeVar vars[] = {
    LIB_VAR("library", ATTN_DECODE_XQA, ATTN_REDUCE_AUTO),
    LIB_VAR("library, rows reduce", ATTN_DECODE_XQA, ATTN_REDUCE_ROWS),
    LIB_VAR("library, combine", ATTN_DECODE_XQA, ATTN_REDUCE_COMBINE),
    LIB_VAR("library, no reduce", ATTN_DECODE_XQA, ATTN_REDUCE_NONE),
    // the list's entry 0 (two K/V tiles through registers: PIPE2), as sm_70 runs it, and at 2 per SM
    XQA_VAR("pipe2 occ1", 64, KV_PIPE2, 0, 1),
    XQA_VAR("pipe2 occ2", 64, KV_PIPE2, 0, 2),
    // PIPE2 with the next K stored right after S (fp16 only)
    {"earlyk occ1", ATTN_DECODE_XQA, {16, 64, KV_PIPE2, PL_EARLYK, 1},
     attn_wmma_kernel<16, 64, KV_PIPE2, PL_EARLYK, false, true, 1>, nullptr, ATTN_REDUCE_AUTO},
    {"earlyk occ2", ATTN_DECODE_XQA, {16, 64, KV_PIPE2, PL_EARLYK, 2},
     attn_wmma_kernel<16, 64, KV_PIPE2, PL_EARLYK, false, true, 2>, nullptr, ATTN_REDUCE_AUTO},
    // S shared by all 8 warps over slices of D (PL_SSPLIT), BN 32, one-stage PIPE, one K/V tile
    XQA_VAR("split occ1", 64, KV_PIPE2, PL_SSPLIT, 1),
    XQA_VAR("split occ2", 64, KV_PIPE2, PL_SSPLIT, 2),
    XQA_VAR("bn32 occ1", 32, KV_PIPE2, PL_SSPLIT, 1),
    XQA_VAR("bn32 occ2", 32, KV_PIPE2, PL_SSPLIT, 2),
    XQA_VAR("bn32 occ3", 32, KV_PIPE2, PL_SSPLIT, 3),
    XQA_VAR("bn32n occ1", 32, KV_PIPE2, 0, 1),
    XQA_VAR("bn32n occ2", 32, KV_PIPE2, 0, 2),
    XQA_VAR("bn32n occ3", 32, KV_PIPE2, 0, 3),
    XQA_VAR("pipe occ1", 64, KV_PIPE, PL_SSPLIT, 1),
    XQA_VAR("pipe occ2", 64, KV_PIPE, PL_SSPLIT, 2),
    XQA_VAR("phase occ1", 64, KV_PHASE, 0, 1),
    XQA_VAR("phase occ2", 64, KV_PHASE, 0, 2),
    XQA_VAR("phase occ3", 64, KV_PHASE, 0, 3),
    XQA_VAR("phases occ1", 64, KV_PHASE, PL_SSPLIT, 1),
    XQA_VAR("phases occ2", 64, KV_PHASE, PL_SSPLIT, 2),
    XQA_VAR("phases occ3", 64, KV_PHASE, PL_SSPLIT, 3),
    // the library's sm_80+ configuration (ATTN_XQA_TWO_PER_SM) at 1 and 3 CTAs per SM
    XQA_VAR("phasena occ1", 64, KV_PHASE, PL_NOL1, 1),
    XQA_VAR("phasena occ3", 64, KV_PHASE, PL_NOL1, 3),
    LIB_VAR("library", ATTN_DECODE_SMALLQ, ATTN_REDUCE_AUTO),
    // the list's entry 0 as sm_70 runs it and at 2 per SM; one K/V tile with L1 kept
    SMALLQ_VAR("pipe2 occ1", KV_PIPE2, 0, 1),
    SMALLQ_VAR("pipe2 occ2", KV_PIPE2, 0, 2),
    SMALLQ_VAR("phase2", KV_PHASE, 0, 2),
};

static int launch_var(const void *variant, const DevInputs &in) {
    const DecodeVar *v = (const DecodeVar *)variant;
    attn_kernel_t k = in.kv.dtype == ATTN_FP8_E5M2 ? v->k8 : v->k16;
    int smem = 0;
    if (v->k16) { // a variant: it must fit the device's block, and its CTAs per SM the SM
        int per_sm = attn_smem_per_sm();
        smem = attn_cfg_bytes(v->c);
        if (!k || smem > attn_smem_budget() || (per_sm > 0 && v->c.occ * (smem + 1024) > per_sm)) return ATTN_ESMEM;
    }
    return attn_decode_launch_with(v->route, k, smem, v->reduce, &in.kv, in.b, in.q, in.out, DEV_SCALE, in.ws,
                                   in.ws_bytes, NULL);
}

int main(int argc, char **argv) {
    static const struct {
        DevShape sh;
        int route;
    } shapes[] = {{{"q=1 ctx 240000 p784", ATTN_FP16, 784, 1, 240000}, ATTN_DECODE_XQA},
                  {{"q=1 ctx 240000 p1568 fp8", ATTN_FP8_E5M2, 1568, 1, 240000}, ATTN_DECODE_XQA},
                  {{"q=1 ctx 131072 p784", ATTN_FP16, 784, 1, 131072}, ATTN_DECODE_XQA},
                  {{"verify q=5 ctx 240000 p816", ATTN_FP16, 816, 5, 240000}, ATTN_DECODE_SMALLQ},
                  {{"verify q=16 ctx 240000 p816", ATTN_FP16, 816, 16, 240000}, ATTN_DECODE_SMALLQ}};
    if (!dev_start()) return 0;
    for (int pass = 0; pass < 2; pass++)
        for (const auto &s : shapes) {
            DevInputs in;
            if (!dev_open(&in, s.sh, s.route)) continue;
            for (const DecodeVar &v : vars)
                if (v.route == s.route && !(s.sh.dtype == ATTN_FP8_E5M2 && v.k16 && !v.k8) &&
                    (!strcmp(v.name, "library") || dev_wanted(argc, argv, v.name)))
                    dev_row(s.sh.label, v.name, in, launch_var, &v,
                            v.reduce == ATTN_REDUCE_NONE ? "timing only: out not written" : NULL);
            dev_free(&in);
        }
    return 0;
}
