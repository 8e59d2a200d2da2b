# gpu_sm70.mk -- make gpu-sm70: the whole GPU side built for sm_70 (V100) with a CUDA 12 toolkit,
# included by the top Makefile after kernels.mk, calib.mk and replay.mk. Builds, in $(SM70_OUT)/bin:
#   calib, pacesim-gpu, bench_kernels, check_kernels, calib_allreduce (TP > 1's all-reduce law)
# compiled and linked for sm_70 against CUDA 12's runtime (libcudart_static), cuBLAS 12 and NCCL for
# CUDA 12 (CUDA 13's cuBLAS carries no sm_70 kernels), then checks them (kernels/check_gpu_sm70.sh): every binary's
# fatbin holds sm_70 SASS and nothing for another GPU, every kernel it carries is listed with its
# registers, shared and local memory and spills (ptxas's reports), and a spill beyond
# kernels/sm70_spills.txt or more than 96 KB of shared memory a block fails, and so does a CUDA
# library they link (cuBLAS, NCCL) that holds no sm_70 SASS; then runs the sm_70
# check_kernels (its CPU checks everywhere, its GPU cases where a GPU it can run on is there).
# The CUDA 12 toolkit: where $(NVCC) is CUDA 12 (a V100 owner's), it compiles (-arch=sm_70); else
# (CUDA 13, which does not target sm_70) the pinned PyPI wheels below are fetched with pip into
# $(SM70_CU12) (a build-time tool only: nothing of it is needed to run what is built) and
# kernels/nvcc_sm70.sh runs nvcc's steps with CUDA 13's front end and CUDA 12.9's headers, ptxas
# and libraries. The C objects (libsim.a, calib.o, ...) are the ordinary build's.
.PHONY: gpu-sm70

ifneq ($(NVCC_PATH),)
SM70_OUT      ?= $(BUILD)/sm70
SM70_CU12     ?= $(abspath $(BUILD)/cuda-12.9)
SM70_WHEELS   := nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79 nvidia-cublas-cu12==12.9.3.13 \
                 nvidia-nccl-cu12==2.27.3
SM70_CUOBJDUMP_WHEEL := nvidia-cuda-cuobjdump==13.2.86
NVCC_MAJOR    := $(shell $(NVCC) --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p')

ifeq ($(NVCC_MAJOR),12)
# a CUDA 12 toolkit is there: its nvcc, headers and libraries
SM70_CUDA     := $(CUDA)
SM70_TOOLKIT  :=
SM70_NCCL_INC := $(if $(NCCL_INC),$(dir $(NCCL_INC)))
SM70_CC        = $(NVCC) -O3 -arch=sm_70 -Xptxas -v $(1) -c $(2) -o $(3) 2> $(3:.o=.ptxas) || { cat $(3:.o=.ptxas); exit 1; }
else
SM70_CUDA     := $(SM70_CU12)
SM70_TOOLKIT  := $(SM70_CU12)/.done-$(shell echo '$(SM70_WHEELS)' | cksum | cut -d' ' -f1)
SM70_NCCL_INC := $(SM70_CU12)/include/
SM70_CC        = CUDA13=$(CUDA) CU12=$(SM70_CU12) HOSTCXX=g++ sh kernels/nvcc_sm70.sh -O2 $(1) -c $(2) -o $(3)
# CUDA 12.9 from PyPI: the wheels carry no nvcc (nvidia-cuda-nvcc-cu12 holds ptxas, libnvvm and the
# crt headers); their headers, ptxas, cudart, cuBLAS and NCCL laid out as a toolkit (include/,
# lib64/, bin/ptxas); crt/host_runtime.h's __cudaLaunch taking cudafe++ 13's second argument
$(SM70_TOOLKIT):
	rm -rf $(SM70_CU12) && mkdir -p $(SM70_CU12)/wheel $(SM70_CU12)/include $(SM70_CU12)/lib64 $(SM70_CU12)/bin
	python3 -m pip download -q --no-deps -d $(SM70_CU12)/wheel $(SM70_WHEELS)
	cd $(SM70_CU12) && for w in wheel/*.whl; do python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); \
	  z.extractall(".", [n for n in z.namelist() if n.startswith("nvidia/") and "nvblas" not in n])' $$w || exit 1; done
	cd $(SM70_CU12) && cp -r nvidia/cuda_runtime/include/. nvidia/cuda_nvcc/include/. nvidia/cublas/include/. \
	  nvidia/nccl/include/. include/
	sed -i 's/^#define __cudaLaunch(fun) \\$$/#define __cudaLaunch(fun, ...) \\/' $(SM70_CU12)/include/crt/host_runtime.h
	@test "$$(grep -c '^#define __cudaLaunch(fun, \.\.\.) \\$$' $(SM70_CU12)/include/crt/host_runtime.h)" = 2 || \
	  { echo "gpu-sm70: crt/host_runtime.h's __cudaLaunch not as expected: not patched"; exit 1; }
	cd $(SM70_CU12)/lib64 && ln -sf ../nvidia/cuda_runtime/lib/libcudart_static.a . && \
	  ln -sf ../nvidia/cublas/lib/libcublas.so.12 libcublas.so && ln -sf ../nvidia/cublas/lib/libcublasLt.so.12 libcublasLt.so && \
	  ln -sf ../nvidia/cublas/lib/libcublas.so.12 . && ln -sf ../nvidia/cublas/lib/libcublasLt.so.12 . && \
	  ln -sf ../nvidia/nccl/lib/libnccl.so.2 libnccl.so && ln -sf ../nvidia/nccl/lib/libnccl.so.2 .
	chmod +x $(SM70_CU12)/nvidia/cuda_nvcc/bin/ptxas && ln -sf ../nvidia/cuda_nvcc/bin/ptxas $(SM70_CU12)/bin/ptxas
	rm -rf $(SM70_CU12)/wheel
	$(SM70_CU12)/bin/ptxas --version | tail -1
	touch $@
endif

# cuobjdump: the toolkit's, else CUDA 13's from PyPI (it lists and reads sm_70's ELF)
SM70_CUOBJDUMP ?= $(firstword $(wildcard $(CUDA)/bin/cuobjdump) $(BUILD)/cuobjdump/nvidia/cu13/bin/cuobjdump)
$(BUILD)/cuobjdump/nvidia/cu13/bin/cuobjdump:
	rm -rf $(BUILD)/cuobjdump && mkdir -p $(BUILD)/cuobjdump
	python3 -m pip download -q --no-deps -d $(BUILD)/cuobjdump $(SM70_CUOBJDUMP_WHEEL)
	cd $(BUILD)/cuobjdump && python3 -m zipfile -e nvidia_cuda_cuobjdump-*.whl . && rm -f *.whl
	chmod +x $@

S7  := $(SM70_OUT)
S7_ATTN_OBJ := $(KERN_CU:%=$(S7)/kernels/%.o)
S7_CU_OBJ   := $(S7_ATTN_OBJ) $(S7)/calib/calib_gpu.o $(S7)/sim/replay_gpu.o $(S7)/kernels/check_kernels.o
S7_ATTN_LIB := $(S7)/kernels/libattn.a
S7_BIN      := $(S7)/bin/calib $(S7)/bin/pacesim-gpu $(S7)/bin/bench_kernels $(S7)/bin/check_kernels
# bin/calib_allreduce where NCCL is there (always with the wheels)
ifneq ($(SM70_NCCL_INC),)
S7_CU_OBJ   += $(S7)/calib/allreduce_gpu.o
S7_BIN      += $(S7)/bin/calib_allreduce
endif
S7_LIBS      = -L$(SM70_CUDA)/lib64 -Wl,-rpath,$(SM70_CUDA)/lib64 -lcublasLt -lcublas -lcudart_static -ldl -lpthread -lrt -lstdc++ -lm

$(S7)/kernels/%.o: kernels/%.cu $(KERN_HDR) kernels/nvcc_sm70.sh $(SM70_TOOLKIT)
	@mkdir -p $(dir $@)
	$(call SM70_CC,-Ikernels,$<,$@)
$(S7_ATTN_LIB): $(S7_ATTN_OBJ) $(KDIR)/ref.o $(KDIR)/validate.o
	ar rcs $@ $^
$(S7)/calib/lt_tiles.h: $(SM70_TOOLKIT)
	@mkdir -p $(dir $@)
	sed -n 's/^ *CUBLASLT_MATMUL_TILE_\([0-9]*\)x\([0-9]*\) *= *\([0-9]*\) *,.*/{\3, \1, \2},/p' $(SM70_CUDA)/include/cublasLt.h > $@.tmp
	@test -s $@.tmp || { echo "gpu-sm70: no CUBLASLT_MATMUL_TILE_* ids in $(SM70_CUDA)/include/cublasLt.h"; rm -f $@.tmp; exit 1; }
	mv $@.tmp $@
$(S7)/calib/calib_gpu.o: calib/calib_gpu.cu calib/calib.h calib/gpuclock.h kernels/attn.h $(wildcard sim/*.h) \
		$(S7)/calib/lt_tiles.h kernels/nvcc_sm70.sh $(SM70_TOOLKIT)
	$(call SM70_CC,-Isim -Ikernels -Icalib -I$(S7)/calib,$<,$@)
$(S7)/sim/replay_gpu.o: sim/replay_gpu.cu $(wildcard sim/*.h) kernels/attn.h calib/calib.h calib/gpuclock.h \
		kernels/nvcc_sm70.sh $(SM70_TOOLKIT)
	@mkdir -p $(dir $@)
	$(call SM70_CC,-Isim -Ikernels -Icalib,$<,$@)
$(S7)/kernels/check_kernels.o: tests/check_kernels.cu tests/check_run.h $(KERN_HDR) kernels/nvcc_sm70.sh $(SM70_TOOLKIT)
	@mkdir -p $(dir $@)
	$(call SM70_CC,-Ikernels -Itests,$<,$@)

$(S7)/calib/allreduce_gpu.o: calib/allreduce_gpu.cu calib/allreduce.h kernels/nvcc_sm70.sh $(SM70_TOOLKIT)
	@mkdir -p $(dir $@)
	$(call SM70_CC,-Isim -Icalib -I$(SM70_NCCL_INC),$<,$@)
$(S7)/bin/calib_allreduce: $(S7)/calib/allreduce_gpu.o $(BUILD)/calib/allreduce.o $(BUILD)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(S7_LIBS) -lnccl $(LIBS)

$(S7)/bin/calib: $(BUILD)/calib/main.o $(BUILD)/calib/calib.o $(BUILD)/calib/sustain.o $(S7)/calib/calib_gpu.o \
		$(BUILD)/libsim.a $(S7_ATTN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(S7_LIBS) $(LIBS)
$(S7)/bin/pacesim-gpu: $(S7)/sim/replay_gpu.o $(BUILD)/calib/calib.o $(BUILD)/calib/sustain.o $(S7)/calib/calib_gpu.o \
		$(BUILD)/libsim.a $(S7_ATTN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(S7_LIBS) $(LIBS)
$(S7)/bin/bench_kernels: $(KDIR)/bench_kernels.o $(S7_ATTN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(S7_LIBS)
$(S7)/bin/check_kernels: $(S7)/kernels/check_kernels.o $(S7_ATTN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(S7_LIBS)

# the report: per binary the kernels its fatbin carries (cuobjdump), per kernel ptxas's figures
gpu-sm70: $(S7_BIN) $(SM70_CUOBJDUMP) $(KDIR)/sm70/launches.txt
	@CUOBJDUMP=$(SM70_CUOBJDUMP) sh kernels/check_gpu_sm70.sh $(KDIR)/sm70/launches.txt kernels/sm70_spills.txt \
	  "$(S7_CU_OBJ:.o=.ptxas)" $(S7_BIN)
	$(S7)/bin/check_kernels
else
gpu-sm70:
	@echo "gpu-sm70: nvcc not found: the sm_70 build needs CUDA 12's nvcc, or CUDA 13's with the CUDA 12 wheels it fetches" >&2; exit 2
endif
