//! The timed tool (SPEC §2.2): its definition, its arguments and its answers shape.
//! Calls are keyed; a positive `timeout` opens a foreground window, `-1` blocks.

use serde_json::Value;

use super::limits::{ID_CHARS_MAX, chars_within, header_chars, question_chars, question_count};
use super::walk::{array, known_keys, object, optional_bool, options, parse_arguments, raw_questions, text};
use super::{AnswerItem, ArgumentError, Ask, Question, Schema, Timeout, Wait};

/// The timed definition as `asksim schema --mode timed` prints it.
pub const DEFINITION: &str = include_str!("definitions/timed.json");

/// Validates timed arguments; `default` is the configured timeout for calls that
/// pass none.
pub fn prepare(arguments: &str, default: Timeout) -> Result<Ask, ArgumentError> {
    let value = parse_arguments(arguments)?;
    let (questions, timeout_arg) = parse(&value)?;
    let timeout = match timeout_arg {
        Some(t) => t,
        None => default,
    };
    Ok(Ask {
        schema: Schema::Timed,
        questions: questions.into(),
        questions_raw: raw_questions(arguments)?,
        timeout_arg: timeout_arg.map(Timeout::as_f64),
        wait: match timeout {
            Timeout::Window(s) => Wait::Window(s),
            Timeout::Blocking => Wait::Blocking,
        },
    })
}

/// Walks the arguments in document order and stops at the first offending field.
pub fn parse(value: &Value) -> Result<(Vec<Question>, Option<Timeout>), ArgumentError> {
    let top = object(value, "arguments")?;
    known_keys(top, &["questions", "timeout"], "")?;
    let items = array(top, "questions", "", question_count)?;
    let mut questions: Vec<Question> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("questions[{i}]");
        let question = parse_question(item, &path)?;
        if questions.iter().any(|q| q.id() == question.id()) {
            return Err(ArgumentError::new(
                &format!("{path}.id"),
                format!("duplicate id {:?} within the call", question.id()),
            ));
        }
        questions.push(question);
    }
    let timeout = match top.get("timeout") {
        None => None,
        Some(v) => Some(Timeout::from_json(v).map_err(|reason| ArgumentError::new("timeout", reason))?),
    };
    Ok((questions, timeout))
}

fn parse_question(item: &Value, path: &str) -> Result<Question, ArgumentError> {
    let map = object(item, path)?;
    known_keys(map, &["id", "question", "header", "options", "multiSelect"], path)?;
    let id = text(map, "id", path, id_chars)?;
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(ArgumentError::new(
            &format!("{path}.id"),
            format!("character {bad:?} not allowed (only A-Za-z0-9_-)"),
        ));
    }
    let question = text(map, "question", path, question_chars)?;
    let header = text(map, "header", path, header_chars)?;
    let options = options(map, path)?;
    let multi_select = optional_bool(map, "multiSelect", path)?;
    Ok(Question::new(id, question, header, options, multi_select))
}

/// An `id` (timed only): 1 to [`ID_CHARS_MAX`] characters; which characters is
/// checked after.
fn id_chars(id: &str) -> Result<(), String> {
    chars_within(id, 1, ID_CHARS_MAX)
}

/// The answers result: `{"answers":[{"id":…,"selected":[…],"custom":…}]}`.
pub fn render_answers(items: &[AnswerItem]) -> String {
    #[derive(serde::Serialize)]
    struct Answers<'a> {
        answers: &'a [AnswerItem],
    }
    serde_json::to_string(&Answers { answers: items }).expect("answer items always serialise")
}
