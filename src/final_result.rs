//! An agent's final result (SPEC §5), kept as what it is made of and written
//! out as JSON only when it is read.
//!
//! Every agent whose script ends has one, kept until the run ends: a tie of 10^5
//! roots that each got two `pending` results held 10^5 texts of ~700 bytes, most
//! of it the tool's own pending message twice. Kept as parts, a `pending` result
//! is its callId and the final result of such a root is ~100 bytes; the text is
//! the same byte for byte ([`FinalResult::text`]).

use std::fmt;
use std::sync::Arc;

use serde::ser::SerializeMap as _;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::text::Text;
use crate::tool::{ResultKind, ToolResult};

/// A callId, `"<agent>/<n>"`.
type CallId = Text;
/// An agent's name.
type Name = Text;

/// A result as the model got it.
#[derive(Clone, Debug)]
pub(crate) enum Got {
    /// Exactly the tool's own `pending` result for its callId: 300 bytes of
    /// text that the callId alone gives back, held by every script that awaits
    /// a late answer (a tie of 10^5 pending calls holds 10^5 of them).
    Pending,
    /// Any other text (an outside broker's `pending` too, if it differs).
    Text(Box<RawValue>),
}

impl Got {
    /// The result of call `call_id`, kept.
    pub(crate) fn new(call_id: &str, result: ToolResult) -> Got {
        if result.kind == ResultKind::Pending && result.text == ToolResult::pending(call_id).text {
            return Got::Pending;
        }
        Got::Text(
            RawValue::from_string(result.text)
                .unwrap_or_else(|_| RawValue::from_string("null".to_owned()).expect("null is JSON")),
        )
    }
}

/// A call an agent could not ask (`DELEGATED_CALLER`): `{"callId":…,
/// "questions":[…]}` in its final result. Its questions are kept as compact
/// JSON text, shared by the final result, the owner that joins it and the
/// owner's `ask_unresolved` (a parsed tree of them was ~700 bytes a copy).
#[derive(Clone, Debug)]
pub struct Unresolved {
    call_id: CallId,
    questions: Arc<RawValue>,
}

impl Unresolved {
    /// Call `call_id`, which asked `questions` (`null` when its arguments had
    /// none to read).
    pub(crate) fn new(call_id: CallId, questions: &Value) -> Unresolved {
        let text = RawValue::from_string(questions.to_string()).expect("a value's text is JSON");
        Unresolved {
            call_id,
            questions: Arc::from(text),
        }
    }

    /// The call's id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Its `questions` argument as compact JSON text.
    pub fn questions(&self) -> &RawValue {
        &self.questions
    }
}

impl serde::Serialize for Unresolved {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("callId", self.call_id.as_ref())?;
        map.serialize_entry("questions", &*self.questions)?;
        map.end()
    }
}

/// What only an agent that delegated or failed to spawn has: most have neither.
#[derive(Debug, Default)]
struct Extra {
    unresolved: Arc<[Unresolved]>,
    errors: Vec<Value>,
}

/// What a child's owner hears of its final result: the calls it could not
/// ask (`unresolved`, SPEC §5), all a `join` takes from it. One word, shared
/// with the final result: a tree's cancel ends 10^5 children at once, and each
/// told its owner a boxed copy of its whole final result, which the owner
/// read from memory gone cold by then only to find it empty.
#[derive(Clone, Debug, Default)]
pub struct Unasked(Option<Arc<Extra>>);

/// The calls an agent could not ask, of its final result's extra part.
fn unresolved_of(extra: Option<&Arc<Extra>>) -> &[Unresolved] {
    extra.map_or(&[], |e| &e.unresolved)
}

impl Unasked {
    /// The calls, each `{"callId":…,"questions":[…]}`.
    pub fn unresolved(&self) -> &[Unresolved] {
        unresolved_of(self.0.as_ref())
    }

    /// The same, shared; `None` when there are none (an empty shared slice
    /// is an allocation of its own, one for every child of a tree).
    pub(crate) fn shared(&self) -> Option<Arc<[Unresolved]>> {
        (self.0.as_ref())
            .filter(|e| !e.unresolved.is_empty())
            .map(|e| e.unresolved.clone())
    }
}

/// An agent's final result: `{"agent":…,"results":{callId: result,…},
/// "unresolved":[…]}`, plus `"errors":[…]` when a spawn failed (SPEC §5), in
/// that key order. Read it with [`FinalResult::text`] (compact JSON),
/// [`FinalResult::to_value`], `Display` (the same text) or `Serialize`.
#[derive(Clone, Debug)]
pub struct FinalResult {
    agent: Name,
    /// Shared, like `extra`: a child's final result is kept for the run and
    /// told to its owner, and a clone is two reference counts. `None` for no
    /// results: an empty shared slice is an allocation, and most agents of a
    /// tree ask nothing.
    results: Option<Arc<[(CallId, Got)]>>,
    extra: Option<Arc<Extra>>,
}

impl FinalResult {
    /// The final result of `agent`: its results in the order they settled, the
    /// calls it could not ask (`DELEGATED_CALLER`) and its failed spawns.
    pub(crate) fn new(
        agent: Name,
        results: Vec<(CallId, Got)>,
        unresolved: Vec<Unresolved>,
        errors: Vec<Value>,
    ) -> Self {
        let extra = (!unresolved.is_empty() || !errors.is_empty()).then(|| {
            Arc::new(Extra {
                unresolved: unresolved.into(),
                errors,
            })
        });
        FinalResult {
            agent,
            results: (!results.is_empty()).then(|| results.into()),
            extra,
        }
    }

    /// The agent it belongs to.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The agent it belongs to, its name shared.
    pub(crate) fn agent_name(&self) -> &Name {
        &self.agent
    }

    /// The calls it could not ask (`DELEGATED_CALLER`), each `{"callId":…,
    /// "questions":[…]}`.
    pub fn unresolved(&self) -> &[Unresolved] {
        unresolved_of(self.extra.as_ref())
    }

    /// The same, shared, as a child's owner hears it.
    pub(crate) fn unasked(&self) -> Unasked {
        Unasked(self.extra.clone())
    }

    /// The compact JSON text (`serde_json::to_string`), as the model's host
    /// would see it.
    pub fn text(&self) -> String {
        serde_json::to_string(self).expect("a final result serialises")
    }

    /// The JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a final result serialises")
    }
}

impl fmt::Display for FinalResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl serde::Serialize for FinalResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let errors = self.extra.as_ref().map(|e| &e.errors).filter(|e| !e.is_empty());
        let mut map = serializer.serialize_map(Some(3 + usize::from(errors.is_some())))?;
        map.serialize_entry("agent", self.agent.as_ref())?;
        map.serialize_entry("results", &Results(self.results.as_deref().unwrap_or_default()))?;
        map.serialize_entry("unresolved", self.unresolved())?;
        if let Some(errors) = errors {
            map.serialize_entry("errors", errors)?;
        }
        map.end()
    }
}

/// The results as one JSON object, callId → result, in the order they settled.
struct Results<'a>(&'a [(CallId, Got)]);

impl serde::Serialize for Results<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (call_id, result) in self.0 {
            match result {
                Got::Text(text) => map.serialize_entry(call_id.as_ref(), text)?,
                Got::Pending => {
                    let text = RawValue::from_string(ToolResult::pending(call_id).text)
                        .map_err(serde::ser::Error::custom)?;
                    map.serialize_entry(call_id.as_ref(), &text)?;
                }
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn final_text(results: Vec<(CallId, Got)>) -> String {
        serde_json::to_string(&Results(&results)).expect("results serialise")
    }

    #[test]
    fn the_tools_own_pending_is_kept_as_its_callid_and_written_back_byte_for_byte() {
        let call_id: CallId = "root-1/1".into();
        let pending = ToolResult::pending(&call_id);
        let expected = format!("{{\"root-1/1\":{}}}", pending.text);
        let got = Got::new(&call_id, pending);
        assert!(matches!(got, Got::Pending));
        assert_eq!(final_text(vec![(call_id, got)]), expected);
    }

    #[test]
    fn any_other_text_is_kept_as_it_came() {
        let call_id: CallId = "root-1/2".into();
        // An outside broker's pending result with its own message.
        let outside = ToolResult {
            text: r#"{"pending":true,"callId":"root-1/2","message":"later"}"#.to_owned(),
            kind: ResultKind::Pending,
        };
        let got = Got::new(&call_id, outside);
        assert!(matches!(got, Got::Text(_)));
        // The tool's pending text of another call is not this call's.
        let other = Got::new(&call_id, ToolResult::pending("root-1/9"));
        assert!(matches!(other, Got::Text(_)));
        let answers = Got::new(&call_id, ToolResult::answers(r#"{"answers":{}}"#.to_owned()));
        assert_eq!(
            final_text(vec![(call_id.clone(), got), ("root-1/3".into(), answers)]),
            r#"{"root-1/2":{"pending":true,"callId":"root-1/2","message":"later"},"root-1/3":{"answers":{}}}"#
        );
    }

    #[test]
    fn the_text_has_the_spec_key_order_and_errors_only_when_a_spawn_failed() {
        let call_id: CallId = "lead/1".into();
        let plain = FinalResult::new(
            "lead".into(),
            vec![(call_id.clone(), Got::Pending)],
            Vec::new(),
            Vec::new(),
        );
        let pending = ToolResult::pending("lead/1").text;
        assert_eq!(
            plain.text(),
            format!(r#"{{"agent":"lead","results":{{"lead/1":{pending}}},"unresolved":[]}}"#)
        );
        assert_eq!(plain.to_string(), plain.text());
        assert_eq!(plain.to_value()["agent"], json!("lead"));

        let questions =
            json!([{"question": "Go?", "header": "Go", "options": [{"label": "a"}, {"label": "b"}]}]);
        let unresolved = Unresolved::new("lead/2".into(), &questions);
        let error = json!({"child": "c", "error": "LIMIT_EXCEEDED"});
        let full = FinalResult::new(
            "lead".into(),
            Vec::new(),
            vec![unresolved.clone()],
            vec![error.clone()],
        );
        let expected = json!({"callId": "lead/2", "questions": questions});
        assert_eq!(
            full.to_value(),
            json!({"agent": "lead", "results": {}, "unresolved": [expected], "errors": [error]})
        );
        // Compact, in the questions' own key order.
        assert!(full.text().contains(
            r#""unresolved":[{"callId":"lead/2","questions":[{"question":"Go?","header":"Go","options":[{"label":"a"},{"label":"b"}]}]}]"#
        ));
        let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(&full.text())
            .expect("JSON")
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["agent", "results", "unresolved", "errors"]);
        // Delegated calls without failed spawns: no `errors` key at all.
        let delegated = FinalResult::new("lead".into(), Vec::new(), vec![unresolved], Vec::new());
        assert!(delegated.to_value().get("errors").is_none());
    }
}
