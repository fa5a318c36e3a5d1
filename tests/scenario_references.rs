//! SPEC §5, a bad reference: every place of a scenario file that names a call or
//! an agent (`events`, and every place of `expect`) is checked the same way
//! before anything runs. A callId its agent can never make is a bad file
//! (`file:line:column: path: message`, exit code 2); a call that can exist on
//! some run (a child's, a `count` copy's, a `repeat`'s, an `on_resume`'s, one a
//! race makes on some seeds only) is accepted.

use std::process::Command;

use asksim::scenario::{self, Scenario, ScenarioError};
use serde_json::{Value, json};
use tempfile::TempDir;

fn parse(value: &Value) -> Result<Scenario, ScenarioError> {
    scenario::parse("refs.json", &serde_json::to_string(value).unwrap())
}

/// A run of agents that make calls in every way a call can come to exist: a
/// `count` row (`r0`, `r1`) whose copies each make one call in their script and
/// one in their `on_resume` after each of two process losses (at most 3), each
/// copy spawning two children in a `repeat` (`k0-0` … `k1-1`, 2 calls each) and,
/// from its `on_resume`, one more (`late0`, `late1`, 1 call).
fn run_with(expect: Value) -> Value {
    json!({ "name": "refs", "tool": { "mode": "timed", "timeout": 5 },
        "answerers": [{ "name": "web", "accepts": "all", "latency": 1.0, "answer": "recommended" }],
        "agents": [{ "name": "r{i}", "count": 2,
            "script": [{ "ask_raw": {} },
                { "repeat": { "times": 2, "script": [
                    { "spawn": { "name": "k{i}-{r}", "script": [{ "ask_raw": {} }, { "ask_raw": {} }] } }] } }],
            "on_resume": [{ "ask_raw": {} }, { "spawn": { "name": "late{i}", "script": [{ "ask_raw": {} }] } }] }],
        "events": [{ "at": 0.5, "process_loss": { "restart_after": 1.0 } },
                   { "at": 3.0, "process_loss": { "restart_after": 1.0 } }],
        "expect": expect })
}

/// The message of the error `run_with(expect)` is refused with.
fn refused(expect: Value) -> String {
    match parse(&run_with(expect)) {
        Ok(_) => panic!("expected the scenario to be refused"),
        Err(err) => err.message,
    }
}

/// Regression: `expect` could name a call that can never exist: `validate`
/// exited 0 and `run` 1 with `EXPECTATION FAILED results[a/5]: expected …, got
/// null`, while the same callId in `events[].cancel_call` was refused (exit 2).
#[test]
fn an_expected_result_of_a_call_that_can_never_exist_is_a_bad_file() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("x.json");
    let text = r#"{"name":"x","agents":[{"name":"a","script":[{"work":2}]}],"expect":{"results":{"a/5":{"answers":[]}}}}"#;
    std::fs::write(&file, text).unwrap();
    let shown = file.display().to_string();
    for command in ["validate", "run"] {
        let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
            .args([command, &shown])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "asksim {command}: {stderr}");
        assert!(out.stdout.is_empty(), "asksim {command}: nothing runs");
        assert_eq!(
            stderr.trim_end(),
            format!(
                "{shown}:1:86: expect.results.a/5: \"a/5\" can never exist: a makes at most 0 tool calls \
                 in this run (its script makes 0; no process_loss reruns its on_resume)"
            ),
            "asksim {command}"
        );
    }
}

#[test]
fn expect_may_name_every_call_that_can_exist() {
    let expect = json!({
        "results": { "r1/3": {}, "k1-1/2": {}, "late0/1": {} },
        "user_messages": { "r0": [{ "callId": "r0/3" }, { "kind": "no callId" }] },
        "final_results": {
            "k0-1": { "agent": "k0-1", "results": { "k0-1/2": {} }, "unresolved": [{ "callId": "k0-1/1" }] },
            "r0": { "agent": "r0", "results": {}, "unresolved": [], "errors": [{ "spawn": "late0" }] },
            "r1": "not a final result's shape: compared as it is" } });
    let scenario = parse(&run_with(expect)).unwrap_or_else(|err| panic!("refused: {err}"));
    assert_eq!(scenario.expect.unwrap().results.len(), 3);
}

#[test]
fn every_call_expect_names_must_be_one_its_agent_can_make() {
    let most = |agent: &str| {
        format!(
            "{agent} makes at most 3 tool calls in this run (its script makes 1; its on_resume makes 1 after \
             each of 2 restarts)"
        )
    };
    let child = "k0-1 makes at most 2 tool calls in this run (its script makes 2; its on_resume makes none)";
    assert_eq!(
        refused(json!({ "results": { "r1/4": {} } })),
        format!("expect.results.r1/4: \"r1/4\" can never exist: {}", most("r1"))
    );
    assert_eq!(
        refused(json!({ "user_messages": { "r0": [{ "callId": "r0/1" }, { "callId": "r0/9" }] } })),
        format!(
            "expect.user_messages.r0[1].callId: \"r0/9\" can never exist: {}",
            most("r0")
        )
    );
    let final_result = |result: Value| json!({ "final_results": { "k0-1": result } });
    assert_eq!(
        refused(final_result(json!({ "results": { "k0-1/3": {} } }))),
        format!("expect.final_results.k0-1.results.k0-1/3: \"k0-1/3\" can never exist: {child}")
    );
    assert_eq!(
        refused(final_result(json!({ "unresolved": [{ "callId": "k0-1/3" }] }))),
        format!("expect.final_results.k0-1.unresolved[0].callId: \"k0-1/3\" can never exist: {child}")
    );
}

#[test]
fn every_agent_and_callid_expect_names_must_be_of_this_run() {
    assert_eq!(
        refused(json!({ "user_messages": { "r0": [{ "callId": "ghost/1" }] } })),
        "expect.user_messages.r0[0].callId: callId \"ghost/1\" names no agent of this run"
    );
    assert_eq!(
        refused(json!({ "user_messages": { "r0": [{ "callId": "r0" }] } })),
        "expect.user_messages.r0[0].callId: expected a callId \"<agent>/<n>\" with n ≥ 1, got \"r0\""
    );
    assert_eq!(
        refused(json!({ "final_results": { "r0": { "agent": "r9" } } })),
        "expect.final_results.r0.agent: no agent \"r9\" in this run"
    );
    assert_eq!(
        refused(json!({ "final_results": { "r0": { "errors": [{ "spawn": "ghost" }] } } })),
        "expect.final_results.r0.errors[0].spawn: no agent \"ghost\" in this run"
    );
}

/// Regression: a place of `expect` that belongs to one agent could name
/// another agent, or another agent's call, and the file passed `validate` to
/// fail every run: an agent's final result names that agent and holds its own
/// calls, and a late answer reaches the agent that made the call (SPEC §3, §5).
#[test]
fn a_place_of_one_agent_may_not_name_another_agent_or_its_calls() {
    assert_eq!(
        refused(json!({ "final_results": { "r0": { "agent": "r1" } } })),
        "expect.final_results.r0.agent: r0's final result names its own agent, \"r0\", never \"r1\": \
         this can never match"
    );
    let elsewhere = "is a call of r1, and only r0's own calls can be here: this can never match";
    assert_eq!(
        refused(json!({ "final_results": { "r0": { "results": { "r1/1": {} } } } })),
        format!("expect.final_results.r0.results.r1/1: \"r1/1\" {elsewhere}")
    );
    assert_eq!(
        refused(json!({ "final_results": { "r0": { "unresolved": [{ "callId": "r1/1" }] } } })),
        format!("expect.final_results.r0.unresolved[0].callId: \"r1/1\" {elsewhere}")
    );
    assert_eq!(
        refused(json!({ "user_messages": { "r0": [{ "callId": "r1/1" }] } })),
        format!("expect.user_messages.r0[0].callId: \"r1/1\" {elsewhere}")
    );
    // Each agent's own, and `expect.results` of anyone's call: accepted.
    let own = json!({ "results": { "r1/1": {} },
        "user_messages": { "r0": [{ "callId": "r0/1" }] },
        "final_results": { "r0": { "agent": "r0", "results": { "r0/1": {} },
            "unresolved": [{ "callId": "r0/2" }] } } });
    parse(&run_with(own)).expect("every place names its own agent's calls");
}

/// A call one seed makes and another does not (here the answer and the cancel
/// race at 3 s, and the second call is made only when the answer wins) is
/// accepted: whether a call that can exist does is the run's to say.
#[test]
fn a_call_only_some_seeds_make_is_accepted() {
    let ask = json!({ "ask": { "questions": [{ "id": "go", "question": "Go?", "header": "Go",
        "options": [{ "label": "Yes (Recommended)" }, { "label": "No" }] }] } });
    let race = json!({ "name": "race", "tool": { "mode": "timed", "timeout": 30 },
        "answerers": [{ "name": "web", "accepts": "all", "latency": 3.0, "answer": "recommended" }],
        "agents": [{ "name": "root", "script": [ask, ask] }],
        "events": [{ "at": 3.0, "cancel_turn": "root" }, { "at": 4.0, "cancel_call": "root/2" }],
        "expect": { "results": { "root/2": { "error": { "code": "ABORTED" } } } } });
    parse(&race).unwrap_or_else(|err| panic!("refused: {err}"));
}
