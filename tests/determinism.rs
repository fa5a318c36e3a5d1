//! Determinism and seed sweeps (SPEC §6): one seed gives one trace, a jittered race
//! explores different interleavings under different seeds, every race holds its
//! invariants (and the properties that hold whatever the interleaving) under many
//! seeds, and a failing run prints the command that reproduces it. What `run
//! --check-determinism` found shows whether it passed or not; a real-clock run
//! names no strategy; `sweep --json` names the `--require`d races never reached.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use asksim::event::EventKind;
use asksim::scenario::{self, Clock, Scenario};
use asksim::sim::{self, RunOutput};
use asksim::sim::{Summary, render_table, summarise};
use serde_json::{Value, json};

/// The race scenarios of SPEC §3.7, each run jittered.
const RACES: [&str; 4] = [
    "race-answer-vs-expiry",
    "race-answer-vs-cancel",
    "race-hold-vs-expiry",
    "race-submit-vs-owner-death",
];

/// Seeds every race must pass under.
const SWEEP_SEEDS: std::ops::Range<u64> = 0..50;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json") && !common::is_big_load(path))
        .collect();
    files.sort();
    files
}

fn load(name: &str) -> (String, Scenario) {
    let path = scenarios_dir().join(format!("{name}.json"));
    let scenario = scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    (path.display().to_string(), scenario)
}

fn run(scenario: &Scenario, label: &str, seed: u64) -> (RunOutput, Summary) {
    let output = sim::run(scenario, seed, Clock::Virtual).expect("a runtime");
    let summary = summarise(scenario, label, &output);
    (output, summary)
}

/// The first result of every call, parsed.
fn results(output: &RunOutput) -> BTreeMap<String, Value> {
    let mut results = BTreeMap::new();
    for event in output.events() {
        if let EventKind::Result { call_id, result, .. } = &event.kind {
            results
                .entry(call_id.to_string())
                .or_insert_with(|| serde_json::from_str(result).unwrap_or(Value::Null));
        }
    }
    results
}

/// Every user message, parsed, by agent.
fn user_messages(output: &RunOutput) -> BTreeMap<String, Vec<Value>> {
    let mut messages: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for event in output.events() {
        if let EventKind::UserMessage { agent, message, .. } = &event.kind {
            messages
                .entry(agent.to_string())
                .or_default()
                .push(serde_json::from_str(message).unwrap_or(Value::Null));
        }
    }
    messages
}

/// `(what, reason)` of every refusal sent to `answerer`.
fn refusals(output: &RunOutput, answerer: &str) -> Vec<(String, String)> {
    output
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Refused {
                answerer: a,
                what,
                reason,
                ..
            } if a == answerer => Some((what.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

/// Answer batches submitted by `answerer`.
fn submits(output: &RunOutput, answerer: &str) -> usize {
    output
        .events()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Answer { answerer: a, .. } if a == answerer))
        .count()
}

fn answers(label: &str) -> Value {
    json!([{ "id": "db", "selected": [label] }])
}

/// What must hold for a race whatever the interleaving; returns which side won.
fn race_property(race: &str, output: &RunOutput, summary: &Summary) -> Result<&'static str, String> {
    let results = results(output);
    let messages = user_messages(output);
    let result = results.get("root/1").cloned().unwrap_or(Value::Null);
    let root_messages = messages.get("root").cloned().unwrap_or_default();
    let o = &summary.outcomes;
    let fail = |what: &str| {
        Err(format!(
            "{what}: result {result}, messages {root_messages:?}, outcomes {o:?}"
        ))
    };
    match race {
        "race-answer-vs-expiry" => {
            let postgres = answers("Postgres (Recommended)");
            if result.get("answers") == Some(&postgres) {
                (o.answered == 1 && root_messages.is_empty())
                    .then_some("answer")
                    .ok_or(())
                    .or_else(|()| fail("answered, but not exactly once"))
            } else if result.get("pending") == Some(&Value::Bool(true)) {
                let late = root_messages.len() == 1
                    && root_messages[0]["kind"] == "answer_to_pending_question"
                    && root_messages[0]["answers"] == postgres;
                (late && o.pending == 1 && o.late_answered == 1)
                    .then_some("expiry")
                    .ok_or(())
                    .or_else(|()| fail("pending, but the late answer did not arrive exactly once"))
            } else {
                fail("neither answered nor pending")
            }
        }
        "race-answer-vs-cancel" => {
            if result.get("answers") == Some(&answers("Postgres (Recommended)")) {
                (o.answered == 1 && refusals(output, "web").is_empty())
                    .then_some("answer")
                    .ok_or(())
                    .or_else(|()| fail("answered, but something was refused"))
            } else if result.pointer("/error/code") == Some(&json!("ABORTED")) {
                // The answer may not have been sent at all (the withdraw reached the
                // web client first); if it was, it was refused back.
                let refused = refusals(output, "web");
                let ok =
                    refused.len() == submits(output, "web") && refused.iter().all(|(w, _)| w == "submit");
                ok.then_some("cancel")
                    .ok_or(())
                    .or_else(|()| fail("aborted, but an answer was neither delivered nor refused"))
            } else {
                fail("neither answered nor aborted")
            }
        }
        "race-hold-vs-expiry" => {
            let sqlite = answers("SQLite");
            if result.get("answers") == Some(&sqlite) {
                (o.answered == 1 && root_messages.is_empty())
                    .then_some("hold")
                    .ok_or(())
                    .or_else(|()| fail("held and answered, but not exactly once"))
            } else if result.get("pending") == Some(&Value::Bool(true)) {
                let refused = refusals(output, "web");
                let late = root_messages.len() == 1 && root_messages[0]["answers"] == sqlite;
                (late && refused == [("hold".to_owned(), "settled".to_owned())])
                    .then_some("expiry")
                    .ok_or(())
                    .or_else(|()| fail("pending, but the hold was not refused or the late answer is missing"))
            } else {
                fail("neither answered nor pending")
            }
        }
        "race-submit-vs-owner-death" => {
            let refused = refusals(output, "web");
            if result.get("answers") == Some(&answers("Postgres (Recommended)")) {
                refused
                    .is_empty()
                    .then_some("submit")
                    .ok_or(())
                    .or_else(|()| fail("web's answer won but something was refused"))
            } else if result.get("answers") == Some(&answers("SQLite")) {
                let ok = refused.len() == submits(output, "web")
                    && refused.iter().all(|(w, r)| w == "submit" && r == "owner_dead");
                ok.then_some("death").ok_or(()).or_else(|()| {
                    fail("terminal answered, but web's late submit was not refused as owner_dead")
                })
            } else {
                fail("neither web's nor terminal's answer")
            }
        }
        other => panic!("no property for {other}"),
    }
}

#[test]
fn every_scenario_gives_one_trace_hash_per_seed() {
    let mut failures = Vec::new();
    for file in scenario_files() {
        let label = file.display().to_string();
        let scenario = scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
        if scenario.clock != Clock::Virtual {
            continue;
        }
        let (_, first) = run(&scenario, &label, scenario.seed);
        let (_, second) = run(&scenario, &label, scenario.seed);
        if first.trace_hash != second.trace_hash {
            failures.push(format!(
                "{label}: seed {} gave {} then {}",
                scenario.seed, first.trace_hash, second.trace_hash
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_jittered_race_explores_different_interleavings() {
    for race in RACES {
        let (label, scenario) = load(race);
        assert!(
            scenario.jitter_max_s.is_some_and(|j| j > 0.0),
            "{race} is jittered"
        );
        let hashes: BTreeSet<String> = (0..20)
            .map(|seed| run(&scenario, &label, seed).1.trace_hash)
            .collect();
        assert!(
            hashes.len() >= 2,
            "{race}: seeds 0..20 gave {} distinct trace hash(es)",
            hashes.len()
        );
    }
}

#[test]
fn every_race_holds_under_many_seeds() {
    let mut failures = Vec::new();
    for race in RACES {
        let (label, mut scenario) = load(race);
        // The file's exact expectations are for its own seed; other seeds check
        // the invariants and the properties that hold whatever the interleaving.
        scenario.expect = None;
        let mut winners = BTreeSet::new();
        for seed in SWEEP_SEEDS {
            let (output, summary) = run(&scenario, &label, seed);
            if !summary.passed() {
                failures.push(format!("{race} seed {seed}:\n{}", render_table(&summary)));
                continue;
            }
            match race_property(race, &output, &summary) {
                Ok(winner) => {
                    winners.insert(winner);
                }
                Err(why) => failures.push(format!("{race} seed {seed}: {why}")),
            }
        }
        if winners.len() != 2 {
            failures.push(format!(
                "{race}: seeds {SWEEP_SEEDS:?} exercised only {winners:?}, not both sides of the race"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn load_small_sums_hold_under_several_seeds() {
    let (label, mut scenario) = load("load-small");
    scenario.expect = None;
    for seed in 0..5 {
        let (output, summary) = run(&scenario, &label, seed);
        assert!(summary.passed(), "seed {seed}:\n{}", render_table(&summary));
        let o = &summary.outcomes;
        assert_eq!(summary.calls, 300, "seed {seed}");
        assert_eq!(o.answered + o.pending, 300, "seed {seed}: {o:?}");
        assert_eq!(o.late_answered, o.pending, "seed {seed}: {o:?}");
        assert!(o.errors.is_empty(), "seed {seed}: {o:?}");
        for (call_id, result) in results(&output) {
            let pending = result.get("pending") == Some(&Value::Bool(true));
            if call_id.starts_with("blocking-") {
                assert!(!pending, "seed {seed}: {call_id} (timeout -1) went pending");
            }
            if call_id.starts_with("quick-") {
                assert!(pending, "seed {seed}: {call_id} was answered within 0.5 s");
            }
        }
    }
}

#[test]
fn a_wrong_expectation_fails_the_run_and_prints_the_reproduce_command() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let text = std::fs::read_to_string(scenarios_dir().join("quickstart.json")).expect("quickstart");
    let mut scenario: Value = serde_json::from_str(&text).expect("JSON");
    scenario["expect"]["results"]["root/1"] =
        json!({ "answers": [ { "id": "cleanup", "selected": [ "No, keep them" ] } ] });
    let path = dir.path().join("wrong-expect.json");
    std::fs::write(&path, serde_json::to_string_pretty(&scenario).unwrap()).expect("written");
    for seed in [None, Some(42u64)] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_asksim"));
        command.arg("run").arg(&path);
        if let Some(seed) = seed {
            command.arg("--seed").arg(seed.to_string());
        }
        let out = command.output().expect("asksim runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}");
        let expected = format!("asksim run {} --seed {}", path.display(), seed.unwrap_or(1));
        assert!(stdout.contains(&expected), "no {expected:?} in:\n{stdout}");
        assert!(stdout.contains("EXPECTATION FAILED"), "{stdout}");
    }
    // The same file with a right expectation passes.
    scenario["expect"]["results"]["root/1"] =
        json!({ "answers": [ { "id": "cleanup", "selected": [ "Yes, delete them (Recommended)" ] } ] });
    std::fs::write(&path, serde_json::to_string_pretty(&scenario).unwrap()).expect("written");
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .arg("run")
        .arg(&path)
        .output()
        .expect("asksim runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `asksim args…` run in `dir`: its exit code, stdout and stderr.
fn asksim_in(dir: &Path, args: &str) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args.split(' '))
        .current_dir(dir)
        .output()
        .expect("asksim runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// A passing `--check-determinism` shows: a `determinism` row in the report and
/// `"determinism": "identical"` in `--json`, where no check is null. Before, a
/// passing check printed nothing more and gave null, as no check did.
#[test]
fn a_passing_determinism_check_is_visible() {
    let dir = scenarios_dir();
    let (code, stdout, _) = asksim_in(&dir, "run quickstart.json --check-determinism");
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("\n  determinism     identical over 2 runs\n  result          PASS\n"),
        "{stdout}"
    );
    let json = |args: &str| {
        let (code, stdout, stderr) = asksim_in(&dir, args);
        assert_eq!(code, Some(0), "{args}: {stderr}");
        serde_json::from_str::<Value>(&stdout).expect("JSON")["determinism"].clone()
    };
    assert_eq!(
        json("run quickstart.json --check-determinism --json"),
        "identical"
    );
    assert_eq!(json("run quickstart.json --json"), Value::Null);
    let (_, plain, _) = asksim_in(&dir, "run quickstart.json");
    assert!(!plain.contains("determinism"), "{plain}");
}

/// The table and `--json` give the same `trace_hash`, the one the library's run
/// gives; `--json` gives the order hash as well (the table, which does not
/// show it, does not compute it), and it is the library's too.
#[test]
fn the_table_and_json_give_the_same_trace_hash_and_json_the_order_hash() {
    let dir = scenarios_dir();
    let (name, scenario) = load("race-two-answerers-tie");
    let (library, _) = run(&scenario, &name, scenario.seed);
    let (code, table, stderr) = asksim_in(&dir, "run race-two-answerers-tie.json");
    assert_eq!(code, Some(0), "{stderr}");
    let row = format!("\n  trace_hash      {}\n", library.recording.trace_hash);
    assert!(table.contains(&row), "{table}");
    let (code, json, stderr) = asksim_in(&dir, "run race-two-answerers-tie.json --json");
    assert_eq!(code, Some(0), "{stderr}");
    let json: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(json["trace_hash"], library.recording.trace_hash.as_str());
    assert_eq!(json["order_hash"], library.recording.order_hash.as_str());
    assert_eq!(
        library.recording.order_hash.len(),
        64,
        "the library's run computes it"
    );
}

/// Two runs that differ fail the report's verdict, with the difference above
/// it. Before, such a report said `result PASS` (the summary alone) and put
/// `NOT DETERMINISTIC` under it, while the exit code was 1.
#[test]
fn a_failed_determinism_check_fails_the_report() {
    use asksim::sim::show::report::{Determinism, render_run};
    let (label, scenario) = load("quickstart");
    let (_, summary) = run(&scenario, &label, scenario.seed);
    assert!(summary.passed());
    let difference = Determinism::Differs("first difference at seq 3: a vs b".to_owned());
    let report = render_run(&summary, &[], &difference);
    assert!(
        report.contains(
            "  determinism     not identical over 2 runs\n  \
             NOT DETERMINISTIC first difference at seq 3: a vs b\n  result          FAIL\n"
        ),
        "{report}"
    );
    assert_eq!(difference.to_json(), "first difference at seq 3: a vs b");
}

/// A real-clock run names no strategy: tokio orders its deliveries. Its header
/// says `(seed 0, real clock)`, its reproduce command (a sweep's too) has no
/// `--explore`, `--json` has `"explore": null`, and a file's `explore` is
/// ignored with a note. Before, the header and every reproduce command said
/// `explore fifo`, whatever was asked.
#[test]
fn a_real_clock_run_names_no_strategy() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // Nothing to do (it ends at once on the real clock too), and an
    // expectation that fails, for the reproduce command.
    let text = r#"{"name":"real","clock":"real","explore":"pct:3","expect":{"counts":{"answered":1}}}"#;
    std::fs::write(dir.path().join("real.json"), text).expect("written");
    let note = r#"the scenario's "explore": "pct:3" orders virtual-clock runs only; on the real clock it is ignored"#;
    let (code, stdout, stderr) = asksim_in(dir.path(), "run real.json");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.starts_with("asksim run: real (seed 0, real clock)\n"),
        "{stdout}"
    );
    // Nor a virtual time: the run's own.
    assert!(stdout.contains("\n  run time        "), "{stdout}");
    assert!(!stdout.contains("virtual time"), "{stdout}");
    assert!(
        stdout.ends_with("\n  reproduce with: asksim run real.json --seed 0 --clock real\n"),
        "{stdout}"
    );
    assert_eq!(stderr.trim_end(), format!("asksim run: {note}"));
    let (_, stdout, _) = asksim_in(dir.path(), "run real.json --json");
    let summary: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(summary["explore"], Value::Null);
    assert_eq!(summary["reproduce"], "asksim run real.json --seed 0 --clock real");
    let (code, stdout, stderr) = asksim_in(dir.path(), "sweep real.json --seeds 3..5");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.starts_with("asksim sweep: real (seeds 3..5, 2 runs, real clock)\n"),
        "{stdout}"
    );
    for seed in [3, 4] {
        let line = format!("\n  FAIL seed {seed}: asksim run real.json --seed {seed} --clock real\n");
        assert!(stdout.contains(&line), "{stdout}");
    }
    assert_eq!(stderr.trim_end(), format!("asksim sweep: {note}"));
}

/// `sweep --require`'s verdict is in `--json` too: `required_not_reached`
/// lists the required races no seed reached (`[]` when every one was), and is
/// absent without `--require` (a sweep's JSON stays what `merge` prints).
/// Before, the JSON said `"failed": []` beside exit 1, the reason on stderr
/// alone.
#[test]
fn sweep_json_names_the_required_races_never_reached() {
    let dir = scenarios_dir();
    let sweep = "sweep race-hold-vs-expiry-tie.json --seeds 0..10 --json";
    let json = |extra: &str, exit: i32| {
        let (code, stdout, stderr) = asksim_in(&dir, &format!("{sweep}{extra}"));
        assert_eq!(code, Some(exit), "{extra}: {stderr}");
        serde_json::from_str::<Value>(&stdout).expect("JSON")
    };
    let missing = json(" --require hold_vs_expiry,answer_vs_cancel", 1);
    assert_eq!(missing["failed"], json!([]));
    assert_eq!(missing["required_not_reached"], json!(["answer_vs_cancel"]));
    let twice = json(" --require answer_vs_cancel,hold_vs_expiry,answer_vs_cancel", 1);
    assert_eq!(
        twice["required_not_reached"],
        json!(["answer_vs_cancel"]),
        "listed once"
    );
    let reached = json(" --require hold_vs_expiry", 0);
    assert_eq!(reached["required_not_reached"], json!([]));
    let unasked = json("", 0);
    assert!(unasked.get("required_not_reached").is_none(), "{unasked}");
}
