# replay.mk -- bin/pacesim-gpu (pacesim replay --gpu): the scenario's steps run on the GPU.
# Needs nvcc (links the kernels, calib's CUDA timer and cuBLAS); REPLAY_STATIC=1 links GSL
# and libyaml statically for a machine without them (the device machine).
ifneq ($(NVCC_PATH),)
REPLAY_STATIC ?= 0
$(BUILD)/sim/replay_gpu.o: sim/replay_gpu.cu sim/step_stamp.cuh $(wildcard sim/*.h) kernels/attn.h calib/calib.h calib/gpuclock.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Isim -Ikernels -Icalib -c $< -o $@
bin/pacesim-gpu: $(BUILD)/sim/replay_gpu.o $(BUILD)/calib/calib.o $(BUILD)/calib/sustain.o $(BUILD)/calib/calib_gpu.o $(BUILD)/libsim.a $(ATTN_LIB)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CUBLAS_LIBS) $(CUDA_LIBS) $(if $(filter 1,$(REPLAY_STATIC)),$(LIBS_STATIC),$(LIBS))
replay-gpu: bin/pacesim-gpu
# make replay [REPLAY_OUT=replay-out] [REPLAY_131K=0]: every scenarios/h200-*.yaml replayed on
# this machine's GPU, priced by its profile (calib/replay_h200.sh, back to back; REPLAY_MODE=item
# item by item): per scenario the report, --steps and --items CSVs in REPLAY_OUT
REPLAY_OUT ?= replay-out
REPLAY_131K ?= 1
replay: bin/pacesim-gpu
	REPLAY_131K=$(REPLAY_131K) bash calib/replay_h200.sh $(REPLAY_OUT) bin/pacesim-gpu
test-cuda: bin/pacesim-gpu
CUDA_TESTS += tests/replay_dry.sh
.PHONY: replay-gpu replay
else
replay replay-gpu:
	@echo "the GPU replay needs nvcc (CUDA Toolkit) and a GPU: see README \"Ground truth\"" >&2; exit 2
.PHONY: replay-gpu replay
endif

# gpu-bundle: static bin/calib and bin/pacesim-gpu (GSL and libyaml linked in) in .gpubundle/,
# for a GPU machine that has the CUDA runtime but not the Debian packages; carry the folder
# and run calib/gpu_session.sh OUT .gpubundle there. With them: bin/bench_kernels, the varlen
# studies bin/order_study and bin/varlen_study, the step clock's bin/stamp_study (calib/calib.mk;
# CUDA and cuBLAS only)
# and the kernels' Check suite with libcheck linked in (.gpubundle/check_kernels: its GPU cases
# run there, where CI skips them).
gpu-bundle: bin/bench_kernels bin/order_study bin/varlen_study bin/stamp_study $(KDIR)/check_kernels.o $(ATTN_LIB)
	rm -f bin/calib bin/pacesim-gpu
	$(MAKE) bin/calib CALIB_STATIC=1
	$(MAKE) bin/pacesim-gpu REPLAY_STATIC=1
	mkdir -p .gpubundle && cp bin/calib bin/pacesim-gpu bin/bench_kernels bin/order_study bin/varlen_study bin/stamp_study .gpubundle/
	$(CC) $(LDFLAGS) -o .gpubundle/check_kernels $(KDIR)/check_kernels.o $(ATTN_LIB) \
	    $(CHECK_LIBS_STATIC) $(CUDA_LIBS)
	rm -f bin/calib bin/pacesim-gpu
.PHONY: gpu-bundle
