//! Every scenario in `scenarios/` runs here: it must hold every invariant and its
//! `expect` block, and two runs under its seed must give one `trace_hash`.

use crate::common;

use std::path::PathBuf;

use asksim::scenario;
use asksim::sim;
use asksim::sim::summarise;

fn scenario_files() -> Vec<PathBuf> {
    common::json_files("scenarios")
}

#[test]
fn every_scenario_passes_and_is_deterministic() {
    let files = scenario_files();
    assert!(files.len() >= 2, "scenarios/ holds the quickstart and more");
    let mut failures = Vec::new();
    for file in &files {
        let label = file.display().to_string();
        let scenario = scenario::load(file).unwrap_or_else(|e| panic!("{e}"));
        let first = sim::run(&scenario, scenario.seed, scenario.clock).expect("a runtime");
        let summary = summarise(&scenario, &label, &first);
        if !summary.passed() {
            failures.push(format!("{label}: {}", asksim::sim::render_table(&summary)));
            continue;
        }
        let again = sim::run(&scenario, scenario.seed, scenario.clock).expect("a runtime");
        let hash_again = summarise(&scenario, &label, &again).trace_hash;
        if scenario.clock == asksim::scenario::Clock::Virtual && hash_again != summary.trace_hash {
            failures.push(format!(
                "{label}: two runs under seed {} gave different trace hashes",
                scenario.seed
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The failing examples (`scenarios/failing/`, the inputs of docs/shrinking.md's
/// `shrink` example and its tests) fail as their `about` says: under their own seed, only an
/// expectation breaks (one result of the call the file names), never an invariant,
/// and the same way on every run.
#[test]
fn every_failing_example_fails_by_an_expectation_only() {
    let files = common::json_files("scenarios/failing");
    assert_eq!(files.len(), 2, "many-agents.json and references.json");
    for file in &files {
        let label = file.display().to_string();
        let scenario = scenario::load(file).unwrap_or_else(|e| panic!("{e}"));
        let output = sim::run(&scenario, scenario.seed, scenario.clock).expect("a runtime");
        let summary = summarise(&scenario, &label, &output);
        assert!(!summary.passed(), "{label} must fail");
        assert!(
            summary.invariants.violations.is_empty() && summary.limit.is_none() && summary.crashed.is_none(),
            "{label} fails by an expectation only: {}",
            asksim::sim::render_table(&summary)
        );
        assert_eq!(
            summary.expectations.failed, 1,
            "{label}: {:?}",
            summary.expectations.failures
        );
        let about = &scenario.about;
        let failure = &summary.expectations.failures[0];
        let call = failure
            .split(['[', ']'])
            .nth(1)
            .unwrap_or_else(|| panic!("{label}: {failure} names a call"));
        assert!(about.contains(call), "{label}: its about names {call}: {about}");
    }
}

/// The verdict (and the order hash) a run streams as it records (the checker and coverage watching each
/// event) equals the one computed afterwards from the kept events, on every
/// scenario: the streaming analysis loses nothing.
#[test]
fn the_streamed_verdict_equals_the_verdict_over_the_kept_events() {
    use asksim::sim::judge::invariants::{VIRTUAL_TOLERANCE_S, check};
    for file in scenario_files() {
        let scenario = scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
        if scenario.clock != asksim::scenario::Clock::Virtual {
            continue;
        }
        let output = sim::run(&scenario, scenario.seed, scenario.clock).expect("a runtime");
        let streamed = output
            .checked
            .clone()
            .expect("a virtual-clock run is analysed as it runs");
        let kept = check(output.events(), Some(&output.broker()), VIRTUAL_TOLERANCE_S);
        let label = file.display();
        assert_eq!(
            format!("{:?}", streamed.violations),
            format!("{kept:?}"),
            "{label}"
        );
        // The order hash, taken from the log's lines, is the hash of each event's
        // kind serialised alone.
        let mut order = sha2::Sha256::default();
        for event in output.events() {
            sha2::Digest::update(&mut order, serde_json::to_vec(&event.kind).unwrap());
            sha2::Digest::update(&mut order, b"\n");
        }
        let order: String = sha2::Digest::finalize(order)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(output.recording.order_hash, order, "{label}");
        let coverage = asksim::sim::judge::coverage::coverage(output.events(), &scenario);
        assert_eq!(
            serde_json::to_string(&streamed.coverage).unwrap(),
            serde_json::to_string(&coverage).unwrap(),
            "{label}"
        );
    }
}

/// SPEC §5: a run ends when nothing can change any more. A script whose turn
/// fires while it works has ended, so its work's timer keeps no run going: the
/// run ends at the cancel, not at the timer's time. Before the fix the
/// cancelled tree ran on to 100 virtual s (its children's `work`) and
/// `cancel-derived-turn` to 10 s (the stopped root's `work`).
#[test]
fn a_script_cancelled_while_it_works_keeps_no_run_going() {
    let ends_at = |text: &str| {
        let scenario = scenario::parse("inline", text).unwrap_or_else(|e| panic!("{e}"));
        let output = sim::run(&scenario, scenario.seed, scenario.clock).expect("a runtime");
        let summary = summarise(&scenario, "inline", &output);
        assert!(summary.passed(), "{}", asksim::sim::render_table(&summary));
        summary.virtual_s
    };
    let tree = |cancel: &str| {
        format!(
            r#"{{"name": "t", "agents": [{{"name": "root", "script": [
                {{"spawn": {{"name": "child", "script": [{{"work": 100.0}}]}}}},
                {{"work": 50.0}}, {{"join": "child"}}]}}],
              "events": [{cancel}]}}"#
        )
    };
    // Nothing cancelled: the work keeps the run going to its end.
    assert_eq!(ends_at(&tree("")), 100.0);
    // The tree's turn fires at 2 s: both scripts end there, with both timers.
    assert_eq!(ends_at(&tree(r#"{"at": 2.0, "cancel_turn": "root"}"#)), 2.0);
    // The repo's own: the run ends at its last cancel.
    for (name, at) in [("cancel-tree", 20.0), ("cancel-derived-turn", 3.0)] {
        let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.json"));
        let scenario = scenario::load(&file).unwrap();
        let output = sim::run(&scenario, scenario.seed, scenario.clock).expect("a runtime");
        assert_eq!(summarise(&scenario, name, &output).virtual_s, at, "{name}");
    }
}
