//! What an actor's handler may do: send messages, start and cancel its own
//! timers, record events, and (agents) spawn children, (answerers) die.
//!
//! Handlers are plain functions of their state and one message; they push
//! [`Effect`]s into an [`Out`] and return. The executor that called them (the
//! simulator's scheduler, or an actor of [`crate::actors`]) carries the effects out
//! in order. So the same logic runs under controlled scheduling and under ractor,
//! and a handler never blocks, sleeps or reads a clock: `now` is given.

use std::sync::Arc;

use crate::event::EventKind;
use crate::protocol::{AgentId, AgentMsg, AnswererIx, AnswererMsg, BrokerMsg, Envelope, Name, Nanos, Turn};

pub use crate::protocol::TimerId;
use crate::scenario::AgentSpec;

/// An agent's final result (SPEC §5): kept for every agent until the run ends,
/// so kept as its parts and written out as JSON when read.
pub use crate::final_result::FinalResult;

/// A child an agent's script starts (SPEC §5 `spawn`).
#[derive(Clone, Debug)]
pub struct Spawn {
    /// The child's scenario entry: its name, script and `on_resume`.
    pub spec: Arc<AgentSpec>,
    /// The spawning agent, which will own it.
    pub owner: AgentId,
    /// The spawning agent's current turn: the child's first turn derives from it.
    pub turn: Turn,
    /// Its place among the spawning script's spawns, by which it names itself
    /// to its owner when its script ends.
    pub place: u32,
}

/// One thing a handler does.
#[derive(Debug)]
pub enum Effect {
    /// Send a message (from the handling actor).
    Send(Envelope),
    /// Deliver `msg` to the handling actor itself after `after` nanoseconds.
    Timer {
        /// Its id, for [`Effect::Cancel`].
        id: TimerId,
        /// The delay.
        after: Nanos,
        /// What it delivers.
        msg: Envelope,
        /// A fault (an answerer's `crash_at`): it does not keep a run going
        /// (SPEC §5 "faults are not work").
        fault: bool,
    },
    /// Cancel a timer of the handling actor, if it has not fired.
    Cancel(TimerId),
    /// Append an event to the run's log.
    Record(EventKind),
    /// Start a child agent and register it with the broker (agents only).
    Spawn(Spawn),
    /// The handling answerer dies (a fault).
    Die,
    /// The handling agent's script ended with this final result.
    Finished {
        /// The agent.
        agent: Name,
        /// Its final result (SPEC §5).
        final_result: FinalResult,
    },
}

/// Where a handler puts its effects, with the time and the delivery at hand.
#[derive(Debug, Default)]
pub struct Out {
    now: Nanos,
    mbox: Option<u64>,
    effects: Vec<Effect>,
}

impl Out {
    /// An empty outbox at `now`.
    pub fn new(now: Nanos) -> Out {
        Out {
            now,
            mbox: None,
            effects: Vec::new(),
        }
    }

    /// Prepares for the next delivery: the time, and the message's place in the
    /// broker's mailbox when the broker is the receiver.
    pub fn reset(&mut self, now: Nanos, mbox: Option<u64>) {
        debug_assert!(self.effects.is_empty(), "effects left from the last delivery");
        self.now = now;
        self.mbox = mbox;
    }

    /// The time, in nanoseconds since the run started.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The handled message's place in the broker's mailbox (order of entry), when
    /// the executor numbers them.
    pub fn mbox(&self) -> Option<u64> {
        self.mbox
    }

    /// Sends to the broker.
    pub fn tell_broker(&mut self, msg: BrokerMsg) {
        self.effects.push(Effect::Send(Envelope::Broker(msg)));
    }

    /// Makes room for `n` more effects at once: a delivery that writes one for
    /// each of many (a turn's cancel reaching 10^5 agents) would otherwise grow
    /// the outbox by doubling and copy all it holds at each step, a cache miss
    /// to read and one to write apiece once the outbox outgrows the cache.
    pub fn reserve(&mut self, n: usize) {
        self.effects.reserve(n);
    }

    /// An empty outbox for the same delivery (its time and mailbox place), to
    /// write effects that [`Out::append`] puts after this one's later: a
    /// handler that must count what it writes before it makes room for it.
    pub fn beside(&self) -> Out {
        Out {
            now: self.now,
            mbox: self.mbox,
            effects: Vec::new(),
        }
    }

    /// Moves the effects of `other` (an outbox [`Out::beside`] this one) after
    /// this one's, in their order.
    pub fn append(&mut self, other: &mut Out) {
        debug_assert_eq!(
            (self.now, self.mbox),
            (other.now, other.mbox),
            "an outbox of the same delivery"
        );
        self.effects.append(&mut other.effects);
    }

    /// Sends to an agent.
    pub fn tell_agent(&mut self, agent: AgentId, msg: AgentMsg) {
        self.effects.push(Effect::Send(Envelope::Agent(agent, msg)));
    }

    /// Sends to an answerer.
    pub fn tell_answerer(&mut self, answerer: AnswererIx, msg: AnswererMsg) {
        self.effects
            .push(Effect::Send(Envelope::Answerer(answerer, msg.into())));
    }

    /// Starts a timer that delivers `msg` to the handling actor after `after`.
    pub fn timer(&mut self, id: TimerId, after: Nanos, msg: Envelope) {
        self.effects.push(Effect::Timer {
            id,
            after,
            msg,
            fault: false,
        });
    }

    /// Starts a fault timer: like [`Out::timer`], but it keeps a run going only
    /// while its owner could still change something (a crash of an answerer
    /// that owns or is offered a question; an outside broker's timer while it
    /// holds a call open, SPEC §10, PROTOCOL.md §1).
    pub fn fault_timer(&mut self, id: TimerId, after: Nanos, msg: Envelope) {
        self.effects.push(Effect::Timer {
            id,
            after,
            msg,
            fault: true,
        });
    }

    /// Cancels a timer of the handling actor.
    pub fn cancel(&mut self, id: TimerId) {
        self.effects.push(Effect::Cancel(id));
    }

    /// Records an event.
    pub fn record(&mut self, event: EventKind) {
        self.effects.push(Effect::Record(event));
    }

    /// Starts a child agent.
    pub fn spawn(&mut self, spawn: Spawn) {
        self.effects.push(Effect::Spawn(spawn));
    }

    /// The handling answerer dies.
    pub fn die(&mut self) {
        self.effects.push(Effect::Die);
    }

    /// The handling agent's script ended.
    pub fn finished(&mut self, agent: Name, final_result: FinalResult) {
        self.effects.push(Effect::Finished { agent, final_result });
    }

    /// Takes the events recorded, in the order they were made, and leaves the
    /// other effects in theirs (an executor records a handler's events before
    /// it carries out the rest). Drop it only once it is exhausted.
    pub fn take_records(&mut self) -> impl Iterator<Item = EventKind> + '_ {
        self.effects
            .extract_if(.., |effect| matches!(effect, Effect::Record(_)))
            .map(|effect| match effect {
                Effect::Record(kind) => kind,
                _ => unreachable!("only records are extracted"),
            })
    }

    /// How many effects wait to be carried out.
    pub fn len(&self) -> usize {
        self.effects.len()
    }

    /// Whether no effect waits.
    pub fn is_empty(&self) -> bool {
        self.effects.is_empty()
    }

    /// Takes the effects, in the order they were made.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Effect> {
        self.effects.drain(..)
    }
}
