//! The simulator: runs a scenario on the virtual clock under a controlled
//! scheduler (or on the actor runtime on the real clock), judges it by the
//! invariants of SPEC §6 as its events are recorded, shows it, and hunts for
//! failures over many runs. Its rooms follow the data path, each importing only
//! the rooms before it:
//!
//! - [`engine`]: running one run: the delivery queue and the strategies, the
//!   simulated world, the driver for both clocks. It knows nothing of verdicts.
//! - [`judge`]: judging a run: the invariant checker, protocol conformance, race
//!   coverage, the streaming analysis that feeds them, expectations and the
//!   summary.
//! - [`show`]: showing a run: the report, the timeline, the Chrome trace.
//! - [`hunt`]: hunting over many runs: sweeps, shards and merge,
//!   `explore --all`, `shrink`, replay.
//!
//! The items a user needs are re-exported here, flat: run a scenario with
//! [`run`], judge it with [`summarise`], print it with [`render_table`].

pub mod engine;
pub mod hunt;
pub mod judge;
pub mod show;

pub use engine::driver::{
    PANIC_AFTER_ENV, RunOptions, Watch, install_panic_hook, is_closed_pipe, is_closed_stdout, stdout_failure,
};
pub use engine::log_file::{log_header, recover_log};
pub use engine::output::{Limit, Output};
pub use engine::reproduce::{reproduce_command, shell_word};
pub use judge::analysis::Checked;
pub use judge::expect::ExpectationReport;
pub use judge::expect::result_matches;
pub use judge::invariants::{INVARIANTS, check};
pub use judge::judged::{RunOutput, resume, run, run_options, run_with};
pub use judge::latency::LatencySummary;
pub use judge::outcomes::Outcomes;
pub use judge::summary::{InvariantReport, Summary, Throughput, Verdict, summarise};
pub use judge::violation::Violation;
pub use show::report::{render_table, render_table_with_timelines};
