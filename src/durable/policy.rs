//! How durable a log line is before the effect it records may leave the
//! process (SPEC §4.1): the three sync policies, their names on the command line
//! (`run --sync`), and what each costs (measured in BENCHMARKS.md,
//! "Issue #20").
//!
//! A policy only says when a line counts as durable; the write-ahead rule itself
//! (nothing leaves before its line is durable) is the gate's
//! ([`super::gate`]), and it holds under every policy.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The group-commit window when none is given: lines wait at most this long
/// after the first unsynced one before one `fdatasync` makes them all durable.
pub const GROUP_WINDOW_DEFAULT: Duration = Duration::from_millis(2);
/// The longest group-commit window accepted: longer would hold every answer
/// back for a time a user notices.
pub const GROUP_WINDOW_MAX: Duration = Duration::from_millis(100);

/// When a line of the log is durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Group commit (the default): lines are gathered for at most `window` after
    /// the first one not yet synced, then written and synced with one
    /// `fdatasync`. The recording actor never waits; what its decision sends out
    /// of the process waits in the gate until the sync, and a sync serves every
    /// line gathered (tens of thousands under load). It survives a power loss.
    Group {
        /// The longest a line waits for its sync to start.
        window: Duration,
    },
    /// Every line is written and synced with its own `fdatasync` before
    /// recording returns: nothing waits in the gate, but every recorded event
    /// costs a disk flush while the recorder is locked. It survives a power loss.
    Every,
    /// Every line is written to the operating system before recording returns
    /// and never synced: it survives the process being killed (SIGKILL), not the
    /// machine losing power. For tests and benchmarks.
    None,
}

impl Default for SyncPolicy {
    fn default() -> Self {
        SyncPolicy::Group {
            window: GROUP_WINDOW_DEFAULT,
        }
    }
}

impl SyncPolicy {
    /// Whether lines become durable later than they are appended (effects then
    /// wait in the gate).
    pub fn deferred(self) -> bool {
        matches!(self, SyncPolicy::Group { .. })
    }
}

impl fmt::Display for SyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncPolicy::Group { window } if *window == GROUP_WINDOW_DEFAULT => f.write_str("group"),
            SyncPolicy::Group { window } => write!(f, "group:{}", window.as_millis()),
            SyncPolicy::Every => f.write_str("every"),
            SyncPolicy::None => f.write_str("none"),
        }
    }
}

/// A sync policy that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(String);

impl FromStr for SyncPolicy {
    type Err = PolicyError;

    /// `group` (the default window), `group:MS` (a window of MS milliseconds,
    /// 0 to 100), `every` or `none`.
    fn from_str(text: &str) -> Result<SyncPolicy, PolicyError> {
        let max_ms = GROUP_WINDOW_MAX.as_millis();
        match text {
            "group" => Ok(SyncPolicy::default()),
            "every" => Ok(SyncPolicy::Every),
            "none" => Ok(SyncPolicy::None),
            _ => {
                let ms = text
                    .strip_prefix("group:")
                    .and_then(|ms| ms.parse::<u64>().ok())
                    .filter(|ms| u128::from(*ms) <= max_ms)
                    .ok_or_else(|| {
                        PolicyError(format!(
                            "expected group, group:MS (0 to {max_ms} ms), every or none, got {text:?}"
                        ))
                    })?;
                Ok(SyncPolicy::Group {
                    window: Duration::from_millis(ms),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_reads_back_from_its_name() {
        for policy in [
            SyncPolicy::default(),
            SyncPolicy::Group {
                window: Duration::from_millis(7),
            },
            SyncPolicy::Every,
            SyncPolicy::None,
        ] {
            assert_eq!(policy.to_string().parse::<SyncPolicy>(), Ok(policy));
        }
    }

    #[test]
    fn a_window_over_the_bound_or_a_stranger_is_refused() {
        for text in ["group:101", "group:-1", "group:", "fsync", ""] {
            assert!(text.parse::<SyncPolicy>().is_err(), "{text}");
        }
    }
}
