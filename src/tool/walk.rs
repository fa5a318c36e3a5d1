//! The walk over the timed tool's arguments: typed access to JSON fields that
//! names the path of the first offending one, with the limits of SPEC §2.3 applied
//! through `limits`. The plugin row and answer batches name JSON types in their
//! messages with [`kind`].
//!
//! The frozen legacy tool never uses this module: it has its own walk in
//! `legacy.rs` (SPEC §2.2, it "shares no schema or mapping code with the timed
//! tool"), so a change here cannot reach it. A test holds the two walks to the same
//! path and message for the same defect in the fields they share.

use serde_json::{Map, Value};

use super::limits::{description_chars, label_chars, label_unique, option_count};
use super::{ArgumentError, QuestionOption};

/// The rule a text field obeys, from `limits`.
pub(crate) type TextRule = fn(&str) -> Result<(), String>;

/// The object at `path`, or an error naming it.
pub(crate) fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ArgumentError> {
    value
        .as_object()
        .ok_or_else(|| ArgumentError::new(path, format!("expected an object, got {}", kind(value))))
}

/// Refuses the first key of `map` (in document order) that is not in `allowed`.
pub(crate) fn known_keys(
    map: &Map<String, Value>,
    allowed: &[&str],
    path: &str,
) -> Result<(), ArgumentError> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(ArgumentError::new(&join(path, key), "unknown field")),
        None => Ok(()),
    }
}

/// A required string field that obeys `rule`.
pub(crate) fn text<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
    rule: TextRule,
) -> Result<&'a str, ArgumentError> {
    let path = join(path, key);
    let value = map
        .get(key)
        .ok_or_else(|| ArgumentError::new(&path, "required field is missing"))?;
    string(value, &path, rule)
}

/// An optional string field that obeys `rule`; empty when absent.
pub(crate) fn optional_text<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
    rule: TextRule,
) -> Result<&'a str, ArgumentError> {
    match map.get(key) {
        None => Ok(""),
        Some(value) => string(value, &join(path, key), rule),
    }
}

/// An optional boolean field; `false` when absent.
pub(crate) fn optional_bool(map: &Map<String, Value>, key: &str, path: &str) -> Result<bool, ArgumentError> {
    match map.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(ArgumentError::new(
            &join(path, key),
            format!("expected a boolean, got {}", kind(other)),
        )),
    }
}

/// The required array field `key`, whose length obeys `count`.
pub(crate) fn array<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
    count: fn(usize) -> Result<(), String>,
) -> Result<&'a [Value], ArgumentError> {
    let path = join(path, key);
    let value = map
        .get(key)
        .ok_or_else(|| ArgumentError::new(&path, "required field is missing"))?;
    let items = value
        .as_array()
        .ok_or_else(|| ArgumentError::new(&path, format!("expected an array, got {}", kind(value))))?;
    count(items.len()).map_err(|reason| ArgumentError::new(&path, reason))?;
    Ok(items)
}

/// The options of the question at `path`: 2 to 4, labels non-empty and unique.
pub(crate) fn options<'a>(
    map: &'a Map<String, Value>,
    path: &str,
) -> Result<Vec<QuestionOption<'a>>, ArgumentError> {
    let items = array(map, "options", path, option_count)?;
    let mut options: Vec<QuestionOption<'a>> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("{path}.options[{i}]");
        let option = object(item, &path)?;
        known_keys(option, &["label", "description"], &path)?;
        let label = text(option, "label", &path, label_chars)?;
        label_unique(options.iter().map(|seen| seen.label), label)
            .map_err(|reason| ArgumentError::new(&format!("{path}.label"), reason))?;
        let description = optional_text(option, "description", &path, description_chars)?;
        options.push(QuestionOption { label, description });
    }
    Ok(options)
}

/// The string at `path`, which obeys `rule`.
fn string<'a>(value: &'a Value, path: &str, rule: TextRule) -> Result<&'a str, ArgumentError> {
    let s = value
        .as_str()
        .ok_or_else(|| ArgumentError::new(path, format!("expected a string, got {}", kind(value))))?;
    rule(s).map_err(|reason| ArgumentError::new(path, reason))?;
    Ok(s)
}

/// `path.key`, or `key` at the top level.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The JSON type of `value`, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses a call's raw arguments text. Malformed or too deeply nested text is an
/// error at `arguments`, never a panic (serde_json bounds its recursion).
pub(crate) fn parse_arguments(arguments: &str) -> Result<Value, ArgumentError> {
    serde_json::from_str(arguments)
        .map_err(|e| ArgumentError::new("arguments", format!("not valid JSON: {e}")))
}

/// The text of the `questions` argument exactly as the model sent it. Called only
/// after validation, so the field exists; a repeated `questions` key is refused
/// here (serde_json's `Value` keeps the last one silently).
pub(crate) fn raw_questions(
    arguments: &str,
) -> Result<std::sync::Arc<serde_json::value::RawValue>, ArgumentError> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        questions: &'a serde_json::value::RawValue,
    }
    serde_json::from_str::<Raw>(arguments)
        .map(|raw| std::sync::Arc::from(raw.questions.to_owned()))
        .map_err(|e| ArgumentError::new("questions", format!("unreadable: {e}")))
}
