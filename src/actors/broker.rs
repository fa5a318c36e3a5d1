//! The broker as a ractor actor: the built-in answerers run inside it
//! ([`super::resident`]); the others start linked under its supervision, and an
//! answerer's death reaches the broker's state as a message queued behind
//! whatever that answerer sent before dying.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::answerer::{AnswererActor, AnswererArgs};
use super::resident::{Local, Residents};
use super::wheel::{Wheel, is_wake};
use super::{AnswererActorRef, AnswererRef, Shared, TimerSink, execute, guarded};
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

pub(crate) struct BrokerShell {
    shared: Arc<Shared>,
    state: BrokerState,
    timers: Wheel,
    out: Out,
    residents: Residents,
    /// The answerers' actors by place (`None` for a resident), to know whose
    /// death supervision reports.
    cells: Vec<Option<ractor::ActorId>>,
    /// Whether window expiries may overtake mail ([`super::order`]): not when a
    /// user's answerer is in the waterfall, as its mail is not stamped.
    early: bool,
}

impl BrokerShell {
    /// Handles one message at `now`, then everything it and the residents send
    /// each other; false if a handler of the broker panicked.
    async fn step(&mut self, now: Nanos, msg: BrokerMsg) -> bool {
        self.handle_one(now, msg).await && self.settle(now).await
    }

    /// Handles one message at `now` and carries out what the broker did (what
    /// it sends a resident waits in the residents' queue); false if it panicked.
    async fn handle_one(&mut self, now: Nanos, msg: BrokerMsg) -> bool {
        self.residents.before(&self.shared, &mut self.timers, &msg);
        self.out.reset(now, None);
        self.timers.at(now);
        let (state, out) = (&mut self.state, &mut self.out);
        let ok = guarded(&self.shared, || state.handle(msg, out));
        execute(&self.shared, &mut self.out, &mut self.timers, &mut self.residents).await;
        ok
    }

    /// Hands on what the broker and its residents sent each other, in the
    /// order sent, until nothing is left: before the broker's next mailbox
    /// message. It ends: each reply is to something the broker sent, and what
    /// the broker sends in turn is bounded by its calls and its waterfall (an
    /// offer goes to each answerer of a call at most once). False if a handler
    /// of the broker panicked.
    async fn settle(&mut self, now: Nanos) -> bool {
        while let Some(local) = self.residents.pop() {
            match local {
                Local::Answerer(index, input) => {
                    (self.residents)
                        .deliver(&self.shared, &mut self.timers, now, index, input)
                        .await
                }
                Local::Broker(msg) => {
                    if !self.handle_one(now, msg).await {
                        return false;
                    }
                }
            }
        }
        true
    }
    /// Fires timers before the message at hand: on a wake-up, every timer due by
    /// the time it was sent (where their own messages would have queued); then
    /// the window expiries that may overtake what is still in the mailbox. False
    /// if a handler panicked.
    async fn fire_due(&mut self, now: Nanos, woken: bool) -> bool {
        if woken {
            let sent = self.shared.stamps.lock().expect("stamps poisoned").pop_wake();
            let sent = sent.unwrap_or(now).min(now);
            self.timers.woken(sent);
            while let Some(envelope) = self.timers.pop_until(&self.shared, sent) {
                if !self.fire(now, envelope).await {
                    return false;
                }
            }
        }
        if !self.early {
            return true;
        }
        loop {
            let envelope = {
                let stamps = self.shared.stamps.lock().expect("stamps poisoned");
                self.timers.pop_early(&self.shared, &stamps, now)
            };
            let Some(envelope) = envelope else {
                return true;
            };
            if !self.fire(now, envelope).await {
                return false;
            }
        }
    }

    async fn fire(&mut self, now: Nanos, envelope: Envelope) -> bool {
        match envelope {
            Envelope::Broker(msg) => self.step(now, msg).await,
            Envelope::Answerer(index, input) if self.residents.holds(index) => {
                (self.residents)
                    .deliver(&self.shared, &mut self.timers, now, index, input)
                    .await;
                self.settle(now).await
            }
            other => {
                self.residents.flush(&self.shared, now);
                self.shared.route(other);
                true
            }
        }
    }
}

impl Actor for BrokerActor {
    type Msg = BrokerMail;
    type State = BrokerShell;
    type Arguments = BrokerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<BrokerMail>,
        args: BrokerArgs,
    ) -> Result<BrokerShell, ActorProcessingErr> {
        let early = !args.slots.iter().any(|slot| matches!(slot, Slot::User(_)));
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
        let _ = args.shared.answerers.set(actors);
        let mut shell = BrokerShell {
            shared: args.shared,
            state: args.state,
            timers: Wheel::default(),
            out: Out::default(),
            residents,
            cells,
            early,
        };
        let now = shell.shared.now();
        (shell.residents)
            .start(&shell.shared, &mut shell.timers, now)
            .await;
        let started = shell.settle(now).await;
        shell.residents.flush(&shell.shared, now);
        if !started {
            return Err("the broker panicked as its answerers started".into());
        }
        shell.timers.arm(&shell.shared);
        Ok(shell)
    }

    async fn handle(
        &self,
        myself: ActorRef<BrokerMail>,
        mail: BrokerMail,
        shell: &mut BrokerShell,
    ) -> Result<(), ActorProcessingErr> {
        let BrokerMail { msg, counted } = mail;
        let now = shell.shared.now();
        let woken = !counted && is_wake(&msg);
        let kind = super::order::kind(&msg);
        let mut ok = shell.fire_due(now, woken).await;
        if ok && !woken {
            ok = shell.step(now, msg).await;
        }
        shell.residents.flush(&shell.shared, now);
        if counted {
            shell.shared.stamps.lock().expect("stamps poisoned").pop(kind);
        }
        shell.timers.arm(&shell.shared);
        if counted {
            shell.shared.handled();
        }
        if !ok {
            myself.stop(Some("panic".into()));
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<BrokerMail>,
        event: SupervisionEvent,
        shell: &mut BrokerShell,
    ) -> Result<(), ActorProcessingErr> {
        // An answerer died (stopped, crashed or panicked): fail its requests over.
        // ractor delivers supervision events ahead of ordinary messages, so acting
        // here would let the death overtake a submit the answerer sent before it
        // died. Queue the death behind them instead.
        let cell = match event {
            SupervisionEvent::ActorTerminated(cell, ..) | SupervisionEvent::ActorFailed(cell, _) => cell,
            _ => return Ok(()),
        };
        if shell.shared.shutting_down.load(Ordering::SeqCst) {
            return Ok(());
        }
        if let Some(answerer) = shell
            .cells
            .iter()
            .position(|id| *id == Some(cell.get_id()))
            .map(|i| i as AnswererIx)
        {
            shell.shared.in_flight.fetch_add(1, Ordering::SeqCst);
            let mail = BrokerMail {
                msg: BrokerMsg::AnswererDied { answerer },
                counted: true,
            };
            if !shell.shared.send_broker(mail) {
                shell.shared.handled();
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<BrokerMail>,
        shell: &mut BrokerShell,
    ) -> Result<(), ActorProcessingErr> {
        shell.timers.cancel_all(&shell.shared);
        Ok(())
    }
}
