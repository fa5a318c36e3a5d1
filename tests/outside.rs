//! SPEC §10: implementations asksim did not write, judged through PROTOCOL.md.
//!
//! - asksim's own broker behind the protocol (`asksim actor broker`, a real
//!   process) gives the same log, byte for byte, as in process, on every repo
//!   scenario; through the wire's lines alone (no process) under sweeps of both
//!   strategies too.
//! - asksim's own answerer behind the protocol (`asksim actor answerer`) in
//!   place of every policy answerer gives the same log as well.
//! - An independent broker in Python (`examples/external/broker.py`, written from
//!   PROTOCOL.md) gives the same verdicts and outcomes on every repo scenario,
//!   under `random` and `pct:3` sweeps (the big loads under `random`).
//! - Race bugs planted in it are each caught by a sweep or `explore --all` of the
//!   repo's scenarios, and `shrink` reduces one of those failures.
//! - The Python answerer example runs in a scenario and replays from its seed.

use crate::common;

use std::path::{Path, PathBuf};

use asksim::scenario::{self, Clock, Scenario, Strategy};
use asksim::sim::hunt::explore::{ExploreOptions, explore};
use asksim::sim::hunt::seeds::{SeedRange, Shard};
use asksim::sim::hunt::shrink::{ShrinkOptions, shrink};
use asksim::sim::hunt::sweep::{SweepOptions, SweepReport, sweep};
use asksim::sim::{self, RunOptions};
use asksim::wire::Endpoint;
use serde_json::Value;

fn asksim_bin() -> String {
    env!("CARGO_BIN_EXE_asksim").to_owned()
}

fn actor_broker() -> Endpoint {
    Endpoint::Process(vec![asksim_bin(), "actor".into(), "broker".into()])
}

fn python_broker(bug: Option<&str>) -> Endpoint {
    let mut command = vec!["python3".to_owned(), "examples/external/broker.py".to_owned()];
    if let Some(bug) = bug {
        command.extend(["--bug".to_owned(), bug.to_owned()]);
    }
    Endpoint::Process(command)
}

/// Every virtual-clock scenario of the repository, with its file name.
fn repo_scenarios() -> Vec<(String, Scenario)> {
    let mut files = common::json_files("scenarios");
    files.extend(common::json_files("scenarios/failing"));
    files
        .into_iter()
        .map(|file| {
            let scenario = scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
            (file.display().to_string(), scenario)
        })
        .filter(|(_, s)| s.clock == Clock::Virtual)
        .collect()
}

fn is_big_load(file: &str) -> bool {
    common::is_big_load(Path::new(file))
}

fn options(scenario: &Scenario, seed: u64, strategy: Strategy, broker: Option<Endpoint>) -> RunOptions {
    RunOptions {
        strategy,
        keep_events: false,
        broker,
        ..RunOptions::new(scenario, seed, Clock::Virtual)
    }
}

fn trace_hash(scenario: &Scenario, seed: u64, strategy: Strategy, broker: Option<Endpoint>) -> String {
    let output = sim::run_options(scenario, options(scenario, seed, strategy, broker)).expect("no log");
    assert!(
        output.process_failed.is_none(),
        "{}: {}",
        scenario.name,
        output.process_failed.unwrap()
    );
    output.recording.trace_hash
}

#[test]
fn asksim_actor_broker_gives_the_same_trace_hash_as_in_process_on_every_scenario() {
    for (file, scenario) in repo_scenarios() {
        let strategy = scenario.explore.unwrap_or_default();
        let inside = trace_hash(&scenario, scenario.seed, strategy, None);
        let outside = trace_hash(&scenario, scenario.seed, strategy, Some(actor_broker()));
        assert_eq!(
            inside, outside,
            "{file}: the log through `asksim actor broker` differs"
        );
    }
}

/// The same through the wire's lines without a process (`Endpoint::Loopback`),
/// under many seeds of both strategies: every line is serialised and parsed as
/// it would be on a pipe.
#[test]
fn the_wire_keeps_every_log_byte_for_byte_under_random_and_pct_sweeps() {
    for (file, scenario) in repo_scenarios().into_iter().filter(|(f, _)| !is_big_load(f)) {
        for strategy in [Strategy::Random, Strategy::Pct { depth: 3 }] {
            for seed in 0..6 {
                let inside = trace_hash(&scenario, seed, strategy, None);
                let wire = trace_hash(&scenario, seed, strategy, Some(Endpoint::Loopback));
                assert_eq!(
                    inside, wire,
                    "{file}, seed {seed}, {strategy}: the log through the wire differs"
                );
            }
        }
    }
}

/// A scenario's text with every policy answerer replaced by `asksim actor
/// answerer` acting on the same policy (its row without `name` and `count`).
fn answerers_outside(text: &str) -> String {
    let mut value: Value = serde_json::from_str(text).unwrap();
    for row in value["answerers"].as_array_mut().into_iter().flatten() {
        let map = row.as_object_mut().unwrap();
        let mut policy = map.clone();
        policy.remove("name");
        policy.remove("count");
        let name = map["name"].clone();
        let count = map.get("count").cloned();
        map.clear();
        map.insert("name".into(), name);
        if let Some(count) = count {
            map.insert("count".into(), count);
        }
        let command = [
            asksim_bin(),
            "actor".into(),
            "answerer".into(),
            "--policy".into(),
            Value::Object(policy).to_string(),
        ];
        map.insert("process".into(), serde_json::json!(command));
    }
    value.to_string()
}

#[test]
fn asksim_actor_answerer_in_place_of_every_policy_answerer_gives_the_same_trace_hash() {
    let mut files = common::json_files("scenarios");
    files.retain(|f| !common::is_big_load(f));
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let inside = scenario::parse("inside.json", &text).unwrap();
        if inside.clock != Clock::Virtual || inside.answerers.is_empty() {
            continue;
        }
        let outside = scenario::parse("outside.json", &answerers_outside(&text)).unwrap();
        assert!(outside.has_process_answerers());
        let strategy = inside.explore.unwrap_or_default();
        let a = trace_hash(&inside, inside.seed, strategy, None);
        let b = trace_hash(&outside, inside.seed, strategy, None);
        assert_eq!(
            a,
            b,
            "{}: the log with `asksim actor answerer` differs",
            file.display()
        );
    }
}

fn swept(
    scenario: &Scenario,
    file: &str,
    seeds: u64,
    strategy: Strategy,
    broker: Option<Endpoint>,
) -> SweepReport {
    sweep_of(scenario, file, seeds, strategy, broker, false)
}

/// A sweep; `invariants_only` leaves the scenario's expectations out (they hold
/// for its own seed).
fn sweep_of(
    scenario: &Scenario,
    file: &str,
    seeds: u64,
    strategy: Strategy,
    broker: Option<Endpoint>,
    invariants_only: bool,
) -> SweepReport {
    let options = SweepOptions {
        file: file.to_owned(),
        seeds: SeedRange {
            from: 0,
            to: u128::from(seeds),
        },
        jobs: 2,
        clock: Clock::Virtual,
        strategy,
        invariants_only,
        shard: Shard::WHOLE,
        broker,
        answerers: Default::default(),
    };
    sweep(scenario, &options, |_| {})
}

/// What a sweep concluded, without what may differ between two correct brokers
/// (their refusal texts, hence their hashes) or between two machines (times).
fn verdicts(report: &SweepReport) -> Value {
    let failed: Vec<Value> = report
        .failed
        .iter()
        .map(|f| {
            let invariants: Vec<&str> = f.verdict.violations.iter().map(|v| v.invariant).collect();
            serde_json::json!({
                "seed": f.seed,
                "invariants": invariants,
                "failures": f.verdict.failures,
                "limit": f.verdict.limit,
                "crashed": f.verdict.crashed,
                "process_failed": f.verdict.process_failed.as_ref().map(|p| p.summary()),
            })
        })
        .collect();
    serde_json::json!({
        "runs": report.runs,
        "passed": report.passed,
        "totals": report.totals,
        "failed": failed,
    })
}

#[test]
fn an_independent_python_broker_gives_the_same_verdicts_and_outcomes_on_every_scenario() {
    for (file, scenario) in repo_scenarios() {
        // A big load through the Python process is minutes of pipe round trips
        // a run (PCT's are two: its step estimate first): one seed under
        // `random` there, the strategies compared on every other scenario.
        let (seeds, strategies) = match is_big_load(&file) {
            true => (1, &[Strategy::Random][..]),
            false => (4, &[Strategy::Random, Strategy::Pct { depth: 3 }][..]),
        };
        for &strategy in strategies {
            let ours = swept(&scenario, &file, seeds, strategy, None);
            let python = swept(&scenario, &file, seeds, strategy, Some(python_broker(None)));
            assert_eq!(
                verdicts(&ours),
                verdicts(&python),
                "{file} ({strategy}): the Python broker's verdicts differ"
            );
        }
    }
}

/// One planted bug and where the repo's scenarios catch it.
struct Planted {
    bug: &'static str,
    /// The race it is a loser of (docs/exploration.md, "Coverage").
    race: &'static str,
    scenario: &'static str,
    /// What must be named: an invariant (a sweep checks invariants only, as
    /// `scripts/plant-bugs.py` does), or an expectation's key (`explore --all`
    /// checks the file's expectations).
    named: &'static str,
    explore: bool,
}

const PLANTED: [Planted; 8] = [
    Planted {
        bug: "late-accept",
        race: "accept_vs_offer_timeout",
        scenario: "race-accept-vs-offer-timeout.json",
        named: "protocol_conformance",
        explore: false,
    },
    Planted {
        bug: "hold-after-expiry",
        race: "hold_vs_expiry",
        scenario: "race-hold-vs-expiry-tie.json",
        named: "protocol_conformance",
        explore: false,
    },
    Planted {
        bug: "answer-after-expiry",
        race: "answer_vs_expiry",
        scenario: "race-answer-vs-expiry-tie.json",
        named: "exactly_once",
        explore: false,
    },
    Planted {
        bug: "cancel-keeps-call",
        race: "answer_vs_cancel",
        scenario: "race-answer-vs-cancel.json",
        named: "exactly_once",
        explore: false,
    },
    Planted {
        bug: "fired-request",
        race: "request_vs_cancel",
        scenario: "race-request-vs-cancel.json",
        named: "protocol_conformance",
        explore: false,
    },
    Planted {
        bug: "no-fail-over",
        race: "submit_vs_owner_death",
        scenario: "race-submit-vs-owner-death-tie.json",
        named: "no_orphaned_wait",
        explore: true,
    },
    Planted {
        bug: "hold-outlives-holder",
        race: "hold_vs_expiry",
        scenario: "hold-dies-after-window.json",
        named: "window_respected",
        explore: false,
    },
    Planted {
        bug: "restore-not-offered",
        race: "late_answer_vs_loss",
        scenario: "race-late-answer-vs-loss-tie.json",
        named: "timed_survive_loss_legacy_do_not",
        explore: false,
    },
];

fn repo_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)
}

/// Without the bug the same scenario passes the same way: the catch is the bug's.
#[test]
fn race_bugs_planted_in_the_python_broker_are_each_caught_and_the_correct_one_passes() {
    let races: std::collections::BTreeSet<&str> = PLANTED.iter().map(|p| p.race).collect();
    assert!(races.len() >= 5, "at least five race kinds: {races:?}");
    for planted in &PLANTED {
        let file = repo_file(planted.scenario).display().to_string();
        let scenario = scenario::load(Path::new(&file)).unwrap();
        let broker = |bug| Some(python_broker(bug));
        let named: Vec<String> = if planted.explore {
            let run = |bug| {
                let options = ExploreOptions {
                    broker: broker(bug),
                    ..ExploreOptions::new(scenario.seed, 2_000)
                };
                explore(&scenario, &file, options, |_| {})
            };
            assert!(
                run(None).first_failure.is_none(),
                "{file} fails without {}",
                planted.bug
            );
            let failure = run(Some(planted.bug))
                .first_failure
                .expect("explore --all catches it");
            let keys = failure
                .verdict
                .failures
                .iter()
                .map(|f| f.split(": ").next().unwrap().to_owned());
            failure
                .verdict
                .violations
                .iter()
                .map(|v| v.invariant.to_owned())
                .chain(keys)
                .collect()
        } else {
            let strategy = scenario.explore.unwrap_or_default();
            let correct = sweep_of(&scenario, &file, 20, strategy, broker(None), true);
            assert!(correct.failed.is_empty(), "{file} fails without {}", planted.bug);
            let report = sweep_of(&scenario, &file, 20, strategy, broker(Some(planted.bug)), true);
            let failure = report
                .failed
                .first()
                .unwrap_or_else(|| panic!("{}: no seed failed", planted.bug));
            failure
                .verdict
                .violations
                .iter()
                .map(|v| v.invariant.to_owned())
                .collect()
        };
        assert!(
            named.iter().any(|n| n == planted.named),
            "{} ({}): caught as {named:?}, not {}",
            planted.bug,
            planted.race,
            planted.named
        );
    }
}

#[test]
fn shrink_reduces_a_planted_bug_to_the_call_the_cancel_loses() {
    let file = repo_file("cancel-tree.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let shrinking = ShrinkOptions {
        broker: Some(python_broker(Some("cancel-keeps-call"))),
        ..ShrinkOptions::default()
    };
    let report = shrink("cancel-tree.json", &text, &shrinking, &mut |_| {}).expect("it fails, so it shrinks");
    assert_eq!(report.failure.to_string(), "invariant exactly_once violated");
    assert!(report.minimal);
    assert!(
        report.after.named().iter().map(|(_, n)| n).sum::<usize>()
            < report.before.named().iter().map(|(_, n)| n).sum::<usize>(),
        "nothing was removed"
    );
    let shrunk = scenario::parse("min.json", &report.text).unwrap();
    assert_eq!(shrunk.agents.len(), 1);
    let steps = shrunk.agents[0].script.len();
    assert_eq!(steps, 1, "one ask is left: {}", report.text);
    // The shrunk file fails the same way under the same broker, and passes
    // under the correct one.
    let run = |bug| {
        let options = options(&shrunk, report.seed, report.strategy, Some(python_broker(bug)));
        sim::summarise(&shrunk, "min.json", &sim::run_options(&shrunk, options).unwrap())
    };
    let buggy = run(Some("cancel-keeps-call"));
    assert!(
        buggy
            .invariants
            .violations
            .iter()
            .any(|v| v.invariant == "exactly_once")
    );
    assert!(
        buggy.reproduce.as_deref().is_some_and(
            |r| r.contains("--broker-cmd 'python3 examples/external/broker.py --bug cancel-keeps-call'")
        ),
        "{:?}",
        buggy.reproduce
    );
    assert!(run(None).passed());
}

#[test]
fn the_python_answerer_example_runs_in_its_scenario_and_replays_from_its_seed() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/external/bot.json");
    let scenario = scenario::load(&file).unwrap();
    assert!(scenario.has_process_answerers());
    let run = || {
        let output = sim::run_options(&scenario, options(&scenario, 1, Strategy::Random, None)).unwrap();
        sim::summarise(&scenario, "bot.json", &output)
    };
    let (first, again) = (run(), run());
    assert!(first.passed(), "{}", sim::render_table(&first));
    assert_eq!(first.trace_hash, again.trace_hash, "same seed, same log");
    let report = swept(
        &scenario,
        "bot.json",
        8,
        Strategy::Pct { depth: 3 },
        Some(python_broker(None)),
    );
    assert_eq!(
        report.passed,
        8,
        "the Python answerer against the Python broker: {:?}",
        verdicts(&report)
    );
}
