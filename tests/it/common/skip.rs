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
//! ## Tiers
//!
//! The slow groups ([`GROUPS`]: `root`, `fuse`, `chromium`, `slow`, `corpus`) run only when
//! `SEEKLESS_TESTS` names them (`SEEKLESS_TESTS=root,chromium`, or `all`); plain
//! `cargo test` runs the fast tier, the tests in none of them, and counts the others at
//! the end as not run in this tier (never a failure). `ci/test` and CI select them all
//! (`SEEKLESS_REQUIRE_ROOT_TESTS=1` selects every group too). A test in a selected group
//! still needs what it needs: without it, it fails as above.
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

/// The slow groups of tests, each with what its tests need; `SEEKLESS_TESTS` selects them
/// (the tiers: see the module's documentation).
pub const GROUPS: [(&str, &str); 5] = [
    ("root", "real filesystems on loop devices, mounts: root"),
    ("fuse", "FUSE mounts: the fault harness's seeds (root too)"),
    ("chromium", "the contact sheet in headless Chromium"),
    (
        "slow",
        "tens of seconds each by nature: 200,000-entry trees and manifests, a tree deeper \
         than PATH_MAX, an 8 GiB sparse file, a lock waited out",
    ),
    (
        "corpus",
        "the corpora .ci/fetch-corpora fetches and the Python references ci/test installs",
    ),
];

/// Whether the slow group `group` runs here: `SEEKLESS_TESTS` names it or says `all`, or
/// CI's `SEEKLESS_REQUIRE_ROOT_TESTS=1` is set.
pub fn group_selected(group: &str) -> bool {
    assert!(
        GROUPS.iter().any(|(g, _)| *g == group),
        "{group}: not a test group"
    );
    let ci = std::env::var_os("SEEKLESS_REQUIRE_ROOT_TESTS").is_some_and(|v| v == "1");
    selects(std::env::var("SEEKLESS_TESTS").ok().as_deref(), ci, group)
}

/// Whether `SEEKLESS_TESTS=list` (or its absence), with CI's setting or without, selects
/// `group`: the rule of [`group_selected`].
pub fn selects(list: Option<&str>, ci: bool, group: &str) -> bool {
    ci || list.is_some_and(|list| {
        list.split(',')
            .map(str::trim)
            .any(|g| g == "all" || g == group)
    })
}

/// Whether the test named `test`, of the slow group `group`, runs in this tier; when it
/// does not, it is counted for the tally at exit (never a failure).
pub fn in_group(test: &str, group: &str) -> bool {
    if group_selected(group) {
        return true;
    }
    record(Skipped {
        test: test.to_string(),
        need: format!("group:{group}"),
        why: "not in this tier".to_string(),
        allowed: true,
    });
    false
}

/// Keeps `skipped` for the tally printed at exit.
fn record(skipped: Skipped) {
    SKIPPED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(skipped);
    TALLY_AT_EXIT.call_once(|| {
        // SAFETY: registers a plain `extern "C" fn()` with no arguments, which touches
        // only this module's statics.
        unsafe { libc::atexit(print_tally) };
    });
}
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
    record(Skipped {
        test: test.clone(),
        need: need.to_string(),
        why: why.to_string(),
        allowed,
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
    // Not run in this tier: a count per group (the tests are many, and none failed).
    let mut groups: Vec<String> = Vec::new();
    for (group, _) in GROUPS {
        let need = format!("group:{group}");
        let n = skipped.iter().filter(|s| s.need == need).count();
        if n > 0 {
            groups.push(format!("{group} {n}"));
        }
    }
    if !groups.is_empty() {
        text.push_str(&format!(
            "\nseekless tests: not run in this tier (slow groups): {}; \
             SEEKLESS_TESTS=all (or a list of groups) runs them\n",
            groups.join(", ")
        ));
    }
    let skipped: Vec<&Skipped> = skipped
        .iter()
        .filter(|s| !s.need.starts_with("group:"))
        .collect();
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
    in_group(test, "root")
        && (super::is_root() || skip(test, "root", "needs root (loop devices, mount)"))
}

/// Whether a tool is on PATH; a skip otherwise (see [`skip`]).
pub fn require_tool(test: &str, tool: &str) -> bool {
    if tool == "chromium" && !in_group(test, "chromium") {
        return false;
    }
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
/// Tried in turn: `$SEEKLESS_PYTHON`, the project's own venv that `ci/test` makes
/// (`target/test-venv`, which sees Debian's python3-pil), the `python3` first on PATH
/// (a pyenv or virtualenv one may not see Debian's python3-pil), Debian's own.
pub fn python_with(test: &str, modules: &[&str]) -> Option<&'static str> {
    let imports = |python: &str, modules: &[&str]| {
        std::process::Command::new(python)
            .args(["-c", &format!("import {}", modules.join(", "))])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let pythons = pythons();
    if let Some(python) = pythons.iter().copied().find(|p| imports(p, modules)) {
        return Some(python);
    }
    let missing = modules
        .iter()
        .find(|m| !pythons.iter().any(|p| imports(p, &[m])))
        .unwrap_or(&modules[0]);
    let package = match *missing {
        "PIL" => "Python's Pillow (Debian's python3-pil)",
        "imagehash" => "Python's imagehash (ci/test installs it in target/test-venv)",
        _ => "a Python module",
    };
    skip(
        test,
        &format!("python:{missing}"),
        &format!("needs {package}: no python3 imports {}", modules.join(", ")),
    );
    None
}

/// The Pythons [`python_with`] tries, in order (made once per test process).
fn pythons() -> &'static [&'static str] {
    static PYTHONS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    PYTHONS.get_or_init(|| {
        let own = std::env::var("SEEKLESS_PYTHON").ok().into_iter();
        let venv =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-venv/bin/python3");
        let venv = venv
            .exists()
            .then(|| venv.to_string_lossy().into_owned())
            .into_iter();
        own.chain(venv)
            .map(|p| &*Box::leak(p.into_boxed_str()))
            .chain(["python3", "/usr/bin/python3"])
            .collect()
    })
}
