//! The scenario's `expect` block against what the run did (SPEC §5): results,
//! user messages, counts and final results, each compared exactly (an expected
//! error without a `message` leaves the message uncompared). A result is compared
//! with the text the model was handed, as its `result` event recorded it, never
//! with a re-creation of what it should have been.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scenario::Scenario;
use crate::sim::judge::first_results::FirstResults;
use crate::sim::judge::judged::RunOutput;
use crate::sim::judge::outcomes::Outcomes;

/// The expectations part of the summary.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ExpectationReport {
    /// Expectations that held.
    pub passed: u64,
    /// Expectations that did not.
    pub failed: u64,
    /// What did not, one line each.
    pub failures: Vec<String>,
}

/// The verdict of the scenario's `expect` block on `output`, given its outcomes.
pub fn expectations(scenario: &Scenario, output: &RunOutput, outcomes: &Outcomes) -> ExpectationReport {
    let mut report = ExpectationReport::default();
    let Some(expect) = &scenario.expect else {
        return report;
    };
    let mut verdict = |ok: bool, what: String| {
        if ok {
            report.passed += 1;
        } else {
            report.failed += 1;
            report.failures.push(what);
        }
    };
    let projection = output.projection();
    let kept;
    let results = match &output.checked {
        Some(checked) => &checked.first_results,
        None => {
            kept = FirstResults::of(scenario, output.events());
            &kept
        }
    };
    for (call_id, expected) in &expect.results {
        let actual = results.get(call_id);
        verdict(
            result_matches(&actual, expected),
            format!("results[{call_id}]: expected {expected}, got {actual}"),
        );
    }
    for (agent, expected) in &expect.user_messages {
        let actual: Vec<Value> = projection
            .agents
            .get(agent.as_str())
            .map(|a| {
                a.messages
                    .iter()
                    .map(|m| serde_json::from_str(m).unwrap_or(Value::Null))
                    .collect()
            })
            .unwrap_or_default();
        let (expected_json, actual_json) = (Value::Array(expected.clone()), Value::Array(actual.clone()));
        verdict(
            &actual == expected,
            format!("user_messages[{agent}]: expected {expected_json}, got {actual_json}"),
        );
    }
    for (name, expected) in &expect.counts {
        let actual = outcomes.count(name);
        verdict(
            actual == *expected,
            format!("counts[{name}]: expected {expected}, got {actual}"),
        );
    }
    for (agent, expected) in &expect.final_results {
        let actual = output
            .finals
            .get(agent)
            .map_or(Value::Null, crate::effect::FinalResult::to_value);
        verdict(
            &actual == expected,
            format!("final_results[{agent}]: expected {expected}, got {actual}"),
        );
    }
    report
}

/// Exact JSON equality, except that an expected error without a `message` leaves
/// the actual message uncompared (SPEC §5).
pub fn result_matches(actual: &Value, expected: &Value) -> bool {
    let error_without_message = expected
        .get("error")
        .and_then(Value::as_object)
        .is_some_and(|e| !e.contains_key("message"));
    if !error_without_message {
        return actual == expected;
    }
    let mut actual = actual.clone();
    if let Some(error) = actual.get_mut("error").and_then(Value::as_object_mut) {
        error.remove("message");
    }
    &actual == expected
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, EventKind};
    use crate::tool::ToolResult;

    fn scenario() -> Scenario {
        let text = r#"{"name": "s", "tool": {"mode": "timed"},
            "agents": [{"name": "root", "script": [{"ask_raw": {}}, {"ask_raw": {}}]}],
            "expect": {"results": {"root/1": {"pending": true}, "root/2": {"answers": []}}}}"#;
        crate::scenario::parse("s.json", text).expect("a valid scenario")
    }

    fn result(seq: u64, call_id: &str, text: &str) -> Event {
        Event {
            seq,
            t: 0.0,
            kind: EventKind::result(&call_id.into(), &"root".into(), &ToolResult::pending(text)),
        }
    }

    /// Regression: a pending call's expectation was answered with
    /// `ToolResult::pending(call_id)` re-created, so a broker that handed the model
    /// a pending text with the wrong callId passed every `expect.results`.
    #[test]
    fn an_expected_result_is_the_text_the_model_saw_not_a_re_creation() {
        let events = [result(1, "root/1", "root/7")];
        let results = FirstResults::of(&scenario(), &events);
        let contract: Value = serde_json::from_str(&ToolResult::pending("root/1").text).unwrap();
        assert!(!result_matches(&results.get("root/1"), &contract));
        let events = [result(1, "root/1", "root/1")];
        let results = FirstResults::of(&scenario(), &events);
        assert!(result_matches(&results.get("root/1"), &contract));
    }

    #[test]
    fn only_the_first_result_of_an_expected_call_is_kept() {
        let events = [
            result(1, "root/1", "root/1"),
            result(2, "root/1", "second"),
            result(3, "root/3", "root/3"),
        ];
        let results = FirstResults::of(&scenario(), &events);
        assert_eq!(results.get("root/1")["callId"], "root/1");
        assert_eq!(results.get("root/2"), Value::Null, "no result at all");
        assert_eq!(results.get("root/3"), Value::Null, "not expected, not kept");
    }
}
