//! SPEC §2.4–2.5: the exact compact JSON a model reads, compared as strings (never
//! re-parsed): answers, pending, errors, the late-answer and withdrawal messages,
//! and the frozen legacy mapping.

use crate::common;

use asksim::tool::result::{late_answer_message, withdrawal_message};
use asksim::tool::{AnswerItem, ErrorCode, Mode, PENDING_MESSAGE, ToolResult, legacy, timed, validate_batch};
use common::*;
use serde_json::json;

fn item(id: &str, selected: &[&str], custom: Option<&str>) -> AnswerItem {
    AnswerItem {
        id: id.into(),
        selected: selected.iter().map(|s| s.to_string()).collect(),
        custom: custom.map(str::to_owned),
    }
}

const CLEANUP: &str = r#"{"questions":[{"id":"cleanup","question":"Proceed with the destructive cleanup?","header":"Confirm","options":[{"label":"Yes, delete them (Recommended)","description":"Removes the three stale files."},{"label":"No, keep them","description":"Aborts the cleanup."}],"multiSelect":false}],"timeout":30}"#;

/// A timed call with one single-select `single` and one multi-select `multi`.
const MIXED: &str = r#"{"questions":[{"id":"single","question":"Which one?","header":"One","options":[{"label":"A"},{"label":"B"}]},{"id":"multi","question":"Which ones?","header":"Many","options":[{"label":"A"},{"label":"B"},{"label":"C"}],"multiSelect":true}]}"#;

fn timed_answers(arguments: &str, batch: serde_json::Value) -> String {
    let ask = accept(&timed(), arguments);
    let items = validate_batch(&ask.questions, &batch).unwrap();
    ToolResult::answers(timed::render_answers(&items)).text
}

#[test]
fn answered_in_the_window_returns_the_selected_labels() {
    let text = timed_answers(
        CLEANUP,
        json!([{"id": "cleanup", "selected": ["Yes, delete them (Recommended)"]}]),
    );
    assert_eq!(
        text,
        r#"{"answers":[{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]}"#
    );
}

#[test]
fn answers_result_is_not_an_error() {
    let result = ToolResult::answers(timed::render_answers(&[item("q", &["A"], None)]));
    assert!(!result.is_error());
    assert_eq!(result.error_code(), None);
}

#[test]
fn custom_overrides_single_select() {
    let text = timed_answers(
        MIXED,
        json!([
            {"id": "single", "selected": ["A"], "custom": "text"},
            {"id": "multi", "selected": []},
        ]),
    );
    assert_eq!(
        text,
        r#"{"answers":[{"id":"single","selected":[],"custom":"text"},{"id":"multi","selected":[]}]}"#
    );
}

#[test]
fn custom_supplements_multi_select() {
    let text = timed_answers(
        MIXED,
        json!([
            {"id": "single", "selected": ["B"]},
            {"id": "multi", "selected": ["A", "B"], "custom": "text"},
        ]),
    );
    assert_eq!(
        text,
        r#"{"answers":[{"id":"single","selected":["B"]},{"id":"multi","selected":["A","B"],"custom":"text"}]}"#
    );
}

#[test]
fn skipped_question_has_empty_selected_and_no_custom() {
    for skipped in [
        json!({"id": "cleanup", "selected": []}),
        json!({"id": "cleanup", "selected": [], "custom": ""}),
        json!({"id": "cleanup", "selected": [], "custom": null}),
    ] {
        assert_eq!(
            timed_answers(CLEANUP, json!([skipped])),
            r#"{"answers":[{"id":"cleanup","selected":[]}]}"#
        );
    }
}

#[test]
fn answer_items_come_in_the_order_of_the_calls_questions() {
    let text = timed_answers(
        MIXED,
        json!([
            {"id": "multi", "selected": ["C", "A"]},
            {"id": "single", "selected": ["B"]},
        ]),
    );
    // Question order; within an item, labels in the order the answerer gave them.
    assert_eq!(
        text,
        r#"{"answers":[{"id":"single","selected":["B"]},{"id":"multi","selected":["C","A"]}]}"#
    );
}

#[test]
fn pending_message_is_exactly_the_contracts_text() {
    assert_eq!(
        PENDING_MESSAGE,
        "No answer yet. The questions stay open and the user can still answer them. Continue only with work that does not depend on the answers, and do not assume any answer. The answers will arrive later as a user message with kind \"answer_to_pending_question\" and this callId."
    );
}

#[test]
fn window_expired_returns_pending_with_call_id_and_pending_message() {
    let result = ToolResult::pending("root/1");
    assert_eq!(
        result.text,
        r#"{"pending":true,"callId":"root/1","message":"No answer yet. The questions stay open and the user can still answer them. Continue only with work that does not depend on the answers, and do not assume any answer. The answers will arrive later as a user message with kind \"answer_to_pending_question\" and this callId."}"#
    );
    assert!(!result.is_error());
}

/// The pending text is built from a message escaped once: for any callId it
/// must be the bytes serialising the whole object gives.
#[test]
fn pending_text_is_the_serialised_object_for_any_call_id() {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Pending<'a> {
        pending: bool,
        call_id: &'a str,
        message: &'a str,
    }
    for call_id in [
        "root/1",
        "",
        "a \"quoted\" agent/7",
        "back\\slash/2",
        "tab\tnew\nline/3",
        "ünï/4",
        "\u{1}/5",
    ] {
        let expected = serde_json::to_string(&Pending {
            pending: true,
            call_id,
            message: PENDING_MESSAGE,
        })
        .unwrap();
        let result = ToolResult::pending(call_id);
        assert_eq!(result.text, expected, "callId {call_id:?}");
        let parsed: serde_json::Value = serde_json::from_str(&result.text).unwrap();
        assert_eq!(parsed["callId"], call_id);
    }
}

#[test]
fn error_result_is_exact_and_marked_as_an_error() {
    let result = ToolResult::error(ErrorCode::DelegatedCaller, "ask your owner \"root\"");
    assert_eq!(
        result.text,
        r#"{"error":{"code":"DELEGATED_CALLER","message":"ask your owner \"root\""}}"#
    );
    assert!(result.is_error());
    assert_eq!(result.error_code(), Some(ErrorCode::DelegatedCaller));
}

#[test]
fn every_error_code_has_its_contract_string() {
    let strings: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        strings,
        [
            "INVALID_ARGUMENTS",
            "DELEGATED_CALLER",
            "NOT_RUNTIME_ROOT",
            "NO_ANSWERER",
            "ABORTED",
            "LIMIT_EXCEEDED",
        ]
    );
    assert_eq!(ErrorCode::InvalidArguments.as_str(), "INVALID_ARGUMENTS");
    assert_eq!(ErrorCode::DelegatedCaller.as_str(), "DELEGATED_CALLER");
    assert_eq!(ErrorCode::NotRuntimeRoot.as_str(), "NOT_RUNTIME_ROOT");
    assert_eq!(ErrorCode::NoAnswerer.as_str(), "NO_ANSWERER");
    assert_eq!(ErrorCode::Aborted.as_str(), "ABORTED");
    assert_eq!(ErrorCode::LimitExceeded.as_str(), "LIMIT_EXCEEDED");
}

#[test]
fn every_error_code_reads_back_from_its_result() {
    for code in ErrorCode::ALL {
        assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        assert_eq!(code.to_string(), code.as_str());
        let result = ToolResult::error(code, "why");
        assert_eq!(
            result.text,
            format!(r#"{{"error":{{"code":"{code}","message":"why"}}}}"#)
        );
        assert_eq!(result.error_code(), Some(code));
    }
    assert_eq!(ErrorCode::parse("invalid_arguments"), None);
}

#[test]
fn late_answer_message_embeds_questions_exactly_as_sent() {
    // Unusual whitespace, key order and an escape: a re-serialisation would change them.
    let questions = "[ {\"options\" : [{\"label\":\"B\"} ,\n {\"label\":\"A\",\"description\":\"caf\\u00e9\"}],\t\"header\":\"H\", \"question\":\"Q?\",\"id\":\"q\",\"multiSelect\":true } ]";
    let arguments = format!("{{ \"timeout\" : 30 ,  \"questions\":{questions}  }}");
    let ask = accept(&timed(), &arguments);
    let items = validate_batch(
        &ask.questions,
        &json!([{"id": "q", "selected": ["A"], "custom": "both"}]),
    )
    .unwrap();
    let message = late_answer_message("root/1", ask.questions_raw.get(), &items);
    assert_eq!(
        message,
        format!(
            r#"{{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"root/1","questions":{questions},"answers":[{{"id":"q","selected":["A"],"custom":"both"}}]}}"#
        )
    );
    // And the whole message is still one JSON value.
    let parsed: serde_json::Value = serde_json::from_str(&message).unwrap();
    assert_eq!(parsed["questions"][0]["options"][1]["description"], "café");
}

#[test]
fn late_answer_message_carries_skipped_items_without_custom() {
    let ask = accept(&timed(), CLEANUP);
    let items = validate_batch(&ask.questions, &json!([{"id": "cleanup", "selected": []}])).unwrap();
    let message = late_answer_message("root/7", ask.questions_raw.get(), &items);
    let questions = &CLEANUP[13..CLEANUP.find(r#","timeout""#).unwrap()];
    assert_eq!(
        message,
        format!(
            r#"{{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"root/7","questions":{questions},"answers":[{{"id":"cleanup","selected":[]}}]}}"#
        )
    );
}

#[test]
fn withdrawal_message_names_the_call_and_the_reason() {
    assert_eq!(
        withdrawal_message("root/1", ErrorCode::NoAnswerer),
        r#"{"kind":"pending_question_withdrawn","tool":"ask_user_question","callId":"root/1","reason":"NO_ANSWERER"}"#
    );
}

// The frozen legacy mapping: {"answers":{"<question text>":"<answer text>"}}.

/// A legacy call with a single-select "Which one?" and a multi-select "Which ones?".
const LEGACY: &str = r#"{"questions":[{"question":"Which one?","header":"One","options":[{"label":"A"},{"label":"B"}]},{"question":"Which ones?","header":"Many","options":[{"label":"A"},{"label":"B"},{"label":"C"}],"multiSelect":true}]}"#;

fn legacy_answers(arguments: &str, batch: serde_json::Value) -> String {
    let ask = accept(&legacy(), arguments);
    let items = validate_batch(&ask.questions, &batch).unwrap();
    ToolResult::answers(legacy::render_answers(&ask.questions, &items)).text
}

#[test]
fn legacy_maps_a_single_label_to_its_text() {
    let text = legacy_answers(
        LEGACY,
        json!([{"id": "Which one?", "selected": ["B"]}, {"id": "Which ones?", "selected": ["C"]}]),
    );
    assert_eq!(text, r#"{"answers":{"Which one?":"B","Which ones?":"C"}}"#);
}

#[test]
fn legacy_maps_multi_select_labels_joined_by_comma_space() {
    let text = legacy_answers(
        LEGACY,
        json!([{"id": "Which one?", "selected": ["A"]}, {"id": "Which ones?", "selected": ["C", "A", "B"]}]),
    );
    assert_eq!(text, r#"{"answers":{"Which one?":"A","Which ones?":"C, A, B"}}"#);
}

#[test]
fn legacy_maps_custom_replacing_a_single_select() {
    let text = legacy_answers(
        LEGACY,
        json!([{"id": "Which one?", "selected": ["A"], "custom": "neither"}, {"id": "Which ones?", "selected": ["B"]}]),
    );
    assert_eq!(text, r#"{"answers":{"Which one?":"neither","Which ones?":"B"}}"#);
}

#[test]
fn legacy_maps_multi_select_labels_joined_with_custom_appended() {
    let text = legacy_answers(
        LEGACY,
        json!([{"id": "Which one?", "selected": ["A"]}, {"id": "Which ones?", "selected": ["A", "C"], "custom": "and D"}]),
    );
    assert_eq!(
        text,
        r#"{"answers":{"Which one?":"A","Which ones?":"A, C, and D"}}"#
    );
    // Custom alone on a multi-select is just the custom text.
    let text = legacy_answers(
        LEGACY,
        json!([{"id": "Which one?", "selected": ["A"]}, {"id": "Which ones?", "selected": [], "custom": "only D"}]),
    );
    assert_eq!(text, r#"{"answers":{"Which one?":"A","Which ones?":"only D"}}"#);
}

#[test]
fn legacy_maps_a_skipped_question_to_empty_text() {
    let text = legacy_answers(
        LEGACY,
        json!([{"id": "Which ones?", "selected": []}, {"id": "Which one?", "selected": []}]),
    );
    assert_eq!(text, r#"{"answers":{"Which one?":"","Which ones?":""}}"#);
}

#[test]
fn legacy_answers_are_keyed_by_question_text_in_question_order() {
    let mut qs = questions(Mode::Legacy, 3);
    qs[0]["question"] = json!("Zeta \"quoted\"?");
    qs[1]["question"] = json!("Alpha?");
    qs[2]["question"] = json!("Mu?");
    let arguments = args(qs);
    let text = legacy_answers(
        &arguments,
        json!([
            {"id": "Mu?", "selected": ["No"]},
            {"id": "Alpha?", "selected": ["Yes (Recommended)"]},
            {"id": "Zeta \"quoted\"?", "selected": []},
        ]),
    );
    assert_eq!(
        text,
        r#"{"answers":{"Zeta \"quoted\"?":"","Alpha?":"Yes (Recommended)","Mu?":"No"}}"#
    );
}

#[test]
fn legacy_maps_a_missing_item_to_empty_text() {
    // render_answers is total: a question with no item reads as skipped.
    let ask = accept(&legacy(), LEGACY);
    let text = legacy::render_answers(&ask.questions, &[item("Which ones?", &["A"], None)]);
    assert_eq!(text, r#"{"answers":{"Which one?":"","Which ones?":"A"}}"#);
}
