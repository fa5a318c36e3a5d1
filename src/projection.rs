//! The `userQuestions` projection (SPEC §4): a pure fold from the durable log's
//! events to the state of every question, and its snapshot cache on disk.
//!
//! It tells timed from legacy calls by the `schema` recorded in each request,
//! never by a missing `timeout`, and it uses no code of the legacy tool, so
//! removing that tool cannot change how old logs replay. Legacy calls only ever
//! reach final states across a process loss: they are never continued.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::event::{Event, EventKind, RawQuestions};
use crate::keyed::{Keyed, KeyedSet};
use crate::log::STATE_VERSION;
use crate::protocol::Text;
use crate::tool::{ErrorCode, ResultKind, Schema};

/// Where a question stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionState {
    /// At the broker, in its window or blocking.
    Open,
    /// Returned `pending` (or was open at a process loss, for a timed call): still
    /// answerable.
    Pending,
    /// Answered within its window or blocking wait.
    Answered,
    /// Answered after `pending`, as a user message.
    LateAnswered,
    /// Withdrawn after `pending`.
    Withdrawn,
    /// Settled as `ABORTED`.
    Aborted,
    /// Settled with another error.
    Errored,
    /// A legacy call open at a process loss: gone.
    LostOnRestart,
}

impl QuestionState {
    /// The state's name as logs and reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionState::Open => "open",
            QuestionState::Pending => "pending",
            QuestionState::Answered => "answered",
            QuestionState::LateAnswered => "late_answered",
            QuestionState::Withdrawn => "withdrawn",
            QuestionState::Aborted => "aborted",
            QuestionState::Errored => "errored",
            QuestionState::LostOnRestart => "lost_on_restart",
        }
    }
}

/// One question (a tool call that reached the broker) as the log tells it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuestionRecord {
    /// The calling agent.
    pub agent: Text,
    /// The recorded schema: the only thing that tells timed from legacy.
    pub schema: Schema,
    /// `seq` of its `request` event.
    pub request_seq: u64,
    /// When the broker received it, in seconds.
    #[serde(default)]
    pub requested_t: f64,
    /// The effective window (seconds, -1 blocking; none for legacy). Read it
    /// with [`QuestionRecord::window_s`].
    #[serde(rename = "window_s")]
    pub window: Window,
    /// Where it stands.
    pub state: QuestionState,
    /// How it settled: the result text, the late answer, or the withdrawal
    /// reason; none while it waits or is pending (the pending text is
    /// `ToolResult::pending` of its callId, not kept per question). A late
    /// answer's text is the same `Arc` as `message`, not a copy.
    pub settled: Option<Arc<str>>,
    /// `seq` of the event that put it in its state.
    pub seq: u64,
    /// Its first tool result, and when (none while it waits, and none for a call
    /// open at a process loss).
    #[serde(default, with = "first_result")]
    pub first: Option<(ResultKind, f64)>,
    /// It returned `pending`, or was a timed call open at a process loss.
    #[serde(default)]
    pub went_pending: bool,
    /// The `questions` text exactly as the model sent it, kept while a timed
    /// question can still be re-offered (a restart restores it from this text).
    #[serde(default, with = "raw_text", skip_serializing_if = "Option::is_none")]
    pub questions: Option<RawQuestions>,
    /// The user message decided for the agent (late answer or withdrawal), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Arc<str>>,
    /// Whether that message reached the agent (SPEC §3.9: exactly once across a loss).
    #[serde(default)]
    pub delivered: bool,
    /// The answerer that owns it (its place in [`Projection::answerers`]), or
    /// [`NO_OWNER`]: what a recovery needs to tell whether a batch whose verdict
    /// the crash cut off would have been taken. A `u32` in the record's padding.
    #[serde(default = "no_owner", skip_serializing_if = "is_no_owner")]
    pub owner: u32,
    /// Its agent's turn when it asked ([`AgentRecord::turn`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turn: u32,
}

impl QuestionRecord {
    /// The effective window (seconds, -1 blocking; none for legacy).
    pub fn window_s(&self) -> Option<f64> {
        self.window.get()
    }
}

/// A window in seconds, or none: NaN for none, 8 bytes where an `Option<f64>`
/// takes 16 (room in the record for its owner and turn). Written as the
/// `Option`: a number or `null`.
#[derive(Clone, Copy, Debug)]
pub struct Window(f64);

impl Window {
    /// `window`, kept.
    pub fn new(window: Option<f64>) -> Window {
        Window(window.unwrap_or(f64::NAN))
    }

    /// The window, if any.
    pub fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }
}

impl PartialEq for Window {
    fn eq(&self, other: &Window) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for Window {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Window, D::Error> {
        Option::<f64>::deserialize(d).map(Window::new)
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// [`QuestionRecord::owner`] of a question no answerer owns.
pub const NO_OWNER: u32 = u32::MAX;

fn no_owner() -> u32 {
    NO_OWNER
}

fn is_no_owner(owner: &u32) -> bool {
    *owner == NO_OWNER
}

/// A batch the log records with no verdict after it: the crash cut the broker's
/// step between the `answer` line and its result, late answer or refusal (SPEC
/// §4.1). A recovery settles it ([`crate::restart::cut_short`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnjudgedBatch {
    /// The call.
    #[serde(rename = "callId")]
    pub call_id: Text,
    /// The answerer that submitted it.
    pub answerer: Text,
    /// The batch as submitted.
    pub batch: Arc<serde_json::Value>,
    /// Why the broker refused it whatever it held, as the log stood when it
    /// arrived (SPEC §3.2, checked in the broker's order: `owner_dead`, then
    /// `unknown`, `withdrawn` or `settled` for a call not open, then
    /// `not_owner`); none when it came from the live owner of an open call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

/// A call settled by its arguments alone (`INVALID_ARGUMENTS`): it never reached
/// the broker, so it has a result and no request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RejectedCall {
    /// The calling agent.
    pub agent: String,
    /// What the model got: `"answers"`, `"pending"` or the error code.
    pub outcome: String,
    /// The result text.
    pub result: String,
    /// When.
    pub t: f64,
}

/// An agent as the log tells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// The agent that spawned it, if it was spawned as a child (the event's
    /// name, shared).
    pub owner: Option<Text>,
    /// Its durable lineage.
    pub lineage: Option<Text>,
    /// Whether it is live (spawned and not stopped).
    pub live: bool,
    /// Tool calls it made so far (its callId counter).
    pub calls_made: u64,
    /// The user messages it received, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Arc<str>>,
    /// Its current turn: how many `new_turn`s it started since its spawn (SPEC
    /// §3.8). Every turn of a child derives from its owner's turn
    /// `base_turn`, as the broker's turn chains do.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turn: u32,
    /// Its owner's turn when it was spawned (none without an owner).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub base_turn: u32,
    /// 1 + the last of its turns a `cancel` fired; 0: none fired.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fired: u32,
}

/// The folded state of a log.
///
/// Besides the records it keeps two indexes, derived from them and never
/// written: the calls not settled yet and the messages decided and not
/// received, so a process loss and a restart cost what is open, not every
/// question the log ever held (SPEC §6 "Cost"). A deserialised projection
/// rebuilds them (from its stored form).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Stored")]
pub struct Projection {
    /// Every question, by callId (the callId and agent name the log's events
    /// carry, shared, not copied per record). Found by hash at each event, read
    /// in callId order ([`Keyed`]). Boxed: a table keeps up to half its slots
    /// empty, and an empty slot of a 144-byte record costs more than the pointer.
    pub questions: Keyed<Box<QuestionRecord>>,
    /// Every call refused for its arguments, by callId.
    #[serde(default)]
    pub rejected: BTreeMap<String, RejectedCall>,
    /// Every agent, by name (found by hash, read in name order).
    pub agents: Keyed<AgentRecord>,
    /// `seq` of the last event folded.
    pub seq: u64,
    /// Every answerer that ever owned a question, in the order first seen (what
    /// [`QuestionRecord::owner`] indexes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answerers: Vec<Text>,
    /// Batches recorded with no verdict yet: empty but for the instant between
    /// an `answer` line and its verdict (a snapshot is never taken there, a
    /// crash may be).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<UnjudgedBatch>,
    /// The answerers that died since the last process loss (SPEC §3.5: dead
    /// for the rest of that life).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub dead: BTreeSet<Text>,
    /// The turns of an agent a `cancel` fired before its last fired one (which
    /// [`AgentRecord::fired`] holds), in increasing order (a turn only grows):
    /// only agents whose turns fired more than once have an entry. A child
    /// derives its turns from the turn its owner was in at its spawn, which
    /// may be any of them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fired_before: BTreeMap<Text, Vec<u32>>,
    /// [`Self::answerers`] by name.
    #[serde(skip)]
    answerer_ix: FxHashMap<Text, u32>,
    /// Questions open or pending, by callId.
    #[serde(skip)]
    unsettled: KeyedSet,
    /// Questions whose user message was decided and not received, by callId.
    #[serde(skip)]
    unreceived: KeyedSet,
}

/// A projection as it is written: its records without the indexes, which
/// [`Projection`] rebuilds on the way in.
#[derive(Deserialize)]
struct Stored {
    questions: Keyed<Box<QuestionRecord>>,
    #[serde(default)]
    rejected: BTreeMap<String, RejectedCall>,
    agents: Keyed<AgentRecord>,
    seq: u64,
    #[serde(default)]
    answerers: Vec<Text>,
    #[serde(default)]
    unjudged: Vec<UnjudgedBatch>,
    #[serde(default)]
    dead: BTreeSet<Text>,
    #[serde(default)]
    fired_before: BTreeMap<Text, Vec<u32>>,
}

impl From<Stored> for Projection {
    fn from(stored: Stored) -> Projection {
        let unsettled = stored
            .questions
            .iter()
            .filter(|(_, q)| matches!(q.state, QuestionState::Open | QuestionState::Pending))
            .map(|(id, _)| id.clone())
            .collect();
        let unreceived = stored
            .questions
            .iter()
            .filter(|(_, q)| q.message.is_some() && !q.delivered)
            .map(|(id, _)| id.clone())
            .collect();
        let answerer_ix = (stored.answerers.iter().enumerate())
            .map(|(ix, name)| (name.clone(), ix as u32))
            .collect();
        Projection {
            questions: stored.questions,
            rejected: stored.rejected,
            agents: stored.agents,
            seq: stored.seq,
            answerers: stored.answerers,
            unjudged: stored.unjudged,
            dead: stored.dead,
            fired_before: stored.fired_before,
            answerer_ix,
            unsettled,
            unreceived,
        }
    }
}

impl Projection {
    /// Folds `events` from an empty state.
    pub fn fold<'a>(events: impl IntoIterator<Item = &'a Event>) -> Projection {
        let mut projection = Projection::default();
        for event in events {
            projection.apply(event);
        }
        projection
    }

    /// Folds one more event.
    pub fn apply(&mut self, event: &Event) {
        self.seq = event.seq;
        let seq = event.seq;
        if !self.unjudged.is_empty() {
            self.judged(&event.kind);
        }
        match &event.kind {
            EventKind::Spawn {
                agent,
                owner,
                lineage,
            } => self.spawned(agent, owner.as_ref(), lineage.as_ref()),
            EventKind::Stop { agent } => {
                if let Some(a) = self.agents.get_mut(agent) {
                    a.live = false;
                }
            }
            EventKind::Request { call_id, agent, .. } => {
                let turn = self.count_call(agent, call_id);
                self.request(&event.kind, (event.t, turn), seq);
            }
            EventKind::Result {
                call_id,
                agent,
                result,
                ..
            } => {
                self.count_call(agent, call_id);
                let kind = event.kind.result_kind().expect("a result event has a kind");
                self.result(call_id, agent, kind, result, event.t, seq);
            }
            EventKind::LateAnswer { call_id, message, .. } => {
                let (from, to) = (QuestionState::Pending, QuestionState::LateAnswered);
                self.close(call_id, (from, to), message.clone(), Some(message.clone()), seq);
            }
            EventKind::Withdraw {
                call_id,
                reason,
                message,
                ..
            } => {
                let (from, to) = (QuestionState::Pending, QuestionState::Withdrawn);
                let how = reason.as_str().into();
                self.close(call_id, (from, to), how, message.clone(), seq);
            }
            EventKind::UserMessage {
                call_id,
                agent,
                message,
            } => self.received(call_id, agent, message),
            EventKind::ProcessLoss { .. } => self.process_loss(seq),
            kind => self.follow(kind),
        }
    }

    /// `agent` (re)started, owned by `owner` or a root: its turns derive from
    /// its owner's turn now; a restart keeps its callId counter and messages.
    fn spawned(&mut self, agent: &Text, owner: Option<&Text>, lineage: Option<&Text>) {
        let previous = self.agents.remove(agent);
        // Its turns count from 0 again: the turns that fired were another life's.
        self.fired_before.remove(agent);
        let base_turn = owner.and_then(|o| self.agents.get(o)).map_or(0, |o| o.turn);
        let record = AgentRecord {
            owner: owner.cloned(),
            lineage: lineage.cloned(),
            live: true,
            calls_made: previous.as_ref().map_or(0, |a| a.calls_made),
            messages: previous.map(|a| a.messages).unwrap_or_default(),
            turn: 0,
            base_turn,
            fired: 0,
        };
        self.agents.insert(agent.clone(), record);
    }

    /// What a recovery needs besides the questions' states: turns and their
    /// signals, who owns what, who died, the batch awaiting its verdict.
    fn follow(&mut self, kind: &EventKind) {
        match kind {
            EventKind::NewTurn { agent } => {
                if let Some(a) = self.agents.get_mut(agent) {
                    a.turn = a.turn.saturating_add(1);
                }
            }
            EventKind::Cancel { agent } => {
                if let Some(a) = self.agents.get_mut(agent) {
                    let fired = a.turn.saturating_add(1);
                    if a.fired != 0 && a.fired != fired {
                        let before = self.fired_before.entry(agent.clone()).or_default();
                        before.push(a.fired - 1);
                    }
                    a.fired = fired;
                }
            }
            EventKind::Accept {
                call_id, answerer, ..
            } => self.accepted(call_id, answerer),
            // Only an answerer's death takes a call from its owner; the other
            // declines come from an answerer that was offered it.
            EventKind::Decline {
                call_id,
                answerer,
                reason,
                ..
            } if reason == "dead" => self.owner_died(call_id, answerer),
            EventKind::Answer {
                call_id,
                answerer,
                batch,
                ..
            } => self.submitted(call_id, answerer, batch),
            EventKind::Crash { answerer, .. } => {
                self.dead.insert(answerer.clone());
            }
            _ => {}
        }
    }

    /// `answerer` owns the call now.
    fn accepted(&mut self, call_id: &str, answerer: &Text) {
        let next = self.answerers.len() as u32;
        let ix = *self.answerer_ix.entry(answerer.clone()).or_insert(next);
        if ix == next {
            self.answerers.push(answerer.clone());
        }
        if let Some(q) = self.questions.get_mut(call_id) {
            q.owner = ix;
        }
    }

    /// `answerer` died: a call it owned has no owner.
    fn owner_died(&mut self, call_id: &str, answerer: &str) {
        let Some(&ix) = self.answerer_ix.get(answerer) else {
            return;
        };
        if let Some(q) = self.questions.get_mut(call_id).filter(|q| q.owner == ix) {
            q.owner = NO_OWNER;
        }
    }

    /// A batch arrived; its verdict is the next event about its call.
    fn submitted(&mut self, call_id: &Text, answerer: &Text, batch: &Arc<serde_json::Value>) {
        let owner = self.answerer_ix.get(&**answerer).copied();
        let refusal = match self.questions.get(call_id) {
            _ if self.dead.contains(answerer) => Some("owner_dead"),
            None => Some("unknown"),
            Some(q) => match q.state {
                QuestionState::Open | QuestionState::Pending if Some(q.owner) == owner => None,
                QuestionState::Open | QuestionState::Pending => Some("not_owner"),
                QuestionState::Withdrawn => Some("withdrawn"),
                QuestionState::LostOnRestart => Some("unknown"),
                _ => Some("settled"),
            },
        };
        self.unjudged.push(UnjudgedBatch {
            call_id: call_id.clone(),
            answerer: answerer.clone(),
            batch: batch.clone(),
            refusal: refusal.map(str::to_owned),
        });
    }

    /// The event after a batch about its call is that batch's verdict (SPEC
    /// §3.2): the batch is judged.
    fn judged(&mut self, kind: &EventKind) {
        if matches!(kind, EventKind::Answer { .. }) {
            return;
        }
        if let Some(call_id) = kind.call_id() {
            self.unjudged.retain(|b| *b.call_id != *call_id);
        }
    }

    /// A request at `t` in its agent's turn `turn`.
    fn request(&mut self, kind: &EventKind, (t, turn): (f64, u32), seq: u64) {
        let EventKind::Request {
            call_id,
            agent,
            schema,
            window_s,
            questions,
            questions_text,
            ..
        } = kind
        else {
            return;
        };
        let questions = match questions_text {
            Some(text) => RawQuestions::new(text).ok(),
            None => Some(questions.clone()),
        };
        let record = QuestionRecord {
            agent: agent.clone(),
            schema: *schema,
            request_seq: seq,
            requested_t: t,
            window: Window::new(*window_s),
            state: QuestionState::Open,
            settled: None,
            seq,
            first: None,
            went_pending: false,
            questions: questions.filter(|_| *schema == Schema::Timed),
            message: None,
            delivered: false,
            owner: NO_OWNER,
            turn,
        };
        self.unsettled.insert(call_id.clone());
        self.questions.insert(call_id.clone(), Box::new(record));
    }

    fn result(&mut self, call_id: &str, agent: &str, kind: ResultKind, text: &str, t: f64, seq: u64) {
        let Some(question) = self.questions.get_mut(call_id) else {
            self.rejected
                .entry(call_id.to_owned())
                .or_insert_with(|| RejectedCall {
                    agent: agent.to_owned(),
                    outcome: kind.as_str().to_owned(),
                    result: text.to_owned(),
                    t,
                });
            return;
        };
        if question.state != QuestionState::Open {
            return;
        }
        question.first = Some((kind, t));
        question.state = match kind {
            ResultKind::Answers => QuestionState::Answered,
            ResultKind::Pending => QuestionState::Pending,
            ResultKind::Error(ErrorCode::Aborted) => QuestionState::Aborted,
            ResultKind::Error(_) => QuestionState::Errored,
        };
        question.went_pending = kind == ResultKind::Pending;
        // A pending result's text is the constant message with this callId
        // (`ToolResult::pending`): it is not copied per question; the closure
        // (late answer, withdrawal) fills `settled` in.
        question.settled = (kind != ResultKind::Pending).then(|| text.into());
        question.seq = seq;
        if question.state != QuestionState::Pending {
            question.questions = None;
            self.unsettled.remove(call_id);
        }
    }

    /// Every question open at a process loss: a timed one is pending from the
    /// restart on, a legacy one is lost.
    fn process_loss(&mut self, seq: u64) {
        self.dead.clear();
        let mut lost = Vec::new();
        for call_id in self.unsettled.iter() {
            let question = self
                .questions
                .get_mut(call_id)
                .expect("an unsettled question is recorded");
            // Everything in memory dies: the answerers own nothing any more.
            question.owner = NO_OWNER;
            if question.state != QuestionState::Open {
                continue;
            }
            question.seq = seq;
            match question.schema {
                Schema::Timed => {
                    question.state = QuestionState::Pending;
                    question.went_pending = true;
                }
                Schema::Legacy => {
                    question.settled = Some("process_loss".into());
                    question.state = QuestionState::LostOnRestart;
                    lost.push(call_id.clone());
                }
            }
        }
        for call_id in lost {
            self.unsettled.remove(&call_id);
        }
    }

    /// A pending call closed: its new state, and the message decided for its agent.
    fn close(
        &mut self,
        call_id: &str,
        (from, to): (QuestionState, QuestionState),
        how: Arc<str>,
        message: Option<Arc<str>>,
        seq: u64,
    ) {
        let Some(q) = self.transition(call_id, from, to, how, seq) else {
            return;
        };
        let undelivered = message.is_some() && !q.delivered;
        q.message = message;
        if undelivered && let Some((call_id, _)) = self.questions.get_key_value(call_id) {
            self.unreceived.insert(call_id.clone());
        }
    }

    /// A user message reached its agent.
    fn received(&mut self, call_id: &str, agent: &str, message: &Arc<str>) {
        if let Some(q) = self.questions.get_mut(call_id) {
            q.delivered = true;
            self.unreceived.remove(call_id);
        }
        if let Some(a) = self.agents.get_mut(agent) {
            // Room for one at the first: most agents receive one message, and
            // a first push makes room for four (64 bytes an agent).
            if a.messages.capacity() == 0 {
                a.messages.reserve_exact(1);
            }
            a.messages.push(message.clone());
        }
    }

    /// Counts the call in its agent's callId counter; the agent's turn.
    fn count_call(&mut self, agent: &str, call_id: &str) -> u32 {
        let n = call_id
            .rsplit_once('/')
            .and_then(|(_, n)| n.parse::<u64>().ok())
            .unwrap_or(0);
        let a = self.agents.get_mut(agent);
        a.map_or(0, |a| {
            a.calls_made = a.calls_made.max(n);
            a.turn
        })
    }

    fn transition(
        &mut self,
        call_id: &str,
        from: QuestionState,
        to: QuestionState,
        how: Arc<str>,
        seq: u64,
    ) -> Option<&mut QuestionRecord> {
        let question = self.questions.get_mut(call_id).filter(|q| q.state == from)?;
        self.unsettled.remove(call_id);
        question.state = to;
        question.settled = Some(how);
        question.seq = seq;
        question.questions = None;
        Some(question)
    }

    /// Timed questions still answerable (open or pending): what a restart re-offers.
    pub fn answerable(&self) -> impl Iterator<Item = (&Text, &QuestionRecord)> {
        self.unsettled().filter(|(_, q)| q.schema == Schema::Timed)
    }

    /// Whether `agent` is a live child of a live owner: a caller the broker
    /// refuses as `DELEGATED_CALLER` (SPEC §3.1; an owner that stopped left its
    /// children roots).
    pub fn is_delegated(&self, agent: &str) -> bool {
        let owner = self
            .agents
            .get(agent)
            .filter(|a| a.live)
            .and_then(|a| a.owner.as_ref());
        owner.is_some_and(|owner| self.agents.get(owner).is_some_and(|o| o.live))
    }

    /// Whether the turn `turn` of `agent`, or a turn it derives from, fired
    /// (SPEC §3.8): one walk up the spawn chain, as the broker's turn chains.
    pub fn turn_fired(&self, agent: &str, turn: u32) -> bool {
        let (mut name, mut turn) = (agent, turn);
        while let Some(a) = self.agents.get(name) {
            let before = || (self.fired_before.get(name)).is_some_and(|t| t.binary_search(&turn).is_ok());
            if a.fired == turn.saturating_add(1) || before() {
                return true;
            }
            let Some(owner) = &a.owner else {
                return false;
            };
            (name, turn) = (owner, a.base_turn);
        }
        false
    }

    /// Every question open or pending, by callId (from the index: what is open,
    /// not every question of the log).
    pub fn unsettled(&self) -> impl Iterator<Item = (&Text, &QuestionRecord)> {
        self.unsettled.iter().map(|id| (id, &*self.questions[id]))
    }

    /// User messages decided and not yet received, by callId (SPEC §3.9).
    pub fn undelivered(&self) -> impl Iterator<Item = (&Text, &QuestionRecord, &Arc<str>)> {
        self.unreceived.iter().filter_map(|id| {
            let q = &*self.questions[id];
            q.message.as_ref().map(|m| (id, q, m))
        })
    }

    /// The calls a broker would hold open in this state: callId → `"waiting"`
    /// (open) or `"pending"`, as [`crate::protocol::BrokerStatus`] reports them.
    pub fn open_calls(&self) -> BTreeMap<String, &'static str> {
        self.unsettled()
            .filter_map(|(id, q)| match q.state {
                QuestionState::Open => Some((id.to_string(), "waiting")),
                QuestionState::Pending => Some((id.to_string(), "pending")),
                _ => None,
            })
            .collect()
    }
}

/// Serde for the kept questions text: the exact string.
mod raw_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::event::RawQuestions;

    pub fn serialize<S: Serializer>(raw: &Option<RawQuestions>, s: S) -> Result<S::Ok, S::Error> {
        match raw {
            Some(raw) => s.serialize_some(raw.text()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RawQuestions>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => RawQuestions::new(&text)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

/// Serde for the first result: `["pending", 5.0]`.
mod first_result {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::tool::ResultKind;

    pub fn serialize<S: Serializer>(first: &Option<(ResultKind, f64)>, s: S) -> Result<S::Ok, S::Error> {
        match first {
            Some((kind, t)) => s.serialize_some(&(kind.as_str(), t)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(ResultKind, f64)>, D::Error> {
        match Option::<(String, f64)>::deserialize(d)? {
            Some((kind, t)) => ResultKind::parse(&kind)
                .map(|k| Some((k, t)))
                .ok_or_else(|| serde::de::Error::custom(format!("unknown outcome {kind:?}"))),
            None => Ok(None),
        }
    }
}

/// A projection snapshot as cached on disk: the state, the code's `stateVersion`
/// when it was written, and how much of which log it folded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The projection's state version that wrote it.
    pub state_version: u32,
    /// The scenario and seed of the log it folded (from the log's header).
    pub log: (String, u64),
    /// [`events_digest`] of the events it folded: two logs may share a header (a
    /// real-clock rerun, a rerun of an edited scenario), so the header alone does
    /// not tell whether the snapshot belongs to this log.
    pub events_digest: String,
    /// The folded state.
    pub projection: Projection,
}

/// The SHA-256, in hex, of `events` as the log's JSON lines.
pub fn events_digest(events: &[Event]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for event in events {
        hasher.update(serde_json::to_vec(event).expect("an event serialises"));
        hasher.update(b"\n");
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// How a snapshot cache was used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheUse {
    /// No cache was there (or it was unreadable): folded from the log.
    Folded,
    /// The cache was from another `stateVersion` or log: discarded and refolded.
    Refolded,
    /// The cache was used, and only the events after it folded.
    Reused,
}

/// The projection of `events`, using the snapshot at `cache` when its
/// `stateVersion` is the code's and it belongs to the same log (the same header,
/// and the events it folded are a prefix of `events`), then writing the fresh
/// snapshot back. A cache from another `stateVersion` or log is discarded.
pub fn fold_with_cache(
    cache: &Path,
    log: (&str, u64),
    events: &[Event],
) -> std::io::Result<(Projection, CacheUse)> {
    let cached: Option<Snapshot> = crate::log::read_bytes(cache)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let (mut projection, usage) = match cached {
        Some(s)
            if s.state_version == STATE_VERSION
                && s.log.0 == log.0
                && s.log.1 == log.1
                && s.projection.seq as usize <= events.len()
                && s.events_digest == events_digest(&events[..s.projection.seq as usize]) =>
        {
            (s.projection, CacheUse::Reused)
        }
        Some(_) => (Projection::default(), CacheUse::Refolded),
        None => (Projection::default(), CacheUse::Folded),
    };
    for event in &events[projection.seq as usize..] {
        projection.apply(event);
    }
    let snapshot = Snapshot {
        state_version: STATE_VERSION,
        log: (log.0.to_owned(), log.1),
        events_digest: events_digest(events),
        projection,
    };
    std::fs::write(cache, serde_json::to_string(&snapshot)?)?;
    Ok((snapshot.projection, usage))
}

#[cfg(test)]
mod tests {
    /// A record per question and one per agent, for every call and agent of a
    /// run: what they weigh is memory by the call (SPEC §6 "Cost").
    #[test]
    fn records_keep_their_size() {
        assert_eq!(std::mem::size_of::<super::QuestionRecord>(), 128);
        // 80 while a name was an `Arc<str>`, whose pointer left `None` a
        // niche; a `Text` holds a short name in place instead (no allocation
        // of 32 bytes a name, and none to read), and its `Option` takes 8 more.
        assert_eq!(std::mem::size_of::<super::AgentRecord>(), 96);
    }
}
