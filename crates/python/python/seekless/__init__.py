"""Read many files in the order they lie on their disks: one sweep per disk, the queue
kept full. The Python face of seekless; the decisions behind this API are in the
project's docs/python.md.

    import seekless
    for path, data in seekless.read(paths):      # bytes, in physical order
        ...
    for path, digest in seekless.hash(paths, algo="sha256"):
        ...
    ordered = seekless.order(paths)              # list of paths, physical order
    mine = seekless.shard(seekless.order(paths, sizes=True), k, n)

Paths may be ``str``, ``bytes`` or ``os.PathLike``, files or directories (walked, not
following symbolic links found inside them; a link named as an input is followed). They
come back as ``bytes`` when given as ``bytes``, otherwise as ``str`` (undecodable bytes as
lone surrogates, as ``os.fsdecode`` gives them). Each file is read once, even when reached
twice (hard links, overlapping inputs).

Errors are per file and never stop the run: with ``errors="raise"`` (the default) the
iterator raises the file's ``OSError`` (``FileNotFoundError``, ``PermissionError``, …,
``FileChangedError`` for a file that changed while it was read) and can be resumed with
``next()`` for the files after it; with ``errors="yield"`` the error is yielded in place of
the data, ``(path, exception)``.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from itertools import accumulate
from typing import Iterable, List, Literal, Sequence, Tuple

from . import _seekless
from ._seekless import FileChangedError, Files

__all__ = ["FileChangedError", "Files", "hash", "order", "read", "shard"]

#: A file costs at least this many bytes when shards are balanced: reaching it (a seek,
#: its metadata) costs about what reading a block does.
SHARD_FLOOR = 4096


def _inputs(paths: object) -> Tuple[List[bytes], bool]:
    """Paths as bytes for the engine, and whether they were given as bytes. One path
    (``str``, ``bytes``, ``os.PathLike``) is taken as a list of one, not as characters."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, Iterable):
        raise TypeError(f"paths must be a path or an iterable of paths, not {type(paths).__name__}")
    raw: List[bytes] = []
    kinds = set()
    for p in paths:
        p = os.fspath(p)  # TypeError for what is not a path
        kinds.add(type(p))
        raw.append(p if isinstance(p, bytes) else os.fsencode(p))
    if len(kinds) > 1:
        raise TypeError("paths must be all str (or os.PathLike[str]) or all bytes, not a mix")
    return raw, bytes in kinds


def read(paths: object, *, errors: Literal["raise", "yield"] = "raise") -> Files:
    """Every file under ``paths``, ``(path, data)`` in physical order, ``data`` the whole
    file as ``bytes``. Nothing starts (no thread, no file opened) until the first
    ``next()``; closing or dropping the iterator stops the read."""
    raw, as_bytes = _inputs(paths)
    return _seekless.read(raw, as_bytes, errors)


def hash(  # noqa: A001 - the name users asked for; builtins.hash stays reachable
    paths: object,
    algo: Literal["blake3", "sha256", "sha1", "md5"] = "blake3",
    *,
    errors: Literal["raise", "yield"] = "raise",
) -> Files:
    """``(path, hexdigest)`` for every file under ``paths``, in physical order, as
    ``seekless hash --algo ALGO`` computes them (lower-case hex)."""
    raw, as_bytes = _inputs(paths)
    return _seekless.hash(raw, as_bytes, algo, errors)


def order(
    paths: object,
    *,
    sizes: bool = False,
    errors: Literal["raise", "ignore"] = "raise",
) -> list:   # precise types: __init__.pyi
    """Every file under ``paths``, in physical order: a list of paths, or with
    ``sizes=True`` of ``(path, size)`` (what :func:`shard` balances by). With
    ``errors="raise"`` a path that could not be planned (missing, unreadable directory)
    raises its ``OSError`` once the rest is planned; ``"ignore"`` leaves it out."""
    if errors not in ("raise", "ignore"):
        raise ValueError(f'errors must be "raise" or "ignore", not {errors!r}')
    raw, as_bytes = _inputs(paths)
    files, failures = _seekless.order(raw, as_bytes)
    if failures and errors == "raise":
        raise failures[0]
    if sizes:
        return files
    return [p for p, _ in files]


def shard(paths: object, k: int, n: int) -> list:  # precise types: __init__.pyi
    """The ``k``-th of ``n`` contiguous runs of the physical order (``0 <= k < n``),
    balanced by bytes: each DataLoader worker reads its own stretch of the disk in one
    sweep. ``paths`` is either what ``order(..., sizes=True)`` returned (used as is: plan
    once, in the parent, and every worker shards the same list, so every file is in
    exactly one shard) or paths to plan here. Returns paths, in physical order."""
    if not (isinstance(k, int) and isinstance(n, int)) or n < 1 or not 0 <= k < n:
        raise ValueError(f"shard needs 0 <= k < n, got k={k!r}, n={n!r}")
    sized: Sequence[Tuple[object, int]]
    if isinstance(paths, list) and paths and isinstance(paths[0], tuple):
        sized = paths
    else:
        sized = order(paths, sizes=True)
    # Cut where the running total of bytes crosses k/n and (k+1)/n of the whole.
    ends = list(accumulate(max(size, SHARD_FLOOR) for _, size in sized))
    total = ends[-1] if ends else 0

    def cut(i: int) -> int:
        if i == 0:
            return 0
        if i == n:
            return len(sized)
        # The first file whose run ends at or past i/n of the bytes closes the run.
        return bisect_left(ends, total * i / n) + 1 if total else 0

    start, stop = cut(k), cut(k + 1)
    return [p for p, _ in sized[start:stop]]
