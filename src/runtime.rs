//! The library's front door: start a runtime from a tool configuration and an
//! ordered answerer list, spawn root agents, and read what happened.
//!
//! ```
//! use asksim::policy::Policy;
//! use asksim::broker::AnswererSlot;
//! use asksim::runtime::{Runtime, RuntimeConfig};
//! use asksim::tool::{Timeout, ToolConfig};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let config = RuntimeConfig {
//!     tool: ToolConfig::timed(Timeout::Window(30.0)),
//!     answerers: vec![AnswererSlot::Policy { name: "web".into(), policy: Policy::recommended_after(2.0) }],
//!     ..RuntimeConfig::default()
//! };
//! let runtime = Runtime::start(config).await.unwrap();
//! let root = runtime.spawn_root("root", None).await.unwrap();
//! let outcome = root
//!     .ask(r#"{"questions":[{"id":"go","question":"Proceed?","header":"Confirm",
//!              "options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":5}"#)
//!     .await;
//! assert_eq!(outcome.call_id, "root/1");
//! assert_eq!(outcome.result.text, r#"{"answers":[{"id":"go","selected":["Yes (Recommended)"]}]}"#);
//! runtime.shutdown().await;
//! # }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorRef};
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentActor, AgentArgs, AgentHandle, AgentMsg};
use crate::broker::{
    AgentId, AnswererSlot, BrokerActor, BrokerArgs, BrokerLimits, BrokerMsg, BrokerStatus,
    OFFER_TIMEOUT_S_DEFAULT, SpawnError,
};
use crate::event::EventSink;
use crate::sched::{Jitter, Sched, derive_seed};
use crate::tool::ToolConfig;

/// Most events one run records unless configured otherwise (SPEC §5 `limits`).
pub const EVENTS_MAX_DEFAULT: u64 = 10_000_000;

/// What a runtime starts from.
pub struct RuntimeConfig {
    /// The plugin row: which definition is registered.
    pub tool: ToolConfig,
    /// The waterfall, in order.
    pub answerers: Vec<AnswererSlot>,
    /// Seconds an offeree has to accept or decline.
    pub offer_timeout_s: f64,
    /// Seed of every random stream in the runtime.
    pub seed: u64,
    /// Bound of the seeded delay on every message between actors (0: none).
    pub jitter_max_s: f64,
    /// Most events recorded; past it the sink's overflow token fires.
    pub events_max: u64,
    /// The broker's limits.
    pub limits: BrokerLimits,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            tool: ToolConfig::default(),
            answerers: Vec::new(),
            offer_timeout_s: OFFER_TIMEOUT_S_DEFAULT,
            seed: 0,
            jitter_max_s: 0.0,
            events_max: EVENTS_MAX_DEFAULT,
            limits: BrokerLimits::default(),
        }
    }
}

/// Why a runtime could not start.
#[derive(Debug, thiserror::Error)]
#[error("the runtime could not start: {0}")]
pub struct StartError(String);

/// A running runtime: a broker, its answerers, and the agents spawned on it.
/// Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    broker: ActorRef<BrokerMsg>,
    tool: ToolConfig,
    sched: Sched,
    events: EventSink,
    seed: u64,
    jitter_max_s: f64,
    agent_streams: AtomicU64,
    /// Every agent actor started, so that shutdown stops them all.
    agents: Mutex<Vec<ActorRef<AgentMsg>>>,
}

impl Runtime {
    /// Starts the broker and the answerers on the current tokio runtime.
    pub async fn start(config: RuntimeConfig) -> Result<Runtime, StartError> {
        let sched = Sched::new();
        let events = EventSink::new(sched.clone(), config.events_max);
        Runtime::start_with(config, sched, events).await
    }

    /// Starts on a given clock and event stream (the simulator's restart path).
    pub async fn start_with(
        config: RuntimeConfig,
        sched: Sched,
        events: EventSink,
    ) -> Result<Runtime, StartError> {
        let args = BrokerArgs {
            answerers: config.answerers,
            offer_timeout_s: config.offer_timeout_s,
            sched: sched.clone(),
            events: events.clone(),
            seed: config.seed,
            jitter_max_s: config.jitter_max_s,
            limits: config.limits,
        };
        let (broker, _) = Actor::spawn(None, BrokerActor, args)
            .await
            .map_err(|e| StartError(e.to_string()))?;
        Ok(Runtime {
            inner: Arc::new(Inner {
                broker,
                tool: config.tool,
                sched,
                events,
                seed: config.seed,
                jitter_max_s: config.jitter_max_s,
                agent_streams: AtomicU64::new(0),
                agents: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Spawns a runtime root. `lineage` is durable history only: it never decides
    /// who may ask.
    pub async fn spawn_root(&self, name: &str, lineage: Option<String>) -> Result<AgentHandle, SpawnError> {
        self.spawn_agent(name, None, lineage, 0).await
    }

    /// Spawns a root that made `calls_made` calls in an earlier life (after process
    /// loss), so its callIds continue.
    pub async fn resume_root(
        &self,
        name: &str,
        lineage: Option<String>,
        calls_made: u64,
    ) -> Result<AgentHandle, SpawnError> {
        self.spawn_agent(name, None, lineage, calls_made).await
    }

    pub(crate) async fn spawn_agent(
        &self,
        name: &str,
        owner: Option<(AgentId, CancellationToken)>,
        lineage: Option<String>,
        calls_made: u64,
    ) -> Result<AgentHandle, SpawnError> {
        let inner = &self.inner;
        let stream = inner.agent_streams.fetch_add(1, Ordering::SeqCst);
        let (owner_id, parent_turn) = match owner {
            Some((id, turn)) => (Some(id), Some(turn)),
            None => (None, None),
        };
        let args = AgentArgs {
            name: name.to_owned(),
            tool: inner.tool,
            broker: inner.broker.clone(),
            events: inner.events.clone(),
            sched: inner.sched.clone(),
            jitter: Jitter::new(derive_seed(inner.seed, 1 << 32 | stream), 0, inner.jitter_max_s),
            turn: parent_turn
                .as_ref()
                .map_or_else(CancellationToken::new, CancellationToken::child_token),
            parent_turn,
            calls_made,
        };
        let (actor, _) = Actor::spawn(None, AgentActor, args)
            .await
            .map_err(|_| SpawnError::RuntimeStopped)?;
        let registered = inner
            .broker
            .call(
                |reply| BrokerMsg::Register {
                    name: name.to_owned(),
                    owner: owner_id,
                    lineage,
                    inbox: actor.clone(),
                    reply,
                },
                None,
            )
            .await;
        let id = match registered {
            Ok(ractor::rpc::CallResult::Success(Ok(id))) => id,
            Ok(ractor::rpc::CallResult::Success(Err(e))) => {
                actor.stop(None);
                return Err(e);
            }
            _ => {
                actor.stop(None);
                return Err(SpawnError::RuntimeStopped);
            }
        };
        let _ = actor.send_message(AgentMsg::Registered(id));
        inner.agents.lock().expect("runtime poisoned").push(actor.clone());
        Ok(AgentHandle {
            id,
            name: name.to_owned(),
            actor,
            runtime: self.clone(),
        })
    }

    /// Cancels one call explicitly: a waiting call settles as `ABORTED`, a pending
    /// one is withdrawn without a message.
    pub fn cancel_call(&self, call_id: &str) {
        let _ = self.inner.broker.send_message(BrokerMsg::CancelCall {
            call_id: call_id.to_owned(),
        });
    }

    /// Re-opens a timed question the log shows open, after a restart: pending from
    /// now on and offered through the waterfall from the top.
    pub fn restore(&self, agent: &AgentHandle, call_id: &str, ask: crate::tool::Ask) {
        let msg = BrokerMsg::Restore {
            agent: agent.id,
            call_id: call_id.to_owned(),
            ask,
        };
        let _ = self.inner.broker.send_message(msg);
    }

    /// Kills the named answerer, as a crash would.
    pub fn crash_answerer(&self, name: &str) {
        let _ = self.inner.broker.send_message(BrokerMsg::Crash(name.to_owned()));
    }

    /// The broker's open calls now.
    pub async fn status(&self) -> BrokerStatus {
        match self.inner.broker.call(BrokerMsg::Status, None).await {
            Ok(ractor::rpc::CallResult::Success(status)) => status,
            _ => BrokerStatus::default(),
        }
    }

    /// The registered tool.
    pub fn tool(&self) -> ToolConfig {
        self.inner.tool
    }

    /// The event stream.
    pub fn events(&self) -> &EventSink {
        &self.inner.events
    }

    /// The run's clock and timer account.
    pub fn sched(&self) -> &Sched {
        &self.inner.sched
    }

    /// The broker actor, for answerers of the user's own.
    pub fn broker(&self) -> &ActorRef<BrokerMsg> {
        &self.inner.broker
    }

    /// Stops the broker, its answerers and every agent, and cancels every timer:
    /// everything in memory dies (the simulator's process loss uses it too).
    /// Agents' handles go stale.
    pub async fn shutdown(&self) {
        self.inner.sched.epoch().cancel();
        let _ = self.inner.broker.call(BrokerMsg::ShutDown, None).await;
        let _ = self.inner.broker.stop_children_and_wait(None, None).await;
        let _ = self.inner.broker.stop_and_wait(None, None).await;
        let agents = std::mem::take(&mut *self.inner.agents.lock().expect("runtime poisoned"));
        for agent in agents {
            let _ = agent.stop_and_wait(None, None).await;
        }
    }
}
