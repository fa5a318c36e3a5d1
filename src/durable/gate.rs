//! The write-ahead gate (SPEC §4.1): what a decision sends out of the process
//! waits here until every line recorded before it is durable, then goes out in
//! the order it came. The recording actor does not wait: it hands its sends to
//! the gate and handles its next message, so one sync serves every decision
//! made while the disk was busy.
//!
//! Order is kept across senders: once anything is held, everything after it is
//! held behind it, so two messages between one pair of actors never swap (the
//! per-pair FIFO every executor keeps). It never looks into what it holds.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::file::{LogFile, Release};

/// Holds `T`s back until their lines are durable, then hands each to `deliver`.
pub struct Gate<T> {
    log: LogFile,
    held: Mutex<VecDeque<(u64, T)>>,
    deliver: Box<dyn Fn(T) + Send + Sync>,
}

impl<T: Send + 'static> Gate<T> {
    /// A gate on `log` that hands what it lets through to `deliver` (called with
    /// the gate locked, so deliveries keep their order).
    pub fn new(log: &LogFile, deliver: impl Fn(T) + Send + Sync + 'static) -> Arc<Gate<T>> {
        let gate = Arc::new(Gate {
            log: log.clone(),
            held: Mutex::new(VecDeque::new()),
            deliver: Box::new(deliver),
        });
        let weak: std::sync::Weak<Gate<T>> = Arc::downgrade(&gate);
        log.add_gate(weak);
        gate
    }

    /// Sends `item` once every line appended so far is durable: at once when it
    /// already is and nothing is held, else after what is held.
    pub fn pass(&self, item: T) {
        let mut held = self.held.lock().expect("gate poisoned");
        let horizon = self.log.appended();
        if held.is_empty() && horizon <= self.log.durable() {
            (self.deliver)(item);
        } else {
            held.push_back((horizon, item));
        }
    }

    /// How many items wait.
    pub fn held(&self) -> usize {
        self.held.lock().expect("gate poisoned").len()
    }

    /// Drops everything held (the process is lost: nothing it decided leaves).
    pub fn discard(&self) -> usize {
        let mut held = self.held.lock().expect("gate poisoned");
        let n = held.len();
        held.clear();
        n
    }
}

impl<T: Send + 'static> Release for Gate<T> {
    fn release(&self, durable: u64) {
        let mut held = self.held.lock().expect("gate poisoned");
        while held.front().is_some_and(|(horizon, _)| *horizon <= durable) {
            let (_, item) = held.pop_front().expect("a front item");
            (self.deliver)(item);
        }
    }
}
