#!/usr/bin/env bash
# Issue 24.6: does io_uring pay for many small files on a solid-state disk?
# crates/core/examples/uring_hash.rs (statx + openat + read + close through io_uring, many files in
# flight, BLAKE3 on worker threads) against the present engine over the same file list,
# cold (root: sync + drop_caches before every run) and warm (one warm-up read of every
# file before every run), contenders in turn round after round:
#
#   uring_hash                      (the io_uring prototype)
#   uring_hash --no-fixed           (the same, descriptors in the process's table, not fixed slots)
#   uring_hash --plain              (the same program, plain system calls: what io_uring adds)
#   seekless hash --algo blake3 --disk ssd --keep-cache --files-from LIST -0
#   seekless hash ... --locate given  (the same in list order, no extent lookup)
#   hash_in_physical_order          (the library's example, default options)
#   xargs -0 b3sum                  (b3sum over the list, processes one after another)
#
# Every contender gets the same NUL-separated list (`find` order). Prints median wall time
# and CPU time (user + sys of the whole process tree, /usr/bin/time) per contender and
# cache state, the ratios io_uring ÷ engine, and the verdict of the issue's rule (kept
# only if io_uring takes >= 15 % less wall time). Every run's output is checked equal (as
# sorted `HEX  PATH` lines) to b3sum's. Load averages (`uptime`) before and after.
#
#   bench/uring.sh [DIR] [FILES]    (default /var/tmp/seekless-bench-uring, 100000)
#   REPS=N (default 3); CLEAN=1 removes the corpus at the end (it is made again next time)
#
# The corpus (made once, kept under DIR): FILES files of 4-64 KiB (uniform random sizes,
# random bytes), in directories of 1,000, written in shuffled order. 100,000 files are
# ~3.3 GiB.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (drop_caches for cold runs)" >&2; exit 1; }
dir=${1:-/var/tmp/seekless-bench-uring}
files=${2:-100000}
reps=${REPS:-3}
command -v b3sum > /dev/null || { echo "needs b3sum (apt-get install b3sum)" >&2; exit 1; }
. bench/lib.sh
if [ ! -f "$dir/.complete-$files" ]; then
    rm -rf "$dir"; mkdir -p "$dir/data"
    python3 - "$dir/data" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(24)
names = [f"d{i // 1000:03d}/f{i:06d}" for i in range(n)]
rng.shuffle(names)
for d in sorted({os.path.dirname(x) for x in names}):
    os.makedirs(os.path.join(root, d), exist_ok=True)
for name in names:
    with open(os.path.join(root, name), "wb") as f:
        f.write(os.urandom(rng.randint(4096, 65536)))
PY
    sync; touch "$dir/.complete-$files"
fi
cargo build --release -q -p seekless --bin seekless && cargo build --release -q -p seekless-core --example uring_hash --example hash_in_physical_order
bin=$PWD/target/release/seekless
ex=$PWD/target/release/examples
work=$(mktemp -d /dev/shm/seekless-bench-uring.XXXXXX)
trap 'rm -rf "$work"' EXIT
list=$work/list
find "$dir/data" -type f -print0 > "$list"
files=$(tr -cd '\0' < "$list" | wc -c)
mib=$(du -sbm "$dir/data" | cut -f1)

names=(
    'uring_hash (io_uring)'
    'uring_hash --no-fixed'
    'uring_hash --plain'
    'seekless hash --disk ssd'
    'seekless hash --disk ssd --locate given'
    'hash_in_physical_order (library example)'
    'xargs -0 b3sum'
)
hs="--algo blake3 --disk ssd --keep-cache -0 --files-from '$list'"
cmds=(
    "'$ex/uring_hash' -0 < '$list'"
    "'$ex/uring_hash' -0 --no-fixed < '$list'"
    "'$ex/uring_hash' -0 --plain < '$list'"
    "'$bin' hash $hs"
    "'$bin' hash $hs --locate given"
    "'$ex/hash_in_physical_order' -0 < '$list' | awk '{print \$2 \"  \" \$3}'"
    "xargs -0 b3sum < '$list'"
)
n=${#cmds[@]}
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
warm() { xargs -0 -P4 -n1000 cat < "$list" > /dev/null; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# Runs contender $1, output to $work/out; prints "wall cpu".
run() {
    /usr/bin/time -f '%e %U %S' -o "$work/time" bash -c "${cmds[$1]}" > "$work/out" 2> "$work/err" \
        || { echo "${names[$1]} failed:" >&2; cat "$work/err" >&2; exit 1; }
    awk '{printf "%s %.2f\n", $1, $2 + $3}' "$work/time"
}
check() {
    sort "$work/out" > "$work/sorted"
    cmp -s "$work/sorted" "$work/expected" \
        || { echo "${names[$1]}: output differs from b3sum's" >&2; diff "$work/sorted" "$work/expected" | head >&2; exit 1; }
}
xargs -0 b3sum < "$list" | sort > "$work/expected"
[ "$(wc -l < "$work/expected")" = "$files" ] || { echo "b3sum did not hash every file" >&2; exit 1; }
grep -q 'io_uring refused' <(bash -c "${cmds[0]}" 2>&1 > /dev/null) \
    && echo "NOTE: io_uring refused here: uring_hash ran plain system calls" >&2

src=$(findmnt -no SOURCE --target "$dir")
disk=$(lsblk -no PKNAME "$src" 2>/dev/null | head -1)
[ -n "$disk" ] || disk=$(basename "$src")
printf '%d files, %d MiB under %s (disk %s, queue/rotational=%s), %s, median of %d, contenders in turn\n' \
    "$files" "$mib" "$dir" "$disk" "$(cat "/sys/block/$disk/queue/rotational" 2>/dev/null || echo '?')" \
    "$(uname -r)" "$reps"
printf 'uptime before: %s\n\n' "$(uptime)"
declare -A wall cpu
for state in cold warm; do
    for rep in $(seq "$reps"); do
        for i in $(seq 0 $((n - 1))); do
            $state
            r=$(run "$i"); read -r w c <<< "$r"
            check "$i"
            wall[$state,$i]+="$w "; cpu[$state,$i]+="$c "
        done
        printf 'round %d %s done, load %s\n' "$rep" "$state" "$(load)" >&2
    done
done
med() { local -n a=$1; tr ' ' '\n' <<< "${a[$2,$3]}" | grep . | median; }
printf '| contender | cold wall s | cold CPU s | warm wall s | warm CPU s |\n|---|---:|---:|---:|---:|\n'
for i in $(seq 0 $((n - 1))); do
    printf '| %s | %.2f | %.2f | %.2f | %.2f |\n' "${names[$i]}" \
        "$(med wall cold "$i")" "$(med cpu cold "$i")" "$(med wall warm "$i")" "$(med cpu warm "$i")"
done
ratio() { echo "$(med "$1" "$2" 0)/$(med "$1" "$2" "$3")" | bc -l; }
printf '\n| io_uring ÷ | cold wall | cold CPU | warm wall | warm CPU |\n|---|---:|---:|---:|---:|\n'
for i in $(seq 1 $((n - 1))); do
    printf '| %s | %.2f | %.2f | %.2f | %.2f |\n' "${names[$i]}" \
        "$(ratio wall cold "$i")" "$(ratio cpu cold "$i")" "$(ratio wall warm "$i")" "$(ratio cpu warm "$i")"
done
# The issue's rule: io_uring kept only if it takes <= 0.85 of seekless hash's wall time.
verdict() {
    local r; r=$(echo "$(med wall "$1" "$2")/$(med wall "$1" 3)" | bc -l)
    printf '%.2f, %s' "$r" "$([ "$(echo "$r <= 0.85" | bc -l)" = 1 ] && echo "wins by >= 15 %" || echo "does not win by 15 %")"
}
printf '\nwall time ÷ seekless hash (rule: <= 0.85)\n'
for i in 0 1; do
    printf '  %s: cold %s; warm %s\n' "${names[$i]}" "$(verdict cold "$i")" "$(verdict warm "$i")"
done
printf 'uptime after: %s\n' "$(uptime)"
[ "${CLEAN:-0}" = 1 ] && rm -rf "$dir"
exit 0
