#!/bin/bash
# device_run.sh -- one device call: build (nvcc only), validate, time. Logs to $OUT.
#   STEPS="validate bench" (default; build always runs first), any of:
#     validate   bench_kernels --validate (LONG=1 adds the 240K / 104K cases)
#     tiers      --validate again as an sm_70 (96 KB) and an sm_75 (64 KB) GPU would run it
#     varlen     the varlen kernel: bench_kernels --validate --varlen (LONG=1: + 240K), then
#                --bench --varlen -> varlen.txt
#     shapes     --validate --shapes all: every route at head_dim 64/128/256 x GQA groups 1..16
#                x short/long contexts x fp16/fp8 (short ones also at the sm_70 / sm_75 limits)
#                -> validate_shapes.txt
#     bench      timing table (FILTER=a,b: only rows whose label or route contains a or b;
#                PEERS=1 runs kernels/peers.py first, ~1 min, else kernels/results/peers.txt's)
#     splitval   --validate --filter prefill-bm32,fp8-bridge under ATTN_PREFILL_SPLIT=1..4 (forced parts;
#                the short set's q = 1 rows leave parts empty) -> val_split.txt
#     devprefill kernels/dev/prefill_ab.cu: the fast path's A/B variants, each checked and timed -> prefill_ab.txt
#     devdecode  kernels/dev/decode_ab.cu: the XQA and small-q variants, the reduces -> decode_ab.txt
#     devexpand  kernels/dev/expand_ab.cu: the fp8 expansion's variants -> expand_ab.txt
#                (DEV_VARS=a,b: only those variants; the library's rows always run)
#     ncu        Nsight Compute (--set full, clocks left alone) on one launch of the library's fast path
#                at q=784/104K -> ncu_default.txt (details) + ncu_default.csv (raw) + ncu_default_src.csv
#                (per-SASS-line stall samples); sass_fast.txt (cuobjdump)
#   T_<STEP>=seconds caps a step (timeout), so a slow step cannot starve the ones after it.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
STEPS=${STEPS:-validate bench}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $OUT/gpu.txt
B=/tmp/kb_$$; mkdir -p $B
t0=$(date +%s)
for f in attn_api attn_prefill attn_decode attn_varlen; do
  nvcc -O3 -arch=sm_90 -lineinfo -Xptxas -v -Ikernels -c kernels/$f.cu -o $B/$f.o > $B/$f.log 2>&1 &
done
wait
cat $B/*.log | grep -E "error|Compiling entry|Used|spill" > $OUT/ptxas.txt
for f in ref validate bench_kernels; do
  gcc -O2 -std=c11 -D_DEFAULT_SOURCE -Ikernels -I/usr/local/cuda/include -c kernels/$f.c -o $B/$f.o || exit 1
done
nvcc -arch=sm_90 $B/*.o -o $B/bench_kernels || { cat $B/*.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
cap() { local t=$1; shift; if [ -n "$t" ]; then timeout "$t" "$@"; else "$@"; fi; }
# knobval FILE SECONDS "VALIDATE ARGS" VAR=VALUE...: --validate once under each knob, all into FILE
knobval() {
  local f=$1 t=$2 args=$3; shift 3; : > "$f"
  for kv in "$@"; do
    echo "== $kv" >> "$f"
    env "$kv" timeout "$t" $B/bench_kernels --validate $args >> "$f" 2>&1
    echo "$kv: rc $? $(tail -1 "$f")"
  done
  grep FAIL "$f"
}
for step in $STEPS; do
  case $step in
  validate)
    cap "$T_VALIDATE" $B/bench_kernels --validate ${LONG:+--long} 2>&1 | tee $OUT/validate.txt | grep -v "^ok"
    tail -1 $OUT/validate.txt ;;
  varlen)
    { cap "$T_VARLEN" $B/bench_kernels --validate --varlen ${LONG:+--long}; echo "validate rc $?";
      cap "$T_VARLEN" $B/bench_kernels --bench --varlen; } 2>&1 | tee $OUT/varlen.txt | grep -v "^ok"
    grep -E "cases passed|FAIL" $OUT/varlen.txt ;;
  shapes)
    cap "$T_SHAPES" $B/bench_kernels --validate --shapes all 2>&1 | tee $OUT/validate_shapes.txt | grep -v "^ok"
    tail -1 $OUT/validate_shapes.txt ;;
  tiers)
    for lim in 98304 65536; do
      cap "$T_TIERS" $B/bench_kernels --validate --smem-limit $lim 2>&1 | tee $OUT/validate_$lim.txt | grep -v "^ok"
      tail -1 $OUT/validate_$lim.txt
    done ;;
  splitval)
    knobval $OUT/val_split.txt ${T_SPLITVAL:-90} "${LONG:+--long} --filter prefill-bm32,fp8-bridge" \
      ATTN_PREFILL_SPLIT=1 ATTN_PREFILL_SPLIT=2 ATTN_PREFILL_SPLIT=3 ATTN_PREFILL_SPLIT=4 ;;
  devprefill|devdecode|devexpand)
    d=${step#dev}_ab
    nvcc -O3 -arch=sm_90 -lineinfo -Ikernels -c kernels/dev/$d.cu -o $B/$d.o &&
      nvcc -arch=sm_90 $B/$d.o $B/attn_*.o $B/ref.o $B/validate.o -o $B/$d || exit 1
    t=T_$(echo $step | tr a-z A-Z)
    cap "${!t}" $B/$d $DEV_VARS 2>&1 | tee $OUT/$d.txt ;;
  ncu)
    # the fast-path kernel's SASS: attn_wmma_kernel<32, 128, PHASE, plan, fp16, prefill, 1> (plan
    # 57570 = SALIAS|QREG|SPAD|ASKIP|LEANSM|EX2|KVSPLIT, attn_common.cuh)
    fn="ILi32ELi128ELi4ELi57570ELb0ELb0ELi1E"
    cuobjdump -sass $B/attn_prefill.o | awk -v fn="$fn" '/Function :/{p = index($0, fn) > 0} p' > $OUT/sass_fast.txt
    grep -oE "^ +/\*[0-9a-f]+\*/ +[A-Z][A-Z0-9.]*" $OUT/sass_fast.txt | awk '{print $2}' | sort | uniq -c | sort -rn | head -40
    for n in default; do
      timeout ${T_NCU:-120} ncu --clock-control none --set full -k regex:attn_wmma_kernel -c 1 \
        --import-source no -o $B/ncu_$n $B/bench_kernels --bench --filter "prefill q=784 ctx 104000 p784" > $B/ncu_$n.log 2>&1
      tail -3 $B/ncu_$n.log
      ncu -i $B/ncu_$n.ncu-rep --page details > $OUT/ncu_$n.txt 2>&1
      ncu -i $B/ncu_$n.ncu-rep --page raw --csv > $OUT/ncu_$n.csv 2>&1
      ncu -i $B/ncu_$n.ncu-rep --page source --csv --print-source sass > $OUT/ncu_${n}_src.csv 2>&1 || true
      grep -E "Duration|Throughput|Pipe|Stall|Issue Slots|Achieved Occ|Registers" $OUT/ncu_$n.txt | head -40
    done ;;
  bench)
    peers=kernels/results/peers.txt
    if [ -n "$PEERS" ]; then
      PYTHONUNBUFFERED=1 python3 kernels/peers.py > $OUT/peers.txt 2> $OUT/peers.log; cat $OUT/peers.txt
      peers=$OUT/peers.txt
    fi
    cap "$T_BENCH" $B/bench_kernels --bench --peers $peers ${FILTER:+--filter "$FILTER"} 2>&1 | tee $OUT/bench.txt ;;
  esac
  echo "$step done $(( $(date +%s) - t0 )) s"
done
echo "total $(( $(date +%s) - t0 )) s"
