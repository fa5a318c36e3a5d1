//! The driver: builds a runtime from a scenario, starts the root scripts, fires
//! the scheduled events, and decides when the run is over (SPEC §5, §6).
//!
//! Virtual clock: a current-thread runtime on paused time, so the same scenario
//! and seed replay the same interleaving. The run is over when the runtime is idle
//! and nothing is due: the driver sleeps until `virtual_s_max`; paused time jumps
//! there only once no earlier timer is left, and if the timer account
//! ([`Sched::due`]) is then empty, nothing could change any more. Otherwise the
//! limit stopped the run. Real clock: a multi-thread runtime, and the driver polls
//! the account instead.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::broker::AnswererSlot;
use crate::event::{Event, EventKind, EventSink};
use crate::projection::Projection;
use crate::runtime::{Runtime, RuntimeConfig};
use crate::scenario::{Action as Scheduled, Clock, EventSpec, Scenario};
use crate::sched::Sched;
use crate::sim::script::{World, register, spawn_script};
use crate::tool::{Ask, Question, Schema, Wait};

/// How often the real-clock driver looks at the timer account.
const REAL_CLOCK_POLL: Duration = Duration::from_millis(5);
/// Consecutive idle polls after which a real-clock run is over.
const REAL_CLOCK_IDLE_POLLS: u32 = 4;

/// What a run produced, before any analysis.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The seed the run used.
    pub seed: u64,
    /// The clock it ran on.
    pub clock: Clock,
    /// Every event, in order.
    pub events: Vec<Event>,
    /// Final results of the scripts that ended, by agent.
    pub finals: BTreeMap<String, Value>,
    /// Calls still open at the end: callId → `"waiting"` or `"pending"`.
    pub open: BTreeMap<String, &'static str>,
    /// The limit that stopped the run, if one did.
    pub limit: Option<String>,
    /// Seconds on the run's clock until nothing changed any more.
    pub virtual_s: f64,
    /// Seconds of wall time the run took.
    pub wall_s: f64,
}

/// Runs `scenario` under `seed` on `clock`.
pub fn run(scenario: &Scenario, seed: u64, clock: Clock) -> std::io::Result<RunOutput> {
    let runtime = match clock {
        Clock::Virtual => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()?,
        Clock::Real => tokio::runtime::Builder::new_multi_thread().enable_all().build()?,
    };
    // The wall clock is read only to report wall_s; nothing in the run sees it.
    let wall = std::time::Instant::now();
    let mut output = runtime.block_on(drive(scenario, seed, clock));
    runtime.shutdown_background();
    output.wall_s = wall.elapsed().as_secs_f64();
    Ok(output)
}

fn runtime_config(scenario: &Scenario, seed: u64, clock: Clock) -> RuntimeConfig {
    RuntimeConfig {
        tool: scenario.tool,
        answerers: scenario
            .answerers
            .iter()
            .map(|a| AnswererSlot::Policy {
                name: a.name.clone(),
                policy: a.policy.clone(),
            })
            .collect(),
        offer_timeout_s: scenario.broker.offer_timeout_s,
        seed,
        jitter_max_s: match clock {
            Clock::Virtual => scenario.jitter_max_s.unwrap_or(0.0),
            Clock::Real => 0.0,
        },
        events_max: scenario.limits.events_max,
        ..RuntimeConfig::default()
    }
}

async fn drive(scenario: &Scenario, seed: u64, clock: Clock) -> RunOutput {
    let sched = Sched::new();
    let events = EventSink::new(sched.clone(), scenario.limits.events_max);
    let runtime = Runtime::start_with(
        runtime_config(scenario, seed, clock),
        sched.clone(),
        events.clone(),
    )
    .await
    .expect("a validated scenario starts");
    let world = World::new(runtime.clone());
    for spec in &scenario.agents {
        let Ok(handle) = runtime.spawn_root(&spec.name, spec.lineage_parent.clone()).await else {
            continue;
        };
        register(&world, &handle, spec);
        spawn_script(world.clone(), handle, spec.script.clone(), BTreeSet::new());
    }
    let run = Run {
        scenario,
        seed,
        clock,
        world: world.clone(),
        events: events.clone(),
    };
    let mut limit = run.scheduled(&sched).await;
    if limit.is_none() {
        limit = match clock {
            Clock::Virtual => settle_virtual(scenario, &sched, &events).await,
            Clock::Real => settle_real(scenario, &sched, &events).await,
        };
    }
    let now_s = sched.now_s();
    let last_event_s = events.last_t();
    let virtual_s = if limit.is_some() {
        now_s
    } else {
        sched.last_fire_s().max(last_event_s).min(now_s)
    };
    let runtime = world.runtime();
    let open = runtime.status().await.open;
    runtime.shutdown().await;
    let finals = world.finals.lock().expect("world poisoned").clone();
    RunOutput {
        seed,
        clock,
        events: events.take(),
        finals,
        open,
        limit,
        virtual_s,
        wall_s: 0.0,
    }
}

/// One run in progress: what the scheduled events act on.
struct Run<'a> {
    scenario: &'a Scenario,
    seed: u64,
    clock: Clock,
    world: Arc<World>,
    events: EventSink,
}

impl Run<'_> {
    /// Fires the scheduled events in order; those that fall in a restart gap are
    /// dropped and logged. Returns the limit that stopped the run, if one did.
    async fn scheduled(&self, sched: &Sched) -> Option<String> {
        let mut restart_at: Option<f64> = None;
        for event in &self.scenario.events {
            if let Some(at) = restart_at.filter(|at| *at <= event.at_s) {
                if let Some(limit) = self.sleep_until(sched, at).await {
                    return Some(limit);
                }
                self.restart(sched).await;
                restart_at = None;
            }
            if let Some(limit) = self.sleep_until(sched, event.at_s).await {
                return Some(limit);
            }
            if restart_at.is_some() {
                self.events.record(EventKind::Dropped {
                    what: scheduled_json(event),
                });
                continue;
            }
            if let Scheduled::ProcessLoss { restart_after_s } = event.action {
                self.process_loss(restart_after_s).await;
                restart_at = Some(event.at_s + restart_after_s);
                continue;
            }
            self.apply(event).await;
        }
        if let Some(at) = restart_at {
            if let Some(limit) = self.sleep_until(sched, at).await {
                return Some(limit);
            }
            self.restart(sched).await;
        }
        None
    }

    async fn sleep_until(&self, sched: &Sched, at_s: f64) -> Option<String> {
        if at_s > self.scenario.limits.virtual_s_max {
            return Some("virtual_s_max".to_owned());
        }
        tokio::select! {
            biased;
            _ = self.events.overflow().cancelled() => Some("events_max".to_owned()),
            _ = tokio::time::sleep_until(sched.instant_at(at_s)) => None,
        }
    }

    async fn apply(&self, event: &EventSpec) {
        let world = &self.world;
        let runtime = world.runtime();
        let handle = |name: &str| world.agents.lock().expect("world poisoned").get(name).cloned();
        let not_yet = |what| EventKind::Dropped { what };
        match &event.action {
            Scheduled::CancelTurn(name) => match handle(name) {
                Some(agent) => agent.cancel_turn().await,
                None => self
                    .events
                    .record(not_yet(json!({"cancel_turn": name, "why": "not spawned yet"}))),
            },
            Scheduled::StopAgent(name) => match handle(name) {
                Some(agent) => agent.stop(),
                None => self
                    .events
                    .record(not_yet(json!({"stop_agent": name, "why": "not spawned yet"}))),
            },
            Scheduled::CancelCall(call_id) => runtime.cancel_call(call_id),
            Scheduled::CrashAnswerer(name) => runtime.crash_answerer(name),
            Scheduled::ProcessLoss { .. } => unreachable!("process loss is handled by the event loop"),
        }
    }

    /// Everything in memory dies: broker, answerers, agents, their timers and
    /// scripts. Only the event log survives.
    async fn process_loss(&self, restart_after_s: f64) {
        self.events.record(EventKind::ProcessLoss {
            restart_after: restart_after_s,
        });
        self.world.runtime().shutdown().await;
    }

    /// The runtime starts again from the log (SPEC §3.9): answerers from their
    /// rows, every agent that was live as a runtime root carrying its lineage and
    /// running its `on_resume`, and every open timed question re-offered.
    async fn restart(&self, sched: &Sched) {
        self.events.record(EventKind::Restart);
        let log = self.events.snapshot();
        let projection = Projection::fold(&log);
        let config = runtime_config(self.scenario, self.seed, self.clock);
        let runtime = Runtime::start_with(config, sched.next_epoch(), self.events.clone())
            .await
            .expect("a validated scenario starts");
        *self.world.runtime.lock().expect("world poisoned") = runtime.clone();
        self.world.agents.lock().expect("world poisoned").clear();
        let mut resumed = Vec::new();
        for (name, agent) in projection.agents.iter().filter(|(_, a)| a.live) {
            let lineage = agent.lineage.clone().or_else(|| agent.owner.clone());
            let Ok(handle) = runtime.resume_root(name, lineage, agent.calls_made).await else {
                continue;
            };
            self.world
                .agents
                .lock()
                .expect("world poisoned")
                .insert(name.clone(), handle.clone());
            resumed.push((name.clone(), handle));
        }
        let mut reopened: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (call_id, question) in projection.answerable() {
            let agent = resumed.iter().find(|(name, _)| *name == question.agent);
            let questions = projection.questions_of(&log, call_id);
            match (agent, questions.and_then(restored_ask)) {
                (Some((_, handle)), Some(ask)) => {
                    runtime.restore(handle, call_id, ask);
                    reopened
                        .entry(question.agent.clone())
                        .or_default()
                        .insert(call_id.clone());
                }
                // Nothing can answer it or nobody is there to read the answer:
                // it is withdrawn, so the log and the broker agree.
                _ => self.events.record(EventKind::Withdraw {
                    call_id: call_id.clone(),
                    agent: question.agent.clone(),
                    reason: "not_restorable".to_owned(),
                    message: None,
                }),
            }
        }
        for (name, handle) in resumed {
            let on_resume = self
                .world
                .specs
                .lock()
                .expect("world poisoned")
                .get(&name)
                .map(|s| s.on_resume.clone());
            let pending = reopened.remove(&name).unwrap_or_default();
            spawn_script(self.world.clone(), handle, on_resume.unwrap_or_default(), pending);
        }
    }
}

/// A timed question rebuilt from its recorded request, or `None` if the record
/// lacks the shape. The questions come back re-serialised from the log: the same
/// JSON value the model sent.
fn restored_ask(recorded: &Value) -> Option<Ask> {
    let questions: Vec<Question> = recorded
        .as_array()?
        .iter()
        .map(Question::from_recorded)
        .collect::<Option<_>>()?;
    Some(Ask {
        schema: Schema::Timed,
        questions: questions.into(),
        questions_raw: recorded.to_string().into(),
        questions_json: Value::Null,
        timeout_arg: None,
        wait: Wait::Blocking,
    })
}

/// A scheduled event as the log's `dropped` records it.
fn scheduled_json(event: &EventSpec) -> Value {
    match &event.action {
        Scheduled::CancelTurn(name) => json!({"at": event.at_s, "cancel_turn": name}),
        Scheduled::CancelCall(call_id) => json!({"at": event.at_s, "cancel_call": call_id}),
        Scheduled::StopAgent(name) => json!({"at": event.at_s, "stop_agent": name}),
        Scheduled::CrashAnswerer(name) => json!({"at": event.at_s, "crash_answerer": name}),
        Scheduled::ProcessLoss { restart_after_s } => {
            json!({"at": event.at_s, "process_loss": {"restart_after": restart_after_s}})
        }
    }
}

async fn settle_virtual(scenario: &Scenario, sched: &Sched, events: &EventSink) -> Option<String> {
    tokio::select! {
        biased;
        _ = events.overflow().cancelled() => Some("events_max".to_owned()),
        _ = tokio::time::sleep_until(sched.instant_at(scenario.limits.virtual_s_max)) => {
            (sched.due() > 0).then(|| "virtual_s_max".to_owned())
        }
    }
}

async fn settle_real(scenario: &Scenario, sched: &Sched, events: &EventSink) -> Option<String> {
    let mut idle_polls = 0;
    let mut seen = events.len();
    loop {
        tokio::time::sleep(REAL_CLOCK_POLL).await;
        if events.overflow().is_cancelled() {
            return Some("events_max".to_owned());
        }
        if sched.now_s() > scenario.limits.virtual_s_max {
            return Some("virtual_s_max".to_owned());
        }
        let now = events.len();
        idle_polls = if sched.due() == 0 && now == seen {
            idle_polls + 1
        } else {
            0
        };
        seen = now;
        if idle_polls >= REAL_CLOCK_IDLE_POLLS {
            return None;
        }
    }
}
