#!/bin/sh
# check_gpu_sm70.sh LAUNCHES KNOWN "PTXAS_LOG..." BIN... -- make gpu-sm70's check of the binaries built
# for sm_70 (kernels/gpu_sm70.mk). First every kernel ptxas assembled for them, one source file at a
# time: registers, static and dynamic shared memory, spills (kernels/check_sm70.sh, which fails on a
# spill beyond KNOWN or more than 96 KB of shared memory a block in a kernel sm_70 launches). Then
# each BIN as cuobjdump ($CUOBJDUMP) reads its fatbin: it must hold sm_70 SASS (ELF) and no code for
# another GPU, and every kernel it carries must be one of the reports above with the same
# registers (the SASS linked is the SASS checked); per binary its kernel count and largest figures
# (registers, static shared memory, stack frame: spills land there). Last the CUDA libraries the
# binaries link (cuBLAS, NCCL, as ldd finds them): each must hold sm_70 SASS.
launches=$1 known=$2 logs=$3
shift 3
: "${CUOBJDUMP:?}"
here=$(dirname "$0")
bad=0 all=$(mktemp) || exit 1
trap 'rm -f "$all" "$all.res"' EXIT
for log in $logs; do
    [ -f "$log" ] || { echo "check_gpu_sm70: no ptxas report $log"; bad=1; continue; }
    cat "$log" >> "$all"
    src=$(basename "${log%.ptxas}")
    if grep -q 'Compiling entry function' "$log"; then
        echo "== $src.cu: sm_70 kernels (ptxas 12.9 -v)"
        sh "$here/check_sm70.sh" "$launches" "$known" "$log" || bad=1
    else
        echo "== $src.cu: no kernel of its own (host code; its kernels are the libraries' above)"
    fi
done
# registers per kernel as ptxas reported them
awk '/Compiling entry function/ { n = $0; sub(/.*function ./, "", n); sub(/. for .*/, "", n) }
     /Used [0-9]+ registers/ { r = $0; sub(/.*Used /, "", r); sub(/ registers.*/, "", r); print n, r }' "$all" | sort -u > "$all.res"
echo "== the binaries' fatbins (cuobjdump)"
printf '%-28s %7s %7s %8s %7s  %s\n' binary kernels maxregs maxshared maxstack "code"
for bin in "$@"; do
    elf=$("$CUOBJDUMP" --list-elf "$bin" 2>&1) || { echo "$bin: cuobjdump: $elf"; bad=1; continue; }
    ptx=$("$CUOBJDUMP" --list-ptx "$bin" 2>/dev/null)
    arches=$(printf '%s\n%s\n' "$elf" "$ptx" | sed -n 's/.*\.\(sm_[0-9a-z]*\)\.\(cubin\|ptx\)$/\1/p' | sort -u | tr '\n' ' ')
    nelf=$(printf '%s\n' "$elf" | grep -c '\.sm_70\.cubin$')
    "$CUOBJDUMP" -res-usage "$bin" 2>&1 | awk -v res="$all.res" -v bin="$bin" -v arches="$arches" -v nelf="$nelf" '
        BEGIN { while ((getline l < res) > 0) { split(l, f, " "); regs[f[1]] = f[2] } }
        /^arch = / { arch = $3 }
        /^ Function / { name = $2; sub(/:$/, "", name); next }
        /REG:/ && name != "" {
            r = $0; sub(/.*REG:/, "", r); r += 0
            s = $0; sub(/.*SHARED:/, "", s); s += 0
            lo = $0; sub(/.*STACK:/, "", lo); lo += 0
            if (arch != "sm_70") { printf "%s: %s carries code for %s\n", bin, name, arch; bad++ }
            else if (!(name in regs)) { printf "%s: %s in the fatbin, in no ptxas report read\n", bin, name; bad++ }
            else if (regs[name] != r) { printf "%s: %s uses %d registers, ptxas reported %d\n", bin, name, r, regs[name]; bad++ }
            n++; if (r > mr) mr = r; if (s > ms) ms = s; if (lo > ml) ml = lo
            name = ""
        }
        END {
            if (arches != "sm_70 ") { printf "%s: the fatbin holds %s, not sm_70 alone\n", bin, arches; bad++ }
            if (nelf < 1 || n < 1) { printf "%s: no sm_70 SASS\n", bin; bad++ }
            printf "%-28s %7d %7d %8d %7d  %s (%d ELF)\n", bin, n, mr, ms, ml, arches, nelf
            exit bad ? 1 : 0
        }' || bad=1
done
# the CUDA libraries they link (cuBLAS, NCCL): sm_70 SASS in each
echo "== the CUDA libraries they link (cuobjdump --list-elf)"
for lib in $(for bin in "$@"; do ldd "$bin" 2>/dev/null; done | awk '$1 ~ /^lib(cublas|cublasLt|nccl)\.so/ { print $3 }' | sort -u); do
    n70=$("$CUOBJDUMP" --list-elf "$lib" 2>/dev/null | grep -c '\.sm_70\.cubin$')
    printf '%-60s %5d sm_70 ELF images%s\n' "$lib" "$n70" "$([ "$n70" -gt 0 ] || echo '  NONE: no sm_70 code')"
    [ "$n70" -gt 0 ] || bad=1
done
if [ "$bad" = 0 ]; then
    echo "gpu-sm70: $# binaries hold sm_70 SASS only, every kernel as ptxas reported it, no spill beyond kernels/sm70_spills.txt; their cuBLAS and NCCL hold sm_70 SASS"
else
    echo "gpu-sm70: FAILED (above)"
fi
exit $bad
