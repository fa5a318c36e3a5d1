//! An outside process that failed a run (PROTOCOL.md "Failures"): it exited,
//! did not answer within the wall-clock limit, or wrote a line that is not the
//! protocol. The run ends there, as failed (exit 1), and the report shows why,
//! what asksim had written, the offending line and the tail of its stderr. (A
//! command that cannot start is caught by the CLI before the first run, exit 2:
//! `cli::actor::outside_checked`.)

use serde::{Deserialize, Serialize};

/// The longest piece of a line a report shows.
const SHOWN_CHARS_MAX: usize = 2_000;

/// Why an outside process failed the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessFailure {
    /// Which process: `broker`, or `answerer NAME`.
    pub who: String,
    /// Its command, quoted for a POSIX shell.
    pub command: String,
    /// What happened.
    pub reason: String,
    /// The last line asksim wrote to it, if any.
    pub sent: Option<String>,
    /// The line at fault, if any.
    pub line: Option<String>,
    /// The last lines it wrote to stderr.
    pub stderr: String,
}

impl ProcessFailure {
    /// The failure as one line: who, and why (a shrink signature compares it).
    pub fn summary(&self) -> String {
        format!("the outside {} failed: {}", self.who, self.reason)
    }
}

/// At most [`SHOWN_CHARS_MAX`] characters of `text`, saying how much was left out.
pub fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS_MAX) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… ({} more bytes)", &text[..at], text.len() - at),
    }
}

impl std::fmt::Display for ProcessFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} ({})", self.summary(), self.command)?;
        if let Some(sent) = &self.sent {
            writeln!(f, "    asksim wrote: {}", shown(sent))?;
        }
        if let Some(line) = &self.line {
            // A second line behind the reply shows under it.
            let shown = shown(line).replace('\n', "\n                  ");
            writeln!(f, "    it replied:   {shown}")?;
        }
        let stderr = self.stderr.trim_end();
        if stderr.is_empty() {
            write!(f, "    its stderr:   (nothing)")
        } else {
            write!(f, "    its stderr (last lines):")?;
            for line in stderr.lines() {
                write!(f, "\n      {line}")?;
            }
            Ok(())
        }
    }
}
