//! Where a simulated run's events are recorded: in place, after each effect, or
//! through a journal (`crate::journal`) whose thread does the recorder's work (serialising and
//! hashing each line, folding the projection, the judge and the taps watching)
//! beside the world, on another core.
//!
//! A run starts in place and moves to a journal once it has recorded
//! [`RunOptions::journal_after`](crate::sim::RunOptions::journal_after) events:
//! a small run (a sweep's, a test's) never pays for a thread, and a large one
//! gives the second core a third of its work or more. The log, its hashes, the
//! projection and what every observer sees are the same either way: the
//! journal records in the order events were queued, and everything that reads
//! the recorder during the run (a restart's plan, the run's end) waits for
//! what is queued first. What differs is only a panic while recording (an
//! observer's): in place it unwinds the delivery that recorded; through the
//! journal the run ends as crashed, with the same message, at the first
//! delivery after the world next hands a batch of events over (or at its end),
//! and nothing the world did after the event that panicked is recorded.
//!
//! Through a journal the world hands its events over in batches (of 128 events),
//! and counts them itself for the limit on events: the run stops at the same
//! event as in place, and everything that reads the recorder takes the batch
//! first.

use std::ops::Deref;
use std::sync::MutexGuard;

use crate::event::EventKind;
use crate::journal::Journal;
use crate::record::Recorder;

/// The default of [`RunOptions::journal_after`](crate::sim::RunOptions::journal_after):
/// a run that records this many events goes on through a journal. Recording
/// that many in place costs milliseconds; a thread costs tens of microseconds.
pub const JOURNAL_AFTER: u64 = 4096;

/// How many events may wait in the journal's queue before the world waits for
/// the journal's thread to take them: the world never runs far ahead of its
/// recorder (at most this many queued and about as many being recorded), so a
/// slow observer (a timeline written to a slow disk) bounds what is in flight
/// instead of holding every event.
const BACKLOG_MAX: usize = 1 << 14;

/// How many events the world gathers before it hands them to the journal,
/// under one lock of its queue. An event a lock was the largest growth of the
/// world's own recording at 10^5 agents: the journal's thread takes the same
/// lock to take its batches, so nearly every event met the lock's cache line
/// on the other core (BENCHMARKS.md, issue #19, thirty-ninth session).
const BATCH: usize = 128;

/// A run's recorder, in place or through a journal.
pub struct RunRecorder {
    state: State,
    /// Events after which to move to a journal; `None`: never.
    journal_after: Option<u64>,
}

enum State {
    /// Boxed: a recorder is a few hundred bytes of hash state, a journal a
    /// pointer and a handle.
    InPlace(Box<Recorder>),
    Journaled(Box<Journaled>),
    /// Only while moving from one to the other.
    Moving,
}

/// A journal, and the events the world gathered for it since it last handed
/// some over.
struct Journaled {
    journal: Journal,
    /// Events not handed over yet, in the order recorded.
    batch: Vec<(f64, EventKind)>,
    /// Events recorded so far, the recorder's before the move and the batch's
    /// included, and the most it records: past it, the run is over its limit
    /// on events, as the recorder would find when it records them (the world
    /// is its one writer). Counted here so that the world's check after each
    /// delivery reads nothing the journal's thread writes.
    count: u64,
    events_max: u64,
    /// The journal's thread failed (seen at a hand-over).
    failed: bool,
}

impl Journaled {
    fn new(recorder: Recorder) -> Journaled {
        // Once over its limit, a recorder stays over it: one more is as many.
        let count = recorder.len() + u64::from(recorder.overflowed());
        Journaled {
            events_max: recorder.events_max(),
            count,
            journal: Journal::new(recorder),
            batch: Vec::with_capacity(BATCH),
            failed: false,
        }
    }

    fn record(&mut self, t: f64, kind: EventKind) {
        self.count = self.count.saturating_add(1);
        self.batch.push((t, kind));
        if self.batch.len() >= BATCH {
            self.hand_over();
        }
    }

    /// Hands the batch to the journal (and waits for the journal's thread to
    /// take what is queued if too much is).
    fn hand_over(&mut self) {
        if self.journal.record_batch(&mut self.batch) > BACKLOG_MAX {
            self.journal.wait_for_room(BACKLOG_MAX);
        }
        self.failed = self.failed || self.journal.failure().is_some();
    }
}

/// The recorder to read, with everything queued recorded.
pub enum Reading<'a> {
    /// A recorder that records in place.
    InPlace(&'a Recorder),
    /// A journal's recorder, locked, what was queued recorded.
    Journaled(MutexGuard<'a, Recorder>),
}

impl Deref for Reading<'_> {
    type Target = Recorder;

    fn deref(&self) -> &Recorder {
        match self {
            Reading::InPlace(recorder) => recorder,
            Reading::Journaled(guard) => guard,
        }
    }
}

impl RunRecorder {
    /// `recorder`, moved to a journal once it holds `journal_after` events.
    pub fn new(recorder: Recorder, journal_after: Option<u64>) -> RunRecorder {
        let mut run = RunRecorder {
            state: State::InPlace(Box::new(recorder)),
            journal_after,
        };
        run.move_when_due();
        run
    }

    /// Records `kind` at `t` seconds, after everything recorded before.
    pub fn record(&mut self, t: f64, kind: EventKind) {
        match &mut self.state {
            State::InPlace(recorder) => {
                recorder.record(t, kind);
                self.move_when_due();
            }
            State::Journaled(journaled) => journaled.record(t, kind),
            State::Moving => unreachable!("a recorder between states records nothing"),
        }
    }

    /// Whether the limit on events was reached. Panics with the message of a
    /// panic on the journal's thread, so the run ends as crashed with it.
    pub fn overflowed(&self) -> bool {
        match &self.state {
            State::InPlace(recorder) => recorder.overflowed(),
            State::Journaled(journaled) => {
                if journaled.failed
                    && let Some(message) = journaled.journal.failure()
                {
                    panic!("{message}");
                }
                journaled.count > journaled.events_max
            }
            State::Moving => unreachable!("a recorder between states is never read"),
        }
    }

    /// The recorder, with every queued event recorded (a restart's plan reads
    /// its projection).
    pub fn read(&mut self) -> Reading<'_> {
        self.hand_over();
        match &self.state {
            State::InPlace(recorder) => Reading::InPlace(recorder),
            State::Journaled(journaled) => Reading::Journaled(journaled.journal.lock()),
            State::Moving => unreachable!("a recorder between states is never read"),
        }
    }

    /// Records the run's end at `t` seconds, for `reason`; after a panic while
    /// recording through the journal, at the time of the event that panicked,
    /// where the run ended in place (the world went on a little since).
    pub fn end(&mut self, t: f64, reason: &str) {
        self.hand_over();
        match &mut self.state {
            State::InPlace(recorder) => recorder.end(t, reason),
            State::Journaled(journaled) => {
                let journal = &journaled.journal;
                let mut recorder = journal.lock();
                let t = match journal.failure() {
                    Some(_) => recorder.last_t(),
                    None => t,
                };
                recorder.end(t, reason);
            }
            State::Moving => unreachable!("a recorder between states records nothing"),
        }
    }

    /// The recorder back, everything recorded and the journal's thread ended.
    pub fn into_recorder(mut self) -> Recorder {
        self.hand_over();
        match self.state {
            State::InPlace(recorder) => *recorder,
            State::Journaled(journaled) => journaled.journal.into_recorder(),
            State::Moving => unreachable!("a recorder between states is never taken"),
        }
    }

    /// The message of a panic while recording through the journal, once
    /// everything queued was recorded (in place a panic unwinds the delivery
    /// that recorded: there is none to report after the run).
    pub fn failure(&mut self) -> Option<String> {
        self.hand_over();
        match &self.state {
            State::Journaled(journaled) => {
                drop(journaled.journal.lock());
                journaled.journal.failure()
            }
            _ => None,
        }
    }

    /// Hands what the world gathered to the journal, when it records through
    /// one: before anything reads the recorder, or ends it.
    fn hand_over(&mut self) {
        if let State::Journaled(journaled) = &mut self.state {
            journaled.hand_over();
        }
    }

    fn move_when_due(&mut self) {
        let due = match (&self.state, self.journal_after) {
            (State::InPlace(recorder), Some(after)) => recorder.len() >= after,
            _ => false,
        };
        if !due {
            return;
        }
        if let State::InPlace(recorder) = std::mem::replace(&mut self.state, State::Moving) {
            self.state = State::Journaled(Box::new(Journaled::new(*recorder)));
        }
    }
}
