//! Which filesystem a file is on, by an identity that outlives mounts and device numbers:
//! a drive plugged into another port, mounted again, or read from another machine keeps
//! its identity, where its device number changes.

use std::io;
use std::path::Path;

/// Where a volume's identity came from, most stable first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentitySource {
    /// The filesystem's own UUID (Linux `FS_IOC_GETFSUUID`; btrfs's fsid with the
    /// subvolume's id): the same on every machine and every mount.
    Uuid,
    /// The volume serial number NTFS, ReFS and FAT keep in their boot sector (Windows).
    Serial,
    /// The mount table: filesystem type, source, root within it and mount point. Stable
    /// across mounts at the same place from the same source (a network share, a FUSE
    /// filesystem, a disk without a UUID), but not across mount points.
    Mount,
    /// Only the device number: nothing better could be learnt. Changes with every mount.
    DeviceNumber,
}

/// A filesystem (a btrfs subvolume counting as one) as [`volume_identity`] identifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeIdentity {
    key: String,
    source: IdentitySource,
    dev: u64,
}

impl VolumeIdentity {
    pub(crate) fn new(key: String, source: IdentitySource, dev: u64) -> Self {
        Self { key, source, dev }
    }

    /// The identity, as text: `uuid:HEX` (btrfs: `uuid:HEX/subvol:ID`), `serial:HEX`,
    /// `mount:TYPE:SOURCE:ROOT:MOUNT-POINT` or `dev:NUMBER`, per [`source`](Self::source).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where the identity came from.
    pub fn source(&self) -> IdentitySource {
        self.source
    }

    /// The device number the volume had when looked at (`st_dev`; the serial number on
    /// Windows).
    pub fn dev(&self) -> u64 {
        self.dev
    }
}

/// The mount points strictly under `path`, sorted: the filesystems a walk of `path` would
/// enter besides its own. Linux only (`/proc/self/mountinfo`); elsewhere `Unsupported`.
pub fn mount_points_under(path: &Path) -> io::Result<Vec<std::path::PathBuf>> {
    #[cfg(target_os = "linux")]
    {
        crate::os::mount_points_under(path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the mount table is read on Linux only",
        ))
    }
}

/// The volume holding `path`, a directory or a regular file (not followed if a symbolic
/// link; anything else is refused, never opened).
pub fn volume_identity(path: &Path) -> io::Result<VolumeIdentity> {
    let meta = crate::symlink_metadata(path)?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a directory or a regular file",
        ));
    }
    #[cfg(target_os = "linux")]
    {
        let file = crate::open_to_locate(path, false)?;
        crate::os::volume_of_open(&file, path)
    }
    #[cfg(target_os = "macos")]
    {
        crate::os::volume_of_path(path, &meta)
    }
    #[cfg(windows)]
    {
        let id = crate::file_id(path, None, &meta)?;
        Ok(VolumeIdentity::new(
            format!("serial:{:016x}", id.dev),
            IdentitySource::Serial,
            id.dev,
        ))
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
    {
        let dev = crate::file_id(path, None, &meta)?.dev;
        Ok(VolumeIdentity::new(
            format!("dev:{dev}"),
            IdentitySource::DeviceNumber,
            dev,
        ))
    }
}

/// The volume of the device number `dev`, one of whose files or directories is at
/// `path` (absolute): where the mount table has a mount point of `dev` above `path`, that
/// mount point is what is opened, so nothing under it is touched (Linux); else
/// [`volume_identity`] of `path`, which must then be on `dev`.
pub fn volume_identity_of_device(dev: u64, path: &Path) -> io::Result<VolumeIdentity> {
    #[cfg(target_os = "linux")]
    if let Some(found) = crate::os::volume_of_device(dev, path) {
        return found;
    }
    let v = volume_identity(path)?;
    if v.dev() == dev {
        Ok(v)
    } else {
        Err(io::Error::other("moved to another device meanwhile"))
    }
}

/// Lower-case hexadecimal of `bytes`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The key of [`IdentitySource::Mount`]: `mount:TYPE:SOURCE:ROOT:MOUNT-POINT` (bytes that
/// are not UTF-8 replaced: a key is compared, never opened).
#[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
pub(crate) fn mount_key(fstype: &[u8], source: &[u8], root: &[u8], point: &[u8]) -> String {
    let t = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    format!("mount:{}:{}:{}:{}", t(fstype), t(source), t(root), t(point))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directories_and_regular_files_are_looked_at() {
        let dir = std::env::temp_dir();
        let v = volume_identity(&dir).unwrap();
        assert!(!v.key().is_empty());
        #[cfg(unix)]
        {
            let e = volume_identity(Path::new("/dev/null")).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        }
        assert!(volume_identity(&dir.join("seekless-no-such-file")).is_err());
    }

    #[test]
    fn keys_are_as_documented() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
        assert_eq!(
            mount_key(b"nfs", b"nas:/photos", b"/", b"/mnt/p"),
            "mount:nfs:nas:/photos:/:/mnt/p"
        );
    }
}
