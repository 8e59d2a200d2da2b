#!/usr/bin/env bash
# gpu_session.sh -- everything a GPU box is needed for, in one command:
#   1. bin/calib: a fresh profile for the kernels of this build (-> OUT/h200.yaml)
#   2. the reference replays priced by that profile (calib/replay_h200.sh), with the SM
#      clock sampled after every step (NVML)
# Usage: calib/gpu_session.sh OUT [BINDIR]   (BINDIR holds calib and pacesim-gpu, e.g. the
# static ones `make gpu-bundle` puts in .gpubundle/; default bin/).  Everything lands in
# OUT as at most 4 files: calib.txt, replay.txt, replay-steps.tgz, h200.yaml.
set -u
out=${1:?usage: gpu_session.sh OUT [BINDIR]}
bindir=${2:-bin}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
work=$(mktemp -d)
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv; date; } > "$work/calib.txt" 2>&1
"$bindir/calib" --model models/qwen3.8-27b.yaml --tp 1 --out "$out/h200.yaml" --keep-going \
    >> "$work/calib.txt" 2>&1 || echo "calib rc=$?" >> "$work/calib.txt"
cp "$work/calib.txt" "$out/calib.txt"
PROFILE="$PWD/$out/h200.yaml" REPLAY_131K=${REPLAY_131K:-1} \
    bash calib/replay_h200.sh "$work/r" "$bindir/pacesim-gpu" > "$out/replay.txt" 2>&1
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv; date; } >> "$out/replay.txt" 2>&1
tar czf "$out/replay-steps.tgz" -C "$work" r
rm -rf "$work"
