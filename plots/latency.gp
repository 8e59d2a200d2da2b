# latency.gp: the latency distribution of a Poisson or trace run, from its per-request CSV
# (`pacesim run ... --requests FILE`): the empirical CDF of queueing (arrival -> first
# admission), TTFT, TPOT and end-to-end latency over the finished requests, on a log time
# axis, with p50, p90 and p99 marked (where a curve crosses a dashed line, that is its
# percentile).
#   gnuplot -e "csv='requests.csv'; out='latency.png'" plots/latency.gp
if (!exists("csv")) csv = 'plots/out/requests-poisson.csv'
if (!exists("out")) out = 'plots/out/latency-poisson.png'
if (!exists("title")) title = system("basename ".csv." .csv")
if (!exists("width")) width = 900
if (!exists("height")) height = 560
if (!exists("fmt")) fmt = 'png'
if (fmt eq 'svg') { set terminal svg size width,height dynamic noenhanced font 'Helvetica,13' background '#ffffff' } \
else { set terminal pngcairo size width,height noenhanced font 'Sans,11' }
set output out
set datafile separator ','
set datafile columnheaders
set datafile missing ''

# finished requests only; a value of 0 (admitted on arrival) sits at the axis' left end
fin(v) = strcol('finished_s') eq '' ? NaN : v
lo = 1e-4
pos(v) = v != v ? NaN : v > lo ? v : lo   # NaN (no TPOT: one output token) stays out
set title "Request latencies: ".title."\nempirical CDF over the finished requests; dashed: p50, p90, p99"
set xlabel "seconds (log scale)"
set ylabel "fraction of requests"
set logscale x
set format x '%g'
set yrange [0:1.0]
set ytics (0, 0.25, 0.5, 0.75, 0.9, 0.99)
set grid back xtics lc rgb '#e0e0e0'
set border 3
set xtics nomirror
set ytics nomirror
set key inside right bottom box opaque
do for [p in "0.5 0.9 0.99"] { set arrow from graph 0, first p+0 to graph 1, first p+0 nohead dt 2 lc rgb '#888888' back }
plot csv using (fin(pos(column('admitted_s') - column('arrival_s')))):(1.0) smooth cnormal lw 2 lc rgb '#2ca02c' title 'queueing', \
     csv using (fin(pos(column('ttft_s')))):(1.0) smooth cnormal lw 2 lc rgb '#1f77b4' title 'TTFT', \
     csv using (fin(pos(column('tpot_s')))):(1.0) smooth cnormal lw 2 lc rgb '#ff7f0e' title 'TPOT', \
     csv using (fin(pos(column('finished_s') - column('arrival_s')))):(1.0) smooth cnormal lw 2 lc rgb '#d62728' title 'end to end'
