//! The actor runtime: the broker, agents and answerers as ractor actors on tokio,
//! for the library ([`Runtime`]) and for real-clock scenario runs
//! ([`crate::sim::engine::real_clock`]).
//!
//! Each actor wraps the same state as the simulator runs ([`crate::broker`],
//! [`crate::agent`], [`crate::answerer`]) and carries out its effects here: sends
//! go to ractor mailboxes (ractor keeps them in order between two actors), timers
//! are tokio timers, events go to the shared recorder. What this runtime adds is
//! only what a real process needs: turn signals as `CancellationToken`s users may
//! fire directly, replies to library callers, supervision of answerers, and an
//! account of what is in flight so a real-clock run knows when it is over.
//!
//! An agent a library user drives runs no script, and has no actor: its state
//! is stepped in place by whoever sends to it (`agent/passive.rs`), which spares a
//! call the mailbox hops to and from its agent. Scripted agents are actors.
//! The broker's state is stepped in place too, by whoever sends it mail
//! ([`seat`]), unless a user's answerer actor is in the waterfall; its actor
//! stays to supervise the answerers' actors.
//!
//! With a durable log ([`crate::durable`]) every handler's events are recorded
//! before any of its sends go, and what goes to an agent or an answerer (a
//! result, an offer, a user message, a withdrawal: what leaves the process)
//! passes the write-ahead gate, and is handed on outside its lock by the
//! courier ([`courier`]). Mail to the broker does not: it is not an effect,
//! and the broker records what it decides from it.

mod agent;
mod answerer;
mod broker;
mod counts;
mod courier;
mod recover;
mod runtime;
mod timers;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use ractor::ActorRef;
use rustc_hash::FxHashMap;
use tokio_util::sync::CancellationToken;

use crate::durable::{Gate, LogFile};
use crate::effect::{Effect, Out, Spawn, TimerId};
use crate::protocol::{AgentId, AnswererInput, AnswererIx, AnswererMsg, BrokerMail, Envelope, Name, Nanos};
use crate::tool::ToolConfig;

pub(crate) use crate::journal::Journal;
pub use crate::panics::panic_message;
pub use agent::AgentHandle;
pub use counts::RuntimeCounts;
pub(crate) use recover::resumed_clock;
pub use recover::{Recovered, ResumedAgent};
pub(crate) use runtime::Continuity;
pub use runtime::{AnswererSlot, EventLog, Runtime, RuntimeConfig, StartError};
pub(crate) use timers::Timers;

use agent::AgentRef;
use broker::{order, seat};

/// What every actor of one runtime shares.
pub(crate) struct Shared {
    /// This runtime's own handle on itself, for the broker's steps in place
    /// ([`seat`]), which start its timers' task.
    me: Weak<Shared>,
    broker: OnceLock<ActorRef<BrokerMail>>,
    /// The broker's state and its inbox.
    seat: seat::Seat,
    agents: Mutex<FxHashMap<AgentId, AgentRef>>,
    names: Mutex<BTreeMap<Name, AgentId>>,
    /// The waterfall's actors.
    answerers: OnceLock<Vec<AnswererRef>>,
    recorder: Arc<Journal>,
    /// The run's start (shared across restarts): every `t` counts from it.
    start: tokio::time::Instant,
    /// Messages the runtime's actors sent and have not handled yet.
    in_flight: AtomicI64,
    /// Timers started and not fired or cancelled (faults excluded).
    due: Arc<AtomicI64>,
    /// Every timer and watcher of this runtime dies with it.
    epoch: CancellationToken,
    next_agent: Arc<AtomicU64>,
    tool: ToolConfig,
    /// The runtime's memo of validated script arguments, shared by its agents.
    prepared: crate::agent::Prepared,
    finals: Arc<Mutex<BTreeMap<String, crate::effect::FinalResult>>>,
    /// The first panic in an actor of this runtime.
    crashed: Arc<Mutex<Option<String>>>,
    shutting_down: std::sync::atomic::AtomicBool,
    /// Send times of the broker's mail a window expiry must not overtake.
    stamps: Mutex<order::Stamps>,
    /// The durable log, when the runtime has one.
    log: Option<LogFile>,
    /// What the runtime did, counted.
    counts: counts::Counters,
    /// What leaves the process waits here for its lines (with a log).
    gate: Option<Arc<Gate<Envelope>>>,
    /// What the gate released, on its way out of every lock ([`courier`]).
    courier: courier::Courier,
}

impl Shared {
    fn now(&self) -> Nanos {
        self.start.elapsed().as_nanos().min(u64::MAX as u128) as u64
    }

    fn broker(&self) -> Option<&ActorRef<BrokerMail>> {
        self.broker.get()
    }

    fn agent(&self, id: AgentId) -> Option<AgentRef> {
        self.agents.lock().expect("agents poisoned").get(&id).cloned()
    }

    /// Sends `envelope` to its receiver, counted as in flight until handled
    /// (a user's own answerer never reports handling, so what it gets is not
    /// counted). What goes to an agent or an answerer passes the write-ahead
    /// gate when there is a log, and what the gate lets through is handed on
    /// here at once, outside its lock ([`courier`]). A library agent takes
    /// what is sent to it in place ([`passive`]), counted as a step, not a
    /// message.
    fn route(&self, envelope: Envelope) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        match (&self.gate, &envelope) {
            (Some(gate), Envelope::Agent(..) | Envelope::Answerer(..)) => {
                // The agent's kind says how it is counted, on delivery.
                if let Envelope::Answerer(..) = &envelope {
                    self.counts.message(&envelope);
                }
                gate.pass(envelope);
                self.courier.drain(self);
            }
            // The agent's kind says how it is counted.
            (_, Envelope::Agent(..)) => self.deliver(envelope, true),
            (_, Envelope::Broker(msg)) if self.seat.in_place() => {
                self.counts.in_place_broker(msg);
                self.deliver(envelope, false)
            }
            _ => {
                self.counts.message(&envelope);
                self.deliver(envelope, false)
            }
        }
    }

    /// [`Shared::route`] past the gate; what goes to an agent is counted there
    /// when `count` (not yet counted, as on the way out of the gate).
    fn deliver(&self, envelope: Envelope, count: bool) {
        let counted = match envelope {
            Envelope::Broker(msg) => self.send_broker(BrokerMail { msg, counted: true }),
            Envelope::Agent(id, msg) => self.agent(id).is_some_and(|a| a.deliver(self, msg, count)),
            Envelope::Answerer(index, mut msg) => {
                if let AnswererInput::Broker(AnswererMsg::Offer(offer)) = &mut msg {
                    offer.broker = self.broker().cloned();
                }
                self.answerers
                    .get()
                    .and_then(|a| a.get(index as usize))
                    .is_some_and(|slot| slot.send(msg))
            }
            Envelope::Driver(_) => false,
        };
        if !counted {
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Sends the broker `mail`, its send time stamped (in the order it is
    /// queued) when a window expiry must not overtake it: to its inbox, then
    /// stepped in place ([`seat`]), or to its actor's mailbox.
    fn send_broker(&self, mail: BrokerMail) -> bool {
        let kind = order::kind(&mail.msg);
        let sent = if kind == order::Kind::Free {
            self.put_broker(mail)
        } else {
            let mut stamps = self.stamps.lock().expect("stamps poisoned");
            stamps.push(kind, self.now());
            let sent = self.put_broker(mail);
            if !sent {
                stamps.pop(kind);
            }
            sent
        };
        self.step_broker(sent);
        sent
    }

    /// Queues `mail` for the broker (its inbox, or its actor's mailbox); false
    /// if the broker is not there to take it.
    fn put_broker(&self, mail: BrokerMail) -> bool {
        if self.seat.in_place() {
            self.seat.push(mail)
        } else {
            self.broker()
                .is_some_and(|broker| broker.send_message(mail).is_ok())
        }
    }

    /// Steps the broker through its inbox after mail was `put` there.
    fn step_broker(&self, put: bool) {
        if put && self.seat.in_place() {
            self.seat.drain(self);
        }
    }

    /// A counted message was handled.
    fn handled(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    /// A counted message was handled by the built-in answerer at `index`.
    fn answerer_handled(&self, index: AnswererIx) {
        if let Some(slot) = self.answerers.get().and_then(|a| a.get(index as usize)) {
            let mut outstanding = slot.outstanding.lock().expect("slot poisoned");
            if let Some(n) = outstanding.as_mut() {
                *n -= 1;
                self.handled();
            }
        }
    }

    /// The built-in answerer at `index` died: what was queued for it will never
    /// be handled, and nothing sent to it from now on is counted.
    fn answerer_died(&self, index: AnswererIx) {
        if let Some(slot) = self.answerers.get().and_then(|a| a.get(index as usize)) {
            let mut outstanding = slot.outstanding.lock().expect("slot poisoned");
            if let Some(n) = outstanding.take() {
                self.in_flight.fetch_sub(n, Ordering::SeqCst);
            }
        }
    }

    fn record_panic(&self, message: String) {
        let mut crashed = self.crashed.lock().expect("crash slot poisoned");
        crashed.get_or_insert(message);
    }
}

/// Where an answerer runs: inside the broker's actor (the built-in policy
/// answerer, `broker/resident.rs`), in the runtime's answerer actor (a user's sans-IO
/// answerer: it takes its timers too), or in a user's actor (it takes the
/// broker's messages only).
pub(crate) enum AnswererActorRef {
    /// Inside the broker's actor: nothing is sent to it through a mailbox.
    Resident,
    /// The runtime's answerer actor.
    Machine(ActorRef<AnswererInput>),
    /// A user's actor.
    User(ActorRef<AnswererMsg>),
}

impl AnswererActorRef {
    /// The actor's id; `None` for a resident, which has no actor.
    pub(crate) fn id(&self) -> Option<ractor::ActorId> {
        match self {
            AnswererActorRef::Resident => None,
            AnswererActorRef::Machine(actor) => Some(actor.get_id()),
            AnswererActorRef::User(actor) => Some(actor.get_id()),
        }
    }

    /// Sends `input`; false if the actor is gone (or `input` is a timer, which
    /// a user's actor never starts, or the answerer is a resident, which the
    /// broker reaches in place).
    fn send(&self, input: AnswererInput) -> bool {
        match self {
            AnswererActorRef::Resident => false,
            AnswererActorRef::Machine(actor) => actor.send_message(input).is_ok(),
            AnswererActorRef::User(actor) => match input {
                AnswererInput::Broker(msg) => actor.send_message(msg).is_ok(),
                AnswererInput::Timer(_) => false,
            },
        }
    }
}

/// One answerer of the waterfall as the runtime reaches it.
pub(crate) struct AnswererRef {
    actor: AnswererActorRef,
    /// Messages queued for a built-in answerer and not handled yet; `None` for a
    /// user's actor (which never reports handling), for a resident (which gets
    /// no mail) and once the answerer died.
    outstanding: Mutex<Option<i64>>,
    /// Set when the runtime kills the answerer ([`Runtime::crash_answerer`]):
    /// a resident handles nothing from then on, as a stopped actor would not.
    killed: std::sync::atomic::AtomicBool,
}

impl AnswererRef {
    /// Kills the answerer, as a crash would: an actor is stopped (the broker
    /// hears of it through supervision); a resident handles nothing more, and
    /// the broker is told of its death through its mailbox, behind whatever
    /// is there.
    pub(crate) fn kill(&self, shared: &Shared, index: AnswererIx) {
        match &self.actor {
            AnswererActorRef::Resident => {
                if !self.killed.swap(true, Ordering::SeqCst) {
                    shared.route(Envelope::Broker(crate::protocol::BrokerMsg::AnswererDied {
                        answerer: index,
                    }));
                }
            }
            AnswererActorRef::Machine(actor) => actor.stop(Some("crash".into())),
            AnswererActorRef::User(actor) => actor.stop(Some("crash".into())),
        }
    }

    /// Sends `msg`; true if it is counted in flight (the caller then counts it).
    fn send(&self, msg: AnswererInput) -> bool {
        let mut outstanding = self.outstanding.lock().expect("slot poisoned");
        let sent = self.actor.send(msg);
        match outstanding.as_mut() {
            Some(n) if sent => {
                *n += 1;
                true
            }
            _ => false,
        }
    }
}

/// Where an actor's timers run: one sleeper per actor ([`Timers`], agents and
/// answerers) or the broker's wheel (`broker/wheel.rs`).
pub(crate) trait TimerSink {
    /// Starts timer `id`: `envelope` goes out `after` nanoseconds from now.
    fn start(&mut self, shared: &Arc<Shared>, id: TimerId, after: Nanos, envelope: Envelope, fault: bool);
    /// Cancels timer `id`, if it has not fired.
    fn cancel(&mut self, shared: &Arc<Shared>, id: TimerId);
    /// Cancels every timer (the actor stops).
    fn cancel_all(&mut self, shared: &Arc<Shared>);
}

/// What an actor's effects may need from the actor itself.
pub(crate) trait Host {
    /// Starts a child agent (agents only).
    fn spawn(&mut self, shared: &Arc<Shared>, spawn: Spawn) -> impl std::future::Future<Output = ()> + Send;
    /// The actor dies (answerers only).
    fn die(&mut self);
    /// A message the actor sends to the broker is about to go (agents check
    /// their turn token here).
    fn before_send(&mut self, _shared: &Arc<Shared>, _envelope: &Envelope) {}
    /// Takes a send the actor carries out in place instead of through a
    /// mailbox (the broker's to its resident answerers, theirs to the broker,
    /// `broker/resident.rs`), or gives it back to be routed.
    fn divert(&mut self, envelope: Envelope) -> Option<Envelope> {
        Some(envelope)
    }
    /// Where the handler's events wait to be recorded: `None`, recorded at
    /// once (the default); `Some`, gathered with those of the handlers before
    /// it (the broker and its residents, one batch for all a mailbox message
    /// led to) and recorded before anything is routed.
    fn deferred(&mut self) -> Option<&mut Vec<crate::event::EventKind>> {
        None
    }
}

/// Carries out what the actor at `from` did: its events first, all of them, so
/// that every send of the handler comes after the lines it depends on (the
/// write-ahead rule of SPEC §4.1), then the rest in order. Events the host
/// defers ([`Host::deferred`]) are recorded before the first send that is
/// routed: what is routed still comes after every line before it. A spawn is
/// awaited before the effects after it.
pub(crate) async fn execute<H: Host, T: TimerSink>(
    shared: &Arc<Shared>,
    out: &mut Out,
    timers: &mut T,
    host: &mut H,
) {
    let t = record(shared, out, host);
    let mut effects = out.drain();
    while let Some(spawn) = carry_out(shared, t, &mut effects, timers, host) {
        host.spawn(shared, spawn).await;
    }
}

/// [`execute`] for a host that never spawns (the broker and its resident
/// answerers), with nothing to await: the broker is stepped in place by
/// whoever sends to it ([`seat`]).
pub(crate) fn execute_now<H, T>(shared: &Arc<Shared>, out: &mut Out, timers: &mut T, host: &mut H)
where
    H: Host,
    T: TimerSink,
{
    let t = record(shared, out, host);
    let spawned = carry_out(shared, t, &mut out.drain(), timers, host);
    assert!(spawned.is_none(), "the broker and its residents spawn nothing");
}

/// Records the handler's events (or defers them with the host's); the time
/// they are recorded at.
fn record<H: Host>(shared: &Shared, out: &mut Out, host: &mut H) -> f64 {
    let t = crate::protocol::seconds(out.now());
    match host.deferred() {
        Some(deferred) => deferred.extend(out.take_records()),
        None => {
            shared.recorder.record(t, out.take_records());
        }
    }
    t
}

/// Carries out `effects` in order up to the first spawn, which it returns for
/// the caller to await before the rest.
fn carry_out<H: Host, T: TimerSink>(
    shared: &Arc<Shared>,
    t: f64,
    effects: &mut impl Iterator<Item = Effect>,
    timers: &mut T,
    host: &mut H,
) -> Option<Spawn> {
    for effect in effects {
        match effect {
            Effect::Send(envelope) => {
                host.before_send(shared, &envelope);
                if let Some(envelope) = host.divert(envelope) {
                    if let Some(deferred) = host.deferred() {
                        shared.recorder.record(t, deferred.drain(..));
                    }
                    shared.route(envelope);
                }
            }
            Effect::Timer {
                id,
                after,
                msg,
                fault,
            } => timers.start(shared, id, after, msg, fault),
            Effect::Cancel(id) => timers.cancel(shared, id),
            Effect::Record(_) => unreachable!("recorded above"),
            Effect::Spawn(spawn) => return Some(spawn),
            Effect::Die => host.die(),
            Effect::Finished { agent, final_result } => {
                let mut finals = shared.finals.lock().expect("finals poisoned");
                finals.insert(agent.to_string(), final_result);
            }
        }
    }
    None
}

/// Runs a handler, turning a panic into the runtime's crash report.
pub(crate) fn guarded(shared: &Shared, handler: impl FnOnce()) -> bool {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(handler)) {
        Ok(()) => true,
        Err(panic) => {
            shared.record_panic(panic_message(panic.as_ref()));
            false
        }
    }
}
