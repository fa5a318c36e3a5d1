//! How the calls of a run settled (SPEC §6 `outcomes`), from the projection's
//! states: every call counted once, by how it first settled.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::projection::{Projection, QuestionRecord, QuestionState};
use crate::tool::ResultKind;

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
        let (first, then) = settled_as(question);
        match first {
            "answered" => self.answered += 1,
            "pending" => self.pending += 1,
            "lost_on_restart" => self.lost_on_restart += 1,
            "open" => self.open += 1,
            code => self.error(code),
        }
        match then {
            Some("late_answered") => self.late_answered += 1,
            Some("withdrawn") => self.withdrawn += 1,
            Some(_) => self.pending_open += 1,
            None => {}
        }
    }

    fn error(&mut self, code: &str) {
        *self.errors.entry(code.to_owned()).or_insert(0) += 1;
    }
}

/// How one call counts in [`Outcomes`]: the outcome it first settled as
/// (`answered`, `pending`, an error code, `lost_on_restart`, `open`) and, for a
/// pending call, how it closed (`late_answered`, `withdrawn`, `pending_open`).
pub fn settled_as(question: &QuestionRecord) -> (&'static str, Option<&'static str>) {
    if question.went_pending {
        let then = match question.state {
            QuestionState::LateAnswered => "late_answered",
            QuestionState::Withdrawn => "withdrawn",
            _ => "pending_open",
        };
        return ("pending", Some(then));
    }
    let first = match (question.state, question.first) {
        (QuestionState::LostOnRestart, _) => "lost_on_restart",
        (_, Some((ResultKind::Answers, _))) => "answered",
        (_, Some((ResultKind::Error(code), _))) => code.as_str(),
        _ => "open",
    };
    (first, None)
}

/// Every call of a run (rejected ones too) with the outcome names it counts
/// under in [`Outcomes`] ([`settled_as`]; a rejected call, its error code).
pub fn call_outcomes(projection: &Projection) -> BTreeMap<String, Vec<String>> {
    let mut calls = BTreeMap::new();
    for (call_id, question) in &projection.questions {
        let (first, then) = settled_as(question);
        let names = std::iter::once(first).chain(then).map(str::to_owned).collect();
        calls.insert(call_id.to_string(), names);
    }
    for (call_id, rejected) in &projection.rejected {
        calls.insert(call_id.clone(), vec![rejected.outcome.clone()]);
    }
    calls
}

/// How the calls settled, from the projection's states.
pub fn outcomes(projection: &Projection) -> Outcomes {
    let mut outcomes = Outcomes::default();
    // Counts: the order the records come in is not read.
    for question in projection.questions.values_unordered() {
        outcomes.question(question);
    }
    for rejected in projection.rejected.values() {
        outcomes.error(&rejected.outcome);
    }
    outcomes
}
