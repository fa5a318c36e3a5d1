//! The legacy tool, frozen (SPEC §2.2): the shape agents already emit, blocking and
//! unkeyed, with its own definition, argument walk and result mapping. It shares
//! only the limit checks of SPEC §2.3 (`limits`) with the timed tool, so a change
//! to the timed tool's walk cannot reach it; `tests/legacy_timed_walks.rs` holds
//! the two walks to the same path and message for the same defect.
//!
//! Nothing here may change: `definitions/legacy.json` is pinned byte for byte by a
//! golden test, and old logs replay without this code (the projection reads the
//! recorded schema, never this module).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::limits::{
    description_chars, header_chars, label_chars, label_unique, option_count, question_chars, question_count,
};
use super::walk::raw_questions;
use super::{AnswerItem, ArgumentError, Ask, Question, QuestionOption, Schema, Wait};

/// The legacy definition as `asksim schema --mode legacy` prints it. Frozen.
pub const DEFINITION: &str = include_str!("definitions/legacy.json");

/// Validates legacy arguments. Each question's id is its text.
pub fn prepare(arguments: &str) -> Result<Ask, ArgumentError> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| ArgumentError::new("arguments", format!("not valid JSON: {e}")))?;
    let questions = parse(&value)?;
    Ok(Ask {
        schema: Schema::Legacy,
        questions: questions.into(),
        questions_raw: raw_questions(arguments)?,
        timeout_arg: None,
        wait: Wait::Blocking,
    })
}

/// Walks legacy arguments in document order and stops at the first offending field.
/// The limits are those of SPEC §2.3, checked by `limits`; the walk is this
/// module's own, so no change to the timed tool's can reach it.
pub fn parse(value: &Value) -> Result<Vec<Question>, ArgumentError> {
    let top = as_object(value, "arguments")?;
    only_keys(top, &["questions"], "")?;
    let items = required_array(top, "questions", "")?;
    question_count(items.len()).map_err(|reason| ArgumentError::new("questions", reason))?;
    let mut questions: Vec<Question> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let question = parse_question(item, &format!("questions[{i}]"), &questions)?;
        questions.push(question);
    }
    Ok(questions)
}

/// One question at `path`; its text must differ from the `earlier` ones'.
fn parse_question(item: &Value, path: &str, earlier: &[Question]) -> Result<Question, ArgumentError> {
    let map = as_object(item, path)?;
    only_keys(map, &["question", "header", "options", "multiSelect"], path)?;
    let question = required_string(map, "question", path, question_chars)?;
    if earlier.iter().any(|q| q.question() == question) {
        return Err(ArgumentError::new(
            &format!("{path}.question"),
            "duplicate question text within the call",
        ));
    }
    let header = required_string(map, "header", path, header_chars)?;
    let options = parse_options(map, path)?;
    let multi_select = match map.get("multiSelect") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ArgumentError::new(
                &format!("{path}.multiSelect"),
                format!("expected a boolean, got {}", type_name(other)),
            ));
        }
    };
    Ok(Question::new(question, question, header, options, multi_select))
}

/// The options of the question at `path`.
fn parse_options<'a>(
    question: &'a Map<String, Value>,
    path: &str,
) -> Result<Vec<QuestionOption<'a>>, ArgumentError> {
    let items = required_array(question, "options", path)?;
    option_count(items.len()).map_err(|reason| ArgumentError::new(&format!("{path}.options"), reason))?;
    let mut options: Vec<QuestionOption<'a>> = Vec::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        let path = format!("{path}.options[{j}]");
        let map = as_object(item, &path)?;
        only_keys(map, &["label", "description"], &path)?;
        let label = required_string(map, "label", &path, label_chars)?;
        label_unique(options.iter().map(|o| o.label), label)
            .map_err(|reason| ArgumentError::new(&format!("{path}.label"), reason))?;
        let description = match map.get("description") {
            None => "",
            Some(value) => string(value, &format!("{path}.description"), description_chars)?,
        };
        options.push(QuestionOption { label, description });
    }
    Ok(options)
}

fn as_object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ArgumentError> {
    value
        .as_object()
        .ok_or_else(|| ArgumentError::new(path, format!("expected an object, got {}", type_name(value))))
}

/// Refuses the first key (in document order) that is not `allowed`.
fn only_keys(map: &Map<String, Value>, allowed: &[&str], path: &str) -> Result<(), ArgumentError> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(ArgumentError::new(&field_path(path, key), "unknown field")),
        None => Ok(()),
    }
}

fn required_array<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a [Value], ArgumentError> {
    let path = field_path(path, key);
    match map.get(key) {
        None => Err(ArgumentError::new(&path, "required field is missing")),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(ArgumentError::new(
            &path,
            format!("expected an array, got {}", type_name(other)),
        )),
    }
}

fn required_string<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
    limit: fn(&str) -> Result<(), String>,
) -> Result<&'a str, ArgumentError> {
    let path = field_path(path, key);
    match map.get(key) {
        None => Err(ArgumentError::new(&path, "required field is missing")),
        Some(value) => string(value, &path, limit),
    }
}

/// The string at `path`, within its `limit`.
fn string<'a>(
    value: &'a Value,
    path: &str,
    limit: fn(&str) -> Result<(), String>,
) -> Result<&'a str, ArgumentError> {
    let Value::String(s) = value else {
        return Err(ArgumentError::new(
            path,
            format!("expected a string, got {}", type_name(value)),
        ));
    };
    limit(s).map_err(|reason| ArgumentError::new(path, reason))?;
    Ok(s)
}

fn field_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The legacy result: `{"answers":{"<question text>":"<answer text>"}}`, in
/// question order. The answer text is the label, several labels joined by `", "`,
/// or the custom text (replacing a single-select's labels, appended after a
/// multi-select's); a skipped question maps to `""`.
pub fn render_answers(questions: &[Question], items: &[AnswerItem]) -> String {
    let answers = LegacyAnswers { questions, items };
    let mut out = String::from("{\"answers\":");
    out.push_str(&serde_json::to_string(&answers).expect("legacy answers always serialise"));
    out.push('}');
    out
}

struct LegacyAnswers<'a> {
    questions: &'a [Question],
    items: &'a [AnswerItem],
}

impl Serialize for LegacyAnswers<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.questions.len()))?;
        for question in self.questions {
            let text = self
                .items
                .iter()
                .find(|item| item.id == question.id())
                .map(|item| answer_text(question, item))
                .unwrap_or_default();
            map.serialize_entry(question.question(), &text)?;
        }
        map.end()
    }
}

fn answer_text(question: &Question, item: &AnswerItem) -> String {
    match (&item.custom, question.multi_select()) {
        (Some(custom), false) => custom.clone(),
        (Some(custom), true) => {
            let mut parts: Vec<&str> = item.selected.iter().map(String::as_str).collect();
            parts.push(custom);
            parts.join(", ")
        }
        (None, _) => item.selected.join(", "),
    }
}
