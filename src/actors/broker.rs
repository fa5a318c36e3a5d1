//! The broker as a ractor actor: its answerers start linked under its
//! supervision, and an answerer's death reaches the broker's state as a message
//! queued behind whatever that answerer sent before dying.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::answerer::{AnswererActor, AnswererArgs};
use super::wheel::{Wheel, is_wake};
use super::{AnswererActorRef, AnswererRef, Host, Shared, TimerSink, execute, guarded};
use crate::broker::BrokerState;
use crate::effect::{Out, Spawn};
use crate::protocol::{AnswererIx, AnswererMsg, BrokerMail, BrokerMsg, Envelope, Nanos};

/// How the broker's waterfall is made up.
pub(crate) enum Slot {
    /// A sans-IO answerer (the built-in one, or a user's), run in the runtime's
    /// own answerer actor.
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
    cells: Vec<ractor::ActorId>,
    /// Whether window expiries may overtake mail ([`super::order`]): not when a
    /// user's answerer is in the waterfall, as its mail is not stamped.
    early: bool,
}

impl BrokerShell {
    /// Handles one message at `now`; false if the handler panicked.
    async fn step(&mut self, now: Nanos, msg: BrokerMsg) -> bool {
        self.out.reset(now, None);
        self.timers.at(now);
        let (state, out) = (&mut self.state, &mut self.out);
        let ok = guarded(&self.shared, || state.handle(msg, out));
        execute(&self.shared, &mut self.out, &mut self.timers, &mut NoHost).await;
        ok
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
            other => {
                self.shared.route(other);
                true
            }
        }
    }
}

struct NoHost;

impl Host for NoHost {
    async fn spawn(&mut self, _: &Arc<Shared>, _: Spawn) {}
    fn die(&mut self) {}
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
        let early = args.slots.iter().all(|slot| matches!(slot, Slot::Machine(_)));
        let mut actors = Vec::with_capacity(args.slots.len());
        let mut cells = Vec::with_capacity(args.slots.len());
        let _ = args.shared.broker.set(myself.clone());
        for (index, slot) in args.slots.into_iter().enumerate() {
            let (actor, counted) = match slot {
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
            cells.push(actor.id());
            actors.push(AnswererRef {
                actor,
                outstanding: std::sync::Mutex::new(counted.then_some(0)),
            });
        }
        let _ = args.shared.answerers.set(actors);
        Ok(BrokerShell {
            shared: args.shared,
            state: args.state,
            timers: Wheel::default(),
            out: Out::default(),
            cells,
            early,
        })
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
            .position(|id| *id == cell.get_id())
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
