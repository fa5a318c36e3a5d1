//! The simulated world: the broker, the agents and the answerers of one run, the
//! delivery queue between them, and the driver that starts them, fires the
//! scenario's scheduled events and restarts them after a process loss.
//!
//! One delivery at a time: the queue gives the next message, its receiver's
//! handler runs to completion, and the world carries out what it did (sends go
//! back into the queue, events to the recorder). Nothing here reads a clock or
//! spawns a task, so a run is a pure function of the scenario, the seed and the
//! scheduler's choices. The broker and any answerer may be outside processes
//! (`slots`); one that fails ends the run there, with its failure.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Value, json};

use crate::agent::{AgentSetup, AgentState, Prepared, Script};
use crate::answerer::Answerers;
use crate::broker::BrokerConfig;
use crate::dense::Dense;
use crate::effect::{Effect, Out};
use crate::event::EventKind;
use crate::protocol::{
    Addr, AgentId, AgentMsg, AnswererIx, BrokerMsg, DriverMsg, Envelope, Name, Nanos, Registration, Turn,
    TurnId, nanos, seconds,
};
use crate::record::Recorder;
use crate::scenario::{Action, AgentSpec, Scenario};
use crate::seed::{answerer_stream, derive_seed, jitter_stream};
use crate::sim::engine::finals::Finals;
use crate::sim::engine::output::Limit;
use crate::sim::engine::queue::{Chooser, Delivery, Queue, Stop};
use crate::sim::engine::recording::RunRecorder;
use crate::sim::engine::slots::{AnswererSlot, BrokerSlot};
use crate::wire::{Endpoint, Life, ProcessFailure};

/// The timer id of the driver's restart.
const RESTART_TIMER: u64 = 1;

/// Seeded delays on messages between actors (SPEC §5 `jitter`): one stream per
/// channel (sender and receiver), so a delay depends on the channel's own traffic
/// only, and two deliveries to different actors still commute (what `explore`
/// relies on). The driver's own messages are never delayed. A stream is a counter:
/// the n-th delay on a channel is SplitMix64 of the channel's stream seed and n,
/// so a channel costs a count instead of a generator's state (its stream seed is
/// derived again at each draw: two mixes, cheaper than keeping it).
struct Jitter {
    seed: u64,
    max: Nanos,
    /// Per channel, by its two addresses' codes: the delays drawn so far.
    channels: FxHashMap<(u64, u64), u64>,
}

impl Jitter {
    fn delay(&mut self, from: Addr, to: Addr) -> Nanos {
        if from == Addr::Driver {
            return 0;
        }
        let (from, to) = (from.code(), to.code());
        let drawn = self.channels.entry((from, to)).or_insert(0);
        *drawn += 1;
        let stream = derive_seed(derive_seed(self.seed, from), to);
        let draw = derive_seed(stream, *drawn);
        // The modulo's bias is below max / 2^64: nothing a run can show.
        draw % self.max.saturating_add(1).max(1)
    }
}

/// The live agents, by id: ids are handed out in order from one counter, so a
/// dense store by id holds them without hashing. In place, not boxed: a
/// delivery to an agent of a large run (a tree of 10^5) found its state through
/// a pointer, a cache miss of its own, and the box's allocation cost more than
/// the slot it saved.
///
/// Beside each slot, where the agent's script is: the slot points to it, so a
/// delivery read the script only once the slot had come in, a second miss
/// after the first (the tree's cancel at 10^5 reading each child's `wait`, the
/// children's `resume`). Kept by id, the script's address is known when the
/// delivery is picked, and both are asked for at once ([`Agents::prefetch`]).
/// It is a hint only: updated after each delivery to the agent (where a
/// script starts or ends), never dereferenced, and a stale one costs a
/// useless fetch.
#[derive(Default)]
struct Agents {
    slots: Dense<AgentId, AgentState>,
    scripts: Vec<usize>,
}

impl Agents {
    fn insert(&mut self, id: AgentId, agent: AgentState) {
        let script = agent.script_addr();
        self.slots.insert(id, agent);
        self.note_script(id, script);
    }

    fn get(&self, id: &AgentId) -> Option<&AgentState> {
        self.slots.get(*id)
    }

    fn get_mut(&mut self, id: &AgentId) -> Option<&mut AgentState> {
        self.slots.get_mut(*id)
    }

    /// Agent `id` handles `msg`; where its script is afterwards is noted.
    fn deliver(&mut self, id: AgentId, msg: AgentMsg, out: &mut Out) {
        if let Some(agent) = self.slots.get_mut(id) {
            agent.handle(msg, out);
            let script = agent.script_addr();
            self.note_script(id, script);
        }
    }

    fn note_script(&mut self, id: AgentId, script: usize) {
        let at = id as usize; // ids count agents: far below the address space
        if let Some(held) = self.scripts.get_mut(at) {
            *held = script;
        } else if at == self.scripts.len() {
            self.scripts.push(script); // the next agent spawned
        } else if script != 0 {
            self.scripts.resize(at, 0);
            self.scripts.push(script);
        }
    }

    /// Asks for the slot of `to`'s agent and its script to be brought into
    /// the cache (hints).
    fn prefetch(&self, to: Addr) {
        if let Addr::Agent(id) = to {
            self.slots.prefetch(id);
            if let Some(&script) = self.scripts.get(id as usize)
                && script != 0
            {
                crate::prefetch::lines_at(std::ptr::without_provenance::<Script>(script));
            }
        }
    }

    fn contains_key(&self, id: &AgentId) -> bool {
        self.get(id).is_some()
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.scripts.clear();
    }
}

/// The agents a run's scheduled events name (`cancel_turn`, `stop_agent`), by
/// name. Only the names an event mentions are kept: a tree of 10^5 agents whose
/// root's turn is cancelled kept all of them, a hash insert (and ~41 bytes at
/// the peak) an agent for the one an event looks up.
struct Named<'s> {
    wanted: FxHashSet<&'s str>,
    ids: FxHashMap<Name, AgentId>,
}

impl<'s> Named<'s> {
    /// `None` for a scenario with no event that names an agent.
    fn of(scenario: &'s Scenario) -> Option<Named<'s>> {
        let wanted: FxHashSet<&str> = (scenario.events.iter())
            .filter_map(|e| match &e.action {
                Action::CancelTurn(name) | Action::StopAgent(name) => Some(name.as_str()),
                _ => None,
            })
            .collect();
        (!wanted.is_empty()).then(|| Named {
            wanted,
            ids: FxHashMap::default(),
        })
    }
}

/// The environment variable that makes a simulated run panic after that many
/// deliveries: asksim's own fault injection, to test how a crash is reported.
pub const PANIC_AFTER_ENV: &str = "ASKSIM_PANIC_AFTER_DELIVERIES";

/// One simulated run in progress.
pub struct World<'s> {
    scenario: &'s Scenario,
    seed: u64,
    queue: Queue,
    broker: Option<BrokerSlot>,
    /// The outside broker's command, when the broker is not asksim's.
    outside_broker: Option<Endpoint>,
    /// 1, then one more after each process loss.
    life: u32,
    /// The outside process that failed the run, if one did: the run ends there.
    failed: Option<Box<ProcessFailure>>,
    agents: Agents,
    /// The current life's agents by name, for scheduled events that name one
    /// (`cancel_turn`, `stop_agent`; hashed: a spawn inserts, an event looks up,
    /// nothing reads it in order). `None` in a run with no such event: a table
    /// by name of every agent was ~41 bytes an agent of its peak.
    names: Option<Named<'s>>,
    answerers: Vec<Option<AnswererSlot>>,
    /// The program's own answerers, by scenario name; the rest are the rows'.
    own: Answerers,
    /// The memo every agent of the run validates its script's arguments through.
    prepared: Prepared,
    recorder: RunRecorder,
    jitter: Option<Jitter>,
    next_agent: AgentId,
    /// In the order the scripts ended (an agent's later final result replaces
    /// its earlier one when they are taken): a list, where a table by name was
    /// ~75 bytes an agent at 10^5 (its slots hold the name twice, and half are
    /// empty), and it grows at the end of a run, at its peak.
    finals: Finals,
    out: Out,
    /// Between a process loss and its restart: when the restart is due.
    lost_until: Option<Nanos>,
    /// The run resumes from its log after a real crash (SPEC §4.1): the next
    /// restart is recorded as recovered, with the torn line dropped if any.
    recovering: Option<Option<u64>>,
}

impl<'s> World<'s> {
    /// The world of `scenario` under `seed`, recording into `recorder`. `jitter`
    /// adds a seeded delay of up to that many seconds to every message; `own`
    /// names the answerers that are the program's own.
    pub fn new(
        scenario: &'s Scenario,
        seed: u64,
        jitter_max_s: f64,
        recorder: RunRecorder,
        own: Answerers,
    ) -> World<'s> {
        let jitter = (jitter_max_s > 0.0).then(|| Jitter {
            seed: jitter_stream(seed),
            max: nanos(jitter_max_s),
            channels: FxHashMap::default(),
        });
        World {
            scenario,
            seed,
            queue: Queue::new(),
            broker: None,
            outside_broker: None,
            life: 0,
            failed: None,
            agents: Agents::default(),
            names: Named::of(scenario),
            answerers: Vec::new(),
            own,
            prepared: Prepared::default(),
            recorder,
            jitter,
            next_agent: 0,
            finals: Finals::default(),
            out: Out::new(0),
            lost_until: None,
            recovering: None,
        }
    }

    /// The broker is the outside process `endpoint` names instead of asksim's.
    pub fn with_broker(mut self, endpoint: Option<Endpoint>) -> World<'s> {
        self.outside_broker = endpoint;
        self
    }

    /// Takes the outside process that failed the run, if one did.
    pub fn take_failure(&mut self) -> Option<Box<ProcessFailure>> {
        self.failed.take()
    }

    /// An outside process failed: the run ends with the first failure.
    fn fail(&mut self, failure: Box<ProcessFailure>) {
        self.failed.get_or_insert(failure);
    }

    /// Starts the runtime and schedules the scenario's events.
    pub fn start(&mut self) {
        for (index, event) in self.scenario.events.iter().enumerate() {
            let msg = Envelope::Driver(DriverMsg::Scheduled(index));
            self.queue.send(Addr::Driver, msg, nanos(event.at_s));
        }
        self.boot();
        for spec in &self.scenario.agents {
            let spec = spec.clone();
            let lineage = spec.lineage_parent.as_deref().map(str::to_owned);
            self.start_agent(&spec, lineage, 0, BTreeSet::new(), false);
        }
    }

    /// Resumes a run whose log the recorder holds, after a crash the log records
    /// as a process loss at `at` (SPEC §4.1): the restart comes at `at`, recorded
    /// as recovered (with the torn line recovery dropped, `torn_line`), and every
    /// scheduled event after `at` fires at its time; those at or before it were
    /// the crashed run's. A root the log never saw spawned starts afresh.
    pub fn resume(&mut self, at: Nanos, torn_line: Option<u64>) {
        for (index, event) in self.scenario.events.iter().enumerate() {
            if nanos(event.at_s) > at {
                let msg = Envelope::Driver(DriverMsg::Scheduled(index));
                self.queue.send(Addr::Driver, msg, nanos(event.at_s));
            }
        }
        self.recovering = Some(torn_line);
        self.lost_until = Some(at);
        let restart = Envelope::Driver(DriverMsg::Restart);
        self.queue.timer(Addr::Driver, RESTART_TIMER, restart, at, false);
    }

    /// Runs until nothing is due or a limit is hit. `panic_after` makes it panic
    /// after that many deliveries (asksim's own fault injection).
    pub fn run(&mut self, chooser: &mut dyn Chooser, panic_after: Option<u64>) -> Option<Limit> {
        let limit = nanos(self.scenario.limits.virtual_s_max);
        let mut deliveries = 0u64;
        loop {
            if self.failed.is_some() {
                return None;
            }
            // A crash can change something only while its answerer owns or
            // is offered a question; an outside broker's timer only while the
            // broker holds a call open (both are fault timers).
            let broker = self.broker.as_ref();
            let mut fault_matters = |owner: Addr| match (broker, owner) {
                (Some(broker), Addr::Answerer(index)) => broker.crash_could_change(index),
                (Some(broker), _) => broker.has_open_calls(),
                (None, _) => false,
            };
            // The receiver's slot is asked for as soon as its entry is picked,
            // so that fetching it overlaps the queue's own look-ups instead of
            // following them: a tree of 10^5 agents delivers in random order,
            // every slot cold (issue #19).
            let agents = &self.agents;
            let mut picked = |to: Addr| agents.prefetch(to);
            match self
                .queue
                .next_hinting(chooser, limit, &mut fault_matters, &mut picked)
            {
                Ok(delivery) => {
                    deliveries += 1;
                    if panic_after == Some(deliveries) {
                        panic!(
                            "injected panic after {deliveries} deliveries ({})",
                            PANIC_AFTER_ENV
                        );
                    }
                    if chooser.halted() {
                        return None;
                    }
                    let agents = self.next_agent;
                    self.deliver(delivery);
                    chooser.delivered(self.next_agent != agents);
                }
                Err(Stop::Done) => return None,
                Err(Stop::Limit) => return Some(Limit::VirtualSMax),
            }
            if self.recorder.overflowed() {
                return Some(Limit::EventsMax);
            }
        }
    }

    /// The time of the last delivery.
    pub fn now(&self) -> Nanos {
        self.queue.now()
    }

    /// The broker's open calls now (none while the process is lost, or once an
    /// outside process failed the run).
    pub fn open_calls(&mut self) -> BTreeMap<String, &'static str> {
        let now = self.now();
        match self.broker.as_mut().filter(|_| self.failed.is_none()) {
            None => BTreeMap::new(),
            Some(broker) => match broker.open_calls(now) {
                Ok(open) => open,
                Err(failure) => {
                    self.fail(failure);
                    BTreeMap::new()
                }
            },
        }
    }

    /// Takes the final results of the scripts that ended, in the order they
    /// ended (found by agent when first asked).
    pub fn take_finals(&mut self) -> Finals {
        std::mem::take(&mut self.finals)
    }

    /// Records the run's end, for `reason` (`done`, a limit, `crashed`).
    pub fn end(&mut self, reason: &str) {
        self.recorder.end(seconds(self.now()), reason);
    }

    /// The message of a panic while recording (an observer's) that the run
    /// has not crashed on yet: one on the journal's thread after the last
    /// delivery looked.
    pub fn recording_failure(&mut self) -> Option<String> {
        self.recorder.failure()
    }

    /// Ends the run: its recorder, everything recorded.
    pub fn into_recorder(self) -> Recorder {
        self.recorder.into_recorder()
    }

    /// A new broker and answerers, as at the start or after a restart.
    fn boot(&mut self) {
        let config = BrokerConfig {
            answerers: self
                .scenario
                .answerers
                .iter()
                .map(|a| Name::from(a.name.as_str()))
                .collect(),
            offer_timeout_s: self.scenario.broker.offer_timeout_s,
            limits: self.scenario.broker.limits(),
        };
        self.life += 1;
        let life = Life {
            life: self.life,
            scenario: &self.scenario.name,
            seed: self.seed,
        };
        let now = self.now();
        self.broker = match BrokerSlot::boot(config, self.outside_broker.as_ref(), &life, now) {
            Ok(broker) => Some(broker),
            Err(failure) => {
                self.fail(failure);
                None
            }
        };
        self.answerers.clear();
        for (index, spec) in self.scenario.answerers.iter().enumerate() {
            let stream = answerer_stream(self.seed, index);
            self.out.reset(now, None);
            let answerer = match AnswererSlot::boot(
                spec,
                index as AnswererIx,
                stream,
                &life,
                &self.own,
                &mut self.out,
            ) {
                Ok(answerer) => Some(answerer),
                Err(failure) => {
                    self.failed.get_or_insert(failure);
                    None
                }
            };
            self.answerers.push(answerer);
            self.apply(Addr::Answerer(index as AnswererIx));
        }
    }

    /// Starts an agent of the scenario as a root and registers it.
    fn start_agent(
        &mut self,
        spec: &Arc<AgentSpec>,
        lineage: Option<String>,
        calls_made: u64,
        pending: BTreeSet<crate::protocol::CallId>,
        resumed: bool,
    ) -> AgentId {
        self.next_agent += 1;
        let id = self.next_agent;
        let turn = Turn::root(TurnId { agent: id, n: 1 });
        let name: Name = spec.name.clone();
        let agent = AgentState::new(AgentSetup {
            id,
            name: name.clone(),
            tool: self.scenario.tool,
            turn: turn.clone(),
            owner: None,
            calls_made,
            pending,
            script: Some(Script::new(spec, resumed)),
            prepared: self.prepared.clone(),
        });
        self.agents.insert(id, agent);
        self.remember_name(&name, id);
        let registration = Registration {
            agent: id,
            name,
            owner: None,
            lineage: lineage.map(crate::protocol::Text::from),
            turn,
        };
        self.queue.send(
            Addr::Driver,
            Envelope::Broker(BrokerMsg::Register(Box::new(registration))),
            self.now(),
        );
        id
    }

    fn deliver(&mut self, delivery: Delivery) {
        let Delivery {
            envelope, mbox, at, ..
        } = delivery;
        let to = envelope.to();
        self.out.reset(at, mbox);
        match envelope {
            Envelope::Broker(msg) => {
                if let Some(broker) = &mut self.broker
                    && let Err(failure) = broker.handle(msg, &mut self.out)
                {
                    self.fail(failure);
                }
            }
            Envelope::Agent(id, msg) => self.agents.deliver(id, msg, &mut self.out),
            Envelope::Answerer(index, msg) => {
                if let Some(Some(answerer)) = self.answerers.get_mut(index as usize)
                    && let Err(failure) = answerer.handle(index, msg, &mut self.out)
                {
                    self.fail(failure);
                }
            }
            Envelope::Driver(DriverMsg::Scheduled(index)) => self.scheduled(index),
            Envelope::Driver(DriverMsg::Restart) => self.restart(),
        }
        self.apply(to);
    }

    /// Carries out what the actor at `from` just did.
    fn apply(&mut self, from: Addr) {
        let mut out = std::mem::take(&mut self.out);
        let now = out.now();
        for effect in out.drain() {
            match effect {
                Effect::Send(envelope) => {
                    let delay = match &mut self.jitter {
                        Some(jitter) => jitter.delay(from, envelope.to()),
                        None => 0,
                    };
                    self.queue.send(from, envelope, now.saturating_add(delay));
                }
                Effect::Timer {
                    id,
                    after,
                    msg,
                    fault,
                } => {
                    self.queue.timer(from, id, msg, now.saturating_add(after), fault);
                }
                Effect::Cancel(id) => self.queue.cancel(from, id),
                Effect::Record(kind) => self.recorder.record(seconds(now), kind),
                Effect::Spawn(spawn) => self.spawn(from, spawn),
                Effect::Die => {
                    if let Addr::Answerer(index) = from {
                        self.kill(index);
                    }
                }
                Effect::Finished { agent, final_result } => {
                    debug_assert_eq!(&*agent, final_result.agent(), "a final result names its agent");
                    self.finals.push(final_result);
                }
            }
        }
        self.out = out;
    }

    fn spawn(&mut self, from: Addr, spawn: crate::effect::Spawn) {
        self.next_agent += 1;
        let id = self.next_agent;
        let agent = AgentState::child(id, &spawn, self.scenario.tool, self.prepared.clone());
        let registration = Registration {
            agent: id,
            name: agent.name().clone(),
            owner: Some(spawn.owner),
            lineage: spawn.spec.lineage_parent.clone(),
            turn: agent.turn().clone(),
        };
        self.remember_name(agent.name(), id);
        self.agents.insert(id, agent);
        let delay = match &mut self.jitter {
            Some(jitter) => jitter.delay(from, Addr::Broker),
            None => 0,
        };
        let msg = Envelope::Broker(BrokerMsg::Register(Box::new(registration)));
        self.queue.send(from, msg, self.now().saturating_add(delay));
    }

    /// The answerer dies: it reads nothing more, and the broker hears of it behind
    /// everything it sent before.
    fn kill(&mut self, index: AnswererIx) {
        let Some(slot) = self.answerers.get_mut(index as usize).filter(|a| a.is_some()) else {
            return;
        };
        *slot = None;
        self.queue.drop_answerer_timers(index);
        let died = Envelope::Broker(BrokerMsg::AnswererDied { answerer: index });
        self.queue.send(Addr::Answerer(index), died, self.now());
    }

    fn scheduled(&mut self, index: usize) {
        let event = &self.scenario.events[index];
        if let Some(until) = self.lost_until {
            if nanos(event.at_s) < until {
                self.recorder.record(
                    seconds(self.now()),
                    EventKind::Dropped {
                        what: event.to_json(),
                    },
                );
                return;
            }
            // Due at the restart instant: the restart comes first.
            self.queue.cancel(Addr::Driver, RESTART_TIMER);
            self.restart();
        }
        let now = self.now();
        let to_broker = |world: &mut World, msg| world.queue.send(Addr::Driver, Envelope::Broker(msg), now);
        match &event.action {
            Action::CancelTurn(name) => match self.agent_named(name) {
                Some(agent) => {
                    let turn = self.agents.get(&agent).expect("a live agent").turn().clone();
                    to_broker(self, BrokerMsg::CancelTurn { agent, turn });
                }
                None => self.not_yet(json!({"cancel_turn": name, "why": "not spawned yet"})),
            },
            Action::StopAgent(name) => match self.agent_named(name) {
                Some(agent) => to_broker(self, BrokerMsg::Stop(agent)),
                None => self.not_yet(json!({"stop_agent": name, "why": "not spawned yet"})),
            },
            Action::CancelCall(call_id) => {
                let call_id = call_id.as_str().into();
                to_broker(self, BrokerMsg::CancelCall { call_id });
            }
            Action::CrashAnswerer(name) => {
                if let Some(index) = self.scenario.answerers.iter().position(|a| &a.name == name) {
                    self.kill(index as AnswererIx);
                }
            }
            Action::ProcessLoss { restart_after_s } => self.process_loss(*restart_after_s),
        }
    }

    /// Keeps `name`'s agent for the scheduled events that name one.
    fn remember_name(&mut self, name: &Name, id: AgentId) {
        if let Some(names) = &mut self.names
            && names.wanted.contains(name.as_str())
        {
            names.ids.insert(name.clone(), id);
        }
    }

    fn agent_named(&self, name: &str) -> Option<AgentId> {
        self.names
            .as_ref()
            .and_then(|names| names.ids.get(name))
            .copied()
            .filter(|id| self.agents.contains_key(id))
    }

    fn not_yet(&mut self, what: Value) {
        self.recorder
            .record(seconds(self.now()), EventKind::Dropped { what });
    }

    /// Everything in memory dies: broker, answerers, agents, their messages and
    /// timers. Only the log and the driver's own schedule survive.
    fn process_loss(&mut self, restart_after_s: f64) {
        let now = self.now();
        self.recorder.record(
            seconds(now),
            EventKind::ProcessLoss {
                restart_after: restart_after_s,
            },
        );
        self.broker = None;
        self.agents.clear();
        if let Some(names) = &mut self.names {
            names.ids.clear();
        }
        self.answerers.iter_mut().for_each(|a| *a = None);
        self.queue
            .retain(|from, to| from == Addr::Driver && to == Addr::Driver);
        let until = now.saturating_add(nanos(restart_after_s));
        self.lost_until = Some(until);
        self.queue.timer(
            Addr::Driver,
            RESTART_TIMER,
            Envelope::Driver(DriverMsg::Restart),
            until,
            false,
        );
    }

    /// The runtime starts again from the log, as [`crate::restart::plan`] says:
    /// answerers from their rows, agents as roots (undelivered messages first,
    /// then their `on_resume`), open timed questions re-offered.
    fn restart(&mut self) {
        self.lost_until = None;
        let recovering = self.recovering.take();
        let kind = match recovering {
            Some(torn_line) => EventKind::recovered(torn_line),
            None => EventKind::restart(),
        };
        self.recorder.record(seconds(self.now()), kind);
        let plan = crate::restart::plan(self.recorder.read().projection());
        let unspawned = match recovering {
            Some(_) => self.unspawned_roots(),
            None => Vec::new(),
        };
        self.boot();
        let mut resumed: BTreeMap<String, AgentId> = BTreeMap::new();
        // Every spec by name, made for this restart and dropped after it: a
        // table by name of every agent kept for the run was ~41 bytes an agent
        // of the peak of the life after a loss (a restart costs every agent
        // of the log already).
        let specs = self.scenario.specs();
        for agent in plan.agents {
            let Some(spec) = specs.get(agent.name.as_str()).cloned() else {
                continue;
            };
            let id = self.start_agent(&spec, agent.lineage, agent.calls_made, agent.pending, true);
            self.out.reset(self.now(), None);
            let state = self.agents.get_mut(&id).expect("just started");
            for (call_id, message) in agent.redeliver {
                state.redeliver(call_id, message, &mut self.out);
            }
            self.apply(Addr::Agent(id));
            resumed.insert(agent.name, id);
        }
        for reopened in plan.reopened {
            let restored = reopened.restored(&resumed);
            let msg = Envelope::Broker(BrokerMsg::Restore(Box::new(restored)));
            self.queue.send(Addr::Driver, msg, self.now());
        }
        for spec in unspawned {
            let lineage = spec.lineage_parent.as_deref().map(str::to_owned);
            self.start_agent(&spec, lineage, 0, BTreeSet::new(), false);
        }
    }

    /// The scenario's roots the log never saw spawned (the crash came first).
    fn unspawned_roots(&mut self) -> Vec<Arc<AgentSpec>> {
        let recorder = self.recorder.read();
        let known = &recorder.projection().agents;
        self.scenario
            .agents
            .iter()
            .filter(|spec| !known.contains_key(spec.name.as_str()))
            .cloned()
            .collect()
    }
}
