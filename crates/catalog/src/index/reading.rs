//! Phase 5 of an index run: each file to read hashed whole and inspected on the workers,
//! each sidecar read for its fields, and the rows handed to the catalog's one writer.

use super::decide::mtime_ns;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use seekless_core::read::{self, ConsumeOptions, Job, Work};
use seekless_core::{Error, Plan, Reporter};
use seekless_sys::path_to_bytes;

use super::catalog::{self, CatalogError, Record, Row, SidecarRow};
use super::{
    IndexEvents, IndexOptions, IndexSummary, MAX_THUMB_FILE, Phases, ThumbOptions, formats,
    inspect, is_sidecar, thumb,
};

/// Bytes of a file kept from its start for parsing its header and EXIF (the whole file
/// when smaller): EXIF in TIFF-based raw files may lie anywhere in it.
const KEEP: usize = 32 << 20;

/// Bytes kept from the end of a file larger than [`KEEP`]: where MP4 and MOV writers put
/// the `moov` box (after the media data) and some raw writers their previews.
const KEEP_TAIL: usize = 16 << 20;

/// Phase 7: reads what must be read, in physical order, on the workers; one writer thread
/// writes the rows as they come.
pub(super) fn read_and_write(
    plan: &Arc<Plan>,
    catalog: &mut catalog::IndexWriter,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    events: &mut dyn IndexEvents,
    summary: &mut IndexSummary,
) -> Result<(), CatalogError> {
    let waiting = |what: &str| reporter.warning(Some(&opts.db), what);
    let (tx, rx) = crossbeam_channel::bounded::<Record>(WRITER_QUEUE);
    std::thread::scope(|s| {
        // The writer's time in SQLite: its whole time but its waits for rows.
        // It owns the receiving end: when it stops (a database error, a lock held too
        // long), the workers' sends fail at once and the read stops, rather than a worker
        // blocking forever on a full queue nobody empties.
        let writer = std::thread::Builder::new().spawn_scoped(s, || {
            // Moved in (not borrowed): dropped when the writer ends.
            let rx = rx;
            let started = Instant::now();
            let mut idle = Duration::ZERO;
            let result = catalog.write_all(
                |timeout| {
                    let asked = Instant::now();
                    let row = if timeout == Duration::MAX {
                        rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
                    } else {
                        rx.recv_timeout(timeout)
                    };
                    idle += asked.elapsed();
                    row
                },
                &waiting,
            );
            drop(rx);
            (result, started.elapsed().saturating_sub(idle))
        });
        // Threads can be scarce (a pids or address-space limit): then nothing is read.
        let writer = match writer {
            Ok(w) => w,
            Err(e) => {
                return Err(CatalogError::WriterThread {
                    path: opts.db.clone(),
                    source: e,
                });
            }
        };
        // One file at a time: its counts, then its row to the writer.
        let job = Reading {
            thumbs: opts.thumbs.as_ref(),
            reporter,
        };
        let consume = ConsumeOptions::new(opts.read.clone(), opts.workers);
        let tally = &mut *summary;
        let consumed = read::run(plan, &consume, &job, events, |_, planned, done| {
            let (record, read, phases) = done;
            if read {
                tally.read_files += 1;
                tally.read_bytes += planned.entry.size;
            }
            match &record {
                Record::Image(row) => {
                    tally.failed += u64::from(row.info.error.is_some());
                    tally.damaged += u64::from(row.info.damaged.is_some());
                    tally.thumbs +=
                        u64::from(row.visual.as_ref().is_some_and(|v| v.1.thumb.is_ok()));
                }
                Record::Sidecar(_) => tally.sidecars_read += 1,
            }
            tally.phases.add_file(&phases);
            tally.phases.rows += 1;
            // The queue is bounded (rows hold thumbnails): a full one blocks this worker,
            // which the summary reports. Fails only when the writer stopped on a database
            // error (returned below): then nothing more can be stored, nothing more read.
            let sent = match tx.try_send(record) {
                Err(crossbeam_channel::TrySendError::Full(record)) => {
                    let blocked = Instant::now();
                    let sent = tx.send(record).is_ok();
                    tally.phases.blocked += blocked.elapsed();
                    tally.phases.blocked_rows += 1;
                    sent
                }
                sent => sent.is_ok(),
            };
            if sent {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        });
        drop(tx);
        let p = &mut summary.phases;
        p.read_wait = consumed.waiting;
        p.working = consumed.working;
        p.took = consumed.took;
        p.workers = consumed.workers;
        match writer.join() {
            Ok((result, insert)) => {
                summary.phases.insert = insert;
                result
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The read of an index run: each file hashed whole and inspected, each sidecar read
/// for its fields, on the workers.
struct Reading<'a> {
    thumbs: Option<&'a ThumbOptions>,
    reporter: &'a dyn Reporter,
}

impl Job for Reading<'_> {
    /// The file's row, whether it could be read, and the time its phases took.
    type Output = (Record, bool, Phases);

    fn work(&self, work: Work<'_>) -> Self::Output {
        if is_sidecar(&work.planned().entry.path) {
            let (row, read, phases) = read_sidecar(work, self.reporter);
            return (Record::Sidecar(row), read, phases);
        }
        let (row, read, phases) = read_one(work, self.thumbs, self.reporter);
        (Record::Image(row), read, phases)
    }

    fn succeeded(output: &Self::Output) -> bool {
        output.1
    }
}

/// Rows the workers may hand the writer ahead of it: a worker blocks only when the writer
/// is this far behind (at 256 px, ~10 MiB of thumbnails).
const WRITER_QUEUE: usize = 1024;

/// Reads one file whole: its BLAKE3 hash, and what its bytes say (with `thumbs`, its
/// thumbnail and perceptual hash, from the same bytes). Returns its row, whether it
/// could be read, and the time each phase took.
fn read_one(
    work: Work<'_>,
    thumbs: Option<&ThumbOptions>,
    reporter: &dyn Reporter,
) -> (Row, bool, Phases) {
    let mut phases = Phases::default();
    let planned = work.planned();
    thread_local! {
        static HEAD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        static TAIL: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let entry = &planned.entry;
    #[cfg(any(test, feature = "test-hooks"))]
    seekless_core::test_hooks::at_start(&entry.path);
    // A name whose extension is not UTF-8 has no known extension.
    let ext = entry.path.extension().and_then(|e| e.to_str());
    let mut row = Row {
        path_bytes: path_to_bytes(&entry.path).into_owned(),
        dev: entry.id.dev,
        ino: entry.id.ino,
        size: entry.size,
        mtime_ns: mtime_ns(entry.modified),
        info: inspect::ImageInfo::default(),
        blake3: None,
        visual: None,
    };
    // With thumbnails an image is kept whole (one read, never a second), up to a bound;
    // a raw file or a video never is: its head and tail have what it needs.
    // Which are: `formats::Format::kept_whole`, by the extension.
    let whole = thumbs.is_some() && formats::kept_whole(ext);
    let keep = if whole {
        (MAX_THUMB_FILE as usize).max(KEEP)
    } else {
        KEEP
    };
    // The tail starts this far into the file (as planned; a file that changed while read
    // is an error, and its tail is never more than KEEP_TAIL bytes).
    let tail_at = entry.size.saturating_sub(KEEP_TAIL as u64).max(keep as u64);
    let read = HEAD.with(|head| {
        TAIL.with(|tail| {
            let (mut head, mut tail) = (head.borrow_mut(), tail.borrow_mut());
            head.clear();
            tail.clear();
            let mut hasher = blake3::Hasher::new();
            // Read calls are the whole time in `read_all` but the chunks' handling (hashing).
            let reading = Instant::now();
            let mut hashing = Duration::ZERO;
            let mut at = 0u64;
            let result = work.read_all(|chunk| {
                let t = Instant::now();
                hasher.update(chunk);
                let room = keep.saturating_sub(head.len());
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
                let end = at + chunk.len() as u64;
                if end > tail_at {
                    let from = tail_at.saturating_sub(at) as usize;
                    let room = KEEP_TAIL.saturating_sub(tail.len());
                    let part = &chunk[from..];
                    tail.extend_from_slice(&part[..part.len().min(room)]);
                }
                at = end;
                hashing += t.elapsed();
            });
            phases.read = reading.elapsed().saturating_sub(hashing);
            match result {
                Ok(_) => {
                    let t = Instant::now();
                    row.blake3 = Some(hasher.finalize().to_hex().to_string());
                    phases.hash = hashing + t.elapsed();
                    let view = inspect::View::new(&head, &tail, entry.size);
                    let t = Instant::now();
                    row.info = inspect::inspect(view, ext);
                    phases.inspect = t.elapsed();
                    if let Some(why) = &row.info.error {
                        let why = std::io::Error::other(why.clone());
                        reporter.error(&Error::io(&*entry.path, why));
                    }
                    if let Some(what) = &row.info.warning {
                        reporter.warning(Some(&*entry.path), what);
                    }
                    if let Some(t) = thumbs {
                        let visual = if whole && !view.complete() {
                            thumb::Visual::none(format!(
                                "larger than {} MiB: no thumbnail",
                                MAX_THUMB_FILE >> 20
                            ))
                        } else {
                            let source = thumb::Source {
                                view,
                                info: &row.info,
                                path: &entry.path,
                            };
                            thumb::visual_timed(&source, t, &mut phases)
                        };
                        if let Err(why) = &visual.thumb
                            && row.info.error.is_none()
                            && !why.starts_with("no decoder")
                        {
                            reporter.warning(Some(&*entry.path), &format!("no thumbnail: {why}"));
                        }
                        row.visual = Some((t.size, visual));
                    }
                    true
                }
                Err(e) => {
                    reporter.error(&e);
                    row.info.error = Some(e.kind().to_string());
                    false
                }
            }
        })
    });
    // Keep big buffers from one huge file from staying with the thread (with thumbnails,
    // those of a typical photo stay: one allocation per thread, not one per file).
    let stays = if thumbs.is_some() { 32 << 20 } else { 4 << 20 };
    for buffer in [&HEAD, &TAIL] {
        buffer.with(|b| {
            let mut b = b.borrow_mut();
            if b.capacity() > stays {
                *b = Vec::new();
            }
        });
    }
    (row, read, phases)
}

/// Reads one XMP sidecar whole (up to [`inspect::SIDECAR_MAX`]; a larger one is its row's
/// error) and what it says. Returns its row, whether it could be read, and the time its
/// read and parse took.
fn read_sidecar(work: Work<'_>, reporter: &dyn Reporter) -> (SidecarRow, bool, Phases) {
    let mut phases = Phases::default();
    let entry = &work.planned().entry;
    #[cfg(any(test, feature = "test-hooks"))]
    seekless_core::test_hooks::at_start(&entry.path);
    let mut row = SidecarRow {
        path_bytes: path_to_bytes(&entry.path).into_owned(),
        dev: entry.id.dev,
        ino: entry.id.ino,
        size: entry.size,
        mtime_ns: mtime_ns(entry.modified),
        fields: None,
        error: None,
    };
    if entry.size > inspect::SIDECAR_MAX as u64 {
        // Too large to be a sidecar by its size alone: not read at all.
        let why = inspect::too_large();
        reporter.error(&Error::io(&*entry.path, std::io::Error::other(why.clone())));
        row.fields = Some(inspect::SidecarFields::default());
        row.error = Some(why);
        return (row, true, phases);
    }
    // One byte over the bound is enough to tell the parser the file is too large (it grew
    // since it was planned).
    let keep = inspect::SIDECAR_MAX + 1;
    let mut data = Vec::with_capacity(entry.size.min(keep as u64) as usize);
    let reading = Instant::now();
    let result = work.read_all(|chunk| {
        let room = keep.saturating_sub(data.len());
        data.extend_from_slice(&chunk[..chunk.len().min(room)]);
    });
    phases.read = reading.elapsed();
    let read = match result {
        Ok(_) => {
            let t = Instant::now();
            match inspect::sidecar(&data) {
                Ok(fields) => row.fields = Some(fields),
                Err(why) => {
                    reporter.error(&Error::io(&*entry.path, std::io::Error::other(why.clone())));
                    row.fields = Some(inspect::SidecarFields::default());
                    row.error = Some(why);
                }
            }
            phases.inspect = t.elapsed();
            true
        }
        Err(e) => {
            reporter.error(&e);
            row.error = Some(format!("{}{}", catalog::READ_FAILED, e.kind()));
            false
        }
    };
    (row, read, phases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::index;
    use seekless_core::PlanOptions;

    #[test]
    fn a_panic_while_reading_fails_the_run_instead_of_hanging_on_the_writer() {
        let t = tempfile::tempdir().unwrap();
        let photos = t.path().join("photos");
        std::fs::create_dir(&photos).unwrap();
        for name in ["a.gif", seekless_core::test_hooks::PANIC_ON_OPEN, "b.gif"] {
            std::fs::write(photos.join(name), b"GIF89a\x01\0\x01\0\0\0\0;").unwrap();
        }
        let opts = IndexOptions::new(t.path().join("c.db"));
        seekless_core::test_hooks::arm();
        let message = seekless_core::test_hooks::panic_message(move || {
            let _ = index(
                &[photos],
                &PlanOptions::default(),
                &opts,
                &seekless_core::Quiet,
            );
        });
        assert!(message.contains("injected sweep fault"), "{message}");
    }

    #[test]
    fn phase_clocks_run_where_work_was_done_and_thumbnail_phases_only_with_thumbs() {
        let t = tempfile::tempdir().unwrap();
        let photos = t.path().join("photos");
        std::fs::create_dir(&photos).unwrap();
        let (w, h) = (640u16, 480u16);
        let rgb: Vec<u8> = (0..usize::from(w) * usize::from(h) * 3)
            .map(|i| (i % 251) as u8)
            .collect();
        for name in ["a.jpg", "b.jpg", "c.jpg"] {
            jpeg_encoder::Encoder::new_file(photos.join(name), 90)
                .unwrap()
                .encode(&rgb, w, h, jpeg_encoder::ColorType::Rgb)
                .unwrap();
        }
        let mut opts = IndexOptions::new(t.path().join("c.db"));
        let roots = [photos];
        let plain = index(
            &roots,
            &PlanOptions::default(),
            &opts,
            &seekless_core::Quiet,
        )
        .unwrap();
        let p = plain.phases;
        assert_eq!((p.rows, p.blocked_rows, p.blocked), (3, 0, Duration::ZERO));
        assert!(
            p.workers >= 1 && !p.took.is_zero() && !p.working.is_zero(),
            "{p:?}"
        );
        for (name, d) in [
            ("hash", p.hash),
            ("inspect", p.inspect),
            ("insert", p.insert),
        ] {
            assert!(!d.is_zero(), "{name} ran: {p:?}");
        }
        for (name, d) in [
            ("decode", p.decode),
            ("resize", p.resize),
            ("encode", p.encode),
            ("phash", p.phash),
        ] {
            assert!(d.is_zero(), "{name} did not run without thumbs: {p:?}");
        }

        // The same images for thumbnails (read again: none has one yet).
        opts.thumbs = Some(ThumbOptions::default());
        let thumbs = index(
            &roots,
            &PlanOptions::default(),
            &opts,
            &seekless_core::Quiet,
        )
        .unwrap();
        let p = thumbs.phases;
        assert_eq!((thumbs.thumbs, p.rows), (3, 3));
        for (name, d) in [
            ("hash", p.hash),
            ("decode", p.decode),
            ("resize", p.resize),
            ("encode", p.encode),
            ("phash", p.phash),
            ("insert", p.insert),
        ] {
            assert!(!d.is_zero(), "{name} ran: {p:?}");
        }

        // Nothing to read: every clock of the read stays at zero.
        let again = index(
            &roots,
            &PlanOptions::default(),
            &opts,
            &seekless_core::Quiet,
        )
        .unwrap();
        let p = again.phases;
        assert_eq!(again.unchanged, 3);
        assert_eq!(
            (p.rows, p.decode, p.hash),
            (0, Duration::ZERO, Duration::ZERO)
        );
    }
}
