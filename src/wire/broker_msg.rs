//! The broker role of PROTOCOL.md: every message asksim writes to an outside
//! broker ([`BrokerInput`]) and every effect the broker may reply with
//! ([`BrokerEffect`]). Pure data: the field names here are the contract's.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Hello, Questions};
use crate::protocol::{AgentId, CallId, Name, Ticket};
use crate::tool::{AnswerItem, Schema};

/// What a broker is configured with (the `config` of its `hello`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BrokerSetup {
    /// The waterfall's answerers, by name, in order.
    pub answerers: Vec<Name>,
    /// How long an offeree has to accept or decline.
    pub offer_timeout_ns: u64,
    /// The broker's limits.
    pub limits: WireLimits,
}

/// The broker's limits (SPEC §2.5 `LIMIT_EXCEEDED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireLimits {
    /// Calls open at once (waiting or pending).
    pub open_calls_max: u64,
    /// Agents in one tree (a root and every agent below it, live or stopped).
    pub agents_per_tree_max: u64,
}

/// A tool call as the broker receives it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireRequest {
    /// The calling agent.
    pub agent: AgentId,
    /// `"<agent name>/<n>"`.
    #[serde(rename = "callId")]
    pub call_id: CallId,
    /// The definition the call came through.
    pub schema: Schema,
    /// The validated questions.
    pub questions: Questions,
    /// The `questions` argument exactly as the model sent it.
    pub questions_text: String,
    /// The `timeout` argument as the model gave it (timed only), or null.
    pub timeout: Option<f64>,
    /// The foreground window, or null for a blocking wait (legacy, timed `-1`).
    pub window_ns: Option<u64>,
    /// The caller's turn when it called, outermost first.
    pub turn: Vec<String>,
}

/// A timed question the log shows open after a restart.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireRestore {
    /// The resumed agent that asked it, or null if it did not come back.
    pub agent: Option<AgentId>,
    /// Its name as the log recorded it.
    pub agent_name: Name,
    /// The call.
    #[serde(rename = "callId")]
    pub call_id: CallId,
    /// The questions rebuilt from the log, or null if the record lacks them.
    pub questions: Option<Questions>,
    /// The `questions` text the model sent, or null with `questions`.
    pub questions_text: Option<String>,
}

/// Something an answerer sent about a ticket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FromAnswerer {
    /// The ticket the offer named.
    pub ticket: Ticket,
    /// The sender.
    pub answerer: Name,
}

/// Every message asksim writes to a broker (`msg` names it).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum BrokerInput {
    /// The first line of a life.
    Hello(Hello<BrokerSetup>),
    /// An agent starts: a root (`owner` null) or a child.
    Register {
        /// Its id, fresh in every life.
        agent: AgentId,
        /// Its unique name.
        name: Name,
        /// The live agent that owns it, or null.
        owner: Option<AgentId>,
        /// Durable lineage (never consulted for identity), or null.
        lineage: Option<crate::protocol::Text>,
        /// Its current turn, outermost first.
        turn: Vec<String>,
    },
    /// An agent stops.
    Stop {
        /// The agent.
        agent: AgentId,
    },
    /// A tool call.
    Request(Box<WireRequest>),
    /// An answerer accepts an offer.
    Accept(FromAnswerer),
    /// An answerer declines an offer.
    Decline(FromAnswerer),
    /// The owning answerer holds the window open.
    Hold(FromAnswerer),
    /// An answerer submits one batch.
    Submit {
        /// The ticket the offer named.
        ticket: Ticket,
        /// The sender.
        answerer: Name,
        /// The batch, unchecked.
        batch: Value,
    },
    /// A timer the broker started fired.
    Timer {
        /// The id it chose.
        id: u64,
    },
    /// A turn signal fired.
    CancelTurn {
        /// The agent whose turn it is.
        agent: AgentId,
        /// The turn, outermost first; the last id is the one that fired.
        turn: Vec<String>,
    },
    /// An agent started a new turn.
    NewTurn {
        /// The agent.
        agent: AgentId,
        /// Its new turn.
        turn: Vec<String>,
    },
    /// Cancel one call explicitly.
    CancelCall {
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
    },
    /// After a restart: a timed question the log shows open.
    Restore(Box<WireRestore>),
    /// An answerer died.
    AnswererDied {
        /// Its name.
        answerer: Name,
    },
    /// What calls are open now (the reply carries `open`).
    Status {},
}

impl BrokerInput {
    /// The message's name, as `msg` writes it.
    pub fn name(&self) -> &'static str {
        match self {
            BrokerInput::Hello(_) => "hello",
            BrokerInput::Register { .. } => "register",
            BrokerInput::Stop { .. } => "stop",
            BrokerInput::Request(_) => "request",
            BrokerInput::Accept(_) => "accept",
            BrokerInput::Decline(_) => "decline",
            BrokerInput::Hold(_) => "hold",
            BrokerInput::Submit { .. } => "submit",
            BrokerInput::Timer { .. } => "timer",
            BrokerInput::CancelTurn { .. } => "cancel_turn",
            BrokerInput::NewTurn { .. } => "new_turn",
            BrokerInput::CancelCall { .. } => "cancel_call",
            BrokerInput::Restore(_) => "restore",
            BrokerInput::AnswererDied { .. } => "answerer_died",
            BrokerInput::Status {} => "status",
        }
    }
}

/// Every effect a broker may reply with: messages to agents and answerers,
/// its verdicts on what answerers sent, and its timers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrokerEffect {
    /// To the registering agent: it is in the tree (`error` null) or why not.
    Registered {
        /// The agent.
        agent: AgentId,
        /// `null`, `duplicate_name`, `bad_name`, `owner_not_live` or `LIMIT_EXCEEDED`.
        error: Option<String>,
    },
    /// To the owner of a registering child: the child is in the tree or why not.
    Spawned {
        /// The owner.
        owner: AgentId,
        /// The child's name.
        child: Name,
        /// As for `registered`.
        error: Option<String>,
    },
    /// To an agent: a turn its current turn derives from fired.
    TurnFired {
        /// The agent.
        agent: AgentId,
        /// The turn id that fired.
        turn: String,
    },
    /// To the caller: the tool result of a call (answers, `pending`, an error).
    Settled {
        /// The caller.
        agent: AgentId,
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The tool result the model reads, as JSON.
        result: Value,
    },
    /// To the caller: a pending call's late answer.
    LateAnswer {
        /// The caller.
        agent: AgentId,
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// The answer items, in question order.
        answers: Vec<AnswerItem>,
        /// The exact user message.
        message: String,
    },
    /// A pending call withdrawn; the caller is told unless `agent` is null.
    Withdrawn {
        /// The caller, or null to tell nobody (`not_restorable`).
        agent: Option<AgentId>,
        /// The call.
        #[serde(rename = "callId")]
        call_id: CallId,
        /// `NO_ANSWERER`, `cancel_call`, `agent_stopped` or `not_restorable`.
        reason: String,
        /// The exact user message (`NO_ANSWERER`), or null.
        message: Option<String>,
    },
    /// To an answerer: a request offered under a ticket.
    Offer {
        /// The answerer.
        answerer: Name,
        /// The broker's handle on the request.
        ticket: Ticket,
        /// The call (asksim shows it to the answerer for keyed calls only).
        #[serde(rename = "callId")]
        call_id: CallId,
    },
    /// To an answerer: stop working on the ticket.
    Withdraw {
        /// The answerer.
        answerer: Name,
        /// The ticket.
        ticket: Ticket,
    },
    /// To an answerer: what it sent is refused.
    Refused {
        /// The answerer.
        answerer: Name,
        /// The ticket it named.
        ticket: Ticket,
        /// `accept`, `hold` or `submit`.
        what: String,
        /// Why (PROTOCOL.md "Refusals").
        reason: String,
    },
    /// Verdict: the answerer owns the ticket's call.
    Accepted {
        /// The answerer.
        answerer: Name,
        /// The ticket.
        ticket: Ticket,
    },
    /// Verdict: the waterfall moves past the answerer.
    Declined {
        /// The answerer.
        answerer: Name,
        /// The ticket.
        ticket: Ticket,
        /// `declined`, `offer_timeout` or `dead`.
        reason: String,
    },
    /// Verdict: the owner's hold is taken; the window stops counting.
    Held {
        /// The answerer.
        answerer: Name,
        /// The ticket.
        ticket: Ticket,
    },
    /// Wake the broker with `timer` after this long.
    StartTimer {
        /// Its id, unique among the broker's running timers.
        id: u64,
        /// The delay.
        after_ns: u64,
    },
    /// Cancel a running timer (nothing if it fired or never started).
    CancelTimer {
        /// Its id.
        id: u64,
    },
}
