//! asksim: a reference runtime of the `ask_user_question` tool and the
//! `userQuestions` seam behind it, and a deterministic simulator that drives it.
//!
//! # Layout
//!
//! - [`tool`]: the model-facing tool, pure data and rules: the plugin row
//!   (`config`), the frozen legacy definition (`legacy`), the timed one (`timed`)
//!   and its argument walk (`walk`), the limits of SPEC §2.3 (`limits`), result
//!   shapes and messages (`result`) and answer-batch validation (`batch`).
//! - [`broker`]: `BrokerActor`, the `userQuestions` seam: identity, waterfall,
//!   windows, holds, the pending registry, exactly-once settlement.
//! - [`agent`]: `AgentActor` and `AgentHandle`: numbered tool calls, turn signals,
//!   children, user messages.
//! - [`answerer`]: the answerer protocol and `AnswererActor`, driven by a policy.
//! - [`runtime`]: the library API: start a runtime, spawn roots.
//! - [`sched`]: timers, the account of what is due, and seeded message jitter.
//! - [`event`]: the recorded event stream.
//! - [`log`]: the durable log's lines (JSON Lines), its header and the trace hash.
//! - [`projection`]: the `userQuestions` projection: the pure fold from log
//!   events to every question's state, and its snapshot cache.
//! - [`scenario`]: the scenario file format of SPEC §5, pure data and validation:
//!   reading, parsing, `count` fan-out, `repeat` unrolling, name and reference
//!   checks, and errors located as `file:line:column`.
//! - [`sim`]: the simulator: the driver (clocks, scheduled events, the end of a
//!   run), agent scripts, the invariant checker and the report.
//! - [`cli`]: the `asksim` command line (clap); `main.rs` only calls [`cli::main`].

#![warn(missing_docs)]

pub mod agent;
pub mod answerer;
pub mod broker;
pub mod cli;
pub mod event;
pub mod log;
pub mod policy;
pub mod projection;
pub mod runtime;
pub mod scenario;
pub mod sched;
pub mod sim;
pub mod tool;
