//! The simulator: runs a scenario on the virtual clock under a controlled
//! scheduler (or on the actor runtime on the real clock), checks the invariants of
//! SPEC §6 on its event stream, and reports.
//!
//! - `queue`: the delivery queue: per-pair FIFO channels, timers, what is due.
//! - `strategy`: which tied delivery goes first (random, PCT, FIFO).
//! - `world`: the simulated actors and the driver's schedule.
//! - `driver`: one run, on either clock, with crashes caught.
//! - `real_clock`: a scenario on the actor runtime and the wall clock.
//! - `analysis`: the checker and the coverage pass, fed as events are recorded.
//! - `coverage`: which named races a run reached, and which side won.
//! - `invariants`: the checker.
//! - `protocol_check`: protocol conformance, a state machine per call.
//! - `report`: outcomes, expectations, the summary.
//! - `chrome_trace`: the run as Chrome Trace Event JSON, for Perfetto.
//! - `sweep`: one scenario under many seeds, in parallel.
//! - `shard`: a sweep's share of the seeds (`--shard K/N`) and the JSON Lines it
//!   writes for `merge`.
//! - `merge`: shard files folded into the report of one sweep.
//! - `replay`: a log folded into the projection, listed and re-checked.
//! - `timeline`: the run as readable lines (`--timeline`, and the calls under a
//!   failing run's violations).
//! - `shrink`: a failing scenario reduced to a 1-minimal one that fails the same
//!   way.

pub mod analysis;
pub mod chrome_trace;
pub mod coverage;
pub mod driver;
pub mod explore;
pub mod invariants;
pub mod merge;
pub mod protocol_check;
pub mod queue;
pub mod real_clock;
pub mod replay;
pub mod report;
pub mod shard;
pub mod shrink;
pub mod strategy;
pub mod sweep;
pub mod timeline;
pub mod world;
