//! An agent's or an answerer's timers (the broker has its own wheel,
//! `broker/wheel.rs`): ordered by deadline in one map, with one sleeper task per
//! actor, started with its first timer, that routes each timer's message when
//! it is due, as the timer's own task used to.
//!
//! Why (issue #23): a task per timer cost a spawn, an abort handle and a map
//! entry per timer, and the answerer starts one for every call it answers late.
//! It must never deliver a timer before its deadline, nor twice, nor after it
//! was cancelled; timers in it count as `due` in [`Shared`] (faults excepted)
//! until they fire or are cancelled, and a fired timer's message is routed
//! before it stops counting, so a real-clock run never looks idle in between.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::time::{Duration, Instant};

use super::{Shared, TimerSink};
use crate::effect::TimerId;
use crate::protocol::{Envelope, Nanos};
use crate::trim::Trim;

/// One actor's running timers.
#[derive(Default)]
pub(crate) struct Timers {
    core: Option<Arc<Core>>,
}

struct Core {
    state: Mutex<State>,
    /// Wakes the sleeper: a deadline earlier than it sleeps for, or the end.
    changed: Notify,
}

/// A timer's place: its deadline, then the order timers were started in.
type Key = (Instant, u64);

#[derive(Default)]
struct State {
    queue: BTreeMap<Key, Timer>,
    ids: rustc_hash::FxHashMap<TimerId, Key>,
    started: u64,
    closed: bool,
}

struct Timer {
    id: TimerId,
    envelope: Envelope,
    fault: bool,
}

impl TimerSink for Timers {
    fn start(&mut self, shared: &Arc<Shared>, id: TimerId, after: Nanos, envelope: Envelope, fault: bool) {
        if !fault {
            shared.due.fetch_add(1, Ordering::SeqCst);
        }
        let core = self.core.get_or_insert_with(|| start_sleeper(shared)).clone();
        let mut state = core.state.lock().expect("timers poisoned");
        let key = (Instant::now() + Duration::from_nanos(after), state.started);
        state.started += 1;
        let earliest = state.queue.keys().next().copied();
        state.queue.insert(key, Timer { id, envelope, fault });
        state.ids.insert(id, key);
        if earliest.is_none_or(|earliest| key < earliest) {
            core.changed.notify_one();
        }
    }

    fn cancel(&mut self, shared: &Arc<Shared>, id: TimerId) {
        let Some(core) = &self.core else {
            return;
        };
        let mut state = core.state.lock().expect("timers poisoned");
        if let Some(key) = state.ids.remove(&id)
            && let Some(timer) = state.queue.remove(&key)
            && !timer.fault
        {
            shared.due.fetch_sub(1, Ordering::SeqCst);
        }
        state.ids.trim();
    }

    fn cancel_all(&mut self, shared: &Arc<Shared>) {
        if let Some(core) = self.core.take() {
            close(shared, &core);
        }
    }
}

/// Drops every timer still waiting and ends the sleeper.
fn close(shared: &Shared, core: &Core) {
    let mut state = core.state.lock().expect("timers poisoned");
    state.closed = true;
    state.ids.clear();
    let waiting = std::mem::take(&mut state.queue);
    let counted = waiting.values().filter(|timer| !timer.fault).count();
    shared.due.fetch_sub(counted as i64, Ordering::SeqCst);
    core.changed.notify_one();
}

fn start_sleeper(shared: &Arc<Shared>) -> Arc<Core> {
    let core = Arc::new(Core {
        state: Mutex::new(State::default()),
        changed: Notify::new(),
    });
    shared.counts.task();
    tokio::spawn(sleep(shared.clone(), core.clone()));
    core
}

/// The sleeper: waits for the earliest deadline (or a change), then routes
/// every timer due by now, in order; ends with the runtime or the actor.
async fn sleep(shared: Arc<Shared>, core: Arc<Core>) {
    loop {
        let earliest = {
            let state = core.state.lock().expect("timers poisoned");
            if state.closed {
                return;
            }
            state.queue.keys().next().map(|(at, _)| *at)
        };
        // No sleep while nothing waits: paused time would jump to its end.
        match earliest {
            None => tokio::select! {
                biased;
                _ = shared.epoch.cancelled() => break,
                _ = core.changed.notified() => {}
            },
            Some(at) => tokio::select! {
                biased;
                _ = shared.epoch.cancelled() => break,
                _ = core.changed.notified() => {}
                _ = tokio::time::sleep_until(at) => fire_due(&shared, &core),
            },
        }
    }
    close(&shared, &core);
}

/// Routes every timer due by now, earliest first.
fn fire_due(shared: &Shared, core: &Core) {
    let now = Instant::now();
    loop {
        let timer = {
            let mut state = core.state.lock().expect("timers poisoned");
            let Some(entry) = state.queue.first_entry().filter(|entry| entry.key().0 <= now) else {
                return;
            };
            let (key, timer) = entry.remove_entry();
            if state.ids.get(&timer.id) == Some(&key) {
                state.ids.remove(&timer.id);
                state.ids.trim();
            }
            timer
        };
        shared.route(timer.envelope);
        if !timer.fault {
            shared.due.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
