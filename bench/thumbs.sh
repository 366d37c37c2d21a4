#!/usr/bin/env bash
# Thumbnails (256 px), warm cache, side by side in one run (issue 23.8): images per second of
#
#   seekless index --thumbs (a fresh catalog each run: thumbnails + pHash + BLAKE3 + EXIF)
#   vipsthumbnail -s 256                                  (find | xargs -0 -P2 -n25)
#   Python Pillow draft() + thumbnail()                   (find | xargs -0 -P2 -n25)
#   ImageMagick convert -define jpeg:size=512x512 -thumbnail 256x256 (xargs -P2 -n25)
#
# each given both CPUs, on JPEGs drawn by Pillow (shapes and noise), in two sets:
#
#   origin  3,000 JPEGs of 1280×960, mean ~149 KiB (the origin benchmark's mean size)
#   12mp      300 JPEGs of 4000×3000, mean ~4 MiB
#
# The contenders are interleaved (one run of each in turn, REPS rounds) and the median of
# each is reported, with the load average before and after: on a shared machine only the
# ratios of one run mean anything. Each run's wall time and its CPU time (user + system of
# the whole process tree, GNU time) are taken: wall time on a machine others load (or
# whose page cache they drop) swings by 2×, CPU time far less, so the ratios are given for
# both, and `CPU-bound rate` = 2 CPUs / CPU seconds per image is what each reaches with
# both CPUs to itself. Then seekless's own `--summary` of one more run (where
# its time went), and the JPEG decoders considered, one thread each
# (crates/catalog/examples/thumb_decoders.rs).
#
#   bench/thumbs.sh [SET...]          (default: origin 12mp)
#   REPS=N (default 3); BASE=DIR (default /var/tmp/seekless-bench-thumbs);
#   ALT=BINARY: another seekless build as one more contender (`seekless-alt`), e.g. one
#   built without the `turbojpeg` feature, for the decoders' effect on the whole job;
#   DECODERS=0: skip the decoder comparison; BIN=BINARY: the seekless to measure (default:
#   a release build of this tree);
#   TURBOJPEG=1: libjpeg-turbo 3 in the decoder comparison (the `bench-turbojpeg` feature)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
base=${BASE:-/var/tmp/seekless-bench-thumbs}
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(origin 12mp)
. bench/lib.sh
bin=${BIN:-$(seekless_bin)}
py=/usr/bin/python3
command -v vipsthumbnail > /dev/null || { echo "needs vipsthumbnail (apt-get install libvips-tools)" >&2; exit 1; }
"$py" -c 'import PIL' || { echo "needs Pillow (apt-get install python3-pil)" >&2; exit 1; }
im=$(command -v convert-im6.q16 || command -v convert || true)
[ -n "$im" ] || { echo "needs ImageMagick (apt-get install imagemagick)" >&2; exit 1; }

# Writes N JPEGs of WxH into DIR: ellipses over a plain ground, blended with noise (BLEND)
# and saved at QUALITY, so their size is that of photos of that shape.
generate() {
    local dir=$1 n=$2 size=$3 blend=$4 quality=$5
    "$py" - "$dir" "$n" "$size" "$blend" "$quality" <<'PY'
import random, sys
from multiprocessing import Pool
from PIL import Image, ImageDraw
root, n = sys.argv[1], int(sys.argv[2])
w, h = map(int, sys.argv[3].split('x'))
blend, quality = float(sys.argv[4]), int(sys.argv[5])
def one(i):
    rng = random.Random(i)
    im = Image.new('RGB', (w, h), tuple(rng.randrange(256) for _ in range(3)))
    d = ImageDraw.Draw(im)
    for _ in range(30):
        x, y = rng.randrange(w), rng.randrange(h)
        d.ellipse((x, y, x + rng.randrange(w // 32, w // 2), y + rng.randrange(h // 24, h * 2 // 5)),
                  fill=tuple(rng.randrange(256) for _ in range(3)))
    noise = Image.effect_noise((w, h), 24).convert('RGB')
    Image.blend(im, noise, blend).save(f'{root}/{i:05}.jpg', quality=quality)
with Pool(2) as p:
    p.map(one, range(n), chunksize=8)
PY
}

pillow='import sys
from PIL import Image
out = sys.argv[1]
for p in sys.argv[2:]:
    im = Image.open(p)
    im.draft("RGB", (256, 256))
    im.thumbnail((256, 256), Image.LANCZOS)
    im.save(out + "/" + p.rsplit("/", 1)[1], quality=85)'

load() { cut -d' ' -f1-3 /proc/loadavg; }

# "WALL CPU" seconds of a shell command line, its output discarded.
timed() {
    /usr/bin/time -f '%e %U %S' -o "$base-time" bash -c "$1" > /dev/null
    awk '{printf "%s %.3f\n", $1, $2 + $3}' "$base-time"
}

for set in "${sets[@]}"; do
    case $set in
        origin) files=3000 size=1280x960 blend=0.12 quality=85 ;;
        12mp) files=300 size=4000x3000 blend=0.28 quality=93 ;;
        *) echo "unknown set $set (origin, 12mp)" >&2; exit 2 ;;
    esac
    dir=$base-$set
    if [ ! -f "$dir/.complete-$files" ]; then
        rm -rf "$dir"; mkdir -p "$dir/jpg"
        generate "$dir/jpg" "$files" "$size" "$blend" "$quality"
        touch "$dir/.complete-$files"
    fi
    src=$dir/jpg
    out=$dir/out
    n=$(find "$src" -name '*.jpg' | wc -l)
    kib=$(du -sk "$src" | cut -f1)
    echo "== $set: $n JPEGs of $size, $((kib / n)) KiB mean, warm cache, $reps interleaved rounds (median)"
    cat "$src"/*.jpg > /dev/null
    declare -A cmd=(
        [seekless]="rm -f $out/c.db*; $bin index --thumbs --db $out/c.db $src"
        [vipsthumbnail]="find $src -name '*.jpg' -print0 | xargs -0 -P2 -n25 vipsthumbnail -s 256 -o $out/%s.jpg"
        [pillow]="find $src -name '*.jpg' -print0 | xargs -0 -P2 -n25 $py -c '$pillow' $out"
        [imagemagick]="find $src -name '*.jpg' -print0 | xargs -0 -P2 -n25 sh -c 'for f; do $im -define jpeg:size=512x512 \"\$f\" -thumbnail 256x256 $out/\$(basename \"\$f\"); done' sh"
    )
    order=(seekless vipsthumbnail pillow imagemagick)
    if [ -n "${ALT:-}" ]; then
        cmd[seekless-alt]="rm -f $out/c.db*; $ALT index --thumbs --db $out/c.db $src"
        order+=(seekless-alt)
    fi
    declare -A walls=() cpus=()
    echo "load average before: $(load)"
    for _ in $(seq "$reps"); do
        for name in "${order[@]}"; do
            rm -rf "$out"; mkdir -p "$out"
            read -r wall cpu < <(timed "${cmd[$name]}")
            walls[$name]+="$wall "
            cpus[$name]+="$cpu "
        done
    done
    echo "load average after:  $(load)"
    declare -A rate=() cpurate=()
    printf '%-14s %9s %12s %12s %16s\n' contender 'wall (s)' 'images/s' 'CPU ms/img' 'CPU-bound rate'
    for name in "${order[@]}"; do
        t=$(printf '%s\n' ${walls[$name]} | median)
        c=$(printf '%s\n' ${cpus[$name]} | median)
        rate[$name]=$(echo "$n / $t" | bc -l)
        cpurate[$name]=$(echo "2 * $n / $c" | bc -l)
        printf '%-14s %9.3f %12.1f %12.1f %16.1f   (wall: %s; CPU: %s)\n' "$name" "$t" "${rate[$name]}" \
            "$(echo "1000 * $c / $n" | bc -l)" "${cpurate[$name]}" "${walls[$name]}" "${cpus[$name]}"
    done
    for what in rate cpurate; do
        declare -n r=$what
        printf '%-8s seekless / vipsthumbnail %.2f×   / pillow %.2f×   / imagemagick %.2f×' "$what" \
            "$(echo "${r[seekless]} / ${r[vipsthumbnail]}" | bc -l)" \
            "$(echo "${r[seekless]} / ${r[pillow]}" | bc -l)" \
            "$(echo "${r[seekless]} / ${r[imagemagick]}" | bc -l)"
        [ -z "${ALT:-}" ] || printf '   / seekless-alt %.2f×' "$(echo "${r[seekless]} / ${r[seekless-alt]}" | bc -l)"
        echo
        unset -n r
    done
    echo "-- seekless index --thumbs --summary, one more run:"
    rm -rf "$out"; mkdir -p "$out"
    "$bin" index --thumbs --summary --db "$out/c.db" "$src" 2>&1 | grep -v '^seekless: [0-9]* files\|ext4\|walk+locate'
    rm -rf "$out"
    unset cmd walls cpus rate cpurate
    if [ "${DECODERS:-1}" = 1 ]; then
        echo "-- the decoders considered, one thread ($set)"
        features=()
        [ "${TURBOJPEG:-0}" = 1 ] && features=(--features bench-turbojpeg)
        cargo run --release -q -p seekless-catalog "${features[@]}" --example thumb_decoders -- "$src"
    fi
done
