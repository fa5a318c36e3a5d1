//! The limits of SPEC §2.3, as named constants, and the pure checks that apply
//! them to values already taken out of a call's arguments.
//!
//! The contract states these limits once, for both tools, so both call the checks
//! below: the frozen legacy tool from its own walk (`legacy.rs`), the timed tool
//! through `walk.rs`. This is all the two tools share (SPEC §2.2). Nothing here
//! reads JSON or knows a path: a check returns the reason, and the walk that
//! called it names the field, so a model can repair its call.

/// Fewest questions in one call.
pub const QUESTIONS_PER_CALL_MIN: usize = 1;
/// Most questions in one call.
pub const QUESTIONS_PER_CALL_MAX: usize = 4;
/// Fewest options a question offers.
pub const OPTIONS_PER_QUESTION_MIN: usize = 2;
/// Most options a question offers.
pub const OPTIONS_PER_QUESTION_MAX: usize = 4;
/// Longest `header`, in characters (Unicode scalar values); it must be non-empty.
pub const HEADER_CHARS_MAX: usize = 12;
/// Longest question `id` (timed tool), in characters of `A-Za-z0-9_-`.
pub const ID_CHARS_MAX: usize = 64;
/// Longest `question` text, in characters; it must be non-empty.
pub const QUESTION_CHARS_MAX: usize = 1_000;
/// Longest option `label`, in characters; it must be non-empty.
pub const LABEL_CHARS_MAX: usize = 120;
/// Longest option `description`, in characters; it may be empty or omitted.
pub const DESCRIPTION_CHARS_MAX: usize = 500;
/// Longest foreground window a timed call may ask for, in seconds (one day).
pub const TIMEOUT_S_MAX: f64 = 86_400.0;
/// The timeout value that asks a timed call to block until answered.
pub const TIMEOUT_BLOCKING: f64 = -1.0;
/// The configured default window when the plugin row gives none, in seconds.
pub const TIMEOUT_S_DEFAULT: f64 = 120.0;

/// One call's number of questions: 1 to 4.
pub(crate) fn question_count(n: usize) -> Result<(), String> {
    count_within(n, (QUESTIONS_PER_CALL_MIN, QUESTIONS_PER_CALL_MAX), "questions")
}

/// One question's number of options: 2 to 4.
pub(crate) fn option_count(n: usize) -> Result<(), String> {
    count_within(n, (OPTIONS_PER_QUESTION_MIN, OPTIONS_PER_QUESTION_MAX), "options")
}

/// A `question` text: non-empty, at most [`QUESTION_CHARS_MAX`] characters.
pub(crate) fn question_chars(text: &str) -> Result<(), String> {
    chars_within(text, 1, QUESTION_CHARS_MAX)
}

/// A `header`: 1 to [`HEADER_CHARS_MAX`] characters.
pub(crate) fn header_chars(text: &str) -> Result<(), String> {
    chars_within(text, 1, HEADER_CHARS_MAX)
}

/// An option `label`: non-empty, at most [`LABEL_CHARS_MAX`] characters.
pub(crate) fn label_chars(text: &str) -> Result<(), String> {
    chars_within(text, 1, LABEL_CHARS_MAX)
}

/// An option `description`: possibly empty, at most [`DESCRIPTION_CHARS_MAX`]
/// characters.
pub(crate) fn description_chars(text: &str) -> Result<(), String> {
    chars_within(text, 0, DESCRIPTION_CHARS_MAX)
}

/// Labels are unique within a question: `label` is not one of the `earlier` ones.
pub(crate) fn label_unique<'a>(
    mut earlier: impl Iterator<Item = &'a str>,
    label: &str,
) -> Result<(), String> {
    if earlier.any(|seen| seen == label) {
        Err(format!("duplicate label {label:?} within the question"))
    } else {
        Ok(())
    }
}

/// `n` items, called `noun` in the message, within `min..=max`.
fn count_within(n: usize, (min, max): (usize, usize), noun: &str) -> Result<(), String> {
    if n < min || n > max {
        Err(format!("expected {min} to {max} {noun}, got {n}"))
    } else {
        Ok(())
    }
}

/// A text of `chars_min..=chars_max` characters: Unicode scalar values
/// (`chars()`), not bytes.
pub(crate) fn chars_within(text: &str, chars_min: usize, chars_max: usize) -> Result<(), String> {
    let chars = text.chars().count();
    if chars < chars_min {
        Err("must not be empty".to_owned())
    } else if chars > chars_max {
        Err(format!("expected at most {chars_max} characters, got {chars}"))
    } else {
        Ok(())
    }
}
