//! Agents on the runtime, and [`AgentHandle`], how a library user drives one.
//!
//! Each turn is also a `CancellationToken` (a child's derives from its owner's),
//! so code outside the runtime may fire it directly; one watcher per turn tells
//! the broker ([`turn`]). A request made under a token that already fired is
//! preceded by that news, so the broker never offers it.
//!
//! An agent is one of two kinds ([`AgentRef`]): a scripted agent is an actor
//! of its own ([`actor`]); a library agent runs no script and is stepped in
//! place by whoever sends to it ([`passive`]).

mod actor;
mod handle;
mod passive;
mod turn;

use std::sync::Arc;

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::agent::AgentState;
use crate::protocol::{AgentId, AgentMsg, Name, SpawnError};
use actor::AgentActor;
use passive::Passive;

pub(crate) use actor::{AgentArgs, AgentMail};
pub use handle::AgentHandle;

/// An agent as the runtime reaches it.
#[derive(Clone)]
pub(crate) enum AgentRef {
    /// A scripted agent: an actor of its own, as its script's effects await.
    Actor(ActorRef<AgentMail>),
    /// A library agent, stepped in place by whoever sends to it ([`Passive`]).
    Passive(Arc<Passive>),
}

impl AgentRef {
    /// Gives the agent a handle's `mail`, counted as a mailbox message or as
    /// a step in place; false if the agent is gone.
    pub(crate) fn mail(&self, shared: &Arc<Shared>, mail: AgentMail) -> bool {
        match self {
            AgentRef::Actor(actor) => {
                shared.counts.agent_mail(&mail);
                actor.send_message(mail).is_ok()
            }
            AgentRef::Passive(passive) => {
                shared.counts.in_place_mail(&mail);
                match mail {
                    AgentMail::Core { msg, .. } => passive.step(shared, msg),
                    AgentMail::Token { new, reply } => match passive.token(shared, new) {
                        Some(token) => reply.send(token).is_ok(),
                        None => false,
                    },
                }
            }
        }
    }

    /// Delivers `msg` from inside the runtime, counted first when `count` (a
    /// mailbox message, or a step in place); true if it is counted in flight
    /// until handled.
    pub(crate) fn deliver(&self, shared: &Shared, msg: AgentMsg, count: bool) -> bool {
        match self {
            AgentRef::Actor(actor) => {
                if count {
                    shared.counts.agent(&msg);
                }
                actor.send_message(AgentMail::Core { msg, counted: true }).is_ok()
            }
            AgentRef::Passive(passive) => {
                if count {
                    passive.count(shared, &msg);
                }
                passive.deliver(shared, msg)
            }
        }
    }

    /// Stops the agent, without waiting.
    pub(crate) fn stop(&self) {
        match self {
            AgentRef::Actor(actor) => actor.stop(None),
            AgentRef::Passive(passive) => passive.stop(),
        }
    }

    /// Stops the agent and waits until it has.
    pub(crate) async fn stop_and_wait(&self) {
        match self {
            AgentRef::Actor(actor) => {
                let _ = actor.stop_and_wait(None, None).await;
            }
            AgentRef::Passive(passive) => passive.stop(),
        }
    }
}

/// Enters `agent` in the runtime's directory.
fn enter(shared: &Shared, id: AgentId, name: Name, agent: AgentRef) {
    shared.agents.lock().expect("agents poisoned").insert(id, agent);
    shared.names.lock().expect("names poisoned").insert(name, id);
}

/// Starts an agent actor and enters it in the runtime's directory.
pub(crate) async fn start(shared: &Arc<Shared>, args: AgentArgs) -> Result<AgentRef, SpawnError> {
    let (id, name) = (args.state.id(), args.state.name().clone());
    let (actor, _) = Actor::spawn(None, AgentActor, args)
        .await
        .map_err(|_| SpawnError::RuntimeStopped)?;
    let agent = AgentRef::Actor(actor);
    enter(shared, id, name, agent.clone());
    Ok(agent)
}

/// Starts a library agent (no script: [`Passive`]) and enters it in the
/// runtime's directory; its registration is answered to `registered`.
pub(crate) async fn start_passive(
    shared: &Arc<Shared>,
    mut state: AgentState,
    parent_token: Option<CancellationToken>,
    registered: Option<oneshot::Sender<Result<(), SpawnError>>>,
) -> Result<AgentRef, SpawnError> {
    let (id, name) = (state.id(), state.name().clone());
    if let Some(reply) = registered {
        state.on_registered(reply);
    }
    let passive = Passive::start(shared, state, parent_token);
    let agent = AgentRef::Passive(passive);
    enter(shared, id, name, agent.clone());
    Ok(agent)
}
