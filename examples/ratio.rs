//! The per-unit cost of a scaling family at a large size against 10^3 (issue
//! #19's required row), measured so that a noisy host moves both sizes alike:
//!
//! ```text
//! cargo run --release --example ratio -- FAMILY [ROUNDS] [LARGE]
//! ```
//!
//! (FAMILY as for `--example family`; ROUNDS 10 and LARGE 100000 unless given.)
//! Criterion times each size over its own seconds, one after the other, and on
//! a shared host one size may get a quiet minute and the other a busy one: the
//! same binary's ratio for the trees moved from 1.2 to 2.2 between runs
//! (BENCHMARKS.md). Here the sizes alternate, round by round: each round times
//! one run at LARGE and LARGE / 1,000 runs at 10^3 (about as long), so each
//! round's two figures come from the same minute of the host. Printed: each
//! round's time a unit at both sizes and their ratio, then the least time a
//! unit of each size over all rounds and their ratio (the host at its
//! quietest for both), and the median of the rounds' ratios.
//!
//! A run is timed as the `scaling` bench times it (`benches/simulator.rs`):
//! parsed beforehand, on the virtual clock, keeping no events, dropped inside
//! the timing, on the binary's allocator and process set-up.
//!
//! Each round also times two probes of the host in that minute: a chase of
//! dependent loads through 128 MB in random order (what one load that misses
//! every cache costs) and a chain of dependent arithmetic in registers (what
//! the core gives when nothing waits on memory). A run of 10^3 fits in the
//! cache and waits on the core; a run of 10^5 waits on memory. On a shared
//! host the two need not move together, and the ratio moves with them: the
//! same binary's cancel tree gave 1.19 to 1.83 round by round in one run,
//! its 10^5 size moving with the cold load (149-192 ns; BENCHMARKS.md,
//! forty-first session). Read a ratio beside them.

#[path = "../benches/families/mod.rs"]
mod families;

use std::hint::black_box;
use std::time::{Duration, Instant};

use asksim::scenario::{self, Clock, Scenario};
use asksim::sim::{self, RunOptions};

/// The binary's allocator (`src/main.rs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SMALL: usize = 1_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let family = args.first().and_then(|f| families::Family::named(f));
    let rounds = args.get(1).map_or(Some(10), |r| r.parse::<usize>().ok());
    let large = args.get(2).map_or(Some(100_000), |n| n.parse::<usize>().ok());
    let (Some(family), Some(rounds), Some(large)) = (family, rounds, large) else {
        eprintln!("usage: ratio FAMILY [ROUNDS] [LARGE]   (FAMILY as for `--example family`)");
        std::process::exit(2);
    };
    if rounds == 0 || large < SMALL {
        eprintln!("ratio: ROUNDS must be at least 1 and LARGE at least {SMALL}");
        std::process::exit(2);
    }
    asksim::cli::process::tune();
    let small_scenario = parsed(&family.scenario(SMALL));
    let large_scenario = parsed(&family.scenario(large));
    let reps = large / SMALL;
    // One of each first: the allocator's pages and the code's first run.
    timed(&small_scenario);
    timed(&large_scenario);
    let unit = |elapsed: Duration, units: usize| elapsed.as_nanos() as f64 / units as f64;
    let (mut smalls, mut larges, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let chase = Chase::new();
    println!("round  ns a unit at {SMALL}  at {large}  ratio  ns a cold load  ns a step in registers");
    for round in 1..=rounds {
        let small_ns = unit((0..reps).map(|_| timed(&small_scenario)).sum(), reps * SMALL);
        let large_ns = unit(timed(&large_scenario), large);
        let load_ns = chase.time();
        let step_ns = arithmetic();
        println!(
            "{round:5}  {small_ns:17.0}  {large_ns:8.0}  {:.2}  {load_ns:14.0}  {step_ns:22.3}",
            large_ns / small_ns
        );
        smalls.push(small_ns);
        larges.push(large_ns);
        ratios.push(large_ns / small_ns);
    }
    let least = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    ratios.sort_by(f64::total_cmp);
    let (small_min, large_min) = (least(&smalls), least(&larges));
    println!(
        "least  {small_min:17.0}  {large_min:8.0}  {:.2}",
        large_min / small_min
    );
    println!("median ratio of the rounds: {:.2}", ratios[ratios.len() / 2]);
}

/// A cycle through 128 MB in random order: each load's address is the load
/// before it, so the loads cannot overlap and each costs what a miss costs.
struct Chase {
    next: Vec<u32>,
}

impl Chase {
    const SLOTS: usize = 1 << 25;
    const STEPS: usize = 1 << 21;

    /// One cycle through every slot (Sattolo's shuffle: each slot names the
    /// next, and following them visits all before the first comes back).
    fn new() -> Chase {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(19);
        let mut next: Vec<u32> = (0..Chase::SLOTS as u32).collect();
        for i in (1..Chase::SLOTS).rev() {
            next.swap(i, rng.gen_range(0..i));
        }
        Chase { next }
    }

    /// Nanoseconds a load, over a chase of [`Chase::STEPS`].
    fn time(&self) -> f64 {
        let start = Instant::now();
        let mut at = 0u32;
        for _ in 0..Chase::STEPS {
            at = self.next[at as usize];
        }
        black_box(at);
        start.elapsed().as_nanos() as f64 / Chase::STEPS as f64
    }
}

/// Nanoseconds a step of a chain of dependent multiplies and shifts, which
/// never leaves the registers.
fn arithmetic() -> f64 {
    const STEPS: u64 = 1 << 26;
    let start = Instant::now();
    let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..STEPS {
        x = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    }
    black_box(x);
    start.elapsed().as_nanos() as f64 / STEPS as f64
}

fn parsed(text: &str) -> Scenario {
    scenario::parse("family.json", text).expect("a family scenario parses")
}

/// One run of `scenario` as the scaling bench times it.
fn timed(scenario: &Scenario) -> Duration {
    let mut options = RunOptions::new(scenario, scenario.seed, Clock::Virtual);
    options.keep_events = false;
    let start = Instant::now();
    let output = sim::run_options(scenario, options).expect("a run");
    assert!(output.limit.is_none(), "a family's run ends: {:?}", output.limit);
    drop(black_box(output));
    start.elapsed()
}
