//! A physical disk, as the planner groups files by it, what kind of disk reading takes it
//! for, and how device numbers are named. A leaf: imports nothing else from the crate.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

/// A physical disk (or the closest thing to one that could be found).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Disk {
    /// The disk's name (`sda`, `nvme0n1`, `loop3`), or a description when unknown.
    pub name: String,
    /// Whether it is rotational; `None` when unknown (network, memory, unmappable).
    pub rotational: Option<bool>,
    /// The devices followed to reach it, top first (`["dm-0", "sda"]`); for an array over
    /// several devices (md raid, LVM over several PVs), then its member disks
    /// (`["dm-2", "md0", "sdb", "sdc"]`); for a pool ([`Disk::pool`]), its members'
    /// chains one after another (`["sdb", "nvme0n1"]`).
    pub chain: Vec<String>,
    /// For a filesystem read whole over several disks ([`Disk::pool`]): those disks, each
    /// measured on its own; empty for any other disk.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Disk>,
}

impl Disk {
    /// A disk that could not be identified.
    pub fn unknown(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            rotational: None,
            chain: Vec::new(),
            members: Vec::new(),
        }
    }

    /// The one disk a filesystem over several disks is read as when it is not split into
    /// a sweep per member (a btrfs pool with mirrored or parity data, or whose chunk tree
    /// cannot be read): its member disks' names joined with `+` (`sdb+nvme0n1`, in the
    /// order given, each once), a name no disk's own can be (kernel disk names have no
    /// `+`); rotational if any member reports rotational, non-rotational only if every
    /// member reports so, else unknown; its chain the members' chains in turn. It seeks
    /// if any member does: each member is measured on its own. Members on one disk (two
    /// partitions of it) are that disk.
    ///
    /// ```
    /// use seekless_core::Disk;
    ///
    /// let (mut hdd, mut ssd) = (Disk::unknown("sdb"), Disk::unknown("nvme0n1"));
    /// (hdd.rotational, ssd.rotational) = (Some(true), Some(false));
    /// (hdd.chain, ssd.chain) = (vec!["sdb".into()], vec!["nvme0n1".into()]);
    /// let pool = Disk::pool(vec![hdd, ssd]);
    /// assert_eq!(pool.name, "sdb+nvme0n1");
    /// assert_eq!(pool.rotational, Some(true));
    /// assert_eq!(pool.chain, ["sdb", "nvme0n1"]);
    /// assert_eq!(pool.members.len(), 2);
    /// ```
    pub fn pool(members: Vec<Disk>) -> Disk {
        let mut distinct: Vec<Disk> = Vec::with_capacity(members.len());
        for disk in members {
            if !distinct.iter().any(|d| d.name == disk.name) {
                distinct.push(disk);
            }
        }
        if distinct.len() <= 1 {
            return distinct
                .pop()
                .unwrap_or_else(|| Disk::unknown("no member disks"));
        }
        let names: Vec<&str> = distinct.iter().map(|d| d.name.as_str()).collect();
        let rotational = if distinct.iter().any(|d| d.rotational == Some(true)) {
            Some(true)
        } else if distinct.iter().all(|d| d.rotational == Some(false)) {
            Some(false)
        } else {
            None
        };
        let mut chain: Vec<String> = Vec::new();
        for d in &distinct {
            for link in d.chain.iter().chain(std::iter::once(&d.name)) {
                if !chain.contains(link) {
                    chain.push(link.clone());
                }
            }
        }
        Disk {
            name: names.join("+"),
            rotational,
            chain,
            members: distinct,
        }
    }

    /// Whether reads on this disk should be swept in order (rotational or unknown) rather
    /// than issued many at once.
    pub(crate) fn wants_sweep(&self) -> bool {
        self.rotational != Some(false)
    }
}

/// How a disk serves reads scattered over it: what decides how to read it.
///
/// A disk's own `rotational` flag is often wrong (virtio and other virtual disks, many
/// SANs and USB bridges say rotational whatever lies behind them), so the reader measures
/// (a median of 1 ms or more for small scattered reads is a seeking disk) unless told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DiskKind {
    /// Each jump costs milliseconds (a head moves, a platter turns): read in disk order,
    /// one region at a time.
    Seeking,
    /// Scattered reads cost about what adjacent ones do (flash, RAM, a fast virtual
    /// disk): many requests in flight, no waiting at gaps.
    SolidState,
}

impl DiskKind {
    /// Median latency of small scattered reads at or above which a disk seeks. A
    /// rotating disk's random read is a seek plus half a revolution (4–15 ms); flash and
    /// fast virtual disks answer in tens to hundreds of microseconds.
    pub(crate) const SEEK_LATENCY: Duration = Duration::from_millis(1);

    /// The kind of disk whose small reads at scattered places took `latencies`: seeking
    /// when their median (the upper one of an even count) is [`SEEK_LATENCY`](Self::SEEK_LATENCY)
    /// or more. `None` without latencies.
    pub(crate) fn from_latencies(latencies: &[Duration]) -> Option<DiskKind> {
        let mut sorted = latencies.to_vec();
        sorted.sort_unstable();
        let median = *sorted.get(sorted.len() / 2)?;
        Some(Self::of_latency(median))
    }

    /// [`from_latencies`](Self::from_latencies) while the reads are being taken: the kind
    /// once `latencies` (the first of `planned` reads) settle the median of all of them
    /// whatever the rest take, `None` while they do not yet. Lets a measurement stop
    /// early: on a seeking disk every read costs a seek.
    pub(crate) fn settled(latencies: &[Duration], planned: usize) -> Option<DiskKind> {
        let planned = planned.max(latencies.len());
        if planned == 0 {
            return None;
        }
        // The median is element planned / 2 of the sorted latencies: it is slow once
        // planned - planned / 2 reads are slow, fast once planned / 2 + 1 are fast.
        let slow = latencies
            .iter()
            .filter(|&&l| Self::of_latency(l) == DiskKind::Seeking)
            .count();
        let fast = latencies.len() - slow;
        if slow >= planned - planned / 2 {
            Some(DiskKind::Seeking)
        } else if fast > planned / 2 {
            Some(DiskKind::SolidState)
        } else {
            None
        }
    }

    fn of_latency(latency: Duration) -> DiskKind {
        if latency >= Self::SEEK_LATENCY {
            DiskKind::Seeking
        } else {
            DiskKind::SolidState
        }
    }
}

impl fmt::Display for DiskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DiskKind::Seeking => "seeking",
            DiskKind::SolidState => "solid-state",
        })
    }
}

/// What the reader took one disk for, and on what grounds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiskVerdict {
    /// The disk's name ([`Disk::name`]).
    pub disk: String,
    /// What the disk says of itself ([`Disk::rotational`]).
    pub reported: Option<bool>,
    /// The kind it was taken for.
    pub kind: DiskKind,
    /// Why.
    pub basis: DiskBasis,
}

/// The grounds of a [`DiskVerdict`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiskBasis {
    /// Measured: the median latency of `reads` small direct reads at scattered places.
    Measured {
        /// The median latency.
        median: Duration,
        /// Reads taken.
        reads: usize,
    },
    /// Chosen by the caller ([`PlanOptions::disk`](crate::PlanOptions::disk)).
    Chosen,
    /// Not measurable (the reason): taken from what the disk reports (rotational or
    /// unknown: seeking).
    Reported(String),
    /// A pool of several disks read as one ([`Disk::pool`]): each member taken for what
    /// it is on its own grounds (measured, else reported), the pool seeking if any member
    /// is. Its files are not used to measure it: they cannot tell which member answered.
    Members(Vec<DiskVerdict>),
}

impl DiskVerdict {
    /// Its name, what it reports and on what grounds it was judged, without the kind.
    fn grounds(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reports = match self.reported {
            Some(true) => "reports rotational",
            Some(false) => "reports non-rotational",
            None => "reports no kind",
        };
        write!(f, "{}: {reports}, ", self.disk)?;
        match &self.basis {
            DiskBasis::Measured { median, reads } => write!(
                f,
                "measured {:.2} ms random reads (median of {reads})",
                median.as_secs_f64() * 1000.0
            ),
            DiskBasis::Chosen => f.write_str("kind chosen by the caller"),
            DiskBasis::Reported(why) => write!(f, "not measured ({why})"),
            DiskBasis::Members(members) => {
                write!(
                    f,
                    "a pool of {} disks, seeking if any member is [",
                    members.len()
                )?;
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    m.grounds(f)?;
                    write!(f, ": {}", m.kind)?;
                }
                f.write_str("]")
            }
        }
    }
}

/// One line: `sda: reports rotational, measured 11.20 ms random reads (median of 3):
/// treated as seeking`; for a pool, each member's grounds and kind in brackets before the
/// pool's kind.
impl fmt::Display for DiskVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.grounds(f)?;
        write!(f, ": treated as {}", self.kind)
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
/// assert_eq!(seekless_core::device_name(0x1001_0300), "259:65536"); // not 0x100103:0
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
    use super::{Disk, DiskBasis, DiskKind, DiskVerdict, Duration};

    fn ms(m: &[f64]) -> Vec<Duration> {
        m.iter()
            .map(|&m| Duration::from_secs_f64(m / 1000.0))
            .collect()
    }

    #[test]
    fn milliseconds_per_scattered_read_make_a_seeking_disk_and_microseconds_do_not() {
        use DiskKind::*;
        let kind = |m: &[f64]| DiskKind::from_latencies(&ms(m));
        assert_eq!(kind(&[8.1, 12.0, 4.4, 15.3, 9.9, 6.0, 11.2]), Some(Seeking));
        assert_eq!(
            kind(&[0.05, 0.06, 0.04, 0.2, 0.05, 0.05, 0.05]),
            Some(SolidState)
        );
        // Outliers do not decide: a read served from the drive's cache, one queued behind
        // another program's, a disk waking up.
        assert_eq!(
            kind(&[0.2, 9.0, 0.3, 11.0, 8.0, 2500.0, 7.0]),
            Some(Seeking)
        );
        assert_eq!(
            kind(&[3.6, 0.05, 0.05, 40.0, 0.06, 0.05, 0.07]),
            Some(SolidState)
        );
        // A network disk at half a millisecond is not a seeking one; one at 1 ms is taken
        // for one (the threshold).
        assert_eq!(kind(&[0.5, 0.6, 0.4]), Some(SolidState));
        assert_eq!(kind(&[1.0, 1.0, 0.9]), Some(Seeking));
        // Even counts: the upper median.
        assert_eq!(kind(&[0.1, 5.0]), Some(Seeking));
        assert_eq!(kind(&[]), None);
    }

    #[test]
    fn a_measurement_stops_once_the_median_cannot_change() {
        use DiskKind::*;
        let settled = |m: &[f64], n| DiskKind::settled(&ms(m), n);
        // Of 7 reads, 4 on one side settle the median.
        assert_eq!(settled(&[9.0, 8.0, 12.0], 7), None);
        assert_eq!(settled(&[9.0, 8.0, 12.0, 7.0], 7), Some(Seeking));
        assert_eq!(settled(&[0.1, 0.1, 0.1, 0.1], 7), Some(SolidState));
        assert_eq!(settled(&[0.1, 9.0, 0.1, 9.0, 0.1, 9.0], 7), None);
        assert_eq!(
            settled(&[0.1, 9.0, 0.1, 9.0, 0.1, 9.0, 0.1], 7),
            Some(SolidState)
        );
        // Agrees with the median of all reads whatever the rest would have taken.
        for rest in [0.01, 50.0] {
            let first = [9.0, 0.1, 8.0, 7.0, 6.0];
            let mut all = first.to_vec();
            all.extend([rest, rest]);
            assert_eq!(settled(&first, 7), DiskKind::from_latencies(&ms(&all)));
        }
        // Even counts: 2 of 4 slow make the upper median slow; 3 fast make it fast.
        assert_eq!(settled(&[5.0, 5.0], 4), Some(Seeking));
        assert_eq!(settled(&[0.1, 0.1], 4), None);
        assert_eq!(settled(&[0.1, 0.1, 0.1], 4), Some(SolidState));
        assert_eq!(settled(&[], 0), None);
    }

    fn disk(name: &str, rotational: Option<bool>, chain: &[&str]) -> Disk {
        Disk {
            name: name.into(),
            rotational,
            chain: chain.iter().map(|c| c.to_string()).collect(),
            members: Vec::new(),
        }
    }

    #[test]
    fn a_pool_is_named_after_all_its_member_disks_and_seeks_if_any_reports_rotational() {
        let hdd = disk("loop3", Some(true), &["loop3"]);
        let ssd = disk("loop4", Some(false), &["loop4"]);
        let pool = Disk::pool(vec![hdd.clone(), ssd.clone()]);
        assert_eq!(pool.name, "loop3+loop4");
        assert_eq!(pool.rotational, Some(true));
        assert_eq!(pool.chain, ["loop3", "loop4"]);
        assert_eq!(pool.members, [hdd.clone(), ssd.clone()]);
        assert!(pool.wants_sweep());
        // In the order given (btrfs's device ids), whichever member reports what.
        let pool = Disk::pool(vec![ssd.clone(), hdd.clone()]);
        assert_eq!(pool.name, "loop4+loop3");
        assert_eq!(pool.rotational, Some(true));
        // Non-rotational only if every member says so; unknown if one does not say.
        let ssd2 = disk("nvme0n1", Some(false), &["dm-0", "nvme0n1"]);
        let fast = Disk::pool(vec![ssd.clone(), ssd2.clone()]);
        assert_eq!(fast.rotational, Some(false));
        assert!(!fast.wants_sweep());
        assert_eq!(fast.chain, ["loop4", "dm-0", "nvme0n1"]);
        let unknown = Disk::pool(vec![ssd.clone(), Disk::unknown("dev 8:99")]);
        assert_eq!(unknown.rotational, None);
        assert!(unknown.wants_sweep());
        assert_eq!(unknown.name, "loop4+dev 8:99");
        assert_eq!(unknown.chain, ["loop4", "dev 8:99"]);
        let mixed = Disk::pool(vec![Disk::unknown("dev 8:99"), ssd.clone(), hdd.clone()]);
        assert_eq!(mixed.rotational, Some(true));
        // An array member keeps its members in the chain, each name once.
        let md = disk("md0", Some(true), &["md0", "sdb", "sdc"]);
        let pool = Disk::pool(vec![md, disk("sdb", Some(true), &["sdb"])]);
        assert_eq!(pool.name, "md0+sdb");
        assert_eq!(pool.chain, ["md0", "sdb", "sdc"]);
    }

    #[test]
    fn a_pool_of_one_disk_is_that_disk() {
        // Two partitions of one disk in one pool: one head, one disk.
        let sda = disk("sda", Some(true), &["sda"]);
        assert_eq!(Disk::pool(vec![sda.clone(), sda.clone()]), sda);
        assert_eq!(Disk::pool(vec![sda.clone()]), sda);
        assert_eq!(Disk::pool(Vec::new()).rotational, None);
    }

    #[test]
    fn a_pools_verdict_names_each_member_and_what_it_was_taken_for() {
        let member = |name: &str, reported, kind, basis| DiskVerdict {
            disk: String::from(name),
            reported,
            kind,
            basis,
        };
        let verdict = DiskVerdict {
            disk: "loop3+loop4".into(),
            reported: Some(true),
            kind: DiskKind::Seeking,
            basis: DiskBasis::Members(vec![
                member(
                    "loop3",
                    Some(true),
                    DiskKind::Seeking,
                    DiskBasis::Measured {
                        median: Duration::from_micros(12_340),
                        reads: 3,
                    },
                ),
                member(
                    "loop4",
                    Some(false),
                    DiskKind::SolidState,
                    DiskBasis::Reported("/dev/loop4: Permission denied".into()),
                ),
            ]),
        };
        assert_eq!(
            verdict.to_string(),
            "loop3+loop4: reports rotational, a pool of 2 disks, seeking if any member is \
             [loop3: reports rotational, measured 12.34 ms random reads (median of 3): \
             seeking; loop4: reports non-rotational, not measured (/dev/loop4: Permission \
             denied): solid-state]: treated as seeking"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn device_numbers_with_large_minors_are_named_as_major_colon_minor() {
        for (major, minor) in [(8, 1), (259, 0), (259, 256), (259, 65_536), (4095, 1 << 20)] {
            let dev = libc::makedev(major, minor);
            assert_eq!(super::device_name(dev), format!("{major}:{minor}"));
        }
    }
}
