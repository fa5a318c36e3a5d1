//! The plugin row (SPEC §2.1): which one definition is registered, and the timed
//! tool's default timeout.

use serde_json::Value;

use super::limits::{TIMEOUT_BLOCKING, TIMEOUT_S_DEFAULT, TIMEOUT_S_MAX};
use super::walk::kind;

/// Which definition is registered. Exactly one ever is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The frozen blocking tool (the default).
    Legacy,
    /// The tool with a foreground window and `pending`.
    Timed,
}

/// A timeout value: a window in seconds, or `-1` for a blocking wait.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timeout {
    /// Wait this many seconds (0 < s ≤ 86,400), then return `pending`.
    Window(f64),
    /// `-1`: block until answered, keyed.
    Blocking,
}

impl Timeout {
    /// Reads a timeout: a positive number of seconds up to 86,400, or `-1`.
    /// The error says what was wrong, without a path.
    pub fn from_json(value: &Value) -> Result<Timeout, String> {
        let Some(seconds) = value.as_f64() else {
            return Err(format!(
                "expected a positive number of seconds up to 86400, or -1, got {}",
                kind(value)
            ));
        };
        if seconds == TIMEOUT_BLOCKING {
            Ok(Timeout::Blocking)
        } else if seconds > 0.0 && seconds <= TIMEOUT_S_MAX {
            Ok(Timeout::Window(seconds))
        } else {
            Err(format!(
                "expected a positive number of seconds up to 86400, or -1, got {value}"
            ))
        }
    }

    /// The number a log or a definition shows: the seconds, or `-1`.
    pub fn as_f64(self) -> f64 {
        match self {
            Timeout::Window(s) => s,
            Timeout::Blocking => TIMEOUT_BLOCKING,
        }
    }
}

/// A plugin row that breaks SPEC §2.1, found before any agent runs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tool.{key}: {reason}")]
pub struct ConfigError {
    /// The offending key of the row (`mode`, `timeout`, or the unknown one).
    pub key: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The tool configuration: the plugin row, validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToolConfig {
    /// The registered definition.
    pub mode: Mode,
    /// The timed tool's default for calls that pass no `timeout`. Validated in
    /// both modes (a bad row is a bad row), used only in timed mode.
    pub timeout: Timeout,
}

impl Default for ToolConfig {
    /// No config: the legacy tool.
    fn default() -> Self {
        ToolConfig {
            mode: Mode::Legacy,
            timeout: Timeout::Window(TIMEOUT_S_DEFAULT),
        }
    }
}

impl ToolConfig {
    /// The timed tool with the given default timeout.
    pub fn timed(timeout: Timeout) -> Self {
        ToolConfig {
            mode: Mode::Timed,
            timeout,
        }
    }

    /// Reads a plugin row. `None` or `null` is the legacy tool.
    pub fn from_json(row: Option<&Value>) -> Result<ToolConfig, ConfigError> {
        let mut config = ToolConfig::default();
        let map = match row {
            None | Some(Value::Null) => return Ok(config),
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(ConfigError {
                    key: "config".into(),
                    reason: format!("expected an object, got {}", kind(other)),
                });
            }
        };
        for (key, value) in map {
            match key.as_str() {
                "mode" => {
                    config.mode = match value.as_str() {
                        Some("legacy") => Mode::Legacy,
                        Some("timed") => Mode::Timed,
                        _ => {
                            return Err(ConfigError {
                                key: "mode".into(),
                                reason: format!("expected \"legacy\" or \"timed\", got {value}"),
                            });
                        }
                    }
                }
                "timeout" => {
                    config.timeout = Timeout::from_json(value).map_err(|reason| ConfigError {
                        key: "timeout".into(),
                        reason,
                    })?;
                }
                other => {
                    return Err(ConfigError {
                        key: other.to_owned(),
                        reason: "unknown key (expected mode or timeout)".into(),
                    });
                }
            }
        }
        Ok(config)
    }

    /// The one definition this configuration registers, as printed by
    /// `asksim schema` (pretty JSON, byte-stable).
    pub fn definition(&self) -> &'static str {
        match self.mode {
            Mode::Legacy => super::legacy::DEFINITION,
            Mode::Timed => super::timed::DEFINITION,
        }
    }

    /// The schema every call through this configuration records.
    pub fn schema(&self) -> super::Schema {
        match self.mode {
            Mode::Legacy => super::Schema::Legacy,
            Mode::Timed => super::Schema::Timed,
        }
    }

    /// Validates a tool call's raw JSON arguments with the registered definition.
    /// Never panics, whatever the text.
    pub fn prepare(&self, arguments: &str) -> Result<super::Ask, super::ArgumentError> {
        match self.mode {
            Mode::Legacy => super::legacy::prepare(arguments),
            Mode::Timed => super::timed::prepare(arguments, self.timeout),
        }
    }
}
