//! `seekless tar`, continued (see `tar`): names kept byte for byte, special files and
//! symbolic links, sparse files and a file of more than 8 GiB, each read back by GNU tar,
//! bsdtar and Python's `tarfile`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::archive::*;
use crate::common::trees::*;
use crate::common::*;

// ---------------------------------------------------------------------------------------
// 3. Names.

/// A name of `len` bytes made of `fill`.
fn component(fill: char, len: usize) -> String {
    std::iter::repeat_n(fill, len).collect()
}

#[test]
fn odd_names_survive_byte_exact() {
    let test = test_name!();
    if !require_tools(test, &["tar", "find", python()]) {
        return;
    }
    let t = scratch!();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let mut rng = Rng::new(6);
    // 15 directories of 250 bytes and a file of 235: a 4000-byte relative path.
    let mut deep = PathBuf::new();
    for i in 0..15 {
        deep.push(component(char::from(b'a' + i), 250));
    }
    let deep_file = deep.join(component('z', 235));
    assert_eq!(deep_file.as_os_str().len(), 4000);
    assert!(
        src.join(&deep_file).as_os_str().len() < libc::PATH_MAX as usize,
        "the test's own paths stay under PATH_MAX: shorten the scratch directory's name"
    );
    std::fs::create_dir_all(src.join(&deep)).unwrap();
    let odd: Vec<Vec<u8>> = vec![
        b"new\nline".to_vec(),
        b"back\\slash".to_vec(),
        b"caf\xe9".to_vec(),
        b"\xff\xfe dir".to_vec(),
        b"\xff\xfe dir/caf\xe9 inside".to_vec(),
        b"  leading spaces and trailing  ".to_vec(),
        b"-starts-with-dash".to_vec(),
        b"tab\there".to_vec(),
        b"\xe2\x82\xac euro, valid UTF-8".to_vec(),
        component('n', 250).into_bytes(),
        [component('l', 150).as_bytes(), b" caf\xe9"].concat(),
        deep_file.as_os_str().as_bytes().to_vec(),
    ];
    std::fs::create_dir(src.join(OsStr::from_bytes(b"\xff\xfe dir"))).unwrap();
    for name in odd.iter().filter(|n| n.as_slice() != b"\xff\xfe dir") {
        let len = rng.below(3000) as usize;
        std::fs::write(src.join(OsStr::from_bytes(name)), rng.bytes(len)).unwrap();
    }
    // Links with long and odd names and targets (PAX linkpath).
    symlink(&deep_file, &src.join("to-the-deep-file"));
    symlink(
        OsStr::from_bytes(b"caf\xe9"),
        &src.join(OsStr::from_bytes(b"link \xe9\n")),
    );
    std::fs::hard_link(src.join(&deep_file), src.join(deep.join("second name"))).unwrap();

    // The whole tree, from inside it.
    let archive = t.path().join("odd.tar");
    let o = bounded(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&archive)
            .arg("-C")
            .arg(&src)
            .arg("."),
    );
    assert_exit_quiet(&o, 0);
    // GNU tar takes the bytes of a PAX path as they are, and warns of nothing.
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_eq!(
        find_paths(&out),
        find_paths(&src),
        "the paths GNU tar extracts, as bytes"
    );
    assert_same_tree(
        &src,
        &out,
        "odd names",
        Compare {
            xattrs: false,
            nanoseconds: true,
        },
    );
    let members = python_members(&archive);
    let deep_member = [b"./".as_slice(), deep_file.as_os_str().as_bytes()].concat();
    let m = members
        .iter()
        .find(|m| m.name == deep_member)
        .expect("the 4000-byte path, whole, in Python's listing");
    assert_eq!(
        m.pax("path"),
        Some(deep_member.clone()),
        "a PAX path record"
    );
    let link = members
        .iter()
        .find(|m| m.name == b"./to-the-deep-file")
        .unwrap();
    assert_eq!(
        unhex(link.json["linkname"].as_str().unwrap()),
        deep_file.as_os_str().as_bytes(),
        "a 4000-byte symlink target"
    );
    // A name that is not UTF-8 and too long for the ustar header: a PAX path with its
    // bytes as they are and no `hdrcharset` record, as GNU tar writes it (its 1.34 warns
    // of one). (A short name fits in the header as it is.)
    let long_latin1 = [
        b"./".as_slice(),
        component('l', 150).as_bytes(),
        b" caf\xe9",
    ]
    .concat();
    let m = members.iter().find(|m| m.name == long_latin1).unwrap();
    assert_eq!(
        m.pax("path"),
        Some(long_latin1.clone()),
        "its PAX path record"
    );
    assert_eq!(m.pax("hdrcharset"), None, "no hdrcharset record");

    // A NUL-separated list of names, from standard input: exactly those, as given.
    let listed: Vec<&[u8]> = vec![
        &b"new\nline"[..],
        &b"caf\xe9"[..],
        &b"\xff\xfe dir/caf\xe9 inside"[..],
        deep_file.as_os_str().as_bytes(),
    ];
    let mut list = Vec::new();
    for name in &listed {
        list.extend_from_slice(name);
        list.push(0);
    }
    let from_list = t.path().join("list.tar");
    let o = bounded_with_input(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&from_list)
            .arg("-C")
            .arg(&src)
            .args(["--files-from", "-", "-0"]),
        Some(list),
    );
    assert_exit_quiet(&o, 0);
    let got: BTreeSet<Vec<u8>> = python_members(&from_list)
        .into_iter()
        .map(|m| m.name)
        .collect();
    let want: BTreeSet<Vec<u8>> = listed.iter().map(|n| n.to_vec()).collect();
    assert_eq!(
        got.iter().map(|n| lossy(n)).collect::<Vec<_>>(),
        want.iter().map(|n| lossy(n)).collect::<Vec<_>>(),
        "members of a --files-from -0 list"
    );
    assert_eq!(got, want, "the same, as bytes");
}

#[test]
fn a_leading_slash_is_stripped_with_gnu_tars_message() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 5, 5000, &mut Rng::new(7));
    let archive = t.path().join("abs.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg(&tree));
    assert_exit_quiet(&o, 0);
    assert_eq!(
        messages(&o),
        vec!["seekless: Removing leading `/' from member names".to_string()],
        "GNU tar's words, once"
    );
    let relative = tree
        .strip_prefix("/")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    for name in gnu_names(&archive, &[]) {
        assert!(
            name.starts_with(&relative) && !name.starts_with('/'),
            "{name} is not {relative} without its leading /"
        );
    }
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_same_tree(
        &tree,
        &out.join(&relative),
        "absolute input",
        Compare {
            xattrs: false,
            nanoseconds: true,
        },
    );
}

// ---------------------------------------------------------------------------------------
// 4. Special files and symbolic links.

#[test]
fn fifos_and_devices_are_archived_as_headers_without_being_opened() {
    let test = test_name!();
    // mknod needs root; the FIFO has no writer: opened for reading, the run would hang.
    if !require_root(test) || !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    mkfifo(&tree.join("fifo"));
    mknod(&tree.join("null-like"), 'c', 1, 3);
    // A block device of a loop minor nothing has: opening it would fail.
    mknod(&tree.join("no-such-disk"), 'b', 7, 250);
    std::fs::write(tree.join("file"), b"data\n").unwrap();
    let archive = t.path().join("special.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree"));
    assert_exit_quiet(&o, 0);
    assert!(messages(&o).is_empty(), "{}", stderr(&o));
    assert_listing_matches(&archive, &tree, "tree");
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_same_tree(&tree, &out.join("tree"), "special files", EVERYTHING);

    // Named as inputs themselves: the same headers (as GNU tar stores them).
    let named = t.path().join("named.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&named).args([
        "tree/fifo",
        "tree/null-like",
        "tree/no-such-disk",
    ]));
    assert_exit_quiet(&o, 0);
    let kinds: Vec<(String, char, String)> = gnu_listing(&named, &[])
        .into_iter()
        .map(|m| (m.name, m.kind, m.size))
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<BTreeSet<_>>(),
        BTreeSet::from([
            ("tree/fifo".to_string(), 'p', "0".to_string()),
            ("tree/null-like".to_string(), 'c', "1,3".to_string()),
            ("tree/no-such-disk".to_string(), 'b', "7,250".to_string()),
        ]),
        "special files named as inputs"
    );
}

#[test]
fn symlinks_are_archived_as_links_and_followed_only_with_follow() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let target = t.path().join("target");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::create_dir_all(target.join("inner")).unwrap();
    std::fs::write(target.join("file.txt"), b"pointed to\n").unwrap();
    std::fs::write(target.join("inner/deep.txt"), b"deep\n").unwrap();
    std::fs::write(tree.join("sub/own.txt"), b"own\n").unwrap();
    symlink(target.join("file.txt"), &tree.join("sub/to-file"));
    symlink(&target, &tree.join("sub/to-dir"));
    symlink(t.path().join("tree/sub"), &t.path().join("named-link"));

    let kinds = |archive: &Path| -> BTreeMap<String, (char, String, Option<String>)> {
        gnu_listing(archive, &[])
            .into_iter()
            .map(|m| (m.name, (m.kind, m.size, m.target)))
            .collect()
    };
    // Without -L: links stay links, a link named as input too.
    let plain = t.path().join("plain.tar");
    let o = bounded(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&plain)
            .args(["tree", "named-link"]),
    );
    assert_exit_quiet(&o, 0);
    let got = kinds(&plain);
    let link = |to: &Path| ('l', "0".to_string(), Some(to.to_str().unwrap().to_string()));
    assert_eq!(got["tree/sub/to-file"], link(&target.join("file.txt")));
    assert_eq!(got["tree/sub/to-dir"], link(&target));
    assert_eq!(
        got["named-link"],
        link(&t.path().join("tree/sub")),
        "a symlink named as input is archived as the link itself"
    );
    assert_eq!(got.len(), 6, "{:?}", got.keys());

    // With -L: what they point to, under the link's name.
    let followed = t.path().join("followed.tar");
    let o = bounded(
        seekless_tar(t.path())
            .args(["-L", "-f"])
            .arg(&followed)
            .arg("tree"),
    );
    assert_exit_quiet(&o, 0);
    let got = kinds(&followed);
    // One file reached twice (through to-file and to-dir): the second name is a hard link.
    let (kind, size, first) = &got["tree/sub/to-file"];
    assert!(
        matches!(
            (kind, size.as_str(), first.as_deref()),
            ('-', "11", None) | ('h', "0", Some("tree/sub/to-dir/file.txt"))
        ),
        "tree/sub/to-file with -L: {:?}",
        got["tree/sub/to-file"]
    );
    assert_eq!(got["tree/sub/to-dir/"].0, 'd');
    assert_eq!(
        got["tree/sub/to-dir/inner/deep.txt"],
        ('-', "5".to_string(), None)
    );
    let out = t.path().join("out");
    gnu_extract(&followed, &out, &[]);
    assert_eq!(
        std::fs::read(out.join("tree/sub/to-file")).unwrap(),
        b"pointed to\n"
    );
    assert_eq!(
        std::fs::read(out.join("tree/sub/to-dir/file.txt")).unwrap(),
        b"pointed to\n"
    );
}

// ---------------------------------------------------------------------------------------
// 5. Sparse and large files.

/// A sparse file of `size` bytes with `data` written at each offset (the rest holes).
fn sparse_file(path: &Path, size: u64, data: &[(u64, Vec<u8>)]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::create(path).unwrap();
    f.set_len(size).unwrap();
    for (at, bytes) in data {
        f.write_all_at(bytes, *at).unwrap();
    }
    f.sync_all().unwrap();
}

#[test]
fn sparse_files_keep_their_holes_and_content_through_gnu_tar_bsdtar_and_python() {
    let test = test_name!();
    if !in_group(test, "slow") {
        return;
    }
    if !require_tools(test, &["tar", "bsdtar", "sha256sum", python()]) {
        return;
    }
    const GIB: u64 = 1 << 30;
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let mut rng = Rng::new(8);
    // Data at the start and in the middle, ending in a hole.
    sparse_file(
        &tree.join("hole-at-end"),
        GIB,
        &[(0, rng.bytes(4096)), (512 << 20, rng.bytes(8192))],
    );
    // Starting with a hole, ending with data.
    sparse_file(
        &tree.join("data-at-end"),
        GIB,
        &[(100 << 20, rng.bytes(65536)), (GIB - 4096, rng.bytes(4096))],
    );
    // Nothing but a hole.
    sparse_file(&tree.join("all-hole"), 256 << 20, &[]);
    // Larger than 8 GiB, which a ustar size field cannot hold.
    let far = 8 * GIB + (GIB >> 1);
    let far_data = rng.bytes(4096);
    sparse_file(&tree.join("nine-gib"), 9 * GIB, &[(far, far_data.clone())]);
    std::fs::write(tree.join("dense"), rng.bytes(100_000)).unwrap();
    for (name, n) in scan(&tree) {
        if n.kind == Kind::File && lossy(&name) != "dense" {
            assert!(
                n.allocated < n.size / 100,
                "{}: the scratch filesystem did not make it sparse",
                lossy(&name)
            );
        }
    }
    let archive = t.path().join("sparse.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree"));
    assert_exit_quiet(&o, 0);
    let archived = std::fs::metadata(&archive).unwrap().len();
    assert!(
        archived < 4 << 20,
        "the archive holds {archived} bytes: the holes were stored as data"
    );

    // GNU tar lists the real sizes and extracts the holes as holes.
    let listing = gnu_listing(&archive, &[]);
    let size_of = |name: &str| {
        listing
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
            .size
            .clone()
    };
    assert_eq!(size_of("tree/nine-gib"), (9 * GIB).to_string());
    assert_eq!(size_of("tree/hole-at-end"), GIB.to_string());
    // The nine GiB are checked where the data is (reading them whole twice is slow).
    let small = |out: &Path| {
        for name in ["hole-at-end", "data-at-end", "all-hole", "dense"] {
            let (a, b) = (tree.join(name), out.join("tree").join(name));
            let (na, nb) = (node(&a), node(&b));
            assert_eq!(nb.size, na.size, "{}: size", b.display());
            assert!(same_content(&a, &b), "{}: content", b.display());
            if name != "dense" {
                assert!(
                    nb.allocated <= na.allocated + (1 << 20),
                    "{}: {} bytes allocated, the source {}: holes lost",
                    b.display(),
                    nb.allocated,
                    na.allocated
                );
            }
        }
        let big = out.join("tree/nine-gib");
        let n = node(&big);
        assert_eq!(n.size, 9 * GIB, "{}", big.display());
        assert!(n.allocated < 1 << 20, "{}: holes lost", big.display());
        let mut at_far = vec![0u8; 4096];
        std::os::unix::fs::FileExt::read_exact_at(
            &std::fs::File::open(&big).unwrap(),
            &mut at_far,
            far,
        )
        .unwrap();
        assert!(at_far == far_data, "{}: the data at 8.5 GiB", big.display());
    };
    let out = t.path().join("gnu");
    gnu_extract(&archive, &out, &[]);
    small(&out);

    let out = t.path().join("bsd");
    std::fs::create_dir(&out).unwrap();
    let o = bounded(
        Command::new("bsdtar")
            .arg("-xpf")
            .arg(&archive)
            .arg("-C")
            .arg(&out),
    );
    assert_sound_read(&o, "bsdtar -xpf");
    small(&out);

    // Python reads the real sizes and the same bytes (the 9 GiB hashed too).
    for m in python_members(&archive) {
        let name = lossy(&m.name);
        if m.str("type") != "0" {
            continue;
        }
        let path = t.path().join(&name);
        assert_eq!(m.u64("size"), node(&path).size, "{name}: size");
        if name != "tree/nine-gib" {
            assert_eq!(m.str("sha256"), sha256sum(&path), "{name}: content");
        }
        assert_eq!(
            m.json["sparse"].as_bool(),
            Some(name != "tree/dense"),
            "{name}: stored sparse or not"
        );
        if name != "tree/dense" {
            assert_eq!(
                (m.pax("GNU.sparse.major"), m.pax("GNU.sparse.minor")),
                (Some(b"1".to_vec()), Some(b"0".to_vec())),
                "{name}: GNU's PAX sparse format 1.0"
            );
        }
    }
}

/// Reads a tar stream on stdin with tarfile (`r|`) and prints one JSON line per
/// member; for a regular member larger than `argv[1]` bytes also the bytes found at that
/// offset (hex, as many as `argv[2]` holds) and how many bytes the member held.
const PY_STREAM: &str = r#"
import json, sys, tarfile
at, want = int(sys.argv[1]), len(sys.argv[2]) // 2
with tarfile.open(fileobj=sys.stdin.buffer, mode='r|', bufsize=1 << 20) as t:
    for m in t:
        d = {'name': m.name, 'type': m.type.decode('latin-1'), 'size': m.size,
             'pax': sorted(m.pax_headers)}
        if m.isreg() and m.size > at:
            f = t.extractfile(m)
            left = at
            while left:
                c = f.read(min(left, 1 << 20))
                if not c:
                    break
                left -= len(c)
            found = f.read(want)
            d['found'] = found.hex()
            total = at - left + len(found)
            for c in iter(lambda: f.read(1 << 20), b''):
                total += len(c)
            d['read'] = total
        print(json.dumps(d), flush=True)
"#;

#[test]
fn a_file_of_more_than_8_gib_is_sized_by_a_pax_record() {
    use std::os::fd::AsRawFd;
    let test = test_name!();
    if !in_group(test, "slow") {
        return;
    }
    if !require_tools(test, &["tar", "bash", python()]) {
        return;
    }
    const SIZE: u64 = 9 << 30;
    const AT: u64 = (8 << 30) + (1 << 29);
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    // Allocated whole (so not sparse), read back as zeros without disk reads, with a
    // little data past 8 GiB to find again.
    let big = tree.join("big");
    let f = std::fs::File::create(&big).unwrap();
    // SAFETY: fallocate on an open fd with plain integer arguments.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, SIZE as libc::off_t) };
    if rc != 0 {
        skip(
            test,
            "space",
            &format!(
                "cannot allocate 9 GiB in {}: {}",
                t.path().display(),
                std::io::Error::last_os_error()
            ),
        );
        return;
    }
    let mut rng = Rng::new(9);
    let data = rng.bytes(4096);
    std::os::unix::fs::FileExt::write_all_at(&f, &data, AT).unwrap();
    f.sync_all().unwrap();
    drop(f);
    std::fs::write(tree.join("small"), b"after or before the big one\n").unwrap();
    let meta = std::fs::metadata(&big).unwrap();
    assert!(
        meta.blocks() * 512 >= SIZE,
        "fallocate left holes: {} bytes allocated",
        meta.blocks() * 512
    );

    // One stream, read by GNU tar and Python's tarfile at once (9 GiB is not stored).
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    let script = r#"
set -o pipefail
mkfifo "$D/py.fifo"
"$PY" -c "$PY_STREAM" "$AT" "$HEX" < "$D/py.fifo" > "$D/py.out" & py=$!
"$SEEKLESS" tar -C "$D" tree 2> "$D/seekless.err" | tee "$D/py.fifo" | tar --numeric-owner -tvf - > "$D/gnu.out" 2> "$D/gnu.err"
rc=$?
wait $py
echo "pipeline $rc python $?"
"#;
    let o = bounded(
        Command::new("bash")
            .args(["-c", script])
            .env("D", t.path())
            .env("PY", python())
            .env("PY_STREAM", PY_STREAM)
            .env("AT", AT.to_string())
            .env("HEX", &hex)
            .env("SEEKLESS", env!("CARGO_BIN_EXE_seekless")),
    );
    let read = |name: &str| std::fs::read_to_string(t.path().join(name)).unwrap_or_default();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "pipeline 0 python 0",
        "seekless: {}\ntar: {}",
        read("seekless.err"),
        read("gnu.err")
    );
    assert!(read("gnu.err").is_empty(), "{}", read("gnu.err"));
    let listing: Vec<Listed> = read("gnu.out").lines().map(parse_listed).collect();
    let names: BTreeMap<&str, &str> = listing
        .iter()
        .map(|m| (m.name.as_str(), m.size.as_str()))
        .collect();
    assert_eq!(
        names,
        BTreeMap::from([
            ("tree/", "0"),
            ("tree/big", "9663676416"),
            ("tree/small", "28")
        ]),
        "what GNU tar lists"
    );
    let py: Vec<Value> = read("py.out")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let m = py
        .iter()
        .find(|m| m["name"] == "tree/big")
        .expect("tree/big in Python's listing");
    assert_eq!(m["size"], SIZE, "{m}");
    assert!(
        m["pax"].as_array().unwrap().iter().any(|k| k == "size"),
        "the size is in a PAX record: {m}"
    );
    assert_eq!(m["type"], "0", "stored as a plain file: {m}");
    assert_eq!(m["found"], hex.as_str(), "the data at 8.5 GiB");
    assert_eq!(m["read"], SIZE, "the member's bytes");
}
