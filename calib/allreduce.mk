# allreduce.mk -- bin/calib_allreduce (NCCL, several GPUs of one host): measures the
# tensor-parallel all-reduce law and merges it into a profile.  Built by `make
# calib-allreduce` where nvcc and nccl.h exist; the host logic is tested in CI
# (tests/check_allreduce.c) with a fake timer.
ifneq ($(NVCC_PATH),)
NCCL_INC := $(firstword $(wildcard $(CUDA)/include/nccl.h /usr/local/include/nccl.h /usr/include/nccl.h))
ifneq ($(NCCL_INC),)
bin/calib_allreduce: $(BUILD)/calib/allreduce_gpu.o $(BUILD)/calib/allreduce.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(NVCC) -arch=$(CUDA_ARCH) -o $@ $^ $(NCCL_LIBS) $(LIBS)
$(BUILD)/calib/allreduce_gpu.o: calib/allreduce_gpu.cu calib/allreduce.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Isim -Icalib -I$(dir $(NCCL_INC)) -c $< -o $@
calib-allreduce: bin/calib_allreduce
test-cuda: bin/calib_allreduce
endif
endif
bin/check_allreduce: $(BUILD)/tests/check_allreduce.o $(BUILD)/calib/allreduce.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
$(BUILD)/tests/check_allreduce.o: CFLAGS += -Icalib
.PHONY: calib-allreduce
