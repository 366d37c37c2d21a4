#!/usr/bin/env python3
"""`seekless index --watch` and re-indexing an unchanged library (issue 46.4), in one run:

reindex-loop  An unchanged re-index of FILES tiny images (GIFs of ~20 bytes, in
              directories of 100) on ext4 and btrfs images on loop devices, the images
              on this machine's disk: wall time, and the read requests (and MB) the loop
              device served (its sysfs `stat`), cold (unmount, sync, drop caches, mount
              before every run). The first (full) index is timed too, cold.
reindex-hdd   The same on the emulated 7200 rpm disk (bench/hdd/stack.sh, 4 GiB, one
              stack per filesystem in STACK_DIR=/dev/shm/seekless-watch-hdd): corpus
              written and first indexed with the model off, then for every timed run
              `stack.sh cold`, the binary loaded once (`--version`), `stack.sh reset`;
              wall time, and hddsim's `seeks`, `reads` and `bytes_read`.
              (`reindex` names both.) Where `seekless index --help` mentions `--walk`
              (catch-up without a walk), btrfs is timed both as `index` (the catch-up)
              and as `index --walk` (today's full walk); else only `index`.
watch         With `--watch` running on the ext4 loop's library: the delay from `close()`
              of a photo (new and changed, alternately, one at a time) to its committed
              row (median and max over CHANGES), at the default `--settle` (2 s) and at
              `--settle 0.2`; then the watcher's CPU time over IDLE seconds of no change,
              its peak memory (VmHWM) and its memory at the end (VmRSS), with the
              batches it ran anyway and the mount-table changes on the machine meanwhile
              (each makes the next batch a run over every PATH).
idle-ns       The idle measurement again with the watcher in a mount namespace of its
              own (`unshare -m --propagation private`): mounts elsewhere unseen.
burst         A burst of BURST files into a new folder: the wall time from the first
              write to the last committed row under `--watch` (settle 2 s), against the
              same change (another new folder) written and then one plain incremental
              `index` run over the library.
inotify       The inotify fallback: the watcher as a user who is not root (nobody, in a
              user namespace of its own whose `user.max_inotify_watches` is
              INOTIFY_LIMIT), on 1,000 images in 100 directories on this machine's disk:
              what it says, how many directories went unwatched (said, and counted from
              its inotify descriptor's fdinfo), and the delay of a new file in an
              unwatched directory (`--rescan 5`) and in a watched one.

Needs root (loop devices, mount, drop_caches, setpriv, unshare, FUSE for the emulated
disk), mkfs.ext4, mkfs.btrfs (package btrfs-progs), and for reindex-hdd a built hddsim
(`cargo build --release -p seekless -p hddsim`).

    sudo python3 bench/watch.py [--files 100000] [--idle 600] [--changes 100]
        [--burst 2000] [--reps 3] [--parts reindex,watch,idle-ns,burst,inotify]
        [--out bench/results/watch]
    sudo python3 bench/watch.py --files 2000 --idle 10 --changes 5 --burst 200   # smoke

SEEKLESS names the binary (default: target/release/seekless), HDDSIM hddsim. Results:
OUT/watch.json (written after every part) and OUT/watch.md (tables), or watch-PARTS.json
and .md for a subset (`--parts watch,burst`: watch-watch-burst.*); progress on stdout.
Nothing else is run by it; everything it makes (loop devices, mounts, the emulated disk,
/var/tmp/seekless-watch-bench-*) is undone at exit, whatever fails.
"""

import argparse
import json
import os
import re
import select
import shlex
import signal
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
STACK = ROOT / "bench/hdd/stack.sh"
STACK_DIR = "/dev/shm/seekless-watch-hdd"
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
PARTS = ["reindex-loop", "reindex-hdd", "watch", "idle-ns", "burst", "inotify"]
ALIASES = {"reindex": ["reindex-loop", "reindex-hdd"], "all": PARTS}

# Everything to undo at exit, newest first.
WATCHERS = []
LOOPS = []
STACK_UP = []


def sh(*args, env=None):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(str(a) for a in args)}\n"
                         f"{p.stdout}{p.stderr}")
    return p


def log(msg):
    print(msg, flush=True)


def drop_caches():
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def load():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Loop:
    """A filesystem on an image file (on this machine's disk), on a loop device, mounted."""

    def __init__(self, base: Path, kind: str, size_mb: int):
        self.kind = kind
        self.image = base / f"{kind}.img"
        self.mnt = base / f"{kind}-mnt"
        self.mnt.mkdir()
        with open(self.image, "wb") as f:
            f.truncate(size_mb << 20)
        self.dev = sh("losetup", "-f", "--show", self.image).stdout.strip()
        LOOPS.append(self)
        self.mounted = False
        mkfs = {
            # No lazy initialisation: it would go on writing in the background.
            "ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
            "btrfs": ["mkfs.btrfs", "-q", "-f"],
        }[kind]
        sh(*mkfs, self.dev)
        self.mount()

    def mount(self):
        sh("mount", "-o", "noatime", self.dev, self.mnt)
        self.mounted = True

    def cold(self):
        """Unmount, sync, drop caches, mount (drop_caches alone leaves journal-pinned
        metadata cached)."""
        sh("umount", self.mnt)
        self.mounted = False
        drop_caches()
        self.mount()

    def stat(self):
        """(read requests, bytes read) served by the loop device so far."""
        f = Path(f"/sys/block/{Path(self.dev).name}/stat").read_text().split()
        return int(f[0]), int(f[2]) * 512

    def close(self):
        if self.mounted and subprocess.run(["umount", str(self.mnt)]).returncode == 0:
            self.mounted = False
        if not self.mounted:
            subprocess.run(["losetup", "-d", self.dev])
        else:
            print(f"watch.py: could not unmount {self.mnt}; {self.dev} left attached",
                  file=sys.stderr)
        return not self.mounted


class Stack:
    """bench/hdd/stack.sh in a STACK_DIR of its own."""

    def __init__(self, kind: str):
        self.env = dict(os.environ, STACK_DIR=STACK_DIR)
        if "HDDSIM" not in self.env and not (ROOT / "target/release/hddsim").exists():
            raise SystemExit("no target/release/hddsim: cargo build --release -p hddsim")
        STACK_UP.append(self)
        self("up", "--fs", kind, "--size", "4G", "--fs-seed", "1", "--keep-model-off")
        self.mnt = Path(STACK_DIR) / "mnt"

    def __call__(self, *args) -> str:
        return sh(STACK, *args, env=self.env).stdout

    def stats(self) -> dict:
        return json.loads(self("stats"))

    def down(self):
        subprocess.run([str(STACK), "down"], env=self.env)


def make_library(top: Path, files: int, per_dir: int = 100):
    for i in range(files):
        d = top / f"{i // per_dir:04d}"
        if i % per_dir == 0:
            d.mkdir(parents=True)
        (d / f"{i}.gif").write_bytes(GIF + str(i).encode())


def index(db: Path, top: Path, *extra):
    """One `seekless index --summary` run: (wall seconds, its counts line)."""
    t = time.monotonic()
    p = subprocess.run([BIN, "index", "--summary", *extra, "--db", str(db), str(top)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"seekless index failed ({p.returncode}):\n{p.stderr}")
    counts = [l for l in p.stderr.splitlines() if l.startswith("seekless: index: ")]
    # The closing counts, and the catch-up's line after them when there is one.
    return wall, (" | ".join(counts) if counts else p.stderr.strip())


def unchanged_count(counts: str):
    m = re.search(r"(\d+) unchanged", counts)
    return int(m.group(1)) if m else None


def as_expected(counts: str, files: int) -> bool:
    """An unchanged library: every file unchanged, or (a catch-up) no directory walked."""
    return unchanged_count(counts) == files or (
        "caught up without a walk" in counts and " 0 changed directories walked" in counts)


def row_of(conn, path: Path):
    """(size, mtime_ns) of PATH's row, or None (by `path_bytes`, the indexed key)."""
    try:
        return conn.execute("SELECT size, mtime_ns FROM images WHERE path_bytes = ?",
                            (os.fsencode(str(path)),)).fetchone()
    except sqlite3.OperationalError:
        return None


class Watch:
    """`seekless index --watch --summary` running; ready once its first run has ended."""

    def __init__(self, db: Path, top: Path, args=(), prefix=()):
        cmd = [*prefix, BIN, "index", "--watch", "--summary", *args, "--db", str(db), str(top)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        WATCHERS.append(self)
        self.lines = []
        self.timed = []  # (monotonic time, line)
        self.first = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.first.wait(3600)
        if self.proc.poll() is not None or not self.first.is_set():
            raise SystemExit("the watcher's first run did not end:\n" + "\n".join(self.lines))

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            self.timed.append((time.monotonic(), line.rstrip("\n")))
            if line.startswith("seekless: index: "):
                self.first.set()
        self.first.set()  # exited: __init__ says so

    def cpu_seconds(self) -> float:
        f = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def status_kib(self, field: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        return 0

    def batches_since(self, t0: float):
        """The closing counts lines of the batches that ended after T0."""
        return [l for t, l in self.timed if t >= t0 and re.match(r"seekless: index: \d+ seen", l)]

    def inotify_inodes(self) -> set:
        """The inode numbers its inotify descriptor watches (from fdinfo)."""
        out = set()
        for fd in Path(f"/proc/{self.proc.pid}/fd").iterdir():
            try:
                if os.readlink(fd) != "anon_inode:inotify":
                    continue
            except OSError:
                continue
            for line in Path(f"/proc/{self.proc.pid}/fdinfo/{fd.name}").read_text().splitlines():
                m = re.match(r"inotify wd:\S+ ino:([0-9a-f]+) ", line)
                if m:
                    out.add(int(m.group(1), 16))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(600)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(10)
        if self in WATCHERS:
            WATCHERS.remove(self)
        return self.proc.returncode


class MountChanges:
    """Counts changes of the mount table (poll on /proc/self/mountinfo) while it runs."""

    def __init__(self):
        self.count = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        with open("/proc/self/mountinfo") as f:
            f.read()
            p = select.poll()
            p.register(f, select.POLLERR | select.POLLPRI)
            while not self.done.is_set():
                if p.poll(200):
                    self.count += 1
                    f.seek(0)
                    f.read()

    def stop(self) -> int:
        self.done.set()
        self.thread.join(5)
        return self.count


def write_gif(path: Path, tag: bytes):
    """Writes PATH and closes it; returns the time just after close() and its stat."""
    with open(path, "wb") as f:
        f.write(GIF + tag)
    t = time.monotonic()
    st = os.stat(path)
    return t, (st.st_size, st.st_mtime_ns)


def wait_rows(conn, want: dict, limit=600.0) -> float:
    """Waits until every path of WANT has a row with its (size, mtime_ns); returns when."""
    end = time.monotonic() + limit
    left = dict(want)
    while left:
        left = {p: s for p, s in left.items() if tuple(row_of(conn, p) or ()) != s}
        if not left:
            break
        if time.monotonic() > end:
            raise SystemExit(f"{len(left)} rows never came (e.g. {next(iter(left))})")
        time.sleep(0.005)
    return time.monotonic()


def latencies(db: Path, top: Path, settle: str, n: int):
    """N changes one at a time, new and changed files alternately, in the first folder."""
    w = Watch(db, top, ["--settle", settle])
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    folder = top / "0000"
    existing = sorted(p for p in folder.iterdir() if p.suffix == ".gif")
    out = {"new": [], "changed": []}
    for i in range(n):
        if i % 2 == 0:
            kind, p = "new", folder / f"new-{settle}-{i}.gif"
        else:
            kind, p = "changed", existing[(i // 2) % len(existing)]
        t, st = write_gif(p, f"{kind}-{settle}-{i}".encode())
        out[kind].append(wait_rows(conn, {p: st}) - t)
        time.sleep(0.1)
    conn.close()
    w.stop()
    return out


def stats_of(values):
    return {"median_s": round(statistics.median(values), 3), "max_s": round(max(values), 3),
            "min_s": round(min(values), 3), "n": len(values)}


def has_walk_flag() -> bool:
    h = subprocess.run([BIN, "index", "--help"], capture_output=True, text=True).stdout
    return re.search(r"--walk(?![\w-])", h) is not None


def variants(kind: str, walk_flag: bool):
    """(name, extra args) of the unchanged re-index runs on KIND."""
    if kind == "btrfs" and walk_flag:
        return [("index (catch-up)", []), ("index --walk", ["--walk"])]
    return [("index", [])]


def reindex_loop(base, files, reps, walk_flag, results, save):
    """Part reindex-loop; returns the ext4 loop (kept mounted for the other parts)."""
    ext4 = None
    out = results.setdefault("reindex_loop", {})
    for kind in ["ext4", "btrfs"]:
        loop = Loop(base, kind, max(1024, files // 25))
        top = loop.mnt / "lib"
        t = time.monotonic()
        make_library(top, files)
        os.sync()
        made = time.monotonic() - t
        db = base / f"loop-{kind}.db"
        loop.cold()
        r0, b0 = loop.stat()
        first, counts = index(db, top)
        r1, b1 = loop.stat()
        res = {"files": files, "library_written_s": round(made, 1),
               "first": {"wall_s": round(first, 3), "reads": r1 - r0,
                         "mb_read": round((b1 - b0) / 1e6, 1), "summary": counts},
               "runs": {}}
        log(f"loop {kind}: library written in {made:.1f} s; first index {first:.2f} s, "
            f"{r1 - r0} reads, {(b1 - b0) / 1e6:.1f} MB ({counts})")
        for rep in range(reps):
            for name, extra in variants(kind, walk_flag):
                loop.cold()
                subprocess.run([BIN, "--version"], capture_output=True)
                r0, b0 = loop.stat()
                wall, counts = index(db, top, *extra)
                r1, b1 = loop.stat()
                if not as_expected(counts, files):
                    log(f"  (expected {files} unchanged: {counts})")
                res["runs"].setdefault(name, []).append(
                    {"wall_s": round(wall, 3), "reads": r1 - r0,
                     "mb_read": round((b1 - b0) / 1e6, 1), "summary": counts})
                log(f"loop {kind}: unchanged re-index, {name}, rep {rep + 1}: {wall:.2f} s, "
                    f"{r1 - r0} reads, {(b1 - b0) / 1e6:.1f} MB ({counts})")
        out[kind] = res
        save()
        if kind == "ext4":
            ext4 = loop
        else:
            close_loop(loop)
    return ext4


def close_loop(loop):
    if loop.close():
        LOOPS.remove(loop)


def reindex_hdd(base, files, reps, walk_flag, results, save):
    out = results.setdefault("reindex_hdd", {})
    for kind in ["ext4", "btrfs"]:
        st = Stack(kind)
        try:
            top = st.mnt / "lib"
            t = time.monotonic()
            make_library(top, files)
            os.sync()
            made = time.monotonic() - t
            db = base / f"hdd-{kind}.db"
            first, counts = index(db, top)  # model off: the catalog made, untimed
            st("model", "on")
            res = {"files": files, "library_written_s": round(made, 1),
                   "first_model_off_s": round(first, 3), "runs": {}}
            log(f"hdd {kind}: library written in {made:.1f} s, first index (model off) "
                f"{first:.2f} s ({counts})")
            for rep in range(reps):
                for name, extra in variants(kind, walk_flag):
                    st("cold")
                    subprocess.run([BIN, "--version"], capture_output=True)
                    st("reset")
                    wall, counts = index(db, top, *extra)
                    s = st.stats()
                    if not as_expected(counts, files):
                        log(f"  (expected {files} unchanged: {counts})")
                    res["runs"].setdefault(name, []).append(
                        {"wall_s": round(wall, 3), "seeks": s.get("seeks"),
                         "reads": s.get("reads"),
                         "mb_read": round(s.get("bytes_read", 0) / 1e6, 1),
                         "summary": counts})
                    log(f"hdd {kind}: unchanged re-index, {name}, rep {rep + 1}: {wall:.2f} s, "
                        f"{s.get('seeks')} seeks, {s.get('reads')} reads, "
                        f"{s.get('bytes_read', 0) / 1e6:.1f} MB ({counts})")
            out[kind] = res
            save()
        finally:
            st.down()
            STACK_UP.remove(st)


def ext4_library(base, files, results, save):
    """The ext4 loop with the library and its catalog, for parts that did not get it
    from reindex-loop."""
    loop = Loop(base, "ext4", max(1024, files // 25))
    make_library(loop.mnt / "lib", files)
    os.sync()
    index(base / "loop-ext4.db", loop.mnt / "lib")
    return loop


def part_watch(base, loop, changes, idle, results, save):
    top, db = loop.mnt / "lib", base / "loop-ext4.db"
    out = results.setdefault("watch", {})
    for settle in ["2", "0.2"]:
        lat = latencies(db, top, settle, changes)
        both = lat["new"] + lat["changed"]
        out[f"settle_{settle}"] = {"all": stats_of(both), "new": stats_of(lat["new"]),
                                   "changed": stats_of(lat["changed"]) if lat["changed"] else None}
        log(f"close() to committed row, --settle {settle}: median "
            f"{statistics.median(both):.3f} s, max {max(both):.3f} s over {len(both)} "
            f"(new: median {statistics.median(lat['new']):.3f} s)")
        save()
    out["idle"] = idle_watch(db, top, idle)
    save()


def part_idle_ns(base, loop, idle, results, save):
    """The idle measurement again, the watcher in a mount namespace of its own (private
    propagation): mounts and unmounts elsewhere on the machine, each of which makes the
    next batch a run over every PATH, are not seen there."""
    top, db = loop.mnt / "lib", base / "loop-ext4.db"
    results.setdefault("watch", {})["idle_own_mount_ns"] = idle_watch(
        db, top, idle, prefix=("unshare", "-m", "--propagation", "private"))
    save()


def idle_watch(db, top, idle, prefix=()):
    """A watcher left IDLE seconds with no change under its PATH: its CPU and memory, and
    the batches it ran anyway."""
    w = Watch(db, top, ["--settle", "2"], prefix=prefix)
    how = [l for l in w.lines if "watching with" in l]
    cpu0, t0 = w.cpu_seconds(), time.monotonic()
    hwm0 = w.status_kib("VmHWM")
    mounts = MountChanges()
    time.sleep(idle)
    cpu = w.cpu_seconds() - cpu0
    wall = time.monotonic() - t0
    hwm, rss = w.status_kib("VmHWM"), w.status_kib("VmRSS")
    mount_changes = mounts.stop()
    batches = w.batches_since(t0)
    rc = w.stop()
    res = {"seconds": round(wall, 1), "cpu_s": round(cpu, 3),
           "cpu_percent": round(100 * cpu / wall, 4), "vmhwm_kib": hwm,
           "vmhwm_after_first_run_kib": hwm0, "vmrss_end_kib": rss,
           "directories": len(list(top.iterdir())) + 1,
           "watching": how[0] if how else None, "exit": rc, "prefix": list(prefix),
           "batches": len(batches), "batch_counts": batches,
           "mount_table_changes": mount_changes}
    where = " (own mount namespace)" if prefix else ""
    log(f"idle{where}: {len(batches)} batches ran ({mount_changes} mount table changes on the "
        f"machine meanwhile): {batches[:5]}")
    log(f"idle{where} {wall:.0f} s: {cpu:.2f} s CPU ({100 * cpu / wall:.4f} %), VmHWM {hwm} "
        f"KiB (after the first run {hwm0}), VmRSS at the end {rss} KiB; "
        f"{how[0] if how else 'how watched: not said'}")
    return res


def part_burst(base, loop, burst, results, save):
    top, db = loop.mnt / "lib", base / "loop-ext4.db"
    w = Watch(db, top, ["--settle", "2"])
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    folder = top / "burst-watch"
    want = {}
    t = time.monotonic()
    folder.mkdir()
    for i in range(burst):
        p = folder / f"{i}.gif"
        _, st = write_gif(p, b"burst" + str(i).encode())
        want[p] = st
    written = time.monotonic() - t
    watched = wait_rows(conn, want) - t
    conn.close()
    w.stop()
    batches = w.batches_since(t)
    folder = top / "burst-run"
    t = time.monotonic()
    folder.mkdir()
    for i in range(burst):
        write_gif(folder / f"{i}.gif", b"run" + str(i).encode())
    written_run = time.monotonic() - t
    _, counts = index(db, top)
    ran = time.monotonic() - t
    results["burst"] = {"files": burst, "watch_s": round(watched, 3),
                        "watch_written_s": round(written, 3), "watch_batches": batches,
                        "incremental_run_s": round(ran, 3),
                        "run_written_s": round(written_run, 3), "run_summary": counts}
    log(f"burst of {burst}: under --watch {watched:.2f} s from the first write to the last "
        f"row (writing took {written:.2f} s; batches: {batches}); written then one "
        f"incremental run {ran:.2f} s (writing {written_run:.2f} s; {counts})")
    save()


def part_inotify(base, limit, results, save):
    small = base / "small"
    small.mkdir()
    lib = small / "lib"
    make_library(lib, 1000, per_dir=10)  # 100 directories of 10, and lib itself
    for d in [base, small]:
        os.chmod(d, 0o777)
    sh("chmod", "-R", "a+rwX", small)
    sdb = small / "c.db"
    # nobody, root of a user namespace of its own (so it may lower that namespace's
    # limit), without CAP_SYS_ADMIN where fanotify's filesystem marks need it.
    script = f"echo {limit} > /proc/sys/user/max_inotify_watches && exec \"$@\""
    prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
              "unshare", "-U", "-r", "sh", "-c", script, "sh")
    w = Watch(sdb, lib, ["--settle", "0.2", "--rescan", "5"], prefix=prefix)
    said = [l for l in w.lines if "watch limit" in l]
    how = [l for l in w.lines if "watching with" in l]
    watched_inodes = w.inotify_inodes()
    dirs = [lib] + sorted(d for d in lib.iterdir() if d.is_dir())
    unwatched = [d for d in dirs if os.stat(d).st_ino not in watched_inodes]
    watched = [d for d in dirs if os.stat(d).st_ino in watched_inodes]
    conn = sqlite3.connect(f"file:{sdb}?mode=ro", uri=True)
    delays = {}
    for name, group in [("unwatched", unwatched), ("watched", watched)]:
        if not group:
            continue
        got = []
        for i, d in enumerate(group[-3:]):
            p = d / f"late-{i}.gif"
            t, st = write_gif(p, b"late" + str(i).encode())
            got.append(wait_rows(conn, {p: st}, limit=120) - t)
            time.sleep(0.1)
        delays[name] = [round(x, 3) for x in got]
    conn.close()
    rc = w.stop()
    m = re.search(r"(\d+) directories here are not watched", " ".join(said))
    results["inotify"] = {"limit": limit, "directories": len(dirs), "said": said,
                          "watching": how[0] if how else None,
                          "unwatched_said": int(m.group(1)) if m else None,
                          "unwatched_counted": len(unwatched),
                          "watched_counted": len(watched),
                          "delay_unwatched_s": delays.get("unwatched"),
                          "delay_watched_s": delays.get("watched"), "exit": rc}
    log(f"inotify, limit {limit}, {len(dirs)} directories: {said[0] if said else 'nothing said'}; "
        f"{how[0] if how else ''}; counted unwatched {len(unwatched)}, watched {len(watched)}; "
        f"new file in an unwatched directory: {delays.get('unwatched')} s (--rescan 5), "
        f"in a watched one: {delays.get('watched')} s (--settle 0.2)")
    save()


def markdown(results) -> str:
    r = results
    lines = [f"# bench/watch.py, {r['date']}", "",
             f"`{r['command']}`", "",
             f"binary: {r['version']} ({r['binary']}); git {r['git']}; kernel {r['kernel']}; "
             f"{r['cpus']} CPUs; `index --walk` {'present' if r['walk_flag'] else 'absent'}; "
             f"load average before {r['load_before']}, after {r.get('load_after', '?')}", ""]

    def med(runs, key):
        v = [x[key] for x in runs if x.get(key) is not None]
        return statistics.median(v) if v else None

    if "reindex_loop" in r or "reindex_hdd" in r:
        lines += ["| disk | fs | run | wall s (median) | read requests | seeks | MB read | reps |",
                  "|---|---|---|---:|---:|---:|---:|---:|"]
        for where, key in [("loop (this machine's disk)", "reindex_loop"),
                           ("emulated HDD", "reindex_hdd")]:
            for kind, res in r.get(key, {}).items():
                if "first" in res:
                    f = res["first"]
                    lines.append(f"| {where} | {kind} | first index (cold) | {f['wall_s']:.2f} | "
                                 f"{f['reads']} | – | {f['mb_read']} | 1 |")
                for name, runs in res["runs"].items():
                    seeks = med(runs, "seeks")
                    lines.append(
                        f"| {where} | {kind} | unchanged, `{name}` | {med(runs, 'wall_s'):.2f} | "
                        f"{med(runs, 'reads'):.0f} | {'–' if seeks is None else f'{seeks:.0f}'} | "
                        f"{med(runs, 'mb_read')} | {len(runs)} |")
        lines.append("")
    if "watch" in r:
        w = r["watch"]
        lines += ["| --settle | close() → row, median s | max s | changes (new / changed) |",
                  "|---:|---:|---:|---|"]
        for s in ["2", "0.2"]:
            if f"settle_{s}" in w:
                a = w[f"settle_{s}"]
                lines.append(f"| {s} | {a['all']['median_s']:.3f} | {a['all']['max_s']:.3f} | "
                             f"{a['new']['n']} / {a['changed']['n'] if a['changed'] else 0} |")
        for key in ["idle", "idle_own_mount_ns"]:
            if key not in w:
                continue
            i = w[key]
            own = " (own mount namespace)" if key != "idle" else ""
            lines += ["", f"Idle{own} {i['seconds']} s: {i['cpu_s']} s CPU ({i['cpu_percent']} %); "
                      f"VmHWM {i['vmhwm_kib']} KiB (after the first run: "
                      f"{i['vmhwm_after_first_run_kib']}), VmRSS at the end {i['vmrss_end_kib']} "
                      f"KiB; {i['watching']}; {i.get('batches', '?')} batches ran meanwhile "
                      f"({i.get('mount_table_changes', '?')} mount table changes on the machine)"]
        lines.append("")
    if "burst" in r:
        b = r["burst"]
        lines += [f"Burst of {b['files']} files: under `--watch` {b['watch_s']:.2f} s from the "
                  f"first write to the last row; written then one incremental run "
                  f"{b['incremental_run_s']:.2f} s", ""]
    if "inotify" in r:
        i = r["inotify"]
        lines += [f"inotify, limit {i['limit']}, {i['directories']} directories: unwatched "
                  f"{i['unwatched_said']} (said), {i['unwatched_counted']} (counted); delay in "
                  f"an unwatched directory {i['delay_unwatched_s']} s (`--rescan 5`), in a "
                  f"watched one {i['delay_watched_s']} s; said: {i['said']}", ""]
    return "\n".join(lines) + "\n"


def parse_parts(s: str):
    out = []
    for p in s.split(","):
        p = p.strip()
        for q in ALIASES.get(p, [p]):
            if q not in PARTS:
                raise SystemExit(f"unknown part {p!r} (parts: {', '.join(PARTS)}, reindex, all)")
            if q not in out:
                out.append(q)
    return out


def cleanup():
    for w in list(WATCHERS):
        w.stop()
    for st in list(STACK_UP):
        st.down()
        STACK_UP.remove(st)
    ok = True
    for loop in reversed(list(LOOPS)):
        if loop.close():
            LOOPS.remove(loop)
        else:
            ok = False
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--idle", type=int, default=600)
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--burst", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3, help="timed unchanged re-index runs each")
    ap.add_argument("--inotify-limit", type=int, default=50)
    ap.add_argument("--parts", "--only", default="all",
                    help=f"comma-separated: {', '.join(PARTS)}; reindex = both re-index parts")
    ap.add_argument("--out", default=str(ROOT / "bench/results/watch"))
    args = ap.parse_args()
    parts = parse_parts(args.parts)
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, mount, drop_caches, setpriv, unshare)")
    if args.files < 100:
        raise SystemExit("--files: at least 100 (one folder)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    walk_flag = has_walk_flag()
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(shlex.quote(a) for a in sys.argv),
        "binary": BIN,
        "version": subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.strip(),
        "git": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip(),
        "kernel": os.uname().release, "cpus": os.cpu_count(),
        "files": args.files, "parts": parts, "walk_flag": walk_flag,
        "load_before": load(),
        "damon": " ".join(sorted({p.read_text().strip() for p in
                                  Path("/sys/kernel/mm/damon/admin/kdamonds").glob("*/state")}))
                 or "none",
        "busy_loops": 0,
    }
    name = "watch" if parts == PARTS else "watch-" + "-".join(parts)

    def save():
        results["load_now"] = load()
        (out / f"{name}.json").write_text(json.dumps(results, indent=2, default=str) + "\n")

    log(f"# {results['date']}: {results['version']}, parts {','.join(parts)}, "
        f"--walk {'present' if walk_flag else 'absent'}, load {results['load_before']}")
    base = Path(tempfile.mkdtemp(prefix="seekless-watch-bench-", dir="/var/tmp"))
    clean = False
    try:
        ext4 = None
        if "reindex-loop" in parts:
            ext4 = reindex_loop(base, args.files, args.reps, walk_flag, results, save)
        if "reindex-hdd" in parts:
            reindex_hdd(base, args.files, args.reps, walk_flag, results, save)
        if {"watch", "idle-ns", "burst"} & set(parts) and ext4 is None:
            ext4 = ext4_library(base, args.files, results, save)
        if "watch" in parts:
            part_watch(base, ext4, args.changes, args.idle, results, save)
        if "idle-ns" in parts:
            part_idle_ns(base, ext4, args.idle, results, save)
        if "burst" in parts:
            part_burst(base, ext4, args.burst, results, save)
        if "inotify" in parts:
            part_inotify(base, args.inotify_limit, results, save)
        results["load_after"] = load()
        save()
        (out / f"{name}.md").write_text(markdown(results))
        log(f"written {out / name}.json and .md; load average after {results['load_after']}")
    finally:
        clean = cleanup()
        if clean:
            subprocess.run(["rm", "-rf", "--one-file-system", str(base)])
        else:
            print(f"watch.py: {base} left in place (something there is still mounted)",
                  file=sys.stderr)


if __name__ == "__main__":
    main()
