//! A job of one's own on seekless's consume layer, as a photo manager would write it: it
//! reads `ROW-ID<TAB>PATH` lines from standard input (its own table's rows), skips files
//! below a size, reads the rest in physical order with a worker per CPU, and prints, per
//! row id, what the file's first bytes say it is and its BLAKE3 hash. Then where the time
//! went.
//!
//! ```sh
//! find ~/Pictures -type f | nl -ba -w1 | cargo run --release --example custom_job
//! ```

use std::io::{BufRead, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use seekless_core::read::{self, ConsumeOptions, Consumed, Events, Job, Work};
use seekless_core::{Error, Plan, PlanOptions, PlannedFile, Reporter};

/// Files smaller than this are not worth reading (icons, sidecars).
const SMALLEST: u64 = 1024;

/// Errors go to stderr, naming the file; the run goes on.
struct Stderr;

impl Reporter for Stderr {
    fn error(&self, err: &Error) {
        eprintln!("custom_job: {err}");
    }
}

/// The job: on a worker thread, per file, its kind and hash, with the caller's row id.
struct Sniff<'a> {
    plan: &'a Plan,
}

/// What a worker makes of one file.
struct Sniffed {
    row: Option<u64>,
    result: Result<(&'static str, blake3::Hash), Error>,
}

impl Job for Sniff<'_> {
    type Output = Sniffed;

    fn work(&self, file: Work<'_>) -> Sniffed {
        let row = self.plan.tag(file.index());
        let mut head = [0u8; 12];
        let mut have = 0;
        let mut hasher = blake3::Hasher::new();
        // Through the worker's own buffer; fails if the file changed while it was read.
        let result = file
            .read_all(|chunk| {
                let n = chunk.len().min(head.len() - have);
                head[have..have + n].copy_from_slice(&chunk[..n]);
                have += n;
                hasher.update(chunk);
            })
            .map(|_| (kind(&head[..have]), hasher.finalize()));
        Sniffed { row, result }
    }

    fn succeeded(output: &Sniffed) -> bool {
        output.result.is_ok()
    }
}

/// What a file's first bytes say it is.
fn kind(head: &[u8]) -> &'static str {
    match head {
        [0xFF, 0xD8, 0xFF, ..] => "jpeg",
        [0x89, b'P', b'N', b'G', ..] => "png",
        [b'G', b'I', b'F', b'8', ..] => "gif",
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P'] => "webp",
        [b'I', b'I', 42, 0, ..] | [b'M', b'M', 0, 42, ..] => "tiff",
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => "iso-bmff",
        _ => "other",
    }
}

/// Progress on stderr: a count every 1,000 files, and where the time went at the end.
#[derive(Default)]
struct Progress {
    done: u64,
}

impl Events for Progress {
    fn reading(&mut self, plan: &Arc<Plan>) {
        eprintln!("custom_job: reading {} files", plan.files().len());
    }

    fn file_done(&mut self, _file: &PlannedFile, _ok: bool) {
        self.done += 1;
        if self.done.is_multiple_of(1000) {
            eprintln!("custom_job: {} files", self.done);
        }
    }

    fn read_done(&mut self, c: &Consumed) {
        eprintln!(
            "custom_job: {} files ({} failed) in {:.2} s; workers waited {:.2} s for the \
             disks and worked {:.2} s: {}",
            c.files,
            c.failed,
            c.took.as_secs_f64(),
            c.waiting.as_secs_f64(),
            c.working.as_secs_f64(),
            if c.disk_bound() {
                "disk-bound"
            } else {
                "CPU-bound"
            }
        );
    }
}

fn main() -> std::io::Result<()> {
    // The caller's rows: `ROW-ID<TAB>PATH`.
    let mut rows: Vec<(PathBuf, u64)> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let Some((id, path)) = line.trim_start().split_once('\t') else {
            continue;
        };
        match id.trim().parse() {
            Ok(id) => rows.push((PathBuf::from(path), id)),
            Err(_) => eprintln!("custom_job: not a row id: {id}"),
        }
    }
    seekless_core::read::raise_open_file_limit();

    // walk → locate → plan, each file tagged with its row; then the decision step.
    let plan = Plan::build_tagged(&rows, &PlanOptions::default(), &Stderr);
    let plan = read::decide(plan, |f| (f.entry.size >= SMALLEST).then_some(())).plan;

    // read: the sweeps keep the disks busy, the workers sniff and hash, the sink prints.
    let mut out = std::io::BufWriter::new(std::io::stdout());
    let job = Sniff { plan: &plan };
    read::run(
        &plan,
        &ConsumeOptions::default(),
        &job,
        &mut Progress::default(),
        |_, _, sniffed| {
            match sniffed.result {
                Ok((kind, hash)) => {
                    let row = sniffed.row.map_or("?".to_string(), |r| r.to_string());
                    if writeln!(out, "{row}\t{kind}\t{hash}").is_err() {
                        // Nobody is reading the output any more: stop reading the disk.
                        return ControlFlow::Break(());
                    }
                }
                Err(e) => Stderr.error(&e),
            }
            ControlFlow::Continue(())
        },
    );
    out.flush()
}
