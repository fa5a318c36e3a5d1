//! The walk over the timed tool's arguments: typed access to the fields of a
//! [`Json`] tree that names the path of the first offending one, with the limits
//! of SPEC §2.3 applied through `limits`. The plugin row and answer batches name JSON types in their
//! messages with [`kind`].
//!
//! The frozen legacy tool never uses this module: it has its own walk in
//! `legacy.rs` (SPEC §2.2, it "shares no schema or mapping code with the timed
//! tool"), so a change here cannot reach it. A test holds the two walks to the same
//! path and message for the same defect in the fields they share.

use std::fmt;

use serde_json::Value;

use super::json::{Fields, Json, field};
use super::limits::{description_chars, label_chars, label_unique, option_count};
use super::{ArgumentError, QuestionOption};

/// The rule a text field obeys, from `limits`.
pub(crate) type TextRule = fn(&str) -> Result<(), String>;

/// Where a field is, for messages (`questions[1].options[0].label`). Written
/// out only when the field is wrong: a valid call builds no path at all.
#[derive(Clone, Copy)]
pub(crate) enum Path<'p> {
    /// The arguments' top level (the empty path).
    Top,
    /// `parent.key`, or `key` at the top.
    Field(&'p Path<'p>, &'p str),
    /// `parent.key[i]`, or `key[i]` at the top.
    Item(&'p Path<'p>, &'p str, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (parent, key) = match self {
            Path::Top => return Ok(()),
            Path::Field(parent, key) | Path::Item(parent, key, _) => (parent, key),
        };
        if !matches!(parent, Path::Top) {
            write!(f, "{parent}.")?;
        }
        f.write_str(key)?;
        match self {
            Path::Item(_, _, i) => write!(f, "[{i}]"),
            _ => Ok(()),
        }
    }
}

impl ArgumentError {
    /// An error at `path`.
    pub(crate) fn at(path: &Path<'_>, reason: impl Into<String>) -> ArgumentError {
        ArgumentError::new(&path.to_string(), reason)
    }
}

/// The object at `path`, or an error naming it.
pub(crate) fn object<'f, 'a>(value: &'f Json<'a>, path: &Path<'_>) -> Result<&'f Fields<'a>, ArgumentError> {
    match value {
        Json::Object(fields) => Ok(fields),
        other => Err(ArgumentError::at(
            path,
            format!("expected an object, got {}", other.kind()),
        )),
    }
}

/// Refuses the first of `keys` (in document order) that is not in `allowed`.
pub(crate) fn known_keys<'k>(
    keys: impl IntoIterator<Item = &'k str>,
    allowed: &[&str],
    path: &Path<'_>,
) -> Result<(), ArgumentError> {
    match keys.into_iter().find(|key| !allowed.contains(key)) {
        Some(key) => Err(ArgumentError::at(&Path::Field(path, key), "unknown field")),
        None => Ok(()),
    }
}

/// The keys of `fields`, in document order.
pub(crate) fn keys<'f>(fields: &'f Fields<'_>) -> impl Iterator<Item = &'f str> {
    fields.iter().map(|(key, _)| key.as_ref())
}

/// A required string field that obeys `rule`.
pub(crate) fn text<'f>(
    fields: &'f Fields<'_>,
    key: &str,
    path: &Path<'_>,
    rule: TextRule,
) -> Result<&'f str, ArgumentError> {
    let path = Path::Field(path, key);
    let value = field(fields, key).ok_or_else(|| ArgumentError::at(&path, "required field is missing"))?;
    string(value, &path, rule)
}

/// An optional string field that obeys `rule`; empty when absent.
pub(crate) fn optional_text<'f>(
    fields: &'f Fields<'_>,
    key: &str,
    path: &Path<'_>,
    rule: TextRule,
) -> Result<&'f str, ArgumentError> {
    match field(fields, key) {
        None => Ok(""),
        Some(value) => string(value, &Path::Field(path, key), rule),
    }
}

/// An optional boolean field; `false` when absent.
pub(crate) fn optional_bool(fields: &Fields<'_>, key: &str, path: &Path<'_>) -> Result<bool, ArgumentError> {
    match field(fields, key) {
        None => Ok(false),
        Some(Json::Bool(b)) => Ok(*b),
        Some(other) => Err(ArgumentError::at(
            &Path::Field(path, key),
            format!("expected a boolean, got {}", other.kind()),
        )),
    }
}

/// The required array at `path` (`value`, if there is one), whose length obeys
/// `count`.
pub(crate) fn array<'f, 'a>(
    value: Option<&'f Json<'a>>,
    path: &Path<'_>,
    count: fn(usize) -> Result<(), String>,
) -> Result<&'f [Json<'a>], ArgumentError> {
    let value = value.ok_or_else(|| ArgumentError::at(path, "required field is missing"))?;
    let Json::Array(items) = value else {
        return Err(ArgumentError::at(
            path,
            format!("expected an array, got {}", value.kind()),
        ));
    };
    count(items.len()).map_err(|reason| ArgumentError::at(path, reason))?;
    Ok(items)
}

/// The options of the question at `path`, checked: 2 to 4, labels non-empty
/// and unique. [`option_of`] reads each.
pub(crate) fn options<'f, 'a>(
    fields: &'f Fields<'a>,
    path: &Path<'_>,
) -> Result<&'f [Json<'a>], ArgumentError> {
    let items = array(
        field(fields, "options"),
        &Path::Field(path, "options"),
        option_count,
    )?;
    for (i, item) in items.iter().enumerate() {
        let path = Path::Item(path, "options", i);
        let option = object(item, &path)?;
        known_keys(keys(option), &["label", "description"], &path)?;
        let label = text(option, "label", &path, label_chars)?;
        label_unique(items[..i].iter().map(|seen| option_of(seen).label), label)
            .map_err(|reason| ArgumentError::at(&Path::Field(&path, "label"), reason))?;
        optional_text(option, "description", &path, description_chars)?;
    }
    Ok(items)
}

/// An option [`options`] checked.
pub(crate) fn option_of<'f>(item: &'f Json<'_>) -> QuestionOption<'f> {
    let option = checked_object(item);
    QuestionOption {
        label: checked_text(option, "label"),
        description: field(option, "description").map_or("", checked_string),
    }
}

/// The fields of an object the walk checked.
pub(crate) fn checked_object<'f, 'a>(value: &'f Json<'a>) -> &'f Fields<'a> {
    match value {
        Json::Object(fields) => fields,
        other => panic!("a checked object is {}", other.kind()),
    }
}

/// A string field the walk checked is there.
pub(crate) fn checked_text<'f>(fields: &'f Fields<'_>, key: &str) -> &'f str {
    checked_string(field(fields, key).expect("a checked field is there"))
}

/// A string the walk checked.
pub(crate) fn checked_string<'f>(value: &'f Json<'_>) -> &'f str {
    match value {
        Json::String(s) => s,
        other => panic!("a checked string is {}", other.kind()),
    }
}

/// The string at `path`, which obeys `rule`.
fn string<'f>(value: &'f Json<'_>, path: &Path<'_>, rule: TextRule) -> Result<&'f str, ArgumentError> {
    let Json::String(s) = value else {
        return Err(ArgumentError::at(
            path,
            format!("expected a string, got {}", value.kind()),
        ));
    };
    rule(s).map_err(|reason| ArgumentError::at(path, reason))?;
    Ok(s)
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
