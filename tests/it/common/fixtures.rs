//! Named fixtures shared by several test files: another program holding a lock, a run
//! whose `/dev/stdout` is a link into a file, a temporary's name as seekless makes them.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::*;

/// A process holding an exclusive `flock` on `path` (made if missing, as a file) until
/// dropped: another program's lock, taken before this returns.
pub struct Holder(Child);

impl Holder {
    pub fn lock(path: &Path) -> Holder {
        let script = "import fcntl, os, sys\n\
                      p = sys.argv[1]\n\
                      fd = os.open(p, os.O_RDONLY) if os.path.isdir(p) else \
                      os.open(p, os.O_RDWR | os.O_CREAT, 0o600)\n\
                      fcntl.flock(fd, fcntl.LOCK_EX)\n\
                      print('locked', flush=True)\n\
                      sys.stdin.read()\n";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked", "the holder took its lock");
        Holder(child)
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// A temporary's name as seekless makes them, for `name`.
pub fn temp_name(name: &str) -> String {
    format!(".{name}.seekless-tmp-0123456789abcdef-1")
}

/// `seekless ARGS` run in `dir` by `sh` in a mount namespace of its own with a fresh
/// `/dev` holding only `/dev/stdout` (a link to `/proc/self/fd/1`), standard output
/// redirected to `dir/out`: whatever the run does to `/dev/stdout` stays there. Asserts
/// it succeeded and left `/dev/stdout` a link; returns `dir/out`.
pub fn to_dev_stdout(test: &str, dir: &Path, args: &str) -> PathBuf {
    if !require_root(test) || !require_tool(test, "unshare") {
        return PathBuf::new();
    }
    let out = dir.join("out");
    let o = output_within(
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount -t tmpfs none /dev && ln -s /proc/self/fd/1 /dev/stdout && \
                 \"$SEEKLESS\" {args} > out; \
                 rc=$?; test -L /dev/stdout || echo 'STDOUT REPLACED' >&2; exit $rc"
            ))
            .current_dir(dir)
            .env("SEEKLESS", env!("CARGO_BIN_EXE_seekless"))
            .env_remove("SEEKLESS_INJECT_FAULTS"),
        RUN_LIMIT,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("STDOUT REPLACED"), "{}", stderr(&o));
    out
}
