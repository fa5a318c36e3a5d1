//! Compaction of a long-lived host's log (SPEC §4.1): the header, then one
//! snapshot line of the projection ([`super::snapshot`]) standing for every
//! event so far, then the tail that follows. Recovery from snapshot + tail
//! equals recovery from the whole log.
//!
//! A crash during compaction loses nothing: the compacted log is written beside
//! the log (`PATH.compacting`), synced, and only then renamed over it, the
//! directory synced after. Until the rename the old log is whole and in its
//! place (a leftover `PATH.compacting` is never read, and the next compaction
//! overwrites it); after it, the new one is.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::file::{LogFile, sync_dir};
use super::read::read_back;
use super::recovery::{RecoverError, RecoverOptions, restored};
use super::snapshot::Snapshot;
use crate::limits::EVENTS_MAX_DEFAULT;
use crate::record::Recorder;

/// What a compaction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// The last event the snapshot stands for.
    pub seq: u64,
    /// The log's size before, in bytes.
    pub bytes_before: u64,
    /// Its size after.
    pub bytes_after: u64,
}

/// Where the compacted log of `path` is written before it takes its place.
pub fn compacting_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".compacting");
    PathBuf::from(name)
}

/// Step one: writes the compacted log (`header_line`, then `snapshot`) to
/// [`compacting_path`] and syncs it. The log itself is untouched.
pub fn write_compacted(path: &Path, header_line: &[u8], snapshot: &Snapshot) -> std::io::Result<PathBuf> {
    let temp = compacting_path(path);
    let mut file = File::create(&temp)?;
    file.write_all(header_line)?;
    file.write_all(&snapshot.line())?;
    file.sync_all()?;
    Ok(temp)
}

/// Step two: renames the compacted log over the log and syncs the directory;
/// the compacted log, open for appending.
pub fn install_compacted(temp: &Path, path: &Path) -> std::io::Result<File> {
    std::fs::rename(temp, path)?;
    sync_dir(path)?;
    std::fs::OpenOptions::new().append(true).open(path)
}

/// Compacts the log at `path`, which nothing is appending to: its events fold
/// into one snapshot line. A torn last line is dropped with the rest; a damaged
/// log is an error naming the line, and left as it was.
pub fn compact_file(path: &Path) -> Result<Compacted, RecoverError> {
    let io = |error| RecoverError::Io {
        path: path.to_owned(),
        error,
    };
    let bytes_before = std::fs::metadata(path).map_err(io)?.len();
    let read = read_back(path, None)?;
    let header_line = read.header_line.clone();
    let options = RecoverOptions {
        policy: super::policy::SyncPolicy::Every,
        events_max: EVENTS_MAX_DEFAULT,
        keep: false,
        open_calls_max: crate::limits::OPEN_CALLS_MAX,
    };
    let recorder = restored(read, options);
    let snapshot = Snapshot::of(recorder.projection(), recorder.last_t());
    let temp = write_compacted(path, &header_line, &snapshot).map_err(io)?;
    let file = install_compacted(&temp, path).map_err(io)?;
    let bytes_after = file.metadata().map_err(io)?.len();
    Ok(Compacted {
        seq: snapshot.seq,
        bytes_before,
        bytes_after,
    })
}

/// Compacts a live log: `recorder` writes through `log`, and the caller holds
/// it (locked), so nothing is appended meanwhile. Everything appended is made
/// durable first; the snapshot is the recorder's projection; the compacted file
/// takes the log's place and is appended to from then on.
pub fn compact_live(recorder: &Recorder, log: &LogFile) -> std::io::Result<Compacted> {
    log.sync()?;
    let path = log.path();
    let bytes_before = std::fs::metadata(path)?.len();
    let snapshot = Snapshot::of(recorder.projection(), recorder.last_t());
    let temp = write_compacted(path, log.header_line(), &snapshot)?;
    let file = install_compacted(&temp, path)?;
    let bytes_after = file.metadata()?.len();
    log.replace_file(file)?;
    Ok(Compacted {
        seq: snapshot.seq,
        bytes_before,
        bytes_after,
    })
}
