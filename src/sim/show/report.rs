//! The human report of one run: the summary as a table, the violations (each with
//! the timeline of the call it names), the failures and the verdict. `--json`
//! prints the [`Summary`] itself.

use std::fmt::Write as _;

use crate::scenario::Clock;
use crate::sim::judge::summary::Summary;

/// What `run --check-determinism` found: a second run of the same seed,
/// strategy and schedule, compared event by event with the first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Determinism {
    /// Not asked for.
    #[default]
    Unchecked,
    /// The two runs recorded the same events, byte for byte.
    Identical,
    /// The two runs differ: where, described. It fails the run.
    Differs(String),
}

impl Determinism {
    /// Whether the two runs differed (which fails the run).
    pub fn differs(&self) -> bool {
        matches!(self, Determinism::Differs(_))
    }

    /// `--json`'s `determinism`: null when not asked for, `"identical"`, or
    /// the first difference described.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Determinism::Unchecked => serde_json::Value::Null,
            Determinism::Identical => "identical".into(),
            Determinism::Differs(difference) => difference.as_str().into(),
        }
    }
}

/// Most violations the human report lists; `--json` has them all.
const REPORT_LINES_MAX: usize = 20;

/// The rows of the human table.
fn rows(summary: &Summary) -> Vec<(&'static str, String)> {
    let o = &summary.outcomes;
    let errors = if o.errors.is_empty() {
        "-".to_owned()
    } else {
        let each: Vec<String> = o.errors.iter().map(|(c, n)| format!("{c} {n}")).collect();
        each.join(", ")
    };
    let (inv, exp) = (&summary.invariants, &summary.expectations);
    let (lateness, latency) = (&summary.lateness_s, &summary.latency_s);
    vec![
        ("calls", summary.calls.to_string()),
        ("answered", o.answered.to_string()),
        (
            "pending",
            format!(
                "{} (late_answered {}, withdrawn {}, pending_open {})",
                o.pending, o.late_answered, o.withdrawn, o.pending_open
            ),
        ),
        ("errors", errors),
        ("lost_on_restart", o.lost_on_restart.to_string()),
        ("open", o.open.to_string()),
        (
            "invariants",
            format!("{} checked, {} violated", inv.checked.len(), inv.violations.len()),
        ),
        (
            "expectations",
            format!("{} passed, {} failed", exp.passed, exp.failed),
        ),
        (
            time_label(summary),
            format!("{:.3} s (wall {:.3} s)", summary.virtual_s, summary.wall_s),
        ),
        (
            "lateness",
            format!(
                "p50 {:.6} s, p99 {:.6} s, max {:.6} s (pending past its window)",
                lateness.p50, lateness.p99, lateness.max
            ),
        ),
        (
            "latency",
            format!(
                "p50 {:.3} s, p99 {:.3} s, max {:.3} s",
                latency.p50, latency.p99, latency.max
            ),
        ),
        (
            "throughput",
            format!(
                "{} calls/s, {} pending/s (per wall second)",
                rate(summary.throughput.calls_per_s),
                rate(summary.throughput.pending_per_s)
            ),
        ),
        ("events", summary.events.to_string()),
        ("limit", summary.limit.unwrap_or("-").to_owned()),
        ("races", {
            let lines = summary.coverage.lines();
            if lines.is_empty() {
                "-".to_owned()
            } else {
                lines.join("; ")
            }
        }),
        ("trace_hash", summary.trace_hash.clone()),
    ]
}

/// The human report: a table, the violations and failures, and the verdict.
pub fn render_table(summary: &Summary) -> String {
    render_table_with_timelines(summary, &[])
}

/// [`render_table`] with, under each of the first violations, the timeline of
/// the call it names, from the run's `events` (see [`crate::sim::show::timeline`]).
pub fn render_table_with_timelines(summary: &Summary, events: &[crate::event::Event]) -> String {
    render_run(summary, events, &Determinism::Unchecked)
}

/// [`render_table_with_timelines`] with what `--check-determinism` found: a
/// `determinism` row when it was asked for, and a difference fails the run.
pub fn render_run(summary: &Summary, events: &[crate::event::Event], determinism: &Determinism) -> String {
    let mut out = String::new();
    // A replayed schedule (`run --schedule`) is named as one, never as the
    // strategy it replaced; on the real clock tokio orders the deliveries, and
    // no strategy is named.
    let order = if summary.clock == Clock::Real.as_str() {
        String::new()
    } else if summary.explore.starts_with("schedule ") {
        format!(", {}", summary.explore)
    } else {
        format!(", explore {}", summary.explore)
    };
    let _ = writeln!(
        out,
        "asksim run: {} (seed {}, {} clock{order})",
        summary.scenario, summary.seed, summary.clock
    );
    let checked = match determinism {
        Determinism::Unchecked => None,
        Determinism::Identical => Some("identical over 2 runs".to_owned()),
        Determinism::Differs(_) => Some("not identical over 2 runs".to_owned()),
    };
    for (name, value) in rows(summary)
        .into_iter()
        .chain(checked.map(|c| ("determinism", c)))
    {
        let _ = writeln!(out, "  {name:<16}{value}");
    }
    let shown = REPORT_LINES_MAX;
    for (i, v) in summary.invariants.violations.iter().take(shown).enumerate() {
        let _ = writeln!(out, "  VIOLATION {v}");
        crate::sim::show::timeline::write_violation_timeline(&mut out, events, i, v);
    }
    if summary.invariants.violations.len() > shown {
        let more = summary.invariants.violations.len() - shown;
        let _ = writeln!(out, "  … and {more} more violations (--json lists them all)");
    }
    for failure in &summary.expectations.failures {
        let _ = writeln!(out, "  EXPECTATION FAILED {failure}");
    }
    if let Some(limit) = summary.limit {
        let _ = writeln!(out, "  LIMIT HIT {limit}: the run was stopped");
    }
    if let Some(panic) = &summary.crashed {
        let _ = writeln!(out, "  CRASHED the run panicked: {panic}");
    }
    if let Some(failure) = &summary.process_failed {
        let text = failure.to_string().replace('\n', "\n  ");
        let _ = writeln!(out, "  PROCESS FAILED {text}");
    }
    if let Determinism::Differs(difference) = determinism {
        let _ = writeln!(out, "  NOT DETERMINISTIC {difference}");
    }
    let passed = summary.passed() && !determinism.differs();
    let verdict = if passed { "PASS" } else { "FAIL" };
    let _ = writeln!(out, "  {:<16}{verdict}", "result");
    if let Some(command) = &summary.reproduce {
        let _ = writeln!(out, "  reproduce with: {command}");
    }
    out
}

/// The row of the last event's time on the run's clock: virtual, or on the
/// real clock the time since the run started, which no virtual time is.
fn time_label(summary: &Summary) -> &'static str {
    match summary.clock == Clock::Real.as_str() {
        true => "run time",
        false => "virtual time",
    }
}

/// A rate per second: whole from 10 up, one decimal from 1, two below (a
/// real-clock run of one call in three seconds did 0.33 calls a second, not 0).
fn rate(per_s: f64) -> String {
    match per_s {
        r if r >= 10.0 || r == 0.0 => format!("{r:.0}"),
        r if r >= 1.0 => format!("{r:.1}"),
        r => format!("{r:.2}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_slow_rate_keeps_its_digits() {
        let shown: Vec<String> = [0.0, 0.333, 1.25, 9.94, 10.4, 31503.2].map(super::rate).into();
        assert_eq!(shown, ["0", "0.33", "1.2", "9.9", "10", "31503"]);
    }
}
