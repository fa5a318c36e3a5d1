//! What one runtime did, counted (issue #23): the messages its actors got, by
//! receiver and kind, and the steps library agents took in place instead; the tasks and oneshots it made; how often the recorder
//! was locked, or the journal's queue, on an actor's path; the event lines the
//! recorder serialised. Relaxed counters,
//! read by tests and benches ([`crate::Runtime::counts`]) to hold the cost of a
//! call to a bound. Counting only: the runtime never decides anything by them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::agent::AgentMail;
use crate::protocol::{AgentMsg, AnswererInput, AnswererMsg, BrokerMsg, Envelope};

/// The names of what is counted: every message kind, then the rest.
const NAMES: [&str; 27] = [
    "broker:Register",
    "broker:Stop",
    "broker:Request",
    "broker:Accept",
    "broker:Decline",
    "broker:Hold",
    "broker:Submit",
    "broker:OfferTimeout",
    "broker:WindowExpired",
    "broker:other",
    "broker:Wake",
    "agent:Registered",
    "agent:Spawned",
    "agent:Settled",
    "agent:Closed",
    "agent:TurnFired",
    "agent:other",
    "agent:Call",
    "agent:AwaitClosed",
    "agent:Messages",
    "agent:Token",
    "answerer:Offer",
    "answerer:Withdraw",
    "answerer:Refused",
    "answerer:Timer",
    "driver",
    "tasks",
];

const TASKS: usize = 26;
/// Past [`NAMES`]: oneshots.
const ONESHOTS: usize = 27;

/// The counters of one runtime (the journal counts its own locks): messages
/// and the rest, and the steps taken in place by kind (library agents' and the broker's).
#[derive(Default)]
pub(crate) struct Counters([AtomicU64; 28], [AtomicU64; 28]);

impl Counters {
    fn bump(&self, index: usize) {
        self.0[index].fetch_add(1, Ordering::Relaxed);
    }

    /// A library agent handled `msg` in place, no mailbox between.
    pub(crate) fn in_place(&self, msg: &AgentMsg) {
        self.1[agent_kind(msg)].fetch_add(1, Ordering::Relaxed);
    }

    /// The broker took `msg` in place, from its inbox ([`super::seat`]).
    pub(crate) fn in_place_broker(&self, msg: &BrokerMsg) {
        self.1[broker_kind(msg)].fetch_add(1, Ordering::Relaxed);
    }

    /// A handle's `mail` was handled in place.
    pub(crate) fn in_place_mail(&self, mail: &AgentMail) {
        match mail {
            AgentMail::Core { msg, .. } => self.in_place(msg),
            AgentMail::Token { .. } => self.in_place_token(),
        }
    }

    /// A handle read or started a library agent's turn in place.
    pub(crate) fn in_place_token(&self) {
        self.1[20].fetch_add(1, Ordering::Relaxed);
    }

    /// A message went to an agent's mailbox.
    pub(crate) fn agent(&self, msg: &AgentMsg) {
        self.bump(agent_kind(msg));
    }

    /// A message went to an actor (through the runtime's route).
    pub(crate) fn message(&self, envelope: &Envelope) {
        self.bump(match envelope {
            Envelope::Broker(msg) => broker_kind(msg),
            Envelope::Agent(_, msg) => agent_kind(msg),
            Envelope::Answerer(_, input) => answerer_kind(input),
            Envelope::Driver(_) => 25,
        });
    }

    /// A message went straight to the broker (a timer's wake-up).
    pub(crate) fn broker(&self, msg: &BrokerMsg) {
        self.bump(broker_kind(msg));
    }

    /// A handle's message went straight to an agent.
    pub(crate) fn agent_mail(&self, mail: &AgentMail) {
        self.bump(match mail {
            AgentMail::Core { msg, .. } => agent_kind(msg),
            AgentMail::Token { .. } => 20,
        });
    }

    /// A task was spawned.
    pub(crate) fn task(&self) {
        self.bump(TASKS);
    }

    /// A oneshot channel was made.
    pub(crate) fn oneshot(&self) {
        self.bump(ONESHOTS);
    }

    /// The counts so far, with the journal's (recorder locks, queue pushes)
    /// and the recorder's lines.
    pub(crate) fn read(&self, (recorder_locks, queue_pushes): (u64, u64), lines: u64) -> RuntimeCounts {
        let get = |i: usize| self.0[i].load(Ordering::Relaxed);
        let messages = NAMES[..TASKS]
            .iter()
            .enumerate()
            .map(|(i, name)| (*name, get(i)))
            .filter(|(_, n)| *n > 0)
            .collect();
        let in_place = NAMES[..TASKS]
            .iter()
            .zip(&self.1)
            .map(|(name, n)| (*name, n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        RuntimeCounts {
            messages,
            in_place,
            tasks: get(TASKS),
            oneshots: get(ONESHOTS),
            recorder_locks,
            queue_pushes,
            lines,
        }
    }
}

fn broker_kind(msg: &BrokerMsg) -> usize {
    match msg {
        BrokerMsg::Register(_) => 0,
        BrokerMsg::Stop(_) => 1,
        BrokerMsg::Request(_) => 2,
        BrokerMsg::Accept { .. } => 3,
        BrokerMsg::Decline { .. } => 4,
        BrokerMsg::Hold { .. } => 5,
        BrokerMsg::Submit { .. } => 6,
        BrokerMsg::OfferTimeout { .. } => 7,
        BrokerMsg::WindowExpired { .. } => 8,
        BrokerMsg::Wake => 10,
        _ => 9,
    }
}

fn agent_kind(msg: &AgentMsg) -> usize {
    match msg {
        AgentMsg::Registered(_) => 11,
        AgentMsg::Spawned { .. } => 12,
        AgentMsg::Settled { .. } | AgentMsg::Pending { .. } => 13,
        AgentMsg::Closed { .. } => 14,
        AgentMsg::TurnFired(_) => 15,
        AgentMsg::Call { .. } => 17,
        AgentMsg::AwaitClosed { .. } => 18,
        AgentMsg::Messages(_) => 19,
        _ => 16,
    }
}

fn answerer_kind(input: &AnswererInput) -> usize {
    match input {
        AnswererInput::Broker(AnswererMsg::Offer(_)) => 21,
        AnswererInput::Broker(AnswererMsg::Withdraw { .. }) => 22,
        AnswererInput::Broker(AnswererMsg::Refused { .. }) => 23,
        AnswererInput::Timer(_) => 24,
    }
}

/// What a runtime did so far ([`crate::Runtime::counts`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeCounts {
    /// Messages its actors got, by receiver and kind (`broker:Request`,
    /// `agent:Settled`, `answerer:Timer`, …; `agent:Call` and the like come from
    /// handles). Kinds never sent are left out.
    pub messages: BTreeMap<&'static str, u64>,
    /// What library agents handled in place instead, with no mailbox between
    /// (a handle's call, a result from the broker, …), by the same names.
    pub in_place: BTreeMap<&'static str, u64>,
    /// Tasks spawned: actor timers, turn watchers, the broker's sleeper.
    pub tasks: u64,
    /// Oneshot channels made by handles and the runtime.
    pub oneshots: u64,
    /// Recorder locks on an actor's path (recording in place, with a log file).
    pub recorder_locks: u64,
    /// Locks of the journal's queue on an actor's path (no log file).
    pub queue_pushes: u64,
    /// Event lines the recorder serialised, on whichever thread records: one
    /// an event for a hash ([`crate::RuntimeConfig::hashes`]) or a log file,
    /// none with neither.
    pub lines: u64,
}

impl RuntimeCounts {
    /// Every message, of every kind.
    pub fn messages_total(&self) -> u64 {
        self.messages.values().sum()
    }

    /// Every step taken in place, of every kind.
    pub fn in_place_total(&self) -> u64 {
        self.in_place.values().sum()
    }

    /// What happened between `before` and `self`.
    pub fn since(&self, before: &RuntimeCounts) -> RuntimeCounts {
        let since = |now: &BTreeMap<&'static str, u64>, then: &BTreeMap<&'static str, u64>| {
            now.iter()
                .map(|(kind, n)| (*kind, n - then.get(kind).copied().unwrap_or(0)))
                .filter(|(_, n)| *n > 0)
                .collect()
        };
        RuntimeCounts {
            messages: since(&self.messages, &before.messages),
            in_place: since(&self.in_place, &before.in_place),
            tasks: self.tasks - before.tasks,
            oneshots: self.oneshots - before.oneshots,
            recorder_locks: self.recorder_locks - before.recorder_locks,
            queue_pushes: self.queue_pushes - before.queue_pushes,
            lines: self.lines - before.lines,
        }
    }
}
