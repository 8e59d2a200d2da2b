# copy.mk -- bin/calib_copy (one GPU): measures the device-to-device, host-to-device and
# device-to-host copy laws (calib/copy.h) and merges them into a profile.  Built by `make
# calib-copy` and by test-cuda where nvcc exists; the host logic is tested in CI
# (tests/check_copy.c) with a fake timer.  COPY_STATIC=1 links GSL and libyaml in (a GPU machine
# without the packages, as CALIB_STATIC=1 for bin/calib).
ifneq ($(NVCC_PATH),)
COPY_STATIC ?= 0
bin/calib_copy: $(BUILD)/calib/copy_gpu.o $(BUILD)/calib/copy.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CUDA_LIBS) $(if $(filter 1,$(COPY_STATIC)),$(LIBS_STATIC),$(LIBS))
$(BUILD)/calib/copy_gpu.o: calib/copy_gpu.cu calib/copy.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Isim -Icalib -c $< -o $@
calib-copy: bin/calib_copy
test-cuda: bin/calib_copy
endif
bin/check_copy: $(BUILD)/tests/check_copy.o $(BUILD)/calib/copy.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
$(BUILD)/tests/check_copy.o: CFLAGS += -Icalib
.PHONY: calib-copy
