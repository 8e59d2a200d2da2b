# dev.mk -- the kernels' development programs (kernels/dev/), included by kernels/kernels.mk when
# nvcc is there. Each is a standalone program that times other configurations of the tile engine
# against the library's on the GPU at hand, checking each one's output first (dev_common.cuh):
#   make dev-kernels        bin/dev/prefill_ab, bin/dev/decode_ab, bin/dev/expand_ab, gemm_operands
#   bin/dev/prefill_ab [NAME,...]   the fast path's variants (staging, plan flags, CTAs per SM)
#   bin/dev/decode_ab [NAME,...]    XQA and small-q variants, the partitions' reduces
#   bin/dev/expand_ab [NAME,...]    the fp8 bridge's expansion in other shapes
#   bin/dev/gemm_operands [M N K [R]]  a cuBLAS GEMM's speed against the values of its operands
#   make kernels-text       $(KDIR)/text.txt: a line per kernel of the library (sha256 and size of
#                           its sm_90 machine code, kernels/dev/cubin_text.py): diff two builds' to
#                           see which kernels changed a byte; $(KDIR)/text_d256.txt: the head_dim 256
#                           kernels named as a build without the head_dim parameter names them
# None of it is in the library, in make test-cuda or in CI.
.PHONY: dev-kernels kernels-text
DEV_AB := prefill_ab decode_ab expand_ab

$(KDIR)/dev/%.o: kernels/dev/%.cu kernels/dev/dev_common.cuh $(KERN_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Ikernels -c $< -o $@

bin/dev/%: $(KDIR)/dev/%.o $(ATTN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CUDA_LIBS)

bin/dev/gemm_operands: $(KDIR)/dev/gemm_operands.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CUBLAS_LIBS) $(CUDA_LIBS)

dev-kernels: $(DEV_AB:%=bin/dev/%) bin/dev/gemm_operands

$(KDIR)/cubin/%.cubin: kernels/%.cu $(KERN_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Ikernels -cubin $< -o $@

kernels-text: $(KERN_CU:%=$(KDIR)/cubin/%.cubin)
	python3 kernels/dev/cubin_text.py $^ > $(KDIR)/text.txt
	python3 kernels/dev/cubin_text.py --d256 $^ > $(KDIR)/text_d256.txt
	@echo "kernels-text: $$(wc -l < $(KDIR)/text.txt) kernels in $(KDIR)/text.txt"
.SECONDARY: $(DEV_AB:%=$(KDIR)/dev/%.o) $(KDIR)/dev/gemm_operands.o
