//! How a runtime keeps its durable log: where, under which sync policy, and
//! the name its header records (checked when the log is recovered).

use std::path::PathBuf;

use super::policy::SyncPolicy;

/// The name a library runtime's log header records unless told otherwise.
pub const LIBRARY_LOG_NAME: &str = "library";

/// A runtime's durable log file (SPEC §4.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// The file.
    pub path: PathBuf,
    /// How durable a line is before its effect leaves the process.
    pub sync: SyncPolicy,
    /// The header's `scenario`: the host's name. Recovery refuses a log written
    /// under another name (or another seed).
    pub name: String,
}

impl LogConfig {
    /// A log at `path` under the default policy (group commit), named
    /// [`LIBRARY_LOG_NAME`].
    pub fn new(path: impl Into<PathBuf>) -> LogConfig {
        LogConfig {
            path: path.into(),
            sync: SyncPolicy::default(),
            name: LIBRARY_LOG_NAME.to_owned(),
        }
    }

    /// The same log under `sync`.
    pub fn sync(mut self, sync: SyncPolicy) -> LogConfig {
        self.sync = sync;
        self
    }
}
