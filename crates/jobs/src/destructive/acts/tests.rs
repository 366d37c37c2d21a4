use std::fs;

use super::check::{ANOTHER_FILE, Known, content_hash, identity, same_file};

#[test]
fn another_file_of_the_same_size_and_time_is_the_file_only_with_its_content() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    fs::write(&a, b"one").unwrap();
    // `b` written with `bytes`, its modification time `a`'s.
    let write_b = |bytes: &[u8]| {
        fs::write(&b, bytes).unwrap();
        fs::File::options()
            .write(true)
            .open(&b)
            .unwrap()
            .set_modified(fs::metadata(&a).unwrap().modified().unwrap())
            .unwrap();
    };
    write_b(b"two");
    let (known_a, _) = identity(&a).unwrap();
    let known_a = Known {
        blake3: content_hash(&a).unwrap(),
        ..known_a
    };
    let (now_b, _) = identity(&b).unwrap();
    // Same size and time, another inode: only the same bytes make it the file (a pool
    // that renumbers inodes); other bytes do not.
    assert_eq!(same_file(&b, &known_a, &now_b), Err(ANOTHER_FILE));
    write_b(b"one");
    let (now_b, _) = identity(&b).unwrap();
    assert_eq!(same_file(&b, &known_a, &now_b), Ok(()));
    // Without a known content, another inode is another file.
    let bare = Known {
        blake3: String::new(),
        ..known_a.clone()
    };
    assert_eq!(same_file(&b, &bare, &now_b), Err(ANOTHER_FILE));
}
