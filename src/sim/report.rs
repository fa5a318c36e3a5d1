//! Outcomes, expectations and the run summary (SPEC §6): what `asksim run` prints,
//! as a table or as JSON. A pure function of the scenario and the run's output.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::Value;

use crate::event::EventKind;
use crate::log::{LogHeader, trace_hash};
use crate::scenario::{Clock, Scenario};
use crate::sim::driver::RunOutput;
use crate::sim::invariants::{INVARIANTS, REAL_TOLERANCE_S, VIRTUAL_TOLERANCE_S, Violation, check};
use crate::tool::Schema;

/// Most violations the human report lists; `--json` has them all.
const REPORT_LINES_MAX: usize = 20;

/// How the calls of a run settled (SPEC §6 `outcomes`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Outcomes {
    /// Answers returned to the tool call.
    pub answered: u64,
    /// The call returned `pending`.
    pub pending: u64,
    /// Errors by code.
    pub errors: BTreeMap<String, u64>,
    /// Legacy calls open at process loss.
    pub lost_on_restart: u64,
    /// Still blocking when the run ended.
    pub open: u64,
    /// Pending calls whose late answer reached the agent.
    pub late_answered: u64,
    /// Pending calls withdrawn.
    pub withdrawn: u64,
    /// Pending calls still open at the end.
    pub pending_open: u64,
}

impl Outcomes {
    /// The count for an outcome name of SPEC §6 or an error code.
    pub fn count(&self, name: &str) -> u64 {
        match name {
            "answered" => self.answered,
            "pending" => self.pending,
            "lost_on_restart" => self.lost_on_restart,
            "open" => self.open,
            "late_answered" => self.late_answered,
            "withdrawn" => self.withdrawn,
            "pending_open" => self.pending_open,
            code => self.errors.get(code).copied().unwrap_or(0),
        }
    }
}

/// The invariants part of the summary.
#[derive(Clone, Debug, Serialize)]
pub struct InvariantReport {
    /// The invariants checked.
    pub checked: Vec<&'static str>,
    /// What broke.
    pub violations: Vec<Violation>,
}

/// The expectations part of the summary.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ExpectationReport {
    /// Expectations that held.
    pub passed: u64,
    /// Expectations that did not.
    pub failed: u64,
    /// What did not, one line each.
    pub failures: Vec<String>,
}

/// Seconds from a call's start to its settlement.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencySummary {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
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
    pub limit: Option<String>,
    /// Events recorded.
    pub events: u64,
    /// The command that reproduces a failed run.
    pub reproduce: Option<String>,
}

impl Summary {
    /// Whether every invariant and expectation held and no limit was hit.
    pub fn passed(&self) -> bool {
        self.invariants.violations.is_empty() && self.expectations.failed == 0 && self.limit.is_none()
    }
}

/// Analyses a run of `scenario` loaded from `file`.
pub fn summarise(scenario: &Scenario, file: &str, output: &RunOutput) -> Summary {
    let (calls, outcomes, latency) = outcomes(output);
    let lateness = lateness(output);
    let tolerance_s = match output.clock {
        Clock::Virtual => VIRTUAL_TOLERANCE_S,
        Clock::Real => REAL_TOLERANCE_S,
    };
    let violations = check(&output.events, Some(&output.open), tolerance_s);
    let expectations = expectations(scenario, output, &outcomes);
    let header = LogHeader::new(&scenario.name, output.seed);
    let mut summary = Summary {
        scenario: scenario.name.clone(),
        seed: output.seed,
        clock: match output.clock {
            Clock::Virtual => "virtual",
            Clock::Real => "real",
        },
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
        trace_hash: trace_hash(&header, &output.events),
        virtual_s: output.virtual_s,
        wall_s: output.wall_s,
        latency_s: latency,
        lateness_s: lateness,
        limit: output.limit.clone(),
        events: output.events.len() as u64,
        reproduce: None,
    };
    if !summary.passed() {
        let clock = if output.clock == Clock::Real {
            " --clock real"
        } else {
            ""
        };
        summary.reproduce = Some(format!("asksim run {file} --seed {}{clock}", output.seed));
    }
    summary
}

fn per_s(n: u64, wall_s: f64) -> f64 {
    if wall_s > 0.0 { n as f64 / wall_s } else { 0.0 }
}

/// Microsecond histograms up to about 115 days: every time a run's limits allow.
fn histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 10_000_000_000_000, 3).expect("valid histogram bounds")
}

fn percentiles(h: &Histogram<u64>) -> LatencySummary {
    let seconds = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
    LatencySummary {
        p50: seconds(0.5),
        p99: seconds(0.99),
        max: h.max() as f64 / 1e6,
    }
}

/// For every call that returned `pending`: how long after its window's end.
fn lateness(output: &RunOutput) -> LatencySummary {
    let mut due: BTreeMap<&str, f64> = BTreeMap::new();
    let mut late = histogram();
    for event in &output.events {
        match &event.kind {
            EventKind::Request {
                call_id,
                window_s: Some(w),
                ..
            } if *w > 0.0 => {
                due.insert(call_id, event.t + w);
            }
            EventKind::Result { call_id, result, .. } if result.starts_with("{\"pending\":true") => {
                if let Some(end) = due.remove(call_id.as_str()) {
                    late.saturating_record(((event.t - end).max(0.0) * 1e6) as u64);
                }
            }
            _ => {}
        }
    }
    percentiles(&late)
}

/// How a call first settled.
enum First<'a> {
    /// Its first tool result: the text and whether it is an error.
    Result(&'a str, bool),
    /// Open at a process loss: a timed call is pending from the restart on, a
    /// legacy one is lost.
    AtLoss(Schema),
}

fn outcomes(output: &RunOutput) -> (u64, Outcomes, LatencySummary) {
    let mut outcomes = Outcomes::default();
    let mut started: BTreeMap<&str, (f64, Schema)> = BTreeMap::new();
    let mut first: BTreeMap<&str, First> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut closed: BTreeMap<&str, &'static str> = BTreeMap::new();
    let mut latency = histogram();
    for event in &output.events {
        match &event.kind {
            EventKind::Request { call_id, schema, .. } => {
                started.insert(call_id, (event.t, *schema));
                order.push(call_id);
            }
            EventKind::Result {
                call_id,
                result,
                is_error,
                ..
            } => {
                if first.contains_key(call_id.as_str()) {
                    continue;
                }
                if !started.contains_key(call_id.as_str()) {
                    order.push(call_id);
                }
                let start = started.get(call_id.as_str()).map_or(event.t, |s| s.0);
                latency.saturating_record(((event.t - start).max(0.0) * 1e6) as u64);
                first.insert(call_id, First::Result(result, *is_error));
            }
            EventKind::ProcessLoss { .. } => {
                for (call_id, (_, schema)) in &started {
                    if !first.contains_key(call_id) {
                        first.insert(call_id, First::AtLoss(*schema));
                    }
                }
            }
            EventKind::LateAnswer { call_id, .. } => {
                closed.insert(call_id, "late_answered");
            }
            EventKind::Withdraw { call_id, .. } => {
                closed.insert(call_id, "withdrawn");
            }
            _ => {}
        }
    }
    for call_id in &order {
        let went_pending = match first.get(call_id) {
            None => {
                outcomes.open += 1;
                false
            }
            Some(First::Result(text, true)) => {
                let code = serde_json::from_str::<Value>(text)
                    .ok()
                    .and_then(|v| {
                        v.pointer("/error/code")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .unwrap_or_else(|| "UNKNOWN".to_owned());
                *outcomes.errors.entry(code).or_insert(0) += 1;
                false
            }
            Some(First::Result(text, false)) => {
                let pending = text.starts_with("{\"pending\":true");
                if !pending {
                    outcomes.answered += 1;
                }
                pending
            }
            Some(First::AtLoss(Schema::Legacy)) => {
                outcomes.lost_on_restart += 1;
                false
            }
            Some(First::AtLoss(Schema::Timed)) => true,
        };
        if went_pending {
            outcomes.pending += 1;
            match closed.get(call_id) {
                Some(&"late_answered") => outcomes.late_answered += 1,
                Some(_) => outcomes.withdrawn += 1,
                None => outcomes.pending_open += 1,
            }
        }
    }
    let seconds = |q: f64| latency.value_at_quantile(q) as f64 / 1e6;
    let summary = LatencySummary {
        p50: seconds(0.5),
        p99: seconds(0.99),
        max: latency.max() as f64 / 1e6,
    };
    (order.len() as u64, outcomes, summary)
}

fn expectations(scenario: &Scenario, output: &RunOutput, outcomes: &Outcomes) -> ExpectationReport {
    let mut report = ExpectationReport::default();
    let Some(expect) = &scenario.expect else {
        return report;
    };
    let mut verdict = |ok: bool, what: String| {
        if ok {
            report.passed += 1;
        } else {
            report.failed += 1;
            report.failures.push(what);
        }
    };
    let mut results: BTreeMap<&str, Value> = BTreeMap::new();
    let mut messages: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for event in &output.events {
        match &event.kind {
            EventKind::Result { call_id, result, .. } if !results.contains_key(call_id.as_str()) => {
                results.insert(call_id, serde_json::from_str(result).unwrap_or(Value::Null));
            }
            EventKind::UserMessage { agent, message, .. } => {
                messages
                    .entry(agent)
                    .or_default()
                    .push(serde_json::from_str(message).unwrap_or(Value::Null));
            }
            _ => {}
        }
    }
    for (call_id, expected) in &expect.results {
        let actual = results.get(call_id.as_str()).cloned().unwrap_or(Value::Null);
        verdict(
            result_matches(&actual, expected),
            format!("results[{call_id}]: expected {expected}, got {actual}"),
        );
    }
    for (agent, expected) in &expect.user_messages {
        let actual = messages.get(agent.as_str()).cloned().unwrap_or_default();
        let shown = Value::Array(actual.clone());
        verdict(
            &actual == expected,
            format!("user_messages[{agent}]: expected {expected:?}, got {shown}"),
        );
    }
    for (name, expected) in &expect.counts {
        let actual = outcomes.count(name);
        verdict(
            actual == *expected,
            format!("counts[{name}]: expected {expected}, got {actual}"),
        );
    }
    for (agent, expected) in &expect.final_results {
        let actual = output.finals.get(agent).cloned().unwrap_or(Value::Null);
        verdict(
            &actual == expected,
            format!("final_results[{agent}]: expected {expected}, got {actual}"),
        );
    }
    report
}

/// Exact JSON equality, except that an expected error without a `message` leaves
/// the actual message uncompared (SPEC §5).
pub fn result_matches(actual: &Value, expected: &Value) -> bool {
    let error_without_message = expected
        .get("error")
        .and_then(Value::as_object)
        .is_some_and(|e| !e.contains_key("message"));
    if !error_without_message {
        return actual == expected;
    }
    let mut actual = actual.clone();
    if let Some(error) = actual.get_mut("error").and_then(Value::as_object_mut) {
        error.remove("message");
    }
    &actual == expected
}

/// The human report: a table, the violations and failures, and the verdict.
pub fn render_table(summary: &Summary) -> String {
    let o = &summary.outcomes;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "asksim run: {} (seed {}, {} clock)",
        summary.scenario, summary.seed, summary.clock
    );
    let errors = if o.errors.is_empty() {
        "-".to_owned()
    } else {
        o.errors
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rows: Vec<(&str, String)> = vec![
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
            format!(
                "{} checked, {} violated",
                summary.invariants.checked.len(),
                summary.invariants.violations.len()
            ),
        ),
        (
            "expectations",
            format!(
                "{} passed, {} failed",
                summary.expectations.passed, summary.expectations.failed
            ),
        ),
        (
            "virtual time",
            format!("{:.3} s (wall {:.3} s)", summary.virtual_s, summary.wall_s),
        ),
        (
            "lateness",
            format!(
                "p50 {:.6} s, p99 {:.6} s, max {:.6} s (pending past its window)",
                summary.lateness_s.p50, summary.lateness_s.p99, summary.lateness_s.max
            ),
        ),
        (
            "latency",
            format!(
                "p50 {:.3} s, p99 {:.3} s, max {:.3} s",
                summary.latency_s.p50, summary.latency_s.p99, summary.latency_s.max
            ),
        ),
        ("events", summary.events.to_string()),
        ("limit", summary.limit.clone().unwrap_or_else(|| "-".to_owned())),
        ("trace_hash", summary.trace_hash.clone()),
    ];
    for (name, value) in rows {
        let _ = writeln!(out, "  {name:<16}{value}");
    }
    let shown = REPORT_LINES_MAX;
    for v in summary.invariants.violations.iter().take(shown) {
        let _ = writeln!(out, "  VIOLATION {v}");
    }
    if summary.invariants.violations.len() > shown {
        let more = summary.invariants.violations.len() - shown;
        let _ = writeln!(out, "  … and {more} more violations (--json lists them all)");
    }
    for failure in &summary.expectations.failures {
        let _ = writeln!(out, "  EXPECTATION FAILED {failure}");
    }
    if let Some(limit) = &summary.limit {
        let _ = writeln!(out, "  LIMIT HIT {limit}: the run was stopped");
    }
    let verdict = if summary.passed() { "PASS" } else { "FAIL" };
    let _ = writeln!(out, "  {:<16}{verdict}", "result");
    if let Some(command) = &summary.reproduce {
        let _ = writeln!(out, "  reproduce with: {command}");
    }
    out
}
