// expand_ab.cu -- the fp8 bridge's expansion (attn_expand.cuh) in other shapes against the
// library's: a CTA per page (one chunk in flight, 8 per SM), and 8 parts a page with four chunks
// in flight (4 per SM). Each variant's workspace (fp16 K, V, block table) must equal the library's
// byte for byte (ATTN_FP8_EXPAND, the route that runs the expansion alone); then it is timed, at
// prefixes short to long (the library's split wins below ~100K tokens and loses beyond:
// kernels/NOTES.md v6). Every length twice (drift shows).
//     bin/dev/expand_ab [NAME,NAME,...]     (no list: every variant)
#include "attn_expand.cuh"
#include "dev_common.cuh"

struct ExpandVar {
    const char *name;
    int parts;
    void (*k)(const uint8_t *, const uint8_t *, half *, half *, int *, const int *, int, int, const int *, int, int,
              float, float);
};
static const ExpandVar vars[] = {{"page", 1, fp8_expand_kernel<1, 1, 8>}, {"p8u4", 8, fp8_expand_kernel<8, 4, 4>}};

static int launch_var(const void *variant, const DevInputs &in) {
    const ExpandVar *v = (const ExpandVar *)variant;
    BridgeWs w = bridge_ws(&in.kv, in.b, in.ws);
    dim3 grid(w.pages * v->parts, in.b->num_rows);
    v->k<<<grid, 256>>>((const uint8_t *)in.kv.k, (const uint8_t *)in.kv.v, w.k16, w.v16, w.bt16,
                        (const int *)in.b->d_block_table, in.b->max_pages, in.kv.page, (const int *)in.b->d_seq_len,
                        in.kv.kv_heads, w.pages, in.kv.k_scale, in.kv.v_scale);
    return cuda_check(cudaGetLastError());
}

static int launch_lib(const void *, const DevInputs &in) {
    return attn_run(ATTN_FP8_EXPAND, &in.kv, in.b, in.q, in.out, DEV_SCALE, in.ws, in.ws_bytes, 0, NULL);
}

// the workspace f writes, copied to the host (malloc'd; NULL on an error)
static unsigned char *expanded(const DevInputs &in, dev_launch_t f, const void *variant) {
    unsigned char *h = (unsigned char *)malloc(in.ws_bytes);
    if (!h || attn_fill_bytes(in.ws, in.ws_bytes, 0) || f(variant, in) || attn_sync() ||
        attn_memcpy_d2h(h, in.ws, in.ws_bytes)) {
        free(h);
        return NULL;
    }
    return h;
}

int main(int argc, char **argv) {
    static const int lens[] = {4096, 12040, 16384, 41285, 104032, 262144};
    if (!dev_start()) return 0;
    for (int pass = 0; pass < 2; pass++)
        for (int len : lens) {
            char label[64];
            snprintf(label, sizeof label, "expand q=784 ctx %d p1568", len);
            DevShape sh = {label, ATTN_FP8_E5M2, 1568, 784, len};
            DevInputs in;
            if (!dev_open(&in, sh, ATTN_FP8_EXPAND)) continue;
            unsigned char *ref = expanded(in, launch_lib, nullptr);
            if (!ref) {
                printf("%s: the library's expansion failed\n", label);
                dev_free(&in);
                continue;
            }
            dev_row(label, "library", in, launch_lib, nullptr, "the reference");
            for (const ExpandVar &v : vars) {
                if (!dev_wanted(argc, argv, v.name)) continue;
                unsigned char *got = expanded(in, launch_var, &v);
                if (!got || memcmp(got, ref, in.ws_bytes))
                    printf("| %-28s | %-22s | workspace differs from the library's: FAIL\n", label, v.name);
                else
                    dev_row(label, v.name, in, launch_var, &v, "workspace = the library's");
                free(got);
            }
            free(ref);
            dev_free(&in);
        }
    return 0;
}
