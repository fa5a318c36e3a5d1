//! SPEC §4.1: a crash may cut the log at any whole line, also between two lines
//! the broker recorded in one step (a power loss persists a prefix of what was
//! written). Recovery completes such a step as the broker would have:
//!
//! - a batch recorded with no verdict after it is judged as the broker judges
//!   batches: from the owner of a timed question, valid, it is the late answer
//!   the resumed agent receives (never asked again); otherwise it is refused
//!   with the broker's reason (`lost_on_restart` for a legacy question);
//! - a delegated caller's request, or a call of a turn that fired, whose result
//!   the crash cut off gets that result before the crash's process loss, so a
//!   child's question is never offered and a cancelled one never re-offered.
//!
//! The sweep below cuts the log of every scenario of `scenarios/` (virtual
//! clock) after every line and resumes: each prefix must end without a
//! violation. Before recovery completed cut steps, 54 prefixes of 37 scenarios
//! broke `no_answer_lost`, `delegated_never_offered` or
//! `turn_cancel_settles_descendants`.

use crate::durable_support;

use std::path::{Path, PathBuf};

use asksim::durable::{LogFile, SyncPolicy};
use asksim::event::{Event, EventKind};
use asksim::projection::QuestionState;
use asksim::scenario::{self, Clock, Scenario};
use asksim::sim::{self, RunOptions, RunOutput};
use durable_support::Scratch;
use serde_json::Value;

/// Logs longer than this are left out of the sweep (the load scenarios; every
/// step shape they hold is in the small ones).
const LINES_MAX: usize = 400;

fn scenario_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.json"))
}

/// A virtual run of `scenario` under its seed, its log written to `log`.
fn logged_run(scenario: &Scenario, log: &Path) -> RunOutput {
    let mut options = RunOptions::new(scenario, scenario.seed, Clock::Virtual);
    let header = sim::log_header(scenario, scenario.seed, Clock::Virtual);
    options.log = Some(LogFile::create(log, &header, SyncPolicy::None).expect("a log file"));
    sim::run_options(scenario, options).expect("the run writes its log")
}

/// `run --resume` of `scenario` on the log at `log`.
fn resumed(scenario: &Scenario, log: &Path) -> RunOutput {
    let recovery =
        sim::recover_log(scenario, scenario.seed, log, SyncPolicy::None).expect("the log recovers");
    let options = RunOptions::new(scenario, scenario.seed, Clock::Virtual);
    sim::resume(scenario, options, recovery).expect("the resumed run writes its log")
}

/// The log's lines, the header first.
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("a readable log")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `lines[..keep]`, written to `path` as a log file.
fn cut(lines: &[String], keep: usize, path: &Path) {
    let text: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).expect("a writable file");
}

fn violations(output: &RunOutput) -> Vec<String> {
    let checked = output.checked.as_ref().expect("a virtual run is judged");
    (checked.violations.iter()).map(|v| v.to_string()).collect()
}

/// Every virtual scenario of `scenarios/` (the failing ones are elsewhere).
fn virtual_scenarios() -> Vec<(String, Scenario)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("scenarios/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_stem().expect("a name").to_string_lossy().into_owned();
            (name, scenario::load(&path).expect("a valid scenario"))
        })
        .filter(|(_, s)| s.clock == Clock::Virtual)
        .collect()
}

#[test]
fn every_whole_line_prefix_of_every_scenarios_log_resumes_without_a_violation() {
    let scratch = Scratch::new("cut-every-line");
    let (full, part) = (scratch.path("full.jsonl"), scratch.path("cut.jsonl"));
    let (mut failures, mut prefixes, mut swept) = (Vec::new(), 0, 0);
    for (name, scenario) in virtual_scenarios() {
        logged_run(&scenario, &full);
        let lines = lines(&full);
        if lines.len() > LINES_MAX {
            continue;
        }
        swept += 1;
        // The header and at least one event; never the whole log (it ended).
        for keep in 2..lines.len() {
            cut(&lines, keep, &part);
            prefixes += 1;
            let output = resumed(&scenario, &part);
            assert!(
                output.crashed.is_none(),
                "{name} cut after line {keep}: {:?}",
                output.crashed
            );
            failures.extend(
                violations(&output)
                    .into_iter()
                    .map(|v| format!("{name} cut after line {keep}: {v}")),
            );
        }
    }
    assert!(
        swept >= 40 && prefixes >= 600,
        "{swept} scenarios, {prefixes} prefixes swept"
    );
    assert!(
        failures.is_empty(),
        "{} violations:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// What the original log recorded right after each `answer` line (its
/// verdict), and what a recovery of the log cut right after that line records
/// for the same batch: the same verdict, or the late answer the resumed agent
/// receives in place of an answer within the window.
#[test]
fn a_batch_cut_from_its_verdict_gets_the_brokers_verdict_at_recovery() {
    let scratch = Scratch::new("cut-after-answer");
    let (full, part) = (scratch.path("full.jsonl"), scratch.path("cut.jsonl"));
    let (mut verdicts, mut late, mut refused) = (0, 0, 0);
    for (name, scenario) in virtual_scenarios() {
        let original = logged_run(&scenario, &full);
        let lines = lines(&full);
        if lines.len() > LINES_MAX {
            continue;
        }
        let events = original.events();
        for (i, event) in events.iter().enumerate() {
            let EventKind::Answer {
                call_id, answerer, ..
            } = &event.kind
            else {
                continue;
            };
            let Some(verdict) = events[i + 1..].iter().find(|e| e.kind.call_id() == Some(call_id)) else {
                continue;
            };
            // The header, then the events up to this answer.
            cut(&lines, i + 2, &part);
            let after = resumed(&scenario, &part);
            // What the recovery recorded: everything after the cut, its
            // process loss first.
            let recovered = after.events()[i + 1..]
                .iter()
                .find(|e| e.kind.call_id() == Some(call_id))
                .unwrap_or_else(|| panic!("{name}: nothing about {call_id} after the crash"));
            let at = format!(
                "{name} cut after the answer of {answerer} to {call_id} (seq {})",
                event.seq
            );
            verdicts += 1;
            match (&verdict.kind, &recovered.kind) {
                (
                    EventKind::Refused { reason: was, .. },
                    EventKind::Refused {
                        reason, answerer: a, ..
                    },
                ) => {
                    refused += 1;
                    assert_eq!(a, answerer, "{at}");
                    let legacy = is_legacy(&original, call_id);
                    assert!(
                        reason == was || legacy && reason == "lost_on_restart",
                        "{at}: {reason} for {was}"
                    );
                }
                (EventKind::Result { result, .. }, EventKind::LateAnswer { answers, .. }) => {
                    late += 1;
                    let given: Value = serde_json::from_str(result).expect("a result is JSON");
                    assert_eq!(
                        given["answers"],
                        serde_json::to_value(answers).expect("answers"),
                        "{at}"
                    );
                }
                (EventKind::LateAnswer { answers: was, .. }, EventKind::LateAnswer { answers, .. }) => {
                    late += 1;
                    assert_eq!(was, answers, "{at}");
                }
                (EventKind::Result { .. }, EventKind::Refused { reason, .. })
                    if is_legacy(&original, call_id) =>
                {
                    refused += 1;
                    assert_eq!(reason, "lost_on_restart", "{at}");
                }
                (was, now) => panic!("{at}: the log had {was:?}, the recovery recorded {now:?}"),
            }
            assert_eq!(violations(&after), Vec::<String>::new(), "{at}");
        }
    }
    assert!(
        late >= 20 && refused >= 5,
        "{verdicts} verdicts: {late} late answers, {refused} refusals"
    );
}

fn is_legacy(output: &RunOutput, call_id: &str) -> bool {
    output.events().iter().any(|e| {
        matches!(&e.kind, EventKind::Request { call_id: c, schema, .. }
            if **c == *call_id && *schema == asksim::tool::Schema::Legacy)
    })
}

/// The quickstart cut between web's answer and its result: the resumed root
/// receives that answer once, as a late answer, and web is not asked again.
#[test]
fn the_quickstarts_answer_cut_from_its_result_reaches_the_resumed_root_once() {
    let scratch = Scratch::new("cut-quickstart");
    let log = scratch.path("q.jsonl");
    let scenario = scenario::load(&scenario_file("quickstart")).expect("the quickstart");
    logged_run(&scenario, &log);
    let lines = lines(&log);
    assert!(lines[5].contains(r#""event":"answer""#), "{}", lines[5]);
    let (after, loss) = resumed_clean(&scenario, &lines, 6, &log);
    let events = after.events();
    let about = |what: fn(&Event) -> bool| events[loss..].iter().filter(|e| what(e)).count();
    assert_eq!(
        about(|e| matches!(e.kind, EventKind::Offer { .. })),
        0,
        "web is asked again"
    );
    assert_eq!(about(|e| matches!(e.kind, EventKind::LateAnswer { .. })), 1);
    assert_eq!(about(|e| matches!(e.kind, EventKind::UserMessage { .. })), 1);
    let question = &after.projection().questions["root/1"];
    assert_eq!(question.state, QuestionState::LateAnswered);
    assert!(question.delivered);
    // The log on disk says the same: what a second crash would recover from.
    let on_disk = lines_of_kind(&log, "late_answer");
    assert_eq!(on_disk, 1);
}

fn lines_of_kind(path: &Path, kind: &str) -> usize {
    let needle = format!(r#""event":"{kind}""#);
    lines(path).iter().filter(|l| l.contains(&needle)).count()
}

/// `name`'s log cut right after its first line holding `marker`, resumed.
fn resumed_after(name: &str, marker: &str, scratch: &Scratch) -> (RunOutput, usize) {
    let log = scratch.path(&format!("{name}.jsonl"));
    let scenario = scenario::load(&scenario_file(name)).expect("a scenario");
    logged_run(&scenario, &log);
    let lines = lines(&log);
    let at = lines
        .iter()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("{name}: no {marker}"));
    resumed_clean(&scenario, &lines, at + 1, &log)
}

/// `lines[..keep]` written to `path` and resumed, without a violation: the
/// run, and the place in its events of the crash's process loss (what the
/// recovery recorded follows the cut, some of it before the loss).
fn resumed_clean(scenario: &Scenario, lines: &[String], keep: usize, path: &Path) -> (RunOutput, usize) {
    cut(lines, keep, path);
    let after = resumed(scenario, path);
    assert_eq!(violations(&after), Vec::<String>::new());
    // The header, then keep - 1 events the crashed run recorded.
    let recovered = &after.events()[keep - 1..];
    let loss = (recovered.iter())
        .position(|e| matches!(e.kind, EventKind::ProcessLoss { .. }))
        .expect("the crash's loss");
    (after, keep - 1 + loss)
}

/// A child's request cut from its `DELEGATED_CALLER` result: the result is
/// recorded before the crash's loss, and the question is never offered, not
/// even after the restart made the child a root.
#[test]
fn a_delegated_request_cut_from_its_refusal_is_refused_and_never_offered() {
    let scratch = Scratch::new("cut-delegated");
    let (after, loss) = resumed_after(
        "delegated-child",
        r#""event":"request","callId":"worker/1""#,
        &scratch,
    );
    let events = after.events();
    let refusal = events[..loss]
        .iter()
        .find(|e| e.kind.call_id() == Some("worker/1") && matches!(e.kind, EventKind::Result { .. }))
        .expect("worker/1's result before the loss");
    let EventKind::Result { result, .. } = &refusal.kind else {
        unreachable!()
    };
    assert!(result.contains("DELEGATED_CALLER"), "{result}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Offer { call_id, .. } if **call_id == *"worker/1"))
    );
    assert_eq!(
        after.projection().questions["worker/1"].state,
        QuestionState::Errored
    );
}

/// Two workers of `lead` (roots since `lead` stopped at 1 s, their turns still
/// derived from its turn) and a root of its own, `other`, all blocking at 2 s;
/// `lead`'s turn fires at 3 s.
const CANCEL_TWO: &str = r#"{
  "name": "cut-cancel",
  "tool": { "mode": "timed" },
  "answerers": [ { "name": "web", "accepts": "all", "latency": 30.0, "answer": "recommended" } ],
  "agents": [
    { "name": "lead", "script": [
      { "spawn": { "name": "a", "script": [ { "work": 2.0 }, { "ask": { "questions": [ { "id": "q", "question": "A?", "header": "A", "options": [ { "label": "Yes" }, { "label": "No" } ] } ], "timeout": -1 } } ] } },
      { "spawn": { "name": "b", "script": [ { "work": 2.0 }, { "ask": { "questions": [ { "id": "q", "question": "B?", "header": "B", "options": [ { "label": "Yes" }, { "label": "No" } ] } ], "timeout": -1 } } ] } },
      { "work": 10.0 } ] },
    { "name": "other", "script": [ { "work": 2.0 }, { "ask": { "questions": [ { "id": "q", "question": "C?", "header": "C", "options": [ { "label": "Yes" }, { "label": "No" } ] } ], "timeout": -1 } } ] }
  ],
  "events": [ { "at": 1.0, "stop_agent": "lead" }, { "at": 3.0, "cancel_turn": "lead" } ]
}"#;

/// A `cancel` cut from the `ABORTED` results of its turn: every call still
/// waiting in that turn or a turn derived from it gets its result before the
/// crash's loss, as the broker gave it, and is not re-offered; a call of
/// another turn is pending and re-offered.
#[test]
fn a_cancel_cut_from_its_aborted_results_is_completed_before_the_loss() {
    let scratch = Scratch::new("cut-cancel");
    let log = scratch.path("cancel.jsonl");
    let scenario = scenario::parse("cut-cancel.json", CANCEL_TWO).expect("a valid scenario");
    let original = logged_run(&scenario, &log);
    assert_eq!(with_outcome(original.events(), "ABORTED"), ["a/1", "b/1"]);
    let lines = lines(&log);
    let at = lines
        .iter()
        .position(|l| l.contains(r#""event":"cancel""#))
        .expect("the cancel");
    let (after, loss) = resumed_clean(&scenario, &lines, at + 1, &log);
    let events = after.events();
    assert_eq!(
        with_outcome(&events[..loss], "ABORTED"),
        ["a/1", "b/1"],
        "the recovery aborts what the broker aborted"
    );
    let offered = offered(&events[loss..]);
    assert_eq!(offered, ["other/1"]);
}

/// `a` holds the broker's one open call (`open_calls_max` 1) when `b` asks.
const OVER_THE_LIMIT: &str = r#"{
  "name": "cut-limit",
  "tool": { "mode": "timed" },
  "broker": { "open_calls_max": 1 },
  "answerers": [ { "name": "web", "accepts": "all", "latency": 30.0, "answer": "recommended" } ],
  "agents": [
    { "name": "a", "script": [ { "ask": { "questions": [ { "id": "q", "question": "A?", "header": "A", "options": [ { "label": "Yes" }, { "label": "No" } ] } ], "timeout": -1 } } ] },
    { "name": "b", "script": [ { "work": 1.0 }, { "ask": { "questions": [ { "id": "q", "question": "B?", "header": "B", "options": [ { "label": "Yes" }, { "label": "No" } ] } ], "timeout": -1 } } ] }
  ]
}"#;

/// A request cut from its `LIMIT_EXCEEDED` result (its line the log's last):
/// the result is recorded before the crash's loss, and the question is never
/// offered; the call that held the limit is re-offered.
#[test]
fn a_request_cut_from_its_limit_refusal_is_refused_and_never_offered() {
    let scratch = Scratch::new("cut-limit");
    let log = scratch.path("limit.jsonl");
    let scenario = scenario::parse("cut-limit.json", OVER_THE_LIMIT).expect("a valid scenario");
    let original = logged_run(&scenario, &log);
    assert_eq!(with_outcome(original.events(), "LIMIT_EXCEEDED"), ["b/1"]);
    let lines = lines(&log);
    let request = r#""event":"request","callId":"b/1""#;
    let at = lines
        .iter()
        .position(|l| l.contains(request))
        .expect("b's request");
    let (after, loss) = resumed_clean(&scenario, &lines, at + 1, &log);
    let events = after.events();
    assert_eq!(
        with_outcome(&events[..loss], "LIMIT_EXCEEDED"),
        ["b/1"],
        "the recovery refuses what the broker refused"
    );
    let offered = offered(&events[loss..]);
    assert_eq!(offered, ["a/1"]);
}

/// The calls whose result in `events` has `outcome`, in callId order.
fn with_outcome(events: &[Event], outcome: &str) -> Vec<String> {
    let mut ids: Vec<String> = (events.iter())
        .filter(|e| e.kind.result_kind().is_some_and(|k| k.as_str() == outcome))
        .map(|e| e.kind.call_id().expect("a result's call").to_owned())
        .collect();
    ids.sort();
    ids
}

/// The calls `events` offer, in order.
fn offered(events: &[Event]) -> Vec<&str> {
    (events.iter())
        .filter_map(|e| match &e.kind {
            EventKind::Offer { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect()
}
