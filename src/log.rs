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
/// fold changes, so cached snapshots are refolded from the log.
pub const STATE_VERSION: u32 = 1;

/// The first line of every log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
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
}

impl LogHeader {
    /// The header of a run of `scenario` under `seed`, written by this code.
    pub fn new(scenario: &str, seed: u64) -> LogHeader {
        LogHeader {
            format: LOG_FORMAT.to_owned(),
            version: LOG_VERSION,
            state_version: STATE_VERSION,
            scenario: scenario.to_owned(),
            seed,
        }
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
    write_lines(&mut hasher, header, events).expect("hashing never fails");
    hasher.0.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
