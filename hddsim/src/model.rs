//! The disk model: pure functions of position and virtual time, no I/O.
//!
//! Geometry is reduced to one coordinate, the byte offset. Two derived views:
//!
//! - **radial**: the head's stroke position is `offset / size`, so seek time is a function of
//!   the byte distance (settle + √distance up to full stroke).
//! - **angular**: `revs(offset)` = how many revolutions of data lie before `offset`, the
//!   integral of `1 / (rate · revolution)`. Its integer part is the track, its fraction is
//!   the angle at which the sector passes under the head. Because transfer time is
//!   `revolution · (revs(end) − revs(start))`, a transfer ends exactly at the angle of the
//!   next sector: a request that continues the previous one without a gap waits for nothing.
//!
//! The platter angle at virtual time `t` is `frac(t / revolution)`, so the rotational
//! latency is deterministic given the target offset and the time the seek ends.

use serde::Serialize;

const MB: f64 = 1e6;

/// Parameters of the emulated drive. Times in seconds, rates in bytes per second.
#[derive(Clone, Debug, Serialize)]
pub struct DiskParams {
    /// Capacity in bytes.
    pub size: u64,
    /// Spindle speed.
    pub rpm: f64,
    /// Seek time of the shortest non-zero seek (head settle).
    pub settle_s: f64,
    /// Seek time across the whole stroke.
    pub full_stroke_s: f64,
    /// Media rate at offset 0 (outer edge).
    pub outer_rate: f64,
    /// Media rate at the last byte (inner edge).
    pub inner_rate: f64,
    /// Read-ahead segment of the drive's buffer, bytes; 0 = no drive read-ahead.
    pub cache_bytes: u64,
    /// Interface rate for data served from the drive's buffer.
    pub bus_rate: f64,
}

impl DiskParams {
    /// A 7200 rpm disk of `size` bytes: 0.8 ms settle, 15.2 ms full stroke (≈ 8.5 ms average),
    /// 200 → 100 MB/s zones, no drive read-ahead, 550 MB/s interface.
    pub fn hdd_7200(size: u64) -> Self {
        DiskParams {
            size,
            rpm: 7200.0,
            settle_s: 0.8e-3,
            full_stroke_s: 15.2e-3,
            outer_rate: 200.0 * MB,
            inner_rate: 100.0 * MB,
            cache_bytes: 0,
            bus_rate: 550.0 * MB,
        }
    }

    /// One revolution, seconds.
    pub fn revolution_s(&self) -> f64 {
        60.0 / self.rpm
    }

    /// Average seek over uniformly random pairs of offsets, from the closed form
    /// E[√|x − y|] = 8/15 for x, y uniform on [0, 1].
    pub fn average_seek_s(&self) -> f64 {
        self.settle_s + (self.full_stroke_s - self.settle_s) * 8.0 / 15.0
    }

    fn size_f(&self) -> f64 {
        self.size.max(1) as f64
    }

    fn is_flat(&self) -> bool {
        (self.outer_rate - self.inner_rate).abs() < 1.0
    }

    /// Media rate (bytes/s) at `offset`: linear from outer to inner.
    pub fn rate_at(&self, offset: u64) -> f64 {
        let x = (offset as f64 / self.size_f()).min(1.0);
        self.outer_rate - (self.outer_rate - self.inner_rate) * x
    }

    /// Revolutions of data before `offset` (see the module doc).
    pub fn revs(&self, offset: u64) -> f64 {
        let rev = self.revolution_s();
        if self.is_flat() {
            return offset as f64 / (self.outer_rate * rev);
        }
        let k = (self.outer_rate - self.inner_rate) / self.size_f();
        (self.outer_rate / self.rate_at(offset)).ln() / (k * rev)
    }

    /// Inverse of [`revs`](Self::revs): the offset at which `revs` reaches `r`.
    pub fn offset_at_revs(&self, r: f64) -> u64 {
        let rev = self.revolution_s();
        let o = if self.is_flat() {
            r * self.outer_rate * rev
        } else {
            let k = (self.outer_rate - self.inner_rate) / self.size_f();
            let rate = self.outer_rate * (-r * k * rev).exp();
            (self.outer_rate - rate) / k
        };
        // Round to the nearest byte so that offset → revs → offset is stable.
        (o.max(0.0).round() as u64).min(self.size)
    }

    /// Track number of `offset`.
    pub fn track(&self, offset: u64) -> u64 {
        self.revs(offset).floor() as u64
    }

    /// Seek time from the head at `from` to `to`. Zero on the same track (including the
    /// sequential continuation), else settle + (full − settle)·√(distance / size).
    pub fn seek_s(&self, from: u64, to: u64) -> f64 {
        if from == to || self.track(from) == self.track(to) {
            return 0.0;
        }
        let d = from.abs_diff(to) as f64 / self.size_f();
        self.settle_s + (self.full_stroke_s - self.settle_s) * d.min(1.0).sqrt()
    }

    /// Rotational wait, seconds, for the sector at `offset` when the head arrives on its
    /// track at virtual time `t_s`. In `[0, revolution)`.
    pub fn rotation_wait_s(&self, t_s: f64, offset: u64) -> f64 {
        let rev = self.revolution_s();
        let platter = (t_s / rev).fract();
        let target = self.revs(offset).fract();
        let w = (target - platter).rem_euclid(1.0) * rev;
        // Float and nanosecond rounding can leave a sequential continuation a hair past its
        // sector; a real drive would not wait a whole revolution for that.
        if w > rev - 2e-6 { 0.0 } else { w }
    }

    /// Media transfer time of `len` bytes from `offset`.
    pub fn transfer_s(&self, offset: u64, len: u64) -> f64 {
        let end = offset.saturating_add(len).min(self.size);
        (self.revs(end) - self.revs(offset)).max(0.0) * self.revolution_s()
    }
}

/// One command to the drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub offset: u64,
    pub len: u64,
    pub write: bool,
}

impl Command {
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }

    pub fn overlaps(&self, other: &Command) -> bool {
        self.offset < other.end() && other.offset < self.end()
    }
}

/// How a command is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Head moves (or not) to the data and reads/writes it from the media.
    Media,
    /// Entirely in the drive's read-ahead buffer.
    CacheHit,
    /// Starts in the read-ahead buffer, the rest follows from the head as it streams on.
    CachePartial,
}

/// The modeled cost of one command started at a given virtual time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub source: Source,
    pub seek_s: f64,
    pub rotation_s: f64,
    pub transfer_s: f64,
    /// |head − target| in bytes when the command started (0 for buffer hits).
    pub seek_distance: u64,
    /// Where the head was when the command started.
    pub head_from: u64,
    /// Virtual time (s) the head resumes streaming from `stream_from`, if this command
    /// (re)starts a read-ahead stream.
    stream_restart: Option<(u64, f64)>,
}

impl Plan {
    /// Seek + rotation: what SPTF minimises.
    pub fn positioning_s(&self) -> f64 {
        self.seek_s + self.rotation_s
    }

    pub fn service_s(&self) -> f64 {
        self.seek_s + self.rotation_s + self.transfer_s
    }
}

/// Drive read-ahead: the head keeps reading on from `start_x` (where it was at `start_t`)
/// until `limit`, filling the buffer; the buffer holds the last `cache_bytes` read.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stream {
    valid_from: u64,
    start_x: u64,
    start_t: f64,
    limit: u64,
}

/// Mutable state of the drive: where the head is and what the buffer holds.
#[derive(Clone, Debug)]
pub struct Drive {
    pub params: DiskParams,
    head: u64,
    stream: Option<Stream>,
}

impl Drive {
    pub fn new(params: DiskParams) -> Self {
        Drive {
            params,
            head: 0,
            stream: None,
        }
    }

    /// Offset under the head at virtual time `t` (s).
    pub fn head_at(&self, t: f64) -> u64 {
        match self.stream {
            Some(s) => self.stream_pos(&s, t),
            None => self.head,
        }
    }

    /// Virtual time (s) at which stream `s` reaches offset `y` (at or after `start_x`).
    fn stream_reaches(&self, s: &Stream, y: u64) -> f64 {
        let p = &self.params;
        s.start_t + (p.revs(y) - p.revs(s.start_x)) * p.revolution_s()
    }

    fn stream_pos(&self, s: &Stream, t: f64) -> u64 {
        if t <= s.start_t {
            return s.start_x;
        }
        let p = &self.params;
        let r = p.revs(s.start_x) + (t - s.start_t) / p.revolution_s();
        p.offset_at_revs(r).clamp(s.start_x, s.limit.min(p.size))
    }

    /// Cost of `cmd` if it starts at virtual time `t` (s). Does not change the drive.
    pub fn plan(&self, cmd: &Command, t: f64) -> Plan {
        let p = &self.params;
        if !cmd.write
            && let Some(s) = self.stream
        {
            let x = self.stream_pos(&s, t);
            let valid_from = s.valid_from.max(x.saturating_sub(p.cache_bytes));
            if valid_from <= cmd.offset && cmd.offset <= x && cmd.len > 0 {
                if cmd.end() <= x {
                    return Plan {
                        source: Source::CacheHit,
                        seek_s: 0.0,
                        rotation_s: 0.0,
                        transfer_s: cmd.len as f64 / p.bus_rate,
                        seek_distance: 0,
                        head_from: x,
                        stream_restart: None,
                    };
                }
                let stalled = x >= s.limit.min(p.size);
                let (rotation_s, transfer_s, restart) = if stalled {
                    // The buffer was full and the head stopped: wait for the sector again.
                    let w = p.rotation_wait_s(t, x);
                    (w, p.transfer_s(x, cmd.end() - x), Some((x, t + w)))
                } else {
                    // The head is still streaming towards the end of this command.
                    let done = self.stream_reaches(&s, cmd.end());
                    (0.0, (done - t).max(0.0), None)
                };
                return Plan {
                    source: Source::CachePartial,
                    seek_s: 0.0,
                    rotation_s,
                    transfer_s,
                    seek_distance: 0,
                    head_from: x,
                    stream_restart: restart,
                };
            }
            if x < cmd.offset && cmd.offset <= s.limit.min(p.size) && cmd.len > 0 {
                // Just ahead of the streaming head: the stream reaches it without a seek,
                // and what the buffer holds stays (a new media read would drop it).
                let reached = self.stream_reaches(&s, cmd.offset).max(t);
                return Plan {
                    source: Source::CachePartial,
                    seek_s: 0.0,
                    rotation_s: reached - t,
                    transfer_s: (self.stream_reaches(&s, cmd.end()) - reached).max(0.0),
                    seek_distance: 0,
                    head_from: x,
                    stream_restart: None,
                };
            }
        }
        let from = self.head_at(t);
        let seek_s = p.seek_s(from, cmd.offset);
        let rotation_s = p.rotation_wait_s(t + seek_s, cmd.offset);
        Plan {
            source: Source::Media,
            seek_s,
            rotation_s,
            transfer_s: p.transfer_s(cmd.offset, cmd.len),
            seek_distance: from.abs_diff(cmd.offset),
            head_from: from,
            stream_restart: None,
        }
    }

    /// Apply `plan` (from [`plan`](Self::plan) with the same `cmd` and `t`).
    pub fn commit(&mut self, cmd: &Command, t: f64, plan: &Plan) {
        let cache = self.params.cache_bytes;
        let end = cmd.end().min(self.params.size);
        match plan.source {
            Source::Media => {
                self.head = end;
                self.stream = if !cmd.write && cache > 0 {
                    Some(Stream {
                        valid_from: cmd.offset,
                        start_x: end,
                        start_t: t + plan.service_s(),
                        limit: end.saturating_add(cache),
                    })
                } else {
                    None
                };
            }
            Source::CacheHit | Source::CachePartial => {
                let x = plan.head_from;
                if let Some(s) = self.stream.as_mut() {
                    if let Some((from, at)) = plan.stream_restart {
                        s.start_x = from;
                        s.start_t = at;
                    } else if x >= s.limit {
                        // Stalled and this hit frees buffer space: streaming resumes when
                        // the next sector comes round.
                        let w = self.params.rotation_wait_s(t, x);
                        s.start_x = x;
                        s.start_t = t + w;
                    }
                    s.limit = s.limit.max(end.saturating_add(cache));
                    self.head = end.max(x);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;
    const MS: f64 = 1e-3;

    fn read(offset: u64, len: u64) -> Command {
        Command {
            offset,
            len,
            write: false,
        }
    }

    fn disk() -> DiskParams {
        DiskParams::hdd_7200(4 * GB)
    }

    /// A drive with a 512 KiB read-ahead buffer that has just served `first` from an
    /// idle start, and the time it finished.
    fn streaming_after(first: &Command) -> (Drive, f64) {
        let mut params = disk();
        params.cache_bytes = 512 * 1024;
        let mut drive = Drive::new(params);
        let p1 = drive.plan(first, 0.0);
        drive.commit(first, 0.0, &p1);
        (drive, p1.service_s())
    }

    /// Deterministic xorshift, so the statistics below are reproducible.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn seek_curve_has_settle_and_full_stroke_endpoints() {
        let d = disk();
        assert_eq!(d.seek_s(123_456, 123_456), 0.0);
        let one_track = d.offset_at_revs(1.0);
        let s = d.seek_s(0, one_track + 1);
        assert!(s > 0.8 * MS && s < 1.2 * MS, "track-to-track {s}");
        let full = d.seek_s(0, d.size);
        assert!((full - 15.2 * MS).abs() < 1e-9, "full stroke {full}");
    }

    #[test]
    fn seek_time_grows_with_distance() {
        let d = disk();
        let mut last = 0.0;
        for i in 1..=100u64 {
            let s = d.seek_s(0, d.size / 100 * i);
            assert!(s > last, "seek to {i}% not longer than to {}%", i - 1);
            last = s;
        }
    }

    #[test]
    fn random_seeks_average_near_8_5_ms() {
        let d = disk();
        let mut next = rng(7);
        let n = 20_000;
        let total: f64 = (0..n)
            .map(|_| d.seek_s(next() % d.size, next() % d.size))
            .sum();
        let avg = total / n as f64;
        assert!((avg - 8.5 * MS).abs() < 0.2 * MS, "average seek {avg}");
        assert!((d.average_seek_s() - avg).abs() < 0.2 * MS);
    }

    #[test]
    fn zone_rate_falls_linearly_from_outer_to_inner() {
        let d = disk();
        assert_eq!(d.rate_at(0), 200e6);
        assert!((d.rate_at(d.size / 2) - 150e6).abs() < 1.0);
        assert!((d.rate_at(d.size) - 100e6).abs() < 1.0);
        // 1 MB takes 5 ms at the outer edge and 10 ms at the inner edge.
        assert!((d.transfer_s(0, 1_000_000) - 5.0 * MS).abs() < 0.01 * MS);
        let inner = d.transfer_s(d.size - 1_000_000, 1_000_000);
        assert!((inner - 10.0 * MS).abs() < 0.01 * MS, "inner {inner}");
    }

    #[test]
    fn flat_rate_is_the_same_everywhere() {
        let mut d = disk();
        d.outer_rate = 150e6;
        d.inner_rate = 150e6;
        let a = d.transfer_s(0, 1_500_000);
        let b = d.transfer_s(d.size - 1_500_000, 1_500_000);
        assert!((a - 10.0 * MS).abs() < 1e-9 && (b - 10.0 * MS).abs() < 1e-9);
    }

    #[test]
    fn revs_and_offset_at_revs_are_inverse() {
        let d = disk();
        for o in [0, 1, 4096, 123_456_789, d.size / 2, d.size - 1] {
            assert_eq!(d.offset_at_revs(d.revs(o)), o);
        }
    }

    #[test]
    fn rotational_latency_stays_within_one_revolution_and_averages_half() {
        let d = disk();
        let rev = d.revolution_s();
        assert!((rev - 8.333 * MS).abs() < 0.001 * MS);
        let mut next = rng(3);
        let n = 20_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let t = (next() % 10_000_000) as f64 * 1e-6;
            let w = d.rotation_wait_s(t, next() % d.size);
            assert!((0.0..rev).contains(&w));
            sum += w;
        }
        let avg = sum / n as f64;
        assert!(
            (avg - rev / 2.0).abs() < 0.15 * MS,
            "average rotation {avg}"
        );
    }

    #[test]
    fn sequential_continuation_costs_only_transfer() {
        let mut drive = Drive::new(disk());
        let first = Command {
            offset: 10 * GB / 10,
            len: 131_072,
            write: false,
        };
        let p1 = drive.plan(&first, 0.0123);
        drive.commit(&first, 0.0123, &p1);
        let next = Command {
            offset: first.end(),
            len: 131_072,
            write: false,
        };
        let t = 0.0123 + p1.service_s();
        let p2 = drive.plan(&next, t);
        assert_eq!(p2.seek_s, 0.0);
        assert!(p2.rotation_s < 1e-6, "rotation {}", p2.rotation_s);
        // Arriving a little late, the sector has passed: nearly a full revolution.
        let late = drive.plan(&next, t + 0.5 * MS);
        assert!(late.rotation_s > drive.params.revolution_s() - 0.6 * MS);
    }

    #[test]
    fn drive_read_ahead_serves_the_following_sectors() {
        let first = read(1_000_000, 65_536);
        let (drive, done) = streaming_after(&first);
        let next = read(first.end(), 65_536);
        // 2 ms later the head has read ~390 KB more: the next 64 KiB is in the buffer.
        let hit = drive.plan(&next, done + 2.0 * MS);
        assert_eq!(hit.source, Source::CacheHit);
        assert_eq!(hit.positioning_s(), 0.0);
        // Immediately after, only part of it is there: the rest streams on, no rotation.
        let partial = drive.plan(&next, done + 0.1 * MS);
        assert_eq!(partial.source, Source::CachePartial);
        assert_eq!(partial.rotation_s, 0.0);
        assert!(partial.transfer_s < drive.params.transfer_s(next.offset, next.len));
        // Far away is a miss with a seek.
        let far = read(3 * GB, 4096);
        let miss = drive.plan(&far, done + 2.0 * MS);
        assert_eq!(miss.source, Source::Media);
        assert!(miss.seek_s > 0.0);
        // Without a buffer the same follow-up read is a media read that waited for rotation.
        let mut bare = Drive::new(disk());
        bare.commit(&first, 0.0, &bare.plan(&first, 0.0));
        let p = bare.plan(&next, done + 2.0 * MS);
        assert_eq!(p.source, Source::Media);
        assert!(p.rotation_s > 5.0 * MS);
    }

    #[test]
    fn a_read_just_ahead_of_the_stream_keeps_the_buffer() {
        let first = read(1_000_000, 4096);
        let (mut drive, done) = streaming_after(&first);
        // 0.1 ms after, the head has streamed ~20 KB; a read 100 KB on is reached by the
        // stream in about half a millisecond, without a seek.
        let ahead = read(first.end() + 100_000, 4096);
        let t = done + 0.1 * MS;
        let pa = drive.plan(&ahead, t);
        assert_eq!(pa.source, Source::CachePartial);
        assert_eq!(pa.seek_s, 0.0);
        assert!(
            pa.rotation_s > 0.2 * MS && pa.rotation_s < 1.0 * MS,
            "{pa:?}"
        );
        drive.commit(&ahead, t, &pa);
        // What the stream read on its way there is still in the buffer.
        let between = read(first.end() + 40_000, 4096);
        let pb = drive.plan(&between, t + pa.service_s() + 0.1 * MS);
        assert_eq!(pb.source, Source::CacheHit, "{pb:?}");
    }

    #[test]
    fn writes_go_to_the_media_and_drop_the_buffer() {
        let mut params = disk();
        params.cache_bytes = 512 * 1024;
        let mut drive = Drive::new(params);
        let r = Command {
            offset: 0,
            len: 4096,
            write: false,
        };
        drive.commit(&r, 0.0, &drive.plan(&r, 0.0));
        let w = Command {
            offset: 4096,
            len: 4096,
            write: true,
        };
        let pw = drive.plan(&w, 0.1);
        assert_eq!(pw.source, Source::Media);
        drive.commit(&w, 0.1, &pw);
        let again = drive.plan(&r, 0.2);
        assert_eq!(again.source, Source::Media);
    }
}
