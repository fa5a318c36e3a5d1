//! The exact text of the two user messages of SPEC §2.4 ("compact JSON,
//! `serde_json::to_string`"; PROTOCOL.md 4.7: "built exactly so"), rebuilt here
//! from the contract, not by the tool's writer (`tool::result`), so that a fault
//! in either is seen: the keys in the order SPEC gives them, a late answer's
//! `questions` spliced verbatim as the model sent them, its answer items written
//! `id`, `selected`, then `custom` only when used, a withdrawal's `reason` the
//! withdrawal's own.
//!
//! Which answers a late answer must carry is `content`'s to judge (the batch's,
//! `no_answer_lost`). The text a late answer's message must be is built here with
//! the message's own answers, written back as SPEC writes answer items: other
//! answers than the batch's are named once, there; any other difference from the
//! exact text is named here, with what differs. Pure functions of the call and the
//! message; each costs the length of the message.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::tool::AnswerItem;

/// What a decided user message is about.
#[derive(Clone, Copy)]
pub enum Decided<'a> {
    /// A late answer, with the items its `late_answer` event records.
    Late(&'a [AnswerItem]),
    /// A withdrawal, for this reason.
    Withdrawal(&'a str),
}

const LATE_KIND: &str = "answer_to_pending_question";
const WITHDRAWN_KIND: &str = "pending_question_withdrawn";
const TOOL: &str = "ask_user_question";
const LATE_KEYS: [&str; 5] = ["kind", "tool", "callId", "questions", "answers"];
const WITHDRAWN_KEYS: [&str; 4] = ["kind", "tool", "callId", "reason"];

/// A message's fields, each as written.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    tool: Option<&'a RawValue>,
    #[serde(borrow, rename = "callId")]
    call_id: Option<&'a RawValue>,
    #[serde(borrow)]
    questions: Option<&'a RawValue>,
    #[serde(borrow)]
    answers: Option<&'a RawValue>,
    #[serde(borrow)]
    reason: Option<&'a RawValue>,
}

/// An answer item as SPEC §2.4 writes it: `custom` only when used.
#[derive(Serialize)]
struct Item<'a> {
    id: &'a str,
    selected: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    custom: Option<&'a str>,
}

/// What is wrong with `message`, decided for the call `call_id` asked with
/// `questions` (the text the model sent; `None` when the log has none): `None`
/// when it is exactly the text SPEC §2.4 gives.
pub fn problem(
    call_id: &str,
    questions: Option<&str>,
    decided: Decided<'_>,
    message: &str,
) -> Option<String> {
    // The common case first, without reading the message back: the exact text
    // with the recorded answers (and no questions where the log has none). A
    // message equal to it has those as its own answers and questions, and the
    // text built from its own fields below would be this same text.
    if message == exact(call_id, questions, decided, None) {
        return None;
    }
    let fields = serde_json::from_str::<Fields>(message).ok();
    let expected = exact(call_id, questions, decided, fields.as_ref());
    if message == expected {
        return None;
    }
    let what = match decided {
        Decided::Late(_) => "the late answer's user message",
        Decided::Withdrawal(_) => "the withdrawal's user message",
    };
    let why = match &fields {
        Some(fields) => why(message, &expected, (call_id, questions), decided, fields),
        None => "it does not read as a JSON object with each key once".to_owned(),
    };
    Some(format!(
        "{what} is not the exact text SPEC §2.4 gives ({why}): expected {expected}, got {message}"
    ))
}

/// The text SPEC §2.4 gives the message. A late answer's questions are the
/// call's (the message's own when the log has none); its answers are the
/// message's own, written as SPEC writes them (as they are when they are no
/// answer items: `content` names those), or the recorded items when it has none.
fn exact(
    call_id: &str,
    questions: Option<&str>,
    decided: Decided<'_>,
    fields: Option<&Fields<'_>>,
) -> String {
    let call_id = quoted(call_id);
    match decided {
        Decided::Withdrawal(reason) => {
            let reason = quoted(reason);
            format!(r#"{{"kind":"{WITHDRAWN_KIND}","tool":"{TOOL}","callId":{call_id},"reason":{reason}}}"#)
        }
        Decided::Late(recorded) => {
            let questions = (questions.or_else(|| fields?.questions.map(RawValue::get))).unwrap_or("[]");
            let answers = match fields.and_then(|f| f.answers).map(RawValue::get) {
                Some(text) => serde_json::from_str::<Vec<AnswerItem>>(text)
                    .map_or_else(|_| text.to_owned(), |i| written(&i)),
                None => written(recorded),
            };
            format!(
                r#"{{"kind":"{LATE_KIND}","tool":"{TOOL}","callId":{call_id},"questions":{questions},"answers":{answers}}}"#
            )
        }
    }
}

/// Answer items as SPEC §2.4 writes them (an empty custom text is none, as in
/// a batch, SPEC §3.6).
pub(super) fn written(items: &[AnswerItem]) -> String {
    let items: Vec<Item<'_>> = items
        .iter()
        .map(|item| Item {
            id: &item.id,
            selected: &item.selected,
            custom: item.custom.as_deref().filter(|c| !c.is_empty()),
        })
        .collect();
    serde_json::to_string(&items).expect("answer items serialise")
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

/// What differs between a message that reads as a JSON object and the exact
/// text: the same JSON written otherwise, else each field that is not the one
/// SPEC gives, else its keys, else how its answer items are written.
fn why(
    message: &str,
    expected: &str,
    (call_id, questions): (&str, Option<&str>),
    decided: Decided<'_>,
    f: &Fields<'_>,
) -> String {
    let value: Value = serde_json::from_str(message).unwrap_or(Value::Null);
    let compact = value.to_string();
    if compact == expected {
        return "it is that JSON, not written compactly as serde_json::to_string writes it".to_owned();
    }
    let mut why = Vec::new();
    let (kind, keys) = match decided {
        Decided::Late(_) => (LATE_KIND, &LATE_KEYS[..]),
        Decided::Withdrawal(_) => (WITHDRAWN_KIND, &WITHDRAWN_KEYS[..]),
    };
    differs("kind", f.kind, kind, &mut why);
    differs("tool", f.tool, TOOL, &mut why);
    differs("callId", f.call_id, call_id, &mut why);
    match decided {
        Decided::Late(_) => {
            match (f.questions.map(RawValue::get), questions) {
                (None, _) => why.push("it carries no questions".to_owned()),
                (Some(got), Some(sent)) if got != sent => {
                    why.push("its questions are not the call's as the model sent them".to_owned());
                }
                _ => {}
            }
            if f.answers.is_none() {
                why.push("it carries no answers".to_owned());
            }
        }
        Decided::Withdrawal(reason) => {
            differs("reason", f.reason, reason, &mut why);
            if f.answers.is_some() {
                why.push("it carries answers".to_owned());
            }
        }
    }
    let written: Vec<&str> = value
        .as_object()
        .map_or_else(Vec::new, |o| o.keys().map(String::as_str).collect());
    if why.is_empty() && written != keys {
        why.push(format!("its keys are {written:?}, SPEC gives {keys:?}"));
    }
    if why.is_empty() {
        why.push(
            "its answer items are not written as SPEC writes them: id, selected, then custom only when used"
                .to_owned(),
        );
    }
    why.join("; ")
}

/// A field that is not `want` (a JSON string), or missing.
fn differs(name: &str, got: Option<&RawValue>, want: &str, why: &mut Vec<String>) {
    match got.map(RawValue::get) {
        Some(got) if got == quoted(want) => {}
        Some(got) => why.push(format!("its {name} is {got}")),
        None => why.push(format!("it has no {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ErrorCode;
    use crate::tool::result::{late_answer_message, withdrawal_message};

    const QUESTIONS: &str = r#"[{"id":"db","question":"Which database?","header":"DB","options":[{"label":"Postgres"},{"label":"SQLite"}]},{"id":"env","question":"Où?","header":"Env","multiSelect":true,"options":[{"label":"dev"},{"label":"prod"}]}]"#;

    fn items() -> Vec<AnswerItem> {
        let items =
            r#"[{"id":"db","selected":[],"custom":"Mongo \"7\""},{"id":"env","selected":["prod","dev"]}]"#;
        serde_json::from_str(items).unwrap()
    }

    fn late(message: &str) -> Option<String> {
        problem("root/1", Some(QUESTIONS), Decided::Late(&items()), message)
    }

    fn withdrawal(message: &str) -> Option<String> {
        problem("root/1", None, Decided::Withdrawal("NO_ANSWERER"), message)
    }

    /// The judge's text and the tool's writer agree, from the contract each.
    #[test]
    fn the_tools_own_messages_are_exact() {
        assert_eq!(late(&late_answer_message("root/1", QUESTIONS, &items())), None);
        assert_eq!(
            withdrawal(&withdrawal_message("root/1", ErrorCode::NoAnswerer)),
            None
        );
        let spec = r#"{"kind":"pending_question_withdrawn","tool":"ask_user_question","callId":"root/1","reason":"NO_ANSWERER"}"#;
        assert_eq!(withdrawal(spec), None);
    }

    fn why(problem: Option<String>) -> String {
        let problem = problem.expect("not the exact text");
        assert!(
            problem.contains("is not the exact text SPEC §2.4 gives (") && problem.contains("): expected {"),
            "{problem}"
        );
        problem
    }

    #[test]
    fn the_same_json_written_otherwise_is_named_so() {
        let exact = late_answer_message("root/1", QUESTIONS, &items());
        let spaced = serde_json::to_string_pretty(&serde_json::from_str::<Value>(&exact).unwrap()).unwrap();
        let problem = why(late(&spaced));
        assert!(problem.starts_with("the late answer's user message is not the exact text SPEC §2.4 gives (it is that JSON, not written compactly as serde_json::to_string writes it): expected {\"kind\":"), "{problem}");
        assert!(problem.ends_with(&format!("got {spaced}")), "{problem}");
    }

    #[test]
    fn a_withdrawal_that_carries_answers_or_names_another_call_or_reason() {
        let answers = late_answer_message("root/1", QUESTIONS, &items());
        let problem = why(withdrawal(&answers));
        assert!(
            problem.contains(
                "(its kind is \"answer_to_pending_question\"; it has no reason; it carries answers)"
            ),
            "{problem}"
        );
        let spec = withdrawal_message("root/1", ErrorCode::NoAnswerer);
        let problem = why(withdrawal(&spec.replace("root/1", "root/2")));
        assert!(problem.contains("(its callId is \"root/2\")"), "{problem}");
        let problem = why(withdrawal(&spec.replace("NO_ANSWERER", "ABORTED")));
        assert!(problem.contains("(its reason is \"ABORTED\")"), "{problem}");
        let problem = why(withdrawal(&spec.replace("ask_user_question", "AskUserQuestion")));
        assert!(problem.contains("(its tool is \"AskUserQuestion\")"), "{problem}");
        let problem = why(withdrawal("NO_ANSWERER"));
        assert!(
            problem.contains("(it does not read as a JSON object with each key once)"),
            "{problem}"
        );
    }

    #[test]
    fn a_late_answer_in_another_form_is_named_by_what_differs() {
        let exact = late_answer_message("root/1", QUESTIONS, &items());
        let value: Value = serde_json::from_str(&exact).unwrap();
        // Keys in another order.
        let reordered = format!(
            r#"{{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"root/1","answers":{},"questions":{QUESTIONS}}}"#,
            value["answers"]
        );
        let problem = why(late(&reordered));
        assert!(problem.contains("(its keys are [\"kind\", \"tool\", \"callId\", \"answers\", \"questions\"], SPEC gives [\"kind\", \"tool\", \"callId\", \"questions\", \"answers\"])"), "{problem}");
        // The questions re-serialised from a parsed form.
        let parsed = exact.replace(r#""header":"DB","#, r#""header":"DB","multiSelect":false,"#);
        let problem = why(late(&parsed));
        assert!(
            problem.contains("(its questions are not the call's as the model sent them)"),
            "{problem}"
        );
        // No answers at all.
        let bare = exact.replace(&format!(",\"answers\":{}", value["answers"]), "");
        assert!(why(late(&bare)).contains("(it carries no answers)"));
        // Answer items written otherwise: an unused custom, a field of its own.
        for written in [
            r#"{"id":"env","selected":["prod","dev"],"custom":""}"#,
            r#"{"id":"env","selected":["prod","dev"],"why":1}"#,
        ] {
            let other = exact.replace(r#"{"id":"env","selected":["prod","dev"]}"#, written);
            let problem = why(late(&other));
            assert!(problem.contains("(its answer items are not written as SPEC writes them: id, selected, then custom only when used)"), "{problem}");
        }
    }

    /// Other answers than the recorded ones are content's to name, not form:
    /// the exact text is built with the message's own answers.
    #[test]
    fn other_answers_in_the_exact_form_are_not_named_here() {
        let mut other = items();
        other[1].selected = vec!["dev".into()];
        assert_eq!(late(&late_answer_message("root/1", QUESTIONS, &other)), None);
        let not_items = late_answer_message("root/1", QUESTIONS, &items())
            .replace(r#""answers":[{"id":"db""#, r#""answers":[{"id":5"#);
        assert_eq!(late(&not_items), None);
    }
}
