/* hwcat: a catalogue of GPUs and interconnects by their datasheet figures, for pricing a
 * deployment no profile measured (the analytic cost model, cost_analytic.c) and the
 * all-reduce of a profile that measured none.  Every figure carries its source (the
 * vendor's datasheet, a standard, or NCCL's own latency model); docs/hardware.md lists them.
 *
 * Conventions (the catalogue's, stated once):
 *   - FLOP/s are dense (the datasheets' "with sparsity" figures halved), tensor-core, per GPU.
 *   - A link's bytes_per_s is one direction's bandwidth per GPU: what a ring all-reduce's
 *     steps send while they receive as much (datasheets quote NVLink and PCIe both ways:
 *     NVLink 4's "900 GB/s" is 450 GB/s each way).  Network links: the line rate / 8.
 *   - A link's latency_s is one step of a ring (one hop): NCCL's own model of the link
 *     (NVIDIA/nccl:src/graph/tuning.cc@b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2, hwLat, ring,
 *     LL protocol: NVLink 0.6 us, PCI 1.0 us, network 2.7 us); a typical figure, not measured here.
 *   - Memory capacity in GiB as the datasheet names it (HBM "80GB" parts are 80 GiB: an H100
 *     80GB reports 81,559 MiB to CUDA, the H200's calibration 139.8 GiB of "141GB").
 * Invariant: the tables are constant; lookups are by exact lower-case name or an alias. */
#ifndef PACESIM_HWCAT_H
#define PACESIM_HWCAT_H

typedef struct hw_link {
    const char *name;
    double bytes_per_s;           /* one direction, per GPU */
    double latency_s;             /* one ring step (hop) */
    const char *source;
} hw_link_t;

/* The link preset of that name ("nvlink4", "pcie5", "ib-400", "roce-200", ...; aliases such
 * as "ib-ndr"), or NULL. */
const hw_link_t *hw_link_find(const char *name);
/* The i-th link preset (0..), NULL past the last. */
const hw_link_t *hw_link_at(int i);

typedef struct hw_gpu {
    const char *name;             /* the scenario's `gpu:` value, e.g. "h100-sxm" */
    const char *full;             /* the product, e.g. "NVIDIA H100 SXM5 80GB" */
    double fp16_flops;            /* dense FP16/BF16 tensor-core FLOP/s */
    double fp8_flops;             /* dense FP8 tensor-core FLOP/s (0: none) */
    double mem_bw;                /* memory bandwidth, bytes/s */
    double mem_gib;               /* memory capacity, GiB */
    int sms;                      /* streaming multiprocessors (compute units on AMD) */
    const char *link;             /* its interconnect among the GPUs of one node (a link preset) */
    const char *source;           /* the datasheet */
} hw_gpu_t;

/* The GPU of that name ("h100-sxm", "h200", "a100-80gb", ...), or NULL. */
const hw_gpu_t *hw_gpu_find(const char *name);
/* The i-th GPU (0..), NULL past the last. */
const hw_gpu_t *hw_gpu_at(int i);
/* The catalogue GPU a profile's `gpu:` string (the CUDA device name calib recorded, e.g.
 * "NVIDIA H200", "Tesla V100-PCIE-32GB") names, or NULL when none is recognised. */
const hw_gpu_t *hw_gpu_match(const char *device);
/* The GPU names, comma-separated, for an error message. */
const char *hw_gpu_names(void);
/* The link names, comma-separated. */
const char *hw_link_names(void);

/* NCCL's ring all-reduce base latency (LL protocol; tuning.cc baseLat), seconds. */
#define HW_ALLREDUCE_BASE_S 6.6e-6
/* One ring all-reduce of `bytes` over n GPUs joined by link l:
 *   base + 2(n-1) hops of latency + 2(n-1)/n x bytes / bandwidth
 * (reduce-scatter then all-gather, each n-1 steps of bytes/n).  0 for n <= 1. */
double hw_allreduce_s(const hw_link_t *l, int n, double bytes);

#endif
