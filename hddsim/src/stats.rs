//! Counters shared between the FUSE thread (control file) and the drive thread.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::model::{DiskParams, Plan, Source};
use crate::queue::Policy;

/// What the drive did since the last reset.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counters {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Commands that moved the head to another track.
    pub seeks: u64,
    pub seek_ms: f64,
    pub rotation_ms: f64,
    pub transfer_ms: f64,
    pub cache_hits: u64,
    pub cache_partial_hits: u64,
    /// Sum over dispatches of how many commands the drive could choose from.
    pub candidates_sum: u64,
    /// Sum and maximum of (reply sent − modeled completion), µs: how far wall clock lags.
    pub reply_lateness_us_sum: f64,
    pub reply_lateness_us_max: f64,
}

impl Counters {
    pub fn record(&mut self, len: u64, write: bool, plan: Option<&Plan>, candidates: usize) {
        self.requests += 1;
        if write {
            self.writes += 1;
            self.bytes_written += len;
        } else {
            self.reads += 1;
            self.bytes_read += len;
        }
        self.candidates_sum += candidates as u64;
        if let Some(p) = plan {
            if p.seek_s > 0.0 {
                self.seeks += 1;
            }
            self.seek_ms += p.seek_s * 1e3;
            self.rotation_ms += p.rotation_s * 1e3;
            self.transfer_ms += p.transfer_s * 1e3;
            match p.source {
                Source::CacheHit => self.cache_hits += 1,
                Source::CachePartial => self.cache_partial_hits += 1,
                Source::Media => {}
            }
        }
    }
}

/// Settings that do not change while mounted, reported with the stats.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    pub disk: DiskParams,
    pub revolution_ms: f64,
    pub average_seek_ms: f64,
    pub queue_depth: usize,
    pub max_wait_ms: f64,
    pub drive_cache_kb: u64,
    pub max_background: u16,
}

/// State shared by all threads.
#[derive(Debug)]
pub struct Shared {
    pub epoch: Instant,
    pub counters: Mutex<Counters>,
    pub model_on: AtomicBool,
    pub fcfs: AtomicBool,
    /// Requests received from the kernel and not yet answered.
    pub outstanding: AtomicUsize,
    pub max_outstanding: AtomicUsize,
    pub settings: Settings,
}

#[derive(Serialize)]
struct Report<'a> {
    model: &'a str,
    policy: Policy,
    requests: u64,
    reads: u64,
    writes: u64,
    bytes: u64,
    bytes_read: u64,
    bytes_written: u64,
    seeks: u64,
    seek_ms: f64,
    rotation_ms: f64,
    transfer_ms: f64,
    positioning_ms_per_request: f64,
    cache_hits: u64,
    cache_partial_hits: u64,
    outstanding: usize,
    max_outstanding: usize,
    mean_candidates: f64,
    mean_reply_lateness_us: f64,
    max_reply_lateness_us: f64,
    params: &'a Settings,
}

impl Shared {
    pub fn new(settings: Settings, model_on: bool, fcfs: bool) -> Self {
        Shared {
            epoch: Instant::now(),
            counters: Mutex::new(Counters::default()),
            model_on: AtomicBool::new(model_on),
            fcfs: AtomicBool::new(fcfs),
            outstanding: AtomicUsize::new(0),
            max_outstanding: AtomicUsize::new(0),
            settings,
        }
    }

    /// Nanoseconds since start: the virtual timeline's scale.
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    pub fn request_arrived(&self) {
        let now = self.outstanding.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_outstanding.fetch_max(now, Ordering::SeqCst);
    }

    pub fn request_answered(&self) {
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
    }

    pub fn reset(&self) {
        if let Ok(mut c) = self.counters.lock() {
            *c = Counters::default();
        }
        self.max_outstanding
            .store(self.outstanding.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    /// The control file's content.
    pub fn report_json(&self) -> String {
        let c = self.counters.lock().map(|c| c.clone()).unwrap_or_default();
        let per = |x: f64, n: u64| if n == 0 { 0.0 } else { x / n as f64 };
        let report = Report {
            model: if self.model_on.load(Ordering::SeqCst) {
                "on"
            } else {
                "off"
            },
            policy: if self.fcfs.load(Ordering::SeqCst) {
                Policy::Fcfs
            } else {
                Policy::Sptf
            },
            requests: c.requests,
            reads: c.reads,
            writes: c.writes,
            bytes: c.bytes_read + c.bytes_written,
            bytes_read: c.bytes_read,
            bytes_written: c.bytes_written,
            seeks: c.seeks,
            seek_ms: c.seek_ms,
            rotation_ms: c.rotation_ms,
            transfer_ms: c.transfer_ms,
            positioning_ms_per_request: per(c.seek_ms + c.rotation_ms, c.requests),
            cache_hits: c.cache_hits,
            cache_partial_hits: c.cache_partial_hits,
            outstanding: self.outstanding.load(Ordering::SeqCst),
            max_outstanding: self.max_outstanding.load(Ordering::SeqCst),
            mean_candidates: per(c.candidates_sum as f64, c.requests),
            mean_reply_lateness_us: per(c.reply_lateness_us_sum, c.requests),
            max_reply_lateness_us: c.reply_lateness_us_max,
            params: &self.settings,
        };
        let mut s = serde_json::to_string_pretty(&report)
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
        s.push('\n');
        s
    }
}
