//! The `userQuestions` seam as an actor: identity checks, the waterfall, foreground
//! windows, holds, the pending registry and the error taxonomy (SPEC §3).
//!
//! Every decision is taken here, in the order messages reach the broker: that
//! order alone picks the winner of every race (SPEC §3.7). Whatever loses is
//! refused back to its sender and recorded, never dropped. The broker never reads
//! the wall clock; its timers go through [`Sched`], so a run's end is known.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::AgentMsg;
use crate::answerer::{AnswererActor, AnswererArgs, AnswererMsg, Offer, Reply};
use crate::event::{EventKind, EventSink};
use crate::policy::Policy;
use crate::sched::{Jitter, Sched, Timer, derive_seed};
use crate::tool::{
    Ask, ErrorCode, Schema, ToolResult, Wait, legacy, result::late_answer_message,
    result::withdrawal_message, timed, validate_batch,
};

/// Most calls open at once (in their window, blocking or pending) per broker.
/// Sized for the scale target of SPEC §8 (10⁶ concurrent pending questions).
pub const OPEN_CALLS_MAX: usize = 2_000_000;
/// Most answerers in one waterfall.
pub const ANSWERERS_MAX: usize = 1_024;
/// Most agents in one tree (a root and all its descendants, live or stopped).
pub const AGENTS_PER_TREE_MAX: usize = 100_000;
/// The broker's offer timeout when none is configured (SPEC §3.2), in seconds.
pub const OFFER_TIMEOUT_S_DEFAULT: f64 = 1.0;

/// The broker's limits. Requests over them settle as `LIMIT_EXCEEDED` and nothing
/// is queued; the defaults are the named constants, and a runtime may set them
/// lower (tests do), never higher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrokerLimits {
    /// Calls open at once (waiting or pending), at most [`OPEN_CALLS_MAX`].
    pub open_calls_max: usize,
    /// Agents in one tree, at most [`AGENTS_PER_TREE_MAX`].
    pub agents_per_tree_max: usize,
}

impl Default for BrokerLimits {
    fn default() -> Self {
        BrokerLimits {
            open_calls_max: OPEN_CALLS_MAX,
            agents_per_tree_max: AGENTS_PER_TREE_MAX,
        }
    }
}

/// An agent's identity at the broker. Ids are never reused within a runtime, and
/// a runtime started again after process loss starts from fresh ids, so a handle
/// from before is stale.
pub type AgentId = u64;

/// One answerer of the waterfall.
pub enum AnswererSlot {
    /// The built-in policy actor.
    Policy {
        /// Its name.
        name: String,
        /// Its behaviour.
        policy: Policy,
    },
    /// A user's own actor speaking the answerer protocol.
    Actor {
        /// Its name.
        name: String,
        /// The actor; the broker links it under its supervision.
        actor: ActorRef<AnswererMsg>,
    },
}

impl AnswererSlot {
    /// The answerer's name.
    pub fn name(&self) -> &str {
        match self {
            AnswererSlot::Policy { name, .. } | AnswererSlot::Actor { name, .. } => name,
        }
    }
}

/// A valid tool call on its way to the broker.
pub struct Request {
    /// The caller, as its handle knows it.
    pub agent: AgentId,
    /// The call's id, `"<agent>/<n>"`.
    pub call_id: String,
    /// The validated call.
    pub ask: Ask,
    /// The caller's turn signal.
    pub turn: CancellationToken,
    /// Where the tool result goes.
    pub reply: RpcReplyPort<ToolResult>,
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
    /// The tree would exceed its limit of agents ([`AGENTS_PER_TREE_MAX`] unless
    /// configured lower).
    #[error("LIMIT_EXCEEDED: more than {0} agents in one tree")]
    LimitExceeded(usize),
    /// The runtime has stopped.
    #[error("the runtime has stopped")]
    RuntimeStopped,
}

/// Messages the broker receives.
pub enum BrokerMsg {
    /// An agent starts: a root (`owner` none) or a child of a live agent.
    Register {
        /// Its unique name.
        name: String,
        /// Its owner, if a child.
        owner: Option<AgentId>,
        /// Durable lineage, recorded but never consulted.
        lineage: Option<String>,
        /// Where its user messages and call closings go.
        inbox: ActorRef<AgentMsg>,
        /// Its id, or why not.
        reply: RpcReplyPort<Result<AgentId, SpawnError>>,
    },
    /// An agent stops: no longer live; its children become roots; its open calls
    /// are aborted (foreground) or withdrawn without a message (pending).
    Stop(AgentId),
    /// A tool call.
    Request(Request),
    /// An answerer accepts an offer.
    Accept {
        /// The request.
        ticket: u64,
        /// The answerer's place in the waterfall.
        answerer: usize,
    },
    /// An answerer declines an offer.
    Decline {
        /// The request.
        ticket: u64,
        /// The answerer's place in the waterfall.
        answerer: usize,
    },
    /// The owning answerer holds the window open.
    Hold {
        /// The request.
        ticket: u64,
        /// The answerer's place in the waterfall.
        answerer: usize,
    },
    /// An answerer submits one batch.
    Submit {
        /// The request.
        ticket: u64,
        /// The answerer's place in the waterfall.
        answerer: usize,
        /// The batch, unchecked.
        batch: Value,
    },
    /// Timer: an offer got no reply within the offer timeout.
    OfferTimeout {
        /// The request.
        ticket: u64,
        /// Which offer of the request.
        attempt: u64,
    },
    /// Timer: a foreground window ran out.
    WindowExpired {
        /// The request.
        ticket: u64,
    },
    /// A turn signal fired: settle every foreground call whose turn is cancelled.
    TurnCancelled,
    /// Cancel one call explicitly.
    CancelCall {
        /// The call.
        call_id: String,
    },
    /// After a restart: a timed question the log shows open, pending from now on,
    /// offered through the waterfall from the top (SPEC §3.9).
    Restore {
        /// The resumed agent that asked it.
        agent: AgentId,
        /// The call.
        call_id: String,
        /// The question, rebuilt from the log.
        ask: Ask,
    },
    /// The runtime is shutting down: answerers that stop from now on did not crash.
    ShutDown(RpcReplyPort<()>),
    /// Fault injection: kill the named answerer (its supervision fails its
    /// requests over).
    Crash(String),
    /// What is open now.
    Status(RpcReplyPort<BrokerStatus>),
    /// An answerer of the waterfall died. The broker sends this to itself from its
    /// supervision hook, so the death takes its place in message order behind
    /// whatever the answerer sent before it died (SPEC §3.2: a submit that reaches
    /// the broker before the owner's death wins).
    AnswererDied {
        /// The answerer's place in the waterfall.
        answerer: usize,
    },
}

impl BrokerMsg {
    /// The message's name, for tracing.
    pub fn name(&self) -> &'static str {
        match self {
            BrokerMsg::Register { .. } => "Register",
            BrokerMsg::Stop(_) => "Stop",
            BrokerMsg::Request(_) => "Request",
            BrokerMsg::Accept { .. } => "Accept",
            BrokerMsg::Decline { .. } => "Decline",
            BrokerMsg::Hold { .. } => "Hold",
            BrokerMsg::Submit { .. } => "Submit",
            BrokerMsg::OfferTimeout { .. } => "OfferTimeout",
            BrokerMsg::WindowExpired { .. } => "WindowExpired",
            BrokerMsg::TurnCancelled => "TurnCancelled",
            BrokerMsg::CancelCall { .. } => "CancelCall",
            BrokerMsg::Restore { .. } => "Restore",
            BrokerMsg::ShutDown(_) => "ShutDown",
            BrokerMsg::Crash(_) => "Crash",
            BrokerMsg::AnswererDied { .. } => "AnswererDied",
            BrokerMsg::Status(_) => "Status",
        }
    }
}

/// The broker's open calls, by callId.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BrokerStatus {
    /// callId → `"waiting"` (in its window or blocking) or `"pending"`.
    pub open: BTreeMap<String, &'static str>,
}

/// The broker actor.
pub struct BrokerActor;

/// What the broker starts from.
pub struct BrokerArgs {
    /// The waterfall, in order.
    pub answerers: Vec<AnswererSlot>,
    /// Seconds an offeree has to accept or decline.
    pub offer_timeout_s: f64,
    /// The run's clock.
    pub sched: Sched,
    /// The event stream.
    pub events: EventSink,
    /// The run's seed, for the answerers' and the jitter's streams.
    pub seed: u64,
    /// Message jitter bound, seconds (0: none).
    pub jitter_max_s: f64,
    /// The broker's limits.
    pub limits: BrokerLimits,
}

struct Slot {
    name: String,
    actor: ActorRef<AnswererMsg>,
    alive: bool,
}

struct AgentEntry {
    name: String,
    owner: Option<AgentId>,
    root: AgentId,
    live: bool,
    inbox: ActorRef<AgentMsg>,
}

enum Phase {
    /// In its window or blocking; the caller waits on the port.
    Waiting(Option<RpcReplyPort<ToolResult>>),
    /// Returned `pending`; open until answered late or withdrawn.
    Pending,
}

struct Call {
    call_id: String,
    agent: AgentId,
    ask: Ask,
    phase: Phase,
    turn: CancellationToken,
    /// Next waterfall place to offer.
    next: usize,
    /// The answerer whose reply to an offer is awaited.
    offered: Option<usize>,
    attempt: u64,
    owner: Option<usize>,
    held: bool,
    window: Option<Timer>,
    offer_timer: Option<Timer>,
    /// Stops the turn watcher once the call leaves the foreground.
    watch: Option<CancellationToken>,
}

/// The broker's state: the live agent tree, the waterfall and every open call.
pub struct BrokerState {
    myself: ActorRef<BrokerMsg>,
    sched: Sched,
    events: EventSink,
    jitter: Jitter,
    offer_timeout: Duration,
    answerers: Vec<Slot>,
    agents: BTreeMap<AgentId, AgentEntry>,
    names: BTreeMap<String, AgentId>,
    tree_sizes: BTreeMap<AgentId, usize>,
    next_agent: AgentId,
    calls: BTreeMap<u64, Call>,
    by_call_id: BTreeMap<String, u64>,
    /// Tickets of closed calls and how they closed, for refusal reasons.
    closed: BTreeMap<u64, (String, &'static str)>,
    next_ticket: u64,
    shutting_down: bool,
    limits: BrokerLimits,
}

impl Actor for BrokerActor {
    type Msg = BrokerMsg;
    type State = BrokerState;
    type Arguments = BrokerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<BrokerMsg>,
        args: BrokerArgs,
    ) -> Result<BrokerState, ActorProcessingErr> {
        if args.answerers.len() > ANSWERERS_MAX {
            return Err(format!("LIMIT_EXCEEDED: more than {ANSWERERS_MAX} answerers").into());
        }
        let mut answerers = Vec::with_capacity(args.answerers.len());
        for (i, slot) in args.answerers.into_iter().enumerate() {
            let stream = derive_seed(args.seed, 1 + i as u64);
            let (name, actor) = match slot {
                AnswererSlot::Policy { name, policy } => {
                    let answerer_args = AnswererArgs {
                        name: name.clone(),
                        policy,
                        seed: stream,
                        sched: args.sched.clone(),
                        jitter: Jitter::new(stream, 1, args.jitter_max_s),
                    };
                    let (actor, _) =
                        Actor::spawn_linked(None, AnswererActor, answerer_args, myself.get_cell()).await?;
                    (name, actor)
                }
                AnswererSlot::Actor { name, actor } => {
                    actor.get_cell().link(myself.get_cell());
                    (name, actor)
                }
            };
            answerers.push(Slot {
                name,
                actor,
                alive: true,
            });
        }
        Ok(BrokerState {
            myself,
            offer_timeout: Duration::from_secs_f64(args.offer_timeout_s.max(0.0)),
            jitter: Jitter::new(args.seed, 0, args.jitter_max_s),
            sched: args.sched,
            events: args.events,
            answerers,
            agents: BTreeMap::new(),
            names: BTreeMap::new(),
            tree_sizes: BTreeMap::new(),
            next_agent: 1,
            calls: BTreeMap::new(),
            by_call_id: BTreeMap::new(),
            closed: BTreeMap::new(),
            next_ticket: 1,
            shutting_down: false,
            limits: BrokerLimits {
                open_calls_max: args.limits.open_calls_max.min(OPEN_CALLS_MAX),
                agents_per_tree_max: args.limits.agents_per_tree_max.min(AGENTS_PER_TREE_MAX),
            },
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<BrokerMsg>,
        msg: BrokerMsg,
        state: &mut BrokerState,
    ) -> Result<(), ActorProcessingErr> {
        tracing::trace!(target: "asksim::msg", to = "broker", msg = msg.name());
        match msg {
            BrokerMsg::Register {
                name,
                owner,
                lineage,
                inbox,
                reply,
            } => {
                let result = state.register(name, owner, lineage, inbox);
                let _ = reply.send(result);
            }
            BrokerMsg::Stop(agent) => state.stop_agent(agent),
            BrokerMsg::Request(request) => state.request(request),
            BrokerMsg::Accept { ticket, answerer } => state.accept(ticket, answerer),
            BrokerMsg::Decline { ticket, answerer } => state.decline(ticket, answerer),
            BrokerMsg::Hold { ticket, answerer } => state.hold(ticket, answerer),
            BrokerMsg::Submit {
                ticket,
                answerer,
                batch,
            } => state.submit(ticket, answerer, batch),
            BrokerMsg::OfferTimeout { ticket, attempt } => state.offer_timeout(ticket, attempt),
            BrokerMsg::WindowExpired { ticket } => state.window_expired(ticket),
            BrokerMsg::TurnCancelled => state.turn_cancelled(),
            BrokerMsg::CancelCall { call_id } => state.cancel_call(&call_id),
            BrokerMsg::Restore { agent, call_id, ask } => state.restore(agent, call_id, ask),
            BrokerMsg::ShutDown(reply) => {
                state.shutting_down = true;
                let _ = reply.send(());
            }
            BrokerMsg::Crash(name) => {
                if let Some(slot) = state.answerers.iter().find(|s| s.name == name && s.alive) {
                    slot.actor.stop(Some("crash".into()));
                }
            }
            BrokerMsg::Status(reply) => {
                let _ = reply.send(state.status());
            }
            BrokerMsg::AnswererDied { answerer } => state.answerer_died(answerer),
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<BrokerMsg>,
        event: SupervisionEvent,
        state: &mut BrokerState,
    ) -> Result<(), ActorProcessingErr> {
        // An answerer died (stopped, crashed or panicked): fail its requests over.
        // ractor delivers supervision events ahead of ordinary messages, so acting
        // here would let the death overtake a submit the answerer sent before it
        // died. Queue the death behind them instead.
        let cell = match event {
            SupervisionEvent::ActorTerminated(cell, ..) | SupervisionEvent::ActorFailed(cell, _) => cell,
            _ => return Ok(()),
        };
        if state.shutting_down {
            return Ok(());
        }
        if let Some(index) = state
            .answerers
            .iter()
            .position(|s| s.actor.get_id() == cell.get_id())
        {
            let _ = myself.send_message(BrokerMsg::AnswererDied { answerer: index });
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<BrokerMsg>,
        state: &mut BrokerState,
    ) -> Result<(), ActorProcessingErr> {
        for call in state.calls.values() {
            call.cancel_timers();
        }
        Ok(())
    }
}

impl Call {
    fn cancel_timers(&self) {
        if let Some(t) = &self.window {
            t.cancel();
        }
        if let Some(t) = &self.offer_timer {
            t.cancel();
        }
        if let Some(w) = &self.watch {
            w.cancel();
        }
    }
}

impl BrokerState {
    fn register(
        &mut self,
        name: String,
        owner: Option<AgentId>,
        lineage: Option<String>,
        inbox: ActorRef<AgentMsg>,
    ) -> Result<AgentId, SpawnError> {
        if name.is_empty() || name.contains('/') {
            return Err(SpawnError::BadName(name));
        }
        if self.names.contains_key(&name) {
            return Err(SpawnError::DuplicateName(name));
        }
        let id = self.next_agent;
        let root = match owner {
            None => id,
            Some(o) => match self.agents.get(&o) {
                Some(entry) if entry.live => entry.root,
                _ => return Err(SpawnError::OwnerNotLive),
            },
        };
        let size = self.tree_sizes.entry(root).or_insert(0);
        if *size >= self.limits.agents_per_tree_max {
            return Err(SpawnError::LimitExceeded(self.limits.agents_per_tree_max));
        }
        *size += 1;
        self.next_agent += 1;
        let owner_name = owner.and_then(|o| self.agents.get(&o)).map(|e| e.name.clone());
        self.events.record(EventKind::Spawn {
            agent: name.clone(),
            owner: owner_name,
            lineage,
        });
        self.names.insert(name.clone(), id);
        self.agents.insert(
            id,
            AgentEntry {
                name,
                owner,
                root,
                live: true,
                inbox,
            },
        );
        Ok(id)
    }

    fn stop_agent(&mut self, agent: AgentId) {
        let Some(entry) = self.agents.get_mut(&agent) else {
            return;
        };
        if !entry.live {
            return;
        }
        entry.live = false;
        self.events.record(EventKind::Stop {
            agent: entry.name.clone(),
        });
        // Ownership ends when either side stops: its children become roots.
        for other in self.agents.values_mut() {
            if other.owner == Some(agent) {
                other.owner = None;
            }
        }
        let tickets: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.agent == agent)
            .map(|(t, _)| *t)
            .collect();
        for ticket in tickets {
            self.end_call(
                ticket,
                End::Abort("the calling agent stopped"),
                "agent_stopped",
                false,
            );
        }
    }

    fn request(&mut self, request: Request) {
        let Request {
            agent,
            call_id,
            mut ask,
            turn,
            reply,
        } = request;
        let (agent_name, identity) = match self.agents.get(&agent) {
            None => (
                String::from("?"),
                Err((
                    ErrorCode::NotRuntimeRoot,
                    "the caller is not a live agent of this runtime (unknown or stale handle)",
                )),
            ),
            Some(e) if !e.live => (
                e.name.clone(),
                Err((
                    ErrorCode::NotRuntimeRoot,
                    "the caller has stopped and is no longer the live runtime root",
                )),
            ),
            Some(e) if e.owner.is_some() => (
                e.name.clone(),
                Err((
                    ErrorCode::DelegatedCaller,
                    "this agent is a child owned by another agent and may not ask the user; put the unresolved question or decision in your final result",
                )),
            ),
            Some(e) => (e.name.clone(), Ok(())),
        };
        self.events.record(EventKind::Request {
            call_id: call_id.clone(),
            agent: agent_name.clone(),
            schema: ask.schema,
            keyed: ask.keyed(),
            questions: std::mem::take(&mut ask.questions_json),
            timeout: ask.timeout_arg,
            window_s: match (ask.schema, ask.wait) {
                (Schema::Legacy, _) => None,
                (Schema::Timed, Wait::Window(s)) => Some(s),
                (Schema::Timed, Wait::Blocking) => Some(-1.0),
            },
        });
        let refusal = match identity {
            Err(refusal) => Some(refusal),
            // A request whose turn fired while it travelled settles at once: it
            // never reaches an answerer.
            Ok(()) if turn.is_cancelled() => Some((
                ErrorCode::Aborted,
                "the turn was cancelled before the call settled",
            )),
            Ok(()) if self.calls.len() >= self.limits.open_calls_max => Some((
                ErrorCode::LimitExceeded,
                "too many open questions; nothing was queued",
            )),
            Ok(()) => None,
        };
        if let Some((code, message)) = refusal {
            let result = ToolResult::error(code, message);
            self.record_result(&call_id, &agent_name, &result);
            self.jitter.reply(&self.sched, reply, result);
            return;
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let window = match ask.wait {
            Wait::Window(s) => {
                Some(self.timer(Duration::from_secs_f64(s), BrokerMsg::WindowExpired { ticket }))
            }
            Wait::Blocking => None,
        };
        let watch = self.watch_turn(&turn);
        self.by_call_id.insert(call_id.clone(), ticket);
        self.calls.insert(
            ticket,
            Call {
                call_id,
                agent,
                ask,
                phase: Phase::Waiting(Some(reply)),
                turn,
                next: 0,
                offered: None,
                attempt: 0,
                owner: None,
                held: false,
                window,
                offer_timer: None,
                watch: Some(watch),
            },
        );
        self.offer_next(ticket);
    }

    fn restore(&mut self, agent: AgentId, call_id: String, ask: Ask) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.by_call_id.insert(call_id.clone(), ticket);
        let call = Call {
            call_id,
            agent,
            ask,
            phase: Phase::Pending,
            turn: CancellationToken::new(),
            next: 0,
            offered: None,
            attempt: 0,
            owner: None,
            held: false,
            window: None,
            offer_timer: None,
            watch: None,
        };
        self.calls.insert(ticket, call);
        self.offer_next(ticket);
    }

    /// A task that tells the broker when the call's turn fires; it ends when the
    /// call leaves the foreground. It is not a timer: nothing is due on it.
    fn watch_turn(&self, turn: &CancellationToken) -> CancellationToken {
        let stop = CancellationToken::new();
        let (turn, done, broker, epoch) = (
            turn.clone(),
            stop.clone(),
            self.myself.clone(),
            self.sched.epoch().clone(),
        );
        tokio::spawn(async move {
            tokio::select! {
                biased;
                _ = done.cancelled() => {}
                _ = epoch.cancelled() => {}
                _ = turn.cancelled() => {
                    let _ = broker.send_message(BrokerMsg::TurnCancelled);
                }
            }
        });
        stop
    }

    fn timer(&self, delay: Duration, msg: BrokerMsg) -> Timer {
        let broker = self.myself.clone();
        self.sched.after(delay, move || {
            let _ = broker.send_message(msg);
        })
    }

    fn offer_next(&mut self, ticket: u64) {
        let Some(call) = self.calls.get_mut(&ticket) else {
            return;
        };
        call.offered = None;
        while call.next < self.answerers.len() {
            let index = call.next;
            call.next += 1;
            let slot = &self.answerers[index];
            if !slot.alive {
                continue;
            }
            call.attempt += 1;
            call.offered = Some(index);
            let offer = Offer {
                ticket,
                call_id: call.ask.keyed().then(|| call.call_id.clone()),
                agent: self
                    .agents
                    .get(&call.agent)
                    .map(|e| e.name.clone())
                    .unwrap_or_default(),
                schema: call.ask.schema,
                questions: Arc::clone(&call.ask.questions),
                reply: Reply {
                    broker: self.myself.clone(),
                    ticket,
                    answerer: index,
                },
            };
            self.events.record(EventKind::Offer {
                call_id: call.call_id.clone(),
                answerer: slot.name.clone(),
            });
            let attempt = call.attempt;
            let broker = self.myself.clone();
            call.offer_timer = Some(self.sched.after(self.offer_timeout, move || {
                let _ = broker.send_message(BrokerMsg::OfferTimeout { ticket, attempt });
            }));
            let actor = slot.actor.clone();
            self.jitter.send(&self.sched, &actor, AnswererMsg::Offer(offer));
            return;
        }
        // The waterfall ran out.
        self.end_call(ticket, End::NoAnswerer, "NO_ANSWERER", true);
    }

    fn accept(&mut self, ticket: u64, answerer: usize) {
        let Some(call) = self.calls.get_mut(&ticket) else {
            // Settled or cancelled before the accept arrived: nothing to own.
            self.withdraw_from(answerer, ticket);
            return;
        };
        if call.offered != Some(answerer) {
            // A late accept after the offer timed out: the waterfall moved on.
            self.withdraw_from(answerer, ticket);
            return;
        }
        if let Some(t) = call.offer_timer.take() {
            t.cancel();
        }
        call.offered = None;
        call.owner = Some(answerer);
        let name = self.answerers[answerer].name.clone();
        self.events.record(EventKind::Accept {
            call_id: call.call_id.clone(),
            answerer: name,
        });
    }

    fn decline(&mut self, ticket: u64, answerer: usize) {
        let Some(call) = self.calls.get_mut(&ticket) else {
            return;
        };
        if call.offered != Some(answerer) {
            return;
        }
        if let Some(t) = call.offer_timer.take() {
            t.cancel();
        }
        let name = self.answerers[answerer].name.clone();
        self.events.record(EventKind::Decline {
            call_id: call.call_id.clone(),
            answerer: name,
            reason: "declined".into(),
        });
        self.offer_next(ticket);
    }

    fn offer_timeout(&mut self, ticket: u64, attempt: u64) {
        let Some(call) = self.calls.get_mut(&ticket) else {
            return;
        };
        let Some(answerer) = call.offered.filter(|_| call.attempt == attempt) else {
            return;
        };
        call.offer_timer = None;
        let name = self.answerers[answerer].name.clone();
        self.events.record(EventKind::Decline {
            call_id: call.call_id.clone(),
            answerer: name,
            reason: "offer_timeout".into(),
        });
        self.withdraw_from(answerer, ticket);
        self.offer_next(ticket);
    }

    fn hold(&mut self, ticket: u64, answerer: usize) {
        let dead = !self.answerers.get(answerer).is_some_and(|s| s.alive);
        let refusal = match self.calls.get_mut(&ticket) {
            _ if dead => Some("owner_dead"),
            None => Some(self.closed_reason(ticket)),
            Some(call) if call.owner != Some(answerer) => Some("not_owner"),
            Some(call) => match call.phase {
                Phase::Pending => Some("settled"),
                Phase::Waiting(_) => {
                    call.held = true;
                    if let Some(t) = call.window.take() {
                        t.cancel();
                    }
                    let name = self.answerers[answerer].name.clone();
                    self.events.record(EventKind::Hold {
                        call_id: call.call_id.clone(),
                        answerer: name,
                    });
                    None
                }
            },
        };
        if let Some(reason) = refusal {
            self.refuse(ticket, answerer, "hold", reason.to_owned());
        }
    }

    fn submit(&mut self, ticket: u64, answerer: usize, batch: Value) {
        let call_id = self.call_id_of(ticket);
        let name = self.answerer_name(answerer);
        self.events.record(EventKind::Answer {
            call_id,
            answerer: name,
            batch: batch.clone(),
        });
        // Anything from a dead answerer is refused as such, whatever became of the
        // call since its death (SPEC §3.2).
        let checked = match self.calls.get(&ticket) {
            _ if !self.answerers.get(answerer).is_some_and(|s| s.alive) => Err("owner_dead".to_owned()),
            None => Err(self.closed_reason(ticket).to_owned()),
            Some(call) if call.owner != Some(answerer) => Err("not_owner".to_owned()),
            Some(call) => validate_batch(&call.ask.questions, &batch).map_err(|refusal| refusal.0),
        };
        match checked {
            Err(reason) => self.refuse(ticket, answerer, "submit", reason),
            Ok(items) => self.end_call(ticket, End::Answers(items), "answered", false),
        }
    }

    fn window_expired(&mut self, ticket: u64) {
        let agent = self
            .calls
            .get(&ticket)
            .map(|c| self.agent_name(c.agent))
            .unwrap_or_default();
        let Some(call) = self.calls.get_mut(&ticket) else {
            return;
        };
        if call.held {
            return;
        }
        let Phase::Waiting(reply) = std::mem::replace(&mut call.phase, Phase::Pending) else {
            return;
        };
        call.window = None;
        if let Some(w) = call.watch.take() {
            w.cancel();
        }
        let result = ToolResult::pending(&call.call_id);
        let call_id = call.call_id.clone();
        self.record_result(&call_id, &agent, &result);
        if let Some(reply) = reply {
            self.jitter.reply(&self.sched, reply, result);
        }
    }

    fn turn_cancelled(&mut self) {
        let fired: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::Waiting(_)) && c.turn.is_cancelled())
            .map(|(t, _)| *t)
            .collect();
        for ticket in fired {
            self.end_call(
                ticket,
                End::Abort("the turn was cancelled before the call settled"),
                "turn",
                false,
            );
        }
    }

    fn cancel_call(&mut self, call_id: &str) {
        self.events.record(EventKind::CancelCall {
            call_id: call_id.to_owned(),
        });
        if let Some(&ticket) = self.by_call_id.get(call_id) {
            self.end_call(ticket, End::Abort("the call was cancelled"), "cancel_call", false);
        }
    }

    fn answerer_died(&mut self, index: usize) {
        if !self.answerers[index].alive {
            return;
        }
        self.answerers[index].alive = false;
        self.events.record(EventKind::Crash {
            answerer: self.answerers[index].name.clone(),
        });
        let affected: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.owner == Some(index) || c.offered == Some(index))
            .map(|(t, _)| *t)
            .collect();
        for ticket in affected {
            let Some(call) = self.calls.get_mut(&ticket) else {
                continue;
            };
            call.owner = None;
            if let Some(t) = call.offer_timer.take() {
                t.cancel();
            }
            let call_id = call.call_id.clone();
            self.events.record(EventKind::Decline {
                call_id,
                answerer: self.answerers[index].name.clone(),
                reason: "dead".into(),
            });
            // Fail-over: the rest of the waterfall, after the dead answerer.
            self.offer_next(ticket);
        }
    }

    /// Closes a call: settles a waiting one with `end`'s result, or closes a
    /// pending one (late answer, withdrawal with or without a message).
    fn end_call(&mut self, ticket: u64, end: End, reason: &'static str, message_on_withdraw: bool) {
        let Some(mut call) = self.calls.remove(&ticket) else {
            return;
        };
        call.cancel_timers();
        self.by_call_id.remove(&call.call_id);
        let agent = self.agent_name(call.agent);
        let answered = matches!(end, End::Answers(_));
        // Whoever still works on it stops; the owner that just answered needs no word.
        if let Some(working) = call.owner.or(call.offered)
            && !answered
        {
            self.withdraw_from(working, ticket);
        }
        match std::mem::replace(&mut call.phase, Phase::Pending) {
            Phase::Waiting(reply) => {
                let result = match end {
                    End::Answers(items) => ToolResult::answers(match call.ask.schema {
                        Schema::Legacy => legacy::render_answers(&call.ask.questions, &items),
                        Schema::Timed => timed::render_answers(&items),
                    }),
                    End::NoAnswerer => {
                        ToolResult::error(ErrorCode::NoAnswerer, "no answerer accepted the request")
                    }
                    End::Abort(message) => ToolResult::error(ErrorCode::Aborted, message),
                };
                self.record_result(&call.call_id, &agent, &result);
                if let Some(reply) = reply {
                    self.jitter.reply(&self.sched, reply, result);
                }
                self.closed.insert(ticket, (call.call_id, "settled"));
            }
            Phase::Pending => {
                let message = match end {
                    End::Answers(items) => {
                        let message = late_answer_message(&call.call_id, &call.ask.questions_raw, &items);
                        self.events.record(EventKind::LateAnswer {
                            call_id: call.call_id.clone(),
                            agent,
                            answers: items,
                            message: message.clone(),
                        });
                        Some(message)
                    }
                    End::NoAnswerer | End::Abort(_) => {
                        let message = message_on_withdraw
                            .then(|| withdrawal_message(&call.call_id, ErrorCode::NoAnswerer));
                        self.events.record(EventKind::Withdraw {
                            call_id: call.call_id.clone(),
                            agent,
                            reason: reason.to_owned(),
                            message: message.clone(),
                        });
                        message
                    }
                };
                if let Some(entry) = self.agents.get(&call.agent) {
                    let inbox = entry.inbox.clone();
                    let closed = AgentMsg::Closed {
                        call_id: call.call_id.clone(),
                        message,
                    };
                    self.jitter.send(&self.sched, &inbox, closed);
                }
                self.closed.insert(
                    ticket,
                    (call.call_id, if answered { "settled" } else { "withdrawn" }),
                );
            }
        }
    }

    fn record_result(&self, call_id: &str, agent: &str, result: &ToolResult) {
        self.events.record(EventKind::Result {
            call_id: call_id.to_owned(),
            agent: agent.to_owned(),
            result: result.text.clone(),
            is_error: result.is_error,
        });
    }

    fn refuse(&mut self, ticket: u64, answerer: usize, what: &str, reason: String) {
        self.events.record(EventKind::Refused {
            call_id: self.call_id_of(ticket),
            answerer: self.answerer_name(answerer),
            what: what.to_owned(),
            reason: reason.clone(),
        });
        if let Some(slot) = self.answerers.get(answerer) {
            let actor = slot.actor.clone();
            let msg = AnswererMsg::Refused {
                ticket,
                what: what.to_owned(),
                reason,
            };
            self.jitter.send(&self.sched, &actor, msg);
        }
    }

    fn withdraw_from(&mut self, answerer: usize, ticket: u64) {
        if let Some(slot) = self.answerers.get(answerer) {
            let actor = slot.actor.clone();
            self.jitter
                .send(&self.sched, &actor, AnswererMsg::Withdraw { ticket });
        }
    }

    fn closed_reason(&self, ticket: u64) -> &'static str {
        self.closed.get(&ticket).map_or("unknown", |(_, how)| how)
    }

    fn call_id_of(&self, ticket: u64) -> String {
        match (self.calls.get(&ticket), self.closed.get(&ticket)) {
            (Some(call), _) => call.call_id.clone(),
            (None, Some((call_id, _))) => call_id.clone(),
            (None, None) => format!("?ticket-{ticket}"),
        }
    }

    fn answerer_name(&self, answerer: usize) -> String {
        self.answerers
            .get(answerer)
            .map_or_else(|| format!("?answerer-{answerer}"), |s| s.name.clone())
    }

    fn agent_name(&self, agent: AgentId) -> String {
        self.agents
            .get(&agent)
            .map_or_else(|| "?".to_owned(), |e| e.name.clone())
    }

    fn status(&self) -> BrokerStatus {
        let open = self
            .calls
            .values()
            .map(|c| {
                let phase = match c.phase {
                    Phase::Waiting(_) => "waiting",
                    Phase::Pending => "pending",
                };
                (c.call_id.clone(), phase)
            })
            .collect();
        BrokerStatus { open }
    }
}

enum End {
    Answers(Vec<crate::tool::AnswerItem>),
    NoAnswerer,
    Abort(&'static str),
}
