# stage_lib.sh -- sourced by calib's device scripts (gpu_session.sh, replay_lib.sh,
# device_record.sh, replay_h200.sh, replay_serve.sh).
# stage_and_dir SCRIPT KEPT: sets `stage` from STAGE (all, calib or runs; anything else: one
# line naming SCRIPT, exit 2) and `dir` to KEPT (made if missing: a folder kept across calls)
# or, KEPT empty, to a temporary folder removed when the script exits.
stage_and_dir() {
    stage=${STAGE:-all}
    case $stage in
        all|calib|runs) ;;
        *) echo "$1: STAGE must be all, calib or runs, not '$stage'" >&2; exit 2 ;;
    esac
    if [ -n "$2" ]; then
        dir=$2
        mkdir -p "$dir"
    else
        dir=$(mktemp -d)
        trap 'rm -rf "$dir"' EXIT
    fi
}
# replay_mode SCRIPT: the replays' mode from REPLAY_MODE (anything else: one line naming SCRIPT,
# exit 2).  Sets `rmode` (its name), `mode` (pacesim-gpu replay's flags) and `sfx` (the files'
# infix):
#   b2b   (the default) --back-to-back: each step's items queued on one stream, one sync a step,
#         the GPU's idle before each step recorded (gap_s); the files under a recording set's
#         names: <scenario>.steps.csv, <scenario>.runK.steps.csv, <scenario>.txt
#   item  the item-by-item replay (every item timed and synchronised alone: the card idles inside
#         a step by an unrecorded amount), its files named apart: <scenario>.item.csv,
#         <scenario>.runK.item.csv, <scenario>.item.txt -- names no reader of a set's
#         *.steps.csv picks up, so one folder holds both modes and stays a set of one mode
#   layer --back-to-back --layer-order: as b2b, the items queued layer by layer as a forward pass
#         runs them (each layer's attention between its GEMMs); its files named apart as item's:
#         <scenario>.layer.csv, <scenario>.runK.layer.csv, <scenario>.layer.txt
# REPLAY_STEP_CLOCK=1 (default 0; anything else: one line, exit 2) adds --step-clock in either
# mode: each step's SM clock stamped on the GPU over the step itself (the sm_mhz_step column,
# which rescore --recorded-clock prices at where every run has it; ~2-5 us a step); `sclk` is
# then ", step clock" (for the logs), else empty.
replay_mode() {
    rmode=${REPLAY_MODE:-b2b}
    case $rmode in
        b2b) mode=(--back-to-back) sfx= ;;
        item) mode=() sfx=.item ;;
        layer) mode=(--back-to-back --layer-order) sfx=.layer ;;
        *) echo "$1: REPLAY_MODE must be b2b, item or layer, not '$rmode'" >&2; exit 2 ;;
    esac
    case ${REPLAY_STEP_CLOCK:-0} in
        0) sclk= ;;
        1) mode+=(--step-clock) sclk=", step clock" ;;
        *) echo "$1: REPLAY_STEP_CLOCK must be 0 or 1, not '$REPLAY_STEP_CLOCK'" >&2; exit 2 ;;
    esac
}
# item_named DIR NAME [TARGET]: in the back-to-back mode, the steps files of scenario NAME in DIR
# under the set's names (NAME.steps.csv, NAME.runK.steps.csv; TARGET, the one about to be
# written, left out) that hold an item-by-item recording (no gpu_span_s column: made before back
# to back was the default), one a line.  A back-to-back run written beside them would make a set
# of two modes.
item_named() {
    local f
    [ "$rmode" = b2b ] || return 0
    for f in "$1/$2.steps.csv" "$1/$2".run[0-9]*.steps.csv; do
        [ -s "$f" ] && [ "$f" != "${3:-}" ] && ! head -1 "$f" | grep -q gpu_span_s && echo "$f"
    done
    return 0
}
# item_refused DIR NAME TARGET: 1, after a line naming them, where item_named finds any; else 0
item_refused() {
    local old
    old=$(item_named "$1" "$2" "$3")
    [ -z "$old" ] && return 0
    echo "refused: $(echo $old): item by item under the set's names (back to back is the default now): rename to <scenario>[.runK].item.csv first"
    return 1
}
