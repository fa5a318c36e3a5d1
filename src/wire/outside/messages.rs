//! The user messages a broker writes (the `message` of a `late_answer`, and of
//! a `NO_ANSWERER` `withdrawn`) are the exact texts PROTOCOL.md 4.7 builds: the
//! model reads them byte for byte. One built otherwise (spaced JSON, keys in
//! another order, the questions re-serialised instead of spliced) fails the run
//! here, saying where it departs from the text, where the checker would only
//! see a message whose questions differ from the call's.

use serde_json::value::RawValue;

use crate::tool::result::{late_answer_message, withdrawal_message};
use crate::tool::{AnswerItem, ErrorCode};

/// How much of each text a report shows from where they part.
const SHOWN_CHARS: usize = 48;

/// The late answer's `message`, against the text built from the call's
/// `questions_text` and the effect's own `answers` (a call restored without
/// questions has none to build from: nothing to compare).
pub fn late_answer(
    call_id: &str,
    questions_text: Option<&RawValue>,
    answers: &[AnswerItem],
    message: &str,
) -> Result<(), String> {
    let Some(questions) = questions_text else {
        return Ok(());
    };
    let built = late_answer_message(call_id, questions.get(), answers);
    exact(
        &format!("the late answer's message for {call_id}"),
        &built,
        message,
    )
}

/// A `NO_ANSWERER` withdrawal's `message`, when it has one.
pub fn withdrawal(call_id: &str, message: &str) -> Result<(), String> {
    let built = withdrawal_message(call_id, ErrorCode::NoAnswerer);
    exact(&format!("the withdrawal message for {call_id}"), &built, message)
}

fn exact(what: &str, built: &str, got: &str) -> Result<(), String> {
    if built == got {
        return Ok(());
    }
    let at = (built.bytes().zip(got.bytes()))
        .position(|(a, b)| a != b)
        .unwrap_or(built.len().min(got.len()));
    Err(format!(
        "{what} is not the compact text PROTOCOL.md 4.7 builds: from byte {at} it reads {:?} where the text is {:?}",
        from(got, at),
        from(built, at)
    ))
}

/// A few characters of `text` from byte `at` (or the character holding it).
fn from(text: &str, at: usize) -> String {
    let start = (0..=at.min(text.len()))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let shown: String = text[start..].chars().take(SHOWN_CHARS).collect();
    match text[start..].chars().nth(SHOWN_CHARS) {
        Some(_) => format!("{shown}…"),
        None => shown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_that_departs_from_the_text_is_shown_where_it_parts() {
        let ok = withdrawal_message("root/1", ErrorCode::NoAnswerer);
        assert_eq!(withdrawal("root/1", &ok), Ok(()));
        let spaced = ok.replace(",", ", ");
        let why = withdrawal("root/1", &spaced).unwrap_err();
        assert!(why.contains("from byte 37 it reads \" \\\"tool\\\""), "{why}");
        let short = withdrawal("root/1", "{").unwrap_err();
        assert!(short.contains("from byte 1 it reads \"\" where"), "{short}");
        assert_eq!(from("ééé", 3), "éé");
    }
}
