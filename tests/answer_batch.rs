//! SPEC §3.6: one batch settles a call. It gives exactly one item per question id,
//! labels from that question's options, at most one label for a single-select;
//! otherwise it is refused back with a reason (and the call stays open).

use crate::common;

use asksim::tool::{AnswerItem, BatchRefusal, Question, validate_batch};
use common::*;
use serde_json::{Value, json};

/// Questions `single` (A, B) and `multi` (A, B, C, multi-select), and `third` (X, Y).
fn three_questions() -> Vec<Question> {
    let arguments = r#"{"questions":[
        {"id":"single","question":"One?","header":"One","options":[{"label":"A"},{"label":"B"}]},
        {"id":"multi","question":"Many?","header":"Many","options":[{"label":"A"},{"label":"B"},{"label":"C"}],"multiSelect":true},
        {"id":"third","question":"Third?","header":"Three","options":[{"label":"X"},{"label":"Y"}]}]}"#;
    accept(&timed(), arguments).questions.to_vec()
}

fn refused(batch: Value) -> String {
    match validate_batch(&three_questions(), &batch) {
        Ok(items) => panic!("{batch} was accepted as {items:?}"),
        Err(BatchRefusal(reason)) => reason,
    }
}

fn ids(items: &[AnswerItem]) -> Vec<&str> {
    items.iter().map(|i| i.id.as_str()).collect()
}

#[test]
fn one_item_per_question_settles_the_call() {
    let items = validate_batch(
        &three_questions(),
        &json!([
            {"id": "single", "selected": ["A"]},
            {"id": "multi", "selected": ["A", "C"]},
            {"id": "third", "selected": ["Y"]},
        ]),
    )
    .unwrap();
    assert_eq!(ids(&items), ["single", "multi", "third"]);
    assert_eq!(items[1].selected, ["A", "C"]);
    assert_eq!(items[1].custom, None);
}

#[test]
fn items_come_back_in_question_order_whatever_order_the_batch_used() {
    let items = validate_batch(
        &three_questions(),
        &json!([
            {"id": "third", "selected": ["X"]},
            {"id": "single", "selected": ["B"]},
            {"id": "multi", "selected": []},
        ]),
    )
    .unwrap();
    assert_eq!(ids(&items), ["single", "multi", "third"]);
    assert_eq!(items[0].selected, ["B"]);
    assert_eq!(items[2].selected, ["X"]);
}

#[test]
fn a_missing_item_is_refused() {
    assert_eq!(
        refused(json!([{"id": "single", "selected": ["A"]}, {"id": "third", "selected": ["X"]}])),
        r#"batch: no item for question "multi""#
    );
    assert_eq!(refused(json!([])), r#"batch: no item for question "single""#);
}

#[test]
fn a_duplicate_item_is_refused() {
    assert_eq!(
        refused(json!([
            {"id": "single", "selected": ["A"]},
            {"id": "multi", "selected": []},
            {"id": "single", "selected": ["B"]},
            {"id": "third", "selected": []},
        ])),
        r#"batch[2].id: a second item for question "single""#
    );
}

#[test]
fn an_unknown_id_is_refused() {
    assert_eq!(
        refused(json!([
            {"id": "single", "selected": ["A"]},
            {"id": "multi", "selected": []},
            {"id": "third", "selected": []},
            {"id": "fourth", "selected": []},
        ])),
        r#"batch[3].id: no question "fourth" in this call"#
    );
}

#[test]
fn a_label_outside_the_questions_options_is_refused() {
    // "X" is an option of another question, not of "single".
    assert_eq!(
        refused(json!([
            {"id": "single", "selected": ["X"]},
            {"id": "multi", "selected": []},
            {"id": "third", "selected": []},
        ])),
        r#"batch[0].selected[0]: "X" is not an option of question "single""#
    );
    // Labels match exactly: no case folding, no trimming.
    for near in ["a", "A ", " A"] {
        let reason = refused(json!([
            {"id": "single", "selected": [near]},
            {"id": "multi", "selected": []},
            {"id": "third", "selected": []},
        ]));
        assert!(reason.contains("is not an option"), "{near:?}: {reason}");
    }
}

#[test]
fn a_single_select_takes_at_most_one_label() {
    assert_eq!(
        refused(json!([
            {"id": "single", "selected": ["A", "B"]},
            {"id": "multi", "selected": []},
            {"id": "third", "selected": []},
        ])),
        r#"batch[0].selected: question "single" is single-select, got 2 labels"#
    );
}

#[test]
fn a_multi_select_takes_every_label() {
    let items = validate_batch(
        &three_questions(),
        &json!([
            {"id": "single", "selected": []},
            {"id": "multi", "selected": ["C", "B", "A"]},
            {"id": "third", "selected": []},
        ]),
    )
    .unwrap();
    assert_eq!(items[1].selected, ["C", "B", "A"]);
}

#[test]
fn a_label_selected_twice_is_refused() {
    assert_eq!(
        refused(json!([
            {"id": "single", "selected": []},
            {"id": "multi", "selected": ["A", "A"]},
            {"id": "third", "selected": []},
        ])),
        r#"batch[1].selected[1]: "A" selected twice"#
    );
}

#[test]
fn custom_overrides_single_select() {
    let items = validate_batch(
        &three_questions(),
        &json!([
            {"id": "single", "selected": ["A"], "custom": "mine"},
            {"id": "multi", "selected": ["B"], "custom": "also"},
            {"id": "third", "custom": "no labels"},
        ]),
    )
    .unwrap();
    assert_eq!(
        items[0],
        AnswerItem {
            id: "single".into(),
            selected: vec![],
            custom: Some("mine".into())
        }
    );
    assert_eq!(
        items[1],
        AnswerItem {
            id: "multi".into(),
            selected: vec!["B".into()],
            custom: Some("also".into())
        }
    );
    assert_eq!(
        items[2],
        AnswerItem {
            id: "third".into(),
            selected: vec![],
            custom: Some("no labels".into())
        }
    );
}

#[test]
fn skipped_question_has_empty_selected_and_no_custom() {
    let items = validate_batch(
        &three_questions(),
        &json!([
            {"id": "single", "selected": []},
            {"id": "multi", "selected": [], "custom": ""},
            {"id": "third"},
        ]),
    )
    .unwrap();
    for item in items {
        assert!(item.selected.is_empty(), "{item:?}");
        assert_eq!(item.custom, None, "{item:?}");
    }
}

#[test]
fn a_malformed_batch_is_refused_with_the_offending_path() {
    let cases = [
        (
            json!({"single": ["A"]}),
            "batch: expected an array of answer items, got an object",
        ),
        (json!(["single"]), "batch[0]: expected an object, got a string"),
        (
            json!([{"selected": []}]),
            "batch[0].id: required field is missing",
        ),
        (json!([{"id": 1}]), "batch[0].id: expected a string, got a number"),
        (
            json!([{"id": "single", "selected": "A"}]),
            "batch[0].selected: expected an array, got a string",
        ),
        (
            json!([{"id": "single", "selected": [1]}]),
            "batch[0].selected[0]: expected a string, got a number",
        ),
        (
            json!([{"id": "single", "custom": 5}]),
            "batch[0].custom: expected a string, got a number",
        ),
        (
            json!([{"id": "single", "note": "hi"}]),
            "batch[0].note: unknown field",
        ),
    ];
    for (batch, reason) in cases {
        assert_eq!(refused(batch.clone()), reason, "{batch}");
    }
}

#[test]
fn a_refusal_displays_its_reason() {
    let refusal = validate_batch(&three_questions(), &json!([])).unwrap_err();
    assert_eq!(refusal.to_string(), refusal.0);
    assert!(!refusal.0.is_empty());
}

#[test]
fn a_legacy_batch_names_questions_by_their_text() {
    let arguments =
        r#"{"questions":[{"question":"Go?","header":"Go","options":[{"label":"Yes"},{"label":"No"}]}]}"#;
    let ask = accept(&legacy(), arguments);
    let items = validate_batch(&ask.questions, &json!([{"id": "Go?", "selected": ["No"]}])).unwrap();
    assert_eq!(items[0].id, "Go?");
    assert!(validate_batch(&ask.questions, &json!([{"id": "q0", "selected": ["No"]}])).is_err());
}
