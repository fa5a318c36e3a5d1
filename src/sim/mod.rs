//! The simulator: drives the runtime from a scenario, checks the invariants of
//! SPEC §6 on its event stream, and reports.
//!
//! - `driver`: clocks, scheduled events, and the end of a run.
//! - `script`: the agents' scripts over their handles.
//! - `invariants`: the checker.
//! - `report`: outcomes, expectations, the summary and the trace hash.
//! - `chrome_trace`: the run as Chrome Trace Event JSON, for Perfetto.
//! - `sweep`: one scenario under many seeds, in parallel.
//! - `replay`: a log folded into the projection, listed and re-checked.

pub mod chrome_trace;
pub mod driver;
pub mod invariants;
pub mod replay;
pub mod report;
pub mod script;
pub mod sweep;
