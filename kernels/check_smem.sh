#!/bin/sh
# check_smem.sh ARCH LOG... -- the shared memory ptxas -v reports for each kernel (LOGs of
# `nvcc -Xptxas -v` for ARCH) against the constants the host sizes launches with:
#   attn_wmma_kernel*       no static smem (all of it dynamic, sized by smem_plan in
#                           attn_common.cuh; tests/check_kernels.cu checks those sizes per arch)
#   decode_scalar_kernel*   ATTN_SCALAR_STATIC_SMEM, decode_reduce_kernel ATTN_REDUCE_STATIC_SMEM
#                           (_128 / _64: the head_dim 128 / 64 instantiations, D their last template argument)
#   anything else           none
# Spills are listed (not an error). Exit 1 on a mismatch.
arch=$1; shift
hdr=$(dirname "$0")/attn_common.cuh
def() { sed -n "s/^#define $1 \\([0-9]*\\).*/\\1/p" "$hdr"; }
scalar=$(def ATTN_SCALAR_STATIC_SMEM); reduce=$(def ATTN_REDUCE_STATIC_SMEM)
scalar128=$(def ATTN_SCALAR_STATIC_SMEM_128); reduce128=$(def ATTN_REDUCE_STATIC_SMEM_128)
scalar64=$(def ATTN_SCALAR_STATIC_SMEM_64); reduce64=$(def ATTN_REDUCE_STATIC_SMEM_64)
[ -n "$scalar" ] && [ -n "$reduce" ] && [ -n "$scalar128" ] && [ -n "$reduce128" ] && [ -n "$scalar64" ] && [ -n "$reduce64" ] ||
  { echo "check_smem: constants not found in $hdr"; exit 1; }
cat "$@" | awk -v arch="$arch" -v s256="$scalar" -v r256="$reduce" -v s128="$scalar128" -v r128="$reduce128" \
               -v s64="$scalar64" -v r64="$reduce64" '
/Compiling entry function/ { name = $0; sub(/.*function ._Z[0-9]*/, "", name); sub(/. for .*/, "", name); spill = 0; next }
/bytes spill stores/ { spill = $5 + 0; next }
/Used [0-9]+ registers/ {
    smem = 0
    if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH) + 0
    want = 0
    d = 256
    if (match(name, /Li(64|128)EEv10AttnParams$/)) d = substr(name, RSTART + 2, RLENGTH - 17) + 0
    if (name ~ /^decode_scalar_kernel/) want = d == 64 ? s64 : d == 128 ? s128 : s256
    else if (name ~ /^decode_reduce_kernel/) want = d == 64 ? r64 : d == 128 ? r128 : r256
    n++
    if (smem != want) { printf "check_smem %s: %s has %d bytes static smem, the host counts %d\n", arch, name, smem, want; bad++ }
    if (spill > 0) { regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs); printf "check_smem %s: note: %s spills %d bytes (%s registers)\n", arch, name, spill, regs }
}
END {
    if (n == 0) { print "check_smem: no ptxas reports read"; exit 1 }
    printf "check_smem %s: %d kernels, static smem as counted%s\n", arch, n, bad ? " EXCEPT " bad : ""
    exit bad ? 1 : 0
}'
