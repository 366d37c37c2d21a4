#!/usr/bin/env python3
"""Random O_DIRECT reads of one block device or file, one at a time (queue depth 1).

    randread.py DEVICE [COUNT] [BLOCK] [SEED]

Prints the mean and median latency in ms. Used to check hddsim's model: with a 7200 rpm
model a random 4 KiB read should cost ~8.5 ms seek + ~4.2 ms rotation + transfer.
"""
import mmap
import os
import random
import statistics
import sys
import time


def main() -> None:
    path = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    block = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT needs
        lat = []
        for _ in range(count):
            off = rng.randrange(size // block) * block
            t0 = time.perf_counter()
            if os.preadv(fd, [buf], off) != block:
                raise SystemExit(f"short read at {off}")
            lat.append((time.perf_counter() - t0) * 1e3)
    finally:
        os.close(fd)
    print(
        f"{count} random {block}-byte reads: mean {statistics.mean(lat):.2f} ms, "
        f"median {statistics.median(lat):.2f} ms, min {min(lat):.2f} ms, max {max(lat):.2f} ms"
    )


if __name__ == "__main__":
    main()
