//! The `userQuestions` projection (SPEC §4): a pure fold from the durable log's
//! events to the state of every question, and its snapshot cache on disk.
//!
//! It tells timed from legacy calls by the `schema` recorded in each request,
//! never by a missing `timeout`, and it uses no code of the legacy tool, so
//! removing that tool cannot change how old logs replay. Legacy calls only ever
//! reach final states across a process loss: they are never continued.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{Event, EventKind};
use crate::log::STATE_VERSION;
use crate::tool::Schema;

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
    pub agent: String,
    /// The recorded schema: the only thing that tells timed from legacy.
    pub schema: Schema,
    /// `seq` of its `request` event, where its questions are recorded (the fold
    /// does not copy them: a restart reads them from the log).
    pub request_seq: u64,
    /// The effective window (seconds, -1 blocking; none for legacy).
    pub window_s: Option<f64>,
    /// Where it stands.
    pub state: QuestionState,
    /// How it settled: the result text, the late answer, or the withdrawal reason.
    pub settled: Option<String>,
    /// `seq` of the event that put it in its state.
    pub seq: u64,
}

/// An agent as the log tells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// The agent that spawned it, if it was spawned as a child.
    pub owner: Option<String>,
    /// Its durable lineage.
    pub lineage: Option<String>,
    /// Whether it is live (spawned and not stopped).
    pub live: bool,
    /// Tool calls it made so far (its callId counter).
    pub calls_made: u64,
}

/// The folded state of a log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// Every question, by callId.
    pub questions: BTreeMap<String, QuestionRecord>,
    /// Every agent, by name.
    pub agents: BTreeMap<String, AgentRecord>,
    /// `seq` of the last event folded.
    pub seq: u64,
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
        match &event.kind {
            EventKind::Spawn {
                agent,
                owner,
                lineage,
            } => {
                let calls_made = self.agents.get(agent).map_or(0, |a| a.calls_made);
                self.agents.insert(
                    agent.clone(),
                    AgentRecord {
                        owner: owner.clone(),
                        lineage: lineage.clone(),
                        live: true,
                        calls_made,
                    },
                );
            }
            EventKind::Stop { agent } => {
                if let Some(a) = self.agents.get_mut(agent) {
                    a.live = false;
                }
            }
            EventKind::Request {
                call_id,
                agent,
                schema,
                window_s,
                ..
            } => {
                self.count_call(agent, call_id);
                self.questions.insert(
                    call_id.clone(),
                    QuestionRecord {
                        agent: agent.clone(),
                        schema: *schema,
                        request_seq: seq,
                        window_s: *window_s,
                        state: QuestionState::Open,
                        settled: None,
                        seq,
                    },
                );
            }
            EventKind::Result {
                call_id,
                agent,
                result,
                is_error,
            } => {
                self.count_call(agent, call_id);
                let state = result_state(result, *is_error);
                self.transition(call_id, QuestionState::Open, state, result.clone(), seq);
            }
            EventKind::LateAnswer { call_id, message, .. } => {
                self.transition(
                    call_id,
                    QuestionState::Pending,
                    QuestionState::LateAnswered,
                    message.clone(),
                    seq,
                );
            }
            EventKind::Withdraw { call_id, reason, .. } => {
                self.transition(
                    call_id,
                    QuestionState::Pending,
                    QuestionState::Withdrawn,
                    reason.clone(),
                    seq,
                );
            }
            EventKind::ProcessLoss { .. } => {
                for question in self
                    .questions
                    .values_mut()
                    .filter(|q| q.state == QuestionState::Open)
                {
                    question.seq = seq;
                    question.state = match question.schema {
                        Schema::Timed => QuestionState::Pending,
                        Schema::Legacy => {
                            question.settled = Some("process_loss".to_owned());
                            QuestionState::LostOnRestart
                        }
                    };
                }
            }
            _ => {}
        }
    }

    fn count_call(&mut self, agent: &str, call_id: &str) {
        let n = call_id
            .rsplit_once('/')
            .and_then(|(_, n)| n.parse::<u64>().ok())
            .unwrap_or(0);
        if let Some(a) = self.agents.get_mut(agent) {
            a.calls_made = a.calls_made.max(n);
        }
    }

    fn transition(&mut self, call_id: &str, from: QuestionState, to: QuestionState, how: String, seq: u64) {
        if let Some(question) = self.questions.get_mut(call_id)
            && question.state == from
        {
            question.state = to;
            question.settled = Some(how);
            question.seq = seq;
        }
    }

    /// The questions of a call, as its request in `events` (the log this state was
    /// folded from) recorded them.
    pub fn questions_of<'a>(&self, events: &'a [Event], call_id: &str) -> Option<&'a Value> {
        let seq = self.questions.get(call_id)?.request_seq;
        match &events.get(usize::try_from(seq).ok()?.checked_sub(1)?)?.kind {
            EventKind::Request {
                call_id: c,
                questions,
                ..
            } if c == call_id => Some(questions),
            _ => None,
        }
    }

    /// Timed questions still answerable (open or pending): what a restart re-offers.
    pub fn answerable(&self) -> impl Iterator<Item = (&String, &QuestionRecord)> {
        self.questions.iter().filter(|(_, q)| {
            q.schema == Schema::Timed && matches!(q.state, QuestionState::Open | QuestionState::Pending)
        })
    }

    /// The calls a broker would hold open in this state: callId → `"waiting"`
    /// (open) or `"pending"`, as [`crate::broker::BrokerStatus`] reports them.
    pub fn open_calls(&self) -> BTreeMap<String, &'static str> {
        self.questions
            .iter()
            .filter_map(|(id, q)| match q.state {
                QuestionState::Open => Some((id.clone(), "waiting")),
                QuestionState::Pending => Some((id.clone(), "pending")),
                _ => None,
            })
            .collect()
    }
}

fn result_state(result: &str, is_error: bool) -> QuestionState {
    if is_error {
        return if result.contains("\"code\":\"ABORTED\"") {
            QuestionState::Aborted
        } else {
            QuestionState::Errored
        };
    }
    if result.starts_with("{\"pending\":true") {
        QuestionState::Pending
    } else {
        QuestionState::Answered
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
    let cached: Option<Snapshot> = std::fs::read_to_string(cache)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
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
