//! `seekless dupes --act`: duplicates moved away, put in the trash, hard-linked or
//! reflinked, only when each file and its keeper are still as indexed (read again now);
//! every act journalled and undone by `--undo`; the keeper rules and the user's decisions
//! respected. Checked with the tools people use: `trash-list` (trash-cli), `filefrag`,
//! `stat`, `sqlite3`.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::catalog::query;
use crate::common::*;

/// A tiny GIF, its content told apart by its sides (`w` × `h`).
fn gif(w: u16, h: u16) -> Vec<u8> {
    let mut g = b"GIF89a".to_vec();
    g.extend_from_slice(&w.to_le_bytes());
    g.extend_from_slice(&h.to_le_bytes());
    g.extend_from_slice(b"\0\0\0;");
    g
}

fn put(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn index(db: &Path, dir: &Path) {
    let o = output_within(
        seekless().args(["index", "--db"]).arg(db).arg(dir),
        RUN_LIMIT,
    );
    assert_exit(&o, 0);
}

fn dupes(db: &Path, args: &[&str]) -> Output {
    output_within(
        seekless().args(["dupes", "--db"]).arg(db).args(args),
        RUN_LIMIT,
    )
}

/// `dupes --act move --to DIR --journal JOURNAL`.
fn move_to(db: &Path, dir: &str, journal: &Path) -> Output {
    dupes(
        db,
        &[
            "--act",
            "move",
            "--to",
            dir,
            "--journal",
            journal.to_str().unwrap(),
        ],
    )
}

fn undo(journal: &Path) -> Output {
    output_within(seekless().args(["dupes", "--undo"]).arg(journal), RUN_LIMIT)
}

/// Every file under `dir`, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn nul_list(o: &Output) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = o
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect();
    v.sort();
    v
}

fn ino(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap())
}

fn rows(db: &Path) -> u64 {
    query(db, "SELECT count(*) AS n FROM images")[0]["n"]
        .as_u64()
        .unwrap()
}

fn catalogued(db: &Path, path: &Path) -> bool {
    let p = path.to_string_lossy().replace('\'', "''");
    !query(db, &format!("SELECT id FROM images WHERE path = '{p}'")).is_empty()
}

/// Photos with exact duplicates, some of which change after they are indexed; the
/// catalog; the path of the odd name (an escape sequence and a byte that is not UTF-8).
struct Library {
    photos: PathBuf,
    db: PathBuf,
    odd: PathBuf,
}

fn library(dir: &Path) -> Library {
    let photos = dir.join("photos");
    let odd = photos.join(std::ffi::OsStr::from_bytes(b"copies/f\x1b[31m\xff.gif"));
    for (name, bytes) in [
        ("a.gif", gif(1, 1)),
        ("copies/a.gif", gif(1, 1)),
        ("copies/a2.gif", gif(1, 1)),
        ("b.gif", gif(2, 1)),
        ("copies/b.gif", gif(2, 1)),
        ("c.gif", gif(3, 1)),
        ("copies/c.gif", gif(3, 1)),
        ("d.gif", gif(4, 1)),
        ("copies/d.gif", gif(4, 1)),
        ("e.gif", gif(5, 1)),
        ("f.gif", gif(6, 1)),
    ] {
        put(&photos.join(name), &bytes);
    }
    put(&odd, &gif(6, 1));
    // A second name of e.gif (the walk sees one file): never offered.
    std::fs::hard_link(photos.join("e.gif"), photos.join("copies/e-link.gif")).unwrap();
    let db = dir.join("photos.db");
    index(&db, &photos);
    Library { photos, db, odd }
}

#[test]
fn acting_moves_only_files_still_as_indexed_and_undo_puts_them_back() {
    let dir = scratch!();
    let lib = library(dir.path());
    let p = |rel: &str| lib.photos.join(rel);

    // Offered: every copy but the keeper's own second name.
    let o = dupes(&lib.db, &["-0"]);
    assert_exit(&o, 0);
    let mut want = vec![
        p("copies/a.gif"),
        p("copies/a2.gif"),
        p("copies/b.gif"),
        p("copies/c.gif"),
        p("copies/d.gif"),
        lib.odd.clone(),
    ];
    want.sort();
    assert_eq!(nul_list(&o), want);
    // The text names the odd file escaped (`ls -b`), the keeper's second name kept.
    let o = dupes(&lib.db, &[]);
    let text = String::from_utf8(o.stdout.clone()).expect("escaped text is UTF-8");
    assert!(text.contains("copies/f\\033[31m\\377.gif"), "{text}");
    assert!(!text.contains('\x1b'), "{text}");

    // After indexing: b's copy grows, c's copy changes in place (same size, same time),
    // d's keeper changes.
    let grow = p("copies/b.gif");
    let mut bytes = std::fs::read(&grow).unwrap();
    bytes.push(0);
    std::fs::write(&grow, bytes).unwrap();
    let same_time = |path: &Path, new: Vec<u8>| {
        let before = std::fs::metadata(path).unwrap().modified().unwrap();
        std::fs::write(path, new).unwrap();
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(before)
            .unwrap();
    };
    same_time(&p("copies/c.gif"), gif(3, 9));
    same_time(&p("d.gif"), gif(4, 9));
    let rows_before = rows(&lib.db);
    let before = snapshot(&lib.photos);

    // A dry run prints the plan and changes nothing.
    let moved = dir.path().join("moved");
    let to = moved.to_str().unwrap();
    let o = dupes(&lib.db, &["--act", "move", "--to", to, "--dry-run"]);
    assert_exit(&o, 0);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 6);
    assert_eq!(snapshot(&lib.photos), before);
    assert!(!moved.exists(), "a dry run made the folder");

    let journal = dir.path().join("moves.journal");
    let o = move_to(&lib.db, to, &journal);
    assert_exit(&o, 1);
    let err = stderr(&o);
    for (file, why) in [
        ("copies/b.gif", "changed since it was indexed"),
        ("copies/c.gif", "changed since it was indexed (content)"),
        ("copies/d.gif", "its keeper"),
    ] {
        assert!(
            err.contains(&format!("{}: skipped: {why}", p(file).display())),
            "{file}: {err}"
        );
    }
    // The bytes freed are the moved files' (a.gif's two copies and the odd name's).
    let freed = 2 * gif(1, 1).len() + gif(6, 1).len();
    assert!(freed < 1024, "said in bytes");
    assert!(
        err.contains(&format!("3 files acted on ({freed} B freed)")),
        "{err}"
    );
    // Moved under the folder at their absolute paths, bytes intact; the catalog forgot
    // them and nothing else.
    let under = |path: &Path| moved.join(path.strip_prefix("/").unwrap());
    for (gone, bytes) in [
        (p("copies/a.gif"), gif(1, 1)),
        (p("copies/a2.gif"), gif(1, 1)),
        (lib.odd.clone(), gif(6, 1)),
    ] {
        assert!(!gone.exists(), "{}", gone.display());
        assert_eq!(std::fs::read(under(&gone)).unwrap(), bytes);
        assert!(!catalogued(&lib.db, &gone));
    }
    for kept in ["a.gif", "copies/b.gif", "copies/c.gif", "copies/d.gif"] {
        assert!(p(kept).exists(), "{kept}");
        assert!(catalogued(&lib.db, &p(kept)), "{kept}");
    }
    assert!(p("copies/e-link.gif").exists());
    assert_eq!(rows(&lib.db), rows_before - 3);

    // Undone: every file back as it was; a second undo does nothing.
    let o = undo(&journal);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("3 files put back"), "{}", stderr(&o));
    assert_eq!(snapshot(&lib.photos), before);
    let o = undo(&journal);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).contains("0 files put back, 3 already undone"),
        "{}",
        stderr(&o)
    );

    // Killed after its renames but before it wrote "done": the journal's intents are
    // enough to undo them.
    index(&lib.db, &lib.photos);
    let journal = dir.path().join("killed.journal");
    let o = move_to(&lib.db, to, &journal);
    assert_exit(&o, 1);
    let text = std::fs::read_to_string(&journal).unwrap();
    let cut: String = text
        .lines()
        .filter(|l| !l.starts_with("{\"done\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(cut, text, "the journal recorded its acts as done");
    std::fs::write(&journal, cut).unwrap();
    assert!(!p("copies/a.gif").exists());
    let o = undo(&journal);
    assert_exit(&o, 0);
    assert_eq!(snapshot(&lib.photos), before);
}

#[test]
fn a_move_never_replaces_a_file_and_never_leaves_its_filesystem() {
    let dir = scratch!();
    let lib = library(dir.path());
    let moved = dir.path().join("moved");
    // Something is already where copies/a.gif would go.
    let there = moved.join(lib.photos.join("copies/a.gif").strip_prefix("/").unwrap());
    put(&there, b"not ours");
    let o = dupes(
        &lib.db,
        &[
            "--act",
            "move",
            "--to",
            moved.to_str().unwrap(),
            "--journal",
            dir.path().join("j").to_str().unwrap(),
        ],
    );
    assert_exit(&o, 1);
    assert_eq!(std::fs::read(&there).unwrap(), b"not ours");
    assert!(lib.photos.join("copies/a.gif").exists());
    assert!(!lib.photos.join("copies/a2.gif").exists());
    if !require_root("a_move_never_replaces_a_file_and_never_leaves_its_filesystem") {
        return;
    }
    // A folder on another filesystem: nothing moved (a move is a rename, never a copy).
    let other = Mounted::tmpfs(&dir.path().join("other"), "size=4m");
    let o = dupes(
        &lib.db,
        &[
            "--act",
            "move",
            "--to",
            other.0.to_str().unwrap(),
            "--journal",
            dir.path().join("j2").to_str().unwrap(),
        ],
    );
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains("is on another filesystem or mount: not moved"),
        "{}",
        stderr(&o)
    );
    assert!(lib.photos.join("copies/a.gif").exists());
    // And nothing was made there.
    assert_eq!(std::fs::read_dir(&other.0).unwrap().count(), 0);
}

#[test]
fn trashed_duplicates_are_listed_by_trash_cli_and_put_back_by_undo() {
    let test = "trashed_duplicates_are_listed_by_trash_cli_and_put_back_by_undo";
    if !require_root(test) || !require_tool(test, "trash-list") {
        return;
    }
    let fs = LoopFs::new(test, "ext4", 64);
    let dir = scratch!();
    let photos = fs.path("photos");
    put(&photos.join("a.gif"), &gif(1, 1));
    put(&photos.join("old/a.gif"), &gif(1, 1));
    let db = dir.path().join("photos.db");
    index(&db, &photos);
    // The home trash is on another filesystem than the photos: the trash at the top of
    // theirs is used.
    let home = dir.path().join("data");
    std::fs::create_dir_all(&home).unwrap();
    let journal = dir.path().join("trash.journal");
    let act = |args: &[&str]| {
        output_within(
            seekless()
                .env("XDG_DATA_HOME", &home)
                .args(["dupes", "--db"])
                .arg(&db)
                .args(args),
            RUN_LIMIT,
        )
    };
    let o = act(&["--act", "trash", "--journal", journal.to_str().unwrap()]);
    assert_exit(&o, 0);
    let trash = fs.path(".Trash-0");
    let info = std::fs::read_to_string(trash.join("info/a.gif.trashinfo")).unwrap();
    let mut lines = info.lines();
    assert_eq!(lines.next(), Some("[Trash Info]"));
    assert_eq!(lines.next(), Some("Path=photos/old/a.gif"));
    let date = lines.next().unwrap().strip_prefix("DeletionDate=").unwrap();
    assert_eq!(date.len(), 19, "{date}");
    assert_eq!(std::fs::read(trash.join("files/a.gif")).unwrap(), gif(1, 1));
    assert!(!photos.join("old/a.gif").exists());
    let list = |what: &str| {
        let o = run(Command::new("trash-list").env("XDG_DATA_HOME", &home));
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines()
            .filter(|l| l.ends_with(what))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let old = photos.join("old/a.gif");
    let shown = list(old.to_str().unwrap());
    assert_eq!(shown.len(), 1, "trash-list: {shown:?}");
    assert!(shown[0].starts_with(&date[..10]), "{shown:?}");

    let o = undo(&journal);
    assert_exit(&o, 0);
    assert_eq!(std::fs::read(&old).unwrap(), gif(1, 1));
    assert!(!trash.join("info/a.gif.trashinfo").exists());
    assert!(!trash.join("files/a.gif").exists());
    assert!(list(old.to_str().unwrap()).is_empty());

    // On the home's filesystem: the home trash, the path absolute.
    let home = fs.path("home/.local/share");
    index(&db, &photos);
    let o = output_within(
        seekless()
            .env("XDG_DATA_HOME", &home)
            .args(["dupes", "--db"])
            .arg(&db)
            .args([
                "--act",
                "trash",
                "--journal",
                dir.path().join("j2").to_str().unwrap(),
            ]),
        RUN_LIMIT,
    );
    assert_exit(&o, 0);
    let info = std::fs::read_to_string(home.join("Trash/info/a.gif.trashinfo")).unwrap();
    assert!(
        info.contains(&format!("\nPath={}\n", old.display())),
        "{info}"
    );
    assert!(home.join("Trash/files/a.gif").exists());
}

#[test]
fn hard_links_and_reflinks_share_the_keeper_only_where_the_filesystem_can() {
    let test = "hard_links_and_reflinks_share_the_keeper_only_where_the_filesystem_can";
    if !require_root(test) || !require_tool(test, "filefrag") {
        return;
    }
    let dir = scratch!();
    for kind in ["btrfs", "ext4"] {
        let fs = LoopFs::new(test, kind, 128);
        let photos = fs.path("photos");
        // Large enough to have extents of its own (not inlined in the metadata).
        let mut big = gif(7, 7);
        big.extend((0..300_000u32).map(|i| (i * 7 % 251) as u8));
        put(&photos.join("a.gif"), &big);
        put(&photos.join("copy/a.gif"), &big);
        put(&photos.join("b.gif"), &gif(2, 2));
        put(&photos.join("copy/b.gif"), &gif(2, 2));
        let db = dir.path().join(format!("{kind}.db"));
        index(&db, &photos);
        run(&mut Command::new("sync"));
        let journal = dir.path().join(format!("{kind}-reflink.journal"));
        let o = dupes(
            &db,
            &["--act", "reflink", "--journal", journal.to_str().unwrap()],
        );
        if kind == "btrfs" {
            assert_exit(&o, 0);
            run(&mut Command::new("sync"));
            let frag = run(Command::new("filefrag")
                .arg("-v")
                .arg(photos.join("copy/a.gif")));
            assert!(
                String::from_utf8_lossy(&frag.stdout).contains("shared"),
                "{}",
                String::from_utf8_lossy(&frag.stdout)
            );
            assert_eq!(std::fs::read(photos.join("copy/a.gif")).unwrap(), big);
            assert_ne!(ino(&photos.join("copy/a.gif")), ino(&photos.join("a.gif")));
        } else {
            // ext4 cannot share extents: said, and nothing changed.
            assert_exit(&o, 1);
            assert!(stderr(&o).contains("skipped"), "{}", stderr(&o));
            assert_eq!(std::fs::read(photos.join("copy/a.gif")).unwrap(), big);
        }
        // Hard links: one inode; an undo cannot split them and says so.
        index(&db, &photos);
        let journal = dir.path().join(format!("{kind}-link.journal"));
        let o = dupes(
            &db,
            &["--act", "hardlink", "--journal", journal.to_str().unwrap()],
        );
        assert_exit(&o, 0);
        for name in ["a.gif", "b.gif"] {
            assert_eq!(
                ino(&photos.join(name)),
                ino(&photos.join("copy").join(name))
            );
        }
        assert_eq!(std::fs::read(photos.join("copy/a.gif")).unwrap(), big);
        let o = undo(&journal);
        assert_exit(&o, 0);
        assert!(
            stderr(&o).contains("2 hard links and reflinks cannot be undone"),
            "{}",
            stderr(&o)
        );
        // Linked already: nothing more to do (the catalog may remember the old inode of a
        // second name, which the walk does not look at again).
        index(&db, &photos);
        let journal = dir.path().join(format!("{kind}-again.journal"));
        let o = dupes(
            &db,
            &["--act", "hardlink", "--journal", journal.to_str().unwrap()],
        );
        assert_exit(&o, 0);
        assert!(stderr(&o).contains("(0 B freed)"), "{}", stderr(&o));
        for name in ["a.gif", "b.gif"] {
            assert_eq!(
                ino(&photos.join(name)),
                ino(&photos.join("copy").join(name))
            );
        }
        let o = dupes(
            &db,
            &[
                "--act",
                "trash",
                "--journal",
                dir.path()
                    .join(format!("{kind}-t.journal"))
                    .to_str()
                    .unwrap(),
            ],
        );
        assert!(
            o.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        // Never put in the trash: removing a name of the keeper's own file frees nothing.
        assert!(photos.join("copy/a.gif").exists() && photos.join("copy/b.gif").exists());
        drop(fs);
    }
}

#[test]
fn keeper_rules_and_protected_folders_decide_what_is_offered() {
    let dir = scratch!();
    let photos = dir.path().join("photos");
    let big = {
        let mut g = gif(9, 9);
        g.extend([0u8; 64]);
        g
    };
    put(&photos.join("a.gif"), &gif(1, 1));
    put(&photos.join("master/deep/a.gif"), &gif(1, 1));
    put(&photos.join("vault/a.gif"), &gif(1, 1));
    put(&photos.join("x.gif"), &big);
    put(&photos.join("master/x.gif"), &big);
    let db = dir.path().join("photos.db");
    index(&db, &photos);
    let p = |rel: &str| photos.join(rel);
    let arg = |rel: &str| p(rel).to_str().unwrap().to_string();
    // Default: the shortest path is kept.
    let o = dupes(&db, &["-0"]);
    assert_eq!(
        nul_list(&o),
        [p("master/deep/a.gif"), p("master/x.gif"), p("vault/a.gif")]
    );
    // A preferred folder's file is kept; a protected one is never offered.
    let o = dupes(
        &db,
        &["-0", "--prefer", &arg("master"), "--protect", &arg("vault")],
    );
    assert_eq!(nul_list(&o), [p("a.gif"), p("x.gif")]);
    // Rules in the order given.
    let o = dupes(
        &db,
        &["-0", "--keep", "shortest-path", "--protect", &arg("vault")],
    );
    assert_eq!(nul_list(&o), [p("master/deep/a.gif"), p("master/x.gif")]);
    // Usage errors: an unknown rule, a protected folder that is not there.
    assert_exit(&dupes(&db, &["--keep", "biggest"]), 2);
    assert_exit(&dupes(&db, &["--protect", &arg("nowhere")]), 2);
    assert_exit(&dupes(&db, &["--act", "move"]), 2);
    assert_exit(&dupes(&db, &["--act", "hardlink", "--include-similar"]), 2);
    // A protected file is never moved.
    let o = dupes(
        &db,
        &[
            "--act",
            "move",
            "--to",
            dir.path().join("moved").to_str().unwrap(),
            "--protect",
            &arg("vault"),
            "--prefer",
            &arg("master"),
        ],
    );
    assert_exit(&o, 0);
    assert!(p("vault/a.gif").exists() && p("master/deep/a.gif").exists() && !p("a.gif").exists());
}

#[test]
fn decisions_are_kept_by_content_until_undone() {
    let dir = scratch!();
    let photos = dir.path().join("photos");
    put(&photos.join("a.gif"), &gif(1, 1));
    put(&photos.join("backup/a.gif"), &gif(1, 1));
    put(&photos.join("b.gif"), &gif(2, 1));
    put(&photos.join("backup/b.gif"), &gif(2, 1));
    put(&photos.join("c.gif"), &gif(3, 1));
    put(&photos.join("backup/c.gif"), &gif(3, 1));
    let db = dir.path().join("photos.db");
    index(&db, &photos);
    let o = dupes(&db, &["--json"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let content_of = |name: &str| {
        doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["members"].as_array().unwrap())
            .find(|m| m["path"].as_str().unwrap().ends_with(name))
            .map(|m| m["blake3"].as_str().unwrap().to_string())
            .unwrap()
    };
    let (a, b) = (content_of("/a.gif"), content_of("/b.gif"));
    let decisions = dir.path().join("decisions.json");
    let chosen = photos.join("backup/b.gif");
    std::fs::write(
        &decisions,
        serde_json::to_vec(&serde_json::json!({
            "seekless_decisions": 1,
            "db": db,
            "decisions": [
                {"decision": "keep-all", "contents": [a]},
                {"decision": "keeper", "contents": [b], "keeper": b, "path": chosen},
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let o = dupes(&db, &["--apply", decisions.to_str().unwrap(), "-0"]);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).contains("2 decisions recorded"),
        "{}",
        stderr(&o)
    );
    // a's group is gone; b keeps the chosen file; c is left to the rules.
    assert_eq!(
        nul_list(&o),
        [photos.join("b.gif"), photos.join("backup/c.gif")]
    );

    // Listed; kept after the files move and are indexed again (by content).
    let o = dupes(&db, &["--decisions", "--json"]);
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let list = listed["decisions"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["decision"], "keep-all");
    assert_eq!(list[1]["path"], chosen.to_str().unwrap());
    std::fs::rename(photos.join("backup"), photos.join("archive")).unwrap();
    index(&db, &photos);
    let o = dupes(&db, &["-0"]);
    // The chosen file's path is gone: every file of its content is chosen, and the rules
    // choose among them.
    assert_eq!(
        nul_list(&o),
        [photos.join("archive/b.gif"), photos.join("archive/c.gif")]
    );

    // A bad file records nothing.
    std::fs::write(&decisions, br#"{"seekless_decisions": 1, "decisions": [{"decision": "keep-all", "contents": ["zz"]}]}"#).unwrap();
    let o = dupes(&db, &["--apply", decisions.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("decision 1"), "{}", stderr(&o));

    // Undone: a's group is back.
    let id = list[0]["id"].as_i64().unwrap().to_string();
    let o = dupes(&db, &["--undecide", &id]);
    assert_exit(&o, 0);
    let o = dupes(&db, &["-0"]);
    assert_eq!(
        nul_list(&o),
        [
            photos.join("archive/a.gif"),
            photos.join("archive/b.gif"),
            photos.join("archive/c.gif")
        ]
    );
    assert_exit(&dupes(&db, &["--undecide", &id]), 1);
}

/// A duplicate (or its keeper) rewritten in place after the check read it, its size and
/// modification time put back (`touch -r`, `exiftool -P`): the fault hook
/// `seekless-fault-retouch…` does it between the check and the act. Neither is moved,
/// trashed or linked over: both byte sequences are still at their paths.
#[test]
fn an_edit_that_puts_its_modification_time_back_is_never_acted_on() {
    let dir = scratch!();
    let original = gif(9, 9);
    let mut edited = original.clone();
    *edited.last_mut().unwrap() ^= 0xff;
    for act in ["hardlink", "move", "trash"] {
        // "late": the copy is edited after the check read it and before the check looked
        // at it again (`seekless-fault-lateedit`), so the check's own last look sees it.
        for edited_one in ["file", "keeper", "late"] {
            let case = dir.path().join(format!("{act}-{edited_one}"));
            let photos = case.join("photos");
            let (keeper_name, file_name) = match edited_one {
                "file" => ("a.gif", "seekless-fault-retouch-a.gif"),
                "late" => ("a.gif", "seekless-fault-lateedit-a.gif"),
                _ => ("seekless-fault-retouch-a.gif", "a.gif"),
            };
            let keeper = photos.join("keep").join(keeper_name);
            let file = photos.join("copy").join(file_name);
            put(&keeper, &original);
            put(&file, &original);
            let db = case.join("photos.db");
            index(&db, &photos);
            let journal = case.join("acts.journal");
            let moved = case.join("moved");
            let mut args = vec![
                "--prefer".to_string(),
                photos.join("keep").display().to_string(),
                "--act".into(),
                act.into(),
                "--journal".into(),
                journal.display().to_string(),
            ];
            if act == "move" {
                args.extend(["--to".into(), moved.display().to_string()]);
            }
            let o = output_within(
                seekless()
                    .args(["dupes", "--db"])
                    .arg(&db)
                    .args(&args)
                    .env("SEEKLESS_INJECT_FAULTS", "1"),
                RUN_LIMIT,
            );
            let what = format!("{act}, {edited_one} edited");
            assert_exit(&o, 1);
            let err = stderr(&o);
            assert!(
                err.contains("skipped") && err.contains("status-change time"),
                "{what}: {err}"
            );
            let (edited_path, other) = match edited_one {
                "keeper" => (&keeper, &file),
                _ => (&file, &keeper),
            };
            assert_eq!(std::fs::read(edited_path).unwrap(), edited, "{what}: {err}");
            assert_eq!(std::fs::read(other).unwrap(), original, "{what}: {err}");
            assert_ne!(ino(&file), ino(&keeper), "{what}: linked\n{err}");
        }
    }
}

/// `owner:group mode`, ACL and xattrs of `path`, as `stat` and `getfattr` tell them.
fn looks(path: &Path) -> String {
    let stat = run(Command::new("stat").args(["-c", "%U:%G %a"]).arg(path));
    let attrs = run(Command::new("getfattr")
        .args(["-d", "-m", "-", "--absolute-names"])
        .arg(path));
    format!(
        "{} {}",
        String::from_utf8_lossy(&stat.stdout).trim(),
        String::from_utf8_lossy(&attrs.stdout)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

#[test]
fn hard_links_join_only_files_that_look_the_same_to_their_user() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "setfacl") || !require_tool(test, "setfattr") {
        return;
    }
    let dir = scratch!();
    let photos = dir.path().join("photos");
    // One pair per difference, the duplicate under copy/ told apart by one thing.
    let changes: [(&str, &[&str]); 5] = [
        ("owner", &["chown", "nobody"]),
        ("group", &["chgrp", "nogroup"]),
        ("mode", &["chmod", "0600"]),
        ("acl", &["setfacl", "-m", "u:nobody:r"]),
        ("xattr", &["setfattr", "-n", "user.note", "-v", "mine"]),
    ];
    for (i, (name, cmd)) in changes.iter().enumerate() {
        let bytes = gif(20 + i as u16, 1);
        put(&photos.join(format!("keep/{name}.gif")), &bytes);
        let dup = photos.join(format!("copy/{name}.gif"));
        put(&dup, &bytes);
        run(Command::new(cmd[0]).args(&cmd[1..]).arg(&dup));
    }
    // And one that looks the same.
    put(&photos.join("keep/same.gif"), &gif(30, 1));
    put(&photos.join("copy/same.gif"), &gif(30, 1));
    let db = dir.path().join("photos.db");
    index(&db, &photos);
    let keep = photos.join("keep").display().to_string();
    let before: Vec<String> = changes
        .iter()
        .map(|(name, _)| looks(&photos.join(format!("copy/{name}.gif"))))
        .collect();
    let journal = dir.path().join("link.journal");
    let o = dupes(
        &db,
        &[
            "--prefer",
            &keep,
            "--act",
            "hardlink",
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    assert_exit(&o, 1);
    let err = stderr(&o);
    for (i, (name, _)) in changes.iter().enumerate() {
        let dup = photos.join(format!("copy/{name}.gif"));
        assert!(
            err.contains(&format!("{}: skipped: its ", dup.display()))
                && err.contains("--link-any-metadata"),
            "{name}: {err}"
        );
        assert_ne!(
            ino(&dup),
            ino(&photos.join(format!("keep/{name}.gif"))),
            "{name}"
        );
        assert_eq!(looks(&dup), before[i], "{name}");
    }
    assert_eq!(
        ino(&photos.join("copy/same.gif")),
        ino(&photos.join("keep/same.gif")),
        "{err}"
    );
    // Allowed: linked, the keeper's metadata kept.
    index(&db, &photos);
    let journal = dir.path().join("any.journal");
    let o = dupes(
        &db,
        &[
            "--prefer",
            &keep,
            "--act",
            "hardlink",
            "--link-any-metadata",
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    assert_exit(&o, 0);
    for (name, _) in changes {
        let (dup, keeper) = (
            photos.join(format!("copy/{name}.gif")),
            photos.join(format!("keep/{name}.gif")),
        );
        assert_eq!(ino(&dup), ino(&keeper), "{name}");
        assert_eq!(looks(&dup), looks(&keeper), "{name}");
    }
    // Only with hardlink.
    let o = dupes(&db, &["--act", "trash", "--link-any-metadata"]);
    assert_exit(&o, 2);
}

/// Starts `dupes ARGS` with the fault hooks armed, waits (by looking, a minute at most)
/// until `landed` says the run is held where the test means, kills it (SIGKILL) and
/// reaps it.
fn killed_when(
    db: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    landed: impl Fn() -> bool,
    while_held: impl FnOnce(),
) {
    let child = seekless()
        .envs(env.iter().copied())
        .args(["dupes", "--db"])
        .arg(db)
        .args(args)
        .env("SEEKLESS_INJECT_FAULTS", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut run = Running(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !landed() {
        assert!(
            run.0.try_wait().unwrap().is_none(),
            "the run ended before it was held where the test meant"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the run never got there"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    while_held();
    signal(&run.0, libc::SIGKILL);
    let _ = run.0.wait();
}

/// The seekless temporaries under `dir`.
fn temporaries_in(dir: &Path) -> Vec<PathBuf> {
    snapshot(dir)
        .into_keys()
        .filter(|p| p.to_string_lossy().contains(".seekless-tmp-"))
        .collect()
}

#[test]
fn a_killed_act_leaves_nothing_that_the_next_act_or_undo_does_not_remove() {
    let dir = scratch!();
    let photos = dir.path().join("photos");
    let keep = photos.join("keep");
    // The act on the second copy is held (`seekless-fault-pause…`) until killed.
    put(&keep.join("a.gif"), &gif(1, 2));
    put(&photos.join("copy/a.gif"), &gif(1, 2));
    put(&keep.join("seekless-fault-pause-b.gif"), &gif(2, 2));
    put(&photos.join("copy/seekless-fault-pause-b.gif"), &gif(2, 2));
    let db = dir.path().join("photos.db");
    index(&db, &photos);
    let keep_arg = keep.display().to_string();

    // Hard links: killed with the link to the keeper made beside the held file, twice.
    let held = photos.join("copy/seekless-fault-pause-b.gif");
    let held_ino = ino(&held);
    let copies = photos.join("copy");
    let kill = |count: usize| {
        killed_when(
            &db,
            &["--prefer", &keep_arg, "--act", "hardlink"],
            &[],
            || temporaries_in(&copies).len() == count,
            || {},
        )
    };
    kill(1);
    let first = temporaries_in(&copies);
    assert_eq!(first.len(), 1, "the kill landed elsewhere");
    assert_eq!(ino(&held), held_ino, "the held file was acted on");
    // Someone's own file put under the first one's name: the name alone proves nothing.
    std::fs::remove_file(&first[0]).unwrap();
    std::fs::write(&first[0], b"not seekless's").unwrap();
    kill(2);
    assert_eq!(
        temporaries_in(&copies).len(),
        2,
        "the kill landed elsewhere"
    );
    // The next act (the journals beside the catalog) removes the second, not the other
    // file, and does the rest.
    let pause_go = |p: &Path| {
        let mut go = p.as_os_str().to_owned();
        go.push(".go");
        PathBuf::from(go)
    };
    std::fs::write(pause_go(&held), b"").unwrap();
    index(&db, &photos);
    let o = dupes(&db, &["--prefer", &keep_arg, "--act", "hardlink"]);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).contains("removed what killed runs left: 1 hard link temporaries"),
        "{}",
        stderr(&o)
    );
    assert_eq!(temporaries_in(&photos), first);
    assert_eq!(std::fs::read(&first[0]).unwrap(), b"not seekless's");
    std::fs::remove_file(&first[0]).unwrap();
    assert_eq!(ino(&held), ino(&keep.join("seekless-fault-pause-b.gif")));
    std::fs::remove_file(pause_go(&held)).unwrap();

    // The trash: killed with the `.trashinfo` written and the file not moved yet.
    // The home trash, on the photos' filesystem.
    let data = dir.path().join("data");
    let trash = data.join("Trash");
    let held = photos.join("copy/seekless-fault-pause-c.gif");
    put(&keep.join("seekless-fault-pause-c.gif"), &gif(3, 2));
    put(&held, &gif(3, 2));
    index(&db, &photos);
    let journal = dir.path().join("trash.journal");
    let infos = || {
        snapshot(&trash.join("info"))
            .into_keys()
            .filter(|p| p.to_string_lossy().contains("seekless-fault-pause-c"))
            .count()
    };
    std::fs::create_dir_all(trash.join("info")).unwrap();
    killed_when(
        &db,
        &[
            "--prefer",
            &keep_arg,
            "--act",
            "trash",
            "--journal",
            journal.to_str().unwrap(),
        ],
        &[("XDG_DATA_HOME", &data)],
        || infos() == 1,
        || {
            // Its journal is locked while it lives: no undo, no cleaning up.
            let o = undo(&journal);
            assert_exit(&o, 1);
            assert!(
                stderr(&o).contains("its run is still going"),
                "{}",
                stderr(&o)
            );
            assert_eq!(infos(), 1);
        },
    );
    assert!(held.exists(), "the kill landed after the move");
    let o = undo(&journal);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).contains("0 hard link temporaries, 1 .trashinfo files"),
        "{}",
        stderr(&o)
    );
    assert_eq!(infos(), 0);
    assert!(held.exists());
}

/// `dupes --act move --to DIR --journal J` (more arguments after).
fn move_with(db: &Path, to: &Path, journal: &Path, more: &[&str]) -> Output {
    let mut args = vec![
        "--act",
        "move",
        "--to",
        to.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ];
    args.extend(more);
    dupes(db, &args)
}

#[test]
fn the_move_folder_is_made_only_by_a_move_and_undo_removes_what_it_made() {
    let dir = scratch!();
    let lib = library(dir.path());
    let before = snapshot(&lib.photos);
    let moved = dir.path().join("moved/deeper");
    // A usage error makes nothing.
    let not_a_catalog = dir.path().join("notes.txt");
    std::fs::write(&not_a_catalog, b"my notes").unwrap();
    let o = move_with(&not_a_catalog, &moved, &dir.path().join("j0"), &[]);
    assert!(o.status.code() != Some(0), "{}", stderr(&o));
    assert!(!dir.path().join("moved").exists(), "{}", stderr(&o));
    // A move makes the folders it needs; its undo removes them all, once empty.
    let journal = dir.path().join("j1");
    let o = move_with(&lib.db, &moved, &journal, &[]);
    assert_exit(&o, 0);
    assert!(moved.exists());
    let o = undo(&journal);
    assert_exit(&o, 0);
    assert_eq!(snapshot(&lib.photos), before);
    assert!(!dir.path().join("moved").exists(), "{}", stderr(&o));
    // A folder the user put something in stays.
    index(&lib.db, &lib.photos);
    let journal = dir.path().join("j2");
    assert_exit(&move_with(&lib.db, &moved, &journal, &[]), 0);
    put(&moved.join("mine.txt"), b"mine");
    assert_exit(&undo(&journal), 0);
    assert_eq!(snapshot(&lib.photos), before);
    assert_eq!(std::fs::read(moved.join("mine.txt")).unwrap(), b"mine");
    if !require_root(test_name!()) {
        return;
    }
    // Another filesystem mounted inside DIR where the moves would go: nothing made on it.
    index(&lib.db, &lib.photos);
    let inside = moved.join(lib.photos.strip_prefix("/").unwrap().iter().next().unwrap());
    let other = Mounted::tmpfs(&inside, "size=4m");
    let o = move_with(&lib.db, &moved, &dir.path().join("j3"), &[]);
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains("is on another filesystem"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&other.0).unwrap().count(), 0);
    assert_eq!(snapshot(&lib.photos), before);
    drop(other);
    // A folder of the same filesystem bind-mounted there: a rename never crosses a mount.
    let folder = dir.path().join("bound");
    std::fs::create_dir(&folder).unwrap();
    let bound = Mounted::bind(&folder, &inside);
    let o = move_with(&lib.db, &moved, &dir.path().join("j4"), &[]);
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains("is on another filesystem or mount"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    assert_eq!(snapshot(&lib.photos), before);
    drop(bound);
}

#[test]
fn undo_goes_through_no_link_put_in_place_of_a_folder() {
    let dir = scratch!();
    let lib = library(dir.path());
    let moved = dir.path().join("moved");
    let journal = dir.path().join("j");
    assert_exit(&move_with(&lib.db, &moved, &journal, &[]), 0);
    // The folder the copies came from is replaced by a link to somewhere else.
    let copies = lib.photos.join("copies");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::rename(&copies, dir.path().join("copies-was")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &copies).unwrap();
    let o = undo(&journal);
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains(&format!(
            "{} is a symbolic link now: not put back through it",
            copies.display()
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // Each file still where the move put it.
    let under = |p: &Path| moved.join(p.strip_prefix("/").unwrap());
    assert!(under(&copies.join("a.gif")).exists());
}

/// `photos/a.gif` and its copy `photos/copies/NAME`, indexed, the copy moved away by
/// `--act move`, then `--undo` with the fault hooks armed (NAME chooses the fault): the
/// photos folder, the copy's old path, where the move put it, and the undo's output.
fn undo_a_move_with_a_fault(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf, Output) {
    let photos = dir.join("photos");
    put(&photos.join("a.gif"), &gif(1, 1));
    let copy = photos.join("copies").join(name);
    put(&copy, &gif(1, 1));
    let db = dir.join("photos.db");
    index(&db, &photos);
    let (moved, journal) = (dir.join("moved"), dir.join("j"));
    assert_exit(
        &move_with(&db, &moved, &journal, &["--keep", "shortest-path"]),
        0,
    );
    let there = moved.join(copy.strip_prefix("/").unwrap());
    assert!(there.exists() && !copy.exists());
    let o = output_within(
        seekless()
            .args(["dupes", "--undo"])
            .arg(&journal)
            .env("SEEKLESS_INJECT_FAULTS", "1"),
        RUN_LIMIT,
    );
    (photos, copy, there, o)
}

#[test]
fn undo_holds_the_way_back_it_checked_a_link_put_there_after_is_not_followed() {
    let dir = scratch!();
    // Its folder is replaced by a link once undo has looked at the way back (a hook).
    let (photos, _, there, o) = undo_a_move_with_a_fault(dir.path(), "seekless-fault-relink.gif");
    let err = stderr(&o);
    let elsewhere = photos.join("copies.elsewhere");
    assert!(
        std::fs::symlink_metadata(photos.join("copies"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the hook put its link in place: {err}"
    );
    assert_exit(&o, 1);
    assert!(err.contains("the way back to"), "{err}");
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing went through the link: {err}"
    );
    assert_eq!(std::fs::read(&there).unwrap(), gif(1, 1), "{err}");
}

#[test]
fn undo_confirms_what_it_put_back_and_returns_another_file_put_in_its_place() {
    let dir = scratch!();
    // Replaced where it was moved once undo has checked it (a hook).
    let (_, copy, there, o) = undo_a_move_with_a_fault(dir.path(), "seekless-fault-undoswap.gif");
    let err = stderr(&o);
    assert_exit(&o, 1);
    assert!(err.contains("not the file checked"), "{err}");
    assert!(
        !copy.exists(),
        "another file is not put in its place: {err}"
    );
    assert_eq!(
        std::fs::read(&there).unwrap(),
        b"another file, put here by the test",
        "{err}"
    );
}

#[test]
fn undo_finds_a_moved_file_by_its_content_where_the_pool_renumbers_inodes() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "mergerfs") {
        return;
    }
    let dir = scratch!();
    let branch = dir.path().join("branch");
    std::fs::create_dir(&branch).unwrap();
    let at = dir.path().join("pool");
    // Inode numbers from the paths' hashes, as the pool's users configure it.
    let options = "use_ino,inodecalc=path-hash";
    let pool = Mounted::mergerfs_with(&at, &[&branch], options);
    let photos = at.join("photos");
    put(&photos.join("a.gif"), &gif(1, 3));
    put(&photos.join("copy/a.gif"), &gif(1, 3));
    put(&photos.join("b.gif"), &gif(2, 3));
    put(&photos.join("copy/b.gif"), &gif(2, 3));
    let db = dir.path().join("photos.db");
    index(&db, &photos);
    let before = snapshot(&photos);
    let moved = at.join("moved");
    let journal = dir.path().join("j");
    let ino_before = ino(&photos.join("copy/a.gif"));
    let o = move_with(&db, &moved, &journal, &["--keep", "shortest-path"]);
    assert_exit(&o, 0);
    assert!(!photos.join("copy/a.gif").exists() && !photos.join("copy/b.gif").exists());
    // Mounted again (a reboot): nothing cached; the file has its new path's number.
    drop(pool);
    let pool = Mounted::mergerfs_with(&at, &[&branch], options);
    let there = moved.join(photos.join("copy/a.gif").strip_prefix("/").unwrap());
    assert_ne!(
        ino(&there),
        ino_before,
        "the pool kept its number: not the case meant"
    );
    let o = undo(&journal);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("2 files put back"), "{}", stderr(&o));
    assert_eq!(snapshot(&photos), before);
    drop(pool);
}

/// Another file put in a duplicate's place between the last look and the act
/// (`seekless-fault-swap…`): a move or trash confirms the file it took and puts it back; a
/// hard link's exchange confirms the file it replaced and exchanges it back. Nothing is
/// lost, and the file in place is said.
#[test]
fn an_act_that_took_another_file_than_the_one_checked_puts_it_back() {
    let dir = scratch!();
    for act in ["move", "trash", "hardlink"] {
        let case = dir.path().join(act);
        let photos = case.join("photos");
        let keeper = photos.join("keep/a.gif");
        let file = photos.join("copy/seekless-fault-swap-a.gif");
        put(&keeper, &gif(8, 8));
        put(&file, &gif(8, 8));
        let db = case.join("photos.db");
        index(&db, &photos);
        let data = case.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let keep = photos.join("keep").display().to_string();
        let journal = case.join("j").display().to_string();
        let moved = case.join("moved").display().to_string();
        let mut args = vec!["--prefer", &keep, "--act", act, "--journal", &journal];
        if act == "move" {
            args.extend(["--to", &moved]);
        }
        let o = output_within(
            seekless()
                .args(["dupes", "--db"])
                .arg(&db)
                .args(&args)
                .env("SEEKLESS_INJECT_FAULTS", "1")
                .env("XDG_DATA_HOME", &data),
            RUN_LIMIT,
        );
        assert_exit(&o, 1);
        let err = stderr(&o);
        assert!(err.contains("not the file checked"), "{act}: {err}");
        // The file put there by someone else is at its path, whole; the keeper too.
        assert_eq!(
            std::fs::read(&file).unwrap(),
            b"another file, put here by the test",
            "{act}: {err}"
        );
        assert_eq!(std::fs::read(&keeper).unwrap(), gif(8, 8));
        assert_ne!(ino(&file), ino(&keeper), "{act}");
        assert_eq!(temporaries_in(&photos), Vec::<PathBuf>::new(), "{act}");
    }
}
