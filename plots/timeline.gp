# timeline.gp: per-step timelines from `pacesim run ... --steps FILE` CSVs, one panel per
# file, all on one time axis (0 to the longest file's end): every engine step is a box from
# its start to its end, up to its duration on a log scale (a 40 ms decode step and a 1.5 s
# mixed step both readable), coloured by type (mixed = a prefill chunk next to decode rows;
# decode-only; prefill-only).
#   gnuplot -e "files='a.csv b.csv'; out='t.png'; fmt='png'" plots/timeline.gp
# A panel's title is its file name without directory and .csv.
if (!exists("files")) files = 'plots/out/steps-fp16-baseline-pace0.csv'
if (!exists("out")) out = 'plots/out/timeline.png'
if (!exists("fmt")) fmt = 'png'
n = words(files)
if (!exists("width")) width = 1100
if (!exists("height")) height = 200 + 230 * n

if (fmt eq 'svg') { set terminal svg size width,height dynamic noenhanced font 'Helvetica,12' background '#ffffff' } \
else { set terminal pngcairo size width,height noenhanced font 'Sans,10' }
set output out
set datafile separator ','
set datafile columnheaders
base(f) = system("basename ".f." .csv")
is(t, v) = strcol('type') eq t ? v : NaN
# the common time axis and the duration range over every file
tmax = 0
dmin = 1e30
dmax = 0
do for [i=1:n] {
    stats word(files, i) using (column('t_start_s') + column('dur_s')):(column('dur_s')) nooutput
    if (STATS_max_x > tmax) { tmax = STATS_max_x }
    if (STATS_min_y < dmin) { dmin = STATS_min_y }
    if (STATS_max_y > dmax) { dmax = STATS_max_y }
}
ybot = 10 ** floor(log10(dmin))
ytop = 10 ** ceil(log10(dmax * 3))
set style fill solid 0.85 noborder
set grid back lc rgb '#e0e0e0'
set border 3
set xtics nomirror
set ytics nomirror
set xrange [0:tmax]
set logscale y
set yrange [ybot:ytop]
set format y '%g'
set ylabel "step duration, s (log)"
set key inside left top horizontal font ',9'
set multiplot layout n,1 title "Engine steps over simulated time (box = one step: start to end, up to its duration; common time axis)"
do for [i=1:n] {
    f = word(files, i)
    set title base(f)
    if (i == n) { set xlabel "simulated time, s" } else { unset xlabel }
    plot f using (is('mixed', column('t_start_s') + column('dur_s') / 2)):(column('dur_s')):(column('t_start_s')):(column('t_start_s') + column('dur_s')):(ybot):(column('dur_s')) \
           with boxxyerror lc rgb '#d62728' title 'mixed (prefill chunk + decode rows)', \
         f using (is('decode', column('t_start_s') + column('dur_s') / 2)):(column('dur_s')):(column('t_start_s')):(column('t_start_s') + column('dur_s')):(ybot):(column('dur_s')) \
           with boxxyerror lc rgb '#1f77b4' title 'decode-only', \
         f using (is('prefill', column('t_start_s') + column('dur_s') / 2)):(column('dur_s')):(column('t_start_s')):(column('t_start_s') + column('dur_s')):(ybot):(column('dur_s')) \
           with boxxyerror lc rgb '#2ca02c' title 'prefill-only'
}
unset multiplot
