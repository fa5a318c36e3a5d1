//! Protocol conformance (SPEC §6, issue #11): the reference state machine per
//! call flags each illegal transition of SPEC §3 in a hand-made log of the broker
//! bug that makes it (`tests/fixtures/protocol/`), and nothing once the log is
//! mended: every fixture has its mended twin here, checked with every invariant.

use std::path::{Path, PathBuf};

use asksim::event::Event;
use asksim::sim::judge::invariants::{VIRTUAL_TOLERANCE_S, check};
use asksim::sim::judge::protocol_check::PROTOCOL_CONFORMANCE;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/protocol/{name}.jsonl"))
}

fn events(name: &str) -> Vec<Event> {
    asksim::log::read_file(&fixture(name))
        .expect("the fixture reads")
        .1
}

/// The log with one line replaced (seq counts from 1).
fn mended(name: &str, seq: usize, edit: impl FnOnce(&mut Value)) -> Vec<Event> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut line: Value = serde_json::from_str(&lines[seq]).unwrap();
    edit(&mut line);
    lines[seq] = line.to_string();
    asksim::log::parse(&(lines.join("\n") + "\n")).unwrap().1
}

/// The log edited as a list of events (`seq` renumbered after).
fn edited(name: &str, edit: impl FnOnce(&mut Vec<Value>)) -> Vec<Event> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_owned();
    let mut events: Vec<Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    edit(&mut events);
    for (i, event) in events.iter_mut().enumerate() {
        event["seq"] = (i + 1).into();
    }
    let text = std::iter::once(header)
        .chain(events.iter().map(Value::to_string))
        .collect::<Vec<_>>()
        .join("\n");
    asksim::log::parse(&(text + "\n")).unwrap().1
}

/// The event with `seq` (from 1) of an edited list.
fn at(events: &mut [Value], seq: usize) -> &mut Value {
    &mut events[seq - 1]
}

/// The fixture breaks protocol conformance only, at `seq`, and says `what`.
fn assert_flags(name: &str, seq: u64, what: &str) {
    let violations = check(&events(name), None, VIRTUAL_TOLERANCE_S);
    assert!(!violations.is_empty(), "{name}: nothing flagged");
    for v in &violations {
        assert_eq!(v.invariant, PROTOCOL_CONFORMANCE, "{name}: {v}");
    }
    let first = &violations[0];
    assert_eq!(
        (first.seq, first.call_id.as_deref()),
        (seq, Some("root/1")),
        "{name}: {first}"
    );
    assert!(first.detail.contains(what), "{name}: {first}");
}

fn assert_clean(events: &[Event]) {
    let violations = check(events, None, VIRTUAL_TOLERANCE_S);
    assert!(violations.is_empty(), "{violations:?}");
}

#[test]
fn an_accept_from_an_answerer_not_offered_the_call() {
    assert_flags("accept_not_offered", 4, "not the current offeree");
    // The offeree's accept is legal: offer and accept name the same answerer.
    assert_clean(&mended("accept_not_offered", 3, |e| {
        e["answerer"] = "terminal".into()
    }));
}

#[test]
fn an_accept_after_its_offer_timed_out() {
    assert_flags("accept_after_offer_timeout", 6, "after its offer timed out");
    // The waterfall moved on to terminal: its accept and batch are legal.
    assert_clean(&edited("accept_after_offer_timeout", |e| {
        at(e, 6)["answerer"] = "terminal".into();
        at(e, 7)["answerer"] = "terminal".into();
    }));
}

#[test]
fn a_hold_after_the_call_went_pending() {
    assert_flags("hold_after_pending", 6, "after the call went pending");
    // The broker refuses the late hold back to its sender.
    assert_clean(&edited("hold_after_pending", |e| {
        *at(e, 6) = serde_json::json!({"t": 6.0, "event": "refused", "callId": "root/1",
            "answerer": "web", "what": "hold", "reason": "settled"});
    }));
}

#[test]
fn a_hold_from_a_non_owner() {
    assert_flags("hold_not_owner", 5, "does not own the call");
    assert_clean(&mended("hold_not_owner", 5, |e| e["answerer"] = "web".into()));
}

#[test]
fn a_settling_batch_from_a_non_owner() {
    assert_flags("settle_not_owner", 6, "does not own the call, settled it");
    assert_clean(&mended("settle_not_owner", 5, |e| e["answerer"] = "web".into()));
}

#[test]
fn an_offer_for_a_request_whose_turn_had_fired() {
    assert_flags("offer_after_turn_fired", 4, "whose turn had fired");
    // The request settles ABORTED at once, never offered.
    assert_clean(&edited("offer_after_turn_fired", |e| {
        e.remove(3);
    }));
}

#[test]
fn a_held_call_going_pending_while_its_holder_lives() {
    assert_flags("held_goes_pending", 6, "while web held it and lived");
    // Held, the call waits for web's batch, which settles it in its (stopped) window.
    assert_clean(&edited("held_goes_pending", |e| {
        let text = serde_json::json!({"answers": [{"id": "db", "selected": ["SQLite"]}]}).to_string();
        *at(e, 8) = serde_json::json!({"t": 7.0, "event": "result", "callId": "root/1", "agent": "root",
            "result": text, "is_error": false, "outcome": "answers"});
        e.remove(8); // the user message
        e.remove(5); // the pending result
    }));
}

#[test]
fn a_message_from_a_dead_answerer_accepted() {
    assert_flags("accept_from_dead", 7, "which had died");
    // The offer went on to terminal: its accept and batch are legal.
    assert_clean(&edited("accept_from_dead", |e| {
        at(e, 7)["answerer"] = "terminal".into();
        at(e, 8)["answerer"] = "terminal".into();
    }));
}

#[test]
fn a_death_handled_before_a_message_queued_ahead_of_it() {
    assert_flags("death_before_queued_message", 8, "queued ahead of it");
    // The same messages in mailbox order (the submit before the death) are legal.
    let log = mended("death_before_queued_message", 5, |e| e["mbox"] = 3.into());
    let log_text: Vec<String> = log.iter().map(|e| serde_json::to_string(e).unwrap()).collect();
    let mut back: Vec<Value> = log_text
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    back[7]["mbox"] = 4.into();
    let header = r#"{"format":"asksim-log","version":1,"stateVersion":3,"scenario":"s","seed":1}"#;
    let text = std::iter::once(header.to_owned())
        .chain(back.iter().map(Value::to_string))
        .collect::<Vec<_>>()
        .join("\n");
    assert_clean(&asksim::log::parse(&(text + "\n")).unwrap().1);
}
