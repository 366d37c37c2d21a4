//! The drive's command queue on a virtual timeline. Pure: callers stamp arrivals and
//! decide when to call [`CommandQueue::dispatch`]; nothing here reads a clock.
//!
//! Completion = max(arrival, previous completion) + service time. The drive picks the next
//! command when it becomes free, among the first `depth` queued commands that had arrived
//! by then (NCQ holds 32; the rest wait in the host's FIFO), by shortest positioning time
//! (SPTF) or first-come-first-served (FCFS).

use std::collections::VecDeque;

use serde::Serialize;

use crate::model::{Command, Drive, Plan};

/// Order in which queued commands are served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Sptf,
    Fcfs,
}

/// A queued command with the caller's payload (the FUSE reply, in the daemon).
#[derive(Debug)]
pub struct Queued<T> {
    pub cmd: Command,
    /// Virtual ns.
    pub arrival: u64,
    pub payload: T,
}

/// A command the drive has started.
#[derive(Debug)]
pub struct Dispatched<T> {
    pub cmd: Command,
    pub payload: T,
    /// Virtual ns when the drive started it.
    pub start: u64,
    /// Virtual ns when it completes; the reply is due then.
    pub completion: u64,
    /// None when the model is off.
    pub plan: Option<Plan>,
    /// How many commands the drive could choose from.
    pub candidates: usize,
}

#[derive(Debug)]
pub struct CommandQueue<T> {
    pub drive: Drive,
    pub policy: Policy,
    pub depth: usize,
    /// A command waiting longer than this (virtual ns) is served next, whatever SPTF says.
    pub max_wait: u64,
    queue: VecDeque<Queued<T>>,
    /// Virtual ns when the drive becomes free.
    free_at: u64,
}

impl<T> CommandQueue<T> {
    pub fn new(drive: Drive, policy: Policy, depth: usize, max_wait: u64) -> Self {
        CommandQueue {
            drive,
            policy,
            depth: depth.max(1),
            max_wait,
            queue: VecDeque::new(),
            free_at: 0,
        }
    }

    pub fn push(&mut self, q: Queued<T>) {
        self.queue.push_back(q);
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Start the next command. `model_on = false` serves it in zero time.
    pub fn dispatch(&mut self, model_on: bool) -> Option<Dispatched<T>> {
        let window = self.queue.len().min(self.depth);
        let earliest = self.queue.iter().take(window).map(|q| q.arrival).min()?;
        let start = self.free_at.max(earliest);
        let t = start as f64 * 1e-9;

        // Eligible: in the NCQ window, arrived by `start`, and not overlapping an earlier
        // queued command when either writes (a drive keeps such pairs in order).
        let eligible: Vec<usize> = (0..window)
            .filter(|&i| {
                let q = &self.queue[i];
                q.arrival <= start
                    && !self
                        .queue
                        .iter()
                        .take(i)
                        .any(|e| (e.cmd.write || q.cmd.write) && e.cmd.overlaps(&q.cmd))
            })
            .collect();
        let starved = eligible
            .iter()
            .copied()
            .find(|&i| start.saturating_sub(self.queue[i].arrival) > self.max_wait);
        // Index 0 is always a safe fallback: nothing is queued before it.
        let first = eligible.first().copied().unwrap_or(0);
        let pick = match starved {
            Some(i) => i,
            None if self.policy == Policy::Fcfs || !model_on => first,
            None => {
                let mut best = first;
                let mut best_cost = f64::INFINITY;
                for &i in &eligible {
                    let cost = self.drive.plan(&self.queue[i].cmd, t).positioning_s();
                    if cost < best_cost {
                        best = i;
                        best_cost = cost;
                    }
                }
                best
            }
        };
        let q = self.queue.remove(pick)?;
        let (plan, service_ns) = if model_on {
            let plan = self.drive.plan(&q.cmd, t);
            self.drive.commit(&q.cmd, t, &plan);
            (Some(plan), (plan.service_s() * 1e9).round() as u64)
        } else {
            (None, 0)
        };
        let completion = start + service_ns;
        self.free_at = completion;
        Some(Dispatched {
            cmd: q.cmd,
            payload: q.payload,
            start,
            completion,
            plan,
            candidates: eligible.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DiskParams;

    const GB: u64 = 1_000_000_000;

    fn read(offset: u64, len: u64) -> Command {
        Command {
            offset,
            len,
            write: false,
        }
    }

    fn queue(policy: Policy) -> CommandQueue<usize> {
        CommandQueue::new(
            Drive::new(DiskParams::hdd_7200(4 * GB)),
            policy,
            32,
            u64::MAX,
        )
    }

    #[test]
    fn sptf_picks_the_nearest_request_first() {
        let mut q = queue(Policy::Sptf);
        // Head starts at 0. Far, farther, near.
        q.push(Queued {
            cmd: read(3 * GB, 4096),
            arrival: 0,
            payload: 0,
        });
        q.push(Queued {
            cmd: read(2 * GB, 4096),
            arrival: 0,
            payload: 1,
        });
        q.push(Queued {
            cmd: read(1_000, 4096),
            arrival: 0,
            payload: 2,
        });
        let first = q.dispatch(true).expect("queued");
        assert_eq!(first.payload, 2);
        assert_eq!(first.candidates, 3);
        let second = q.dispatch(true).expect("queued");
        assert_eq!(
            second.payload, 1,
            "2 GB is nearer than 3 GB from the head at 0"
        );
    }

    #[test]
    fn fcfs_serves_in_arrival_order() {
        let mut q = queue(Policy::Fcfs);
        for (i, off) in [3 * GB, 2 * GB, 1_000].into_iter().enumerate() {
            q.push(Queued {
                cmd: read(off, 4096),
                arrival: i as u64,
                payload: i,
            });
        }
        let order: Vec<usize> =
            std::iter::from_fn(|| q.dispatch(true).map(|d| d.payload)).collect();
        assert_eq!(order, vec![0, 1, 2]);
    }

    #[test]
    fn sptf_beats_fcfs_on_a_scattered_batch() {
        let offsets: Vec<u64> = (0..32u64).map(|i| (i * 7919 % 32) * (GB / 8)).collect();
        let total = |policy| {
            let mut q = queue(policy);
            for (i, &o) in offsets.iter().enumerate() {
                q.push(Queued {
                    cmd: read(o, 65_536),
                    arrival: 0,
                    payload: i,
                });
            }
            std::iter::from_fn(|| q.dispatch(true))
                .last()
                .map(|d| d.completion)
                .unwrap_or(0)
        };
        let (sptf, fcfs) = (total(Policy::Sptf), total(Policy::Fcfs));
        assert!(sptf * 2 < fcfs, "sptf {sptf} ns vs fcfs {fcfs} ns");
    }

    #[test]
    fn completion_is_max_of_arrival_and_previous_completion_plus_service() {
        let mut q = queue(Policy::Fcfs);
        q.push(Queued {
            cmd: read(GB, 4096),
            arrival: 1_000_000,
            payload: 0,
        });
        let a = q.dispatch(true).expect("queued");
        assert_eq!(a.start, 1_000_000, "idle drive starts at arrival");
        let service = a.plan.expect("model on").service_s();
        assert_eq!(a.completion, a.start + (service * 1e9).round() as u64);

        // Arrives while the drive is busy: starts at the previous completion.
        q.push(Queued {
            cmd: read(2 * GB, 4096),
            arrival: a.completion - 10,
            payload: 1,
        });
        let b = q.dispatch(true).expect("queued");
        assert_eq!(b.start, a.completion);

        // Arrives after the drive went idle: starts at its arrival.
        let late = b.completion + 5_000_000;
        q.push(Queued {
            cmd: read(GB, 4096),
            arrival: late,
            payload: 2,
        });
        assert_eq!(q.dispatch(true).expect("queued").start, late);
    }

    #[test]
    fn requests_arriving_after_the_drive_is_free_are_not_candidates() {
        let mut q = queue(Policy::Sptf);
        q.push(Queued {
            cmd: read(3 * GB, 4096),
            arrival: 100,
            payload: 0,
        });
        q.push(Queued {
            cmd: read(0, 4096),
            arrival: 200,
            payload: 1,
        });
        let d = q.dispatch(true).expect("queued");
        assert_eq!((d.payload, d.candidates), (0, 1));
    }

    #[test]
    fn queue_depth_limits_the_choice() {
        let mut q = queue(Policy::Sptf);
        q.depth = 2;
        for (i, off) in [3 * GB, 2 * GB, 0].into_iter().enumerate() {
            q.push(Queued {
                cmd: read(off, 4096),
                arrival: 0,
                payload: i,
            });
        }
        let d = q.dispatch(true).expect("queued");
        assert_eq!(
            (d.payload, d.candidates),
            (1, 2),
            "offset 0 is beyond the NCQ window"
        );
    }

    #[test]
    fn overlapping_write_is_not_overtaken() {
        let mut q = queue(Policy::Sptf);
        q.push(Queued {
            cmd: Command {
                offset: 3 * GB,
                len: 4096,
                write: true,
            },
            arrival: 0,
            payload: 0,
        });
        q.push(Queued {
            cmd: read(3 * GB, 4096),
            arrival: 0,
            payload: 1,
        });
        q.push(Queued {
            cmd: read(0, 4096),
            arrival: 0,
            payload: 2,
        });
        let order: Vec<usize> =
            std::iter::from_fn(|| q.dispatch(true).map(|d| d.payload)).collect();
        let w = order.iter().position(|&p| p == 0);
        let r = order.iter().position(|&p| p == 1);
        assert!(w < r, "{order:?}");
    }

    #[test]
    fn starved_request_is_served_next() {
        let mut q = queue(Policy::Sptf);
        q.max_wait = 1_000;
        q.push(Queued {
            cmd: read(3 * GB, 4096),
            arrival: 0,
            payload: 0,
        });
        q.push(Queued {
            cmd: read(0, 4096),
            arrival: 0,
            payload: 1,
        });
        // Make the drive busy until well past max_wait.
        q.free_at = 1_000_000;
        assert_eq!(q.dispatch(true).expect("queued").payload, 0);
    }

    #[test]
    fn model_off_serves_in_zero_time() {
        let mut q = queue(Policy::Sptf);
        q.push(Queued {
            cmd: read(3 * GB, 1 << 20),
            arrival: 42,
            payload: 0,
        });
        let d = q.dispatch(false).expect("queued");
        assert_eq!((d.start, d.completion), (42, 42));
        assert!(d.plan.is_none());
    }
}
