//! `asksim sweep`: one scenario under many seeds, in parallel. Each seed runs on
//! its own, as deterministic as a single `asksim run`; results are gathered by
//! seed, so the report does not depend on which worker finished first. Every seed
//! asked for gives a result: a run that panicked is a failing seed (`crashed`),
//! never a missing one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use serde::Serialize;

use crate::answerer::Answerers;
use crate::record::Hashes;
use crate::scenario::{Clock, Scenario};
use crate::sim::engine::driver::RunOptions;
use crate::sim::engine::strategy::Strategy;
use crate::sim::hunt::seeds::{SeedRange, Shard};
use crate::sim::judge::judged;
use crate::sim::judge::outcomes::Outcomes;
use crate::sim::judge::summary::{Summary, Verdict, summarise};

/// Most worker threads.
pub const JOBS_MAX: usize = 256;

/// One failing seed.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The command that reproduces it.
    pub reproduce: String,
    /// What it broke.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// What a sweep reports.
#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    /// The scenario's name.
    pub scenario: String,
    /// The seeds run.
    pub seeds: SeedRange,
    /// The scheduling strategy.
    pub explore: String,
    /// Runs made: always the number of seeds asked for.
    pub runs: u64,
    /// Runs that held every invariant and expectation.
    pub passed: u64,
    /// Every failing seed, in seed order.
    pub failed: Vec<Failure>,
    /// Outcomes summed over every run.
    pub totals: Outcomes,
    /// Distinct event orders (times left out): how many interleavings the seeds
    /// explored.
    pub distinct_traces: u64,
    /// Distinct event streams with their times.
    pub distinct_timings: u64,
    /// Which named races the seeds reached, and which side won how often.
    pub coverage: crate::sim::judge::coverage::Coverage,
    /// Seconds of wall time.
    pub wall_s: f64,
    /// The clock the runs ran on: the header names no strategy on the real
    /// clock, where tokio ordered the deliveries (the JSON's `explore` stays the
    /// strategy the shard files record).
    #[serde(skip)]
    pub clock: crate::scenario::Clock,
}

/// What a sweep needs besides the scenario.
pub struct SweepOptions {
    /// The file, for reproduce commands.
    pub file: String,
    /// The seeds.
    pub seeds: SeedRange,
    /// Worker threads.
    pub jobs: usize,
    /// The clock.
    pub clock: Clock,
    /// The scheduling strategy.
    pub strategy: Strategy,
    /// Check invariants and limits only, not the scenario's `expect` (whose exact
    /// results usually hold for one seed only).
    pub invariants_only: bool,
    /// The share of `seeds` this process runs ([`Shard::WHOLE`]: all of them).
    pub shard: Shard,
    /// The scenario answerers that are the program's own (library users; the
    /// command line has none).
    pub answerers: Answerers,
    /// The broker is this outside process instead of asksim's.
    pub broker: Option<crate::wire::Endpoint>,
}

/// One seed's result, as a sweep keeps it.
pub struct SeedResult {
    /// The run's summary.
    pub summary: Summary,
    /// Its order hash.
    pub order_hash: String,
    /// Its timing hash.
    pub timing_hash: String,
}

/// Runs one seed of a sweep. A run whose log could not be written (none is asked
/// for here) still gives a summary.
pub fn run_seed(scenario: &Scenario, options: &SweepOptions, seed: u64) -> SeedResult {
    let run = RunOptions {
        seed,
        clock: options.clock,
        strategy: options.strategy,
        keep_events: false,
        log: None,
        taps: Vec::new(),
        broker: options.broker.clone(),
        answerers: options.answerers.clone(),
        journal_after: None,
        // A sweep counts distinct orders and timings: every hash.
        hashes: Hashes::All,
    };
    let output = judged::run_options(scenario, run).expect("a sweep writes no log");
    SeedResult {
        summary: summarise(scenario, &options.file, &output),
        order_hash: output.recording.order_hash,
        timing_hash: output.recording.timing_hash,
    }
}

/// Runs the sweep; `progress` is called with the number of runs done after each.
pub fn sweep(scenario: &Scenario, options: &SweepOptions, progress: impl Fn(u64)) -> SweepReport {
    let scenario = swept(scenario, options);
    let mut fold = Fold::default();
    let wall_s = run_seeds(&scenario, options, progress, |seed, result| {
        fold.add(seed, &result)
    });
    fold.report(&scenario, options, wall_s)
}

/// The scenario as a sweep runs it: without its `expect` under `--invariants-only`.
pub fn swept(scenario: &Scenario, options: &SweepOptions) -> Scenario {
    let mut scenario = scenario.clone();
    if options.invariants_only {
        scenario.expect = None;
    }
    scenario
}

/// Seeds a worker runs before it hands their results over.
const BATCH: usize = 32;

/// Runs every seed of the sweep's shard of `scenario` (as [`swept`] gives it),
/// hands each result to `each` in seed order as soon as every earlier seed's is
/// in, and returns the seconds of wall time they took. Nothing keeps the results:
/// only those that finished ahead of an earlier seed wait (a few batches per
/// worker), so a sweep of millions of seeds holds what its fold holds.
pub fn run_seeds(
    scenario: &Scenario,
    options: &SweepOptions,
    progress: impl Fn(u64),
    mut each: impl FnMut(u64, SeedResult),
) -> f64 {
    // The wall clock is read only to report wall_s.
    let wall = std::time::Instant::now();
    let count = options.shard.len(options.seeds);
    let next = AtomicU64::new(0);
    let (tx, rx) = mpsc::channel::<Vec<(u64, SeedResult)>>();
    let jobs = options.jobs.clamp(1, JOBS_MAX);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (next, tx) = (&next, tx.clone());
            scope.spawn(move || {
                // Results go to the collector in batches: one wake-up of it per
                // seed cost a tenth of a small scenario's sweep.
                let mut batch = Vec::with_capacity(BATCH);
                loop {
                    // An index, not a seed: it never passes `count + jobs`, so it
                    // cannot wrap whatever the seeds are.
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    if index >= count {
                        let _ = tx.send(batch);
                        return;
                    }
                    batch.push((
                        index,
                        run_seed(scenario, options, options.shard.seed(options.seeds, index)),
                    ));
                    if batch.len() == BATCH
                        && tx
                            .send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                            .is_err()
                    {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // Indices ahead of the next one in order wait here; the shard's seeds
        // grow with the index, so index order is seed order.
        let (mut waiting, mut due, mut done) = (BTreeMap::new(), 0u64, 0u64);
        for batch in rx {
            done += batch.len() as u64;
            waiting.extend(batch);
            while let Some(result) = waiting.remove(&due) {
                each(options.shard.seed(options.seeds, due), result);
                due += 1;
            }
            progress(done);
        }
    });
    wall.elapsed().as_secs_f64()
}

/// A sweep's report in the making: seed results folded in seed order, each
/// dropped once folded. Distinct traces and timings are counted by their hashes'
/// first 16 bytes (a collision among 10^7 runs has odds below 10^-24).
#[derive(Default)]
pub struct Fold {
    runs: u64,
    totals: Outcomes,
    coverage: crate::sim::judge::coverage::Coverage,
    orders: BTreeSet<u128>,
    timings: BTreeSet<u128>,
    failed: Vec<Failure>,
}

impl Fold {
    /// Folds in the result of `seed`, in any order of seeds (a merge folds shard
    /// after shard, whose seeds interleave); the report lists failures by seed.
    pub fn add(&mut self, seed: u64, result: &SeedResult) {
        let summary = &result.summary;
        self.runs += 1;
        self.totals.add(&summary.outcomes);
        self.coverage.add(&summary.coverage);
        self.orders.insert(hash_prefix(&result.order_hash));
        self.timings.insert(hash_prefix(&result.timing_hash));
        if !summary.passed() {
            self.failed.push(Failure {
                seed,
                reproduce: summary.reproduce.clone().unwrap_or_default(),
                verdict: Verdict::of(summary),
            });
        }
    }

    /// The report of the seeds folded in.
    pub fn report(mut self, scenario: &Scenario, options: &SweepOptions, wall_s: f64) -> SweepReport {
        self.failed.sort_by_key(|f| f.seed); // stable: a sweep's own list is in order already
        SweepReport {
            scenario: scenario.name.clone(),
            seeds: options.seeds,
            explore: options.strategy.to_string(),
            runs: self.runs,
            passed: self.runs - self.failed.len() as u64,
            failed: self.failed,
            totals: self.totals,
            distinct_traces: self.orders.len() as u64,
            distinct_timings: self.timings.len() as u64,
            coverage: self.coverage,
            wall_s,
            clock: options.clock,
        }
    }
}

/// The first 16 bytes of a hex SHA-256 (the whole text where it is not one).
fn hash_prefix(hex: &str) -> u128 {
    hex.get(..32)
        .and_then(|h| u128::from_str_radix(h, 16).ok())
        .unwrap_or_else(|| {
            // Not a hex digest (never from a run): fold the text into the key.
            hex.bytes().fold(0u128, |h, b| {
                h.wrapping_mul(0x100_0000_01b3).wrapping_add(u128::from(b))
            })
        })
}

/// The human report: failing seeds with their reproduce commands, then totals.
pub fn render(report: &SweepReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let order = match report.clock {
        crate::scenario::Clock::Virtual => format!("explore {}", report.explore),
        crate::scenario::Clock::Real => "real clock".to_owned(),
    };
    let _ = writeln!(
        out,
        "asksim sweep: {} (seeds {}, {} runs, {order})",
        report.scenario, report.seeds, report.runs
    );
    for failure in &report.failed {
        let _ = writeln!(out, "  FAIL seed {}: {}", failure.seed, failure.reproduce);
        failure.verdict.write_lines(&mut out);
    }
    let t = &report.totals;
    let errors: u64 = t.errors.values().sum();
    let _ = writeln!(
        out,
        "  totals: answered {}, pending {} (late_answered {}, withdrawn {}, pending_open {}), errors {}, lost_on_restart {}, open {}",
        t.answered,
        t.pending,
        t.late_answered,
        t.withdrawn,
        t.pending_open,
        errors,
        t.lost_on_restart,
        t.open
    );
    for (code, n) in &t.errors {
        let _ = writeln!(out, "    {code} {n}");
    }
    for line in report.coverage.lines() {
        let _ = writeln!(out, "  race {line}");
    }
    let _ = writeln!(
        out,
        "  {} passed, {} failed; {} distinct traces ({} distinct timings); {:.2} s wall",
        report.passed,
        report.failed.len(),
        report.distinct_traces,
        report.distinct_timings,
        report.wall_s
    );
    out
}
