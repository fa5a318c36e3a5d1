//! The broker stepped in place (issue #23).
//!
//! The broker's state and everything that carries out its effects (its wheel
//! of timers, its resident answerers) sit here, in its seat, not inside the
//! ractor actor's task. When every answerer of the waterfall is the runtime's
//! own (no [`crate::AnswererSlot::Actor`]), mail for the broker goes to the
//! seat's inbox, and whoever sent it steps the broker through the inbox at
//! once, on its own thread: a library caller's request, the wheel's wake-up,
//! an answerer actor's reply. Through the actor's mailbox each of those was a
//! boxed ractor message and a wake-up of the broker's task (three a pending
//! call; BENCHMARKS.md has what going without them saved).
//!
//! What stays as the mailbox had it:
//! - **One piece of mail at a time, in the order sent.** The inbox is one FIFO
//!   queue; one thread at a time holds the seat and takes the inbox front
//!   first until it is empty. A thread that finds the seat taken leaves its
//!   mail for the holder, who takes everything that comes before letting go
//!   and looks again after (so nothing is left behind: a sender that saw the
//!   seat taken pushed before the holder's last look).
//! - **The timers' order.** Each piece of mail is taken exactly as the actor
//!   took its messages ([`super::BrokerShell::take`]): the wake-ups
//!   and the window expiries that may overtake what still waits
//!   ([`super::order`]), whose stamps are pushed under the same lock as the
//!   mail.
//! - **Its sends.** What the broker sends is routed as before, so a library
//!   agent it sends to is stepped in place too. A library agent's lock is
//!   held while it sends, and a step of the broker may deliver to that same
//!   agent: so a thread that holds an agent's lock ([`Held`]) only queues its
//!   mail, and steps the broker once it let the lock go.
//! - **A panic** in a handler stops the broker: its timers die, the mail left
//!   is dropped (as a stopped actor's mailbox is), and the actor stops.
//!
//! With a user's answerer actor in the waterfall the mail goes through the
//! actor's mailbox as before (that actor replies to the broker's address, not
//! through the runtime): the actor's handler takes it from the same seat.
//! Either way the actor stays the broker's face: it supervises the
//! answerers' actors, and its stop ends the broker.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, TryLockError};

use super::super::Shared;
use super::{BrokerShell, Slot};
use crate::protocol::BrokerMail;

/// Where the broker's state sits, and its inbox.
pub(crate) struct Seat {
    /// Whether mail goes to the inbox and is stepped in place (true), or
    /// through the actor's mailbox.
    in_place: bool,
    inbox: Mutex<Inbox>,
    /// `None` before the broker started and after it stopped.
    shell: Mutex<Option<BrokerShell>>,
}

#[derive(Default)]
struct Inbox {
    mail: VecDeque<BrokerMail>,
    /// The broker stopped: nothing more is taken.
    stopped: bool,
}

thread_local! {
    /// Library agents' locks this thread holds ([`Held`]).
    static HELD: Cell<u32> = const { Cell::new(0) };
    /// Mail was queued while one was held: step the broker once let go.
    static OWED: Cell<bool> = const { Cell::new(false) };
}

/// This thread holds a library agent's lock while the value lives: mail it
/// sends the broker waits in the inbox until the last such lock is let go,
/// then the broker is stepped (a step may deliver to that agent, and take its
/// lock). Make one before taking the lock, so it is dropped after it.
pub(crate) struct Held<'a>(&'a Shared);

impl<'a> Held<'a> {
    pub(crate) fn enter(shared: &'a Shared) -> Held<'a> {
        HELD.with(|held| held.set(held.get() + 1));
        Held(shared)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let left = HELD.with(|held| {
            held.set(held.get() - 1);
            held.get()
        });
        if left == 0 && OWED.with(|owed| owed.replace(false)) && !std::thread::panicking() {
            self.0.seat.drain(self.0);
        }
    }
}

impl Seat {
    /// The seat of a broker with the waterfall `slots`: its mail is stepped
    /// in place unless a user's answerer actor is among them (it replies to
    /// the broker's mailbox: then all mail goes there, in one order).
    pub(crate) fn for_waterfall(slots: &[Slot]) -> Seat {
        Seat {
            in_place: !slots.iter().any(|slot| matches!(slot, Slot::User(_))),
            inbox: Mutex::new(Inbox::default()),
            shell: Mutex::new(None),
        }
    }

    /// Whether mail goes to the inbox, stepped in place.
    pub(crate) fn in_place(&self) -> bool {
        self.in_place
    }

    /// Queues `mail` (in the order of the stamps' lock, when it is stamped:
    /// the caller holds it); false if the broker stopped. The caller steps
    /// the broker next ([`Seat::drain`]).
    pub(crate) fn push(&self, mail: BrokerMail) -> bool {
        let mut inbox = self.inbox.lock().expect("inbox poisoned");
        if inbox.stopped {
            return false;
        }
        inbox.mail.push_back(mail);
        true
    }

    /// Steps the broker through its inbox on this thread, until the inbox is
    /// empty; at once returns if another thread holds the seat (it takes this
    /// mail too) or if this thread holds the seat further up its stack (it
    /// takes it on its next turn), and waits until this thread lets go of a
    /// library agent's lock ([`Held`]).
    pub(crate) fn drain(&self, shared: &Shared) {
        if HELD.with(Cell::get) > 0 {
            OWED.with(|owed| owed.set(true));
            return;
        }
        let Some(shared) = shared.me.upgrade() else {
            return;
        };
        loop {
            let mut seat = match self.shell.try_lock() {
                Ok(seat) => seat,
                Err(TryLockError::WouldBlock) => return,
                Err(TryLockError::Poisoned(_)) => {
                    // Only a bug outside every guarded handler gets here.
                    self.shell.clear_poison();
                    self.stop(&shared);
                    return;
                }
            };
            let Some(shell) = seat.as_mut() else {
                // Not started yet (it takes the inbox as it starts), or stopped
                // (the inbox was emptied then).
                return;
            };
            while let Some(mail) = self.pop() {
                if !shell.take(&shared, mail) {
                    drop(seat);
                    self.fail(&shared);
                    return;
                }
            }
            #[cfg(test)]
            tests::letting_go();
            drop(seat);
            if self.inbox.lock().expect("inbox poisoned").mail.is_empty() {
                return;
            }
        }
    }

    fn pop(&self) -> Option<BrokerMail> {
        self.inbox.lock().expect("inbox poisoned").mail.pop_front()
    }

    /// The broker started: `shell` takes its seat, and whatever mail came
    /// meanwhile.
    pub(crate) fn install(&self, shared: &Arc<Shared>, shell: BrokerShell) {
        *self.shell.lock().expect("seat poisoned") = Some(shell);
        if self.in_place {
            self.drain(shared);
        }
    }

    /// Takes `mail` from the actor's mailbox (a runtime with a user's
    /// answerer actor); false if the broker stopped or a handler panicked.
    pub(crate) fn take(&self, shared: &Arc<Shared>, mail: BrokerMail) -> bool {
        let mut seat = self.shell.lock().expect("seat poisoned");
        let Some(shell) = seat.as_mut() else {
            return false;
        };
        let ok = shell.take(shared, mail);
        drop(seat);
        if !ok {
            self.fail(shared);
        }
        ok
    }

    /// A handler of the broker panicked (its message is recorded as the
    /// runtime's crash): the broker stops, as its actor did.
    fn fail(&self, shared: &Arc<Shared>) {
        self.stop(shared);
        if let Some(broker) = shared.broker() {
            broker.stop(Some("panic".into()));
        }
    }

    /// The broker stops: its timers die, the mail left is dropped (no longer
    /// in flight), and nothing more is queued.
    pub(crate) fn stop(&self, shared: &Arc<Shared>) {
        let shell = self.shell.lock().expect("seat poisoned").take();
        if let Some(mut shell) = shell {
            shell.stop(shared);
        }
        let dropped = {
            let mut inbox = self.inbox.lock().expect("inbox poisoned");
            inbox.stopped = true;
            std::mem::take(&mut inbox.mail)
        };
        for mail in dropped {
            if mail.counted {
                shared.handled();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use crate::policy::Policy;
    use crate::protocol::BrokerMsg;
    use crate::tool::{Timeout, ToolConfig};
    use crate::{AnswererSlot, Runtime, RuntimeConfig};

    thread_local! {
        /// Run once by the seat's holder on this thread when it has emptied
        /// the inbox, just before it lets go.
        static LETTING_GO: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
    }

    pub(super) fn letting_go() {
        if let Some(hook) = LETTING_GO.with(|hook| hook.borrow_mut().take()) {
            hook();
        }
    }

    /// Mail sent after the holder's last look at the inbox and before it
    /// lets go (here by the holder's own thread, which finds the seat taken,
    /// as another thread would) is taken before the holder returns: it looks
    /// once more after letting go. Without that look the status asked for
    /// here would wait in the inbox until someone else sent the broker mail.
    #[tokio::test(start_paused = true)]
    async fn mail_sent_as_the_holder_lets_go_is_taken_before_it_returns() {
        let runtime = Runtime::start(RuntimeConfig {
            tool: ToolConfig::timed(Timeout::Window(30.0)),
            answerers: vec![AnswererSlot::Policy {
                name: "yes".into(),
                policy: Policy::recommended_after(0.0),
            }],
            ..RuntimeConfig::default()
        })
        .await
        .expect("a runtime");
        let (reply, mut late) = tokio::sync::oneshot::channel();
        let sender = runtime.clone();
        let hook: Box<dyn FnOnce()> = Box::new(move || sender.send(BrokerMsg::Status(reply)));
        LETTING_GO.with(|slot| *slot.borrow_mut() = Some(hook));
        let (first, mut answered) = tokio::sync::oneshot::channel();
        runtime.send(BrokerMsg::Status(first));
        assert!(answered.try_recv().is_ok(), "the first status, taken in place");
        assert!(
            late.try_recv().is_ok(),
            "mail sent as the holder let go was left in the inbox"
        );
        runtime.shutdown().await;
    }
}
