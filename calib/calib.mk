# calib.mk -- the calibration driver, included by the top Makefile (after kernels.mk).
# Always: bin/check_calib, the host logic (grid, median of repeats, driver loop, profile
# assembly, fits) against a fake timer -- no GPU, no nvcc.
# With nvcc: bin/calib (calib.c + calib_gpu.cu + kernels/libattn.a + cuBLAS), and
#   make calib [GPU=h200] [CALIB_MODEL=...] [CALIB_TP=1] [CALIB_ARGS=--smoke]
# which writes calib/profiles/$(GPU).yaml (CALIB_TP > 1: with the all-reduce law where the host has
# the GPUs and NCCL).  CALIB_STATIC=1 links GSL and libyaml
# statically, for a binary that runs on a machine without them.
# Without nvcc nothing here touches the CPU build.
.PHONY: calib

CALIB_MODEL ?= models/qwen3.8-27b.yaml
CALIB_TP    ?= 1
CALIB_ARGS  ?=
CALIB_STATIC ?= 0
CALIB_REV   := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
# the GPU's short name from nvidia-smi ("NVIDIA H200" -> h200); "gpu" when none is seen
GPU ?= $(or $(shell nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 | \
	tr 'A-Z' 'a-z' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$$//'),gpu)

$(BUILD)/calib/calib.o: CFLAGS += -DPACESIM_REV='"$(CALIB_REV)"' -Ikernels
# the revision is compiled in: a new one (a commit, a dirty tree) rebuilds calib.o
CALIB_REV_STAMP := $(BUILD)/calib/rev-$(CALIB_REV).stamp
$(CALIB_REV_STAMP):
	@mkdir -p $(dir $@) && rm -f $(BUILD)/calib/rev-*.stamp && touch $@
$(BUILD)/calib/calib.o: $(CALIB_REV_STAMP)
$(BUILD)/tests/check_calib.o: CFLAGS += -Ikernels

# the sustained-load probes' host logic against a fake card with a clock
bin/check_sustain: $(BUILD)/tests/check_sustain.o $(BUILD)/calib/sustain.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

bin/check_calib: $(BUILD)/tests/check_calib.o $(BUILD)/calib/calib.o $(BUILD)/calib/sustain.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

ifneq ($(NVCC_PATH),)

# cuBLASLt's tile ids -> shapes, from this toolkit's header (calib_gpu.cu's gemm_choice)
$(BUILD)/calib/lt_tiles.h: $(CUDA)/include/cublasLt.h
	@mkdir -p $(dir $@)
	sed -n 's/^ *CUBLASLT_MATMUL_TILE_\([0-9]*\)x\([0-9]*\) *= *\([0-9]*\) *,.*/{\3, \1, \2},/p' $< > $@.tmp
	@test -s $@.tmp || { echo "calib: no CUBLASLT_MATMUL_TILE_* ids in $<"; rm -f $@.tmp; exit 1; }
	mv $@.tmp $@

$(BUILD)/calib/calib_gpu.o: calib/calib_gpu.cu calib/calib.h calib/gpuclock.h kernels/attn.h $(wildcard sim/*.h) sim/step_stamp.cuh \
		$(BUILD)/calib/lt_tiles.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Isim -Ikernels -Icalib -I$(BUILD)/calib -c $< -o $@

bin/calib: $(BUILD)/calib/main.o $(BUILD)/calib/calib.o $(BUILD)/calib/sustain.o $(BUILD)/calib/calib_gpu.o $(BUILD)/libsim.a $(ATTN_LIB)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CUBLAS_LIBS) $(CUDA_LIBS) $(if $(filter 1,$(CALIB_STATIC)),$(LIBS_STATIC),$(LIBS))

test-cuda: bin/calib bin/order_study bin/varlen_study bin/stamp_study

# two studies of the varlen call's measurement context (docs/validation.md section 2), built
# with the CUDA targets and run by hand on a GPU: calib/varlen_study.cu (one batch as calib's
# point and as the replay's call), calib/order_study.cu (the call between a layer's GEMMs, as the
# engine runs a step, against the replay's item-by-item order)
$(BUILD)/calib/order_study.o: calib/order_study.cu calib/gpuclock.h kernels/attn.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Ikernels -Icalib -c $< -o $@

bin/order_study: $(BUILD)/calib/order_study.o $(ATTN_LIB)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CUBLAS_LIBS) $(CUDA_LIBS)

$(BUILD)/calib/varlen_study.o: calib/varlen_study.cu kernels/attn.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Ikernels -c $< -o $@

bin/varlen_study: $(BUILD)/calib/varlen_study.o $(ATTN_LIB)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CUDA_LIBS)

# a study of the replay's step clock (--step-clock) against kernels bound by the SM clock,
# calib/stamp_study.cu, run by hand on a GPU (CUDA only)
$(BUILD)/calib/stamp_study.o: calib/stamp_study.cu calib/gpuclock.h sim/step_stamp.cuh $(wildcard sim/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Isim -Icalib -c $< -o $@

bin/stamp_study: $(BUILD)/calib/stamp_study.o
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CUDA_LIBS)
# CALIB_TP > 1: the all-reduce law too, where this host has CALIB_TP GPUs and NCCL (nccl.h): bin/calib_allreduce
# (calib/allreduce.mk) times NCCL's all-reduce across them and merges its law into the profile; else
# a note says why it was not measured (a run at that TP then prices the all-reduces from a link's datasheet)
calib: bin/calib
	@mkdir -p calib/profiles
	./bin/calib --model $(CALIB_MODEL) --tp $(CALIB_TP) --out calib/profiles/$(GPU).yaml $(CALIB_ARGS)
ifneq ($(CALIB_TP),1)
	@n=$$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); \
	if [ "$$n" -lt $(CALIB_TP) ]; then \
	  echo "calib: TP$(CALIB_TP) but $$n GPU(s) on this host: the all-reduce law not measured (calib/profiles/$(GPU).yaml has none)"; \
	elif [ -z "$(NCCL_INC)" ]; then \
	  echo "calib: no nccl.h (libnccl-dev): the all-reduce law not measured; install it and run make calib again"; \
	else \
	  $(MAKE) --no-print-directory bin/calib_allreduce && \
	  ./bin/calib_allreduce --gpus $(CALIB_TP) --model $(CALIB_MODEL) --profile calib/profiles/$(GPU).yaml \
	      --out calib/profiles/$(GPU).yaml; \
	fi
endif
else
calib:
	@echo "calib: nvcc not found; bin/calib needs the CUDA toolkit (and a GPU to run)"; exit 1
endif
