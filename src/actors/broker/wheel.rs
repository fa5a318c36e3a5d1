//! The broker's timers without a task each: every window and offer timeout of
//! the broker (and every timer of its resident answerers, [`super::resident`])
//! waits in one ordered map inside the broker actor, and one sleeper task, kept
//! for the broker's life, wakes the broker at the earliest deadline when it is
//! idle (re-arming it is a store and a notify, not a spawn).
//!
//! Why: a task per timer costs a spawn, an abort and a mailbox message each, and
//! a fired timer's message used to queue behind whatever reached the broker's
//! FIFO mailbox first: under a burst of 100,000 requests a window expired
//! hundreds of milliseconds late. Here the sleeper's wake-up ([`wake_mail`], a
//! no-op message, its send time stamped) takes the place of those messages: when
//! the broker handles it, every timer due by the time it was sent fires
//! ([`Wheel::pop_until`]), exactly the order the timers' own messages had. And
//! before each message, the broker takes the due timers that may overtake what
//! is still in its mailbox ([`Wheel::pop_early`], [`super::order`]), so an
//! expiry does not wait behind a backlog of requests.
//!
//! The wheel must never deliver a timer before its deadline, nor twice, nor
//! after it was cancelled; timers still in it count as `due` in [`Shared`] so a
//! real-clock run is not over while one waits.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::super::{Shared, TimerSink};
use super::order::Stamps;
use crate::effect::TimerId;
use crate::protocol::{AnswererIx, BrokerMail, BrokerMsg, Envelope, Nanos, Ticket};
use crate::trim::Trim;

/// Whose timer it is: the broker's, or one of the answerers that run inside
/// the broker's actor ([`super::resident`]). Each counts its timer ids on its
/// own, so an id is unique only with its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Owner {
    /// The broker's own (windows, offer timeouts).
    Broker,
    /// The resident answerer at this place of the waterfall.
    Resident(AnswererIx),
}

/// A timer's name in the wheel.
type Key = (Owner, TimerId);

/// The message the sleeper sends an idle broker.
fn wake_mail() -> BrokerMail {
    BrokerMail::from(BrokerMsg::Wake)
}

/// Whether `msg` is only a wake-up (nothing for the broker's state to do).
pub(crate) fn is_wake(msg: &BrokerMsg) -> bool {
    matches!(msg, BrokerMsg::Wake)
}

/// The broker's running timers, by deadline, and its resident answerers'.
#[derive(Default)]
pub(crate) struct Wheel {
    /// Every running timer by (deadline, owner and id): 24 bytes an entry, so
    /// that taking the earliest (which shifts the rest of its leaf) and every
    /// insertion move keys only. With the envelopes in the B-tree's entries
    /// (96 bytes) each pop moved up to a kilobyte.
    queue: BTreeSet<(Nanos, Key)>,
    /// Owner and id → the deadline, what the timer delivers and whether it is
    /// a fault.
    running: rustc_hash::FxHashMap<Key, Running>,
    /// The sleeper, started with the first deadline.
    sleeper: Option<Arc<Sleeper>>,
    /// The deadline the sleeper was last set to wake the broker at, until
    /// that wake-up is handled.
    armed: Option<Nanos>,
    /// Filled by [`TimerSink::start`], which has no clock: the time of the
    /// delivery being handled (set by [`Wheel::at`]).
    now: Nanos,
}

/// A running timer's deadline, what it delivers and whether it is a fault.
struct Running {
    deadline: Nanos,
    envelope: Envelope,
    fault: bool,
}

/// Due entries [`Wheel::pop_early`] looks at per message, so one message never
/// costs a scan of a long backlog of blocked timers.
const EARLY_SCAN_MAX: usize = 64;

impl Wheel {
    /// The time of the delivery about to be handled: new timers count from it.
    pub(crate) fn at(&mut self, now: Nanos) {
        self.now = now;
    }

    fn take(&mut self, shared: &Shared, key: (Nanos, Key)) -> Option<Envelope> {
        if !self.queue.remove(&key) {
            return None;
        }
        let timer = self.running.remove(&key.1).expect("a queued timer has its entry");
        self.running.trim();
        if !timer.fault {
            shared.due.fetch_sub(1, Ordering::SeqCst);
        }
        Some(timer.envelope)
    }

    /// The earliest timer due at or before `limit` (the send time of a wake-up:
    /// where its message would have entered the mailbox), taken out.
    pub(crate) fn pop_until(&mut self, shared: &Shared, limit: Nanos) -> Option<Envelope> {
        let &key = self.queue.first()?;
        if key.0 > limit {
            return None;
        }
        self.take(shared, key)
    }

    /// The earliest timer due at `now` that may overtake what is still in the
    /// mailbox ([`Stamps::may_overtake`]), taken out; never one behind a
    /// blocked timer of its own call, nor behind a resident answerer's timer
    /// (whose call the wheel does not know: it waits for the wake-up, where its
    /// reply would have entered the mailbox, and holds back what is due after).
    pub(crate) fn pop_early(&mut self, shared: &Shared, stamps: &Stamps, now: Nanos) -> Option<Envelope> {
        let mut blocked: Vec<Ticket> = Vec::new();
        let mut found = None;
        for &key in (self.queue)
            .range(..(now.saturating_add(1), (Owner::Broker, 0)))
            .take(EARLY_SCAN_MAX)
        {
            let (ticket, window) = match &self.running[&key.1].envelope {
                Envelope::Broker(BrokerMsg::WindowExpired { ticket, .. }) => (*ticket, true),
                Envelope::Broker(BrokerMsg::OfferTimeout { ticket, .. }) => (*ticket, false),
                _ => return None,
            };
            if !blocked.contains(&ticket) && stamps.may_overtake(ticket, key.0, window) {
                found = Some(key);
                break;
            }
            blocked.push(ticket);
        }
        self.take(shared, found?)
    }

    /// A wake-up sent at `sent` was handled: the sleeper that sent it is done.
    pub(crate) fn woken(&mut self, sent: Nanos) {
        if self.armed.is_some_and(|at| at <= sent) {
            self.armed = None;
        }
    }

    /// Makes sure a sleeper wakes the broker at the earliest deadline.
    pub(crate) fn arm(&mut self, shared: &Arc<Shared>) {
        let Some(&(earliest, _)) = self.queue.first() else {
            return;
        };
        // A sleeper due no later than the earliest deadline wakes the broker in
        // time (or already did: its wake-up is in the mailbox, and re-arms).
        if self.armed.is_some_and(|at| at <= earliest) {
            return;
        }
        let sleeper = self.sleeper.get_or_insert_with(|| Sleeper::start(shared));
        sleeper.set(Some(earliest));
        self.armed = Some(earliest);
    }
}

/// The broker's one sleeper: it waits for the deadline it is set to (none:
/// for a change, with no sleep, or paused time would jump to its end), then
/// wakes the broker once and waits for the next.
struct Sleeper {
    state: Mutex<SleeperState>,
    changed: Notify,
}

#[derive(Default)]
struct SleeperState {
    target: Option<Nanos>,
    closed: bool,
}

impl Sleeper {
    fn start(shared: &Arc<Shared>) -> Arc<Sleeper> {
        let sleeper = Arc::new(Sleeper {
            state: Mutex::new(SleeperState::default()),
            changed: Notify::new(),
        });
        shared.counts.task();
        tokio::spawn(sleeper.clone().run(shared.clone()));
        sleeper
    }

    /// Sets the deadline to wake at (`None`: none).
    fn set(&self, target: Option<Nanos>) {
        self.state.lock().expect("sleeper poisoned").target = target;
        self.changed.notify_one();
    }

    /// Ends the task (the broker stopped).
    fn close(&self) {
        self.state.lock().expect("sleeper poisoned").closed = true;
        self.changed.notify_one();
    }

    async fn run(self: Arc<Sleeper>, shared: Arc<Shared>) {
        loop {
            let target = {
                let state = self.state.lock().expect("sleeper poisoned");
                if state.closed {
                    return;
                }
                state.target
            };
            let Some(at) = target else {
                tokio::select! {
                    biased;
                    _ = shared.epoch.cancelled() => return,
                    _ = self.changed.notified() => continue,
                }
            };
            let wake_at = shared.start + std::time::Duration::from_nanos(at);
            tokio::select! {
                biased;
                _ = shared.epoch.cancelled() => return,
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep_until(wake_at) => {
                    let mut state = self.state.lock().expect("sleeper poisoned");
                    if state.target == Some(at) {
                        state.target = None;
                        drop(state);
                        wake(&shared);
                    }
                }
            }
        }
    }
}

/// Sends the broker a wake-up, its send time stamped in the order it is
/// queued: to its inbox, taken at once in place ([`super::seat`]), or to its
/// actor's mailbox.
fn wake(shared: &Shared) {
    let sent = {
        let mut stamps = shared.stamps.lock().expect("stamps poisoned");
        stamps.push_wake(shared.now());
        if shared.seat.in_place() {
            shared.counts.in_place_broker(&BrokerMsg::Wake);
        } else {
            shared.counts.broker(&BrokerMsg::Wake);
        }
        let sent = shared.put_broker(wake_mail());
        if !sent {
            stamps.pop_wake_back();
        }
        sent
    };
    shared.step_broker(sent);
}

impl Wheel {
    fn start_as(&mut self, shared: &Shared, key: Key, after: Nanos, envelope: Envelope, fault: bool) {
        if !fault {
            shared.due.fetch_add(1, Ordering::SeqCst);
        }
        let deadline = self.now.saturating_add(after);
        self.queue.insert((deadline, key));
        let timer = Running {
            deadline,
            envelope,
            fault,
        };
        let previous = self.running.insert(key, timer);
        assert!(previous.is_none(), "timer {key:?} started twice");
    }

    fn cancel_as(&mut self, shared: &Shared, key: Key) {
        if let Some(timer) = self.running.remove(&key) {
            self.queue.remove(&(timer.deadline, key));
            if !timer.fault {
                shared.due.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.running.trim();
    }

    /// The timers of `owner`, as a [`TimerSink`] of its own ids.
    pub(crate) fn of(&mut self, owner: Owner) -> OwnedTimers<'_> {
        OwnedTimers { wheel: self, owner }
    }

    /// Cancels every timer of `owner` (a resident answerer died). It scans
    /// the wheel once, as a death happens once per answerer and run (or
    /// restart), never per call.
    pub(crate) fn cancel_owner(&mut self, shared: &Shared, owner: Owner) {
        let mut counted = 0;
        self.queue.retain(|(_, key)| key.0 != owner);
        self.running.retain(|key, timer| {
            let keep = key.0 != owner;
            counted += i64::from(!keep && !timer.fault);
            keep
        });
        self.running.trim();
        shared.due.fetch_sub(counted, Ordering::SeqCst);
    }
}

/// One owner's timers in the broker's wheel ([`Wheel::of`]).
pub(crate) struct OwnedTimers<'a> {
    wheel: &'a mut Wheel,
    owner: Owner,
}

impl TimerSink for OwnedTimers<'_> {
    fn start(&mut self, shared: &Arc<Shared>, id: TimerId, after: Nanos, envelope: Envelope, fault: bool) {
        self.wheel
            .start_as(shared, (self.owner, id), after, envelope, fault);
    }

    fn cancel(&mut self, shared: &Arc<Shared>, id: TimerId) {
        self.wheel.cancel_as(shared, (self.owner, id));
    }

    fn cancel_all(&mut self, shared: &Arc<Shared>) {
        self.wheel.cancel_owner(shared, self.owner);
    }
}

impl TimerSink for Wheel {
    fn start(&mut self, shared: &Arc<Shared>, id: TimerId, after: Nanos, envelope: Envelope, fault: bool) {
        self.start_as(shared, (Owner::Broker, id), after, envelope, fault);
    }

    fn cancel(&mut self, shared: &Arc<Shared>, id: TimerId) {
        self.cancel_as(shared, (Owner::Broker, id));
    }

    fn cancel_all(&mut self, shared: &Arc<Shared>) {
        let counted = self.running.values().filter(|timer| !timer.fault).count();
        shared.due.fetch_sub(counted as i64, Ordering::SeqCst);
        self.queue.clear();
        self.running.clear();
        self.armed = None;
        if let Some(sleeper) = self.sleeper.take() {
            sleeper.close();
        }
    }
}
