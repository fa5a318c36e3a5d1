//! The command that reproduces a run: every flag that changes it, each word
//! quoted for a POSIX shell so a printed command pastes back exactly.

use crate::sim::engine::output::Output;

/// The command that reproduces a run of `file`: every flag that changes it.
pub fn reproduce_command<V>(file: &str, output: &Output<V>) -> String {
    let clock = output.clock.as_str();
    format!(
        "asksim run {} --seed {} --clock {clock} --explore {}",
        shell_word(file),
        output.seed,
        output.strategy
    )
}

/// `word` as one word of a POSIX shell command line: as it is when it needs no
/// quoting (only letters, digits and `_-./:=@%+,`), else in single quotes, each
/// `'` written `'\''` (close, an escaped quote, reopen), so a printed command
/// pastes back exactly. POSIX single quotes keep every other byte as it is. This
/// is the whole rule (the library carries no shell-words crate; tests check it
/// against shlex's reading).
pub fn shell_word(word: &str) -> std::borrow::Cow<'_, str> {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_-./:=@%+,".contains(&b);
    if !word.is_empty() && word.bytes().all(plain) {
        return std::borrow::Cow::Borrowed(word);
    }
    std::borrow::Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
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
