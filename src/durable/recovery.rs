//! Recovery from a durable log after a real crash (SPEC §4.1): the log read back
//! ([`super::read`]), a torn last line cut off the file, a recorder that goes on
//! where the file ends (its projection folded, its hashes over the file's
//! lines), the file open for appending under its policy, and the crash recorded
//! as a process loss at the last recorded instant when the log does not end in
//! one already.
//!
//! What the restart then rebuilds is [`crate::restart::plan`] of the recorder's
//! projection, carried out by whoever owns the runtime (the library's
//! `Runtime::recover`, the real-clock driver). Nothing here starts an actor.
//! The file is written only once it has been read whole without error.

use std::path::{Path, PathBuf};

use super::file::LogFile;
use super::policy::SyncPolicy;
use super::read::{Expected, ReadBack, Torn, read_back};
use crate::event::EventKind;
use crate::log::{LogError, LogHeader};
use crate::record::Recorder;

/// Why a log could not be recovered.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// The log is damaged, or not the log asked for: the line at fault. The file
    /// was not touched.
    #[error("{0}")]
    Damaged(#[from] LogError),
    /// The file could not be read, truncated or opened for appending.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The log's run ended (its last event is `end`): there is nothing to
    /// resume. The file was not touched.
    #[error(
        "{}:{line}: the run this log holds ended (`end`: {reason}): nothing to resume; run the \
         scenario again without --resume for a new run",
        path.display()
    )]
    Ended {
        /// The file.
        path: PathBuf,
        /// The `end` event's line in it.
        line: usize,
        /// Why the run ended, as the event says.
        reason: String,
    },
    /// The runtime could not start again.
    #[error("{0}")]
    Start(String),
}

/// How to go on after recovery.
#[derive(Clone, Copy, Debug)]
pub struct RecoverOptions {
    /// The policy the file is appended under from now on.
    pub policy: SyncPolicy,
    /// Most events the run records, old ones included.
    pub events_max: u64,
    /// Keep every event (old ones included) in memory.
    pub keep: bool,
    /// The broker's limit on open calls (`BrokerLimits::open_calls_max`): a
    /// request the crash cut from its `LIMIT_EXCEEDED` result is completed
    /// with it ([`crate::restart::results_cut_short`]).
    pub open_calls_max: usize,
}

/// A log recovered, ready to go on.
pub struct Recovery {
    /// The recorder, holding the log so far and writing on to the file.
    pub recorder: Recorder,
    /// The file, appended to.
    pub log: LogFile,
    /// Its header.
    pub header: LogHeader,
    /// The time of the last event (the crash's instant).
    pub last_t: f64,
    /// Events the file held.
    pub events: u64,
    /// The torn last line dropped, if the crash cut one.
    pub torn: Option<Torn>,
    /// Whether the log did not end in a process loss, so the crash was recorded
    /// as one.
    pub crashed: bool,
    /// The `seq` a compacted log's snapshot stands for.
    pub compacted: Option<u64>,
}

/// Recovers the log at `path`, written for `expected` when given.
pub fn recover(
    path: &Path,
    expected: Option<&Expected>,
    options: RecoverOptions,
) -> Result<Recovery, RecoverError> {
    let read = read_back(path, expected)?;
    if let Some((event, _)) = read.events.last()
        && let EventKind::End { reason } = &event.kind
    {
        // The header, the snapshot if any, then one line per event.
        let line = 1 + usize::from(read.snapshot.is_some()) + read.events.len();
        return Err(RecoverError::Ended {
            path: path.to_owned(),
            line,
            reason: reason.clone(),
        });
    }
    let io = |error| RecoverError::Io {
        path: path.to_owned(),
        error,
    };
    if let Some(torn) = read.torn {
        tracing::warn!(path = %path.display(), line = torn.line, bytes = torn.bytes, "dropped a torn last line");
        cut_torn(path, read.whole_len).map_err(io)?;
    }
    let (last_seq, last_t) = read.last();
    // The run was down already when the log ends in a process loss (and the
    // scheduled events dropped in its restart gap).
    let ended_in_loss = read
        .events
        .iter()
        .rev()
        .find(|(e, _)| !matches!(e.kind, EventKind::Dropped { .. }))
        .is_some_and(|(e, _)| matches!(e.kind, EventKind::ProcessLoss { .. }));
    let (header, torn, events) = (read.header.clone(), read.torn, read.events.len() as u64);
    let compacted = read.snapshot.as_ref().map(|s| s.seq);
    let header_line = read.header_line.clone();
    let mut recorder = restored(read, options);
    let log = LogFile::append_to(path, header_line, last_seq, options.policy).map_err(io)?;
    recorder.sink_to(log.appender());
    let crashed = !ended_in_loss;
    if crashed {
        for kind in crate::restart::results_cut_short(recorder.projection(), options.open_calls_max) {
            recorder.record(last_t, kind);
        }
        recorder.record(last_t, EventKind::ProcessLoss { restart_after: 0.0 });
        for kind in crate::restart::cut_short(recorder.projection()) {
            recorder.record(last_t, kind);
        }
    }
    Ok(Recovery {
        recorder,
        log,
        header,
        last_t,
        events,
        torn,
        crashed,
        compacted,
    })
}

/// A recorder holding what `read` holds.
pub fn restored(read: ReadBack, options: RecoverOptions) -> Recorder {
    let mut recorder = Recorder::continuing(&read.header_line, options.events_max, options.keep);
    if let Some(snapshot) = read.snapshot {
        recorder.restore_snapshot(snapshot.projection, snapshot.t);
    }
    for (event, line) in read.events {
        recorder.restore(event, &line);
    }
    recorder
}

/// Cuts the file at `path` to its first `len` bytes, synced.
fn cut_torn(path: &Path, len: u64) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.set_len(len)?;
    file.sync_all()
}
