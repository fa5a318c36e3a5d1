//! Scheduling strategies (SPEC §6): which of the deliveries due at one instant
//! goes first.
//!
//! - `random` (the default): uniformly among them, from the run's seed, so
//!   different seeds resolve ties differently.
//! - `pct:D`: probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010).
//!   Its threads are the channels between actors (a sender and a receiver; a
//!   timer is its owner's channel to itself): each gets a random priority, the
//!   highest-priority one delivers first, and at D-1 random steps the channel about
//!   to deliver drops below every other. A bug of depth D is found with probability
//!   at least 1/(n·k^(D-1)) for n channels and k steps.
//! - `fifo`: the first to enter the queue goes first (what an unperturbed
//!   executor would do).
//! - a replayed schedule: the choice at each step given as a list, for
//!   `explore` and its reproduce commands.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rustc_hash::FxHashMap;

use crate::protocol::Addr;
use crate::sim::engine::schedule::queue::{Candidate, Chooser};
use crate::sim::engine::schedule::ready::Ready;

pub use crate::scenario::Strategy;

/// The stream of the run's seed the scheduler draws from.
const SCHEDULE_STREAM: u64 = 0x5C4E_D01E;

/// The chooser for `strategy` under `seed`; `steps` estimates the choices a run
/// makes (PCT places its change points among them).
pub fn chooser(strategy: Strategy, seed: u64, steps: u64) -> Box<dyn Chooser> {
    let rng = StdRng::seed_from_u64(crate::seed::derive_seed(seed, SCHEDULE_STREAM));
    match strategy {
        Strategy::Fifo => Box::new(Fifo),
        Strategy::Random => Box::new(Random(rng)),
        Strategy::Pct { depth } => Box::new(Pct::new(rng, depth, steps)),
    }
}

/// The first to enter the queue.
pub struct Fifo;

impl Chooser for Fifo {
    fn pick(&mut self, _: &mut Ready) -> usize {
        0
    }
}

/// Uniformly random.
pub struct Random(StdRng);

impl Chooser for Random {
    fn pick(&mut self, ready: &mut Ready) -> usize {
        self.0.gen_range(0..ready.len())
    }
}

/// Probabilistic concurrency testing over channels.
///
/// A channel gets its random priority the first time a choice sees it, the
/// channels first seen at one choice drawing in `seq` order; the highest priority
/// delivers, the earliest `seq` among equals. The ready candidates are kept in an
/// ordered index by (priority, `seq`), fed by what entered the ready set since
/// the last choice, so a choice costs O(log n) however many are due. An entry that
/// left the ready set, or whose channel's priority dropped, stays in the index
/// until it reaches the top, and the index is rebuilt when such entries are more
/// than half of it.
pub struct Pct {
    rng: StdRng,
    priorities: FxHashMap<(Addr, Addr), u64>,
    /// Ready candidates by highest priority, then earliest `seq`.
    index: BTreeSet<(Reverse<u64>, u64)>,
    /// Steps at which the chosen channel's priority drops, with the value it drops to.
    change_points: Vec<(u64, u64)>,
    step: u64,
}

/// A candidate's channel: its sender and receiver (a timer is its owner's channel
/// to itself).
fn channel(candidate: &Candidate) -> (Addr, Addr) {
    (candidate.from.unwrap_or(candidate.to), candidate.to)
}

impl Pct {
    fn new(mut rng: StdRng, depth: u32, steps: u64) -> Pct {
        let steps = steps.max(1);
        let mut change_points: Vec<(u64, u64)> = (1..depth.max(1))
            .map(|i| (rng.gen_range(1..=steps), u64::from(depth - i)))
            .collect();
        change_points.sort_unstable();
        Pct {
            rng,
            priorities: FxHashMap::default(),
            index: BTreeSet::new(),
            change_points,
            step: 0,
        }
    }

    fn priority(&mut self, candidate: &Candidate) -> u64 {
        let rng = &mut self.rng;
        // Initial priorities sit above every change-point value (< depth ≤ 64).
        *self
            .priorities
            .entry(channel(candidate))
            .or_insert_with(|| rng.gen_range(1_000..u64::MAX))
    }

    /// Indexes what entered the ready set since the last choice, drawing the
    /// priorities of channels seen for the first time in `seq` order.
    fn admit(&mut self, ready: &mut Ready) {
        for seq in ready.take_entered() {
            let candidate = ready.get(seq).expect("take_entered gives ready keys");
            let priority = self.priority(&candidate);
            self.index.insert((Reverse(priority), seq));
        }
        if self.index.len() > 2 * ready.len() + 64 {
            let live: Vec<Candidate> = ready.iter().collect();
            self.index = live
                .iter()
                .map(|c| (Reverse(self.priorities[&channel(c)]), c.seq))
                .collect();
        }
    }

    /// The ready candidate of highest priority, earliest `seq` among equals;
    /// stale index entries met on the way are dropped.
    fn highest(&mut self, ready: &Ready) -> Candidate {
        loop {
            let &(Reverse(priority), seq) = self.index.first().expect("a choice among ready candidates");
            match ready.get(seq) {
                Some(candidate) if self.priorities[&channel(&candidate)] == priority => return candidate,
                _ => {
                    self.index.pop_first();
                }
            }
        }
    }
}

impl Chooser for Pct {
    fn pick(&mut self, ready: &mut Ready) -> usize {
        self.admit(ready);
        self.step += 1;
        let mut best = self.highest(ready);
        if let Some(&(at, low)) = self.change_points.first()
            && at <= self.step
        {
            self.change_points.remove(0);
            let dropped = channel(&best);
            self.priorities.insert(dropped, low);
            // At most depth - 1 times a run: the channel's ready entries, found
            // by one pass, move to their new place.
            let moved: Vec<u64> = ready
                .iter()
                .filter(|c| channel(c) == dropped)
                .map(|c| c.seq)
                .collect();
            for seq in moved {
                self.index.insert((Reverse(low), seq));
            }
            best = self.highest(ready);
        }
        ready.rank_of(best.seq).expect("the highest is ready")
    }
}

/// Counts the choices a run makes, choosing like `inner`.
pub struct Counting<'a> {
    /// The chooser that decides.
    pub inner: &'a mut dyn Chooser,
    /// Choices made so far.
    pub choices: u64,
}

impl Chooser for Counting<'_> {
    fn pick(&mut self, ready: &mut Ready) -> usize {
        self.choices += 1;
        self.inner.pick(ready)
    }

    fn halted(&self) -> bool {
        self.inner.halted()
    }

    fn delivered(&mut self, shared: bool) {
        self.inner.delivered(shared);
    }
}
