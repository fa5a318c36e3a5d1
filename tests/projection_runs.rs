//! Run level (SPEC §4, §6): folding the log of a finished run gives exactly the
//! broker's final state; the log round-trips through its JSON Lines form; and two
//! runs of a virtual-clock scenario write byte-identical logs.

use crate::common;

use std::path::{Path, PathBuf};

use asksim::log::{LogHeader, parse, write_lines};
use asksim::projection::Projection;
use asksim::scenario::{self, Clock, Scenario};
use asksim::sim::{self, RunOutput};

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json") && !common::is_big_load(path))
        .collect();
    files.sort();
    files
}

/// Scenarios that end with questions still open, waiting and pending, across
/// process losses: the repo's scenarios all settle everything.
const OPEN_AT_THE_END: [(&str, &str); 2] = [
    (
        "open-after-loss",
        r#"{
  "name": "open-after-loss",
  "about": "An answerer that never answers: timed calls with and without a timeout and -1, and a legacy call, open at a process loss; they stay open to the end.",
  "tool": { "mode": "timed", "timeout": 20 },
  "answerers": [ { "name": "web", "accepts": "all", "latency": "never", "answer": "recommended" } ],
  "agents": [
    { "name": "root", "script": [
        { "ask": { "questions": [ { "id": "db", "question": "Which database?", "header": "Database", "options": [ { "label": "Postgres (Recommended)" }, { "label": "SQLite" } ] } ], "timeout": 2 } },
        { "ask": { "questions": [ { "id": "region", "question": "Which region?", "header": "Region", "options": [ { "label": "eu (Recommended)" }, { "label": "us" } ] } ] } } ],
      "on_resume": [ { "ask": { "questions": [ { "id": "go", "question": "Ship it?", "header": "Ship", "options": [ { "label": "Yes (Recommended)" }, { "label": "No" } ] } ], "timeout": -1 } } ] },
    { "name": "ops", "script": [
        { "ask": { "questions": [ { "id": "go", "question": "Deploy now?", "header": "Deploy", "options": [ { "label": "Yes (Recommended)" }, { "label": "No" } ] } ], "timeout": -1 } } ] }
  ],
  "events": [ { "at": 5.0, "process_loss": { "restart_after": 1.0 } } ]
}"#,
    ),
    (
        "legacy-open-after-loss",
        r#"{
  "name": "legacy-open-after-loss",
  "about": "Legacy calls that never get an answer, before and after a process loss.",
  "answerers": [ { "name": "terminal", "accepts": "all", "latency": "never", "answer": "recommended" } ],
  "agents": [ { "name": "root",
      "script": [ { "ask": { "questions": [ { "question": "Deploy now?", "header": "Deploy", "options": [ { "label": "Yes (Recommended)" }, { "label": "No" } ] } ] } } ],
      "on_resume": [ { "ask": { "questions": [ { "question": "Deploy now?", "header": "Deploy", "options": [ { "label": "Yes (Recommended)" }, { "label": "No" } ] } ] } } ] } ],
  "events": [ { "at": 3.0, "process_loss": { "restart_after": 1.0 } } ]
}"#,
    ),
];

fn all_scenarios() -> Vec<(String, Scenario)> {
    let mut all: Vec<(String, Scenario)> = scenario_files()
        .iter()
        .map(|file| {
            let label = file.display().to_string();
            let scenario = scenario::load(file).unwrap_or_else(|e| panic!("{e}"));
            (label, scenario)
        })
        .collect();
    for (label, text) in OPEN_AT_THE_END {
        all.push((
            label.to_owned(),
            scenario::parse(label, text).unwrap_or_else(|e| panic!("{e}")),
        ));
    }
    all
}

fn run(scenario: &Scenario) -> RunOutput {
    sim::run(scenario, scenario.seed, scenario.clock).expect("a runtime")
}

fn log_bytes(scenario: &Scenario, output: &RunOutput) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_lines(
        &mut bytes,
        &LogHeader::new(&scenario.name, output.seed),
        output.events(),
    )
    .expect("writing to a Vec never fails");
    bytes
}

#[test]
fn folding_a_finished_run_gives_the_brokers_final_state() {
    let mut failures = Vec::new();
    for (label, scenario) in all_scenarios() {
        let output = run(&scenario);
        assert!(output.limit.is_none(), "{label}: stopped by {:?}", output.limit);
        let folded = Projection::fold(output.events()).open_calls();
        if folded != output.open {
            failures.push(format!(
                "{label}: the fold says {folded:?}, the broker {:?}",
                output.open
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_open_at_the_end_scenarios_really_end_open() {
    let scenarios = all_scenarios();
    let find = |name: &str| &scenarios.iter().find(|(l, _)| l == name).unwrap().1;
    let output = run(find("open-after-loss"));
    let open: Vec<(&str, &str)> = output.open.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        open,
        [
            ("ops/1", "pending"),
            ("root/1", "pending"),
            ("root/2", "pending"),
            ("root/3", "waiting")
        ]
    );
    let output = run(find("legacy-open-after-loss"));
    let open: Vec<(&str, &str)> = output.open.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(open, [("root/2", "waiting")]);
    let p = Projection::fold(output.events());
    assert_eq!(
        p.questions["root/1"].state,
        asksim::projection::QuestionState::LostOnRestart
    );
}

#[test]
fn a_log_round_trips_through_its_lines() {
    for (label, scenario) in all_scenarios() {
        let output = run(&scenario);
        let bytes = log_bytes(&scenario, &output);
        let text = String::from_utf8(bytes.clone()).expect("a log is UTF-8");
        let (header, events) = parse(&text).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(header, LogHeader::new(&scenario.name, output.seed), "{label}");
        assert_eq!(events, output.events(), "{label}");
        // …and writes back to the same bytes, so the trace hash is stable.
        let mut again = Vec::new();
        write_lines(&mut again, &header, &events).unwrap();
        assert_eq!(again, bytes, "{label}");
        assert_eq!(
            Projection::fold(&events),
            Projection::fold(output.events()),
            "{label}"
        );
    }
}

#[test]
fn two_runs_write_byte_identical_logs() {
    for (label, scenario) in all_scenarios() {
        if scenario.clock != Clock::Virtual {
            continue;
        }
        let first = log_bytes(&scenario, &run(&scenario));
        let second = log_bytes(&scenario, &run(&scenario));
        assert!(
            first == second,
            "{label}: two runs under seed {} wrote different logs",
            scenario.seed
        );
        let (first, again) = (run(&scenario), run(&scenario));
        let header = LogHeader::new(&scenario.name, scenario.seed);
        assert_eq!(
            asksim::log::trace_hash(&header, first.events()),
            asksim::log::trace_hash(&header, again.events()),
            "{label}"
        );
        assert_eq!(
            asksim::log::trace_hash(&header, first.events()),
            first.recording.trace_hash,
            "{label}: the streamed hash is the hash of the log's bytes"
        );
    }
}
