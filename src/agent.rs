//! Agents: the callers. An [`AgentActor`] is one agent of the tree, a root or a
//! child owned by another agent; it numbers its tool calls, applies the tool's
//! argument rules (before the broker checks identity), holds its turn signal, and
//! receives the user messages the broker sends it. [`AgentHandle`] is how code
//! (a user's runtime, or the simulator's scripts) drives one.

use std::collections::{BTreeMap, BTreeSet};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::broker::{AgentId, BrokerMsg, Request, SpawnError};
use crate::event::{EventKind, EventSink};
use crate::runtime::Runtime;
use crate::sched::{Jitter, Sched};
use crate::tool::{ErrorCode, ToolConfig, ToolResult};

/// Messages an agent receives.
pub enum AgentMsg {
    /// The broker registered the agent under this id.
    Registered(AgentId),
    /// A tool call with raw JSON arguments: `numbered` gets its callId at once,
    /// `result` the tool result when the call settles.
    Call {
        /// The model's arguments, verbatim.
        arguments: String,
        /// Receives the callId.
        numbered: RpcReplyPort<String>,
        /// Receives the result.
        result: RpcReplyPort<ToolResult>,
    },
    /// From the broker: a pending call of this agent closed for good, with the user
    /// message the model reads, if any (late answer, or withdrawal for lack of an
    /// answerer; `cancel_call` and a stop close without one).
    Closed {
        /// The call.
        call_id: String,
        /// The user message, if any.
        message: Option<String>,
    },
    /// Replies once the call is closed for good (at once if it already is).
    AwaitClosed {
        /// The call.
        call_id: String,
        /// Replied to when closed.
        reply: RpcReplyPort<()>,
    },
    /// The current turn signal.
    Turn(RpcReplyPort<CancellationToken>),
    /// Starts a new turn (derived from the owner's current one, for a child).
    NewTurn(RpcReplyPort<CancellationToken>),
    /// Every user message received so far, in order.
    Messages(RpcReplyPort<Vec<String>>),
}

/// The agent actor.
pub struct AgentActor;

/// What an agent starts from.
pub struct AgentArgs {
    /// Its unique name.
    pub name: String,
    /// The registered tool.
    pub tool: ToolConfig,
    /// The broker.
    pub broker: ActorRef<BrokerMsg>,
    /// The event stream.
    pub events: EventSink,
    /// The run's clock.
    pub sched: Sched,
    /// Jitter on its messages.
    pub jitter: Jitter,
    /// Its first turn signal.
    pub turn: CancellationToken,
    /// Its owner's turn, from which new turns derive (a child), if any.
    pub parent_turn: Option<CancellationToken>,
    /// Calls made before (after a restart the counter continues).
    pub calls_made: u64,
}

/// An agent's state.
pub struct AgentState {
    id: Option<AgentId>,
    name: String,
    tool: ToolConfig,
    broker: ActorRef<BrokerMsg>,
    events: EventSink,
    sched: Sched,
    jitter: Jitter,
    turn: CancellationToken,
    parent_turn: Option<CancellationToken>,
    calls_made: u64,
    closed: BTreeSet<String>,
    waiters: BTreeMap<String, Vec<RpcReplyPort<()>>>,
    messages: Vec<String>,
}

impl Actor for AgentActor {
    type Msg = AgentMsg;
    type State = AgentState;
    type Arguments = AgentArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<AgentMsg>,
        args: AgentArgs,
    ) -> Result<AgentState, ActorProcessingErr> {
        Ok(AgentState {
            id: None,
            name: args.name,
            tool: args.tool,
            broker: args.broker,
            events: args.events,
            sched: args.sched,
            jitter: args.jitter,
            turn: args.turn,
            parent_turn: args.parent_turn,
            calls_made: args.calls_made,
            closed: BTreeSet::new(),
            waiters: BTreeMap::new(),
            messages: Vec::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<AgentMsg>,
        msg: AgentMsg,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AgentMsg::Registered(id) => state.id = Some(id),
            AgentMsg::Call {
                arguments,
                numbered,
                result,
            } => state.call(arguments, numbered, result),
            AgentMsg::Closed { call_id, message } => {
                if let Some(message) = message {
                    state.events.record(EventKind::UserMessage {
                        call_id: call_id.clone(),
                        agent: state.name.clone(),
                        message: message.clone(),
                    });
                    state.messages.push(message);
                }
                for waiter in state.waiters.remove(&call_id).unwrap_or_default() {
                    let _ = waiter.send(());
                }
                state.closed.insert(call_id);
            }
            AgentMsg::AwaitClosed { call_id, reply } => {
                if state.closed.contains(&call_id) {
                    let _ = reply.send(());
                } else {
                    state.waiters.entry(call_id).or_default().push(reply);
                }
            }
            AgentMsg::Turn(reply) => {
                let _ = reply.send(state.turn.clone());
            }
            AgentMsg::NewTurn(reply) => {
                state.turn = match &state.parent_turn {
                    Some(parent) => parent.child_token(),
                    None => CancellationToken::new(),
                };
                let _ = reply.send(state.turn.clone());
            }
            AgentMsg::Messages(reply) => {
                let _ = reply.send(state.messages.clone());
            }
        }
        Ok(())
    }
}

impl AgentState {
    fn call(&mut self, arguments: String, numbered: RpcReplyPort<String>, result: RpcReplyPort<ToolResult>) {
        self.calls_made += 1;
        let call_id = format!("{}/{}", self.name, self.calls_made);
        let _ = numbered.send(call_id.clone());
        // Arguments first: a call that breaks SPEC §2.3 never reaches the broker.
        let ask = match self.tool.prepare(&arguments) {
            Ok(ask) => ask,
            Err(error) => {
                let settled = error.to_result();
                self.events.record(EventKind::Result {
                    call_id,
                    agent: self.name.clone(),
                    result: settled.text.clone(),
                    is_error: true,
                });
                let _ = result.send(settled);
                return;
            }
        };
        let request = Request {
            agent: self.id.unwrap_or(AgentId::MAX),
            call_id,
            ask,
            turn: self.turn.clone(),
            reply: result,
        };
        let broker = self.broker.clone();
        self.jitter
            .send(&self.sched, &broker, BrokerMsg::Request(request));
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

/// A handle on one agent: make tool calls, spawn children, cancel turns, read user
/// messages. Cheap to clone. A handle whose agent was stopped is stale: its calls
/// settle as `NOT_RUNTIME_ROOT`.
#[derive(Clone)]
pub struct AgentHandle {
    pub(crate) id: AgentId,
    pub(crate) name: String,
    pub(crate) actor: ActorRef<AgentMsg>,
    pub(crate) runtime: Runtime,
}

impl AgentHandle {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's id at the broker.
    pub fn id(&self) -> AgentId {
        self.id
    }

    /// Makes an `ask_user_question` call with the model's raw JSON arguments and
    /// waits for its result: answers, `pending`, or an error.
    pub async fn ask(&self, arguments: &str) -> CallOutcome {
        let span = tracing::info_span!("call", agent = %self.name, call_id = tracing::field::Empty);
        self.ask_in(arguments, span.clone()).instrument(span).await
    }

    async fn ask_in(&self, arguments: &str, span: tracing::Span) -> CallOutcome {
        let (numbered_tx, numbered_rx) = oneshot::channel();
        let (result_tx, result_rx) = oneshot::channel();
        let msg = AgentMsg::Call {
            arguments: arguments.to_owned(),
            numbered: numbered_tx.into(),
            result: result_tx.into(),
        };
        if self.actor.send_message(msg).is_err() {
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
        let call_id = numbered_rx.await.unwrap_or_else(|_| format!("{}/?", self.name));
        span.record("call_id", call_id.as_str());
        let result = result_rx.await.unwrap_or_else(|_| {
            ToolResult::error(ErrorCode::Aborted, "the runtime stopped before the call settled")
        });
        tracing::info!(result = %result.text, "settled");
        CallOutcome { call_id, result }
    }

    /// Starts a child agent owned by this one; its turn derives from this agent's
    /// current turn.
    pub async fn spawn_child(&self, name: &str) -> Result<AgentHandle, SpawnError> {
        let parent_turn = self.turn().await.ok_or(SpawnError::OwnerNotLive)?;
        self.runtime
            .spawn_agent(name, Some((self.id, parent_turn)), None, 0)
            .await
    }

    /// The current turn signal.
    pub async fn turn(&self) -> Option<CancellationToken> {
        self.actor
            .call(AgentMsg::Turn, None)
            .await
            .ok()?
            .success_or(())
            .ok()
    }

    /// Starts a new turn and returns its signal.
    pub async fn new_turn(&self) -> Option<CancellationToken> {
        self.actor
            .call(AgentMsg::NewTurn, None)
            .await
            .ok()?
            .success_or(())
            .ok()
    }

    /// Fires the current turn signal: every unsettled call of this turn and of all
    /// descendant turns settles as `ABORTED`.
    pub async fn cancel_turn(&self) {
        if let Some(turn) = self.turn().await {
            self.runtime.events().record(EventKind::Cancel {
                agent: self.name.clone(),
            });
            turn.cancel();
        }
    }

    /// Waits until a call of this agent is closed for good (late answer or
    /// withdrawal). Only calls that went `pending` ever close this way.
    pub async fn closed(&self, call_id: &str) {
        let call_id = call_id.to_owned();
        let _ = self
            .actor
            .call(|reply| AgentMsg::AwaitClosed { call_id, reply }, None)
            .await;
    }

    /// Every user message the agent received so far, in order.
    pub async fn user_messages(&self) -> Vec<String> {
        match self.actor.call(AgentMsg::Messages, None).await {
            Ok(ractor::rpc::CallResult::Success(messages)) => messages,
            _ => Vec::new(),
        }
    }

    /// Stops the agent: it is no longer live, its children become roots, its open
    /// calls are aborted or withdrawn, and this handle is stale from now on.
    pub fn stop(&self) {
        let _ = self.runtime.broker().send_message(BrokerMsg::Stop(self.id));
    }
}
