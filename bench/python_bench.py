#!/usr/bin/env python3
"""One contender of bench/python.sh, run as its own process so that each starts cold.

  python_bench.py MODE DIR        # MODE: seekless-read, seekless-hash, loop, pool2, pool8
  python_bench.py manifest FILE DIR  # the same summary line for `seekless hash` output
  python_bench.py evict DIR       # drop DIR's files from the page cache (POSIX_FADV_DONTNEED)

Every contender consumes every byte of every file: it computes the file's BLAKE3 (the
`blake3` package, one thread; `seekless-hash` computes it in Rust as `seekless hash`
does). It prints one JSON line: mode, seconds (the work only: from before the first
path is looked at to after the last digest; interpreter start-up and imports excluded),
files, bytes, and one SHA-256 over the sorted (path, digest) pairs, so the script checks
that every contender read the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time

from blake3 import blake3


def summary(pairs: list[tuple[str, str]], root: str) -> str:
    h = hashlib.sha256()
    for path, digest in sorted((os.path.relpath(p, root), d) for p, d in pairs):
        h.update(f"{path}\0{digest}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def directory_order(root: str) -> list[str]:
    """os.walk order: what a plain script, or a DataLoader over a file list, reads in."""
    out = []
    for d, _, names in os.walk(root):
        out.extend(os.path.join(d, n) for n in names)
    return out


def read_and_hash(path: str) -> tuple[str, str, int]:
    with open(path, "rb") as f:
        data = f.read()
    return path, blake3(data).hexdigest(), len(data)


def run(mode: str, root: str) -> dict[str, object]:
    pairs: list[tuple[str, str]] = []
    total = 0
    start = time.perf_counter()
    if mode == "seekless-read":
        import seekless

        for path, data in seekless.read(root):
            pairs.append((path, blake3(data).hexdigest()))
            total += len(data)
    elif mode == "seekless-hash":
        import seekless

        for path, digest in seekless.hash(root, "blake3"):
            pairs.append((path, digest))  # bytes not counted: never in Python
    elif mode == "loop":
        for path in directory_order(root):
            p, d, n = read_and_hash(path)
            pairs.append((p, d))
            total += n
    elif mode in ("pool2", "pool8"):
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(int(mode[4:])) as pool:
            # Workers take paths in directory order, a few at a time, as DataLoader
            # workers take a map-style dataset's indices in batches.
            for p, d, n in pool.imap_unordered(read_and_hash, directory_order(root), chunksize=4):
                pairs.append((p, d))
                total += n
    else:
        raise SystemExit(f"unknown mode {mode}")
    took = time.perf_counter() - start
    return {"mode": mode, "seconds": took, "files": len(pairs), "bytes": total, "summary": summary(pairs, root)}


def main() -> None:
    mode = sys.argv[1]
    if mode == "evict":
        for path in directory_order(sys.argv[2]):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        return
    if mode == "manifest":
        pairs = []
        with open(sys.argv[2], "rb") as f:
            for line in f:
                digest, path = line.rstrip(b"\n").split(b"  ", 1)
                pairs.append((os.fsdecode(path), digest.decode()))
        print(json.dumps({"mode": "seekless-cli", "files": len(pairs), "summary": summary(pairs, sys.argv[3])}))
        return
    print(json.dumps(run(mode, sys.argv[2])))


if __name__ == "__main__":
    main()
