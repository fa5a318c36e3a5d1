//! The exact text of a tool result that is not `pending` (SPEC §2.4, "compact
//! JSON, `serde_json::to_string`"; PROTOCOL.md 4.7), invariant
//! `result_text_exact`: the model reads the text, so a result that carries the
//! right answers with a field more, a `"custom":""`, its keys in another order
//! or an error beside them is not the contract's result, whatever it carries.
//! (`pending_text_exact` holds the pending result to its one text.)
//!
//! The text each result must be is rebuilt here from the result's own content,
//! as SPEC writes it: `{"answers":[…]}` with each item written `id`, `selected`,
//! then `custom` only when used (a timed call); `{"answers":{…}}` with the
//! delivered question texts and answer texts (a legacy call: which texts, and in
//! which order, is `answers_well_formed`'s to judge); `{"error":{"code":…,
//! "message":…}}`, marked as an error. Which answers a result must carry is
//! `no_answer_lost`'s. Pure functions of the result; each costs its length.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::message::written;
use crate::tool::{AnswerItem, ErrorCode};

#[derive(Serialize)]
struct Answers<T> {
    answers: T,
}

#[derive(Serialize)]
struct Error<'a> {
    error: ErrorBody<'a>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: &'a str,
}

/// An error result's field, as written.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ErrorFields {
    message: Option<String>,
}

/// What is wrong with a result `text` that settled a call with answers
/// (`timed`: answer items; legacy: question text → answer text), read as
/// `value`, marked `is_error`: `None` when it is the text SPEC §2.4 gives for
/// what it carries.
pub fn answers_problem(timed: bool, text: &str, value: &Value, is_error: bool) -> Option<String> {
    if is_error {
        return Some(format!("a result with answers is marked as an error: {text}"));
    }
    let answers = value.get("answers")?;
    let exact = if timed {
        // Items that are not answer items are `answers_well_formed`'s to name.
        let items = written(&Vec::<AnswerItem>::deserialize(answers).ok()?);
        format!(r#"{{"answers":{items}}}"#)
    } else {
        let texts: &Map<String, Value> = answers.as_object()?;
        serde_json::to_string(&Answers { answers: texts }).unwrap_or_default()
    };
    differs("the tool result", text, &exact)
}

/// An answers result's text as the checker reads it, kept by its text
/// ([`crate::sim::judge::reread`]: one answerer's policy gives many calls the
/// same text): its value, and what [`answers_problem`] finds in it for a timed
/// and for a legacy call, each found the first time it is asked.
pub struct AnswersRead {
    /// The text read as JSON (`Null` when it is not).
    pub value: Value,
    /// `answers_problem` of the text unmarked as an error: legacy, timed.
    problems: [OnceLock<Option<String>>; 2],
}

impl AnswersRead {
    /// The result `text` read.
    pub fn read(text: &str) -> AnswersRead {
        AnswersRead {
            value: serde_json::from_str(text).unwrap_or(Value::Null),
            problems: Default::default(),
        }
    }

    /// [`answers_problem`] of `text`, the text this was read from.
    pub fn problem(&self, timed: bool, text: &str, is_error: bool) -> Option<String> {
        if is_error {
            return answers_problem(timed, text, &self.value, is_error);
        }
        self.problems[usize::from(timed)]
            .get_or_init(|| answers_problem(timed, text, &self.value, false))
            .clone()
    }
}

/// What is wrong with an error result `text` of `code`, marked `is_error`:
/// `None` when it is `{"error":{"code":…,"message":…}}` marked as an error.
pub fn error_problem(code: ErrorCode, text: &str, is_error: bool) -> Option<String> {
    if !is_error {
        return Some(format!("an error result is not marked as an error: {text}"));
    }
    let message = serde_json::from_str::<Fields>(text)
        .ok()
        .and_then(|fields| fields.error)
        .and_then(|error| serde_json::from_str::<ErrorFields>(error.get()).ok())
        .and_then(|error| error.message);
    let Some(message) = message else {
        return Some(format!("an error result without a message text: {text}"));
    };
    let exact = Error {
        error: ErrorBody {
            code: code.as_str(),
            message: &message,
        },
    };
    differs(
        "the error result",
        text,
        &serde_json::to_string(&exact).unwrap_or_default(),
    )
}

fn differs(what: &str, text: &str, exact: &str) -> Option<String> {
    (text != exact)
        .then(|| format!("{what} is not the text SPEC §2.4 gives: {text}, where SPEC writes {exact}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`answers_problem`] of a result text, read as the checker reads it.
    fn answers_text_problem(timed: bool, text: &str, is_error: bool) -> Option<String> {
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        answers_problem(timed, text, &value, is_error)
    }

    #[test]
    fn the_contracts_texts_pass() {
        let timed = r#"{"answers":[{"id":"a","selected":["x"]},{"id":"b","selected":[],"custom":"t"}]}"#;
        assert_eq!(answers_text_problem(true, timed, false), None);
        let legacy = r#"{"answers":{"A?":"x","B?":""}}"#;
        assert_eq!(answers_text_problem(false, legacy, false), None);
        let error = r#"{"error":{"code":"ABORTED","message":"m"}}"#;
        assert_eq!(error_problem(ErrorCode::Aborted, error, true), None);
    }

    #[test]
    fn every_other_text_of_the_same_answers_is_named() {
        for text in [
            r#"{"answers":[{"id":"a","selected":["x"],"note":"n"}]}"#,
            r#"{"answers":[{"id":"a","selected":["x"],"custom":""}]}"#,
            r#"{"answers":[{"selected":["x"],"id":"a"}]}"#,
            r#"{"answers":[{"id":"a","selected":["x"]}],"ok":true}"#,
            r#"{"ok":true,"answers":[{"id":"a","selected":["x"]}]}"#,
        ] {
            let problem = answers_text_problem(true, text, false).unwrap_or_else(|| panic!("{text} passed"));
            assert!(
                problem.contains(r#"SPEC writes {"answers":[{"id":"a","selected":["x"]}]}"#),
                "{problem}"
            );
        }
        let legacy = r#"{"answers":{"A?":"x"},"error":null}"#;
        assert!(answers_text_problem(false, legacy, false).is_some());
        let marked = r#"{"answers":[{"id":"a","selected":["x"]}]}"#;
        assert!(
            answers_text_problem(true, marked, true)
                .unwrap()
                .contains("marked as an error")
        );
    }

    #[test]
    fn every_other_error_text_is_named() {
        for text in [
            r#"{"error":{"message":"m","code":"ABORTED"}}"#,
            r#"{"error":{"code":"ABORTED","message":"m","hint":"h"}}"#,
            r#"{"error":{"code":"ABORTED","message":"m"},"answers":[]}"#,
            r#"{"error":{"code":"ABORTED"}}"#,
            r#"{"error":{"code":"ABORTED","message":7}}"#,
        ] {
            assert!(
                error_problem(ErrorCode::Aborted, text, true).is_some(),
                "{text} passed"
            );
        }
        let unmarked = r#"{"error":{"code":"ABORTED","message":"m"}}"#;
        assert!(
            error_problem(ErrorCode::Aborted, unmarked, false)
                .unwrap()
                .contains("not marked")
        );
    }
}
