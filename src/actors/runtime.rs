//! The library's front door: start a runtime from a tool configuration and an
//! ordered answerer list, spawn root agents, and read what happened.
//!
//! ```
//! use asksim::{AnswererSlot, Policy, Runtime, RuntimeConfig, Timeout, ToolConfig};
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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::agent::{AgentArgs, AgentMail, AgentRef};
use super::broker::{BrokerActor, BrokerArgs, Slot};
use super::{AgentHandle, Journal, Shared};
use crate::agent::{AgentSetup, AgentState};
use crate::answerer::{Answerer, PolicyAnswerer};
use crate::broker::{BrokerConfig, BrokerState};
use crate::durable::config::LIBRARY_LOG_NAME;
use crate::durable::{Gate, LogConfig, LogFile};
use crate::event::Event;
use crate::limits::{BrokerLimits, EVENTS_MAX_DEFAULT, OFFER_TIMEOUT_S_DEFAULT};
use crate::log::LogHeader;
use crate::policy::Policy;
use crate::protocol::{
    AgentId, AnswererIx, AnswererMsg, BrokerMail, BrokerMsg, BrokerStatus, CallId, Name, Registration,
    SpawnError, Turn, TurnId,
};
use crate::record::{Hashes, LogHashes, Recorder};
use crate::seed::answerer_stream;
use crate::tool::ToolConfig;

/// One answerer of the waterfall.
pub enum AnswererSlot {
    /// The built-in policy answerer, run inside the broker's actor (its
    /// offers, replies and timers are no mailbox hops).
    Policy {
        /// Its name.
        name: String,
        /// Its behaviour.
        policy: Policy,
    },
    /// A user's own actor speaking the answerer protocol ([`AnswererMsg`]); the
    /// runtime links it under the broker's supervision.
    Actor {
        /// Its name.
        name: String,
        /// The actor.
        actor: ActorRef<AnswererMsg>,
    },
    /// A user's own sans-IO answerer ([`Answerer`]), run by the runtime in an
    /// actor of its own with its timers on tokio: the same state machine the
    /// simulator runs on the virtual clock.
    Machine {
        /// Its name.
        name: String,
        /// The state machine.
        machine: Box<dyn Answerer>,
    },
}

impl AnswererSlot {
    /// The answerer's name.
    pub fn name(&self) -> &str {
        match self {
            AnswererSlot::Policy { name, .. }
            | AnswererSlot::Actor { name, .. }
            | AnswererSlot::Machine { name, .. } => name,
        }
    }
}

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
    /// Most events kept in memory at once ([`Runtime::events`]). Past it the
    /// runtime keeps no more until some are moved out ([`EventLog::take`]),
    /// but it records every event all the same: each is counted, folded into
    /// the projection, hashed and written to the log file. A bound on memory
    /// never stops the durable log a recovery reads, nor the projection. (The
    /// simulator's `limits.events_max`, which cuts a run, is a scenario's.)
    pub events_max: u64,
    /// The broker's limits.
    pub limits: BrokerLimits,
    /// The durable log file, written as events happen (SPEC §4.1); after a
    /// crash, [`Runtime::recover`] goes on from it. `None`: the log is kept in
    /// memory only.
    pub log: Option<LogConfig>,
    /// Which SHA-256 hashes of the log the recorder computes, for
    /// [`EventLog::hashes`]. Default [`Hashes::None`]: nothing else in the
    /// runtime reads them (the projection, the kept events and the log file
    /// do not need them), and they were the largest part of the recorder's
    /// work; with no hash and no log file an event is not even serialised.
    /// [`Hashes::Trace`] gives the log's `trace_hash` as the simulator
    /// computes it, [`Hashes::TraceAndOrder`] its order hash too,
    /// [`Hashes::All`] its timing hash as well. With a
    /// log file the lines are written whatever this says: the file holds
    /// every byte a hash would be computed from. A recovered runtime
    /// ([`Runtime::recover`]) hashes the events read back from its file, then
    /// goes on; after a compaction, those the snapshot folded are in no hash
    /// (the file no longer holds their lines).
    pub hashes: Hashes,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            tool: ToolConfig::default(),
            answerers: Vec::new(),
            offer_timeout_s: OFFER_TIMEOUT_S_DEFAULT,
            seed: 0,
            events_max: EVENTS_MAX_DEFAULT,
            limits: BrokerLimits::default(),
            log: None,
            hashes: Hashes::None,
        }
    }
}

/// Why a runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The broker refused its configuration.
    #[error("the runtime could not start: {0}")]
    Broker(#[from] crate::broker::BrokerError),
    /// An actor could not be spawned.
    #[error("the runtime could not start: {0}")]
    Spawn(String),
    /// The log file could not be created, or holds a log already (recover it
    /// with [`Runtime::recover`], or remove it).
    #[error("the runtime could not start its log {}: {message}", path.display())]
    Log {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The recorded events of a runtime (none kept when it was started with
/// [`Runtime::start_without_events`]: then only the count).
#[derive(Clone)]
pub struct EventLog(Arc<Journal>);

impl EventLog {
    /// Every event so far.
    pub fn snapshot(&self) -> Vec<Event> {
        self.0.lock().events().to_vec()
    }

    /// Moves every event out, leaving the kept list empty (the count and the
    /// hashes asked for go on): how a long-lived host that keeps events
    /// bounds their memory.
    pub fn take(&self) -> Vec<Event> {
        self.0.lock().take_events()
    }

    /// Whether an event was not kept for [`RuntimeConfig::events_max`] (it was
    /// recorded all the same: counted, folded, written to the log file).
    pub fn overflowed(&self) -> bool {
        self.0.lock().overflowed()
    }

    /// How many events so far.
    pub fn len(&self) -> u64 {
        self.0.lock().len()
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The log's hashes so far (header and every event recorded), each `None`
    /// unless [`RuntimeConfig::hashes`] asked for it.
    pub fn hashes(&self) -> LogHashes {
        self.0.lock().hashes_so_far()
    }
}

/// What a runtime started again after a process loss keeps of the one before:
/// the clock, the recorder, the agent ids, the final results and any crash.
#[derive(Clone)]
pub(crate) struct Continuity {
    pub recorder: Arc<Journal>,
    pub start: tokio::time::Instant,
    pub next_agent: Arc<AtomicU64>,
    pub finals: Arc<Mutex<BTreeMap<String, crate::effect::FinalResult>>>,
    pub crashed: Arc<Mutex<Option<String>>>,
    /// The durable log the recorder writes through, if any.
    pub log: Option<LogFile>,
}

impl Continuity {
    pub fn new(recorder: Recorder) -> Continuity {
        Continuity {
            recorder: Arc::new(Journal::new(recorder)),
            start: tokio::time::Instant::now(),
            next_agent: Arc::new(AtomicU64::new(0)),
            finals: Arc::new(Mutex::new(BTreeMap::new())),
            crashed: Arc::new(Mutex::new(None)),
            log: None,
        }
    }

    /// The same, the recorder writing through `log`.
    pub fn with_log(mut recorder: Recorder, log: LogFile) -> Continuity {
        recorder.sink_to(log.appender());
        let mut continuity = Continuity::new(recorder);
        continuity.log = Some(log);
        continuity
    }
}

/// Creates the log file of `config`, refusing one that holds a log already: it
/// may be the only record of a crashed runtime's open questions.
fn new_log(config: &LogConfig, header: &LogHeader) -> Result<LogFile, StartError> {
    let error = |message: String| StartError::Log {
        path: config.path.clone(),
        message,
    };
    if std::fs::metadata(&config.path).is_ok_and(|m| m.len() > 0) {
        return Err(error(
            "it holds a log already: recover it with Runtime::recover, or remove it".into(),
        ));
    }
    LogFile::create(&config.path, header, config.sync).map_err(|e| error(e.to_string()))
}

/// The broker's waterfall as `answerers` make it up, the built-in answerers'
/// streams drawn from `seed`.
fn slots(answerers: Vec<AnswererSlot>, seed: u64) -> Vec<Slot> {
    answerers
        .into_iter()
        .enumerate()
        .map(|(index, slot)| match slot {
            AnswererSlot::Policy { name, policy } => {
                let stream = answerer_stream(seed, index);
                Slot::Resident(Box::new(PolicyAnswerer::new(
                    index as AnswererIx,
                    name.as_str().into(),
                    policy,
                    stream,
                )))
            }
            AnswererSlot::Machine { machine, .. } => Slot::Machine(machine),
            AnswererSlot::Actor { actor, .. } => Slot::User(actor),
        })
        .collect()
}

/// A running runtime: a broker, its answerers and the agents spawned on it.
/// Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    broker: ActorRef<BrokerMail>,
    answerer_names: Vec<Name>,
}

impl Runtime {
    /// Starts the broker and the answerers on the current tokio runtime, keeping
    /// every event in memory for [`Runtime::events`]. With `config.log`, the log
    /// is also written to that file as events happen; a file that holds a log
    /// already is refused (it may be the only record of a crashed runtime:
    /// recover it with [`Runtime::recover`]).
    ///
    /// Kept events are what a test or a short-lived host reads back, so this
    /// keeps them all: memory grows by each event (a few hundred bytes with
    /// its text; a pending call records seven, a round trip five) up to
    /// `config.events_max`. They are kept in chunks that are never moved
    /// ([`crate::record::KeptEvents`]), so keeping millions costs no copy of
    /// those before. A host that runs for good keeps none
    /// ([`Runtime::start_without_events`]; a log file is its record) or moves
    /// them out now and then ([`EventLog::take`]).
    pub async fn start(config: RuntimeConfig) -> Result<Runtime, StartError> {
        Runtime::start_keeping(config, true).await
    }

    /// Starts a runtime that keeps no event in memory: [`Runtime::events`] still
    /// counts them (and the projection and the hashes asked for go on), but its snapshot
    /// is empty. For a long-lived host or many open questions, where the kept
    /// log is most of the memory (3.3 KB of 4.6 KB per pending question).
    pub async fn start_without_events(config: RuntimeConfig) -> Result<Runtime, StartError> {
        Runtime::start_keeping(config, false).await
    }

    async fn start_keeping(config: RuntimeConfig, keep: bool) -> Result<Runtime, StartError> {
        let name = config.log.as_ref().map_or(LIBRARY_LOG_NAME, |l| &l.name);
        let recorder_header = LogHeader::real(name, config.seed);
        let recorder = Recorder::new(&recorder_header, u64::MAX, keep)
            .keeping_at_most(config.events_max)
            .with_hashes(config.hashes);
        let continuity = match &config.log {
            None => Continuity::new(recorder),
            Some(log) => Continuity::with_log(recorder, new_log(log, &recorder_header)?),
        };
        Runtime::start_in(config, continuity).await
    }

    pub(crate) async fn start_in(
        config: RuntimeConfig,
        continuity: Continuity,
    ) -> Result<Runtime, StartError> {
        let names: Vec<Name> = config.answerers.iter().map(|a| Name::from(a.name())).collect();
        let state = BrokerState::new(BrokerConfig {
            answerers: names.clone(),
            offer_timeout_s: config.offer_timeout_s,
            limits: config.limits,
        })?;
        let slots = slots(config.answerers, config.seed);
        let seat = super::seat::Seat::for_waterfall(&slots);
        let log = continuity.log.clone();
        let shared = Arc::new_cyclic(|weak: &std::sync::Weak<Shared>| Shared {
            me: weak.clone(),
            seat,
            gate: log.as_ref().map(|log| {
                let weak = weak.clone();
                let journal = continuity.recorder.clone();
                let horizon: Option<crate::durable::gate::Horizon> = journal
                    .horizon()
                    .map(|_| Box::new(move || journal.horizon().unwrap_or(0)) as _);
                // Called with the gate locked, maybe on the sync thread or
                // with the recorder locked: only queued here, handed on by
                // the courier.
                Gate::with_horizon(log, horizon, move |envelope| {
                    if let Some(shared) = weak.upgrade() {
                        shared.courier.push(envelope);
                    }
                })
            }),
            log,
            broker: OnceLock::new(),
            agents: Mutex::new(rustc_hash::FxHashMap::default()),
            names: Mutex::new(BTreeMap::new()),
            answerers: OnceLock::new(),
            recorder: continuity.recorder,
            start: continuity.start,
            in_flight: AtomicI64::new(0),
            due: Arc::new(AtomicI64::new(0)),
            epoch: CancellationToken::new(),
            next_agent: continuity.next_agent,
            tool: config.tool,
            prepared: Default::default(),
            finals: continuity.finals,
            crashed: continuity.crashed,
            shutting_down: AtomicBool::new(false),
            stamps: Mutex::new(Default::default()),
            counts: Default::default(),
            courier: Default::default(),
        });
        if shared.gate.is_some() {
            super::courier::start(&shared);
        }
        let args = BrokerArgs {
            shared: shared.clone(),
            state,
            slots,
        };
        let (broker, _) = Actor::spawn(None, BrokerActor, args)
            .await
            .map_err(|e| StartError::Spawn(e.to_string()))?;
        Ok(Runtime {
            inner: Arc::new(Inner {
                shared,
                broker,
                answerer_names: names,
            }),
        })
    }

    /// Spawns a runtime root. `lineage` is durable history only: it never decides
    /// who may ask.
    pub async fn spawn_root(&self, name: &str, lineage: Option<String>) -> Result<AgentHandle, SpawnError> {
        self.spawn_agent(name, None, lineage, 0).await
    }

    /// Spawns a root that made `calls_made` calls in an earlier life (a session
    /// resumed after process loss), so its callIds continue.
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
        owner: Option<(AgentId, CancellationToken, Turn)>,
        lineage: Option<String>,
        calls_made: u64,
    ) -> Result<AgentHandle, SpawnError> {
        let shared = &self.inner.shared;
        let id = shared.next_agent.fetch_add(1, Ordering::SeqCst) + 1;
        let own = TurnId { agent: id, n: 1 };
        let (owner_id, parent_token, parent_turn) = match owner {
            Some((id, token, turn)) => (Some(id), Some(token), Some(turn)),
            None => (None, None, None),
        };
        let turn = parent_turn
            .as_ref()
            .map_or_else(|| Turn::root(own), |t| t.derive(own));
        let state = AgentState::new(AgentSetup {
            id,
            name: name.into(),
            tool: shared.tool,
            turn: turn.clone(),
            owner: owner_id,
            calls_made,
            pending: Default::default(),
            script: None,
            prepared: shared.prepared.clone(),
        });
        self.start_agent(state, parent_token, owner_id, lineage).await
    }

    /// Starts a library agent ([`super::passive`]), registers it with the
    /// broker and waits for the answer.
    pub(crate) async fn start_agent(
        &self,
        state: AgentState,
        parent_token: Option<CancellationToken>,
        owner: Option<AgentId>,
        lineage: Option<String>,
    ) -> Result<AgentHandle, SpawnError> {
        let shared = &self.inner.shared;
        let (id, name, turn) = (state.id(), state.name().clone(), state.turn().clone());
        shared.counts.oneshot();
        let (registered, registered_rx) = oneshot::channel();
        let agent = super::agent::start_passive(shared, state, parent_token, Some(registered)).await?;
        let registration = Registration {
            agent: id,
            name: name.clone(),
            owner,
            lineage: lineage.map(crate::protocol::Text::from),
            turn,
        };
        shared.route(crate::protocol::Envelope::Broker(BrokerMsg::Register(Box::new(
            registration,
        ))));
        match registered_rx.await {
            Ok(Ok(())) => Ok(AgentHandle {
                id,
                name,
                agent,
                runtime: self.clone(),
            }),
            Ok(Err(error)) => {
                agent.stop();
                Err(error)
            }
            Err(_) => {
                agent.stop();
                Err(SpawnError::RuntimeStopped)
            }
        }
    }

    /// Starts a scenario agent (a root, or one resumed after a restart) running
    /// `script`; its registration is answered through its own mailbox.
    pub(crate) async fn start_scripted(
        &self,
        setup: AgentSetup,
        lineage: Option<String>,
        redeliver: Vec<(CallId, Arc<str>)>,
    ) -> Option<AgentId> {
        self.start_resumed(setup, lineage, redeliver).await.map(|a| a.id)
    }

    /// Starts an agent as a runtime root from `setup` (a scenario root, or one
    /// coming back after a restart), the user messages in `redeliver` delivered
    /// to it first; its registration is answered through its own mailbox.
    pub(crate) async fn start_resumed(
        &self,
        setup: AgentSetup,
        lineage: Option<String>,
        redeliver: Vec<(CallId, Arc<str>)>,
    ) -> Option<AgentHandle> {
        let shared = &self.inner.shared;
        let id = setup.id;
        let (name, turn) = (setup.name.clone(), setup.turn.clone());
        let scripted = setup.script.is_some();
        let mut state = AgentState::new(setup);
        let now = shared.now();
        let mut out = crate::effect::Out::new(now);
        for (call_id, message) in redeliver {
            state.redeliver(call_id, message, &mut out);
        }
        let events = out.drain().filter_map(|effect| match effect {
            crate::effect::Effect::Record(kind) => Some(kind),
            _ => None,
        });
        shared.recorder.record(crate::protocol::seconds(now), events);
        let agent = if scripted {
            let args = AgentArgs {
                shared: shared.clone(),
                state,
                parent_token: None,
                registered: None,
            };
            super::agent::start(shared, args).await.ok()?
        } else {
            super::agent::start_passive(shared, state, None, None)
                .await
                .ok()?
        };
        let registration = Registration {
            agent: id,
            name: name.clone(),
            owner: None,
            lineage: lineage.map(crate::protocol::Text::from),
            turn,
        };
        shared.route(crate::protocol::Envelope::Broker(BrokerMsg::Register(Box::new(
            registration,
        ))));
        Some(AgentHandle {
            id,
            name,
            agent,
            runtime: self.clone(),
        })
    }

    /// A fresh agent id of this run.
    pub(crate) fn next_agent_id(&self) -> AgentId {
        self.inner.shared.next_agent.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Cancels one call explicitly: a waiting call settles as `ABORTED`, a pending
    /// one is withdrawn without a message.
    pub fn cancel_call(&self, call_id: &str) {
        self.send(BrokerMsg::CancelCall {
            call_id: call_id.into(),
        });
    }

    /// Kills the named answerer, as a crash would.
    pub fn crash_answerer(&self, name: &str) {
        let index = self.inner.answerer_names.iter().position(|n| &**n == name);
        let shared = &self.inner.shared;
        if let Some((i, slot)) = index.and_then(|i| shared.answerers.get()?.get(i).map(|slot| (i, slot))) {
            slot.kill(shared, i as AnswererIx);
        }
    }

    /// The broker's open calls now.
    pub async fn status(&self) -> BrokerStatus {
        self.inner.shared.counts.oneshot();
        let (reply, rx) = oneshot::channel();
        self.send(BrokerMsg::Status(reply));
        rx.await.unwrap_or_default()
    }

    /// Seconds since the runtime started, on its clock (tokio's: paused in tests,
    /// real otherwise).
    pub fn now_s(&self) -> f64 {
        crate::protocol::seconds(self.inner.shared.now())
    }

    /// Messages the runtime's own actors sent and have not handled yet, and timers
    /// running (faults aside): a real-clock run is over only when both are zero.
    pub fn in_flight(&self) -> (i64, i64) {
        let shared = &self.inner.shared;
        (
            shared.in_flight.load(Ordering::SeqCst),
            shared.due.load(Ordering::SeqCst),
        )
    }

    /// The registered tool.
    pub fn tool(&self) -> ToolConfig {
        self.inner.shared.tool
    }

    /// The memo its scripted agents validate their arguments through.
    pub fn prepared(&self) -> crate::agent::Prepared {
        self.inner.shared.prepared.clone()
    }

    /// What the runtime did so far, counted: messages by kind, tasks, oneshots,
    /// recorder and journal locks, event lines serialised (for tests and
    /// benches of its cost; what is queued is recorded first).
    pub fn counts(&self) -> super::RuntimeCounts {
        let shared = &self.inner.shared;
        let lines = shared.recorder.lock().lines();
        shared.counts.read(shared.recorder.path_counts(), lines)
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// The recorded events.
    pub fn events(&self) -> EventLog {
        EventLog(self.inner.shared.recorder.clone())
    }

    /// The durable log file, when the runtime has one. Recorded events reach
    /// it through the journal's thread: [`Runtime::durable_now`] waits for
    /// everything recorded so far, the file's own `durable_now` only for what
    /// was appended to it.
    pub fn log(&self) -> Option<&LogFile> {
        self.inner.shared.log.as_ref()
    }

    /// Waits until every event recorded so far is durable (the queued ones
    /// written first). At once without a log.
    pub async fn durable_now(&self) {
        let Some(log) = self.log() else {
            return;
        };
        drop(self.inner.shared.recorder.lock());
        log.durable_now().await;
    }

    /// Compacts the durable log (SPEC §4.1): everything so far becomes one
    /// snapshot line of the projection, and the log goes on after it; recovery
    /// from it equals recovery from the whole log. Recording waits meanwhile (a
    /// long-lived host calls it now and then, say every million events). A
    /// runtime without a log has nothing to compact: `Ok(None)`.
    pub fn compact_log(&self) -> std::io::Result<Option<crate::durable::Compacted>> {
        let Some(log) = self.log() else {
            return Ok(None);
        };
        let recorder = self.inner.shared.recorder.lock();
        crate::durable::compact_live(&recorder, log).map(Some)
    }

    /// Waits until what `agent` recorded before now is durable: an actor's
    /// mailbox is passed first (a reply it sent from inside a handler comes
    /// before the handler's events are recorded; a library agent's step
    /// records before its caller runs again), then the log. At once without a
    /// log.
    pub(crate) async fn durable_after(&self, agent: &AgentRef) {
        if self.log().is_none() {
            return;
        }
        if let AgentRef::Actor(actor) = agent {
            self.inner.shared.counts.oneshot();
            let (reply, rx) = oneshot::channel();
            if actor.send_message(AgentMail::Token { new: false, reply }).is_ok() {
                let _ = rx.await;
            }
        }
        self.durable_now().await;
    }

    /// Sends the broker a message of the runtime's own (counted in flight).
    pub(crate) fn send(&self, msg: BrokerMsg) {
        self.inner.shared.route(crate::protocol::Envelope::Broker(msg));
    }

    /// The id of the agent of this runtime named `name`.
    pub(crate) fn agent_named(&self, name: &str) -> Option<AgentId> {
        self.inner
            .shared
            .names
            .lock()
            .expect("names poisoned")
            .get(name)
            .copied()
    }

    /// Fires the current turn of the agent named `name`, as a host runtime does
    /// (its token, and the broker told first); false if there is no such agent.
    pub(crate) async fn cancel_turn_of(&self, name: &str) -> bool {
        let shared = &self.inner.shared;
        let Some((id, agent)) = self
            .agent_named(name)
            .and_then(|id| shared.agent(id).map(|a| (id, a)))
        else {
            return false;
        };
        shared.counts.oneshot();
        let (reply, rx) = oneshot::channel();
        let _ = agent.mail(shared, AgentMail::Token { new: false, reply });
        if let Ok((token, turn)) = rx.await {
            self.send(BrokerMsg::CancelTurn { agent: id, turn });
            token.cancel();
        }
        true
    }

    /// Stops the broker, its answerers and every agent, and cancels every timer:
    /// everything in memory dies (a real-clock process loss uses it too). Agents'
    /// handles go stale.
    pub async fn shutdown(&self) {
        let shared = &self.inner.shared;
        shared.epoch.cancel();
        shared.shutting_down.store(true, Ordering::SeqCst);
        let _ = self.inner.broker.stop_children_and_wait(None, None).await;
        let _ = self.inner.broker.stop_and_wait(None, None).await;
        let agents: Vec<AgentRef> = shared
            .agents
            .lock()
            .expect("agents poisoned")
            .drain()
            .map(|(_, a)| a)
            .collect();
        for agent in agents {
            agent.stop_and_wait().await;
        }
        self.durable_now().await;
    }
}
