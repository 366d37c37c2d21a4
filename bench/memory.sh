#!/usr/bin/env bash
# Peak memory at scale: `order -0`, `hash` and `hash --check` of one directory of 200,000
# and of 1,000,000 one-byte files on ext4, and `order --walk-threads 1024` on 23 files,
# each measured with `/usr/bin/time -f %M` (peak RSS of the process) against its budget:
#
# - order, hash: 64 MiB + 200 bytes per file;
# - hash --check: 64 MiB + 250 bytes per manifest line;
# - walk-threads 1024 on 23 files: 64 MiB.
#
# The trees live on an ext4 image (2 KiB blocks: every one-byte file has a block of its
# own, at half the RAM of 4 KiB blocks) on a loop device in /dev/shm, built once per run
# and removed at the end. Needs root (mount, losetup) and ~3 GiB of free RAM; building the
# 1.2 million files takes a few minutes.
#
#   sudo bench/memory.sh            (REPS=N runs per row, the highest peak is printed; 1)
#   SEEKLESS_BASE=path/to/another/seekless adds that build's peak beside each row, measured
#   in the same rounds (one run of each in turn).
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-1}
. bench/lib.sh
bin=$(seekless_bin)
base=${SEEKLESS_BASE:-}
[ "$(id -u)" = 0 ] || { echo "bench/memory.sh: needs root (losetup, mount)" >&2; exit 2; }

img=$(mktemp /dev/shm/seekless-memory.XXXXXX.img)
mnt=$(mktemp -d /dev/shm/seekless-memory.XXXXXX)
loop=
cleanup() {
    mountpoint -q "$mnt" && umount "$mnt"
    [ -n "$loop" ] && losetup -d "$loop"
    rm -rf "$img" "$mnt"
}
trap cleanup EXIT

truncate -s 4G "$img"
mkfs.ext4 -q -b 2048 -N 1300000 -E lazy_itable_init=0,lazy_journal_init=0 "$img"
loop=$(losetup -f --show "$img")
mount "$loop" "$mnt"

# One directory of N one-byte files: file_0000000, ...
make_flat() {
    local d=$1 n=$2
    mkdir "$d"
    python3 - "$d" "$n" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
fd = os.open(root, os.O_DIRECTORY)
for i in range(n):
    f = os.open(f"file_{i:07d}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
    os.write(f, b"x")
    os.close(f)
PY
}

rows=()
# peak_kib BINARY ARGS...: one run's peak RSS in KiB.
peak_kib() {
    local b=$1
    shift
    /usr/bin/time -f %M -o "$mnt/peak" "$b" "$@" > /dev/null 2>&1 \
        || { echo "bench/memory.sh: $b $* failed" >&2; exit 1; }
    tail -1 "$mnt/peak"
}

# measure ENTRIES COMMAND BUDGET_MIB -- ARGS...: the highest peak of $reps runs.
measure() {
    local entries=$1 what=$2 budget=$3 peak=0 base_peak=0 kib
    shift 4
    for _ in $(seq "$reps"); do
        kib=$(peak_kib "$bin" "$@")
        [ "$kib" -gt "$peak" ] && peak=$kib
        if [ -n "$base" ]; then
            kib=$(peak_kib "$base" "$@")
            [ "$kib" -gt "$base_peak" ] && base_peak=$kib
        fi
    done
    local mib ok base_col=
    mib=$(echo "scale=1; $peak / 1024" | bc)
    ok=$(echo "$mib <= $budget" | bc)
    [ "$ok" = 1 ] && ok=yes || ok=no
    [ -n "$base" ] && base_col=" $(echo "scale=1; $base_peak / 1024" | bc) |"
    rows+=("$(printf '| %s | `%s` | %s |%s %s | %s |' "$entries" "$what" "$mib" "$base_col" "$budget" "$ok")")
    echo "${rows[-1]}" >&2
}

for n in 200000 1000000; do
    echo "building one directory of $n one-byte files ..." >&2
    make_flat "$mnt/flat-$n" "$n"
    sync
    budget=$(echo "scale=1; 64 + 200 * $n / 1048576" | bc)
    check_budget=$(echo "scale=1; 64 + 250 * $n / 1048576" | bc)
    (cd "$mnt" && "$bin" hash "flat-$n" > "$mnt/manifest-$n")
    cd "$mnt"
    measure "$n" "order -0" "$budget" -- order -0 "flat-$n"
    measure "$n" "hash" "$budget" -- hash "flat-$n"
    measure "$n" "hash --check" "$check_budget" -- hash --check --quiet "manifest-$n"
    cd - > /dev/null
    rm -rf "$mnt/flat-$n" "$mnt/manifest-$n"
done

mkdir "$mnt/small"
for i in $(seq 23); do echo "$i" > "$mnt/small/f$i"; done
measure 23 "order --walk-threads 1024" 64 -- order -0 --walk-threads 1024 "$mnt/small"

echo
if [ -n "$base" ]; then
    echo "| entries | command | peak RSS MiB | base ($base) MiB | budget MiB | within budget |"
    echo "|---|---|---|---|---|---|"
else
    echo "| entries | command | peak RSS MiB | budget MiB | within budget |"
    echo "|---|---|---|---|---|"
fi
printf '%s\n' "${rows[@]}"
