# pacesim -- one build: all, run, test, bench, calib, plots, clean.
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

# ---------------------------------------------------------------------------
CFLAGS  += -std=c11 $(OPT) -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
           -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-format-truncation \
           -MMD -MP -Isim $(SAN)
LDFLAGS += $(SAN)
LIBS    := -lyaml -lgsl -lgslcblas -lm
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread)

BUILD   := build
SIM_SRC := $(filter-out sim/main.c,$(wildcard sim/*.c))
SIM_OBJ := $(SIM_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/check_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=bin/%)
# kernel/calib makefiles may append to these
GPU_TEST_BIN :=
EXTRA_TESTS  :=

.PHONY: all run test bench clean setup setup-plots calib plots
all: bin/pacesim

# -- set-up on a fresh machine ---------------------------------------------
$(BUILD)/.setup-ok:
	@missing=""; \
	for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi \
	  || { echo "setup: could not install$$missing (run as root: apt-get install -y$$missing)"; exit 1; }; \
	fi
	@mkdir -p $(BUILD) && touch $@
setup: $(BUILD)/.setup-ok
setup-plots: setup
	@dpkg -s $(PLOT_PKGS) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get install -y -qq $(PLOT_PKGS); else sudo apt-get install -y -qq $(PLOT_PKGS); fi; }

# -- the simulator -----------------------------------------------------------
$(BUILD)/%.o: %.c | $(BUILD)/.setup-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libsim.a: $(SIM_OBJ)
	ar rcs $@ $^

bin/pacesim: $(BUILD)/sim/main.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# the built-in experiment as a PACE_STEPS sweep: the trade-off table, its CSV and PNG
run: bin/pacesim
	@plots/tradeoff.sh scenarios/default.yaml

# -- tests -------------------------------------------------------------------
bin/check_%: $(BUILD)/tests/check_%.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

$(BUILD)/tests/%.o: tests/%.c | $(BUILD)/.setup-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -c $< -o $@

test: bin/pacesim $(TEST_BIN) $(GPU_TEST_BIN)
	@fail=0; for t in $(TEST_BIN) $(GPU_TEST_BIN); do \
	  echo "== $$t"; CK_FORK=yes ./$$t || fail=1; done; \
	for t in $(EXTRA_TESTS); do echo "== $$t"; $$t || fail=1; done; \
	if [ $$fail = 0 ]; then echo "all test suites passed"; else echo "SOME TEST SUITES FAILED"; exit 1; fi

-include kernels/kernels.mk
-include calib/calib.mk
-include calib/allreduce.mk
-include sim/replay.mk
-include tests/tests.mk
-include plots/plots.mk

clean:
	rm -rf $(BUILD) bin

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# -- the V100 profile, derived from published figures (see README) -------------
bin/v100fit: $(BUILD)/calib/v100_fit.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
v100-profile: bin/v100fit
	./bin/v100fit calib/v100_figures.yaml -o calib/profiles/v100-pcie-32gb-tp2.yaml
.PHONY: v100-profile
