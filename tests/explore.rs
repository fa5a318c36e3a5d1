//! `asksim explore --all` (issue #12): every delivery order of a small scenario.
//! Sleep-set pruning loses no outcome (checked against the unpruned search on
//! every scenario small enough to exhaust), both sides of a tie are found, the
//! search is deterministic, and a failing schedule replays with `run --schedule`.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use asksim::scenario::{self, Scenario};
use asksim::sim::hunt::explore::{
    ExploreOptions, ExploreReport, Replay, explore, parse_schedule, schedule_string,
};
use serde_json::Value;

fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.json"))
}

fn load(name: &str) -> Scenario {
    scenario::load(&path(name)).unwrap()
}

fn explored(scenario: &Scenario, max: u64, reduce: bool) -> ExploreReport {
    let options = ExploreOptions {
        reduce,
        ..ExploreOptions::new(scenario.seed, max)
    };
    explore(scenario, "test.json", options, |_| {})
}

fn outcomes(report: &ExploreReport) -> BTreeSet<String> {
    report
        .outcomes
        .iter()
        .map(|o| format!("{:?}", o.outcome))
        .collect()
}

fn asksim(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The reduction is sound where it can be checked: on every scenario whose
/// unpruned space has at most `FULL_MAX` schedules, pruning finds the same
/// outcomes in no more schedules.
#[test]
fn pruning_loses_no_outcome_on_any_scenario_small_enough_to_exhaust() {
    const FULL_MAX: u64 = 3_000;
    const EVENTS_MAX: usize = 200;
    let mut checked = Vec::new();
    for file in common::json_files("scenarios") {
        let scenario = scenario::load(&file).unwrap();
        if scenario.clock == asksim::scenario::Clock::Real {
            continue;
        }
        // Load scenarios are far too big to exhaust: skip them without trying.
        let one = asksim::sim::run(&scenario, scenario.seed, scenario.clock).unwrap();
        if one.events().len() > EVENTS_MAX {
            continue;
        }
        let full = explored(&scenario, FULL_MAX, false);
        if !full.complete {
            continue;
        }
        let reduced = explored(&scenario, FULL_MAX, true);
        assert!(reduced.complete, "{}", file.display());
        assert_eq!(outcomes(&reduced), outcomes(&full), "{}", file.display());
        assert!(reduced.schedules <= full.schedules, "{}", file.display());
        checked.push((file, full.schedules, reduced.schedules));
    }
    eprintln!("{checked:#?}");
    assert!(checked.len() >= 20, "only {} scenarios exhausted", checked.len());
    assert!(
        checked.iter().any(|(_, full, reduced)| reduced < full),
        "pruning never pruned"
    );
}

#[test]
fn both_answerers_win_some_order_of_the_tie() {
    let report = explored(&load("race-two-answerers-tie"), 10_000, true);
    assert!(report.complete);
    assert!(report.first_failure.is_none());
    let all = outcomes(&report);
    assert!(all.iter().any(|o| o.contains("Postgres")), "{all:?}");
    assert!(all.iter().any(|o| o.contains("SQLite")), "{all:?}");
    assert_eq!(
        report.schedules,
        report.outcomes.iter().map(|o| o.count).sum::<u64>()
    );
}

#[test]
fn the_search_is_deterministic() {
    let scenario = load("race-request-vs-cancel-tie");
    let mut a = serde_json::to_value(explored(&scenario, 10_000, true)).unwrap();
    let mut b = serde_json::to_value(explored(&scenario, 10_000, true)).unwrap();
    a["wall_s"] = Value::Null;
    b["wall_s"] = Value::Null;
    assert_eq!(a, b);
}

#[test]
fn max_bounds_the_search_and_says_it_is_not_complete() {
    let report = explored(&load("race-request-vs-cancel-tie"), 3, true);
    assert!(!report.complete);
    assert!(report.schedules + report.pruned <= 3);
}

/// The cancel tie with an expectation only one side meets: the search finds an
/// order that breaks it, and that order replays to the same failure.
#[test]
fn a_failing_order_is_found_and_replays() {
    let mut value: Value =
        serde_json::from_str(&std::fs::read_to_string(path("race-answer-vs-cancel-tie")).unwrap()).unwrap();
    value["expect"] = serde_json::json!({ "counts": { "answered": 1 } });
    let text = value.to_string();
    let scenario = scenario::parse("cancel-expects-answer.json", &text).unwrap();
    let report = explored(&scenario, 10_000, true);
    let failure = report
        .first_failure
        .as_ref()
        .expect("an order where the cancel wins");
    assert!(
        failure.verdict.failures.iter().any(|f| f.contains("answered")),
        "{failure:?}"
    );
    let choices = parse_schedule(&failure.schedule).unwrap();
    let options = asksim::sim::RunOptions::new(&scenario, scenario.seed, scenario.clock);
    let output = asksim::sim::run_with(&scenario, options, &mut Replay::new(choices)).unwrap();
    let summary = asksim::sim::summarise(&scenario, "x", &output);
    assert!(!summary.passed());

    // The same through the command line: explore exits 1 and prints the
    // command; that command fails the same way.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cancel-expects-answer.json");
    std::fs::write(&file, &text).unwrap();
    let file = file.to_str().unwrap();
    let (code, stdout, _) = asksim(&["explore", file, "--all", "--json"]);
    assert_eq!(code, 1, "{stdout}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let reproduce = json["first_failure"]["reproduce"].as_str().unwrap().to_owned();
    // As a shell reads it: the schedule `0*7` is quoted, or a shell would glob it.
    let words = shlex::split(&reproduce).expect("a shell command");
    assert!(failure.schedule.contains('*'), "{}", failure.schedule);
    let quoted = format!("--schedule '{}'", failure.schedule);
    assert!(reproduce.contains(&quoted), "{reproduce}");
    let args: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
    let (code, stdout, _) = asksim(&args);
    assert_eq!(code, 1, "{reproduce}: {stdout}");
    assert!(stdout.contains(&quoted), "{stdout}");
}

#[test]
fn schedules_round_trip_through_their_string() {
    for choices in [vec![], vec![0], vec![0, 0, 0, 1, 0, 2, 2], vec![3; 40]] {
        let text = schedule_string(&choices);
        assert_eq!(parse_schedule(&text).unwrap(), choices, "{text}");
    }
    assert_eq!(schedule_string(&[0, 0, 0, 1, 0]), "0*3.1.0");
    for bad in ["", "x", "1*", "1*0", "0..1", "-1"] {
        assert!(parse_schedule(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn bad_arguments_exit_2_naming_the_problem() {
    let quickstart = "scenarios/quickstart.json";
    for (args, says) in [
        (vec!["explore", quickstart], "--all"),
        (vec!["explore", quickstart, "--all", "--max", "0"], "--max"),
        (vec!["explore", "scenarios/missing.json", "--all"], "missing.json"),
        (vec!["run", quickstart, "--schedule", "0*x"], "--schedule"),
        (
            vec!["run", quickstart, "--schedule", "0", "--clock", "real"],
            "--schedule",
        ),
    ] {
        let (code, _, stderr) = asksim(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn explore_passes_a_scenario_with_no_failing_order() {
    let (code, stdout, _) = asksim(&["explore", "scenarios/race-two-answerers-tie.json", "--all"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("complete"), "{stdout}");
    assert!(stdout.contains("no schedule failed"), "{stdout}");
}

/// Every scenario whose space `explore` exhausts passes in every order, its
/// expectations included. This caught a parent that ran one more step because
/// its child ended of a turn signal that had not reached the parent yet
/// (cancel-tree: a third DELEGATED_CALLER in 63 of 3,652 orders).
#[test]
fn every_scenario_small_enough_passes_in_every_order() {
    const MAX: u64 = 20_000;
    let mut exhausted = 0;
    for file in common::json_files("scenarios") {
        let scenario = scenario::load(&file).unwrap();
        if scenario.name.starts_with("load") {
            continue;
        }
        let report = explored(&scenario, MAX, true);
        if let Some(failure) = &report.first_failure {
            panic!("{}: {failure:?}", file.display());
        }
        exhausted += u32::from(report.complete);
    }
    assert!(exhausted >= 38, "only {exhausted} scenarios exhausted");
}

/// The number of choice points of `scenario`'s run when every choice takes the
/// first candidate (the schedule `0*n`).
fn choice_points(scenario: &Scenario) -> u64 {
    use asksim::sim::engine::strategy::{Counting, Fifo};
    let mut fifo = Fifo;
    let mut counting = Counting {
        inner: &mut fifo,
        choices: 0,
    };
    let options = asksim::sim::RunOptions::new(scenario, scenario.seed, scenario.clock);
    asksim::sim::run_with(scenario, options, &mut counting).unwrap();
    counting.choices
}

/// Regression (issue #22): `run race-two-answerers-tie.json --schedule '9*99'`
/// exited 0 with a trace unlike the default, and the header still said `explore
/// random`: a mistyped replay looked like a passing one. A schedule that names a
/// choice the run does not offer, or more steps than the run has, is bad input
/// naming the step; a good one is named in the header and in `--json`.
#[test]
fn a_schedule_the_run_does_not_offer_is_bad_input_and_a_good_one_is_named() {
    let file = "scenarios/race-two-answerers-tie.json";
    let (code, stdout, stderr) = asksim(&["run", file, "--schedule", "9*99"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(
            "--schedule 9*99: step 1 of the schedule takes choice 9, but the run offers 2 there (0 to 1)"
        ),
        "{stderr}"
    );
    let n = choice_points(&load("race-two-answerers-tie"));
    assert!(n >= 2, "{n} choice points");
    let good = format!("0*{n}");
    let long = format!("0*{}", n + 1);
    let (code, _, stderr) = asksim(&["run", file, "--schedule", &long]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the schedule has {} steps, but the run makes only {n} choices",
            n + 1
        )),
        "{stderr}"
    );
    let (code, stdout, stderr) = asksim(&["run", file, "--schedule", &good]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let header = stdout.lines().next().unwrap_or_default();
    assert!(
        header.ends_with(&format!("(seed 0, virtual clock, schedule {good})")),
        "{header}"
    );
    let (_, stdout, _) = asksim(&["run", file, "--schedule", &good, "--json"]);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["explore"], format!("schedule {good}"));
}

/// Regression (issue #22): `explore --all` of a scenario too big for it printed
/// nothing for as long as it ran. `--max-s` bounds its wall time: the search stops
/// after the schedule under way (at least one runs) and reports what it found,
/// saying it is not complete and which bound stopped it.
#[test]
fn max_s_stops_the_search_with_a_partial_report() {
    let file = "scenarios/race-two-answerers-tie.json";
    let (code, stdout, stderr) = asksim(&["explore", file, "--all", "--max-s", "0"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let header = stdout.lines().next().unwrap_or_default();
    assert!(
        header
            .ends_with(": 1 schedules, 0 pruned, not complete (--max-s reached: the search ran out of time)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("        1  (verdict) PASS, root/1 answers"),
        "{stdout}"
    );
    assert!(stdout.contains("no schedule failed of those run"), "{stdout}");
    let (_, stdout, _) = asksim(&["explore", file, "--all", "--max-s", "0", "--json"]);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["bound"], "max_s");
    assert_eq!(json["complete"], false);
    let (_, stdout, _) = asksim(&["explore", file, "--all", "--max", "2", "--json"]);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["bound"], "max");
    let (_, stdout, _) = asksim(&["explore", file, "--all", "--json"]);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["bound"], Value::Null);
    for bad in ["-1", "NaN", "1e99"] {
        let (code, _, stderr) = asksim(&["explore", file, "--all", "--max-s", bad]);
        assert_eq!(code, 2, "{bad}: {stderr}");
        assert!(
            stderr.contains("--max-s: expected a number of seconds"),
            "{stderr}"
        );
    }
}

/// Regression (issue #22): on a 3,000-agent scenario one outcome line was about
/// 450 KB. A line names each call only up to six calls, each settlement cut to 80
/// characters; past that it counts the calls by how they ended. `--json` keeps
/// every call with its full text.
#[test]
fn outcome_lines_stay_readable_and_json_keeps_every_call_in_full() {
    let label = "A very long option label that goes on and on past what a line can show (Recommended)";
    let scenario = |count: u32| {
        serde_json::json!({
            "name": "many-calls",
            "tool": { "mode": "timed", "timeout": 30 },
            "answerers": [ { "name": "web", "accepts": "all", "latency": 1.0, "answer": "recommended" } ],
            "agents": [ { "name": "worker{i}", "count": count, "script": [ { "ask": { "questions": [
                { "id": "go", "question": "Go?", "header": "Go", "options": [ { "label": label }, { "label": "No" } ] } ] } } ] } ]
        })
        .to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    let (few, many) = (dir.path().join("few.json"), dir.path().join("many.json"));
    std::fs::write(&few, scenario(2)).unwrap();
    std::fs::write(&many, scenario(8)).unwrap();
    let args = |file: &Path| {
        vec![
            "explore".to_owned(),
            file.display().to_string(),
            "--all".into(),
            "--max".into(),
            "3".into(),
        ]
    };
    let run = |extra: &[&str], file: &Path| {
        let mut all = args(file);
        all.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        asksim(&refs)
    };
    let (code, stdout, _) = run(&[], &few);
    assert_eq!(code, 0, "{stdout}");
    let line = stdout.lines().nth(1).unwrap_or_default();
    assert!(
        line.contains("(verdict) PASS, worker0/1 answers {\"answers\""),
        "{line}"
    );
    assert!(
        line.contains('…') && !line.contains(label),
        "settlements are cut: {line}"
    );
    let (_, stdout, _) = run(&[], &many);
    let line = stdout.lines().nth(1).unwrap_or_default();
    assert!(
        line.ends_with("(verdict) PASS, 8 calls: answers 8 (--json lists each)"),
        "{line}"
    );
    let (_, stdout, _) = run(&["--json"], &many);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let outcome = json["outcomes"][0]["outcome"].as_object().unwrap();
    assert_eq!(outcome.len(), 9, "every call and the verdict: {outcome:?}");
    assert!(
        outcome["worker7/1"].as_str().unwrap().contains(label),
        "{outcome:?}"
    );
}
