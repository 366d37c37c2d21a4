#!/usr/bin/env bash
# Check hddsim's model end to end on an emulated-HDD stack (root):
#   1. sequential O_DIRECT reads of the loop device at the outer and inner edge
#   2. random 4 KiB O_DIRECT reads, one at a time
#   3. a cold parallel `cat` of FILES 150 KiB files (written in shuffled order), under
#      SPTF and FCFS, with 16 readers and with 1
#
#   check.sh [hddsim args...]        e.g. check.sh --drive-cache-kb 0
#
# Env: FILES (default 400), STACK_DIR (default /dev/shm/seekless-hdd-check).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export STACK_DIR=${STACK_DIR:-/dev/shm/seekless-hdd-check}
FILES=${FILES:-400}
S=$HERE/stack.sh

[[ $(id -u) -eq 0 ]] || { echo "check.sh: must run as root" >&2; exit 1; }
trap '"$S" down' EXIT

out=$("$S" up --fs ext4 --size 4G "$@")
echo "$out"
loop=$(sed -n 's/^loop=//p' <<<"$out")
mnt=$(sed -n 's/^mnt=//p' <<<"$out")
control=$(sed -n 's/^control=//p' <<<"$out")
size=$(blockdev --getsize64 "$loop")

summary() {
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
n = max(j["requests"], 1)
print("  policy %s  requests %d  max_outstanding %d  mean_candidates %.1f  "
      "seek %.2f + rotation %.2f + transfer %.2f ms/request  cache hits %d+%d partial" % (
      j["policy"], j["requests"], j["max_outstanding"], j["mean_candidates"],
      j["seek_ms"] / n, j["rotation_ms"] / n, j["transfer_ms"] / n,
      j["cache_hits"], j["cache_partial_hits"]))' "$control"
}

echo "== 1. sequential 1 MiB O_DIRECT reads of $loop (200 MiB)"
"$S" reset
echo -n "  outer edge: "; dd if="$loop" of=/dev/null bs=1M count=200 iflag=direct 2>&1 | tail -1
summary
"$S" reset
echo -n "  inner edge: "
dd if="$loop" of=/dev/null bs=1M count=200 skip=$((size / 1048576 - 200)) iflag=direct 2>&1 | tail -1
summary

echo "== 2. random 4 KiB O_DIRECT reads, queue depth 1"
"$S" reset
echo -n "  "; python3 "$HERE/randread.py" "$loop" 300 4096
summary

echo "== 3. cold parallel cat of $FILES files of 150 KiB"
"$S" model off
head -c $((150 * 1024)) /dev/urandom > "$STACK_DIR/blob"
for i in $(seq 0 $((FILES - 1)) | shuf --random-source=<(yes)); do
    d=$mnt/corpus/d$((i % 8))
    mkdir -p "$d"
    cp "$STACK_DIR/blob" "$d/f$i"
done
rm -f "$STACK_DIR/blob"
sync
"$S" model on
run() {
    "$S" sched "$1"
    "$S" cold
    "$S" reset
    local t0 t1
    t0=$(date +%s%N)
    find "$mnt/corpus" -type f | xargs -P "$2" -n 8 cat > /dev/null
    t1=$(date +%s%N)
    echo "  $1, xargs -P $2: $(( (t1 - t0) / 1000000 )) ms"
    summary
}
run sptf 16
run fcfs 16
run sptf 1
run fcfs 1
