# The extension module's types: what seekless/__init__.py calls. The public API and its
# documentation are in __init__.pyi.
from types import TracebackType
from typing import Generic, List, Optional, Tuple, Type, TypeVar

_P = TypeVar("_P", str, bytes)
_D = TypeVar("_D")

class FileChangedError(OSError):
    """A file changed while it was read (its size, modification or status-change time
    moved, or another file took its path): its bytes or digest are not given."""

class Files(Generic[_P, _D]):
    """An iterator of ``(path, data)`` in physical order (``read``: ``data`` is ``bytes``;
    ``hash``: a hex digest ``str``; with ``errors="yield"`` a failed file's ``OSError``).

    Nothing starts until the first ``next()``. ``close()``, leaving a ``with`` block, or
    dropping the last reference stops the sweeps and joins their threads. Usable only in
    the process that made it (a forked child gets ``RuntimeError``); not to be shared
    between threads (a second thread's ``next()`` while one is running raises
    ``RuntimeError``)."""

    def __iter__(self) -> Files[_P, _D]: ...
    def __next__(self) -> Tuple[_P, _D]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Files[_P, _D]: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

def read(paths: List[bytes], as_bytes: bool, errors: str) -> Files[str, bytes]: ...
def hash(paths: List[bytes], as_bytes: bool, algo: str, errors: str) -> Files[str, str]: ...
def order(
    paths: List[bytes], as_bytes: bool
) -> Tuple[List[Tuple[str, int]], List[OSError]]: ...
