//! Reads a list of paths from standard input (one per line; NUL-separated with `-0`),
//! reads the files in the order they lie on their disks, and prints each file's size and
//! BLAKE3 hash as it is read. The engine of seekless in a few lines:
//!
//! ```sh
//! find ~/Pictures -type f | cargo run --release --example hash_in_physical_order
//! ```

use std::io::Write;
use std::sync::{Arc, Mutex};

use seekless_core::read::{ReadOptions, Reader, raise_open_file_limit};
use seekless_core::{Error, Plan, PlanOptions, Reporter, read_path_list};

/// Errors go to stderr, naming the file; the run goes on.
struct Stderr;

impl Reporter for Stderr {
    fn error(&self, err: &Error) {
        eprintln!("hash_in_physical_order: {err}");
    }
}

fn main() -> std::io::Result<()> {
    let nul = std::env::args().any(|a| a == "-0");
    let paths = read_path_list(std::io::stdin().lock(), nul)?;
    // Room for the window of files the reader keeps open ahead.
    raise_open_file_limit();

    // walk → locate → plan: one sweep per disk, in physical order.
    let plan = Arc::new(Plan::build(&paths, &PlanOptions::default(), &Stderr));

    // read: the sweeps keep each disk's queue full; four workers hash.
    let out = Mutex::new(std::io::stdout());
    Reader::new(plan, ReadOptions::default()).par_for_each(4, |planned, file| {
        let mut hasher = blake3::Hasher::new();
        let read = file.and_then(|f| {
            f.read_to_end_with(|chunk| {
                hasher.update(chunk);
            })
        });
        match read {
            Ok(size) => {
                let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
                let _ = writeln!(
                    out,
                    "{size:>12}  {}  {}",
                    hasher.finalize().to_hex(),
                    planned.entry.path.display()
                );
            }
            Err(e) => Stderr.error(&e),
        }
    });
    Ok(())
}
