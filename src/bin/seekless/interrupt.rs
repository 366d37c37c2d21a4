//! An interrupted run removes the temporary file it was writing: on SIGINT, SIGTERM or
//! SIGHUP the handler unlinks the one registered path, then ends the process by the same
//! signal with its default action (so the exit status still says what stopped it).
//! `kill -9` cannot be caught: a later run removes what it leaves (see
//! `seekless::jobs::tar::ArchiveFile`).

use std::path::Path;

/// Removes `path` if the process is interrupted before the guard is dropped.
#[must_use = "the path is forgotten when the guard is dropped"]
pub struct RemoveOnSignal(());

#[cfg(unix)]
mod unix {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr;
    use std::sync::Once;
    use std::sync::atomic::{AtomicPtr, Ordering};

    /// The path to remove (a leaked C string: a handler may read it at any moment, on any
    /// thread, so it is never freed), or null.
    static PATH: AtomicPtr<libc::c_char> = AtomicPtr::new(ptr::null_mut());

    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    pub fn register(path: &Path) {
        let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
            return;
        };
        PATH.store(c_path.into_raw(), Ordering::SeqCst);
        static INSTALL: Once = Once::new();
        INSTALL.call_once(install);
    }

    pub fn forget() {
        PATH.store(ptr::null_mut(), Ordering::SeqCst);
    }

    /// Installs [`on_stop`](fn@on_stop) for the signals not ignored.
    pub fn install_stop() {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| install_handler(on_stop));
    }

    /// Async-signal-safe only: an atomic swap; the second time, `sigaction` and `raise`.
    extern "C" fn on_stop(sig: libc::c_int) {
        if super::STOP.swap(true, Ordering::SeqCst) {
            // SAFETY: sigaction and raise are async-signal-safe (signal-safety(7)); the
            // struct is zeroed (SIG_DFL, empty mask).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &action, ptr::null_mut());
                libc::raise(sig);
            }
        }
    }

    fn install() {
        install_handler(on_signal);
    }

    /// Installs `handler` for each of [`SIGNALS`] not ignored when we started (`nohup`
    /// keeps them ignored).
    fn install_handler(handler: extern "C" fn(libc::c_int)) {
        for sig in SIGNALS {
            // SAFETY: sigaction with a zeroed (valid: empty mask, no flags) struct, only
            // to read the current action into `old`.
            let ignored = unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            };
            if ignored {
                continue;
            }
            // SAFETY: the handler is an `extern "C" fn(c_int)` that makes only
            // async-signal-safe calls (see `on_signal`, `on_stop`); the struct is fully
            // initialised (zeroed: empty mask, then the handler and flags set).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(sig, &action, ptr::null_mut());
            }
        }
    }

    /// Async-signal-safe only: an atomic swap, `unlink`, `sigaction`, `raise`.
    extern "C" fn on_signal(sig: libc::c_int) {
        let path = PATH.swap(ptr::null_mut(), Ordering::SeqCst);
        // SAFETY: `path` is null or a NUL-terminated string that is never freed;
        // unlink, sigaction and raise are async-signal-safe (signal-safety(7)). The
        // signal is blocked while its handler runs, so the raised one is delivered, with
        // the default action (the process ends), as soon as the handler returns.
        unsafe {
            if !path.is_null() {
                // The one removal outside `seekless::destructive`: a signal handler can
                // call nothing else. The path is this run's own temporary
                // (`ArchiveFile::temp_path`), registered while it lives.
                #[allow(clippy::disallowed_methods)]
                libc::unlink(path);
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &action, ptr::null_mut());
            libc::raise(sig);
        }
    }
}

impl RemoveOnSignal {
    /// Registers `path` (one at a time: a second registration replaces the first).
    pub fn register(path: &Path) -> RemoveOnSignal {
        #[cfg(unix)]
        unix::register(path);
        #[cfg(not(unix))]
        let _ = path;
        RemoveOnSignal(())
    }
}

impl Drop for RemoveOnSignal {
    fn drop(&mut self) {
        #[cfg(unix)]
        unix::forget();
    }
}

/// A flag set by the first SIGINT, SIGTERM or SIGHUP (`index --watch` ends cleanly when it
/// sees it); a second one ends the process at once, by the signal's default action.
pub fn stop_flag() -> &'static std::sync::atomic::AtomicBool {
    #[cfg(unix)]
    {
        unix::install_stop();
    }
    &STOP
}

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
