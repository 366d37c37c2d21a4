#!/usr/bin/env python3
"""`seekless index --watch` and re-indexing an unchanged library (issue 46.4), on this
machine's disk, ext4 and btrfs images on loop devices, in one run each:

1. An unchanged re-index of FILES tiny images (in directories of 100): wall time, and
   the read requests the loop device served (its sysfs `stat`), cold cache (caches
   dropped before each run), ext4 and btrfs side by side.
2. With `--watch` running on the same library (ext4): the delay from `close()` of a new
   photo to its committed row (median and max over 100 changes, one at a time), at the
   default `--settle` (2 s) and at `--settle 0.2`; the watcher's CPU time over IDLE
   seconds of no change, and its peak memory (VmHWM).
3. A burst of 2,000 files into a new folder: the wall time from the first write to the
   last committed row under `--watch`, against a plain incremental `index` run over the
   same change (the files written, then one run).
4. The inotify fallback: the watcher as a user who is not root in a user namespace whose
   `user.max_inotify_watches` is 50: how many directories went unwatched (said), and the
   delay of a change in one of them with `--rescan 5`.

Needs root (loop devices, drop_caches, setpriv, unshare), mkfs.ext4, mkfs.btrfs.

    sudo python3 bench/watch.py [--files 100000] [--idle 600] [--out bench/results/watch]

SEEKLESS names the binary (default: target/release/seekless).
"""

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = os.environ.get("SEEKLESS", str(ROOT / "target/release/seekless"))
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"


def sh(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


class Loop:
    """A filesystem on an image file, on a loop device, mounted."""

    def __init__(self, base: Path, kind: str, size_mb: int):
        self.image = base / f"{kind}.img"
        self.mnt = base / f"{kind}-mnt"
        self.mnt.mkdir()
        with open(self.image, "wb") as f:
            f.truncate(size_mb << 20)
        self.dev = sh("losetup", "-f", "--show", str(self.image)).stdout.strip()
        mkfs = {"ext4": ["mkfs.ext4", "-q", "-F"], "btrfs": ["mkfs.btrfs", "-q", "-f"]}[kind]
        sh(*mkfs, self.dev)
        sh("mount", self.dev, str(self.mnt))

    def reads(self) -> int:
        name = Path(self.dev).name
        return int(Path(f"/sys/block/{name}/stat").read_text().split()[0])

    def close(self):
        subprocess.run(["umount", str(self.mnt)])
        subprocess.run(["losetup", "-d", self.dev])


def make_library(top: Path, files: int):
    for i in range(files):
        d = top / f"{i // 100:04d}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        (d / f"{i}.gif").write_bytes(GIF + str(i).encode())


def drop_caches():
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def timed_index(db: Path, top: Path, loop: Loop):
    drop_caches()
    before = loop.reads()
    t = time.monotonic()
    subprocess.run([BIN, "index", "--db", str(db), str(top)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t, loop.reads() - before


def has_row(conn, path: str) -> bool:
    try:
        return conn.execute("SELECT 1 FROM images WHERE path = ?", (path,)).fetchone() is not None
    except sqlite3.OperationalError:
        return False


class Watch:
    def __init__(self, db: Path, top: Path, settle: str, extra=(), prefix=()):
        self.proc = subprocess.Popen(
            [*prefix, BIN, "index", "--watch", "--summary", "--settle", settle, *extra,
             "--db", str(db), str(top)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.first = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.first.wait(3600):
            raise SystemExit("the watcher's first run did not end")

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("seekless: index: "):
                self.first.set()

    def cpu_seconds(self) -> float:
        f = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def hwm_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(600)


def wait_rows(conn, paths, limit=600.0) -> float:
    end = time.monotonic() + limit
    left = list(paths)
    while left:
        left = [p for p in left if not has_row(conn, p)]
        if not left:
            break
        if time.monotonic() > end:
            raise SystemExit(f"{len(left)} rows never came")
        time.sleep(0.002)
    return time.monotonic()


def latencies(db: Path, top: Path, settle: str, n: int):
    w = Watch(db, top, settle)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = []
    for i in range(n):
        p = top / "0000" / f"new-{settle}-{i}.gif"
        with open(p, "wb") as f:
            f.write(GIF + b"new" + str(i).encode())
        t = time.monotonic()
        out.append(wait_rows(conn, [str(p)]) - t)
    w.stop()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--idle", type=int, default=600)
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--out", default=str(ROOT / "bench/results/watch"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, drop_caches, setpriv, unshare)")
    results = {"files": args.files, "binary": BIN}
    base = Path(tempfile.mkdtemp(prefix="seekless-watch-bench-", dir="/var/tmp"))
    loops = []
    try:
        # 1. Unchanged re-index, ext4 and btrfs.
        for kind in ["ext4", "btrfs"]:
            loop = Loop(base, kind, max(1024, args.files // 40))
            loops.append(loop)
            top = loop.mnt / "lib"
            make_library(top, args.files)
            db = base / f"{kind}.db"
            first, first_reads = timed_index(db, top, loop)
            again, again_reads = timed_index(db, top, loop)
            results[f"reindex_{kind}"] = {
                "first_s": round(first, 3), "first_reads": first_reads,
                "unchanged_s": round(again, 3), "unchanged_reads": again_reads,
            }
            print(f"{kind}: first index {first:.2f} s ({first_reads} reads); unchanged "
                  f"re-index {again:.2f} s ({again_reads} reads)", flush=True)
        ext4 = loops[0]
        top = ext4.mnt / "lib"
        db = base / "ext4.db"

        # 2. Latency, idle CPU, memory.
        for settle in ["2", "0.2"]:
            lat = latencies(db, top, settle, args.changes)
            results[f"latency_settle_{settle}"] = {
                "median_s": round(statistics.median(lat), 3), "max_s": round(max(lat), 3)}
            print(f"close() to committed row, --settle {settle}: median "
                  f"{statistics.median(lat):.3f} s, max {max(lat):.3f} s over {len(lat)}",
                  flush=True)
        w = Watch(db, top, "2")
        cpu0, t0 = w.cpu_seconds(), time.monotonic()
        time.sleep(args.idle)
        cpu = w.cpu_seconds() - cpu0
        wall = time.monotonic() - t0
        results["idle"] = {"seconds": round(wall, 1), "cpu_s": round(cpu, 3),
                           "cpu_percent": round(100 * cpu / wall, 4),
                           "watches": args.files // 100 + 1, "vmhwm_kib": w.hwm_kib()}
        print(f"idle {wall:.0f} s: {cpu:.2f} s CPU ({100 * cpu / wall:.3f} %), peak memory "
              f"{w.hwm_kib()} KiB, {args.files // 100 + 1} directories watched", flush=True)

        # 3. A burst of 2,000 files under --watch (settle 2 s), then the same by a run.
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        burst = top / "burst-watch"
        burst.mkdir()
        paths = []
        t = time.monotonic()
        for i in range(2000):
            p = burst / f"{i}.gif"
            p.write_bytes(GIF + b"burst" + str(i).encode())
            paths.append(str(p))
        watched = wait_rows(conn, paths) - t
        w.stop()
        burst = top / "burst-run"
        burst.mkdir()
        t = time.monotonic()
        for i in range(2000):
            (burst / f"{i}.gif").write_bytes(GIF + b"run" + str(i).encode())
        subprocess.run([BIN, "index", "--db", str(db), str(top)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ran = time.monotonic() - t
        results["burst_2000"] = {"watch_s": round(watched, 3), "incremental_run_s": round(ran, 3)}
        print(f"burst of 2,000: under --watch {watched:.2f} s to the last row; written then "
              f"one incremental run {ran:.2f} s", flush=True)

        # 4. Past the inotify limit: 50 watches, a user who is not root.
        small = base / "small"
        make_library(small / "lib", 1000)
        subprocess.run(["chmod", "-R", "a+rwX", str(base)], check=True)
        sdb = small / "c.db"
        script = (f"echo 50 > /proc/sys/user/max_inotify_watches && exec {BIN} index --watch "
                  f"--summary --settle 0.2 --rescan 5 --db {sdb} {small / 'lib'}")
        w = Watch(sdb, small / "lib", "0.2",
                  prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          "unshare", "-U", "-r", "sh", "-c", script, "--"))
        said = [l for l in w.lines if "watch limit" in l]
        conn = sqlite3.connect(f"file:{sdb}?mode=ro", uri=True)
        p = small / "lib" / "0009" / "late.gif"
        p.write_bytes(GIF + b"late")
        t = time.monotonic()
        late = wait_rows(conn, [str(p)]) - t
        w.stop()
        m = re.search(r"(\d+) directories here are not watched", " ".join(said))
        results["inotify_limit_50"] = {"said": said, "unwatched": int(m.group(1)) if m else None,
                                       "delay_s": round(late, 3)}
        print(f"limit 50: {said[0] if said else 'nothing said'}; a change in the last "
              f"directory reached the catalog in {late:.2f} s (--rescan 5)", flush=True)
    finally:
        for loop in loops:
            loop.close()
        subprocess.run(["rm", "-rf", str(base)])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "watch.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"written {out / 'watch.json'}")


if __name__ == "__main__":
    main()
