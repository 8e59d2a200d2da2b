# pareto.awk: the Pareto frontier of a pacesim sweep CSV over all configurations:
# the points no other point beats on both X (lower is better) and Y (higher is better).
#   awk -F, -v X=b_prefill_s -v Y=a_tok_s -f plots/pareto.awk sweep.csv > frontier.csv
# Output: a header line, then "x,y,label" per frontier point, sorted by x (label = scenario:PACE_STEPS).
NR == 1 {
    for (i = 1; i <= NF; i++) { if ($i == X) cx = i; if ($i == Y) cy = i; if ($i == "scenario") cs = i; if ($i == "PACE_STEPS") cp = i }
    if (!cx || !cy) { print "pareto.awk: no column " X " or " Y > "/dev/stderr"; exit 2 }
    next
}
$cx != "" && $cy != "" { n++; x[n] = $cx + 0; y[n] = $cy + 0; lab[n] = $cs ":" $cp }
END {
    print X "," Y ",label"
    fflush()
    for (i = 1; i <= n; i++) {
        dom = 0
        for (j = 1; j <= n && !dom; j++)
            if (j != i && x[j] <= x[i] && y[j] >= y[i] && (x[j] < x[i] || y[j] > y[i] || j < i)) dom = 1
        if (!dom) printf "%.9g,%.9g,%s\n", x[i], y[i], lab[i] | "sort -t, -k1,1g"
    }
}
