# timeline.gp: per-step timelines from `pacesim run ... --steps FILE` CSVs, one panel per
# file: every engine step is a box from its start to its end, as tall as it lasts, coloured
# by type (mixed = a prefill chunk next to decode rows; decode-only; prefill-only).
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
set style fill solid 0.85 noborder
set grid back lc rgb '#e0e0e0'
set border 3
set xtics nomirror
set ytics nomirror
set xrange [0:*]
set yrange [0:*]
set offsets 0, 0, graph 0.22, 0
set ylabel "step duration, s"
set key inside left top horizontal font ',9'
set multiplot layout n,1 title "Engine steps over simulated time (box = one step: start to end, height = duration)"
do for [i=1:n] {
    f = word(files, i)
    set title base(f)
    if (i == n) { set xlabel "simulated time, s" } else { unset xlabel }
    plot f using (is('mixed', column('t_start_s') + column('dur_s') / 2)):(column('dur_s') / 2):(column('dur_s') / 2):(column('dur_s') / 2) \
           with boxxyerror lc rgb '#d62728' title 'mixed (prefill chunk + decode rows)', \
         f using (is('decode', column('t_start_s') + column('dur_s') / 2)):(column('dur_s') / 2):(column('dur_s') / 2):(column('dur_s') / 2) \
           with boxxyerror lc rgb '#1f77b4' title 'decode-only', \
         f using (is('prefill', column('t_start_s') + column('dur_s') / 2)):(column('dur_s') / 2):(column('dur_s') / 2):(column('dur_s') / 2) \
           with boxxyerror lc rgb '#2ca02c' title 'prefill-only'
}
unset multiplot
