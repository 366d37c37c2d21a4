#!/usr/bin/env bash
# `seekless dupes --similar 6` on a catalog of 1,000,000 synthetic rows (issue 23.8's third
# item): wall time and peak memory (/usr/bin/time -v), median of REPS runs.
#
# The catalog is made by `seekless index` (so its schema is seekless's own: one real GIF),
# then filled by Python's sqlite3 with synthetic rows:
#
#   - random 64-bit pHashes (balanced: 32 bits set on average), random BLAKE3s, 12 sizes
#     of image, 60 % with one of 20 cameras and a date in 2000-2026;
#   - 2 % exact copies of an earlier row (its BLAKE3, pHash, sides, EXIF);
#   - 3 % near copies of an earlier row: its pHash with 0-8 bits flipped, half its sides
#     (one in five stretched to another aspect ratio instead), another BLAKE3;
#   - 1 % burst frames: an earlier row's camera, 1 s later, pHash 0-4 bits away;
#   - the first 5,000 near copies and their originals (~10,000 rows) with a stored
#     thumbnail (one real 256x192 JPEG drawn by Pillow, the same for all), so the
#     thumbnail check runs for them; the rest have none and are judged by pHash and aspect
#     ratio alone (as rows whose thumbnail failed are).
#
#   bench/dupes.sh [DIR] [ROWS]     (default /var/tmp/seekless-bench-dupes, 1000000)
#   REPS=N (default 3); SEEKLESS=PATH: that binary instead of building the release one
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp/seekless-bench-dupes}
rows=${2:-1000000}
reps=${REPS:-3}
. bench/lib.sh
bin=${SEEKLESS:-$(seekless_bin)}
py=/usr/bin/python3
"$py" -c 'import PIL, sqlite3' || { echo "needs Python 3 with Pillow (apt-get install python3-pil)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }

db=$dir/catalog-$rows.db
if [ ! -f "$dir/.complete-$rows" ]; then
    rm -rf "$dir"; mkdir -p "$dir/seed"
    printf 'GIF89a\001\000\001\000\000\000\000;' > "$dir/seed/one.gif"
    "$bin" index --db "$db" "$dir/seed"
    echo "== generating $rows synthetic rows in $db"
    "$py" - "$db" "$rows" <<'PY'
import io, random, sqlite3, sys
from datetime import datetime, timedelta
from PIL import Image, ImageDraw
db, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(23)
im = Image.new('RGB', (256, 192), (90, 120, 160))
d = ImageDraw.Draw(im)
for _ in range(12):
    x, y = rng.randrange(256), rng.randrange(192)
    d.ellipse((x, y, x + rng.randrange(10, 120), y + rng.randrange(10, 90)),
              fill=tuple(rng.randrange(256) for _ in range(3)))
buf = io.BytesIO(); im.save(buf, 'JPEG', quality=85); thumb = buf.getvalue()
sizes = [(6000, 4000), (4000, 3000), (5472, 3648), (4032, 3024), (3000, 2000), (1920, 1080),
         (2048, 1536), (3264, 2448), (4608, 3456), (1600, 1200), (6240, 4160), (3840, 2160)]
cameras = [('Canon', f'Canon EOS {m}') for m in ('5D', '6D', 'R5', 'R6', '80D')] + \
          [('NIKON CORPORATION', f'NIKON {m}') for m in ('D750', 'D850', 'Z 6', 'Z 7', 'D7500')] + \
          [('SONY', f'ILCE-{m}') for m in ('7M3', '7RM4', '6400', '7M4', '9')] + \
          [('Apple', f'iPhone {m}') for m in ('12', '13', '14 Pro', '15', 'SE')]
def flip(h, k):
    for b in rng.sample(range(64), k):
        h ^= 1 << b
    return h
con = sqlite3.connect(db)
con.execute('PRAGMA journal_mode = OFF'); con.execute('PRAGMA synchronous = OFF')
scan = con.execute('SELECT max(id) FROM scans').fetchone()[0]
first = con.execute('SELECT coalesce(max(id), 0) + 1 FROM images').fetchone()[0]
base = []      # plain rows: (id, blake3, phash, w, h, make, model, taken)
pairs = []     # (near copy id, its original's id): both get the thumbnail
def rows():
    for i in range(n):
        rid = first + i
        r = rng.random()
        path = f'/photos/{2000 + i % 27}/{i % 12 + 1:02}/IMG_{i:07}.jpg'
        size = rng.randrange(1_000_000, 12_000_000)
        b3 = rng.getrandbits(256).to_bytes(32, 'big').hex()
        if r < 0.02 and base:
            _, b3, ph, w, h, make, model, taken = rng.choice(base)
        elif r < 0.05 and base:
            oid, _, ph, w, h, make, model, taken = rng.choice(base)
            ph = flip(ph, rng.randrange(0, 9))
            w, h = (w // 2, h // 2) if rng.random() < 0.8 else (w // 2, h // 3)
            if len(pairs) < 5000:
                pairs.append((rid, oid))
        elif r < 0.06 and base:
            _, _, ph, w, h, make, model, taken = rng.choice(base)
            ph = flip(ph, rng.randrange(0, 5))
            make, model = (make, model) if make else cameras[0]
            t = datetime.fromisoformat(taken) if taken else datetime(2020, 6, 1, 12)
            taken = (t + timedelta(seconds=1)).isoformat()
        else:
            ph = rng.getrandbits(64)
            w, h = rng.choice(sizes)
            if rng.random() < 0.6:
                make, model = rng.choice(cameras)
                taken = datetime(2000, 1, 1) + timedelta(seconds=rng.randrange(27 * 365 * 86400))
                taken = taken.isoformat()
            else:
                make = model = taken = None
            base.append((rid, b3, ph, w, h, make, model, taken))
        signed = ph - (1 << 64) if ph >> 63 else ph
        yield (rid, path, path.encode(), 2049, 1000 + i, size, 1_700_000_000_000_000_000 + i, 'jpeg',
               w, h, taken, make, model, b3, scan, signed)
con.executemany('INSERT INTO images (id, path, path_bytes, dev, ino, size, mtime_ns, format, width, '
                'height, taken, make, model, blake3, scan, phash) '
                'VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)', rows())
ids = sorted({i for p in pairs for i in p})
con.executemany("INSERT INTO thumbs (image, size, width, height, thumb_source, jpeg) "
                "VALUES (?, 256, 256, 192, 'dct-scaled', ?)", [(i, thumb) for i in ids])
con.commit()
PY
    touch "$dir/.complete-$rows"
fi

count=$(sqlite3 "$db" 'SELECT count(*) FROM images')
thumbs=$(sqlite3 "$db" 'SELECT count(*) FROM thumbs')
echo "== $bin dupes --similar 6 on $count rows ($thumbs with a thumbnail), $(du -m "$db" | cut -f1) MiB catalog, warm cache, $reps runs"
cat "$db" > /dev/null
for _ in $(seq "$reps"); do
    /usr/bin/time -v "$bin" dupes --db "$db" --similar 6 --summary > "$dir/out.txt" 2> "$dir/time.txt"
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time.txt" | awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
    user=$(awk -F': ' '/User time/ {print $2}' "$dir/time.txt")
    sys=$(awk -F': ' '/System time/ {print $2}' "$dir/time.txt")
    echo "$wall $rss $user $sys"
done > "$dir/runs.txt"
grep '^seekless: dupes:' "$dir/time.txt"
wall=$(cut -d' ' -f1 "$dir/runs.txt" | median)
rss=$(cut -d' ' -f2 "$dir/runs.txt" | median)
user=$(cut -d' ' -f3 "$dir/runs.txt" | median)
sys=$(cut -d' ' -f4 "$dir/runs.txt" | median)
# The CPU time is what the machine's load does not change; the wall time is what waited.
printf 'time %.2f s (CPU: user %.2f s + system %.2f s; load average %s), peak RSS %.1f MiB (median of %d)   goal: under 10 s, under 200 MiB\n' \
    "$wall" "$user" "$sys" "$(cut -d' ' -f1 /proc/loadavg)" "$(echo "$rss / 1024" | bc -l)" "$reps"
