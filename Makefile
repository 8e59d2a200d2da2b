# pacesim -- one build. User-facing targets:
#   make [all]        bin/pacesim                  make run        the default scenario
#   make test         CPU-only suites and scripts  make test-cuda  the CUDA builds and their tests
#   make kernels-sm70 the kernels assembled for sm_70 (ptxas report checked)
#   make gpu-sm70     calib, the GPU replay, bench_kernels and the kernels' suite built for sm_70
#                     with CUDA 12 (fetched from PyPI where missing), every kernel's resources checked
#   make bench, calib, plots, replay, gpu-bundle, bench-kernels, v100-profile,
#   make check-asan, check-fuzz, check-valgrind   make setup   make clean
# User settings first (override on the command line: make CUDA_ARCH=sm_70).
CC        ?= cc
OPT       ?= -O2
CUDA_ARCH ?= sm_90
NVCC      ?= nvcc
NVCCFLAGS ?= -O3 -arch=$(CUDA_ARCH) -lineinfo
SAN       ?=
# Debian packages the build and tests need; `make setup` installs what is missing.
DEB_PKGS  := libgsl-dev libyaml-dev check pkg-config parallel
PLOT_PKGS := gnuplot-nox

# -- set-up on a fresh machine -------------------------------------------------
# `make setup` installs the missing DEB_PKGS (apt-get, through sudo when not root). The user-facing
# targets (SETUP_GOALS) run it first and then themselves in a sub-make (SETUP=done), so that even
# with -j nothing compiles before the packages are there. Build targets (bin/..., build/...) never
# call it.
SETUP_GOALS := all run test test-cuda bench calib plots plots-readme replay gpu-bundle bench-kernels \
               v100-profile kernels-sm70 gpu-sm70 check-asan check-fuzz check-engine-fuzz fuzz check-valgrind calib-allreduce calib-copy
.PHONY: setup setup-plots
setup:
	@missing=""; \
	for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi \
	  || { echo "setup: could not install$$missing (run as root: apt-get install -y$$missing)"; exit 1; }; \
	fi
setup-plots: setup
	@dpkg -s $(PLOT_PKGS) >/dev/null 2>&1 || { echo "setup-plots: installing $(PLOT_PKGS)"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(PLOT_PKGS); \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(PLOT_PKGS); fi; }

GOALS := $(or $(MAKECMDGOALS),all)
ifneq ($(SETUP),done)
ifneq ($(filter $(SETUP_GOALS),$(GOALS)),)
FIRST_PASS := yes
endif
endif

ifeq ($(FIRST_PASS),yes)
# -- first pass: `make setup`, then the goals again with the packages there ------
.PHONY: setup-then $(filter-out setup setup-plots,$(GOALS))
.DEFAULT_GOAL := setup-then
setup-then: setup
	@$(MAKE) --no-print-directory SETUP=done $(GOALS)
$(filter-out setup setup-plots setup-then,$(GOALS)): setup-then ; @:
else

# -- link flags, every binary's, in one place -------------------------------------
# LIBS: the simulator (libyaml, GSL, the sweep's thread pool); LIBS_STATIC the same with GSL and
# libyaml linked in (CALIB_STATIC=1 / REPLAY_STATIC=1: a GPU machine without the packages).
LIBS        := -lyaml -lgsl -lgslcblas -lm -lpthread
LIBS_STATIC := -Wl,-Bstatic -lyaml -lgsl -lgslcblas -Wl,-Bdynamic -lm -lpthread
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread)
CHECK_LIBS_STATIC := -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic
# the CUDA toolkit's (CUDA: the folder above nvcc's bin/)
NVCC_PATH   := $(shell command -v $(NVCC) 2>/dev/null)
CUDA        ?= $(patsubst %/bin/,%,$(dir $(NVCC_PATH)))
CUDA_LIBS    = -L$(CUDA)/lib64 -lcudart_static -ldl -lpthread -lrt -lstdc++ -lm
CUBLAS_LIBS  = -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lcublasLt -lcublas
NCCL_LIBS   := -lnccl

# ---------------------------------------------------------------------------
CFLAGS  += -std=c11 $(OPT) -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
           -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-format-truncation \
           -MMD -MP -Isim $(SAN)
LDFLAGS += $(SAN)

BUILD   := build
SIM_SRC := $(filter-out sim/main.c,$(wildcard sim/*.c))
SIM_OBJ := $(SIM_SRC:%.c=$(BUILD)/%.o)

.PHONY: all run test test-cuda bench clean calib plots
# `make` with no goal builds bin/pacesim (the set-up rules above come first in the file)
.DEFAULT_GOAL := all
all: bin/pacesim

# -- the simulator -----------------------------------------------------------
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# made afresh: `ar r` into the old archive would keep the object of a source since removed
$(BUILD)/libsim.a: $(SIM_OBJ)
	rm -f $@ && ar rcs $@ $^

bin/pacesim: $(BUILD)/sim/main.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# the built-in experiment as a PACE_STEPS sweep: the trade-off table, its CSV and PNG (gnuplot-nox
# installed first, as for make plots; where that fails the table and CSV still come, the PNG line says why)
run: bin/pacesim
	@$(MAKE) --no-print-directory setup-plots || echo "run: could not install $(PLOT_PKGS) (as root: apt-get install -y $(PLOT_PKGS)); no PNG"
	@plots/tradeoff.sh scenarios/default.yaml

# -- tests: `make test` (CPU only) and `make test-cuda` (tests/tests.mk) --------
include tests/tests.mk
include kernels/kernels.mk
include calib/calib.mk
include calib/allreduce.mk
include calib/copy.mk
include sim/replay.mk
include kernels/gpu_sm70.mk
include plots/plots.mk

# no object is an intermediate to delete: those of the test suites, calib and the ASan and
# fuzz trees (made by pattern rules alone) stay, so a second `make test` rebuilds nothing
.SECONDARY: $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/*.c calib/*.c sim/*.c)) \
            $(patsubst %.c,$(ASAN_DIR)/%.o,$(wildcard tests/*.c sim/*.c)) \
            $(patsubst %.c,$(FUZZ_DIR)/%.o,$(wildcard tests/fuzz_*.c sim/*.c))

clean:
	rm -rf $(BUILD) bin .gpubundle

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# -- the V100 profile, derived from published figures (see README) -------------
bin/v100fit: $(BUILD)/calib/v100_fit.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
v100-profile: bin/v100fit
	./bin/v100fit calib/v100_figures.yaml -o calib/profiles/v100-pcie-32gb-tp2.yaml
.PHONY: v100-profile

endif
