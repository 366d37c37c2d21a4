//! Locks, and what a poisoned one means here.
//!
//! A lock is poisoned when a thread panicked while holding it. Every panic in a seekless
//! thread is re-raised on the caller's thread (the walk and the reader join their threads
//! and resume the first panic), so the run fails either way; meanwhile the data behind
//! every lock of the crate stays consistent, because each update under a lock is a single
//! push, insert or counter change that a panic cannot leave half done. So a poisoned lock
//! is used as it is, rather than turned into a second panic that would hide the first.

use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, poisoned or not.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks `l` for reading, poisoned or not.
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// Locks `l` for writing, poisoned or not.
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// Takes the value out of a mutex that is no longer shared, poisoned or not.
pub fn into_inner<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Takes the value out of a read-write lock that is no longer shared, poisoned or not.
pub fn into_inner_rw<T>(l: RwLock<T>) -> T {
    l.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Waits on `cv`, poisoned or not.
pub fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(|e| e.into_inner())
}

/// Joins every thread of a scope and re-raises the first panic among them, with its own
/// payload (message), on the caller's thread. Waiting for all first means no thread is
/// left running when the panic moves on.
pub fn join_all<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, T>>) {
    let mut panic = None;
    for h in handles {
        if let Err(payload) = h.join() {
            panic.get_or_insert(payload);
        }
    }
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}

/// Joins one scoped thread, re-raising its panic on the caller's thread.
pub fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|payload| std::panic::resume_unwind(payload))
}

/// The message of a panic's payload (`panic!` with a literal or a format string), or ""
/// for another payload.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}
