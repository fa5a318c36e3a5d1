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

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::protocol::Addr;
use crate::sim::engine::queue::{Candidate, Chooser};

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
    fn pick(&mut self, _: &[Candidate]) -> usize {
        0
    }
}

/// Uniformly random.
pub struct Random(StdRng);

impl Chooser for Random {
    fn pick(&mut self, candidates: &[Candidate]) -> usize {
        self.0.gen_range(0..candidates.len())
    }
}

/// Probabilistic concurrency testing over receiving actors.
pub struct Pct {
    rng: StdRng,
    priorities: HashMap<(Addr, Addr), u64>,
    /// Steps at which the chosen actor's priority drops, with the value it drops to.
    change_points: Vec<(u64, u64)>,
    step: u64,
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
            priorities: HashMap::new(),
            change_points,
            step: 0,
        }
    }

    fn priority(&mut self, candidate: &Candidate) -> u64 {
        let rng = &mut self.rng;
        let channel = (candidate.from.unwrap_or(candidate.to), candidate.to);
        // Initial priorities sit above every change-point value (< depth ≤ 64).
        *self
            .priorities
            .entry(channel)
            .or_insert_with(|| rng.gen_range(1_000..u64::MAX))
    }
}

impl Chooser for Pct {
    fn pick(&mut self, candidates: &[Candidate]) -> usize {
        self.step += 1;
        let mut best = self.highest(candidates);
        if let Some(&(at, low)) = self.change_points.first()
            && at <= self.step
        {
            self.change_points.remove(0);
            let chosen = &candidates[best];
            self.priorities
                .insert((chosen.from.unwrap_or(chosen.to), chosen.to), low);
            best = self.highest(candidates);
        }
        best
    }
}

impl Pct {
    fn highest(&mut self, candidates: &[Candidate]) -> usize {
        let mut best = (0, 0);
        for (index, candidate) in candidates.iter().enumerate() {
            let priority = self.priority(candidate);
            if priority > best.1 {
                best = (index, priority);
            }
        }
        best.0
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
    fn pick(&mut self, candidates: &[Candidate]) -> usize {
        self.choices += 1;
        self.inner.pick(candidates)
    }

    fn halted(&self) -> bool {
        self.inner.halted()
    }

    fn delivered(&mut self, shared: bool) {
        self.inner.delivered(shared);
    }
}
