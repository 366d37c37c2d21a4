//! Skips that cannot pass silently.
//!
//! A test that cannot run here (no root, a tool or a Python module missing, a corpus not
//! fetched) calls [`skip`] with what it needs. That is a **failure** unless the
//! environment allows that skip:
//!
//! ```sh
//! SEEKLESS_ALLOW_SKIP=root cargo test                  # tests needing root may skip
//! SEEKLESS_ALLOW_SKIP=root,tool:exiftool cargo test    # …and those needing exiftool
//! SEEKLESS_ALLOW_SKIP=tool,python cargo test           # any tool, any Python module
//! SEEKLESS_ALLOW_SKIP=all cargo test                   # anything
//! ```
//!
//! Each need has a name `KIND` or `KIND:WHAT`: `root`, `fuse`, `tool:NAME`,
//! `python:MODULE`, `corpus:NAME`, `space`. An entry of the list allows that name, or
//! every name of its kind when it is the kind alone. `SEEKLESS_REQUIRE_ROOT_TESTS=1`
//! (the older name, still set by `.ci/run`) allows no skip whatever the list says.
//!
//! The failure says which variable would allow it. An allowed skip passes, and when the
//! test binary exits it prints on stderr how many tests skipped and why (as it prints the
//! tests that failed for want of what they need): an `atexit` handler, so the tally
//! follows libtest's own `test result:` line even in a plain `cargo test`, whose capture
//! of test output would hide a line printed by the test itself.

use std::sync::{Mutex, Once};

/// One test that met a need it could not meet.
struct Skipped {
    test: String,
    need: String,
    why: String,
    allowed: bool,
}

static SKIPPED: Mutex<Vec<Skipped>> = Mutex::new(Vec::new());
static TALLY_AT_EXIT: Once = Once::new();

/// Whether `need` (`root`, `tool:exiftool`, …) may be skipped in this environment: the
/// rule the crates' unit tests follow too ([`seekless_core::test_hooks::skip_allowed`]).
pub fn skip_allowed(need: &str) -> bool {
    seekless_core::test_hooks::skip_allowed(need)
}

/// The test named `test` cannot run for want of `need`, for the reason `why`: recorded
/// for the tally printed at exit; returns false (for `if !skip(..) { return }` chains)
/// when the environment allows that skip, and fails the test otherwise.
pub fn skip(test: &str, need: &str, why: &str) -> bool {
    // libtest runs each test on a thread named after its full path (`tar::round_trip…`).
    let test = std::thread::current()
        .name()
        .filter(|name| name.ends_with(test))
        .unwrap_or(test)
        .to_string();
    let allowed = skip_allowed(need);
    SKIPPED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Skipped {
            test: test.clone(),
            need: need.to_string(),
            why: why.to_string(),
            allowed,
        });
    TALLY_AT_EXIT.call_once(|| {
        // SAFETY: registers a plain `extern "C" fn()` with no arguments, which touches
        // only this module's statics.
        unsafe { libc::atexit(print_tally) };
    });
    if !allowed {
        let how = if std::env::var_os("SEEKLESS_REQUIRE_ROOT_TESTS").is_some_and(|v| v == "1") {
            "SEEKLESS_REQUIRE_ROOT_TESTS=1 (CI) allows no skip".to_string()
        } else {
            format!(
                "a test that cannot run fails unless its skip is allowed: \
                 SEEKLESS_ALLOW_SKIP={need} (or =all) cargo test"
            )
        };
        panic!("{test}: cannot run: {why} [{need}]; {how}");
    }
    false
}

/// The tally, on stderr, when the process exits.
extern "C" fn print_tally() {
    use std::io::Write;
    let skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = String::new();
    for (allowed, what) in [
        (true, "skipped (allowed by SEEKLESS_ALLOW_SKIP)"),
        (false, "FAILED for want of what they need"),
    ] {
        let mut lines: Vec<String> = skipped
            .iter()
            .filter(|s| s.allowed == allowed)
            .map(|s| format!("  {}: {} [{}]\n", s.test, s.why, s.need))
            .collect();
        if lines.is_empty() {
            continue;
        }
        lines.sort();
        text.push_str(&format!("\nseekless tests: {} {what}:\n", lines.len()));
        text.extend(lines);
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Whether root-only tests can run; a skip otherwise (see [`skip`]).
pub fn require_root(test: &str) -> bool {
    super::is_root() || skip(test, "root", "needs root (loop devices, mount)")
}

/// Whether a tool is on PATH; a skip otherwise (see [`skip`]).
pub fn require_tool(test: &str, tool: &str) -> bool {
    has_tool(tool)
        || skip(
            test,
            &format!("tool:{tool}"),
            &format!("{tool} is not installed"),
        )
}

/// Whether all the tools are on PATH (see [`require_tool`]).
pub fn require_tools(test: &str, tools: &[&str]) -> bool {
    tools.iter().all(|t| require_tool(test, t))
}

/// Whether `tool` is on PATH.
pub fn has_tool(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A Python 3 that imports every module of `modules` (`["PIL"]`, `["PIL", "imagehash"]`);
/// `None` after a [`skip`] (`python:MODULE`, the first missing one) when there is none.
/// A pyenv or virtualenv `python3` first on PATH may not see Debian's python3-pil, so
/// Debian's own is tried after it.
pub fn python_with(test: &str, modules: &[&str]) -> Option<&'static str> {
    let imports = |python: &str, modules: &[&str]| {
        std::process::Command::new(python)
            .args(["-c", &format!("import {}", modules.join(", "))])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if let Some(python) = ["python3", "/usr/bin/python3"]
        .into_iter()
        .find(|p| imports(p, modules))
    {
        return Some(python);
    }
    let missing = modules
        .iter()
        .find(|m| {
            !["python3", "/usr/bin/python3"]
                .iter()
                .any(|p| imports(p, &[m]))
        })
        .unwrap_or(&modules[0]);
    let package = match *missing {
        "PIL" => "Python's Pillow (Debian's python3-pil)",
        "imagehash" => "Python's imagehash (pip install imagehash)",
        _ => "a Python module",
    };
    skip(
        test,
        &format!("python:{missing}"),
        &format!("needs {package}: no python3 imports {}", modules.join(", ")),
    );
    None
}
