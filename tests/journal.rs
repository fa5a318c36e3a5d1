//! A run recorded through a journal (the recorder's work on a thread of its
//! own, `RunOptions::journal_after`) is the run recorded in place: the same
//! log byte for byte, the same hashes, projection and final results, and the
//! same verdict, violations included. Checked on every scenario, passing and
//! failing, with the journal from the first event on (and from a few events in,
//! so the move happens mid-run), on every strategy a scenario names.

use crate::common;

use std::path::Path;

use asksim::event::Event;
use asksim::record::{Hashes, Observer};
use asksim::scenario::{self, Clock, Scenario};
use asksim::sim::{self, RunOptions, RunOutput, Summary};

fn run(scenario: &Scenario, journal_after: Option<u64>, taps: Vec<Box<dyn Observer>>) -> RunOutput {
    let mut options = RunOptions::new(scenario, scenario.seed, Clock::Virtual);
    options.journal_after = journal_after;
    options.taps = taps;
    // Every hash, the timing hash too (a sweep's), so that each is compared.
    options.hashes = Hashes::All;
    sim::run_options(scenario, options).expect("a run without a log")
}

/// The summary without what the wall clock decides.
fn verdict(scenario: &Scenario, file: &Path, output: &RunOutput) -> serde_json::Value {
    let summary: Summary = sim::summarise(scenario, &file.display().to_string(), output);
    let mut value = serde_json::to_value(&summary).unwrap();
    let object = value.as_object_mut().unwrap();
    object.remove("wall_s");
    object.remove("throughput");
    value
}

fn log_lines(output: &RunOutput) -> Vec<String> {
    output
        .events()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

#[test]
fn every_scenario_recorded_through_a_journal_is_the_run_recorded_in_place() {
    let files: Vec<_> = common::json_files("scenarios")
        .into_iter()
        .chain(common::json_files("scenarios/failing"))
        .filter(|f| !common::is_big_load(f))
        .collect();
    let mut checked = 0;
    let mut failing = 0;
    for file in &files {
        let scenario = scenario::load(file).unwrap();
        if scenario.clock != Clock::Virtual {
            continue;
        }
        let name = file.display();
        let in_place = run(&scenario, None, Vec::new());
        let expected = verdict(&scenario, file, &in_place);
        for after in [0, 3] {
            let journaled = run(&scenario, Some(after), Vec::new());
            let r = (&in_place.recording, &journaled.recording);
            assert_eq!(
                r.0.trace_hash, r.1.trace_hash,
                "{name} (after {after}): trace hash"
            );
            assert_eq!(
                r.0.order_hash, r.1.order_hash,
                "{name} (after {after}): order hash"
            );
            assert_eq!(
                r.0.timing_hash, r.1.timing_hash,
                "{name} (after {after}): timing hash"
            );
            assert!(!r.1.timing_hash.is_empty(), "{name}: every hash computed");
            assert_eq!(r.0.count, r.1.count, "{name} (after {after}): events");
            assert_eq!(
                log_lines(&in_place),
                log_lines(&journaled),
                "{name} (after {after}): log"
            );
            assert_eq!(
                serde_json::to_value(&r.0.projection).unwrap(),
                serde_json::to_value(&r.1.projection).unwrap(),
                "{name} (after {after}): projection"
            );
            assert_eq!(
                serde_json::to_value(&in_place.finals).unwrap(),
                serde_json::to_value(&journaled.finals).unwrap(),
                "{name} (after {after}): final results"
            );
            assert_eq!(
                expected,
                verdict(&scenario, file, &journaled),
                "{name} (after {after}): verdict"
            );
        }
        failing += usize::from(!sim::summarise(&scenario, "", &in_place).passed());
        checked += 1;
    }
    assert!(checked > 40, "every virtual-clock scenario, not {checked}");
    assert!(failing >= 2, "the failing scenarios too, not {failing}");
}

/// The limit on events stops a journaled run where it stops one in place.
#[test]
fn the_limit_on_events_stops_a_journaled_run_at_the_same_event() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/load-small.json");
    let mut scenario = scenario::load(&file).unwrap();
    scenario.limits.events_max = 57;
    let in_place = run(&scenario, None, Vec::new());
    let journaled = run(&scenario, Some(0), Vec::new());
    assert_eq!(in_place.limit, Some(sim::Limit::EventsMax));
    assert_eq!(journaled.limit, in_place.limit);
    assert_eq!(log_lines(&journaled), log_lines(&in_place));
    assert_eq!(journaled.recording.trace_hash, in_place.recording.trace_hash);
}

/// An observer that panics at its `at`-th event.
struct PanicsAt {
    at: u64,
    seen: u64,
}

impl Observer for PanicsAt {
    fn event(&mut self, _: &Event) {
        self.seen += 1;
        if self.seen == self.at {
            panic!("observer gave up at event {}", self.at);
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// A panic on the journal's thread is the run's crash, with its message, as a
/// panic while recording in place is; and the log ends at the event that
/// panicked, then the run's end, as in place.
#[test]
fn a_panic_while_recording_on_the_journal_thread_is_the_runs_crash() {
    sim::install_panic_hook();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/load-small.json");
    let scenario = scenario::load(&file).unwrap();
    let taps = || vec![Box::new(PanicsAt { at: 40, seen: 0 }) as Box<dyn Observer>];
    let in_place = run(&scenario, None, taps());
    let journaled = run(&scenario, Some(0), taps());
    let message = "observer gave up at event 40";
    assert!(
        in_place.crashed.as_deref().is_some_and(|m| m.contains(message)),
        "{:?}",
        in_place.crashed
    );
    assert_eq!(journaled.crashed, in_place.crashed);
    // The event that panicked is recorded but not kept (the observers come
    // first), then the run's end, at that event's time.
    let lines = log_lines(&journaled);
    assert_eq!(lines, log_lines(&in_place));
    assert_eq!(lines.len(), 40, "{lines:?}");
    assert!(
        lines[39].contains("\"seq\":41") && lines[39].contains("\"end\""),
        "{}",
        lines[39]
    );
    assert_eq!(journaled.recording.trace_hash, in_place.recording.trace_hash);
}
