#!/usr/bin/env bash
# Planning without locating on a disk known not to seek (issue 24.5), side by side in one
# run: `seekless hash` on a disk that reports non-rotational and measures as solid-state
# (its files are not located: no FIEMAP per file, inode order) against the same with
# `--locate fiemap` (every file located, read in disk order, as before), cold (root:
# drop_caches before every run) and warm, contenders in turn, median of REPS. Prints wall
# and CPU time, the planning time each run's `--summary` reports, and the ratios; the
# outputs are checked equal. The disk: an ext4 image in memory (/dev/shm), attached as a
# loop device, which reports non-rotational and whose node is readable as root: a fast
# disk (an image on this machine's disk would be taken for that disk, which reports
# rotational). Cold = the filesystem's page cache dropped; the image stays in memory.
#
#   sudo bench/unordered.sh            FILES=N (default 20000, 4-64 KiB each); REPS=N (3)
#   SEEKLESS=/path/to/seekless (default: a release build of this tree)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (a loop device, drop_caches)" >&2; exit 1; }
files=${FILES:-20000}
reps=${REPS:-3}
. bench/lib.sh
bin=${SEEKLESS:-$(seekless_bin)}
work=$(mktemp -d /dev/shm/seekless-bench-unordered.XXXXXX)
loop=""
cleanup() {
    mountpoint -q "$work/mnt" && umount "$work/mnt"
    [ -z "$loop" ] || losetup -d "$loop"
    rm -rf "$work"
}
trap cleanup EXIT
truncate -s 4G "$work/fs.img"
mkfs.ext4 -q "$work/fs.img"
loop=$(losetup -f --show "$work/fs.img")
mkdir "$work/mnt"
mount "$loop" "$work/mnt"
echo 0 > "/sys/block/$(basename "$loop")/queue/rotational"
python3 - "$work/mnt/tree" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
for i in range(n):
    d = os.path.join(root, '%03d' % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    with open(os.path.join(d, 'f%06d' % i), 'wb') as f:
        f.write(rng.randbytes(rng.randrange(4096, 65537)))
PY
sync
echo "$files files, $(du -sm "$work/mnt/tree" | cut -f1) MiB, on $(basename "$loop") (rotational 0)"

names=(unordered located)
declare -A args=([unordered]="" [located]="--locate fiemap")
declare -A wall cpu plan
echo "load before: $(uptime)"
for state in cold warm; do
    for ((r = 1; r <= reps; r++)); do
        for c in "${names[@]}"; do
            if [ "$state" = cold ]; then
                sync
                echo 3 > /proc/sys/vm/drop_caches
            else
                find "$work/mnt/tree" -type f -print0 | xargs -0 cat > /dev/null
            fi
            # shellcheck disable=SC2086
            /usr/bin/time -f '%e %U %S' -o "$work/time" "$bin" hash --algo blake3 --summary \
                ${args[$c]} "$work/mnt/tree" > "$work/$c.out" 2> "$work/$c.err"
            read -r e u s < "$work/time"
            wall[$state-$c]+="$e"$'\n'
            cpu[$state-$c]+="$(echo "$u + $s" | bc -l)"$'\n'
            plan[$state-$c]+="$(sed -n 's/^seekless: walk+locate \([0-9.]*\) s.*/\1/p' "$work/$c.err")"$'\n'
        done
        cmp -s <(sort "$work/unordered.out") <(sort "$work/located.out") ||
            { echo "outputs differ" >&2; exit 1; }
    done
done
echo "load after:  $(uptime)"
grep -E "located by|not located" "$work/unordered.err" "$work/located.err" | sed 's/^[^:]*://'
printf '%-6s %-10s %8s %8s %9s\n' state contender wall_s cpu_s plan_s
for state in cold warm; do
    for c in "${names[@]}"; do
        printf '%-6s %-10s %8.2f %8.2f %9.3f\n' "$state" "$c" \
            "$(printf '%s' "${wall[$state-$c]}" | median)" \
            "$(printf '%s' "${cpu[$state-$c]}" | median)" \
            "$(printf '%s' "${plan[$state-$c]}" | median)"
    done
    printf '%s: located / unordered, wall %.2fx, CPU %.2fx, planning %.2fx\n' "$state" \
        "$(echo "$(printf '%s' "${wall[$state-located]}" | median) / $(printf '%s' "${wall[$state-unordered]}" | median)" | bc -l)" \
        "$(echo "$(printf '%s' "${cpu[$state-located]}" | median) / $(printf '%s' "${cpu[$state-unordered]}" | median)" | bc -l)" \
        "$(echo "$(printf '%s' "${plan[$state-located]}" | median) / $(printf '%s' "${plan[$state-unordered]}" | median)" | bc -l)"
done
