//! SPEC lines no other test held, one test each, named after the clause.

use std::process::Command;

use asksim::event::EventKind;
use asksim::projection::QuestionState;
use asksim::scenario::{self, Clock};
use asksim::sim::{self, Limit, summarise};
use serde_json::{Value, json};

fn question(id: &str) -> Value {
    json!({ "id": id, "question": format!("Proceed with {id}?"), "header": "Confirm",
            "options": [ { "label": "Yes (Recommended)" }, { "label": "No" } ] })
}

fn ask(id: &str, timeout: f64) -> Value {
    json!({ "ask": { "questions": [question(id)], "timeout": timeout } })
}

fn parse(scenario: &Value) -> scenario::Scenario {
    scenario::parse("spec-line.json", &scenario.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

fn run(scenario: &Value) -> (scenario::Scenario, asksim::sim::RunOutput) {
    let scenario = parse(scenario);
    let output = sim::run(&scenario, 1, Clock::Virtual).expect("a run");
    (scenario, output)
}

/// SPEC §3.9: "On restart the answerers start again from their configuration (a
/// `crash_at` in the past does not fire again)".
#[test]
fn a_crash_at_in_the_past_does_not_fire_again_after_a_restart() {
    let (scenario, output) = run(&json!({
        "name": "crash-at-past",
        "tool": { "mode": "timed", "timeout": 30 },
        "answerers": [ { "name": "web", "accepts": "all", "latency": 5.0, "answer": "recommended",
                         "faults": { "crash_at": 2.0 } } ],
        "agents": [ { "name": "root", "script": [ ask("first", -1.0) ], "on_resume": [ ask("again", -1.0) ] } ],
        "events": [ { "at": 3.0, "process_loss": { "restart_after": 1.0 } } ]
    }));
    let crashes: Vec<f64> = output
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Crash { .. }))
        .map(|e| e.t)
        .collect();
    assert_eq!(
        crashes,
        [2.0],
        "web crashed once, at 2 s, and not again after the restart at 4 s"
    );
    let projection = output.projection();
    assert_eq!(
        projection.questions["root/1"].state,
        QuestionState::Errored,
        "NO_ANSWERER after the crash"
    );
    assert_eq!(
        projection.questions["root/2"].state,
        QuestionState::Answered,
        "web answers after the restart"
    );
    assert!(summarise(&scenario, "crash-at-past.json", &output).passed());
}

fn aborted_call_expecting(expected: Value) -> bool {
    let (scenario, output) = run(&json!({
        "name": "error-code",
        "tool": { "mode": "timed", "timeout": 30 },
        "answerers": [ { "name": "web", "accepts": "all", "latency": 10.0, "answer": "recommended" } ],
        "agents": [ { "name": "root", "script": [ ask("go", -1.0) ] } ],
        "events": [ { "at": 1.0, "cancel_turn": "root" } ],
        "expect": { "results": { "root/1": expected } }
    }));
    summarise(&scenario, "error-code.json", &output).passed()
}

/// SPEC §5: "`results` (callId → result JSON; compared exactly, except that an
/// error's `message` may be left out, and is then not compared)": the code still is.
#[test]
fn an_expected_error_may_leave_out_its_message_but_its_code_is_compared() {
    assert!(aborted_call_expecting(json!({ "error": { "code": "ABORTED" } })));
    assert!(!aborted_call_expecting(
        json!({ "error": { "code": "NO_ANSWERER" } })
    ));
    assert!(aborted_call_expecting(
        json!({ "error": { "code": "ABORTED", "message": "the turn was cancelled before the call settled" } })
    ));
    assert!(!aborted_call_expecting(
        json!({ "error": { "code": "ABORTED", "message": "another" } })
    ));
}

/// SPEC §5: `limits.events_max`: "A run that hits one stops, reports which, and
/// exits 1: it never hangs."
#[test]
fn events_max_stops_a_run_names_the_limit_and_exits_1() {
    let text = json!({
        "name": "events-max",
        "tool": { "mode": "timed", "timeout": 30 },
        "answerers": [ { "name": "web", "accepts": "all", "latency": 1.0, "answer": "recommended" } ],
        "agents": [ { "name": "root", "script": [ ask("a", 5.0), ask("b", 5.0), ask("c", 5.0), ask("d", 5.0) ] } ],
        "limits": { "events_max": 6 }
    });
    let (scenario, output) = run(&text);
    assert_eq!(output.limit, Some(Limit::EventsMax));
    // Six events and the `end` line that closes every run's log.
    assert!(output.recording.count <= 7, "{} events", output.recording.count);
    let last = output.events().last().expect("the run kept its events");
    assert!(
        matches!(&last.kind, asksim::event::EventKind::End { reason } if reason == "events_max"),
        "{last:?}"
    );
    let summary = summarise(&scenario, "events-max.json", &output);
    assert_eq!(summary.limit, Some("events_max"));
    assert!(!summary.passed());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events-max.json");
    std::fs::write(&path, text.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(["run", path.to_str().unwrap(), "--json"])
        .output()
        .expect("asksim runs");
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert_eq!(report["limit"], "events_max");
}

/// SPEC §6: "`latency_s` (p50, p99, max: call start → settlement)": from the
/// broker's receipt of the request to the call's result.
#[test]
fn latency_s_runs_from_a_calls_start_to_its_settlement() {
    let (scenario, output) = run(&json!({
        "name": "latency",
        "tool": { "mode": "timed", "timeout": 30 },
        "answerers": [ { "name": "web", "accepts": "all", "latency": 2.0, "answer": "recommended" } ],
        "agents": [
            { "name": "a", "script": [ ask("a", 30.0) ] },
            { "name": "b", "script": [ { "work": 3.0 }, ask("b", 30.0) ] },
            { "name": "c", "script": [ { "work": 10.0 }, ask("c", 30.0) ] }
        ]
    }));
    let summary = summarise(&scenario, "latency.json", &output);
    assert_eq!(summary.outcomes.answered, 3);
    // Each call took 2 s from its start (at 0, 3 and 10 s), whenever it started;
    // three significant figures of an HDR histogram.
    for figure in [
        summary.latency_s.p50,
        summary.latency_s.p99,
        summary.latency_s.max,
    ] {
        assert!((figure - 2.0).abs() < 0.01, "{figure}");
    }
    assert_eq!(output.virtual_s, 12.0);
}

/// SPEC §3.8: cancellation "ends their `work`, `join` and `await_answer` steps":
/// the script ends there (its next step never runs), while the pending call stays
/// open and its late answer still reaches the agent.
#[test]
fn cancellation_ends_await_answer() {
    let (scenario, output) = run(&json!({
        "name": "cancel-await",
        "tool": { "mode": "timed", "timeout": 30 },
        "answerers": [ { "name": "web", "accepts": "all", "latency": 20.0, "answer": "recommended" } ],
        "agents": [ { "name": "root", "script": [
            ask("first", 1.0), { "await_answer": "root/1" }, ask("never", 30.0) ] } ],
        "events": [ { "at": 5.0, "cancel_turn": "root" } ]
    }));
    let projection = output.projection();
    assert!(
        !projection.questions.contains_key("root/2"),
        "the step after await_answer never ran"
    );
    assert_eq!(projection.questions["root/1"].state, QuestionState::LateAnswered);
    assert!(output.finals.contains_key("root"), "the script ended");
    let summary = summarise(&scenario, "cancel-await.json", &output);
    assert!(summary.passed(), "{:?}", summary.invariants.violations);
    // The same script without the signal goes on to root/2 once the answer came.
    let (_, uncancelled) = run(&json!({
        "name": "await",
        "tool": { "mode": "timed", "timeout": 30 },
        "answerers": [ { "name": "web", "accepts": "all", "latency": 20.0, "answer": "recommended" } ],
        "agents": [ { "name": "root", "script": [
            ask("first", 1.0), { "await_answer": "root/1" }, ask("never", 30.0) ] } ]
    }));
    assert!(uncancelled.projection().questions.contains_key("root/2"));
}
