"""Checked by `mypy --strict` (tests/test_types.py), never run: the stubs' promises."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Tuple, Union

import seekless


def uses() -> None:
    for p, data in seekless.read("/d"):
        s: str = p
        b: bytes = data
    for pb, datab in seekless.read([b"/d"]):
        sb: bytes = pb
        bb: bytes = datab
    for pp, d2 in seekless.read([Path("/d")], errors="yield"):
        s2: str = pp
        either: Union[bytes, OSError] = d2
    for ph, digest in seekless.hash("/d", "sha256"):
        hx: str = digest
    names: List[str] = seekless.order("/d")
    sized: List[Tuple[str, int]] = seekless.order("/d", sizes=True)
    mine: List[str] = seekless.shard(sized, 0, 2)
    mine_b: List[bytes] = seekless.shard(b"/d", 0, 2)
    with seekless.read(os.curdir) as files:
        next(files)
    files.close()
