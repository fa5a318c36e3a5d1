//! The summary of one run (SPEC §6): outcomes, the invariants' and the
//! expectations' verdicts, latencies, throughput, and what a failed run broke. A
//! pure function of the scenario and the run's output: outcomes and latencies come
//! from the projection's states, never from reading result texts again. How a
//! summary is printed is the showing room's business (`sim::show::report`).

use serde::Serialize;

use crate::scenario::{Clock, Scenario};
use crate::sim::engine::reproduce::reproduce_command;
use crate::sim::judge::analysis::Checked;
use crate::sim::judge::expect::{ExpectationReport, expectations};
use crate::sim::judge::invariants::{INVARIANTS, REAL_TOLERANCE_S, VIRTUAL_TOLERANCE_S, Violation, check};
use crate::sim::judge::judged::RunOutput;
use crate::sim::judge::latency::{LatencySummary, latency, lateness};
use crate::sim::judge::outcomes::{Outcomes, outcomes};
use crate::wire::ProcessFailure;

/// The invariants part of the summary.
#[derive(Clone, Debug, Serialize)]
pub struct InvariantReport {
    /// The invariants checked.
    pub checked: Vec<&'static str>,
    /// What broke.
    pub violations: Vec<Violation>,
}

/// Calls and pending results per wall second.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Throughput {
    /// Calls per wall second.
    pub calls_per_s: f64,
    /// Pending results per wall second.
    pub pending_per_s: f64,
}

/// The summary of one run (`asksim run --json`).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// `"virtual"` or `"real"`.
    pub clock: &'static str,
    /// The scheduling strategy (`random`, `pct:D`, `fifo`), or `schedule S` for
    /// a run that replayed the schedule S (`run --schedule`). On the real clock,
    /// where tokio orders the deliveries and no strategy does, the report names
    /// none (`run --json` has null).
    pub explore: String,
    /// Tool calls made.
    pub calls: u64,
    /// How they settled.
    pub outcomes: Outcomes,
    /// The invariant checker's verdict.
    pub invariants: InvariantReport,
    /// The scenario's `expect` block's verdict.
    pub expectations: ExpectationReport,
    /// SHA-256 of the event log.
    pub trace_hash: String,
    /// SHA-256 of the event lines without `seq` and `t`: equal for two runs
    /// exactly when they did the same things in the same order.
    pub order_hash: String,
    /// Seconds on the run's clock.
    pub virtual_s: f64,
    /// Seconds of wall time.
    pub wall_s: f64,
    /// Call start → settlement.
    pub latency_s: LatencySummary,
    /// How late each `pending` came past its window's end (0 on the virtual
    /// clock; on the real clock, the runtime's timer and scheduling delay).
    pub lateness_s: LatencySummary,
    /// Per wall second.
    pub throughput: Throughput,
    /// The limit that stopped the run, or null.
    pub limit: Option<&'static str>,
    /// The panic that ended the run, or null (outcome `crashed`).
    pub crashed: Option<String>,
    /// The outside process that failed the run, or null (PROTOCOL.md
    /// "Failures"): who, why, what asksim wrote, the offending line, its stderr.
    pub process_failed: Option<ProcessFailure>,
    /// Events recorded.
    pub events: u64,
    /// Which named races the run reached, and which side won (SPEC §6).
    pub coverage: crate::sim::judge::coverage::Coverage,
    /// The command that reproduces a failed run.
    pub reproduce: Option<String>,
}

impl Summary {
    /// Whether every invariant and expectation held, no limit was hit and nothing
    /// panicked.
    pub fn passed(&self) -> bool {
        self.invariants.violations.is_empty()
            && self.expectations.failed == 0
            && self.limit.is_none()
            && self.crashed.is_none()
            && self.process_failed.is_none()
    }
}

/// What a failed run broke, as sweep and explore list it under its reproduce
/// command.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// Broken invariants.
    pub violations: Vec<Violation>,
    /// Failed expectations.
    pub failures: Vec<String>,
    /// The limit that stopped the run, or null.
    pub limit: Option<&'static str>,
    /// The panic that ended the run, or null.
    pub crashed: Option<String>,
    /// The outside process that failed the run, or null.
    pub process_failed: Option<ProcessFailure>,
}

impl Verdict {
    /// The verdict of `summary`.
    pub fn of(summary: &Summary) -> Verdict {
        Verdict {
            violations: summary.invariants.violations.clone(),
            failures: summary.expectations.failures.clone(),
            limit: summary.limit,
            crashed: summary.crashed.clone(),
            process_failed: summary.process_failed.clone(),
        }
    }

    /// One indented line per thing broken.
    pub fn write_lines(&self, out: &mut String) {
        use std::fmt::Write as _;
        for v in &self.violations {
            let _ = writeln!(out, "    VIOLATION {v}");
        }
        for f in &self.failures {
            let _ = writeln!(out, "    EXPECTATION FAILED {f}");
        }
        if let Some(limit) = self.limit {
            let _ = writeln!(out, "    LIMIT HIT {limit}");
        }
        if let Some(panic) = &self.crashed {
            let _ = writeln!(out, "    CRASHED {panic}");
        }
        if let Some(failure) = &self.process_failed {
            let text = failure.to_string().replace('\n', "\n    ");
            let _ = writeln!(out, "    PROCESS FAILED {text}");
        }
    }
}

/// Analyses a run of `scenario` loaded from `file`. A panic in the analysis (the
/// checker, the report) fails the run as `crashed`, like a panic in the run.
pub fn summarise(scenario: &Scenario, file: &str, output: &RunOutput) -> Summary {
    match crate::sim::engine::driver::caught(|| analyse(scenario, file, output)) {
        Ok(summary) => summary,
        Err(message) => {
            let mut crashed = output.clone();
            crashed.crashed = Some(format!("the analysis panicked: {message}"));
            let mut summary = Summary::empty(scenario, &crashed);
            summary.reproduce = Some(reproduce_command(file, &crashed));
            summary
        }
    }
}

impl Summary {
    /// The summary of a run nothing could be analysed of.
    fn empty(scenario: &Scenario, output: &RunOutput) -> Summary {
        Summary {
            scenario: scenario.name.clone(),
            seed: output.seed,
            clock: output.clock.as_str(),
            explore: output.strategy.to_string(),
            calls: 0,
            outcomes: Outcomes::default(),
            invariants: InvariantReport {
                checked: INVARIANTS.to_vec(),
                violations: Vec::new(),
            },
            expectations: ExpectationReport::default(),
            trace_hash: output.recording.trace_hash.clone(),
            order_hash: output.recording.order_hash.clone(),
            virtual_s: output.virtual_s,
            wall_s: output.wall_s,
            latency_s: LatencySummary::default(),
            lateness_s: LatencySummary::default(),
            throughput: Throughput::default(),
            limit: output.limit.map(|l| l.as_str()),
            crashed: output.crashed.clone(),
            process_failed: output.process_failed.as_deref().cloned(),
            events: output.recording.count,
            coverage: crate::sim::judge::coverage::Coverage::default(),
            reproduce: None,
        }
    }
}

fn analyse(scenario: &Scenario, file: &str, output: &RunOutput) -> Summary {
    let projection = output.projection();
    let outcomes = outcomes(projection);
    let calls = (projection.questions.len() + projection.rejected.len()) as u64;
    let tolerance_s = match output.clock {
        Clock::Virtual => VIRTUAL_TOLERANCE_S,
        Clock::Real => REAL_TOLERANCE_S,
    };
    // A run that crashed, or whose outside process failed, is judged by that:
    // what it did not get to do is no violation and no failed expectation too.
    let cut_short = output.crashed.is_some() || output.process_failed.is_some();
    let checked = match &output.checked {
        Some(checked) => checked.clone(),
        None if cut_short => Checked::default(),
        None => Checked {
            violations: check(output.events(), Some(&output.broker()), tolerance_s),
            coverage: crate::sim::judge::coverage::coverage(output.events(), scenario),
            first_results: crate::sim::judge::first_results::FirstResults::of(scenario, output.events()),
        },
    };
    let violations = if cut_short { Vec::new() } else { checked.violations };
    let expectations = if cut_short {
        ExpectationReport::default()
    } else {
        expectations(scenario, output, &outcomes)
    };
    let mut summary = Summary {
        scenario: scenario.name.clone(),
        seed: output.seed,
        clock: output.clock.as_str(),
        explore: output.strategy.to_string(),
        calls,
        throughput: Throughput {
            calls_per_s: per_s(calls, output.wall_s),
            pending_per_s: per_s(outcomes.pending, output.wall_s),
        },
        outcomes,
        invariants: InvariantReport {
            checked: INVARIANTS.to_vec(),
            violations,
        },
        expectations,
        trace_hash: output.recording.trace_hash.clone(),
        order_hash: output.recording.order_hash.clone(),
        virtual_s: output.virtual_s,
        wall_s: output.wall_s,
        latency_s: latency(projection),
        lateness_s: lateness(projection),
        limit: output.limit.map(|l| l.as_str()),
        crashed: output.crashed.clone(),
        process_failed: output.process_failed.as_deref().cloned(),
        events: output.recording.count,
        coverage: checked.coverage,
        reproduce: None,
    };
    if !summary.passed() {
        summary.reproduce = Some(reproduce_command(file, output));
    }
    summary
}

fn per_s(n: u64, wall_s: f64) -> f64 {
    if wall_s > 0.0 { n as f64 / wall_s } else { 0.0 }
}
