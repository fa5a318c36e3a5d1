//! The scenario's `expect` block against what the run did (SPEC §5): results,
//! user messages, counts and final results, each compared exactly (an expected
//! error without a `message` leaves the message uncompared).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::projection::Projection;
use crate::scenario::Scenario;
use crate::sim::judge::judged::RunOutput;
use crate::sim::judge::outcomes::Outcomes;
use crate::tool::{ResultKind, ToolResult};

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

/// The tool result each call returned first, as JSON.
fn first_results(projection: &Projection) -> BTreeMap<&str, Value> {
    let mut results = BTreeMap::new();
    for (call_id, question) in &projection.questions {
        let text = match question.first {
            Some((ResultKind::Pending, _)) => Some(ToolResult::pending(call_id).text),
            Some(_) => question.settled.clone(),
            None => None,
        };
        if let Some(text) = text {
            results.insert(
                call_id.as_str(),
                serde_json::from_str(&text).unwrap_or(Value::Null),
            );
        }
    }
    for (call_id, rejected) in &projection.rejected {
        results.insert(
            call_id.as_str(),
            serde_json::from_str(&rejected.result).unwrap_or(Value::Null),
        );
    }
    results
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
    let results = first_results(projection);
    for (call_id, expected) in &expect.results {
        let actual = results.get(call_id.as_str()).cloned().unwrap_or(Value::Null);
        verdict(
            result_matches(&actual, expected),
            format!("results[{call_id}]: expected {expected}, got {actual}"),
        );
    }
    for (agent, expected) in &expect.user_messages {
        let actual: Vec<Value> = projection
            .agents
            .get(agent)
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
            .and_then(|text| serde_json::from_str(text.get()).ok())
            .unwrap_or(Value::Null);
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
