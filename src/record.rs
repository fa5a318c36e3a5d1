//! The recorder: stamps each event with its `seq` and time and hands it on as it
//! happens: to the trace hash (SHA-256 of the log's bytes), to the order hash (the
//! same lines without `seq` and `t`: equal for two runs exactly when they did the
//! same things in the same order), to the projection, to a [`LogSink`] (the
//! durable log file) when there is one, to an [`Observer`] (the simulator's streaming checker) when one
//! watches, and to a kept list when a caller wants every event.
//!
//! The three hashes are the simulator's tools (a run's `trace_hash`, a sweep's
//! distinct orders and timings); a recorder computes only those it is asked for
//! ([`Hashes`]: all three unless narrowed, as a simulated run narrows them to
//! the two its summary reports and the actor runtime of a library host to none
//! by default), and with no hash and no log file it does not serialise an
//! event at all: the projection, the observer and the kept list take the
//! [`Event`] itself, never its line.
//!
//! It is the one place events are written; executors own one per run (the
//! simulator's world) or share one behind a lock (the actor runtime). A log read
//! back after a crash goes on in a recorder that restores its events first
//! ([`Recorder::continuing`], [`Recorder::restore`]). It never syncs or decides
//! durability: that is the sink's.

use sha2::{Digest, Sha256};

use crate::event::{Event, EventKind};
pub use crate::kept::{CHUNK_EVENTS, KeptEvents};
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

/// Which of its SHA-256 digests a recorder computes over the lines it records.
/// Each is a superset of the one before it (`None < Trace < TraceAndOrder <
/// All`), and a recorder's can only be narrowed ([`Recorder::narrow_hashes`]):
/// a hash stopped is never started again, since it would miss the lines before.
///
/// A hash that was not computed is reported as unavailable ([`LogHashes`]'s
/// `None`, [`Recording`]'s empty string), never as a digest of part of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hashes {
    /// No hash: an event is serialised only when a log file takes its line,
    /// and otherwise goes straight to the projection, the observer and the kept
    /// list. The actor runtime's default for a library host
    /// ([`crate::RuntimeConfig::hashes`]), which reads none of them.
    None,
    /// The trace hash only (SHA-256 of the log's bytes, header included).
    Trace,
    /// The trace and order hashes: what a run's summary reports (`trace_hash`,
    /// `order_hash`), and all a simulated run computes unless it asks for more
    /// (`crate::sim::RunOptions::hashes`).
    TraceAndOrder,
    /// The trace, order and timing hashes: what a sweep compares too (its
    /// distinct orders and timings). A recorder made by [`Recorder::new`] or
    /// [`Recorder::continuing`] starts with all three.
    All,
}

impl Hashes {
    fn trace(self) -> bool {
        self >= Hashes::Trace
    }

    fn order(self) -> bool {
        self >= Hashes::TraceAndOrder
    }

    fn timing(self) -> bool {
        self == Hashes::All
    }
}

/// A recorder's hashes so far, hex; `None` for each it does not compute
/// ([`Hashes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogHashes {
    /// SHA-256 of the log (header and events): the run's `trace_hash`.
    pub trace_hash: Option<String>,
    /// SHA-256 of the event lines without `seq` and `t`.
    pub order_hash: Option<String>,
    /// SHA-256 of the event lines (no header, so no seed).
    pub timing_hash: Option<String>,
}

/// What a finished recording gives.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Which hashes were computed: each of the three below that was not is the
    /// empty string (a simulated run computes the trace and order hashes, and a
    /// sweep's the timing hash too).
    pub hashes: Hashes,
    /// SHA-256 of the log (header and events), hex; empty unless `hashes`
    /// includes [`Hashes::Trace`].
    pub trace_hash: String,
    /// SHA-256 of the event lines without `seq` and `t`, hex; empty unless
    /// `hashes` includes [`Hashes::TraceAndOrder`].
    pub order_hash: String,
    /// SHA-256 of the event lines (no header, so no seed), hex: equal for two
    /// runs exactly when they did the same things at the same times; empty
    /// unless `hashes` is [`Hashes::All`].
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
    /// Most events kept in memory at once ([`Recorder::keeping_at_most`]).
    keep_max: u64,
    overflowed: bool,
    last_t: f64,
    line: Vec<u8>,
    /// Which of the three below are kept up to date.
    hashes: Hashes,
    /// Event lines serialised (for a hash or the file).
    lines: u64,
    trace: Sha256,
    order: Sha256,
    timing: Sha256,
    projection: Projection,
    keep: Option<KeptEvents>,
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
            keep_max: u64::MAX,
            overflowed: false,
            last_t: 0.0,
            line: Vec::new(),
            hashes: Hashes::All,
            lines: 0,
            trace,
            order: Sha256::new(),
            timing: Sha256::new(),
            projection: Projection::default(),
            keep: keep.then(KeptEvents::new),
            observer: None,
            file: None,
            file_error: None,
        }
    }

    /// For a runtime that runs for good (a library host): no limit on what it
    /// records, and at most `max` events kept in memory at once. Past it an
    /// event is still counted, folded into the projection, observed, hashed and
    /// written to the log file, only not kept; [`Recorder::overflowed`] turns
    /// true. A limit on memory must never stop the record a recovery reads (the
    /// simulator's `events_max`, which cuts a run, is [`Recorder::new`]'s).
    /// Events moved out ([`Recorder::take_events`]) make room again.
    pub fn keeping_at_most(mut self, max: u64) -> Recorder {
        self.events_max = u64::MAX;
        self.keep_max = max;
        self
    }

    /// Computes only `hashes` from now on, of those it computed before: a hash
    /// is stopped, never started again (it would have missed the lines so
    /// far), so a wider `hashes` than the recorder's changes nothing. Those
    /// stopped are unavailable from then on ([`Hashes`]).
    pub fn narrow_hashes(&mut self, hashes: Hashes) {
        self.hashes = self.hashes.min(hashes);
    }

    /// [`Recorder::narrow_hashes`], by value.
    pub fn with_hashes(mut self, hashes: Hashes) -> Recorder {
        self.narrow_hashes(hashes);
        self
    }

    /// Which hashes it computes.
    pub fn hashes(&self) -> Hashes {
        self.hashes
    }

    /// Event lines it serialised so far, for a hash or a log file (restored
    /// ones, read back from a file, aside): none with neither.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Its hashes of the log so far (the recording goes on).
    pub fn hashes_so_far(&self) -> LogHashes {
        let computed = |on: bool, hash: &Sha256| on.then(|| hex(&hash.clone().finalize()));
        LogHashes {
            trace_hash: computed(self.hashes.trace(), &self.trace),
            order_hash: computed(self.hashes.order(), &self.order),
            timing_hash: computed(self.hashes.timing(), &self.timing),
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
    /// `line`): it counts, hashes (what it computes) and folds as if recorded now, and is not
    /// written again. Events must come in `seq` order, before any new one.
    pub fn restore(&mut self, event: Event, line: &[u8]) {
        assert_eq!(event.seq, self.seq + 1, "restored events come in seq order");
        self.seq = event.seq;
        self.hash(line);
        self.absorb(event);
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

    /// Hands `observer` each event recorded from now on, none of those before:
    /// one that saw them already, through the recorder this one replaces (a
    /// real-clock run's recorder read back from its log at a process loss).
    pub fn observe_from_now(&mut self, observer: Box<dyn Observer>) {
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
        // Nothing reads the line but the hashes and the file: without either,
        // it is never written (the journal's thread skips the serialisation).
        if self.hashes.trace() || self.file.is_some() {
            self.write_line(&event);
        }
        self.absorb(event);
    }

    /// Serialises `event` into its line, appends it to the file (if any) and
    /// hashes it.
    fn write_line(&mut self, event: &Event) {
        self.lines += 1;
        self.line.clear();
        serde_json::to_writer(&mut self.line, event).expect("an event serialises");
        self.line.push(b'\n');
        let line = std::mem::take(&mut self.line);
        if let Some(file) = &mut self.file
            && let Err(error) = file.append(self.seq, &line)
        {
            self.file_error = Some(error);
            self.file = None;
        }
        self.hash(&line);
        self.line = line;
    }

    /// Hashes `line` (an event's line in the log) into the hashes it computes.
    fn hash(&mut self, line: &[u8]) {
        if self.hashes.trace() {
            self.trace.update(line);
        }
        if self.hashes.timing() {
            self.timing.update(line);
        }
        if self.hashes.order() {
            self.order.update(b"{");
            self.order.update(without_seq_and_t(line));
        }
    }

    /// Folds, observes and keeps `event`: what every event goes through,
    /// recorded now or restored.
    fn absorb(&mut self, event: Event) {
        self.last_t = event.t;
        self.projection.apply(&event);
        if let Some(observer) = &mut self.observer {
            observer.event(&event);
        }
        if let Some(keep) = &mut self.keep {
            if (keep.len() as u64) < self.keep_max {
                keep.push(event);
            } else {
                self.overflowed = true;
            }
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

    /// Whether the limit on events was reached: an event was not recorded
    /// (or, [`Recorder::keeping_at_most`], not kept).
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

    /// The events so far, when they are kept (none otherwise), in chunks
    /// that are never moved once full ([`KeptEvents`]): keeping millions costs
    /// no copy of those kept before.
    pub fn events(&self) -> &KeptEvents {
        static NONE: KeptEvents = KeptEvents::new();
        self.keep.as_ref().unwrap_or(&NONE)
    }

    /// Moves the kept events out, in one vector (one copy of each once there is
    /// more than a chunk); those kept from then on start a new list.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.keep
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
            .into_vec()
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
        let hashes = self.hashes_so_far();
        let recording = Recording {
            hashes: self.hashes,
            trace_hash: hashes.trace_hash.unwrap_or_default(),
            order_hash: hashes.order_hash.unwrap_or_default(),
            timing_hash: hashes.timing_hash.unwrap_or_default(),
            events: self.keep.map(KeptEvents::into_vec).unwrap_or_default(),
            count: self.seq,
            projection: self.projection,
            last_t: self.last_t,
            overflowed: self.overflowed,
        };
        (recording, written)
    }
}

/// `digest` in lowercase hex.
fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    digest
        .iter()
        .fold(String::with_capacity(2 * digest.len()), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The event line without its leading `{"seq":N,"t":T,`: the bytes of the event's
/// kind on its own, serialised (the kind is flattened into the line right after
/// the two numbers, so no second serialisation is needed for the order hash).
fn without_seq_and_t(line: &[u8]) -> &[u8] {
    // The line starts `{"seq":N,"t":T,` and neither number holds a comma: the
    // kind follows the second comma (two short scans, where a search for
    // `,"t":` compared five bytes at every place up to it).
    let mut commas = (line.iter().enumerate()).filter_map(|(at, &b)| (b == b',').then_some(at));
    let seq_end = commas.next().expect("an event line has its time");
    debug_assert!(
        line[seq_end..].starts_with(b",\"t\":"),
        "the time follows the seq"
    );
    let t_end = commas.next().expect("an event line has its kind after its time");
    &line[t_end + 1..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;
    use std::sync::{Arc, Mutex};

    /// A sink that keeps every line appended.
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl LogSink for Lines {
        fn append(&mut self, _: u64, line: &[u8]) -> std::io::Result<()> {
            self.0.lock().unwrap().extend_from_slice(line);
            Ok(())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Records the same few events under `hashes`, into a sink when `file`:
    /// the recording, the lines the sink got, and whether a line was ever
    /// serialised.
    fn recorded(hashes: Hashes, file: bool) -> (Recording, Vec<u8>, bool) {
        recorded_keeping(hashes, file, u64::MAX)
    }

    /// [`recorded`], keeping at most `keep_max` events.
    fn recorded_keeping(hashes: Hashes, file: bool, keep_max: u64) -> (Recording, Vec<u8>, bool) {
        let mut recorder = Recorder::new(&LogHeader::real("t", 3), u64::MAX, true)
            .keeping_at_most(keep_max)
            .with_hashes(hashes);
        let lines = Arc::new(Mutex::new(Vec::new()));
        if file {
            recorder.sink_to(Box::new(Lines(lines.clone())));
        }
        for i in 0..5 {
            recorder.record(
                0.25 * i as f64,
                EventKind::Stop {
                    agent: format!("a{i}").into(),
                },
            );
        }
        recorder.end(2.0, "done");
        let serialised = recorder.lines() > 0;
        assert_eq!(serialised, recorder.line.capacity() > 0);
        let (recording, written) = recorder.finish();
        written.unwrap();
        let lines = lines.lock().unwrap().clone();
        (recording, lines, serialised)
    }

    #[test]
    fn each_hash_asked_for_is_the_one_every_hash_gives_and_the_rest_are_empty() {
        let (all, _, _) = recorded(Hashes::All, false);
        assert_eq!(all.hashes, Hashes::All);
        assert_eq!(
            all.trace_hash,
            crate::log::trace_hash(&LogHeader::real("t", 3), &all.events)
        );
        assert_eq!(all.timing_hash, crate::log::events_hash(&all.events));
        assert_eq!(all.order_hash.len(), 64);
        let (trace, _, _) = recorded(Hashes::Trace, false);
        assert_eq!(trace.hashes, Hashes::Trace);
        assert_eq!(trace.trace_hash, all.trace_hash);
        assert_eq!((trace.order_hash.as_str(), trace.timing_hash.as_str()), ("", ""));
        let (ordered, _, _) = recorded(Hashes::TraceAndOrder, false);
        assert_eq!(ordered.hashes, Hashes::TraceAndOrder);
        assert_eq!(
            (&ordered.trace_hash, &ordered.order_hash),
            (&all.trace_hash, &all.order_hash)
        );
        assert_eq!(ordered.timing_hash, "");
        let (none, _, serialised) = recorded(Hashes::None, false);
        assert_eq!(none.hashes, Hashes::None);
        let empty = ["", "", ""];
        assert_eq!([&*none.trace_hash, &*none.order_hash, &*none.timing_hash], empty);
        assert!(!serialised, "no hash and no file: no event serialised");
        assert_eq!(none.events, all.events);
        assert_eq!(none.projection, all.projection);
        assert_eq!((none.count, none.last_t), (all.count, all.last_t));
    }

    /// A bound on kept events bounds nothing else: past it every event is
    /// still counted, hashed, written and folded, only not kept.
    #[test]
    fn a_bound_on_kept_events_keeps_the_log_whole() {
        let (whole, whole_lines, _) = recorded(Hashes::All, true);
        let (bounded, lines, _) = recorded_keeping(Hashes::All, true, 2);
        assert_eq!(lines, whole_lines);
        assert_eq!(bounded.events[..], whole.events[..2]);
        assert!(bounded.overflowed && !whole.overflowed);
        assert_eq!(bounded.trace_hash, whole.trace_hash);
        assert_eq!(bounded.projection, whole.projection);
        assert_eq!((bounded.count, bounded.last_t), (whole.count, whole.last_t));
    }

    /// A log file gets every line whatever is hashed: the same bytes.
    #[test]
    fn a_log_file_gets_the_same_lines_with_no_hash() {
        let (all, hashed_lines, _) = recorded(Hashes::All, true);
        let (none, lines, serialised) = recorded(Hashes::None, true);
        assert!(serialised);
        assert_eq!(lines, hashed_lines);
        assert_eq!(none.trace_hash, "");
        let mut log = serde_json::to_vec(&LogHeader::real("t", 3)).unwrap();
        log.push(b'\n');
        log.extend_from_slice(&lines);
        assert_eq!(
            hex(&Sha256::digest(&log)),
            all.trace_hash,
            "the file's bytes are the hash's"
        );
    }

    /// A hash once stopped stays stopped: started again it would miss the
    /// lines before, a wrong hash.
    #[test]
    fn hashes_only_narrow() {
        let mut recorder = Recorder::new(&LogHeader::real("t", 3), u64::MAX, false);
        assert_eq!(recorder.hashes(), Hashes::All);
        recorder.narrow_hashes(Hashes::Trace);
        recorder.record(0.0, EventKind::Stop { agent: "a".into() });
        recorder.narrow_hashes(Hashes::All);
        assert_eq!(recorder.hashes(), Hashes::Trace);
        let so_far = recorder.hashes_so_far();
        assert!(so_far.trace_hash.is_some());
        assert_eq!((so_far.order_hash, so_far.timing_hash), (None, None));
        recorder.narrow_hashes(Hashes::None);
        recorder.narrow_hashes(Hashes::Trace);
        assert_eq!(recorder.hashes_so_far().trace_hash, None);
        assert_eq!(recorder.finish().0.trace_hash, "");
    }

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
