#!/usr/bin/env bash
# plot.sh: `pacesim plot`: each kind draws a PNG and an SVG from the CSVs pacesim writes (where
# gnuplot is installed; skipped otherwise), and a CSV without the kind's columns, an unknown
# kind, a bad output name or a missing gnuplot is refused with one line.
#   tests/plot.sh        PACESIM=path overrides bin/pacesim
set -u
. tests/lib.sh plot
refused() {   # WHAT RC FRAGMENT COMMAND...
    local what=$1 want=$2 frag=$3; shift 3
    "$@" > /dev/null 2> "$tmp/e"; local rc=$?
    if [ "$rc" = "$want" ] && [ "$(wc -l < "$tmp/e")" = 1 ] && grep -qF -- "$frag" "$tmp/e"; then ok "$what"
    else bad "$what: rc $rc: $(head -c 300 "$tmp/e")"; fi
}
png() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = "211PNG" ]; }
svg() { grep -q '<svg' "$1" && grep -q '</svg>' "$1"; }

scn=tests/data/serve/goodput.yaml
"$bin" run "$scn" --sweep engine.max_num_seqs=2,4,8 --csv "$tmp/sweep.csv" --quiet
"$bin" run "$scn" --requests "$tmp/req.csv" --quiet
"$bin" run scenarios/default.yaml --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,4,8 --csv "$tmp/pace.csv" --quiet

refused "a sweep CSV given to cdf: the missing column named" 2 "sweep.csv:1:1: plot cdf: no column arrival_s" \
    "$bin" plot cdf "$tmp/sweep.csv" -o "$tmp/x.png"
refused "a sweep without a latency column" 2 "pace.csv:1:1: plot rate: no serving summary columns" \
    "$bin" plot rate "$tmp/pace.csv" -o "$tmp/x.png"
refused "--y naming a column the CSV lacks" 2 "sweep.csv:1:1: plot rate: no column p95_ttft_ms" \
    "$bin" plot rate "$tmp/sweep.csv" --y p95_ttft_ms -o "$tmp/x.png"
refused "a requests CSV has no sweep: rate needs --x" 2 "req.csv:1:1: plot rate: not a sweep's CSV" \
    "$bin" plot rate "$tmp/req.csv" -o "$tmp/x.png"
refused "tradeoff of a serving sweep" 2 "plot tradeoff: no column a_tok_s" \
    "$bin" plot tradeoff "$tmp/sweep.csv"
refused "an unknown kind" 2 "unknown kind \"bars\"" "$bin" plot bars "$tmp/sweep.csv"
refused "replicas: a scenario without a Poisson rate" 2 "no workload.poisson" "$bin" plot replicas scenarios/default.yaml
refused "replicas: a cluster of two pools (the rate per replica would count one)" 2 \
    "plot replicas scales one pool's replicas, this cluster has 2 (pre, dec)" \
    "$bin" plot replicas scenarios/cluster/h200-llama8b-disagg.yaml
refused "replicas: --replicas 0" 2 "not an integer in [1, 4096]" "$bin" plot replicas --replicas 0,2
refused "replicas: --rates 1e308 (gnuplot drew nothing of it)" 2 "--rates 1e308: 1e308 is not a rate in (0, 1e6]" \
    "$bin" plot replicas --rates 1e308
refused "replicas: --rates nan" 2 "nan is not a rate in (0, 1e6]" "$bin" plot replicas --rates 4,nan
refused "replicas: --rates inf" 2 "inf is not a rate in (0, 1e6]" "$bin" plot replicas --rates inf
refused "replicas: one key set twice" 2 "engine.max_num_seqs is set twice" "$bin" plot replicas \
    --set engine.max_num_seqs=4 --set engine.max_num_seqs=8
refused "replicas: a rate twice" 2 "--rates 4,8,4: 4 is given twice" "$bin" plot replicas --rates 4,8,4
refused "replicas: a rate twice in two spellings" 2 "4 and 4.0 are the same rate" "$bin" plot replicas --rates 4,4.0
refused "replicas: a router twice" 2 "--routers round_robin,random,round_robin: round_robin is given twice" \
    "$bin" plot replicas --routers round_robin,random,round_robin
refused "replicas: more than 10000 runs" 2 "plot replicas: 60000 runs (--replicas x routers x --rates), more than 10000" \
    "$bin" plot replicas --rates 1..20000 --replicas 1,2 --routers round_robin,random
refused "replicas: 4096 replicas x every rate and router: more than 200000 requests" 2 \
    "plot replicas: 29491200 requests to simulate (workload.poisson.count 200 x replicas, summed over 36 runs), more than 200000" \
    "$bin" plot replicas --replicas 4096
refused "replicas: one run of 1024 replicas x 200 requests is over the cap too" 2 "204800 requests to simulate" \
    "$bin" plot replicas --replicas 1024 --rates 4 --routers round_robin
refused "replicas: --replicas above a cluster's 4096" 2 "--replicas 4097: 4097 is not an integer in [1, 4096]" \
    "$bin" plot replicas --replicas 4097
# nothing to draw, or nowhere to draw it: one line, exit 2 (gnuplot failed with its own lines, exit 1)
printf 'point,workload.poisson.rate_per_s,file,ttft_p99\n0,1,a.yaml,0\n1,2,a.yaml,\n' > "$tmp/zero.csv"
refused "rate --logy of a column with nothing above 0" 2 "zero.csv:1:1: plot rate: column ttft_p99 has no value to draw above 0" \
    "$bin" plot rate "$tmp/zero.csv" --y ttft_p99 --logy -o "$tmp/x.svg"
refused "-o in a missing directory" 2 "-o $tmp/none/x.svg: no directory $tmp/none" \
    "$bin" plot rate "$tmp/sweep.csv" -o "$tmp/none/x.svg"
"$bin" run scenarios/default.yaml --set stop.max_steps=3 --requests "$tmp/unfinished.csv" --quiet
refused "cdf of requests none of which finished" 2 "unfinished.csv:1:1: plot cdf: no finished request to draw" \
    "$bin" plot cdf "$tmp/unfinished.csv" -o "$tmp/x.png"
printf 'router,replicas,rate_per_replica,p99_ttft_s\nround_robin,1,1,\n' > "$tmp/norep.csv"
refused "replicas data without a p99" 2 "norep.csv:1:1: plot replicas: no row with a p99_ttft_s to draw" \
    "$bin" plot replicas "$tmp/norep.csv" -o "$tmp/x.png"
refused "replicas: an unknown router, named as --routers" 2 'plot replicas: --routers nope: expected one of round_robin' \
    "$bin" plot replicas --routers nope
refused "replicas: --data named by an empty name" 2 "an output named by an empty file name" "$bin" plot replicas \
    scenarios/cluster/h200-llama8b-chat.yaml --rates 1 --replicas 1 --data "" -o "$tmp/x.png"
refused "replicas: a count twice" 2 "--replicas 2,1,2: 2 is given twice" "$bin" plot replicas --replicas 2,1,2
refused "replicas: a rate at which no request arrives before the stop" 2 \
    "1 replica, no router, 1e-300/s per replica: --set workload.poisson.rate_per_s: 1e-300/s: the first request arrives at" \
    "$bin" plot replicas scenarios/cluster/h200-llama8b-chat.yaml --set workload.poisson.count=10 --rates 1e-300 \
    --replicas 1 --data "$tmp/slow.csv" -o "$tmp/slow.svg"
refused "replicas: a router the scenario refuses" 2 "session" "$bin" plot replicas scenarios/lib/h200-llama8b-poisson.yaml \
    --routers session
refused "replicas: a data CSV without its columns" 2 "plot replicas: no column router" "$bin" plot replicas "$tmp/sweep.csv"
cp scenarios/cluster/h200-llama8b-chat.yaml "$tmp/in.yaml"; sed -i "s#\.\./\.\./#$PWD/#g" "$tmp/in.yaml"; cp "$tmp/in.yaml" "$tmp/in0.yaml"
refused "replicas: --data naming the scenario" 2 "that is the scenario" "$bin" plot replicas "$tmp/in.yaml" --rates 1 \
    --replicas 1 --data "$tmp/./in.yaml" -o "$tmp/x.png"
check "replicas: ... and the scenario untouched" cmp -s "$tmp/in.yaml" "$tmp/in0.yaml"
refused "replicas: --data naming the plot" 2 "the plot's file too" "$bin" plot replicas "$tmp/in.yaml" --rates 1 \
    --replicas 1 --data "$tmp/x.png" -o "$tmp/./x.png"
mkfifo "$tmp/fifo"
refused "replicas: --data a FIFO without a reader (no hang)" 2 "a FIFO that no process reads" timeout 60 "$bin" plot \
    replicas "$tmp/in.yaml" --rates 1 --replicas 1 --data "$tmp/fifo" -o "$tmp/x.png"

# replicas: the data are the simulations' (a run of the same point gives the same p99 TTFT), the
# same for every -j; drawn where gnuplot is (exit 1 without it, the data written first)
chat=scenarios/cluster/h200-llama8b-chat.yaml
rargs=(--set workload.poisson.count=40 --rates 6,12 --replicas 1,2 --routers round_robin,least_outstanding)
"$bin" plot replicas "$chat" "${rargs[@]}" --data "$tmp/rep1.csv" -j 1 -o "$tmp/rep.svg" > /dev/null 2>&1
"$bin" plot replicas "$chat" "${rargs[@]}" --data "$tmp/rep2.csv" -j 2 -o "$tmp/rep2.svg" > /dev/null 2>&1
check "replicas: data header" test "$(head -1 "$tmp/rep1.csv")" = \
    "router,replicas,rate_per_replica,rate_per_s,completed,duration_s,request_throughput,p99_ttft_s,median_ttft_s,p99_tpot_s,prefix_hit,busy"
check "replicas: one replica once per rate, then 2 routers x 2 rates" test \
    "$(sed 1d "$tmp/rep1.csv" | cut -d, -f1-4 | tr '\n' ' ')" = ",1,6,6 ,1,12,12 round_robin,2,6,12 round_robin,2,12,24 least_outstanding,2,6,12 least_outstanding,2,12,24 "
check "replicas: the data the same for -j 1 and -j 2" cmp -s "$tmp/rep1.csv" "$tmp/rep2.csv"
refused "replicas: no gnuplot: exit 1, how to install it" 1 "make setup-plots" env GNUPLOT=/nonexistent/gnuplot \
    "$bin" plot replicas "$chat" "${rargs[@]}" --data "$tmp/rep4.csv" -o "$tmp/x.png"
check "replicas: no gnuplot: the data written all the same" cmp -s "$tmp/rep1.csv" "$tmp/rep4.csv"
"$bin" run "$chat" --set workload.poisson.count=80 --set cluster.pools.main.count=2 --set cluster.router=least_outstanding \
    --set workload.poisson.rate_per_s=24 --summary --csv "$tmp/one.csv" --quiet
p99=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "p99_ttft_ms") c = i; next } { print $c / 1000 }' "$tmp/one.csv")
got=$(awk -F, '$1 == "least_outstanding" && $3 == 12 { print $8 + 0 }' "$tmp/rep1.csv")
check "replicas: a point's p99 TTFT is its run's ($got, run: $p99)" \
    awk -v a="$got" -v b="$p99" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-5 * b) }'
refused "-o neither .png nor .svg" 2 "must end in .png or .svg" "$bin" plot cdf "$tmp/req.csv" -o "$tmp/x.pdf"
refused "a missing CSV" 2 "none.csv: cannot open: No such file or directory" "$bin" plot cdf "$tmp/none.csv"
# the data handed to gnuplot (a stand-in gnuplot keeps them): a file name with a comma, RFC 4180
# quoted as pacesim writes it, and CRLF line ends draw the same points (they shifted a column)
cat > "$tmp/gp" <<'EOF'
#!/usr/bin/env bash
d=${2#dat=\'}; cp "${d%%\'*}" "${0%/*}/gp.dat"
EOF
chmod +x "$tmp/gp"
last=$(head -1 "$tmp/sweep.csv" | tr ',' '\n' | grep -x 'p99_[a-z]*_ms' | tail -1)
GNUPLOT=$tmp/gp "$bin" plot rate "$tmp/sweep.csv" --y "p99_ttft_ms,$last" -o "$tmp/x.svg" > /dev/null && mv "$tmp/gp.dat" "$tmp/plain.dat"
sed 's#,tests/data/serve/goodput.yaml,#,"tests/data/serve/a,""b"".yaml",#' "$tmp/sweep.csv" > "$tmp/quoted.csv"
sed 's/$/\r/' "$tmp/quoted.csv" > "$tmp/crlf.csv"
for f in quoted crlf; do
    rm -f "$tmp/gp.dat"
    GNUPLOT=$tmp/gp "$bin" plot rate "$tmp/$f.csv" --y "p99_ttft_ms,$last" -o "$tmp/x.svg" > /dev/null 2>&1
    check "rate of a $f CSV: the points of the plain one" cmp -s "$tmp/plain.dat" "$tmp/gp.dat"
done
printf 'point,x,file,y\n0,1,"a,b.yaml,2\n' > "$tmp/open.csv"
refused "a quoted field left open" 2 "open.csv:2:1: plot rate: a quoted field not closed on its line" \
    "$bin" plot rate "$tmp/open.csv" -o "$tmp/x.png"
refused "an option given twice (the first was dropped)" 2 "pacesim plot: --y given twice" \
    "$bin" plot rate "$tmp/sweep.csv" --y p99_ttft_ms --y median_ttft_ms -o "$tmp/x.png"
refused "-o and --out both" 2 "pacesim plot: --out given twice" "$bin" plot cdf "$tmp/req.csv" -o "$tmp/x.png" --out "$tmp/y.png"
refused "replicas: --rates twice (the first was dropped)" 2 "pacesim plot replicas: --rates given twice" \
    "$bin" plot replicas --rates 4 --rates 8 --replicas 1
refused "no gnuplot: exit 1, how to install it" 1 "make setup-plots" env GNUPLOT=/nonexistent/gnuplot "$bin" plot cdf "$tmp/req.csv" -o "$tmp/x.png"

if command -v "${GNUPLOT:-gnuplot}" >/dev/null 2>&1; then
    for f in png svg; do
        "$bin" plot rate "$tmp/sweep.csv" -o "$tmp/rate.$f" > /dev/null
        check "rate -> $f" "$f" "$tmp/rate.$f"
        "$bin" plot cdf "$tmp/req.csv" -o "$tmp/cdf.$f" > /dev/null
        check "cdf -> $f" "$f" "$tmp/cdf.$f"
        "$bin" plot tradeoff "$tmp/pace.csv" -o "$tmp/t.$f" > /dev/null
        check "tradeoff -> $f" "$f" "$tmp/t.$f"
    done
    check "replicas -> svg" svg "$tmp/rep.svg"
    check "replicas: a panel per router" sh -c "grep -q least_outstanding '$tmp/rep.svg' && grep -q round_robin '$tmp/rep.svg'"
    "$bin" plot replicas "$tmp/rep1.csv" -o "$tmp/rep3.png" > /dev/null
    check "replicas: its data CSV drawn again -> png" png "$tmp/rep3.png"
    "$bin" plot rate "$tmp/sweep.csv" --x engine.max_num_seqs --y mean_e2el_ms,p99_e2el_ms --logy --title 'a "t"' -o "$tmp/r2.svg" > /dev/null
    check "rate with --x, --y, --logy, --title: an SVG with both curves named" \
        sh -c "grep -q 'mean_e2el_ms' '$tmp/r2.svg' && grep -q 'p99_e2el_ms' '$tmp/r2.svg'"
    "$bin" run "$scn" --sweep engine.max_num_seqs=2,4,8 --error-bars 3 --csv "$tmp/bars.csv" --quiet
    "$bin" plot rate "$tmp/bars.csv" -o "$tmp/bars.svg" > /dev/null
    check "rate of a run --error-bars sweep: each point with its range" grep -q 'with the step-error ranges' "$tmp/bars.svg"
    check "rate of a sweep without them: points alone" sh -c "! grep -q 'step-error' '$tmp/rate.svg'"
else
    echo "  SKIP drawing: gnuplot not found (make setup-plots)"
fi

finish
