//! `seekless._seekless`: the extension module under the Python package `seekless`
//! (`python/seekless/__init__.py` is the public API and its documentation; this is the
//! engine it calls). Everything here is on `seekless-core`'s public surface: a
//! [`Plan`] (walk, locate, plan) and a [`Reader`] (the sweeps), plus `seekless-jobs`'
//! digest algorithms; nothing of planning or reading is repeated.
//!
//! Decisions (docs/python.md says them for users):
//!
//! - **No thread before first use.** `read()` and `hash()` only store their inputs; the
//!   plan (whose walk runs threads) and the reader (sweep threads) are made on the first
//!   `next()`, so a process that imports seekless, or makes an iterator, and then forks
//!   is safe. `order()` runs and joins every thread it starts before it returns.
//! - **An iterator belongs to the process that made it**: used in a forked child it
//!   raises, and dropped there it is leaked, not dropped: its sweep threads do not exist
//!   in the child, and joining them would wait forever.
//! - **The GIL is released** while planning, while waiting for the next file and while
//!   reading or hashing it; it is held only to make the objects handed to Python.
//! - **`bytes` made once**: a file's `bytes` object is allocated at its planned size and
//!   the file is read straight into it (no intermediate buffer, not even zeroed first:
//!   `FileReader::read_uninit`), the GIL released. A
//!   buffer object over the reader's block was not possible: the buffer protocol is in
//!   the stable ABI only from Python 3.11, and the wheels are abi3 from 3.9.
//! - **Dropping the iterator stops the sweeps** (the `Reader`'s drop cancels its windows
//!   and joins its threads); `close()` does it at once, without waiting for the garbage
//!   collector.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use seekless_core::read::{FileReader, ReadOptions, Reader};
use seekless_core::{Error, ErrorKind, Order, Plan, PlanOptions, Reporter};
use seekless_jobs::digest::Algorithm;
use seekless_jobs::hash::hash_reader;
use seekless_sys::{path_from_bytes, path_to_bytes};

create_exception!(
    seekless,
    FileChangedError,
    PyOSError,
    "A file changed while it was read (its size, modification or status-change time \
     moved, or another file took its path): its bytes or digest are not given."
);

/// One path's failure, kept without the GIL and turned into a Python exception when
/// handed over ([`Error`] holds an `io::Error`, which cannot be cloned out of a
/// [`Reporter`] call).
struct Failure {
    path: PathBuf,
    errno: Option<i32>,
    message: String,
    changed: bool,
}

impl Failure {
    fn of(err: &Error) -> Failure {
        let errno = match err.kind() {
            ErrorKind::Io(e) => e.raw_os_error(),
            ErrorKind::SymlinkLoop { .. } => Some(libc_eloop()),
            _ => None,
        };
        Failure {
            path: err.path().to_path_buf(),
            errno,
            message: err.message(),
            changed: matches!(err.kind(), ErrorKind::Changed(_)),
        }
    }

    /// The exception: `OSError(errno, strerror, filename)` (Python picks the subclass by
    /// errno: `FileNotFoundError`, `PermissionError`, …) when the OS gave an errno;
    /// `FileChangedError` for a file that changed; otherwise `OSError` with no errno.
    fn to_pyerr(&self, py: Python<'_>, as_bytes: bool) -> PyErr {
        let filename = path_object(py, &self.path, as_bytes);
        match (self.errno, self.changed) {
            (Some(errno), false) => {
                PyOSError::new_err((errno, strerror(errno, &self.message), filename))
            }
            (_, changed) => {
                // Python's own form: errno None, the message as strerror, the path as
                // filename (`str()`: "[Errno None] MESSAGE: 'PATH'").
                let args = (None::<i32>, self.message.clone(), filename);
                if changed {
                    FileChangedError::new_err(args)
                } else {
                    PyOSError::new_err(args)
                }
            }
        }
    }
}

/// ELOOP, for a symbolic link loop found by the walk (a loop has no errno of its own).
#[cfg(unix)]
fn libc_eloop() -> i32 {
    libc::ELOOP
}

#[cfg(not(unix))]
fn libc_eloop() -> i32 {
    40
}

/// The OS's text for `errno` as Python's own `OSError` gives it (`os.strerror`), falling
/// back to the message seekless made.
fn strerror(errno: i32, fallback: &str) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    // io::Error's Display is "TEXT (os error N)": keep the text.
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => fallback.to_string(),
    }
}

/// A path as Python is handed it: `bytes` if the caller gave bytes, else `str` decoded
/// as `os.fsdecode` does (undecodable bytes as lone surrogates, `surrogateescape`), so
/// that `os.fsencode` gives the exact bytes back.
fn path_object(py: Python<'_>, path: &Path, as_bytes: bool) -> Py<PyAny> {
    if as_bytes {
        PyBytes::new(py, &path_to_bytes(path)).into_any().unbind()
    } else {
        match path.as_os_str().into_pyobject(py) {
            Ok(s) => s.into_any().unbind(),
            // Not expected on Unix (every byte string decodes with surrogateescape).
            Err(_) => PyString::new(py, &path.to_string_lossy())
                .into_any()
                .unbind(),
        }
    }
}

/// Collects planning errors (missing inputs, unreadable directories) for the caller.
#[derive(Default)]
struct Collect(Mutex<Vec<Failure>>);

impl Reporter for Collect {
    fn error(&self, err: &Error) {
        seekless_sys::sync::lock(&self.0).push(Failure::of(err));
    }
}

impl Collect {
    fn into_failures(self) -> Vec<Failure> {
        self.0.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

/// Walks, locates and plans `inputs` (the GIL must be released by the caller).
fn plan(inputs: &[PathBuf]) -> (Plan, Vec<Failure>) {
    let collect = Collect::default();
    let plan = Plan::build(inputs, &PlanOptions::default(), &collect);
    (plan, collect.into_failures())
}

fn paths_of(raw: Vec<Vec<u8>>) -> Vec<PathBuf> {
    raw.iter().map(|p| path_from_bytes(p)).collect()
}

/// What an iterator makes of each file.
#[derive(Clone, Copy)]
enum Mode {
    /// Its whole content, as `bytes`.
    Read,
    /// Its digest, as lower-case hex.
    Hash(Algorithm),
}

/// Where an iterator is.
enum Stage {
    /// Made, nothing started: no thread, no file open.
    Waiting(Vec<PathBuf>),
    /// Planned and sweeping; planning's failures are handed over first.
    Reading {
        reader: Reader,
        failures: VecDeque<Failure>,
    },
    /// Every file handed over, or closed.
    Done,
}

/// An iterator over files in physical order: `(path, bytes)` from `seekless.read`,
/// `(path, hexdigest)` from `seekless.hash`.
#[pyclass(module = "seekless._seekless")]
struct Files {
    /// The process that made it (see [`Files::check_process`]).
    pid: u32,
    mode: Mode,
    as_bytes: bool,
    /// Errors handed over as values (`errors="yield"`) instead of raised.
    yield_errors: bool,
    /// In a mutex only to be `Sync`, as every pyclass must: `__next__` takes `&mut self`
    /// (PyO3's borrow flag keeps two threads from iterating one object at once) and
    /// reaches it through `get_mut`, without locking.
    stage: Mutex<Stage>,
}

impl Files {
    fn new(paths: Vec<Vec<u8>>, mode: Mode, as_bytes: bool, errors: &str) -> PyResult<Files> {
        let yield_errors = match errors {
            "raise" => false,
            "yield" => true,
            other => {
                return Err(PyValueError::new_err(format!(
                    "errors must be \"raise\" or \"yield\", not {other:?}"
                )));
            }
        };
        Ok(Files {
            pid: std::process::id(),
            mode,
            as_bytes,
            yield_errors,
            stage: Mutex::new(Stage::Waiting(paths_of(paths))),
        })
    }

    fn stage(&mut self) -> &mut Stage {
        self.stage.get_mut().unwrap_or_else(|p| p.into_inner())
    }

    /// An iterator's threads live in the process that started them: in a forked child
    /// they do not exist, and its files and channel belong to the parent's run.
    fn check_process(&self) -> PyResult<()> {
        let now = std::process::id();
        if now == self.pid {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "this seekless iterator was made in process {} and cannot be used in process \
                 {now} (a forked child): call seekless.read() or seekless.hash() in the child",
                self.pid
            )))
        }
    }

    /// A failure, handed over as `errors=` asks: `Ok(item)` or `Err(exception)`.
    fn failure(&self, py: Python<'_>, f: &Failure) -> PyResult<Option<(Py<PyAny>, Py<PyAny>)>> {
        let err = f.to_pyerr(py, self.as_bytes);
        if self.yield_errors {
            let path = path_object(py, &f.path, self.as_bytes);
            Ok(Some((path, err.into_value(py).into_any())))
        } else {
            Err(err)
        }
    }
}

/// A pointer to a fresh `bytes` object's contents, carried across `Python::detach`.
struct Fill(*mut u8, usize);
// SAFETY: the pointer is to the storage of a `bytes` object made by this thread and not
// yet handed to Python: nothing else can reach it, so the thread that fills it while the
// GIL is released is its only user; the object itself stays alive on this thread's stack
// (the `Bound` in `__next__`) until the fill is over.
unsafe impl Send for Fill {}

impl Fill {
    /// Reads the file into the storage, to its planned size, then checks it did not change
    /// ([`FileReader::finish`]: a shorter, longer or rewritten file is an error). Returns
    /// the bytes read: fewer than the size only where sizes are not lengths (procfs,
    /// sysfs), where whatever was read is the content.
    fn read(self, mut file: FileReader) -> Result<usize, Error> {
        let dst: &mut [MaybeUninit<u8>] = if self.1 == 0 {
            // An empty file gets the shared empty bytes object: nothing to write there,
            // but the file is still read to its end and checked.
            &mut []
        } else {
            // SAFETY: `self.0` points to `self.1` writable bytes (PyBytes_AsString of an
            // object of that size), exclusively ours (see `Fill`'s Send); as
            // `MaybeUninit<u8>` they need not be initialised yet.
            unsafe { std::slice::from_raw_parts_mut(self.0.cast::<MaybeUninit<u8>>(), self.1) }
        };
        let mut at = 0;
        while at < dst.len() {
            match file.read_uninit(&mut dst[at..]) {
                Ok(0) => break,
                Ok(n) => at += n,
                Err(e)
                    if e.io_error().map(|e| e.kind()) == Some(std::io::ErrorKind::Interrupted) =>
                {
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        if at < dst.len() {
            // Short: `finish` says whether that is a change. Zero the rest, so that no
            // uninitialised memory is ever left in an object Python owns.
            dst[at..].fill(MaybeUninit::new(0));
        }
        file.finish().map(|_| at)
    }
}

#[pymethods]
impl Files {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(
        mut slf: PyRefMut<'_, Self>,
        py: Python<'_>,
    ) -> PyResult<Option<(Py<PyAny>, Py<PyAny>)>> {
        slf.check_process()?;
        let this = &mut *slf;
        if let Stage::Waiting(inputs) = this.stage() {
            // First use: plan (the walk's threads) and start the sweeps.
            let inputs = std::mem::take(inputs);
            let (reader, failures) = py.detach(move || {
                let (plan, failures) = plan(&inputs);
                (
                    Reader::new(Arc::new(plan), ReadOptions::default()),
                    failures,
                )
            });
            *this.stage() = Stage::Reading {
                reader,
                failures: failures.into(),
            };
        }
        let Stage::Reading { reader, failures } = this.stage() else {
            return Ok(None);
        };
        if let Some(f) = failures.pop_front() {
            return this.failure(py, &f);
        }
        let next = py.detach(|| reader.next());
        let file = match next {
            None => {
                let done = std::mem::replace(this.stage(), Stage::Done);
                py.detach(move || drop(done));
                return Ok(None);
            }
            Some(Err(e)) => return this.failure(py, &Failure::of(&e)),
            Some(Ok(file)) => file,
        };
        let path = path_object(py, &file.planned().entry.path, this.as_bytes);
        match this.mode {
            Mode::Read => {
                let size = usize::try_from(file.planned().entry.size)
                    .map_err(|_| PyValueError::new_err("file too large for this platform"))?;
                // SAFETY: a new bytes object of `size` bytes, contents uninitialised (NULL
                // source); checked for failure (a MemoryError is raised) below.
                let raw =
                    unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size as _) };
                // SAFETY: `raw` is a new reference or NULL with an exception set, which
                // `from_owned_ptr_or_err` turns into the error.
                let bytes = unsafe { Bound::from_owned_ptr_or_err(py, raw) }?;
                // SAFETY: `raw` is a bytes object (made just above), for which
                // PyBytes_AsString returns its storage of `size` bytes.
                let at = unsafe { pyo3::ffi::PyBytes_AsString(raw) }.cast::<u8>();
                let fill = Fill(at, size);
                let filled = py.detach(move || fill.read(file));
                match filled {
                    Ok(n) if n == size => Ok(Some((path, bytes.unbind()))),
                    // Shorter than its size, and that is its content (procfs, sysfs).
                    Ok(n) => {
                        let whole = bytes.cast_into::<PyBytes>().map_err(PyErr::from)?;
                        let short = PyBytes::new(py, &whole.as_bytes()[..n]);
                        Ok(Some((path, short.into_any().unbind())))
                    }
                    Err(e) => {
                        drop(bytes);
                        this.failure(py, &Failure::of(&e))
                    }
                }
            }
            Mode::Hash(algo) => {
                // Through the reading thread's buffer, reused from file to file.
                match py.detach(move || hash_reader(file, algo)) {
                    Ok(hex) => Ok(Some((path, PyString::new(py, &hex).into_any().unbind()))),
                    Err(e) => this.failure(py, &Failure::of(&e)),
                }
            }
        }
    }

    /// Stops the sweeps and joins their threads now (also what dropping the iterator
    /// does); the iterator is then exhausted. In a forked child it only forgets the run.
    fn close(mut slf: PyRefMut<'_, Self>, py: Python<'_>) {
        let forked = slf.check_process().is_err();
        let stage = std::mem::replace(slf.stage(), Stage::Done);
        if forked {
            std::mem::forget(stage);
        } else {
            py.detach(move || drop(stage));
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        slf: PyRefMut<'_, Self>,
        py: Python<'_>,
        _exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> bool {
        Files::close(slf, py);
        false
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let stage = std::mem::replace(self.stage(), Stage::Done);
        if std::process::id() != self.pid {
            // A forked child: the sweep threads are the parent's; joining them here would
            // wait forever. Leak the run (the child's copy of it is inert).
            std::mem::forget(stage);
            return;
        }
        // The Reader cancels its windows and joins its threads (promptly: a cancelled
        // sweep stops at its next step, at worst one prefetch request). Without the GIL,
        // so other Python threads run meanwhile; where Python cannot be attached to (it is
        // shutting down), with it, as the closure is dropped unrun.
        let _ = Python::try_attach(move |py| py.detach(move || drop(stage)));
    }
}

fn algorithm(name: &str) -> PyResult<Algorithm> {
    match name.to_ascii_lowercase().as_str() {
        "blake3" => Ok(Algorithm::Blake3),
        "sha256" => Ok(Algorithm::Sha256),
        "sha1" => Ok(Algorithm::Sha1),
        "md5" => Ok(Algorithm::Md5),
        _ => Err(PyValueError::new_err(format!(
            "algo must be one of \"blake3\", \"sha256\", \"sha1\", \"md5\", not {name:?}"
        ))),
    }
}

/// `read(paths, as_bytes, errors)`: an iterator of `(path, bytes)`; `paths` already
/// turned into bytes by the Python layer.
#[pyfunction]
fn read(paths: Vec<Vec<u8>>, as_bytes: bool, errors: &str) -> PyResult<Files> {
    Files::new(paths, Mode::Read, as_bytes, errors)
}

/// `hash(paths, as_bytes, algo, errors)`: an iterator of `(path, hexdigest)`.
#[pyfunction]
fn hash(paths: Vec<Vec<u8>>, as_bytes: bool, algo: &str, errors: &str) -> PyResult<Files> {
    Files::new(paths, Mode::Hash(algorithm(algo)?), as_bytes, errors)
}

/// `order(paths, as_bytes)`: `([(path, size)...] in physical order, [exception...])`,
/// every thread started joined before it returns.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn order(
    py: Python<'_>,
    paths: Vec<Vec<u8>>,
    as_bytes: bool,
) -> (Vec<(Py<PyAny>, u64)>, Vec<Py<PyAny>>) {
    let inputs = paths_of(paths);
    let (plan, failures) = py.detach(move || plan(&inputs));
    let files = plan
        .iter(Order::Physical)
        .map(|f| (path_object(py, &f.entry.path, as_bytes), f.entry.size))
        .collect();
    let errors = failures
        .iter()
        .map(|f| f.to_pyerr(py, as_bytes).into_value(py).into_any())
        .collect();
    (files, errors)
}

/// The extension module.
#[pymodule]
fn _seekless(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Files>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(hash, m)?)?;
    m.add_function(wrap_pyfunction!(order, m)?)?;
    m.add("FileChangedError", m.py().get_type::<FileChangedError>())?;
    Ok(())
}
