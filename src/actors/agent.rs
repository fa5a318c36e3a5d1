//! Agents as ractor actors, and [`AgentHandle`], how a library user drives one.
//!
//! Each turn is also a `CancellationToken` (a child's derives from its owner's),
//! so code outside the runtime may fire it directly; one watcher per turn tells
//! the broker. A request made under a token that already fired is preceded by
//! that news, so the broker never offers it.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::passive::Passive;
use super::{Host, Runtime, Shared, TimerSink, Timers, execute, guarded};
use crate::agent::AgentState;
use crate::effect::{Out, Spawn};
use crate::protocol::{
    AgentId, AgentMsg, BrokerMsg, CallOutcome, CallReply, Envelope, Name, Registration, SpawnError, Turn,
};
use crate::tool::{ErrorCode, ResultKind, ToolResult};

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

/// Tells the broker when `token` fires, unless the runtime dies first.
pub(super) fn watch(shared: &Arc<Shared>, agent: AgentId, token: &CancellationToken, turn: Turn) {
    let (shared, token) = (shared.clone(), token.clone());
    shared.counts.task();
    tokio::spawn(async move {
        tokio::select! {
            biased;
            _ = shared.epoch.cancelled() => {}
            _ = token.cancelled() => shared.route(Envelope::Broker(BrokerMsg::CancelTurn { agent, turn })),
        }
    });
}

impl Host for AgentShell {
    async fn spawn(&mut self, shared: &Arc<Shared>, spawn: Spawn) {
        let id = shared
            .next_agent
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let state = AgentState::child(
            id,
            spawn.spec.clone(),
            shared.tool,
            shared.prepared.clone(),
            spawn.owner,
            &spawn.turn,
        );
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
            AgentRef::Passive(passive) => passive.stop_and_wait().await,
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
    let gated = shared.gate.is_some();
    let passive = Passive::start(shared, state, parent_token, gated)
        .await
        .ok_or(SpawnError::RuntimeStopped)?;
    let agent = AgentRef::Passive(passive);
    enter(shared, id, name, agent.clone());
    Ok(agent)
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
                    && shell.state.turn().fired_by(*turn)
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

/// A handle on one agent: make tool calls, spawn children, cancel turns, read
/// user messages. Cheap to clone. A handle whose agent was stopped is stale: its
/// calls settle as `NOT_RUNTIME_ROOT`.
#[derive(Clone)]
pub struct AgentHandle {
    pub(crate) id: AgentId,
    pub(crate) name: Name,
    pub(crate) agent: AgentRef,
    pub(crate) runtime: Runtime,
}

impl AgentHandle {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's id.
    pub fn id(&self) -> AgentId {
        self.id
    }

    fn tell(&self, msg: AgentMsg) -> bool {
        self.mail(AgentMail::Core { msg, counted: false })
    }

    /// Gives the agent `mail` from this handle (counted, [`super::RuntimeCounts`]).
    fn mail(&self, mail: AgentMail) -> bool {
        self.agent.mail(self.runtime.shared(), mail)
    }

    /// A oneshot channel, counted.
    fn oneshot<T>(&self) -> (oneshot::Sender<T>, oneshot::Receiver<T>) {
        self.runtime.shared().counts.oneshot();
        oneshot::channel()
    }

    /// Makes an `ask_user_question` call with the model's raw JSON arguments and
    /// waits for its result: answers, `pending`, or an error.
    pub async fn ask(&self, arguments: &str) -> CallOutcome {
        let span = tracing::info_span!("call", agent = %self.name, call_id = tracing::field::Empty);
        self.ask_in(arguments, span.clone()).instrument(span).await
    }

    async fn ask_in(&self, arguments: &str, span: tracing::Span) -> CallOutcome {
        let (reply, reply_rx) = self.oneshot();
        let msg = AgentMsg::Call {
            arguments: arguments.to_owned(),
            reply: CallReply::new(reply),
        };
        if !self.tell(msg) {
            // The agent's actor is gone with its runtime: still arguments first.
            let result = match self.runtime.tool().prepare(arguments) {
                Err(error) => error.to_result(),
                Ok(_) => ToolResult::error(ErrorCode::NotRuntimeRoot, "the agent's runtime has stopped"),
            };
            return CallOutcome {
                call_id: format!("{}/?", self.name),
                result,
            };
        }
        let (call_id, result) = match reply_rx.await {
            Ok((call_id, result)) => (call_id.to_string(), result),
            Err(_) => (format!("{}/?", self.name), None),
        };
        span.record("call_id", call_id.as_str());
        let result = result.unwrap_or_else(|| {
            ToolResult::error(ErrorCode::Aborted, "the runtime stopped before the call settled")
        });
        // The result leaves the process only once its line is durable (SPEC
        // §4.1). The broker's results came through the write-ahead gate, so they
        // are; the agent records an INVALID_ARGUMENTS result itself, after the
        // handler that replied here.
        if result.kind == ResultKind::Error(ErrorCode::InvalidArguments) {
            self.runtime.durable_after(&self.agent).await;
        }
        tracing::info!(result = %result.text, "settled");
        CallOutcome { call_id, result }
    }

    /// Starts a child agent owned by this one; its turn derives from this agent's
    /// current turn.
    pub async fn spawn_child(&self, name: &str) -> Result<AgentHandle, SpawnError> {
        let (token, turn) = self.token(false).await.ok_or(SpawnError::OwnerNotLive)?;
        self.runtime
            .spawn_agent(name, Some((self.id, token, turn)), None, 0)
            .await
    }

    async fn token(&self, new: bool) -> Option<(CancellationToken, Turn)> {
        if let AgentRef::Passive(passive) = &self.agent {
            let shared = self.runtime.shared();
            shared.counts.in_place_token();
            return passive.token(shared, new);
        }
        let (reply, rx) = self.oneshot();
        if !self.mail(AgentMail::Token { new, reply }) {
            return None;
        }
        rx.await.ok()
    }

    /// The current turn signal.
    pub async fn turn(&self) -> Option<CancellationToken> {
        self.token(false).await.map(|(token, _)| token)
    }

    /// Starts a new turn and returns its signal.
    pub async fn new_turn(&self) -> Option<CancellationToken> {
        self.token(true).await.map(|(token, _)| token)
    }

    /// Fires the current turn signal: every unsettled call of this turn and of all
    /// descendant turns settles as `ABORTED`.
    pub async fn cancel_turn(&self) {
        if let Some((token, turn)) = self.token(false).await {
            self.runtime.send(BrokerMsg::CancelTurn { agent: self.id, turn });
            token.cancel();
        }
    }

    /// Waits until a call of this agent is closed for good (late answer or
    /// withdrawal). Only calls that went `pending` ever close this way; the
    /// message, if any, is read with [`AgentHandle::user_messages`].
    pub async fn closed(&self, call_id: &str) {
        let (reply, rx) = self.oneshot();
        if self.tell(AgentMsg::AwaitClosed {
            call_id: call_id.to_owned(),
            reply,
        }) {
            let _ = rx.await;
        }
    }

    /// Every user message the agent received so far, in order (with a durable
    /// log, once their lines are durable: a message handed out here is never
    /// delivered again after a crash).
    pub async fn user_messages(&self) -> Vec<String> {
        let (reply, rx) = self.oneshot();
        if !self.tell(AgentMsg::Messages(reply)) {
            return Vec::new();
        }
        let messages = rx.await.unwrap_or_default();
        self.runtime.durable_now().await;
        messages
    }

    /// Stops the agent: it is no longer live, its children become roots, its open
    /// calls are aborted or withdrawn, and this handle is stale from now on.
    pub fn stop(&self) {
        self.runtime.send(BrokerMsg::Stop(self.id));
    }
}
