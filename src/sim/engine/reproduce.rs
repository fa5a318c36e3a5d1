//! The command that reproduces a run: every flag that changes it, each word
//! quoted for a POSIX shell so a printed command pastes back exactly.

use crate::sim::engine::output::Output;
use crate::wire::Endpoint;

/// The command that reproduces a run of `file`: every flag that changes it. A
/// real-clock run's names no strategy: tokio ordered its deliveries, so
/// `--explore` would claim a choice the run never made (and `run` refuses
/// `--explore` on the real clock).
pub fn reproduce_command<V>(file: &str, output: &Output<V>) -> String {
    let explore = match output.clock {
        crate::scenario::Clock::Virtual => format!(" --explore {}", output.strategy),
        crate::scenario::Clock::Real => String::new(),
    };
    format!(
        "{}asksim run {} --seed {} --clock {}{explore}{}",
        env_prefix(),
        shell_word(file),
        output.seed,
        output.clock.as_str(),
        broker_flag(output.broker.as_ref())
    )
}

/// `ASKSIM_REPLY_WALL_S=S ` when this process runs with the per-reply limit
/// of outside processes set (PROTOCOL.md "Failures"), else nothing: a failure
/// of a process that did not reply in time reproduces only under the same
/// limit. Set without an outside process, it changes nothing and is harmless.
pub fn env_prefix() -> String {
    let name = crate::wire::REPLY_WALL_S_ENV;
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => format!("{name}={} ", shell_word(&value)),
        _ => String::new(),
    }
}

/// ` --broker-cmd CMD` for a run whose broker was an outside process, else
/// nothing.
pub fn broker_flag(broker: Option<&Endpoint>) -> String {
    match broker {
        Some(endpoint @ Endpoint::Process(_)) => {
            format!(" --broker-cmd {}", shell_word(&endpoint.shell_text()))
        }
        _ => String::new(),
    }
}

/// `word` as one word of a POSIX shell command line: as it is when it needs no
/// quoting, else quoted (shlex), so a printed command pastes back exactly. A
/// path cannot hold the one thing shlex refuses (a NUL byte).
pub fn shell_word(word: &str) -> std::borrow::Cow<'_, str> {
    shlex::try_quote(word).unwrap_or(std::borrow::Cow::Borrowed(word))
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    /// Each word reads back as itself through a POSIX shell's rules (shlex's).
    #[test]
    fn quoted_words_read_back_as_they_were() {
        let words = [
            "scenarios/quickstart.json",
            "it's a dir name/f.json",
            "",
            "a b",
            "$HOME",
            "*.json",
            "tab\there",
            "new\nline",
            "\"quoted\"",
            "'",
            "''",
            "back\\slash",
            "ünïcode ✓",
            "-flag",
        ];
        for word in words {
            let quoted = shell_word(word);
            let read = shlex::split(&quoted).expect("a shell reads it");
            assert_eq!(read, [word.to_owned()], "{word:?} printed as {quoted}");
        }
        assert_eq!(
            shell_word("scenarios/a.json"),
            "scenarios/a.json",
            "no quotes where none are needed"
        );
    }
}
