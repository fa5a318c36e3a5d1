//! The judging room: what a run's events mean. It reads the engine's output and
//! event stream and never drives a run of its own (but for [`judged`], which hands
//! the engine its watcher), never prints, and never reaches into actors.
//!
//! - `analysis`: the checker and the coverage pass, fed as events are recorded
//!   (the engine's [`crate::sim::engine::driver::Watch`]).
//! - `call_ix`: each callId's number, and the records the parts keep by it.
//! - `invariants`: the invariant checker of SPEC §6.
//! - `protocol_check`: protocol conformance, a reference state machine per call.
//! - `turns`: the turn signals as the log tells them, for both checkers.
//! - `violation`: a broken invariant, as every report names it.
//! - `coverage`: which named races a run reached, and which side won.
//! - `outcomes`: how the calls settled.
//! - `summary`: the verdicts, throughput, figures: the [`summary::Summary`].
//! - `expect`: the scenario's `expect` block against the run.
//! - `latency`: latency and lateness percentiles.
//! - `judged`: a run with the analysis watching it ([`judged::RunOutput`]).

pub mod analysis;
pub mod call_ix;
pub mod coverage;
pub mod expect;
pub mod first_results;
pub mod invariants;
pub mod judged;
pub mod latency;
pub mod outcomes;
pub mod protocol_check;
pub(crate) mod reread;
pub mod summary;
pub mod turns;
pub mod violation;
