//! What "fails the same way" means: a run's failure signature and the rule that
//! compares a candidate's with the original's.
//!
//! # The rule
//!
//! A run's **signature** is one kind of item, taken from its summary in this order:
//!
//! 1. the invariants it violated (names, each once, in report order), if any;
//! 2. else its failed expectations (each the whole line the report prints,
//!    `results[root/1]: expected …, got …`), if any;
//! 3. else its crash (the panic message), if it crashed;
//! 4. else its outside process's failure (who, and why), if one failed it;
//! 5. else the limit that stopped it (`virtual_s_max`, `events_max`), if one did;
//! 6. else nothing: the run passed.
//!
//! The original's **primary item** is the first item of its signature. A candidate
//! **fails the same way** when its own signature holds that item. So a candidate
//! that now violates an invariant fails differently from an expectation failure
//! (it found another bug), and an expectation fails the same way only with the
//! same actual value: a result that was `ABORTED` and is now `NO_ANSWERER`, or a
//! count that was 19 and is now 18, is another failure. Comparing the key alone
//! would let the shrinker remove the very call that produced the value (its result
//! becomes `null`, which still "fails") and end with an empty scenario.

use std::fmt;

use crate::sim::judge::summary::Summary;

/// One item of a failure signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// An invariant the run violated, by name.
    Invariant(String),
    /// A failed expectation: the report's whole line, key first.
    Expectation(String),
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
            Failure::Expectation(line) => line.split_once(": ").map_or(line.as_str(), |(key, _)| key),
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
        self.0.contains(item)
    }
}

/// The failure signature of a run's summary; empty when it passed.
pub fn signature(summary: &Summary) -> Signature {
    let mut items: Vec<Failure> = Vec::new();
    for violation in &summary.invariants.violations {
        let item = Failure::Invariant(violation.invariant.to_owned());
        if !items.contains(&item) {
            items.push(item);
        }
    }
    if items.is_empty() {
        items = (summary.expectations.failures.iter())
            .map(|line| Failure::Expectation(line.clone()))
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
