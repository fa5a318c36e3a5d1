//! The `userQuestions` seam: identity checks, the waterfall, foreground windows,
//! holds, the pending registry and the error taxonomy (SPEC §3).
//!
//! [`BrokerState::handle`] takes one message at a time, and every decision is
//! taken in that order: message order alone picks the winner of every race (SPEC
//! §3.7). Whatever loses is refused back to its sender and recorded, never
//! dropped. The broker reads no clock and starts no task: its timers are
//! [`Out::timer`]s, carried out by whichever executor runs it.
//!
//! Its rooms: [`agents`] (the agent tree and identity), [`calls`] (the call
//! table, its open calls by ticket in `open_calls`), `waterfall` (offers, accepts, declines, offer timeouts, deaths) and
//! `settle` (windows, holds, batches, and closing a call).

mod agents;
mod appended;
mod by_id;
mod calls;
mod open_calls;
mod settle;
mod turn_index;
mod waterfall;

use std::collections::{BTreeMap, BTreeSet};

use crate::effect::{Out, TimerId};
use crate::event::EventKind;
use crate::protocol::{
    AgentMsg, AnswererIx, BrokerMsg, BrokerStatus, CallId, Name, Nanos, Registration, Request, Restored,
    Turn, TurnId, WithdrawReason, nanos,
};
use crate::tool::result::{DELEGATED_MESSAGE, OPEN_CALLS_MESSAGE, TURN_FIRED_MESSAGE};
use crate::tool::{ErrorCode, ToolResult, Wait};
use agents::{AgentTree, Identity};
use calls::{Call, CallTable, End, Phase};

pub use crate::limits::{ANSWERERS_MAX, BrokerLimits, OPEN_CALLS_MAX};

/// What a broker starts from.
#[derive(Clone, Debug)]
pub struct BrokerConfig {
    /// The waterfall's answerers, by name, in order.
    pub answerers: Vec<Name>,
    /// Seconds an offeree has to accept or decline.
    pub offer_timeout_s: f64,
    /// The broker's limits.
    pub limits: BrokerLimits,
}

/// Why a broker could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BrokerError {
    /// More answerers than [`ANSWERERS_MAX`].
    #[error("LIMIT_EXCEEDED: more than {ANSWERERS_MAX} answerers")]
    TooManyAnswerers,
}

/// One answerer of the waterfall, as the broker knows it.
#[derive(Debug)]
struct Slot {
    name: Name,
    alive: bool,
}

/// The broker's state: the agent tree, the waterfall and every call.
#[derive(Debug)]
pub struct BrokerState {
    answerers: Vec<Slot>,
    offer_timeout: Nanos,
    limits: BrokerLimits,
    agents: AgentTree,
    calls: CallTable,
    /// Turns whose signal fired: a request made under one settles at once.
    fired: BTreeSet<TurnId>,
    next_timer: TimerId,
}

impl BrokerState {
    /// A broker with an empty tree and no call.
    pub fn new(config: BrokerConfig) -> Result<BrokerState, BrokerError> {
        if config.answerers.len() > ANSWERERS_MAX {
            return Err(BrokerError::TooManyAnswerers);
        }
        let limits = config.limits.capped();
        Ok(BrokerState {
            answerers: config
                .answerers
                .into_iter()
                .map(|name| Slot { name, alive: true })
                .collect(),
            offer_timeout: nanos(config.offer_timeout_s),
            limits,
            agents: AgentTree::new(limits.agents_per_tree_max),
            calls: CallTable::default(),
            fired: BTreeSet::new(),
            next_timer: 0,
        })
    }

    /// Handles one message.
    pub fn handle(&mut self, msg: BrokerMsg, out: &mut Out) {
        tracing::trace!(target: "asksim::msg", to = "broker", msg = msg.name());
        match msg {
            BrokerMsg::Register(reg) => self.register(*reg, out),
            BrokerMsg::Stop(agent) => self.stop_agent(agent, out),
            BrokerMsg::Request(request) => self.request(*request, out),
            BrokerMsg::Accept { ticket, answerer } => self.accept(ticket, answerer, out),
            BrokerMsg::Decline { ticket, answerer } => self.decline(ticket, answerer, out),
            BrokerMsg::Hold { ticket, answerer } => self.hold(ticket, answerer, out),
            BrokerMsg::Submit {
                ticket,
                answerer,
                batch,
            } => self.submit(ticket, answerer, batch, out),
            BrokerMsg::OfferTimeout { ticket, attempt } => self.offer_timeout(ticket, attempt, out),
            BrokerMsg::WindowExpired { ticket, attempt } => self.window_expired(ticket, attempt, out),
            BrokerMsg::CancelTurn { agent, turn } => self.cancel_turn(agent, turn, out),
            BrokerMsg::NewTurn { agent, turn } => {
                if let Some(name) = self.agents.set_turn(agent, turn) {
                    out.record(EventKind::NewTurn { agent: name });
                }
            }
            BrokerMsg::CancelCall { call_id } => self.cancel_call(call_id, out),
            BrokerMsg::Restore(restored) => self.restore(*restored, out),
            BrokerMsg::AnswererDied { answerer } => self.answerer_died(answerer, out),
            BrokerMsg::Status(reply) => {
                let _ = reply.send(self.status());
            }
            BrokerMsg::Wake | BrokerMsg::OutsideTimer { .. } => {}
        }
    }

    /// The open calls now (callId → `"waiting"` or `"pending"`), and how every
    /// call this broker closed closed.
    pub fn status(&self) -> BrokerStatus {
        let closed = self
            .calls
            .closed_states()
            .map(|(call_id, how)| (call_id.to_string(), how.as_str()))
            .collect();
        BrokerStatus {
            open: self.open_calls(),
            closed: Some(closed),
        }
    }

    /// The open calls now (callId → `"waiting"` or `"pending"`): the part of
    /// [`BrokerState::status`] a simulated run reads at its end, without a
    /// table of every call it closed (a large run's whole history, sorted by
    /// callId, then dropped).
    pub fn open_calls(&self) -> BTreeMap<String, &'static str> {
        self.calls
            .iter()
            .map(|c| {
                let phase = match c.phase {
                    Phase::Waiting => "waiting",
                    Phase::Pending => "pending",
                };
                (c.call_id.to_string(), phase)
            })
            .collect()
    }

    /// Whether any call is open (waiting or pending).
    pub fn has_open_calls(&self) -> bool {
        self.calls.len() > 0
    }

    /// Whether answerer `index` owns or is offered an open call: the only
    /// calls its death would change.
    pub fn involves(&self, index: AnswererIx) -> bool {
        self.calls.involves(index)
    }

    /// The answerer at `index`, if the waterfall has it.
    pub fn answerer_name(&self, index: AnswererIx) -> Option<&Name> {
        self.answerers.get(index as usize).map(|s| &s.name)
    }

    fn timer_id(&mut self) -> TimerId {
        self.next_timer += 1;
        self.next_timer
    }

    fn register(&mut self, reg: Registration, out: &mut Out) {
        let owner_name = reg.owner.and_then(|o| self.agents.name(o).cloned());
        let result = self.agents.register(&reg);
        match &result {
            Ok(()) => out.record(EventKind::Spawn {
                agent: reg.name.clone(),
                owner: owner_name,
                lineage: reg.lineage.clone(),
            }),
            Err(error) => out.record(EventKind::SpawnRefused {
                agent: reg.name.clone(),
                owner: owner_name,
                reason: error.as_str().to_owned(),
            }),
        }
        if let Some(owner) = reg.owner {
            let spawned = AgentMsg::Spawned {
                child: reg.name.clone(),
                result: result.clone(),
            };
            out.tell_agent(owner, spawned);
        }
        // A child spawned under a turn that already fired is born with it fired:
        // it hears so before its script could take a step.
        if let Some(fired) = reg
            .turn
            .chain()
            .iter()
            .find(|t| self.fired.contains(t))
            .filter(|_| result.is_ok())
        {
            out.tell_agent(reg.agent, AgentMsg::TurnFired(*fired));
        }
        out.tell_agent(reg.agent, AgentMsg::Registered(result));
    }

    fn stop_agent(&mut self, agent: crate::protocol::AgentId, out: &mut Out) {
        let Some(name) = self.agents.stop(agent) else {
            return;
        };
        out.record(EventKind::Stop { agent: name });
        for ticket in self.calls.of_agent(agent) {
            let end = End::Abort("the calling agent stopped", WithdrawReason::AgentStopped);
            self.end_call(ticket, end, out);
        }
    }

    fn request(&mut self, request: Request, out: &mut Out) {
        let Request {
            agent,
            call_id,
            ask,
            turn,
        } = request;
        let identity = self.agents.identity(agent);
        let agent_name = match &identity {
            Identity::Unknown => Name::from("?"),
            Identity::Stopped(n) | Identity::Delegated(n) | Identity::Root(n) => n.clone(),
        };
        out.record(EventKind::request(&call_id, &agent_name, &ask, out.mbox()));
        let refusal = match identity {
            Identity::Unknown => Some((
                ErrorCode::NotRuntimeRoot,
                "the caller is not a live agent of this runtime (unknown or stale handle)",
            )),
            Identity::Stopped(_) => Some((
                ErrorCode::NotRuntimeRoot,
                "the caller has stopped and is no longer the live runtime root",
            )),
            Identity::Delegated(_) => Some((ErrorCode::DelegatedCaller, DELEGATED_MESSAGE)),
            // A request whose turn fired before it arrived settles at once: it
            // never reaches an answerer.
            Identity::Root(_) if turn.chain().iter().any(|t| self.fired.contains(t)) => {
                Some((ErrorCode::Aborted, TURN_FIRED_MESSAGE))
            }
            Identity::Root(_) if self.calls.len() >= self.limits.open_calls_max => {
                Some((ErrorCode::LimitExceeded, OPEN_CALLS_MESSAGE))
            }
            Identity::Root(_) => None,
        };
        if let Some((code, message)) = refusal {
            let result = ToolResult::error(code, message);
            out.record(EventKind::result(&call_id, &agent_name, &result));
            let how = match code {
                ErrorCode::Aborted => calls::Closed::Aborted,
                _ => calls::Closed::Errored,
            };
            self.calls.closed_unopened(call_id.clone(), how);
            out.tell_agent(agent, AgentMsg::Settled { call_id, result });
            return;
        }
        let window_s = match ask.wait {
            Wait::Window(s) => Some(s),
            Wait::Blocking => None,
        };
        let mut call = Call::new(call_id, agent, agent_name, ask, Some(turn));
        call.window_end = window_s.map(|s| out.now().saturating_add(nanos(s)));
        let ticket = self.calls.open(call);
        if let Some(s) = window_s {
            self.start_window(ticket, nanos(s), out);
        }
        self.offer_next(ticket, out);
    }

    fn restore(&mut self, restored: Restored, out: &mut Out) {
        let Restored {
            agent,
            agent_name,
            call_id,
            ask,
        } = restored;
        let ask = match ask {
            Some(ask) if self.agents.is_live(agent) => ask,
            // Nothing can answer it or nobody is there to read the answer: it is
            // withdrawn, so the log and the broker agree.
            _ => {
                let reason = WithdrawReason::NotRestorable;
                out.record(EventKind::withdraw(&call_id, &agent_name, reason, None));
                self.calls.closed_unopened(call_id, calls::Closed::Withdrawn);
                return;
            }
        };
        let ticket = self.calls.open(Call::new(call_id, agent, agent_name, ask, None));
        self.offer_next(ticket, out);
    }

    /// A turn fired (SPEC §3.8). Its agents hear it first, so a script waiting
    /// on a call ends when that call's aborted result arrives; then every waiting
    /// call of the turn and of the turns derived from it settles as `ABORTED`. A
    /// turn derived from one that already fired has fired with it: nothing to do.
    fn cancel_turn(&mut self, agent: crate::protocol::AgentId, turn: Turn, out: &mut Out) {
        if turn.chain().iter().any(|t| self.fired.contains(t)) {
            return;
        }
        let name = self
            .agents
            .name(agent)
            .cloned()
            .unwrap_or_else(|| Name::from("?"));
        out.record(EventKind::Cancel { agent: name });
        let id = turn.id();
        self.fired.insert(id);
        // The calls' ends come after the agents' word, but are written first,
        // beside: the outbox then grows once, to its size, and is not copied
        // at each doubling (a tree of 10^5 agents).
        let fired = self.agents.fired_by(id);
        let mut ends = out.beside();
        for ticket in self.calls.waiting_fired_by(id) {
            self.end_call(ticket, End::TurnFired, &mut ends);
        }
        out.reserve(fired.len() + ends.len());
        for fired in fired {
            out.tell_agent(fired, AgentMsg::TurnFired(id));
        }
        out.append(&mut ends);
    }

    fn cancel_call(&mut self, call_id: CallId, out: &mut Out) {
        out.record(EventKind::CancelCall {
            call_id: call_id.clone(),
        });
        if let Some(ticket) = self.calls.ticket_of(&call_id) {
            let end = End::Abort("the call was cancelled", WithdrawReason::CancelCall);
            self.end_call(ticket, end, out);
        }
    }
}
