//! Timers, seeded message jitter, and the account of what is still due.
//!
//! tokio gives no signal for "nothing is due any more" (idle actors are live tasks,
//! and a paused clock with no timer parks forever), so every timer the runtime
//! starts goes through [`Sched::after`], which counts it in [`Sched::due`] until it
//! fires or is cancelled. The simulator ends a run when the runtime is idle and
//! nothing is due (SPEC §5, §6). Every timer also dies with the run's epoch, which
//! is how process loss kills pending work.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use ractor::{ActorRef, Message, RpcReplyPort};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_util::sync::CancellationToken;

/// The run's clock and timer account. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Sched {
    due: Arc<AtomicUsize>,
    /// Nanoseconds since start of the last timer that fired or sleep that ended.
    last_fire_ns: Arc<AtomicU64>,
    epoch: CancellationToken,
    start: tokio::time::Instant,
}

/// A started timer; [`Timer::cancel`] stops it and removes it from the account.
#[derive(Debug)]
pub struct Timer(Option<tokio::task::AbortHandle>);

impl Timer {
    /// Stops the timer if it has not fired. Aborting its task drops it at once,
    /// and with it its place in the account of what is due.
    pub fn cancel(&self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

struct DueGuard(Arc<AtomicUsize>);

impl Drop for DueGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Sched {
    /// A clock starting now, with its own epoch.
    pub fn new() -> Sched {
        Sched {
            due: Arc::new(AtomicUsize::new(0)),
            last_fire_ns: Arc::new(AtomicU64::new(0)),
            epoch: CancellationToken::new(),
            start: tokio::time::Instant::now(),
        }
    }

    /// The same clock and account under a fresh epoch (after a process loss).
    pub fn next_epoch(&self) -> Sched {
        Sched {
            due: self.due.clone(),
            last_fire_ns: self.last_fire_ns.clone(),
            epoch: CancellationToken::new(),
            start: self.start,
        }
    }

    /// The instant `s` seconds after the run started.
    pub fn instant_at(&self, s: f64) -> tokio::time::Instant {
        self.start + Duration::from_secs_f64(s.clamp(0.0, 1e12))
    }

    /// Seconds since the run started, on the run's clock (virtual or real).
    pub fn now_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Seconds since the start at which the last timer fired or sleep ended: the
    /// last moment anything was due.
    pub fn last_fire_s(&self) -> f64 {
        self.last_fire_ns.load(Ordering::SeqCst) as f64 / 1e9
    }

    fn fired(&self) {
        let ns = self.start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        self.last_fire_ns.fetch_max(ns, Ordering::SeqCst);
    }

    /// Sleeps `delay` on the run's clock, counted as due meanwhile. Returns false
    /// if the epoch died first (process loss).
    pub async fn sleep(&self, delay: Duration) -> bool {
        self.due.fetch_add(1, Ordering::SeqCst);
        let _guard = DueGuard(self.due.clone());
        tokio::select! {
            biased;
            _ = self.epoch.cancelled() => false,
            _ = tokio::time::sleep(delay) => {
                self.fired();
                true
            }
        }
    }

    /// Timers started and not yet fired or cancelled.
    pub fn due(&self) -> usize {
        self.due.load(Ordering::SeqCst)
    }

    /// The token every timer of this epoch dies with.
    pub fn epoch(&self) -> &CancellationToken {
        &self.epoch
    }

    /// Runs `f` after `delay` unless the timer or the epoch is cancelled first. A
    /// zero delay runs `f` at once: a tokio timer would round it up to the next
    /// millisecond tick on the real clock.
    pub fn after(&self, delay: Duration, f: impl FnOnce() + Send + 'static) -> Timer {
        if delay.is_zero() {
            if !self.epoch.is_cancelled() {
                f();
            }
            return Timer(None);
        }
        self.due.fetch_add(1, Ordering::SeqCst);
        let guard = DueGuard(self.due.clone());
        let sched = self.clone();
        let task = tokio::spawn(async move {
            let _guard = guard;
            tokio::select! {
                biased;
                _ = sched.epoch.cancelled() => {}
                _ = tokio::time::sleep(delay) => {
                    sched.fired();
                    f();
                }
            }
        });
        Timer(Some(task.abort_handle()))
    }
}

impl Default for Sched {
    fn default() -> Self {
        Sched::new()
    }
}

/// A seeded random delay on every message an actor sends (SPEC §5 `jitter`), never
/// on timers. With `max_s == 0` messages go at once, in order.
#[derive(Debug)]
pub struct Jitter {
    rng: StdRng,
    max_s: f64,
}

impl Jitter {
    /// A jitter stream derived from the run's seed and the actor's stream number.
    pub fn new(seed: u64, stream: u64, max_s: f64) -> Jitter {
        Jitter {
            rng: StdRng::seed_from_u64(derive_seed(seed, stream)),
            max_s,
        }
    }

    fn delay(&mut self) -> Option<Duration> {
        if self.max_s <= 0.0 {
            return None;
        }
        Some(Duration::from_secs_f64(self.rng.gen_range(0.0..=self.max_s)))
    }

    /// Sends `msg` to `to`, after a jitter delay if there is one. A message to an
    /// actor that has stopped is dropped: a dead actor reads nothing.
    pub fn send<M: Message>(&mut self, sched: &Sched, to: &ActorRef<M>, msg: M) {
        match self.delay() {
            None => {
                let _ = to.send_message(msg);
            }
            Some(delay) => {
                let to = to.clone();
                sched.after(delay, move || {
                    let _ = to.send_message(msg);
                });
            }
        }
    }

    /// Replies on `port`, after a jitter delay if there is one.
    pub fn reply<T: Send + 'static>(&mut self, sched: &Sched, port: RpcReplyPort<T>, value: T) {
        match self.delay() {
            None => {
                let _ = port.send(value);
            }
            Some(delay) => {
                sched.after(delay, move || {
                    let _ = port.send(value);
                });
            }
        }
    }
}

/// A stream seed from the run's seed: SplitMix64 over the pair, so streams of
/// nearby seeds or numbers do not overlap.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        ^ stream
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x632B_E59B_D9B4_E019);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
