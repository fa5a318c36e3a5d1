//! The runtime's recorder as every actor reaches it (issue #23). With no log
//! file, recording is off the actors' path: a handler's events go into a queue
//! under a short lock, in the order handlers record them, and a thread of the
//! journal's own folds and keeps them, in that order (serialising and hashing
//! each first when its recorder computes a hash: a library runtime's does only
//! when asked, [`crate::RuntimeConfig::hashes`]). Every
//! reader locks the recorder through [`Journal::lock`], which first records what
//! is queued, so what a reader sees is exactly what the recorder would hold had
//! each event been recorded in place. With a group-commit log file too: the journal gives
//! each event its `seq` as it is queued, and the write-ahead gate (SPEC §4.1)
//! holds a handler's sends until the log is durable up to the last `seq` given
//! ([`Journal::horizon`]), so nothing leaves before its lines are on disk while
//! the actors neither serialise nor write them. A log file under `every` or
//! `none` is written in place, under the lock, before the handler's sends go.
//!
//! The simulator records a large run through a journal too
//! ([`crate::sim::engine::recording`]): its world is one thread, so the
//! recorder's work (serialising and hashing each line, the projection, the
//! judge and the taps watching) runs beside it on the second core instead of
//! after each delivery. A panic on the journal's thread (an observer's) is
//! kept, not lost: [`Journal::failure`] gives its message, and from then on
//! nothing more is queued, so the log ends where recording in place would
//! have unwound.
//!
//! It never decides what is recorded or in what order: only where the work is
//! done.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::event::EventKind;
use crate::record::Recorder;

/// How long the journal's thread waits for more events after it caught up
/// before it sleeps until woken (a wake-up costs the recording actor a
/// syscall; a short linger saves one per event under load).
const LINGER: Duration = Duration::from_micros(200);

/// The recorder, and the queue in front of it when there is one.
pub(crate) struct Journal {
    core: Arc<Core>,
    /// The journal's thread, when it has one.
    thread: Option<JoinHandle<()>>,
    /// Recorder locks taken by an actor recording in place.
    locks: AtomicU64,
    /// Queue locks taken by an actor recording.
    pushes: AtomicU64,
}

struct Core {
    recorder: Mutex<Recorder>,
    queue: Option<Queue>,
    /// The journal's thread panicked recording (an observer did): nothing more
    /// is queued.
    broken: AtomicBool,
    /// That panic's message.
    failure: Mutex<Option<String>>,
}

struct Queue {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// Told when the journal's thread takes a batch while a recorder waits for
    /// room ([`Journal::wait_for_room`]), or when the journal breaks.
    taken: Condvar,
    /// The `seq` of the last event queued (what the recorder will give it;
    /// never past its limit on events). Written only under `pending`'s lock,
    /// read without it: the write-ahead gate asks for the horizon at each held
    /// send, and a lock there met the journal's thread at the queue's line
    /// once more a call.
    last: AtomicU64,
}

#[derive(Default)]
struct Pending {
    events: Vec<(f64, EventKind)>,
    /// An emptied batch, its room kept for the next one.
    spare: Vec<(f64, EventKind)>,
    /// The recorder's limit on events.
    limit: u64,
    /// The thread sleeps until woken.
    idle: bool,
    /// The journal is gone: the thread records what is left and ends.
    closed: bool,
    /// A recorder waits for the queue to shrink ([`Journal::wait_for_room`]).
    waiting: bool,
}

impl Journal {
    /// A journal of `recorder`: queued, with a thread of its own, unless the
    /// recorder writes a log file that makes each line durable as it is
    /// appended (`every`, `none`: recorded in place, a send passes the gate
    /// at once when its lines are durable, which a paused clock needs), or no
    /// thread can be started.
    pub(crate) fn new(recorder: Recorder) -> Journal {
        let queued = !recorder.has_sink() || recorder.has_deferred_sink();
        let last = recorder.len();
        let pending = Pending {
            limit: recorder.events_max(),
            ..Pending::default()
        };
        let core = Core::new(
            recorder,
            queued.then(|| Queue {
                last: AtomicU64::new(last),
                pending: Mutex::new(pending),
                wake: Condvar::new(),
                taken: Condvar::new(),
            }),
        );
        let (core, thread) = match queued {
            true => start_thread(core),
            false => (core, None),
        };
        Journal {
            core,
            thread,
            locks: AtomicU64::new(0),
            pushes: AtomicU64::new(0),
        }
    }

    /// The message of the panic that stopped recording through the journal
    /// (on its thread, or draining for a reader), if one did.
    pub(crate) fn failure(&self) -> Option<String> {
        if !self.core.broken.load(Ordering::Acquire) {
            return None;
        }
        self.core
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The recorder back, with every queued event recorded and the journal's
    /// thread ended.
    pub(crate) fn into_recorder(mut self) -> Recorder {
        drop(self.lock());
        self.close();
        if let Some(thread) = self.thread.take() {
            // Its panics are caught and kept (`failure`); a join error is none.
            let _ = thread.join();
        }
        let core = self.core.clone();
        drop(self);
        Arc::into_inner(core)
            .map(|core| core.recorder.into_inner().unwrap_or_else(|p| p.into_inner()))
            .expect("the journal's thread ended and nobody else holds it")
    }

    /// Tells the journal's thread to record what is left and end.
    fn close(&self) {
        if let Some(queue) = &self.core.queue {
            let mut pending = queue.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.closed = true;
            queue.wake.notify_one();
        }
    }

    /// Recorder locks and queue locks taken by actors recording, so far.
    pub(crate) fn path_counts(&self) -> (u64, u64) {
        (
            self.locks.load(Ordering::Relaxed),
            self.pushes.load(Ordering::Relaxed),
        )
    }

    /// The `seq` of the last event recorded or queued: what the write-ahead
    /// gate waits to be durable before a send recorded so far leaves. `None`
    /// for a journal that records in place (the log's last appended line is
    /// the horizon then).
    pub(crate) fn horizon(&self) -> Option<u64> {
        let queue = self.core.queue.as_ref()?;
        Some(queue.last.load(Ordering::Acquire))
    }

    /// The recorder, with every queued event recorded.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Recorder> {
        self.core.lock()
    }

    /// Records `events` at `t` seconds, in order, after everything recorded
    /// before: queued, or in place (the recorder locked once). Gives how many
    /// events wait in the queue now (0 in place), for a caller that bounds it.
    /// Once the journal's thread has failed, nothing more is queued.
    pub(crate) fn record(&self, t: f64, events: impl IntoIterator<Item = EventKind>) -> usize {
        let mut events = events.into_iter().peekable();
        if events.peek().is_none() {
            return 0;
        }
        match &self.core.queue {
            Some(queue) => self.enqueue(queue, |queued| queued.extend(events.map(|kind| (t, kind)))),
            None => {
                self.locks.fetch_add(1, Ordering::Relaxed);
                let mut recorder = self.lock();
                events.for_each(|kind| recorder.record(t, kind));
                0
            }
        }
    }

    /// Records `batch`'s events, each at its own time, in order, after
    /// everything recorded before, and leaves `batch` empty (its room kept):
    /// as [`Journal::record`] of each in turn, under one lock. Gives how many
    /// events wait in the queue now (0 in place).
    pub(crate) fn record_batch(&self, batch: &mut Vec<(f64, EventKind)>) -> usize {
        if batch.is_empty() {
            return 0;
        }
        match &self.core.queue {
            Some(queue) => {
                let waiting = self.enqueue(queue, |queued| queued.append(batch));
                // Left behind only once the journal's thread failed: nothing
                // more is recorded then.
                batch.clear();
                waiting
            }
            None => {
                self.locks.fetch_add(1, Ordering::Relaxed);
                let mut recorder = self.lock();
                batch.drain(..).for_each(|(t, kind)| recorder.record(t, kind));
                0
            }
        }
    }

    /// Waits until at most `room` events wait in the queue: until the journal's
    /// thread takes what is queued to record it (or breaks). A recorder that
    /// runs ahead of the thread waits for it this way, so the recording stays
    /// on the thread's core: taking the queue over and recording it in place
    /// left the thread idle meanwhile, and bounded the queue no better
    /// (BENCHMARKS.md, issue #19, forty-ninth session). Returns at once
    /// without a queue.
    pub(crate) fn wait_for_room(&self, room: usize) {
        let Some(queue) = &self.core.queue else {
            return;
        };
        let mut pending = queue.pending.lock().expect("journal poisoned");
        while pending.events.len() > room && !pending.closed && !self.core.broken.load(Ordering::Acquire) {
            pending.waiting = true;
            pending = queue.taken.wait(pending).expect("journal poisoned");
        }
    }

    /// Queues what `push` adds to the queue's events, under its lock; how many
    /// events wait now. Once the journal's thread has failed, nothing more is
    /// queued.
    fn enqueue(&self, queue: &Queue, push: impl FnOnce(&mut Vec<(f64, EventKind)>)) -> usize {
        self.pushes.fetch_add(1, Ordering::Relaxed);
        let mut pending = queue.pending.lock().expect("journal poisoned");
        // Read under the queue's lock: `fail` sets it before it clears
        // the queue under the same lock, so nothing queued after the
        // event that panicked outlives the clearing.
        if self.core.broken.load(Ordering::Acquire) {
            return 0;
        }
        let before = pending.events.len();
        push(&mut pending.events);
        let queued = (pending.events.len() - before) as u64;
        let given = queue.last.load(Ordering::Relaxed).saturating_add(queued);
        queue.last.store(given.min(pending.limit), Ordering::Release);
        if pending.idle {
            pending.idle = false;
            queue.wake.notify_one();
        }
        pending.events.len()
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

impl Core {
    fn new(recorder: Recorder, queue: Option<Queue>) -> Arc<Core> {
        Arc::new(Core {
            recorder: Mutex::new(recorder),
            queue,
            broken: AtomicBool::new(false),
            failure: Mutex::new(None),
        })
    }

    /// The journal's thread panicked with `message`: keep it, and drop what is
    /// queued behind the event that panicked (recorded in place, the run would
    /// have unwound there).
    fn fail(&self, message: String) {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(message);
        self.broken.store(true, Ordering::Release);
        if let Some(queue) = &self.queue {
            let mut pending = queue.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.events.clear();
            pending.waiting = false;
            queue.taken.notify_all();
        }
    }
    /// The recorder, with what is queued recorded: a panic recording it (an
    /// observer's) is kept as the journal's failure, as on its thread.
    fn lock(&self) -> MutexGuard<'_, Recorder> {
        let mut recorder = self.recorder.lock().expect("recorder poisoned");
        if self.queue.is_some() && !self.broken.load(Ordering::Acquire) {
            self.drain_caught(&mut recorder);
        }
        recorder
    }

    /// [`Core::drain`], a panic kept as the journal's failure.
    fn drain_caught(&self, recorder: &mut Recorder) -> Option<usize> {
        match catch_unwind(AssertUnwindSafe(|| self.drain(recorder))) {
            Ok(recorded) => Some(recorded),
            Err(panic) => {
                self.fail(crate::panics::panic_message(panic.as_ref()));
                None
            }
        }
    }

    /// Records what is queued (the recorder locked by the caller, so two
    /// drains never interleave); how many events that was.
    fn drain(&self, recorder: &mut Recorder) -> usize {
        let Some(queue) = &self.queue else {
            return 0;
        };
        let mut batch = {
            let mut pending = queue.pending.lock().expect("journal poisoned");
            let spare = std::mem::take(&mut pending.spare);
            if std::mem::take(&mut pending.waiting) {
                queue.taken.notify_all();
            }
            std::mem::replace(&mut pending.events, spare)
        };
        let n = batch.len();
        for (t, kind) in batch.drain(..) {
            recorder.record(t, kind);
        }
        // The spare keeps at most `TRIM_MIN` slots: a burst's batch gives its
        // room back once recorded, rather than at the next, smaller batch (10^6
        // questions at one instant left ~120 B a question in it). The queue
        // grows again by doubling at the next burst: O(1) amortised per event.
        batch.shrink_to(crate::trim::TRIM_MIN);
        let mut pending = queue.pending.lock().expect("journal poisoned");
        if pending.spare.capacity() < batch.capacity() {
            pending.spare = batch;
        }
        if pending.events.is_empty() {
            // Caught up: the recorder's own count (it may have recorded in
            // place since, as its end does past the limit, or been replaced by
            // a recovery's).
            queue.last.store(recorder.len(), Ordering::Release);
            pending.limit = recorder.events_max();
        }
        n
    }
}

/// Starts the journal's thread; without one (the system refused a thread),
/// a journal that records in place.
fn start_thread(core: Arc<Core>) -> (Arc<Core>, Option<JoinHandle<()>>) {
    let for_thread = core.clone();
    let started = std::thread::Builder::new()
        .name("asksim-journal".into())
        .spawn(move || run(&for_thread));
    match started {
        Ok(thread) => (core, Some(thread)),
        Err(_) => {
            let recorder = Arc::into_inner(core)
                .map(|core| core.recorder.into_inner().expect("recorder poisoned"))
                .expect("the thread that was not started holds no journal");
            (Core::new(recorder, None), None)
        }
    }
}

/// The journal's thread: records what is queued until the journal is gone, or
/// until recording panics (the panic is kept: [`Journal::failure`]).
fn run(core: &Core) {
    let queue = core.queue.as_ref().expect("a queued journal");
    loop {
        // The lock is taken outside the unwind boundary, so a panic while
        // recording leaves it unpoisoned for the readers after it.
        let mut recorder = core.recorder.lock().expect("recorder poisoned");
        let drained = match core.broken.load(Ordering::Acquire) {
            true => None,
            false => core.drain_caught(&mut recorder),
        };
        drop(recorder);
        let Some(recorded) = drained else {
            return;
        };
        let mut pending = queue.pending.lock().expect("journal poisoned");
        if !pending.events.is_empty() {
            continue;
        }
        if pending.closed {
            return;
        }
        if recorded > 0 {
            pending = queue
                .wake
                .wait_timeout(pending, LINGER)
                .expect("journal poisoned")
                .0;
            if !pending.events.is_empty() || pending.closed {
                continue;
            }
        }
        pending.idle = true;
        let _woken = queue
            .wake
            .wait_while(pending, |p| p.idle && !p.closed)
            .expect("journal poisoned");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogHeader, LogSink};

    fn stop(agent: String) -> EventKind {
        EventKind::Stop { agent: agent.into() }
    }

    /// A queued journal whose recorder keeps every event, shared.
    fn kept_journal() -> Arc<Journal> {
        Arc::new(Journal::new(Recorder::new(
            &LogHeader::real("t", 1),
            u64::MAX,
            true,
        )))
    }

    /// Every event recorded from two threads is there when read, each thread's
    /// in its order, the same as recorded in place would give.
    #[test]
    fn a_reader_sees_every_queued_event_in_order() {
        let journal = kept_journal();
        assert!(journal.core.queue.is_some());
        let threads: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|name| {
                let journal = journal.clone();
                std::thread::spawn(move || {
                    for i in 0..500 {
                        journal.record(i as f64, [stop(format!("{name}{i}"))]);
                    }
                })
            })
            .collect();
        threads
            .into_iter()
            .for_each(|t| t.join().expect("a recording thread"));
        let recorder = journal.lock();
        assert_eq!(recorder.len(), 1000);
        for name in ["a", "b"] {
            let mine: Vec<String> = recorder
                .events()
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Stop { agent } if agent.starts_with(name) => Some(agent.to_string()),
                    _ => None,
                })
                .collect();
            let expected: Vec<String> = (0..500).map(|i| format!("{name}{i}")).collect();
            assert_eq!(mine, expected);
        }
    }

    /// A burst's batch does not stay the journal's spare: once it is recorded
    /// neither buffer holds the burst's room, nor after small batches.
    #[test]
    fn a_burst_leaves_no_buffer_at_its_size() {
        let journal = Journal::new(Recorder::new(&LogHeader::real("t", 1), u64::MAX, false));
        let burst = 4 * crate::trim::TRIM_MIN;
        let room = |journal: &Journal| {
            let queue = journal.core.queue.as_ref().expect("a queued journal");
            let pending = queue.pending.lock().unwrap();
            pending.events.capacity().max(pending.spare.capacity())
        };
        journal.record(0.0, (0..burst).map(|i| stop(format!("a{i}"))));
        drop(journal.lock());
        let after_burst = room(&journal);
        assert!(
            after_burst <= crate::trim::TRIM_MIN,
            "{after_burst} slots kept once a burst of {burst} was recorded"
        );
        for round in 0..4 {
            journal.record(1.0, (0..10).map(|i| stop(format!("b{round}-{i}"))));
            drop(journal.lock());
        }
        let later = room(&journal);
        assert!(
            later <= crate::trim::TRIM_MIN,
            "{later} slots kept after a burst of {burst}"
        );
    }

    /// A recorder that runs ahead waits until the journal's thread has taken
    /// what is queued, then finds at most the room it asked for queued; every
    /// event is recorded, in order. (Were the thread never to tell it, the
    /// wait would not end: the guard fails the test instead of hanging.)
    #[test]
    fn a_recorder_waits_for_the_thread_to_take_the_queue() {
        let journal = kept_journal();
        let (done, finished) = std::sync::mpsc::channel();
        let recording = journal.clone();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            for round in 0..3 {
                let mut batch: Vec<(f64, EventKind)> = (0..5_000)
                    .map(|i| (round as f64, stop(format!("r{round}-{i}"))))
                    .collect();
                recording.record_batch(&mut batch);
                recording.wait_for_room(100);
                seen.push(queued(&recording));
            }
            done.send(seen).expect("the test waits");
        });
        let seen = finished
            .recv_timeout(Duration::from_secs(60))
            .expect("each wait for room ends once the thread takes the queue");
        assert!(seen.iter().all(|&n| n <= 100), "queued after each wait: {seen:?}");
        let recorder = journal.lock();
        let agents: Vec<String> = (recorder.events().iter())
            .map(|e| match &e.kind {
                EventKind::Stop { agent } => agent.to_string(),
                other => panic!("only stops were recorded: {other:?}"),
            })
            .collect();
        let expected: Vec<String> = (0..3)
            .flat_map(|round| (0..5_000).map(move |i| format!("r{round}-{i}")))
            .collect();
        assert_eq!(agents.len(), expected.len());
        let first_off = agents.iter().zip(&expected).position(|(a, e)| a != e);
        assert_eq!(first_off, None, "every event, in the order queued");
    }

    /// How many events wait in `journal`'s queue.
    fn queued(journal: &Journal) -> usize {
        let queue = journal.core.queue.as_ref().expect("a queued journal");
        queue.pending.lock().unwrap().events.len()
    }

    /// A deferred sink whose first line fails the journal's thread once it is
    /// told to go on.
    struct FailsWhenTold(Mutex<std::sync::mpsc::Receiver<()>>);

    impl LogSink for FailsWhenTold {
        fn append(&mut self, _: u64, _: &[u8]) -> std::io::Result<()> {
            let _ = self.0.lock().unwrap().recv();
            panic!("the sink fails");
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn deferred(&self) -> bool {
            true
        }
    }

    /// A recorder waiting for room when the journal's thread fails is let go
    /// (nothing queued will be taken any more), and the failure is kept.
    #[test]
    fn a_wait_for_room_ends_when_the_journal_breaks() {
        let (go, told) = std::sync::mpsc::channel();
        let mut recorder = Recorder::new(&LogHeader::real("t", 1), u64::MAX, false);
        recorder.sink_to(Box::new(FailsWhenTold(Mutex::new(told))));
        let journal = Arc::new(Journal::new(recorder));
        let batch = |name: &str| -> Vec<(f64, EventKind)> {
            (0..5_000).map(|i| (0.0, stop(format!("{name}{i}")))).collect()
        };
        // The thread takes the first batch and stops at its first line.
        journal.record_batch(&mut batch("a"));
        journal.wait_for_room(0);
        journal.record_batch(&mut batch("b"));
        assert_eq!(queued(&journal), 5_000);
        let (done, finished) = std::sync::mpsc::channel();
        let waiting = journal.clone();
        std::thread::spawn(move || {
            waiting.wait_for_room(0);
            done.send(()).expect("the test waits");
        });
        let queue = journal.core.queue.as_ref().expect("a queued journal");
        while !queue.pending.lock().unwrap().waiting {
            std::thread::yield_now();
        }
        go.send(()).expect("the sink waits");
        finished
            .recv_timeout(Duration::from_secs(60))
            .expect("the wait ends once the journal breaks");
        assert!(
            journal.failure().is_some_and(|m| m.contains("the sink fails")),
            "{:?}",
            journal.failure()
        );
    }

    /// A sink that keeps the last `seq` appended; `.1`: whether it is deferred.
    struct Lines(Arc<Mutex<u64>>, bool);

    impl LogSink for Lines {
        fn append(&mut self, seq: u64, _: &[u8]) -> std::io::Result<()> {
            *self.0.lock().unwrap() = seq;
            Ok(())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn deferred(&self) -> bool {
            self.1
        }
    }

    fn journal_to(events_max: u64, deferred: bool) -> (Journal, Arc<Mutex<u64>>) {
        let mut recorder = Recorder::new(&LogHeader::real("t", 1), events_max, false);
        let appended = Arc::new(Mutex::new(0));
        recorder.sink_to(Box::new(Lines(appended.clone(), deferred)));
        (Journal::new(recorder), appended)
    }

    /// With a log file that is durable as it is appended, each event is
    /// written before `record` returns (the gate reads the file's last line).
    #[test]
    fn with_an_undeferred_log_file_an_event_is_written_before_record_returns() {
        let (journal, appended) = journal_to(u64::MAX, false);
        assert!(journal.core.queue.is_none());
        assert_eq!(journal.horizon(), None);
        for seq in 1..=3 {
            journal.record(0.0, [stop("root".into())]);
            assert_eq!(*appended.lock().unwrap(), seq);
        }
    }

    /// With a group-commit log file an event's `seq` is the horizon as soon as
    /// `record` returns, before it is written; a reader finds it written; the
    /// limit on events caps the horizon (a `seq` never given would hold the
    /// gate for good).
    #[test]
    fn with_a_deferred_log_file_the_horizon_counts_what_is_queued() {
        let (journal, appended) = journal_to(5, true);
        assert_eq!(journal.horizon(), Some(0));
        for seq in 1..=3 {
            journal.record(0.0, [stop("root".into())]);
            assert_eq!(journal.horizon(), Some(seq));
        }
        drop(journal.lock());
        assert_eq!(*appended.lock().unwrap(), 3);
        journal.record(1.0, (0..4).map(|i| stop(format!("a{i}"))));
        assert_eq!(journal.horizon(), Some(5));
        assert!(journal.lock().overflowed());
        assert_eq!(*appended.lock().unwrap(), 5);
        assert_eq!(journal.horizon(), Some(5));
    }
}
