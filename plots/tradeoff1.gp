# tradeoff1.gp: one configuration's pacing trade-off (plots/tradeoff.sh, `make run`):
# A's decode rate during B's prefill against B's prefill time, one point per
# VLLM_1CAT_PREFILL_PACE_STEPS value, labelled with it; points at the same place share
# one label ("0=1"), and labels alternate above and below the curve so they never overlap;
# the knee (tradeoff.sh's, knee='PACE') is ringed.
#   gnuplot -e "csv='tradeoff-default.csv'; out='x.png'" plots/tradeoff1.gp
if (!exists("csv")) csv = 'plots/out/tradeoff-default.csv'
if (!exists("out")) out = 'plots/out/tradeoff-default.png'
if (!exists("knee")) knee = ''
if (!exists("width")) width = 900
if (!exists("height")) height = 560
if (!exists("fmt")) fmt = 'png'
if (fmt eq 'svg') { set terminal svg size width,height dynamic noenhanced font 'Helvetica,13' background '#ffffff' } \
else { set terminal pngcairo size width,height noenhanced font 'Sans,11' }
set output out
set datafile separator ','

# "x,y,label,side" rows: coincident points merged, side alternating (+1 above, -1 below)
pts = csv.'.labels'
system("awk -F, 'NR==1{for(i=1;i<=NF;i++)c[$i]=i;next}{x=$c[\"b_prefill_s\"];y=$c[\"a_tok_s\"];p=$c[\"PACE_STEPS\"];" \
       ."if(n&&x==X[n]&&y==Y[n]){L[n]=L[n] \"=\" p}else{n++;X[n]=x;Y[n]=y;L[n]=p}}" \
       ."END{for(i=1;i<=n;i++)printf \"%s,%s,%s,%d\\n\",X[i],Y[i],L[i],(i%2?-1:1)}' ".csv." > ".pts)
scn = system("awk -F, 'NR==1{for(i=1;i<=NF;i++)if($i==\"scenario\")c=i;next}{print $c;exit}' ".csv)

set title "Pacing trade-off: ".scn."\nlabels: VLLM_1CAT_PREFILL_PACE_STEPS (0 = no pacing; 1 is the same as 0)"
set xlabel "B prefill time (admission to first token), s"
set ylabel "A decode rate during B's prefill, tok/s"
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set yrange [0:*]
set offsets graph 0.04, graph 0.06, graph 0.08, 0
set key inside left top box opaque
isknee(l, v) = (knee ne '' && l eq knee) ? v : NaN
plot pts using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb '#1f77b4' title 'one point per PACE_STEPS', \
     pts using (isknee(strcol(3), $1)):2 with points pt 6 ps 3 lw 2 lc rgb '#d62728' \
         title (knee ne '' ? 'knee: PACE_STEPS='.knee.' (plots/tradeoff.sh)' : ''), \
     pts using 1:2:3 every 2 with labels offset char 0.9,-1.0 font ',9' tc rgb '#333333' notitle, \
     pts using 1:2:3 every 2::1 with labels offset char -0.9,1.0 font ',9' tc rgb '#333333' notitle
system("rm -f ".pts)
