//! The invariant checker of SPEC §6: one pass over a run's events, as they come
//! ([`Checker::visit`]), with what is still owed settled at the end
//! ([`Checker::finish`]). Each violation names the invariant, the callId and the
//! `seq` of the event at fault.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::event::{Event, EventKind, RawQuestions};
use crate::projection::Projection;
use crate::tool::{ErrorCode, ResultKind, Schema};

pub use crate::sim::judge::violation::Violation;

/// Tolerance for "at that instant" and "within its window" on the virtual clock,
/// where both are exact: float rounding only.
pub const VIRTUAL_TOLERANCE_S: f64 = 1e-6;
/// The same on the real clock, where timers fire and messages arrive a little
/// late: lateness below this is measured (`lateness_s` in the summary), not a
/// violation.
pub const REAL_TOLERANCE_S: f64 = 0.1;

/// The invariants checked on every run, by name.
pub const INVARIANTS: [&str; 11] = [
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
    crate::sim::judge::protocol_check::PROTOCOL_CONFORMANCE,
];

#[derive(Default)]
struct CallInfo {
    agent: String,
    schema: Option<Schema>,
    questions: Option<RawQuestions>,
    window_s: Option<f64>,
    request_t: f64,
    /// Its first tool result: seq, time, kind.
    result: Option<(u64, f64, ResultKind)>,
    pending: bool,
    held_at: Option<f64>,
    holder: Option<String>,
    /// When a hold that died with its holder was released: the window's end moves
    /// there if it had passed.
    released_at: Option<f64>,
    /// A window or delegation violation was raised already (one per call).
    window_violated: bool,
    delegation_violated: bool,
    /// The request came from a live child owned by a live agent.
    delegated: bool,
    closed: bool,
    /// Open at a process loss: a legacy call must never settle after it; a timed
    /// one is pending and must be taken up again after the restart.
    lost: Option<u64>,
    survived: Option<u64>,
    taken_up: bool,
}

/// A decided user message owed to an agent.
struct Owed {
    seq: u64,
    agent: String,
    message: String,
}

/// The checker's state between events.
#[derive(Default)]
pub struct Checker {
    tolerance_s: f64,
    calls: HashMap<String, CallInfo>,
    owners: HashMap<String, Option<String>>,
    stopped: BTreeSet<String>,
    offered: BTreeSet<String>,
    /// The last batch submitted, owed its settlement or its refusal as the very
    /// next event about its call: (callId, answerer, seq).
    answer: Option<(String, String, u64)>,
    /// When each timed window ends: (end in ns, callId).
    deadlines: BTreeSet<(u64, String)>,
    /// User messages decided and not yet received, by callId.
    owed: BTreeMap<String, Vec<Owed>>,
    /// Turn signals and the calls waiting when they fired: (seq, t, callIds).
    cancels: Vec<(u64, f64, BTreeSet<String>)>,
    /// Whether a restart followed the last process loss.
    restarted: bool,
    last_seq: u64,
    protocol: crate::sim::judge::protocol_check::ProtocolChecker,
    violations: Vec<Violation>,
}

/// Checks every invariant over `events` and returns the violations, in order.
/// `broker_open` is the broker's final state (its open calls), when known: the
/// projection folded from the events must equal it.
pub fn check(
    events: &[Event],
    broker_open: Option<&BTreeMap<String, &'static str>>,
    tolerance_s: f64,
) -> Vec<Violation> {
    let mut checker = Checker::new(tolerance_s);
    for event in events {
        checker.visit(event);
    }
    let projection = broker_open.map(|_| Projection::fold(events));
    checker.finish(broker_open.zip(projection.as_ref()))
}

impl Checker {
    /// A checker that counts times within `tolerance_s` as one instant.
    pub fn new(tolerance_s: f64) -> Checker {
        Checker {
            tolerance_s,
            ..Checker::default()
        }
    }

    fn violate(&mut self, invariant: &'static str, call_id: &str, seq: u64, detail: String) {
        let call_id = (!call_id.is_empty()).then(|| call_id.to_owned());
        self.violations.push(Violation {
            invariant,
            call_id,
            seq,
            detail,
        });
    }

    /// Takes one more event.
    pub fn visit(&mut self, event: &Event) {
        let (seq, t) = (event.seq, event.t);
        self.last_seq = seq;
        self.protocol.visit(event);
        self.windows_passed(seq, t);
        self.account_answer(event);
        match &event.kind {
            EventKind::Spawn { agent, owner, .. } => {
                self.owners
                    .insert(agent.to_string(), owner.as_deref().map(str::to_owned));
                self.stopped.remove(&**agent);
            }
            EventKind::Stop { agent } => {
                self.stopped.insert(agent.to_string());
            }
            EventKind::Decline {
                call_id,
                answerer,
                reason,
                ..
            } if reason == "dead" => self.holder_died(call_id, answerer, t),
            EventKind::Request { .. } => self.request(&event.kind, seq, t),
            EventKind::Offer { call_id, .. } => self.offer(call_id, seq),
            EventKind::ProcessLoss { .. } => self.process_loss(seq),
            EventKind::Restart => self.restarted = true,
            EventKind::Hold {
                call_id, answerer, ..
            } => {
                if let Some(info) = self.calls.get_mut(&**call_id) {
                    info.held_at.get_or_insert(t);
                    info.holder = Some(answerer.to_string());
                }
            }
            EventKind::Result { call_id, .. } => {
                let kind = event.kind.result_kind().expect("a result has a kind");
                self.result(call_id, seq, t, kind, &event.kind);
            }
            EventKind::Answer {
                call_id, answerer, ..
            } => {
                self.answer = Some((call_id.to_string(), answerer.to_string(), seq));
            }
            EventKind::LateAnswer {
                call_id,
                answers,
                message,
                ..
            } => self.late_answer(call_id, seq, answers, message),
            EventKind::Withdraw { call_id, message, .. } => {
                self.after_loss(call_id, seq, false);
                self.closure(call_id, seq);
                if let Some(message) = message {
                    self.decided(call_id, seq, message);
                }
            }
            EventKind::UserMessage {
                call_id,
                agent,
                message,
            } => self.received(call_id, agent, message),
            EventKind::Cancel { agent } => self.cancel(agent, seq, t),
            _ => {}
        }
    }

    fn offer(&mut self, call_id: &str, seq: u64) {
        self.offered.insert(call_id.to_owned());
        self.after_loss(call_id, seq, false);
        if let Some(info) = self.calls.get_mut(call_id)
            && info.delegated
            && !info.delegation_violated
        {
            info.delegation_violated = true;
            let detail = "a delegated caller's request was offered".into();
            self.violate("delegated_never_offered", call_id, seq, detail);
        }
    }

    fn late_answer(&mut self, call_id: &str, seq: u64, answers: &[crate::tool::AnswerItem], message: &str) {
        self.closure(call_id, seq);
        let items = serde_json::to_value(answers).unwrap_or(Value::Null);
        self.well_formed(call_id, seq, &items);
        self.decided(call_id, seq, message);
    }

    fn request(&mut self, kind: &EventKind, seq: u64, t: f64) {
        let EventKind::Request {
            call_id,
            agent,
            schema,
            keyed,
            questions,
            questions_text,
            window_s,
            ..
        } = kind
        else {
            return;
        };
        if *schema == Schema::Legacy && *keyed {
            let detail = "a legacy request is keyed".into();
            self.violate("legacy_never_pending_or_keyed", call_id, seq, detail);
        }
        if self.calls.contains_key(&**call_id) {
            let detail = "a second request under the same callId".into();
            self.violate("exactly_once", call_id, seq, detail);
        }
        let questions = match questions_text {
            Some(text) => RawQuestions::new(text).ok(),
            None => Some(questions.clone()),
        };
        let delegated = self.is_delegated(agent);
        let info = CallInfo {
            agent: agent.to_string(),
            schema: Some(*schema),
            questions,
            window_s: *window_s,
            request_t: t,
            delegated,
            ..CallInfo::default()
        };
        if let (Schema::Timed, Some(w)) = (schema, window_s)
            && *w > 0.0
        {
            self.deadlines
                .insert((crate::protocol::nanos(t + w), call_id.to_string()));
        }
        self.calls.insert(call_id.to_string(), info);
    }

    /// A live child owned by a live agent (ownership ends when either stops).
    fn is_delegated(&self, agent: &str) -> bool {
        !self.stopped.contains(agent)
            && self
                .owners
                .get(agent)
                .and_then(Option::as_deref)
                .is_some_and(|owner| !self.stopped.contains(owner))
    }

    /// Every window that ended before `t` (and its tolerance) must have seen its
    /// call settle, unless it is held (SPEC §3.4).
    fn windows_passed(&mut self, seq: u64, t: f64) {
        let now = crate::protocol::nanos((t - self.tolerance_s).max(0.0));
        while let Some((end, call_id)) = self.deadlines.first().cloned().filter(|(end, _)| *end < now) {
            self.deadlines.pop_first();
            let Some(info) = self.calls.get_mut(&call_id) else {
                continue;
            };
            let waiting = info.result.is_none()
                && info.held_at.is_none()
                && info.lost.is_none()
                && info.survived.is_none();
            if waiting && !info.window_violated {
                info.window_violated = true;
                let (w, from) = (info.window_s.unwrap_or(0.0), info.request_t);
                let detail =
                    format!("still waiting at {t} s, past its window of {w} s from {from} s, unheld");
                self.violate("window_respected", &call_id, seq, detail);
            }
            let _ = end;
        }
    }

    /// The holder of a held call died: its hold dies with it, and the call is back
    /// in its window (SPEC §3.5): past it, it must go pending at once.
    fn holder_died(&mut self, call_id: &str, answerer: &str, t: f64) {
        let Some(info) = self.calls.get_mut(call_id) else {
            return;
        };
        if info.holder.as_deref() != Some(answerer) || info.result.is_some() {
            return;
        }
        info.held_at = None;
        info.holder = None;
        info.released_at = Some(t);
        if let Some(w) = info.window_s.filter(|w| *w > 0.0) {
            let end = (info.request_t + w).max(t);
            self.deadlines
                .insert((crate::protocol::nanos(end), call_id.to_owned()));
        }
    }

    /// The event right after a batch about its call must account for it: its
    /// settlement (answers, or the late answer) or its refusal to the sender.
    fn account_answer(&mut self, event: &Event) {
        let Some((call_id, answerer, seq)) = self.answer.take() else {
            return;
        };
        if event.kind.call_id() != Some(call_id.as_str()) {
            self.answer = Some((call_id, answerer, seq));
            return;
        }
        let accounted = match &event.kind {
            EventKind::Result { .. } => event.kind.result_kind() == Some(ResultKind::Answers),
            EventKind::LateAnswer { .. } => true,
            EventKind::Refused {
                answerer: a, what, ..
            } => **a == *answerer && what == "submit",
            _ => false,
        };
        if !accounted {
            let detail = format!("a batch from {answerer} was neither delivered nor refused");
            self.violate("no_answer_lost", &call_id, seq, detail);
        }
    }

    fn process_loss(&mut self, seq: u64) {
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

    /// Notes an event about a call after a process loss: a legacy call lost at it
    /// must not settle; a timed one must not return a tool result any more.
    fn after_loss(&mut self, call_id: &str, seq: u64, is_result: bool) {
        let restarted = self.restarted;
        let Some(info) = self.calls.get_mut(call_id) else {
            return;
        };
        if info.lost.is_some() {
            let detail = "a legacy call lost at a process loss went on".into();
            self.violate("timed_survive_loss_legacy_do_not", call_id, seq, detail);
        } else if info.survived.is_some() {
            if restarted {
                info.taken_up = true;
            }
            if is_result {
                let detail = "a tool result after the process loss".into();
                self.violate("timed_survive_loss_legacy_do_not", call_id, seq, detail);
            }
        }
    }

    fn result(&mut self, call_id: &str, seq: u64, t: f64, kind: ResultKind, event: &EventKind) {
        self.after_loss(call_id, seq, true);
        self.cancel_settled(call_id, seq, t);
        let Some(info) = self.calls.get_mut(call_id) else {
            // Invalid arguments settle before any request; nothing else does.
            if kind != ResultKind::Error(ErrorCode::InvalidArguments) {
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
        info.result = Some((seq, t, kind));
        info.pending = kind == ResultKind::Pending;
        let (schema, window_s, request_t, held_at) =
            (info.schema, info.window_s, info.request_t, info.held_at);
        let released_at = info.released_at.unwrap_or(0.0);
        let window_violated = info.window_violated;
        if info.pending && schema == Some(Schema::Legacy) {
            let detail = "a legacy call returned pending".into();
            self.violate("legacy_never_pending_or_keyed", call_id, seq, detail);
        }
        if let (Some(Schema::Timed), Some(w), false) = (schema, window_s, window_violated)
            && w > 0.0
            && t > (request_t + w).max(released_at) + self.tolerance_s
            && held_at.is_none_or(|h| h > request_t + w + self.tolerance_s)
        {
            let detail = format!("settled at {t} s, past its window of {w} s from {request_t} s, unheld");
            self.violate("window_respected", call_id, seq, detail);
        }
        if kind == ResultKind::Error(ErrorCode::DelegatedCaller)
            && self.offered.contains(call_id)
            && !self.calls.get(call_id).is_some_and(|c| c.delegation_violated)
        {
            let detail = "a delegated caller's request was offered".into();
            self.violate("delegated_never_offered", call_id, seq, detail);
        }
        if let (ResultKind::Answers, EventKind::Result { result, .. }) = (kind, event) {
            let value: Value = serde_json::from_str(result).unwrap_or(Value::Null);
            if let Some(items) = value.get("answers") {
                let items = items.clone();
                self.well_formed(call_id, seq, &items);
            }
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

    /// A user message was decided: it is owed to the call's agent, and a late
    /// answer must carry the call's callId and its questions exactly as asked.
    fn decided(&mut self, call_id: &str, seq: u64, message: &str) {
        let Some(info) = self.calls.get(call_id) else {
            return;
        };
        let owed = Owed {
            seq,
            agent: info.agent.clone(),
            message: message.to_owned(),
        };
        #[derive(serde::Deserialize)]
        struct Sent<'a> {
            kind: &'a str,
            #[serde(rename = "callId")]
            call_id: &'a str,
            #[serde(borrow)]
            questions: Option<&'a RawValue>,
        }
        let mismatch = match serde_json::from_str::<Sent>(message) {
            Ok(sent) if sent.kind == "answer_to_pending_question" => {
                sent.call_id != call_id
                    || sent.questions.map(RawValue::get) != info.questions.as_ref().map(RawQuestions::text)
            }
            Ok(sent) => sent.call_id != call_id,
            Err(_) => true,
        };
        if mismatch {
            let detail = "the message's callId or questions differ from the call's".into();
            self.violate("late_answer_reaches_caller", call_id, seq, detail);
        }
        self.owed.entry(call_id.to_owned()).or_default().push(owed);
    }

    fn received(&mut self, call_id: &str, agent: &str, message: &str) {
        if let Some(owed) = self.owed.get_mut(call_id)
            && let Some(at) = owed.iter().position(|o| o.agent == agent && o.message == message)
        {
            owed.remove(at);
        }
    }

    fn cancel(&mut self, agent: &str, seq: u64, t: f64) {
        let family = self.descendants(agent);
        // Calls that went pending, or were open at a process loss (pending from the
        // restart on), belong to no turn any more (SPEC §3.8, §3.9).
        let waiting = self
            .calls
            .iter()
            .filter(|(_, c)| c.result.is_none() && c.lost.is_none() && c.survived.is_none())
            .filter(|(_, c)| family.contains(&c.agent))
            .map(|(id, _)| id.clone())
            .collect();
        self.cancels.push((seq, t, waiting));
    }

    /// A result for `call_id`: it settles the cancels that were waiting for it,
    /// if it came at their instant.
    fn cancel_settled(&mut self, call_id: &str, seq: u64, t: f64) {
        let tolerance_s = self.tolerance_s;
        let mut late = Vec::new();
        for (cancel_seq, cancel_t, waiting) in &mut self.cancels {
            if waiting.remove(call_id) && (t - *cancel_t).abs() > tolerance_s {
                late.push((*cancel_seq, *cancel_t));
            }
        }
        for (cancel_seq, cancel_t) in late {
            let detail =
                format!("still waiting after the turn signal at {cancel_t} s (settled at seq {seq})");
            self.violate("turn_cancel_settles_descendants", call_id, cancel_seq, detail);
        }
    }

    fn well_formed(&mut self, call_id: &str, seq: u64, items: &Value) {
        let Some(info) = self.calls.get(call_id) else {
            return;
        };
        let value = info.questions.as_ref().map(RawQuestions::value);
        let questions = value
            .as_ref()
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let problem = match info.schema {
            Some(Schema::Timed) => timed_items_problem(questions, items),
            Some(Schema::Legacy) => legacy_items_problem(questions, items),
            None => None,
        };
        if let Some(problem) = problem {
            self.violate("answers_well_formed", call_id, seq, problem);
        }
    }

    fn descendants(&self, agent: &str) -> BTreeSet<String> {
        crate::sim::judge::protocol_check::family(&self.owners, agent)
    }

    /// Settles what is still owed and compares the folded projection with the
    /// broker's final state, when given. Returns every violation, by `seq`.
    pub fn finish(
        mut self,
        broker: Option<(&BTreeMap<String, &'static str>, &Projection)>,
    ) -> Vec<Violation> {
        self.owed_at_end();
        let protocol = std::mem::take(&mut self.protocol).finish();
        self.violations.extend(protocol);
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
        if let Some((broker_open, projection)) = broker {
            self.projection_matches(broker_open, projection);
        }
        // Calls are kept in a hash map: the order of violations must not depend on it.
        self.violations.sort_by(|a, b| {
            (a.seq, &a.call_id, a.invariant, &a.detail).cmp(&(b.seq, &b.call_id, b.invariant, &b.detail))
        });
        self.violations
    }

    fn owed_at_end(&mut self) {
        if let Some((call_id, answerer, seq)) = self.answer.take() {
            let detail = format!("a batch from {answerer} was neither delivered nor refused");
            self.violate("no_answer_lost", &call_id, seq, detail);
        }
        for (call_id, owed) in std::mem::take(&mut self.owed) {
            for o in owed {
                let detail = format!("no user message reached {}", o.agent);
                self.violate("late_answer_reaches_caller", &call_id, o.seq, detail);
            }
        }
        for (seq, t, waiting) in std::mem::take(&mut self.cancels) {
            for call_id in waiting {
                let detail = format!("still waiting after the turn signal at {t} s");
                self.violate("turn_cancel_settles_descendants", &call_id, seq, detail);
            }
        }
    }

    fn projection_matches(&mut self, broker_open: &BTreeMap<String, &'static str>, projection: &Projection) {
        let folded = projection.open_calls();
        let seq = self.last_seq;
        for (call_id, state) in &folded {
            if broker_open.get(call_id) != Some(state) {
                let broker = broker_open.get(call_id).copied().unwrap_or("closed");
                let detail = format!("the projection says {state}, the broker {broker}");
                self.violate("projection_matches_broker", call_id, seq, detail);
            }
        }
        for call_id in broker_open.keys().filter(|id| !folded.contains_key(*id)) {
            let detail = "open at the broker, closed in the projection".to_owned();
            self.violate("projection_matches_broker", call_id, seq, detail);
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
