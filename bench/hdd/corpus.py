#!/usr/bin/env python3
"""Deterministic camera-like corpus for the emulated-HDD benchmark, and plan helpers.

  corpus.py gen --layout shuffled|camera|aged --files N [--seed S] DIR
  corpus.py extents < order.jsonl          # fraction of files with >= 3 extents
  corpus.py stream STATS.json < order.jsonl  # streaming limit (s) from the zone model

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


def gen(layout, n, seed, root):
    global POOL
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
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
