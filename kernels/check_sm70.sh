#!/bin/sh
# check_sm70.sh LAUNCHES LOG... -- the kernels as CUDA 12.9's ptxas assembles them for sm_70 (LOGs
# of `ptxas -arch=sm_70 -v`): a line per kernel with its registers, static and dynamic shared
# memory and spill bytes, and whether an sm_70 GPU launches it (LAUNCHES: kernels/sm70_launches.cu's
# list of the tile engine's kernels it launches and their dynamic smem; every other kernel is
# launched on every GPU; the reduce and the combine size their dynamic smem per launch, at most
# 48 KB, checked there). Exit 1 when a kernel sm_70 launches spills, or when its shared memory
# (static + dynamic) exceeds sm_70's 96 KB a block. Kernel names demangled where c++filt is there.
launches=$1; shift
[ -s "$launches" ] || { echo "check_sm70: no launch list $launches"; exit 1; }
out=$(mktemp) || exit 1
cat "$@" | awk -v launches="$launches" '
BEGIN {
    while ((getline line < launches) > 0) { split(line, f, " "); dyn[f[1]] = f[2] }
    limit = 96 * 1024
    printf "%-4s %5s %7s %7s %6s %6s  %s\n", "sm70", "regs", "static", "dynamic", "spill", "fill", "kernel"
}
/Compiling entry function/ { name = $0; sub(/.*function ./, "", name); sub(/. for .*/, "", name); st = ld = 0; next }
/bytes spill stores/ { st = $5 + 0; ld = $9 + 0; next }
/Used [0-9]+ registers/ {
    regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
    smem = 0
    if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH) + 0
    frag = name; sub(/^_Z[0-9]+/, "", frag); sub(/Ev10AttnParams$/, "", frag)
    launched = name !~ /attn_wmma_kernel/ || (frag in dyn)
    d = launched && (frag in dyn) ? dyn[frag] : 0
    why = ""
    if (launched && st > 0) why = why " SPILLS"
    if (launched && smem + d > limit) why = why " OVER 96 KB"
    if (why != "") bad++
    n++; if (launched) nl++
    printf "%-4s %5d %7d %7s %6d %6d  %s%s\n", launched ? "yes" : "-", regs, smem, launched ? d : "-", st, ld, name, why
}
END {
    if (n == 0) { print "check_sm70: no ptxas reports read"; exit 1 }
    printf "check_sm70: %d kernels assembled for sm_70, %d of them launched there; %s\n", n, nl,
           bad ? bad " launched kernel(s) spill or exceed 96 KB of shared memory" : "none spills, all fit 96 KB"
    exit bad ? 1 : 0
}' > "$out"
rc=$?
if command -v c++filt >/dev/null; then c++filt < "$out"; else cat "$out"; fi
rm -f "$out"
exit $rc
