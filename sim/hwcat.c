/* hwcat.c: the GPU and interconnect catalogue (conventions in hwcat.h; the same figures with
 * their sources in docs/hardware.md).  "*" in a source: the datasheet quotes the figure with
 * 2:1 structured sparsity, the table holds half of it (dense). */
#include <ctype.h>
#include <string.h>
#include "hwcat.h"

/* NCCL's per-hop ring latencies (LL protocol), NVIDIA/nccl:src/graph/tuning.cc@b6475625 hwLat */
#define NCCL_TUNING "NVIDIA/nccl:src/graph/tuning.cc@b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2 (hwLat, ring, LL)"
#define LAT_NVLINK 0.6e-6
#define LAT_PCI 1.0e-6
#define LAT_NET 2.7e-6

static const hw_link_t LINKS[] = {
    { "nvlink2", 150e9, LAT_NVLINK,
      "NVLink 2 (V100 SXM2): 300 GB/s a GPU both ways, NVIDIA Tesla V100 datasheet "
      "(images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf); "
      "latency 0.6 us a hop: " NCCL_TUNING },
    { "nvlink3", 300e9, LAT_NVLINK,
      "NVLink 3 (A100 SXM): 600 GB/s a GPU both ways, NVIDIA A100 datasheet "
      "(nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf); "
      "latency 0.6 us a hop: " NCCL_TUNING },
    { "nvlink4", 450e9, LAT_NVLINK,
      "NVLink 4 (H100/H200 SXM): 900 GB/s a GPU both ways, NVIDIA H100 and H200 datasheets "
      "(resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet, nvidia.com/en-us/data-center/h200/); "
      "latency 0.6 us a hop: " NCCL_TUNING },
    { "nvlink5", 900e9, LAT_NVLINK,
      "NVLink 5 (B200): 1.8 TB/s a GPU both ways, NVIDIA HGX B200 specifications "
      "(nvidia.com/en-us/data-center/hgx/); latency 0.6 us a hop: " NCCL_TUNING },
    { "pcie3", 15.75e9, LAT_PCI,
      "PCIe 3.0 x16: 8 GT/s x 16 lanes, 128b/130b = 15.75 GB/s each way (PCI-SIG PCIe 3.0 base "
      "specification; V100 PCIe datasheet: 32 GB/s both ways); latency 1.0 us a hop: " NCCL_TUNING },
    { "pcie4", 31.5e9, LAT_PCI,
      "PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s each way (PCI-SIG PCIe 4.0 base "
      "specification; A10 and L40S datasheets: 64 GB/s both ways); latency 1.0 us a hop: " NCCL_TUNING },
    { "pcie5", 63e9, LAT_PCI,
      "PCIe 5.0 x16: 32 GT/s x 16 lanes, 128b/130b = 63 GB/s each way (PCI-SIG PCIe 5.0 base "
      "specification; H100 PCIe datasheet: 128 GB/s both ways); latency 1.0 us a hop: " NCCL_TUNING },
    { "ib-100", 12.5e9, LAT_NET,
      "InfiniBand EDR, 100 Gb/s a port = 12.5 GB/s each way (InfiniBand Trade Association roadmap; "
      "NVIDIA ConnectX-6 datasheet); latency 2.7 us a hop: " NCCL_TUNING " (network)" },
    { "ib-200", 25e9, LAT_NET,
      "InfiniBand HDR, 200 Gb/s a port = 25 GB/s each way (InfiniBand Trade Association roadmap; "
      "NVIDIA ConnectX-6 datasheet); latency 2.7 us a hop: " NCCL_TUNING " (network)" },
    { "ib-400", 50e9, LAT_NET,
      "InfiniBand NDR, 400 Gb/s a port = 50 GB/s each way (InfiniBand Trade Association roadmap; "
      "NVIDIA ConnectX-7 datasheet); latency 2.7 us a hop: " NCCL_TUNING " (network)" },
    { "roce-100", 12.5e9, LAT_NET,
      "RoCE over 100 Gb/s Ethernet (IEEE 802.3 100GBASE) = 12.5 GB/s each way; latency: NCCL's network "
      "figure, 2.7 us a hop (" NCCL_TUNING "), an assumption for RoCE (NCCL does not tell RoCE from InfiniBand)" },
    { "roce-200", 25e9, LAT_NET,
      "RoCE over 200 Gb/s Ethernet (IEEE 802.3 200GBASE) = 25 GB/s each way; latency: NCCL's network "
      "figure, 2.7 us a hop (" NCCL_TUNING "), an assumption for RoCE" },
    { "roce-400", 50e9, LAT_NET,
      "RoCE over 400 Gb/s Ethernet (IEEE 802.3 400GBASE) = 50 GB/s each way; latency: NCCL's network "
      "figure, 2.7 us a hop (" NCCL_TUNING "), an assumption for RoCE" },
    { "infinity-fabric", 448e9, LAT_NVLINK,
      "AMD Infinity Fabric (MI300X): 7 links of 128 GB/s both ways = 448 GB/s each way, AMD Instinct MI300X "
      "datasheet (amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf); "
      "latency: NCCL's NVLink figure, 0.6 us a hop, an assumption (RCCL's own not sourced here)" },
};
#define NLINKS (int)(sizeof LINKS / sizeof LINKS[0])

static const struct { const char *alias, *name; } LINK_ALIAS[] = {
    { "ib-edr", "ib-100" }, { "ib-hdr", "ib-200" }, { "ib-ndr", "ib-400" },
    { "pcie-gen3", "pcie3" }, { "pcie-gen4", "pcie4" }, { "pcie-gen5", "pcie5" },
};

#define H100_DS "NVIDIA H100 Tensor Core GPU datasheet (resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet)"
#define A100_DS "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)"
#define V100_DS "NVIDIA Tesla V100 datasheet (images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf)"

static const hw_gpu_t GPUS[] = {
    { "h100-sxm", "NVIDIA H100 SXM5 80GB", 989.5e12, 1979e12, 3.35e12, 80, 132, "nvlink4",
      H100_DS ": H100 SXM FP16/BF16 1,979 TFLOPS*, FP8 3,958 TFLOPS*, 80 GB HBM3 at 3.35 TB/s, NVLink 900 GB/s" },
    { "h100-pcie", "NVIDIA H100 PCIe 80GB", 756.5e12, 1513e12, 2.0e12, 80, 114, "pcie5",
      H100_DS ", H100 PCIe column: FP16/BF16 1,513 TFLOPS*, FP8 3,026 TFLOPS*, 80 GB HBM2e at 2 TB/s, PCIe Gen5 128 GB/s" },
    { "h200", "NVIDIA H200 SXM 141GB", 989.5e12, 1979e12, 4.8e12, 141, 132, "nvlink4",
      "NVIDIA H200 Tensor Core GPU (nvidia.com/en-us/data-center/h200/): H200 SXM FP16/BF16 1,979 TFLOPS*, "
      "FP8 3,958 TFLOPS*, 141 GB HBM3e at 4.8 TB/s, NVLink 900 GB/s" },
    { "b200", "NVIDIA B200 (HGX B200, 180GB)", 2250e12, 4500e12, 8.0e12, 180, 148, "nvlink5",
      "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx/), 8 GPUs: FP16/BF16 36 PFLOPS*, "
      "FP8 72 PFLOPS*, 1.44 TB HBM3e, NVLink 1.8 TB/s a GPU; NVIDIA DGX B200 datasheet: 64 TB/s HBM3e for 8 GPUs" },
    { "a100-40gb", "NVIDIA A100 SXM4 40GB", 312e12, 0, 1.555e12, 40, 108, "nvlink3",
      A100_DS ": FP16/BF16 312 TFLOPS (624*), 40 GB HBM2 at 1,555 GB/s, NVLink 600 GB/s" },
    { "a100-80gb", "NVIDIA A100 SXM4 80GB", 312e12, 0, 2.039e12, 80, 108, "nvlink3",
      A100_DS ": FP16/BF16 312 TFLOPS (624*), 80 GB HBM2e at 2,039 GB/s (SXM), NVLink 600 GB/s" },
    { "l40s", "NVIDIA L40S 48GB", 362.05e12, 733e12, 0.864e12, 48, 142, "pcie4",
      "NVIDIA L40S datasheet (resources.nvidia.com/en-us-l40s/l40s-datasheet-28413): BF16/FP16 tensor "
      "362.05 TFLOPS (733*), FP8 733 TFLOPS (1,466*), 48 GB GDDR6 at 864 GB/s, PCIe Gen4 x16 64 GB/s" },
    { "a10", "NVIDIA A10 24GB", 125e12, 0, 0.600e12, 24, 72, "pcie4",
      "NVIDIA A10 datasheet (nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf): "
      "BF16/FP16 tensor 125 TFLOPS (250*), 24 GB GDDR6 at 600 GB/s, PCIe Gen4 64 GB/s" },
    { "v100-pcie", "NVIDIA Tesla V100 PCIe 32GB", 112e12, 0, 0.900e12, 32, 80, "pcie3",
      V100_DS ", V100 PCIe: tensor 112 TFLOPS, 32 GB HBM2 at 900 GB/s, PCIe 32 GB/s" },
    { "v100-sxm2", "NVIDIA Tesla V100 SXM2 32GB", 125e12, 0, 0.900e12, 32, 80, "nvlink2",
      V100_DS ", V100 SXM2: tensor 125 TFLOPS, 32 GB HBM2 at 900 GB/s, NVLink 300 GB/s" },
    { "mi300x", "AMD Instinct MI300X 192GB", 1307.4e12, 2614.9e12, 5.3e12, 192, 304, "infinity-fabric",
      "AMD Instinct MI300X datasheet (amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
      "amd-instinct-mi300x-data-sheet.pdf): FP16/BF16 1,307.4 TFLOPS (2,614.9*), FP8 2,614.9 TFLOPS (5,229.8*), "
      "192 GB HBM3 at 5.3 TB/s, 304 CUs, 7 Infinity Fabric links of 128 GB/s" },
};
#define NGPUS (int)(sizeof GPUS / sizeof GPUS[0])

const hw_link_t *hw_link_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < (int)(sizeof LINK_ALIAS / sizeof LINK_ALIAS[0]); i++)
        if (!strcmp(name, LINK_ALIAS[i].alias)) name = LINK_ALIAS[i].name;
    for (int i = 0; i < NLINKS; i++)
        if (!strcmp(name, LINKS[i].name)) return &LINKS[i];
    return NULL;
}

const hw_link_t *hw_link_at(int i) { return i >= 0 && i < NLINKS ? &LINKS[i] : NULL; }

const hw_gpu_t *hw_gpu_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < NGPUS; i++)
        if (!strcmp(name, GPUS[i].name)) return &GPUS[i];
    return NULL;
}

/* case-insensitive: does s contain w */
static int has(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && tolower((unsigned char)s[i]) == w[i]) i++;
        if (i == n) return 1;
    }
    return 0;
}

const hw_gpu_t *hw_gpu_match(const char *d)
{
    if (!d) return NULL;
    const char *n = has(d, "h200") ? "h200"
                    : has(d, "h100") ? (has(d, "pcie") ? "h100-pcie" : "h100-sxm")
                    : has(d, "b200") ? "b200"
                    : has(d, "a100") ? (has(d, "40gb") ? "a100-40gb" : "a100-80gb")
                    : has(d, "l40s") ? "l40s"
                    : has(d, "v100") ? (has(d, "pcie") ? "v100-pcie" : "v100-sxm2")
                    : has(d, "mi300x") ? "mi300x"
                    : has(d, "a10") && !has(d, "a100") ? "a10" : NULL;
    return hw_gpu_find(n);
}

const hw_gpu_t *hw_gpu_at(int i) { return i >= 0 && i < NGPUS ? &GPUS[i] : NULL; }

const char *hw_gpu_names(void)
{
    return "h100-sxm, h100-pcie, h200, b200, a100-40gb, a100-80gb, l40s, a10, v100-pcie, v100-sxm2, mi300x";
}

const char *hw_link_names(void)
{
    return "nvlink2, nvlink3, nvlink4, nvlink5, pcie3, pcie4, pcie5, ib-100, ib-200, ib-400, "
           "roce-100, roce-200, roce-400, infinity-fabric";
}

double hw_allreduce_s(const hw_link_t *l, int n, double bytes)
{
    if (!l || n <= 1) return 0;
    double steps = 2.0 * (n - 1);
    return HW_ALLREDUCE_BASE_S + steps * l->latency_s + steps / n * bytes / l->bytes_per_s;
}
