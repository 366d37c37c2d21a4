//! The core's dependency tree stays light: a program that only wants "read these paths in
//! physical order" compiles no SQLite, image decoder, command-line parser or progress bar.

#[cfg(target_os = "linux")]
#[test]
fn the_core_depends_on_no_sqlite_image_stack_cli_parser_or_progress_bar() {
    let out = std::process::Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--offline", "-p", "seekless-core", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(names.contains(&"seekless-core"), "{tree}");
    for banned in [
        "rusqlite",
        "libsqlite3-sys",
        "image",
        "jpeg-decoder",
        "clap",
        "indicatif",
        "anyhow",
        "seekless-jobs",
        "seekless-catalog",
    ] {
        assert!(
            !names.contains(&banned),
            "the core depends on {banned}:\n{tree}"
        );
    }
}
