//! The protocol: every message the actors exchange, and the types they carry.
//!
//! Messages between actors are the architecture. An agent sends the broker
//! `Register` and `Request`; the broker offers requests to answerers (`Offer`), which
//! reply `Accept`/`Decline`, may `Hold` and must `Submit` one batch; the broker
//! settles the call back to the agent (`Settled`), and a pending call's late answer
//! or withdrawal reaches it as `Closed`. Timers are messages an actor sends itself
//! (`WindowExpired`, `OfferTimeout`, an answerer's [`AnswererInput::Timer`]).
//!
//! The actors' logic (`crate::broker`, `crate::agent`, `crate::answerer`)
//! imports this module and never each other. Two executors deliver these messages:
//! the simulator's controlled scheduler on the virtual clock, and ractor actors on
//! tokio (`crate::actors`) for the library and real-clock runs.

use std::sync::Arc;

use ractor::ActorRef;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::tool::{Ask, Question, Schema, ToolResult};

/// An agent's identity. Ids are never reused within a run, and a runtime started
/// again after process loss gives fresh ids, so a handle from before is stale.
pub type AgentId = u64;
/// The broker's handle on one request (one call while it is open).
pub type Ticket = u64;
/// An answerer's place in the waterfall, from 0.
pub type AnswererIx = u32;
/// A callId, `"<agent>/<n>"`, shared rather than copied.
pub type CallId = Text;
/// An agent's or answerer's name, shared rather than copied.
pub type Name = Text;

pub use crate::text::Text;

/// Virtual or real time since the run started, in nanoseconds.
pub type Nanos = u64;

/// Seconds as nanoseconds, saturating (times in a run are bounded far below).
pub fn nanos(seconds: f64) -> Nanos {
    if seconds.is_nan() || seconds <= 0.0 {
        return 0;
    }
    let ns = (seconds * 1e9).round();
    if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// Nanoseconds as seconds.
pub fn seconds(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}

/// One turn of one agent: `n` counts the agent's turns from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TurnId {
    /// The agent whose turn it is.
    pub agent: AgentId,
    /// Which of its turns.
    pub n: u32,
}

/// A turn signal: its id and every turn it derives from. A child's first turn
/// derives from its owner's turn at spawn time, so firing a turn fires every turn
/// whose chain holds it (SPEC §1 "turn signal").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// Outermost first, this turn last; never empty.
    chain: Arc<[TurnId]>,
}

impl Turn {
    /// A turn that derives from no other.
    pub fn root(id: TurnId) -> Turn {
        Turn {
            chain: Arc::from([id]),
        }
    }

    /// A turn derived from this one.
    pub fn derive(&self, id: TurnId) -> Turn {
        Turn::under(&self.chain, id)
    }

    /// The turn `id` derived from the turns `outer` (outermost first), in one
    /// allocation of the exact size (the iterator's length is known), where a
    /// vector copied, grew for the push and was copied again.
    fn under(outer: &[TurnId], id: TurnId) -> Turn {
        let chain = outer.iter().copied().chain(std::iter::once(id)).collect();
        Turn { chain }
    }

    /// This turn's id.
    pub fn id(&self) -> TurnId {
        *self.chain.last().expect("a turn chain is never empty")
    }

    /// Whether firing `turn` fires this one: it is this turn or one it derives from.
    pub fn fired_by(&self, turn: TurnId) -> bool {
        self.chain.contains(&turn)
    }

    /// The same agent's next turn `id`, under the same outer turns: derived
    /// from what this one derives from, or a root turn if it derives from none.
    pub fn renewed(&self, id: TurnId) -> Turn {
        Turn::under(&self.chain[..self.chain.len() - 1], id)
    }

    /// The outermost turn it derives from (itself, for a root turn).
    pub fn outermost(&self) -> TurnId {
        self.chain[0]
    }

    /// Every turn whose firing fires this one, outermost first.
    pub fn chain(&self) -> &[TurnId] {
        &self.chain
    }
}

/// An agent joining the broker's tree.
#[derive(Clone, Debug)]
pub struct Registration {
    /// Its id, given by the runtime that started it.
    pub agent: AgentId,
    /// Its unique name.
    pub name: Name,
    /// The live agent that owns it (a child), or none (a root).
    pub owner: Option<AgentId>,
    /// Durable lineage, recorded but never consulted for identity (shared
    /// text: a spawned child's is its spawner's name, carried by every child).
    pub lineage: Option<Text>,
    /// Its current turn.
    pub turn: Turn,
}

/// A valid tool call on its way to the broker.
#[derive(Clone, Debug)]
pub struct Request {
    /// The caller.
    pub agent: AgentId,
    /// `"<agent>/<n>"`.
    pub call_id: CallId,
    /// The validated call.
    pub ask: Ask,
    /// The caller's turn when it called.
    pub turn: Turn,
}

/// A timed question re-opened after a restart (SPEC §3.9): pending from now on.
#[derive(Clone, Debug)]
pub struct Restored {
    /// The resumed agent that asked it.
    pub agent: AgentId,
    /// Its name, for the log when the question cannot be restored.
    pub agent_name: Name,
    /// The call.
    pub call_id: CallId,
    /// The question rebuilt from the log, or `None` when the record lacks the
    /// shape (the broker then withdraws it, so the log and the broker agree).
    pub ask: Option<Ask>,
}

/// Messages the broker receives.
#[derive(Debug)]
pub enum BrokerMsg {
    /// An agent starts: a root or a child of a live agent. The broker answers the
    /// agent (`Registered`) and, for a child, its owner (`Spawned`).
    Register(Box<Registration>),
    /// An agent stops: no longer live; its children become roots; its open calls
    /// are aborted (waiting) or withdrawn without a message (pending).
    Stop(AgentId),
    /// A tool call. Its result goes back to the agent as `Settled`.
    Request(Box<Request>),
    /// An answerer accepts an offer: it owns the request.
    Accept {
        /// The request.
        ticket: Ticket,
        /// The sender.
        answerer: AnswererIx,
    },
    /// An answerer declines an offer: the broker offers the next answerer.
    Decline {
        /// The request.
        ticket: Ticket,
        /// The sender.
        answerer: AnswererIx,
    },
    /// The owning answerer holds the window open.
    Hold {
        /// The request.
        ticket: Ticket,
        /// The sender.
        answerer: AnswererIx,
    },
    /// An answerer submits one batch.
    Submit {
        /// The request.
        ticket: Ticket,
        /// The sender.
        answerer: AnswererIx,
        /// The batch, unchecked (behind a pointer: a batch is rare beside the
        /// messages a mailbox and a timer carry, which take the size of the
        /// largest variant; shared with the `answer` event, and with every call
        /// the answerer gave the same batch).
        batch: Arc<Value>,
    },
    /// Timer: an offer got no reply within the offer timeout.
    OfferTimeout {
        /// The request.
        ticket: Ticket,
        /// Which offer of the request.
        attempt: u32,
    },
    /// Timer: a foreground window ran out.
    WindowExpired {
        /// The request.
        ticket: Ticket,
        /// Which window (a hold that dies with its holder starts another).
        attempt: u32,
    },
    /// A turn signal fired: every waiting call of that turn and of the turns that
    /// derive from it settles as `ABORTED` now, and their agents' scripts end.
    CancelTurn {
        /// The agent whose turn it is.
        agent: AgentId,
        /// The turn.
        turn: Turn,
    },
    /// An agent started a new turn (a host's new model turn): its earlier turn's
    /// signal no longer applies to what it asks from now on.
    NewTurn {
        /// The agent.
        agent: AgentId,
        /// Its new turn.
        turn: Turn,
    },
    /// Cancel one call explicitly.
    CancelCall {
        /// The call.
        call_id: CallId,
    },
    /// After a restart: a timed question the log shows open.
    Restore(Box<Restored>),
    /// An answerer of the waterfall died. It reaches the broker behind whatever
    /// the answerer sent before dying (SPEC §3.2: a submit that reaches the broker
    /// before the owner's death wins).
    AnswererDied {
        /// Its place in the waterfall.
        answerer: AnswererIx,
    },
    /// The actor runtime's timer wake-up: the broker takes the timers now due
    /// (they live in its own wheel); the message itself changes nothing.
    Wake,
    /// A timer that a broker outside this process started under its own id
    /// (PROTOCOL.md `start_timer`) fired. asksim's own broker never starts one
    /// and ignores it.
    OutsideTimer {
        /// The id the outside broker chose.
        id: u64,
    },
    /// What is open now (library queries; the simulator reads the state itself).
    Status(oneshot::Sender<BrokerStatus>),
}

impl BrokerMsg {
    /// The message's name, for tracing.
    pub fn name(&self) -> &'static str {
        match self {
            BrokerMsg::Register(_) => "Register",
            BrokerMsg::Stop(_) => "Stop",
            BrokerMsg::Wake => "Wake",
            BrokerMsg::Request(_) => "Request",
            BrokerMsg::Accept { .. } => "Accept",
            BrokerMsg::Decline { .. } => "Decline",
            BrokerMsg::Hold { .. } => "Hold",
            BrokerMsg::Submit { .. } => "Submit",
            BrokerMsg::OfferTimeout { .. } => "OfferTimeout",
            BrokerMsg::WindowExpired { .. } => "WindowExpired",
            BrokerMsg::CancelTurn { .. } => "CancelTurn",
            BrokerMsg::NewTurn { .. } => "NewTurn",
            BrokerMsg::CancelCall { .. } => "CancelCall",
            BrokerMsg::Restore(_) => "Restore",
            BrokerMsg::AnswererDied { .. } => "AnswererDied",
            BrokerMsg::Status(_) => "Status",
            BrokerMsg::OutsideTimer { .. } => "OutsideTimer",
        }
    }
}

/// A message in the broker actor's mailbox. The runtime's own actors mark what
/// they send as counted, so a real-clock run knows when nothing is in flight;
/// anything else (a user's answerer, a library call) arrives uncounted.
#[derive(Debug)]
pub struct BrokerMail {
    /// The message.
    pub msg: BrokerMsg,
    pub(crate) counted: bool,
}

impl From<BrokerMsg> for BrokerMail {
    fn from(msg: BrokerMsg) -> BrokerMail {
        BrokerMail { msg, counted: false }
    }
}

/// The broker's account of its calls, by callId.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BrokerStatus {
    /// callId → `"waiting"` (in its window or blocking) or `"pending"`.
    pub open: std::collections::BTreeMap<String, &'static str>,
    /// The calls this broker closed in its life (since its start or restart):
    /// callId → `"answered"`, `"late_answered"`, `"withdrawn"`, `"aborted"` or
    /// `"errored"`, as the projection names those states. `None` when whoever
    /// ran the broker did not report them.
    pub closed: Option<std::collections::BTreeMap<String, &'static str>>,
}

/// Why an agent could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// Another agent of this runtime has the name.
    #[error("an agent named {0:?} exists already")]
    DuplicateName(String),
    /// The name is empty or contains `/`.
    #[error("agent name {0:?} must be non-empty and contain no '/'")]
    BadName(String),
    /// The owner is not a live agent of this runtime.
    #[error("the owner is not a live agent")]
    OwnerNotLive,
    /// The tree would exceed its limit of agents.
    #[error("LIMIT_EXCEEDED: more than {0} agents in one tree")]
    LimitExceeded(usize),
    /// The runtime has stopped.
    #[error("the runtime has stopped")]
    RuntimeStopped,
}

impl SpawnError {
    /// The reason as the log records it.
    pub fn as_str(&self) -> &'static str {
        match self {
            SpawnError::DuplicateName(_) => "duplicate_name",
            SpawnError::BadName(_) => "bad_name",
            SpawnError::OwnerNotLive => "owner_not_live",
            SpawnError::LimitExceeded(_) => "LIMIT_EXCEEDED",
            SpawnError::RuntimeStopped => "runtime_stopped",
        }
    }
}

/// One call's outcome as the caller sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallOutcome {
    /// `"<agent>/<n>"`.
    pub call_id: String,
    /// The tool result.
    pub result: ToolResult,
}

/// Messages an agent receives.
#[derive(Debug)]
pub enum AgentMsg {
    /// From the broker: the agent is in the tree (or why not).
    Registered(Result<(), SpawnError>),
    /// From the broker, to an owner: its child `child` is in the tree (or why not).
    Spawned {
        /// The child's name.
        child: Name,
        /// Whether it was registered.
        result: Result<(), SpawnError>,
    },
    /// From the broker: a call of this agent settled with this tool result.
    Settled {
        /// The call.
        call_id: CallId,
        /// What the model reads.
        result: ToolResult,
    },
    /// From the broker: a call of this agent returned the tool's own `pending`
    /// result, [`ToolResult::pending`] of its callId. The callId alone gives the
    /// text back, so it travels without it: a tie of 10^5 windows ending at one
    /// instant held 10^5 texts of ~190 bytes in the messages on their way.
    Pending {
        /// The call.
        call_id: CallId,
    },
    /// From the broker: a pending call closed for good, with the user message the
    /// model reads, if any (a late answer, or a withdrawal for lack of an answerer;
    /// `cancel_call` and a stop close without one).
    Closed {
        /// The call.
        call_id: CallId,
        /// The user message, if any.
        message: Option<Arc<str>>,
    },
    /// From the broker: a turn fired; scripts running under it end.
    TurnFired(TurnId),
    /// From a child: its script ended with this final result.
    ChildEnded {
        /// The child: its place among its owner's spawns (a number, not its
        /// name: the owner of 10^5 children found each by hashing and
        /// comparing a name no longer in the cache).
        place: u32,
        /// What it could not ask (its final result's `unresolved`, SPEC §5):
        /// all its owner reads of the final result.
        unasked: crate::final_result::Unasked,
        /// The turn whose firing ended its script, if one did.
        fired: Option<TurnId>,
    },
    /// Timer: a `work` step is done.
    WorkDone {
        /// Which step of the script.
        step: usize,
    },
    /// Library: a tool call with the model's raw JSON arguments.
    Call {
        /// The arguments, verbatim.
        arguments: String,
        /// Receives the callId and the result when the call settles.
        reply: CallReply,
    },
    /// Library: replies once the call is closed for good (at once if it is).
    AwaitClosed {
        /// The call (its text made once, as the key it waits under).
        call_id: CallId,
        /// Replied to when closed.
        reply: oneshot::Sender<()>,
    },
    /// Library: every user message received so far, in order.
    Messages(oneshot::Sender<Vec<String>>),
    /// Library: the current turn (a new one first when `new` is set).
    Turn {
        /// Start a new turn first.
        new: bool,
        /// Receives the turn.
        reply: oneshot::Sender<Turn>,
    },
}

/// Where a [`CallReply`] sends a call's callId and its result, if any.
type Replier = oneshot::Sender<(CallId, Option<ToolResult>)>;

/// Where a library call's callId and result go, together, when it settles:
/// one channel and one wake-up of the caller a call (issue #23), where a
/// channel for the callId at numbering and one for the result took two.
///
/// A numbered call its agent drops unsettled (the runtime stopped first) still
/// tells the caller its callId, with no result.
#[derive(Debug)]
pub struct CallReply {
    reply: Option<Replier>,
    /// Empty until the call is numbered (a callId never is): an `Option` of
    /// a [`Text`](crate::text::Text) is 8 bytes more than the text, and this
    /// rides in every call's message to its agent.
    call_id: CallId,
}

impl CallReply {
    /// Replies on `reply`.
    pub fn new(reply: Replier) -> CallReply {
        CallReply {
            reply: Some(reply),
            call_id: CallId::from(""),
        }
    }

    /// The call is numbered `call_id`.
    pub fn numbered(&mut self, call_id: &CallId) {
        self.call_id = call_id.clone();
    }

    /// The reply channel and the callId, once numbered; each only once.
    fn take(&mut self) -> Option<(Replier, CallId)> {
        if self.call_id.is_empty() {
            return None;
        }
        let call_id = std::mem::replace(&mut self.call_id, CallId::from(""));
        self.reply.take().map(|reply| (reply, call_id))
    }

    /// The call settled with `result`.
    pub fn settle(mut self, result: ToolResult) {
        if let Some((reply, call_id)) = self.take() {
            let _ = reply.send((call_id, Some(result)));
        }
    }
}

impl Drop for CallReply {
    fn drop(&mut self) {
        if let Some((reply, call_id)) = self.take() {
            let _ = reply.send((call_id, None));
        }
    }
}

/// One request offered to an answerer. Only keyed (timed) requests carry a callId.
///
/// An offer's replies are exactly the four of [`Reply`]. A sans-IO answerer
/// ([`crate::answerer::Answerer`]) writes them into its
/// [`crate::answerer::Replies`]; an actor of the library's waterfall
/// ([`crate::AnswererSlot::Actor`]) sends them with [`Offer::reply`].
#[derive(Clone, Debug)]
pub struct Offer {
    /// The broker's handle on the request; every reply names it.
    pub ticket: Ticket,
    /// The answerer's own place in the waterfall.
    pub answerer: AnswererIx,
    /// The callId, for keyed requests only.
    pub call_id: Option<CallId>,
    /// The calling agent.
    pub agent: Name,
    /// The definition the call came through.
    pub schema: Schema,
    /// The questions.
    pub questions: Arc<[Question]>,
    /// The broker actor, under the actor runtime; `None` under the simulator's
    /// scheduler, whose answerers reply through the delivery queue.
    pub(crate) broker: Option<ActorRef<BrokerMail>>,
}

/// An answerer's reply to an offer: exactly these four (SPEC §3.2, §3.5, §3.6).
/// Nothing else an answerer sends reaches the broker.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Accept the offer: the sender owns the request (SPEC §3.2).
    Accept,
    /// Decline it: the broker offers the next answerer.
    Decline,
    /// Hold the caller's window open (the owner only, while the call waits in its
    /// window; SPEC §3.5).
    Hold,
    /// Submit the one batch that answers the call: one item per question,
    /// `{"id", "selected"?, "custom"?}` (the owner only; SPEC §3.6). Shared: an
    /// answerer that gives many calls the same batch builds it once
    /// (`Reply::Submit(batch.into())` from a `Value`).
    Submit(Arc<Value>),
}

impl Reply {
    /// The broker's message for this reply to offer `ticket` from `answerer`.
    pub(crate) fn into_broker(self, ticket: Ticket, answerer: AnswererIx) -> BrokerMsg {
        match self {
            Reply::Accept => BrokerMsg::Accept { ticket, answerer },
            Reply::Decline => BrokerMsg::Decline { ticket, answerer },
            Reply::Hold => BrokerMsg::Hold { ticket, answerer },
            Reply::Submit(batch) => BrokerMsg::Submit {
                ticket,
                answerer,
                batch,
            },
        }
    }
}

impl Offer {
    /// Sends `reply` to the broker that made the offer (actor runtime only).
    pub fn reply(&self, reply: Reply) -> Result<(), ReplyError> {
        let broker = self.broker.as_ref().ok_or(ReplyError::NoBroker)?;
        broker
            .send_message(reply.into_broker(self.ticket, self.answerer).into())
            .map_err(|_| ReplyError::BrokerGone)
    }
}

/// Why [`Offer::reply`] could not send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The offer came through the simulator's scheduler, not an actor.
    #[error("the offer has no broker actor to reply to")]
    NoBroker,
    /// The broker has stopped.
    #[error("the broker has stopped")]
    BrokerGone,
}

/// What an answerer sent that the broker refused back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// An answer batch.
    Submit,
    /// A hold.
    Hold,
    /// An accept that came too late: the offer timed out or the call closed.
    Accept,
}

impl Sent {
    /// `"submit"`, `"hold"` or `"accept"`, as the log records it.
    pub fn as_str(self) -> &'static str {
        match self {
            Sent::Submit => "submit",
            Sent::Hold => "hold",
            Sent::Accept => "accept",
        }
    }
}

/// Why the broker refused what an answerer sent (SPEC §3.6, §3.7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The call already settled.
    Settled,
    /// The call was withdrawn.
    Withdrawn,
    /// No call has that ticket.
    Unknown,
    /// The sender does not own the call.
    NotOwner,
    /// The sender died before the broker read it.
    OwnerDead,
    /// An accept for an offer that timed out: the waterfall moved on.
    OfferTimedOut,
    /// A hold for a call no longer in its window.
    NotInWindow,
    /// The batch breaks SPEC §3.6; the call stays open.
    Batch(String),
    /// A batch for a legacy question a process loss took, whose verdict the
    /// crash cut off (recorded by a recovery, never by a broker).
    LostOnRestart,
}

impl Refusal {
    /// The reason as the log records it.
    pub fn as_str(&self) -> &str {
        match self {
            Refusal::Settled => "settled",
            Refusal::Withdrawn => "withdrawn",
            Refusal::Unknown => "unknown",
            Refusal::NotOwner => "not_owner",
            Refusal::OwnerDead => "owner_dead",
            Refusal::OfferTimedOut => "offer_timeout",
            Refusal::NotInWindow => "not_in_window",
            Refusal::Batch(reason) => reason,
            Refusal::LostOnRestart => "lost_on_restart",
        }
    }
}

/// Why an offer ended without an accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclineReason {
    /// The answerer declined.
    Declined,
    /// It did not reply within the offer timeout.
    OfferTimeout,
    /// It died (offered or owning).
    Dead,
}

impl DeclineReason {
    /// The reason as the log records it.
    pub fn as_str(self) -> &'static str {
        match self {
            DeclineReason::Declined => "declined",
            DeclineReason::OfferTimeout => "offer_timeout",
            DeclineReason::Dead => "dead",
        }
    }
}

/// Why a pending call was withdrawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WithdrawReason {
    /// The waterfall ran out: the agent is told (SPEC §2.4).
    NoAnswerer,
    /// An explicit `cancel_call`.
    CancelCall,
    /// Its agent stopped.
    AgentStopped,
    /// After a restart, its record could not be rebuilt or its agent not resumed.
    NotRestorable,
}

impl WithdrawReason {
    /// The reason as the log records it.
    pub fn as_str(self) -> &'static str {
        match self {
            WithdrawReason::NoAnswerer => "NO_ANSWERER",
            WithdrawReason::CancelCall => "cancel_call",
            WithdrawReason::AgentStopped => "agent_stopped",
            WithdrawReason::NotRestorable => "not_restorable",
        }
    }
}

/// A timer's id, unique among the running timers of the actor that started it.
pub type TimerId = u64;

/// Messages the broker sends an answerer: an offer, a withdrawal, a refusal.
/// An actor of the library's waterfall ([`crate::AnswererSlot::Actor`])
/// receives exactly these.
#[derive(Debug)]
pub enum AnswererMsg {
    /// A request is offered: accept or decline it (or say nothing, and the
    /// broker's offer timeout counts it as a decline). Boxed, so that every
    /// message and timer of a run is not as large as an offer.
    Offer(Box<Offer>),
    /// Stop working on this request: it settled, was cancelled, or the offer timed out.
    Withdraw {
        /// The request.
        ticket: Ticket,
    },
    /// Something this answerer sent was refused.
    Refused {
        /// The request.
        ticket: Ticket,
        /// What was refused.
        what: Sent,
        /// Why.
        reason: Refusal,
    },
}

/// What a sans-IO answerer ([`crate::answerer::Answerer`]) handles: a message
/// from the broker, or one of its own timers firing.
#[derive(Debug)]
pub enum AnswererInput {
    /// The broker's offer, withdrawal or refusal.
    Broker(AnswererMsg),
    /// A timer this answerer started fired.
    Timer(TimerId),
}

impl From<AnswererMsg> for AnswererInput {
    fn from(msg: AnswererMsg) -> AnswererInput {
        AnswererInput::Broker(msg)
    }
}

/// Where a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Addr {
    /// The broker.
    Broker,
    /// An agent.
    Agent(AgentId),
    /// An answerer, by its place in the waterfall.
    Answerer(AnswererIx),
    /// The simulator's driver: scheduled events, starts and restarts.
    Driver,
}

impl Addr {
    /// A number for each address, distinct across kinds (the two low bits tell
    /// the kind): the key of a jitter stream, and half of a queue entry's key.
    /// Exact for agent ids and answerer places below 2^61.
    pub fn code(self) -> u64 {
        match self {
            Addr::Driver => 0,
            Addr::Broker => 1,
            Addr::Agent(id) => (id << 2) | 2,
            Addr::Answerer(index) => ((index as u64) << 2) | 3,
        }
    }

    /// The address of a [`Addr::code`].
    pub fn from_code(code: u64) -> Addr {
        match code & 3 {
            0 => Addr::Driver,
            1 => Addr::Broker,
            2 => Addr::Agent(code >> 2),
            _ => Addr::Answerer((code >> 2) as AnswererIx),
        }
    }
}

/// What the simulator's driver acts on: its schedule, as messages to itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverMsg {
    /// The scenario's scheduled event at this index.
    Scheduled(usize),
    /// The runtime starts again after a process loss.
    Restart,
}

/// A message and its receiver.
#[derive(Debug)]
pub enum Envelope {
    /// To the broker.
    Broker(BrokerMsg),
    /// To an agent.
    Agent(AgentId, AgentMsg),
    /// To an answerer.
    Answerer(AnswererIx, AnswererInput),
    /// To the simulator's driver.
    Driver(DriverMsg),
}

impl Envelope {
    /// The receiver.
    pub fn to(&self) -> Addr {
        match self {
            Envelope::Broker(_) => Addr::Broker,
            Envelope::Agent(id, _) => Addr::Agent(*id),
            Envelope::Answerer(ix, _) => Addr::Answerer(*ix),
            Envelope::Driver(_) => Addr::Driver,
        }
    }
}
