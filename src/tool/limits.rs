//! The limits of SPEC §2.3, as named constants, and the checks that apply them.
//!
//! Both tools obey these limits (the contract states them once, for both), so the
//! legacy tool shares the checks below; it shares no schema or result mapping.
//! Every check names the path of the offending field, so a model can repair its call.

use serde_json::{Map, Value};

use super::ArgumentError;

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

/// A required string field of `chars_min..=chars_max` characters.
pub(crate) fn text<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
    chars_max: usize,
) -> Result<&'a str, ArgumentError> {
    let path = join(path, key);
    let value = map
        .get(key)
        .ok_or_else(|| ArgumentError::new(&path, "required field is missing"))?;
    string_within(value, &path, 1, chars_max)
}

/// An optional string field of at most `chars_max` characters; empty when absent.
pub(crate) fn optional_text<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
    chars_max: usize,
) -> Result<&'a str, ArgumentError> {
    match map.get(key) {
        None => Ok(""),
        Some(value) => string_within(value, &join(path, key), 0, chars_max),
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

/// The required array field `key`, with `min..=max` elements named `noun`.
pub(crate) fn array<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
    (min, max): (usize, usize),
    noun: &str,
) -> Result<&'a [Value], ArgumentError> {
    let path = join(path, key);
    let value = map
        .get(key)
        .ok_or_else(|| ArgumentError::new(&path, "required field is missing"))?;
    let items = value
        .as_array()
        .ok_or_else(|| ArgumentError::new(&path, format!("expected an array, got {}", kind(value))))?;
    if items.len() < min || items.len() > max {
        return Err(ArgumentError::new(
            &path,
            format!("expected {min} to {max} {noun}, got {}", items.len()),
        ));
    }
    Ok(items)
}

/// The options of the question at `path`: 2 to 4, labels non-empty and unique.
pub(crate) fn options(map: &Map<String, Value>, path: &str) -> Result<Vec<(String, String)>, ArgumentError> {
    let items = array(
        map,
        "options",
        path,
        (OPTIONS_PER_QUESTION_MIN, OPTIONS_PER_QUESTION_MAX),
        "options",
    )?;
    let mut options: Vec<(String, String)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("{path}.options[{i}]");
        let option = object(item, &path)?;
        known_keys(option, &["label", "description"], &path)?;
        let label = text(option, "label", &path, LABEL_CHARS_MAX)?;
        if options.iter().any(|(seen, _)| seen == label) {
            return Err(ArgumentError::new(
                &format!("{path}.label"),
                format!("duplicate label {label:?} within the question"),
            ));
        }
        let description = optional_text(option, "description", &path, DESCRIPTION_CHARS_MAX)?;
        options.push((label.to_owned(), description.to_owned()));
    }
    Ok(options)
}

fn string_within<'a>(
    value: &'a Value,
    path: &str,
    chars_min: usize,
    chars_max: usize,
) -> Result<&'a str, ArgumentError> {
    let s = value
        .as_str()
        .ok_or_else(|| ArgumentError::new(path, format!("expected a string, got {}", kind(value))))?;
    let chars = s.chars().count();
    if chars < chars_min {
        return Err(ArgumentError::new(path, "must not be empty"));
    }
    if chars > chars_max {
        return Err(ArgumentError::new(
            path,
            format!("expected at most {chars_max} characters, got {chars}"),
        ));
    }
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

/// Moves the parsed `questions` out of validated arguments (for the log's
/// `request` event, so it need not parse them again).
pub(crate) fn take_questions(arguments: &mut Value) -> Value {
    arguments
        .get_mut("questions")
        .map(Value::take)
        .unwrap_or(Value::Null)
}

/// The text of the `questions` argument exactly as the model sent it. Called only
/// after validation, so the field exists.
pub(crate) fn raw_questions(arguments: &str) -> Result<std::sync::Arc<str>, ArgumentError> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        questions: &'a serde_json::value::RawValue,
    }
    serde_json::from_str::<Raw>(arguments)
        .map(|raw| std::sync::Arc::from(raw.questions.get()))
        .map_err(|e| ArgumentError::new("questions", format!("unreadable: {e}")))
}
