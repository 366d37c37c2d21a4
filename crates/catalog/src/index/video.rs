//! A video's thumbnail frame, from `ffmpeg` when it is installed (as photo servers make
//! theirs): the frame about a tenth into the clip, scaled down by ffmpeg and turned as the
//! video's matrix says, read back as a PPM through a pipe. ffmpeg reads the file itself,
//! only the part it needs; nothing of the video is held here.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// How long one ffmpeg may take before it is stopped (a hostile or damaged file).
const TIMEOUT: Duration = Duration::from_secs(60);

/// The most bytes of PPM read back (a frame far larger than asked for is refused).
const MAX_PPM: u64 = 64 << 20;

/// What to tell a user who has no ffmpeg.
pub const MISSING: &str = "ffmpeg is not installed (Debian and Ubuntu: apt install ffmpeg; \
    macOS: brew install ffmpeg)";

/// The `ffmpeg` on `PATH`, looked up once (`SEEKLESS_FFMPEG` names another).
fn ffmpeg() -> Option<&'static Path> {
    static FFMPEG: OnceLock<Option<PathBuf>> = OnceLock::new();
    FFMPEG
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("SEEKLESS_FFMPEG") {
                return (!p.is_empty()).then(|| PathBuf::from(p));
            }
            let name = seekless_sys::executable_name("ffmpeg");
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|dir| dir.join(&name))
                .find(|p| p.is_file())
        })
        .as_deref()
}

/// Whether an `ffmpeg` was found.
pub fn available() -> bool {
    ffmpeg().is_some()
}

/// A decoded frame: 8-bit RGB, row after row.
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

/// The frame at a tenth of `duration` (seconds; the first frame when unknown) of the video
/// at `path`, fitted into `size` × `size`: the keyframe there first (only keyframes
/// decoded, as `ffmpegthumbnailer` takes one: about half the work), and when that gives
/// none (a clip whose only keyframe is its first), the frame at that very time.
pub fn frame(path: &Path, duration: Option<f64>, size: u32) -> Result<Frame, String> {
    let ffmpeg = ffmpeg().ok_or(MISSING)?;
    let at = duration
        .filter(|d| d.is_finite() && *d > 0.0)
        .map_or(0.0, |d| d / 10.0);
    match run(ffmpeg, path, at, size, true) {
        Err(why) if why.starts_with(NO_FRAME) => run(ffmpeg, path, at, size, false),
        got => got,
    }
}

/// How ffmpeg's answer without a frame begins.
const NO_FRAME: &str = "ffmpeg gave no frame";

/// One ffmpeg run: the frame at `at` seconds (with `keyframe`, the keyframe there).
fn run(ffmpeg: &Path, path: &Path, at: f64, size: u32, keyframe: bool) -> Result<Frame, String> {
    let scale =
        format!("scale={size}:{size}:force_original_aspect_ratio=decrease:force_divisible_by=2");
    let keyframe_args: &[&str] = if keyframe {
        &["-skip_frame", "nokey", "-noaccurate_seek"]
    } else {
        &[]
    };
    let mut child = Command::new(ffmpeg)
        .args(["-nostdin", "-hide_banner", "-loglevel", "error"])
        .args(keyframe_args)
        .args(["-ss", &format!("{at:.3}")])
        .arg("-i")
        // `file:` before the path: a name such as `concat:a|b` or `http:x` is a file here,
        // never one of ffmpeg's protocols.
        .arg({
            let mut arg = std::ffi::OsString::from("file:");
            arg.push(path);
            arg
        })
        .args(["-map", "0:v:0", "-frames:v", "1", "-vf", &scale])
        .args(["-f", "image2pipe", "-c:v", "ppm", "-pix_fmt", "rgb24", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", ffmpeg.display()))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // The output is read on a thread so that a hung ffmpeg can be stopped here.
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let read = (&mut stdout).take(MAX_PPM).read_to_end(&mut out);
        let _ = (&mut stderr).take(64 << 10).read_to_end(&mut err);
        let _ = tx.send((read.map(|_| out), err));
    });
    let (out, err) = match rx.recv_timeout(TIMEOUT) {
        Ok(got) => got,
        Err(gone) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(match gone {
                crossbeam_channel::RecvTimeoutError::Timeout => {
                    format!("ffmpeg took over {} s: stopped", TIMEOUT.as_secs())
                }
                // The reading thread ended without an answer (it panicked).
                crossbeam_channel::RecvTimeoutError::Disconnected => {
                    "ffmpeg's output could not be read".to_string()
                }
            });
        }
    };
    let status = child.wait().map_err(|e| format!("ffmpeg: {e}"))?;
    let out = out.map_err(|e| format!("reading ffmpeg's output: {e}"))?;
    let err = String::from_utf8_lossy(&err);
    let err = err.lines().next_back().unwrap_or("").trim();
    if !status.success() || out.is_empty() {
        return Err(if err.is_empty() {
            format!("{NO_FRAME} ({status})")
        } else {
            format!("{NO_FRAME}: {err}")
        });
    }
    ppm(&out)
}

/// A binary PPM (`P6`, maxval 255) as RGB.
fn ppm(data: &[u8]) -> Result<Frame, String> {
    let bad = || "ffmpeg's frame is not a PPM".to_string();
    let mut fields = Vec::with_capacity(4);
    let mut at = 0;
    while fields.len() < 4 {
        while data.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        let start = at;
        while data.get(at).is_some_and(|b| !b.is_ascii_whitespace()) {
            at += 1;
        }
        if start == at {
            return Err(bad());
        }
        fields.push(std::str::from_utf8(&data[start..at]).map_err(|_| bad())?);
    }
    let num = |s: &str| s.parse::<u32>().map_err(|_| bad());
    if fields[0] != "P6" || num(fields[3])? != 255 {
        return Err(bad());
    }
    let (width, height) = (num(fields[1])?, num(fields[2])?);
    let len = width as usize * height as usize * 3;
    let pixels = data.get(at + 1..at + 1 + len).ok_or_else(bad)?;
    Ok(Frame {
        width,
        height,
        rgb: pixels.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ppm_is_read_and_anything_else_refused() {
        let f = ppm(b"P6\n2 1\n255\n\x01\x02\x03\x04\x05\x06").unwrap();
        assert_eq!((f.width, f.height, f.rgb), (2, 1, vec![1, 2, 3, 4, 5, 6]));
        assert!(ppm(b"P6\n2 1\n255\n\x01\x02").is_err(), "cut short");
        assert!(ppm(b"P5\n2 1\n255\n\x01\x02").is_err());
        assert!(ppm(b"").is_err());
    }
}
