//! A scripted agent as a ractor actor: a scenario's agent on the real clock,
//! or a child its script spawns. Its effects await (a spawn, a `work` step's
//! timer), so it takes its messages through a mailbox of its own.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::super::{Host, Shared, TimerSink, Timers, execute, guarded};
use super::start;
use super::turn::watch;
use crate::agent::AgentState;
use crate::effect::{Out, Spawn};
use crate::protocol::{AgentMsg, BrokerMsg, Envelope, Registration, SpawnError, Turn};

/// A message in an agent actor's mailbox.
pub(crate) enum AgentMail {
    /// A protocol message; counted when the runtime's own actors sent it.
    Core { msg: AgentMsg, counted: bool },
    /// The current turn's token and turn (a new turn first when `new`).
    Token {
        new: bool,
        reply: oneshot::Sender<(CancellationToken, Turn)>,
    },
}

pub(crate) struct AgentActor;

pub(crate) struct AgentArgs {
    pub shared: Arc<Shared>,
    pub state: AgentState,
    pub parent_token: Option<CancellationToken>,
    pub registered: Option<oneshot::Sender<Result<(), SpawnError>>>,
}

pub(crate) struct AgentShell {
    shared: Arc<Shared>,
    state: AgentState,
    timers: Timers,
    out: Out,
    token: CancellationToken,
    parent_token: Option<CancellationToken>,
}

impl AgentShell {
    fn new_token(&mut self) {
        self.token = match &self.parent_token {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        };
        watch(
            &self.shared,
            self.state.id(),
            &self.token,
            self.state.turn().clone(),
        );
    }
}

impl Host for AgentShell {
    async fn spawn(&mut self, shared: &Arc<Shared>, spawn: Spawn) {
        let id = shared
            .next_agent
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let state = AgentState::child(id, &spawn, shared.tool, shared.prepared.clone());
        let registration = Registration {
            agent: id,
            name: state.name().clone(),
            owner: Some(spawn.owner),
            lineage: spawn.spec.lineage_parent.clone(),
            turn: state.turn().clone(),
        };
        let args = AgentArgs {
            shared: shared.clone(),
            state,
            parent_token: Some(self.token.clone()),
            registered: None,
        };
        // Boxed: ractor's spawn future is large, and unboxed it would make every
        // handler's future (most never spawn) as large, copied on every message.
        if Box::pin(start(shared, args)).await.is_ok() {
            shared.route(Envelope::Broker(BrokerMsg::Register(Box::new(registration))));
        }
    }

    fn die(&mut self) {}

    fn before_send(&mut self, shared: &Arc<Shared>, envelope: &Envelope) {
        if let Envelope::Broker(BrokerMsg::Request(request)) = envelope
            && self.token.is_cancelled()
        {
            let fired = BrokerMsg::CancelTurn {
                agent: request.agent,
                turn: request.turn.clone(),
            };
            shared.route(Envelope::Broker(fired));
        }
    }
}

impl Actor for AgentActor {
    type Msg = AgentMail;
    type State = AgentShell;
    type Arguments = AgentArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<AgentMail>,
        args: AgentArgs,
    ) -> Result<AgentShell, ActorProcessingErr> {
        let mut state = args.state;
        if let Some(reply) = args.registered {
            state.on_registered(reply);
        }
        let mut shell = AgentShell {
            shared: args.shared,
            state,
            timers: Timers::default(),
            out: Out::default(),
            token: CancellationToken::new(),
            parent_token: args.parent_token,
        };
        shell.new_token();
        Ok(shell)
    }

    async fn handle(
        &self,
        myself: ActorRef<AgentMail>,
        mail: AgentMail,
        shell: &mut AgentShell,
    ) -> Result<(), ActorProcessingErr> {
        match mail {
            AgentMail::Core { msg, counted } => {
                if let AgentMsg::TurnFired(turn) = &msg
                    && shell.state.fired_by(*turn)
                {
                    shell.token.cancel();
                }
                shell.out.reset(shell.shared.now(), None);
                let (state, out) = (&mut shell.state, &mut shell.out);
                let ok = guarded(&shell.shared, || state.handle(msg, out));
                let mut out = std::mem::take(&mut shell.out);
                let mut timers = std::mem::take(&mut shell.timers);
                let shared = shell.shared.clone();
                execute(&shared, &mut out, &mut timers, shell).await;
                (shell.out, shell.timers) = (out, timers);
                if counted {
                    shell.shared.handled();
                }
                if !ok {
                    myself.stop(Some("panic".into()));
                }
            }
            AgentMail::Token { new, reply } => {
                if new {
                    let turn = shell.state.new_turn().clone();
                    shell.new_token();
                    // The broker learns the agent's new turn before anything the
                    // agent sends under it (both travel agent → broker, in order).
                    let agent = shell.state.id();
                    shell
                        .shared
                        .route(Envelope::Broker(BrokerMsg::NewTurn { agent, turn }));
                }
                let _ = reply.send((shell.token.clone(), shell.state.turn().clone()));
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<AgentMail>,
        shell: &mut AgentShell,
    ) -> Result<(), ActorProcessingErr> {
        shell.timers.cancel_all(&shell.shared);
        Ok(())
    }
}
