"""The Python module as users call it: every file's bytes and digests against Python's
own reading, errors, paths, cancellation, fork/spawn/forkserver, shard, the docs'
DataLoader example."""

from __future__ import annotations

import ctypes
import gc
import hashlib
import mmap
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import pytest

import seekless
from conftest import NON_UTF8, regular_files, threads

try:
    import blake3 as blake3_module
except ImportError:  # pragma: no cover - CI installs it (.ci/run)
    blake3_module = None

HERE = Path(__file__).resolve().parent
DOCS = HERE.parents[2] / "docs" / "python.md"


def python_digest(path: bytes | str, algo: str) -> str:
    with open(path, "rb") as f:
        data = f.read()
    if algo == "blake3":
        assert blake3_module is not None, "pip install blake3 (the reference BLAKE3)"
        return blake3_module.blake3(data).hexdigest()
    return hashlib.new(algo, data).hexdigest()


# ---- bytes and digests ---------------------------------------------------------------


def test_read_gives_every_regular_file_once_with_pythons_bytes(tree: Path) -> None:
    seen = {}
    for path, data in seekless.read(os.fsencode(tree)):
        assert isinstance(path, bytes) and isinstance(data, bytes)
        assert path not in seen, "a file was yielded twice"
        with open(path, "rb") as f:
            assert f.read() == data, path
        seen[path] = len(data)
    assert set(seen) == regular_files(tree)
    assert seen[os.path.join(os.fsencode(tree), b"empty")] == 0
    assert seen[os.path.join(os.fsencode(tree), b"large")] == 40 << 20
    assert seen[os.path.join(os.fsencode(tree), b"sparse")] == 8 << 20


def test_read_comes_in_the_order_that_order_gives(tree: Path) -> None:
    # One disk here, read by one consumer: read order is the plan's physical order
    # (on a solid-state disk several prefetching lanes may hand files over a little out
    # of it; the set is what is promised there).
    ordered = seekless.order(str(tree))
    read = [p for p, _ in seekless.read(str(tree))]
    assert sorted(read) == sorted(ordered)


@pytest.mark.parametrize("algo", ["blake3", "sha256", "sha1", "md5"])
def test_hash_matches_pythons_digest_of_every_file(tree: Path, algo: str) -> None:
    got = dict(seekless.hash(str(tree), algo))
    assert {os.fsencode(p) for p in got} == regular_files(tree)
    for path, digest in got.items():
        assert digest == python_digest(path, algo), (path, algo)


def test_hash_matches_b3sum(tree: Path) -> None:
    b3sum = shutil.which("b3sum")
    if b3sum is None:
        pytest.skip("b3sum not installed (.ci/run installs it)")
    large = str(tree / "large")
    ((path, digest),) = list(seekless.hash(large))
    assert path == large
    assert subprocess.run([b3sum, "--no-names", large], capture_output=True, check=True).stdout.decode().strip() == digest


def test_unknown_algorithm_is_a_value_error(tree: Path) -> None:
    with pytest.raises(ValueError, match="algo must be one of"):
        seekless.hash(str(tree), "crc32")  # type: ignore[call-overload]


# ---- paths ---------------------------------------------------------------------------


def test_paths_come_back_as_the_type_given(tree: Path) -> None:
    one = tree / "one"
    assert list(seekless.read(str(one))) == [(str(one), b"x")]
    assert list(seekless.read(one)) == [(str(one), b"x")]
    assert list(seekless.read(os.fsencode(one))) == [(os.fsencode(one), b"x")]
    assert list(seekless.read([one])) == [(str(one), b"x")]
    with pytest.raises(TypeError, match="not a mix"):
        seekless.read([str(one), os.fsencode(one)])
    with pytest.raises(TypeError):
        seekless.read([1])  # type: ignore[list-item]


def test_non_utf8_names_round_trip_as_str_and_as_bytes(tree: Path) -> None:
    raw = os.path.join(os.fsencode(tree), NON_UTF8)
    as_str = os.fsdecode(raw)  # lone surrogates for the undecodable bytes
    ((p, data),) = list(seekless.read(as_str))
    assert p == as_str and os.fsencode(p) == raw
    with open(raw, "rb") as f:
        assert f.read() == data
    names = seekless.order(str(tree))
    assert as_str in names
    assert raw in seekless.order(os.fsencode(tree))


def test_a_symbolic_link_named_is_followed_one_inside_a_directory_is_not(tree: Path) -> None:
    link = tree / "link-to-one"
    assert list(seekless.read(str(link))) == [(str(link), b"x")]
    inside = [p for p, _ in seekless.read(str(tree))]
    assert str(link) not in inside and str(tree / "one") in inside


def test_hard_links_and_overlapping_inputs_are_read_once(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"abc")
    os.link(tmp_path / "a", tmp_path / "b")
    got = list(seekless.read([str(tmp_path), str(tmp_path / "a")]))
    assert len(got) == 1 and got[0][1] == b"abc"


# ---- errors --------------------------------------------------------------------------


def test_a_missing_path_raises_and_the_run_goes_on(tree: Path) -> None:
    missing = str(tree / "missing")
    it = seekless.read([missing, str(tree / "one")])
    with pytest.raises(FileNotFoundError) as e:
        next(it)
    assert e.value.filename == missing and e.value.errno == 2
    assert next(it) == (str(tree / "one"), b"x")
    with pytest.raises(StopIteration):
        next(it)


def test_errors_yield_gives_the_exception_in_place_of_the_data(tree: Path) -> None:
    missing = os.fsencode(tree / "missing")
    got = dict(seekless.read([missing, os.fsencode(tree / "one")], errors="yield"))
    assert isinstance(got[missing], FileNotFoundError) and got[missing].filename == missing
    assert got[os.fsencode(tree / "one")] == b"x"
    digests = dict(seekless.hash([missing], errors="yield"))
    assert isinstance(digests[missing], FileNotFoundError)
    with pytest.raises(ValueError, match="errors must be"):
        seekless.read(str(tree), errors="ignore")  # type: ignore[call-overload]


def test_a_fifo_named_is_an_os_error_never_opened(tree: Path) -> None:
    ((path, err),) = list(seekless.read(str(tree / "fifo"), errors="yield"))
    assert isinstance(err, OSError) and err.filename == str(tree / "fifo")
    assert err.errno is None and "not a regular file" in err.strerror


def test_order_raises_the_first_failure_or_ignores_it(tree: Path) -> None:
    with pytest.raises(FileNotFoundError):
        seekless.order([str(tree / "missing"), str(tree / "one")])
    assert seekless.order([str(tree / "missing"), str(tree / "one")], errors="ignore") == [str(tree / "one")]


def _child_said(pid: int, r: int, w: int) -> bytes:
    """What forked child `pid` wrote into the pipe `r`, `w` before it exited."""
    os.close(w)
    with os.fdopen(r, "rb") as f:
        said = f.read()
    os.waitpid(pid, 0)
    return said


def _drop_to_nobody() -> None:
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def test_an_unreadable_file_is_a_permission_error_and_the_rest_is_read() -> None:
    # Not under pytest's tmp_path: its parents are private to root, nobody cannot enter.
    tmp_path = Path(tempfile.mkdtemp(prefix="seekless-py-unreadable-"))
    try:
        unreadable_file_case(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def unreadable_file_case(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"s")
    (tmp_path / "open").write_bytes(b"o")
    os.chmod(tmp_path / "secret", 0)
    os.chmod(tmp_path, 0o755)
    # Root reads anything: as root the reading happens in a forked child that became
    # nobody (the module is imported already; no thread runs yet, so forking is safe).
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            if os.geteuid() == 0:
                _drop_to_nobody()
            got = dict(seekless.read(str(tmp_path), errors="yield"))
            ok = (
                isinstance(got.get(str(tmp_path / "secret")), PermissionError)
                and got.get(str(tmp_path / "open")) == b"o"
                and len(got) == 2
            )
            os.write(w, repr(sorted((k, type(v).__name__) for k, v in got.items())).encode() if not ok else b"ok")
        finally:
            os._exit(0)
    said = _child_said(pid, r, w)
    assert said == b"ok", said


def test_a_file_that_changes_before_its_turn_is_a_file_changed_error(tmp_path: Path) -> None:
    for i in range(20):
        (tmp_path / f"f{i:02}").write_bytes(bytes([i]) * 10_000)
    last = seekless.order(str(tmp_path))[-1]
    it = seekless.read(str(tmp_path), errors="yield")
    next(it)  # planned and sweeping: every file's size is recorded
    with open(last, "ab") as f:
        f.write(b"more")
    got = dict(it)
    assert isinstance(got[last], seekless.FileChangedError), got[last]
    assert isinstance(got[last], OSError) and got[last].filename == last
    assert sum(isinstance(v, bytes) for v in got.values()) == 18


# ---- threads, cancellation, fork, spawn ----------------------------------------------


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """More than the reader's window holds (512 files, 64 MiB): its sweep must wait."""
    root = tmp_path_factory.mktemp("many")
    block = os.urandom(64 << 10)
    for i in range(3000):
        (root / f"{i:04}").write_bytes(block[i % 64 :] + block[: i % 64])
    return root


def test_no_thread_starts_before_the_first_next_and_none_outlives_the_iterator(many: Path) -> None:
    before = threads()
    it = seekless.read(str(many))
    assert threads() == before, "read() started threads before first use"
    next(it)
    assert threads() > before, "the sweep should be running"
    del it
    assert threads() == before, "dropping the iterator left threads behind"


def test_break_close_and_with_stop_the_sweep(many: Path) -> None:
    before = threads()

    def first_three() -> int:
        n = 0
        for _ in seekless.read(str(many)):
            n += 1
            if n == 3:
                break
        return n

    assert first_three() == 3
    gc.collect()  # not needed in CPython (refcounts), kept for other interpreters
    assert threads() == before
    it = seekless.hash(str(many))
    next(it)
    it.close()
    assert threads() == before
    assert list(it) == []
    with seekless.read(str(many)) as it2:
        next(it2)
    assert threads() == before


def cached_pages(path: Path) -> int:
    """Pages of the file in the page cache now: mincore(2) over a mapping of it (mapping
    reads nothing)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    size = path.stat().st_size
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        try:
            vec = (ctypes.c_ubyte * pages)()
            assert libc.mincore(addr, size, vec) == 0, os.strerror(ctypes.get_errno())
            return sum(v & 1 for v in vec)
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def test_a_closed_read_leaves_the_rest_of_the_files_unread(many: Path) -> None:
    # On the disk first: a file still in delayed allocation has no physical place yet, and
    # the order planned before the flush would not be the order the read plans after it.
    os.sync()
    files = [Path(p) for p in seekless.order(str(many))]
    for p in files:
        # Read first: that waits for any read an earlier test's sweep left in flight (its
        # pages are locked until it completes, and cannot be evicted before).
        p.read_bytes()
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    tail = files[len(files) * 2 // 3 :]
    assert sum(cached_pages(p) for p in tail) == 0, "could not evict the files"
    it = seekless.read(str(many))
    for _ in range(3):
        next(it)
    it.close()
    # The window (64 MiB of these 192 MiB) bounds how far the sweep ran ahead: the last
    # third of the files were never read.
    assert sum(cached_pages(p) for p in tail) == 0


def test_an_iterator_alive_at_interpreter_exit_ends_cleanly(many: Path) -> None:
    # Module teardown drops it while Python shuts down: no hang, no panic, exit status 0.
    code = f"import seekless\nit = seekless.read({str(many)!r})\nnext(it)\nkeep = it\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_other_python_threads_run_while_next_reads(many: Path) -> None:
    # With a switch interval of 100 s the main thread keeps the GIL unless it gives it up
    # itself; the loop below gives it up nowhere but inside next(). So the other thread's
    # count can only move while next() runs with the GIL released.
    count = 0
    stop = False

    def spin() -> None:
        nonlocal count
        while not stop:
            count += 1
            time.sleep(0)  # hands the GIL back, and waits for it again

    old = sys.getswitchinterval()
    other = threading.Thread(target=spin)
    sys.setswitchinterval(100.0)
    try:
        other.start()
        # The control: an iterator that never releases the GIL lets it move nowhere.
        still = 0
        for _ in range(100_000):
            before = count
            still += count != before
        assert still == 0, "the other thread ran without the GIL being released"
        moved = 0
        it = seekless.read(str(many))
        while True:
            before = count
            try:
                next(it)
            except StopIteration:
                break
            moved += count != before
    finally:
        stop = True
        other.join()
        sys.setswitchinterval(old)
    assert moved > 0, "no other thread ran during any next(): the GIL was held"


def test_order_and_shard_leave_no_thread(many: Path) -> None:
    before = threads()
    seekless.order(str(many))
    seekless.shard(str(many), 1, 3)
    assert threads() == before


# Forking with the sweep running is the point here; Python ≥ 3.12 warns about it. (No
# other test forks with a thread running: none of them gets this warning.)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_an_iterator_started_in_a_parent_refuses_a_forked_child(many: Path) -> None:
    it = seekless.read(str(many))
    next(it)  # the parent's sweep is running
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: its copy of the iterator must raise, and be dropped without hanging
        code = 1
        try:
            os.close(r)
            try:
                next(it)
            except RuntimeError as e:
                code = 0 if "forked child" in str(e) else 2
            it.close()
            del it  # noqa: F821 - the parent's object, dropped in the child
            gc.collect()
            # The child can read for itself.
            path, data = next(seekless.read(str(many / "0000")))
            with open(path, "rb") as f:
                code = code if f.read() == data else 3
            os.write(w, bytes([code]))
        finally:
            os._exit(0)
    said = _child_said(pid, r, w)
    assert said == b"\x00", said
    # The parent's iterator is unaffected.
    assert sum(1 for _ in it) == 2999


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_workers_read_and_compare_under_each_start_method(tree: Path, method: str) -> None:
    import workers

    # Used in the parent first (threads started and joined), then the children.
    files = sorted(str(p) for p in seekless.order(str(tree)) if "large" not in p)
    halves = [files[::2], files[1::2]]
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        results = pool.map(workers.read_and_compare, halves)
    assert sum(n for n, _, _ in results) == len(files)
    assert all(bad == 0 for _, bad, _ in results)
    assert all(pid != os.getpid() for _, _, pid in results)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_shards_hashed_in_worker_processes_cover_every_file_once(tree: Path, method: str) -> None:
    import workers

    sized = seekless.order(str(tree), sizes=True)
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        parts = pool.map(workers.hash_shard, [(sized, k, 3) for k in range(3)])
    paths = [p for part in parts for p, _ in part]
    # Each file once. (Within a shard, a solid-state disk's prefetching lanes may hand
    # files over a little out of order; this machine's disk is one.)
    assert sorted(paths) == sorted(p for p, _ in sized)
    for k, part in enumerate(parts):
        assert sorted(p for p, _ in part) == sorted(seekless.shard(sized, k, 3))


# ---- shard ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1000])
def test_shards_are_contiguous_runs_balanced_by_bytes(tree: Path, n: int) -> None:
    sized = seekless.order(str(tree), sizes=True)
    shards = [seekless.shard(sized, k, n) for k in range(n)]
    assert [p for s in shards for p in s] == [p for p, _ in sized]
    size = dict(sized)
    weight = [sum(max(size[p], seekless.SHARD_FLOOR) for p in s) for s in shards]
    total = sum(max(s, seekless.SHARD_FLOOR) for _, s in sized)
    biggest = max(max(s, seekless.SHARD_FLOOR) for _, s in sized)
    # Each run ends at the first file crossing its share: at most one file over it.
    assert max(weight) <= total / n + biggest
    # Exactly where the runs end: shard k's last file is the first whose running total
    # reaches (k + 1) / n of the bytes.
    running = 0
    for k, s in enumerate(shards[:-1]):
        if not s:
            continue
        w = [max(size[p], seekless.SHARD_FLOOR) for p in s]
        running += sum(w)
        assert running - w[-1] < total * (k + 1) / n <= running


def test_shard_plans_paths_itself_and_checks_its_arguments(tree: Path) -> None:
    assert seekless.shard(str(tree), 0, 1) == seekless.order(str(tree))
    assert seekless.shard([], 0, 4) == []
    for k, n in [(-1, 2), (2, 2), (0, 0)]:
        with pytest.raises(ValueError):
            seekless.shard(str(tree), k, n)


def test_the_dataloader_example_in_the_docs_gives_each_worker_its_shard(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/python.md's IterableDataset, run with a stand-in for torch: every file once
    # across the workers, with Python's bytes.
    text = DOCS.read_text()
    code = re.search(r"<!-- dataloader-example -->\s*```python\n(.*?)```", text, re.S)
    assert code, "docs/python.md lost its marked DataLoader example"
    fake_info: list[object] = [None]
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch.utils")
    data = types.ModuleType("torch.utils.data")

    class IterableDataset:
        pass

    data.IterableDataset = IterableDataset  # type: ignore[attr-defined]
    data.get_worker_info = lambda: fake_info[0]  # type: ignore[attr-defined]
    torch.utils = utils  # type: ignore[attr-defined]
    utils.data = data  # type: ignore[attr-defined]
    for name, mod in [("torch", torch), ("torch.utils", utils), ("torch.utils.data", data)]:
        monkeypatch.setitem(sys.modules, name, mod)
    scope: dict[str, object] = {}
    exec(compile(code.group(1), str(DOCS), "exec"), scope)
    dataset = scope["Files"](str(tree))  # type: ignore[operator]
    # No workers: the whole order in this process.
    everything = [p for p, _ in dataset]
    assert sorted(everything) == sorted(str(p) for p in seekless.order(str(tree)))
    got = []
    for worker in range(3):
        fake_info[0] = types.SimpleNamespace(id=worker, num_workers=3)
        for path, data_ in dataset:
            with open(path, "rb") as f:
                assert f.read() == data_
            got.append(path)
    assert sorted(got) == sorted(everything) and len(got) == len(set(got))
