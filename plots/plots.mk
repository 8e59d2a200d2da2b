# plots.mk -- `make plots`: the pacing trade-off of the V100 reference experiment, its
# Pareto frontier, per-step timelines and a Poisson run's latency percentiles, drawn with
# gnuplot from pacesim's CSVs into plots/out/ (git-ignored) as PNG (and SVG for the first
# two).  `make run` draws the built-in experiment's own trade-off (plots/tradeoff.sh).
# Included by the top Makefile.
#   make plots                 everything below
#   make plots-readme          refresh the committed images the README shows: plots/tradeoff-v100-b16k.png,
#                              plots/tradeoff-default.png (make run's) and plots/latency-poisson.png
PLOT_OUT  := plots/out
GNUPLOT   ?= gnuplot
# every configuration of the B=16K experiment except the fixed-pace files (pacing is swept)
PLOT_SCN  := $(filter-out %-pace4.yaml %-pace8.yaml,$(sort $(wildcard scenarios/v100-*-b16k-*.yaml)))
PLOT_PACE := 0,1,2,3,4,6,8,12,16
PLOT_SWEEP := $(PLOT_OUT)/sweep-v100-b16k.csv
PLOT_FRONT := $(PLOT_OUT)/pareto-v100-b16k.csv
# timelines: fp16 no MTP, baseline and PREFIX_DECODE_ROWS=1, without and with pacing 4
PLOT_TL_CFG := baseline pdr
PLOT_TL_PACE := 0 4
PLOT_STEPS := $(foreach c,$(PLOT_TL_CFG),$(foreach p,$(PLOT_TL_PACE),$(PLOT_OUT)/steps-fp16-nomtp-b16k-$(c)-pace$(p).csv))
PLOT_IMGS := $(foreach x,png svg,$(PLOT_OUT)/tradeoff-v100-b16k.$(x) $(PLOT_OUT)/timeline-v100-fp16-b16k.$(x))
# latency percentiles: the Poisson bench scenario cut to PLOT_POISSON_N requests
PLOT_POISSON_N := 5000
PLOT_REQS := $(PLOT_OUT)/requests-poisson.csv
PLOT_IMGS += $(PLOT_OUT)/latency-poisson.png

.PHONY: plots plots-readme
.SECONDARY: $(PLOT_STEPS) $(PLOT_REQS)
plots: setup-plots $(PLOT_IMGS)
	@echo "plots: $(PLOT_IMGS)"

$(PLOT_SWEEP): bin/pacesim $(PLOT_SCN)
	@mkdir -p $(PLOT_OUT)
	./bin/pacesim run $(PLOT_SCN) --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=$(PLOT_PACE) --csv $@ --quiet \
	  --objective max:a_tok_s --constraint 'b_prefill_s<=1.10*base'

$(PLOT_FRONT): $(PLOT_SWEEP) plots/pareto.awk
	awk -F, -v X=b_prefill_s -v Y=a_tok_s -f plots/pareto.awk $< > $@

$(PLOT_OUT)/steps-fp16-nomtp-b16k-%.csv: bin/pacesim
	@mkdir -p $(PLOT_OUT)
	./bin/pacesim run scenarios/v100-fp16-nomtp-b16k-$(word 1,$(subst -pace, ,$*)).yaml \
	  --set env.VLLM_1CAT_PREFILL_PACE_STEPS=$(word 2,$(subst -pace, ,$*)) --steps $@ --quiet

$(PLOT_OUT)/tradeoff-v100-b16k.%: $(PLOT_SWEEP) $(PLOT_FRONT) plots/tradeoff.gp | setup-plots
	$(GNUPLOT) -e "csv='$(PLOT_SWEEP)'; frontier='$(PLOT_FRONT)'; out='$@'; fmt='$*'" plots/tradeoff.gp

$(PLOT_OUT)/timeline-v100-fp16-b16k.%: $(PLOT_STEPS) plots/timeline.gp | setup-plots
	$(GNUPLOT) -e "files='$(PLOT_STEPS)'; out='$@'; fmt='$*'" plots/timeline.gp

$(PLOT_REQS): bin/pacesim scenarios/bench-poisson-100k.yaml
	@mkdir -p $(PLOT_OUT)
	./bin/pacesim run scenarios/bench-poisson-100k.yaml --set workload.poisson.count=$(PLOT_POISSON_N) --requests $@ --quiet

$(PLOT_OUT)/latency-poisson.png: $(PLOT_REQS) plots/latency.gp | setup-plots
	$(GNUPLOT) -e "csv='$(PLOT_REQS)'; out='$@'; title='Poisson, $(PLOT_POISSON_N) requests (scenarios/bench-poisson-100k.yaml)'" plots/latency.gp

# The README's images (the committed generated images): a smaller PNG of the trade-off,
# make run's trade-off and the latency percentiles.
plots-readme: $(PLOT_SWEEP) $(PLOT_FRONT) plots/tradeoff.gp $(PLOT_OUT)/latency-poisson.png | setup-plots
	$(GNUPLOT) -e "csv='$(PLOT_SWEEP)'; frontier='$(PLOT_FRONT)'; out='plots/tradeoff-v100-b16k.png'; fmt='png'; width=900; height=600" plots/tradeoff.gp
	plots/tradeoff.sh scenarios/default.yaml >/dev/null && cp $(PLOT_OUT)/tradeoff-default.png plots/tradeoff-default.png
	cp $(PLOT_OUT)/latency-poisson.png plots/latency-poisson.png

# The capacity example (README, docs/capacity.md): a search priced by the H200 profile, its CSV
# and plots/capacity.gp's view of it.
PLOT_CAP_ARGS := --slo ttft_p99=1 --slo tpot_p99=0.08 --search engine.max_num_seqs=4,8,16,64 --gpu-cost h200=3.5 --rate 10
PLOT_CAP_CSV  := $(PLOT_OUT)/capacity-h200-hd128.csv
PLOT_IMGS += $(PLOT_OUT)/capacity-h200-hd128.png
$(PLOT_CAP_CSV): bin/pacesim scenarios/capacity/h200-hd128.yaml calib/profiles/h200.yaml
	@mkdir -p $(PLOT_OUT)
	./bin/pacesim capacity scenarios/capacity/h200-hd128.yaml $(PLOT_CAP_ARGS) --quiet --no-progress --csv $@
$(PLOT_OUT)/capacity-h200-hd128.png: $(PLOT_CAP_CSV) plots/capacity.gp | setup-plots
	$(GNUPLOT) -e "csv='$(PLOT_CAP_CSV)'; out='$@'; title='capacity-h200-hd128 (H200 profile), ttft_p99 <= 1 s, tpot_p99 <= 0.08 s'" plots/capacity.gp
.PHONY: plots-readme-capacity
plots-readme: plots-readme-capacity
plots-readme-capacity: $(PLOT_OUT)/capacity-h200-hd128.png
	cp $(PLOT_OUT)/capacity-h200-hd128.png plots/capacity-h200-hd128.png
