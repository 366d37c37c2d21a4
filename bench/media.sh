#!/usr/bin/env bash
# Thumbnails (256 px) of HEIC, camera raw and video, side by side in one run (issue 32.6):
# images per second of `seekless index --thumbs` against what a user would run instead,
# warm (page cache hot) and cold on the emulated 7200 rpm disk (bench/hdd/stack.sh).
#
#   kind   contender         command (each given both CPUs)
#   heic   seekless          seekless index --thumbs --db FRESH.db DIR
#          vipsthumbnail     find | xargs -0 -P2 -n25 vipsthumbnail -s 256
#          heif-thumbnailer  find | xargs -0 -P2 -n25 sh -c 'for f; do heif-thumbnailer -s 256 f f.png; done'
#   raw    seekless          (as above)
#          exiftool+vips     per file: exiftool -b -PreviewImage f > x.jpg && vipsthumbnail -s 256 x.jpg
#          exiftool-w+vips   per 25 files: exiftool -b -PreviewImage -w D/%f.jpg FILES && vipsthumbnail -s 256 D/*.jpg
#   video  seekless          (as above)
#          ffmpegthumbnailer per file: ffmpegthumbnailer -s 256 -t 10% -i f -o f.jpg
#          ffmpeg-ss         per file: ffprobe (duration), ffmpeg -ss D/10 -i f -frames:v 1 -vf scale=256:-2 f.jpg
#
# seekless does more than a thumbnail: it reads and hashes (BLAKE3) every file whole, reads
# its metadata, makes a pHash and writes a SQLite catalog. The peers read only what their
# thumbnail needs (a HEIC's 320-px thumbnail item, a raw's preview, a few frames of video).
#
# Corpora (seeded, reproducible; made once under BASE, ~2.3 GB in all):
#
#   heic   100 HEICs of 4032×3024 (~2.9 MB): JPEGs drawn by Pillow (shapes and noise, as
#          thumbs.sh), encoded by heif-enc (x265, preset ultrafast for the encoding's time)
#          with a 320-px thumbnail item (`-t 320`), as iPhones store one
#   raw     60 DNG-like TIFFs (~22.5 MB): IFD0 a full-size 3888×2592 JPEG preview
#          (NewSubfileType 1, Compression 7, one strip), a SubIFD with the 16-bit raw data
#          (random bytes, 20 MB), DNGVersion, Make, Model, Orientation
#   video   40 H.264 clips of 1920×1080, 30 fps, 10–20 s, 8 Mbit/s, AAC sound (~15 MB):
#          ffmpeg's testsrc2 with temporal noise, x264 preset superfast (CABAC, B-frames,
#          deblocking: a phone's stream features), a keyframe every 2 s; cut by stream
#          copy from one 40-s encode (see gen_video)
#
# The contenders are interleaved (one run of each in turn, REPS rounds) and the median of
# each is reported, with wall time and CPU time (user + system of the whole process tree,
# GNU time) and the load average before and after: on a shared machine only the ratios of
# one run mean anything. `CPU-bound rate` = 2 CPUs / CPU seconds per image.
#
# Emulated disk: one stack (bench/hdd/stack.sh up, 4 GiB, ext4, --fs-seed 1) with the
# corpora copied onto it with the model off; before every run `stack.sh cold` (unmount,
# drop caches, mount), then every contender once on one file outside the emulated disk
# (its programs and libraries back in memory, untimed), then hddsim's counters reset.
# Catalogs and thumbnails go to tmpfs. DAMON's proactive reclaim is paused and SCHED_IDLE
# busy loops run, as in bench/hdd/run (see hdd/README.md). MB read and seeks are hddsim's.
#
#   bench/media.sh [KIND...]          (default: heic raw video)
#   REPS=N (default 3); BASE=DIR (default /var/tmp/seekless-bench-media);
#   HDD=0: warm only (no root needed); BUSY=0: no busy loops on the emulated disk;
#   HEIC_FILES, RAW_FILES, VIDEO_FILES: corpus sizes (100, 60, 40: generating them takes
#   longest for the HEICs, ~4 s of CPU each);
#   BIN=BINARY: the seekless to measure (default: a release build of this tree)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
base=${BASE:-/var/tmp/seekless-bench-media}
hdd=${HDD:-1}
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(heic raw video)
. bench/lib.sh
py=/usr/bin/python3
need() { command -v "$1" > /dev/null || { echo "needs $1 (apt-get install $2)" >&2; exit 1; }; }
need vipsthumbnail libvips-tools
need heif-thumbnailer heif-thumbnailer
need heif-enc libheif-examples
need exiftool libimage-exiftool-perl
need ffmpegthumbnailer ffmpegthumbnailer
need ffmpeg ffmpeg
need ffprobe ffmpeg
need sqlite3 sqlite3
need bc bc
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
"$py" -c 'import PIL' || { echo "needs Pillow (apt-get install python3-pil)" >&2; exit 1; }
vips -l 2> /dev/null | grep heifload > /dev/null ||
    { echo "needs libvips with HEIF support (apt-get install libvips-tools libheif1)" >&2; exit 1; }
if [ "$hdd" = 1 ] && [ "$(id -u)" -ne 0 ]; then
    echo "the emulated disk needs root (loop device, mount, FUSE, drop_caches); HDD=0 for warm only" >&2
    exit 1
fi
bin=${BIN:-$(seekless_bin)}
hddsim=${HDDSIM:-$PWD/target/release/hddsim}
if [ "$hdd" = 1 ] && [ ! -x "$hddsim" ]; then
    echo "needs $hddsim: cargo build --release -p hddsim" >&2; exit 1
fi

# --- corpora -------------------------------------------------------------------------

# Pillow's picture of seed I, WxH, saved as a JPEG at QUALITY into PATH (the generator of
# thumbs.sh: ellipses over a plain ground, blended with noise).
picture_py='
import random
from PIL import Image, ImageDraw
def picture(rng, w, h, blend):
    im = Image.new("RGB", (w, h), tuple(rng.randrange(256) for _ in range(3)))
    d = ImageDraw.Draw(im)
    for _ in range(30):
        x, y = rng.randrange(w), rng.randrange(h)
        d.ellipse((x, y, x + rng.randrange(w // 32, w // 2), y + rng.randrange(h // 24, h * 2 // 5)),
                  fill=tuple(rng.randrange(256) for _ in range(3)))
    noise = Image.effect_noise((w, h), 24).convert("RGB")
    return Image.blend(im, noise, blend)
'

gen_heic() {
    local dir=$1 n=$2
    "$py" - "$dir" "$n" <<PY
import sys
from multiprocessing import Pool
$picture_py
from PIL import Image
root, n = sys.argv[1], int(sys.argv[2])
def one(i):
    rng = random.Random(i)
    im = picture(rng, 4032, 3024, 0.28)
    exif = Image.Exif()
    exif[0x010F], exif[0x0110], exif[0x0112] = "Apple", "iPhone 12", 1
    exif[0x0132] = "2024:%02d:%02d 10:%02d:%02d" % (1 + i % 12, 1 + i % 28, i % 60, (7 * i) % 60)
    im.save(f"{root}/IMG_{i:04}.jpg", quality=93, exif=exif)
with Pool(2) as p:
    p.map(one, range(n), chunksize=4)
PY
    # x265 threads itself: one encoder at a time.
    local j
    for j in "$dir"/*.jpg; do
        heif-enc -q 50 -t 320 -p preset=ultrafast -o "${j%.jpg}.HEIC" "$j" > /dev/null
        rm "$j"
    done
}

gen_raw() {
    local dir=$1 n=$2
    "$py" - "$dir" "$n" <<PY
import io, struct, sys
from multiprocessing import Pool
$picture_py
root, n = sys.argv[1], int(sys.argv[2])
W, H = 3888, 2592
def ifd(entries, at):
    """An IFD at offset AT from (tag, type, count, value bytes), values over 4 bytes after it."""
    entries = sorted(entries)
    extra_at = at + 2 + 12 * len(entries) + 4
    body, extra = struct.pack("<H", len(entries)), b""
    for tag, typ, count, value in entries:
        if len(value) <= 4:
            body += struct.pack("<HHI", tag, typ, count) + value.ljust(4, b"\0")
        else:
            extra += b"\0" * ((extra_at + len(extra)) % 2)
            body += struct.pack("<HHII", tag, typ, count, extra_at + len(extra))
            extra += value
    return body + struct.pack("<I", 0) + extra
S = lambda *v: struct.pack("<%dH" % len(v), *v)
L = lambda *v: struct.pack("<%dI" % len(v), *v)
A = lambda s: s.encode() + b"\0"
def one(i):
    rng = random.Random(1000 + i)
    buf = io.BytesIO()
    picture(rng, W, H, 0.2).save(buf, "JPEG", quality=90)
    jpg = buf.getvalue()
    raw = rng.randbytes(W * H * 2)
    # Header and IFD0 at 8, the SubIFD at 4096, the preview at 8192, the raw data after it.
    sub_at, jpg_at = 4096, 8192
    raw_at = jpg_at + len(jpg) + (-len(jpg)) % 4096
    when = "2024:%02d:%02d 12:%02d:%02d" % (1 + i % 12, 1 + i % 28, i % 60, (7 * i) % 60)
    model = A("Canon EOS 5D Mark V")
    ifd0 = ifd([
        (0x00FE, 4, 1, L(1)), (0x0100, 4, 1, L(W)), (0x0101, 4, 1, L(H)),
        (0x0102, 3, 3, S(8, 8, 8)), (0x0103, 3, 1, S(7)), (0x0106, 3, 1, S(6)),
        (0x010F, 2, 6, A("Canon")), (0x0110, 2, len(model), model),
        (0x0111, 4, 1, L(jpg_at)), (0x0112, 3, 1, S(1)), (0x0115, 3, 1, S(3)),
        (0x0116, 4, 1, L(H)), (0x0117, 4, 1, L(len(jpg))), (0x0132, 2, 20, A(when)),
        (0x014A, 4, 1, L(sub_at)), (0xC612, 1, 4, bytes([1, 4, 0, 0])),
        (0xC614, 2, len(model), model),
    ], 8)
    sub = ifd([
        (0x00FE, 4, 1, L(0)), (0x0100, 4, 1, L(W)), (0x0101, 4, 1, L(H)),
        (0x0102, 3, 1, S(16)), (0x0103, 3, 1, S(1)), (0x0106, 3, 1, S(32803)),
        (0x0111, 4, 1, L(raw_at)), (0x0115, 3, 1, S(1)), (0x0116, 4, 1, L(H)),
        (0x0117, 4, 1, L(len(raw))), (0x828D, 3, 2, S(2, 2)), (0x828E, 1, 4, bytes([0, 1, 1, 2])),
    ], sub_at)
    head = (b"II*\0" + L(8) + ifd0).ljust(sub_at, b"\0") + sub
    with open(f"{root}/IMG_{i:04}.DNG", "wb") as f:
        f.write(head.ljust(jpg_at, b"\0") + jpg.ljust(raw_at - jpg_at, b"\0") + raw)
with Pool(2) as p:
    p.map(one, range(n), chunksize=1)
PY
}

# Encoding 1080p with noise runs at ~1 s of video per second here, so one 40-s clip is
# encoded and the N clips are cut from it at keyframes (stream copy, no re-encoding):
# each 10–20 s long, starting 0–20 s in, so every file's bytes differ.
gen_video() {
    local dir=$1 n=$2 i d at
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30:duration=40,noise=alls=14:allf=t:all_seed=1" \
        -f lavfi -i "sine=frequency=440:duration=40" \
        -c:v libx264 -preset superfast -b:v 8M -maxrate 10M -bufsize 16M -g 60 -pix_fmt yuv420p \
        -c:a aac -b:a 128k "$dir/source.mp4"
    for i in $(seq 0 $((n - 1))); do
        d=$((10 + (i * 7) % 11)) at=$((2 * ((i * 3) % 11)))
        ffmpeg -v error -y -ss "$at" -i "$dir/source.mp4" -t "$d" -c copy -movflags +faststart \
            "$dir/VID_$(printf %04d "$i").mp4"
    done
    rm "$dir/source.mp4"
}

declare -A files=([heic]=${HEIC_FILES:-100} [raw]=${RAW_FILES:-60} [video]=${VIDEO_FILES:-40})
for kind in "${kinds[@]}"; do
    case $kind in heic|raw|video) ;; *) echo "unknown kind $kind (heic, raw, video)" >&2; exit 2 ;; esac
    dir=$base/$kind
    if [ ! -f "$base/.complete-$kind-${files[$kind]}" ]; then
        echo "-- generating $kind: ${files[$kind]} files in $dir" >&2
        rm -rf "$dir" "$base/sample-$kind" "$base"/.complete-"$kind"-*; mkdir -p "$dir"
        "gen_$kind" "$dir" "${files[$kind]}"
        # One file outside the corpus: what each contender runs on before a cold run.
        mkdir -p "$base/sample-$kind"
        cp "$(find "$dir" -type f | sort | head -1)" "$base/sample-$kind/"
        touch "$base/.complete-$kind-${files[$kind]}"
    fi
done

# --- contenders ----------------------------------------------------------------------

# Fills `cmd` (name → shell command line) and `order` for KIND on the files of SRC,
# thumbnails and catalogs into OUT.
contenders() {
    local kind=$1 src=$2 out=$3
    local list="find $src -type f -print0"
    cmd=([seekless]="rm -f $out/c.db*; $bin index --thumbs --db $out/c.db $src")
    case $kind in
        heic)
            cmd[vipsthumbnail]="$list | xargs -0 -P2 -n25 vipsthumbnail -s 256 -o $out/%s.jpg"
            cmd[heif-thumbnailer]="$list | xargs -0 -P2 -n25 sh -c 'for f; do heif-thumbnailer -s 256 \"\$f\" $out/\$(basename \"\$f\").png; done' sh"
            order=(seekless vipsthumbnail heif-thumbnailer) ;;
        raw)
            cmd[exiftool+vips]="$list | xargs -0 -P2 -n25 sh -c 'for f; do b=$out/\$(basename \"\$f\"); exiftool -b -PreviewImage \"\$f\" > \$b.jpg && vipsthumbnail -s 256 -o %s-256.jpg \$b.jpg; done' sh"
            cmd[exiftool-w+vips]="$list | xargs -0 -P2 -n25 sh -c 'd=\$(mktemp -d -p $out); exiftool -q -b -PreviewImage -w \$d/%f.jpg \"\$@\" && vipsthumbnail -s 256 -o %s-256.jpg \$d/*.jpg' sh"
            order=(seekless exiftool+vips exiftool-w+vips) ;;
        video)
            cmd[ffmpegthumbnailer]="$list | xargs -0 -P2 -n25 sh -c 'for f; do ffmpegthumbnailer -s 256 -t 10% -i \"\$f\" -o $out/\$(basename \"\$f\").jpg; done' sh"
            cmd[ffmpeg-ss]="$list | xargs -0 -P2 -n25 sh -c 'for f; do d=\$(ffprobe -v error -show_entries format=duration -of csv=p=0 \"\$f\"); ffmpeg -v error -ss \$(echo \"\$d / 10\" | bc -l) -i \"\$f\" -frames:v 1 -vf scale=256:-2 -y $out/\$(basename \"\$f\").jpg; done' sh"
            order=(seekless ffmpegthumbnailer ffmpeg-ss) ;;
    esac
}

# Thumbnails a contender left in OUT (seekless: rows of its catalog with a thumbnail, by
# source).
made() {
    local name=$1 out=$2
    if [ "$name" = seekless ]; then
        sqlite3 "$out/c.db" "select coalesce(thumb_source, 'none'), count(*) from thumbs where jpeg is not null group by 1" |
            tr '|\n' '  '
    else
        # The raw peers leave the extracted previews beside their thumbnails (*-256.jpg).
        local pattern='*'
        [ -z "$(find "$out" -name '*-256.jpg' -print -quit)" ] || pattern='*-256'
        find "$out" -type f \( -name "$pattern.png" -o -name "$pattern.jpg" \) | wc -l
    fi
}

load() { cut -d' ' -f1-3 /proc/loadavg; }
work=$(mktemp -d /dev/shm/seekless-media.XXXXXX)

# "WALL CPU" seconds of a shell command line, its output discarded.
timed() {
    /usr/bin/time -f '%e %U %S' -o "$work/time" bash -o pipefail -c "$1" > /dev/null
    awk '{printf "%s %.3f\n", $1, $2 + $3}' "$work/time"
}

# --- the emulated disk ---------------------------------------------------------------

export STACK_DIR=/dev/shm/seekless-media-hdd HDDSIM=$hddsim
stack=$PWD/bench/hdd/stack.sh
damon_paused=()
busy=()
cleanup() {
    local rc=$?
    cd /work 2> /dev/null || cd /
    undo_busy_and_damon
    if [ "$hdd" = 1 ]; then "$stack" down || true; fi
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# "MB-read seeks" of the run just ended, from hddsim's counters.
disk_stats() {
    "$stack" stats | awk -F'[:,]' '/"bytes_read"/ {b = $2} /"seeks"/ {s = $2} END {printf "%.0f %d\n", b / 1e6, s}'
}

# --- runs ----------------------------------------------------------------------------

# REPS interleaved rounds of KIND's contenders on SRC (SETTING warm or hdd); prints the table.
measure() {
    local kind=$1 src=$2 setting=$3
    local out=$work/out sample=$base/sample-$kind name r wall cpu mb seeks
    declare -gA cmd=() walls=() cpus=() mbs=() seekss=() rate=() cpurate=()
    declare -ga order=()
    local n
    n=$(find "$src" -type f | wc -l)
    local mib=$(($(du -sk "$src" | cut -f1) / 1024))
    echo "== $kind, $setting: $n files, $mib MiB, $reps interleaved rounds (median)"
    [ "$setting" = warm ] && cat "$src"/* > /dev/null
    echo "load average before: $(load)"
    for r in $(seq "$reps"); do
        contenders "$kind" "$src" "$out"
        for name in "${order[@]}"; do
            if [ "$setting" = hdd ]; then
                "$stack" cold
                # The contender's programs and libraries back in memory, untimed.
                rm -rf "$work/warmup"; mkdir -p "$work/warmup"
                (contenders "$kind" "$sample" "$work/warmup"; bash -c "${cmd[$name]}" > /dev/null 2>&1) || true
                "$stack" reset
            fi
            rm -rf "$out"; mkdir -p "$out"
            read -r wall cpu < <(timed "${cmd[$name]}")
            walls[$name]+="$wall "
            cpus[$name]+="$cpu "
            if [ "$setting" = hdd ]; then
                read -r mb seeks < <(disk_stats)
                mbs[$name]+="$mb "
                seekss[$name]+="$seeks "
            fi
            [ "$r" != "$reps" ] || made_by[$name]=$(made "$name" "$out")
        done
    done
    echo "load average after:  $(load)"
    printf '%-18s %9s %10s %11s %15s %9s %7s %14s\n' contender 'wall (s)' 'images/s' 'CPU ms/img' 'CPU-bound rate' 'MB read' seeks 'thumbnails'
    local t c
    for name in "${order[@]}"; do
        t=$(printf '%s\n' ${walls[$name]} | median)
        c=$(printf '%s\n' ${cpus[$name]} | median)
        rate[$name]=$(echo "$n / $t" | bc -l)
        cpurate[$name]=$(echo "2 * $n / $c" | bc -l)
        mb=- seeks=-
        if [ "$setting" = hdd ]; then
            mb=$(printf '%s\n' ${mbs[$name]} | median)
            seeks=$(printf '%s\n' ${seekss[$name]} | median)
        fi
        printf '%-18s %9.3f %10.1f %11.1f %15.1f %9s %7s %14s   (wall: %s; CPU: %s)\n' "$name" "$t" "${rate[$name]}" \
            "$(echo "1000 * $c / $n" | bc -l)" "${cpurate[$name]}" "$mb" "$seeks" "${made_by[$name]}" \
            "${walls[$name]}" "${cpus[$name]}"
    done
    local what peer
    for what in rate cpurate; do
        declare -n rr=$what
        printf '%-8s seekless' "$what"
        for peer in "${order[@]:1}"; do
            printf '   / %s %.2f×' "$peer" "$(echo "${rr[seekless]} / ${rr[$peer]}" | bc -l)"
            summary+="| $kind | $setting | $what | $peer | $(printf %.1f "${rr[seekless]}") | $(printf %.1f "${rr[$peer]}") | $(printf %.2f "$(echo "${rr[seekless]} / ${rr[$peer]}" | bc -l)") |"$'\n'
        done
        echo
        unset -n rr
    done
    echo
}

declare -A made_by=()
summary=""
echo "# bench/media.sh ${kinds[*]} (REPS=$reps HDD=$hdd), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)"
echo "# seekless: $bin ($("$bin" --version 2>&1 | head -1)); git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# $(vips --version); heif-thumbnailer/heif-enc libheif $(heif-enc --help 2>&1 | sed -n 's/.*libheif version: //p'); exiftool $(exiftool -ver); $(ffmpeg -version | head -1 | cut -d' ' -f1-3); ffmpegthumbnailer $(ffmpegthumbnailer -v 2>&1 | grep -o '[0-9.]*' | head -1)"
echo
for kind in "${kinds[@]}"; do
    measure "$kind" "$base/$kind" warm
done

if [ "$hdd" = 1 ]; then
    echo "-- emulated disk: stack up, corpora copied with the model off" >&2
    eval "$("$stack" up --fs ext4 --fs-seed 1 --size 4G --keep-model-off | sed -n 's/^mnt=/mnt=/p')"
    for kind in "${kinds[@]}"; do
        cp -r "$base/$kind" "$mnt/$kind"
    done
    sync
    "$stack" model on
    pause_damon_and_busy "${BUSY:-1}"
    echo "# emulated disk: hddsim 4 GiB, ext4, corpora copied in kind order; DAMON: ${damon_paused[*]:+paused (${damon_paused[*]})}${damon_paused[*]:-none on}; busy loops: ${BUSY:-1}"
    for kind in "${kinds[@]}"; do
        measure "$kind" "$mnt/$kind" hdd
    done
fi

echo "| kind | setting | measure | peer | seekless | peer | seekless / peer |"
echo "|---|---|---|---|---:|---:|---:|"
printf '%s' "$summary"
