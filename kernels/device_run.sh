#!/bin/bash
# device_run.sh -- one device call: build (nvcc only), validate, time. Logs to $OUT.
#   MODE=all (default) | validate | bench
#   LONG=1       adds the 240K / 104K validation cases
#   TIERS=1      also validates the sm_70 (96 KB) and sm_75 (64 KB) configurations on this GPU
#   OCC1=1       also validates the decode routes at 1 CTA/SM (ATTN_DECODE_OCC=1)
#   PEERS=1      runs kernels/peers.py (torch flash / cuDNN, copy and GEMM ceilings; ~1 min);
#                without it the bench uses the v3 run's (kernels/results/peers_v3.txt)
#   FILTER=a,b   bench only rows whose label or route contains a or b
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
MODE=${MODE:-all}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $OUT/gpu.txt
B=/tmp/kb_$$; mkdir -p $B
t0=$(date +%s)
for f in attn_api attn_prefill attn_decode; do
  nvcc -O3 -arch=sm_90 -lineinfo -Xptxas -v -Ikernels -c kernels/$f.cu -o $B/$f.o > $B/$f.log 2>&1 &
done
wait
cat $B/*.log | grep -E "error|Function prop|Compiling entry|Used|spill" > $OUT/ptxas.txt
for f in ref validate bench_kernels; do
  gcc -O2 -std=c11 -D_DEFAULT_SOURCE -Ikernels -I/usr/local/cuda/include -c kernels/$f.c -o $B/$f.o || exit 1
done
nvcc -arch=sm_90 $B/*.o -o $B/bench_kernels || { cat $B/*.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
if [ "$MODE" = all ] || [ "$MODE" = validate ]; then
  $B/bench_kernels --validate ${LONG:+--long} 2>&1 | tee $OUT/validate.txt | grep -v "^ok"
  tail -1 $OUT/validate.txt
  if [ -n "$TIERS" ]; then
    for lim in 98304 65536; do
      $B/bench_kernels --validate --smem-limit $lim 2>&1 | tee $OUT/validate_$lim.txt | grep -v "^ok"
      tail -1 $OUT/validate_$lim.txt
    done
  fi
  if [ -n "$OCC1" ]; then
    ATTN_DECODE_OCC=1 $B/bench_kernels --validate --filter decode 2>&1 | tee $OUT/validate_occ1.txt | grep -v "^ok"
    tail -1 $OUT/validate_occ1.txt
  fi
  echo "validate done $(( $(date +%s) - t0 )) s"
fi
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  if [ -n "$PEERS" ]; then
    PYTHONUNBUFFERED=1 python3 kernels/peers.py > $OUT/peers.txt 2> $OUT/peers.log; cat $OUT/peers.txt
  fi
  peers=kernels/results/peers_v3.txt; [ -n "$PEERS" ] && peers=$OUT/peers.txt
  $B/bench_kernels --bench --peers $peers ${FILTER:+--filter $FILTER} 2>&1 | tee $OUT/bench.txt
fi
echo "total $(( $(date +%s) - t0 )) s"
