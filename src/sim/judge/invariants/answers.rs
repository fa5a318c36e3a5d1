//! Whether the answers that settled a call are well formed for its questions
//! (SPEC §3.6, invariant `answers_well_formed`): a timed batch gives one item per
//! question, in the questions' order, with labels of that question's options and
//! at most one for a single-select; a legacy result answers exactly the call's
//! question texts, in order. Pure functions of the questions as asked and the
//! items as settled.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

/// A question as the checks read it, borrowed from the request's text: parsing
/// into this costs a fraction of a `Value` tree (a third of the checker's time
/// went there). A text this does not fit is read as a `Value` instead, with the
/// same result.
#[derive(Deserialize)]
pub(super) struct Asked<'a> {
    #[serde(default, borrow)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) question: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) options: Vec<AskedOption<'a>>,
    #[serde(rename = "multiSelect", default)]
    pub(super) multi_select: Option<bool>,
}

#[derive(Deserialize)]
pub(super) struct AskedOption<'a> {
    #[serde(borrow)]
    pub(super) label: Cow<'a, str>,
}

impl Asked<'_> {
    fn into_owned(self) -> Asked<'static> {
        let owned = |text: Option<Cow<'_, str>>| text.map(|t| Cow::Owned(t.into_owned()));
        Asked {
            id: owned(self.id),
            question: owned(self.question),
            options: (self.options.into_iter())
                .map(|o| AskedOption {
                    label: Cow::Owned(o.label.into_owned()),
                })
                .collect(),
            multi_select: self.multi_select,
        }
    }
}

/// A call's questions as the checks read them, parsed once for every check
/// of a delivery (well formed, and the batch submitted).
pub enum Asking<'a> {
    /// Read as questions.
    Read(Vec<Asked<'a>>),
    /// A text [`Asked`] does not fit (a hand-made log), read as a `Value`.
    Other(Value),
}

impl<'a> Asking<'a> {
    /// Reads the questions whose exact text is `questions`.
    pub fn read(questions: &'a str) -> Asking<'a> {
        match serde_json::from_str::<Vec<Asked>>(questions) {
            Ok(asked) => Asking::Read(asked),
            Err(_) => Asking::Other(serde_json::from_str(questions).unwrap_or(Value::Null)),
        }
    }

    /// The same reading, holding its own strings (to be kept past its text:
    /// [`crate::sim::judge::reread`]).
    pub fn into_owned(self) -> Asking<'static> {
        match self {
            Asking::Read(asked) => Asking::Read(asked.into_iter().map(Asked::into_owned).collect()),
            Asking::Other(value) => Asking::Other(value),
        }
    }

    /// The questions, when they read as questions.
    pub fn asked(&self) -> Option<&[Asked<'a>]> {
        match self {
            Asking::Read(asked) => Some(asked),
            Asking::Other(_) => None,
        }
    }

    /// What is wrong with `items` (timed) or `answers` (legacy) for these
    /// questions, if anything.
    pub fn problem(&self, timed: bool, items: &Value) -> Option<String> {
        match self {
            Asking::Read(asked) if timed => timed_problem(asked, items),
            Asking::Read(asked) => {
                let texts: Vec<&str> = asked.iter().filter_map(|q| q.question.as_deref()).collect();
                legacy_problem(&texts, items)
            }
            Asking::Other(value) => {
                let questions = value.as_array().map_or(&[][..], Vec::as_slice);
                if timed {
                    timed_items_problem(questions, items)
                } else {
                    legacy_items_problem(questions, items)
                }
            }
        }
    }
}

/// What is wrong with `items` (timed) or `answers` (legacy) for the questions
/// whose exact text is `questions`, if anything.
#[cfg(test)]
pub fn problem(timed: bool, questions: &str, items: &Value) -> Option<String> {
    Asking::read(questions).problem(timed, items)
}

fn timed_problem(asked: &[Asked], items: &Value) -> Option<String> {
    let items = items.as_array()?;
    if items.len() != asked.len() {
        return Some(format!(
            "{} answer items for {} questions",
            items.len(),
            asked.len()
        ));
    }
    for (question, item) in asked.iter().zip(items) {
        let same_id = match (item.get("id"), question.id.as_deref()) {
            (Some(Value::String(a)), Some(b)) => a == b,
            (None, None) => true,
            _ => false,
        };
        if !same_id {
            return Some(format!("item {:?} out of question order", item.get("id")));
        }
        let labels: Vec<&str> = question.options.iter().map(|o| &*o.label).collect();
        let problem = selected_problem(item, &labels, question.multi_select == Some(true));
        if problem.is_some() {
            return problem.flatten();
        }
    }
    None
}

/// `Some(None)` when the item has no `selected` list (nothing more is checked),
/// `Some(Some(problem))` for a bad label or too many, `None` when it is fine.
fn selected_problem(item: &Value, labels: &[&str], multi: bool) -> Option<Option<String>> {
    let Some(selected) = item.get("selected").and_then(Value::as_array) else {
        return Some(None);
    };
    let selected: Vec<&str> = selected.iter().filter_map(Value::as_str).collect();
    if let Some(bad) = selected.iter().find(|s| !labels.contains(s)) {
        return Some(Some(format!("label {bad:?} is not an option")));
    }
    if !multi && selected.len() > 1 {
        return Some(Some("several labels for a single-select".into()));
    }
    None
}

fn legacy_problem(texts: &[&str], answers: &Value) -> Option<String> {
    let answers = answers.as_object()?;
    let keys: Vec<&str> = answers.keys().map(String::as_str).collect();
    (texts != keys).then(|| format!("answers for {keys:?}, questions {texts:?}"))
}

fn options_of(question: &Value) -> (Vec<&str>, bool) {
    let labels = question
        .get("options")
        .and_then(Value::as_array)
        .map(|os| {
            os.iter()
                .filter_map(|o| o.get("label").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    (labels, question.get("multiSelect") == Some(&Value::Bool(true)))
}

/// What is wrong with timed answer `items` for `questions`, if anything (the
/// reading of a questions text [`problem`] cannot borrow).
pub fn timed_items_problem(questions: &[Value], items: &Value) -> Option<String> {
    let items = items.as_array()?;
    if items.len() != questions.len() {
        return Some(format!(
            "{} answer items for {} questions",
            items.len(),
            questions.len()
        ));
    }
    for (question, item) in questions.iter().zip(items) {
        let id = question.get("id");
        if item.get("id") != id {
            return Some(format!("item {:?} out of question order", item.get("id")));
        }
        let (labels, multi) = options_of(question);
        let selected: Vec<&str> = item
            .get("selected")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_str).collect())?;
        if let Some(bad) = selected.iter().find(|s| !labels.contains(s)) {
            return Some(format!("label {bad:?} is not an option"));
        }
        if !multi && selected.len() > 1 {
            return Some("several labels for a single-select".into());
        }
    }
    None
}

/// What is wrong with a legacy `answers` object for `questions`, if anything.
pub fn legacy_items_problem(questions: &[Value], answers: &Value) -> Option<String> {
    let texts: Vec<&str> = questions
        .iter()
        .filter_map(|q| q.get("question").and_then(Value::as_str))
        .collect();
    legacy_problem(&texts, answers)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn questions() -> Vec<Value> {
        vec![
            json!({"id": "db", "question": "Which database?", "header": "DB",
                   "options": [{"label": "Postgres"}, {"label": "SQLite"}]}),
            json!({"id": "envs", "question": "Which environments?", "header": "Envs", "multiSelect": true,
                   "options": [{"label": "dev"}, {"label": "prod"}]}),
        ]
    }

    #[test]
    fn a_well_formed_timed_batch_passes() {
        let items = json!([{"id": "db", "selected": ["SQLite"]},
                           {"id": "envs", "selected": ["dev", "prod"], "custom": "and staging"}]);
        assert_eq!(timed_items_problem(&questions(), &items), None);
        let skipped = json!([{"id": "db", "selected": []}, {"id": "envs", "selected": []}]);
        assert_eq!(timed_items_problem(&questions(), &skipped), None);
    }

    #[test]
    fn every_timed_defect_is_named() {
        let cases = [
            (
                json!([{"id": "db", "selected": ["SQLite"]}]),
                "1 answer items for 2 questions",
            ),
            (
                json!([{"id": "envs", "selected": []}, {"id": "db", "selected": []}]),
                "out of question order",
            ),
            (
                json!([{"id": "db", "selected": ["MySQL"]}, {"id": "envs", "selected": []}]),
                "\"MySQL\" is not an option",
            ),
            (
                json!([{"id": "db", "selected": ["Postgres", "SQLite"]}, {"id": "envs", "selected": []}]),
                "several labels for a single-select",
            ),
        ];
        for (items, want) in cases {
            let problem = timed_items_problem(&questions(), &items).unwrap_or_default();
            assert!(problem.contains(want), "{items}: {problem:?}");
        }
    }

    /// The borrowed reading and the `Value` reading find the same, also on
    /// questions only the `Value` reading takes (a label that is no string).
    #[test]
    fn both_readings_of_the_questions_agree() {
        let odd = json!([{"id": "db", "options": [{"label": 5}, {"label": "x"}]}]);
        let sets = [Value::Array(questions()), odd];
        let items = [
            json!([{"id": "db", "selected": ["SQLite"]}, {"id": "envs", "selected": ["dev", "prod"]}]),
            json!([{"id": "db", "selected": ["x", "y"]}, {"id": "envs"}]),
            json!([{"id": "db", "selected": ["x"]}]),
            json!([{"id": null, "selected": []}, {"id": "envs", "selected": []}]),
            json!([{"selected": []}]),
            json!({"Which database?": "x"}),
        ];
        for questions in &sets {
            let text = questions.to_string();
            let array = questions.as_array().unwrap();
            for items in &items {
                assert_eq!(
                    problem(true, &text, items),
                    timed_items_problem(array, items),
                    "{text} {items}"
                );
                assert_eq!(
                    problem(false, &text, items),
                    legacy_items_problem(array, items),
                    "{text} {items}"
                );
            }
        }
    }

    #[test]
    fn legacy_answers_must_name_the_question_texts_in_order() {
        let questions = vec![json!({"question": "A?"}), json!({"question": "B?"})];
        assert_eq!(
            legacy_items_problem(&questions, &json!({"A?": "x", "B?": ""})),
            None
        );
        let swapped = legacy_items_problem(&questions, &json!({"B?": "", "A?": "x"}));
        assert!(swapped.is_some_and(|p| p.contains("\"B?\", \"A?\"")));
        assert!(legacy_items_problem(&questions, &json!({"A?": "x"})).is_some());
    }
}
