# capacity.gp: a capacity search's configurations (`pacesim capacity ... --csv FILE`) as the
# view AIConfigurator users know: output tokens/s per GPU at each configuration's sustained
# rate against its TPOT p99 (left) and its TTFT p99 (right); the Pareto frontier (the CSV's
# `frontier` column) ringed, each point labelled by the value of the first search key (label=N:
# the CSV's column N).  Configurations that sustain no rate are left out.
#   gnuplot -e "csv='cap.csv'; out='cap.png'" plots/capacity.gp
if (!exists("csv")) csv = 'plots/out/capacity.csv'
if (!exists("out")) out = 'plots/out/capacity.png'
if (!exists("title")) title = system("basename ".csv." .csv")
if (!exists("width")) width = 1100
if (!exists("height")) height = 480
set terminal pngcairo size width,height noenhanced font 'Sans,11'
set output out
set datafile separator ','
set datafile columnheaders
set datafile missing ''

ok(v) = strcol('status') eq 'ok' ? v : NaN
front(v) = (strcol('status') eq 'ok' && strcol('frontier') eq '1') ? v : NaN
set multiplot layout 1,2 title "Capacity: ".title." -- output tok/s per GPU at the highest rate within the SLOs"
set grid back lc rgb '#e0e0e0'
set border 3
set xtics nomirror
set ytics nomirror
set ylabel "output tok/s per GPU"
set key outside bottom center horizontal
set offsets graph 0.08, graph 0.08, graph 0.1, graph 0.1
lbl = exists("label") ? label : 2     # the column labelling each point: the first search key's

set xlabel "TPOT p99 at that rate (ms)"
plot csv using (ok(1e3 * column('tpot_p99_s'))):(ok(column('tok_s_per_gpu'))) with points pt 7 ps 0.8 lc rgb '#1f77b4' title 'configuration', \
     csv using (front(1e3 * column('tpot_p99_s'))):(front(column('tok_s_per_gpu'))) with points pt 6 ps 2 lw 2 lc rgb '#d62728' title 'Pareto frontier', \
     csv using (ok(1e3 * column('tpot_p99_s'))):(ok(column('tok_s_per_gpu'))):(stringcolumn(lbl)) with labels offset char 0,1.2 notitle

set xlabel "TTFT p99 at that rate (s)"
plot csv using (ok(column('ttft_p99_s'))):(ok(column('tok_s_per_gpu'))) with points pt 7 ps 0.8 lc rgb '#1f77b4' title 'configuration', \
     csv using (front(column('ttft_p99_s'))):(front(column('tok_s_per_gpu'))) with points pt 6 ps 2 lw 2 lc rgb '#d62728' title 'Pareto frontier', \
     csv using (ok(column('ttft_p99_s'))):(ok(column('tok_s_per_gpu'))):(stringcolumn(lbl)) with labels offset char 0,1.2 notitle
unset multiplot
