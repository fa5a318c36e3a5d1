//! Real-clock scenario runs: the scenario on the actor runtime, on a multi-thread
//! tokio runtime and the wall clock, for load and throughput (SPEC §5 `clock`).
//!
//! The scenario's agents run their scripts inside their actors, as under the
//! simulator. The driver fires the scheduled events at their times and restarts
//! the runtime after a process loss. The run is over when every scheduled event
//! has fired, no message is in flight, no timer is due and the log has stopped
//! growing; it never ends while a message is in flight.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::actors::{AnswererSlot, Continuity, Runtime, RuntimeConfig};
use crate::agent::{AgentSetup, Script};
use crate::event::EventKind;
use crate::protocol::{AgentId, BrokerMsg, Turn, TurnId};
use crate::record::Recorder;
use crate::scenario::{Action, AgentSpec, Clock, EventSpec, Scenario};
use crate::sim::engine::output::{Limit, Output};
use crate::sim::engine::strategy::Strategy;

/// How often the driver looks at what is in flight and due.
const POLL: Duration = Duration::from_millis(5);
/// Consecutive quiet polls after which the run is over.
const QUIET_POLLS: u32 = 4;

/// Runs `scenario` under `seed` on the real clock, recording into `recorder`.
pub fn run<V>(scenario: &Scenario, seed: u64, recorder: Recorder) -> (Output<V>, std::io::Result<()>) {
    let tokio = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(tokio) => tokio,
        Err(error) => return (empty_output(seed, recorder), Err(error)),
    };
    let output = tokio.block_on(Driver::new(scenario, seed, recorder).drive());
    tokio.shutdown_background();
    output
}

fn empty_output<V>(seed: u64, recorder: Recorder) -> Output<V> {
    Output {
        seed,
        clock: Clock::Real,
        strategy: Strategy::Fifo,
        recording: recorder.finish().0,
        finals: BTreeMap::new(),
        open: BTreeMap::new(),
        closed: None,
        limit: None,
        crashed: None,
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
    specs: BTreeMap<String, Arc<AgentSpec>>,
}

impl<'s> Driver<'s> {
    fn new(scenario: &'s Scenario, seed: u64, recorder: Recorder) -> Driver<'s> {
        let specs = scenario
            .all_agents()
            .into_iter()
            .map(|spec| (spec.name.clone(), Arc::new(spec.clone())))
            .collect();
        Driver {
            scenario,
            seed,
            continuity: Continuity::new(recorder),
            specs,
        }
    }

    fn config(&self) -> RuntimeConfig {
        RuntimeConfig {
            tool: self.scenario.tool,
            answerers: self
                .scenario
                .answerers
                .iter()
                .map(|a| AnswererSlot::Policy {
                    name: a.name.clone(),
                    policy: a.policy.clone(),
                })
                .collect(),
            offer_timeout_s: self.scenario.broker.offer_timeout_s,
            seed: self.seed,
            events_max: self.scenario.limits.events_max,
            limits: self.scenario.broker.limits(),
        }
    }

    fn now_s(&self) -> f64 {
        self.continuity.start.elapsed().as_secs_f64()
    }

    fn record(&self, kind: EventKind) {
        let t = self.now_s();
        self.continuity
            .recorder
            .lock()
            .expect("recorder poisoned")
            .record(t, kind);
    }

    async fn drive<V>(self) -> (Output<V>, std::io::Result<()>) {
        let mut runtime = Runtime::start_in(self.config(), self.continuity.clone())
            .await
            .expect("a validated scenario starts");
        for spec in &self.scenario.agents {
            let spec = self.specs[&spec.name].clone();
            let lineage = spec.lineage_parent.clone();
            self.start_agent(&runtime, &spec, lineage, 0, BTreeSet::new(), false, Vec::new())
                .await;
        }
        let mut limit = None;
        let mut restart_at: Option<f64> = None;
        for event in &self.scenario.events {
            if let Some(at) = restart_at.filter(|at| *at <= event.at_s) {
                if let Some(hit) = self.sleep_until(at).await {
                    limit = Some(hit);
                    break;
                }
                runtime = self.restart().await;
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
                None => runtime = self.restart().await,
            }
        }
        if limit.is_none() {
            limit = self.settle(&runtime).await;
        }
        let broker = runtime.status().await;
        runtime.shutdown().await;
        self.finish(limit, broker)
    }

    fn finish<V>(
        self,
        limit: Option<Limit>,
        broker: crate::protocol::BrokerStatus,
    ) -> (Output<V>, std::io::Result<()>) {
        let header = crate::log::LogHeader::new(&self.scenario.name, self.seed);
        let recorder = std::mem::replace(
            &mut *self.continuity.recorder.lock().expect("recorder poisoned"),
            Recorder::new(&header, 0, false),
        );
        let virtual_s = recorder.last_t();
        let (recording, written) = recorder.finish();
        let limit = limit.or(recording.overflowed.then_some(Limit::EventsMax));
        let output = Output {
            seed: self.seed,
            clock: Clock::Real,
            strategy: Strategy::Fifo,
            recording,
            finals: self.continuity.finals.lock().expect("finals poisoned").clone(),
            open: broker.open,
            closed: broker.closed,
            limit,
            crashed: self
                .continuity
                .crashed
                .lock()
                .expect("crash slot poisoned")
                .clone(),
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
        self.continuity
            .recorder
            .lock()
            .expect("recorder poisoned")
            .overflowed()
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
            let events = self.continuity.recorder.lock().expect("recorder poisoned").len();
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
            name: spec.name.as_str().into(),
            tool: self.scenario.tool,
            turn: Turn::root(TurnId { agent: id, n: 1 }),
            parent_turn: None,
            owner: None,
            calls_made,
            pending,
            script: Some(Script::new(spec.clone(), resumed)),
        };
        runtime.start_scripted(setup, lineage, redeliver).await
    }

    /// The runtime starts again from the log, as [`crate::restart::plan`] says,
    /// as the simulator does.
    async fn restart(&self) -> Runtime {
        self.record(EventKind::Restart);
        let plan = {
            let recorder = self.continuity.recorder.lock().expect("recorder poisoned");
            crate::restart::plan(recorder.projection())
        };
        let runtime = Runtime::start_in(self.config(), self.continuity.clone())
            .await
            .expect("a validated scenario starts");
        let mut resumed: BTreeMap<String, AgentId> = BTreeMap::new();
        for agent in plan.agents {
            let Some(spec) = self.specs.get(&agent.name).cloned() else {
                continue;
            };
            let (lineage, calls_made, pending) = (agent.lineage, agent.calls_made, agent.pending);
            if let Some(id) = self
                .start_agent(
                    &runtime,
                    &spec,
                    lineage,
                    calls_made,
                    pending,
                    true,
                    agent.redeliver,
                )
                .await
            {
                resumed.insert(agent.name, id);
            }
        }
        for reopened in plan.reopened {
            let restored = reopened.restored(&resumed);
            runtime.send(BrokerMsg::Restore(Box::new(restored)));
        }
        runtime
    }
}
