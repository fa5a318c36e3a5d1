//! What "fails the same way" means: a run's failure signature and the rule that
//! compares a candidate's with the original's.
//!
//! # The rule
//!
//! A run's **signature** is one kind of item, taken from its summary in this order:
//!
//! 1. the invariants it violated (names, each once, in report order), if any;
//! 2. else its failed expectations, if any: each the whole line the report prints
//!    (`results[root/1]: expected …, got …`), and for a `counts` entry also which
//!    way the count was off and **the calls that made it differ**, each with the
//!    outcome it counts under: the calls counted, when the count is too high; the
//!    calls not counted, when it is too low (or, when every call was counted, the
//!    calls that were);
//! 3. else its crash (the panic message), if it crashed;
//! 4. else its outside process's failure (who, and why), if one failed it;
//! 5. else the limit that stopped it (`virtual_s_max`, `events_max`), if one did;
//! 6. else nothing: the run passed.
//!
//! The original's **primary item** is the first item of its signature. A candidate
//! **fails the same way** when its own signature holds that item: the same
//! invariant, crash or limit; for an expectation, the calls whose outcomes broke it
//! are still there and end the same way. A `results`, `user_messages` or
//! `final_results` line holds the actual value, so the same line means the same
//! call (or agent) with the same outcome. A `counts` line does not name its calls:
//! an empty run also answers 0, so `counts[answered]: expected 1, got 0` would
//! "fail the same way" with no agent left at all. So a `counts` item holds when the
//! candidate's count of that outcome is off the same way (too high, or too low) and
//! every call of the original's that made it differ is there with the same outcome.
//! The count itself may change: the other calls that add to it are not the failure.
//! A candidate that now violates an invariant has found another bug, and does not
//! count.

use std::fmt;

use std::collections::BTreeMap;

use crate::projection::Projection;
use crate::sim::judge::outcomes::call_outcomes;
use crate::sim::judge::summary::Summary;

/// Most calls a failure's description names before it says how many more.
const CALLS_SHOWN_MAX: usize = 4;

/// One item of a failure signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// An invariant the run violated, by name.
    Invariant(String),
    /// A failed expectation other than `counts`: the report's whole line, key first.
    Expectation(String),
    /// A failed `counts` expectation, and the calls that made the count differ.
    Count {
        /// The report's whole line (`counts[answered]: expected 1, got 0`).
        line: String,
        /// The outcome counted (`answered`, `ABORTED`, …).
        name: String,
        /// Whether the count was too high (else too low).
        over: bool,
        /// The calls that made it differ, each with the outcome names it counts
        /// under (`["pending", "withdrawn"]`).
        calls: BTreeMap<String, Vec<String>>,
    },
    /// The panic that ended the run.
    Crash(String),
    /// The outside process that failed the run: who, and why.
    Process(String),
    /// The limit that stopped the run.
    Limit(String),
}

impl Failure {
    /// The short name of the item: the invariant, the expectation's key
    /// (`counts[answered]`), `crash` or the limit.
    pub fn key(&self) -> &str {
        match self {
            Failure::Invariant(name) | Failure::Limit(name) => name,
            Failure::Expectation(line) | Failure::Count { line, .. } => {
                line.split_once(": ").map_or(line.as_str(), |(key, _)| key)
            }
            Failure::Crash(_) => "crash",
            Failure::Process(_) => "process",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Invariant(name) => write!(f, "invariant {name} violated"),
            Failure::Expectation(line) => write!(f, "expectation {line}"),
            Failure::Count { line, calls, .. } => {
                write!(f, "expectation {line}")?;
                if calls.is_empty() {
                    return Ok(());
                }
                let shown: Vec<String> = (calls.iter().take(CALLS_SHOWN_MAX))
                    .map(|(call, names)| format!("{call} {}", names.join(" -> ")))
                    .collect();
                write!(f, " (from {}", shown.join(", "))?;
                if calls.len() > CALLS_SHOWN_MAX {
                    write!(f, " and {} more calls", calls.len() - CALLS_SHOWN_MAX)?;
                }
                write!(f, ")")
            }
            Failure::Crash(message) => write!(f, "crash: {message}"),
            Failure::Process(summary) => write!(f, "{summary}"),
            Failure::Limit(name) => write!(f, "limit {name} hit"),
        }
    }
}

/// A run's failure signature: the items of one kind (see the module's rule).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signature(pub Vec<Failure>);

impl Signature {
    /// The first item: what a shrunk scenario must still fail with.
    pub fn primary(&self) -> Option<&Failure> {
        self.0.first()
    }

    /// Whether this signature holds `item`: the candidate fails the same way.
    pub fn contains(&self, item: &Failure) -> bool {
        self.0.iter().any(|mine| mine.holds(item))
    }
}

impl Failure {
    /// Whether this item of a candidate's signature is `original`'s failure: equal,
    /// or for a count, off the same way with every call that made it differ there
    /// and ending the same way.
    fn holds(&self, original: &Failure) -> bool {
        match (self, original) {
            (
                Failure::Count {
                    name, over, calls, ..
                },
                Failure::Count {
                    name: name_was,
                    over: over_was,
                    calls: calls_was,
                    ..
                },
            ) => {
                name == name_was
                    && over == over_was
                    && (calls_was.iter()).all(|(call, names)| calls.get(call) == Some(names))
            }
            _ => self == original,
        }
    }
}

/// The failure signature of a run's summary, with its projection (which says how
/// each call settled); empty when it passed.
pub fn signature(summary: &Summary, projection: &Projection) -> Signature {
    let mut items: Vec<Failure> = Vec::new();
    for violation in &summary.invariants.violations {
        let item = Failure::Invariant(violation.invariant.to_owned());
        if !items.contains(&item) {
            items.push(item);
        }
    }
    if items.is_empty() {
        let calls = call_outcomes(projection);
        items = (summary.expectations.failures.iter())
            .map(|line| expectation(summary, &calls, line))
            .collect();
    }
    if items.is_empty()
        && let Some(message) = &summary.crashed
    {
        items.push(Failure::Crash(message.clone()));
    }
    if items.is_empty()
        && let Some(failure) = &summary.process_failed
    {
        items.push(Failure::Process(failure.summary()));
    }
    if items.is_empty()
        && let Some(limit) = summary.limit
    {
        items.push(Failure::Limit(limit.to_owned()));
    }
    Signature(items)
}

/// The item of one failed expectation line: a count with the calls that made it
/// differ, or the line alone.
fn expectation(summary: &Summary, calls: &BTreeMap<String, Vec<String>>, line: &str) -> Failure {
    let counted = (line.strip_prefix("counts["))
        .and_then(|rest| rest.split_once("]: expected "))
        .and_then(|(name, rest)| Some((name, rest.split_once(", got ")?.0.parse::<u64>().ok()?)));
    let Some((name, expected)) = counted else {
        return Failure::Expectation(line.to_owned());
    };
    let over = summary.outcomes.count(name) > expected;
    let counts = |names: &Vec<String>| names.iter().any(|n| n == name);
    let mut differ: BTreeMap<String, Vec<String>> = (calls.iter())
        .filter(|(_, names)| counts(names) == over)
        .map(|(call, names)| (call.clone(), names.clone()))
        .collect();
    if differ.is_empty() && !over {
        differ = (calls.iter())
            .filter(|(_, names)| counts(names))
            .map(|(call, names)| (call.clone(), names.clone()))
            .collect();
    }
    Failure::Count {
        line: line.to_owned(),
        name: name.to_owned(),
        over,
        calls: differ,
    }
}
