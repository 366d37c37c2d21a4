//! The filesystem type (`fstatfs` magic numbers from `<linux/magic.h>`).

use std::fs::File;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;

use crate::fs_kind::FsKind;

/// The kind of filesystem `file` is on; `Other` if it cannot be told.
pub fn kind(file: &File) -> FsKind {
    let mut buf = MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: fstatfs writes one `struct statfs` into the buffer we pass, which is sized
    // and aligned for it; we read it only after a successful return.
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), buf.as_mut_ptr()) };
    if rc != 0 {
        return FsKind::Other;
    }
    // SAFETY: fstatfs returned 0, so the struct is initialised.
    let st = unsafe { buf.assume_init() };
    kind_of_magic(st.f_type as u64)
}

pub fn kind_of_magic(magic: u64) -> FsKind {
    match magic {
        0xEF53 => FsKind::Ext4,
        0x5846_5342 => FsKind::Xfs,
        0x9123_683E => FsKind::Btrfs,
        0xF2F5_2010 => FsKind::F2fs,
        0x4d44 => FsKind::Vfat,
        0x2011_BAB0 => FsKind::Exfat,
        0x5346_544e | 0x6573_5546_0000_0000 => FsKind::Ntfs,
        0x2fc1_2fc1 => FsKind::Zfs,
        0x0102_1994 | 0x8584_58f6 => FsKind::Tmpfs,
        0x6969 => FsKind::Nfs,
        0xFF53_4D42 | 0xFE53_4D42 | 0x517B => FsKind::Cifs,
        0x6573_5546 => FsKind::Fuse,
        0x794c_7630 => FsKind::Overlay,
        // proc, sysfs, debugfs, securityfs, cgroup, cgroup2, devpts, configfs, tracefs,
        // pstore, bpf, efivarfs, fusectl, binfmt_misc, selinuxfs, smackfs, nsfs, mqueue,
        // rpc_pipefs: made up by the kernel, sizes included.
        0x9fa0 | 0x6265_6572 | 0x6462_6720 | 0x7363_6673 | 0x27e0eb | 0x6367_7270 | 0x1cd1
        | 0x6265_6570 | 0x7472_6163 | 0x6165_676C | 0xcafe_4a11 | 0xde5e_81e4 | 0x6573_5543
        | 0x4249_4e4d | 0xf97c_ff8c | 0x4341_5d53 | 0x6e73_6673 | 0x1980_0202 | 0x6759_6969 => {
            FsKind::Virtual
        }
        _ => FsKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_name_the_filesystems_we_treat_specially() {
        assert_eq!(kind_of_magic(0xEF53), FsKind::Ext4);
        assert_eq!(kind_of_magic(0x5846_5342), FsKind::Xfs);
        assert_eq!(kind_of_magic(0x9123_683E), FsKind::Btrfs);
        assert_eq!(kind_of_magic(0x0102_1994), FsKind::Tmpfs);
        assert_eq!(kind_of_magic(0x6969), FsKind::Nfs);
        assert_eq!(kind_of_magic(0xFF53_4D42), FsKind::Cifs);
        assert_eq!(kind_of_magic(0x6573_5546), FsKind::Fuse);
        assert_eq!(kind_of_magic(0x794c_7630), FsKind::Overlay);
        assert_eq!(kind_of_magic(0x9fa0), FsKind::Virtual, "proc");
        assert_eq!(kind_of_magic(0x6265_6572), FsKind::Virtual, "sysfs");
        assert_eq!(kind_of_magic(0x7472_6163), FsKind::Virtual, "tracefs");
        assert_eq!(kind_of_magic(0x1234), FsKind::Other);
    }
}
