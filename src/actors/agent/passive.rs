//! Library agents, stepped in place (issue #23).
//!
//! An agent a library user drives runs no script: its handler never spawns,
//! starts a timer or awaits anything; it numbers a call and sends the broker
//! its request, settles a caller's reply, records a user message, wakes whoever
//! waits for a close. Through a mailbox each of those was a hop (four of a
//! pending call's seven). So its state lives here under a lock, and whoever
//! has something for it (a handle's `ask`, the broker delivering a result)
//! runs its handler and carries out what it did in place, at once.
//!
//! What stays as an actor would have it: one message at a time (the lock),
//! each sender's messages in the order sent (a sender steps it before it sends
//! the next), the handler's events recorded before its sends, a panic ends the
//! agent (it takes nothing more, as a stopped actor would not). Two senders'
//! messages were never ordered between them, and are not here.
//!
//! With a durable log, what the broker sends an agent passes the write-ahead
//! gate first; the gate releases it from whichever thread made its lines
//! durable, at times with the recorder locked, so the runtime's courier
//! ([`super::super::courier`]) hands it on outside every lock, on a thread of
//! the runtime's: the agent is stepped in place there too.
//!
//! A scripted agent (a scenario's, or a child a script spawns) stays an actor
//! of its own ([`super::actor`]): its effects await.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::super::seat::Held;
use super::super::{Shared, guarded};
use super::turn::watch;
use crate::agent::AgentState;
use crate::effect::{Effect, Out};
use crate::protocol::{AgentMsg, BrokerMsg, Envelope, Turn};

/// A library agent: its state under a lock.
pub(crate) struct Passive {
    /// `None` once the agent stopped, or its handler panicked.
    ///
    /// A `std::sync::Mutex`, not tokio's: a step never awaits while holding
    /// it, and it is held only for one handler and its sends (no lock of
    /// another agent is ever taken under it: a library agent sends only to the
    /// broker).
    core: Mutex<Option<Core>>,
}

/// What an agent actor's shell holds, less its timers (a library agent
/// starts none).
struct Core {
    state: AgentState,
    out: Out,
    token: CancellationToken,
    parent_token: Option<CancellationToken>,
}

impl Core {
    /// A fresh token for the current turn, watched for the broker.
    fn new_token(&mut self, shared: &Arc<Shared>) {
        self.token = match &self.parent_token {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        };
        watch(shared, self.state.id(), &self.token, self.state.turn().clone());
    }

    /// Carries out what the handler did: its events first, then its sends in
    /// order (a request made under a token that already fired is preceded by
    /// that news, as from an agent actor).
    fn execute(&mut self, shared: &Shared) {
        let t = crate::protocol::seconds(self.out.now());
        shared.recorder.record(t, self.out.take_records());
        for effect in self.out.drain() {
            match effect {
                Effect::Send(envelope) => {
                    if let Envelope::Broker(BrokerMsg::Request(request)) = &envelope
                        && self.token.is_cancelled()
                    {
                        let fired = BrokerMsg::CancelTurn {
                            agent: request.agent,
                            turn: request.turn.clone(),
                        };
                        shared.route(Envelope::Broker(fired));
                    }
                    shared.route(envelope);
                }
                Effect::Finished { agent, final_result } => {
                    let mut finals = shared.finals.lock().expect("finals poisoned");
                    finals.insert(agent.to_string(), final_result);
                }
                Effect::Record(_) => unreachable!("recorded above"),
                Effect::Timer { .. } | Effect::Cancel(_) | Effect::Spawn(_) | Effect::Die => {
                    unreachable!("an agent without a script starts no timer and spawns nothing")
                }
            }
        }
    }
}

impl Passive {
    /// A library agent on `state`.
    pub(crate) fn start(
        shared: &Arc<Shared>,
        state: AgentState,
        parent_token: Option<CancellationToken>,
    ) -> Arc<Passive> {
        let mut core = Core {
            state,
            out: Out::default(),
            token: CancellationToken::new(),
            parent_token,
        };
        core.new_token(shared);
        Arc::new(Passive {
            core: Mutex::new(Some(core)),
        })
    }
}

impl Passive {
    /// Handles `msg` and carries out what it did, at once; false if the agent
    /// is gone (stopped, or its handler panicked before).
    pub(crate) fn step(&self, shared: &Shared, msg: AgentMsg) -> bool {
        // Dropped after the guard: what the agent sent the broker is taken then.
        let _held = Held::enter(shared);
        let mut guard = self.core.lock().expect("agent poisoned");
        let Some(core) = guard.as_mut() else {
            return false;
        };
        if let AgentMsg::TurnFired(turn) = &msg
            && core.state.fired_by(*turn)
        {
            core.token.cancel();
        }
        core.out.reset(shared.now(), None);
        let (state, out) = (&mut core.state, &mut core.out);
        let ok = guarded(shared, || state.handle(msg, out));
        core.execute(shared);
        if !ok {
            *guard = None;
        }
        true
    }

    /// The current turn's token and turn (a new turn first when `new`: the
    /// broker hears of it before anything the agent sends under it).
    pub(crate) fn token(&self, shared: &Arc<Shared>, new: bool) -> Option<(CancellationToken, Turn)> {
        let _held = Held::enter(shared);
        let mut guard = self.core.lock().expect("agent poisoned");
        let core = guard.as_mut()?;
        if new {
            let turn = core.state.new_turn().clone();
            core.new_token(shared);
            let agent = core.state.id();
            shared.route(Envelope::Broker(BrokerMsg::NewTurn { agent, turn }));
        }
        Some((core.token.clone(), core.state.turn().clone()))
    }

    /// Counts `msg` from the broker: a step in place.
    pub(crate) fn count(&self, shared: &Shared, msg: &AgentMsg) {
        shared.counts.in_place(msg);
    }

    /// Takes `msg` from the broker in place. Never counted in flight: it is
    /// handled before this returns.
    pub(crate) fn deliver(&self, shared: &Shared, msg: AgentMsg) -> bool {
        self.step(shared, msg);
        false
    }

    /// Stops the agent: its state is dropped (a caller still waiting gets
    /// `ABORTED`), and it takes nothing more.
    pub(crate) fn stop(&self) {
        let core = self.core.lock().expect("agent poisoned").take();
        drop(core);
    }
}
