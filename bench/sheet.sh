#!/usr/bin/env bash
# The contact sheet (`seekless dupes --html`, issue 33) at 10,000 and 100,000 duplicate
# groups: how big it is on disk, how long it takes to write, and, in headless Chromium,
# how long it takes to open and how much memory the browser then holds; the old
# one-file design (thumbnails inline as data: URIs, commit f616d17) side by side at 10,000.
#
# Each catalog is made by `seekless index --thumbs` (one real picture, so its schema is
# seekless's own), then filled by Python's sqlite3 with synthetic groups, each with its own
# BLAKE3 and its own real thumbnail (a 256x192 JPEG drawn by Pillow from one of 64 noisy
# scenes, a small patch of its own pasted in, so every content's thumbnail is distinct):
# 90 % exact groups (two files, one content), 10 % similar groups (three files: two copies
# of one content and a near copy, its pHash 2 bits away, its thumbnail the same scene with
# another patch). Every row has its thumbnail in the catalog, as `index --thumbs` stores it.
#
# Opening is measured in one fresh headless Chromium per run (own profile, driven over
# --remote-debugging-pipe): from navigation start to the first page of groups shown with
# its thumbnails decoded (the page's `performance.mark("page-ready")`; for the old page,
# its load event: every thumbnail inline had to be in). Memory: the sum of the PSS
# (/proc/PID/smaps_rollup) of every process of that Chromium, once the page is ready.
#
#   bench/sheet.sh [DIR]          (default /var/tmp/seekless-bench-sheet)
#   SIZES="10000 100000" (default); REPS=N (default 3, median); SEEKLESS=PATH: that
#   binary instead of building the release one; OLD=PATH: the old design's binary
#   (default: f616d17 built once from `git archive` into DIR, in DIR/old-target); OLD=none
#   skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp/seekless-bench-sheet}
sizes=${SIZES:-10000 100000}
reps=${REPS:-3}
. bench/lib.sh
py=/usr/bin/python3
"$py" -c 'import PIL, sqlite3' || { echo "needs Python 3 with Pillow (apt-get install python3-pil)" >&2; exit 1; }
command -v chromium > /dev/null || { echo "needs chromium (apt-get install chromium)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
mkdir -p "$dir"

old=${OLD:-}
if [ -z "$old" ]; then
    old=$dir/seekless-f616d17
    if [ ! -x "$old" ]; then
        echo "== building the old design (f616d17)"
        rm -rf "$dir/old-src"; mkdir -p "$dir/old-src"
        git archive f616d17 | tar -x -C "$dir/old-src"
        # Its own target folder: this tree's target/release/seekless stays this tree's.
        (cd "$dir/old-src" && CARGO_TARGET_DIR="$dir/old-target" cargo build --release -q -p seekless)
        cp "$dir/old-target/release/seekless" "$old"
    fi
fi
bin=${SEEKLESS:-$(seekless_bin)}

# The catalog of N groups in $dir/catalog-N.db, made once.
make_catalog() {
    local n=$1 db=$dir/catalog-$1.db
    [ -f "$dir/.complete-$n" ] && return
    rm -rf "$db" "$dir/seed"; mkdir -p "$dir/seed"
    "$py" -c "from PIL import Image; Image.new('RGB', (640, 480), (90, 120, 160)).save('$dir/seed/one.jpg')"
    "$bin" index --thumbs --db "$db" "$dir/seed" > /dev/null
    echo "== generating $n synthetic groups in $db"
    "$py" - "$db" "$n" <<'PY'
import io, random, sqlite3, sys
from PIL import Image, ImageDraw
db, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(33)
def scene(seed):
    r = random.Random(seed)
    im = Image.effect_noise((256, 192), 25).convert("RGB")
    tint = Image.new('RGB', (256, 192), tuple(r.randrange(256) for _ in range(3)))
    im = Image.blend(im, tint, 0.65)
    d = ImageDraw.Draw(im)
    for _ in range(10):
        x, y = r.randrange(256), r.randrange(192)
        d.ellipse((x, y, x + r.randrange(10, 120), y + r.randrange(10, 90)),
                  fill=tuple(r.randrange(256) for _ in range(3)))
    return im
scenes = [scene(s) for s in range(64)]
def thumb(base, salt):
    im = scenes[base].copy()
    d = ImageDraw.Draw(im)
    x, y = salt % 232, (salt // 232) % 168
    d.rectangle((x, y, x + 24, y + 24), fill=((salt * 7) % 256, (salt * 13) % 256, (salt * 29) % 256))
    buf = io.BytesIO(); im.save(buf, 'JPEG', quality=85); return buf.getvalue()
con = sqlite3.connect(db)
con.execute('PRAGMA journal_mode = OFF'); con.execute('PRAGMA synchronous = OFF')
scan = con.execute('SELECT max(id) FROM scans').fetchone()[0]
rid = con.execute('SELECT coalesce(max(id), 0) + 1 FROM images').fetchone()[0]
images, thumbs = [], []
def row(path, b3, ph, size, jpeg):
    global rid
    signed = ph - (1 << 64) if ph >> 63 else ph
    images.append((rid, path, path.encode(), 2049, rid, size, 1_700_000_000_000_000_000 + rid,
                   'jpeg', 4000, 3000, b3, scan, signed, 'image'))
    thumbs.append((rid, jpeg))
    rid += 1
def flush():
    con.executemany('INSERT INTO images (id, path, path_bytes, dev, ino, size, mtime_ns, format, '
                    'width, height, blake3, scan, phash, kind) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)', images)
    con.executemany("INSERT INTO thumbs (image, size, width, height, thumb_source, jpeg) "
                    "VALUES (?, 256, 256, 192, 'dct-scaled', ?)", thumbs)
    images.clear(); thumbs.clear()
for g in range(n):
    base = rng.randrange(64)
    b3 = rng.getrandbits(256).to_bytes(32, 'big').hex()
    ph = rng.getrandbits(64)
    size = rng.randrange(2_000_000, 8_000_000)
    jpeg = thumb(base, 2 * g)
    d = f'/photos/{2000 + g % 27}/{g % 12 + 1:02}'
    row(f'{d}/IMG_{g:07}.jpg', b3, ph, size, jpeg)
    row(f'/backup{d}/IMG_{g:07}.jpg', b3, ph, size, jpeg)
    if g % 10 == 9:
        near = rng.getrandbits(256).to_bytes(32, 'big').hex()
        row(f'{d}/IMG_{g:07}-edit.jpg', near, ph ^ 0b101, size // 2, thumb(base, 2 * g + 1))
    if len(images) >= 20000:
        flush()
flush()
con.commit()
PY
    touch "$dir/.complete-$n"
}

# Opens file://$1 in a fresh headless Chromium, REPS times; prints "open_s pss_mib
# pss_after_gc_mib groups"
# (medians; groups: what the page says it has, "-" for the old page).
measure() {
    "$py" - "$1" "$dir/profile" "$reps" <<'PY'
import fcntl, json, os, shutil, subprocess, sys, time
page, profile, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
def descendants(root):
    kids = {}
    for p in os.listdir('/proc'):
        if p.isdigit():
            try:
                with open(f'/proc/{p}/stat') as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(p))
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop(); out.append(p); todo.extend(kids.get(p, []))
    return out
def pss_kib(pids):
    total = 0
    for p in pids:
        try:
            with open(f'/proc/{p}/smaps_rollup') as f:
                for line in f:
                    if line.startswith('Pss:'):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total
def run():
    shutil.rmtree(profile, ignore_errors=True)
    to_r, to_w = os.pipe(); from_r, from_w = os.pipe()
    # Above 10 first, so neither dup2 below overwrites the other's source.
    to_r = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10)
    from_w = fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
    def fds():
        os.dup2(to_r, 3); os.dup2(from_w, 4)
    chrome = subprocess.Popen(
        ['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
         '--no-default-browser-check', '--disable-extensions', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--remote-debugging-pipe',
         '--window-size=1280,1000', f'--user-data-dir={profile}', 'about:blank'],
        preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(to_r); os.close(from_w)
    out = os.fdopen(to_w, 'wb', buffering=0); inp = os.fdopen(from_r, 'rb', buffering=0)
    buf = b''; seq = [0]
    def call(method, params={}, session=None):
        nonlocal buf
        seq[0] += 1
        msg = {'id': seq[0], 'method': method, 'params': params}
        if session: msg['sessionId'] = session
        out.write(json.dumps(msg).encode() + b'\0')
        while True:
            while b'\0' not in buf:
                chunk = inp.read(1 << 16)
                if not chunk: raise SystemExit(f'chromium went away during {method}')
                buf += chunk
            m, buf = buf.split(b'\0', 1)
            m = json.loads(m)
            if m.get('id') == seq[0]:
                if 'error' in m: raise SystemExit(f'{method}: {m["error"]}')
                return m['result']
    try:
        target = call('Target.createTarget', {'url': 'about:blank'})['targetId']
        s = call('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
        def ev(expr):
            r = call('Runtime.evaluate', {'expression': expr, 'returnByValue': True}, s)
            return r['result'].get('value')
        call('Page.navigate', {'url': 'file://' + page}, s)
        ready = ("(() => { const m = performance.getEntriesByName('page-ready'); if (m.length) return m[0].startTime;"
                 " const n = performance.getEntriesByType('navigation')[0];"
                 " return document.body && document.body.dataset.thumbsLoaded !== undefined"
                 " && !document.getElementById('sheet') && n && n.loadEventEnd > 0 ? n.loadEventEnd : null; })()")
        deadline = time.time() + 300
        while (t := ev(ready)) is None:
            if time.time() > deadline: raise SystemExit('the page did not get ready in 300 s')
            time.sleep(0.02)
        pss = pss_kib(descendants(chrome.pid))
        # And once the page's garbage (the island's text, its removed element) is collected.
        call("HeapProfiler.collectGarbage", {}, s)
        pss_gc = pss_kib(descendants(chrome.pid))
        groups = ev("(() => { const n = document.querySelector('nav span:not(.decided)'); "
                    "return n ? n.textContent.split(' of ').pop() : '-'; })()")
        call('Browser.close')
    finally:
        try:
            chrome.wait(timeout=20)
        except subprocess.TimeoutExpired:
            chrome.kill(); chrome.wait()
    return t / 1000, pss / 1024, pss_gc / 1024, groups
runs = sorted(run() for _ in range(reps))
t = sorted(r[0] for r in runs)[len(runs) // 2]
m = sorted(r[1] for r in runs)[len(runs) // 2]
g = sorted(r[2] for r in runs)[len(runs) // 2]
print(f"{t:.2f} {m:.0f} {g:.0f} {runs[0][3]}")
PY
}

# Chromium alone: a page with nothing but the mark.
echo '<!DOCTYPE html><title>empty</title><script>performance.mark("page-ready")</script>' > "$dir/empty.html"
read -r open pss pss_gc groups < <(measure "$dir/empty.html")
rows=("$(printf '%-4s %8s %8s %9s %10s %9s %8s %7.2f %9d %9d' none - - - - - - "$open" "$pss" "$pss_gc")")
for n in $sizes; do
    make_catalog "$n"
    db=$dir/catalog-$n.db
    contenders=("new $bin")
    [ "$old" != none ] && [ "$n" -le 10000 ] && contenders+=("old $old")
    for c in "${contenders[@]}"; do
        name=${c%% *} exe=${c#* }
        out=$dir/$name-$n
        rm -rf "$out"; mkdir -p "$out"
        /usr/bin/time -f '%e' -o "$out/time.txt" "$exe" dupes --db "$db" --html "$out/sheet.html" > /dev/null
        write=$(cat "$out/time.txt")
        html_mb=$(echo "$(stat -c %s "$out/sheet.html") / 1000000" | bc -l)
        if [ -d "$out/sheet.html.thumbs" ]; then
            thumbs_mb=$(echo "$(du -sb "$out/sheet.html.thumbs" | cut -f1) / 1000000" | bc -l)
            files=$(find "$out/sheet.html.thumbs" -type f | wc -l)
        else
            thumbs_mb=0 files=0
        fi
        read -r open pss pss_gc groups < <(measure "$out/sheet.html")
        rows+=("$(printf '%-4s %8d %8s %9.1f %10.1f %9d %8.2f %7.2f %9d %9d' "$name" "$n" "$groups" \
            "$html_mb" "$thumbs_mb" "$files" "$write" "$open" "$pss" "$pss_gc")")
        echo "${rows[-1]}"
    done
done
echo
echo "== contact sheets, $(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg), $(chromium --version 2>/dev/null), median of $reps opens"
printf '%-4s %8s %8s %9s %10s %9s %8s %7s %9s %9s\n' design groups shown 'HTML MB' 'thumbs MB' files 'write s' 'open s' 'PSS MiB' 'after GC'
printf '%s\n' "${rows[@]}"
echo "goal: 100,000 groups open in under 2 s and under 500 MB"
