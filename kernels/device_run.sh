#!/bin/bash
# device_run.sh -- one device call: build (nvcc only), validate, peers, time. Logs to $OUT.
#   MODE=all (default) | validate | bench ; LONG=1 adds 240K validation cases
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
MODE=${MODE:-all}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $OUT/gpu.txt
B=/tmp/kb; mkdir -p $B
t0=$(date +%s)
for f in attn_api attn_prefill attn_decode; do
  nvcc -O3 -arch=sm_90 -lineinfo -Xptxas -v -Ikernels -c kernels/$f.cu -o $B/$f.o > $B/$f.log 2>&1 &
done
wait
cat $B/*.log | grep -E "error|Function prop|Used|spill" > $OUT/ptxas.txt
gcc -O2 -std=c11 -D_DEFAULT_SOURCE -Ikernels -I/usr/local/cuda/include -c kernels/ref.c -o $B/ref.o &&
gcc -O2 -std=c11 -D_DEFAULT_SOURCE -Ikernels -I/usr/local/cuda/include -c kernels/validate.c -o $B/validate.o &&
gcc -O2 -std=c11 -D_DEFAULT_SOURCE -Ikernels -c kernels/bench_kernels.c -o $B/bench.o &&
nvcc -arch=sm_90 $B/*.o -o $B/bench_kernels || { cat $B/*.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
cuobjdump -sass $B/attn_prefill.o > $B/pf.sass 2>/dev/null && for k in Li32ELi128ELi2ELb0ELb0 Li16ELi64ELi3ELb0ELb1; do
  awk "/Function : .*$k/{f=1;next} /Function :/{f=0} f" $B/pf.sass $( [ $k = Li16ELi64ELi3ELb0ELb1 ] && cuobjdump -sass $B/attn_decode.o > $B/dc.sass && echo $B/dc.sass) |
  grep -oE "(LDSM[.A-Z0-9]*|LDS[.A-Z0-9]*|HMMA[.A-Z0-9]*|STS[.A-Z0-9]*|LDG[.A-Z0-9]*|BAR[.A-Z]*|LDL[.0-9]*|STL[.0-9]*)" | sort | uniq -c | sort -rn | head -12 | tr '\n' ' ' > $OUT/sass_$k.txt
  echo "sass $k: $(cat $OUT/sass_$k.txt)"
done
if [ "$MODE" = all ] || [ "$MODE" = validate ]; then
  $B/bench_kernels --validate ${LONG:+--long} 2>&1 | tee $OUT/validate.txt
fi
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  PYTHONUNBUFFERED=1 python3 kernels/peers.py > $OUT/peers.txt 2> $OUT/peers.log; cat $OUT/peers.txt
  $B/bench_kernels --bench --peers $OUT/peers.txt 2>&1 | tee $OUT/bench.txt
fi
echo "total $(( $(date +%s) - t0 )) s"
