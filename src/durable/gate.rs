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
    horizon: Option<Horizon>,
}

/// The `seq` of the last line recorded so far, appended to the file or not yet.
pub type Horizon = Box<dyn Fn() -> u64 + Send + Sync>;

impl<T: Send + 'static> Gate<T> {
    /// A gate on `log` that hands what it lets through to `deliver` (called with
    /// the gate locked, so deliveries keep their order); what passes waits for
    /// the lines appended to the file so far.
    pub fn new(log: &LogFile, deliver: impl Fn(T) + Send + Sync + 'static) -> Arc<Gate<T>> {
        Gate::with_horizon(log, None, deliver)
    }

    /// The same, what passes waiting for every line up to `horizon()` (given
    /// to lines still on their way to the file: a recorder off the sender's
    /// thread), or, with none, for the lines appended so far.
    pub fn with_horizon(
        log: &LogFile,
        horizon: Option<Horizon>,
        deliver: impl Fn(T) + Send + Sync + 'static,
    ) -> Arc<Gate<T>> {
        let gate = Arc::new(Gate {
            log: log.clone(),
            held: Mutex::new(VecDeque::new()),
            deliver: Box::new(deliver),
            horizon,
        });
        let weak: std::sync::Weak<Gate<T>> = Arc::downgrade(&gate);
        log.add_gate(weak);
        gate
    }

    /// Sends `item` once every line recorded so far is durable: at once when it
    /// already is and nothing is held, else after what is held.
    pub fn pass(&self, item: T) {
        let mut held = self.held.lock().expect("gate poisoned");
        let horizon = match &self.horizon {
            Some(horizon) => horizon(),
            None => self.log.appended(),
        };
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::durable::SyncPolicy;
    use crate::log::LogHeader;

    /// A log under group commit, in a folder of its own removed on drop.
    fn group_log() -> (LogFile, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gate.jsonl");
        let window = Duration::from_secs(3600);
        let log = LogFile::create(&path, &LogHeader::real("t", 1), SyncPolicy::Group { window }).unwrap();
        (log, dir)
    }

    /// A send behind a line given its `seq` but not yet appended waits for that
    /// line to be durable, not for what the file holds so far; what passes
    /// after it waits behind it.
    #[test]
    fn a_send_waits_for_the_horizon_not_the_file() {
        let (log, _dir) = group_log();
        let horizon = Arc::new(AtomicU64::new(0));
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let gate = {
            let (horizon, delivered) = (horizon.clone(), delivered.clone());
            Gate::with_horizon(
                &log,
                Some(Box::new(move || horizon.load(Ordering::SeqCst))),
                move |item: u32| delivered.lock().unwrap().push(item),
            )
        };
        gate.pass(1);
        assert_eq!(*delivered.lock().unwrap(), [1], "nothing recorded: at once");
        horizon.store(1, Ordering::SeqCst);
        gate.pass(2);
        horizon.store(2, Ordering::SeqCst);
        gate.pass(3);
        assert_eq!(gate.held(), 2, "line 1 is queued, not on the file yet");
        log.sync().unwrap();
        assert_eq!(gate.held(), 2, "a sync of an empty file releases nothing");
        let mut sink = log.appender();
        sink.append(1, b"{}\n").unwrap();
        log.sync().unwrap();
        assert_eq!(
            *delivered.lock().unwrap(),
            [1, 2],
            "line 1 durable: 2 goes, 3 waits"
        );
        sink.append(2, b"{}\n").unwrap();
        log.sync().unwrap();
        assert_eq!(*delivered.lock().unwrap(), [1, 2, 3]);
        drop((gate, sink, log));
    }
}
