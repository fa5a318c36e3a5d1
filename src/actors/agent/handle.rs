//! [`AgentHandle`], how a library user drives an agent.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::super::Runtime;
use super::{AgentMail, AgentRef};
use crate::protocol::{AgentId, AgentMsg, BrokerMsg, CallOutcome, CallReply, Name, SpawnError, Turn};
use crate::tool::{ErrorCode, ResultKind, ToolResult};

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
            call_id: call_id.into(),
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
