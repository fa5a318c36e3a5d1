//! The recorded event stream every run writes: what happened, in the order the
//! actors did it, on the run's clock. It feeds the durable log (JSON Lines), the
//! invariant checker, the projection, the report and the trace hash, as it
//! happens (see [`crate::record`]). Actors only append to it; nothing here prints.
//!
//! Each kind is built in one place: the constructors below are the only writers,
//! and each is called by the one actor that decides what it records (the broker,
//! but for `spawn` refusals, `user_message`, invalid-argument `result`s and the
//! driver's `process_loss`, `restart`, `dropped` and `end`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::protocol::{CallId, DeclineReason, Name, Refusal, Sent, Text, WithdrawReason};
use crate::tool::{AnswerItem, Ask, ResultKind, Schema, ToolResult, Wait};

/// One recorded event: its place in the stream, its time, and what happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the stream, from 1, gapless.
    pub seq: u64,
    /// Seconds on the run's clock.
    pub t: f64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// The `questions` argument of a request exactly as the model sent it.
///
/// In the log it is the value of `questions`, byte for byte, when that text holds
/// no line break; otherwise `questions` holds it compacted (one JSON Lines line per
/// event) and `questions_text` the exact text.
#[derive(Clone, Debug)]
pub struct RawQuestions(Arc<RawValue>);

impl RawQuestions {
    /// The model's text, which must be JSON.
    pub fn new(text: &str) -> Result<RawQuestions, serde_json::Error> {
        RawValue::from_string(text.to_owned()).map(|raw| RawQuestions(Arc::from(raw)))
    }

    /// The exact text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The text, shared (a question rebuilt from it holds the same).
    pub(crate) fn shared(&self) -> Arc<RawValue> {
        Arc::clone(&self.0)
    }

    /// The parsed value.
    pub fn value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    fn single_line(&self) -> bool {
        single_line(self.0.get())
    }
}

/// Whether `text` holds no line break: two searches for one byte each
/// (`memchr`, a word at a time), where one search for either of two chars
/// decodes the text char by char (a request's questions are searched twice,
/// on the world's thread and on the journal's).
fn single_line(text: &str) -> bool {
    !(text.contains('\n') || text.contains('\r'))
}

impl PartialEq for RawQuestions {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl Serialize for RawQuestions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.single_line() {
            self.0.serialize(serializer)
        } else {
            self.value().serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for RawQuestions {
    /// Only a whole log line carries the exact text (see `crate::log`); a value
    /// read on its own is taken as it is.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        RawQuestions::new(&value.to_string()).map_err(serde::de::Error::custom)
    }
}

/// What happened. Field names follow the log format of SPEC §4.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// An agent joined the tree: a root (`owner` null) or a child.
    Spawn {
        /// Its name.
        agent: Name,
        /// The live agent that owns it, if any.
        owner: Option<Name>,
        /// The durable lineage it carries (never consulted for identity).
        lineage: Option<Text>,
    },
    /// An agent could not join the tree (a duplicate name, a dead owner, or
    /// `LIMIT_EXCEEDED`); the spawning script sees the error.
    SpawnRefused {
        /// Its name.
        agent: Name,
        /// The agent that spawned it, if any.
        owner: Option<Name>,
        /// Why: `LIMIT_EXCEEDED`, `duplicate_name`, `owner_not_live`, ….
        reason: String,
    },
    /// An agent was stopped: it is no longer live, and its handles are stale.
    Stop {
        /// Its name.
        agent: Name,
    },
    /// A valid tool call reached the broker.
    Request {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The calling agent.
        agent: Name,
        /// The definition it came through; the projection reads only this.
        schema: Schema,
        /// Whether answerers see its callId (every timed call).
        keyed: bool,
        /// The `questions` argument as the model sent it.
        questions: RawQuestions,
        /// The exact text of `questions` when it holds a line break.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        questions_text: Option<String>,
        /// The `timeout` argument, if the model gave one.
        timeout: Option<f64>,
        /// The effective window in seconds, or -1 for a blocking wait (null for legacy).
        window_s: Option<f64>,
        /// Its place in the broker's mailbox.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mbox: Option<u64>,
    },
    /// A tool call returned to the model: answers, `pending` or an error.
    Result {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The calling agent.
        agent: Name,
        /// The exact text the model saw.
        result: String,
        /// Whether the tool marked it as an error.
        is_error: bool,
        /// `"answers"`, `"pending"`, or the error code.
        #[serde(default, with = "outcome", skip_serializing_if = "Option::is_none")]
        outcome: Option<ResultKind>,
    },
    /// The broker offered a request to an answerer.
    Offer {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The answerer.
        answerer: Name,
    },
    /// An answerer accepted, and owns the request.
    Accept {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The answerer.
        answerer: Name,
        /// The accept's place in the broker's mailbox.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mbox: Option<u64>,
    },
    /// An answerer declined, did not reply within the offer timeout, or died.
    Decline {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The answerer.
        answerer: Name,
        /// `"declined"`, `"offer_timeout"` or `"dead"`.
        reason: String,
        /// The decline's place in the broker's mailbox (a reply only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mbox: Option<u64>,
    },
    /// The owning answerer held the call's window open.
    Hold {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The answerer.
        answerer: Name,
        /// The hold's place in the broker's mailbox.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mbox: Option<u64>,
    },
    /// An answerer submitted a batch (accepted or not: see `refused`).
    Answer {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The answerer.
        answerer: Name,
        /// The batch as submitted (the answerer's own, shared).
        batch: Arc<Value>,
        /// The batch's place in the broker's mailbox.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mbox: Option<u64>,
    },
    /// Something an answerer sent was refused back to it.
    Refused {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The answerer.
        answerer: Name,
        /// `"submit"` or `"hold"`.
        what: String,
        /// Why: `settled`, `withdrawn`, `unknown`, `not_owner`, `owner_dead`,
        /// `not_in_window`, the batch's defect, or (recorded by a recovery, for
        /// a batch of a legacy question the crash took) `lost_on_restart`.
        reason: String,
    },
    /// A late answer settled a pending call; its user message is decided.
    LateAnswer {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The calling agent.
        agent: Name,
        /// The answers.
        answers: Vec<AnswerItem>,
        /// The exact user message.
        message: Arc<str>,
    },
    /// A pending call was withdrawn.
    Withdraw {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The calling agent.
        agent: Name,
        /// Why: `NO_ANSWERER`, `cancel_call`, `agent_stopped`, `not_restorable`.
        reason: String,
        /// The user message decided for the agent, if any.
        message: Option<Arc<str>>,
    },
    /// A user message reached its agent.
    UserMessage {
        /// The call it is about.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The receiving agent.
        agent: Name,
        /// The exact message.
        message: Arc<str>,
    },
    /// An agent started a new turn: the signal of its earlier turn no longer
    /// applies to what it asks from now on.
    NewTurn {
        /// The agent.
        agent: Name,
    },
    /// A turn signal fired (the broker handled it).
    Cancel {
        /// The agent whose turn it was.
        agent: Name,
    },
    /// An explicit `cancel_call`.
    CancelCall {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
    },
    /// The broker handled an answerer's death.
    Crash {
        /// The answerer.
        answerer: Name,
        /// The death notice's place in the broker's mailbox.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mbox: Option<u64>,
    },
    /// The whole runtime died; only the log survives.
    ProcessLoss {
        /// Seconds until the restart.
        restart_after: f64,
    },
    /// The runtime started again from the log.
    Restart {
        /// Whether it recovered from the log file after a real crash (SPEC
        /// §4.1), not after a scheduled process loss.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recovered: bool,
        /// The line number of a torn last line that recovery dropped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        torn_line: Option<u64>,
    },
    /// A scheduled event fell in a restart gap (or had nobody to act on) and was
    /// dropped.
    Dropped {
        /// The event, as scheduled.
        what: Value,
    },
    /// The run is over: the last line of a simulated run's log (either clock). A
    /// log without it is of a run that did not end: cut short, killed, or still
    /// going.
    End {
        /// Why: `done` (nothing could change any more), the limit that stopped it
        /// (`virtual_s_max`, `events_max`), or `crashed`.
        reason: String,
    },
}

mod outcome {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::tool::ResultKind;

    pub fn serialize<S: Serializer>(kind: &Option<ResultKind>, s: S) -> Result<S::Ok, S::Error> {
        match kind {
            Some(kind) => s.serialize_str(kind.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ResultKind>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text {
            None => Ok(None),
            Some(text) => ResultKind::parse(&text)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("unknown outcome {text:?}"))),
        }
    }
}

impl EventKind {
    /// The callId the event is about, if it is about a call.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id_text().map(CallId::as_str)
    }

    /// The same, shared (a clone is a reference count).
    pub fn call_id_text(&self) -> Option<&CallId> {
        use EventKind::*;
        match self {
            Request { call_id, .. }
            | Result { call_id, .. }
            | Offer { call_id, .. }
            | Accept { call_id, .. }
            | Decline { call_id, .. }
            | Hold { call_id, .. }
            | Answer { call_id, .. }
            | Refused { call_id, .. }
            | LateAnswer { call_id, .. }
            | Withdraw { call_id, .. }
            | UserMessage { call_id, .. }
            | CancelCall { call_id } => Some(call_id),
            _ => None,
        }
    }

    /// A tool result returned to the model (the broker's, or the agent's for
    /// arguments that never reach the broker).
    pub fn result(call_id: &CallId, agent: &Name, result: &ToolResult) -> EventKind {
        EventKind::Result {
            call_id: call_id.clone(),
            agent: agent.clone(),
            result: result.text.clone(),
            is_error: result.is_error(),
            outcome: Some(result.kind),
        }
    }

    /// The same, taking the result's text rather than copying it.
    pub fn result_owned(call_id: &CallId, agent: &Name, result: ToolResult) -> EventKind {
        EventKind::Result {
            call_id: call_id.clone(),
            agent: agent.clone(),
            is_error: result.is_error(),
            outcome: Some(result.kind),
            result: result.text,
        }
    }

    /// What a `result` event says the model got: its kind, recorded beside the
    /// text (or, for a log written before the kind was recorded, read from it).
    pub fn result_kind(&self) -> Option<ResultKind> {
        match self {
            EventKind::Result {
                result,
                is_error,
                outcome,
                ..
            } => Some(outcome.unwrap_or_else(|| ResultKind::of_legacy_text(result, *is_error))),
            _ => None,
        }
    }

    /// A restart after a scheduled process loss.
    pub fn restart() -> EventKind {
        EventKind::Restart {
            recovered: false,
            torn_line: None,
        }
    }

    /// A restart that recovered from the log file after a real crash, having
    /// dropped the torn last line `torn_line` if the crash cut one.
    pub fn recovered(torn_line: Option<u64>) -> EventKind {
        EventKind::Restart {
            recovered: true,
            torn_line,
        }
    }

    /// The `request` event: the call as the broker received it, with the
    /// questions exactly as the model sent them.
    pub fn request(call_id: &CallId, agent: &Name, ask: &Ask, mbox: Option<u64>) -> EventKind {
        let questions = RawQuestions(ask.questions_raw.clone());
        let raw = ask.questions_raw.get();
        let questions_text = (!single_line(raw)).then(|| raw.to_owned());
        EventKind::Request {
            call_id: call_id.clone(),
            agent: agent.clone(),
            schema: ask.schema,
            keyed: ask.keyed(),
            questions,
            questions_text,
            timeout: ask.timeout_arg,
            window_s: match (ask.schema, ask.wait) {
                (Schema::Legacy, _) => None,
                (Schema::Timed, Wait::Window(s)) => Some(s),
                (Schema::Timed, Wait::Blocking) => Some(-1.0),
            },
            mbox,
        }
    }

    /// A decline, for `reason`.
    pub fn decline(call_id: &CallId, answerer: &Name, reason: DeclineReason, mbox: Option<u64>) -> EventKind {
        EventKind::Decline {
            call_id: call_id.clone(),
            answerer: answerer.clone(),
            reason: reason.as_str().to_owned(),
            mbox,
        }
    }

    /// Something sent by an answerer, refused back to it.
    pub fn refused(call_id: &CallId, answerer: &Name, what: Sent, reason: &Refusal) -> EventKind {
        EventKind::Refused {
            call_id: call_id.clone(),
            answerer: answerer.clone(),
            what: what.as_str().to_owned(),
            reason: reason.as_str().to_owned(),
        }
    }

    /// A pending call withdrawn, with the message decided for its agent.
    pub fn withdraw(
        call_id: &CallId,
        agent: &Name,
        reason: WithdrawReason,
        message: Option<Arc<str>>,
    ) -> EventKind {
        EventKind::Withdraw {
            call_id: call_id.clone(),
            agent: agent.clone(),
            reason: reason.as_str().to_owned(),
            message,
        }
    }
}
