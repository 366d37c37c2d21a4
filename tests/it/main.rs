//! The integration tests: one binary (`cargo test --test it`), as ripgrep and fd have it,
//! driving the real `seekless` binary, and the library where a test needs its insides.
//! One binary links once and runs every test in one process, in parallel;
//! `cargo test --test it walk::` runs one module.
//!
//! The first modules run everywhere, Windows included (`ci/cross-check.sh` runs them
//! under Wine); their Unix- or Linux-only cases are marked with `cfg` one by one. The
//! others need Linux throughout.

// Tests build and tear down their own trees; the rule that only `seekless::destructive`
// removes or renames binds the product, not its tests.
#![allow(clippy::disallowed_methods)]

mod common;

// Everywhere.
mod inputs; // usage errors, exit codes, filters, lists, duplicates
mod manifest; // manifests and --check, digests from the library
mod order; // the listing's orders and a closed pipe

// Linux only.
#[cfg(target_os = "linux")]
mod bench; // fragmented corpora (hole punching), drop_caches, FIEMAP
#[cfg(target_os = "linux")]
mod btrfs_changes; // seekless_sys::btrfs_changes_since on btrfs loops: each kind of change, a subvolume, a bind mount, no CAP_SYS_ADMIN
#[cfg(target_os = "linux")]
mod check; // --check against GNU coreutils' sha256sum -c / md5sum -c
#[cfg(target_os = "linux")]
mod copy; // cp -a, rsync, diff -r, getfattr; the tree as cp -a makes it, incremental runs
#[cfg(target_os = "linux")]
mod copy_delete; // what --delete removes: beside mounts and bind mounts (loop ext4), an unmounted source drive, a directory in the way, a source inside its destination
#[cfg(target_os = "linux")]
mod copy_runs; // kill -9, full disks, --delete/--checksum/--verify/--manifest against rsync, b3sum
#[cfg(target_os = "linux")]
mod copy_safety; // what copy deletes, replaces or trusts: nobody via setpriv, SIGSTOP, strace
#[cfg(target_os = "linux")]
mod dupes; // Pillow draws the copies, exiftool the bursts; headless Chromium loads the contact sheet
#[cfg(target_os = "linux")]
mod dupes_act; // --act move/trash/hardlink/reflink, --undo, decisions, keeper rules: trash-cli, filefrag, sqlite3
#[cfg(target_os = "linux")]
mod dupes_pairs; // raw+JPEG and Live Photo pairs, a HEIF's export: exiftool, ffmpeg, heif-enc
#[cfg(target_os = "linux")]
mod dupes_sheet; // the contact sheet driven in headless Chromium (DevTools protocol): decisions saved, nothing injected runs
#[cfg(target_os = "linux")]
mod examples; // the library's example programs, against b3sum
#[cfg(target_os = "linux")]
mod faults; // invariants over seeded faults: faultfs (FUSE) under copy, tar and index; kill -9
#[cfg(target_os = "linux")]
mod faults_acts; // dupes --act under seeded edits, swaps and kill -9: every byte sequence stays reachable
#[cfg(target_os = "linux")]
mod hash; // loop devices, coreutils, /proc and sysfs files, tmpfs
#[cfg(target_os = "linux")]
mod hash_conformance; // sha256sum, md5sum, sha1sum and b3sum run the same cases as seekless hash
#[cfg(target_os = "linux")]
mod index; // exiftool, sqlite3, b3sum, Pillow; SIGSTOP and /proc to freeze a run mid-write
#[cfg(target_os = "linux")]
mod index_catchup; // catching up without a walk on btrfs: only what changed walked, edits in place re-read, every unvouched case walked whole: sqlite3, btrfs
#[cfg(target_os = "linux")]
mod index_commits; // a stalled file, a lock held by another program (python3), foreign databases
#[cfg(target_os = "linux")]
mod index_damaged; // the integrity verdict on cut and flipped samples of Pillow's, ExifTool's and Exiv2's corpora: sqlite3
#[cfg(target_os = "linux")]
mod index_errors; // the form of every stored error and stderr line over Pillow's, ExifTool's and Exiv2's samples: sqlite3
#[cfg(target_os = "linux")]
mod index_fields; // the catalog's fields against exiftool and ImageMagick on Pillow's test images
#[cfg(target_os = "linux")]
mod index_hdr; // HDR thumbnails tone-mapped: avifenc, heif-convert, Pillow; libavif's PQ/SDR pairs
#[cfg(target_os = "linux")]
mod index_media; // HEIC, AVIF, JPEG XL, camera raw and video against exiftool; ffmpeg, heif-enc
#[cfg(target_os = "linux")]
mod index_scope; // a second writer, which files, odd names, unreadable files, unmounted disks
#[cfg(target_os = "linux")]
mod index_sidecar; // XMP sidecars written by exiftool and by hand, changed, removed, unlistable
#[cfg(target_os = "linux")]
mod index_thumbs; // thumbnails against ImageMagick, pHash against Python's imagehash
#[cfg(target_os = "linux")]
mod index_volumes; // volumes by identity: ext4, xfs and btrfs under another loop device, unmounted and back: blkid, sqlite3
#[cfg(target_os = "linux")]
mod index_watch; // --watch on ext4, xfs and btrfs loops: edits, renames, trees moved, slow writes, bursts, SIGTERM, kill -9, unmounts: sqlite3
#[cfg(target_os = "linux")]
mod partitions; // partitions of one loop device (losetup -P, or loop devices at offsets), filefrag
#[cfg(target_os = "linux")]
mod pools; // btrfs over two loop devices, mergerfs over two ext4 loops: filefrag, btrfs inspect-internal, sha256sum
#[cfg(target_os = "linux")]
mod read; // the page cache (fincore) and sysfs queue settings
#[cfg(target_os = "linux")]
mod scale; // wait4, setrlimit, openat past PATH_MAX
#[cfg(target_os = "linux")]
mod shell; // bash runs the completion script, man renders the page
#[cfg(target_os = "linux")]
mod tar; // GNU tar, bsdtar and Python's tarfile read what seekless tar writes
#[cfg(target_os = "linux")]
mod tar_formats; // names byte for byte, special files, sparse and > 8 GiB files, read back
#[cfg(target_os = "linux")]
mod tar_safety; // changing and unreadable files; the archive file: complete or absent, kill -9
#[cfg(target_os = "linux")]
mod tiers; // SEEKLESS_TESTS selects the slow groups; ci/test refuses to run without root
#[cfg(target_os = "linux")]
mod walk; // a loop device's read requests
