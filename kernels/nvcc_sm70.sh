#!/bin/sh
# nvcc_sm70.sh [-I DIR | -DNAME[=V] | -O... | -x cu]... -c SRC.cu -o OBJ.o -- one .cu file compiled for
# sm_70 (V100) where the machine's nvcc is CUDA 13, which targets sm_75 and up only, and a CUDA 12
# toolkit is assembled from PyPI's wheels (kernels/gpu_sm70.mk: CU12, headers, ptxas 12.9,
# cudart and cuBLAS). The wheels carry no nvcc, cudafe++ or cicc (nvidia-cuda-nvcc-cu12 12.x holds
# ptxas, libnvvm and the crt headers only), so nvcc's own steps are run here by hand:
#   host   gcc -E with CUDA 12.9's headers, CUDA 13's cudafe++ (the host code and the launch stubs),
#          gcc -c of its output, which embeds the fatbin below; the stubs call CUDA 12.9's
#          crt/host_runtime.h, whose __cudaLaunch the build patches to take cudafe++ 13's extra
#          argument (its tile-kernel flag, 0 for every kernel here)
#   device gcc -E with __CUDA_ARCH__=700 (so every #if / static_assert on the architecture sees
#          sm_70), CUDA 13's cicc to PTX for compute_75 (the oldest it emits), the PTX retargeted
#          to .target sm_70 / .version 8.8, assembled by CUDA 12.9's ptxas for sm_70 (it refuses
#          any instruction sm_70 lacks), packed with that PTX into the fatbin by fatbinary
# ptxas's -v report goes to OBJ with .ptxas for .o (kernels/check_sm70.sh reads it).
# Environment: CUDA13 (the nvcc toolkit's root), CU12 (the assembled CUDA 12 root), HOSTCXX (gcc).
set -eu
: "${CUDA13:?}" "${CU12:?}"
HOSTCXX=${HOSTCXX:-g++}
src= obj= inc= opt=-O2
while [ $# -gt 0 ]; do
    case $1 in
    -c) src=$2; shift ;;
    -o) obj=$2; shift ;;
    -I) inc="$inc -I$2"; shift ;;
    -I*|-D*|-U*) inc="$inc $1" ;;
    -O*) opt=$1 ;;
    -x) [ "$2" = cu ] || { echo "nvcc_sm70: -x $2: only cu is taken" >&2; exit 2; }; shift ;;
    -lineinfo|-arch=sm_70) ;;
    *) echo "nvcc_sm70: option $1 not taken" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$src" ] && [ -n "$obj" ] || { echo "usage: nvcc_sm70.sh [-I DIR] [-D...] -c SRC.cu -o OBJ.o" >&2; exit 2; }
base=${obj%.o}
tmp=$base.sm70-steps
rm -rf "$tmp" && mkdir -p "$tmp"
stem=$(basename "$base")
gv=$($HOSTCXX -dumpfullversion | awk -F. '{ printf "%d%02d%02d", $1, $2, $3 }')
ver="-D__CUDACC_VER_MAJOR__=12 -D__CUDACC_VER_MINOR__=9 -D__CUDACC_VER_BUILD__=86 -D__CUDA_API_VER_MAJOR__=12
     -D__CUDA_API_VER_MINOR__=9 -D__NVCC_DIAG_PRAGMA_SUPPORT__=1 -D__CUDACC_DEVICE_ATOMIC_BUILTINS__=1"
fe="--c++17 --static-host-stub --device-hidden-visibility --gnu_version=$gv --display_error_number
    --orig_src_file_name $src --orig_src_path_name $(realpath "$src") --allow_managed"
cppflags="-D__CUDACC__ -D__NVCC__ $inc -I$CU12/include $ver -include cuda_runtime.h -m64"
# host side
$HOSTCXX -D__CUDA_ARCH_LIST__=700 -E -x c++ $cppflags "$src" -o "$tmp/host.ii"
"$CUDA13/bin/cudafe++" $fe --m64 --parse_templates --gen_c_file_name "$tmp/$stem.cudafe1.cpp" \
    --stub_file_name "$stem.cudafe1.stub.c" --gen_module_id_file --module_id_file_name "$tmp/$stem.module_id" \
    "$tmp/host.ii"
# device side: sm_70's preprocessing, compute_75's PTX retargeted, sm_70's SASS
$HOSTCXX -D__CUDA_ARCH__=700 -D__CUDA_ARCH_LIST__=700 -E -x c++ -DCUDA_DOUBLE_MATH_FUNCTIONS $cppflags "$src" \
    -o "$tmp/dev.ii"
NVVMIR_LIBRARY_DIR="$CUDA13/nvvm/libdevice" "$CUDA13/nvvm/bin/cicc" $fe -arch compute_75 -m64 --no-version-ident \
    -ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 --include_file_name "$stem.fatbin.c" -tused \
    --module_id_file_name "$tmp/$stem.module_id" --gen_c_file_name "$tmp/$stem.cudafe1.c" \
    --stub_file_name "$tmp/$stem.cudafe1.stub.c" --gen_device_file_name "$tmp/$stem.cudafe1.gpu" \
    "$tmp/dev.ii" -o "$tmp/$stem.ptx75"
sed -e 's/^\.target sm_75$/.target sm_70/' -e 's/^\.version 9\.[0-9]*$/.version 8.8/' "$tmp/$stem.ptx75" > "$tmp/$stem.ptx"
grep -q '^\.target sm_70$' "$tmp/$stem.ptx" && grep -q '^\.version 8\.8$' "$tmp/$stem.ptx" ||
    { echo "nvcc_sm70: $src: cicc's PTX is not .target sm_75 / .version 9.x: nothing retargeted" >&2; exit 1; }
"$CU12/bin/ptxas" -arch=sm_70 -m64 -v "$tmp/$stem.ptx" -o "$tmp/$stem.sm_70.cubin" 2> "$base.ptxas" ||
    { cat "$base.ptxas" >&2; exit 1; }
grep -i warning "$base.ptxas" >&2 || true
"$CUDA13/bin/fatbinary" -64 --compress=false --cicc-cmdline="-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 " \
    "--image3=kind=elf,sm=70,file=$tmp/$stem.sm_70.cubin" "--image3=kind=ptx,sm=70,file=$tmp/$stem.ptx" \
    "--embedded-fatbin=$tmp/$stem.fatbin.c"
# the host object, with the fatbin embedded
(cd "$tmp" && $HOSTCXX -D__CUDA_ARCH_LIST__=700 -c -x c++ -DCUDA_DOUBLE_MATH_FUNCTIONS -Wno-psabi $opt \
    -I"$CU12/include" -m64 "$stem.cudafe1.cpp" -o "$stem.o")
mv "$tmp/$stem.o" "$obj"
