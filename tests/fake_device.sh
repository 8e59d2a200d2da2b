# fake_device.sh -- sourced by the tests of calib/device_record.sh and calib/install_set.sh:
# fake_device T [row] writes T/fake/nvidia-smi (the card's UUID from FAKE_UUID, default
# GPU-aaaa), T/bin/calib (writes the profile --out names; FAKE_CALIB_FAIL=N: N points fail) and T/bin/pacesim-gpu (writes the
# --steps CSV: a header, with gpu_span_s under --back-to-back, sm_mhz_step under --step-clock and
# layer_order under --layer-order,
# and with `row` one prefill step; FAKE_ARGS_LOG=FILE: each call's arguments appended to FILE)
# and T/bin/order_study (prints its arguments), so the device's plumbing runs without a GPU.
fake_device() {
    local t=$1 row=${2:-}
    mkdir -p "$t/bin" "$t/fake"
    cat > "$t/fake/nvidia-smi" <<'EOF2'
#!/bin/sh
case "$*" in *noheader*) echo "${FAKE_UUID:-GPU-aaaa}" ;; *) echo "name, uuid"; echo "Fake, ${FAKE_UUID:-GPU-aaaa}" ;; esac
EOF2
    cat > "$t/bin/calib" <<'EOF2'
#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = --out ] && { echo "fake profile" > "$2"; shift; }; shift; done
echo "fake calib"
# FAKE_CALIB_FAIL=N: N points failed, as calib --keep-going reports them (and exits 1)
i=0
while [ "$i" -lt "${FAKE_CALIB_FAIL:-0}" ]; do i=$((i + 1)); echo "calib: FAILED: gemm m=$i: out of memory" >&2; done
[ "$i" = 0 ] || exit 1
EOF2
    cat > "$t/bin/pacesim-gpu" <<EOF2
#!/bin/sh
row=$row
EOF2
    cat >> "$t/bin/pacesim-gpu" <<'EOF2'
b2b=; sck=; lo=; steps=
[ -n "${FAKE_ARGS_LOG:-}" ] && echo "$*" >> "$FAKE_ARGS_LOG"    # the flags each replay was given
while [ $# -gt 0 ]; do
    case $1 in --steps) steps=$2; shift ;; --back-to-back) b2b=,gpu_span_s ;; --step-clock) sck=,sm_mhz_step ;;
               --layer-order) lo=,layer_order ;; esac
    shift
done
if [ -n "$steps" ]; then
    echo "step,type$b2b$sck$lo" > "$steps"
    [ -n "$row" ] && echo "1,prefill${b2b:+,0}${sck:+,1980}${lo:+,1}" >> "$steps"
fi
echo "fake replay"
EOF2
    # T/bin/order_study: its arguments and one line of a study's output
    cat > "$t/bin/order_study" <<'EOF2'
#!/bin/sh
echo "fake order_study steps=$1 model=$2"
echo "replay / engine GEMMs 1.025"
EOF2
    chmod +x "$t/fake/nvidia-smi" "$t/bin/calib" "$t/bin/pacesim-gpu" "$t/bin/order_study"
}
