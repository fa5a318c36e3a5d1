//! The event stream every run records: what happened, in the broker's order, on the
//! run's clock. It feeds the durable log (JSON Lines), the invariant checker, the
//! report and the trace hash. Actors only append to it; nothing here prints.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::sched::Sched;
use crate::tool::{AnswerItem, Schema};

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

/// What happened. Field names follow the log format of SPEC §4.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// An agent started: a root (`owner` null) or a child.
    Spawn {
        /// Its name.
        agent: String,
        /// The live agent that owns it, if any.
        owner: Option<String>,
        /// The durable lineage it carries (never consulted for identity).
        lineage: Option<String>,
    },
    /// An agent was stopped: it is no longer live, and its handles are stale.
    Stop {
        /// Its name.
        agent: String,
    },
    /// A valid tool call reached the broker.
    Request {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The calling agent.
        agent: String,
        /// The definition it came through; the projection reads only this.
        schema: Schema,
        /// Whether answerers see its callId (every timed call).
        keyed: bool,
        /// The `questions` argument as the model sent it.
        questions: Value,
        /// The `timeout` argument, if the model gave one.
        timeout: Option<f64>,
        /// The effective window in seconds, or -1 for a blocking wait (null for legacy).
        window_s: Option<f64>,
    },
    /// A tool call returned to the model: answers, `pending` or an error.
    Result {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The calling agent.
        agent: String,
        /// The exact text the model saw.
        result: String,
        /// Whether the tool marked it as an error.
        is_error: bool,
    },
    /// The broker offered a request to an answerer.
    Offer {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The answerer.
        answerer: String,
    },
    /// An answerer accepted, and owns the request.
    Accept {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The answerer.
        answerer: String,
    },
    /// An answerer declined, or did not reply within the offer timeout.
    Decline {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The answerer.
        answerer: String,
        /// `"declined"`, `"offer_timeout"` or `"dead"`.
        reason: String,
    },
    /// The owning answerer held the call's window open.
    Hold {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The answerer.
        answerer: String,
    },
    /// An answerer submitted a batch (accepted or not: see `refused`).
    Answer {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The answerer.
        answerer: String,
        /// The batch as submitted.
        batch: Value,
    },
    /// Something an answerer sent was refused back to it.
    Refused {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The answerer.
        answerer: String,
        /// `"submit"` or `"hold"`.
        what: String,
        /// Why: `settled`, `withdrawn`, `unknown`, `not_owner`, `owner_dead`,
        /// `lost_on_restart`, or the batch's defect.
        reason: String,
    },
    /// A late answer settled a pending call and was sent to the agent.
    LateAnswer {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The calling agent.
        agent: String,
        /// The answers.
        answers: Vec<AnswerItem>,
        /// The exact user message.
        message: String,
    },
    /// A pending call was withdrawn.
    Withdraw {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
        /// The calling agent.
        agent: String,
        /// Why: `NO_ANSWERER`, `cancel_call`, `agent_stopped`.
        reason: String,
        /// The user message sent to the agent, if any.
        message: Option<String>,
    },
    /// A user message reached an agent.
    UserMessage {
        /// The call it is about.
        #[serde(rename = "callId")]
        call_id: String,
        /// The receiving agent.
        agent: String,
        /// The exact message.
        message: String,
    },
    /// A turn signal fired.
    Cancel {
        /// The agent whose turn it was.
        agent: String,
    },
    /// An explicit `cancel_call`.
    CancelCall {
        /// The call.
        #[serde(rename = "callId")]
        call_id: String,
    },
    /// An answerer died.
    Crash {
        /// The answerer.
        answerer: String,
    },
    /// The whole runtime died; only the log survives.
    ProcessLoss {
        /// Seconds until the restart.
        restart_after: f64,
    },
    /// The runtime started again from the log.
    Restart,
    /// A scheduled event fell in a restart gap and was dropped.
    Dropped {
        /// The event, as scheduled.
        what: Value,
    },
}

impl EventKind {
    /// The callId the event is about, if it is about a call.
    pub fn call_id(&self) -> Option<&str> {
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
}

struct Recorder {
    events: Vec<Event>,
    events_max: u64,
}

/// Where actors append events. Cheap to clone; the lock is a `std` mutex held only
/// to push, never across an `.await`.
#[derive(Clone)]
pub struct EventSink {
    inner: Arc<Mutex<Recorder>>,
    sched: Sched,
    overflow: CancellationToken,
}

impl EventSink {
    /// A sink that stops accepting past `events_max` events and fires `overflow`.
    pub fn new(sched: Sched, events_max: u64) -> EventSink {
        EventSink {
            inner: Arc::new(Mutex::new(Recorder {
                events: Vec::new(),
                events_max,
            })),
            sched,
            overflow: CancellationToken::new(),
        }
    }

    /// The same stream, stamped by another clock epoch (after a restart).
    pub fn with_sched(&self, sched: Sched) -> EventSink {
        EventSink {
            inner: self.inner.clone(),
            sched,
            overflow: self.overflow.clone(),
        }
    }

    /// Appends an event stamped now.
    pub fn record(&self, kind: EventKind) {
        tracing::debug!(target: "asksim::event", ?kind);
        let t = self.sched.now_s();
        let mut recorder = self.inner.lock().expect("event recorder poisoned");
        if recorder.events.len() as u64 >= recorder.events_max {
            self.overflow.cancel();
            return;
        }
        let seq = recorder.events.len() as u64 + 1;
        recorder.events.push(Event { seq, t, kind });
    }

    /// Fired when the stream reached its limit.
    pub fn overflow(&self) -> &CancellationToken {
        &self.overflow
    }

    /// The events so far.
    pub fn snapshot(&self) -> Vec<Event> {
        self.inner.lock().expect("event recorder poisoned").events.clone()
    }

    /// The time of the last event, or 0 before the first.
    pub fn last_t(&self) -> f64 {
        self.inner
            .lock()
            .expect("event recorder poisoned")
            .events
            .last()
            .map_or(0.0, |e| e.t)
    }

    /// Moves every event out, leaving the stream empty (at the end of a run).
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut self.inner.lock().expect("event recorder poisoned").events)
    }

    /// How many events so far.
    pub fn len(&self) -> usize {
        self.inner.lock().expect("event recorder poisoned").events.len()
    }

    /// Whether nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
