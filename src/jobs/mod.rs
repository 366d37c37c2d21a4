//! Jobs: thin consumers of the reader. Each is a library function first; the command line
//! only parses and prints.

pub mod bench;
pub mod check;
pub mod copy;
pub mod digest;
pub mod dupes;
pub mod hash;
pub mod index;
pub mod manifest;
mod stat;
pub mod tar;

/// Fault injection, for tests of files that change while they are archived or copied:
/// right after its header is written (tar) or its temporary made (copy), a file whose name
/// starts with `seekless-fault-shrink` is cut to half its size, and one starting with
/// `seekless-fault-grow` gets 1000 bytes more, and before it is read (index) one starting
/// with `seekless-fault-stall` holds its reader for two minutes (a slow file, for tests of
/// what is committed meanwhile), and one starting with `seekless-fault-pause` holds it until
/// a file of its name with `.go` appended exists (two minutes at most: a test chooses the
/// moment the read goes on) — in unit tests always, in debug builds of the binary when
/// `SEEKLESS_INJECT_FAULTS=1`. Release builds have no such hook.
#[cfg(any(test, debug_assertions))]
pub(crate) fn fault_point(path: &std::path::Path) {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let armed = cfg!(test) || std::env::var_os("SEEKLESS_INJECT_FAULTS").is_some_and(|v| v == "1");
    if !armed {
        return;
    }
    let open = || std::fs::OpenOptions::new().write(true).open(path);
    if name.starts_with("seekless-fault-shrink")
        && let Ok(f) = open()
        && let Ok(m) = f.metadata()
    {
        let _ = f.set_len(m.len() / 2);
    } else if name.starts_with("seekless-fault-grow")
        && let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(path)
    {
        let _ = std::io::Write::write_all(&mut f, &[b'+'; 1000]);
    } else if name.starts_with("seekless-fault-stall") {
        std::thread::sleep(std::time::Duration::from_secs(120));
    } else if name.starts_with("seekless-fault-pause") {
        let mut go = path.as_os_str().to_owned();
        go.push(".go");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !std::path::Path::new(&go).exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Fault injection, as [`fault_point`], once a run has planned and before it reads: a file
/// whose name starts with `seekless-fault-vanish` is removed (a name deleted while the run
/// goes on; its other hard-linked names stay).
#[cfg(any(test, debug_assertions))]
pub(crate) fn fault_before_read(path: &std::path::Path) {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let armed = cfg!(test) || std::env::var_os("SEEKLESS_INJECT_FAULTS").is_some_and(|v| v == "1");
    if armed && name.starts_with("seekless-fault-vanish") {
        // A test's own file, removed to stand for someone else removing it; never a
        // release build.
        #[allow(clippy::disallowed_methods)]
        let _ = std::fs::remove_file(path);
    }
}
