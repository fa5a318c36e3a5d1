//! Outcomes, expectations and the run summary (SPEC §6): what `asksim run` prints,
//! as a table or as JSON. A pure function of the scenario and the run's output:
//! outcomes and latencies come from the projection's states, never from reading
//! result texts again.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::projection::{Projection, QuestionRecord, QuestionState};
use crate::scenario::{Clock, Scenario};
use crate::sim::analysis::Checked;
use crate::sim::driver::RunOutput;
use crate::sim::invariants::{INVARIANTS, REAL_TOLERANCE_S, VIRTUAL_TOLERANCE_S, Violation, check};
use crate::tool::{ResultKind, ToolResult};

/// Most violations the human report lists; `--json` has them all.
const REPORT_LINES_MAX: usize = 20;

/// How the calls of a run settled (SPEC §6 `outcomes`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcomes {
    /// Answers returned to the tool call.
    pub answered: u64,
    /// The call returned `pending` (or was a timed call open at a process loss).
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

    /// Adds `other` into these totals.
    pub fn add(&mut self, other: &Outcomes) {
        self.answered += other.answered;
        self.pending += other.pending;
        self.lost_on_restart += other.lost_on_restart;
        self.open += other.open;
        self.late_answered += other.late_answered;
        self.withdrawn += other.withdrawn;
        self.pending_open += other.pending_open;
        for (code, n) in &other.errors {
            *self.errors.entry(code.clone()).or_insert(0) += n;
        }
    }

    fn question(&mut self, question: &QuestionRecord) {
        if question.went_pending {
            self.pending += 1;
            match question.state {
                QuestionState::LateAnswered => self.late_answered += 1,
                QuestionState::Withdrawn => self.withdrawn += 1,
                _ => self.pending_open += 1,
            }
            return;
        }
        match (question.state, question.first) {
            (QuestionState::LostOnRestart, _) => self.lost_on_restart += 1,
            (_, Some((ResultKind::Answers, _))) => self.answered += 1,
            (_, Some((ResultKind::Error(code), _))) => self.error(code.as_str()),
            _ => self.open += 1,
        }
    }

    fn error(&mut self, code: &str) {
        *self.errors.entry(code.to_owned()).or_insert(0) += 1;
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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ExpectationReport {
    /// Expectations that held.
    pub passed: u64,
    /// Expectations that did not.
    pub failed: u64,
    /// What did not, one line each.
    pub failures: Vec<String>,
}

/// Seconds from a call's start to its settlement.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
    /// The scheduling strategy (`random`, `pct:D`, `fifo`).
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
    /// Events recorded.
    pub events: u64,
    /// Which named races the run reached, and which side won (SPEC §6).
    pub coverage: crate::sim::coverage::Coverage,
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
}

impl Verdict {
    /// The verdict of `summary`.
    pub fn of(summary: &Summary) -> Verdict {
        Verdict {
            violations: summary.invariants.violations.clone(),
            failures: summary.expectations.failures.clone(),
            limit: summary.limit,
            crashed: summary.crashed.clone(),
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
    }
}

/// The command that reproduces a run of `file`: every flag that changes it.
pub fn reproduce_command(file: &str, output: &RunOutput) -> String {
    let clock = clock_name(output.clock);
    format!(
        "asksim run {} --seed {} --clock {clock} --explore {}",
        shell_word(file),
        output.seed,
        output.strategy
    )
}

/// `word` as one word of a POSIX shell command line: as it is when it needs no
/// quoting, else quoted (shlex), so a printed command pastes back exactly. A
/// path cannot hold the one thing shlex refuses (a NUL byte).
pub fn shell_word(word: &str) -> std::borrow::Cow<'_, str> {
    shlex::try_quote(word).unwrap_or(std::borrow::Cow::Borrowed(word))
}

/// Analyses a run of `scenario` loaded from `file`. A panic in the analysis (the
/// checker, the report) fails the run as `crashed`, like a panic in the run.
pub fn summarise(scenario: &Scenario, file: &str, output: &RunOutput) -> Summary {
    match crate::sim::driver::caught(|| analyse(scenario, file, output)) {
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
            clock: clock_name(output.clock),
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
            events: output.recording.count,
            coverage: crate::sim::coverage::Coverage::default(),
            reproduce: None,
        }
    }
}

fn clock_name(clock: Clock) -> &'static str {
    match clock {
        Clock::Virtual => "virtual",
        Clock::Real => "real",
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
    let checked = match &output.checked {
        Some(checked) => checked.clone(),
        None if output.crashed.is_some() => Checked::default(),
        None => Checked {
            violations: check(output.events(), Some(&output.open), tolerance_s),
            coverage: crate::sim::coverage::coverage(output.events(), scenario),
        },
    };
    let violations = if output.crashed.is_some() {
        Vec::new()
    } else {
        checked.violations
    };
    // A run that crashed is judged by its crash: what it did not get to do is not
    // an expectation failure too.
    let expectations = if output.crashed.is_some() {
        ExpectationReport::default()
    } else {
        expectations(scenario, output, &outcomes)
    };
    let mut summary = Summary {
        scenario: scenario.name.clone(),
        seed: output.seed,
        clock: clock_name(output.clock),
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

/// The largest sample a histogram takes: about 115 days in microseconds, every
/// time a run's limits allow.
const SAMPLE_US_MAX: u64 = 10_000_000_000_000;

/// Microseconds from seconds, as a histogram records them.
fn micros(seconds: f64) -> u64 {
    ((seconds.max(0.0) * 1e6) as u64).min(SAMPLE_US_MAX)
}

/// p50, p99 and max of samples in microseconds, as an HDR histogram with three
/// significant figures reports them: the histogram's quantile is the highest value
/// equivalent to the sample at rank `max(1, ceil(q * n))`, so the samples are
/// sorted and that rule applied directly, with the histogram only for its bucket
/// arithmetic. The same figures as recording them all and reading quantiles,
/// without walking every bucket of the range per quantile (which took a third of
/// a small sweep's time).
fn percentiles(samples: &mut [u64]) -> LatencySummary {
    if samples.is_empty() {
        return LatencySummary::default();
    }
    samples.sort_unstable();
    let h = Histogram::<u64>::new_with_bounds(1, 2, 3).expect("valid histogram bounds");
    let n = samples.len();
    let seconds = |value: u64| h.highest_equivalent(value) as f64 / 1e6;
    let at = |q: f64| {
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        seconds(samples[rank - 1])
    };
    LatencySummary {
        p50: at(0.5),
        p99: at(0.99),
        max: seconds(samples[n - 1]),
    }
}

/// How the calls settled, from the projection's states.
pub fn outcomes(projection: &Projection) -> Outcomes {
    let mut outcomes = Outcomes::default();
    for question in projection.questions.values() {
        outcomes.question(question);
    }
    for rejected in projection.rejected.values() {
        outcomes.error(&rejected.outcome);
    }
    outcomes
}

/// From each call's start to its first tool result.
fn latency(projection: &Projection) -> LatencySummary {
    let mut samples = Vec::with_capacity(projection.questions.len() + projection.rejected.len());
    for question in projection.questions.values() {
        if let Some((_, t)) = question.first {
            samples.push(micros(t - question.requested_t));
        }
    }
    samples.extend(projection.rejected.values().map(|_| 0));
    percentiles(&mut samples)
}

/// For every call that returned `pending`: how long after its window's end.
fn lateness(projection: &Projection) -> LatencySummary {
    let mut samples = Vec::new();
    for question in projection.questions.values() {
        if let (Some((ResultKind::Pending, t)), Some(w)) = (question.first, question.window_s)
            && w > 0.0
        {
            samples.push(micros(t - (question.requested_t + w)));
        }
    }
    percentiles(&mut samples)
}

/// The tool result each call returned first, as JSON.
fn first_results(projection: &Projection) -> BTreeMap<&str, Value> {
    let mut results = BTreeMap::new();
    for (call_id, question) in &projection.questions {
        let text = match question.first {
            Some((ResultKind::Pending, _)) => Some(ToolResult::pending(call_id).text),
            Some(_) => question.settled.clone(),
            None => None,
        };
        if let Some(text) = text {
            results.insert(
                call_id.as_str(),
                serde_json::from_str(&text).unwrap_or(Value::Null),
            );
        }
    }
    for (call_id, rejected) in &projection.rejected {
        results.insert(
            call_id.as_str(),
            serde_json::from_str(&rejected.result).unwrap_or(Value::Null),
        );
    }
    results
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
    let projection = output.projection();
    let results = first_results(projection);
    for (call_id, expected) in &expect.results {
        let actual = results.get(call_id.as_str()).cloned().unwrap_or(Value::Null);
        verdict(
            result_matches(&actual, expected),
            format!("results[{call_id}]: expected {expected}, got {actual}"),
        );
    }
    for (agent, expected) in &expect.user_messages {
        let actual: Vec<Value> = projection
            .agents
            .get(agent)
            .map(|a| {
                a.messages
                    .iter()
                    .map(|m| serde_json::from_str(m).unwrap_or(Value::Null))
                    .collect()
            })
            .unwrap_or_default();
        let (expected_json, actual_json) = (Value::Array(expected.clone()), Value::Array(actual.clone()));
        verdict(
            &actual == expected,
            format!("user_messages[{agent}]: expected {expected_json}, got {actual_json}"),
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
            "virtual time",
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
/// the call it names, from the run's `events` (see [`crate::sim::timeline`]).
pub fn render_table_with_timelines(summary: &Summary, events: &[crate::event::Event]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "asksim run: {} (seed {}, {} clock, explore {})",
        summary.scenario, summary.seed, summary.clock, summary.explore
    );
    for (name, value) in rows(summary) {
        let _ = writeln!(out, "  {name:<16}{value}");
    }
    let shown = REPORT_LINES_MAX;
    for (i, v) in summary.invariants.violations.iter().take(shown).enumerate() {
        let _ = writeln!(out, "  VIOLATION {v}");
        crate::sim::timeline::write_violation_timeline(&mut out, events, i, v);
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
    let verdict = if summary.passed() { "PASS" } else { "FAIL" };
    let _ = writeln!(out, "  {:<16}{verdict}", "result");
    if let Some(command) = &summary.reproduce {
        let _ = writeln!(out, "  reproduce with: {command}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of a histogram that recorded every sample and read its
    /// quantiles, as the report computed them before.
    fn by_histogram(samples: &[u64]) -> LatencySummary {
        let mut h = Histogram::<u64>::new_with_bounds(1, SAMPLE_US_MAX, 3).unwrap();
        for &s in samples {
            h.saturating_record(s);
        }
        let seconds = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
        LatencySummary {
            p50: seconds(0.5),
            p99: seconds(0.99),
            max: h.max() as f64 / 1e6,
        }
    }

    #[test]
    fn percentiles_equal_those_of_a_histogram_holding_every_sample() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut sets: Vec<Vec<u64>> = vec![vec![0], vec![0, 0, 5], vec![1, 2, 3], vec![SAMPLE_US_MAX, 3]];
        for n in [1usize, 2, 99, 100, 101, 1000, 4321] {
            let set = (0..n)
                .map(|_| match rng.gen_range(0..4) {
                    0 => 0,
                    1 => rng.gen_range(0..2_048),
                    2 => rng.gen_range(0..100_000_000),
                    _ => rng.gen_range(0..SAMPLE_US_MAX),
                })
                .collect();
            sets.push(set);
        }
        for set in sets {
            let expected = by_histogram(&set);
            let got = percentiles(&mut set.clone());
            assert_eq!(
                (got.p50, got.p99, got.max),
                (expected.p50, expected.p99, expected.max),
                "{} samples",
                set.len()
            );
        }
        let none = percentiles(&mut []);
        assert_eq!((none.p50, none.p99, none.max), (0.0, 0.0, 0.0));
    }
}
