#!/usr/bin/env bash
# serve.sh: the serving summary and goodput against hand counts.  A small traced run writes its
# requests CSV (--requests) and its run CSV (--csv) with --goodput objectives; for each set of
# objectives the good requests are counted here, from the requests CSV alone, with vLLM's rule
# (every objective given holds, value <= objective; TPOT 0 for one output token), and compared
# with the CSV's goodput_share and request_goodput (good / makespan).  The summary's counts and
# throughputs are checked against the same requests CSV.
#   tests/serve.sh        PACESIM=path overrides bin/pacesim
set -u
. tests/lib.sh serve
scn=tests/data/serve/goodput.yaml

# a column of a one-row CSV by name
col() { awk -F, -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i } NR == 2 { print $c }' "$1"; }

# the hand count: requests CSV, objectives in ms (empty: none); prints "good finished"
count() {
    awk -F, -v T="$2" -v P="$3" -v E="$4" '
    NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $(h["finished_s"]) != "" {
        n++
        ttft = $(h["ttft_s"]); tpot = $(h["tpot_s"]) == "" ? 0 : $(h["tpot_s"])
        e2el = $(h["finished_s"]) - $(h["arrival_s"])
        # a value within 1 ns of an objective would make the count depend on rounding
        if ((T != "" && (ttft - T / 1000) ^ 2 < 1e-18) || (P != "" && (tpot - P / 1000) ^ 2 < 1e-18) \
            || (E != "" && (e2el - E / 1000) ^ 2 < 1e-18)) { print "borderline"; exit }
        if ((T == "" || ttft <= T / 1000) && (P == "" || tpot <= P / 1000) && (E == "" || e2el <= E / 1000)) g++
    }
    END { printf "%d %d\n", g, n }' "$1"
}

i=0
for slo in "300||" "500|25|" "|12|" "||1500" "400|50|2000" "1000|100|5000" "0||"; do
    IFS='|' read -r T P E <<< "$slo"
    args=()
    [ -n "$T" ] && args+=("ttft:$T")
    [ -n "$P" ] && args+=("tpot:$P")
    [ -n "$E" ] && args+=("e2el:$E")
    i=$((i + 1))
    "$bin" run "$scn" --goodput "${args[@]}" --requests "$tmp/req$i.csv" --csv "$tmp/run$i.csv" --quiet 2>"$tmp/err"
    read -r good n <<< "$(count "$tmp/req$i.csv" "$T" "$P" "$E")"
    [ "$good" = borderline ] && { bad "--goodput ${args[*]}: an objective on a request's value (pick another)"; continue; }
    share=$(col "$tmp/run$i.csv" goodput_share)
    rate=$(col "$tmp/run$i.csv" request_goodput)
    span=$(col "$tmp/run$i.csv" makespan_s)
    done_n=$(col "$tmp/run$i.csv" completed)
    check "--goodput ${args[*]}: $good of $n good, as counted by hand (share $share)" \
        awk -v g="$good" -v n="$n" -v s="$share" -v c="$done_n" 'BEGIN { exit !(c == n && (s - g / n) ^ 2 < 1e-10) }'
    check "--goodput ${args[*]}: request_goodput $rate = $good / makespan $span" \
        awk -v g="$good" -v r="$rate" -v t="$span" 'BEGIN { exit !(((r - g / t) / (g / t + 1e-9)) ^ 2 < 1e-10) }'
done
# the counts above span none to all good: the objectives separate the requests
check "the objective sets give different counts" test "$(for k in 1 2 3 4 5 6 7; do col "$tmp/run$k.csv" goodput_share; done | sort -u | wc -l)" -ge 4

# the summary's totals and throughputs from the requests CSV
read -r nin nout n <<< "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $(h["finished_s"]) != "" { a += $(h["prompt_tokens"]); b += $(h["output_tokens"]); n++ } END { print a, b, n }' "$tmp/req1.csv")"
check "total input/output tokens of the finished requests" \
    test "$(col "$tmp/run1.csv" total_input_tokens) $(col "$tmp/run1.csv" total_output_tokens)" = "$nin $nout"
check "request, input, output, total throughput = counts / makespan" awk -v span="$(col "$tmp/run1.csv" makespan_s)" \
    -v n="$n" -v a="$nin" -v b="$nout" -v r="$(col "$tmp/run1.csv" request_throughput)" \
    -v i="$(col "$tmp/run1.csv" input_throughput)" -v o="$(col "$tmp/run1.csv" output_throughput)" \
    -v t="$(col "$tmp/run1.csv" total_token_throughput)" \
    'function near(x, y) { return ((x - y) / y) ^ 2 < 1e-10 }
     BEGIN { exit !(near(r, n / span) && near(i, a / span) && near(o, b / span) && near(t, (a + b) / span)) }'
# mean TTFT and E2EL, median TTFT from the requests CSV (exact below 100,000 values)
check "mean/median TTFT and mean E2EL in ms from the requests CSV" awk -F, \
    -v mt="$(col "$tmp/run1.csv" mean_ttft_ms)" -v md="$(col "$tmp/run1.csv" median_ttft_ms)" \
    -v me="$(col "$tmp/run1.csv" mean_e2el_ms)" '
    function near(x, y) { return ((x - y) / y) ^ 2 < 1e-10 }
    NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $(h["finished_s"]) != "" { n++; v[n] = $(h["ttft_s"]) * 1000; s += v[n]; e += ($(h["finished_s"]) - $(h["arrival_s"])) * 1000 }
    END {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
        med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        exit !(near(mt, s / n) && near(md, med) && near(me, e / n))
    }' "$tmp/req1.csv"

# -- the options
"$bin" run "$scn" --goodput ttft:x --quiet 2>"$tmp/e"; rc=$?
check "--goodput ttft:x: exit 2, one line" test "$rc" = 2 -a "$(wc -l < "$tmp/e")" = 1
"$bin" run "$scn" --goodput ttfx:5 --quiet 2>"$tmp/e"; rc=$?
check "--goodput ttfx:5: exit 2 naming the keys" sh -c "test $rc = 2 && grep -q 'ttft, tpot or e2el' '$tmp/e'"
"$bin" run "$scn" --goodput tpot:-1 --quiet 2>"$tmp/e"; rc=$?
check "--goodput tpot:-1: exit 2" test "$rc" = 2
"$bin" run "$scn" --goodput --quiet 2>"$tmp/e"; rc=$?
check "--goodput without a pair: exit 2" test "$rc" = 2
"$bin" run "$scn" --goodput=ttft:300 --goodput tpot:25 --csv "$tmp/g.csv" --quiet
check "--goodput=KEY:MS and repeated --goodput accumulate" test "$(col "$tmp/g.csv" goodput_share)" != ""
"$bin" run "$scn" --goodput ttft:300 > "$tmp/t.out"
check "the table prints the goodput" grep -q '^   Request goodput (req/s): ' "$tmp/t.out"
"$bin" run "$scn" --no-summary > "$tmp/t.out"
check "--no-summary: no serving summary" sh -c "! grep -q 'Serving Benchmark Result' '$tmp/t.out'"
"$bin" run scenarios/default.yaml --summary --set workload.requests.B.output_tokens=4 > "$tmp/t.out"
check "--summary on a scenario of explicit requests" grep -q 'Serving Benchmark Result' "$tmp/t.out"

# -- the warnings: Poisson draws cut to max_model_len, statistics over a run stopped early
p=scenarios/h200-serve-poisson-p600-s64-b2048.yaml
"$bin" run "$p" --quiet --requests "$tmp/full.csv" 2>"$tmp/w0"
"$bin" run "$p" --set engine.max_model_len=700 --quiet 2>"$tmp/w1"
over=$(awk -F, 'NR > 1 && $6 + $8 > 700' "$tmp/full.csv" | wc -l)
said=$(sed -n 's/.*workload.poisson: \([0-9]*\) of 120 generated requests drew.*/\1/p' "$tmp/w1")
check "clamped draws: warned with their count ($said), the draws past 700 tokens of the same seed ($over)" \
    test -n "$said" -a "$said" = "$over" -a "$over" -gt 0
check "clamped draws: the warning names the file, line and column of workload.poisson" grep -q "^warning: $p:[0-9]*:[0-9]*: workload.poisson" "$tmp/w1"
check "no clamp and no early stop: no warning of either" sh -c "! grep -q 'were cut\|stopped at' '$tmp/w0'"
"$bin" run "$scn" --set stop.max_time_s=1 --quiet --requests "$tmp/stop.csv" 2>"$tmp/w2"
left=$(awk -F, 'NR > 1 && $2 != "" && $5 == ""' "$tmp/stop.csv" | wc -l)
check "stopped by max_time_s: warned, with the $left arrived requests unfinished" \
    grep -q "stopped at stop.max_time_s .* with $left of [0-9]* arrived requests unfinished" "$tmp/w2"
# a cluster whose router latency holds the second request past the stop, the engine idle from
# the first one's end: the warning names the limit (5 s) and the last step's end apart
"$bin" run tests/data/bad/cluster-router-latency-past-stop.yaml --set cluster.router_latency_s=0.5 \
    --set 'workload={requests: [{id: a, prompt_tokens: 100, output_tokens: 10, arrival: 0},
                                {id: b, prompt_tokens: 100, output_tokens: 10, arrival: 4.8}]}' \
    --set 'measure={ttft: {kind: ttft}}' --quiet 2>"$tmp/w2b"
check "stopped by max_time_s idle: the warning names the stop and the last step apart" \
    grep -q "stopped at stop.max_time_s (5 s; the last engine step ended at 0.6[0-9]* s) with 1 of 2 arrived" "$tmp/w2b"
"$bin" run "$scn" --set stop.max_steps=40 --quiet 2>"$tmp/w3"
check "stopped by max_steps: warned" grep -q "stopped at stop.max_steps" "$tmp/w3"
"$bin" run scenarios/default.yaml --set stop.max_steps=5 --quiet 2>"$tmp/w4"
check "stopped early without statistics over all requests: no bias warning" sh -c "! grep -q 'stopped at' '$tmp/w4'"

# -- the CSV: one column per name, the table's distribution columns, fractional sweeps
"$bin" run scenarios/default.yaml "$scn" --csv "$tmp/c.csv" --quiet
check "the CSV header names every column once" test -z "$(head -1 "$tmp/c.csv" | tr , '\n' | sort | uniq -d)"
"$bin" run "$scn" --csv "$tmp/d.csv" > "$tmp/d.out"
want=$(awk '$1 == "ttft_mean" && NF >= 6 { print $2, $3, $4, $5, $6 }' "$tmp/d.out")
got=$(awk -F, -v OFS=' ' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { printf "%d %.4f %.4f %.4f %.4f\n", $c["ttft_mean_n"], $c["ttft_mean_mean"], $c["ttft_mean_p50"], $c["ttft_mean_p90"], $c["ttft_mean_p99"] }' "$tmp/d.csv")
check "a latency window's n, mean, p50, p90, p99 are CSV columns, as the table prints them ($got)" test -n "$want" -a "$want" = "$got"
"$bin" run "$p" --sweep workload.poisson.rate_per_s=12..24:6,0.5..1:0.25 --csv "$tmp/f.csv" --quiet 2>/dev/null
check "--sweep with a fractional range: its values, in order" \
    test "$(awk -F, 'NR > 1 { printf "%s ", $2 }' "$tmp/f.csv")" = "12 18 24 0.50 0.75 1.00 "

# -- --json: the same runs as one JSON document (python3 reads it; skipped without)
if command -v python3 >/dev/null 2>&1; then
    "$bin" run "$scn" --goodput ttft:300 tpot:25 --json "$tmp/r.json" --csv "$tmp/r.csv" --quiet
    check "--json: valid JSON, the CSV's figures under the same keys" python3 - "$tmp/r.json" "$tmp/r.csv" <<'PY'
import csv, json, sys
runs = json.load(open(sys.argv[1]))
row = next(csv.DictReader(open(sys.argv[2])))
assert isinstance(runs, list) and len(runs) == 1, runs
sv = runs[0]["serving"]
for k in ("completed", "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
          "goodput_share", "output_throughput", "total_token_throughput", "mean_ttft_ms", "median_tpot_ms",
          "p99_itl_ms", "p99_e2el_ms"):
    a, b = float(sv[k]), float(row[k])
    assert abs(a - b) <= 1e-5 * max(abs(b), 1e-9), (k, a, b)
assert sv["goodput_slo_ms"] == {"ttft": 300, "tpot": 25}, sv["goodput_slo_ms"]
assert runs[0]["windows"]["ttft_mean"]["n"] == sv["completed"]
PY
    "$bin" run scenarios/default.yaml tests/data/serve/goodput.yaml --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,4 \
        --set 'name=a "quoted", name' --json "$tmp/s.json" --quiet -j 2
    check "--json of a sweep: one object per run, in order, with point and swept values" python3 - "$tmp/s.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))
assert [r["point"] for r in runs] == [0, 1, 2, 3], runs
assert [r["swept"]["env.VLLM_1CAT_PREFILL_PACE_STEPS"] for r in runs] == ["0", "4", "0", "4"]
assert all(r["scenario"] == 'a "quoted", name' for r in runs)
assert "serving" not in runs[0] and "serving" in runs[2]
assert runs[0]["windows"]["a_tok_s"]["published"] > 0 and runs[0]["stopped"] is None
PY
    "$bin" run scenarios/default.yaml --set profile="$tmp/no-such-profile.yaml" --json "$tmp/e.json" --quiet 2>/dev/null
    check "--json with no successful run: an empty array" python3 -c "import json,sys; assert json.load(open(sys.argv[1])) == []" "$tmp/e.json"
    rm -f "$tmp/e2.json"
    "$bin" run "$scn" --set engine.max_num_seqs=0 --json "$tmp/e2.json" --quiet 2>/dev/null
    check "--json of a scenario refused as it loads: exit 2, no file" sh -c "test $? = 2 && test ! -e '$tmp/e2.json'"
else
    echo "  SKIP --json checks: python3 not found"
fi

finish
