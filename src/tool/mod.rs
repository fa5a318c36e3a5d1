//! The model-facing `ask_user_question` tool: configuration, the two definitions,
//! argument validation, answer batches and the exact JSON a model sees.
//!
//! Everything here is pure data and rules: no actors, no clocks, no I/O. The broker
//! (`crate::broker`) receives only what [`ToolConfig::prepare`] accepted, so nothing
//! past this module ever sees malformed arguments.
//!
//! The legacy tool lives in [`legacy`], frozen: its definition, its argument walk
//! and its result mapping share nothing with [`timed`] but the limit checks of
//! SPEC §2.3 in [`limits`], which the contract states once for both tools. The
//! timed tool walks its arguments with `walk`, which the legacy tool never uses.

pub mod batch;
pub mod config;
mod json;
pub mod legacy;
pub mod limits;
pub mod question;
pub mod result;
pub mod timed;
mod walk;

pub use batch::{BatchRefusal, validate_batch};
pub use config::{ConfigError, Mode, Timeout, ToolConfig};
pub use question::{AnswerItem, Ask, Question, QuestionOption, Schema, Wait};
pub(crate) use result::pending_parts;
pub use result::{ErrorCode, PENDING_MESSAGE, ResultKind, ToolResult};

/// The tool's name, the same in both definitions.
pub const TOOL_NAME: &str = "ask_user_question";

/// Arguments that break SPEC §2.3: the path of the first offending field and why.
///
/// Its `Display` is the message the model reads, e.g.
/// `questions[1].options: expected 2 to 4 options, got 1`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ArgumentError {
    /// Where: `questions[1].options`, or `arguments` for the whole value.
    pub path: String,
    /// What is wrong there.
    pub reason: String,
}

impl ArgumentError {
    pub(crate) fn new(path: &str, reason: impl Into<String>) -> Self {
        ArgumentError {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }

    /// The tool result this error settles the call with.
    pub fn to_result(&self) -> ToolResult {
        ToolResult::error(ErrorCode::InvalidArguments, &self.to_string())
    }
}
