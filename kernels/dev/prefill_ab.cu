// prefill_ab.cu -- the prefill fast path's A/B variants against the library's kernel.
// Each variant is the tile engine (attn_common.cuh) at BM 32 on the fast path's grid, unsplit
// (grid y = 1), fp16, with other staging, plan flags or CTAs per SM; kernels/NOTES.md (v6, v7)
// has the measurements and why the library's won. Rows: the library's kernel as attn_run runs it
// (the walk split by kernels/attn_split.h) and unsplit (ATTN_PREFILL_SPLIT=1), then each variant,
// each shape twice (drift within the run shows).
//     bin/dev/prefill_ab [NAME,NAME,...]     (no list: every variant)
#include "dev_common.cuh"

struct PrefillVar {
    const char *name;
    KCfg c;
    attn_kernel_t k;
};

#define PREFILL_VAR(name, BN, MODE, PLAN, OCC) \
    {name, {32, BN, MODE, PLAN, OCC}, attn_wmma_kernel<32, BN, MODE, PLAN, false, false, OCC>}
static const PrefillVar vars[] = {
    // two K/V tiles staged through registers (175 KB: sm_90 / sm_10x only)
    PREFILL_VAR("pipe", 128, KV_PIPE, 0, 1),
    // K and V taking turns in one tile, 2 CTAs per SM; and with the K/V loads skipping L1
    PREFILL_VAR("shared2", 128, KV_SHARED, 0, 2),
    PREFILL_VAR("shared2na", 128, KV_SHARED, PL_NOL1, 2),
    // one K/V tile through registers, S in the K/V tile, and subsets of the tile loop's flags
    PREFILL_VAR("v6", 128, KV_PHASE, PL_SALIAS, 1),
    PREFILL_VAR("na", 128, KV_PHASE, PL_SALIAS | PL_NOL1, 1),
    PREFILL_VAR("v7q", 128, KV_PHASE, PL_SALIAS | PL_QREG, 1),
    PREFILL_VAR("v7s", 128, KV_PHASE, PL_SALIAS | PL_SPAD | PL_ASKIP, 1),
    PREFILL_VAR("v7", 128, KV_PHASE, PL_SALIAS | PL_QREG | PL_SPAD | PL_ASKIP, 1),
    PREFILL_VAR("v7ns", 128, KV_PHASE, PL_QREG | PL_SPAD | PL_ASKIP, 1),
    PREFILL_VAR("v7m", 128, KV_PHASE, PL_SALIAS | PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM, 1),
    PREFILL_VAR("v7nsm", 128, KV_PHASE, PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM, 1),
    PREFILL_VAR("v7nsmx", 128, KV_PHASE, PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM | PL_EX2, 1),
    // the library's tile loop without the split flag
    PREFILL_VAR("v7x", 128, KV_PHASE, PL_SALIAS | PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM | PL_EX2, 1),
    // BN 64 at 2 CTAs per SM (not the specified BN 128)
    PREFILL_VAR("phase64x2", 64, KV_PHASE, PL_SALIAS, 2),
    PREFILL_VAR("phase64x2na", 64, KV_PHASE, PL_SALIAS | PL_NOL1, 2),
};

// the variant on the fast path's unsplit grid: (ceil(max_q / 32), 1, rows x H)
static int launch_var(const void *variant, const DevInputs &in) {
    const PrefillVar *v = (const PrefillVar *)variant;
    int smem = attn_cfg_bytes(v->c);
    if (smem > attn_smem_budget()) return ATTN_ESMEM;
    if (attn_set_smem((const void *)v->k, smem)) return ATTN_ECUDA;
    AttnParams p;
    attn_params_init(&p, &in.kv, in.b, in.q, in.out, DEV_SCALE);
    dim3 grid((in.b->max_q + v->c.mr - 1) / v->c.mr, 1, in.b->num_rows * p.H);
    v->k<<<grid, ATTN_NT, smem>>>(p);
    return cuda_check(cudaGetLastError());
}

// the library's fast path (as attn_run runs it)
static int launch_lib(const void *, const DevInputs &in) {
    return attn_run(ATTN_PREFILL_FAST, &in.kv, in.b, in.q, in.out, DEV_SCALE, in.ws, in.ws_bytes, 0, NULL);
}

int main(int argc, char **argv) {
    static const DevShape shapes[] = {{"q=784 ctx 104000 p784", ATTN_FP16, 784, 784, 104000},
                                      {"q=704 ctx 104000 p784", ATTN_FP16, 784, 704, 104000},
                                      {"q=2048 ctx 131072 p784", ATTN_FP16, 784, 2048, 131072},
                                      {"q=784 ctx 16384 p784", ATTN_FP16, 784, 784, 16384}};
    if (!dev_start()) return 0;
    for (int pass = 0; pass < 2; pass++)
        for (const DevShape &sh : shapes) {
            DevInputs in;
            if (!dev_open(&in, sh, ATTN_PREFILL_FAST)) continue;
            unsetenv("ATTN_PREFILL_SPLIT");
            dev_row(sh.label, "library", in, launch_lib, nullptr, NULL);
            setenv("ATTN_PREFILL_SPLIT", "1", 1);
            dev_row(sh.label, "library unsplit", in, launch_lib, nullptr, NULL);
            unsetenv("ATTN_PREFILL_SPLIT");
            for (const PrefillVar &v : vars)
                if (dev_wanted(argc, argv, v.name)) dev_row(sh.label, v.name, in, launch_var, &v, NULL);
            dev_free(&in);
        }
    return 0;
}
