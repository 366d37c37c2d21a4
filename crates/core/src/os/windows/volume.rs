//! Volumes: what filesystem a file is on, how big its clusters are, and which physical
//! disk holds it.
//!
//! The portable code names a filesystem by the number files report as their device (on
//! Windows, the volume serial number). A serial number cannot be opened, so the first
//! file seen on each volume is used to find the volume's root path, kind and cluster
//! geometry ([`discover`]); the device registry keeps the [`Volume`] and hands it back
//! for [`disk_of`] and for mapping files.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;

use windows_sys::Win32::Storage::FileSystem::{
    GetDiskFreeSpaceW, GetDriveTypeW, IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS,
};
use windows_sys::Win32::System::Ioctl::{
    FSCTL_GET_RETRIEVAL_POINTER_BASE, IOCTL_STORAGE_QUERY_PROPERTY,
};

use super::retrieval::Geometry;
use crate::disk::Disk;
use crate::fs_kind::FsKind;
use seekless_sys::ioctl::{self, Aligned, device_io_control, is_unc, volume_device, volume_root};

/// `GetDriveTypeW` answers (winbase.h).
const DRIVE_REMOTE: u32 = 4;
const DRIVE_RAMDISK: u32 = 6;

/// What we know about one volume.
#[derive(Clone, Debug)]
pub struct Volume {
    pub serial: u32,
    /// Its root as a path (`C:\`, `\\?\Volume{…}\`, `\\server\share\`), if found.
    root: Option<String>,
    pub kind: FsKind,
    remote: bool,
    /// Cluster size and base, if the volume told them.
    pub geometry: Option<Geometry>,
}

impl Volume {
    pub fn kind(&self) -> FsKind {
        self.kind
    }

    /// No known cap on one prefetch request (the cache manager reads ahead on its own).
    pub fn max_prefetch(&self) -> Option<u64> {
        None
    }

    /// A volume nothing could be learnt about.
    pub fn unknown(serial: u32) -> Volume {
        Volume {
            serial,
            root: None,
            kind: FsKind::Other,
            remote: false,
            geometry: None,
        }
    }
}

/// What the volume `file` is on (whose serial number is `serial`) is.
pub fn discover(file: &File, serial: u32) -> Volume {
    let name = ioctl::filesystem_name(file).unwrap_or_default();
    let root = ioctl::final_path(file).ok().and_then(|p| volume_root(&p));
    let drive_type = root.as_deref().map(drive_type).unwrap_or(0);
    let remote = drive_type == DRIVE_REMOTE || root.as_deref().is_some_and(is_unc);
    let kind = match drive_type {
        DRIVE_REMOTE => FsKind::Cifs,
        DRIVE_RAMDISK => FsKind::Tmpfs,
        _ if remote => FsKind::Cifs,
        _ => kind_of_name(&name),
    };
    let geometry = root.as_deref().and_then(geometry);
    Volume {
        serial,
        root,
        kind,
        remote,
        geometry,
    }
}

/// The filesystem kind of a `GetVolumeInformation` filesystem name.
pub fn kind_of_name(name: &str) -> FsKind {
    match name.to_ascii_uppercase().as_str() {
        "NTFS" => FsKind::Ntfs,
        "REFS" => FsKind::Refs,
        "FAT" | "FAT12" | "FAT16" | "FAT32" => FsKind::Vfat,
        "EXFAT" => FsKind::Exfat,
        _ => FsKind::Other,
    }
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

fn drive_type(root: &str) -> u32 {
    let w = wide(root);
    // SAFETY: `w` is a NUL-terminated UTF-16 string.
    unsafe { GetDriveTypeW(w.as_ptr()) }
}

/// Cluster size from `GetDiskFreeSpaceW`, and the cluster heap's start from
/// `FSCTL_GET_RETRIEVAL_POINTER_BASE` (0 if the volume cannot be opened: NTFS counts
/// clusters from the volume's start anyway).
fn geometry(root: &str) -> Option<Geometry> {
    let w = wide(root);
    let (mut per_cluster, mut sector, mut free, mut total) = (0u32, 0u32, 0u32, 0u32);
    // SAFETY: `w` is NUL-terminated and the four out-pointers are valid u32s.
    let ok = unsafe {
        GetDiskFreeSpaceW(
            w.as_ptr(),
            &mut per_cluster,
            &mut sector,
            &mut free,
            &mut total,
        )
    };
    let cluster = u64::from(per_cluster) * u64::from(sector);
    if ok == 0 || cluster == 0 {
        return None;
    }
    let lcn_base = volume_device(root)
        .and_then(|dev| open_device(&dev).ok())
        .and_then(|vol| {
            let mut out = Aligned::<8>::zeroed();
            let (n, r) = device_io_control(&vol, FSCTL_GET_RETRIEVAL_POINTER_BASE, &[], &mut out.0);
            (r.is_ok() && n == 8).then(|| u64::from_le_bytes(out.0))
        })
        .map_or(0, |sectors| sectors.saturating_mul(u64::from(sector)));
    Some(Geometry { cluster, lcn_base })
}

/// Opens a volume or disk device for queries only: no read or write access is needed for
/// the ioctls used here, and asking for none works without administrator rights.
fn open_device(path: &str) -> io::Result<File> {
    // FILE_SHARE_READ | FILE_SHARE_WRITE: the volume is in use by everyone else.
    OpenOptions::new()
        .access_mode(0)
        .share_mode(0x1 | 0x2)
        .open(path)
}

/// A volume's extent on a physical disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskExtent {
    pub disk: u32,
    pub start: u64,
    pub length: u64,
}

/// Parses a `VOLUME_DISK_EXTENTS`: a u32 count, padding, then 24-byte `DISK_EXTENT`s
/// (u32 disk number, padding, i64 starting offset, i64 length).
///
/// <https://learn.microsoft.com/windows/win32/api/winioctl/ni-winioctl-ioctl_volume_get_volume_disk_extents>
pub fn parse_disk_extents(buf: &[u8]) -> Option<Vec<DiskExtent>> {
    let count = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let mut out = Vec::with_capacity(count.min(64));
    for i in 0..count {
        let at = 8usize.checked_add(i.checked_mul(24)?)?;
        let e = buf.get(at..at + 24)?;
        let disk = u32::from_le_bytes(e[..4].try_into().ok()?);
        let start = i64::from_le_bytes(e[8..16].try_into().ok()?);
        let length = i64::from_le_bytes(e[16..24].try_into().ok()?);
        out.push(DiskExtent {
            disk,
            start: u64::try_from(start).ok()?,
            length: u64::try_from(length).ok()?,
        });
    }
    Some(out)
}

/// Parses a `DEVICE_SEEK_PENALTY_DESCRIPTOR` (u32 version, u32 size, BOOLEAN
/// IncursSeekPenalty): whether the device pays for seeks, i.e. spins.
///
/// <https://learn.microsoft.com/windows/win32/api/winioctl/ns-winioctl-device_seek_penalty_descriptor>
pub fn parse_seek_penalty(buf: &[u8]) -> Option<bool> {
    let size = u32::from_le_bytes(buf.get(4..8)?.try_into().ok()?);
    if size < 9 {
        return None;
    }
    buf.get(8).map(|&b| b != 0)
}

/// Asks a volume or disk whether it incurs a seek penalty
/// (`IOCTL_STORAGE_QUERY_PROPERTY`, `StorageDeviceSeekPenaltyProperty`).
fn seek_penalty(device: &File) -> Option<bool> {
    // STORAGE_PROPERTY_QUERY { PropertyId: 7 (StorageDeviceSeekPenaltyProperty),
    // QueryType: 0 (PropertyStandardQuery), AdditionalParameters: [0] }, padded to 12.
    let mut query = Aligned::<12>::zeroed();
    query.0[..4].copy_from_slice(&7i32.to_le_bytes());
    let mut out = Aligned::<16>::zeroed();
    let (n, r) = device_io_control(device, IOCTL_STORAGE_QUERY_PROPERTY, &query.0, &mut out.0);
    r.ok()?;
    parse_seek_penalty(&out.0[..n])
}

/// The physical disk of the volume with serial number `serial`, and the volume's byte
/// offset on it.
///
/// A volume on exactly one disk extent (a partition) is named after its disk
/// (`PhysicalDrive0`) so several partitions of one disk share one sweep. Spanned and
/// striped volumes, and volumes whose extents cannot be asked (no permission, Wine), are
/// one "disk" of their own. Rotation comes from the seek-penalty property of the disk,
/// else of the volume; unknown if neither answers.
pub fn disk_of(vol: &Volume) -> (Disk, u64) {
    let serial = vol.serial;
    let label = format!("volume {:04X}-{:04X}", serial >> 16, serial & 0xFFFF);
    let Some(root) = vol.root.clone() else {
        return (Disk::unknown(label), 0);
    };
    if vol.remote {
        return (Disk::unknown(root), 0);
    }
    let Some(device) = volume_device(&root) else {
        return (Disk::unknown(root), 0);
    };
    let Ok(handle) = open_device(&device) else {
        return (Disk::unknown(root), 0);
    };
    let volume_penalty = || seek_penalty(&handle);
    let mut out = Aligned::<{ 8 + 24 * 16 }>::zeroed();
    let (n, r) = device_io_control(
        &handle,
        IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS,
        &[],
        &mut out.0,
    );
    let extents = r.ok().and_then(|()| parse_disk_extents(&out.0[..n]));
    match extents.as_deref() {
        Some([one]) => {
            let name = format!("PhysicalDrive{}", one.disk);
            let rotational = open_device(&format!(r"\\.\{name}"))
                .ok()
                .and_then(|d| seek_penalty(&d))
                .or_else(volume_penalty);
            let disk = Disk {
                name: name.clone(),
                rotational,
                chain: vec![root, name],
                members: Vec::new(),
            };
            (disk, one.start)
        }
        _ => {
            let disk = Disk {
                name: root.clone(),
                rotational: volume_penalty(),
                chain: vec![root],
                members: Vec::new(),
            };
            (disk, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filesystem_names_map_to_kinds() {
        assert_eq!(kind_of_name("NTFS"), FsKind::Ntfs);
        assert_eq!(kind_of_name("ReFS"), FsKind::Refs);
        assert_eq!(kind_of_name("FAT32"), FsKind::Vfat);
        assert_eq!(kind_of_name("FAT"), FsKind::Vfat);
        assert_eq!(kind_of_name("exFAT"), FsKind::Exfat);
        assert_eq!(kind_of_name("UDF"), FsKind::Other);
    }

    fn disk_extents(list: &[(u32, i64, i64)]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(list.len() as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        for &(disk, start, len) in list {
            b.extend_from_slice(&disk.to_le_bytes());
            b.extend_from_slice(&[0; 4]);
            b.extend_from_slice(&start.to_le_bytes());
            b.extend_from_slice(&len.to_le_bytes());
        }
        b
    }

    #[test]
    fn volume_disk_extents_parse() {
        let got = parse_disk_extents(&disk_extents(&[(2, 1 << 20, 1 << 40)])).unwrap();
        assert_eq!(
            got,
            vec![DiskExtent {
                disk: 2,
                start: 1 << 20,
                length: 1 << 40
            }]
        );
        let two = disk_extents(&[(0, 512, 100), (1, 512, 100)]);
        assert_eq!(parse_disk_extents(&two).unwrap().len(), 2);
        assert_eq!(parse_disk_extents(&two[..40]), None);
        assert_eq!(parse_disk_extents(&[1, 0]), None);
        assert_eq!(parse_disk_extents(&disk_extents(&[(0, -1, 5)])), None);
    }

    #[test]
    fn seek_penalty_descriptors_parse() {
        let d = |penalty: u8| {
            let mut b = Vec::new();
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&12u32.to_le_bytes());
            b.extend_from_slice(&[penalty, 0, 0, 0]);
            b
        };
        assert_eq!(parse_seek_penalty(&d(1)), Some(true));
        assert_eq!(parse_seek_penalty(&d(0)), Some(false));
        assert_eq!(parse_seek_penalty(&d(1)[..8]), None);
        let mut small = d(1);
        small[4] = 8;
        assert_eq!(parse_seek_penalty(&small), None);
    }
}
