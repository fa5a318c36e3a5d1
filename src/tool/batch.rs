//! Answer-batch validation (SPEC §3.6), a pure function: a batch an answerer
//! submits either settles the call (normalised, in question order) or is refused
//! back with a reason, and the call stays open.

use serde_json::Value;

use super::walk::kind;
use super::{AnswerItem, Question};

/// Why a batch was refused, sent back to the answerer and logged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BatchRefusal(pub String);

fn refuse(reason: impl Into<String>) -> BatchRefusal {
    BatchRefusal(reason.into())
}

/// Checks `batch` against the call's questions: an array with exactly one item per
/// question id; each item `{"id", "selected"?, "custom"?}`; labels from that
/// question's options, without repeats; at most one label for a single-select.
///
/// The items come back in question order. Custom text replaces the labels of a
/// single-select and supplements those of a multi-select; an empty `custom` counts
/// as none, so a skipped item is `{"id":…,"selected":[]}`.
pub fn validate_batch(questions: &[Question], batch: &Value) -> Result<Vec<AnswerItem>, BatchRefusal> {
    let items = batch.as_array().ok_or_else(|| {
        refuse(format!(
            "batch: expected an array of answer items, got {}",
            kind(batch)
        ))
    })?;
    // Items are kept in the batch's order, in the one vector returned, and put
    // in question order at the end (a vector of slots in question order was a
    // second allocation a batch).
    let mut answers: Vec<AnswerItem> = Vec::with_capacity(questions.len());
    // The question an id names: the first of that id.
    let index = |id: &str| questions.iter().position(|q| q.id() == id);
    for (i, item) in items.iter().enumerate() {
        let path = ItemPath(i);
        let map = item
            .as_object()
            .ok_or_else(|| refuse(format!("{path}: expected an object, got {}", kind(item))))?;
        if let Some(key) = map
            .keys()
            .find(|k| !matches!(k.as_str(), "id" | "selected" | "custom"))
        {
            return Err(refuse(format!("{path}.{key}: unknown field")));
        }
        let id = match map.get("id") {
            Some(Value::String(id)) => id,
            Some(other) => {
                return Err(refuse(format!(
                    "{path}.id: expected a string, got {}",
                    kind(other)
                )));
            }
            None => return Err(refuse(format!("{path}.id: required field is missing"))),
        };
        let Some(at) = index(id) else {
            return Err(refuse(format!("{path}.id: no question {id:?} in this call")));
        };
        if answers.iter().any(|answer| answer.id == *id) {
            return Err(refuse(format!("{path}.id: a second item for question {id:?}")));
        }
        answers.push(answer_item(&questions[at], map, path)?);
    }
    if let Some(missing) =
        (0..questions.len()).find(|&at| !answers.iter().any(|answer| index(&answer.id) == Some(at)))
    {
        return Err(refuse(format!(
            "batch: no item for question {:?}",
            questions[missing].id()
        )));
    }
    // No two items name one question; sorting a slice in place never allocates.
    answers.sort_unstable_by_key(|answer| index(&answer.id));
    Ok(answers)
}

/// Where an item is in its batch, `batch[i]`, written only into a refusal:
/// a valid batch formats no path (every late answer of a load went through
/// one `format!` an item).
#[derive(Clone, Copy)]
struct ItemPath(usize);

impl std::fmt::Display for ItemPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "batch[{}]", self.0)
    }
}

fn answer_item(
    question: &Question,
    map: &serde_json::Map<String, Value>,
    path: ItemPath,
) -> Result<AnswerItem, BatchRefusal> {
    let mut selected: Vec<String> = Vec::new();
    match map.get("selected") {
        None => {}
        Some(Value::Array(labels)) => {
            for (j, label) in labels.iter().enumerate() {
                let Some(label) = label.as_str() else {
                    return Err(refuse(format!(
                        "{path}.selected[{j}]: expected a string, got {}",
                        kind(label)
                    )));
                };
                if !question.options().any(|o| o.label == label) {
                    return Err(refuse(format!(
                        "{path}.selected[{j}]: {label:?} is not an option of question {:?}",
                        question.id()
                    )));
                }
                if selected.iter().any(|s| s == label) {
                    return Err(refuse(format!("{path}.selected[{j}]: {label:?} selected twice")));
                }
                selected.push(label.to_owned());
            }
        }
        Some(other) => {
            return Err(refuse(format!(
                "{path}.selected: expected an array, got {}",
                kind(other)
            )));
        }
    }
    if !question.multi_select() && selected.len() > 1 {
        return Err(refuse(format!(
            "{path}.selected: question {:?} is single-select, got {} labels",
            question.id(),
            selected.len()
        )));
    }
    let custom = match map.get("custom") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(refuse(format!(
                "{path}.custom: expected a string, got {}",
                kind(other)
            )));
        }
    };
    if custom.is_some() && !question.multi_select() {
        selected.clear();
    }
    Ok(AnswerItem {
        id: question.id().to_owned(),
        selected,
        custom,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::QuestionOption;

    /// Questions that share an id (never from the tool, which refuses them;
    /// `validate_batch` takes any): an id names the first, so the second is
    /// never answered, as when the items were kept in slots by question.
    #[test]
    fn of_two_questions_with_one_id_the_second_is_never_answered() {
        let yes = [QuestionOption {
            label: "Yes",
            description: "",
        }];
        let twice = [
            Question::new("go", "Go?", "", yes, false),
            Question::new("go", "Really?", "", yes, false),
        ];
        let refusal = validate_batch(&twice, &json!([{"id": "go", "selected": ["Yes"]}])).unwrap_err();
        assert_eq!(refusal.0, r#"batch: no item for question "go""#);
        let batch = json!([{"id": "go"}, {"id": "go"}]);
        let refusal = validate_batch(&twice, &batch).unwrap_err();
        assert_eq!(refusal.0, r#"batch[1].id: a second item for question "go""#);
    }
}
