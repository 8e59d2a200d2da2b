# kernels.mk -- the CUDA attention kernels (kernels/attn.h), included by the top Makefile.
# Builds build/kernels/libattn.a with $(NVCC) $(NVCCFLAGS) (CUDA_ARCH from the Makefile),
# bin/bench_kernels and bin/check_kernels (a GPU test suite: skips its GPU cases with a
# message when no device is present; make test-cuda runs it and kernels-portability),
# make kernels-sm70 (the kernels assembled for sm_70), and kernels/dev/ (dev.mk: the A/B
# programs). When nvcc is missing everything CUDA is skipped: a CPU-only build never needs nvcc.
.PHONY: kernels kernels-portability kernels-sm70 bench-kernels dev-kernels kernels-text

ifneq ($(NVCC_PATH),)
KDIR       := $(BUILD)/kernels
KERN_CU    := attn_api attn_prefill attn_decode attn_varlen
KERN_C     := ref validate
KERN_HDR   := kernels/attn.h kernels/attn_common.cuh kernels/attn_expand.cuh kernels/attn_split.h kernels/validate.h
KERN_OBJ   := $(KERN_CU:%=$(KDIR)/%.o) $(KERN_C:%=$(KDIR)/%.o)
ATTN_LIB   := $(KDIR)/libattn.a
PORT_ARCH  ?= sm_75

kernels: $(ATTN_LIB)

$(KDIR)/%.o: kernels/%.cu $(KERN_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Ikernels -c $< -o $@

$(KDIR)/%.o: kernels/%.c $(KERN_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ikernels -c $< -o $@

$(ATTN_LIB): $(KERN_OBJ)
	ar rcs $@ $^

bin/bench_kernels: $(KDIR)/bench_kernels.o $(ATTN_LIB)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CUDA_LIBS)

# the Check suite is a .cu file only so that CPU-only builds never see it
$(KDIR)/check_kernels.o: tests/check_kernels.cu tests/check_run.h $(KERN_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -Ikernels -Itests -x cu -c $< -o $@

bin/check_kernels: $(KDIR)/check_kernels.o $(ATTN_LIB)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(CUDA_LIBS)

# every kernel also compiles for an older target (sm_75, the oldest CUDA 13 compiles for), with
# ptxas's report checked: static smem as the host counts it (kernels/check_smem.sh; the dynamic
# part per arch is checked in tests/check_kernels.cu from the same constants), spills listed
$(KDIR)/port/%.o: kernels/%.cu $(KERN_HDR) kernels/check_smem.sh
	@mkdir -p $(dir $@)
	@$(NVCC) -O3 -arch=$(PORT_ARCH) -Xptxas -v -Ikernels -c $< -o $@ 2> $(@:.o=.ptxas) || { cat $(@:.o=.ptxas); exit 1; }
	@echo "$(NVCC) -O3 -arch=$(PORT_ARCH) -Xptxas -v -Ikernels -c $< -o $@"
	@grep -i "warning" $(@:.o=.ptxas) || true
kernels-portability: $(KERN_CU:%=$(KDIR)/port/%.o)
	@sh kernels/check_smem.sh $(PORT_ARCH) $(KERN_CU:%=$(KDIR)/port/%.ptxas)
	@echo "kernels: compiled for $(CUDA_ARCH) and $(PORT_ARCH)"

# sm_70 (V100): CUDA 13's nvcc does not target it, but its PTX for compute_75 (ISA 9.0), retargeted
# to .target sm_70 / .version 8.8, assembles with CUDA 12.9's ptxas (PyPI nvidia-cuda-nvcc-cu12,
# fetched into $(SM70_DIR) with pip when missing). kernels/check_sm70.sh reports registers, shared
# memory and spills per kernel and fails on a spill, or on more than 96 KB of shared memory a block,
# in a kernel an sm_70 GPU launches (kernels/sm70_launches.cu lists the tile engine's).
SM70_DIR   ?= $(BUILD)/ptxas-12.9
SM70_PTXAS ?= $(SM70_DIR)/nvidia/cuda_nvcc/bin/ptxas
$(SM70_DIR)/nvidia/cuda_nvcc/bin/ptxas:
	rm -rf $(SM70_DIR) && mkdir -p $(SM70_DIR)
	python3 -m pip download -q --no-deps -d $(SM70_DIR)/wheel 'nvidia-cuda-nvcc-cu12==12.9.*'
	cd $(SM70_DIR) && python3 -m zipfile -e wheel/nvidia_cuda_nvcc_cu12-*.whl .
	chmod +x $@ && $@ --version | tail -1
$(KDIR)/sm70/%.ptx: kernels/%.cu $(KERN_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -arch=compute_75 -ptx -Ikernels $< -o $@.75
	sed -e 's/^\.target sm_75$$/.target sm_70/' -e 's/^\.version 9\.[0-9]*$$/.version 8.8/' $@.75 > $@
	@grep -q '^\.target sm_70$$' $@ && grep -q '^\.version 8\.8$$' $@ || \
	  { echo "$@: the PTX is not .target sm_75 / .version 9.x: nothing retargeted"; rm -f $@; exit 1; }
$(KDIR)/sm70/%.ptxas: $(KDIR)/sm70/%.ptx $(SM70_PTXAS)
	$(SM70_PTXAS) -arch=sm_70 -v $< -o $(@:.ptxas=.cubin) 2> $@ || { cat $@; rm -f $@; exit 1; }
$(KDIR)/sm70/launches.txt: kernels/sm70_launches.cu $(KERN_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) -Ikernels -x cu $< -o $(KDIR)/sm70/launches
	./$(KDIR)/sm70/launches > $@
kernels-sm70: $(KERN_CU:%=$(KDIR)/sm70/%.ptxas) $(KDIR)/sm70/launches.txt
	@sh kernels/check_smem.sh sm_70 $(KERN_CU:%=$(KDIR)/sm70/%.ptxas)
	@sh kernels/check_sm70.sh $(KDIR)/sm70/launches.txt kernels/sm70_spills.txt $(KERN_CU:%=$(KDIR)/sm70/%.ptxas)

CUDA_TEST_BIN += bin/check_kernels
test-cuda: bin/check_kernels kernels-portability

include kernels/dev/dev.mk

bench-kernels: bin/bench_kernels
	@python3 kernels/peers.py > $(BUILD)/peers.txt 2>$(BUILD)/peers.log || echo "peers: PyTorch not usable, peer columns empty"
	./bin/bench_kernels --validate --bench --peers $(BUILD)/peers.txt
else
$(info kernels: nvcc not found, CUDA kernels, their tests and bench skipped)
kernels kernels-portability kernels-sm70 bench-kernels dev-kernels kernels-text:
	@echo "nvcc not found: CUDA kernels skipped"
endif
