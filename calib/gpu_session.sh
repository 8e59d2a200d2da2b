#!/usr/bin/env bash
# gpu_session.sh -- everything a GPU box is needed for, in one command:
#   0. (VALIDATE=1) the kernels' validation against the float64 reference, long cases
#      included (kernels/device_run.sh; needs nvcc there)    -> OUT/kernels.tgz
#   1. bin/calib: a fresh profile for the kernels of this build, with the sustained-load
#      probes                                   -> OUT/h200.yaml, calib.txt, points.csv.gz
#   2. (SERVE=1) the batched serving replays (calib/replay_serve.sh), priced by that profile
#      (REPEATS=N: each scenario N times, run K >= 2 as <scenario>.runK.steps.csv; the reference
#      replays too)
#                                                               -> OUT/serve.txt, serve-steps.tgz
#   3. the reference replays priced by that profile (calib/replay_h200.sh), every step and
#      item predicted beside measured, the SM clock sampled   -> OUT/replay.txt, replay-steps.tgz
#      (REPLAY_REF=0 skips them)
#   1b. (ALSO_MODEL=models/<m>.yaml) calib of that model's fp16 attention laws and GEMMs on the
#      same card, merged into OUT/h200.yaml (calib --refit --merge): one profile measures both
#      models' attention shapes                                  -> appended to OUT/calib.txt
# CALIB_ARGS are added to calib's (e.g. "--varlen --moe 128,8,768" for the opt-in laws).
# STAGE=calib stops after 1 and 1b; STAGE=runs skips 0, 1 and 1b and replays (2, 3; RUNS="K ..."
# picks the runs) priced by the OUT/h200.yaml an earlier call on this card wrote; WORK=DIR keeps
# the replays' files there across calls (default a temporary folder), so that one card's calib
# and runs can span several calls of one machine (calib/device_record.sh).
# Usage: calib/gpu_session.sh OUT [BINDIR]   (BINDIR holds calib and pacesim-gpu, e.g. the
# static ones `make gpu-bundle` puts in .gpubundle/; default bin/).  At most 8 files in OUT.
# The replays (2, 3) run back to back (pacesim-gpu's --back-to-back, the GPU's idle before each
# step recorded as gap_s); REPLAY_MODE=item replays item by item, into serve.item.txt,
# serve-steps.item.tgz, replay.item.txt, replay-steps.item.tgz and files named <r>.item.* beside
# the back-to-back replays' (calib/replay_serve.sh, calib/replay_h200.sh, calib/stage_lib.sh).
set -u
. "$(dirname "$0")/stage_lib.sh"
replay_mode gpu_session.sh
export REPLAY_MODE=$rmode REPLAY_STEP_CLOCK=${REPLAY_STEP_CLOCK:-0}
out=${1:?usage: gpu_session.sh OUT [BINDIR]}
bindir=${2:-bin}
mkdir -p "$out"
case $out in /*) ;; *) out=$PWD/$out ;; esac
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
stage_and_dir gpu_session.sh "${WORK:-}"
work=$dir
if [ "$stage" = runs ] && [ ! -s "$out/h200.yaml" ]; then
    echo "gpu_session.sh: STAGE=runs needs the profile of an earlier calib in $out/h200.yaml" >&2
    exit 2
fi
if [ "$stage" != runs ]; then
    if [ "${VALIDATE:-0}" = 1 ]; then
        OUT=$work/k STEPS=validate LONG=1 T_VALIDATE=${T_VALIDATE:-110} bash kernels/device_run.sh > "$work/k.log" 2>&1
        mv "$work/k.log" "$work/k/"
        tar czf "$out/kernels.tgz" -C "$work" k
        grep -E "cases passed|FAIL" "$work/k/validate.txt" | head -20
    fi
    { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv; date; } > "$work/calib.txt" 2>&1
    "$bindir/calib" --model models/qwen3.8-27b.yaml --tp 1 --out "$out/h200.yaml" --keep-going \
        --points-log "$work/points.csv" ${CALIB_ARGS:-} \
        >> "$work/calib.txt" 2>&1 || echo "calib rc=$?" >> "$work/calib.txt"
    cp "$work/calib.txt" "$out/calib.txt"
    [ -f "$work/points.csv" ] && gzip -c "$work/points.csv" > "$out/points.csv.gz"
    if [ -n "${ALSO_MODEL:-}" ]; then
        also=attn.prefill_bm32.fp16,attn.prefill_generic.fp16,attn.prefill_lowsmem.fp16,attn.decode_xqa.fp16
        also=$also,attn.decode_scalar.fp16,gemm
        { echo "== calib $ALSO_MODEL ($also), merged"; date; } >> "$out/calib.txt"
        "$bindir/calib" --model "$ALSO_MODEL" --tp 1 --out "$work/also.yaml" --keep-going --only "$also" \
            >> "$out/calib.txt" 2>&1 \
        && "$bindir/calib" --refit "$out/h200.yaml" --merge "$work/also.yaml" --model models/qwen3.8-27b.yaml \
            --out "$out/h200.yaml" >> "$out/calib.txt" 2>&1 || echo "calib (ALSO_MODEL) rc=$?" >> "$out/calib.txt"
    fi
    grep -E "sustained|rc=|merged" "$out/calib.txt"
fi
[ "$stage" = calib ] && exit 0
status=0   # 1: a replay script refused a run (calib/stage_lib.sh item_named)
if [ "${SERVE:-0}" = 1 ]; then
    PROFILE=$out/h200.yaml bash calib/replay_serve.sh "$work/s" "$bindir/pacesim-gpu" >> "$out/serve$sfx.txt" 2>&1 || status=1
    cp "$out/h200.yaml" "$work/s/profile.yaml"
    tar czf "$out/serve-steps$sfx.tgz" -C "$work" s
fi
if [ "${REPLAY_REF:-1}" = 1 ]; then
    PROFILE=$out/h200.yaml REPLAY_131K=${REPLAY_131K:-1} \
        bash calib/replay_h200.sh "$work/r" "$bindir/pacesim-gpu" >> "$out/replay$sfx.txt" 2>&1 || status=1
    { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv; date; } >> "$out/replay$sfx.txt" 2>&1
    tar czf "$out/replay-steps$sfx.tgz" -C "$work" r
fi
exit $status
