#!/usr/bin/env bash
# Planning cost: `seekless order` (walk + FIEMAP + sort) against `find -type f` on the same
# 100,000-file tree, warm cache, side by side in one run. Prints the time ratio and the
# peak memory per file.
#
#   bench/order.sh [DIR] [FILES]      (default /var/tmp/seekless-bench-order, 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp/seekless-bench-order}
files=${2:-100000}
reps=${REPS:-5}
. bench/lib.sh
bin=$(seekless_bin)

if [ ! -f "$dir/.complete-$files" ]; then
    echo "building $files files under $dir ..."
    rm -rf "$dir"; mkdir -p "$dir"
    python3 - "$dir" "$files" <<'PY'
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
    touch "$dir/.complete-$files"
fi
# Warm the cache for both.
find "$dir" -type f > /dev/null; "$bin" order "$dir" > /dev/null


find_t=$(for _ in $(seq "$reps"); do elapsed "find '$dir' -type f"; done | median)
seek_t=$(for _ in $(seq "$reps"); do elapsed "'$bin' order '$dir'"; done | median)
rss_kb=$(/usr/bin/time -f %M "$bin" order "$dir" 2>&1 >/dev/null | tail -1)
n=$(find "$dir" -type f -name '*.JPG' | wc -l)
budget_kb=$(( (64 * 1024 * 1024 + 300 * n) / 1024 ))
printf 'files                 %d\n' "$n"
printf 'find -type f          %.3f s (median of %d)\n' "$find_t" "$reps"
printf 'seekless order        %.3f s (median of %d)\n' "$seek_t" "$reps"
printf 'ratio seekless/find   %.2f  (target <= 2)\n' "$(echo "$seek_t / $find_t" | bc -l)"
printf 'peak RSS              %d KiB = %.0f bytes/file over the 64 MiB base (budget %d KiB)\n' \
    "$rss_kb" "$(echo "($rss_kb * 1024 - 64 * 1024 * 1024) / $n" | bc -l)" "$budget_kb"
"$bin" order --summary "$dir" > /dev/null
