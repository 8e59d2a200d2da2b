#!/usr/bin/env bash
# device_record.sh -- record replay sets (tests/data/replay/) on ONE card, over one or more
# consecutive calls of a device machine that keeps a folder between calls: each set's calib and
# all of its runs on the same card, so that the runs' spread is that card's noise and the
# profile predicts the card it measured.
# Usage: calib/device_record.sh WORK OUT BINDIR STEP...
#   WORK    a folder that stays on the machine between calls (an ignored path of the checkout,
#           e.g. .gpuwork); every result accumulates there
#   OUT     WORK is packed into one file, OUT/record.tgz, at the end of every call
#   BINDIR  calib and pacesim-gpu (e.g. .gpubundle from `make gpu-bundle`)
#   STEP    lib-calib:M            calib of library model M (llama8b, qwen3-30b-a3b, qwen3-32b,
#                                  qwen3-14b)
#           lib-runs:M:K[,K...]    runs K of M's scenarios (scenarios/lib/h200-M-*.yaml)
#           env-calib              the envelope set's calib (the reference model with the serving
#                                  envelope, the opt-in laws and the head_dim-128 model merged)
#           env-serve:K[,K...]     runs K of the serving scenarios (scenarios/h200-serve-*.yaml)
#           env-ref:K[,K...]       runs K of the B = 16K reference replays (PACE_STEPS 4 and 8 too)
#           order-study:M          BINDIR/order_study ${ORDER_STEPS:-20} M (M: llama8b or qwen3-14b):
#                                  one step shape of M's layers timed in the engine's order and the
#                                  replay's, on the card whose sets it sits beside; appended to
#                                  WORK/order-study-M.txt under a line naming the card and time
#                                  (T_STUDY, default 120: its seconds at most)
# The first call writes WORK/card (the card's UUID); on another card every step is refused
# (exit 3) unless OTHER_CARD=1.  BUDGET_S (default 570): a step whose estimated seconds would
# pass it, counted from this call's start, is skipped and named, so a call ends inside the
# machine's limit; the next call goes on from there.
# Results: WORK/lib/lib-<M>/ and WORK/env/ (profile, steps CSVs, reports), WORK/lib-logs/,
# WORK/steps.log (each step with its card, start and seconds; a calib step's failed points counted
# from its logs, as calib --keep-going exits 1 inside a step that returns 0).
# The runs' replays go back to back (pacesim-gpu's --back-to-back: each step's items queued on one
# stream, one sync a step, the GPU's idle before each step recorded as gap_s), under the set's
# names; REPLAY_MODE=item replays item by item, its files named <scenario>.item.csv /
# .runK.item.csv beside them (calib/stage_lib.sh), so one WORK on one card can hold both;
# REPLAY_MODE=layer queues them layer by layer (--layer-order), named <scenario>.layer.csv.
# REPLAY_STEP_CLOCK=1 adds pacesim-gpu's --step-clock to the replays (each step's SM clock over the
# step itself, the sm_mhz_step column; default 0: the recordings stay as before).
set -u
. "$(dirname "$0")/stage_lib.sh"
replay_mode device_record.sh
export REPLAY_MODE=$rmode REPLAY_STEP_CLOCK=${REPLAY_STEP_CLOCK:-0}
[ $# -ge 4 ] || { echo "usage: calib/device_record.sh WORK OUT BINDIR STEP..." >&2; exit 2; }
work=$1 out=$2 bindir=$3
shift 3
mkdir -p "$work" "$out"
work=$(cd "$work" && pwd) out=$(cd "$out" && pwd)
case $bindir in /*) ;; *) bindir=$PWD/$bindir ;; esac
budget=${BUDGET_S:-570}
[[ ${ORDER_STEPS:-20} =~ ^[1-9][0-9]{0,3}$ ]] || { echo "device_record.sh: ORDER_STEPS must be 1..9999, not '${ORDER_STEPS}'" >&2; exit 2; }
t_start=$(date +%s)
card=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
[ -n "$card" ] || { echo "device_record.sh: no GPU (nvidia-smi gives no UUID)" >&2; exit 3; }
if [ -s "$work/card" ] && [ "$(cat "$work/card")" != "$card" ]; then
    echo "device_record.sh: this is card $card, WORK was recorded on $(cat "$work/card")" >&2
    [ "${OTHER_CARD:-0}" = 1 ] || exit 3
fi
[ -s "$work/card" ] || echo "$card" > "$work/card"
# estimated seconds of each step (measured on an H200: calib, then one run of the scenarios; calib
# with the GEMM probes across shapes: 202 s for llama8b on an H100)
estimate() {
    local kind=$1 m=$2 n=$3
    case $kind in
        lib-calib) case $m in qwen3-32b) echo 240 ;; qwen3-14b) echo 210 ;; *) echo 200 ;; esac ;;
        lib-runs) case $m in llama8b) echo $((78 * n)) ;; qwen3-32b) echo $((120 * n)) ;; qwen3-14b) echo $((90 * n)) ;; *) echo $((66 * n)) ;; esac ;;
        env-calib) echo 300 ;;
        env-serve) echo $((158 * n)) ;;
        env-ref) echo $((100 * n)) ;;
        order-study) echo 40 ;;
    esac
}
lib_pair() {
    local m=$1 model list f
    case $m in
        llama8b) model=llama-3.1-8b ;;
        qwen3-30b-a3b) model=qwen3-30b-a3b ;;
        qwen3-32b) model=qwen3-32b ;;       # the second dense shape (estimates from the simulation, not yet timed)
        qwen3-14b) model=qwen3-14b ;;       # the third, which fits an H100 80GB (estimates as the second's)
        *) return 1 ;;
    esac
    list=
    for f in scenarios/lib/h200-$m-*.yaml; do
        [ -f "$f" ] || return 1
        list=$list${list:+,}$(basename "$f" .yaml)
    done
    # the 48-request Poisson load first: replay_lib.sh names the set after its first scenario
    list=h200-$m-poisson,$(echo "$list" | tr , '\n' | grep -v -- "-poisson$" | paste -sd, -)
    echo "$model:$list"
}
status=0
stamp=$(mktemp)   # a step's start: the calib logs it writes are newer
trap 'rm -f "$stamp"' EXIT
for st in "$@"; do
    kind=${st%%:*} rest=${st#*:} m= runs= n=1
    [ "$rest" = "$st" ] && rest=
    case $kind in
        lib-calib) m=$rest ;;
        lib-runs) m=${rest%%:*} runs=${rest#*:} ;;
        env-calib) ;;
        env-serve|env-ref) runs=$rest ;;
        order-study)
            m=$rest
            case $m in llama8b|qwen3-14b) ;; *) echo "device_record.sh: step '$st': order_study takes llama8b or qwen3-14b" >&2; exit 2 ;; esac ;;
        *) echo "device_record.sh: unknown step '$st'" >&2; exit 2 ;;
    esac
    case $kind in lib-runs|env-serve|env-ref)
        [[ $runs =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "device_record.sh: step '$st': runs must be K[,K...]" >&2; exit 2; }
        n=$(echo "$runs" | tr , '\n' | wc -l) ;;
    esac
    if [[ $kind == lib-* ]]; then
        pair=$(lib_pair "$m") || { echo "device_record.sh: step '$st': no library model '$m'" >&2; exit 2; }
    fi
    est=$(estimate "$kind" "$m" "$n")
    used=$(( $(date +%s) - t_start ))
    if [ $((used + est)) -gt "$budget" ]; then
        echo "== $st skipped: ${used} s used, ~${est} s more would pass ${budget} s" | tee -a "$work/steps.log"
        status=4
        continue
    fi
    tag=
    [[ $kind == *-calib || $kind == order-study ]] || tag=" ($rmode$sclk)"
    echo "== $st on $card$tag from $(date -u +%T) (${used} s used, ~${est} s)" | tee -a "$work/steps.log"
    t0=$(date +%s)
    touch "$stamp"
    case $kind in
        lib-calib|lib-runs)
            stage=calib
            [ "$kind" = lib-runs ] && stage=runs
            STAGE=$stage RUNS="${runs//,/ }" LOGS=$work/lib-logs LIB_PAIRS=$pair \
                CALIB_BUDGET_S=${CALIB_BUDGET_S:-130} T_CALIB=${T_CALIB:-320} T_SCENARIO=${T_SCENARIO:-70} \
                bash calib/replay_lib.sh "$work/lib" "$bindir" ;;
        env-calib|env-serve|env-ref)
            stage=runs serve=0 ref=0
            case $kind in env-calib) stage=calib ;; env-serve) serve=1 ;; env-ref) ref=1 ;; esac
            STAGE=$stage RUNS="${runs//,/ }" WORK=$work/env-work SERVE=$serve REPLAY_REF=$ref REPLAY_131K=0 \
                ALSO_MODEL=models/hybrid-hd128-kv8-fp16.yaml CALIB_ARGS="--varlen --moe 128,8,768" \
                T_SCENARIO=${T_SCENARIO_ENV:-50} bash calib/gpu_session.sh "$work/env" "$bindir" ;;
        order-study)
            { echo "== order_study ${ORDER_STEPS:-20} $m on $card, $(date -u +%FT%TZ)"
              timeout "${T_STUDY:-120}" "$bindir/order_study" "${ORDER_STEPS:-20}" "$m" 2>&1; } >> "$work/order-study-$m.txt" ;;
    esac
    rc=$?
    # a calib step's points that failed (--keep-going: its exit status is not the step's), counted
    # in the calib logs this step wrote
    failed=
    if [[ $kind == *-calib ]]; then
        nf=0 where=
        while IFS= read -r f; do
            c=$(grep -c "^calib: FAILED:" "$f")
            [ "$c" -gt 0 ] && nf=$((nf + c)) where="$where${where:+, }${f#"$work"/}"
        done < <(find "$work/env" "$work/lib-logs" -maxdepth 1 -newer "$stamp" -type f \
                      \( -path "$work/env/calib.txt" -o -name 'calib-*.err' \) 2>/dev/null | sort)
        [ "$nf" -gt 0 ] && failed="; calib: $nf points failed ($where)"
    fi
    echo "   rc=$rc in $(( $(date +%s) - t0 )) s$failed" | tee -a "$work/steps.log"
    [ $rc = 0 ] || status=1
    tar czf "$out/record.tgz" -C "$work" .   # after every step: a call cut short still returns its steps
done
tar czf "$out/record.tgz" -C "$work" .
exit $status
