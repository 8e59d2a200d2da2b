# stage_lib.sh -- sourced by calib's device scripts (gpu_session.sh, replay_lib.sh).
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
