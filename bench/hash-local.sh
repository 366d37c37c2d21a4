#!/usr/bin/env bash
# seekless hash against the usual ways of hashing a tree, on this machine's own disk, cold
# cache (root: drop_caches before every run), 10,000 files, side by side in one run:
#
#   find | xargs -0 sha256sum                      (one process, directory order)
#   find | xargs -0 -P16 -n64 sha256sum           (16 processes at once)
#   find | xargs -0 -P16 -n64 b3sum                (the same with BLAKE3)
#   seekless hash --algo sha256 -j1 --no-prefetch  (one file at a time, physical order)
#   seekless hash --algo sha256 | --algo blake3
#
# then the seekless rows again with the disk's queue/rotational set to 0 (restored
# afterwards), as an SSD would report it: a regression on non-rotational disks shows.
#
#   bench/hash-local.sh [DIR] [FILES]     (default /var/tmp/seekless-bench-hash, 10000)
#   REPS=N (default 3): median of N cold runs per row
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (drop_caches for cold runs)" >&2; exit 1; }
dir=${1:-/var/tmp/seekless-bench-hash}
files=${2:-10000}
reps=${REPS:-3}
. bench/lib.sh
bin=$(seekless_bin)
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

# The whole disk under DIR, for its queue/rotational.
src=$(findmnt -no SOURCE --target "$dir")
disk=$(lsblk -no PKNAME "$src" 2>/dev/null | head -1)
[ -n "$disk" ] || disk=$(basename "$src")
rot=/sys/block/$disk/queue/rotational
was=$(cat "$rot" 2>/dev/null || echo "")
restore() { [ -z "$was" ] || echo "$was" > "$rot"; }
trap restore EXIT

cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
run() { for _ in $(seq "$reps"); do cold; elapsed "$1"; done | median; }
bytes=$(du -sb --exclude='.complete-*' "$dir" | cut -f1)
mib=$(echo "$bytes/1048576" | bc -l)
printf '%d files, %.0f MiB under %s (disk %s, rotational=%s), cold cache, median of %d\n\n' \
    "$files" "$mib" "$dir" "$disk" "${was:-?}" "$reps"
printf '| contender | rotational | s | MiB/s | vs find\\|xargs sha256sum |\n|---|---|---:|---:|---:|\n'
row() { # name rot seconds base
    printf '| %s | %s | %.2f | %.0f | %.2fx |\n' "${1//|/\\|}" "$2" "$3" "$(echo "$mib/$3" | bc -l)" "$(echo "$4/$3" | bc -l)"
}
q="'$dir'"
base=$(run "find $q -type f -print0 | xargs -0 sha256sum")
row 'find | xargs -0 sha256sum' "$was" "$base" "$base"
row 'find | xargs -0 -P16 -n64 sha256sum' "$was" "$(run "find $q -type f -print0 | xargs -0 -P16 -n64 sha256sum")" "$base"
row 'find | xargs -0 -P16 -n64 b3sum' "$was" "$(run "find $q -type f -print0 | xargs -0 -P16 -n64 b3sum")" "$base"
passes=("$was")
[ -n "$was" ] && [ "$was" != 0 ] && passes+=(0)
for r in "${passes[@]}"; do
    [ -z "$was" ] || echo "$r" > "$rot"
    row 'seekless hash --algo sha256 -j1 --no-prefetch' "$r" "$(run "'$bin' hash --algo sha256 -j 1 --no-prefetch $q")" "$base"
    row 'seekless hash --algo sha256' "$r" "$(run "'$bin' hash --algo sha256 $q")" "$base"
    row 'seekless hash --algo blake3' "$r" "$(run "'$bin' hash --algo blake3 $q")" "$base"
done
restore
