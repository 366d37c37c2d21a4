//! Reads a list of paths from standard input (one per line; NUL-separated with `-0`),
//! reads the files in the order they lie on their disks, and prints each file's size and
//! BLAKE3 hash as it is read. The engine of seekless in a few lines:
//!
//! ```sh
//! find ~/Pictures -type f | cargo run --release -p seekless-core --example hash_in_physical_order
//! ```

use std::io::Write;
use std::ops::ControlFlow;
use std::sync::Arc;

use seekless_core::read::{
    ConsumeOptions, Job, NoEvents, ReadOptions, Work, raise_open_file_limit,
};
use seekless_core::{Error, Plan, PlanOptions, Reporter, read, read_path_list};

/// Errors go to stderr, naming the file; the run goes on.
struct Stderr;

impl Reporter for Stderr {
    fn error(&self, err: &Error) {
        eprintln!("hash_in_physical_order: {err}");
    }
}

/// What a worker makes of a file: its size and BLAKE3.
struct Blake3;

impl Job for Blake3 {
    type Output = Result<(u64, blake3::Hash), Error>;

    fn work(&self, file: Work<'_>) -> Self::Output {
        let mut hasher = blake3::Hasher::new();
        let size = file.read_all(|chunk| {
            hasher.update(chunk);
        })?;
        Ok((size, hasher.finalize()))
    }
}

fn main() -> std::io::Result<()> {
    let nul = std::env::args().any(|a| a == "-0");
    let paths = read_path_list(std::io::stdin().lock(), nul)?;
    // Room for the window of files the reader keeps open ahead.
    raise_open_file_limit();

    // walk → locate → plan: one sweep per disk, in physical order.
    let plan = Arc::new(Plan::build(&paths, &PlanOptions::default(), &Stderr));

    // read: the sweeps keep each disk's queue full; four workers hash; one sink prints.
    let opts = ConsumeOptions::new(ReadOptions::default(), 4);
    let mut out = std::io::stdout();
    read::run(
        &plan,
        &opts,
        &Blake3,
        &mut NoEvents,
        |_, planned, hashed| {
            match hashed {
                Ok((size, hash)) => {
                    let path = planned.entry.path.display();
                    if writeln!(out, "{size:>12}  {}  {path}", hash.to_hex()).is_err() {
                        return ControlFlow::Break(()); // stdout went away: stop reading
                    }
                }
                Err(e) => Stderr.error(&e),
            }
            ControlFlow::Continue(())
        },
    );
    Ok(())
}
