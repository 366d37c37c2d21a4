#!/usr/bin/env bash
# seekless hash against the usual ways of hashing a tree, on this machine's own disk,
# 10,000 files, cold cache (root: drop_caches before every run) and warm (every file
# cached before every run), side by side in one run: the contenders take turns, round
# after round, so that a change in the machine's load falls on all of them alike.
#
#   find | xargs -0 sha256sum                      (one process, directory order: the base)
#   find | xargs -0 -P16 -n64 sha256sum           (16 processes at once)
#   find | xargs -0 -P16 -n64 b3sum                (the same with BLAKE3)
#   find | xargs -0 b3sum                          (b3sum over a file list)
#   seekless hash --algo sha256 -j1 --no-prefetch  (one file at a time, physical order)
#   seekless hash --algo sha256 | --algo blake3    (the disk measured, as by default)
#   seekless hash --algo blake3 --disk hdd         (the disk taken for a seeking one)
#   $BEFORE hash --algo sha256 | --algo blake3     (another build, when BEFORE is set)
#
# The disk's queue/rotational is left as the kernel set it. Each result is printed with
# the load averages (`uptime`) before and after the run: the figures of a machine shared
# with others are ratios, valid when the load stayed low.
#
#   bench/hash-local.sh [DIR] [FILES]     (default /var/tmp/seekless-bench-hash, 10000)
#   REPS=N (default 3): median of N runs per row and cache state
#   BEFORE=/path/to/seekless: also run that build's rows (before/after in one run)
#   SEEKLESS=/path/to/seekless: this build instead of building target/release
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (drop_caches for cold runs)" >&2; exit 1; }
dir=${1:-/var/tmp/seekless-bench-hash}
files=${2:-10000}
reps=${REPS:-3}
. bench/lib.sh
bin=${SEEKLESS:-$(seekless_bin)}
command -v b3sum > /dev/null || { echo "needs b3sum (apt-get install b3sum)" >&2; exit 1; }
if [ ! -f "$dir/.complete-$files" ]; then
    rm -rf "$dir"; mkdir -p "$dir"
    python3 - "$dir" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
names = [f"d{i // 500:02d}/IMG_{i:05d}.JPG" for i in range(n)]
rng.shuffle(names)
for name in names:
    p = os.path.join(root, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    size = max(4096, int(rng.lognormvariate(11.6, 0.6)))   # mean ~149 KiB
    with open(p, "wb") as f:
        f.write(os.urandom(size))
PY
    sync; touch "$dir/.complete-$files"
fi

src=$(findmnt -no SOURCE --target "$dir")
disk=$(lsblk -no PKNAME "$src" 2>/dev/null | head -1)
[ -n "$disk" ] || disk=$(basename "$src")
rot=$(cat "/sys/block/$disk/queue/rotational" 2>/dev/null || echo "?")
q="'$dir'"
names=(
    'find | xargs -0 sha256sum'
    'find | xargs -0 -P16 -n64 sha256sum'
    'find | xargs -0 -P16 -n64 b3sum'
    'find | xargs -0 b3sum'
    'seekless hash --algo sha256 -j1 --no-prefetch'
    'seekless hash --algo sha256'
    'seekless hash --algo blake3'
    'seekless hash --algo blake3 --disk hdd'
)
cmds=(
    "find $q -type f -print0 | xargs -0 sha256sum"
    "find $q -type f -print0 | xargs -0 -P16 -n64 sha256sum"
    "find $q -type f -print0 | xargs -0 -P16 -n64 b3sum"
    "find $q -type f -print0 | xargs -0 b3sum"
    "'$bin' hash --algo sha256 -j 1 --no-prefetch $q"
    "'$bin' hash --algo sha256 $q"
    "'$bin' hash --algo blake3 $q"
    "'$bin' hash --algo blake3 --disk hdd $q"
)
if [ -n "${BEFORE:-}" ]; then
    names+=('before: seekless hash --algo sha256' 'before: seekless hash --algo blake3')
    cmds+=("'$BEFORE' hash --algo sha256 $q" "'$BEFORE' hash --algo blake3 $q")
fi
n=${#cmds[@]}
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# Every file in the page cache (read twice: the first read may be someone's cold one).
warm() { for _ in 1 2; do find "$dir" -type f -print0 | xargs -0 -P4 -n256 cat > /dev/null; done; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
bytes=$(du -sb --exclude='.complete-*' "$dir" | cut -f1)
mib=$(echo "$bytes/1048576" | bc -l)
printf '%d files, %.0f MiB under %s (disk %s, queue/rotational=%s), median of %d, contenders in turn\n' \
    "$files" "$mib" "$dir" "$disk" "$rot" "$reps"
printf 'load averages before: %s\n\n' "$(load)"
declare -A took
for state in cold warm; do
    for rep in $(seq "$reps"); do
        for i in $(seq 0 $((n - 1))); do
            $state
            took[$state,$i]+="$(elapsed "${cmds[$i]}") "
        done
        printf 'round %d %s done, load %s\n' "$rep" "$state" "$(load)" >&2
    done
done
med() { tr ' ' '\n' <<< "${took[$1,$2]}" | grep . | median; }
printf '| contender | cold s | cold MiB/s | warm s | warm MiB/s | cold vs base | warm vs base |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for i in $(seq 0 $((n - 1))); do
    c=$(med cold "$i"); w=$(med warm "$i"); bc0=$(med cold 0); bw0=$(med warm 0)
    printf '| %s | %.2f | %.0f | %.2f | %.0f | %.2fx | %.2fx |\n' "${names[$i]//|/\\|}" \
        "$c" "$(echo "$mib/$c" | bc -l)" "$w" "$(echo "$mib/$w" | bc -l)" \
        "$(echo "$bc0/$c" | bc -l)" "$(echo "$bw0/$w" | bc -l)"
done
# The goals: seekless against the best of the usual ways, per cache state.
ratio() { echo "$(med "$1" "$3")/$(med "$1" "$2")" | bc -l; }
printf '\n| goal | cold | warm |\n|---|---:|---:|\n'
printf '| seekless blake3 vs xargs -P16 b3sum (>= 1.0) | %.2fx | %.2fx |\n' "$(ratio cold 6 2)" "$(ratio warm 6 2)"
printf '| seekless blake3 vs b3sum over a list (>= 1.0) | %.2fx | %.2fx |\n' "$(ratio cold 6 3)" "$(ratio warm 6 3)"
printf '| seekless sha256 vs xargs -P16 sha256sum (>= 2.0) | %.2fx | %.2fx |\n' "$(ratio cold 5 1)" "$(ratio warm 5 1)"
if [ -n "${BEFORE:-}" ]; then
    printf '| before: blake3 vs xargs -P16 b3sum | %.2fx | %.2fx |\n' "$(ratio cold 9 2)" "$(ratio warm 9 2)"
    printf '| before: sha256 vs xargs -P16 sha256sum | %.2fx | %.2fx |\n' "$(ratio cold 8 1)" "$(ratio warm 8 1)"
fi
printf '\nload averages after: %s\n' "$(load)"
