//! Shared support for the durable-log tests (`tests/durable_*.rs`): scratch
//! directories, file hashes, and library runtimes that write a log file.

use std::path::{Path, PathBuf};

use asksim::event::{Event, EventKind};
use asksim::policy::Policy;
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AnswererSlot, LogConfig, Runtime, RuntimeConfig, SyncPolicy};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

/// A scratch directory, removed when dropped.
pub struct Scratch(TempDir);

impl Scratch {
    /// A fresh directory for the test `name`.
    pub fn new(name: &str) -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix(&format!("asksim-durable-{name}-"))
            .tempdir()
            .expect("a scratch directory");
        Scratch(dir)
    }

    /// A path inside it.
    pub fn path(&self, file: &str) -> PathBuf {
        self.0.path().join(file)
    }
}

/// The SHA-256 of a file's bytes, hex.
pub fn file_hash(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("a readable file");
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The built-in answerer `name` answering "recommended" `latency_s` after it accepts.
pub fn answerer(name: &str, latency_s: f64) -> AnswererSlot {
    AnswererSlot::Policy {
        name: name.into(),
        policy: Policy::recommended_after(latency_s),
    }
}

/// A runtime config: the timed tool (30 s default window) and these answerers.
pub fn timed_config(answerers: Vec<AnswererSlot>) -> RuntimeConfig {
    RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers,
        ..RuntimeConfig::default()
    }
}

/// `config` with its log at `path` under `sync`.
pub fn logged(mut config: RuntimeConfig, path: &Path, sync: SyncPolicy) -> RuntimeConfig {
    config.log = Some(LogConfig::new(path).sync(sync));
    config
}

/// A runtime of `config` writing its log to `path` under `sync`.
pub async fn start_logged(config: RuntimeConfig, path: &Path, sync: SyncPolicy) -> Runtime {
    Runtime::start(logged(config, path, sync))
        .await
        .expect("a runtime with a log")
}

/// A runtime of `config` recovered from the log at `path`, going on under `sync`.
pub async fn recover(config: RuntimeConfig, path: &Path, sync: SyncPolicy) -> asksim::Recovered {
    Runtime::recover(logged(config, path, sync), path)
        .await
        .expect("a recovery")
}

/// The events of the log at `path`.
pub fn events_in(path: &Path) -> Vec<Event> {
    asksim::log::read_file(path).expect("a readable log").1
}

/// How many events of `kind` (its `event` name) the log at `path` holds about `call_id`.
pub fn count(events: &[Event], kind: &str, call_id: &str) -> usize {
    events
        .iter()
        .filter(|e| e.kind.call_id() == Some(call_id) && event_name(&e.kind) == kind)
        .count()
}

/// An event's `event` name, as the log writes it.
pub fn event_name(kind: &EventKind) -> String {
    let value = serde_json::to_value(kind).expect("an event serialises");
    value["event"].as_str().unwrap_or_default().to_owned()
}

/// The log's lines (header first), as text.
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("a readable log")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Writes `lines` (each with its newline) to `path`.
pub fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).expect("a writable file");
}

/// The index of the first `restart` event in `events`.
pub fn first_restart(events: &[Event]) -> usize {
    events
        .iter()
        .position(|e| matches!(e.kind, EventKind::Restart { .. }))
        .expect("a restart")
}

/// The path of `scenarios/NAME`, as text.
pub fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
        .display()
        .to_string()
}
