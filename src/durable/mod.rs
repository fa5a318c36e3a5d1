//! The durable runtime (SPEC §4.1): the event log on disk as it happens, the
//! write-ahead rule, recovery after a real crash, and compaction.
//!
//! - [`policy`]: when a line is durable (group commit, `every`, `none`).
//! - [`file`](mod@file): the log file a recorder appends to, synced under its policy.
//! - [`gate`]: the write-ahead gate: what a decision sends out of the process
//!   waits until the lines recorded before it are durable.
//! - [`read`]: reading a log back, a crash's torn last line told from damage.
//! - [`snapshot`]: the snapshot line of a compacted log.
//! - [`recovery`]: a recorder and a file that go on where the log ends.
//! - [`compaction`]: snapshot + tail, written beside and renamed into place.
//! - [`config`]: a runtime's log: path, policy, name.
//!
//! It sits above the recorder and the restart plan and below the actors: it
//! never starts an actor or decides what is recorded; the actors own the
//! gate's deliveries and the restart.

pub mod compaction;
pub mod config;
pub mod file;
pub mod gate;
pub mod policy;
pub mod read;
pub mod recovery;
pub mod snapshot;

pub use compaction::{Compacted, compact_file, compact_live};
pub use config::LogConfig;
pub use file::LogFile;
pub use gate::Gate;
pub use policy::SyncPolicy;
pub use read::{Expected, Torn, holds_unfinished_run, read_back, unfinished_run};
pub use recovery::{RecoverError, RecoverOptions, Recovery, recover};
pub use snapshot::Snapshot;
