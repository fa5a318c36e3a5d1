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

/// SPEC §5 `join`: it waits for the child spawned under that name earlier
/// in the script, whatever was spawned between; a `join` of a spawn the
/// broker refused waits for nothing, and the refusal is the refused child's,
/// not a sibling's. The run's end says which child each `join` waited for
/// (the root works 20 s after it).
#[test]
fn join_waits_for_the_last_child_spawned_under_its_name() {
    let ends_at = |steps: &str| {
        let text = format!(
            r#"{{"name": "j", "broker": {{"agents_per_tree_max": 4}},
              "agents": [{{"name": "root", "script": [{steps}, {{"work": 20.0}}]}}]}}"#
        );
        let scenario = scenario::parse("inline", &text).unwrap_or_else(|e| panic!("{e}"));
        let output = sim::run(&scenario, scenario.seed, scenario.clock).expect("a runtime");
        summarise(&scenario, "inline", &output).virtual_s
    };
    let spawn =
        |name: &str, s: f64| format!(r#"{{"spawn": {{"name": "{name}", "script": [{{"work": {s}}}]}}}}"#);
    let (a, b, c) = (spawn("a", 1.0), spawn("b", 5.0), spawn("c", 3.0));
    // b, between a and c: the root goes on at 5 s.
    assert_eq!(ends_at(&format!(r#"{a}, {b}, {c}, {{"join": "b"}}"#)), 25.0);
    // c, already ended when joined after b: 5 s still.
    assert_eq!(
        ends_at(&format!(r#"{a}, {b}, {c}, {{"join": "b"}}, {{"join": "c"}}"#)),
        25.0
    );
    // The tree's fifth agent, d, is refused (LIMIT_EXCEEDED): joining it waits
    // for nothing, and b, joined after it, still holds the root to 5 s.
    let d = spawn("d", 9.0);
    assert_eq!(ends_at(&format!(r#"{a}, {b}, {c}, {d}, {{"join": "d"}}"#)), 20.0);
    assert_eq!(
        ends_at(&format!(
            r#"{a}, {b}, {c}, {d}, {{"join": "d"}}, {{"join": "b"}}"#
        )),
        25.0
    );
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
