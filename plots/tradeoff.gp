# tradeoff.gp: resident decoder A's rate during B's prefill against B's prefill time,
# one curve per configuration (scenario), one point per pacing value, and the Pareto
# frontier over all of them.  The pacing values label the first configuration's points only
# (alternately below and above its curve), so no two labels overlap; every curve runs
# through the same values in the same order, left to right.
#   gnuplot -e "csv='sweep.csv'; frontier='frontier.dat'; out='x.png'; fmt='png'" plots/tradeoff.gp
if (!exists("csv")) csv = 'plots/out/sweep-v100-b16k.csv'
if (!exists("frontier")) frontier = 'plots/out/pareto-v100-b16k.dat'
if (!exists("out")) out = 'plots/out/tradeoff-v100-b16k.png'
if (!exists("fmt")) fmt = 'png'
if (!exists("xcol")) xcol = 'b_prefill_s'
if (!exists("ycol")) ycol = 'a_tok_s'
if (!exists("pcol")) pcol = 'env.VLLM_1CAT_PREFILL_PACE_STEPS'
if (!exists("width")) width = 1100
if (!exists("height")) height = 720

if (fmt eq 'svg') { set terminal svg size width,height dynamic noenhanced font 'Helvetica,13' background '#ffffff' } \
else { set terminal pngcairo size width,height noenhanced font 'Sans,11' }
set output out
set datafile separator ','
set datafile columnheaders

# frontier file: "x,y,label" rows (plots/pareto.awk)
# the scenarios in file order, and a readable title for each
names = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)if($i==\"scenario\")c=i;next}!s[$c]++{printf \"%s \", $c}' ".csv)
nice(n) = system("echo ".n." | sed -e 's/^v100-//; s/-b16k//; s/-nomtp//; s/-mtp4/ MTP4/; s/-baseline$/ baseline/; s/-pdr-anypage$/ PDR=1 ANY_PAGE=1/; s/-pdr$/ PDR=1/'")

set title "Pacing trade-off, 2x V100 TP2: A resident at 240K and decoding, B arrives with a 16K prompt\nlabels: VLLM_1CAT_PREFILL_PACE_STEPS on the first curve (0 = no pacing; 1 is the same as 0); the others in the same order\nPDR = VLLM_FLASH_V100_PREFILL_PREFIX_DECODE_ROWS, ANY_PAGE = ..._PREFILL_D256_BM32_ANY_PAGE"
set xlabel "B prefill time (admission to first token), s"
set ylabel "A decode rate during B's prefill, tok/s"
set grid back lc rgb '#dddddd'
set key inside left top vertical Left reverse samplen 2 spacing 1.2 font ',10' box opaque
set xrange [0:*]
set yrange [0:*]
set border 3
set xtics nomirror
set ytics nomirror
set rmargin 2

array col[8] = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf']
n = words(names)
sel(i, v) = (strcol('scenario') eq word(names, i)) ? v : NaN
plot frontier using 1:2 with lines lw 12 lc rgb '#d0d0d0' title 'Pareto frontier over all configurations', \
     for [i=1:n] csv using (sel(i, column(xcol))):(column(ycol)) with linespoints pt 7 ps 0.9 lw 2 \
         lc rgb col[(i-1)%8+1] title nice(word(names, i)), \
     csv using (sel(1, column(xcol))):(column(ycol)):(strcol(pcol) eq '1' ? '' : strcol(pcol)) every 2 with labels \
         offset char 0.8,-0.8 font ',9' tc rgb col[1] notitle, \
     csv using (sel(1, column(xcol))):(column(ycol)):(strcol(pcol) eq '1' ? '' : strcol(pcol)) every 2::1 with labels \
         offset char -0.8,0.8 font ',9' tc rgb col[1] notitle
