#!/usr/bin/env bash
# The Python module (issue 34.2) against what a Python user does instead, on the same
# files, every contender consuming every byte (BLAKE3 of each file; python_bench.py):
#
#   seekless.read   for path, data in seekless.read(DIR): blake3(data)
#   seekless.hash   for path, digest in seekless.hash(DIR): ... (hashing in Rust)
#   plain loop      os.walk order, open(p, 'rb').read(), blake3
#   Pool(2), Pool(8)  multiprocessing (fork) workers reading in os.walk order, chunks of 4
#                   paths (the DataLoader pattern: workers over a list in directory order)
#   seekless hash   the CLI, `seekless hash --algo blake3 DIR`
#
# Settings: "hdd" on the emulated 7200 rpm disk (bench/hdd/stack.sh: ext4, cold: unmount,
# drop_caches, mount before every run; SCHED_IDLE busy loops, DAMON paused, as
# bench/hdd/run); "ssd-cold" and "ssd-warm" on this machine's own disk (a virtio disk
# under / : cold = the corpus's pages evicted with POSIX_FADV_DONTNEED, its metadata
# left cached; warm = everything cached). Contenders interleaved rep by rep; medians.
#
#   sudo bench/python.sh                       # REPS=3 SSD_REPS=7 FILES=3000; ~8 min here
#   sudo HDD=0 bench/python.sh                 # this machine's disk only
#
# Needs root (loop device, mount, drop_caches) for the emulated disk. The module is built
# with maturin into target/bench-pyvenv (made if missing; PY=... to use another Python
# that has seekless and blake3). Prints the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
. bench/lib.sh

REPS=${REPS:-3}
# This machine's disk is fast and shared with other builds: more reps there, they are cheap.
SSD_REPS=${SSD_REPS:-7}
FILES=${FILES:-3000}
HDD=${HDD:-1}
SSD=${SSD:-1}
BUSY=${BUSY:-1}
export STACK_DIR=${STACK_DIR:-/dev/shm/seekless-hdd-python}
SSD_DIR=${SSD_DIR:-/var/tmp/seekless-python-bench}
stack=bench/hdd/stack.sh
work=$(mktemp -d /tmp/seekless-python-bench.XXXXXX)
damon_paused=()
busy=()
cleanup() {
    cd /
    undo_busy_and_damon
    [ "$HDD" = 1 ] && "$REPO/$stack" down > /dev/null 2>&1 || true
    rm -rf "$work" "$SSD_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "-- building seekless, hddsim and the module" >&2
cargo build --release -q -p seekless -p hddsim
SEEKLESS=$PWD/target/release/seekless
if [ -z "${PY:-}" ]; then
    PY=$PWD/target/bench-pyvenv/bin/python
    if [ ! -x "$PY" ]; then
        python3 -m venv target/bench-pyvenv
        target/bench-pyvenv/bin/pip install -q maturin==1.16.0 blake3==1.0.11
    fi
    (. target/bench-pyvenv/bin/activate && maturin develop --release -q -m crates/python/Cargo.toml)
fi
DRIVER=$PWD/bench/python_bench.py
contenders=(seekless-read seekless-hash loop pool2 pool8 seekless-cli)

# run CONTENDER DIR: one run, its seconds on stdout; checks it read what the first did.
run() {
    local c=$1 dir=$2 line s e
    if [ "$c" = seekless-cli ]; then
        s=$(date +%s.%N)
        "$SEEKLESS" hash --algo blake3 "$dir" > "$work/cli.txt"
        e=$(date +%s.%N)
        line=$("$PY" "$DRIVER" manifest "$work/cli.txt" "$dir")
        line=${line%\}}", \"seconds\": $(printf '%.6f' "$(echo "$e - $s" | bc -l)")}"
    else
        line=$("$PY" "$DRIVER" "$c" "$dir")
    fi
    local summary files
    summary=$(echo "$line" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["summary"], d["files"])')
    if [ ! -e "$work/summary" ]; then echo "$summary" > "$work/summary"; fi
    [ "$summary" = "$(cat "$work/summary")" ] || { echo "python.sh: $c read other bytes: $summary" >&2; exit 1; }
    echo "$line" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["seconds"])'
}

# measure SETTING DIR COLD-COMMAND
measure() {
    local setting=$1 dir=$2 cold=$3 rep c
    rm -f "$work/summary"
    for c in "${contenders[@]}"; do : > "$work/$setting-$c"; done
    if [ "$cold" = warm ]; then
        for c in "${contenders[@]}"; do run "$c" "$dir" > /dev/null; done
    fi
    for rep in $(seq "$REPS"); do
        for c in "${contenders[@]}"; do
            [ "$cold" = warm ] || (cd / && eval "$cold")
            run "$c" "$dir" >> "$work/$setting-$c"
            echo "  $setting rep $rep $c $(tail -1 "$work/$setting-$c") s" >&2
        done
    done
    local loop best read cli t
    declare -A med
    for c in "${contenders[@]}"; do med[$c]=$(median < "$work/$setting-$c"); done
    loop=${med[loop]}
    best=$(printf '%s\n' "${med[loop]}" "${med[pool2]}" "${med[pool8]}" | sort -g | head -1)
    echo
    echo "### $setting ($FILES files, $(cat "$work/summary" | cut -d' ' -f2) read, medians of $REPS)"
    echo
    echo "| contender | median s | plain loop ÷ it | best of loop/Pool(2)/Pool(8) ÷ it |"
    echo "|---|---:|---:|---:|"
    for c in "${contenders[@]}"; do
        t=${med[$c]}
        printf '| %s | %.2f | %.2f× | %.2f× |\n' "$c" "$t" "$(echo "$loop / $t" | bc -l)" "$(echo "$best / $t" | bc -l)"
    done
    read=${med[seekless-read]}
    cli=${med[seekless-cli]}
    printf '\ngoals: seekless.read is %.2f× the best Python contender (goal ≥ 6); seekless.read ÷ seekless hash = %.2f (goal ≤ 1.1); seekless.hash ÷ seekless hash = %.2f\n' \
        "$(echo "$best / $read" | bc -l)" "$(echo "$read / $cli" | bc -l)" "$(echo "${med[seekless-hash]} / $cli" | bc -l)"
}

echo "# bench/python.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, REPS=$REPS FILES=$FILES, $(git rev-parse --short HEAD)"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$HDD" = 1 ]; then
    echo "-- emulated disk: stack up, corpus written with the model off" >&2
    eval "$("$stack" up --fs ext4 --fs-seed 1 --size 4G --keep-model-off | sed -n 's/^mnt=/mnt=/p')"
    python3 bench/hdd/corpus.py gen --layout shuffled --files "$FILES" --seed 1 "$mnt/corpus"
    sync
    "$stack" model on
    pause_damon_and_busy "$BUSY"
    echo "# emulated disk: hddsim 4 GiB, ext4, corpus.py --layout shuffled --seed 1; DAMON: ${damon_paused[*]:+paused (${damon_paused[*]})}${damon_paused[*]:-none on}; SCHED_IDLE busy loops: $BUSY"
    measure hdd "$mnt/corpus" "$REPO/$stack cold"
    undo_busy_and_damon
    busy=() damon_paused=()
    (cd / && "$REPO/$stack" down > /dev/null)
    HDD_DONE=1
fi

if [ "$SSD" = 1 ]; then
    echo "-- this machine's disk: corpus under $SSD_DIR" >&2
    rm -rf "$SSD_DIR"
    python3 bench/hdd/corpus.py gen --layout shuffled --files "$FILES" --seed 1 "$SSD_DIR/corpus"
    sync
    echo "# this machine's disk: $(df --output=source "$SSD_DIR" | tail -1), $(findmnt -no FSTYPE -T "$SSD_DIR"); no busy loops"
    REPS=$SSD_REPS measure ssd-cold "$SSD_DIR/corpus" "$PY $DRIVER evict $SSD_DIR/corpus"
    REPS=$SSD_REPS measure ssd-warm "$SSD_DIR/corpus" warm
fi
echo
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
