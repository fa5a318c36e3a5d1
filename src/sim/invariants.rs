//! The invariant checker of SPEC §6: a pure pass over a run's event stream. Each
//! violation names the invariant, the callId and the `seq` of the event at fault.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use crate::event::{Event, EventKind};
use crate::projection::Projection;
use crate::tool::Schema;

/// Tolerance for "at that instant" and "within its window" on the virtual clock,
/// where both are exact: float rounding only.
pub const VIRTUAL_TOLERANCE_S: f64 = 1e-6;
/// The same on the real clock, where timers fire and messages arrive a little
/// late: lateness below this is measured (`lateness_s` in the summary), not a
/// violation.
pub const REAL_TOLERANCE_S: f64 = 0.1;

/// The invariants checked on every run, by name.
pub const INVARIANTS: [&str; 10] = [
    "exactly_once",
    "legacy_never_pending_or_keyed",
    "window_respected",
    "no_answer_lost",
    "delegated_never_offered",
    "turn_cancel_settles_descendants",
    "answers_well_formed",
    "late_answer_reaches_caller",
    "timed_survive_loss_legacy_do_not",
    "projection_matches_broker",
];

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// Which invariant.
    pub invariant: &'static str,
    /// The call it is about, if any.
    #[serde(rename = "callId")]
    pub call_id: Option<String>,
    /// The `seq` of the offending event.
    pub seq: u64,
    /// What was seen.
    pub detail: String,
}

impl std::fmt::Display for Violation {
    /// `invariant (callId X, seq N): detail`, as every report prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let call = self.call_id.as_deref().unwrap_or("-");
        write!(
            f,
            "{} (callId {call}, seq {}): {}",
            self.invariant, self.seq, self.detail
        )
    }
}

#[derive(Default)]
struct CallInfo {
    agent: String,
    schema: Option<Schema>,
    questions: Value,
    window_s: Option<f64>,
    request_t: f64,
    result: Option<(u64, f64, String, bool)>,
    pending: bool,
    held_at: Option<f64>,
    closed: bool,
    /// Open at a process loss: legacy calls must never settle after it; timed
    /// ones are pending and must be taken up again after the restart.
    lost: Option<u64>,
    survived: Option<u64>,
    taken_up: bool,
}

/// Checks every invariant over `events` and returns the violations, in order.
/// `broker_open` is the broker's final state (its open calls), when known: the
/// projection folded from the events must equal it.
pub fn check(
    events: &[Event],
    broker_open: Option<&BTreeMap<String, &'static str>>,
    tolerance_s: f64,
) -> Vec<Violation> {
    let mut checker = Checker {
        tolerance_s,
        ..Checker::default()
    };
    for (index, event) in events.iter().enumerate() {
        checker.visit(events, index, event);
    }
    checker.finish();
    if let Some(broker_open) = broker_open {
        let folded = Projection::fold(events).open_calls();
        let seq = events.last().map_or(0, |e| e.seq);
        for (call_id, state) in &folded {
            if broker_open.get(call_id) != Some(state) {
                let broker = broker_open.get(call_id).copied().unwrap_or("closed");
                let detail = format!("the projection says {state}, the broker {broker}");
                checker.violate("projection_matches_broker", call_id, seq, detail);
            }
        }
        for call_id in broker_open.keys().filter(|id| !folded.contains_key(*id)) {
            let detail = "open at the broker, closed in the projection".to_owned();
            checker.violate("projection_matches_broker", call_id, seq, detail);
        }
    }
    checker.violations.sort_by_key(|v| v.seq);
    checker.violations
}

#[derive(Default)]
struct Checker {
    calls: BTreeMap<String, CallInfo>,
    owners: BTreeMap<String, Option<String>>,
    offered: BTreeSet<String>,
    /// (cancel seq, cancel t, calls waiting at that moment)
    cancels: Vec<(u64, f64, Vec<String>)>,
    /// Whether a restart followed the last process loss.
    restarted: bool,
    /// How far apart two times may be and still count as one instant.
    tolerance_s: f64,
    violations: Vec<Violation>,
}

impl Checker {
    fn violate(&mut self, invariant: &'static str, call_id: &str, seq: u64, detail: String) {
        let call_id = (!call_id.is_empty()).then(|| call_id.to_owned());
        self.violations.push(Violation {
            invariant,
            call_id,
            seq,
            detail,
        });
    }

    fn visit(&mut self, events: &[Event], index: usize, event: &Event) {
        let (seq, t) = (event.seq, event.t);
        match &event.kind {
            EventKind::Spawn { agent, owner, .. } => {
                self.owners.insert(agent.clone(), owner.clone());
            }
            EventKind::Request {
                call_id,
                agent,
                schema,
                keyed,
                questions,
                window_s,
                ..
            } => {
                if *schema == Schema::Legacy && *keyed {
                    self.violate(
                        "legacy_never_pending_or_keyed",
                        call_id,
                        seq,
                        "a legacy request is keyed".into(),
                    );
                }
                if self.calls.contains_key(call_id) {
                    self.violate(
                        "exactly_once",
                        call_id,
                        seq,
                        "a second request under the same callId".into(),
                    );
                }
                let info = CallInfo {
                    agent: agent.clone(),
                    schema: Some(*schema),
                    questions: questions.clone(),
                    window_s: *window_s,
                    request_t: t,
                    ..CallInfo::default()
                };
                self.calls.insert(call_id.clone(), info);
            }
            EventKind::Offer { call_id, .. } => {
                self.offered.insert(call_id.clone());
                self.after_loss(call_id, seq, false);
            }
            EventKind::ProcessLoss { .. } => {
                for info in self.calls.values_mut() {
                    let open = info.result.is_none() || (info.pending && !info.closed);
                    match info.schema {
                        Some(Schema::Legacy) if info.result.is_none() => info.lost = Some(seq),
                        Some(Schema::Timed) if open => {
                            info.survived = Some(seq);
                            info.pending = true;
                            info.taken_up = false;
                        }
                        _ => {}
                    }
                }
                self.restarted = false;
            }
            EventKind::Restart => self.restarted = true,
            EventKind::Hold { call_id, .. } => {
                if let Some(info) = self.calls.get_mut(call_id) {
                    info.held_at.get_or_insert(t);
                }
            }
            EventKind::Result {
                call_id,
                result,
                is_error,
                ..
            } => self.result(call_id, seq, t, result, *is_error),
            EventKind::Answer {
                call_id, answerer, ..
            } => self.answer(events, index, call_id, answerer),
            EventKind::LateAnswer {
                call_id,
                answers,
                message,
                ..
            } => {
                self.closure(call_id, seq);
                let items = serde_json::to_value(answers).unwrap_or(Value::Null);
                self.well_formed(call_id, seq, &items);
                self.delivered(events, index, call_id, message);
            }
            EventKind::Withdraw { call_id, message, .. } => {
                self.after_loss(call_id, seq, false);
                self.closure(call_id, seq);
                if let Some(message) = message {
                    self.delivered(events, index, call_id, message);
                }
            }
            EventKind::Cancel { agent } => {
                let family = self.descendants(agent);
                // A call open at a process loss left its turn there: a legacy one
                // is gone, a timed one is pending (SPEC §3.8, §3.9). Neither has a
                // result, and neither may get one when a later turn is cancelled.
                let waiting = self
                    .calls
                    .iter()
                    .filter(|(_, c)| c.result.is_none() && c.lost.is_none() && c.survived.is_none())
                    .filter(|(_, c)| family.contains(&c.agent))
                    .map(|(id, _)| id.clone())
                    .collect();
                self.cancels.push((seq, t, waiting));
            }
            _ => {}
        }
    }

    /// Notes an event about a call after a process loss: a legacy call lost at it
    /// must not settle; a timed one must not return a tool result any more.
    fn after_loss(&mut self, call_id: &str, seq: u64, is_result: bool) {
        let restarted = self.restarted;
        let Some(info) = self.calls.get_mut(call_id) else {
            return;
        };
        if info.lost.is_some() {
            self.violate(
                "timed_survive_loss_legacy_do_not",
                call_id,
                seq,
                "a legacy call lost at a process loss went on".into(),
            );
        } else if info.survived.is_some() {
            if restarted {
                info.taken_up = true;
            }
            if is_result {
                self.violate(
                    "timed_survive_loss_legacy_do_not",
                    call_id,
                    seq,
                    "a tool result after the process loss".into(),
                );
            }
        }
    }

    fn result(&mut self, call_id: &str, seq: u64, t: f64, text: &str, is_error: bool) {
        self.after_loss(call_id, seq, true);
        let Some(info) = self.calls.get_mut(call_id) else {
            // Invalid arguments settle before any request; nothing else does.
            if !(is_error && text.contains("\"INVALID_ARGUMENTS\"")) {
                self.violate("exactly_once", call_id, seq, "a result without a request".into());
            }
            return;
        };
        if info.result.is_some() {
            self.violate(
                "exactly_once",
                call_id,
                seq,
                "a second result for the call".into(),
            );
            return;
        }
        info.result = Some((seq, t, text.to_owned(), is_error));
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let pending = value.get("pending") == Some(&Value::Bool(true));
        info.pending = pending;
        let (schema, window_s, request_t, held_at) =
            (info.schema, info.window_s, info.request_t, info.held_at);
        if pending && schema == Some(Schema::Legacy) {
            self.violate(
                "legacy_never_pending_or_keyed",
                call_id,
                seq,
                "a legacy call returned pending".into(),
            );
        }
        if let (Some(Schema::Timed), Some(w)) = (schema, window_s)
            && w > 0.0
            && t > request_t + w + self.tolerance_s
            && held_at.is_none_or(|h| h > request_t + w + self.tolerance_s)
        {
            self.violate(
                "window_respected",
                call_id,
                seq,
                format!("settled at {t} s, past its window of {w} s from {request_t} s, unheld"),
            );
        }
        if is_error && text.contains("\"DELEGATED_CALLER\"") && self.offered.contains(call_id) {
            self.violate(
                "delegated_never_offered",
                call_id,
                seq,
                "a delegated caller's request was offered".into(),
            );
        }
        if let Some(items) = value.get("answers") {
            let items = items.clone();
            self.well_formed(call_id, seq, &items);
        }
    }

    fn closure(&mut self, call_id: &str, seq: u64) {
        let Some(info) = self.calls.get_mut(call_id) else {
            self.violate("exactly_once", call_id, seq, "a closure without a request".into());
            return;
        };
        if !info.pending || info.closed {
            let why = if info.closed {
                "closed twice"
            } else {
                "closed without having gone pending"
            };
            self.violate("exactly_once", call_id, seq, format!("a pending call {why}"));
            return;
        }
        info.closed = true;
    }

    fn answer(&mut self, events: &[Event], index: usize, call_id: &str, answerer: &str) {
        let settled = events[index + 1..].iter().find_map(|e| match &e.kind {
            EventKind::Refused {
                call_id: c,
                answerer: a,
                what,
                ..
            } if c == call_id && a == answerer && what == "submit" => Some(true),
            EventKind::Result {
                call_id: c,
                is_error: false,
                ..
            }
            | EventKind::LateAnswer { call_id: c, .. }
                if c == call_id =>
            {
                Some(true)
            }
            _ => None,
        });
        if settled.is_none() {
            let seq = events[index].seq;
            self.violate(
                "no_answer_lost",
                call_id,
                seq,
                format!("a batch from {answerer} was neither delivered nor refused"),
            );
        }
    }

    fn delivered(&mut self, events: &[Event], index: usize, call_id: &str, message: &str) {
        let agent = self
            .calls
            .get(call_id)
            .map(|c| c.agent.clone())
            .unwrap_or_default();
        let reached = events[index + 1..].iter().any(|e| {
            matches!(&e.kind, EventKind::UserMessage { call_id: c, agent: a, message: m }
                if c == call_id && *a == agent && m == message)
        });
        let seq = events[index].seq;
        if !reached {
            self.violate(
                "late_answer_reaches_caller",
                call_id,
                seq,
                format!("no user message reached {agent}"),
            );
            return;
        }
        let questions = self
            .calls
            .get(call_id)
            .map(|c| c.questions.clone())
            .unwrap_or(Value::Null);
        let sent: Value = serde_json::from_str(message).unwrap_or(Value::Null);
        if sent.get("kind").and_then(Value::as_str) == Some("answer_to_pending_question")
            && (sent.get("questions") != Some(&questions)
                || sent.get("callId").and_then(Value::as_str) != Some(call_id))
        {
            self.violate(
                "late_answer_reaches_caller",
                call_id,
                seq,
                "the message's callId or questions differ".into(),
            );
        }
    }

    fn well_formed(&mut self, call_id: &str, seq: u64, items: &Value) {
        let Some(info) = self.calls.get(call_id) else {
            return;
        };
        let questions = info.questions.as_array().cloned().unwrap_or_default();
        let problem = match info.schema {
            Some(Schema::Timed) => timed_items_problem(&questions, items),
            Some(Schema::Legacy) => legacy_items_problem(&questions, items),
            None => None,
        };
        if let Some(problem) = problem {
            self.violate("answers_well_formed", call_id, seq, problem);
        }
    }

    fn descendants(&self, agent: &str) -> BTreeSet<String> {
        let mut family: BTreeSet<String> = BTreeSet::from([agent.to_owned()]);
        loop {
            let before = family.len();
            for (name, owner) in &self.owners {
                if owner.as_ref().is_some_and(|o| family.contains(o)) {
                    family.insert(name.clone());
                }
            }
            if family.len() == before {
                return family;
            }
        }
    }

    fn finish(&mut self) {
        if self.restarted {
            let forgotten: Vec<(String, u64)> = self
                .calls
                .iter()
                .filter(|(_, c)| c.survived.is_some() && !c.taken_up && !c.closed)
                .map(|(id, c)| (id.clone(), c.survived.unwrap_or(0)))
                .collect();
            for (call_id, seq) in forgotten {
                let detail = "an open timed question was not taken up again after the restart".to_owned();
                self.violate("timed_survive_loss_legacy_do_not", &call_id, seq, detail);
            }
        }
        for (seq, t, waiting) in std::mem::take(&mut self.cancels) {
            for call_id in waiting {
                let settled_t = self
                    .calls
                    .get(&call_id)
                    .and_then(|c| c.result.as_ref())
                    .map(|r| r.1);
                if settled_t.is_none_or(|s| (s - t).abs() > self.tolerance_s) {
                    self.violate(
                        "turn_cancel_settles_descendants",
                        &call_id,
                        seq,
                        format!("still waiting after the turn signal at {t} s"),
                    );
                }
            }
        }
    }
}

fn options_of(question: &Value) -> (Vec<&str>, bool) {
    let labels = question
        .get("options")
        .and_then(Value::as_array)
        .map(|os| {
            os.iter()
                .filter_map(|o| o.get("label").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    (labels, question.get("multiSelect") == Some(&Value::Bool(true)))
}

fn timed_items_problem(questions: &[Value], items: &Value) -> Option<String> {
    let items = items.as_array()?;
    if items.len() != questions.len() {
        return Some(format!(
            "{} answer items for {} questions",
            items.len(),
            questions.len()
        ));
    }
    for (question, item) in questions.iter().zip(items) {
        let id = question.get("id");
        if item.get("id") != id {
            return Some(format!("item {:?} out of question order", item.get("id")));
        }
        let (labels, multi) = options_of(question);
        let selected: Vec<&str> = item
            .get("selected")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_str).collect())?;
        if let Some(bad) = selected.iter().find(|s| !labels.contains(s)) {
            return Some(format!("label {bad:?} is not an option"));
        }
        if !multi && selected.len() > 1 {
            return Some("several labels for a single-select".into());
        }
    }
    None
}

fn legacy_items_problem(questions: &[Value], answers: &Value) -> Option<String> {
    let answers = answers.as_object()?;
    let texts: Vec<&str> = questions
        .iter()
        .filter_map(|q| q.get("question").and_then(Value::as_str))
        .collect();
    let keys: Vec<&str> = answers.keys().map(String::as_str).collect();
    (texts != keys).then(|| format!("answers for {keys:?}, questions {texts:?}"))
}
