//! Exit codes, coreutils style.

use std::process::ExitCode;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// Everything was processed.
    Ok = 0,
    /// Some files failed (each was reported on stderr); the rest was processed.
    Failed = 1,
    /// The command line was wrong (clap exits with this code itself for what it parses).
    Usage = 2,
}

impl Code {
    /// `Failed` if any error was reported, else `Ok`.
    pub fn from_errors(errors: u64) -> Self {
        if errors > 0 { Code::Failed } else { Code::Ok }
    }
}

impl From<Code> for ExitCode {
    fn from(c: Code) -> ExitCode {
        ExitCode::from(c as u8)
    }
}
