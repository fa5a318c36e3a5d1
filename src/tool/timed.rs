//! The timed tool (SPEC §2.2): its definition, its arguments and its answers shape.
//! Calls are keyed; a positive `timeout` opens a foreground window, `-1` blocks.

use std::borrow::Cow;
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::json::{Json, Key};
use super::limits::{ID_CHARS_MAX, chars_within, header_chars, question_chars, question_count};
use super::walk::{
    Path, array, checked_object, checked_text, keys, known_keys, object, option_of, optional_bool, options,
    parse_arguments, raw_questions, text,
};
use super::{AnswerItem, ArgumentError, Ask, Question, Schema, Timeout, Wait};

/// The timed definition as `asksim schema --mode timed` prints it.
pub const DEFINITION: &str = include_str!("definitions/timed.json");

/// The arguments' keys.
const TOP_KEYS: [&str; 2] = ["questions", "timeout"];

/// Validates timed arguments; `default` is the configured timeout for calls that
/// pass none.
///
/// One pass over the text reads the `questions` value both as its exact text
/// and, borrowed, as the tree the walk reads (`read`); what that pass cannot
/// take as `Value` would (a repeated key, nesting at serde_json's limit, text it
/// refuses) goes the way it always went, through `Value`, so every input gets the
/// same result and message as before.
pub fn prepare(arguments: &str, default: Timeout) -> Result<Ask, ArgumentError> {
    let ((questions, timeout_arg), questions_raw) = match read(arguments) {
        Some(read) => walk_read(read)?,
        None => through_value(arguments)?,
    };
    let timeout = match timeout_arg {
        Some(t) => t,
        None => default,
    };
    Ok(Ask {
        schema: Schema::Timed,
        questions,
        questions_raw,
        timeout_arg: timeout_arg.map(Timeout::as_f64),
        wait: match timeout {
            Timeout::Window(s) => Wait::Window(s),
            Timeout::Blocking => Wait::Blocking,
        },
    })
}

/// Walks the arguments in document order and stops at the first offending field.
pub fn parse(value: &Value) -> Result<(Vec<Question>, Option<Timeout>), ArgumentError> {
    let (questions, timeout) = walk_value(value)?;
    Ok((questions.to_vec(), timeout))
}

/// [`parse`], the questions as the call keeps them.
fn walk_value(value: &Value) -> Result<(Arc<[Question]>, Option<Timeout>), ArgumentError> {
    let top = value.as_object().ok_or_else(|| {
        ArgumentError::new(
            "arguments",
            format!("expected an object, got {}", super::walk::kind(value)),
        )
    })?;
    walk(&Top {
        unknown: (top.keys())
            .find(|key| !TOP_KEYS.contains(&key.as_str()))
            .map(|key| Cow::Borrowed(key.as_str())),
        questions: top.get("questions").map(Json::of),
        timeout: top.get("timeout").cloned(),
    })
}

/// What one call's arguments hold: its questions, its timeout if it gave one,
/// and the `questions` text exactly as the model sent it.
type Walked = ((Arc<[Question]>, Option<Timeout>), Arc<RawValue>);

/// The walk over what [`read`] took from the text.
fn walk_read((top, raw): (Top<'_>, Option<&RawValue>)) -> Result<Walked, ArgumentError> {
    let walked = walk(&top)?;
    let raw = raw.expect("the walk refuses arguments without questions");
    Ok((walked, Arc::from(raw.to_owned())))
}

/// The walk over the whole text as a `Value`, then the `questions` text read
/// again (which refuses a repeated `questions` key `Value` keeps silently).
fn through_value(arguments: &str) -> Result<Walked, ArgumentError> {
    let value = parse_arguments(arguments)?;
    Ok((walk_value(&value)?, raw_questions(arguments)?))
}

/// The arguments' top level, as the walk reads it.
struct Top<'a> {
    /// The first key, in document order, that is not one of [`TOP_KEYS`].
    unknown: Option<Cow<'a, str>>,
    questions: Option<Json<'a>>,
    timeout: Option<Value>,
}

fn walk(top: &Top<'_>) -> Result<(Arc<[Question]>, Option<Timeout>), ArgumentError> {
    known_keys(top.unknown.as_deref(), &TOP_KEYS, &Path::Top)?;
    let items = array(
        top.questions.as_ref(),
        &Path::Field(&Path::Top, "questions"),
        question_count,
    )?;
    for (i, item) in items.iter().enumerate() {
        let path = Path::Item(&Path::Top, "questions", i);
        let id = check_question(item, &path)?;
        if items[..i].iter().any(|earlier| question_id(earlier) == id) {
            return Err(ArgumentError::at(
                &Path::Field(&path, "id"),
                format!("duplicate id {id:?} within the call"),
            ));
        }
    }
    let timeout = match &top.timeout {
        None => None,
        Some(v) => Some(Timeout::from_json(v).map_err(|reason| ArgumentError::new("timeout", reason))?),
    };
    // Checked, the questions are built straight into the slice the call
    // shares: one allocation (a vector of them copied into it was two, and a
    // vector of each question's options one more).
    let questions = items.iter().map(question_of).collect();
    Ok((questions, timeout))
}

/// Nesting serde_json refuses: an array or object at this depth (the top level
/// counts 1) is "recursion limit exceeded".
const DEPTH_REFUSED: usize = 128;

/// The arguments' top level and the `questions` value's exact text (if there is
/// one) in one pass over `arguments`, or `None` if the walk over `Value` must
/// judge them: text serde_json refuses, a top level that is not an object, a
/// key twice, or `questions` nested to serde_json's limit (read on its own, its
/// text counts its depth from 0, not from the top level's 1).
fn read(arguments: &str) -> Option<(Top<'_>, Option<&RawValue>)> {
    let Read { top, raw } = serde_json::from_str(arguments).ok()?;
    let Some(raw) = raw else {
        return Some((top, None));
    };
    let questions: Json = serde_json::from_str(raw.get()).ok()?;
    if 1 + questions.depth() >= DEPTH_REFUSED {
        return None;
    }
    let top = Top {
        questions: Some(questions),
        ..top
    };
    Some((top, Some(raw)))
}

/// What [`read`] takes from the text: the `questions` value is kept as text,
/// every other value read in place (so serde_json's limits apply to it as they
/// would in a `Value`).
struct Read<'a> {
    top: Top<'a>,
    raw: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for Read<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ReadVisitor)
    }
}

struct ReadVisitor;

impl<'de> Visitor<'de> for ReadVisitor {
    type Value = Read<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read<'de>, A::Error> {
        let (mut top, mut raw) = (
            Top {
                unknown: None,
                questions: None,
                timeout: None,
            },
            None,
        );
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "questions" if raw.is_none() => raw = Some(map.next_value()?),
                "timeout" if top.timeout.is_none() => top.timeout = Some(map.next_value()?),
                "questions" | "timeout" => return Err(de::Error::custom("a repeated key")),
                _ => {
                    // Read as `Value` would (its depth, its numbers, its keys).
                    let _: Json = map.next_value()?;
                    if json_raw_key(&key) {
                        return Err(de::Error::custom("read differently by Value"));
                    }
                    top.unknown.get_or_insert(key);
                }
            }
        }
        Ok(Read { top, raw })
    }
}

/// serde_json's private key that makes `Value` read an object as JSON text.
fn json_raw_key(key: &str) -> bool {
    key == "$serde_json::private::RawValue"
}

/// Checks the question at `path` and gives its id.
fn check_question<'f>(item: &'f Json<'_>, path: &Path<'_>) -> Result<&'f str, ArgumentError> {
    let map = object(item, path)?;
    known_keys(
        keys(map),
        &["id", "question", "header", "options", "multiSelect"],
        path,
    )?;
    let id = text(map, "id", path, id_chars)?;
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(ArgumentError::at(
            &Path::Field(path, "id"),
            format!("character {bad:?} not allowed (only A-Za-z0-9_-)"),
        ));
    }
    text(map, "question", path, question_chars)?;
    text(map, "header", path, header_chars)?;
    options(map, path)?;
    optional_bool(map, "multiSelect", path)?;
    Ok(id)
}

/// The id of a question [`check_question`] checked.
fn question_id<'f>(item: &'f Json<'_>) -> &'f str {
    checked_text(checked_object(item), "id")
}

/// A question [`check_question`] checked.
fn question_of(item: &Json<'_>) -> Question {
    let map = checked_object(item);
    let options = match super::json::field(map, "options") {
        Some(Json::Array(items)) => items.iter().map(option_of),
        _ => panic!("a checked question has options"),
    };
    let multi_select = matches!(super::json::field(map, "multiSelect"), Some(Json::Bool(true)));
    let question = Question::of_options(
        checked_text(map, "id"),
        checked_text(map, "question"),
        checked_text(map, "header"),
        options,
        multi_select,
    );
    question.expect("a question's texts pass 4 GiB")
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

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"questions":[{"id":"go","question":"Proceed?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No","description":"stop"}]}],"timeout":5}"#;

    /// `questions` whose options' descriptions hold arrays nested `depth` deep
    /// under the questions array (which counts 1).
    fn nested(depth: usize) -> String {
        let inner = format!("{}{}", "[".repeat(depth - 4), "]".repeat(depth - 4));
        format!(
            r#"{{"questions":[{{"id":"a","question":"q","header":"h","options":[{{"label":"x","description":{inner}}},{{"label":"y"}}]}}]}}"#
        )
    }

    /// The one-pass reader gives every input what the walk over `Value` gives
    /// (result, message and the exact `questions` text), and takes the inputs
    /// it should: a valid call, and the errors it can judge alone.
    #[test]
    fn the_one_pass_reader_agrees_with_the_walk_over_value() {
        let deep_unknown = format!(r#"{{"x":{}{},"questions":[]}}"#, "[".repeat(127), "]".repeat(127));
        let deep_timeout = format!(
            r#"{{"questions":[],"timeout":{}{}}}"#,
            "[".repeat(127),
            "]".repeat(127)
        );
        let cases: Vec<(String, bool)> = vec![
            (GOOD.into(), true),
            (format!(" \n{}\t ", GOOD.replace(',', " ,\n ")), true),
            (GOOD.replace(r#""timeout":5"#, r#""timeout":-1"#), true),
            (GOOD.replace(r#","timeout":5"#, ""), true),
            (GOOD.replace(r#""timeout":5"#, r#""timeout":"5""#), true),
            (GOOD.replace(r#""timeout":5"#, r#""timeout":1e400"#), false),
            (
                GOOD.replace(r#""timeout":5"#, r#""timeout":5,"timeout":7"#),
                false,
            ),
            (GOOD.replace(r#""timeout":5"#, r#""extra":{"a":[1,2]}"#), true),
            (GOOD.replace(r#"{"questions""#, r#"{"extra":1,"questions""#), true),
            (GOOD.replace(r#""questions""#, r#""\u0071uestions""#), true),
            (
                GOOD.replace("Proceed?", r#"Pro\nceed \u00e9 \ud83d\ude00?"#),
                true,
            ),
            (GOOD.replace("Proceed?", r#"Pro\ud800ceed?"#), false),
            (
                GOOD.replace(r#""header":"Confirm""#, r#""header":"Confirm","header":"Again""#),
                false,
            ),
            (GOOD.replace(r#""header":"Confirm""#, r#""header":1.5e3"#), true),
            (GOOD.replace(r#""header":"Confirm""#, r#""header":1e400"#), false),
            (
                GOOD.replace(r#""label":"No""#, r#""label":"Yes (Recommended)""#),
                true,
            ),
            (GOOD.replace(r#""timeout":5"#, r#""questions":[]"#), false),
            (
                GOOD.replace(
                    r#"{"questions""#,
                    r#"{"$serde_json::private::RawValue":"[]","questions""#,
                ),
                false,
            ),
            (r#"{"$serde_json::private::RawValue":"[1]"}"#.into(), false),
            (r#"{"timeout":5}"#.into(), true),
            (r#"{}"#.into(), true),
            (r#"[]"#.into(), false),
            (r#"{"questions":[]"#.into(), false),
            (format!("{GOOD} x"), false),
            (nested(125), true),
            (nested(126), true),
            (nested(127), false),
            (nested(128), false),
            (deep_unknown, false),
            (deep_timeout, false),
        ];
        for (arguments, fast) in cases {
            let read = read(&arguments);
            assert_eq!(read.is_some(), fast, "{arguments}");
            let got = read.map_or_else(|| through_value(&arguments), walk_read);
            let want = through_value(&arguments);
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{arguments}");
        }
    }
}
