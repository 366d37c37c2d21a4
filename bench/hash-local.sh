#!/usr/bin/env bash
# `seekless hash --algo sha256` against `find | xargs -0 sha256sum` on this machine's own
# disk, cold cache (root: drop_caches before every run), 10,000 files, side by side.
#
#   bench/hash-local.sh [DIR] [FILES]     (default /var/tmp/seekless-bench-hash, 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (drop_caches for cold runs)" >&2; exit 1; }
dir=${1:-/var/tmp/seekless-bench-hash}
files=${2:-10000}
reps=${REPS:-3}
. bench/lib.sh
bin=$(seekless_bin)
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
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
timeit() { cold; elapsed "$1"; }
base=$(for _ in $(seq "$reps"); do timeit "find '$dir' -type f -print0 | xargs -0 sha256sum"; done | median)
ours=$(for _ in $(seq "$reps"); do timeit "'$bin' hash --algo sha256 '$dir'"; done | median)
one=$(for _ in $(seq "$reps"); do timeit "'$bin' hash --algo sha256 -j 1 --no-prefetch '$dir'"; done | median)
bytes=$(du -sb "$dir" | cut -f1)
printf 'files %d, %.0f MiB, cold cache, median of %d\n' "$files" "$(echo "$bytes/1048576" | bc -l)" "$reps"
printf 'find | xargs sha256sum            %7.2f s\n' "$base"
printf 'seekless hash (1 thread, no prefetch) %7.2f s\n' "$one"
printf 'seekless hash                     %7.2f s   ratio %.2fx faster than find|xargs\n' "$ours" "$(echo "$base/$ours" | bc -l)"
