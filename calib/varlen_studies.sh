#!/usr/bin/env bash
# varlen_studies.sh -- the two studies of the varlen call's context on one GPU, into one file:
#   calib/varlen_studies.sh OUT BINDIR [STEPS]
# BINDIR holds order_study and varlen_study (bin/, or the GPU bundle .gpubundle/); writes
# OUT/varlen-studies.txt: the card, varlen_study for Llama-3.1-8B's and Qwen3-30B-A3B's attention
# (~5 s each on an H200) and order_study with STEPS steps a mode (default 40, ~20 s).  What they
# measure: calib/README.md; what they showed: docs/validation.md section 2.  Bad arguments: one
# line on stderr, exit 2.
set -u
out=${1:-}; bindir=${2:-}; steps=${3:-40}
if [ -z "$out" ] || [ -z "$bindir" ] || [ $# -gt 3 ]; then
    echo "usage: calib/varlen_studies.sh OUT BINDIR [STEPS]" >&2; exit 2
fi
case $steps in ''|*[!0-9]*) echo "varlen_studies: STEPS must be a whole number, got '$steps'" >&2; exit 2;; esac
for b in order_study varlen_study; do
    [ -x "$bindir/$b" ] || { echo "varlen_studies: $bindir/$b: no such executable (make bin/$b, or make gpu-bundle)" >&2; exit 2; }
done
mkdir -p "$out" || { echo "varlen_studies: $out: cannot make the folder" >&2; exit 2; }
f=$out/varlen-studies.txt
{
    nvidia-smi -L 2>&1
    echo "== varlen_study llama"; "$bindir/varlen_study" llama 2>&1
    echo "== varlen_study qwen"; "$bindir/varlen_study" qwen 2>&1
    echo "== order_study $steps"; "$bindir/order_study" "$steps" 2>&1
} > "$f"
rc=$?
cat "$f"
exit $rc
