//! The checker bites (SPEC §6, "a violation fails the run, names the invariant, the
//! callId and the `seq` of the offending event"): for every invariant of
//! [`INVARIANTS`], a hand-made log in `tests/fixtures/violations/` depicts one broker
//! bug that breaks that invariant and no other. `asksim replay --json` on it exits 1
//! and every violation it reports names that invariant, the call and the event.
//!
//! Each fixture also has a healthy twin: the same log with the offending line
//! fixed, which replays with exit 0. The twin proves the fixture breaks the
//! invariant through that line alone, not through some other defect of a
//! hand-made log.
//!
//! `projection_matches_broker` compares the fold with the broker's final state,
//! which a log does not carry, so `replay` cannot check it: its fixture goes
//! through [`check`] with a hand-made broker state instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use asksim::projection::Projection;
use asksim::protocol::BrokerStatus;
use asksim::sim::judge::invariants::{INVARIANTS, VIRTUAL_TOLERANCE_S, check};
use serde_json::{Value, json};
use tempfile::NamedTempFile;

fn violations_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/violations")
}

fn fixture(invariant: &str) -> PathBuf {
    violations_dir().join(format!("{invariant}.jsonl"))
}

fn replay_json(log: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .arg("replay")
        .arg(log)
        .arg("--json")
        .env_remove("RUST_LOG")
        .output()
        .expect("asksim runs")
}

/// A log: its header line as text, and its events as JSON values (so a twin can
/// edit them).
struct Log {
    header: String,
    events: Vec<Value>,
}

impl Log {
    fn read(path: &Path) -> Log {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut lines = text.lines();
        let header = lines.next().expect("a header line").to_owned();
        let events = lines
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
            .collect();
        Log { header, events }
    }

    /// The event with this `seq`.
    fn event(&mut self, seq: u64) -> &mut Value {
        self.events
            .iter_mut()
            .find(|e| e["seq"] == seq)
            .unwrap_or_else(|| panic!("no event with seq {seq}"))
    }

    /// Removes the event with this `seq` and closes the gap it leaves.
    fn remove(&mut self, seq: u64) {
        self.events.retain(|e| e["seq"] != seq);
        for (i, event) in self.events.iter_mut().enumerate() {
            event["seq"] = json!(i + 1);
        }
    }

    /// Appends an event (its `seq` is the next one), before the `end` event that
    /// closes the log, which moves one on.
    fn push(&mut self, mut event: Value) {
        let end = match self.events.last() {
            Some(last) if last["event"] == "end" => self.events.pop(),
            _ => None,
        };
        let seq = self.events.len() + 1;
        let fields = event.as_object_mut().expect("an event is an object");
        let mut ordered = serde_json::Map::new();
        ordered.insert("seq".into(), json!(seq));
        ordered.append(fields);
        self.events.push(Value::Object(ordered));
        if let Some(mut end) = end {
            end["seq"] = json!(seq + 1);
            self.events.push(end);
        }
    }

    fn text(&self) -> String {
        let mut text = self.header.clone();
        for event in &self.events {
            text.push('\n');
            text.push_str(&event.to_string());
        }
        text.push('\n');
        text
    }
}

/// `log` in a temporary file; removed on drop.
fn temp_log(log: &Log) -> NamedTempFile {
    let file = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("temp dir writable");
    std::fs::write(file.path(), log.text()).expect("temp dir writable");
    file
}

/// A violation as a report names it: (invariant, callId, seq).
type Named = (String, Option<String>, u64);

/// `replay --json` of `path`: its exit code and its violations.
fn replayed(path: &Path) -> (Option<i32>, Vec<Named>) {
    let out = replay_json(path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: --json prints JSON ({e}); stderr {stderr}", path.display()));
    let violations = report["violations"]
        .as_array()
        .expect("violations is a list")
        .iter()
        .map(|v| {
            (
                v["invariant"].as_str().expect("invariant").to_owned(),
                v["callId"].as_str().map(str::to_owned),
                v["seq"].as_u64().expect("seq"),
            )
        })
        .collect();
    (out.status.code(), violations)
}

/// The fixture of `invariant` replays with exit 1, and its violations are exactly
/// `expected` (callId, seq), every one naming `invariant`. The library agrees, also
/// when it is given a broker state equal to the fold (so no other invariant,
/// `projection_matches_broker` included, breaks).
fn assert_bites(invariant: &str, expected: &[(&str, u64)]) -> Log {
    let path = fixture(invariant);
    let (code, violations) = replayed(&path);
    assert_eq!(code, Some(1), "{invariant}: {violations:?}");
    assert!(!violations.is_empty(), "{invariant}: no violation reported");
    for (name, _, _) in &violations {
        assert_eq!(name, invariant, "{invariant}: {violations:?}");
    }
    let located: Vec<(Option<String>, u64)> = violations.iter().map(|(_, c, s)| (c.clone(), *s)).collect();
    let want: Vec<(Option<String>, u64)> = expected
        .iter()
        .map(|(c, s)| (Some((*c).to_owned()), *s))
        .collect();
    assert_eq!(located, want, "{invariant}: callId and seq");

    let (_, events) = asksim::log::read_file(&path).expect("the fixture reads");
    let broker = open_only(Projection::fold(&events).open_calls());
    let library: Vec<Named> = check(&events, Some(&broker), VIRTUAL_TOLERANCE_S)
        .into_iter()
        .map(|v| (v.invariant.to_owned(), v.call_id, v.seq))
        .collect();
    assert_eq!(library, violations, "{invariant}: library and replay agree");
    Log::read(&path)
}

/// A broker state that reports its open calls only.
fn open_only(open: BTreeMap<String, &'static str>) -> BrokerStatus {
    BrokerStatus { open, closed: None }
}

/// The twin replays with exit 0 and no violation.
fn assert_healthy(tag: &str, twin: &Log) {
    let log = temp_log(twin);
    let (code, violations) = replayed(log.path());
    assert_eq!(violations, [], "{tag} twin:\n{}", twin.text());
    assert_eq!(code, Some(0), "{tag} twin");
}

#[test]
fn every_invariant_has_a_fixture_and_no_fixture_lacks_an_invariant() {
    let mut files: Vec<String> = std::fs::read_dir(violations_dir())
        .expect("tests/fixtures/violations exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut invariants: Vec<String> = INVARIANTS.iter().map(|i| (*i).to_owned()).collect();
    invariants.sort();
    assert_eq!(files, invariants);
}

#[test]
fn the_readme_says_what_every_fixture_depicts() {
    let readme = std::fs::read_to_string(violations_dir().join("README.md")).expect("README.md");
    for invariant in INVARIANTS {
        let row = format!("| `{invariant}.jsonl` |");
        assert!(readme.contains(&row), "README.md lacks a row {row}");
    }
}

#[test]
fn every_fixture_starts_with_a_header_and_is_a_readable_log() {
    for invariant in INVARIANTS {
        let path = fixture(invariant);
        let (header, events) = asksim::log::read_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            header.scenario,
            format!("violation-{}", invariant.replace('_', "-"))
        );
        assert!(!events.is_empty(), "{invariant}");
    }
}

#[test]
fn exactly_once_bites_on_a_call_settled_twice() {
    let mut log = assert_bites("exactly_once", &[("root/1", 7)]);
    log.remove(7);
    assert_healthy("exactly_once", &log);
}

#[test]
fn legacy_never_pending_or_keyed_bites_on_a_pending_legacy_call_and_on_a_keyed_one() {
    let mut log = assert_bites("legacy_never_pending_or_keyed", &[("root/1", 5)]);
    log.remove(5);
    assert_healthy("legacy_never_pending_or_keyed", &log);
    // The other half of the invariant: the healthy twin with its request keyed.
    log.event(2)["keyed"] = json!(true);
    let keyed = temp_log(&log);
    let (code, violations) = replayed(keyed.path());
    assert_eq!(code, Some(1));
    assert_eq!(
        violations,
        [(
            "legacy_never_pending_or_keyed".to_owned(),
            Some("root/1".to_owned()),
            2
        )]
    );
}

#[test]
fn window_respected_bites_on_pending_past_the_window() {
    let mut log = assert_bites("window_respected", &[("root/1", 5)]);
    log.event(5)["t"] = json!(5.0);
    assert_healthy("window_respected", &log);
}

#[test]
fn no_answer_lost_bites_on_a_submit_neither_delivered_nor_refused() {
    let mut log = assert_bites("no_answer_lost", &[("root/1", 7)]);
    log.push(
        json!({"t": 3.0, "event": "refused", "callId": "root/1", "answerer": "web",
                    "what": "submit", "reason": "settled"}),
    );
    assert_healthy("no_answer_lost", &log);
}

#[test]
fn delegated_never_offered_bites_on_an_offer_before_the_refusal() {
    // The checker knows the tree from the spawns: worker is a live child of a live
    // root, so the offer (seq 4) breaks the rule, and it is named once.
    let mut log = assert_bites("delegated_never_offered", &[("worker/1", 4)]);
    assert_eq!(log.event(4)["event"], "offer");
    log.remove(4);
    assert_healthy("delegated_never_offered", &log);
}

#[test]
fn turn_cancel_settles_descendants_bites_on_an_abort_after_the_signal() {
    // Named at the turn signal (seq 5), the instant the call had to settle.
    let mut log = assert_bites("turn_cancel_settles_descendants", &[("root/1", 5)]);
    log.event(6)["t"] = json!(3.0);
    assert_healthy("turn_cancel_settles_descendants", &log);
}

#[test]
fn answers_well_formed_bites_on_a_label_that_is_not_an_option() {
    let mut log = assert_bites("answers_well_formed", &[("root/1", 6)]);
    *log.event(6) = json!({"seq": 6, "t": 2.0, "event": "refused", "callId": "root/1", "answerer": "web",
        "what": "submit", "reason": "batch[0].selected[0]: \"MySQL\" is not an option of question \"db\""});
    assert_healthy("answers_well_formed", &log);
}

#[test]
fn late_answer_reaches_caller_bites_on_questions_not_as_the_model_sent_them() {
    let mut log = assert_bites("late_answer_reaches_caller", &[("root/1", 7)]);
    let sent = log.event(2)["questions"].clone();
    for seq in [7, 8] {
        let event = log.event(seq);
        let mut message: Value = serde_json::from_str(event["message"].as_str().unwrap()).unwrap();
        assert_ne!(
            message["questions"], sent,
            "the fixture re-serialises the questions"
        );
        message["questions"] = sent.clone();
        event["message"] = json!(message.to_string());
    }
    assert_healthy("late_answer_reaches_caller", &log);
}

#[test]
fn timed_survive_loss_legacy_do_not_bites_on_a_legacy_call_offered_after_a_restart() {
    let mut log = assert_bites("timed_survive_loss_legacy_do_not", &[("root/1", 8)]);
    log.remove(8);
    assert_healthy("timed_survive_loss_legacy_do_not", &log);
}

#[test]
fn projection_matches_broker_bites_through_the_library() {
    let path = fixture("projection_matches_broker");
    let (_, events) = asksim::log::read_file(&path).expect("the fixture reads");
    // The bug: the broker dropped a question from its registry when its window
    // expired, while the log says it went pending and is still answerable.
    let broker = open_only(BTreeMap::new());
    let violations = check(&events, Some(&broker), VIRTUAL_TOLERANCE_S);
    assert!(!violations.is_empty());
    for v in &violations {
        assert_eq!(v.invariant, "projection_matches_broker", "{v}");
    }
    let located: Vec<(Option<&str>, u64)> =
        violations.iter().map(|v| (v.call_id.as_deref(), v.seq)).collect();
    assert_eq!(located, [(Some("root/1"), 6)]);
    assert!(violations[0].detail.contains("pending"), "{}", violations[0]);

    // The other direction: the broker holds a call open that the log closed.
    let broker = open_only(BTreeMap::from([
        ("root/1".to_owned(), "pending"),
        ("root/0".to_owned(), "waiting"),
    ]));
    let violations = check(&events, Some(&broker), VIRTUAL_TOLERANCE_S);
    let located: Vec<(&str, Option<&str>, u64)> = violations
        .iter()
        .map(|v| (v.invariant, v.call_id.as_deref(), v.seq))
        .collect();
    assert_eq!(located, [("projection_matches_broker", Some("root/0"), 6)]);

    // The healthy twin: the broker's state is the fold's.
    let broker = open_only(BTreeMap::from([("root/1".to_owned(), "pending")]));
    assert_eq!(check(&events, Some(&broker), VIRTUAL_TOLERANCE_S), []);
}

#[test]
fn replay_cannot_see_projection_matches_broker_and_says_so() {
    let out = replay_json(&fixture("projection_matches_broker"));
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checked: Vec<&str> = report["checked"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let expected: Vec<&str> = INVARIANTS
        .iter()
        .copied()
        .filter(|i| *i != "projection_matches_broker")
        .collect();
    assert_eq!(checked, expected);
}

/// Regression: the checker counted a call open at a process loss as still waiting
/// in its agent's turn, so cancelling the resumed agent's turn after the restart
/// failed a correct run. A legacy call open at the loss is gone and a timed one is
/// pending (SPEC §3.8, §3.9): neither belongs to a later turn. Both logs were
/// recorded by `asksim run --log` and replayed with a `turn_cancel_settles_descendants`
/// violation before the fix.
#[test]
fn a_turn_cancelled_after_a_restart_does_not_wait_for_calls_open_at_the_loss() {
    for name in ["cancel_after_legacy_loss", "cancel_after_timed_loss"] {
        let path = violations_dir().join("healthy").join(format!("{name}.jsonl"));
        let (code, violations) = replayed(&path);
        assert_eq!(violations, [], "{name}");
        assert_eq!(code, Some(0), "{name}");
    }
}

/// Bugs the checker does not see yet: each log breaks the invariant named here, and
/// `replay` exits 0 on it. Run with `--ignored` when the checker learns to see them.
fn assert_blind_spot_bites(name: &str, invariant: &str, call_id: &str) {
    let path = violations_dir().join("blind_spots").join(format!("{name}.jsonl"));
    let (code, violations) = replayed(&path);
    assert_eq!(code, Some(1), "{name}: {violations:?}");
    assert!(!violations.is_empty(), "{name}");
    for (found, call, _) in &violations {
        assert_eq!(found, invariant, "{name}: {violations:?}");
        assert_eq!(call.as_deref(), Some(call_id), "{name}: {violations:?}");
    }
}

#[test]

fn blind_spot_an_answer_in_the_window_dropped_for_pending() {
    assert_blind_spot_bites("answer_in_window_dropped_for_pending", "no_answer_lost", "root/1");
}

#[test]

fn blind_spot_a_dead_owners_submit_dropped_without_refusal() {
    assert_blind_spot_bites("dead_owner_submit_dropped", "no_answer_lost", "root/1");
}

#[test]

fn blind_spot_a_delegated_childs_question_offered_and_answered() {
    assert_blind_spot_bites("delegated_child_answered", "delegated_never_offered", "worker/1");
}

#[test]

fn blind_spot_a_window_that_never_closes() {
    assert_blind_spot_bites("window_never_closes", "window_respected", "root/1");
}

/// The tool result carries another label than the owner's batch chose: every
/// shape is right, only the content is not what the user answered.
#[test]
fn blind_spot_a_tool_result_with_answers_other_than_the_batch() {
    assert_blind_spot_bites("answer_replaced", "no_answer_lost", "root/1");
    let path = violations_dir().join("blind_spots/answer_replaced.jsonl");
    let mut log = Log::read(&path);
    let delivered = log.event(6)["result"]
        .as_str()
        .unwrap()
        .replace("Postgres (Recommended)", "SQLite");
    log.event(6)["result"] = json!(delivered);
    assert_healthy("answer_replaced", &log);
}

/// The broker settles a call with answers when its window ends, and no
/// answerer submitted any.
#[test]
fn blind_spot_answers_no_answerer_submitted() {
    assert_blind_spot_bites("answers_without_batch", "protocol_conformance", "root/1");
    let path = violations_dir().join("blind_spots/answers_without_batch.jsonl");
    let mut log = Log::read(&path);
    let pending = asksim::tool::ToolResult::pending("root/1").text;
    log.event(5)["result"] = json!(pending);
    log.event(5)["outcome"] = json!("pending");
    assert_healthy("answers_without_batch", &log);
}

/// A blind spot's violations, as (invariant, callId, seq).
fn blind_spot(name: &str) -> (Vec<Named>, Log) {
    let path = violations_dir().join("blind_spots").join(format!("{name}.jsonl"));
    (replayed(&path).1, Log::read(&path))
}

/// The pending call's waterfall runs out and the broker withdraws it
/// (`NO_ANSWERER`), but the user message it decides for the agent is a late
/// answer's text with a guessed answer, not the withdrawal SPEC §2.4 gives.
#[test]
fn blind_spot_a_withdrawal_whose_message_carries_answers() {
    let invariant = "late_answer_reaches_caller";
    assert_blind_spot_bites("withdrawal_message_carries_answers", invariant, "root/1");
    let (violations, mut log) = blind_spot("withdrawal_message_carries_answers");
    assert_eq!(violations, [(invariant.to_owned(), Some("root/1".to_owned()), 8)]);
    let spec = r#"{"kind":"pending_question_withdrawn","tool":"ask_user_question","callId":"root/1","reason":"NO_ANSWERER"}"#;
    for seq in [8, 9] {
        log.event(seq)["message"] = json!(spec);
    }
    assert_healthy("withdrawal_message_carries_answers", &log);
}

/// The late answer's user message has the right fields, the questions spliced
/// as the model sent them, and a space after every other `,` and `:`: not the
/// compact text SPEC §2.4 gives.
#[test]
fn blind_spot_a_late_answer_message_not_written_compactly() {
    let invariant = "late_answer_reaches_caller";
    assert_blind_spot_bites("late_answer_message_not_compact", invariant, "root/1");
    let (violations, mut log) = blind_spot("late_answer_message_not_compact");
    assert_eq!(violations, [(invariant.to_owned(), Some("root/1".to_owned()), 7)]);
    let spaced = log.event(7)["message"].as_str().unwrap().to_owned();
    let compact = serde_json::from_str::<Value>(&spaced).unwrap().to_string();
    assert_ne!(compact, spaced);
    for seq in [7, 8] {
        log.event(seq)["message"] = json!(compact);
    }
    assert_healthy("late_answer_message_not_compact", &log);
}

#[test]
fn protocol_conformance_bites_on_a_late_accept_taken() {
    let mut log = assert_bites("protocol_conformance", &[("root/1", 6)]);
    // The mended broker gives the call to the offeree it moved on to.
    for seq in [6, 7] {
        log.event(seq)["answerer"] = json!("terminal");
    }
    assert_healthy("protocol_conformance", &log);
}

#[test]
fn pending_text_exact_bites_on_a_pending_result_naming_another_call() {
    let mut log = assert_bites("pending_text_exact", &[("root/1", 5)]);
    let text = log.event(5)["result"]
        .as_str()
        .unwrap()
        .replace("root/2", "root/1");
    log.event(5)["result"] = json!(text);
    assert_healthy("pending_text_exact", &log);
}

#[test]
fn result_text_exact_bites_on_an_answer_written_otherwise() {
    let mut log = assert_bites("result_text_exact", &[("root/1", 6)]);
    let exact = r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#;
    log.event(6)["result"] = json!(exact);
    assert_healthy("result_text_exact", &log);
}

#[test]
fn pending_end_reaches_caller_bites_on_a_late_answer_delivered_twice() {
    // Named at the second delivery.
    let mut log = assert_bites("pending_end_reaches_caller", &[("root/1", 9)]);
    log.remove(9);
    assert_healthy("pending_end_reaches_caller", &log);
}

#[test]
fn cancel_call_settles_bites_on_a_pending_call_left_open() {
    // Named at the `cancel_call`, the instant the call had to be withdrawn.
    let mut log = assert_bites("cancel_call_settles", &[("root/1", 6)]);
    log.push(
        json!({"t": 3.0, "event": "withdraw", "callId": "root/1", "agent": "root",
                    "reason": "cancel_call", "message": null}),
    );
    assert_healthy("cancel_call_settles", &log);
}

#[test]
fn stop_agent_settles_bites_on_a_blocking_call_its_stopped_agent_left_open() {
    let mut log = assert_bites("stop_agent_settles", &[("root/1", 5)]);
    log.push(
        json!({"t": 3.0, "event": "result", "callId": "root/1", "agent": "root",
                    "result": "{\"error\":{\"code\":\"ABORTED\",\"message\":\"the calling agent stopped\"}}",
                    "is_error": true, "outcome": "ABORTED"}),
    );
    assert_healthy("stop_agent_settles", &log);
}

#[test]
fn no_orphaned_wait_bites_on_a_call_left_with_its_dead_owner() {
    // Named at the death the call was not failed over from.
    let mut log = assert_bites("no_orphaned_wait", &[("root/1", 5)]);
    for event in [
        json!({"t": 2.0, "event": "decline", "callId": "root/1", "answerer": "web", "reason": "dead"}),
        json!({"t": 2.0, "event": "offer", "callId": "root/1", "answerer": "terminal"}),
        json!({"t": 2.0, "event": "accept", "callId": "root/1", "answerer": "terminal"}),
    ] {
        log.push(event);
    }
    assert_healthy("no_orphaned_wait", &log);
}

#[test]
fn blind_spot_a_user_message_delivered_again_after_a_restart() {
    assert_blind_spot_bites(
        "user_message_delivered_twice",
        "pending_end_reaches_caller",
        "root/1",
    );
}
