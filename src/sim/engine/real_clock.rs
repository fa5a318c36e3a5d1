//! Real-clock scenario runs: the scenario on the actor runtime, on a multi-thread
//! tokio runtime and the wall clock, for load and throughput (SPEC §5 `clock`).
//!
//! The scenario's agents run their scripts inside their actors, as under the
//! simulator. The driver fires the scheduled events at their times and restarts
//! the runtime after a process loss. The run is over when every scheduled event
//! has fired, no message is in flight, no timer is due and the log has stopped
//! growing; it never ends while a message is in flight.
//!
//! A process loss goes through the durable log (SPEC §4.1): at the restart the
//! log is synced, read back from its file and recovered as after a real crash,
//! so every real-clock loss scenario tests that path. A run with a process loss
//! and no `--log` writes a scratch log for it (policy `none`), removed at the
//! end. [`resume`] continues a run after a real crash, from its log.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustc_hash::FxHashMap;
use serde_json::json;

use crate::actors::{AnswererSlot, Continuity, Runtime, RuntimeConfig};
use crate::agent::{AgentSetup, Script};
use crate::answerer::{AnswererSetup, Answerers};
use crate::durable::{LogFile, SyncPolicy};
use crate::event::EventKind;
use crate::protocol::{AgentId, AnswererIx, BrokerMsg, Turn, TurnId};
use crate::record::Recorder;
use crate::scenario::{Action, AgentSpec, Clock, EventSpec, Scenario};
use crate::sim::engine::output::{Limit, Output};
use crate::sim::engine::strategy::Strategy;

/// How often the driver looks at what is in flight and due.
const POLL: Duration = Duration::from_millis(5);
/// Consecutive quiet polls after which the run is over.
const QUIET_POLLS: u32 = 4;

/// Runs `scenario` under `seed` on the real clock, recording into `recorder`
/// (which writes through `log`, when there is one), with the program's own
/// answerers `own` as actors of the runtime.
pub fn run<V>(
    scenario: &Scenario,
    seed: u64,
    recorder: Recorder,
    log: Option<LogFile>,
    own: &Answerers,
) -> (Output<V>, std::io::Result<()>) {
    let (log, scratch) = match log {
        None if scenario
            .events
            .iter()
            .any(|e| matches!(e.action, Action::ProcessLoss { .. })) =>
        {
            match scratch_log(scenario, seed) {
                Ok((log, path)) => (Some(log), Some(path)),
                Err(error) => return (empty_output(seed, recorder), Err(error)),
            }
        }
        log => (log, None),
    };
    let mut recorder = recorder;
    if let (Some(log), Some(_)) = (&log, &scratch) {
        recorder.sink_to(log.appender());
    }
    let mut continuity = Continuity::new(recorder);
    continuity.log = log;
    block_on(
        seed,
        Driver::new(scenario, seed, continuity, scratch, None, own.clone()),
    )
}

/// Continues on the real clock the run of `scenario` under `seed` whose log
/// recovery read back after a real crash: `recorder` holds it and writes on to
/// `log`; `resumed` is where it ended (the last recorded instant) and the torn
/// line recovery dropped.
pub fn resume<V>(
    scenario: &Scenario,
    seed: u64,
    recorder: Recorder,
    log: LogFile,
    resumed: (f64, Option<u64>),
    own: &Answerers,
) -> (Output<V>, std::io::Result<()>) {
    let mut continuity = Continuity::new(recorder);
    continuity.log = Some(log);
    continuity.start = crate::actors::resumed_clock(resumed.0);
    block_on(
        seed,
        Driver::new(scenario, seed, continuity, None, Some(resumed), own.clone()),
    )
}

fn block_on<V>(seed: u64, driver: Driver<'_>) -> (Output<V>, std::io::Result<()>) {
    let tokio = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(tokio) => tokio,
        Err(error) => {
            let recorder = std::mem::replace(&mut *driver.continuity.recorder.lock(), placeholder());
            return (empty_output(seed, recorder), Err(error));
        }
    };
    let output = tokio.block_on(driver.drive());
    tokio.shutdown_background();
    output
}

/// A recorder that records nothing, put where a finished one was taken from.
fn placeholder() -> Recorder {
    Recorder::new(&crate::log::LogHeader::new("", 0), 0, false)
}

/// A scratch log in the temporary directory, under the policy `none`.
fn scratch_log(scenario: &Scenario, seed: u64) -> std::io::Result<(LogFile, PathBuf)> {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let name = format!("asksim-real-clock-{}-{n}.jsonl", std::process::id());
    let path = std::env::temp_dir().join(name);
    let header = crate::log::LogHeader::real(&scenario.name, seed);
    Ok((LogFile::create(&path, &header, SyncPolicy::None)?, path))
}

pub(crate) fn empty_output<V>(seed: u64, recorder: Recorder) -> Output<V> {
    Output {
        seed,
        clock: Clock::Real,
        strategy: Strategy::Fifo,
        recording: recorder.finish().0,
        finals: Default::default(),
        open: BTreeMap::new(),
        closed: None,
        limit: None,
        crashed: None,
        process_failed: None,
        broker: None,
        virtual_s: 0.0,
        wall_s: 0.0,
        choices: 0,
        checked: None,
    }
}

struct Driver<'s> {
    scenario: &'s Scenario,
    seed: u64,
    continuity: Continuity,
    specs: FxHashMap<&'s str, Arc<AgentSpec>>,
    /// The scratch log of a run with a process loss and no `--log`.
    scratch: Option<PathBuf>,
    /// After a real crash: where the log ended (the restart's instant), and the
    /// torn line recovery dropped.
    resumed: Option<(f64, Option<u64>)>,
    /// The program's own answerers: made afresh at the start and each restart.
    own: Answerers,
}

impl<'s> Driver<'s> {
    fn new(
        scenario: &'s Scenario,
        seed: u64,
        continuity: Continuity,
        scratch: Option<PathBuf>,
        resumed: Option<(f64, Option<u64>)>,
        own: Answerers,
    ) -> Driver<'s> {
        let specs = scenario.specs();
        Driver {
            scenario,
            seed,
            continuity,
            specs,
            scratch,
            resumed,
            own,
        }
    }

    fn config(&self) -> RuntimeConfig {
        RuntimeConfig {
            tool: self.scenario.tool,
            answerers: (self.scenario.answerers.iter().enumerate())
                .map(|(index, a)| match self.own.contains(&a.name) {
                    true => AnswererSlot::Machine {
                        name: a.name.clone(),
                        machine: self.own.make(&AnswererSetup {
                            index: index as AnswererIx,
                            name: &a.name,
                            seed: crate::seed::answerer_stream(self.seed, index),
                            policy: &a.policy,
                        }),
                    },
                    false => AnswererSlot::Policy {
                        name: a.name.clone(),
                        policy: a.policy.clone(),
                    },
                })
                .collect(),
            offer_timeout_s: self.scenario.broker.offer_timeout_s,
            seed: self.seed,
            events_max: self.scenario.limits.events_max,
            limits: self.scenario.broker.limits(),
            ..RuntimeConfig::default()
        }
    }

    fn now_s(&self) -> f64 {
        self.continuity.start.elapsed().as_secs_f64()
    }

    fn record(&self, kind: EventKind) {
        let t = self.now_s();
        self.continuity.recorder.lock().record(t, kind);
    }

    async fn drive<V>(mut self) -> (Output<V>, std::io::Result<()>) {
        let mut runtime = match self.resumed {
            None => self.fresh().await,
            Some((_, torn_line)) => self.restart(EventKind::recovered(torn_line)).await,
        };
        let mut limit = None;
        let mut restart_at: Option<f64> = None;
        let from_s = self.resumed.map_or(f64::NEG_INFINITY, |(t, _)| t);
        let scenario = self.scenario;
        for event in scenario.events.iter().filter(|e| e.at_s > from_s) {
            if let Some(at) = restart_at.filter(|at| *at <= event.at_s) {
                if let Some(hit) = self.sleep_until(at).await {
                    limit = Some(hit);
                    break;
                }
                runtime = self.restart_after_loss().await;
                restart_at = None;
            }
            if let Some(hit) = self.sleep_until(event.at_s).await {
                limit = Some(hit);
                break;
            }
            if restart_at.is_some() {
                self.record(EventKind::Dropped {
                    what: event.to_json(),
                });
                continue;
            }
            if let Action::ProcessLoss { restart_after_s } = event.action {
                self.record(EventKind::ProcessLoss {
                    restart_after: restart_after_s,
                });
                runtime.shutdown().await;
                restart_at = Some(event.at_s + restart_after_s);
                continue;
            }
            self.apply(&runtime, event).await;
        }
        if limit.is_none()
            && let Some(at) = restart_at
        {
            match self.sleep_until(at).await {
                Some(hit) => limit = Some(hit),
                None => runtime = self.restart_after_loss().await,
            }
        }
        if limit.is_none() {
            limit = self.settle(&runtime).await;
        }
        let broker = runtime.status().await;
        runtime.shutdown().await;
        self.finish(limit, broker)
    }

    /// The first start: the runtime and the scenario's roots.
    async fn fresh(&self) -> Runtime {
        let runtime = Runtime::start_in(self.config(), self.continuity.clone())
            .await
            .expect("a validated scenario starts");
        self.start_roots(&runtime, |_| true).await;
        runtime
    }

    /// Starts the scenario's roots that `start` picks, as at the start of a run.
    async fn start_roots(&self, runtime: &Runtime, start: impl Fn(&str) -> bool) {
        for spec in self.scenario.agents.iter().filter(|spec| start(&spec.name)) {
            let spec = spec.clone();
            let lineage = spec.lineage_parent.as_deref().map(str::to_owned);
            self.start_agent(runtime, &spec, lineage, 0, BTreeSet::new(), false, Vec::new())
                .await;
        }
    }

    fn finish<V>(
        self,
        limit: Option<Limit>,
        broker: crate::protocol::BrokerStatus,
    ) -> (Output<V>, std::io::Result<()>) {
        let mut recorder = std::mem::replace(&mut *self.continuity.recorder.lock(), placeholder());
        let virtual_s = recorder.last_t();
        let limit = limit.or(recorder.overflowed().then_some(Limit::EventsMax));
        let crashed = self
            .continuity
            .crashed
            .lock()
            .expect("crash slot poisoned")
            .clone();
        // At its last event: the quiet polls after it are the driver's, not the run's.
        recorder.end(
            virtual_s,
            crate::sim::engine::output::end_reason(limit, crashed.is_some()),
        );
        let (recording, written) = recorder.finish();
        if let Some(scratch) = &self.scratch {
            let _ = std::fs::remove_file(scratch);
        }
        let output = Output {
            seed: self.seed,
            clock: Clock::Real,
            strategy: Strategy::Fifo,
            recording,
            finals: (self.continuity.finals.lock().expect("finals poisoned").values())
                .cloned()
                .collect(),
            open: broker.open,
            closed: broker.closed,
            limit,
            crashed,
            process_failed: None,
            broker: None,
            virtual_s,
            wall_s: 0.0,
            choices: 0,
            checked: None,
        };
        (output, written)
    }

    /// Sleeps until `at_s` into the run, unless a limit or a crash stops it first.
    async fn sleep_until(&self, at_s: f64) -> Option<Limit> {
        if at_s > self.scenario.limits.virtual_s_max {
            let limit_s = self.scenario.limits.virtual_s_max;
            tokio::time::sleep_until(self.continuity.start + Duration::from_secs_f64(limit_s)).await;
            return Some(Limit::VirtualSMax);
        }
        let deadline = self.continuity.start + Duration::from_secs_f64(at_s);
        loop {
            if self.overflowed() {
                return Some(Limit::EventsMax);
            }
            if self.crashed() || tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + POLL)).await;
        }
    }

    fn overflowed(&self) -> bool {
        self.continuity.recorder.lock().overflowed()
    }

    fn crashed(&self) -> bool {
        self.continuity
            .crashed
            .lock()
            .expect("crash slot poisoned")
            .is_some()
    }

    /// Waits until nothing is in flight, nothing is due and the log is quiet.
    async fn settle(&self, runtime: &Runtime) -> Option<Limit> {
        let mut quiet = 0;
        let mut seen = u64::MAX;
        loop {
            tokio::time::sleep(POLL).await;
            if self.overflowed() {
                return Some(Limit::EventsMax);
            }
            if self.crashed() {
                return None;
            }
            if self.now_s() > self.scenario.limits.virtual_s_max {
                return Some(Limit::VirtualSMax);
            }
            let events = self.continuity.recorder.lock().len();
            let (in_flight, due) = runtime.in_flight();
            let idle = in_flight <= 0 && due <= 0;
            quiet = if idle && events == seen { quiet + 1 } else { 0 };
            seen = events;
            if quiet >= QUIET_POLLS {
                return None;
            }
        }
    }

    async fn apply(&self, runtime: &Runtime, event: &EventSpec) {
        match &event.action {
            Action::CancelTurn(name) => {
                if !runtime.cancel_turn_of(name).await {
                    self.record(EventKind::Dropped {
                        what: json!({"cancel_turn": name, "why": "not spawned yet"}),
                    });
                }
            }
            Action::StopAgent(name) => match runtime.agent_named(name) {
                Some(id) => runtime.send(BrokerMsg::Stop(id)),
                None => self.record(EventKind::Dropped {
                    what: json!({"stop_agent": name, "why": "not spawned yet"}),
                }),
            },
            Action::CancelCall(call_id) => runtime.cancel_call(call_id),
            Action::CrashAnswerer(name) => runtime.crash_answerer(name),
            Action::ProcessLoss { .. } => unreachable!("process loss is handled by the event loop"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn start_agent(
        &self,
        runtime: &Runtime,
        spec: &Arc<AgentSpec>,
        lineage: Option<String>,
        calls_made: u64,
        pending: BTreeSet<crate::protocol::CallId>,
        resumed: bool,
        redeliver: Vec<(crate::protocol::CallId, Arc<str>)>,
    ) -> Option<AgentId> {
        let id = runtime.next_agent_id();
        let setup = AgentSetup {
            id,
            name: spec.name.clone(),
            tool: self.scenario.tool,
            turn: Turn::root(TurnId { agent: id, n: 1 }),
            owner: None,
            calls_made,
            pending,
            script: Some(Script::new(spec, resumed)),
            prepared: runtime.prepared(),
        };
        runtime.start_scripted(setup, lineage, redeliver).await
    }

    /// After a scheduled process loss: the log is synced and read back from its
    /// file, as after a real crash (SPEC §4.1), then the runtime restarts from it.
    async fn restart_after_loss(&mut self) -> Runtime {
        if let Err(error) = self.reload() {
            let mut crashed = self.continuity.crashed.lock().expect("crash slot poisoned");
            crashed.get_or_insert(format!("the log could not be read back at the restart: {error}"));
        }
        self.restart(EventKind::restart()).await
    }

    /// Replaces the recorder and the log file by what recovery reads back from
    /// the file (the same log: the same events, hashes and projection).
    fn reload(&mut self) -> Result<(), crate::durable::RecoverError> {
        let Some(log) = self.continuity.log.clone() else {
            return Ok(());
        };
        drop(self.continuity.recorder.lock());
        log.sync().map_err(|error| crate::durable::RecoverError::Io {
            path: log.path().to_owned(),
            error,
        })?;
        let recovery =
            crate::sim::engine::log_file::recover_log(self.scenario, self.seed, log.path(), log.policy())?;
        debug_assert!(!recovery.crashed, "a scheduled loss is on the log already");
        let mut recorder = recovery.recorder;
        let mut current = self.continuity.recorder.lock();
        // What watches the run (the timeline, the Chrome trace) has seen every
        // event up to the loss, which the log read back holds too: it goes on
        // from here, or it would end at the loss.
        if let Some(observer) = current.take_observer() {
            recorder.observe_from_now(observer);
        }
        *current = recorder;
        self.continuity.log = Some(recovery.log);
        Ok(())
    }

    /// The runtime starts again from the log, as [`crate::restart::plan`] says,
    /// as the simulator does; `kind` is the restart's event. After a real crash,
    /// a root the log never saw spawned starts afresh.
    async fn restart(&self, kind: EventKind) -> Runtime {
        let recovered = matches!(kind, EventKind::Restart { recovered: true, .. });
        self.record(kind);
        let (mut plan, known) = {
            let recorder = self.continuity.recorder.lock();
            let known: BTreeSet<String> = recorder
                .projection()
                .agents
                .keys()
                .map(|name| name.to_string())
                .collect();
            (crate::restart::plan(recorder.projection()), known)
        };
        plan.agents
            .retain(|agent| self.specs.contains_key(agent.name.as_str()));
        let runtime = Runtime::start_in(self.config(), self.continuity.clone())
            .await
            .expect("a validated scenario starts");
        let specs = &self.specs;
        runtime
            .restore_plan(plan, |name| Some(Script::new(&specs[name], true)))
            .await;
        if recovered {
            self.start_roots(&runtime, |name| !known.contains(name)).await;
        }
        runtime
    }
}
