#!/usr/bin/env bash
# Planning cost: `seekless order` (walk + FIEMAP + sort) against `find -type f` and against
# the floor (bench/floor.c: open + statx + FIEMAP + close per file and nothing else, on as
# many threads as seekless's walk), warm cache, side by side in one run, on two shapes:
#
# - tree: 100,000 files in 100 directories of 10 subdirectories (a photo library);
# - flat: one directory of 200,000 entries (half empty, half 1 byte), and one of half as
#   many, to show that the walk's time and memory grow linearly with a directory's size.
#
# Two floors: `floor list` opens each path of the list `find -print0` made (whole paths
# resolved from the root, as for any list of files); `floor walk` reads the directories
# itself and opens each name relative to its directory, as `seekless order DIR` may. The
# contenders are interleaved (one run of each per round) and each row is the median of
# REPS rounds; the load average is printed with the results, since only ratios measured
# side by side mean anything on a shared machine.
#
# Prints time ratios and the peak memory per file against the budget (64 MiB + 300 bytes
# per file).
#
#   bench/order.sh [DIR] [FILES] [FLAT]   (default /var/tmp/seekless-bench-order, 100000, 200000)
#   FLAT=0 skips the flat shapes; THREADS (default 64) sets both tools' thread count;
#   SEEKLESS_BASE=path/to/another/seekless adds that build as a contender.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp/seekless-bench-order}
files=${2:-100000}
flat=${3:-${FLAT:-200000}}
reps=${REPS:-5}
threads=${THREADS:-64}
base=${SEEKLESS_BASE:-}
. bench/lib.sh
bin=$(seekless_bin)
floor=$PWD/target/floor
cc -O2 -pthread -o "$floor" bench/floor.c
list=$(mktemp)
trap 'rm -f "$list" "$list.time"' EXIT

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
if [ "$flat" -gt 0 ]; then
    make_flat "$dir/flat-$flat" "$flat"
    make_flat "$dir/flat-$half" "$half"
fi

# "WALL CPU" seconds a command line takes (CPU: user + system over all its threads; on a
# machine shared with others, a steadier measure of the work done than the wall time), to
# the 0.1 ms: wait4's own figures (GNU time prints hundredths, 5 % of a 0.2 s run).
timed() {
    python3 - "$1" <<'PY'
import os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(["bash", "-c", sys.argv[1]],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - start
print(f"{wall:.4f} {usage.ru_utime + usage.ru_stime:.4f}")
PY
}

# Prints one shape's rows; sets $seek_t.
measure() {
    local name=$1 d=$2 n rss_kb budget_kb k
    local -a names cmds
    find "$d" -type f -print0 > "$list"  # the floor's list; warms the cache
    "$bin" order "$d" > /dev/null
    n=$(tr -cd '\0' < "$list" | wc -c)
    names=("find -type f" "floor list (open+statx+fiemap+close)" "floor walk (+ readdir, openat)"
        "seekless order")
    cmds=("find '$d' -type f" "'$floor' -j $threads list '$list'" "'$floor' -j $threads walk '$d'"
        "'$bin' order --walk-threads $threads '$d'")
    if [ -n "$base" ]; then
        names+=("base order ($base)")
        cmds+=("'$base' order --walk-threads $threads '$d'")
    fi
    local -a wall cpu
    for _ in $(seq "$reps"); do
        for k in "${!cmds[@]}"; do
            read -r w c < <(timed "${cmds[$k]}")
            wall[k]+="$w "; cpu[k]+="$c "
        done
    done
    med() { tr ' ' '\n' | grep . | median; }
    local -a W C
    for k in "${!cmds[@]}"; do
        W[k]=$(echo "${wall[k]}" | med); C[k]=$(echo "${cpu[k]}" | med)
    done
    ratio() { echo "$1 / $2" | bc -l; }
    printf '%s: %d files, %d threads, median of %d interleaved rounds; load %s\n' \
        "$name" "$n" "$threads" "$reps" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf '  %-38s %8s %8s %8s %12s %12s\n' "" "wall s" "cpu s" "wall/find" "wall/floor" "cpu/floor"
    for k in "${!cmds[@]}"; do
        printf '  %-38s %8.3f %8.3f %8.2f %12s %12s\n' "${names[k]}" "${W[k]}" "${C[k]}" \
            "$(ratio "${W[k]}" "${W[0]}")" \
            "$(printf '%.2f' "$(ratio "${W[k]}" "${W[1]}")")" \
            "$(printf '%.2f' "$(ratio "${C[k]}" "${C[1]}")")"
    done
    echo "  (floor: floor list; floor walk / floor list: wall $(printf '%.2f' "$(ratio "${W[2]}" "${W[1]}")"))"
    seek_t=${W[3]}
    rss_kb=$(/usr/bin/time -f %M "$bin" order "$d" 2>&1 >/dev/null | tail -1)
    budget_kb=$(( (64 * 1024 * 1024 + 300 * n) / 1024 ))
    printf '  peak RSS %d KiB = %.0f bytes/file over the 64 MiB base (budget %d KiB)\n' \
        "$rss_kb" "$(echo "($rss_kb * 1024 - 64 * 1024 * 1024) / $n" | bc -l)" "$budget_kb"
}

measure tree "$tree"
"$bin" order --summary "$tree" > /dev/null
[ "$flat" -gt 0 ] || exit 0
measure "flat, half size" "$dir/flat-$half"
half_t=$seek_t
measure flat "$dir/flat-$flat"
printf 'flat: time for %d entries / time for %d   %.2f  (linear: 2)\n' \
    "$flat" "$half" "$(echo "$seek_t / $half_t" | bc -l)"
