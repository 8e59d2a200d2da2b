#!/usr/bin/env bash
# outputs.sh: the shape of what the CLI writes: every command's --help, the CSV of several
# runs (one header, every row as wide as it, RFC 4180 quoting), the steps and requests CSVs
# of several runs (one header, a leading run/point column), and make run's trade-off table.
#   tests/outputs.sh        PACESIM=path overrides bin/pacesim
set -u
. tests/lib.sh outputs

# RFC 4180 field counts per record (quoted fields may hold commas, quotes and newlines)
fields() {
    awk 'BEGIN { RS = "\0" } {
        n = length($0); q = 0; f = 1
        for (i = 1; i <= n; i++) {
            c = substr($0, i, 1)
            if (q) { if (c == "\"") { if (substr($0, i + 1, 1) == "\"") i++; else q = 0 } }
            else if (c == "\"") q = 1
            else if (c == ",") f++
            else if (c == "\n") { print f; f = 1 }
        }
    }' "$1"
}
rectangular() { [ "$(fields "$1" | sort -u | wc -l)" = 1 ]; }

# -- --help: every command, exit 0, its own usage line on stdout
for c in run points merge best validate profile rescore replay; do
    out=$("$bin" "$c" --help 2>&1); rc=$?
    check "$c --help: exit 0 and its usage" test "$rc" = 0 -a "${out#usage: pacesim $c}" != "$out"
done
check "help run = run --help" test "$("$bin" help run)" = "$("$bin" run --help)"
check "--help lists --requests" sh -c "'$bin' --help | grep -q -- --requests"

# -- the CSV of runs with different windows: one header, the union of columns
"$bin" run scenarios/v100-*.yaml --csv "$tmp/v100.csv" --quiet -j 2 2>/dev/null
check "several files: one header" test "$(grep -c '^scenario,' "$tmp/v100.csv")" = 1
check "several files: every row as wide as the header" rectangular "$tmp/v100.csv"
nfiles=$(ls scenarios/v100-*.yaml | wc -l)
check "several files: one row per file" test "$(($(wc -l < "$tmp/v100.csv") - 1))" = "$nfiles"

# -- RFC 4180: a field with a comma and a quote is quoted, the row still has the header's width
"$bin" run scenarios/default.yaml --set 'name=a,b "c"' --csv "$tmp/q.csv" --quiet
check "quoting: the field is quoted" grep -q '^"a,b ""c""",' "$tmp/q.csv"
check "quoting: the row as wide as the header" rectangular "$tmp/q.csv"

# -- --steps and --requests of a sweep: one header, run and point columns
"$bin" run scenarios/default.yaml scenarios/v100-fp16-nomtp-b16k-pdr.yaml --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,4 \
    --steps "$tmp/steps.csv" --requests "$tmp/req.csv" --quiet -j 2
check "sweep steps: one header, run and point first" test "$(grep -c 'step,t_start_s' "$tmp/steps.csv")" = 1 -a \
    "$(head -c 15 "$tmp/steps.csv")" = "run,point,step,"
check "sweep steps: rows of all 4 runs" test "$(cut -d, -f1 "$tmp/steps.csv" | sed 1d | sort -u | tr '\n' ' ')" = "0 1 2 3 "
check "sweep requests: one header, 2 rows per run" test "$(grep -c '^run,point,id,' "$tmp/req.csv")" = 1 -a \
    "$(sed 1d "$tmp/req.csv" | wc -l)" = 8
check "sweep requests: rectangular" rectangular "$tmp/req.csv"
"$bin" run scenarios/default.yaml --requests "$tmp/one.csv" --quiet
check "one run: requests without run column" test "$(head -c 3 "$tmp/one.csv")" = "id,"
# an option of one value given twice is refused (the first would be dropped unsaid), nothing written
for o in --csv --json --steps --requests --replicas; do
    rm -f "$tmp/twice1" "$tmp/twice2"
    "$bin" run scenarios/default.yaml $o "$tmp/twice1" $o="$tmp/twice2" --quiet 2> "$tmp/twice.err"
    check "run $o given twice: exit 2, one line, no file" test $? = 2 -a "$(wc -l < "$tmp/twice.err")" = 1 \
        -a ! -e "$tmp/twice1" -a ! -e "$tmp/twice2"
done
"$bin" run scenarios/default.yaml -j 1 --jobs 2 --quiet 2> "$tmp/twice.err"
check "run -j and --jobs: given twice" sh -c "test $? = 2 && grep -q 'given twice' '$tmp/twice.err'"
"$bin" points scenarios/default.yaml -o "$tmp/p1" --out "$tmp/p2" 2> "$tmp/twice.err"
check "points -o and --out: given twice" sh -c "test $? = 2 && grep -q 'given twice' '$tmp/twice.err'"
# /dev/null for several outputs (a character device: nothing to overwrite) is taken; it was refused as one file for two
"$bin" run scenarios/default.yaml --csv /dev/null --steps /dev/null --requests /dev/null --quiet 2> "$tmp/twice.err"
check "run --csv, --steps and --requests all /dev/null: exit 0" sh -c "test $? = 0 && ! test -s '$tmp/twice.err'"
# one key set twice (two --set, or a --set beside a --sweep of it): the later took it unsaid
"$bin" run scenarios/default.yaml --set engine.max_num_seqs=2 --set engine.max_num_seqs=4 --quiet 2> "$tmp/twice.err"
check "run --set of one key twice: exit 2, one line" sh -c "test $? = 2 && test \$(wc -l < '$tmp/twice.err') = 1 \
    && grep -q 'engine.max_num_seqs is set twice (--set engine.max_num_seqs=2 before it)' '$tmp/twice.err'"
"$bin" points scenarios/default.yaml --set engine.max_num_seqs=2 --sweep engine.max_num_seqs=4,8 > "$tmp/twice.out" \
    2> "$tmp/twice.err"
check "points --set beside a --sweep of that key: exit 2, nothing printed" sh -c "test $? = 2 && ! test -s '$tmp/twice.out' \
    && grep -q -- '--set engine.max_num_seqs=2: --sweep engine.max_num_seqs sets that key too' '$tmp/twice.err'"

# -- --replicas of a sweep over cluster keys: one header, run and point columns, a row per replica;
#    the run CSV's pool columns after the windows
"$bin" run scenarios/lib/h200-llama8b-poisson.yaml --set workload.poisson.count=200 --no-summary \
    --sweep cluster.pools.main.count=1,3 --replicas "$tmp/rep.csv" --csv "$tmp/cl.csv" --quiet -j 2
check "sweep replicas: one header, run and point first" test "$(grep -c 'replica,pool,tp,' "$tmp/rep.csv")" = 1 -a \
    "$(head -c 18 "$tmp/rep.csv")" = "run,point,replica,"
check "sweep replicas: 1 + 3 rows" test "$(sed 1d "$tmp/rep.csv" | cut -d, -f1 | tr '\n' ' ')" = "0 1 1 1 "
check "sweep replicas: rectangular" rectangular "$tmp/rep.csv"
check "cluster CSV: pool columns last" sh -c "head -1 '$tmp/cl.csv' | grep -q ',pool_main_replicas,.*,pool_main_busy\$'"
check "cluster CSV: rectangular" rectangular "$tmp/cl.csv"
"$bin" run scenarios/cluster/h200-llama8b-chat.yaml --set cluster.pools.main.count=2 --set workload.poisson.count=20 \
    --json "$tmp/cl.json" --csv "$tmp/cl2.csv" --quiet
served=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "pool_main_served") c = i; next } { print $c }' "$tmp/cl2.csv")
check "cluster JSON: the pool's figures, as the CSV's" grep -q "\"pools\": {\"main\": {\"replicas\": 2, \"tensor_parallel_size\": 1, \"served\": $served," "$tmp/cl.json"
check "cluster CSV: best reads a pool column" sh -c "'$bin' best '$tmp/cl.csv' --objective min:pool_main_busy | grep -q 'best point 1 '"
# -- --steps of a cluster: a replica column after the run's, each replica's rows its steps in
#    the replicas CSV; a single engine's steps CSV has none, a sweep with a cluster among its
#    runs has it for every run (0 for a single engine's)
"$bin" run scenarios/cluster/h200-llama8b-chat.yaml --set cluster.pools.main.count=3 --set workload.poisson.count=30 \
    --steps "$tmp/cs.csv" --replicas "$tmp/cr.csv" --quiet
check "cluster steps: replica column first" test "$(head -c 13 "$tmp/cs.csv")" = "replica,step,"
check "cluster steps: steps per replica = the replicas CSV's" test \
    "$(sed 1d "$tmp/cs.csv" | cut -d, -f1 | sort -n | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')" = \
    "$(sed 1d "$tmp/cr.csv" | awk -F, '{ printf "%s:%s ", $1, $6 }')"
"$bin" run scenarios/default.yaml --steps "$tmp/ss.csv" --quiet
check "one engine's steps: no replica column" test "$(head -c 5 "$tmp/ss.csv")" = "step,"
"$bin" run scenarios/lib/h200-llama8b-poisson.yaml scenarios/cluster/h200-llama8b-chat.yaml --set workload.poisson.count=20 \
    --steps "$tmp/ms.csv" --quiet -j 2 2>/dev/null
check "sweep steps with a cluster: run,replica,step" test "$(head -c 17 "$tmp/ms.csv")" = "run,replica,step," -a \
    "$(awk -F, '$1 == 0 { print $2 }' "$tmp/ms.csv" | sort -u)" = 0
check "sweep steps with a cluster: rectangular" rectangular "$tmp/ms.csv"

# -- a name with a comma, a newline and a tab: quoted in the CSV (still rectangular, best
#    reads it back), one line in the table
"$bin" run scenarios/default.yaml --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,4 --set 'name="a,b\nc\td"' \
    --csv "$tmp/nl.csv" > "$tmp/nl.txt"
check "name with a newline: quoted in the CSV" grep -q '^0,0,"a,b$' "$tmp/nl.csv"
check "name with a newline: the CSV rectangular" rectangular "$tmp/nl.csv"
check "name with a newline: one table line" grep -qx '== a,b?c?d  (scenarios/default.yaml)' "$tmp/nl.txt"
check "name with a newline: best reads the CSV" sh -c "'$bin' best '$tmp/nl.csv' --objective max:steps | grep -q 'best point 1 '"

# -- best and points: a bad input is one line and exit 2 (sweep_best_files, sweep_print_points)
one_line_2() { local out=$1; shift; "$@" >/dev/null 2>"$out"; [ $? = 2 ] && [ "$(wc -l < "$out")" = 1 ]; }
: > "$tmp/empty.csv"
check "best: an empty CSV refused" one_line_2 "$tmp/err" "$bin" best "$tmp/empty.csv" --objective max:steps
check "best: the message names the file" grep -q "empty.csv.*empty" "$tmp/err"
printf 'scenario,file,steps\nx,f.yaml,1,2\n' > "$tmp/wide.csv"
check "best: a row wider than the header refused" one_line_2 "$tmp/err" "$bin" best "$tmp/wide.csv" --objective max:steps
printf 'scenario,file,steps\nx,f.yaml,1\n' > "$tmp/text.csv"
check "best: a text column as the objective refused" one_line_2 "$tmp/err" "$bin" best "$tmp/text.csv" --objective max:scenario
check "best: the message says text" grep -q 'column "scenario" holds text' "$tmp/err"
check "best: a text column in a constraint refused" one_line_2 "$tmp/err" "$bin" best "$tmp/text.csv" \
    --objective max:steps --constraint 'file<=1'
check "run: a text column as the objective refused" one_line_2 "$tmp/err" "$bin" run scenarios/default.yaml --quiet \
    --objective max:scenario
printf 'steps,b\ninf,1\n2,2\n' > "$tmp/inf.csv"
check "best: inf among the objective's numbers refused (not a row passed over)" one_line_2 "$tmp/err" "$bin" best \
    "$tmp/inf.csv" --objective max:steps
check "best: the message names the row's line" grep -q 'inf.csv:2: --objective: column "steps" holds text ("inf")' "$tmp/err"
printf 'steps,b\n1,1\n2,x\n' > "$tmp/ctext.csv"
check "best: text among a constraint's numbers refused" one_line_2 "$tmp/err" "$bin" best "$tmp/ctext.csv" \
    --objective max:steps --constraint 'b<=3'
check "best: that line named" grep -q 'ctext.csv:3: --constraint' "$tmp/err"
printf 'steps,b\n1,1\n,2\n' > "$tmp/gap.csv"
check "best: an empty value (an undefined window) is passed over" sh -c \
    "'$bin' best '$tmp/gap.csv' --objective max:steps | grep -q 'steps=1\$'"
check "best: no value at all is not 'no point satisfies the constraints'" sh -c \
    "printf 'scenario,file,steps\nx,f.yaml,\n' > '$tmp/nov.csv'; '$bin' best '$tmp/nov.csv' --objective max:steps | grep -q 'no point has a value of steps'"
# an output option followed by another option: that option is no file name (it would be lost,
# and a file named after it written)
abin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") top=$PWD
for o in --csv --steps --json --trace --replicas --requests; do
    (cd "$tmp" && one_line_2 err2 "$abin" run "$top/scenarios/default.yaml" $o --quiet) && [ ! -e "$tmp/--quiet" ] \
        && grep -q "^pacesim: $o --quiet: an output named like an option" "$tmp/err2"
    check "run: $o --quiet refused, no file named --quiet" test $? = 0
done
check "run: --csv - (stdout) still taken" sh -c "'$bin' run scenarios/default.yaml --csv - --quiet | grep -q '^scenario,'"
# several files: a bad one is refused before any runs (no table, no CSV of the others)
rm -f "$tmp/part.csv"
check "run: a missing second file refused before the first runs" one_line_2 "$tmp/err" "$bin" run scenarios/default.yaml \
    "$tmp/missing.yaml" --csv "$tmp/part.csv"
check "run: no CSV left of the first file" test ! -e "$tmp/part.csv"
for o in --csv --steps --json --trace --replicas; do
    check "run: --requests F $o F refused" one_line_2 "$tmp/err" "$bin" run scenarios/default.yaml --quiet \
        --requests "$tmp/same.csv" $o "$tmp/same.csv"
done
rm -f "$tmp/new.csv"
check "run: --replicas F --csv ./F refused before F exists" one_line_2 "$tmp/err" "$bin" run scenarios/default.yaml \
    --quiet --replicas "$tmp/new.csv" --csv "$tmp/./new.csv"
check "run: ... and nothing written" test ! -e "$tmp/new.csv"
cp scenarios/default.yaml "$tmp/in.yaml"; sed -i "s#\.\./#$PWD/#g" "$tmp/in.yaml"
check "run: an output that is the scenario refused" one_line_2 "$tmp/err" "$bin" run "$tmp/in.yaml" --quiet --csv "$tmp/./in.yaml"
check "points: more than 10^8 commands refused" one_line_2 "$tmp/err" "$bin" points scenarios/default.yaml \
    --sweep engine.max_num_seqs=1..100000 --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=1..10000
check "-j past the range of long refused" one_line_2 "$tmp/err" "$bin" run scenarios/default.yaml -j 99999999999999999999
check "-j: the message" grep -q -- "-j 99999999999999999999: expected an integer >= 1" "$tmp/err"
check "--point-index past the range of long refused" one_line_2 "$tmp/err" "$bin" run scenarios/default.yaml \
    --point-index 99999999999999999999

check "validate: a profile path with a newline, one line" one_line_2 "$tmp/err" "$bin" validate scenarios/default.yaml \
    --set 'profile="a\nb.yaml"'
check "validate: the path's newline as ?" grep -q 'a?b.yaml: cannot open profile' "$tmp/err"

# -- a trace's header may follow comments and blank lines; a second header after a row is refused
{ echo '# a comment before the header'; echo; cat scenarios/bench-trace.csv; } > "$tmp/commented.csv"
"$bin" run scenarios/bench-trace.yaml --quiet --csv "$tmp/plain.csv"
"$bin" run scenarios/bench-trace.yaml --quiet --set "workload.trace=$tmp/commented.csv" --csv "$tmp/commented-run.csv"
check "trace: comments before the header, same results" test "$(cut -d, -f4- "$tmp/plain.csv")" = \
    "$(cut -d, -f4- "$tmp/commented-run.csv" 2>/dev/null)"
{ cat scenarios/bench-trace.csv; echo 'arrival_s,prompt_tokens,output_tokens'; } > "$tmp/twohead.csv"
check "trace: a header after a row refused" one_line_2 "$tmp/err" "$bin" validate scenarios/bench-trace.yaml \
    --set "workload.trace=$tmp/twohead.csv"
check "trace: the message has the line" grep -q "twohead.csv:22:1: trace:" "$tmp/err"

# -- make run's trade-off table
GNUPLOT=/nonexistent plots/tradeoff.sh scenarios/default.yaml 0,1,2,4,8,16 "$tmp/plots" > "$tmp/run.txt" 2>&1
check "trade-off: a row per PACE_STEPS value" test "$(grep -cE '^ +[0-9]+  ' "$tmp/run.txt")" = 6
check "trade-off: the knee and the CSV" sh -c "grep -q '^knee: ' '$tmp/run.txt' && grep -q '^CSV: $tmp/plots/tradeoff-default.csv' '$tmp/run.txt'"

# warnings come in run order whatever order parallel runs finish in (stdout and stderr alike);
# the library's models, priced by the H200 profile of another model, each warn of its envelope
w=(scenarios/lib/h200-llama8b-poisson.yaml scenarios/lib/qwen3-32b.yaml scenarios/lib/h200-qwen3-30b-a3b-poisson.yaml)
"$bin" run "${w[@]}" -j 1 > "$tmp/w1.out" 2> "$tmp/w1.err"
"$bin" run "${w[@]}" -j 3 > "$tmp/w3.out" 2> "$tmp/w3.err"
check "parallel runs: warnings in run order" sh -c "test -s '$tmp/w1.err' && cmp -s '$tmp/w1.err' '$tmp/w3.err' && cmp -s '$tmp/w1.out' '$tmp/w3.out'"

# -- calib/items_summary.sh: a replay's --items CSV per step type and law
cat > "$tmp/items.csv" <<'CSV'
step,type,law,a,b,c,d,count,predicted_s,measured_s,from_grid
1,mixed,gemm,1024,4096,1024,2,2,0.006,0.004,1
1,mixed,gemm,16,4096,1024,2,2,0.001,0.001,1
1,mixed,gdn,100,2,0,0,1,0.002,0.002,0
2,decode,gemm,1,4096,1024,2,2,0.0005,0.0005,1
CSV
calib/items_summary.sh "$tmp/items.csv" > "$tmp/sum.txt" 2>&1; rc=$?
check "items_summary: a row per (type, law), largest measured first" sh -c "test $rc = 0 && test \"\$(awk 'NR > 1 { print \$1 \"/\" \$2 }' '$tmp/sum.txt' | tr '\n' ' ')\" = 'mixed/gemm mixed/gdn decode/gemm '"
# mixed gemm: 2 items, 0.007 / 0.005 s; the m >= 256 one's 2 x 2 x 1024 x 4096 x 1024 FLOPs in 0.004 s
check "items_summary: sums, ratio and the GEMMs' rate" sh -c "grep -qE '^mixed +gemm +2 +0.0070 +0.0050 +1.400 +4\$' '$tmp/sum.txt'"
printf 'step,type,law\n1,mixed,gemm\n' > "$tmp/notitems.csv"
out=$(calib/items_summary.sh "$tmp/notitems.csv" 2>&1); rc=$?
check "items_summary: another CSV refused at 1:1, exit 2" test "$rc" = 2 -a "$(printf '%s\n' "$out" | wc -l)" = 1 -a "${out#*notitems.csv:1:1:}" != "$out"
printf 'step,type,law,a,b,c,d,count,predicted_s,measured_s,from_grid\n1,mixed,gemm,1,2\n' > "$tmp/ragged.csv"
out=$(calib/items_summary.sh "$tmp/ragged.csv" 2>&1); rc=$?
check "items_summary: a ragged row refused at its line, exit 2" test "$rc" = 2 -a "${out#*ragged.csv:2:1:}" != "$out"
out=$(calib/items_summary.sh "$tmp/none.csv" 2>&1); rc=$?
check "items_summary: a missing file, exit 2" test "$rc" = 2 -a "$(printf '%s\n' "$out" | wc -l)" = 1

# -- calib/items_clock.sh: the items split into law and clock.  One mixed step: a GEMM at the
# peak's rate (u = 1, its law's hot 1) and an elementwise item (hot 2 at f_hot 1000 MHz: time as
# 1/f), both 1e-5 s at the cold clock; time constants 0, so the step's clock is the linear map's
# at its target 0.5: 1500 MHz, the elementwise price 1.333e-5 s.  NVML read 1800 MHz.
cat > "$tmp/ic.yaml" <<'YAML'
profile:
  peak_fp16_tflops: 100
  sustained: {clock_cold_mhz: 2000, clock_hot_mhz: 1000, tau_up_s: 0, tau_down_s: 0,
    gemm_compute_hot: {m: 1, n: 1, k: 1, hot: 2}}
laws:
  - name: "gemm"
    sustained: {hot: 1, heat: 0}
  - name: "elementwise"
    sustained: {hot: 2, heat: 0}
YAML
printf 'step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons\n1,mixed,2.33333333e-05,2.58333e-05,0,0,1800,500,0\n' > "$tmp/ic-steps.csv"
printf 'step,type,law,a,b,c,d,count,predicted_s,measured_s,from_grid\n1,mixed,gemm,1000,1000,500,2,1,1e-05,1.25e-05,1\n1,mixed,elementwise,16,0,0,0,1,1.33333333e-05,1.33333333e-05,1\n' > "$tmp/ic-items.csv"
calib/items_clock.sh "$tmp/ic.yaml" "$tmp/ic-steps.csv" "$tmp/ic-items.csv" > "$tmp/ic.txt" 2>&1; rc=$?
# elementwise: cold 1e-5 / 1.333e-5, priced 1, at 1800 MHz 1.111e-5 / 1.333e-5; the GEMM: 0.8
# at every clock by its law, by the probe (hot 2 at u = 1) 1.111e-5 / 1.25e-5
check "items_clock: law, price, NVML's clock, the probe" sh -c "test $rc = 0 &&
    grep -qE '^mixed +elementwise 1-64 tokens +1 +0.0000 +0.750 +1.000 +0.833 +0.833\$' '$tmp/ic.txt' &&
    grep -qE '^mixed +gemm u>=0.6 +1 +0.0000 +0.800 +0.800 +0.800 +0.889\$' '$tmp/ic.txt' &&
    grep -q '^clock    mixed    model 1500 MHz, NVML 1800 MHz' '$tmp/ic.txt'"
out=$(calib/items_clock.sh "$tmp/ic.yaml" "$tmp/ic-items.csv" "$tmp/ic-items.csv" 2>&1); rc=$?
check "items_clock: a steps file that is not one refused at 1:1, exit 2" test "$rc" = 2 -a "$(printf '%s\n' "$out" | wc -l)" = 1 -a "${out#*ic-items.csv:1:1:}" != "$out"
out=$(calib/items_clock.sh "$tmp/ic.yaml" "$tmp/ic-steps.csv" "$tmp/none.csv" 2>&1); rc=$?
check "items_clock: a missing file, exit 2" test "$rc" = 2 -a "$(printf '%s\n' "$out" | wc -l)" = 1

finish
