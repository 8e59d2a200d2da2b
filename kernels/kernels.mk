# kernels.mk -- the CUDA attention kernels (kernels/attn.h), included by the top Makefile.
# Builds build/kernels/libattn.a with $(NVCC) $(NVCCFLAGS) (CUDA_ARCH from the Makefile),
# bin/bench_kernels and bin/check_kernels (a GPU test suite: skips its GPU cases with a
# message when no device is present). When nvcc is missing everything CUDA is skipped:
# a CPU-only build never needs nvcc.
.PHONY: kernels kernels-portability bench-kernels

ifneq ($(NVCC_PATH),)
KDIR       := $(BUILD)/kernels
KERN_CU    := attn_api attn_prefill attn_decode
KERN_C     := ref validate
KERN_HDR   := kernels/attn.h kernels/attn_common.cuh kernels/validate.h
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
$(KDIR)/check_kernels.o: tests/check_kernels.cu $(KERN_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -Ikernels -x cu -c $< -o $@

bin/check_kernels: $(KDIR)/check_kernels.o $(ATTN_LIB)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(CUDA_LIBS)

# every kernel also compiles for an older target (sm_75 stands in for sm_70 on CUDA 13), with
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

CUDA_TEST_BIN += bin/check_kernels
test-cuda: bin/check_kernels kernels-portability

bench-kernels: bin/bench_kernels
	@python3 kernels/peers.py > $(BUILD)/peers.txt 2>$(BUILD)/peers.log || echo "peers: PyTorch not usable, peer columns empty"
	./bin/bench_kernels --validate --bench --peers $(BUILD)/peers.txt
else
$(info kernels: nvcc not found, CUDA kernels, their tests and bench skipped)
kernels kernels-portability bench-kernels:
	@echo "nvcc not found: CUDA kernels skipped"
endif
