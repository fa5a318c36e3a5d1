//! The durable event log (SPEC §4): JSON Lines, a header line, then one event a
//! line with a gapless `seq` from 1. Written with `std::io` through a buffered
//! writer (never `tokio::fs`, which would stall paused time); a write error is
//! returned, never ignored. The trace hash is the SHA-256 of exactly these bytes.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::event::Event;

/// The log format's name in the header.
pub const LOG_FORMAT: &str = "asksim-log";
/// The log format's version.
pub const LOG_VERSION: u32 = 1;
/// The projection's state version: bump it whenever the projection's state or
/// fold changes, so cached snapshots are refolded from the log. 4: a pending
/// question no longer keeps its pending text (its `settled` is empty until it
/// closes). 5: each question's owner and turn, each agent's turns, and the
/// batches with no verdict yet, which a recovery needs to complete a step the
/// crash cut (SPEC §4.1). 6: the turns of an agent that fired before its
/// last fired one (a child derives its turns from any of them).
pub const STATE_VERSION: u32 = 6;

/// For each state version since 4, the SHA-256 (hex) of the projection folded from
/// `tests/fixtures/mixed-schemas.jsonl`, serialised as JSON; from 6 on, followed by
/// a newline and the projection folded from `tests/fixtures/fired-twice.jsonl`
/// (the first reaches no turn fired twice). `tests/state_version.rs`
/// folds that log and requires the digest pinned here for [`STATE_VERSION`]: a
/// change of the fold moves it, so it fails until the version is bumped and a row
/// added for it. Rows are only ever added, never edited.
pub const FOLD_DIGESTS: &[(u32, &str)] = &[
    (
        4,
        "461faf72b70dbc13e684897fcf366859d12b455c3ba62526ff1789e0ad0bb224",
    ),
    (
        5,
        "3ba5e22709d89734cdc018b9bfb44d61a85e2712782a6aaf22a0e0554b63e38f",
    ),
    (
        6,
        "947dcd6d518d12a9a3f441bd1e5a221361d32d8b0e4035dc593da63da80d5685",
    ),
];

/// The first line of every log. A reader ignores fields it does not know, here as
/// in events (SPEC §4: a log written by a newer build still replays); a missing
/// field is an error naming line 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogHeader {
    /// Always [`LOG_FORMAT`].
    pub format: String,
    /// The format version.
    pub version: u32,
    /// The projection's state version when the log was written.
    pub state_version: u32,
    /// The scenario's name.
    pub scenario: String,
    /// The run's seed.
    pub seed: u64,
    /// `"real"` for a log written on the wall clock (a real-clock run, a library
    /// runtime), so a replay holds its times to the real clock's tolerance; absent
    /// for the virtual clock. A value this build does not know reads as absent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "known_clock"
    )]
    pub clock: Option<String>,
}

/// The header's `clock` for the wall clock.
pub const REAL_CLOCK: &str = "real";

impl LogHeader {
    /// The header of a run of `scenario` under `seed` on the virtual clock,
    /// written by this code.
    pub fn new(scenario: &str, seed: u64) -> LogHeader {
        LogHeader {
            format: LOG_FORMAT.to_owned(),
            version: LOG_VERSION,
            state_version: STATE_VERSION,
            scenario: scenario.to_owned(),
            seed,
            clock: None,
        }
    }

    /// The same on the wall clock.
    pub fn real(scenario: &str, seed: u64) -> LogHeader {
        LogHeader {
            clock: Some(REAL_CLOCK.to_owned()),
            ..LogHeader::new(scenario, seed)
        }
    }

    /// Whether the log was written on the wall clock.
    pub fn is_real(&self) -> bool {
        self.clock.as_deref() == Some(REAL_CLOCK)
    }
}

/// Reads `clock`: the name of a clock this build knows, anything else as absent
/// (a newer build may say more).
fn known_clock<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(value.as_str().filter(|c| *c == REAL_CLOCK).map(str::to_owned))
}

/// Where a recorder hands the log's lines as they happen: the durable log file
/// (`crate::durable`), which decides how durable each line is before its
/// effects may leave the process. (A trait, so the recorder, below the durable
/// log, does not import it.)
pub trait LogSink: Send {
    /// Takes the line of event `seq` (its bytes, newline included).
    fn append(&mut self, seq: u64, line: &[u8]) -> std::io::Result<()>;
    /// Writes out everything appended, as durable as the sink promises.
    fn flush(&mut self) -> std::io::Result<()>;
    /// Whether a line becomes durable later than it is appended (what waits
    /// for it waits anyway, so it may as well be appended off the caller's
    /// thread). No by default.
    fn deferred(&self) -> bool {
        false
    }
}

/// Writes the header and every event as JSON Lines to `out`.
pub fn write_lines(out: &mut impl Write, header: &LogHeader, events: &[Event]) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, header)?;
    out.write_all(b"\n")?;
    for event in events {
        serde_json::to_writer(&mut *out, event)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes the log to `path`, buffered, and flushes it.
pub fn write_file(path: &Path, header: &LogHeader, events: &[Event]) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut out = std::io::BufWriter::new(file);
    write_lines(&mut out, header, events)?;
    out.flush()?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// The SHA-256, in hex, of the log's bytes: the run's `trace_hash`.
pub fn trace_hash(header: &LogHeader, events: &[Event]) -> String {
    hash_lines(Some(header), events)
}

/// The SHA-256, in hex, of the event lines alone (no header, so no seed): equal
/// for two seeds exactly when they produced the same interleaving.
pub fn events_hash(events: &[Event]) -> String {
    hash_lines(None, events)
}

fn hash_lines(header: Option<&LogHeader>, events: &[Event]) -> String {
    struct HashWriter(Sha256);
    impl Write for HashWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hasher = HashWriter(Sha256::new());
    let written = match header {
        Some(header) => write_lines(&mut hasher, header, events),
        None => events.iter().try_for_each(|event| {
            serde_json::to_writer(&mut hasher, event)?;
            hasher.write_all(b"\n")
        }),
    };
    written.expect("hashing never fails");
    hasher.0.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A log that cannot be read: where and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct LogError {
    /// The log file.
    pub file: String,
    /// The 1-based line at fault, if one is.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// Reads a log: the header, then every event with a gapless `seq` from 1. A
/// missing header, a line that is not an event (bad or truncated JSON, an unknown
/// event, a missing required field) or a `seq` gap is an error naming the line.
/// A file's bytes; a device is refused, not read: `/dev/zero` or `/dev/full`
/// never ends, and reading one filled the memory until the process was killed.
/// A pipe is read (`replay <(zcat log.gz)`).
pub fn read_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    not_a_directory(&metadata)?;
    not_a_device(&metadata)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes)?;
    Ok(bytes)
}

/// A directory opens for reading on Unix and fails only when read, with the
/// system's words (`Is a directory (os error 21)`): said as a scenario file's
/// read says it.
pub(crate) fn not_a_directory(metadata: &std::fs::Metadata) -> std::io::Result<()> {
    match metadata.is_dir() {
        true => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is a directory",
        )),
        false => Ok(()),
    }
}

/// A device is no log, to read or to write: `/dev/zero` never ends, and
/// `/dev/null` keeps nothing (nor can its directory be synced).
pub(crate) fn not_a_device(metadata: &std::fs::Metadata) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = metadata.file_type();
        if kind.is_char_device() || kind.is_block_device() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a device, not a file",
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = metadata;
    Ok(())
}

/// Fields this build does not know are ignored, in the header and in events.
pub fn read_file(path: &Path) -> Result<(LogHeader, Vec<Event>), LogError> {
    let file = path.display().to_string();
    let error = |line: Option<usize>, message: String| LogError {
        file: file.clone(),
        line,
        message,
    };
    let bytes = read_bytes(path).map_err(|e| error(None, format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| error(None, format!("not UTF-8: {e}")))?;
    parse(&text).map_err(|e| error(Some(e.line), e.message))
}

/// A line of a log that cannot be read, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LineError {
    /// The 1-based line.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

fn line_error(line: usize, message: impl Into<String>) -> LineError {
    LineError {
        line,
        message: message.into(),
    }
}

/// Parses log text. A request's `questions` keep the exact text of the line
/// (SPEC §4: restored questions use the text the model sent). Every line ends
/// with a newline, and none is empty, as asksim writes them.
pub fn parse(text: &str) -> Result<(LogHeader, Vec<Event>), LineError> {
    let mut lines = text.split('\n');
    let header = parse_header(lines.next().unwrap_or_default()).map_err(|error| match is_scenario(text) {
        true => line_error(
            1,
            "this is a scenario file, not a log: `asksim run FILE` runs it \
                 (`--log PATH` writes its log, which `asksim replay` reads)",
        ),
        false => error,
    })?;
    let mut events = Vec::new();
    let mut lines = lines.peekable();
    let mut number = 1;
    while let Some(line) = lines.next() {
        number += 1;
        let last = lines.peek().is_none();
        match (line.is_empty(), last) {
            // The newline that ends the last line.
            (true, true) => break,
            // asksim writes none: the log was edited or damaged, as recovery says.
            (true, false) => return Err(line_error(number, "an empty line")),
            (false, true) => return Err(line_error(number, CUT_SHORT)),
            (false, false) => events.push(parse_event(line, number, events.len() as u64 + 1)?),
        }
    }
    Ok((header, events))
}

/// Why a log's last line without its newline is refused: the process died while
/// writing it, and a log is judged only whole (recovery drops that line).
pub const CUT_SHORT: &str = "a line cut short (no newline): the process died while writing it; \
    `asksim run SCENARIO --log LOG --resume` goes on from the line before it";

/// Reads line 1 of a log: a header of this format and version.
pub fn parse_header(first: &str) -> Result<LogHeader, LineError> {
    if first.trim().is_empty() {
        return Err(line_error(
            1,
            "missing header: expected {\"format\":\"asksim-log\",…}",
        ));
    }
    let header: LogHeader =
        serde_json::from_str(first).map_err(|e| line_error(1, format!("bad header: {e}")))?;
    if header.format != LOG_FORMAT {
        return Err(line_error(1, format!("not an {LOG_FORMAT} log")));
    }
    if header.version > LOG_VERSION {
        let message = format!(
            "log version {} was written by a newer asksim; this build reads version {LOG_VERSION}",
            header.version
        );
        return Err(line_error(1, message));
    }
    if header.version != LOG_VERSION {
        return Err(line_error(
            1,
            format!("not an {LOG_FORMAT} version {LOG_VERSION} log"),
        ));
    }
    Ok(header)
}

/// Reads the event on line `number`, which must carry `seq` `expected`.
pub fn parse_event(line: &str, number: usize, expected: u64) -> Result<Event, LineError> {
    let mut event: Event =
        serde_json::from_str(line).map_err(|e| line_error(number, format!("bad event: {e}")))?;
    if event.seq != expected {
        let message = format!(
            "seq {} where {expected} was expected (a gap or a repeat)",
            event.seq
        );
        return Err(line_error(number, message));
    }
    exact_questions(&mut event, line);
    Ok(event)
}

/// Whether `text` is a scenario file: one JSON object with a scenario's keys
/// and no log header's `format`.
fn is_scenario(text: &str) -> bool {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) else {
        return false;
    };
    !map.contains_key("format")
        && ["agents", "answerers", "events"]
            .iter()
            .any(|k| map.contains_key(*k))
}

/// Gives a request event the exact text its line holds for `questions`.
fn exact_questions(event: &mut Event, line: &str) {
    #[derive(Deserialize)]
    struct Questions<'a> {
        #[serde(borrow)]
        questions: &'a serde_json::value::RawValue,
    }
    if let crate::event::EventKind::Request {
        questions,
        questions_text: None,
        ..
    } = &mut event.kind
        && let Ok(raw) = serde_json::from_str::<Questions>(line)
        && let Ok(exact) = crate::event::RawQuestions::new(raw.questions.get())
    {
        *questions = exact;
    }
}
