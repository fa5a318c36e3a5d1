//! Whether the answers that settled a call are well formed for its questions
//! (SPEC §3.6, invariant `answers_well_formed`): a timed batch gives one item per
//! question, in the questions' order, with labels of that question's options and
//! at most one for a single-select; a legacy result answers exactly the call's
//! question texts, in order. Pure functions of the questions as asked and the
//! items as settled.

use serde_json::Value;

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

/// What is wrong with timed answer `items` for `questions`, if anything.
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
    let answers = answers.as_object()?;
    let texts: Vec<&str> = questions
        .iter()
        .filter_map(|q| q.get("question").and_then(Value::as_str))
        .collect();
    let keys: Vec<&str> = answers.keys().map(String::as_str).collect();
    (texts != keys).then(|| format!("answers for {keys:?}, questions {texts:?}"))
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
