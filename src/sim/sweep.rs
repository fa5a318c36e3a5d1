//! `asksim sweep`: one scenario under many seeds, in parallel. Each seed runs on
//! its own current-thread runtime on a worker thread, so every run stays as
//! deterministic as a single `asksim run`; results are gathered by seed, so the
//! report does not depend on which worker finished first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use serde::Serialize;

use crate::log::events_hash;
use crate::scenario::{Clock, Scenario};
use crate::sim::driver;
use crate::sim::invariants::Violation;
use crate::sim::report::{Outcomes, Summary, summarise};

/// Most seeds one sweep runs.
pub const SEEDS_MAX: u64 = 10_000_000;
/// Most worker threads.
pub const JOBS_MAX: usize = 256;

/// A half-open range of seeds, `A..B`, or an inclusive one, `A..=B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SeedRange {
    /// First seed.
    pub from: u64,
    /// One past the last seed.
    pub to: u64,
}

impl std::str::FromStr for SeedRange {
    type Err = String;

    fn from_str(s: &str) -> Result<SeedRange, String> {
        let number = |n: &str| {
            n.trim()
                .parse::<u64>()
                .map_err(|e| format!("bad seed {n:?}: {e}"))
        };
        let (from, to) = if let Some((a, b)) = s.split_once("..=") {
            (
                number(a)?,
                number(b)?.checked_add(1).ok_or("the range ends past u64::MAX")?,
            )
        } else if let Some((a, b)) = s.split_once("..") {
            (number(a)?, number(b)?)
        } else {
            return Err(format!("expected A..B or A..=B, got {s:?}"));
        };
        if from >= to {
            return Err(format!("the range {s:?} holds no seed"));
        }
        if to - from > SEEDS_MAX {
            return Err(format!("the range {s:?} holds more than {SEEDS_MAX} seeds"));
        }
        Ok(SeedRange { from, to })
    }
}

/// One failing seed.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The command that reproduces it.
    pub reproduce: String,
    /// Broken invariants.
    pub violations: Vec<Violation>,
    /// Failed expectations.
    pub failures: Vec<String>,
    /// The limit that stopped it, if one did.
    pub limit: Option<String>,
}

/// What a sweep reports.
#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    /// The scenario's name.
    pub scenario: String,
    /// The seeds run.
    pub seeds: SeedRange,
    /// Runs made.
    pub runs: u64,
    /// Runs that held every invariant and expectation.
    pub passed: u64,
    /// Every failing seed, in seed order.
    pub failed: Vec<Failure>,
    /// Outcomes summed over every run.
    pub totals: Outcomes,
    /// Distinct event streams (the log less its header, which names the seed):
    /// how many interleavings the seeds explored.
    pub distinct_traces: u64,
    /// Seconds of wall time.
    pub wall_s: f64,
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
    /// Check invariants and limits only, not the scenario's `expect` (whose exact
    /// results usually hold for one seed only).
    pub invariants_only: bool,
}

/// Runs the sweep; `progress` is called with the number of runs done after each.
pub fn sweep(scenario: &Scenario, options: &SweepOptions, progress: impl Fn(u64)) -> SweepReport {
    // The wall clock is read only to report wall_s.
    let wall = std::time::Instant::now();
    let mut scenario = scenario.clone();
    if options.invariants_only {
        scenario.expect = None;
    }
    let scenario = Arc::new(scenario);
    let next = Arc::new(AtomicU64::new(options.seeds.from));
    let (tx, rx) = mpsc::channel::<(u64, Summary, String)>();
    let jobs = options.jobs.clamp(1, JOBS_MAX);
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let (scenario, next, tx, file, to, clock) = (
                scenario.clone(),
                next.clone(),
                tx.clone(),
                options.file.clone(),
                options.seeds.to,
                options.clock,
            );
            std::thread::spawn(move || {
                loop {
                    let seed = next.fetch_add(1, Ordering::SeqCst);
                    if seed >= to {
                        return;
                    }
                    let Ok(output) = driver::run(&scenario, seed, clock) else {
                        return;
                    };
                    let interleaving = events_hash(&output.events);
                    if tx
                        .send((seed, summarise(&scenario, &file, &output), interleaving))
                        .is_err()
                    {
                        return;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let mut results: BTreeMap<u64, (Summary, String)> = BTreeMap::new();
    for (seed, summary, interleaving) in rx {
        results.insert(seed, (summary, interleaving));
        progress(results.len() as u64);
    }
    for worker in workers {
        let _ = worker.join();
    }
    report(&scenario, options, results, wall.elapsed().as_secs_f64())
}

fn report(
    scenario: &Scenario,
    options: &SweepOptions,
    results: BTreeMap<u64, (Summary, String)>,
    wall_s: f64,
) -> SweepReport {
    let mut totals = Outcomes::default();
    let mut traces = BTreeSet::new();
    let mut failed = Vec::new();
    for (seed, (summary, interleaving)) in &results {
        add(&mut totals, &summary.outcomes);
        traces.insert(interleaving.clone());
        if !summary.passed() {
            failed.push(Failure {
                seed: *seed,
                reproduce: summary.reproduce.clone().unwrap_or_default(),
                violations: summary.invariants.violations.clone(),
                failures: summary.expectations.failures.clone(),
                limit: summary.limit.clone(),
            });
        }
    }
    SweepReport {
        scenario: scenario.name.clone(),
        seeds: options.seeds,
        runs: results.len() as u64,
        passed: results.len() as u64 - failed.len() as u64,
        failed,
        totals,
        distinct_traces: traces.len() as u64,
        wall_s,
    }
}

fn add(totals: &mut Outcomes, o: &Outcomes) {
    totals.answered += o.answered;
    totals.pending += o.pending;
    totals.lost_on_restart += o.lost_on_restart;
    totals.open += o.open;
    totals.late_answered += o.late_answered;
    totals.withdrawn += o.withdrawn;
    totals.pending_open += o.pending_open;
    for (code, n) in &o.errors {
        *totals.errors.entry(code.clone()).or_insert(0) += n;
    }
}

/// The human report: failing seeds with their reproduce commands, then totals.
pub fn render(report: &SweepReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let seeds = report.seeds;
    let _ = writeln!(
        out,
        "asksim sweep: {} (seeds {}..{}, {} runs)",
        report.scenario, seeds.from, seeds.to, report.runs
    );
    for failure in &report.failed {
        let _ = writeln!(out, "  FAIL seed {}: {}", failure.seed, failure.reproduce);
        for v in &failure.violations {
            let _ = writeln!(out, "    VIOLATION {v}");
        }
        for f in &failure.failures {
            let _ = writeln!(out, "    EXPECTATION FAILED {f}");
        }
        if let Some(limit) = &failure.limit {
            let _ = writeln!(out, "    LIMIT HIT {limit}");
        }
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
    let _ = writeln!(
        out,
        "  {} passed, {} failed; {} distinct traces; {:.2} s wall",
        report.passed,
        report.failed.len(),
        report.distinct_traces,
        report.wall_s
    );
    out
}
