# Helpers shared by the benchmark scripts (sourced, not run).

# The median of the numbers on standard input, one per line.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Seconds a shell command line takes, its output discarded.
elapsed() {
    local s e
    s=$(date +%s.%N)
    bash -c "$1" > /dev/null
    e=$(date +%s.%N)
    echo "$e - $s" | bc -l
}

# Builds the release binary and prints its path.
seekless_bin() {
    cargo build --release -q -p seekless
    echo "$PWD/target/release/seekless"
}

# Builds the release binary with symbols and debug info (profile `profiling`: the release
# build itself is stripped) and prints its path. For perf and other profilers.
seekless_profiling_bin() {
    cargo build --profile profiling -q -p seekless
    echo "$PWD/target/profiling/seekless"
}

# The emulated-disk benchmarks' settings, before their timed runs: DAMON paused (its
# sampling competes with the emulator for the CPUs; state files appended to the caller's
# `damon_paused`) and, with busy=1 (the first argument), one SCHED_IDLE busy loop per CPU
# (idle virtual CPUs here wake slowly: docs/design.md, "Measuring"; PIDs appended to the
# caller's `busy`). Undone by undo_busy_and_damon.
pause_damon_and_busy() {
    local s
    for s in /sys/kernel/mm/damon/admin/kdamonds/*/state; do
        [ -e "$s" ] && [ "$(cat "$s")" = on ] || continue
        echo off > "$s"
        damon_paused+=("$s")
    done
    if [ "${1:-1}" = 1 ]; then
        for _ in $(seq "$(nproc)"); do
            chrt -i 0 bash -c 'while :; do :; done' &
            busy+=($!)
        done
    fi
}

# The emulated-disk benchmarks' settings undone: the SCHED_IDLE busy loops (PIDs in the
# caller's `busy`) stopped and DAMON switched back on (the state files in its
# `damon_paused`). For their cleanup traps.
undo_busy_and_damon() {
    local s p
    for p in "${busy[@]}"; do kill "$p" 2> /dev/null || true; done
    for s in "${damon_paused[@]}"; do echo on > "$s" || echo "could not restart DAMON: echo on > $s" >&2; done
}
