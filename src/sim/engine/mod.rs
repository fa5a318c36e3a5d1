//! The running room: one run of a scenario, from its first delivery to the point
//! where nothing can change any more.
//!
//! - `schedule`: what is delivered next: `queue` (per-pair FIFO channels,
//!   timers, what is due), `ready` (what is deliverable now, with rank and
//!   select in O(log n)) and `strategy` (which tied delivery goes first:
//!   random, PCT, FIFO, a schedule), each re-exported here.
//! - `world`: the simulated actors, executing the sans-IO handlers' effects.
//! - `recording`: where the world's events are recorded: in place, or through a
//!   journal on another core once the run is large.
//! - `slots`: what holds the broker and each answerer: asksim's own state
//!   machines, or outside processes (`crate::wire`).
//! - `driver`: one run on either clock, a panic caught as the run's crash, and
//!   the [`driver::Watch`] through which a judge sees it as it happens.
//! - `real_clock`: a scenario on the actor runtime and the wall clock.
//! - `log_file`: a run's durable log: its header, and reading it back to resume.
//! - `output`: what a run produced, and why it stopped ([`output::Limit`]);
//!   `finals`: its scripts' final results, found by agent when asked.
//! - `reproduce`: the command that runs it again.
//! - `tap`: an observer of the event stream the caller takes back after the run.
//!
//! This room never judges and never shows: it imports nothing of `judge`, `show`
//! or `hunt`. What watches a run is handed in; what it concludes rides out in
//! [`output::Output`] as an opaque `V`.

pub mod driver;
pub mod finals;
pub mod log_file;
pub mod output;
pub mod real_clock;
pub mod recording;
pub mod reproduce;
pub mod schedule;
pub mod slots;
pub mod tap;
pub mod world;

pub use schedule::{queue, ready, strategy};
