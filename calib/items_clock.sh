#!/usr/bin/env bash
# items_clock.sh -- a GPU replay's items split into law and clock (docs/validation.md section 2,
# "The second cards' replays, item by item").  Usage:
#   calib/items_clock.sh PROFILE.yaml STEPS.csv ITEMS.csv [STEPS2.csv ITEMS2.csv]...
# PROFILE the profile that priced the replays, each STEPS.csv a replay's --steps file and the
# ITEMS.csv after it that run's --items file; several replays are summed together (each from a
# cold heat state, as each replay starts).  An item's price is its law at the cold clock times its heat factor at the
# model's clock for the step, (f_cold / f)^s with s = ln(hot) / ln(f_cold / f_hot) (sim/heat.h).
# Each step's model clock is recovered from its items as the heat model forms it: the step's heat
# target from the items' prices over their factors (a GEMM: its FLOPs over the calibrated peak,
# as time; another law: its time x the law's heat; the step's overhead, its priced total less its
# items', at heat 0), followed from step to step with the profile's time constants, to its fixed
# point.  Prints, per step type and region (a GEMM by its FLOP rate at its calibrated time over
# the peak, u; a varlen call by its rows; elementwise by tokens; another law by name), the items,
# the measured seconds and, as predicted over measured: the law at the cold clock, the price (the
# model's clock), the law at the step's NVML clock, and the same with a GEMM's hot moved towards
# the profile's compute-bound probe by its rate (rescore --compute-hot's rule); then per step type
# the model's clock beside NVML's, weighted by price.  Bad input exits 2 with one line.
set -u
usage="usage: calib/items_clock.sh PROFILE.yaml STEPS.csv ITEMS.csv [STEPS2.csv ITEMS2.csv]..."
case ${1:-} in -h|--help) echo "$usage"; exit 0 ;; esac
[ $# -ge 3 ] && [ $(( ($# - 1) % 2 )) = 0 ] || { echo "$usage" >&2; exit 2; }
prof=$1; shift
for f in "$prof" "$@"; do
    [ -f "$f" ] && [ -r "$f" ] || { echo "items_clock: $f: no such readable file" >&2; exit 2; }
done
steps=() items=()
while [ $# -gt 0 ]; do
    head -1 "$1" | tr -d '\r' | grep -q '^step,type,predicted_s,measured_s,.*sm_clock_mhz' \
        || { echo "items_clock: $1:1:1: not a replay's --steps CSV (header step,type,predicted_s,measured_s,...,sm_clock_mhz,...)" >&2; exit 2; }
    head -1 "$2" | tr -d '\r' | grep -q '^step,type,law,a,b,c,d,count,predicted_s,measured_s' \
        || { echo "items_clock: $2:1:1: not a replay's --items CSV (header step,type,law,a,b,c,d,count,predicted_s,measured_s,...)" >&2; exit 2; }
    steps+=("$1") items+=("$2")
    shift 2
done
SFS=$(printf '%s\n' "${steps[@]}") awk -v PF="$prof" '
function num(s, key,   r) { if (!match(s, key ": *[-0-9.eE+]+")) return ""; r = substr(s, RSTART, RLENGTH); sub(/^[^:]*: */, "", r); return r + 0 }
function powr(x, y) { return x > 0 ? exp(y * log(x)) : 0 }
function hstep(c, dt,   tau, x, a, h0) {      # heat_step: moves H, returns the mean
    h0 = H; tau = c > h0 ? tup : tdn
    if (!(dt > 0)) return h0
    if (!(tau > 0)) { H = c; return c }
    x = dt / tau; a = exp(-x); H = c + (h0 - c) * a
    return c + (h0 - c) * (x > 1e-9 ? (1 - a) / x : 1)
}
function sexp(law,   b) { b = law; sub(/\.expand$/, "", b); if (b in hot) return L > 0 ? log(hot[b]) / L : 0; return 0 }
function flops(i) { return 2 * ia[i] * ib[i] * ic[i] * icnt[i] }
function region(i, c,   u, a) {
    if (ilaw[i] == "gemm") { u = c > 0 ? flops(i) / (c * peak) : 0; return u >= 0.6 ? "gemm u>=0.6" : u >= 0.2 ? "gemm u 0.2-0.6" : "gemm u<0.2" }
    if (ilaw[i] ~ /^attn\.varlen/) { a = ia[i]; return "varlen " (a < 32 ? "1-31" : a < 128 ? "32-127" : "128+") " rows" }
    if (ilaw[i] == "elementwise") { a = ia[i]; return "elementwise " (a <= 64 ? "1-64" : a <= 1024 ? "65-1024" : ">1024") " tokens" }
    return ilaw[i]
}
function flush(   it, i, f, fn, fac, tot, hw, c, hm, h0, cold, law, k, fs, fa, fb, u, w, h2) {
    if (!ni) return
    over = (cur in spred) ? spred[cur] - ipsum : 0
    fs = (cur in sclk) ? sclk[cur] : fc
    f = fc
    for (it = 0; it < 60; it++) {
        tot = over; hw = 0
        for (i = 1; i <= ni; i++) {
            fac = (f < fc && L > 0) ? powr(fc / f, sexp(ilaw[i])) : 1
            cold = ip[i] / fac; tot += cold
            if (ilaw[i] == "gemm") hw += (flops(i) / peak < cold ? flops(i) / peak : cold)
            else { law = ilaw[i]; sub(/\.expand$/, "", law); if (law in heat) hw += cold * heat[law] }
        }
        c = tot > 0 ? hw / tot : 0
        h0 = H; hm = hstep(c, tot); fn = fc - hm * (fc - fh)
        if (it < 59 && (fn - f > 1e-6 || f - fn > 1e-6)) { H = h0; f = fn; continue }
        f = fn; break
    }
    for (i = 1; i <= ni; i++) {
        fac = (f < fc && L > 0) ? powr(fc / f, sexp(ilaw[i])) : 1
        cold = ip[i] / fac
        fa = (fs < fc && L > 0) ? powr(fc / fs, sexp(ilaw[i])) : 1
        fb = fa
        if (ilaw[i] == "gemm" && chot > 0 && L > 0 && fs < fc && cold > 0 && ulaw < 1) {
            u = flops(i) / (cold * peak); w = (u - ulaw) / (1 - ulaw)
            if (w > 0) { if (w > 1) w = 1; h2 = exp((1 - w) * log(("gemm" in hot) ? hot["gemm"] : 1) + w * log(chot)); fb = powr(fc / fs, log(h2) / L) }
        }
        k = ityp[i] SUBSEP region(i, cold)
        if (!(k in n)) order[++nk] = k
        n[k]++; m[k] += im[i]; pc[k] += cold; pp[k] += ip[i]; pn[k] += cold * fa; pb[k] += cold * fb
        tw[ityp[i]] += ip[i]; tf[ityp[i]] += ip[i] * f; tn[ityp[i]] += ip[i] * fs
    }
    ni = 0; ipsum = 0
}
BEGIN {
    FS = ","
    while ((getline line < PF) > 0) {
        if (line ~ /clock_cold_mhz:/) { fc = num(line, "clock_cold_mhz"); fh = num(line, "clock_hot_mhz"); tup = num(line, "tau_up_s"); tdn = num(line, "tau_down_s") }
        if (line ~ /^ *peak_fp16_tflops:/) peak = num(line, "peak_fp16_tflops") * 1e12
        if (line ~ /gemm_compute_hot:/) chot = num(line, "hot")
        if (line ~ /^  - name: "/) { law = line; sub(/^  - name: "/, "", law); sub(/".*/, "", law); inpts = 0 }
        if (line ~ /^    sustained: \{hot:/) { hot[law] = num(line, "hot"); heat[law] = num(line, "heat") }
        if (line ~ /^    points:/) inpts = 1
        else if (line !~ /^      - \[/) inpts = 0
        if (inpts && law == "gemm" && line ~ /^      - \[/) {
            r = line; sub(/^ *- \[/, "", r); sub(/\].*/, "", r); np = split(r, v, /, */)
            t = v[np] + 0
            if (t >= 2e-5 && t <= 2e-2 && peak > 0) {   # insertion by time (calib/sustain.c probe_pick)
                g = ++ng
                while (g > 1 && gt[g - 1] > t) { gt[g] = gt[g - 1]; gu[g] = gu[g - 1]; g-- }
                gt[g] = t; gu[g] = 2 * v[1] * v[2] * v[3] / t / peak
            }
        }
    }
    if (!(peak > 0)) { print "items_clock: " PF ":1:1: no peak_fp16_tflops" > "/dev/stderr"; bad = 1; exit 2 }
    if (!(fc > 0)) fc = fh = 1
    L = (fh > 0 && fc > fh) ? log(fc / fh) : 0
    ulaw = ng >= 3 ? (gu[int(ng / 3) + 1] + gu[int(2 * ng / 3) + 1]) / 2 : ng ? gu[1] : 0
    nsf = split(ENVIRON["SFS"], sfs, "\n")
}
function load_steps(sf,   line, ns, v, j, sl, col) {   # a replay: its steps, prices and clocks
    split("", spred); split("", sclk)
    while ((getline line < sf) > 0) {
        sub(/\r$/, "", line); ns = split(line, v, ",")
        if (++sl == 1) { for (j = 1; j <= ns; j++) col[v[j]] = j; continue }
        spred[v[1] + 0] = v[col["predicted_s"]] + 0
        if (v[col["sm_clock_mhz"]] + 0 > 0) sclk[v[1] + 0] = v[col["sm_clock_mhz"]] + 0
    }
    close(sf)
}
FNR == 1 { flush(); cur = -1; H = 0; load_steps(sfs[++fno]); next }
{
    sub(/\r$/, "")
    if (NF < 10 || $9 !~ /^[0-9.eE+-]+$/ || $10 !~ /^[0-9.eE+-]+$/) {
        printf("items_clock: %s:%d:1: a row of %d fields, or a time that is not a number\n", FILENAME, FNR, NF) > "/dev/stderr"
        bad = 1; exit 2
    }
    if ($1 + 0 != cur) { flush(); cur = $1 + 0 }
    ni++; ityp[ni] = $2; ilaw[ni] = $3; ia[ni] = $4; ib[ni] = $5; ic[ni] = $6; icnt[ni] = $8; ip[ni] = $9 + 0; im[ni] = $10 + 0
    ipsum += $9
}
END {
    if (bad) exit 2
    flush()
    printf("%-8s %-26s %6s %9s %7s %7s %7s %9s\n", "step", "region", "items", "meas s", "cold", "priced", "nvml", "nvml+cb")
    for (i = 2; i <= nk; i++) for (j = i; j > 1 && m[order[j]] > m[order[j - 1]]; j--) { t = order[j]; order[j] = order[j - 1]; order[j - 1] = t }
    for (i = 1; i <= nk; i++) {
        k = order[i]; split(k, kk, SUBSEP)
        if (!(m[k] > 0)) continue
        printf("%-8s %-26s %6d %9.4f %7.3f %7.3f %7.3f %9.3f\n", kk[1], kk[2], n[k], m[k], pc[k] / m[k], pp[k] / m[k], pn[k] / m[k], pb[k] / m[k])
    }
    split("decode mixed prefill", ty, " ")
    for (i = 1; i <= 3; i++) if (tw[ty[i]] > 0)
        printf("clock    %-8s model %4.0f MHz, NVML %4.0f MHz (weighted by price)\n", ty[i], tf[ty[i]] / tw[ty[i]], tn[ty[i]] / tw[ty[i]])
}' "${items[@]}"
