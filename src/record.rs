//! The recorder: stamps each event with its `seq` and time and hands it on as it
//! happens: to the trace hash (SHA-256 of the log's bytes), to the order hash (the
//! same lines without `seq` and `t`: equal for two runs exactly when they did the
//! same things in the same order), to the projection, to a [`LogSink`] (the
//! durable log file) when there is one, to an [`Observer`] (the simulator's streaming checker) when one
//! watches, and to a kept list when a caller wants every event.
//!
//! It is the one place events are written; executors own one per run (the
//! simulator's world) or share one behind a lock (the actor runtime). A log read
//! back after a crash goes on in a recorder that restores its events first
//! ([`Recorder::continuing`], [`Recorder::restore`]). It never syncs or decides
//! durability: that is the sink's.

use sha2::{Digest, Sha256};

use crate::event::{Event, EventKind};
use crate::log::{LogHeader, LogSink};
use crate::projection::Projection;

/// Watches every event as it is recorded: the simulator checks its invariants and
/// counts race coverage this way, in one pass, without keeping the events.
pub trait Observer: Send {
    /// Takes one more event.
    fn event(&mut self, event: &Event);
    /// The observer itself, to be taken back at the end of the run.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}

/// What a finished recording gives.
#[derive(Clone, Debug)]
pub struct Recording {
    /// SHA-256 of the log (header and events), hex.
    pub trace_hash: String,
    /// SHA-256 of the event lines without `seq` and `t`, hex.
    pub order_hash: String,
    /// SHA-256 of the event lines (no header, so no seed), hex: equal for two
    /// runs exactly when they did the same things at the same times.
    pub timing_hash: String,
    /// Every event, when they were kept.
    pub events: Vec<Event>,
    /// Events recorded.
    pub count: u64,
    /// The projection folded from them.
    pub projection: Projection,
    /// The time of the last event.
    pub last_t: f64,
    /// Whether the limit on events was reached (later events were not recorded).
    pub overflowed: bool,
}

/// The run's recorder.
pub struct Recorder {
    seq: u64,
    events_max: u64,
    overflowed: bool,
    last_t: f64,
    line: Vec<u8>,
    trace: Sha256,
    order: Sha256,
    timing: Sha256,
    projection: Projection,
    keep: Option<Vec<Event>>,
    observer: Option<Box<dyn Observer>>,
    file: Option<Box<dyn LogSink>>,
    file_error: Option<std::io::Error>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder for a log with `header`, recording at most `events_max` events;
    /// `keep` keeps every event in memory.
    pub fn new(header: &LogHeader, events_max: u64, keep: bool) -> Recorder {
        let mut line = serde_json::to_vec(header).expect("a header serialises");
        line.push(b'\n');
        Recorder::continuing(&line, events_max, keep)
    }

    /// A recorder that goes on with a log read back from a file: `header_line`
    /// is that log's first line as the file holds it (newline included); the
    /// events already there are handed in with [`Recorder::restore`].
    pub fn continuing(header_line: &[u8], events_max: u64, keep: bool) -> Recorder {
        let mut trace = Sha256::new();
        trace.update(header_line);
        Recorder {
            seq: 0,
            events_max,
            overflowed: false,
            last_t: 0.0,
            line: Vec::new(),
            trace,
            order: Sha256::new(),
            timing: Sha256::new(),
            projection: Projection::default(),
            keep: keep.then(Vec::new),
            observer: None,
            file: None,
            file_error: None,
        }
    }

    /// Hands every event line from now on to `sink`, which holds the header
    /// (and whatever came before) already: a durable log file.
    pub fn sink_to(&mut self, sink: Box<dyn LogSink>) {
        self.file = Some(sink);
    }

    /// Whether event lines go to a sink (a durable log file).
    pub fn has_sink(&self) -> bool {
        self.file.is_some()
    }

    /// Whether they go to a sink that makes them durable later than they are
    /// appended (group commit).
    pub fn has_deferred_sink(&self) -> bool {
        self.file.as_ref().is_some_and(|sink| sink.deferred())
    }

    /// Takes back an event the log already holds (read back from its file, as
    /// `line`): it counts, hashes and folds as if recorded now, and is not
    /// written again. Events must come in `seq` order, before any new one.
    pub fn restore(&mut self, event: Event, line: &[u8]) {
        assert_eq!(event.seq, self.seq + 1, "restored events come in seq order");
        self.seq = event.seq;
        self.absorb(event, line);
    }

    /// Starts from a projection snapshot of the events up to `seq` (a compacted
    /// log): they are not kept, hashed or observed, only their folded state.
    pub fn restore_snapshot(&mut self, projection: Projection, t: f64) {
        assert_eq!(self.seq, 0, "a snapshot comes before every event");
        self.seq = projection.seq;
        self.last_t = t;
        self.projection = projection;
    }

    /// Hands every event to `observer` too: those kept so far (a log read back
    /// and resumed), then each one as it is recorded.
    pub fn observe(&mut self, mut observer: Box<dyn Observer>) {
        for event in self.events() {
            observer.event(event);
        }
        self.observer = Some(observer);
    }

    /// Takes the observer back.
    pub fn take_observer(&mut self) -> Option<Box<dyn Observer>> {
        self.observer.take()
    }

    /// Appends an event at `t` seconds. Past the limit, nothing more is recorded
    /// and [`Recorder::overflowed`] turns true.
    pub fn record(&mut self, t: f64, kind: EventKind) {
        tracing::debug!(target: "asksim::event", ?kind);
        if self.seq >= self.events_max {
            self.overflowed = true;
            return;
        }
        self.seq += 1;
        let event = Event {
            seq: self.seq,
            t,
            kind,
        };
        self.line.clear();
        serde_json::to_writer(&mut self.line, &event).expect("an event serialises");
        self.line.push(b'\n');
        let line = std::mem::take(&mut self.line);
        if let Some(file) = &mut self.file
            && let Err(error) = file.append(self.seq, &line)
        {
            self.file_error = Some(error);
            self.file = None;
        }
        self.absorb(event, &line);
        self.line = line;
    }

    /// Hashes `line` (the event's line in the log) and folds, observes and keeps
    /// `event`: what every event goes through, recorded now or restored.
    fn absorb(&mut self, event: Event, line: &[u8]) {
        self.trace.update(line);
        self.timing.update(line);
        self.order.update(b"{");
        self.order.update(without_seq_and_t(line));
        self.last_t = event.t;
        self.projection.apply(&event);
        if let Some(observer) = &mut self.observer {
            observer.event(&event);
        }
        if let Some(keep) = &mut self.keep {
            keep.push(event);
        }
    }

    /// Records the run's end at `t` seconds, `reason` saying why (SPEC §4: the
    /// log of a run that ended says so). It is recorded past the limit on events
    /// too: a log that hit the limit still ended.
    pub fn end(&mut self, t: f64, reason: &str) {
        let events_max = std::mem::replace(&mut self.events_max, u64::MAX);
        self.record(
            t,
            EventKind::End {
                reason: reason.to_owned(),
            },
        );
        self.events_max = events_max;
    }

    /// Whether the limit on events was reached.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Events recorded so far.
    pub fn len(&self) -> u64 {
        self.seq
    }

    /// The most events it records (past it, [`Recorder::record`] records none).
    pub fn events_max(&self) -> u64 {
        self.events_max
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.seq == 0
    }

    /// The time of the last event, or 0.
    pub fn last_t(&self) -> f64 {
        self.last_t
    }

    /// The projection of the events so far.
    pub fn projection(&self) -> &Projection {
        &self.projection
    }

    /// The events so far, when they are kept.
    pub fn events(&self) -> &[Event] {
        self.keep.as_deref().unwrap_or(&[])
    }

    /// Moves the kept events out.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.keep.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Writes out the log file (as durable as its sink promises); its first error.
    pub fn flush(&mut self) -> std::io::Result<()> {
        match (self.file_error.take(), self.file.as_mut()) {
            (Some(error), _) => Err(error),
            (None, Some(file)) => file.flush(),
            (None, None) => Ok(()),
        }
    }

    /// Ends the recording; flushes the log file, whose first error is returned.
    pub fn finish(mut self) -> (Recording, std::io::Result<()>) {
        let written = self.flush();
        let hex = |digest: &[u8]| digest.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let recording = Recording {
            trace_hash: hex(&self.trace.finalize()),
            order_hash: hex(&self.order.finalize()),
            timing_hash: hex(&self.timing.finalize()),
            events: self.keep.unwrap_or_default(),
            count: self.seq,
            projection: self.projection,
            last_t: self.last_t,
            overflowed: self.overflowed,
        };
        (recording, written)
    }
}

/// The event line without its leading `{"seq":N,"t":T,`: the bytes of the event's
/// kind on its own, serialised (the kind is flattened into the line right after
/// the two numbers, so no second serialisation is needed for the order hash).
fn without_seq_and_t(line: &[u8]) -> &[u8] {
    const T: &[u8] = b",\"t\":";
    let t = line
        .windows(T.len())
        .position(|w| w == T)
        .expect("an event line has its time");
    let after = &line[t + T.len()..];
    let comma = after
        .iter()
        .position(|&b| b == b',')
        .expect("an event line has its kind after its time");
    &after[comma + 1..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;

    #[test]
    fn the_order_bytes_are_the_kind_serialised_alone() {
        let kinds = [
            EventKind::Stop { agent: "root".into() },
            EventKind::ProcessLoss { restart_after: 2.0 },
        ];
        for (seq, kind) in kinds.into_iter().enumerate() {
            let event = Event {
                seq: seq as u64 + 1,
                t: 1.5e-9 * seq as f64 + 12.25,
                kind,
            };
            let mut line = serde_json::to_vec(&event).unwrap();
            line.push(b'\n');
            let mut alone = serde_json::to_vec(&event.kind).unwrap();
            alone.push(b'\n');
            let mut order = b"{".to_vec();
            order.extend_from_slice(without_seq_and_t(&line));
            assert_eq!(
                String::from_utf8(order).unwrap(),
                String::from_utf8(alone).unwrap()
            );
        }
    }
}
