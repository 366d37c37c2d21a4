//! Measure: what kind of disk a sweep reads ([`DiskKind`]), from how the disk answers a
//! few small direct reads at scattered places, unless the caller said
//! ([`PlanOptions::disk`](crate::PlanOptions::disk), the one place a run chooses it).
//! Device work, below planning and reading alike: it knows disks and extents, not plans.
//! [`DiskJudge`] is the one place the kind is decided: the planner asks it before it
//! locates (a disk known not to seek is not located), the reader before it sweeps.
//!
//! A disk's `rotational` flag is wrong on most virtual disks, so it is not trusted: the
//! whole disk's device node is read where we may (root), else blocks of the files to be
//! read on it (of any size: a small file's one block), one 4 KiB block each, within
//! their data extents, past the page cache, in an order that jumps across
//! the disk (random places within even strata, the strata shuffled, new places each run
//! so a drive's own cache cannot answer). On a seeking disk each such read costs a seek
//! and part of a revolution, milliseconds; on flash or a fast virtual disk tens of
//! microseconds. Reading stops as soon as the median is settled (3 of 5 on one side), so
//! a hard disk pays three seeks, once per disk and process.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::disk::{Disk, DiskBasis, DiskKind, DiskVerdict};
use crate::os::{self, DIRECT_BLOCK, DirectReader};
use crate::placement::Extent;
use crate::sync::lock;

/// Reads planned per measurement (the median of these, settled early: 3 on one side).
const READS: usize = 5;

/// Fewest reads a measurement is taken on.
const MIN_READS: usize = 3;

/// What a measurement found: the kind, the median latency, the reads taken.
type Found = (DiskKind, Duration, usize);

/// The disks a run has measured, by name and `diskseq` (a loop device attached again
/// under the same name is another disk). Held by [`PlanOptions`](crate::PlanOptions)
/// and by each plan built with them: plans built with one set of options (or its clones:
/// one run's rounds of `hash --check`, `copy --verify`) measure each disk once, whatever
/// number of reads follow; new options measure afresh.
#[derive(Clone, Default)]
pub(crate) struct Measurements(Arc<Mutex<HashMap<String, Found>>>);

impl Measurements {
    fn get(&self, key: &str) -> Option<Found> {
        lock(&self.0).get(key).copied()
    }

    fn insert(&self, key: String, found: Found) {
        lock(&self.0).insert(key, found);
    }
}

impl std::fmt::Debug for Measurements {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Measurements({} disks)", lock(&self.0).len())
    }
}

/// Where a run's kind of each disk is decided, and only here: the caller's choice
/// ([`PlanOptions::disk`](crate::PlanOptions::disk)) when it made one, else what measuring
/// the disk says (once per disk per run, kept in [`Measurements`]), else what the disk
/// reports. The planner asks [`known_solid_state`](Self::known_solid_state) before it
/// locates; the reader asks [`verdict`](Self::verdict) before it sweeps. A plan carries
/// the judge its options made.
#[derive(Clone, Debug, Default)]
pub(crate) struct DiskJudge {
    chosen: Option<DiskKind>,
    measured: Measurements,
}

/// A file's place to time reads at, if the disk's device node cannot be read: its path,
/// size and extents (of any size: a small file's one block counts).
pub(crate) struct Sample<'a> {
    pub(crate) path: &'a Path,
    pub(crate) size: u64,
    pub(crate) extents: &'a [Extent],
}

impl DiskJudge {
    /// The judge of a run whose caller chose `chosen` (or not), keeping measurements in
    /// `measured`.
    pub(crate) fn new(chosen: Option<DiskKind>, measured: Measurements) -> DiskJudge {
        DiskJudge { chosen, measured }
    }

    /// The kind the caller chose for every disk, if it did.
    pub(crate) fn chosen(&self) -> Option<DiskKind> {
        self.chosen
    }

    /// This judge with every disk taken for `kind`.
    pub(crate) fn choose(&mut self, kind: DiskKind) {
        self.chosen = Some(kind);
    }

    /// Whether `disk` is known not to seek before any of its files is located: chosen
    /// so, or [`solid_state_before_planning`].
    pub(crate) fn known_solid_state(&self, disk: &Disk) -> bool {
        match self.chosen {
            Some(kind) => kind == DiskKind::SolidState,
            None => solid_state_before_planning(disk, &self.measured),
        }
    }

    /// What to take `disk` for when its files are read: the caller's choice, else what
    /// measuring it says (its device node, else reads of `samples()`, asked for only
    /// then), else what it reports (rotational or unknown: seeking). A pool of several
    /// disks read as one ([`Disk::pool`]) is judged member by member ([`pool_verdict`]).
    pub(crate) fn verdict<'a>(
        &self,
        disk: &Disk,
        samples: impl FnOnce() -> Vec<Sample<'a>>,
    ) -> DiskVerdict {
        let (kind, basis) = match self.chosen {
            Some(kind) => (kind, DiskBasis::Chosen),
            None if !disk.members.is_empty() => pool_verdict(disk, &self.measured),
            None => {
                let key = os::disk_identity(disk);
                let found = match self.measured.get(&key) {
                    Some(found) => Ok(found),
                    None => measure(disk, samples).inspect(|&found| {
                        self.measured.insert(key, found);
                    }),
                };
                match found {
                    Ok((kind, median, reads)) => (kind, DiskBasis::Measured { median, reads }),
                    Err(why) => (reported_kind(disk), DiskBasis::Reported(why)),
                }
            }
        };
        DiskVerdict {
            disk: disk.name.clone(),
            reported: disk.rotational,
            kind,
            basis,
        }
    }
}

/// A pool's kind and grounds: each member disk's device node measured on its own (as a
/// disk of its own is), or where it cannot be (no root), the member taken for what it
/// reports; the pool seeks if any member does. Not its files: a read of a pool's file
/// goes to the member the filesystem picks (a mirror by its read policy), so timing it
/// cannot show that every member is fast.
fn pool_verdict(disk: &Disk, measured: &Measurements) -> (DiskKind, DiskBasis) {
    let mut rng = Rng::seeded();
    let members: Vec<DiskVerdict> = disk
        .members
        .iter()
        .map(|member| {
            let (kind, basis) = match measured_node(member, measured, &mut rng) {
                Ok((kind, median, reads)) => (kind, DiskBasis::Measured { median, reads }),
                Err(why) => (reported_kind(member), DiskBasis::Reported(why)),
            };
            DiskVerdict {
                disk: member.name.clone(),
                reported: member.rotational,
                kind,
                basis,
            }
        })
        .collect();
    let kind = match members.iter().any(|m| m.kind == DiskKind::Seeking) {
        true => DiskKind::Seeking,
        false => DiskKind::SolidState,
    };
    (kind, DiskBasis::Members(members))
}

/// What a disk that cannot be measured is taken for: what it reports (rotational or
/// unknown: seeking).
fn reported_kind(disk: &Disk) -> DiskKind {
    match disk.wants_sweep() {
        true => DiskKind::Seeking,
        false => DiskKind::SolidState,
    }
}

/// [`measure_node`], unless this run measured `disk` already; kept for the rest of the run.
fn measured_node(disk: &Disk, measured: &Measurements, rng: &mut Rng) -> Result<Found, String> {
    let key = os::disk_identity(disk);
    if let Some(found) = measured.get(&key) {
        return Ok(found);
    }
    measure_node(disk, rng).inspect(|&found| measured.insert(key, found))
}

/// Times direct reads of `disk`: its device node's, else its files' (`samples()`, taken
/// only then). The kind, the median latency and the reads taken; or why it could not be
/// measured.
fn measure<'a>(disk: &Disk, samples: impl FnOnce() -> Vec<Sample<'a>>) -> Result<Found, String> {
    let mut rng = Rng::seeded();
    let mut why = Vec::new();
    match measure_node(disk, &mut rng) {
        Ok(found) => return Ok(found),
        Err(e) => why.push(e),
    }
    // The files on the disk, in disk order: a block of each of a few, spread. Files
    // smaller than a block count too (a direct read of their one block returns what there
    // is): a tree of tiny files is still measured. Only extents read from the device
    // count: not inline data, holes or unwritten preallocations, which a direct read
    // answers without the disk.
    let mut samples = samples();
    samples.retain(|s| !s.extents.is_empty());
    let mut picks = spread(samples.len() as u64, READS, &mut rng).into_iter();
    let mut last_error = None;
    let latencies = time_reads(|| {
        let f = &samples[picks.next()? as usize];
        let e = &f.extents[rng.below(f.extents.len() as u64) as usize];
        // Never past the end, which a direct read answers without the disk.
        let offset = (e.logical + rng.below(e.length.div_ceil(DIRECT_BLOCK)) * DIRECT_BLOCK)
            .min(f.size.saturating_sub(1));
        let read =
            DirectReader::open(f.path).and_then(|mut file| timed(|| file.read_block(offset)));
        Some(read.inspect_err(|e| last_error = Some(e.to_string())))
    });
    match settle(&latencies) {
        Some(found) => Ok(found),
        None => {
            why.push(match last_error {
                Some(e) => format!("its files: {e}"),
                None => "too few files with a known position".to_string(),
            });
            Err(why.join("; "))
        }
    }
}

/// Times direct reads of `disk`'s device node, spread over the whole disk.
fn measure_node(disk: &Disk, rng: &mut Rng) -> Result<Found, String> {
    let Some(node) = os::disk_node(disk) else {
        return Err("no device node".to_string());
    };
    match DirectReader::open(&node).and_then(|mut d| Ok((d.len()?, d))) {
        Ok((len, mut device)) if len >= READS as u64 * DIRECT_BLOCK => {
            let mut places = spread(len / DIRECT_BLOCK, READS, rng).into_iter();
            let latencies = time_reads(|| {
                let block = places.next()?;
                Some(timed(|| device.read_block(block * DIRECT_BLOCK)))
            });
            settle(&latencies).ok_or_else(|| format!("{}: too few reads", node.display()))
        }
        Ok(_) => Err(format!("{}: too small", node.display())),
        Err(e) => Err(format!("{}: {e}", node.display())),
    }
}

/// Whether `disk` is known not to seek before any file on it is planned: it reports
/// itself non-rotational *and* its device node answers direct reads scattered over it as
/// a solid-state disk does (where the node may be read: root). Both must agree, since
/// either alone is sometimes wrong (USB bridges, virtual disks); without the node, false.
/// A pool of several disks read as one ([`Disk::pool`]) only if every member is.
/// The measurement is kept for the read, which then does not measure again.
fn solid_state_before_planning(disk: &Disk, measured: &Measurements) -> bool {
    if disk.rotational != Some(false) {
        return false;
    }
    if !disk.members.is_empty() {
        return disk
            .members
            .iter()
            .all(|member| solid_state_before_planning(member, measured));
    }
    measured_node(disk, measured, &mut Rng::seeded())
        .is_ok_and(|(kind, ..)| kind == DiskKind::SolidState)
}

/// The kind, median and count of `latencies`, if there are enough.
fn settle(latencies: &[Duration]) -> Option<Found> {
    if latencies.len() < MIN_READS {
        return None;
    }
    let kind =
        DiskKind::settled(latencies, READS).or_else(|| DiskKind::from_latencies(latencies))?;
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    Some((kind, sorted[sorted.len() / 2], latencies.len()))
}

/// How long `read` took.
fn timed(read: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<Duration> {
    let started = Instant::now();
    read()?;
    Ok(started.elapsed())
}

/// Collects the latencies of the reads `next` times until it has none left or their
/// median is settled; failed reads are left out.
fn time_reads(mut next: impl FnMut() -> Option<std::io::Result<Duration>>) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(READS);
    loop {
        match next() {
            None => break,
            Some(Ok(took)) => latencies.push(took),
            Some(Err(_)) => continue,
        }
        if DiskKind::settled(&latencies, READS).is_some() {
            break;
        }
    }
    latencies
}

/// `n` places among `len` (fewer if `len` is smaller): one at random within each of `n`
/// equal strata, the strata in shuffled order, so that each read jumps.
fn spread(len: u64, n: usize, rng: &mut Rng) -> Vec<u64> {
    let n = (n as u64).min(len);
    let mut places: Vec<u64> = (0..n)
        .map(|k| {
            let (start, end) = (k * len / n, (k + 1) * len / n);
            start + rng.below(end - start)
        })
        .collect();
    for k in (1..places.len()).rev() {
        places.swap(k, rng.below(k as u64 + 1) as usize);
    }
    places
}

/// splitmix64, seeded from the clock and the process: new places each run.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng(now ^ (u64::from(std::process::id()) << 32))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_fall_one_in_each_stratum_in_jumping_order() {
        let mut rng = Rng(1);
        let places = spread(5000, 5, &mut rng);
        let mut strata: Vec<u64> = places.iter().map(|p| p / 1000).collect();
        strata.sort_unstable();
        assert_eq!(strata, (0..5).collect::<Vec<_>>());
        assert_eq!(spread(3, 7, &mut rng).len(), 3);
        assert!(spread(0, 7, &mut rng).is_empty());
    }

    #[test]
    fn a_pool_is_solid_state_only_if_every_member_is_and_seeks_if_any_member_does() {
        use DiskKind::*;
        // Members named as no disk is: no device node, so only what this run measured
        // (put in by hand here) or what they report decides.
        let member = |name: &str, rotational| Disk {
            name: name.into(),
            rotational,
            chain: vec![name.into()],
            members: Vec::new(),
        };
        let pool = Disk::pool(vec![
            member("test-no-such-disk-a", Some(false)),
            member("test-no-such-disk-b", Some(false)),
        ]);
        assert_eq!(pool.rotational, Some(false));
        let measured = Measurements::default();
        let key = |i: usize| os::disk_identity(&pool.members[i]);
        let us = Duration::from_micros;
        measured.insert(key(0), (SolidState, us(60), 3));
        // One member measured solid-state, the other not measurable: not known to be.
        assert!(!solid_state_before_planning(&pool, &measured));
        // Read as what the other reports (non-rotational), said per member.
        let (kind, basis) = pool_verdict(&pool, &measured);
        assert_eq!(kind, SolidState);
        let DiskBasis::Members(members) = &basis else {
            panic!("{basis:?}")
        };
        assert_eq!(members.len(), 2);
        assert_eq!(
            members[0].basis,
            DiskBasis::Measured {
                median: us(60),
                reads: 3
            }
        );
        assert_eq!(
            members[1].basis,
            DiskBasis::Reported("no device node".into())
        );
        // One member seeking: the pool seeks, whatever the other measured.
        measured.insert(key(1), (Seeking, us(12_000), 3));
        assert!(!solid_state_before_planning(&pool, &measured));
        let (kind, basis) = pool_verdict(&pool, &measured);
        assert_eq!(kind, Seeking);
        let DiskBasis::Members(members) = &basis else {
            panic!("{basis:?}")
        };
        let kinds: Vec<_> = members.iter().map(|m| (m.disk.as_str(), m.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("test-no-such-disk-a", SolidState),
                ("test-no-such-disk-b", Seeking)
            ]
        );
        // Both measured solid-state: the pool is, before planning too.
        measured.insert(key(1), (SolidState, us(80), 3));
        assert!(solid_state_before_planning(&pool, &measured));
        assert_eq!(pool_verdict(&pool, &measured).0, SolidState);
        // Unmeasured members decide by what they report: one rotational makes it seek,
        // and such a pool is never taken for solid-state before planning.
        let spinning = Disk::pool(vec![
            member("test-no-such-disk-c", Some(false)),
            member("test-no-such-disk-d", Some(true)),
        ]);
        assert!(!solid_state_before_planning(&spinning, &measured));
        assert_eq!(pool_verdict(&spinning, &measured).0, Seeking);
    }

    #[test]
    fn reads_stop_once_settled_and_failed_reads_are_left_out() {
        let mut n = 0;
        let latencies = time_reads(|| {
            n += 1;
            match n {
                2 => Some(Err(std::io::Error::other("bad block"))),
                _ if n <= 20 => Some(Ok(Duration::from_millis(5))),
                _ => None,
            }
        });
        // Three slow reads settle the median of five; the failed one did not count.
        assert_eq!((latencies.len(), n), (3, 4));
        assert_eq!(
            settle(&latencies).map(|s| (s.0, s.2)),
            Some((DiskKind::Seeking, 3))
        );
        assert_eq!(settle(&latencies[..2]), None, "too few to judge");
    }
}
