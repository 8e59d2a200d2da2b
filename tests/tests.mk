# tests.mk -- the tests and their targets, included by the top Makefile.
#   make test       CPU only (no nvcc, no GPU): every Check suite tests/check_*.c (bin/check_<suite>),
#                   then every script in EXTRA_TESTS; one summary line, exit 1 if any failed
#   make test-cuda  the CUDA builds (needs nvcc): the Check suites in CUDA_TEST_BIN (GPU cases skip
#                   with a message when there is no GPU), the builds other makefiles add as its
#                   prerequisites (test-cuda: ...), then the scripts in CUDA_TESTS
# Several engineers append here; each block says whose it is.
TEST_SRC := $(wildcard tests/check_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=bin/%)
# kernels/calib/replay makefiles append to these
CUDA_TEST_BIN :=
CUDA_TESTS    :=
EXTRA_TESTS   :=

bin/check_%: $(BUILD)/tests/check_%.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -c $< -o $@

# run_tests SUITES,SCRIPTS,WHAT: each Check suite (CK_FORK=yes), then each script; a summary line
define run_tests
	@fail=0; for t in $(1); do echo "== $$t"; CK_FORK=yes ./$$t || fail=1; done; \
	for t in $(2); do echo "== $$t"; $$t || fail=1; done; \
	if [ $$fail = 0 ]; then echo "all $(3) passed"; else echo "SOME $(3) FAILED"; exit 1; fi
endef
test: bin/pacesim $(TEST_BIN)
	$(call run_tests,$(TEST_BIN),$(EXTRA_TESTS),test suites)
ifneq ($(NVCC_PATH),)
test-cuda: bin/pacesim
	$(call run_tests,$(CUDA_TEST_BIN),$(CUDA_TESTS),CUDA test suites)
else
test-cuda:
	@echo "test-cuda: nvcc not found (CUDA Toolkit): the CUDA builds and their tests need it" >&2; exit 2
endif
.PHONY: test test-cuda

# -- robustness: bad-input catalogue, fuzzing, sanitizers, allocation failure, bench ----
EXTRA_TESTS += tests/bad_inputs.sh

# Allocation failure: the simulator's own allocations go through wrappers that fail the
# n-th one (tests/check_alloc.c); no change to sim/ needed.
# the reference scenarios (the published experiments), run by check-asan and check-valgrind
REF_SCENARIOS = scenarios/default.yaml $(wildcard scenarios/v100-*.yaml)
ALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=strdup
bin/check_alloc: $(BUILD)/tests/check_alloc.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) $(ALLOC_WRAP) -o $@ $^ $(LIBS)

# Sanitizers: the simulator, the Check suites and check_alloc built with ASan + UBSan and
# -DPACESIM_DEBUG (engine invariants after every step) in their own tree ($(ASAN_DIR)), then the suites, the bad-input catalogue, the
# allocation-failure walk and every reference scenario run there.  Whatever runs the binary
# (PACESIM) is handed the ASan one: check-asan needs no bin/pacesim.
ASAN_DIR    ?= $(BUILD)/asan
ASAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -DPACESIM_DEBUG
ASAN_ENV    := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_SIM    := $(SIM_SRC:%.c=$(ASAN_DIR)/%.o)
# the suites of sim/ modules (they link libsim.a alone); calib's suites need GPU-side
# sources of their own and stay in the plain build
ASAN_SUITES := $(patsubst tests/%.c,$(ASAN_DIR)/bin/%,$(wildcard $(patsubst sim/%.c,tests/check_%.c,$(SIM_SRC))))
.PHONY: check-asan
$(ASAN_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ASAN_FLAGS) -Itests -c $< -o $@
$(ASAN_DIR)/libsim.a: $(ASAN_SIM)
	rm -f $@ && ar rcs $@ $^
$(ASAN_DIR)/bin/pacesim: $(ASAN_DIR)/sim/main.o $(ASAN_DIR)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ASAN_FLAGS) -o $@ $^ $(LIBS)
$(ASAN_DIR)/bin/check_alloc: $(ASAN_DIR)/tests/check_alloc.o $(ASAN_DIR)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ASAN_FLAGS) $(ALLOC_WRAP) -o $@ $^ $(LIBS)
$(ASAN_DIR)/bin/check_%: $(ASAN_DIR)/tests/check_%.o $(ASAN_DIR)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ASAN_FLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
check-asan: $(ASAN_DIR)/bin/pacesim $(ASAN_DIR)/bin/check_alloc $(ASAN_SUITES)
	@fail=0; for t in $(ASAN_SUITES) $(ASAN_DIR)/bin/check_alloc; do \
	  echo "== asan $$t"; $(ASAN_ENV) PACESIM=$(ASAN_DIR)/bin/pacesim CK_FORK=no ./$$t || fail=1; done; \
	echo "== asan bad inputs"; $(ASAN_ENV) PACESIM=$(ASAN_DIR)/bin/pacesim tests/bad_inputs.sh || fail=1; \
	echo "== asan profile --compare"; $(ASAN_ENV) PACESIM=$(ASAN_DIR)/bin/pacesim tests/profile_compare.sh || fail=1; \
	echo "== asan reference scenarios"; \
	$(ASAN_ENV) ./$(ASAN_DIR)/bin/pacesim run --quiet $(REF_SCENARIOS) || fail=1; \
	echo "== asan stress: 3000 Poisson requests, KV pressure (preemptions), pacing"; \
	$(ASAN_ENV) ./$(ASAN_DIR)/bin/pacesim run scenarios/bench-poisson-100k.yaml --set workload.poisson.count=3000 \
	  --set workload.poisson.rate_per_s=40 --set engine.num_gpu_blocks=90 --set env.VLLM_1CAT_PREFILL_PACE_STEPS=4 \
	  | grep -E 'steps|preempt' || fail=1; \
	if [ $$fail = 0 ]; then echo "check-asan: clean"; else echo "check-asan: FAILED"; exit 1; fi
-include $(shell find $(ASAN_DIR) -name '*.d' 2>/dev/null)

# Scale and speed (make bench): the speed ratio against BENCH_BASE, the 100K-request Poisson bench, a 1M-request CSV trace
# generated at bench time (never committed), memory for 100K vs 1M trace requests, and the 1M
# trace with 64 prefix groups (70% of the rows share 1024 tokens) on the block pool.
BENCH_DIR ?= $(BUILD)/bench
# The speed against an earlier revision in the same run (tests/bench_vs.sh): BENCH_BASE's tree
# built beside this one in $(BUILD)/bench-BENCH_BASE, the 100K Poisson bench run BENCH_VS_RUNS
# times each, alternating; the ratio BENCH_BASE / current must stay >= 1.0.
BENCH_BASE    ?= 6b8918d
BENCH_VS_RUNS ?= 3
# The 64-replica cluster against one engine on the 1M trace (tests/bench_cluster.sh): pairs run
# alternating, the median ratio printed (target >= 0.80).
BENCH_CLUSTER_RUNS ?= 3
.PHONY: bench-sim bench-vs
bench-vs: bin/bench
	CC="$(CC)" OPT="$(OPT)" tests/bench_vs.sh $(BENCH_BASE) $(BENCH_VS_RUNS)
bin/bench: $(BUILD)/tests/bench.o $(BUILD)/libsim.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
bin/gen_trace: $(BUILD)/tests/gen_trace.o
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ -lm
bench: bench-sim
bench-sim: bin/bench bin/gen_trace
	@mkdir -p $(BENCH_DIR)
	CC="$(CC)" OPT="$(OPT)" tests/bench_vs.sh $(BENCH_BASE) $(BENCH_VS_RUNS)
	./bin/gen_trace 100000 5 1 > $(BENCH_DIR)/trace-100k.csv
	./bin/gen_trace 1000000 5 1 > $(BENCH_DIR)/trace-1m.csv
	./bin/bench scenarios/bench-poisson-100k.yaml --label poisson-100k
	./bin/bench scenarios/bench-trace.yaml --set workload.trace=$(abspath $(BENCH_DIR))/trace-100k.csv --label trace-100k | tee $(BENCH_DIR)/t100k.txt
	./bin/gen_trace 1000000 320 1 > $(BENCH_DIR)/trace-1m-x64.csv
	tests/bench_cluster.sh $(BENCH_DIR) $(BENCH_CLUSTER_RUNS)
	./bin/gen_trace 1000000 5 1 --prefix 64,1024,0.7 > $(BENCH_DIR)/trace-1m-prefix.csv
	./bin/bench scenarios/bench-trace.yaml --set workload.trace=$(abspath $(BENCH_DIR))/trace-1m-prefix.csv \
	  --set engine.prefix_cache_model=pool --label trace-1m-pool
	@awk '/peak_rss_mib/ { for (i = 1; i < NF; i++) if ($$i == "peak_rss_mib") r[FILENAME] = $$(i + 1) } \
	  END { a = r["$(BENCH_DIR)/t100k.txt"]; b = r["$(BENCH_DIR)/t1m.txt"]; \
	        printf "memory: peak RSS %.1f MiB (100K trace requests) vs %.1f MiB (1M): ratio %.2f\n", a, b, b / a }' \
	  $(BENCH_DIR)/t100k.txt $(BENCH_DIR)/t1m.txt

# The capacity bench (make bench): pacesim capacity over 1,000 configurations (40 max_num_seqs x
# 25 token budgets), 10,000 requests a probe, on every core; its wall time against the 60 s target
# (a figure to read, not a timed test), its probes and the steps they simulated.
CAP_BENCH_SEARCH := --search engine.max_num_seqs=8..320:8 --search engine.max_num_batched_tokens=2048..8192:256
.PHONY: bench-capacity
bench: bench-capacity
bench-capacity: bin/pacesim
	@mkdir -p $(BENCH_DIR)
	@t0=$$(date +%s.%N); \
	./bin/pacesim capacity scenarios/bench-capacity.yaml --slo ttft_p99=2 --slo tpot_p99=0.05 $(CAP_BENCH_SEARCH) \
	  --quiet --no-progress --csv $(BENCH_DIR)/capacity.csv || exit 1; \
	t1=$$(date +%s.%N); times > $(BENCH_DIR)/capacity-times.txt; cpu=$$(tail -n 1 $(BENCH_DIR)/capacity-times.txt); \
	awk -F, -v t0="$$t0" -v t1="$$t1" -v cpu="$$cpu" -v cores="$$(getconf _NPROCESSORS_ONLN)" \
	  'function sec(x, m) { m = index(x, "m"); return 60 * substr(x, 1, m - 1) + substr(x, m + 1) + 0 } \
	   NR == 1 { for (i = 1; i <= NF; i++) c[$$i] = i; next } \
	   { n++; p += $$c["probes"]; st += $$c["sim_steps"]; ok += $$c["status"] == "ok" } \
	   END { split(cpu, u, " "); s = sec(u[1]) + sec(u[2]); \
	         printf "capacity bench: %d configurations (%d found), %d probes of 10,000 requests, %.1f M engine steps: %.1f s wall, %.1f s CPU on %d cores = %.1f s with the cores to itself (target 60 s)\n", \
	                n, ok, p, st / 1e6, t1 - t0, s, cores, s / cores }' \
	  $(BENCH_DIR)/capacity.csv

# Fuzzing (libFuzzer, clang): the scenario and profile loaders, seeded from scenarios/,
# calib/profiles/ and the bad-input catalogue, and the CSV readers of merge and best,
# seeded from tests/data/golden/.  make fuzz runs each FUZZ_SECONDS (60);
# make check-fuzz (CI) runs each CHECK_FUZZ_SECONDS (20).  New inputs go to
# $(FUZZ_DIR)/corpus-*; a crash leaves $(FUZZ_DIR)/crash-* (turn it into a catalogue case).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
CHECK_FUZZ_SECONDS ?= 20
FUZZ_DIR     ?= $(BUILD)/fuzz
FUZZ_FLAGS   := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS   = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Isim -Itests $(FUZZ_FLAGS)
FUZZ_SIM     := $(SIM_SRC:%.c=$(FUZZ_DIR)/%.o)
FUZZ_HAVE    := $(shell command -v $(FUZZ_CC) >/dev/null 2>&1 && echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; return (int)n * 0; }' | \
                  $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null && echo yes)
.PHONY: fuzz check-fuzz
$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/tests/fuzz_%.o $(FUZZ_SIM)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)
# fuzz_run NAME SECONDS SEED-DIRS...
define fuzz_run
	@mkdir -p $(FUZZ_DIR)/corpus-$(1)
	@echo "== fuzz $(1): $(2) s"
	ASAN_OPTIONS=detect_leaks=1 ./$(FUZZ_DIR)/fuzz_$(1) -max_total_time=$(2) -timeout=10 -rss_limit_mb=2048 \
	  -max_len=8192 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus-$(1) $(3) </dev/null 2>&1 | grep -E '^(stat::number_of_executed_units|stat::new_units_added|==.*ERROR|SUMMARY|Done)|crash-' ; \
	  test $${PIPESTATUS[0]} -eq 0
endef
ifeq ($(FUZZ_HAVE),yes)
fuzz check-fuzz: SHELL := /bin/bash
fuzz: $(FUZZ_DIR)/fuzz_scenario $(FUZZ_DIR)/fuzz_profile $(FUZZ_DIR)/fuzz_csv $(FUZZ_DIR)/fuzz_import
	$(call fuzz_run,scenario,$(FUZZ_SECONDS),scenarios tests/data/bad)
	$(call fuzz_run,profile,$(FUZZ_SECONDS),calib/profiles tests/data/bad/profiles)
	$(call fuzz_run,csv,$(FUZZ_SECONDS),tests/data/golden)
	$(call fuzz_run,import,$(FUZZ_SECONDS),tests/data/traces)
check-fuzz: $(FUZZ_DIR)/fuzz_scenario $(FUZZ_DIR)/fuzz_profile $(FUZZ_DIR)/fuzz_csv $(FUZZ_DIR)/fuzz_import
	$(call fuzz_run,scenario,$(CHECK_FUZZ_SECONDS),scenarios tests/data/bad)
	$(call fuzz_run,profile,$(CHECK_FUZZ_SECONDS),calib/profiles tests/data/bad/profiles)
	$(call fuzz_run,csv,$(CHECK_FUZZ_SECONDS),tests/data/golden)
	$(call fuzz_run,import,$(CHECK_FUZZ_SECONDS),tests/data/traces)
else
fuzz check-fuzz:
	@echo "fuzz: $(FUZZ_CC) with libFuzzer (-fsanitize=fuzzer) not found: fuzzing skipped"
endif

# -- sweeps and traces (sim/sweep.c, sim/perfetto.c): the sweep's thread pool uses pthreads (in
# LIBS); GNU parallel (DEB_PKGS) runs `pacesim points` in sweep_parallel.sh.
EXTRA_TESTS += tests/sweep_parallel.sh tests/trace_check.sh

# valgrind memcheck on the reference scenarios: no invalid access, no leak.
VALGRIND ?= valgrind
.PHONY: check-valgrind
check-valgrind: bin/pacesim
	@command -v $(VALGRIND) >/dev/null || { echo "check-valgrind: valgrind not found, skipped"; exit 0; }; \
	VG="$(VALGRIND) -q --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all --error-exitcode=3"; \
	$$VG ./bin/pacesim run --quiet $(REF_SCENARIOS) || { echo "check-valgrind: FAILED (run)"; exit 1; }; \
	$$VG ./bin/pacesim validate $(REF_SCENARIOS) >/dev/null || { echo "check-valgrind: FAILED (validate)"; exit 1; }; \
	for f in tests/data/bad/*.yaml; do $$VG ./bin/pacesim run $$f >/dev/null 2>&1; \
	  [ $$? = 3 ] && { echo "check-valgrind: FAILED on $$f"; exit 1; }; done; \
	echo "check-valgrind: clean (reference scenarios, and every bad-input case)"

# -- ground truth: the cost model against an H200 replay's recorded step times ----------
EXTRA_TESTS += tests/rescore.sh
# calib/device_record.sh's staging across calls of one card (fake device binaries), both replay
# modes (back to back, the default; REPLAY_MODE=item) and their files' names
EXTRA_TESTS += tests/device_record.sh
# calib/install_set.sh: such a WORK tree (and its record.tgz) installed as a replay set, rescored;
# every refusal (missing or mixed: cards, modes, runs) one line, exit 2, nothing installed
EXTRA_TESTS += tests/install_set.sh

# -- reference outputs byte for byte (tests/golden.sh; --update regenerates tests/data/golden/)
EXTRA_TESTS += tests/golden.sh
EXTRA_TESTS += tests/doc_keys.sh
# -- outputs: every --help, CSV shapes and quoting, steps/requests of several runs, make run's table
EXTRA_TESTS += tests/outputs.sh
# -- inputs: a missing, directory, empty, binary or FIFO input to every command: exit 2, one line
EXTRA_TESTS += tests/inputs.sh
# profile --compare on the shipped profiles (sim/profile_compare.c)
EXTRA_TESTS += tests/profile_compare.sh
# the sm_70 report's rule (kernels/check_sm70.sh) on synthetic ptxas reports
EXTRA_TESTS += tests/sm70_check.sh

# -- the engine under random valid scenarios (tests/fuzz_engine.c, a plain C program, no
# libFuzzer): built with ASan + UBSan and -DPACESIM_DEBUG beside check-asan's objects;
# make check-engine-fuzz runs it ENGINE_FUZZ_SECONDS (30) from seed ENGINE_FUZZ_SEED (1).
# A failing scenario is kept in $(BUILD)/fuzz-engine/ (its first line repeats it).
ENGINE_FUZZ_SECONDS ?= 30
ENGINE_FUZZ_SEED    ?= 1
.PHONY: check-engine-fuzz
$(ASAN_DIR)/bin/fuzz_engine: $(ASAN_DIR)/tests/fuzz_engine.o $(ASAN_DIR)/libsim.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ASAN_FLAGS) -o $@ $^ $(LIBS)
check-engine-fuzz: $(ASAN_DIR)/bin/fuzz_engine
	$(ASAN_ENV) ./$(ASAN_DIR)/bin/fuzz_engine -s $(ENGINE_FUZZ_SEED) -n 100000000 -t $(ENGINE_FUZZ_SECONDS) -d $(BUILD)/fuzz-engine

# the serving summary and goodput against hand counts (deployio)
EXTRA_TESTS += tests/serve.sh
EXTRA_TESTS += tests/readme.sh
# every command's options against its --help, and the options the docs show against the commands
EXTRA_TESTS += tests/help_opts.sh

# -- capacity planning (sim/capacity.c): the command line, bad input, -j, --points + merge
EXTRA_TESTS += tests/capacity.sh
EXTRA_TESTS += tests/traces.sh
EXTRA_TESTS += tests/plot.sh

# -- run --error-bars (sim/cost_scaled.c, runner.c, sweep.c): P refused outside (0, 50], points forwards it
EXTRA_TESTS += tests/errbars.sh
# -- capacity --error-bars: P refused as run refuses it, the +P% rate <= the rate <= the -P% rate, -j, --points
EXTRA_TESTS += tests/capacity_errbars.sh
