#!/usr/bin/env bash
# Two emulated disks scanned by one seekless run (issue 16, item 2): the two sweeps must
# run in parallel, so that `seekless hash A B` takes about as long as the slower disk
# alone, not the sum.
#
#   bench/hdd/two-disks.sh [--files N] [--reps N] [--fs ext4|xfs] [--seed-a S] [--seed-b S]
#                          [--min-overlap PCT] [--no-busy] [--keep-damon] [--out FILE.md]
#                          [--check] [--keep DIR]
#
# Brings up two stacks (stack.sh, STACK_DIR $PREFIX-a and $PREFIX-b, PREFIX default
# /dev/shm/seekless-hdd; 4 GiB each, hddsim with --trace), writes a shuffled corpus on
# each (corpus.py, --files N each, 3000 by default, seeds 1 and 2), checks that
# `seekless order --summary A B` puts the two filesystems on two disks, then REPS times
# (3 by default), each run cold (both stacks: unmount, sync, drop caches, mount):
#
#   seekless hash --summary --algo blake3 A          (disk A alone)
#   seekless hash --summary --algo blake3 B          (disk B alone)
#   seekless hash --summary --algo blake3 A B        (both, one process)
#
# and writes a Markdown table (two-disks.py report): median wall times, together ÷
# max(alone) (target ≤ 1.1), together ÷ sum(alone), and from the two hddsim traces of each
# together run the overlap of the two disks' sweeps (first to last data read), which must
# be at least --min-overlap (80 %) in every rep: exit 1 otherwise. It also fails when the
# together run's manifest is not the alone runs' two manifests together, and when
# anything of the stacks is left behind at the end.
#
# Results go to bench/results/two-disks.md and .json (every run, per-disk trace figures;
# --out to change). --check is the quick variant for CI (--files 200 --reps 1 --check,
# ~10 s): 1 GiB disks, nothing written to bench/results, the same assertions (none on the
# times). Needs root, like bench/hdd/run.
# --keep DIR copies the raw material there at the end (both hddsim traces, runs.jsonl,
# the plan, the report's JSON), for a look at what the sweeps did.
# Everything it sets up is torn down by a trap: both stacks (mounts, loop devices, hddsim
# processes), busy loops, DAMON state, traces and temporary files.
# Environment: SEEKLESS, HDDSIM (binaries; default target/release), PREFIX.
set -euo pipefail
export LC_ALL=C # EPOCHREALTIME with a '.' whatever the locale

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
SEEKLESS=${SEEKLESS:-$TARGET/release/seekless}
export HDDSIM=${HDDSIM:-$TARGET/release/hddsim}
PREFIX=${PREFIX:-/dev/shm/seekless-hdd}
STACK=$HERE/stack.sh

FILES=3000 REPS=3 FS=ext4 SEED_A=1 SEED_B=2 MIN_OVERLAP=80 BUSY=1 KEEP_DAMON=0 CHECK=0 OUT="" KEEP=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --files) FILES=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --fs) FS=$2; shift 2 ;;
        --seed-a) SEED_A=$2; shift 2 ;;
        --seed-b) SEED_B=$2; shift 2 ;;
        --min-overlap) MIN_OVERLAP=$2; shift 2 ;;
        --no-busy) BUSY=0; shift ;;
        --keep-damon) KEEP_DAMON=1; shift ;;
        --out) OUT=$2; shift 2 ;;
        --keep) KEEP=$2; shift 2 ;;
        --check) CHECK=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "two-disks: unknown argument $1" >&2; exit 2 ;;
    esac
done
case $FS in ext4|xfs) ;; *) echo "two-disks: --fs ext4|xfs, not $FS" >&2; exit 2 ;; esac
[[ $FILES =~ ^[1-9][0-9]*$ && $REPS =~ ^[1-9][0-9]*$ ]] ||
    { echo "two-disks: --files and --reps take positive numbers" >&2; exit 2; }
SIZE=4G
if [[ $CHECK -eq 1 ]]; then SIZE=1G; fi
if [[ -z $OUT && $CHECK -eq 0 ]]; then OUT=$REPO/bench/results/two-disks.md; fi

fail() { echo "two-disks: FAIL: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

if [[ $(id -u) -ne 0 ]]; then
    echo "two-disks: needs root: it attaches loop devices, mounts filesystems, mounts hddsim (FUSE) and writes /proc/sys/vm/drop_caches" >&2
    exit 1
fi
for b in "$SEEKLESS" "$HDDSIM"; do
    [[ -x $b ]] || { echo "two-disks: $b missing; build with: cargo build --release -p seekless -p hddsim" >&2; exit 1; }
done

# The two stacks: name, STACK_DIR, trace file. Only stacks this script brought up are
# taken down (a stack already up in one of the directories is someone else's: refused).
NAMES=(a b)
declare -A DIR TRACE OURS LOOP MNT SEQ PID
for s in "${NAMES[@]}"; do
    DIR[$s]=$PREFIX-$s
    TRACE[$s]=$PREFIX-$s-trace.csv
    OURS[$s]=0
    if [[ -e ${DIR[$s]}/pid || -e ${DIR[$s]}/loop ]]; then
        echo "two-disks: a stack is already up in ${DIR[$s]} (not ours; STACK_DIR=${DIR[$s]} $STACK down to remove it)" >&2
        exit 1
    fi
done
st() { local s=$1; shift; STACK_DIR=${DIR[$s]} "$STACK" "$@"; }

# Proactive reclaim (DAMON) pages out prefetched pages before the reader gets to them;
# paused for the runs as bench/hdd/run does (see bench/hdd/README.md), restarted at exit.
DAMON_PAUSED=()
pause_damon() {
    [[ $KEEP_DAMON -eq 0 ]] || return 0
    local s
    for s in /sys/kernel/mm/damon/admin/kdamonds/*/state; do
        [[ -e $s && $(cat "$s") == on ]] || continue
        echo off > "$s"
        DAMON_PAUSED+=("$s")
        echo "two-disks: paused DAMON (${s%/state}) for the runs; restarted at exit" >&2
    done
}
resume_damon() {
    local s
    for s in "${DAMON_PAUSED[@]}"; do
        echo on > "$s" || echo "two-disks: could not restart DAMON: echo on > $s" >&2
    done
    DAMON_PAUSED=()
}
damon_state() {
    if [[ ${#DAMON_PAUSED[@]} -gt 0 ]]; then echo paused
    elif compgen -G '/sys/kernel/mm/damon/admin/kdamonds/*/state' > /dev/null \
        && grep -qx on /sys/kernel/mm/damon/admin/kdamonds/*/state; then echo on
    else echo none; fi
}

BUSY_PIDS=()
start_busy() {
    [[ $BUSY -eq 1 ]] || return 0
    local i
    for i in $(seq "$(nproc)"); do
        chrt -i 0 bash -c 'while :; do :; done' &
        BUSY_PIDS+=($!)
    done
}
stop_busy() {
    local p
    for p in "${BUSY_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${BUSY_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    BUSY_PIDS=()
}

WORK=""
cleanup() {
    local rc=$?
    cd /
    stop_busy
    resume_damon
    local s
    for s in "${NAMES[@]}"; do
        [[ ${OURS[$s]} -eq 0 ]] || st "$s" down || true
        rm -f "${TRACE[$s]}"
    done
    [[ -z $WORK ]] || rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

WORK=$(mktemp -d /tmp/seekless-two-disks.XXXXXX)
start=$(date +%s)

# --- Stacks and corpora (model off while writing) ---------------------------------------
for s in "${NAMES[@]}"; do
    rm -f "${TRACE[$s]}"
    log "stack ${s^^}: up in ${DIR[$s]} ($FS, $SIZE)"
    OURS[$s]=1
    out=$(st "$s" up --fs "$FS" --fs-seed 1 --size "$SIZE" --keep-model-off --trace "${TRACE[$s]}")
    LOOP[$s]=$(sed -n 's/^loop=//p' <<< "$out")
    MNT[$s]=$(sed -n 's/^mnt=//p' <<< "$out")
    SEQ[$s]=$(cat "${DIR[$s]}/diskseq")
    PID[$s]=$(cat "${DIR[$s]}/pid")
done
[[ ${LOOP[a]} != "${LOOP[b]}" ]] || fail "both stacks on ${LOOP[a]}?"
declare -A SEEDS=([a]=$SEED_A [b]=$SEED_B)
declare -A CORPUS_TXT
for s in "${NAMES[@]}"; do
    log "stack ${s^^}: corpus ($FILES files, shuffled, seed ${SEEDS[$s]})"
    python3 "$HERE/corpus.py" gen --layout shuffled --files "$FILES" --seed "${SEEDS[$s]}" "${MNT[$s]}/corpus" \
        2> "$WORK/corpus-$s.txt" || { cat "$WORK/corpus-$s.txt" >&2; exit 1; }
    CORPUS_TXT[$s]=$(tr '\n' ' ' < "$WORK/corpus-$s.txt" | sed 's/ *$//')
    echo "   ${CORPUS_TXT[$s]}" >&2
done
sync
A=${MNT[a]}/corpus B=${MNT[b]}/corpus
DISK_A=${LOOP[a]#/dev/} DISK_B=${LOOP[b]#/dev/}

# --- One plan, two disks ------------------------------------------------------------------
for s in "${NAMES[@]}"; do st "$s" cold; done
"$SEEKLESS" order --summary --json "$A" "$B" > "$WORK/plan.jsonl" 2> "$WORK/order-summary.txt" ||
    { cat "$WORK/order-summary.txt" >&2; fail "seekless order A B failed"; }
sed 's/^/   /' "$WORK/order-summary.txt" >&2
# "seekless: ext4 on loop3 (rotational): 3000 files located by fiemap", one per filesystem.
mapfile -t SUMMARY_DISKS < <(sed -nE 's/^seekless: [^ ]+ on ([^ ]+) \(.*files located by.*/\1/p' "$WORK/order-summary.txt")
[[ ${#SUMMARY_DISKS[@]} -eq 2 ]] || fail "order --summary A B lists ${#SUMMARY_DISKS[@]} filesystems, not 2"
[[ ${SUMMARY_DISKS[0]} != "${SUMMARY_DISKS[1]}" ]] ||
    fail "order --summary A B puts both filesystems on one disk (${SUMMARY_DISKS[0]})"
[[ " ${SUMMARY_DISKS[*]} " == *" $DISK_A "* && " ${SUMMARY_DISKS[*]} " == *" $DISK_B "* ]] ||
    fail "order --summary A B names disks ${SUMMARY_DISKS[*]}, not $DISK_A and $DISK_B"
python3 - "$WORK/plan.jsonl" "$A" "$DISK_A" "$B" "$DISK_B" "$FILES" <<'EOF' || fail "order --json A B: files not on their own disk"
import json, sys
plan, a, da, b, db, n = sys.argv[1:]
rows = [json.loads(l) for l in open(plan)]
bad = [r["path"] for r in rows if not ((r["path"].startswith(a + "/") and r["disk"] == da)
                                      or (r["path"].startswith(b + "/") and r["disk"] == db))]
count = {d: sum(1 for r in rows if r["disk"] == d) for d in (da, db)}
if bad or count != {da: int(n), db: int(n)}:
    sys.exit(f"two-disks: order --json: {len(bad)} files on the wrong disk (e.g. {bad[:3]}), counts {count}")
EOF
echo "   order --summary A B: two disks, $DISK_A and $DISK_B; every file on its own" >&2

# --- Timed runs ---------------------------------------------------------------------------
for s in "${NAMES[@]}"; do st "$s" model on; done
start_busy
pause_damon
DAMON=$(damon_state)

# Cold for both (same sequence before every run, whichever disks it reads), then the
# seekless binary back in memory and hddsim's stats zeroed.
cold() {
    cd /
    local s
    for s in "${NAMES[@]}"; do st "$s" cold; done
    "$SEEKLESS" --version > /dev/null
    for s in "${NAMES[@]}"; do st "$s" reset; done
}

# Writes a trace mark to both hddsims; ANCHOR[s] = wall µs of the write to s (midpoint),
# so the two traces (each counting from its own hddsim's start) share one clock.
declare -A ANCHOR
mark_both() {
    local s t0 t1
    for s in "${NAMES[@]}"; do
        t0=${EPOCHREALTIME/./}
        printf 'trace-mark %s\n' "$1" > "${DIR[$s]}/fuse/control"
        t1=${EPOCHREALTIME/./}
        ANCHOR[$s]=$(( (t0 + t1) / 2 ))
    done
}

RUNS=$WORK/runs.jsonl
: > "$RUNS"
declare -A PATHS=([alone-a]="$A" [alone-b]="$B" [together]="$A $B")
for r in $(seq "$REPS"); do
    for run in alone-a alone-b together; do
        cold
        read -r -a paths <<< "${PATHS[$run]}"
        mark_both "run $run $r"
        t0=${EPOCHREALTIME/./}
        rc=0
        "$SEEKLESS" hash --summary --algo blake3 "${paths[@]}" > "$WORK/$run-$r.b3" 2> "$WORK/stderr.txt" || rc=$?
        t1=${EPOCHREALTIME/./}
        declare -A anchor=([a]=${ANCHOR[a]} [b]=${ANCHOR[b]})
        mark_both "end $run $r"
        if [[ $rc -ne 0 ]]; then cat "$WORK/stderr.txt" >&2; fail "seekless hash ${paths[*]} exited $rc"; fi
        w=$(awk "BEGIN{printf \"%.4f\", ($t1 - $t0) / 1e6}")
        echo "{\"run\":\"$run\",\"rep\":$r,\"wall_s\":$w,\"anchor\":{\"a\":${anchor[a]},\"b\":${anchor[b]}},\"stats\":{\"a\":$(st a stats | tr -d '\n'),\"b\":$(st b stats | tr -d '\n')}}" >> "$RUNS"
        echo "   $run rep $r: $w s  ($(grep -E '^seekless: read ' "$WORK/stderr.txt" | sed 's/^seekless: //'))" >&2
    done
    # Same bytes read: the together run's manifest is the two alone runs' manifests.
    if ! cmp -s <(sort "$WORK/alone-a-$r.b3" "$WORK/alone-b-$r.b3") <(sort "$WORK/together-$r.b3"); then
        diff <(sort "$WORK/alone-a-$r.b3" "$WORK/alone-b-$r.b3") <(sort "$WORK/together-$r.b3") | head >&2
        fail "rep $r: hash A B differs from hash A + hash B"
    fi
    n=$(wc -l < "$WORK/together-$r.b3")
    [[ $n -eq $((2 * FILES)) ]] || fail "rep $r: hash A B listed $n files, not $((2 * FILES))"
done
stop_busy
resume_damon

# --- Stacks down, then the report (the traces stay until the trap) --------------------
cd /
for s in "${NAMES[@]}"; do
    st "$s" down
    OURS[$s]=0
    grep -qF " ${DIR[$s]}/" /proc/mounts && fail "something still mounted under ${DIR[$s]}"
    if [[ $(cat "/sys/block/${LOOP[$s]#/dev/}/diskseq" 2>/dev/null) == "${SEQ[$s]}" ]] && losetup "${LOOP[$s]}" > /dev/null 2>&1; then
        fail "${LOOP[$s]} still attached"
    fi
    if kill -0 "${PID[$s]}" 2>/dev/null && [[ $(readlink "/proc/${PID[$s]}/exe" 2>/dev/null) == *hddsim* ]]; then
        fail "hddsim ${PID[$s]} still running"
    fi
    [[ ! -e ${DIR[$s]} ]] || fail "${DIR[$s]} left behind"
done

MD=${OUT:-$WORK/two-disks.md}
[[ -z $OUT ]] || mkdir -p "$(dirname "$OUT")"
rc=0
python3 "$HERE/two-disks.py" report --runs "$RUNS" --plan "$WORK/plan.jsonl" \
    --trace-a "${TRACE[a]}" --trace-b "${TRACE[b]}" --disk-a "$DISK_A" --disk-b "$DISK_B" \
    --min-overlap "$MIN_OVERLAP" --reps "$REPS" --files "$FILES" --busy "$BUSY" --damon "$DAMON" \
    --corpus-a "${CORPUS_TXT[a]}" --corpus-b "${CORPUS_TXT[b]}" \
    --summary-disks "${SUMMARY_DISKS[0]}, ${SUMMARY_DISKS[1]}" --md "$MD" --json "${MD%.md}.json" || rc=$?
[[ -z $OUT ]] || echo "two-disks: wrote $OUT and ${OUT%.md}.json" >&2
if [[ -n $KEEP ]]; then
    mkdir -p "$KEEP"
    cp "${TRACE[a]}" "$KEEP/trace-a.csv"
    cp "${TRACE[b]}" "$KEEP/trace-b.csv"
    cp "$RUNS" "$WORK/plan.jsonl" "$WORK/order-summary.txt" "${MD%.md}.json" "$KEEP/"
    echo "two-disks: traces, runs, plan and report kept in $KEEP" >&2
fi
[[ $rc -eq 0 ]] || exit "$rc"
echo "two-disks: PASS ($FILES + $FILES files, $REPS rep(s), $(( $(date +%s) - start )) s)" >&2
