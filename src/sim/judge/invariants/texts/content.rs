//! Whether the answers that reached the model are the batch its answerer
//! submitted (SPEC §2.4, §3.6, §3.7): "one batch settles a call", and what the
//! model gets back is that batch's answers, in the exact shapes of §2.2 and
//! §2.4, as a tool result or as the late answer's user message. A broker that
//! delivers other answers than those submitted has delivered none of them: the
//! batch is lost (`no_answer_lost`), however well formed what it delivered is.
//!
//! What the model must get is the batch normalised as SPEC §3.6 and §2.4 say
//! (one item per question, in question order, labels in the batch's order, custom
//! text replacing a single-select's labels and supplementing a multi-select's, an
//! empty custom none), by the tool's own batch check ([`validate_batch`]) over the
//! questions as the model sent them. The legacy answer text (§2.2) is rebuilt
//! here, from the contract alone: the judge does not use the legacy tool's code.
//! Pure functions of the questions text, the batch and what was delivered.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::super::answers::{Asked, Asking};
use crate::protocol::{CallId, Name};
use crate::tool::{AnswerItem, Question, QuestionOption, validate_batch};

/// A batch submitted for a call, as the `answer` event recorded it.
pub struct Submitted {
    pub call_id: CallId,
    pub answerer: Name,
    pub seq: u64,
    pub batch: Arc<Value>,
}

/// What the model must receive for a batch: the call's questions and the answer
/// items the batch settles them with.
pub struct Expected {
    questions: Vec<Question>,
    items: Vec<AnswerItem>,
}

/// The answers `batch` gives the questions whose text is `questions` (`timed`:
/// answer items name a question by its `id`; legacy, by its text): `Ok(None)`
/// when the questions text is not one a model could have sent (a hand-made
/// log), so nothing can be said, and `Err` with the batch's defect when it
/// breaks SPEC §3.6 and may settle nothing.
#[cfg(test)]
pub fn expected(timed: bool, questions: &str, batch: &Value) -> Result<Option<Expected>, String> {
    match Asking::read(questions).asked() {
        Some(asked) => expected_of(timed, asked, batch),
        None => Ok(None),
    }
}

/// What [`expected_of`] gave the last batch delivered, kept by the batch's and
/// the questions' reading's `Arc`s (held, so no other can take their address):
/// an answerer's policy gives the calls that ask the same questions one shared
/// batch, and their questions are one reading ([`crate::sim::judge::reread`]), so
/// deliveries in a row mostly expect the same, which was built anew each time
/// (a tenth of the checker's work on `load-10k`). Only the same inputs find it.
#[derive(Default)]
pub struct LastExpected(Option<(Inputs, Arc<ExpectedOf>)>);

/// The questions' reading, the batch and whether the call is timed.
type Inputs = (Arc<Asking<'static>>, Arc<Value>, bool);

/// What [`expected_of`] gives.
pub type ExpectedOf = Result<Option<Expected>, String>;

impl LastExpected {
    /// [`expected_of`] the questions `asking` reads, for `batch`.
    pub fn of(&mut self, timed: bool, asking: &Arc<Asking<'static>>, batch: &Arc<Value>) -> Arc<ExpectedOf> {
        if let Some(((a, b, t), kept)) = &self.0
            && (Arc::ptr_eq(a, asking), Arc::ptr_eq(b, batch), *t) == (true, true, timed)
        {
            return Arc::clone(kept);
        }
        let expected = Arc::new(
            asking
                .asked()
                .map_or(Ok(None), |asked| expected_of(timed, asked, batch)),
        );
        self.0 = Some((
            (Arc::clone(asking), Arc::clone(batch), timed),
            Arc::clone(&expected),
        ));
        expected
    }
}

/// [`expected`] of questions already read.
pub fn expected_of(timed: bool, asked: &[Asked], batch: &Value) -> Result<Option<Expected>, String> {
    let mut built = Vec::with_capacity(asked.len());
    for q in asked {
        let id = if timed {
            q.id.as_deref()
        } else {
            q.question.as_deref()
        };
        let Some(id) = id else {
            return Ok(None);
        };
        let options = q.options.iter().map(|o| QuestionOption {
            label: &o.label,
            description: "",
        });
        let question = q.question.as_deref().unwrap_or_default();
        match Question::try_new(id, question, "", options, q.multi_select == Some(true)) {
            Some(question) => built.push(question),
            None => return Ok(None),
        }
    }
    let items = validate_batch(&built, batch).map_err(|refusal| refusal.0)?;
    Ok(Some(Expected {
        questions: built,
        items,
    }))
}

impl Expected {
    /// What is wrong with a timed tool result's or a late answer's `answers`
    /// (answer items), if anything.
    pub fn items_differ(&self, delivered: &Value) -> Option<String> {
        let same = Vec::<AnswerItem>::deserialize(delivered).is_ok_and(|items| self.same_items(&items));
        (!same).then(|| self.differ(delivered))
    }

    /// The same for answer items already read (a late answer's `answers`).
    pub fn items_read_differ(&self, delivered: &[AnswerItem]) -> Option<String> {
        (!self.same_items(delivered)).then(|| {
            let delivered = serde_json::to_value(delivered).unwrap_or(Value::Null);
            self.differ(&delivered)
        })
    }

    /// What is wrong with a legacy tool result's `answers` (question text →
    /// answer text), if anything. The order of its keys is not compared here
    /// (`answers_well_formed` reads it).
    pub fn legacy_differs(&self, delivered: &Value) -> Option<String> {
        let expected = self.legacy();
        let same = delivered
            .as_object()
            .is_some_and(|d| d.len() == expected.len() && expected.iter().all(|(k, v)| d.get(k) == Some(v)));
        (!same).then(|| format!("received {delivered}, submitted {}", Value::Object(expected)))
    }

    /// What is wrong with a late answer's user message: its `answers`, which
    /// the model reads. A text that carries no answers (no JSON object, another
    /// kind of message) is not the text SPEC §2.4 gives, and
    /// `late_answer_reaches_caller`'s to name; so is how its answers are written.
    ///
    /// The answers are read as items straight from their text; only when that
    /// does not give the submitted items are they read as a `Value`, as
    /// [`Expected::items_differ`] reads them (which also takes what the text
    /// does not, a repeated key), to be judged and named.
    pub fn message_differs(&self, message: &str) -> Option<String> {
        #[derive(Deserialize)]
        struct Message<'a> {
            #[serde(borrow)]
            answers: Option<&'a RawValue>,
        }
        let answers = match serde_json::from_str::<Message>(message) {
            Ok(Message { answers: Some(a) }) => a.get(),
            _ => return None,
        };
        if serde_json::from_str::<Vec<AnswerItem>>(answers).is_ok_and(|items| self.same_items(&items)) {
            return None;
        }
        self.items_differ(&serde_json::from_str(answers).unwrap_or(Value::Null))
    }

    /// One item per question, in order, each with the submitted id, labels and
    /// custom text (an empty custom text is none, as in a batch).
    fn same_items(&self, delivered: &[AnswerItem]) -> bool {
        fn custom(item: &AnswerItem) -> Option<&str> {
            item.custom.as_deref().filter(|c| !c.is_empty())
        }
        delivered.len() == self.items.len()
            && self
                .items
                .iter()
                .zip(delivered)
                .all(|(e, d)| e.id == d.id && e.selected == d.selected && e.custom.as_deref() == custom(d))
    }

    fn differ(&self, delivered: &Value) -> String {
        let submitted = serde_json::to_string(&self.items).unwrap_or_default();
        format!("received {delivered}, submitted {submitted}")
    }

    /// The legacy result's answers (SPEC §2.2): per question, in order, the
    /// custom text of a single-select that has one, else the labels joined by
    /// `", "` with a multi-select's custom text after them; `""` when skipped.
    fn legacy(&self) -> Map<String, Value> {
        let mut answers = Map::new();
        for (question, item) in self.questions.iter().zip(&self.items) {
            let text = match (&item.custom, question.multi_select()) {
                (Some(custom), false) => custom.clone(),
                (custom, _) => {
                    let mut parts: Vec<&str> = item.selected.iter().map(String::as_str).collect();
                    parts.extend(custom.as_deref());
                    parts.join(", ")
                }
            };
            answers.insert(question.question().to_owned(), Value::String(text));
        }
        answers
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const QUESTIONS: &str = r#"[{"id":"db","question":"Which database?","header":"DB","options":[{"label":"Postgres"},{"label":"SQLite"}]},{"id":"envs","question":"Which environments?","header":"Envs","multiSelect":true,"options":[{"label":"dev"},{"label":"prod"}]}]"#;

    fn expect(timed: bool, batch: Value) -> Expected {
        expected(timed, QUESTIONS, &batch).unwrap().unwrap()
    }

    #[test]
    fn the_last_expectation_is_kept_for_the_same_batch_and_questions_only() {
        let asking = |text: &str| Arc::new(Asking::read(text).into_owned());
        let (questions, again) = (asking(QUESTIONS), asking(QUESTIONS));
        let batch =
            |db: &str| Arc::new(json!([{"id": "db", "selected": [db]}, {"id": "envs", "selected": ["dev"]}]));
        let (sqlite, postgres) = (batch("SQLite"), batch("Postgres"));
        let mut last = LastExpected::default();
        let first = last.of(true, &questions, &sqlite);
        assert!(Arc::ptr_eq(&first, &last.of(true, &questions, &sqlite)), "kept");
        let items = |e: &ExpectedOf| e.as_ref().unwrap().as_ref().unwrap().items[0].selected.clone();
        // Another batch, other questions' reading, or the other schema: built anew.
        assert_eq!(items(&last.of(true, &questions, &postgres)), ["Postgres"]);
        assert_eq!(items(&last.of(true, &questions, &sqlite)), ["SQLite"]);
        assert!(!Arc::ptr_eq(&first, &last.of(true, &again, &sqlite)));
        assert!(
            last.of(false, &again, &sqlite).is_err(),
            "legacy answers name the question's text"
        );
    }

    #[test]
    fn the_submitted_items_pass_and_any_other_content_is_named() {
        let batch = json!([{"id": "envs", "selected": ["prod", "dev"], "custom": "and qa"},
                           {"id": "db", "selected": ["SQLite"]}]);
        let expected = expect(true, batch);
        let same = json!([{"id": "db", "selected": ["SQLite"]},
                          {"id": "envs", "selected": ["prod", "dev"], "custom": "and qa"}]);
        assert_eq!(expected.items_differ(&same), None);
        // An empty custom text is none, and fields beside the answer's are not content.
        let alike = json!([{"id": "db", "selected": ["SQLite"], "custom": ""},
                           {"selected": ["prod", "dev"], "id": "envs", "custom": "and qa", "x": 1}]);
        assert_eq!(expected.items_differ(&alike), None);
        for other in [
            json!([{"id": "db", "selected": ["Postgres"]}, {"id": "envs", "selected": ["prod", "dev"], "custom": "and qa"}]),
            json!([{"id": "db", "selected": ["SQLite"]}, {"id": "envs", "selected": ["dev", "prod"], "custom": "and qa"}]),
            json!([{"id": "db", "selected": ["SQLite"]}, {"id": "envs", "selected": ["prod", "dev"]}]),
            json!([{"id": "db", "selected": ["SQLite"]}]),
            json!([{"id": "db"}, {"id": "envs", "selected": ["prod", "dev"], "custom": "and qa"}]),
            json!({"db": "SQLite"}),
        ] {
            let problem = expected.items_differ(&other).expect("it differs");
            assert!(
                problem.starts_with(&format!("received {other}, submitted [")),
                "{problem}"
            );
        }
    }

    #[test]
    fn custom_text_replaces_a_single_selects_labels_as_the_model_must_read_it() {
        let expected = expect(
            true,
            json!([{"id": "db", "selected": ["SQLite"], "custom": "Mongo"}, {"id": "envs", "selected": []}]),
        );
        let replaced =
            json!([{"id": "db", "selected": [], "custom": "Mongo"}, {"id": "envs", "selected": []}]);
        assert_eq!(expected.items_differ(&replaced), None);
        let kept =
            json!([{"id": "db", "selected": ["SQLite"], "custom": "Mongo"}, {"id": "envs", "selected": []}]);
        assert!(expected.items_differ(&kept).is_some());
    }

    #[test]
    fn a_legacy_result_carries_the_answer_texts_of_the_batch() {
        let batch = json!([{"id": "Which database?", "selected": ["Postgres"]},
                           {"id": "Which environments?", "selected": ["dev", "prod"], "custom": "qa"}]);
        let expected = expect(false, batch);
        let same = json!({"Which environments?": "dev, prod, qa", "Which database?": "Postgres"});
        assert_eq!(expected.legacy_differs(&same), None);
        let other = json!({"Which database?": "SQLite", "Which environments?": "dev, prod, qa"});
        let problem = expected.legacy_differs(&other).expect("it differs");
        assert!(
            problem.contains("submitted {\"Which database?\":\"Postgres\""),
            "{problem}"
        );
        assert!(
            expected
                .legacy_differs(&json!({"Which database?": "Postgres"}))
                .is_some()
        );
    }

    #[test]
    fn a_late_answers_message_must_carry_the_submitted_items() {
        let expected = expect(
            true,
            json!([{"id": "db", "selected": []}, {"id": "envs", "selected": ["dev"]}]),
        );
        let message = |answers: Value| {
            format!(
                r#"{{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"root/1","questions":{QUESTIONS},"answers":{answers}}}"#
            )
        };
        let right = json!([{"id": "db", "selected": []}, {"id": "envs", "selected": ["dev"]}]);
        assert_eq!(expected.message_differs(&message(right)), None);
        let wrong = json!([{"id": "db", "selected": []}, {"id": "envs", "selected": ["prod"]}]);
        assert!(expected.message_differs(&message(wrong)).is_some());
        let withdrawal = r#"{"kind":"pending_question_withdrawn","tool":"ask_user_question","callId":"root/1","reason":"NO_ANSWERER"}"#;
        // No answers to compare: the message is not the text SPEC gives,
        // which is late_answer_reaches_caller's to name.
        for other in [withdrawal, "SQLite"] {
            assert_eq!(expected.message_differs(other), None, "{other}");
        }
    }

    #[test]
    fn a_batch_that_breaks_the_rules_settles_nothing_and_odd_questions_say_nothing() {
        let bad = json!([{"id": "db", "selected": ["MySQL"]}, {"id": "envs", "selected": []}]);
        let defect = expected(true, QUESTIONS, &bad).err().expect("refused");
        assert!(defect.contains("\"MySQL\" is not an option"), "{defect}");
        let unread = r#"[{"id":"db","options":[{"label":5}]}]"#;
        assert!(matches!(expected(true, unread, &json!([])), Ok(None)));
        let no_id = r#"[{"question":"A?","options":[{"label":"x"}]}]"#;
        assert!(matches!(expected(true, no_id, &json!([])), Ok(None)));
        assert!(expected(false, no_id, &json!([{"id": "A?", "selected": ["x"]}])).is_ok_and(|e| e.is_some()));
    }

    /// A run's log through the checker: a root asks `root/1` (timed, blocking,
    /// or with a 1 s window when `pending`), `web` owns it, then `tail` (each
    /// without `seq` and `t`), then the end. Gives (invariant, seq, detail).
    fn judged(pending: bool, tail: Vec<Value>) -> Vec<(&'static str, u64, String)> {
        let window = if pending { 1.0 } else { -1.0 };
        let mut lines = vec![
            json!({"event": "spawn", "agent": "root", "owner": null, "lineage": null}),
            json!({"event": "request", "callId": "root/1", "agent": "root", "schema": "timed", "keyed": true,
                   "questions": serde_json::from_str::<Value>(QUESTIONS).unwrap(), "timeout": window,
                   "window_s": window}),
            json!({"event": "offer", "callId": "root/1", "answerer": "web"}),
            json!({"event": "accept", "callId": "root/1", "answerer": "web"}),
        ];
        if pending {
            let text = crate::tool::ToolResult::pending("root/1").text;
            lines.push(
                json!({"event": "result", "callId": "root/1", "agent": "root", "result": text,
                              "is_error": false, "outcome": "pending"}),
            );
        }
        lines.extend(tail);
        lines.push(json!({"event": "end", "reason": "done"}));
        let events: Vec<crate::event::Event> = (lines.into_iter().enumerate())
            .map(|(i, mut line)| {
                line["seq"] = json!(i + 1);
                line["t"] = json!(if pending && i >= 4 { 1.0 } else { 0.0 });
                serde_json::from_value(line).unwrap()
            })
            .collect();
        let violations = super::super::super::check(&events, None, super::super::super::VIRTUAL_TOLERANCE_S);
        violations
            .into_iter()
            .map(|v| (v.invariant, v.seq, v.detail))
            .collect()
    }

    fn answer(batch: &Value) -> Value {
        json!({"event": "answer", "callId": "root/1", "answerer": "web", "batch": batch})
    }

    fn result(answers: &Value) -> Value {
        let text = json!({"answers": answers}).to_string();
        json!({"event": "result", "callId": "root/1", "agent": "root", "result": text, "is_error": false,
               "outcome": "answers"})
    }

    fn late(answers: &Value, in_message: &Value) -> Value {
        let message = json!({"kind": "answer_to_pending_question", "tool": "ask_user_question",
            "callId": "root/1", "questions": "QUESTIONS", "answers": in_message})
        .to_string()
        .replace("\"QUESTIONS\"", QUESTIONS);
        json!({"event": "late_answer", "callId": "root/1", "agent": "root", "answers": answers,
               "message": message})
    }

    fn received(answers: &Value) -> Value {
        let late = late(answers, answers);
        json!({"event": "user_message", "callId": "root/1", "agent": "root", "message": late["message"]})
    }

    /// The checker fires when what the model got is not the batch: a tool
    /// result or a late answer (its message or its items) with other content,
    /// answers with no batch before them, a batch the rules refuse delivered.
    #[test]
    fn the_checker_names_answers_that_are_not_the_batch_submitted() {
        let chosen = json!([{"id": "db", "selected": ["SQLite"]}, {"id": "envs", "selected": []}]);
        let other = json!([{"id": "db", "selected": ["Postgres"]}, {"id": "envs", "selected": []}]);
        assert_eq!(judged(false, vec![answer(&chosen), result(&chosen)]), []);
        let swapped = judged(false, vec![answer(&chosen), result(&other)]);
        assert_eq!(swapped.len(), 1, "{swapped:?}");
        let (invariant, seq, detail) = &swapped[0];
        assert_eq!((*invariant, *seq), ("no_answer_lost", 6));
        assert!(
            detail.starts_with("the tool result does not carry the batch web submitted (seq 5): received [{\"id\":\"db\",\"selected\":[\"Postgres\"]}"),
            "{detail}"
        );
        let invented = judged(false, vec![result(&chosen)]);
        let named: Vec<(&str, u64)> = invented.iter().map(|(i, s, _)| (*i, *s)).collect();
        assert_eq!(
            named,
            [(super::super::super::PROTOCOL_CONFORMANCE, 5)],
            "{invented:?}"
        );
        assert!(invented[0].2.contains("answers no answerer submitted"));
        let refused = json!([{"id": "db", "selected": ["SQLite"], "why": 1}, {"id": "envs", "selected": []}]);
        let taken = judged(false, vec![answer(&refused), result(&chosen)]);
        let named: Vec<(&str, u64)> = taken.iter().map(|(i, s, _)| (*i, *s)).collect();
        assert_eq!(named, [("answers_well_formed", 6)], "{taken:?}");
    }

    #[test]
    fn the_checker_reads_a_late_answers_message_and_its_items() {
        let chosen = json!([{"id": "db", "selected": []}, {"id": "envs", "selected": ["dev", "prod"]}]);
        let other = json!([{"id": "db", "selected": []}, {"id": "envs", "selected": ["prod"]}]);
        let right = vec![answer(&chosen), late(&chosen, &chosen), received(&chosen)];
        assert_eq!(judged(true, right), []);
        for (items, message, place) in [
            (&chosen, &other, "in its user message"),
            (&other, &chosen, "in its answers"),
        ] {
            let found = judged(
                true,
                vec![answer(&chosen), late(items, message), received(message)],
            );
            assert_eq!(found.len(), 1, "{found:?}");
            let (invariant, seq, detail) = &found[0];
            assert_eq!((*invariant, *seq), ("no_answer_lost", 7));
            assert!(
                detail.starts_with("the late answer does not carry the batch web submitted (seq 6)"),
                "{detail}"
            );
            assert!(detail.contains(place), "{detail}");
        }
    }

    /// Each call's batch is owed its own verdict: another call's batch in
    /// between loses nothing, and the batch of a call whose next event is
    /// another batch is lost (it was neither delivered nor refused).
    #[test]
    fn each_calls_batch_waits_for_its_own_verdict() {
        let chosen = json!([{"id": "db", "selected": ["SQLite"]}, {"id": "envs", "selected": []}]);
        let other = |what: &str| match what {
            "answer" => json!({"event": "answer", "callId": "other/1", "answerer": "web", "batch": chosen}),
            _ => json!({"event": "refused", "callId": "other/1", "answerer": "web", "what": "submit",
                        "reason": "unknown"}),
        };
        let between = vec![
            answer(&chosen),
            other("answer"),
            other("refused"),
            result(&chosen),
        ];
        assert_eq!(judged(false, between), []);
        let found = judged(false, vec![answer(&chosen), answer(&chosen), result(&chosen)]);
        let named: Vec<(&str, u64)> = found.iter().map(|(i, s, _)| (*i, *s)).collect();
        assert_eq!(named, [("no_answer_lost", 5)], "{found:?}");
        assert!(
            found[0].2.contains("neither delivered nor refused"),
            "{}",
            found[0].2
        );
    }
}
