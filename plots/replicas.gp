# replicas.gp: p99 TTFT against the request rate per replica, one panel per router, one curve per
# number of replicas (`pacesim plot replicas`, prepared by plots/plot.sh from its data CSV).
#   gnuplot -e "dat='r.dat'; routers='round_robin least_kv'; ns='1 2 4'; out='r.png'; fmt='png'" plots/replicas.gp
# dat: blocks separated by two blank lines, block (r - 1) * words(ns) + (k - 1) the rows "x y" of
# router r with word(ns, k) replicas (one replica's rows in every router's panel; "? ?" for none).
if (!exists("out")) out = 'plots/out/replicas.png'
if (!exists("fmt")) fmt = 'png'
if (!exists("title")) title = ''
nr = words(routers)
nn = words(ns)
cols = (nr < 3 ? nr : 3)
rows = int((nr + cols - 1) / cols)
width = 430 * cols
height = 340 * rows + 40
if (fmt eq 'svg') { set terminal svg size width,height dynamic noenhanced font 'Helvetica,12' background '#ffffff' } \
else { set terminal pngcairo size width,height noenhanced font 'Sans,10' }
set output out
set datafile missing '?'
set logscale y
set format y '%g'
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set xlabel 'arrivals/s per replica (rate_per_s / replicas)'
set ylabel 'p99 TTFT, s'
set key inside left top box opaque
set multiplot layout rows,cols title "p99 TTFT against load, by router and replicas".(title ne '' ? ": ".title : '')
do for [r = 1:nr] {
    set title word(routers, r)
    plot for [k = 1:nn] dat index ((r - 1) * nn + (k - 1)) using 1:2 with linespoints pt 7 ps 0.8 lw 2 \
        lc k title word(ns, k).(word(ns, k) eq '1' ? ' replica' : ' replicas')
}
unset multiplot
