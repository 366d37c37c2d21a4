//! A physical disk, as the planner groups files by it, and how device numbers are named.
//! A leaf: imports nothing else from the crate.

use serde::Serialize;

/// A physical disk (or the closest thing to one that could be found).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Disk {
    /// The disk's name (`sda`, `nvme0n1`, `loop3`), or a description when unknown.
    pub name: String,
    /// Whether it is rotational; `None` when unknown (network, memory, unmappable).
    pub rotational: Option<bool>,
    /// The devices followed to reach it, top first (`["dm-0", "sda"]`).
    pub chain: Vec<String>,
}

impl Disk {
    /// A disk that could not be identified.
    pub fn unknown(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            rotational: None,
            chain: Vec::new(),
        }
    }

    /// Whether reads on this disk should be swept in order (rotational or unknown) rather
    /// than issued many at once.
    pub fn wants_sweep(&self) -> bool {
        self.rotational != Some(false)
    }
}

/// Index of a disk in a [`Plan`](crate::Plan).
pub type DiskIndex = u16;

/// A device number as people write it: `MAJOR:MINOR` on Unix (`8:1`, `259:65536`; Linux
/// splits the number as glibc's `major()`/`minor()` do, so minors of 256 and more come out
/// right, not as `dev >> 8`), the volume serial number as `vol` prints it (`1234-ABCD`)
/// on Windows.
///
/// ```
/// # #[cfg(target_os = "linux")]
/// assert_eq!(seekless::device_name(0x1001_0300), "259:65536"); // not 0x100103:0
/// ```
pub fn device_name(dev: u64) -> String {
    #[cfg(target_os = "linux")]
    {
        // glibc's encoding (bits/sysmacros.h): major in bits 8–19 and 32–43, minor in
        // bits 0–7 and 20–31 (and 44–63).
        let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff);
        let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff);
        format!("{major}:{minor}")
    }
    #[cfg(any(target_os = "macos", target_os = "ios"))]
    {
        // Darwin's dev_t: 8 bits of major, 24 of minor.
        format!("{}:{}", (dev >> 24) & 0xff, dev & 0xff_ffff)
    }
    #[cfg(windows)]
    {
        format!("{:04X}-{:04X}", (dev >> 16) & 0xffff, dev & 0xffff)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "ios", windows)))]
    {
        dev.to_string()
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn device_numbers_with_large_minors_are_named_as_major_colon_minor() {
        for (major, minor) in [(8, 1), (259, 0), (259, 256), (259, 65_536), (4095, 1 << 20)] {
            let dev = libc::makedev(major, minor);
            assert_eq!(super::device_name(dev), format!("{major}:{minor}"));
        }
    }
}
