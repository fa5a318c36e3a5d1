//! The broker as a ractor actor: the built-in answerers run inside its state
//! ([`resident`]); the others start linked under its supervision, and an
//! answerer's death reaches the broker's state as mail queued behind whatever
//! that answerer sent before dying. The state itself sits in its seat
//! ([`seat`]), stepped in place by whoever sends it mail, or by the
//! actor's handler when the mail comes through its mailbox.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

pub(super) mod order;
mod resident;
pub(super) mod seat;
mod wheel;

use resident::{Local, Residents};
use wheel::{Wheel, is_wake};

use super::answerer::{AnswererActor, AnswererArgs};
use super::{AnswererActorRef, AnswererRef, Shared, TimerSink, execute_now, guarded};
use crate::broker::BrokerState;
use crate::effect::Out;
use crate::protocol::{AnswererIx, AnswererMsg, BrokerMail, BrokerMsg, Envelope, Nanos};

/// How the broker's waterfall is made up.
pub(crate) enum Slot {
    /// The built-in answerer, run inside the broker's actor.
    Resident(Box<dyn crate::answerer::Answerer>),
    /// A user's sans-IO answerer, run in the runtime's own answerer actor.
    Machine(Box<dyn crate::answerer::Answerer>),
    /// A user's actor.
    User(ActorRef<AnswererMsg>),
}

pub(crate) struct BrokerActor;

pub(crate) struct BrokerArgs {
    pub shared: Arc<Shared>,
    pub state: BrokerState,
    pub slots: Vec<Slot>,
}

/// The broker's state and what carries out its effects: stepped by whoever
/// holds its seat ([`seat`]).
pub(crate) struct BrokerShell {
    state: BrokerState,
    timers: Wheel,
    out: Out,
    residents: Residents,
}

/// The actor's own part: whose death supervision reports.
pub(crate) struct BrokerFace {
    shared: Arc<Shared>,
    /// The answerers' actors by place (`None` for a resident).
    cells: Vec<Option<ractor::ActorId>>,
}

impl BrokerShell {
    /// Takes one piece of mail as it leaves the inbox or the mailbox: first
    /// the timers it must not overtake, then the mail, then everything they
    /// and the residents sent each other; false if a handler panicked.
    pub(crate) fn take(&mut self, shared: &Arc<Shared>, mail: BrokerMail) -> bool {
        let BrokerMail { msg, counted } = mail;
        let now = shared.now();
        let woken = !counted && is_wake(&msg);
        let kind = order::kind(&msg);
        let mut ok = self.fire_due(shared, now, woken);
        if ok && !woken {
            ok = self.step(shared, now, msg);
        }
        self.residents.flush(shared, now);
        if counted {
            shared.stamps.lock().expect("stamps poisoned").pop(kind);
        }
        self.timers.arm(shared);
        if counted {
            shared.handled();
        }
        ok
    }

    /// The broker stops: its timers die with it.
    pub(crate) fn stop(&mut self, shared: &Arc<Shared>) {
        self.timers.cancel_all(shared);
    }

    /// Handles one message at `now`, then everything it and the residents send
    /// each other; false if a handler of the broker panicked.
    fn step(&mut self, shared: &Arc<Shared>, now: Nanos, msg: BrokerMsg) -> bool {
        self.handle_one(shared, now, msg) && self.settle(shared, now)
    }

    /// Handles one message at `now` and carries out what the broker did (what
    /// it sends a resident waits in the residents' queue); false if it panicked.
    fn handle_one(&mut self, shared: &Arc<Shared>, now: Nanos, msg: BrokerMsg) -> bool {
        self.residents.before(shared, &mut self.timers, &msg);
        self.out.reset(now, None);
        self.timers.at(now);
        let (state, out) = (&mut self.state, &mut self.out);
        let ok = guarded(shared, || state.handle(msg, out));
        execute_now(shared, &mut self.out, &mut self.timers, &mut self.residents);
        ok
    }

    /// Hands on what the broker and its residents sent each other, in the
    /// order sent, until nothing is left: before the broker's next piece of
    /// mail. It ends: each reply is to something the broker sent, and what
    /// the broker sends in turn is bounded by its calls and its waterfall (an
    /// offer goes to each answerer of a call at most once). False if a handler
    /// of the broker panicked.
    fn settle(&mut self, shared: &Arc<Shared>, now: Nanos) -> bool {
        while let Some(local) = self.residents.pop() {
            match local {
                Local::Answerer(index, input) => {
                    (self.residents).deliver(shared, &mut self.timers, now, index, input)
                }
                Local::Broker(msg) => {
                    if !self.handle_one(shared, now, msg) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Fires timers before the mail at hand: on a wake-up, every timer due by
    /// the time it was sent (where their own messages would have queued); then
    /// the window expiries that may overtake what is still waiting. False if a
    /// handler panicked.
    fn fire_due(&mut self, shared: &Arc<Shared>, now: Nanos, woken: bool) -> bool {
        if woken {
            let sent = shared.stamps.lock().expect("stamps poisoned").pop_wake();
            let sent = sent.unwrap_or(now).min(now);
            self.timers.woken(sent);
            while let Some(envelope) = self.timers.pop_until(shared, sent) {
                if !self.fire(shared, now, envelope) {
                    return false;
                }
            }
        }
        // Window expiries may overtake mail only when all of it is stamped:
        // not through the mailbox, where a user's answerer's mail is not.
        if !shared.seat.in_place() {
            return true;
        }
        loop {
            let envelope = {
                let stamps = shared.stamps.lock().expect("stamps poisoned");
                self.timers.pop_early(shared, &stamps, now)
            };
            let Some(envelope) = envelope else {
                return true;
            };
            if !self.fire(shared, now, envelope) {
                return false;
            }
        }
    }

    fn fire(&mut self, shared: &Arc<Shared>, now: Nanos, envelope: Envelope) -> bool {
        match envelope {
            Envelope::Broker(msg) => self.step(shared, now, msg),
            Envelope::Answerer(index, input) if self.residents.holds(index) => {
                (self.residents).deliver(shared, &mut self.timers, now, index, input);
                self.settle(shared, now)
            }
            other => {
                self.residents.flush(shared, now);
                shared.route(other);
                true
            }
        }
    }
}

impl Actor for BrokerActor {
    type Msg = BrokerMail;
    type State = BrokerFace;
    type Arguments = BrokerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<BrokerMail>,
        args: BrokerArgs,
    ) -> Result<BrokerFace, ActorProcessingErr> {
        let mut actors = Vec::with_capacity(args.slots.len());
        let mut cells = Vec::with_capacity(args.slots.len());
        let mut residents = Residents::new(args.slots.len());
        let _ = args.shared.broker.set(myself.clone());
        for (index, slot) in args.slots.into_iter().enumerate() {
            let resident = matches!(slot, Slot::Resident(_));
            let (actor, counted) = match slot {
                Slot::Resident(state) => {
                    residents.push(Some(state));
                    (AnswererActorRef::Resident, false)
                }
                Slot::Machine(state) => {
                    let answerer_args = AnswererArgs {
                        shared: args.shared.clone(),
                        state,
                        index: index as AnswererIx,
                    };
                    let (actor, _) =
                        Actor::spawn_linked(None, AnswererActor, answerer_args, myself.get_cell()).await?;
                    (AnswererActorRef::Machine(actor), true)
                }
                Slot::User(actor) => {
                    actor.get_cell().link(myself.get_cell());
                    (AnswererActorRef::User(actor), false)
                }
            };
            if !resident {
                residents.push(None);
            }
            cells.push(actor.id());
            actors.push(AnswererRef {
                actor,
                outstanding: std::sync::Mutex::new(counted.then_some(0)),
                killed: Default::default(),
            });
        }
        let shared = args.shared;
        let _ = shared.answerers.set(actors);
        let mut shell = BrokerShell {
            state: args.state,
            timers: Wheel::default(),
            out: Out::default(),
            residents,
        };
        let now = shared.now();
        (shell.residents).start(&shared, &mut shell.timers, now);
        let started = shell.settle(&shared, now);
        shell.residents.flush(&shared, now);
        if !started {
            shell.stop(&shared);
            return Err("the broker panicked as its answerers started".into());
        }
        shell.timers.arm(&shared);
        shared.seat.install(&shared, shell);
        Ok(BrokerFace { shared, cells })
    }

    async fn handle(
        &self,
        _myself: ActorRef<BrokerMail>,
        mail: BrokerMail,
        face: &mut BrokerFace,
    ) -> Result<(), ActorProcessingErr> {
        // A panic stops the actor from the seat.
        face.shared.seat.take(&face.shared, mail);
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<BrokerMail>,
        event: SupervisionEvent,
        face: &mut BrokerFace,
    ) -> Result<(), ActorProcessingErr> {
        // An answerer died (stopped, crashed or panicked): fail its requests over.
        // ractor delivers supervision events ahead of ordinary messages, so acting
        // here would let the death overtake a submit the answerer sent before it
        // died. Queue the death behind them instead.
        let cell = match event {
            SupervisionEvent::ActorTerminated(cell, ..) | SupervisionEvent::ActorFailed(cell, _) => cell,
            _ => return Ok(()),
        };
        if face.shared.shutting_down.load(Ordering::SeqCst) {
            return Ok(());
        }
        if let Some(answerer) = face
            .cells
            .iter()
            .position(|id| *id == Some(cell.get_id()))
            .map(|i| i as AnswererIx)
        {
            face.shared.in_flight.fetch_add(1, Ordering::SeqCst);
            let mail = BrokerMail {
                msg: BrokerMsg::AnswererDied { answerer },
                counted: true,
            };
            if !face.shared.send_broker(mail) {
                face.shared.handled();
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<BrokerMail>,
        face: &mut BrokerFace,
    ) -> Result<(), ActorProcessingErr> {
        face.shared.seat.stop(&face.shared);
        Ok(())
    }
}
