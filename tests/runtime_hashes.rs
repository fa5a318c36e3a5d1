//! The recorder's hashes on the actor runtime (`RuntimeConfig::hashes`): a
//! runtime computes only those it is asked for, and what it reports is either
//! the digest of its whole log or nothing, never a digest of part of it. A
//! runtime asked for all three gives exactly what the simulator's recorder
//! gives for the same events (the trace hash of the log's bytes, the order and
//! timing hashes); the simulator's real-clock driver, which reports
//! `trace_hash`, still computes every hash over the runtime's events.
//!
//! The expected digests are computed here from the kept events, apart from the
//! recorder: a recorder that skipped or doubled a line, or hashed a line it no
//! longer writes, disagrees.

use asksim::event::Event;
use asksim::log::{LogHeader, events_hash, trace_hash};
use asksim::policy::Policy;
use asksim::record::{Hashes, LogHashes};
use asksim::scenario::{self, Clock};
use asksim::sim::RunOptions;
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AnswererSlot, Runtime, RuntimeConfig};
use sha2::{Digest, Sha256};

const ARGS: &str = r#"{"questions":[{"id":"go","question":"Proceed?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":5}"#;

fn config(hashes: Hashes) -> RuntimeConfig {
    RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![AnswererSlot::Policy {
            name: "web".into(),
            policy: Policy::recommended_after(2.0),
        }],
        hashes,
        ..RuntimeConfig::default()
    }
}

/// A runtime under `hashes` after one call answered in its window and one that
/// went pending and was answered late: its reported hashes and kept events.
async fn run(hashes: Hashes) -> (LogHashes, Vec<Event>) {
    let runtime = Runtime::start(config(hashes)).await.unwrap();
    let root = runtime.spawn_root("root", None).await.unwrap();
    let answered = root.ask(ARGS).await;
    assert!(
        answered.result.text.contains("Yes (Recommended)"),
        "{}",
        answered.result.text
    );
    let pending = root.ask(&ARGS.replace("\"timeout\":5", "\"timeout\":1")).await;
    assert!(pending.result.text.contains("pending"), "{}", pending.result.text);
    // The late answer comes 2 s after the offer; paused time runs on to it.
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let events = runtime.events();
    let got = (events.hashes(), events.snapshot());
    runtime.shutdown().await;
    got
}

/// SHA-256 of each event's kind serialised alone, one line each: the order
/// hash as SPEC §6's `distinct_traces` needs it (what happened, in order, with
/// no `seq` or time).
fn order_hash(events: &[Event]) -> String {
    let mut hash = Sha256::new();
    for event in events {
        hash.update(serde_json::to_vec(&event.kind).unwrap());
        hash.update(b"\n");
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Every hash of a library runtime's log, as the simulator computes them from
/// the same events.
fn all_of(events: &[Event]) -> LogHashes {
    LogHashes {
        trace_hash: Some(trace_hash(&LogHeader::real("library", 0), events)),
        order_hash: Some(order_hash(events)),
        timing_hash: Some(events_hash(events)),
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_runtime_asked_for_every_hash_gives_those_of_its_whole_log() {
    let (hashes, events) = run(Hashes::All).await;
    assert!(events.len() >= 10, "both calls recorded: {} events", events.len());
    assert_eq!(hashes, all_of(&events));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_runtime_asked_for_the_trace_hash_gives_it_and_no_other() {
    let (hashes, events) = run(Hashes::Trace).await;
    let expected = LogHashes {
        order_hash: None,
        timing_hash: None,
        ..all_of(&events)
    };
    assert_eq!(hashes, expected);
}

/// The library's default computes no hash and reports none, while its events,
/// their count and its projection are what they always were.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_library_runtime_by_default_reports_no_hash_and_records_the_same_events() {
    assert_eq!(RuntimeConfig::default().hashes, Hashes::None);
    let (hashes, events) = run(RuntimeConfig::default().hashes).await;
    let none = LogHashes {
        trace_hash: None,
        order_hash: None,
        timing_hash: None,
    };
    assert_eq!(hashes, none);
    let (_, hashed) = run(Hashes::All).await;
    assert_eq!(events, hashed, "the same events, with or without hashes");
}

/// The real-clock driver reports `trace_hash` and `order_hash` (and a sweep
/// reads the timing hash too): it records through the runtime with the hashes
/// the run asks for, whatever the library's default, and they are those of its
/// events.
#[test]
fn the_real_clock_driver_still_computes_every_hash_over_its_log() {
    let text = r#"{
      "name": "real-hashes",
      "clock": "real",
      "tool": { "mode": "timed", "timeout": 30 },
      "answerers": [ { "name": "web", "accepts": "all", "latency": 0.02, "answer": "recommended" } ],
      "agents": [ { "name": "root", "script": [
        { "ask": { "questions": [ { "id": "go", "question": "Proceed?", "header": "Confirm",
                   "options": [ { "label": "Yes (Recommended)" }, { "label": "No" } ] } ] } } ] } ]
    }"#;
    let scenario = scenario::parse("real-hashes.json", text).unwrap();
    let header = asksim::sim::log_header(&scenario, 7, Clock::Real);
    let reported = asksim::sim::run(&scenario, 7, Clock::Real).unwrap();
    let recording = &reported.recording;
    assert_eq!(recording.hashes, Hashes::TraceAndOrder, "what a run reports");
    assert_eq!(recording.trace_hash, trace_hash(&header, reported.events()));
    assert_eq!(recording.order_hash, order_hash(reported.events()));
    assert_eq!(recording.timing_hash, "");
    let mut options = RunOptions::new(&scenario, 7, Clock::Real);
    options.hashes = Hashes::All;
    let output = asksim::sim::run_options(&scenario, options).unwrap();
    let events = output.events();
    assert!(events.len() >= 5, "{} events", events.len());
    let recording = &output.recording;
    assert_eq!(recording.hashes, Hashes::All);
    assert_eq!(recording.trace_hash, trace_hash(&header, events));
    assert_eq!(recording.order_hash, order_hash(events));
    assert_eq!(recording.timing_hash, events_hash(events));
}
