//! The test tiers (CONTRIBUTING.md): which slow groups a run selects, and the README's
//! test command refusing what it cannot do.

use crate::common::*;

#[test]
fn plain_cargo_test_is_the_fast_tier_and_seekless_tests_selects_groups() {
    for (group, _) in GROUPS {
        assert!(
            !selects(None, false, group),
            "{group}: not in the fast tier"
        );
        assert!(selects(Some("all"), false, group));
        assert!(selects(None, true, group), "CI selects {group}");
    }
    assert!(selects(Some("root, chromium"), false, "chromium"));
    assert!(selects(Some("root,chromium"), false, "root"));
    assert!(!selects(Some("root,chromium"), false, "fuse"));
    assert!(!selects(Some("rooted"), false, "root"));
    assert!(!selects(Some(""), false, "corpus"));
}

#[cfg(target_os = "linux")]
#[test]
fn ci_test_without_root_says_what_it_needs_in_one_line_and_exits_1() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "setpriv") {
        return;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/test");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "bash"])
        .arg(&script)
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("needs root") && stderr.contains("sudo ci/test"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing done: {:?}", out.stdout);
}

#[cfg(target_os = "linux")]
#[test]
fn ci_test_without_the_network_for_a_first_fetch_says_so_in_one_line_and_exits_1() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "unshare") || !require_tool(test, "curl") {
        return;
    }
    // A network namespace of its own (nothing but a loopback that is down) and an empty
    // corpus cache: the corpora must be fetched and cannot be. The packages step before
    // it finds ci/packages.txt installed (ci/test --setup ran before the tests).
    let t = scratch!();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/test");
    let out = std::process::Command::new("unshare")
        .args(["--net", "bash"])
        .arg(&script)
        .arg("--setup")
        .env("SEEKLESS_CORPORA", t.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.starts_with("ci/test: could not fetch the test corpora")
            && stderr.contains("SEEKLESS_CORPORA"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("Python references"),
        "it stopped at the corpora: {stdout}"
    );
}
