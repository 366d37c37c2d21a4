#!/usr/bin/env bash
# Planning cost: `seekless order` (walk + FIEMAP + sort) against `find -type f`, warm
# cache, side by side in one run, on two shapes:
#
# - tree: 100,000 files in 100 directories of 10 subdirectories (a photo library);
# - flat: one directory of 200,000 entries (half empty, half 1 byte), and one of half as
#   many, to show that the walk's time and memory grow linearly with a directory's size.
#
# Prints time ratios and the peak memory per file against the budget (64 MiB + 300 bytes
# per file).
#
#   bench/order.sh [DIR] [FILES] [FLAT]   (default /var/tmp/seekless-bench-order, 100000, 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp/seekless-bench-order}
files=${2:-100000}
flat=${3:-200000}
reps=${REPS:-5}
. bench/lib.sh
bin=$(seekless_bin)

tree="$dir/tree"
if [ ! -f "$tree/.complete-$files" ]; then
    echo "building $files files under $tree ..."
    rm -rf "$tree"; mkdir -p "$tree"
    python3 - "$tree" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
names = [f"d{i // 1000:03d}/s{(i // 100) % 10}/IMG_{i:06d}.JPG" for i in range(n)]
rng.shuffle(names)
for name in names:
    p = os.path.join(root, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(os.urandom(rng.randint(1, 8) * 512))
PY
    touch "$tree/.complete-$files"
fi

# One directory of N entries: file_000000, ..., odd ones 1 byte.
make_flat() {
    local d=$1 n=$2
    [ -f "$d.complete" ] && return
    echo "building one directory of $n entries at $d ..."
    rm -rf "$d"; mkdir -p "$d"
    python3 - "$d" "$n" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(root, f"file_{i:06d}"), "wb") as f:
        if i % 2:
            f.write(b"x")
PY
    touch "$d.complete"
}
half=$((flat / 2))
make_flat "$dir/flat-$flat" "$flat"
make_flat "$dir/flat-$half" "$half"

# Prints one shape's rows; sets $seek_t.
measure() {
    local name=$1 d=$2 n find_t rss_kb budget_kb
    find "$d" -type f > /dev/null; "$bin" order "$d" > /dev/null  # warm the cache
    n=$(find "$d" -type f | wc -l)
    find_t=$(for _ in $(seq "$reps"); do elapsed "find '$d' -type f"; done | median)
    seek_t=$(for _ in $(seq "$reps"); do elapsed "'$bin' order '$d'"; done | median)
    rss_kb=$(/usr/bin/time -f %M "$bin" order "$d" 2>&1 >/dev/null | tail -1)
    budget_kb=$(( (64 * 1024 * 1024 + 300 * n) / 1024 ))
    printf '%s: %d files\n' "$name" "$n"
    printf '  find -type f          %.3f s (median of %d)\n' "$find_t" "$reps"
    printf '  seekless order        %.3f s (median of %d)\n' "$seek_t" "$reps"
    printf '  ratio seekless/find   %.2f\n' "$(echo "$seek_t / $find_t" | bc -l)"
    printf '  peak RSS              %d KiB = %.0f bytes/file over the 64 MiB base (budget %d KiB)\n' \
        "$rss_kb" "$(echo "($rss_kb * 1024 - 64 * 1024 * 1024) / $n" | bc -l)" "$budget_kb"
}

measure tree "$tree"
"$bin" order --summary "$tree" > /dev/null
measure "flat, half size" "$dir/flat-$half"
half_t=$seek_t
measure flat "$dir/flat-$flat"
printf 'flat: time for %d entries / time for %d   %.2f  (linear: 2)\n' \
    "$flat" "$half" "$(echo "$seek_t / $half_t" | bc -l)"
