//! asksim: a reference runtime of the `ask_user_question` tool and the
//! `userQuestions` seam behind it, and a deterministic simulator that drives it.
//!
//! # Layout
//!
//! - [`tool`]: the model-facing tool, pure data and rules: the plugin row
//!   (`config`), the frozen legacy definition (`legacy`), the timed one (`timed`),
//!   the limits of SPEC §2.3 (`limits`), result shapes and messages (`result`) and
//!   answer-batch validation (`batch`).
//! - [`scenario`]: the scenario file format of SPEC §5, pure data and validation:
//!   reading, parsing, `count` fan-out, `repeat` unrolling, name and reference
//!   checks, and errors located as `file:line:column`.
//! - [`cli`]: the `asksim` command line (clap); `main.rs` only calls [`cli::main`].

#![warn(missing_docs)]

pub mod cli;
pub mod scenario;
pub mod tool;
