//! The broker's timers without a task each: every window and offer timeout of
//! the broker waits in one ordered map inside the broker actor, and one tokio
//! sleep (for the earliest deadline) wakes the broker when it is idle.
//!
//! Why: a task per timer costs a spawn, an abort and a mailbox message each, and
//! a fired timer's message used to queue behind whatever reached the broker's
//! FIFO mailbox first: under a burst of 100,000 requests a window expired
//! hundreds of milliseconds late. Here the broker takes every timer that is due
//! before each message it handles ([`Wheel::pop_due`]), so an expiry waits for at
//! most one message, never for the backlog. The sleeper's wake-up is a no-op
//! message ([`wake_mail`]): it only makes an idle broker look at the wheel.
//!
//! The wheel must never deliver a timer before its deadline, nor twice, nor
//! after it was cancelled; timers still in it count as `due` in [`Shared`] so a
//! real-clock run is not over while one waits.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::task::AbortHandle;

use super::{Shared, TimerSink};
use crate::effect::TimerId;
use crate::protocol::{AgentId, BrokerMail, BrokerMsg, Envelope, Nanos};

/// The agent id of the wake-up's `Stop`: no agent ever has it (ids count up
/// from 1), so stopping it is a no-op for the broker's state as well.
const WAKE_AGENT: AgentId = AgentId::MAX;

/// The message the sleeper sends an idle broker.
fn wake_mail() -> BrokerMail {
    BrokerMail::from(BrokerMsg::Stop(WAKE_AGENT))
}

/// Whether `msg` is only a wake-up (nothing for the broker's state to do).
pub(crate) fn is_wake(msg: &BrokerMsg) -> bool {
    matches!(msg, BrokerMsg::Stop(WAKE_AGENT))
}

/// The broker's running timers, by deadline.
#[derive(Default)]
pub(crate) struct Wheel {
    /// (deadline, id) → what the timer delivers, whether it is a fault.
    queue: BTreeMap<(Nanos, TimerId), (Envelope, bool)>,
    /// id → deadline, to cancel by id.
    deadlines: HashMap<TimerId, Nanos>,
    /// The sleeper now waiting, and the deadline it wakes at.
    armed: Option<(Nanos, AbortHandle)>,
    /// Filled by [`TimerSink::start`], which has no clock: the time of the
    /// delivery being handled (set by [`Wheel::at`]).
    now: Nanos,
}

impl Wheel {
    /// The time of the delivery about to be handled: new timers count from it.
    pub(crate) fn at(&mut self, now: Nanos) {
        self.now = now;
    }

    /// The earliest timer due at `now`, taken out of the wheel.
    pub(crate) fn pop_due(&mut self, shared: &Shared, now: Nanos) -> Option<Envelope> {
        let (&(deadline, id), _) = self.queue.first_key_value()?;
        if deadline > now {
            return None;
        }
        let (envelope, fault) = self.queue.remove(&(deadline, id))?;
        self.deadlines.remove(&id);
        if !fault {
            shared.due.fetch_sub(1, Ordering::SeqCst);
        }
        Some(envelope)
    }

    /// Makes sure a sleeper wakes the broker at the earliest deadline.
    pub(crate) fn arm(&mut self, shared: &Arc<Shared>, now: Nanos) {
        let Some(&(earliest, _)) = self.queue.keys().next() else {
            return;
        };
        // A sleeper due at or before the earliest deadline, and not yet past, will
        // wake the broker in time (it re-arms then).
        if let Some((at, _)) = &self.armed
            && *at <= earliest
            && *at > now
        {
            return;
        }
        if let Some((_, sleeper)) = self.armed.take() {
            sleeper.abort();
        }
        let shared_for_task = shared.clone();
        let wake_at = shared.start + std::time::Duration::from_nanos(earliest);
        let task = tokio::spawn(async move {
            tokio::select! {
                biased;
                _ = shared_for_task.epoch.cancelled() => {}
                _ = tokio::time::sleep_until(wake_at) => {
                    if let Some(broker) = shared_for_task.broker() {
                        let _ = broker.send_message(wake_mail());
                    }
                }
            }
        });
        self.armed = Some((earliest, task.abort_handle()));
    }
}

impl TimerSink for Wheel {
    fn start(&mut self, shared: &Arc<Shared>, id: TimerId, after: Nanos, envelope: Envelope, fault: bool) {
        if !fault {
            shared.due.fetch_add(1, Ordering::SeqCst);
        }
        let deadline = self.now.saturating_add(after);
        self.queue.insert((deadline, id), (envelope, fault));
        let previous = self.deadlines.insert(id, deadline);
        assert!(previous.is_none(), "timer {id} started twice");
    }

    fn cancel(&mut self, shared: &Arc<Shared>, id: TimerId) {
        if let Some(deadline) = self.deadlines.remove(&id)
            && let Some((_, fault)) = self.queue.remove(&(deadline, id))
            && !fault
        {
            shared.due.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn cancel_all(&mut self, shared: &Arc<Shared>) {
        let counted = self.queue.values().filter(|(_, fault)| !fault).count();
        shared.due.fetch_sub(counted as i64, Ordering::SeqCst);
        self.queue.clear();
        self.deadlines.clear();
        if let Some((_, sleeper)) = self.armed.take() {
            sleeper.abort();
        }
    }
}
