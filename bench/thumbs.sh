#!/usr/bin/env bash
# Thumbnails (256 px), warm cache, side by side in one run (issue 23.8's first set, at the
# brief's size): images per second of
#
#   seekless index --thumbs (a fresh catalog each run: thumbnails + pHash + BLAKE3 + EXIF)
#   vipsthumbnail -s 256                                  (find | xargs -0 -P2 -n25)
#   Python Pillow draft() + thumbnail()                   (find | xargs -0 -P2 -n25)
#   ImageMagick convert -define jpeg:size=512x512 -thumbnail 256x256 (xargs -P2 -n25)
#
# each given both CPUs, on JPEGs drawn by Pillow (shapes and noise: ~180 KiB at 1280×960),
# then the decoders considered, one thread each (examples/thumb_decoders.rs).
#
#   bench/thumbs.sh [DIR] [FILES]     (default /var/tmp/seekless-bench-thumbs-WxH, 300)
#   REPS=N (default 3): median of N runs per row; SIZE=WxH (default 1280x960);
#   TURBOJPEG=1: libjpeg-turbo 3 too in the decoder comparison (builds it from source:
#   apt-get install cmake nasm)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${SIZE:-1280x960}
dir=${1:-/var/tmp/seekless-bench-thumbs-$size}
files=${2:-300}
reps=${REPS:-3}
. bench/lib.sh
bin=$(seekless_bin)
py=/usr/bin/python3
command -v vipsthumbnail > /dev/null || { echo "needs vipsthumbnail (apt-get install libvips-tools)" >&2; exit 1; }
"$py" -c 'import PIL' || { echo "needs Pillow (apt-get install python3-pil)" >&2; exit 1; }
im=$(command -v convert-im6.q16 || true)

if [ ! -f "$dir/.complete-$files" ]; then
    rm -rf "$dir"; mkdir -p "$dir/jpg"
    "$py" - "$dir/jpg" "$files" "$size" <<'PY'
import random, sys
from PIL import Image, ImageDraw
root, n = sys.argv[1], int(sys.argv[2])
w, h = map(int, sys.argv[3].split('x'))
for i in range(n):
    rng = random.Random(i)
    im = Image.new('RGB', (w, h), tuple(rng.randrange(256) for _ in range(3)))
    d = ImageDraw.Draw(im)
    for _ in range(30):
        x, y = rng.randrange(w), rng.randrange(h)
        d.ellipse((x, y, x + rng.randrange(w // 32, w // 2), y + rng.randrange(h // 24, h * 2 // 5)),
                  fill=tuple(rng.randrange(256) for _ in range(3)))
    noise = Image.effect_noise((w, h), 24).convert('RGB')
    Image.blend(im, noise, 0.12).save(f'{root}/{i:05}.jpg', quality=88)
PY
    touch "$dir/.complete-$files"
fi
src=$dir/jpg
out=$dir/out
n=$(find "$src" -name '*.jpg' | wc -l)
kib=$(du -sk "$src" | cut -f1)
echo "== $n JPEGs of $size, $((kib / n)) KiB mean, warm cache, $reps runs each (median)"
cat "$src"/*.jpg > /dev/null

pillow='import sys
from PIL import Image
out = sys.argv[1]
for p in sys.argv[2:]:
    im = Image.open(p)
    im.draft("RGB", (256, 256))
    im.thumbnail((256, 256), Image.LANCZOS)
    im.save(out + "/" + p.rsplit("/", 1)[1], quality=85)'

declare -A cmd=(
    [seekless]="rm -f $out/c.db*; $bin index --thumbs --db $out/c.db $src"
    [vipsthumbnail]="find $src -name '*.jpg' -print0 | xargs -0 -P2 -n25 vipsthumbnail -s 256 -o $out/%s.jpg"
    [pillow]="find $src -name '*.jpg' -print0 | xargs -0 -P2 -n25 $py -c '$pillow' $out"
)
order=(seekless vipsthumbnail pillow)
if [ -n "$im" ]; then
    cmd[imagemagick]="find $src -name '*.jpg' -print0 | xargs -0 -P2 -n25 sh -c 'for f; do $im -define jpeg:size=512x512 \"\$f\" -thumbnail 256x256 $out/\$(basename \"\$f\"); done' sh"
    order+=(imagemagick)
fi
declare -A rate
for name in "${order[@]}"; do
    times=()
    for _ in $(seq "$reps"); do
        rm -rf "$out"; mkdir -p "$out"
        times+=("$(elapsed "${cmd[$name]}")")
    done
    t=$(printf '%s\n' "${times[@]}" | median)
    rate[$name]=$(echo "$n / $t" | bc -l)
    printf '%-14s %7.3f s  %7.1f images/s   (runs: %s)\n' "$name" "$t" "${rate[$name]}" "${times[*]}"
done
rm -rf "$out"
printf 'seekless / vipsthumbnail: %.2f×   seekless / pillow: %.2f×\n' \
    "$(echo "${rate[seekless]} / ${rate[vipsthumbnail]}" | bc -l)" \
    "$(echo "${rate[seekless]} / ${rate[pillow]}" | bc -l)"
echo "== the decoders considered, one thread"
features=()
[ "${TURBOJPEG:-0}" = 1 ] && features=(--features bench-turbojpeg)
cargo run --release -q "${features[@]}" --example thumb_decoders -- "$src"
