# Timed stages, sourced by .ci/run and ci/test: `stage NAME COMMAND...` runs COMMAND,
# prints its wall time when it ends and records it (returning COMMAND's status);
# `stage_times TITLE` prints every recorded time and the total since this was sourced.
stages_started=$SECONDS
stages_times=()
stage() {
    local name=$1 t=$SECONDS status=0
    shift
    echo "== $name"
    "$@" || status=$?
    stages_times+=("$((SECONDS - t)) s  $name")
    echo "== $name: $((SECONDS - t)) s$([ "$status" = 0 ] || echo ", failed (exit $status)")"
    return "$status"
}
stage_times() {
    echo
    echo "== $1"
    printf '  %s\n' "${stages_times[@]}" "$((SECONDS - stages_started)) s  total"
}
