# rate.gp: latency against the offered load, from a sweep's CSV (`pacesim run ... --sweep
# workload.poisson.rate_per_s=... --csv FILE`, prepared by plots/plot.sh): one curve per latency
# column and scenario file, the swept value on x.
#   gnuplot -e "dat='rate.dat'; ny=2; ylabels='p99_ttft_ms median_ttft_ms'; groups='a.yaml'; xlabel='rate'; out='r.png'; fmt='png'" plots/rate.gp
# dat: blocks separated by two blank lines, one a scenario file (in groups' order), rows "x y1 ... yny";
# bars=1 (a CSV of `run --error-bars P`): rows "x y1 lo1 hi1 ... yny loN hiN", each point drawn
# with its range (the least and the most over the runs at -P%, 0, +P% a step).
if (!exists("out")) out = 'plots/out/rate.png'
if (!exists("fmt")) fmt = 'png'
if (!exists("width")) width = 900
if (!exists("height")) height = 560
if (!exists("title")) title = ''
if (!exists("logy")) logy = 0
if (!exists("bars")) bars = 0
if (fmt eq 'svg') { set terminal svg size width,height dynamic noenhanced font 'Helvetica,13' background '#ffffff' } \
else { set terminal pngcairo size width,height noenhanced font 'Sans,11' }
set output out
set title "Latency against load".(title ne '' ? ": ".title : '')
set xlabel xlabel
set ylabel (ylabels[strlen(ylabels)-1:strlen(ylabels)] eq 'ms' ? "latency, ms" : "value")
if (logy) { set logscale y; set format y '%g' }
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set key inside left top box opaque
ng = words(groups)
if (bars) {
    set title "Latency against load, with the step-error ranges".(title ne '' ? ": ".title : '')
    set offsets graph 0.02, graph 0.02, 0, 0
    plot for [g = 1:ng] for [k = 1:ny] dat index (g - 1) using 1:(column(3 * k - 1)):(column(3 * k)):(column(3 * k + 1)) \
        with yerrorlines pt 7 ps 0.9 lw 2 dt g title (ng > 1 ? word(ylabels, k).' ('.word(groups, g).')' : word(ylabels, k))
} else {
    plot for [g = 1:ng] for [k = 1:ny] dat index (g - 1) using 1:(column(k + 1)) with linespoints pt 7 ps 0.9 lw 2 \
        dt g title (ng > 1 ? word(ylabels, k).' ('.word(groups, g).')' : word(ylabels, k))
}
