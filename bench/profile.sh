#!/usr/bin/env bash
# Where the CPU goes, warm cache (so only CPU remains): seekless hash (BLAKE3, SHA-256),
# order and index beside b3sum and sha256sum hashing the same files, on the corpus of
# bench/hash-local.sh (10,000 files, ~149 KiB) and on 100,000 small files (the tree of
# bench/order.sh). Needs perf (apt-get install linux-perf) and strace.
#
# Per contender: CPU time (user + system, all threads) per file, system calls per file
# (strace -c -f), and the share of CPU samples (perf record) in hashing, copies of the
# data (kernel copy to user space, memcpy/memmove), locking (futex, mutexes, condition
# variables, kernel spin locks), allocation (malloc/free), other kernel work (system
# calls' own cost: path lookup, extent maps, page cache) and other user-space work.
#
#   bench/profile.sh [HASH_DIR] [SMALL_DIR]
#     (default /var/tmp/seekless-bench-hash, /var/tmp/seekless-bench-order/tree: made by
#     bench/hash-local.sh and bench/order.sh)
#   SEEKLESS=path/to/seekless (default: the `profiling` build, target/profiling/seekless:
#     the release build with symbols and debug info, which perf needs to name functions;
#     the release build is stripped)
set -euo pipefail
cd "$(dirname "$0")/.."
hash_dir=${1:-/var/tmp/seekless-bench-hash}
small_dir=${2:-/var/tmp/seekless-bench-order/tree}
. bench/lib.sh
bin=${SEEKLESS:-$(seekless_profiling_bin)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Sample categories, by symbol name (first match wins).
categorize() {
    awk -F'\t' '
    { pct = $1 + 0; sym = $2; total += pct
      if (sym ~ /blake3|sha256|sha2::|Sha256|compress256|hash_many|sha256_block|_sha256/) c["hash"] += pct
      else if (sym ~ /copy_user|copy_to_user|_copy_to_iter|copy_page_to_iter|rep_movs|memmove|memcpy|filemap_read|copy_mc/) c["copy"] += pct
      else if (sym ~ /futex|pthread_mutex|pthread_cond|lll_lock|std::sys::sync|_raw_spin|queued_spin|native_queued|parking_lot|crossbeam/) c["lock"] += pct
      else if (sym ~ /malloc|_int_free|cfree|realloc|free@|^free$|alloc::alloc|__rust_alloc|__rust_dealloc|_int_realloc|tcache|arena/) c["alloc"] += pct
      else if (sym ~ /^\[k\]/) c["kernel"] += pct
      else c["user"] += pct }
    END { printf "%.0f|%.0f|%.0f|%.0f|%.0f|%.0f", c["hash"], c["copy"], c["lock"], c["alloc"], c["kernel"], c["user"] }'
}

# profile NAME CORPUS FILES COMMAND...
profile() {
    local name=$1 corpus=$2 files=$3; shift 3
    "$@" > /dev/null 2>&1 || true   # warm
    local cpu calls top cats
    cpu=$(/usr/bin/time -f '%U %S' -o "$work/time" "$@" > /dev/null 2>&1; tail -1 "$work/time" | awk '{print $1 + $2}')
    strace -c -f -o "$work/strace" "$@" > /dev/null 2>&1 || true
    calls=$(awk '$NF == "total" {print $4 + 0}' "$work/strace")
    top=$(awk 'NR > 2 && $1 ~ /^[0-9.]+$/ && $NF != "total" {n = ($5 ~ /^[0-9]+$/) ? $6 : $5; printf "%s %.2f\n", n, $4 / '"$files"'}' "$work/strace" \
        | sort -k2 -rn | head -5 | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')
    perf record -q -F 1999 -o "$work/perf.data" "$@" > /dev/null 2>&1 || true
    cats=$(perf report -i "$work/perf.data" --no-children --sort symbol --stdio -g none 2>/dev/null \
        | awk '/^ +[0-9.]+%/ { pct = $1; sub(/%/, "", pct); $1 = ""; sub(/^ +/, ""); print pct "\t" $0 }' \
        | categorize)
    printf '| %s | %s | %.1f | %.0f | %.1f | %s | %s |\n' "$name" "$corpus" \
        "$(echo "$cpu * 1000" | bc -l)" "$(echo "$cpu * 1000000 / $files" | bc -l)" \
        "$(echo "$calls / $files" | bc -l)" "$cats" "$top"
}

list() { find "$1" -type f ! -name '.complete-*' -print0 > "$2"; tr -cd '\0' < "$2" | wc -c; }
echo "seekless: $bin; load $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
echo
echo '| contender | corpus | CPU ms | CPU µs/file | syscalls/file | hashing % | copies % | locking % | allocation % | other kernel % | other user % | syscalls per file (top 5) |'
echo '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|'
for corpus in "$hash_dir" "$small_dir"; do
    label=$(basename "$corpus")
    n=$(list "$corpus" "$work/list")
    profile "seekless hash --algo blake3" "$label" "$n" "$bin" hash --algo blake3 --files-from "$work/list" -0
    profile "b3sum (one process, list)" "$label" "$n" xargs -0 -a "$work/list" b3sum
    profile "seekless hash --algo sha256" "$label" "$n" "$bin" hash --algo sha256 --files-from "$work/list" -0
    profile "sha256sum (one process, list)" "$label" "$n" xargs -0 -a "$work/list" sha256sum
    profile "seekless order" "$label" "$n" "$bin" order --files-from "$work/list" -0
    profile "seekless index" "$label" "$n" bash -c "rm -f '$work/db'*; exec '$bin' index --db '$work/db' --files-from '$work/list' -0"
done
