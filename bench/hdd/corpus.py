#!/usr/bin/env python3
"""Deterministic camera-like corpus for the emulated-HDD benchmark, and plan helpers.

  corpus.py gen --layout shuffled|camera|aged|jpeg --files N [--seed S] DIR
  corpus.py extents < order.jsonl          # fraction of files with >= 3 extents
  corpus.py stream STATS.json < order.jsonl  # streaming limit (s) from the zone model
  corpus.py index-targets --runs runs.jsonl --md OUT.md --json OUT.json
                                           # jpeg layout: seekless index rows and targets
  corpus.py tar-targets --runs runs.jsonl --stream s.json --extents e.json --archives a.jsonl
                        --cpus N --md OUT.md --json OUT.json
                                           # --set tar: seekless tar rows and targets
  corpus.py copy-check SRC NAME=DIR...     # --set copy: each DIR against SRC, a JSON line each
  corpus.py copy-targets --runs runs.jsonl --stream s.json --extents e.json --copies c.jsonl
                         --cpus N --md OUT.md --json OUT.json
                                           # --set copy: seekless copy rows and targets

Sizes are lognormal (median ~120 KiB, mean ~149 KiB, clamped to 8 KiB..4 MiB), names are
DCIM/100CANON/IMG_0001.JPG ... in folders of 500 (101CANON, 102CANON, ...).

Layouts (all written with the disk model off; the caller syncs afterwards):
  shuffled  files created in a random permutation of their names
  camera    files created in name order, folder by folder
  aged      like a card/disk that has lived: filler files are interleaved and later
            deleted (free-space holes), and ~30 % of the files are grown by interleaved
            appends (open, append a chunk, fsync, close, next file) so that their extents
            alternate with each other's; ext4 discards an inode's preallocation on close,
            so each append lands after the other files' chunks.
  jpeg      real JPEGs with EXIF (for `seekless index`), same names, sizes and creation
            order as `shuffled`; see gen_jpeg. Needs Python Pillow (python3-pil).
"""
import json
import math
import os
import random
import sys

KIB = 1024
FOLDER = 500
MU, SIGMA = math.log(123 * KIB), 0.65  # mean = exp(mu + s^2/2) ~ 149 KiB
POOL = None


def sizes(rng, n):
    out = []
    for _ in range(n):
        s = int(rng.lognormvariate(MU, SIGMA))
        out.append(max(8 * KIB, min(4096 * KIB, s)))
    return out


def names(n):
    out = []
    for i in range(n):
        folder = 100 + i // FOLDER
        out.append(f"DCIM/{folder}CANON/IMG_{i + 1:04d}.JPG")
    return out


def content(rng, idx, size):
    """JPEG-ish header + a slice of a seeded random pool (distinct per file)."""
    head = b"\xff\xd8\xff\xe1" + f"seekless-corpus {idx} {size}\n".encode()
    out = bytearray(head)
    while len(out) < size:
        off = rng.randrange(0, len(POOL) - 65536)
        out += POOL[off:off + min(65536, size - len(out))]
    return bytes(out[:size])


def write_file(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# ---------------------------------------------------------------------------------------
# jpeg layout: real JPEGs with EXIF, for `seekless index` (issue 13, item 7).
#
# Same names, target sizes and creation order as `shuffled` for the same seed. The pixels
# are crops of one seeded canvas (smooth colour blobs plus noise, ~3.5 bits per pixel at
# quality 90, like a camera's fine JPEG); each file's crop size is chosen from the target
# size and a bits-per-pixel figure calibrated once, then corrected (at most a few encodes)
# until the file is within JPEG_TOL of its target. EXIF (Canon make/model/lens, date
# taken with sub-seconds and offset for some, exposure, f-number, ISO, focal length,
# orientation, GPS for ~40 %) is written by Pillow's Exif support, so no exiftool process
# runs per file. Everything a file holds derives from (seed, its index), so the corpus is
# the same for a seed on this machine (same Pillow/libjpeg).

JPEG_Q = 90
JPEG_TOL = 0.015
CANVAS_W, CANVAS_H = 4200, 2800      # 11.8 Mpx: a 4 MiB file at ~3.5 bpp fits in one crop
MODELS = [("Canon EOS 5D Mark IV", "EF24-105mm f/4L IS USM", 24, 105),
          ("Canon EOS R6", "RF24-105mm F4 L IS USM", 24, 105),
          ("Canon EOS 80D", "EF-S18-135mm f/3.5-5.6 IS USM", 18, 135),
          ("Canon EOS 6D", "EF50mm f/1.8 STM", 50, 50)]
PLACES = [(48.8566, 2.3522, 35.0),     # Paris: N, E
          (40.7128, -74.0060, 10.0),   # New York: N, W
          (-33.8688, 151.2093, 58.0),  # Sydney: S, E
          (-22.9068, -43.1729, 5.0),   # Rio: S, W
          (31.5590, 35.4732, -430.0)]  # Dead Sea shore: below sea level


def need_pil():
    """Import Pillow; if this Python lacks it (a pyenv shim ahead of the system Python, say),
    run again with /usr/bin/python3, where Debian's python3-pil lives."""
    try:
        import PIL.Image  # noqa: F401
        return
    except ImportError:
        pass
    alt = "/usr/bin/python3"
    if (os.environ.get("SEEKLESS_CORPUS_REEXEC") != "1" and os.access(alt, os.X_OK)
            and os.path.realpath(sys.executable) != os.path.realpath(alt)):
        os.environ["SEEKLESS_CORPUS_REEXEC"] = "1"
        os.execv(alt, [alt, os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit("corpus.py: the jpeg layout needs Python Pillow (apt-get install python3-pil)")


def jpeg_canvas(seed):
    from PIL import Image
    r = random.Random(seed ^ 0xC0FFEE)
    W, H = CANVAS_W, CANVAS_H
    chans = []
    for _ in range(3):
        # Low-frequency colour blobs (a 48x32 random field, upscaled) plus per-pixel noise.
        blobs = Image.frombytes("L", (48, 32), r.randbytes(48 * 32)).resize((W, H), Image.Resampling.BICUBIC)
        noise = Image.frombytes("L", (W, H), r.randbytes(W * H))
        chans.append(Image.blend(blobs, noise, 0.20))
    return Image.merge("RGB", chans)


def jpeg_encode(img, exif):
    import io
    b = io.BytesIO()
    img.save(b, "JPEG", quality=JPEG_Q, exif=exif)
    return b.getvalue()


def jpeg_exif(r, i, taken, w, h):
    from PIL import Image, TiffImagePlugin
    R = TiffImagePlugin.IFDRational
    model, lens, fmin, fmax = MODELS[(i // FOLDER) % len(MODELS)]
    orient = r.choices([1, 6, 8, 3], [80, 12, 7, 1])[0]
    dt = taken.strftime("%Y:%m:%d %H:%M:%S")
    ex = Image.Exif()
    ex[0x010F] = "Canon"                  # Make
    ex[0x0110] = model                    # Model
    ex[0x0112] = orient                   # Orientation
    ex[0x011A] = R(72, 1)                 # XResolution
    ex[0x011B] = R(72, 1)                 # YResolution
    ex[0x0128] = 2                        # ResolutionUnit: inches
    ex[0x0132] = dt                       # DateTime
    ex[0x0213] = 2                        # YCbCrPositioning: co-sited
    sub = {
        0x9000: b"0231",                                                 # ExifVersion
        0xA000: b"0100",                                                 # FlashpixVersion
        0xA001: 1,                                                       # ColorSpace: sRGB
        0x829A: R(1, r.choice([15, 30, 60, 125, 250, 500, 1000, 2000])),  # ExposureTime
        0x829D: R(r.choice([18, 28, 40, 56, 80, 110]), 10),              # FNumber
        0x8827: r.choice([100, 200, 400, 800, 1600, 3200, 6400]),       # ISO
        0x9003: dt,                                                      # DateTimeOriginal
        0x9004: dt,                                                      # CreateDate
        0x920A: R(r.randint(fmin, fmax), 1),                             # FocalLength
        0xA002: w,                                                       # ExifImageWidth
        0xA003: h,                                                       # ExifImageHeight
        0xA434: lens,                                                    # LensModel
    }
    if r.random() < 0.7:
        sub[0x9291] = f"{r.randrange(100):02d}"                          # SubSecTimeOriginal
    if r.random() < 0.5:
        sub[0x9011] = r.choice(["+02:00", "+01:00", "-05:00", "+10:00"])  # OffsetTimeOriginal
    ex[0x8769] = sub
    if r.random() < 0.4:
        lat, lon, alt = r.choice(PLACES)
        lat += r.uniform(-0.05, 0.05)
        lon += r.uniform(-0.05, 0.05)
        alt += r.uniform(0, 20)

        def dms(x):
            x = abs(x)
            d = int(x)
            m = int((x - d) * 60)
            return (R(d, 1), R(m, 1), R(round(((x - d) * 60 - m) * 60 * 10000), 10000))
        ex[0x8825] = {
            1: "N" if lat >= 0 else "S", 2: dms(lat),      # GPSLatitudeRef, GPSLatitude
            3: "E" if lon >= 0 else "W", 4: dms(lon),      # GPSLongitudeRef, GPSLongitude
            5: 0 if alt >= 0 else 1,                       # GPSAltitudeRef (1: below sea level)
            6: R(round(abs(alt) * 100), 100),              # GPSAltitude
        }
    return ex.tobytes()


def jpeg_file(canvas, bpp, seed, i, target, taken):
    """A JPEG of about `target` bytes (within JPEG_TOL, or the closest of a few encodes)."""
    from PIL import Image
    r = random.Random(seed * 1_000_003 + i)
    fx, fy = r.random(), r.random()
    exif_r = r.getstate()
    px = max(256.0, (target - 1500) * 8 / bpp)
    best = None
    encodes = 0
    for _ in range(5):
        w = max(16, round(math.sqrt(px * 1.5)))
        h = max(16, round(w / 1.5))
        if w <= canvas.width and h <= canvas.height:
            x0 = int(fx * (canvas.width - w))
            y0 = int(fy * (canvas.height - h))
            img = canvas.crop((x0, y0, x0 + w, y0 + h))
        else:
            img = canvas.resize((w, h), Image.Resampling.NEAREST)
        r.setstate(exif_r)
        data = jpeg_encode(img, jpeg_exif(r, i, taken, w, h))
        encodes += 1
        if best is None or abs(len(data) - target) < abs(len(best) - target):
            best = data
        if abs(len(data) - target) <= JPEG_TOL * target:
            break
        # Pixels scale the entropy-coded part; headers and EXIF (~1.5 KB) stay.
        px *= max(0.25, min(4.0, (target - 1500) / max(1.0, len(data) - 1500)))
    return best, encodes


def gen_jpeg(n, seed, root):
    import datetime
    import time
    need_pil()
    t_start = time.monotonic()
    rng = random.Random(seed)
    nm = names(n)
    sz = sizes(rng, n)            # the same targets as `shuffled` for this seed
    order = list(range(n))
    rng.shuffle(order)            # the same creation order as `shuffled`
    canvas = jpeg_canvas(seed)
    # bits per pixel of this content at JPEG_Q, from three crops.
    cal = []
    for k in range(3):
        c = canvas.crop((k * 900, k * 500, k * 900 + 900, k * 500 + 600))
        cal.append(len(jpeg_encode(c, b"")) * 8 / (900 * 600))
    bpp = sorted(cal)[1]
    # Dates taken: in name order, seconds to hours apart, from a seeded start.
    tr = random.Random(seed + 0x7A4E)
    t = datetime.datetime(2019, 5, 1, 9, 0, 0) + datetime.timedelta(days=tr.randrange(365))
    taken = []
    for _ in range(n):
        taken.append(t)
        t += datetime.timedelta(seconds=tr.choice([2, 5, 20, 60, 300, 3600, 86400]) + tr.randrange(30))
    for d in sorted({os.path.dirname(x) for x in nm}):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    real = [0] * n
    encodes = 0
    off = 0
    for i in order:
        data, e = jpeg_file(canvas, bpp, seed, i, sz[i], taken[i])
        encodes += e
        off += abs(len(data) - sz[i]) > JPEG_TOL * sz[i]
        real[i] = len(data)
        write_file(os.path.join(root, nm[i]), data)
    total = sum(real)
    print(f"corpus: jpeg seed={seed} files={n} bytes={total} mean={total / n / KIB:.1f}KiB "
          f"min={min(real) // KIB}KiB max={max(real) // KIB}KiB "
          f"(target mean {sum(sz) / n / KIB:.1f}KiB; q{JPEG_Q}, {bpp:.2f} bpp, {encodes / n:.2f} encodes/file, "
          f"{off} off target by > {JPEG_TOL * 100:.1f} %; {time.monotonic() - t_start:.1f} s)", file=sys.stderr)


def gen(layout, n, seed, root):
    global POOL
    if layout == "jpeg":
        return gen_jpeg(n, seed, root)
    rng = random.Random(seed)
    POOL = random.Random(seed ^ 0x5EED).randbytes(8 << 20)
    nm = names(n)
    sz = sizes(rng, n)
    for d in sorted({os.path.dirname(x) for x in nm}):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    if layout == "camera":
        for i in range(n):
            write_file(os.path.join(root, nm[i]), content(rng, i, sz[i]))
    elif layout == "shuffled":
        order = list(range(n))
        rng.shuffle(order)
        for i in order:
            write_file(os.path.join(root, nm[i]), content(rng, i, sz[i]))
    elif layout == "aged":
        order = list(range(n))
        rng.shuffle(order)
        frag = set(rng.sample(order, int(0.30 * n)))
        junkdir = os.path.join(root, ".junk")
        os.makedirs(junkdir, exist_ok=True)
        junk = []
        plain = [i for i in order if i not in frag]
        # Phase 1: half of the plain files, interleaved with filler files.
        half = len(plain) // 2
        for k, i in enumerate(plain[:half]):
            write_file(os.path.join(root, nm[i]), content(rng, i, sz[i]))
            if k % 2 == 0:
                j = os.path.join(junkdir, f"junk{k}")
                write_file(j, rng.randbytes(rng.choice([16, 32, 64, 96]) * KIB))
                junk.append(j)
        os.sync()
        # Delete most filler: holes between files.
        for j in junk:
            if rng.random() < 0.8:
                os.unlink(j)
        # Phase 2: fragmented files grown by interleaved appends, in groups of 6.
        fl = [i for i in order if i in frag]
        for g in range(0, len(fl), 6):
            grp = fl[g:g + 6]
            data = {i: content(rng, i, sz[i]) for i in grp}
            chunks = {i: max(3, min(6, sz[i] // (24 * KIB))) for i in grp}
            pos = {i: 0 for i in grp}
            rnd = 0
            while any(pos[i] < sz[i] for i in grp):
                for i in grp:
                    if pos[i] >= sz[i]:
                        continue
                    step = -(-sz[i] // chunks[i])
                    piece = data[i][pos[i]:pos[i] + step]
                    with open(os.path.join(root, nm[i]), "ab") as f:
                        f.write(piece)
                        f.flush()
                        os.fsync(f.fileno())
                    pos[i] += len(piece)
                rnd += 1
        # Phase 3: the rest of the plain files fill the holes and beyond.
        for i in plain[half:]:
            write_file(os.path.join(root, nm[i]), content(rng, i, sz[i]))
        # The surviving filler stays (a disk that has lived has other files), but outside
        # the measured tree.
        os.rename(junkdir, os.path.join(os.path.dirname(os.path.abspath(root)), ".junk-" + os.path.basename(root)))
    else:
        sys.exit(f"unknown layout {layout}")
    total = sum(sz)
    print(f"corpus: {layout} seed={seed} files={n} bytes={total} mean={total / n / KIB:.1f}KiB "
          f"min={min(sz) // KIB}KiB max={max(sz) // KIB}KiB", file=sys.stderr)


def read_plan(f):
    return [json.loads(line) for line in f if line.strip()]


def extents(plan):
    n = len(plan)
    e3 = sum(1 for p in plan if (p.get("extents") or 0) >= 3)
    e2 = sum(1 for p in plan if (p.get("extents") or 0) >= 2)
    print(json.dumps({"files": n, "extents_ge2": e2, "extents_ge3": e3,
                      "fraction_ge3": e3 / n if n else 0.0}))


def stream(stats_path, plan):
    with open(stats_path) as f:
        st = json.load(f)
    p = st["params"].get("disk", st["params"])
    size = p.get("size") or p.get("size_bytes") or p.get("disk_size")
    outer = p.get("outer_rate") or p.get("outer_bps") or p.get("outer_mbps")
    inner = p.get("inner_rate") or p.get("inner_bps") or p.get("inner_mbps")
    if size is None or outer is None or inner is None:
        sys.exit(f"stream: cannot find size/outer/inner in params: {sorted(p)}")
    t = 0.0
    total = 0
    for e in plan:
        b = -(-int(e["size"]) // 4096) * 4096
        off = e.get("offset")
        x = (off / size) if off is not None else 0.5
        rate = outer + (inner - outer) * x
        t += b / rate
        total += int(e["size"])
    print(json.dumps({"bytes": total, "stream_s": t, "outer": outer, "inner": inner, "disk_size": size}))


# ---------------------------------------------------------------------------------------
# jpeg layout: the table of `seekless index` and its peers, and the targets,
# appended to the table plot.py wrote (plot.py's own table shows lookup and sort for the
# sl-* rows only).

IX_LABELS = {
    "ix-physical": "seekless index (physical order)",
    "ix-given": "seekless index, directory order, no prefetch",
    "ix-rerun": "seekless index, re-run, corpus unchanged",
    "sl-physical": "seekless hash --algo blake3 (physical)",
    "exiftool": "exiftool -fast -json -r",
    "dir": "directory order (find \\| xargs cat)",
    "lookup": "lookup alone (seekless order)",
}


def fmt_or_dash(x, fmt="{:.2f}"):
    """A number for a table, or a dash when there is none."""
    return "–" if x is None else fmt.format(x)


def median_key(reps, key):
    """The median of `key` over the reps that have it, or None."""
    import statistics
    xs = [r.get(key) for r in reps if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def job_rows(by, labels, nbytes, baseline, vs_key, rate=lambda name: True):
    """One row per contender of a job's set (tar, copy): the median total, rate, lookup,
    the median rep's CPU seconds and cores busy (GNU time's), peak RSS over the reps and
    the ratio to `baseline`'s total (under `vs_key`). Yields (row, median rep) for the
    job to add its own columns."""
    import statistics
    tot = {k: statistics.median([r["wall_s"] for r in v]) for k, v in by.items()}
    base = tot.get(baseline)
    for name in [k for k in labels if k in by] + [k for k in by if k not in labels]:
        reps = by[name]
        mr = sorted(reps, key=lambda r: r["wall_s"])[len(reps) // 2]
        tm = mr.get("time") or {}
        cpu = (tm["user_s"] + tm["sys_s"]) if "user_s" in tm else None
        rss = [r["time"]["max_rss_kib"] for r in reps if (r.get("time") or {}).get("max_rss_kib") is not None]
        row = {"contender": name, "label": labels.get(name, name), "total_s": tot[name],
               "reps_s": [r["wall_s"] for r in reps],
               "mb_s": nbytes / tot[name] / 1e6 if rate(name) else None,
               "lookup_s": median_key(reps, "walk_locate_s"), "sort_s": median_key(reps, "sort_s"),
               "user_s": tm.get("user_s"), "sys_s": tm.get("sys_s"),
               # CPU seconds of the median rep over its own wall (GNU time's): cores busy
               "cores_busy": cpu / tm["wall_s"] if cpu is not None and tm.get("wall_s") else None,
               "max_rss_mib": max(rss) / 1024 if rss else None,
               vs_key: tot[name] / base if base else None}
        yield row, mr


def index_targets(a):
    import statistics
    runs = [json.loads(line) for line in open(a["runs"]) if line.strip()]
    by = {}
    for r in runs:
        by.setdefault(r["contender"], []).append(r)

    def med(name, key):
        xs = [r.get(key) for r in by.get(name, []) if r.get(key) is not None]
        return statistics.median(xs) if xs else None

    def f(x, fmt="{:.2f}"):
        return "–" if x is None else fmt.format(x)

    tot = {k: med(k, "wall_s") for k in by}
    ix = tot.get("ix-physical")
    rows = []
    for name in [k for k in IX_LABELS if k in by] + [k for k in by if k not in IX_LABELS]:
        reps = by[name]
        mr = sorted(reps, key=lambda r: r["wall_s"])[len(reps) // 2]
        wl, so = med(name, "walk_locate_s"), med(name, "sort_s")
        counts = mr.get("index") or {}
        rows.append({"contender": name, "label": IX_LABELS.get(name, name), "total_s": tot[name],
                     "lookup_s": wl, "sort_s": so,
                     "read_s": tot[name] - (wl or 0) - (so or 0) if wl is not None else None,
                     "vs_index": tot[name] / ix if ix else None,
                     "read_files": counts.get("read_files"), "unchanged": counts.get("unchanged"),
                     "failed": counts.get("failed"), "seeks": (mr.get("stats") or {}).get("seeks"),
                     "reps_s": [r["wall_s"] for r in reps]})
    targets = []

    def t(name, value, goal, ok):
        if value is not None:
            targets.append({"target": name, "value": value, "goal": goal, "met": bool(ok)})
    g, h = tot.get("ix-given"), tot.get("sl-physical")
    if ix and g:
        t("seekless index vs the same job in directory order (--locate given --no-prefetch)", g / ix, ">= 6x", g / ix >= 6)
    if ix and h:
        t("seekless index / seekless hash --algo blake3", ix / h, "<= 1.15", ix / h <= 1.15)
    wl, so = med("ix-physical", "walk_locate_s"), med("ix-physical", "sort_s")
    if ix and wl is not None:
        v = (wl + (so or 0)) / ix * 100
        t("(lookup + sort) / seekless index total (%)", v, "<= 5 %", v <= 5)
    rr, lk = tot.get("ix-rerun"), tot.get("lookup")
    if rr and lk:
        t("re-run on the unchanged corpus / cold lookup alone", rr / lk, "<= 1.5", rr / lk <= 1.5)

    L = ["", "#### seekless index (issue 13): the catalog job and its peers", "",
         "Lookup and sort: each run's own walk + locate and sort (`--summary`); read = total − "
         "lookup − sort; catalogs on tmpfs, fresh for ix-physical and ix-given, ix-physical's for "
         "ix-rerun; lookup alone = cold `seekless order --summary` (wall). Files read and unchanged: "
         "from `seekless index --summary` (median rep).", "",
         "| contender | lookup s | sort s | read s | total s | this / index | files read | unchanged | failed | seeks |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        L.append(f"| {r['label']} | {f(r['lookup_s'], '{:.3f}')} | {f(r['sort_s'], '{:.3f}')} | "
                 f"{f(r['read_s'])} | {f(r['total_s'])} | {f(r['vs_index'])} | {f(r['read_files'], '{}')} | "
                 f"{f(r['unchanged'], '{}')} | {f(r['failed'], '{}')} | {f(r['seeks'], '{}')} |")
    L += ["", "| target | value | goal | met |", "| --- | ---: | --- | --- |"]
    for x in targets:
        L.append(f"| {x['target']} | {x['value']:.2f} | {x['goal']} | {'yes' if x['met'] else '**no**'} |")
    ex = tot.get("exiftool")
    if ex and ix:
        L += ["", f"Peer: `exiftool -fast -json -r` {ex:.2f} s = {ex / ix:.2f}× seekless index."]
    with open(a["md"], "a") as fo:
        fo.write("\n".join(L) + "\n")
    doc = json.load(open(a["json"]))
    doc["index"] = {"rows": rows, "targets": targets}
    doc["targets"] = doc.get("targets", []) + targets
    json.dump(doc, open(a["json"], "w"), indent=1)


# ---------------------------------------------------------------------------------------
# --set tar (issue 14): `seekless tar` and its peers, with each run's CPU time and peak RSS
# (GNU time, the "time" field of runs.jsonl) and the untimed archive check (archives.jsonl:
# archive bytes and regular-file members as GNU tar lists them), appended to plot.py's table.

TAR_LABELS = {
    "sl-tar": "seekless tar",
    "sl-tar-zstd": "seekless tar --zstd",
    "sl-tar-gzip": "seekless tar --gzip",
    "sl-physical": "seekless hash --algo blake3 (physical)",
    "tar-inode": "tar --sort=inode -cf -",
    "tar": "GNU tar -cf -",
    "dir": "directory order (find \\| xargs cat)",
}


def tar_targets(a):
    import statistics
    runs = [json.loads(line) for line in open(a["runs"]) if line.strip()]
    nbytes = json.load(open(a["stream"]))["bytes"]
    nfiles = json.load(open(a["extents"]))["files"] if a.get("extents") else None
    cpus = int(a.get("cpus") or os.cpu_count() or 1)
    arch = {}
    if a.get("archives") and os.path.exists(a["archives"]):
        for line in open(a["archives"]):
            if line.strip():
                x = json.loads(line)
                arch[x["contender"]] = x
    by = {}
    for r in runs:
        if r["contender"] != "lookup":
            by.setdefault(r["contender"], []).append(r)

    f = fmt_or_dash
    rows = []
    for row, mr in job_rows(by, TAR_LABELS, nbytes, "sl-tar", "vs_sl_tar"):
        ar = arch.get(row["contender"]) or {}
        row.update({"archive_bytes": ar.get("archive_bytes"), "members": ar.get("members"),
                    "seeks": (mr.get("stats") or {}).get("seeks")})
        rows.append(row)
    tot = {r["contender"]: r["total_s"] for r in rows}
    sl = tot.get("sl-tar")
    get = {r["contender"]: r for r in rows}
    targets = []

    def t(name, value, goal, ok):
        if value is not None:
            targets.append({"target": name, "value": value, "goal": goal, "met": None if ok is None else bool(ok)})
    if sl:
        for peer, goal, label in (("tar", 6, "GNU tar -cf"), ("tar-inode", 3, "tar --sort=inode")):
            if peer in tot:
                v = tot[peer] / sl
                t(f"seekless tar vs {label} ({peer} / sl-tar)", v, f">= {goal}x", v >= goal)
        if "sl-physical" in tot:
            v = sl / tot["sl-physical"]
            t("seekless tar / seekless hash --algo blake3", v, "<= 1.15", v <= 1.15)
        t("seekless tar peak RSS (MiB, max of reps)", get["sl-tar"]["max_rss_mib"], "report", None)
    z = get.get("sl-tar-zstd")
    limit = None
    if z:
        t("seekless tar --zstd rate (MB/s of corpus)", z["mb_s"], "report", None)
        if sl:
            t("seekless tar --zstd / seekless tar (wall)", z["total_s"] / sl, "report", None)
        t(f"seekless tar --zstd CPU (user+sys) / wall (cores busy of {cpus})", z["cores_busy"], "report", None)
        t("seekless tar --zstd peak RSS (MiB, max of reps)", z["max_rss_mib"], "report", None)
        zb, pb = z.get("archive_bytes"), (get.get("sl-tar") or {}).get("archive_bytes")
        if zb and pb:
            t("zstd archive / plain archive (bytes)", zb / pb, "report", None)
        # What limits --zstd: if it takes as long as the plain archive, the disk; if it is
        # slower and its CPU seconds fill a core (or all of them), the CPU.
        r, busy = (z["total_s"] / sl if sl else None), z["cores_busy"]
        if r is not None and r <= 1.10:
            limit = f"disk: its wall is within {(r - 1) * 100:+.0f} % of plain seekless tar's"
        elif r is not None and busy is not None and busy >= 0.85:
            limit = (f"CPU: {r:.2f}x plain seekless tar's wall, {busy:.2f} of {cpus} cores busy"
                     + (" (all of them)" if busy >= 0.85 * cpus else " (not all of them)"))
        elif r is not None:
            limit = f"unclear: {r:.2f}x plain seekless tar's wall, but only {f(busy)} of {cpus} cores busy"
    gz = get.get("sl-tar-gzip")
    if gz:
        t("seekless tar --gzip rate (MB/s of corpus)", gz["mb_s"], "report", None)
        t(f"seekless tar --gzip CPU (user+sys) / wall (cores busy of {cpus})", gz["cores_busy"], "report", None)
    checks = []
    for name, ar in arch.items():
        ok = nfiles is None or ar.get("members") == nfiles
        if name in ("tar", "sl-tar"):
            ok = ok and (ar.get("archive_bytes") or 0) >= nbytes
        checks.append({"contender": name, "archive_bytes": ar.get("archive_bytes"),
                       "members": ar.get("members"), "ok": ok})
    # The timed runs' own counts (`seekless tar --summary`): every file written, none
    # changed while read or failed.
    for name, reps in by.items():
        for r in reps:
            c = r.get("tar")
            if c is None:
                continue
            ok = c.get("failed") == 0 and c.get("changed") == 0 and (nfiles is None or c.get("files") == nfiles)
            if not ok:
                checks.append({"contender": f"{name} rep {r['rep']} (--summary)", "archive_bytes": None,
                               "members": c.get("members"), "files": c.get("files"), "changed": c.get("changed"),
                               "failed": c.get("failed"), "ok": False})

    L = ["", "#### seekless tar (issue 14): the archive job and its peers", "",
         "Every archive is written to a pipe (`-f - | cat > /dev/null`). Lookup: each seekless run's "
         "own walk + locate (`--summary`). User, sys and cores busy (= (user + sys) / wall) are GNU "
         "time's for the median rep's whole command (bash, the tool, `cat`); peak RSS is the largest "
         "process's, max of the reps. Archive MB and members: an untimed run with the disk model off "
         "after the timed ones (members = regular files GNU tar lists).", "",
         "| contender | lookup s | total s | MB/s | this / sl-tar | user s | sys s | cores busy | peak RSS MiB | archive MB | members | seeks |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        L.append(f"| {r['label']} | {f(r['lookup_s'], '{:.3f}')} | {f(r['total_s'])} | {f(r['mb_s'], '{:.1f}')} | "
                 f"{f(r['vs_sl_tar'])} | {f(r['user_s'])} | {f(r['sys_s'])} | {f(r['cores_busy'])} | "
                 f"{f(r['max_rss_mib'], '{:.1f}')} | {f(r['archive_bytes'] and r['archive_bytes'] / 1e6, '{:.1f}')} | "
                 f"{f(r['members'], '{}')} | {f(r['seeks'], '{}')} |")
    L += ["", "| target | value | goal | met |", "| --- | ---: | --- | --- |"]
    for x in targets:
        met = "–" if x["met"] is None else ("yes" if x["met"] else "**no**")
        L.append(f"| {x['target']} | {x['value']:.2f} | {x['goal']} | {met} |")
    if limit:
        L += ["", f"What limits seekless tar --zstd: {limit}."]
    bad = [c for c in checks if not c["ok"]]
    if checks:
        L += ["", ("Archive check: every archive holds all " + f"{nfiles} files, and every timed seekless tar "
                   "run wrote them all (none changed or failed)." if not bad else
                   "Archive check **failed**: " + "; ".join(
                       f"{c['contender']}: {c['members']} members, {c['archive_bytes']} bytes"
                       + (f", {c['files']} files, {c['changed']} changed, {c['failed']} failed" if "files" in c else "")
                       for c in bad)
                   + f" (corpus: {nfiles} files, {nbytes} bytes).")]
    with open(a["md"], "a") as fo:
        fo.write("\n".join(L) + "\n")
    doc = json.load(open(a["json"]))
    doc["tar"] = {"rows": rows, "targets": targets, "zstd_limit": limit, "cpus": cpus, "archives": checks}
    doc["targets"] = doc.get("targets", []) + [x for x in targets if x["met"] is not None]
    json.dump(doc, open(a["json"], "w"), indent=1)
    if bad:
        print("tar-targets: archive check FAILED: " + json.dumps(bad), file=sys.stderr)


# ---------------------------------------------------------------------------------------
# --set copy (issue 15): `seekless copy` and its peers (cp -a, rsync -a) from the emulated
# disk to tmpfs. copy-check compares each copy with the source after the timed runs;
# copy-targets appends the set's table and targets to plot.py's.

def tree(root, digests=None):
    """Every entry under root (root itself as "."): (type, mode, uid, gid, mtime_ns, size,
    link target) by relative path, and each regular file's SHA-256 when digests is a dict."""
    import hashlib
    import stat as st
    out = {}

    def add(path, rel):
        m = os.lstat(path)
        kind = ("dir" if st.S_ISDIR(m.st_mode) else "file" if st.S_ISREG(m.st_mode)
                else "symlink" if st.S_ISLNK(m.st_mode) else "other")
        out[rel] = (kind, st.S_IMODE(m.st_mode), m.st_uid, m.st_gid, m.st_mtime_ns,
                    m.st_size if kind == "file" else None, os.readlink(path) if kind == "symlink" else None)
        if kind == "file" and digests is not None:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for b in iter(lambda: f.read(1 << 20), b""):
                    h.update(b)
            digests[rel] = h.hexdigest()

    add(root, ".")
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            add(p, os.path.relpath(p, root))
    return out


def copy_check(src, dests):
    """One JSON line per NAME=DIR: the same entries as src (none missing, none extra), each
    with the same type, mode, owner, mtime (ns), size and link target, and every regular
    file with the same bytes (SHA-256)."""
    sd = {}
    st_src = tree(src, sd)
    fields = ("type", "mode", "uid", "gid", "mtime_ns", "size", "link")
    for spec in dests:
        name, _, path = spec.partition("=")
        dd = {}
        st_dst = tree(path, dd)
        missing = sorted(set(st_src) - set(st_dst))
        extra = sorted(set(st_dst) - set(st_src))
        meta, content, examples = 0, 0, []
        for rel in sorted(set(st_src) & set(st_dst)):
            a, b = st_src[rel], st_dst[rel]
            diff = [f"{k} {x!r} != {y!r}" for k, x, y in zip(fields, a, b) if x != y]
            if diff:
                meta += 1
                if len(examples) < 5:
                    examples.append(f"{rel}: " + ", ".join(diff))
            if rel in sd and rel in dd and sd[rel] != dd[rel]:
                content += 1
                if len(examples) < 5:
                    examples.append(f"{rel}: content differs")
        examples += [f"missing {r}" for r in missing[:3]] + [f"extra {r}" for r in extra[:3]]
        files = sum(1 for v in st_dst.values() if v[0] == "file")
        print(json.dumps({
            "contender": name, "path": path,
            "src_files": sum(1 for v in st_src.values() if v[0] == "file"),
            "src_dirs": sum(1 for v in st_src.values() if v[0] == "dir"),
            "src_bytes": sum(v[5] for v in st_src.values() if v[0] == "file"),
            "files": files, "dirs": sum(1 for v in st_dst.values() if v[0] == "dir"),
            "bytes": sum(v[5] for v in st_dst.values() if v[0] == "file"),
            "missing": len(missing), "extra": len(extra), "meta_differs": meta, "content_differs": content,
            "examples": examples,
            "ok": not (missing or extra or meta or content)}), flush=True)


COPY_LABELS = {
    "sl-copy": "seekless copy",
    "sl-copy-rerun": "seekless copy, re-run, nothing changed",
    "sl-copy-late-sync": "seekless copy --no-sync + one syncfs (the old default)",
    "lookup": "lookup alone (seekless order, cold)",
    "sl-physical": "seekless hash --algo blake3 (physical)",
    "cp": "cp -a",
    "rsync": "rsync -a",
    "rsync-rerun": "rsync -a, re-run, nothing changed",
    "dir": "directory order (find \\| xargs cat)",
}


def copy_targets(a):
    import statistics
    runs = [json.loads(line) for line in open(a["runs"]) if line.strip()]
    nbytes = json.load(open(a["stream"]))["bytes"]
    nfiles = json.load(open(a["extents"]))["files"] if a.get("extents") else None
    cpus = int(a.get("cpus") or os.cpu_count() or 1)
    copies = []
    if a.get("copies") and os.path.exists(a["copies"]):
        copies = [json.loads(line) for line in open(a["copies"]) if line.strip()]
    by = {}
    for r in runs:
        by.setdefault(r["contender"], []).append(r)

    f = fmt_or_dash
    rows = []
    rate = lambda name: "rerun" not in name and name != "lookup"  # noqa: E731
    for row, mr in job_rows(by, COPY_LABELS, nbytes, "sl-copy", "vs_sl_copy", rate):
        c = mr.get("copy") or {}
        row.update({"copied": c.get("copied"), "skipped": c.get("skipped"), "failed": c.get("failed"),
                    "read_files": (c.get("read_files") or 0) if c else None,
                    "seeks": (mr.get("stats") or {}).get("seeks")})
        rows.append(row)
    tot = {r["contender"]: r["total_s"] for r in rows}
    sl = tot.get("sl-copy")
    get = {r["contender"]: r for r in rows}
    targets = []

    def t(name, value, goal, ok):
        if value is not None:
            targets.append({"target": name, "value": value, "goal": goal, "met": None if ok is None else bool(ok)})
    if sl:
        for peer, label in (("cp", "cp -a"), ("rsync", "rsync -a")):
            if peer in tot:
                v = tot[peer] / sl
                t(f"seekless copy vs {label} ({peer} / sl-copy)", v, ">= 6x", v >= 6)
        if "sl-physical" in tot:
            v = sl / tot["sl-physical"]
            t("seekless copy / seekless hash --algo blake3", v, "<= 1.2", v <= 1.2)
        if "sl-copy-late-sync" in tot:
            v = sl / tot["sl-copy-late-sync"]
            t("seekless copy (durable before rename) / the old default (one syncfs at the end)", v, "<= 1.1",
              v <= 1.1)
    rr, lk = tot.get("sl-copy-rerun"), tot.get("lookup")
    if rr and lk:
        t("seekless copy re-run (nothing changed) / cold lookup alone", rr / lk, "<= 1.5", rr / lk <= 1.5)
    if "sl-copy" in get:
        t("seekless copy peak RSS (MiB, max of reps)", get["sl-copy"]["max_rss_mib"], "report", None)
    if "sl-copy-rerun" in get:
        t("seekless copy re-run peak RSS (MiB, max of reps)", get["sl-copy-rerun"]["max_rss_mib"], "report", None)
    if rr and tot.get("rsync-rerun"):
        t("rsync -a re-run / seekless copy re-run", tot["rsync-rerun"] / rr, "report", None)

    # The copies after the timed runs (copy-check), and the timed runs' own counts
    # (`seekless copy --summary`): sl-copy copies every file, none failed; the re-run
    # skips every file and reads none.
    bad = [c for c in copies if not c["ok"] or (nfiles is not None and c["files"] != nfiles)]
    runs_bad = []
    for name, reps in by.items():
        for r in reps:
            c = r.get("copy")
            if name in ("sl-copy", "sl-copy-rerun") and c is None:
                runs_bad.append(f"{name} rep {r['rep']}: no `copy:` summary line")
                continue
            if c is None:
                continue
            fresh = name in ("sl-copy", "sl-copy-late-sync", "sl-copy-before")
            want_copied, want_skipped = (nfiles, 0) if fresh else (0, nfiles)
            ok = (c.get("failed") == 0 and c.get("updated") == 0 and not c.get("stopped")
                  and (nfiles is None or (c.get("copied") == want_copied and c.get("skipped") == want_skipped))
                  and (name != "sl-copy-rerun" or not c.get("read_files")))
            if not ok:
                runs_bad.append(f"{name} rep {r['rep']}: " + ", ".join(f"{k} {v}" for k, v in c.items()))

    L = ["", "#### seekless copy (issue 15): the copy job and its peers", "",
         "Source on the emulated disk, destination on tmpfs (`/dev/shm`, or `COPY_PARENT`), emptied before each cp, rsync and "
         "seekless copy run (untimed); the re-run goes over the copy the same rep's seekless copy made. "
         "Lookup: each seekless run's own walk + locate (`--summary`); lookup alone = cold `seekless order "
         "--summary` (wall). User, sys and cores busy (= (user + sys) / wall) are GNU time's for the median "
         "rep's whole command; peak RSS is the largest process's, max of the reps. Copied, skipped, failed "
         "and files read: `seekless copy --summary` of the median rep.", "",
         "| contender | lookup s | total s | MB/s | this / sl-copy | user s | sys s | cores busy | peak RSS MiB | copied | skipped | failed | files read | seeks |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        L.append(f"| {r['label']} | {f(r['lookup_s'], '{:.3f}')} | {f(r['total_s'], '{:.3f}')} | {f(r['mb_s'], '{:.1f}')} | "
                 f"{f(r['vs_sl_copy'])} | {f(r['user_s'])} | {f(r['sys_s'])} | {f(r['cores_busy'])} | "
                 f"{f(r['max_rss_mib'], '{:.1f}')} | {f(r['copied'], '{}')} | {f(r['skipped'], '{}')} | "
                 f"{f(r['failed'], '{}')} | {f(r['read_files'], '{}')} | {f(r['seeks'], '{}')} |")
    L += ["", "| target | value | goal | met |", "| --- | ---: | --- | --- |"]
    for x in targets:
        met = "–" if x["met"] is None else ("yes" if x["met"] else "**no**")
        L.append(f"| {x['target']} | {x['value']:.2f} | {x['goal']} | {met} |")
    if copies:
        names = ", ".join(c["contender"] for c in copies)
        s0 = copies[0]
        if not bad:
            L += ["", f"Copy check (untimed, after the timed runs): every copy ({names}) holds the source's "
                  f"{s0['src_files']} files ({s0['src_bytes']} bytes) and {s0['src_dirs']} directories, none missing "
                  "or extra, with the same bytes (SHA-256), sizes, modes, owners and mtimes (ns)."]
        else:
            L += ["", "Copy check **failed**: " + "; ".join(
                f"{c['contender']} ({c['path']}): {c['files']} files, {c['bytes']} bytes, {c['dirs']} directories, "
                f"{c['missing']} missing, {c['extra']} extra, {c['meta_differs']} with other metadata, "
                f"{c['content_differs']} with other content" + (f" (e.g. {' | '.join(c['examples'])})" if c['examples'] else "")
                for c in bad) + f" (source: {s0['src_files']} files, {s0['src_bytes']} bytes, {s0['src_dirs']} directories)."]
    if "sl-copy" in by or "sl-copy-rerun" in by:
        if not runs_bad:
            said = []
            if "sl-copy" in by:
                said.append(f"every timed seekless copy run copied all {nfiles} files")
            if "sl-copy-rerun" in by:
                said.append(f"every re-run skipped all {nfiles} and read none")
            L += ["", "Run counts (`--summary`): " + ", ".join(said) + "; none updated or failed."]
        else:
            L += ["", "Run counts **unexpected**: " + "; ".join(runs_bad) + f" (corpus: {nfiles} files)."]
    with open(a["md"], "a") as fo:
        fo.write("\n".join(L) + "\n")
    doc = json.load(open(a["json"]))
    doc["copy"] = {"rows": rows, "targets": targets, "cpus": cpus, "copies": copies, "runs_unexpected": runs_bad}
    doc["targets"] = doc.get("targets", []) + [x for x in targets if x["met"] is not None]
    json.dump(doc, open(a["json"], "w"), indent=1)
    if bad or runs_bad:
        print("copy-targets: copy check FAILED: " + json.dumps({"copies": bad, "runs": runs_bad}), file=sys.stderr)


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    if a[0] == "gen":
        layout, n, seed, root = "shuffled", 3000, 1, None
        i = 1
        while i < len(a):
            if a[i] == "--layout":
                layout = a[i + 1]; i += 2
            elif a[i] == "--files":
                n = int(a[i + 1]); i += 2
            elif a[i] == "--seed":
                seed = int(a[i + 1]); i += 2
            else:
                root = a[i]; i += 1
        if not root:
            sys.exit("gen: DIR missing")
        gen(layout, n, seed, root)
    elif a[0] == "extents":
        extents(read_plan(sys.stdin))
    elif a[0] == "stream":
        stream(a[1], read_plan(sys.stdin))
    elif a[0] == "index-targets":
        index_targets({a[i].lstrip("-"): a[i + 1] for i in range(1, len(a) - 1, 2)})
    elif a[0] == "tar-targets":
        tar_targets({a[i].lstrip("-"): a[i + 1] for i in range(1, len(a) - 1, 2)})
    elif a[0] == "copy-check":
        copy_check(a[1], a[2:])
    elif a[0] == "copy-targets":
        copy_targets({a[i].lstrip("-"): a[i + 1] for i in range(1, len(a) - 1, 2)})
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
