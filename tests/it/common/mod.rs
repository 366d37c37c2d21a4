//! Shared test fixtures: driving the real binary, scratch directories named after their
//! test ([`scratch!`]), and, on Linux ([`linux`]), real filesystems on loop devices and a
//! lock for tests that drop or measure the page cache.
//!
//! Tests that need root, a tool or a corpus call [`require_root`], [`require_tool`],
//! [`python_with`] or [`skip`]: a test that cannot run fails unless `SEEKLESS_ALLOW_SKIP`
//! allows that skip, and the allowed skips are counted and printed when the run ends
//! ([`skip`]'s module says how).
// Most tests that use these are Linux-only: elsewhere (Windows, macOS) the few portable
// ones leave the rest unused. On Linux every fixture must have a user.
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

#[cfg(target_os = "linux")]
pub mod archive;
#[cfg(target_os = "linux")]
pub mod catalog;
#[cfg(target_os = "linux")]
pub mod cdp;
#[cfg(target_os = "linux")]
mod child;
#[cfg(target_os = "linux")]
pub mod copying;
#[cfg(target_os = "linux")]
pub mod faults;
#[cfg(target_os = "linux")]
pub mod fixtures;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use child::*;
#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(unix)]
mod skip;
#[cfg(target_os = "linux")]
pub mod trees;
#[cfg(target_os = "linux")]
mod verdicts;
#[cfg(unix)]
pub use skip::*;
#[cfg(target_os = "linux")]
pub use verdicts::*;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

#[cfg(unix)]
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A run's standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The run exited with `code` and did not panic.
pub fn assert_exit(o: &Output, code: i32) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit status; stderr:\n{err}");
    assert!(!err.contains("panicked"), "a panic escaped:\n{err}");
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// One line of `seekless order --json`: a file, the disk it is swept with, its offset there
/// (none for a file not located) and how it was located.
#[derive(Debug)]
pub struct OrderLine {
    pub path: std::path::PathBuf,
    pub disk: String,
    pub offset: Option<u64>,
    pub strategy: String,
}

/// `seekless order --json --summary` of `inputs`, which must succeed: the files listed, in
/// the order given, and the summary (stderr).
pub fn order_json<I: AsRef<OsStr>>(
    inputs: impl IntoIterator<Item = I>,
) -> (Vec<OrderLine>, String) {
    let out = run(seekless()
        .args(["order", "--json", "--summary"])
        .args(inputs));
    let listed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            OrderLine {
                path: v["path"].as_str().unwrap().into(),
                disk: v["disk"].as_str().unwrap().to_string(),
                offset: v["offset"].as_u64(),
                strategy: v["strategy"].as_str().unwrap().to_string(),
            }
        })
        .collect();
    (listed, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[cfg(unix)]
pub fn sh(script: &str) -> String {
    let out = run(Command::new("sh").args(["-c", script]));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The seekless binary under test. Under Wine (`ci/cross-check.sh`) this test binary is
/// itself a Windows process and starts `seekless.exe` as any Windows program would: the
/// runner Cargo is given (wine64) is needed only for the test binary.
pub fn seekless() -> Command {
    Command::new(env!("CARGO_BIN_EXE_seekless"))
}

/// What the operating system says about an I/O error, as seekless prints it after a
/// path: without Rust's " (os error N)".
pub fn os_message(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The name of the test function the macro is used in (the last path segment of the
/// enclosing function, closures skipped): `test_name!()` in
/// `it::inputs::usage_errors_exit_2` is `"usage_errors_exit_2"`.
macro_rules! test_name {
    () => {{
        fn f() {}
        fn name_of<T>(_: T) -> &'static str {
            std::any::type_name::<T>()
        }
        let mut name = name_of(f).strip_suffix("::f").unwrap_or("unknown");
        while let Some(outer) = name.strip_suffix("::{{closure}}") {
            name = outer;
        }
        name.rsplit("::").next().unwrap_or(name)
    }};
}
pub(crate) use test_name;

/// A scratch directory named after the test that makes it, removed when dropped:
/// `scratch!()` in the system's temporary directory, `scratch!("/dev/shm")` in the one
/// given. One left behind (a test killed, a mount that would not go) says which test
/// made it: `/tmp/seekless-usage_errors_exit_2-Ab12Cd`.
macro_rules! scratch {
    () => {
        $crate::common::scratch_dir($crate::common::test_name!())
    };
    ($parent:expr) => {
        $crate::common::scratch_dir_in($crate::common::test_name!(), $parent)
    };
}
pub(crate) use scratch;

/// The scratch directory of the test named `test` (helpers shared by several tests pass
/// the name they were given; tests themselves use [`scratch!`]).
pub fn scratch_dir(test: &str) -> tempfile::TempDir {
    scratch_dir_in(test, std::env::temp_dir())
}

/// [`scratch_dir`] in `parent`.
pub fn scratch_dir_in(test: &str, parent: impl AsRef<Path>) -> tempfile::TempDir {
    let parent = parent.as_ref();
    tempfile::Builder::new()
        .prefix(&scratch_prefix(test))
        .tempdir_in(parent)
        .unwrap_or_else(|e| panic!("{test}: scratch directory in {}: {e}", parent.display()))
}

/// A scratch file of the test named `test`, in the system's temporary directory.
pub fn scratch_file(test: &str) -> tempfile::NamedTempFile {
    tempfile::Builder::new()
        .prefix(&scratch_prefix(test))
        .tempfile()
        .unwrap_or_else(|e| panic!("{test}: scratch file: {e}"))
}

fn scratch_prefix(test: &str) -> String {
    format!("seekless-{test}-")
}

/// A small deterministic generator (xorshift) so test corpora are reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

pub fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

#[test]
fn scratch_directories_are_named_after_their_test() {
    let t = scratch!();
    let name = t.path().file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("seekless-scratch_directories_are_named_after_their_test-"),
        "{name}"
    );
    let from_closure = [1].map(|_| test_name!());
    assert_eq!(
        from_closure,
        ["scratch_directories_are_named_after_their_test"]
    );
}
