//! Reading a durable log back after a crash (SPEC §4.1), and telling a crash's
//! trace from damage.
//!
//! A crash can leave one thing only: a last line cut short (it lacks its
//! newline, as every line is written whole with its newline). That torn line is
//! dropped and reported; it recorded nothing whose effect had left the process,
//! because nothing leaves before its line is synced. Everything else is damage
//! and an error naming its line: a complete line that is not an event (bad
//! JSON, an empty line, a missing field), a `seq` gap, a header of another
//! format, a newer `version`, another scenario or seed. Reading never writes:
//! on an error the file is exactly as it was.

use std::path::Path;

use super::snapshot::Snapshot;
use crate::event::Event;
use crate::log::{LineError, LogError, LogHeader};

/// The scenario (or host) name and seed a log must have been written for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The header's `scenario`.
    pub scenario: String,
    /// The header's `seed`.
    pub seed: u64,
}

/// A torn last line, dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Torn {
    /// Its 1-based line number.
    pub line: usize,
    /// How many bytes it had.
    pub bytes: usize,
}

/// A log read back.
#[derive(Debug)]
pub struct ReadBack {
    /// Its first line as the file holds it, newline included.
    pub header_line: Vec<u8>,
    /// The header.
    pub header: LogHeader,
    /// The snapshot of a compacted log.
    pub snapshot: Option<Snapshot>,
    /// Every event after the header (or the snapshot), with its line's bytes.
    pub events: Vec<(Event, Vec<u8>)>,
    /// Bytes of the file up to the end of its last whole line.
    pub whole_len: u64,
    /// The torn last line, if the crash cut one.
    pub torn: Option<Torn>,
}

impl ReadBack {
    /// The `seq` and time of the last event it holds (the snapshot's, if no
    /// event follows it; 0 for none).
    pub fn last(&self) -> (u64, f64) {
        match (self.events.last(), &self.snapshot) {
            (Some((event, _)), _) => (event.seq, event.t),
            (None, Some(snapshot)) => (snapshot.seq, snapshot.t),
            (None, None) => (0, 0.0),
        }
    }
}

/// How many bytes of a file's end [`holds_unfinished_run`] reads for its last
/// line: an event's line is a few hundred bytes, a request's with long
/// questions a few KiB.
const TAIL_BYTES: u64 = 1 << 16;

/// Whether the file at `path` holds an asksim log whose run did not end: its
/// first line is a log's header and its last is not a whole `end` event (a
/// crash, or a run still going, left it so). That is what `--resume` continues
/// and the only record of the run's open questions; a missing or empty file, a
/// file that is no log, and a finished run's log hold none. Reads the first
/// line and the last 64 KiB (`TAIL_BYTES`), whatever the file's length.
pub fn holds_unfinished_run(path: &Path) -> std::io::Result<bool> {
    unfinished_run(path).map(|header| header.is_some())
}

/// The header of the run that did not end whose log is the file at `path`, if
/// it is one ([`holds_unfinished_run`]): which scenario and seed `--resume`
/// would have to continue.
pub fn unfinished_run(path: &Path) -> std::io::Result<Option<LogHeader>> {
    use std::io::{BufRead, Read, Seek, SeekFrom};
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let len = file.metadata()?.len();
    let mut first = Vec::new();
    std::io::BufReader::new(&mut file)
        .take(TAIL_BYTES)
        .read_until(b'\n', &mut first)?;
    let Ok(header) = serde_json::from_slice::<LogHeader>(first.trim_ascii_end()) else {
        return Ok(None);
    };
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let Some(whole) = tail.strip_suffix(b"\n") else {
        return Ok(Some(header)); // a torn last line: the run was cut
    };
    let last = whole.rsplit(|b| *b == b'\n').next().unwrap_or_default();
    let ended = serde_json::from_slice::<Event>(last)
        .is_ok_and(|event| matches!(event.kind, crate::event::EventKind::End { .. }));
    Ok((!ended).then_some(header))
}

/// Reads the log at `path`, written for `expected` when given.
pub fn read_back(path: &Path, expected: Option<&Expected>) -> Result<ReadBack, LogError> {
    let file = path.display().to_string();
    let error = |e: LineError| LogError {
        file: file.clone(),
        line: Some(e.line),
        message: e.message,
    };
    let bytes = crate::log::read_bytes(path).map_err(|e| LogError {
        file: file.clone(),
        line: None,
        message: format!("cannot read: {e}"),
    })?;
    parse_back(&bytes, expected).map_err(error)
}

/// [`read_back`] of a log's bytes.
pub fn parse_back(bytes: &[u8], expected: Option<&Expected>) -> Result<ReadBack, LineError> {
    let whole_len = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut lines = bytes[..whole_len].split_inclusive(|b| *b == b'\n');
    let header_line = lines
        .next()
        .ok_or_else(|| line_error(1, "torn header: the log holds no whole line"))?;
    let header = crate::log::parse_header(text(header_line, 1)?)?;
    check_expected(&header, expected)?;
    let mut read = ReadBack {
        header_line: header_line.to_vec(),
        header,
        snapshot: None,
        events: Vec::new(),
        whole_len: whole_len as u64,
        torn: None,
    };
    let mut number = 1;
    for line in lines {
        number += 1;
        let body = text(line, number)?;
        if body.is_empty() {
            return Err(line_error(number, "an empty line"));
        }
        if number == 2 && Snapshot::is_snapshot_line(body) {
            read.snapshot = Some(Snapshot::parse(body).map_err(|m| line_error(number, m))?);
            continue;
        }
        let event = crate::log::parse_event(body, number, read.last().0 + 1)?;
        read.events.push((event, line.to_vec()));
    }
    if whole_len < bytes.len() {
        read.torn = Some(Torn {
            line: number + 1,
            bytes: bytes.len() - whole_len,
        });
    }
    Ok(read)
}

/// A whole line's text without its newline.
fn text(line: &[u8], number: usize) -> Result<&str, LineError> {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    std::str::from_utf8(body).map_err(|e| line_error(number, format!("not UTF-8: {e}")))
}

fn check_expected(header: &LogHeader, expected: Option<&Expected>) -> Result<(), LineError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    if header.scenario != expected.scenario {
        return Err(line_error(
            1,
            format!(
                "a log of scenario {:?}, not of {:?}",
                header.scenario, expected.scenario
            ),
        ));
    }
    if header.seed != expected.seed {
        return Err(line_error(
            1,
            format!("a log of seed {}, not of seed {}", header.seed, expected.seed),
        ));
    }
    Ok(())
}

fn line_error(line: usize, message: impl Into<String>) -> LineError {
    LineError {
        line,
        message: message.into(),
    }
}
