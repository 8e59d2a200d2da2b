#!/bin/bash
# device_run.sh -- one device call: build (nvcc only), validate, time. Logs to $OUT.
#   STEPS="validate bench" (default; build always runs first), any of:
#     validate   bench_kernels --validate (LONG=1 adds the 240K / 104K cases)
#     tiers      --validate again as an sm_70 (96 KB) and an sm_75 (64 KB) GPU would run it
#     occ1       the decode cases again at 1 CTA/SM (ATTN_DECODE_OCC=1)
#     bench      timing table (FILTER=a,b: only rows whose label or route contains a or b;
#                PEERS=1 runs kernels/peers.py first, ~1 min, else the v3 run's peers are used)
#     xqaab      v5: copy ceiling (peers.py --copy-only, ~10 s; flash/cuDNN columns from the v3 peers),
#                then bench_kernels --xqa-ab: every XQA variant (ATTN_DECODE_XQA) x CTAs per SM -> xqa_ab.txt
#     xqaval     v5: --validate --filter decode-xqa (LONG=1: + the 240K XQA cases) once per variant
#                (v4 split bn32 bn32n pipe phase phases), all into val_xqa.txt; T_XQAVAL caps each
#     v6val      v6: --validate (short set) under each A/B knob of the v6 table -> val_v6.txt
#     v6ab       v6: copy ceiling, then bench_kernels --v6-ab -> v6_ab.txt
#     expandab   v6: bench_kernels --expand-ab (the fp8 expansion variants) -> expand_ab.txt
#     prefab     v7: bench_kernels --prefill-ab (PREFILL_AB_VARS: the ATTN_PREFILL_VAR list) -> prefill_ab.txt
#     varval     v7: --validate --filter prefill-bm32,fp8-bridge under each ATTN_PREFILL_VAR of VAL_VARS
#                (LONG=1: + the 104K / 240K cases) -> val_vars.txt
#     splitval   v8: --validate --filter prefill-bm32,fp8-bridge under ATTN_PREFILL_SPLIT=1..4 (forced parts;
#                the short set's q = 1 rows leave parts empty) -> val_split.txt
#     ncu        v7: Nsight Compute (--set full, clocks left alone) on one fast-path launch at q=784/104K,
#                each variant of NCU_VARS ("-" = the default; the default alone if unset) -> ncu_<var>.txt (details) + ncu_<var>.csv (raw)
#                + ncu_<var>_src.csv (per-SASS-line stall samples); sass_fast.txt (cuobjdump)
#   T_<STEP>=seconds caps a step (timeout), so a slow step cannot starve the ones after it.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
STEPS=${STEPS:-validate bench}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $OUT/gpu.txt
B=/tmp/kb_$$; mkdir -p $B
t0=$(date +%s)
for f in attn_api attn_prefill attn_decode; do
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
  tiers)
    for lim in 98304 65536; do
      cap "$T_TIERS" $B/bench_kernels --validate --smem-limit $lim 2>&1 | tee $OUT/validate_$lim.txt | grep -v "^ok"
      tail -1 $OUT/validate_$lim.txt
    done ;;
  occ1)
    ATTN_DECODE_OCC=1 cap "$T_OCC1" $B/bench_kernels --validate --filter decode 2>&1 | tee $OUT/validate_occ1.txt |
      grep -v "^ok"
    tail -1 $OUT/validate_occ1.txt ;;
  xqaab)
    PYTHONUNBUFFERED=1 python3 kernels/peers.py --copy-only > $OUT/peers.txt 2> $OUT/peers.log
    grep -v copy_TBps kernels/results/peers_v3.txt >> $OUT/peers.txt; head -1 $OUT/peers.txt
    cap "$T_XQAAB" $B/bench_kernels --xqa-ab --peers $OUT/peers.txt 2>&1 | tee $OUT/xqa_ab.txt ;;
  xqaval)
    for v in v4 split bn32 bn32n pipe phase phases; do
      echo "== ATTN_DECODE_XQA=$v" >> $OUT/val_xqa.txt
      ATTN_DECODE_XQA=$v cap "$T_XQAVAL" $B/bench_kernels --validate ${LONG:+--long} --filter decode-xqa \
        >> $OUT/val_xqa.txt 2>&1
      rc=$?; echo "$v: rc $rc $(tail -1 $OUT/val_xqa.txt)"
    done
    grep -E "^==|FAIL" $OUT/val_xqa.txt ;;
  v6val)
    # v6: the short validation set under each A/B knob of the v6 table (defaults are in "validate")
    knobval $OUT/val_v6.txt ${T_V6VAL:-60} "" ATTN_DECODE_XQA=phase ATTN_DECODE_REDUCE=v5 ATTN_DECODE_REDUCE=wide \
      ATTN_DECODE_SMALLQ=phase2 ATTN_DECODE_SMALLQ=v5 ATTN_PREFILL_VAR=shared2 ;;
  expandab)
    cap "$T_EXPANDAB" $B/bench_kernels --expand-ab --peers kernels/results/peers_v5.txt 2>&1 | tee $OUT/expand_ab.txt ;;
  v6ab)
    PYTHONUNBUFFERED=1 python3 kernels/peers.py --copy-only > $OUT/peers.txt 2> $OUT/peers.log
    grep -v copy_TBps kernels/results/peers_v5.txt >> $OUT/peers.txt; head -1 $OUT/peers.txt
    cap "$T_V6AB" $B/bench_kernels --v6-ab --peers $OUT/peers.txt 2>&1 | tee $OUT/v6_ab.txt ;;
  varval)
    knobval $OUT/val_vars.txt ${T_VARVAL:-90} "${LONG:+--long} --filter prefill-bm32,fp8-bridge" \
      $(for v in $VAL_VARS; do echo ATTN_PREFILL_VAR=$v; done) ;;
  splitval)
    knobval $OUT/val_split.txt ${T_SPLITVAL:-90} "${LONG:+--long} --filter prefill-bm32,fp8-bridge" \
      ATTN_PREFILL_SPLIT=1 ATTN_PREFILL_SPLIT=2 ATTN_PREFILL_SPLIT=3 ATTN_PREFILL_SPLIT=4 ;;
  prefab)
    cap "$T_PREFAB" $B/bench_kernels --prefill-ab --peers kernels/results/peers_v5.txt 2>&1 | tee $OUT/prefill_ab.txt ;;
  ncu)
    # the default fast-path kernel's SASS: attn_wmma_kernel<32, 128, PHASE, plan, fp16, prefill, 1> (plan
    # 24802 = SALIAS|QREG|SPAD|ASKIP|LEANSM|EX2, attn_common.cuh; SASS_PLAN names another)
    fn="ILi32ELi128ELi4ELi${SASS_PLAN:-24802}ELb0ELb0ELi1E"
    cuobjdump -sass $B/attn_prefill.o | awk -v fn="$fn" '/Function :/{p = index($0, fn) > 0} p' > $OUT/sass_fast.txt
    grep -oE "^ +/\*[0-9a-f]+\*/ +[A-Z][A-Z0-9.]*" $OUT/sass_fast.txt | awk '{print $2}' | sort | uniq -c | sort -rn | head -40
    for v in ${NCU_VARS:--}; do
      n=${v/-/default}
      ATTN_PREFILL_VAR=${v#-} timeout ${T_NCU:-120} ncu --clock-control none --set full -k regex:attn_wmma_kernel -c 1 \
        --import-source no -o $B/ncu_$n $B/bench_kernels --bench --filter "prefill q=784 ctx 104000 p784" > $B/ncu_$n.log 2>&1
      tail -3 $B/ncu_$n.log
      ncu -i $B/ncu_$n.ncu-rep --page details > $OUT/ncu_$n.txt 2>&1
      ncu -i $B/ncu_$n.ncu-rep --page raw --csv > $OUT/ncu_$n.csv 2>&1
      ncu -i $B/ncu_$n.ncu-rep --page source --csv --print-source sass > $OUT/ncu_${n}_src.csv 2>&1 || true
      grep -E "Duration|Throughput|Pipe|Stall|Issue Slots|Achieved Occ|Registers" $OUT/ncu_$n.txt | head -40
    done ;;
  bench)
    peers=kernels/results/peers_v3.txt
    if [ -n "$PEERS" ]; then
      PYTHONUNBUFFERED=1 python3 kernels/peers.py > $OUT/peers.txt 2> $OUT/peers.log; cat $OUT/peers.txt
      peers=$OUT/peers.txt
    fi
    cap "$T_BENCH" $B/bench_kernels --bench --peers $peers ${FILTER:+--filter "$FILTER"} 2>&1 | tee $OUT/bench.txt ;;
  esac
  echo "$step done $(( $(date +%s) - t0 )) s"
done
echo "total $(( $(date +%s) - t0 )) s"
