use std::fs;

use super::check::{ANOTHER_FILE, Known, content_hash, identity, same_file};
use super::primitives::{Leftover, remove_leftover_link};

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

// Unix: a second name of a file is a hard link.
#[cfg(unix)]
#[test]
fn a_leftover_link_goes_only_under_a_temporary_name_of_its_file() {
    let t = tempfile::tempdir().unwrap();
    let (keeper, from) = (t.path().join("keeper"), t.path().join("dup"));
    fs::write(&keeper, b"one").unwrap();
    // The act replaced `dup` with the keeper's inode; its temporary was a second name.
    fs::hard_link(&keeper, &from).unwrap();
    let (known, _) = identity(&keeper).unwrap();
    // A name the journal gives that is not a temporary of `dup`: a user's second name.
    let users = t.path().join("users-link");
    fs::hard_link(&keeper, &users).unwrap();
    assert!(matches!(
        remove_leftover_link(&users, &from, &known, &known),
        Leftover::Kept(_)
    ));
    assert!(users.exists());
    // A temporary of `dup`, beside it: removed.
    let temp = crate::temp::temp_beside(&from);
    fs::hard_link(&keeper, &temp).unwrap();
    assert!(matches!(
        remove_leftover_link(&temp, &from, &known, &known),
        Leftover::Removed
    ));
    assert!(!temp.exists() && keeper.exists() && from.exists());
}
