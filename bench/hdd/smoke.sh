#!/usr/bin/env bash
# Correctness smoke test on the emulated disk (not speed): ~300 files, model on, one pass.
# Asserts that `seekless hash` (physical order with prefetch, and --no-prefetch) reads every
# byte (same sha256 as sha256sum for every file) and that the stack is gone afterwards
# (no mount, loop device detached, hddsim process gone). Exit non-zero on any failure.
#
#   bench/hdd/smoke.sh            # needs root; binaries from target/release (built if missing)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
SEEKLESS=${SEEKLESS:-$TARGET/release/seekless}
export HDDSIM=${HDDSIM:-$TARGET/release/hddsim}
export STACK_DIR=${STACK_DIR:-/dev/shm/seekless-hdd-smoke}
STACK=$HERE/stack.sh
FILES=${FILES:-300}
FS=${FS:-ext4}

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "needs root (loop device, mount, FUSE, drop_caches)"
if [[ ! -x $SEEKLESS || ! -x $HDDSIM ]]; then
    (cd "$REPO" && cargo build --release -p seekless -p hddsim) >&2
fi

WORK=$(mktemp -d /tmp/seekless-smoke.XXXXXX)
LOOP="" PID="" SEQ=""
cleanup() {
    cd /
    "$STACK" down >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
eval "$("$STACK" up --fs "$FS" --size 1G --keep-model-off | sed -n 's/^\(loop\|mnt\)=/\1=/p')"
MNT=$mnt LOOP=$loop
PID=$(cat "$STACK_DIR/pid")
SEQ=$(cat "$STACK_DIR/diskseq")
python3 "$HERE/corpus.py" gen --layout aged --files "$FILES" --seed 7 "$MNT/corpus"
sync
"$STACK" cold
"$STACK" model on
cd "$MNT"

# Reference: sha256sum of the same files (sorted by path).
find corpus -type f -print0 | sort -z | xargs -0 sha256sum > "$WORK/ref.txt"
n_ref=$(wc -l < "$WORK/ref.txt")
[[ $n_ref -eq $FILES ]] || fail "expected $FILES files, found $n_ref"

check() {
    local label=$1; shift
    cd /; "$STACK" cold; cd "$MNT"
    "$SEEKLESS" hash --algo sha256 "$@" corpus | sort -k2 > "$WORK/$label.txt"
    if ! diff -q <(sort -k2 "$WORK/ref.txt") "$WORK/$label.txt" >/dev/null; then
        diff <(sort -k2 "$WORK/ref.txt") "$WORK/$label.txt" | head >&2
        fail "seekless hash $* differs from sha256sum"
    fi
    echo "smoke: ok: seekless hash ${*:-(physical, prefetch)} matches sha256sum on $n_ref files" >&2
}
check physical
check noprefetch --no-prefetch
check given --locate given
reads=$("$STACK" stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["reads"])')
[[ $reads -gt 0 ]] || fail "hddsim saw no reads (is the model in the path?)"

cd /
"$STACK" down
# The stack must be gone.
grep -qF " $STACK_DIR/" /proc/mounts && fail "something still mounted under $STACK_DIR"
if [[ $(cat "/sys/block/${LOOP#/dev/}/diskseq" 2>/dev/null) == "$SEQ" ]] && losetup "$LOOP" >/dev/null 2>&1; then
    fail "$LOOP still attached"
fi
kill -0 "$PID" 2>/dev/null && [[ $(readlink "/proc/$PID/exe" 2>/dev/null) == *hddsim* ]] && fail "hddsim $PID still running"
[[ -e $STACK_DIR ]] && fail "$STACK_DIR left behind"
echo "smoke: PASS ($FILES files, $(( $(date +%s) - start )) s)" >&2
