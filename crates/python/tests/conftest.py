"""Fixtures: a tree with every kind of file the module must get right, and what Python's
own reading says about it."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

# Larger than half the reader's 64 MiB window: streamed in pieces, not handed over whole.
LARGE = 40 << 20
NON_UTF8 = b"caf\xe9-\xff.bin"


def threads() -> int:
    """Threads of this process now."""
    return len(os.listdir("/proc/self/task"))


def regular_files(root: Path) -> set[bytes]:
    """Every regular file under root as Python's os.walk finds it (symbolic links inside
    not followed, as seekless does), as bytes paths."""
    found = set()
    for d, _, names in os.walk(os.fsencode(root)):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                found.add(p)
    return found


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Empty, small, large (> window), sparse and non-UTF-8-named files, nested
    directories, a symbolic link inside (not followed) and a FIFO inside (skipped)."""
    root = tmp_path_factory.mktemp("tree")
    rng = random.Random(34)
    (root / "empty").write_bytes(b"")
    (root / "one").write_bytes(b"x")
    for i in range(300):
        sub = root / f"d{i % 7}" / f"e{i % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i}").write_bytes(rng.randbytes(rng.randrange(0, 300_000)))
    (root / "large").write_bytes(rng.randbytes(LARGE))
    with open(root / "sparse", "wb") as f:
        f.truncate(8 << 20)
        f.seek(3 << 20)
        f.write(rng.randbytes(70_000))
    with open(os.path.join(os.fsencode(root), NON_UTF8), "wb") as f:
        f.write(rng.randbytes(5000))
    os.symlink(root / "one", root / "link-to-one")
    os.mkfifo(root / "fifo")
    return root
