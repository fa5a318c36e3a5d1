//! The built-in policy answerers inside the broker's actor (issue #23).
//!
//! Why: an answerer in an actor of its own made four of a pending call's ten
//! mailbox hops (the offer, its accept, its timer firing, its submit), each a
//! boxed message, a task woken and a handler's future moved, for a state
//! machine that does a few table lookups per input. The built-in answerer is
//! the runtime's own code, sans-IO and quick, so the broker runs it in place:
//! what the broker sends it and what it sends back wait in one FIFO queue
//! inside the broker's actor ([`Residents`]), handed on in order before the
//! broker takes its next mailbox message, and its timers wait in the broker's
//! wheel under its own name ([`Owner::Resident`]).
//!
//! What stays as it was: the same state machine, the same four replies judged
//! by the same broker state; order between the broker and each answerer is
//! FIFO both ways; a death (its own fault, a panic in its handler, or
//! [`crate::Runtime::crash_answerer`]) reaches the broker as `AnswererDied`
//! behind everything the answerer sent before it, nothing reaches the
//! answerer after, and its timers die with it (SPEC §3.2's fail-over and
//! `owner_dead` refusals follow from that order alone).
//!
//! What differs from an actor of its own, and why it is allowed: its replies
//! are handled before mail already waiting in the broker's mailbox, the order
//! a slower sender of that mail would have given (nothing orders messages of
//! two senders; SPEC §3.7 lets the broker's order decide, and a real clock
//! makes no promise of which); and an offer to it does not wait at the
//! write-ahead gate (SPEC §4.1 holds back what leaves the process: a resident
//! is inside it, and anything it causes that leaves, a result or a user
//! message, still waits for its line).
//!
//! A user's answerer keeps an actor of its own (`AnswererSlot::Machine` and
//! `Actor`): its cost is not the runtime's to know, and a slow one must not
//! hold up every call behind the broker.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::super::{Host, Shared, execute_now, guarded};
use super::wheel::{Owner, Wheel};
use crate::answerer::{Answerer, Replies};
use crate::effect::{Out, Spawn};
use crate::event::EventKind;
use crate::protocol::{AnswererInput, AnswererIx, BrokerMsg, Envelope, Nanos};

/// What the broker and its resident answerers sent each other, not yet handed on.
pub(crate) enum Local {
    /// To the resident at this place of the waterfall.
    Answerer(AnswererIx, AnswererInput),
    /// To the broker, from a resident.
    Broker(BrokerMsg),
}

/// One place of the waterfall, as the broker's actor sees it.
enum Place {
    /// The answerer runs in an actor of its own.
    Elsewhere,
    /// A resident, alive.
    Alive(Box<dyn Answerer>),
    /// A resident that died: what is sent to it is dropped, as mail to a
    /// stopped actor is.
    Dead,
}

/// The broker's resident answerers and the queue between them and the broker.
pub(crate) struct Residents {
    places: Vec<Place>,
    /// FIFO: a handler's sends in the order it made them, so the order between
    /// the broker and each resident is the order of their handlers.
    queue: VecDeque<Local>,
    /// The outbox every resident's handler writes into in turn.
    out: Out,
    /// Events of the broker's and the residents' handlers since the last send
    /// that left the broker's actor ([`Host::deferred`]): the handlers one
    /// mailbox message leads to are recorded in one batch (one lock of the
    /// journal's queue, one wake-up of its thread) instead of one each.
    deferred: Vec<EventKind>,
}

impl Residents {
    /// No resident yet.
    pub(crate) fn new(places: usize) -> Residents {
        Residents {
            places: Vec::with_capacity(places),
            queue: VecDeque::new(),
            out: Out::default(),
            deferred: Vec::new(),
        }
    }

    /// The next place of the waterfall: `Some` resident, or one in an actor.
    pub(crate) fn push(&mut self, resident: Option<Box<dyn Answerer>>) {
        self.places.push(resident.map_or(Place::Elsewhere, Place::Alive));
    }

    /// Whether the answerer at `index` is a resident (alive or dead).
    pub(crate) fn holds(&self, index: AnswererIx) -> bool {
        matches!(
            self.places.get(index as usize),
            Some(Place::Alive(_) | Place::Dead)
        )
    }

    /// The next thing to hand on, in the order it was sent.
    pub(crate) fn pop(&mut self) -> Option<Local> {
        self.queue.pop_front()
    }

    /// Starts every resident (SPEC §3.9: from its configuration), in waterfall
    /// order, as their actors' `pre_start` did.
    pub(crate) fn start(&mut self, shared: &Arc<Shared>, wheel: &mut Wheel, now: Nanos) {
        for index in 0..self.places.len() as AnswererIx {
            let Some(Place::Alive(state)) = self.places.get_mut(index as usize) else {
                continue;
            };
            self.out.reset(now, None);
            wheel.at(now);
            state.start(&mut Replies::new(&mut self.out, index));
            self.carry_out(shared, wheel, index, true);
        }
    }

    /// Hands `input` to the resident at `index` at `now` and carries out what
    /// it does; dropped if it is dead or being killed.
    pub(crate) fn deliver(
        &mut self,
        shared: &Arc<Shared>,
        wheel: &mut Wheel,
        now: Nanos,
        index: AnswererIx,
        input: AnswererInput,
    ) {
        let killed = (shared.answerers.get())
            .and_then(|slots| slots.get(index as usize))
            .is_some_and(|slot| slot.killed.load(Ordering::SeqCst));
        let Some(Place::Alive(state)) = self.places.get_mut(index as usize) else {
            return;
        };
        if killed {
            // Its death is in the broker's mailbox: it handles nothing more.
            return;
        }
        self.out.reset(now, None);
        wheel.at(now);
        let out = &mut self.out;
        let ok = guarded(shared, || state.handle(input, &mut Replies::new(out, index)));
        self.carry_out(shared, wheel, index, ok);
    }

    /// Carries out what the resident at `index` wrote (a handler that panicked,
    /// `!ok`, dies after its effects, as its actor did).
    fn carry_out(&mut self, shared: &Arc<Shared>, wheel: &mut Wheel, index: AnswererIx, ok: bool) {
        let mut host = ResidentHost {
            queue: &mut self.queue,
            deferred: &mut self.deferred,
            dead: !ok,
        };
        execute_now(
            shared,
            &mut self.out,
            &mut wheel.of(Owner::Resident(index)),
            &mut host,
        );
        if host.dead {
            self.bury(shared, wheel, index);
            let died = BrokerMsg::AnswererDied { answerer: index };
            self.queue.push_back(Local::Broker(died));
        }
    }

    /// The broker is about to handle `msg`: a resident it says died (killed
    /// from outside, [`crate::Runtime::crash_answerer`]) is dead from now on.
    pub(crate) fn before(&mut self, shared: &Shared, wheel: &mut Wheel, msg: &BrokerMsg) {
        if let BrokerMsg::AnswererDied { answerer } = *msg
            && matches!(self.places.get(answerer as usize), Some(Place::Alive(_)))
        {
            self.bury(shared, wheel, answerer);
        }
    }

    /// Records the events deferred so far, at `now` (the broker's handlers
    /// and its residents' for one mailbox message all run at one instant).
    pub(crate) fn flush(&mut self, shared: &Shared, now: Nanos) {
        if !self.deferred.is_empty() {
            (shared.recorder).record(crate::protocol::seconds(now), self.deferred.drain(..));
        }
    }

    fn bury(&mut self, shared: &Shared, wheel: &mut Wheel, index: AnswererIx) {
        self.places[index as usize] = Place::Dead;
        wheel.cancel_owner(shared, Owner::Resident(index));
    }
}

/// The broker's own sends: those to a resident go to the queue.
impl Host for Residents {
    async fn spawn(&mut self, _: &Arc<Shared>, _: Spawn) {}

    fn die(&mut self) {}

    fn divert(&mut self, envelope: Envelope) -> Option<Envelope> {
        match envelope {
            Envelope::Answerer(index, input) if self.holds(index) => {
                self.queue.push_back(Local::Answerer(index, input));
                None
            }
            other => Some(other),
        }
    }

    fn deferred(&mut self) -> Option<&mut Vec<EventKind>> {
        Some(&mut self.deferred)
    }
}

/// A resident's sends: to the broker, through the queue.
struct ResidentHost<'a> {
    queue: &'a mut VecDeque<Local>,
    deferred: &'a mut Vec<EventKind>,
    dead: bool,
}

impl Host for ResidentHost<'_> {
    async fn spawn(&mut self, _: &Arc<Shared>, _: Spawn) {}

    fn die(&mut self) {
        self.dead = true;
    }

    fn divert(&mut self, envelope: Envelope) -> Option<Envelope> {
        match envelope {
            Envelope::Broker(msg) => {
                self.queue.push_back(Local::Broker(msg));
                None
            }
            other => Some(other),
        }
    }

    fn deferred(&mut self) -> Option<&mut Vec<EventKind>> {
        Some(self.deferred)
    }
}
