//! What the write-ahead gate lets through, handed on outside every lock
//! (issue #23).
//!
//! The gate ([`crate::durable::Gate`]) lets a send go once its lines are
//! durable, from whichever thread learns that: the sending actor's (nothing
//! held), the group-commit sync thread (no tokio context, so no clock of the
//! runtime's), or, under `every` and `none`, an actor's own append with the
//! recorder locked. A library agent is stepped in place by whoever delivers
//! to it, and its step records (the recorder again) and reads the runtime's
//! clock: it must not run in any of those places but the first. So the gate
//! only puts what it releases here, in the order released, and the courier
//! hands it on: at once on the sending actor's thread, right after the send
//! passed the gate, or, for what the sync thread or an append released, from
//! a task of the runtime's own, woken once per release (one fsync's worth of
//! deliveries a wake-up, not a mailbox hop each).
//!
//! Order is kept: one thread hands on at a time, front first, and the gate
//! puts items here in the order they leave it. It never holds a lock while it
//! delivers, and it delivers nothing before the gate released it: the
//! durability rule is the gate's alone.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::Shared;
use crate::protocol::Envelope;

/// The gate's released sends, waiting to be handed on.
#[derive(Default)]
pub(crate) struct Courier {
    ready: Mutex<Ready>,
    /// Wakes the courier's task.
    wake: Notify,
}

#[derive(Default)]
struct Ready {
    items: VecDeque<Envelope>,
    /// A thread is handing items on: it takes whatever comes meanwhile too.
    draining: bool,
}

impl Courier {
    /// Takes a send the gate released (called with the gate locked, so in the
    /// order it leaves the gate), and wakes the task in case no sender hands
    /// it on first.
    pub(crate) fn push(&self, envelope: Envelope) {
        self.ready
            .lock()
            .expect("courier poisoned")
            .items
            .push_back(envelope);
        self.wake.notify_one();
    }

    /// Hands on everything released so far, front first, on the caller's
    /// thread, which holds no lock of the runtime's and runs in its tokio
    /// context; returns at once if another thread is handing on (it takes
    /// these too).
    pub(crate) fn drain(&self, shared: &Shared) {
        let mut ready = self.ready.lock().expect("courier poisoned");
        if ready.draining || ready.items.is_empty() {
            return;
        }
        ready.draining = true;
        while let Some(envelope) = ready.items.pop_front() {
            drop(ready);
            let count = matches!(envelope, Envelope::Agent(..));
            // A handler's panic is caught where it runs (a library agent's
            // step, `guarded`); nothing here unwinds with `draining` set.
            shared.deliver(envelope, count);
            ready = self.ready.lock().expect("courier poisoned");
        }
        ready.draining = false;
    }
}

/// Starts the courier's task: it hands on what the gate released from a
/// thread that cannot, until the runtime ends.
pub(crate) fn start(shared: &Arc<Shared>) {
    shared.counts.task();
    tokio::spawn(run(shared.clone()));
}

async fn run(shared: Arc<Shared>) {
    loop {
        tokio::select! {
            biased;
            _ = shared.epoch.cancelled() => return,
            _ = shared.courier.wake.notified() => shared.courier.drain(&shared),
        }
    }
}
