# tests.mk -- extra test rules, included by the top Makefile.  Several engineers append
# here; each block says whose it is.

# -- robustness: bad-input catalogue, fuzzing, sanitizers, allocation failure, bench ----
EXTRA_TESTS += tests/bad_inputs.sh

# Allocation failure: the simulator's own allocations go through wrappers that fail the
# n-th one (tests/check_alloc.c); no change to sim/ needed.
ALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup
bin/check_alloc: $(BUILD)/tests/check_alloc.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) $(ALLOC_WRAP) -o $@ $^ $(LIBS)

# Sanitizers: the simulator, the Check suites and check_alloc built with ASan + UBSan in
# their own tree ($(ASAN_DIR)), then the suites, the bad-input catalogue, the
# allocation-failure walk and every reference scenario run there.
ASAN_DIR    ?= $(BUILD)/asan
ASAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_ENV    := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_SIM    := $(SIM_SRC:%.c=$(ASAN_DIR)/%.o)
ASAN_SUITES := $(patsubst tests/%.c,$(ASAN_DIR)/bin/%,$(filter-out tests/check_alloc.c tests/check_calib.c,$(TEST_SRC)))
ifneq ($(wildcard calib/calib.c),)
ASAN_SUITES += $(ASAN_DIR)/bin/check_calib
endif
.PHONY: check-asan
$(ASAN_DIR)/%.o: %.c | $(BUILD)/.setup-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ASAN_FLAGS) -Itests -c $< -o $@
$(ASAN_DIR)/libsim.a: $(ASAN_SIM)
	ar rcs $@ $^
$(ASAN_DIR)/bin/pacesim: $(ASAN_DIR)/sim/main.o $(ASAN_DIR)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ASAN_FLAGS) -o $@ $^ $(LIBS)
$(ASAN_DIR)/bin/check_alloc: $(ASAN_DIR)/tests/check_alloc.o $(ASAN_DIR)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ASAN_FLAGS) $(ALLOC_WRAP) -o $@ $^ $(LIBS)
$(ASAN_DIR)/bin/check_calib: $(ASAN_DIR)/tests/check_calib.o $(ASAN_DIR)/calib/calib.o $(ASAN_DIR)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ASAN_FLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
$(ASAN_DIR)/bin/check_%: $(ASAN_DIR)/tests/check_%.o $(ASAN_DIR)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ASAN_FLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
check-asan: $(ASAN_DIR)/bin/pacesim $(ASAN_DIR)/bin/check_alloc $(ASAN_SUITES)
	@fail=0; for t in $(ASAN_SUITES) $(ASAN_DIR)/bin/check_alloc; do \
	  echo "== asan $$t"; $(ASAN_ENV) CK_FORK=no ./$$t || fail=1; done; \
	echo "== asan bad inputs"; $(ASAN_ENV) PACESIM=$(ASAN_DIR)/bin/pacesim tests/bad_inputs.sh || fail=1; \
	echo "== asan reference scenarios"; \
	$(ASAN_ENV) ./$(ASAN_DIR)/bin/pacesim run --quiet scenarios/*.yaml || fail=1; \
	if [ $$fail = 0 ]; then echo "check-asan: clean"; else echo "check-asan: FAILED"; exit 1; fi
-include $(shell find $(ASAN_DIR) -name '*.d' 2>/dev/null)

# Scale and speed (make bench): the 100K-request Poisson bench, a 1M-request CSV trace
# generated at bench time (never committed), and memory for 100K vs 1M trace requests.
BENCH_DIR ?= $(BUILD)/bench
.PHONY: bench-sim
bin/bench: $(BUILD)/tests/bench.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
bin/gen_trace: $(BUILD)/tests/gen_trace.o
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ -lm
bench: bench-sim
bench-sim: bin/bench bin/gen_trace
	@mkdir -p $(BENCH_DIR)
	./bin/gen_trace 100000 5 1 > $(BENCH_DIR)/trace-100k.csv
	./bin/gen_trace 1000000 5 1 > $(BENCH_DIR)/trace-1m.csv
	./bin/bench scenarios/bench-poisson-100k.yaml --label poisson-100k
	./bin/bench scenarios/bench-trace.yaml --set workload.trace=$(abspath $(BENCH_DIR))/trace-100k.csv --label trace-100k | tee $(BENCH_DIR)/t100k.txt
	./bin/bench scenarios/bench-trace.yaml --set workload.trace=$(abspath $(BENCH_DIR))/trace-1m.csv --label trace-1m | tee $(BENCH_DIR)/t1m.txt
	@awk '/peak_rss_mib/ { for (i = 1; i < NF; i++) if ($$i == "peak_rss_mib") r[FILENAME] = $$(i + 1) } \
	  END { a = r["$(BENCH_DIR)/t100k.txt"]; b = r["$(BENCH_DIR)/t1m.txt"]; \
	        printf "memory: peak RSS %.1f MiB (100K trace requests) vs %.1f MiB (1M): ratio %.2f\n", a, b, b / a }' \
	  $(BENCH_DIR)/t100k.txt $(BENCH_DIR)/t1m.txt

# -- sweeps and traces (sim/sweep.c, sim/trace.c): the sweep's thread pool uses pthreads;
# GNU parallel (DEB_PKGS) runs `pacesim points` in sweep_parallel.sh.
LIBS += -lpthread
EXTRA_TESTS += tests/sweep_parallel.sh tests/trace_check.sh
