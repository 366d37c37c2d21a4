#!/usr/bin/env bash
# seekless index on many tiny images, warm cache (issue 24.7): where per-file costs and
# the catalog's writer show, not the disk or the decoder. 100,000 JPEGs of ~565 bytes
# (one 16×12 image with EXIF, each copy made unique by 4 bytes after its end, so every
# content hash differs), in directories of 1,000.
#
#   this build          seekless index --db FRESH DIR   (a new catalog each run)
#   $BEFORE             the same with another build, when BEFORE is set
#
# The contenders take turns, round after round (REPS rounds, default 3), after one
# warm-up read of the tree; the median wall time, CPU time (user + system) and peak RSS
# of each are printed, with images/s and the ratio to BEFORE, and the load averages
# before and after: on a shared machine only the ratios of one run mean anything.
#
#   bench/index-tiny.sh [DIR] [FILES]     (default /var/tmp/seekless-bench-tiny, 100000)
#   REPS=N; BEFORE=/path/to/seekless; SEEKLESS=/path/to/seekless (default: release build)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp/seekless-bench-tiny}
files=${2:-100000}
reps=${REPS:-3}
. bench/lib.sh
bin=${SEEKLESS:-$(seekless_bin)}
for tool in convert exiftool /usr/bin/time; do
    command -v "$tool" > /dev/null || { echo "needs $tool (imagemagick, libimage-exiftool-perl, time)" >&2; exit 1; }
done

if [ "$(find "$dir/tree" -type f 2> /dev/null | wc -l)" != "$files" ]; then
    rm -rf "$dir"
    mkdir -p "$dir/tree"
    convert -size 16x12 gradient:red-blue "$dir/one.jpg"
    exiftool -q -overwrite_original -Make=Canon -Model=Bench \
        -DateTimeOriginal="2020:01:01 10:00:00" "$dir/one.jpg"
    python3 - "$dir" "$files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
data = open(os.path.join(root, 'one.jpg'), 'rb').read()
for i in range(n):
    sub = os.path.join(root, 'tree', '%04d' % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, 'IMG_%06d.JPG' % i), 'wb') as f:
        f.write(data + i.to_bytes(4, 'little'))
PY
fi
find "$dir/tree" -type f -print0 | xargs -0 cat > /dev/null

contenders=(seekless)
[ -n "${BEFORE:-}" ] && contenders+=(before)
declare -A wall cpu rss
echo "load before: $(uptime)"
for ((r = 1; r <= reps; r++)); do
    for c in "${contenders[@]}"; do
        b=$bin
        [ "$c" = before ] && b=$BEFORE
        rm -f "$dir"/db*
        out=$(/usr/bin/time -f '%e %U %S %M' "$b" index --db "$dir/db" "$dir/tree" 2>&1 > /dev/null | tail -1)
        read -r e u s m <<< "$out"
        wall[$c]+="$e"$'\n'
        cpu[$c]+="$(echo "$u + $s" | bc -l)"$'\n'
        rss[$c]+="$m"$'\n'
    done
done
rm -f "$dir"/db*
echo "load after:  $(uptime)"
printf '%-10s %9s %9s %11s %9s\n' contender wall_s cpu_s images/s peak_MiB
declare -A med
for c in "${contenders[@]}"; do
    w=$(printf '%s' "${wall[$c]}" | median)
    p=$(printf '%s' "${cpu[$c]}" | median)
    m=$(printf '%s' "${rss[$c]}" | median)
    med[$c]=$w
    printf '%-10s %9.2f %9.2f %11.0f %9.1f\n' "$c" "$w" "$p" "$(echo "$files / $w" | bc -l)" "$(echo "$m / 1024" | bc -l)"
done
if [ -n "${BEFORE:-}" ]; then
    printf 'images/s, this build / before: %.2fx\n' "$(echo "${med[before]} / ${med[seekless]}" | bc -l)"
fi
