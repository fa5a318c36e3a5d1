//! What the model gets back (SPEC §2.4–2.5): the exact compact JSON of every
//! outcome, the error codes, and the two user messages about pending questions.

use serde::Serialize;
use serde_json::value::RawValue;

use super::AnswerItem;

/// The `message` of a `pending` result, exactly as SPEC §2.4 gives it.
pub const PENDING_MESSAGE: &str = "No answer yet. The questions stay open and the user can still answer them. Continue only with work that does not depend on the answers, and do not assume any answer. The answers will arrive later as a user message with kind \"answer_to_pending_question\" and this callId.";

/// The fixed text of every `pending` result around its callId (a JSON
/// string): `{"pending":true,"callId":` and `,"message":PENDING_MESSAGE}`,
/// the message escaped once per process. [`ToolResult::pending`] writes with
/// them; the judge reads a recorded text against them.
pub(crate) fn pending_parts() -> (&'static str, &'static str) {
    static TAIL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let message = serde_json::to_string(PENDING_MESSAGE).expect("a string serialises");
        format!(",\"message\":{message}}}")
    });
    (r#"{"pending":true,"callId":"#, &TAIL)
}

/// The message of a `DELEGATED_CALLER` result (SPEC §3.1).
pub const DELEGATED_MESSAGE: &str = "this agent is a child owned by another agent and may not ask the user; put the unresolved question or decision in your final result";

/// The message of the `ABORTED` result of a call whose turn signal fired while it
/// waited, or before it reached the broker (SPEC §3.8).
pub const TURN_FIRED_MESSAGE: &str = "the turn was cancelled before the call settled";

/// The message of the `LIMIT_EXCEEDED` result of a request over the broker's
/// `open_calls_max`.
pub const OPEN_CALLS_MESSAGE: &str = "too many open questions; nothing was queued";

/// The model-facing error codes of SPEC §2.5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    /// The arguments break SPEC §2.3.
    InvalidArguments,
    /// The caller is a live child owned by another agent.
    DelegatedCaller,
    /// The caller is not the exact live runtime root for another reason.
    NotRuntimeRoot,
    /// No answerer accepted the request, or every one that did died.
    NoAnswerer,
    /// The turn signal fired, or the call was cancelled, before it settled.
    Aborted,
    /// A broker limit would be exceeded; nothing was queued.
    LimitExceeded,
}

impl ErrorCode {
    /// Every code, in the contract's order.
    pub const ALL: [ErrorCode; 6] = [
        ErrorCode::InvalidArguments,
        ErrorCode::DelegatedCaller,
        ErrorCode::NotRuntimeRoot,
        ErrorCode::NoAnswerer,
        ErrorCode::Aborted,
        ErrorCode::LimitExceeded,
    ];

    /// The contract's string, e.g. `"DELEGATED_CALLER"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::DelegatedCaller => "DELEGATED_CALLER",
            ErrorCode::NotRuntimeRoot => "NOT_RUNTIME_ROOT",
            ErrorCode::NoAnswerer => "NO_ANSWERER",
            ErrorCode::Aborted => "ABORTED",
            ErrorCode::LimitExceeded => "LIMIT_EXCEEDED",
        }
    }

    /// The code named by `s`, if it is one.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|code| code.as_str() == s)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool result is, carried beside its text so that nothing has to read
/// the text again to learn it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResultKind {
    /// The answers, in the window or after a blocking wait.
    Answers,
    /// `{"pending":true,…}`: the window ran out.
    Pending,
    /// `{"error":…}`, with its code.
    Error(ErrorCode),
}

impl ResultKind {
    /// `"answers"`, `"pending"`, or the error code, as the log's `outcome` field
    /// records it.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultKind::Answers => "answers",
            ResultKind::Pending => "pending",
            ResultKind::Error(code) => code.as_str(),
        }
    }

    /// The kind named by `s` (the inverse of [`ResultKind::as_str`]).
    pub fn parse(s: &str) -> Option<ResultKind> {
        match s {
            "answers" => Some(ResultKind::Answers),
            "pending" => Some(ResultKind::Pending),
            code => ErrorCode::parse(code).map(ResultKind::Error),
        }
    }

    /// The kind of a result written before the log recorded it: read once from
    /// the text, when an old log is loaded (see `crate::log`).
    pub fn of_legacy_text(text: &str, is_error: bool) -> ResultKind {
        let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        if is_error {
            let code = value.pointer("/error/code").and_then(serde_json::Value::as_str);
            return ResultKind::Error(code.and_then(ErrorCode::parse).unwrap_or(ErrorCode::Aborted));
        }
        if value.get("pending") == Some(&serde_json::Value::Bool(true)) {
            ResultKind::Pending
        } else {
            ResultKind::Answers
        }
    }
}

/// A tool result: the compact JSON text the model reads, and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    /// Compact JSON (`serde_json::to_string`).
    pub text: String,
    /// Answers, pending, or an error with its code.
    pub kind: ResultKind,
}

impl ToolResult {
    /// `{"error":{"code":…,"message":…}}`, marked as an error.
    pub fn error(code: ErrorCode, message: &str) -> ToolResult {
        #[derive(Serialize)]
        struct Body<'a> {
            code: &'a str,
            message: &'a str,
        }
        #[derive(Serialize)]
        struct Error<'a> {
            error: Body<'a>,
        }
        let error = Error {
            error: Body {
                code: code.as_str(),
                message,
            },
        };
        ToolResult {
            text: to_json(&error),
            kind: ResultKind::Error(code),
        }
    }

    /// `{"pending":true,"callId":…,"message":PENDING_MESSAGE}`.
    ///
    /// Only the callId is escaped per call: the message's JSON is escaped once
    /// per process (it is most of the text, and every window that runs out
    /// built it again on the broker's thread, where a burst of expiries waits
    /// behind it).
    pub fn pending(call_id: &str) -> ToolResult {
        let (head, tail) = pending_parts();
        let mut text = Vec::with_capacity(head.len() + call_id.len() + 8 + tail.len());
        text.extend_from_slice(head.as_bytes());
        serde_json::to_writer(&mut text, call_id).expect("a string serialises");
        text.extend_from_slice(tail.as_bytes());
        ToolResult {
            text: String::from_utf8(text).expect("serde_json writes UTF-8"),
            kind: ResultKind::Pending,
        }
    }

    /// An answers result whose text the tool's own mapping produced.
    pub fn answers(text: String) -> ToolResult {
        ToolResult {
            text,
            kind: ResultKind::Answers,
        }
    }

    /// Whether the tool marks it as an error.
    pub fn is_error(&self) -> bool {
        matches!(self.kind, ResultKind::Error(_))
    }

    /// The error code of an error result.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self.kind {
            ResultKind::Error(code) => Some(code),
            _ => None,
        }
    }
}

/// The user message that carries a late answer (SPEC §2.4). `questions_raw` is the
/// call's `questions` argument as the model sent it, embedded verbatim.
pub fn late_answer_message(call_id: &str, questions_raw: &str, answers: &[AnswerItem]) -> String {
    // The text was a JSON value when the model sent it: read in place, it is
    // embedded unchanged with no copy of its own.
    match serde_json::from_str::<&RawValue>(questions_raw) {
        Ok(questions) => late_answer_text(call_id, questions, answers),
        Err(_) => late_answer_text(call_id, &raw_value(questions_raw), answers),
    }
}

/// [`late_answer_message`] of questions already held as JSON text (a call's
/// `questions_raw`), written into one buffer sized for it: the message is
/// mostly the questions' text, and a copy of them and a buffer grown from
/// serde_json's 128 bytes took four more allocations a late answer (issue #23).
pub fn late_answer_text(call_id: &str, questions: &RawValue, answers: &[AnswerItem]) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct LateAnswer<'a> {
        kind: &'a str,
        tool: &'a str,
        call_id: &'a str,
        questions: &'a RawValue,
        answers: &'a [AnswerItem],
    }
    let mut text = Vec::with_capacity(late_answer_bytes(call_id, questions, answers));
    let message = LateAnswer {
        kind: "answer_to_pending_question",
        tool: super::TOOL_NAME,
        call_id,
        questions,
        answers,
    };
    serde_json::to_writer(&mut text, &message).expect("result shapes always serialise");
    String::from_utf8(text).expect("serde_json writes UTF-8")
}

/// About how long [`late_answer_text`] is: for texts with no escapes, never
/// short, and long by a comma or two an item at most.
fn late_answer_bytes(call_id: &str, questions: &RawValue, answers: &[AnswerItem]) -> usize {
    /// `{"kind":"answer_to_pending_question","tool":"","callId":"","questions":,"answers":[]}`.
    const FIXED_BYTES: usize = 85;
    FIXED_BYTES
        + super::TOOL_NAME.len()
        + call_id.len()
        + questions.get().len()
        + answers.iter().map(answer_item_bytes).sum::<usize>()
}

/// About what `item` takes in compact JSON (`{"id":…,"selected":[…],"custom":…},`),
/// a comma after each label and after the item.
fn answer_item_bytes(item: &AnswerItem) -> usize {
    let labels: usize = item.selected.iter().map(|label| label.len() + 3).sum();
    let custom = item.custom.as_ref().map_or(0, |custom| custom.len() + 12);
    24 + item.id.len() + labels + custom
}

/// The user message that withdraws a pending question (SPEC §2.4).
pub fn withdrawal_message(call_id: &str, reason: ErrorCode) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Withdrawn<'a> {
        kind: &'a str,
        tool: &'a str,
        call_id: &'a str,
        reason: &'a str,
    }
    to_json(&Withdrawn {
        kind: "pending_question_withdrawn",
        tool: super::TOOL_NAME,
        call_id,
        reason: reason.as_str(),
    })
}

fn raw_value(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap_or_else(|_| {
        // Unreachable for text taken from validated arguments; fall back to a
        // re-serialised string rather than panic on a library user's input.
        RawValue::from_string(serde_json::Value::String(text.to_owned()).to_string())
            .expect("a JSON string is a JSON value")
    })
}

fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("result shapes always serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<AnswerItem> {
        vec![
            AnswerItem {
                id: "go".into(),
                selected: vec!["Yes (Recommended)".into(), "Later".into()],
                custom: Some("after lunch".into()),
            },
            AnswerItem {
                id: "skip".into(),
                selected: vec![],
                custom: None,
            },
        ]
    }

    /// The late answer's buffer is sized for it: never grown for texts with
    /// no escapes, and at most two commas an item too long.
    #[test]
    fn a_late_answer_is_written_into_a_buffer_of_its_size() {
        let questions: &RawValue = serde_json::from_str(r#"[{"id":"go","question":"Go?"}]"#).unwrap();
        for answers in [&items()[..], &items()[..1], &[]] {
            let text = late_answer_text("root/1", questions, answers);
            let size = late_answer_bytes("root/1", questions, answers);
            assert!(
                text.len() <= size && size <= text.len() + 2 * answers.len(),
                "{size}: {text}"
            );
        }
    }

    /// Both ways in give the same text: the questions embedded verbatim (their
    /// outer spaces trimmed), or, if they are not JSON, as a JSON string.
    #[test]
    fn a_late_answer_reads_the_same_from_text_or_raw_value() {
        let text = r#" [{"id":"go","question":"Go \u00e9?"}] "#;
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        let message = late_answer_message("root/1", text, &items());
        assert_eq!(message, late_answer_text("root/1", &raw, &items()));
        assert!(message.contains(r#","questions":[{"id":"go","question":"Go \u00e9?"}],"answers":"#));
        let not_json = late_answer_message("root/1", "[oops", &[]);
        assert!(
            not_json.contains(r#","questions":"[oops","answers":[]"#),
            "{not_json}"
        );
    }
}
