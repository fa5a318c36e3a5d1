//! The legacy tool, frozen (SPEC §2.2): the shape agents already emit, blocking and
//! unkeyed, with its own definition, argument walk and result mapping.
//!
//! Nothing here may change: `definitions/legacy.json` is pinned byte for byte by a
//! golden test, and old logs replay without this code (the projection reads the
//! recorded schema, never this module).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::limits::{
    HEADER_CHARS_MAX, QUESTION_CHARS_MAX, QUESTIONS_PER_CALL_MAX, QUESTIONS_PER_CALL_MIN, array, known_keys,
    object, optional_bool, options, parse_arguments, raw_questions, take_questions, text,
};
use super::{AnswerItem, ArgumentError, Ask, Question, QuestionOption, Schema, Wait};

/// The legacy definition as `asksim schema --mode legacy` prints it. Frozen.
pub const DEFINITION: &str = include_str!("definitions/legacy.json");

/// Validates legacy arguments. Each question's id is its text.
pub fn prepare(arguments: &str) -> Result<Ask, ArgumentError> {
    let mut value = parse_arguments(arguments)?;
    let questions = parse(&value)?;
    Ok(Ask {
        schema: Schema::Legacy,
        questions: questions.into(),
        questions_raw: raw_questions(arguments)?,
        questions_json: take_questions(&mut value),
        timeout_arg: None,
        wait: Wait::Blocking,
    })
}

/// Walks legacy arguments in document order and stops at the first offending field.
pub fn parse(value: &Value) -> Result<Vec<Question>, ArgumentError> {
    let top = object(value, "arguments")?;
    known_keys(top, &["questions"], "")?;
    let items = array(
        top,
        "questions",
        "",
        (QUESTIONS_PER_CALL_MIN, QUESTIONS_PER_CALL_MAX),
        "questions",
    )?;
    let mut questions: Vec<Question> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("questions[{i}]");
        let map = object(item, &path)?;
        known_keys(map, &["question", "header", "options", "multiSelect"], &path)?;
        let question = text(map, "question", &path, QUESTION_CHARS_MAX)?;
        if questions.iter().any(|q| q.question == question) {
            return Err(ArgumentError::new(
                &format!("{path}.question"),
                "duplicate question text within the call",
            ));
        }
        let header = text(map, "header", &path, HEADER_CHARS_MAX)?;
        let options = options(map, &path)?;
        let multi_select = optional_bool(map, "multiSelect", &path)?;
        questions.push(Question {
            id: question.to_owned(),
            question: question.to_owned(),
            header: header.to_owned(),
            options: options
                .into_iter()
                .map(|(label, description)| QuestionOption { label, description })
                .collect(),
            multi_select,
        });
    }
    Ok(questions)
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
                .find(|item| item.id == question.id)
                .map(|item| answer_text(question, item))
                .unwrap_or_default();
            map.serialize_entry(&question.question, &text)?;
        }
        map.end()
    }
}

fn answer_text(question: &Question, item: &AnswerItem) -> String {
    match (&item.custom, question.multi_select) {
        (Some(custom), false) => custom.clone(),
        (Some(custom), true) => {
            let mut parts: Vec<&str> = item.selected.iter().map(String::as_str).collect();
            parts.push(custom);
            parts.join(", ")
        }
        (None, _) => item.selected.join(", "),
    }
}
