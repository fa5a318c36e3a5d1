//! The showing room: a judged run as a person reads it. It formats what the
//! engine recorded and the judge concluded; it never runs, never judges (a
//! verdict it prints is one it was given) and never writes a log.
//!
//! - `report`: the human table of one run.
//! - `timeline`: the run as readable lines (`--timeline`, and the calls under a
//!   failing run's violations).
//! - `chrome_trace`: the run as Chrome Trace Event JSON, for Perfetto.

pub mod chrome_trace;
pub mod report;
pub mod timeline;
