// Some of these are used only by the Unix-only tests.
#![cfg_attr(not(unix), allow(unused_imports))]

use std::fs;
use std::path::{Path, PathBuf};

use super::act::{Act, Outcome, resolve, under};
use super::journal::{About, Intent, Journal, JournalPath, Stamp, parse_journal};
use seekless_jobs::destructive::acts::{Candidate, Known, identity};

// Through the library, where no command line stands between a caller and the acts.
#[cfg(unix)]
#[test]
fn only_bytes_read_the_same_as_the_keepers_are_linked() {
    use std::os::unix::fs::MetadataExt;
    let t = tempfile::tempdir().unwrap();
    let at = |n: &str| t.path().join(n);
    for (name, bytes) in [("keeper", "one"), ("differs", "two"), ("similar", "one")] {
        fs::write(at(name), bytes).unwrap();
    }
    let known = |p: &Path| {
        let (k, _) = identity(p).unwrap();
        Known {
            blake3: blake3::hash(&fs::read(p).unwrap()).to_hex().to_string(),
            ..k
        }
    };
    let candidates = vec![
        // Said to be identical, its bytes differ.
        Candidate {
            file: known(&at("differs")),
            keeper: known(&at("keeper")),
            identical: true,
        },
        // Not said to be identical: never replaced.
        Candidate {
            file: known(&at("similar")),
            keeper: known(&at("keeper")),
            identical: false,
        },
    ];
    let mut journal = Journal::create(&at("journal"), About::default()).unwrap();
    let mut out = Vec::new();
    let link = Act::HardLink {
        metadata_may_differ: true,
    };
    resolve(candidates, &link, &mut journal, |_, o| out.push(o)).unwrap();
    let why = |o: &Outcome| match o {
        Outcome::Skipped(why) => why.clone(),
        other => panic!("acted: {other:?}"),
    };
    assert!(why(&out[0]).contains("its bytes differ"), "{:?}", out[0]);
    assert!(why(&out[1]).contains("not identical"), "{:?}", out[1]);
    let ino = |n: &str| fs::metadata(at(n)).unwrap().ino();
    assert!(ino("differs") != ino("keeper") && ino("similar") != ino("keeper"));
    assert_eq!(fs::read(at("differs")).unwrap(), b"two");
}

#[test]
fn a_move_keeps_the_whole_path_under_its_folder() {
    assert_eq!(
        under(Path::new("/d/moved"), Path::new("/photos/2024/a.jpg")),
        Path::new("/d/moved/photos/2024/a.jpg")
    );
    assert_eq!(
        Act::Move("/m".into()).destination(Path::new("/a/../b")),
        Some(PathBuf::from("/m/a/b"))
    );
}

#[test]
fn journal_paths_survive_bytes_that_are_not_utf8() {
    for p in ["/p/a.jpg", "/p/\u{1b}[31m.jpg"] {
        let j = JournalPath::of(Path::new(p));
        assert_eq!(j, JournalPath::Text(p.into()));
        assert_eq!(j.path(), PathBuf::from(p));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/p/\xff.jpg"));
        let j = JournalPath::of(odd);
        assert_eq!(
            serde_json::to_string(&j).unwrap(),
            r#"{"bytes":[47,112,47,255,46,106,112,103]}"#
        );
        assert_eq!(j.path(), odd);
    }
    assert!(serde_json::from_str::<JournalPath>(r#"{"bytes":[300]}"#).is_err());
}

#[test]
fn a_journal_is_read_line_by_line_and_its_header_is_required() {
    let act = |n: u64, act: &str| {
        format!(
            r#"{{"act":"{act}","n":{n},"from":"/p/a{n}.jpg","keeper":"/p/k.jpg","file":{{"dev":1,"ino":{n},"size":3,"mtime_ns":5}},"to":"/m/p/a{n}.jpg"}}"#
        )
    };
    let text = format!(
        "{{\"seekless_journal\":1,\"about\":{{}}}}\n{}\n{{\"done\":1}}\n{}\n{{\"undone\":1}}\n\
         {{\"failed\":2,\"why\":null}}\n{{\"made\":\"/m/p\"}}\n{{\"act\":\"mo",
        act(1, "move"),
        act(2, "trash")
    );
    let r = parse_journal(text.as_bytes()).unwrap();
    assert_eq!(r.acts.len(), 2);
    assert_eq!(r.acts[1].act, "trash");
    assert_eq!(
        r.acts[0].to.as_ref().map(JournalPath::path),
        Some("/m/p/a1.jpg".into())
    );
    assert!(r.undone.contains(&1) && r.failed.contains(&2));
    assert_eq!(r.made, [PathBuf::from("/m/p")]);
    assert_eq!(r.passed_over, [8]);
    // An act line missing what an act needs is not an act.
    let text = b"{\"seekless_journal\":1,\"about\":{}}\n{\"act\":\"move\",\"n\":1}\n";
    let r = parse_journal(text).unwrap();
    assert!(r.acts.is_empty() && r.passed_over == [2]);
    assert!(parse_journal(act(1, "move").as_bytes()).is_err());
    assert!(parse_journal(b"garbage\n{\"seekless_journal\":1,\"about\":{}}\n").is_err());
    assert!(parse_journal(b"\n\n").is_err());
    assert!(parse_journal(b"{\"seekless_journal\":2,\"about\":{}}\n").is_err());
}

#[test]
fn a_journal_written_is_a_journal_read() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("j");
    let mut j = Journal::create(
        &path,
        About::new("move", Path::new("/p.db"), Some(Path::new("/m")), 1),
    )
    .unwrap();
    j.made(Path::new("/m/p")).unwrap();
    let intent = Intent {
        n: 0,
        act: "move".into(),
        from: JournalPath::of(Path::new("/p/a.jpg")),
        keeper: JournalPath::of(Path::new("/p/b.jpg")),
        file: Stamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: -4,
            blake3: "ab".into(),
        },
        to: Some(JournalPath::of(Path::new("/m/p/a.jpg"))),
        info: None,
        temp: None,
        keeper_file: None,
    };
    assert_eq!(j.intent(intent.clone()).unwrap(), 1);
    j.outcome(1, false, Some("why")).unwrap();
    drop(j);
    let r = parse_journal(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        r.about,
        About::new("move", Path::new("/p.db"), Some(Path::new("/m")), 1)
    );
    assert_eq!(r.acts, [Intent { n: 1, ..intent }]);
    assert!(r.failed.contains(&1) && r.passed_over.is_empty());
    assert_eq!(r.made, [PathBuf::from("/m/p")]);
}
