//! The seam's vocabulary: a validated call ([`Ask`]), its questions and the answer
//! items a batch settles them with. Both tools produce it; the broker consumes it.

use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;

/// Which definition a call was made through. The log records it with every request,
/// and the projection tells the two apart by it alone (SPEC §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schema {
    /// The frozen, blocking, unkeyed tool.
    Legacy,
    /// The tool with a foreground window and `pending`; every call is keyed.
    Timed,
}

impl Schema {
    /// `"legacy"` or `"timed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Schema::Legacy => "legacy",
            Schema::Timed => "timed",
        }
    }
}

/// How long the caller waits in the foreground.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Wait {
    /// Until an answer, an error or the turn signal (legacy, and timed `-1`).
    Blocking,
    /// Up to this many seconds from the broker's receipt, then `pending`.
    Window(f64),
}

/// One option of a question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuestionOption {
    /// The label an answer selects it by; unique within the question.
    pub label: String,
    /// What choosing it means; empty when the model gave none.
    pub description: String,
}

/// One validated question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// The id answers name it by: the model's `id` (timed), or the question text
    /// (legacy, where texts are unique within a call).
    pub id: String,
    /// The question text.
    pub question: String,
    /// The short heading.
    pub header: String,
    /// Two to four options, in the model's order (the recommended one first).
    pub options: Vec<QuestionOption>,
    /// Whether several labels may be selected.
    pub multi_select: bool,
}

impl Question {
    /// A question as a log recorded it, rebuilt for a restart. No limit of SPEC
    /// §2.3 is applied again (it held when the model asked, and restoring must not
    /// depend on today's tool code); only the shape must be there: an `id`, a
    /// `question`, and options with labels. `None` if it is not.
    pub fn from_recorded(value: &serde_json::Value) -> Option<Question> {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let options = value
            .get("options")?
            .as_array()?
            .iter()
            .map(|o| {
                Some(QuestionOption {
                    label: o.get("label")?.as_str()?.to_owned(),
                    description: o
                        .get("description")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Question {
            id: text("id")?,
            question: text("question")?,
            header: text("header").unwrap_or_default(),
            options,
            multi_select: value
                .get("multiSelect")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
        })
    }
}

/// A validated tool call, ready for the broker.
#[derive(Clone, Debug)]
pub struct Ask {
    /// The definition it came through.
    pub schema: Schema,
    /// Its questions, in the model's order.
    pub questions: Arc<[Question]>,
    /// The `questions` argument exactly as the model sent it (the text, not a
    /// re-serialisation), for the late-answer message of SPEC §2.4 and the log's
    /// `request` event, which share it.
    pub questions_raw: Arc<RawValue>,
    /// The `timeout` argument as the model gave it (timed only; `None` if omitted).
    pub timeout_arg: Option<f64>,
    /// The effective wait: the argument, else the configured default.
    pub wait: Wait,
}

impl Ask {
    /// Whether the request carries its callId to answerers: every timed call.
    pub fn keyed(&self) -> bool {
        self.schema == Schema::Timed
    }
}

/// The answer to one question, as the model reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct AnswerItem {
    /// The question's id.
    pub id: String,
    /// The chosen labels, in the order the answerer gave them; empty when skipped
    /// or when custom text replaced a single-select.
    pub selected: Vec<String>,
    /// The user's own text, omitted when unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}
