//! The `seekless` command: a thin layer of parsing and printing over the library.

mod bench;
mod copy;
mod dupes;
mod exit;
mod hash;
mod index;
mod inputs;
mod interrupt;
mod options;
mod order;
mod output;
mod progress;
mod shell;
mod tar;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Read many files off rotational disks in physical order: one sweep per disk, with the
/// disk's queue kept full.
#[derive(Parser)]
#[command(name = "seekless", version, about, max_term_width = 100)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print files in physical order (or another order), for other tools to consume.
    Order(order::Args),
    /// Checksum files (coreutils manifest format), or verify a manifest with --check.
    // As coreutils, an option may be given again (`--text --tag --text`).
    #[command(version, args_override_self = true)]
    Hash(hash::Args),
    /// Catalog images into an SQLite database (dimensions, EXIF, BLAKE3), incrementally.
    Index(index::Args),
    /// Find duplicate photos in an index catalog: identical files and near-duplicates
    /// (perceptual hashes), a keeper suggested for each group; with --act, move, trash,
    /// hard-link or reflink the others (journalled, undoable with --undo where moved).
    Dupes(dupes::Args),
    /// Write a tar archive (POSIX pax, as GNU tar reads) of files read in physical order.
    Tar(tar::Args),
    /// Copy a tree (cp -a semantics) read in physical order, atomically per file,
    /// incrementally.
    Copy(copy::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(shell::CompletionArgs),
    /// Print the manual page (roff) on stdout: `seekless man | man -l -`.
    Man,
    /// Benchmark on your own data: given, inode and physical order, each from a cold cache.
    Bench(bench::Args),
}

fn main() -> ExitCode {
    tune_allocator();
    let matches = Cli::command()
        .try_get_matches()
        .unwrap_or_else(|e| exit_for(e));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| exit_for(e));
    // The reader's window holds a descriptor per file ahead: room for it, before any
    // thread starts.
    seekless::read::raise_open_file_limit();
    let result = match cli.command {
        Command::Order(args) => order::run(args),
        Command::Hash(args) => {
            let empty = clap::ArgMatches::default();
            hash::run(args, matches.subcommand_matches("hash").unwrap_or(&empty))
        }
        Command::Bench(args) => bench::run(args),
        Command::Index(args) => index::run(args),
        Command::Dupes(args) => dupes::run(args),
        Command::Tar(args) => tar::run(args),
        Command::Copy(args) => copy::run(args),
        Command::Completions(args) => shell::completions(args),
        Command::Man => shell::man(),
    };
    // What is still buffered for stdout, written now: a failure there fails the run too
    // (coreutils' `close_stdout`).
    let result = result.and_then(|code| {
        std::io::Write::flush(&mut output::stdout())?;
        Ok(code)
    });
    match result {
        Ok(code) => code.into(),
        Err(err) => {
            // Broken pipe on stdout (`seekless order | head`) is not an error, whether it
            // came from a plain write or through serde_json (`--json`).
            let kind = err
                .downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind)
                .or_else(|| {
                    err.downcast_ref::<serde_json::Error>()
                        .and_then(serde_json::Error::io_error_kind)
                });
            if kind == Some(std::io::ErrorKind::BrokenPipe) {
                return exit::Code::Ok.into();
            }
            if let Some(usage) = err.downcast_ref::<inputs::UsageError>() {
                eprintln!(
                    "seekless: {}\nTry 'seekless --help' for more information.",
                    safe(&usage.to_string())
                );
                return exit::Code::Usage.into();
            }
            if let Some(refused) = err.downcast_ref::<inputs::Refused>() {
                eprintln!("seekless: {}", safe(&refused.to_string()));
                return exit::Code::Usage.into();
            }
            eprintln!("seekless: {}", safe(&format!("{err:#}")));
            exit::Code::Failed.into()
        }
    }
}

/// Ends the run for what clap found: a usage error (exit 2), or `--help` and `--version`
/// printed on stdout (exit 0), where a failed write is exit 1 with coreutils' `write
/// error` (a reader gone away, as in `--help | head`, is not).
fn exit_for(e: clap::Error) -> ! {
    let printed = e
        .print()
        .and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
    if let Err(err) = printed
        && err.kind() != std::io::ErrorKind::BrokenPipe
        && !e.use_stderr()
    {
        eprintln!("seekless: {}", output::write_error(err));
        std::process::exit(1);
    }
    std::process::exit(e.exit_code());
}

/// Two glibc settings keep the peak following what is live, whatever the threads' timing:
///
/// - glibc raises its mmap threshold whenever a large block is freed (up to 32 MiB); large
///   vectors then grow inside the heap by copying, and the freed copies stay with the
///   process. A fixed threshold keeps large blocks mapped: they grow by remapping and go
///   back to the system when freed (the walk's result list of a directory of 200,000
///   entries once peaked at twice its size in a loaded test run).
/// - A fixed mmap threshold also fixes the trim threshold at its default, 128 KiB: the
///   heap was then given back and taken again by `brk` about once per file on `index` of
///   tiny files (12 % of its CPU, the kernel flushing TLBs). Up to 8 MiB of free heap top
///   is kept instead.
///
/// Threads keep glibc's arenas of their own (up to 8 per CPU). One arena for all of them
/// (`M_ARENA_MAX` 1, once set here) made the 64 walk threads queue on its lock: every
/// collision is a futex sleep, and with 64 threads on 2 CPUs the holder is often
/// preempted. On a warm tree of 100,000 files that was 2,400 context switches and a tenth
/// of `order`'s wall time. The walk's memory no longer depends on the arenas: each thread
/// hands its results over in 16 KiB chunks from a buffer allocated once, and lists
/// directories into one buffer of its own; one directory of 200,000 entries peaks at
/// 56.4–56.8 MiB alone or loaded (one arena: 55.6–56.3).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt only changes allocator parameters; it is called before any other
    // thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 8 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}

/// A message for stderr with its control characters escaped (it may name a path).
fn safe(message: &str) -> String {
    String::from_utf8_lossy(&output::terminal_safe(message.as_bytes())).into_owned()
}
