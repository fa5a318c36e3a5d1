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

/// One option of a question, as the question lends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuestionOption<'a> {
    /// The label an answer selects it by; unique within the question.
    pub label: &'a str,
    /// What choosing it means; empty when the model gave none.
    pub description: &'a str,
}

/// One validated question.
///
/// Its texts live in one allocation (the id, the question, the header, then
/// each option's label and description, end to end) with one list of where
/// each ends: an open question is held for as long as it is pending, and one
/// allocation per string was ~150 B of a pending question's ~1.4 KB
/// (BENCHMARKS.md, issue #23). Read it through its accessors.
#[derive(Clone, PartialEq, Eq)]
pub struct Question {
    text: Box<str>,
    /// Where each piece of `text` ends: id, question, header, then a label and a
    /// description per option.
    ends: Box<[u32]>,
    multi_select: bool,
}

/// Pieces of [`Question::text`] before the options.
const HEAD_PIECES: usize = 3;

impl Question {
    /// A question of these texts and options, in the model's order.
    ///
    /// # Panics
    ///
    /// If its texts pass 4 GiB together (the tool's limits keep a call far
    /// below; [`Question::try_new`] for texts from elsewhere).
    pub fn new<'a>(
        id: &str,
        question: &str,
        header: &str,
        options: impl IntoIterator<Item = QuestionOption<'a>>,
        multi_select: bool,
    ) -> Question {
        Question::try_new(id, question, header, options, multi_select).expect("a question's texts pass 4 GiB")
    }

    /// [`Question::new`], or `None` if its texts pass 4 GiB together.
    pub fn try_new<'a>(
        id: &str,
        question: &str,
        header: &str,
        options: impl IntoIterator<Item = QuestionOption<'a>>,
        multi_select: bool,
    ) -> Option<Question> {
        // A `Vec` passed in is collected in place, with no allocation.
        let options: Vec<QuestionOption<'a>> = options.into_iter().collect();
        Question::of_options(id, question, header, options.iter().copied(), multi_select)
    }

    /// [`Question::try_new`] of options read twice (once to size the text, once
    /// to write it) rather than collected first: the timed tool's walk reads
    /// them from the arguments' tree, with no vector of its own.
    pub(crate) fn of_options<'a>(
        id: &str,
        question: &str,
        header: &str,
        options: impl Iterator<Item = QuestionOption<'a>> + Clone,
        multi_select: bool,
    ) -> Option<Question> {
        let head = [id, question, header];
        let pieces = || (head.iter().copied()).chain(options.clone().flat_map(|o| [o.label, o.description]));
        // Sized exactly, so neither the text nor the ends grow, nor shrink when
        // boxed: two allocations a question.
        let (bytes, count) = pieces().fold((0, 0), |(bytes, count), piece| (bytes + piece.len(), count + 1));
        let mut text = String::with_capacity(bytes);
        let mut ends = Vec::with_capacity(count);
        for piece in pieces() {
            text.push_str(piece);
            ends.push(u32::try_from(text.len()).ok()?);
        }
        Some(Question {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            multi_select,
        })
    }

    /// Piece `k` of the text.
    fn piece(&self, k: usize) -> &str {
        let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        &self.text[start..self.ends[k] as usize]
    }

    /// The id answers name it by: the model's `id` (timed), or the question text
    /// (legacy, where texts are unique within a call).
    pub fn id(&self) -> &str {
        self.piece(0)
    }

    /// The question text.
    pub fn question(&self) -> &str {
        self.piece(1)
    }

    /// The short heading.
    pub fn header(&self) -> &str {
        self.piece(2)
    }

    /// Whether several labels may be selected.
    pub fn multi_select(&self) -> bool {
        self.multi_select
    }

    /// How many options it has (two to four when the tool validated it).
    pub fn option_count(&self) -> usize {
        (self.ends.len() - HEAD_PIECES) / 2
    }

    /// Option `i` (from 0, the recommended one first), if there is one.
    pub fn option(&self, i: usize) -> Option<QuestionOption<'_>> {
        (i < self.option_count()).then(|| QuestionOption {
            label: self.piece(HEAD_PIECES + 2 * i),
            description: self.piece(HEAD_PIECES + 2 * i + 1),
        })
    }

    /// Its options, in the model's order (the recommended one first).
    pub fn options(
        &self,
    ) -> impl ExactSizeIterator<Item = QuestionOption<'_>> + DoubleEndedIterator + Clone + '_ {
        (0..self.option_count()).map(|i| self.option(i).expect("an option within the count"))
    }

    /// A question as a log recorded it, rebuilt for a restart. No limit of SPEC
    /// §2.3 is applied again (it held when the model asked, and restoring must not
    /// depend on today's tool code); only the shape must be there: an `id`, a
    /// `question`, and options with labels. `None` if it is not.
    pub fn from_recorded(value: &serde_json::Value) -> Option<Question> {
        let text = |key: &str| value.get(key).and_then(serde_json::Value::as_str);
        let options = value
            .get("options")?
            .as_array()?
            .iter()
            .map(|o| {
                Some(QuestionOption {
                    label: o.get("label")?.as_str()?,
                    description: o
                        .get("description")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or(""),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Question::try_new(
            text("id")?,
            text("question")?,
            text("header").unwrap_or_default(),
            options,
            value
                .get("multiSelect")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
        )
    }
}

impl std::fmt::Debug for Question {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Question")
            .field("id", &self.id())
            .field("question", &self.question())
            .field("header", &self.header())
            .field("options", &self.options().collect::<Vec<_>>())
            .field("multi_select", &self.multi_select)
            .finish()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn option<'a>(label: &'a str, description: &'a str) -> QuestionOption<'a> {
        QuestionOption { label, description }
    }

    #[test]
    fn every_piece_reads_back_as_given_even_empty_ones() {
        let q = Question::new(
            "",
            "Go «now»?",
            "",
            [option("Yes", ""), option("", "stop"), option("Ça", "")],
            true,
        );
        assert_eq!(
            (q.id(), q.question(), q.header(), q.multi_select()),
            ("", "Go «now»?", "", true)
        );
        assert_eq!(q.option_count(), 3);
        let options: Vec<_> = q.options().map(|o| (o.label, o.description)).collect();
        assert_eq!(options, [("Yes", ""), ("", "stop"), ("Ça", "")]);
        assert_eq!(q.option(1), Some(option("", "stop")));
        assert_eq!(q.option(3), None);
        assert_eq!(q.options().next_back(), Some(option("Ça", "")));
    }

    #[test]
    fn questions_are_equal_exactly_when_their_pieces_are() {
        let q = |id, label| Question::new(id, "ab", "c", [option(label, "")], false);
        assert_eq!(q("x", "y"), q("x", "y"));
        // The same concatenation, cut elsewhere.
        assert_ne!(
            Question::new("a", "bc", "", [], false),
            Question::new("ab", "c", "", [], false)
        );
        assert_ne!(q("x", "y"), q("x", "z"));
        assert_ne!(
            q("x", "y"),
            Question::new("x", "ab", "c", [option("y", "")], true)
        );
    }

    #[test]
    fn a_recorded_question_is_rebuilt_or_refused_by_its_shape() {
        let recorded = serde_json::json!({
            "id": "go", "question": "Proceed?", "header": "Go",
            "options": [{"label": "Yes", "description": "do it"}, {"label": "No"}],
            "multiSelect": true
        });
        let q = Question::from_recorded(&recorded).expect("a whole question");
        assert_eq!(
            q,
            Question::new(
                "go",
                "Proceed?",
                "Go",
                [option("Yes", "do it"), option("No", "")],
                true
            )
        );
        let no_label = serde_json::json!({"id": "go", "question": "?", "options": [{"description": "x"}]});
        assert_eq!(Question::from_recorded(&no_label), None);
    }
}
