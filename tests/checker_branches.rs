//! Every branch of the checker bites (issue #21): for each way an invariant can be
//! broken, one hand-made log of the broker bug that breaks it that way, and its
//! mended twin. The log breaks exactly that invariant, once, naming the call and
//! the event; the twin breaks nothing. `tests/violation_fixtures.rs` holds one
//! fixture per invariant as files (`asksim replay` reads them); these are the
//! branches, written here as event lists.

use asksim::event::Event;
use asksim::projection::Projection;
use asksim::protocol::BrokerStatus;
use asksim::sim::judge::invariants::{VIRTUAL_TOLERANCE_S, check};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------
// Events, as the broker, the agents and the driver write them.

const QUESTIONS: &str = r#"[{"id":"db","question":"Which database?","header":"Database","options":[{"label":"Postgres (Recommended)"},{"label":"SQLite"}]}]"#;
const TWO_QUESTIONS: &str = r#"[{"id":"db","question":"Which database?","header":"Database","options":[{"label":"Postgres (Recommended)"},{"label":"SQLite"}]},{"id":"env","question":"Where?","header":"Env","options":[{"label":"dev"},{"label":"prod"}]}]"#;
const LEGACY_QUESTIONS: &str = r#"[{"question":"Deploy now?","header":"Deploy","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}]"#;

fn agent_of(call_id: &str) -> &str {
    call_id.split('/').next().expect("a callId names its agent")
}

fn spawn(t: f64, agent: &str, owner: Option<&str>) -> Value {
    json!({"t": t, "event": "spawn", "agent": agent, "owner": owner, "lineage": null})
}

fn request_with(t: f64, call_id: &str, window_s: f64, questions: &str) -> Value {
    let questions: Value = serde_json::from_str(questions).unwrap();
    json!({"t": t, "event": "request", "callId": call_id, "agent": agent_of(call_id), "schema": "timed",
           "keyed": true, "questions": questions, "timeout": window_s, "window_s": window_s})
}

fn request(t: f64, call_id: &str, window_s: f64) -> Value {
    request_with(t, call_id, window_s, QUESTIONS)
}

fn legacy_request(t: f64, call_id: &str, keyed: bool) -> Value {
    let questions: Value = serde_json::from_str(LEGACY_QUESTIONS).unwrap();
    json!({"t": t, "event": "request", "callId": call_id, "agent": agent_of(call_id), "schema": "legacy",
           "keyed": keyed, "questions": questions, "timeout": null, "window_s": null})
}

fn offer(t: f64, call_id: &str, answerer: &str) -> Value {
    json!({"t": t, "event": "offer", "callId": call_id, "answerer": answerer})
}

fn accept(t: f64, call_id: &str, answerer: &str) -> Value {
    json!({"t": t, "event": "accept", "callId": call_id, "answerer": answerer})
}

fn decline(t: f64, call_id: &str, answerer: &str, reason: &str) -> Value {
    json!({"t": t, "event": "decline", "callId": call_id, "answerer": answerer, "reason": reason})
}

fn hold(t: f64, call_id: &str, answerer: &str) -> Value {
    json!({"t": t, "event": "hold", "callId": call_id, "answerer": answerer})
}

fn batch(t: f64, call_id: &str, answerer: &str, items: Value) -> Value {
    json!({"t": t, "event": "answer", "callId": call_id, "answerer": answerer, "batch": items})
}

fn sqlite() -> Value {
    json!([{"id": "db", "selected": ["SQLite"]}])
}

fn refused(t: f64, call_id: &str, answerer: &str, what: &str, reason: &str) -> Value {
    json!({"t": t, "event": "refused", "callId": call_id, "answerer": answerer, "what": what, "reason": reason})
}

fn result_text(t: f64, call_id: &str, text: &str, outcome: &str) -> Value {
    let is_error = !matches!(outcome, "answers" | "pending");
    json!({"t": t, "event": "result", "callId": call_id, "agent": agent_of(call_id), "result": text,
           "is_error": is_error, "outcome": outcome})
}

fn answers(t: f64, call_id: &str, items: Value) -> Value {
    result_text(t, call_id, &json!({"answers": items}).to_string(), "answers")
}

fn pending_text(call_id: &str) -> String {
    asksim::tool::ToolResult::pending(call_id).text
}

fn pending(t: f64, call_id: &str) -> Value {
    result_text(t, call_id, &pending_text(call_id), "pending")
}

fn error(t: f64, call_id: &str, code: &str) -> Value {
    let text = json!({"error": {"code": code, "message": "…"}}).to_string();
    result_text(t, call_id, &text, code)
}

fn late_message(call_id: &str, items: &Value) -> String {
    format!(
        r#"{{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"{call_id}","questions":{QUESTIONS},"answers":{items}}}"#
    )
}

fn late(t: f64, call_id: &str, items: Value) -> Value {
    let message = late_message(call_id, &items);
    json!({"t": t, "event": "late_answer", "callId": call_id, "agent": agent_of(call_id),
           "answers": items, "message": message})
}

fn late_with(t: f64, call_id: &str, message: &str) -> Value {
    json!({"t": t, "event": "late_answer", "callId": call_id, "agent": agent_of(call_id),
           "answers": sqlite(), "message": message})
}

fn withdrawn_message(call_id: &str) -> String {
    json!({"kind": "pending_question_withdrawn", "tool": "ask_user_question", "callId": call_id,
           "reason": "NO_ANSWERER"})
    .to_string()
}

fn withdraw(t: f64, call_id: &str, reason: &str, message: Option<&str>) -> Value {
    json!({"t": t, "event": "withdraw", "callId": call_id, "agent": agent_of(call_id), "reason": reason,
           "message": message})
}

fn user_message(t: f64, call_id: &str, message: &str) -> Value {
    json!({"t": t, "event": "user_message", "callId": call_id, "agent": agent_of(call_id), "message": message})
}

fn cancel(t: f64, agent: &str) -> Value {
    json!({"t": t, "event": "cancel", "agent": agent})
}

fn cancel_call(t: f64, call_id: &str) -> Value {
    json!({"t": t, "event": "cancel_call", "callId": call_id})
}

fn stop(t: f64, agent: &str) -> Value {
    json!({"t": t, "event": "stop", "agent": agent})
}

fn crash(t: f64, answerer: &str) -> Value {
    json!({"t": t, "event": "crash", "answerer": answerer})
}

fn loss(t: f64) -> Value {
    json!({"t": t, "event": "process_loss", "restart_after": 1.0})
}

fn restart(t: f64) -> Value {
    json!({"t": t, "event": "restart"})
}

/// A root asks `root/1` at 0 with a window (or -1), and `web` owns it at once.
fn owned(window_s: f64) -> Vec<Value> {
    vec![
        spawn(0.0, "root", None),
        request(0.0, "root/1", window_s),
        offer(0.0, "root/1", "web"),
        accept(0.0, "root/1", "web"),
    ]
}

/// `owned(1)` gone pending at 1 s.
fn pending_owned() -> Vec<Value> {
    let mut log = owned(1.0);
    log.push(pending(1.0, "root/1"));
    log
}

fn with(mut log: Vec<Value>, more: impl IntoIterator<Item = Value>) -> Vec<Value> {
    log.extend(more);
    log
}

// ---------------------------------------------------------------------------------
// Checking.

/// The events of `log`, closed by the `end` event every run's log ends with (at
/// its last event's time).
fn events(log: &[Value]) -> Vec<Event> {
    let t = log.last().map_or(json!(0.0), |event| event["t"].clone());
    let end = json!({"t": t, "event": "end", "reason": "done"});
    cut_events(&[log, &[end]].concat())
}

/// The events of `log` as it is: a log cut short, with no `end` event.
fn cut_events(log: &[Value]) -> Vec<Event> {
    let mut text =
        String::from(r#"{"format":"asksim-log","version":1,"stateVersion":4,"scenario":"branch","seed":1}"#);
    for (i, event) in log.iter().enumerate() {
        let mut line = serde_json::Map::new();
        line.insert("seq".into(), json!(i + 1));
        line.extend(event.as_object().expect("an event is an object").clone());
        text.push('\n');
        text.push_str(&Value::Object(line).to_string());
    }
    text.push('\n');
    asksim::log::parse(&text).unwrap_or_else(|e| panic!("{e}")).1
}

/// The violations of `log`, as (invariant, callId, seq), with the broker's state
/// taken to be the fold's (so only what the log itself breaks shows).
fn named(log: &[Value]) -> Vec<(String, Option<String>, u64, String)> {
    let events = events(log);
    let broker = BrokerStatus {
        open: Projection::fold(&events).open_calls(),
        closed: None,
    };
    check(&events, Some(&broker), VIRTUAL_TOLERANCE_S)
        .into_iter()
        .map(|v| (v.invariant.to_owned(), v.call_id, v.seq, v.detail))
        .collect()
}

/// `bitten` breaks `invariant` once, at `(call_id, seq)`, saying `what`; `mended`
/// breaks nothing.
fn bites(invariant: &str, (call_id, seq): (&str, u64), what: &str, bitten: &[Value], mended: &[Value]) {
    let found = named(bitten);
    assert_eq!(found.len(), 1, "{invariant}/{what}: {found:#?}");
    let (name, call, at, detail) = &found[0];
    assert_eq!(
        (name.as_str(), call.as_deref(), *at),
        (invariant, Some(call_id), seq),
        "{detail}"
    );
    assert!(
        detail.contains(what),
        "{invariant}: {detail:?} does not say {what:?}"
    );
    assert_eq!(named(mended), [], "{invariant}/{what}: the mended twin");
}

/// A log cut short (no `end` event: killed, or still going) is judged as far as
/// it goes: what is owed only once a run is over is not a violation yet, since
/// the next line could still settle it. So is a run stopped at a limit (its
/// `end` names the limit): work was still due. Each log here breaks an
/// end-of-run check when closed by `end` (`done`), and nothing when cut or
/// stopped.
#[test]
fn a_log_cut_short_owes_nothing_that_only_the_end_settles() {
    let cut_logs = [
        // An offer never answered: no_orphaned_wait at the end.
        vec![
            spawn(0.0, "root", None),
            request(0.0, "root/1", -1.0),
            offer(0.0, "root/1", "web"),
        ],
        // A late answer with no user message yet: pending_end_reaches_caller.
        with(
            pending_owned(),
            [
                batch(2.0, "root/1", "web", sqlite()),
                late(2.0, "root/1", sqlite()),
            ],
        ),
        // A batch not yet delivered nor refused: no_answer_lost.
        with(owned(5.0), [batch(1.0, "root/1", "web", sqlite())]),
    ];
    for log in cut_logs {
        assert!(!named(&log).is_empty(), "closed by end, {log:#?} breaks a check");
        let events = cut_events(&log);
        let broker = BrokerStatus {
            open: Projection::fold(&events).open_calls(),
            closed: None,
        };
        assert_eq!(
            check(&events, Some(&broker), VIRTUAL_TOLERANCE_S),
            [],
            "cut: {log:#?}"
        );
        // Stopped at a limit, work was still due: the run did not end either.
        for reason in ["events_max", "virtual_s_max"] {
            let t = log.last().and_then(|e| e["t"].as_f64()).unwrap_or(0.0);
            let stopped = [&log[..], &[json!({"t": t, "event": "end", "reason": reason})]].concat();
            let events = cut_events(&stopped);
            assert_eq!(
                check(&events, Some(&broker), VIRTUAL_TOLERANCE_S),
                [],
                "stopped at {reason}: {log:#?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// exactly_once

#[test]
fn exactly_once_a_second_request_under_one_call_id() {
    let call = |t: f64, id: &str| {
        vec![
            request(t, id, 5.0),
            offer(t, id, "web"),
            accept(t, id, "web"),
            batch(t + 1.0, id, "web", sqlite()),
            answers(t + 1.0, id, sqlite()),
        ]
    };
    let base = vec![spawn(0.0, "root", None)];
    let bitten = with(with(base.clone(), call(0.0, "root/1")), call(3.0, "root/1"));
    let mended = with(with(base, call(0.0, "root/1")), call(3.0, "root/2"));
    bites("exactly_once", ("root/1", 7), "second request", &bitten, &mended);
}

#[test]
fn exactly_once_a_result_without_a_request() {
    let bitten = vec![spawn(0.0, "root", None), answers(0.0, "root/1", sqlite())];
    let mended = vec![
        spawn(0.0, "root", None),
        error(0.0, "root/1", "INVALID_ARGUMENTS"),
    ];
    bites(
        "exactly_once",
        ("root/1", 2),
        "without a request",
        &bitten,
        &mended,
    );
}

#[test]
fn exactly_once_a_second_result() {
    let settled = with(
        owned(5.0),
        [
            batch(2.0, "root/1", "web", sqlite()),
            answers(2.0, "root/1", sqlite()),
        ],
    );
    let bitten = with(settled.clone(), [pending(5.0, "root/1")]);
    bites("exactly_once", ("root/1", 7), "second result", &bitten, &settled);
}

#[test]
fn exactly_once_a_closure_without_a_request() {
    let bitten = vec![
        spawn(0.0, "root", None),
        withdraw(1.0, "root/9", "cancel_call", None),
    ];
    bites(
        "exactly_once",
        ("root/9", 2),
        "closure without a request",
        &bitten,
        &bitten[..1],
    );
}

#[test]
fn exactly_once_a_pending_call_closed_twice() {
    let message = late_message("root/1", &sqlite());
    let answered = with(
        pending_owned(),
        [
            batch(2.0, "root/1", "web", sqlite()),
            late(2.0, "root/1", sqlite()),
            user_message(2.0, "root/1", &message),
        ],
    );
    let bitten = with(answered.clone(), [withdraw(3.0, "root/1", "cancel_call", None)]);
    bites("exactly_once", ("root/1", 9), "closed twice", &bitten, &answered);
}

#[test]
fn exactly_once_a_call_closed_without_having_gone_pending() {
    let message = late_message("root/1", &sqlite());
    let bitten = with(
        owned(5.0),
        [
            batch(2.0, "root/1", "web", sqlite()),
            late(2.0, "root/1", sqlite()),
            user_message(2.0, "root/1", &message),
        ],
    );
    let mended = with(
        owned(5.0),
        [
            batch(2.0, "root/1", "web", sqlite()),
            answers(2.0, "root/1", sqlite()),
        ],
    );
    bites(
        "exactly_once",
        ("root/1", 6),
        "without having gone pending",
        &bitten,
        &mended,
    );
}

// ---------------------------------------------------------------------------------
// legacy_never_pending_or_keyed

fn legacy(keyed: bool, then: Value) -> Vec<Value> {
    vec![
        spawn(0.0, "root", None),
        legacy_request(0.0, "root/1", keyed),
        offer(0.0, "root/1", "web"),
        accept(0.0, "root/1", "web"),
        batch(
            2.0,
            "root/1",
            "web",
            json!([{"id": "Deploy now?", "selected": ["No"]}]),
        ),
        then,
    ]
}

fn legacy_answers(t: f64, keys: &[&str]) -> Value {
    let answers: serde_json::Map<String, Value> =
        keys.iter().map(|k| ((*k).to_owned(), json!("No"))).collect();
    result_text(t, "root/1", &json!({"answers": answers}).to_string(), "answers")
}

#[test]
fn legacy_never_pending_or_keyed_a_keyed_legacy_request() {
    let settled = legacy_answers(2.0, &["Deploy now?"]);
    bites(
        "legacy_never_pending_or_keyed",
        ("root/1", 2),
        "keyed",
        &legacy(true, settled.clone()),
        &legacy(false, settled),
    );
}

#[test]
fn legacy_never_pending_or_keyed_a_pending_legacy_call() {
    let bitten = vec![
        spawn(0.0, "root", None),
        legacy_request(0.0, "root/1", false),
        offer(0.0, "root/1", "web"),
        accept(0.0, "root/1", "web"),
        pending(120.0, "root/1"),
    ];
    bites(
        "legacy_never_pending_or_keyed",
        ("root/1", 5),
        "returned pending",
        &bitten,
        &bitten[..4],
    );
}

// ---------------------------------------------------------------------------------
// window_respected

#[test]
fn window_respected_a_call_still_waiting_past_its_window() {
    let bitten = with(owned(5.0), [spawn(10.0, "other", None), pending(10.0, "root/1")]);
    let mended = with(owned(5.0), [pending(5.0, "root/1"), spawn(10.0, "other", None)]);
    bites(
        "window_respected",
        ("root/1", 5),
        "still waiting at 10 s",
        &bitten,
        &mended,
    );
}

#[test]
fn window_respected_a_pending_result_past_its_window() {
    let bitten = with(owned(5.0), [pending(7.0, "root/1")]);
    let mended = with(owned(5.0), [pending(5.0, "root/1")]);
    bites(
        "window_respected",
        ("root/1", 5),
        "still waiting at 7 s",
        &bitten,
        &mended,
    );
}

#[test]
fn window_respected_a_hold_that_died_with_its_holder_stops_holding() {
    // web held the call and died at 8 s, past the 5 s window: the call had to go
    // pending at once (SPEC §3.5), not at 9 s.
    let held = with(
        owned(5.0),
        [
            hold(1.0, "root/1", "web"),
            crash(8.0, "web"),
            decline(8.0, "root/1", "web", "dead"),
        ],
    );
    let reoffered = [
        offer(8.0, "root/1", "terminal"),
        accept(8.0, "root/1", "terminal"),
    ];
    let bitten = with(
        with(held.clone(), reoffered.clone()),
        [spawn(9.0, "other", None), pending(9.0, "root/1")],
    );
    let mended = with(with(held, [pending(8.0, "root/1")]), reoffered);
    bites(
        "window_respected",
        ("root/1", 10),
        "still waiting at 9 s",
        &bitten,
        &mended,
    );
}

/// A NO_ANSWERER withdrawal as the broker writes it: with its message, delivered.
fn fix_no_answerer(mut log: Vec<Value>) -> Vec<Value> {
    let message = withdrawn_message("root/1");
    let last = log.last_mut().expect("a withdrawal last");
    last["message"] = json!(message);
    let t = last["t"].as_f64().unwrap();
    log.push(user_message(t, "root/1", &message));
    log
}

// ---------------------------------------------------------------------------------
// no_answer_lost

/// Answer vs cancel: the batch came first, so it had to settle the call (or be
/// refused); the broker let the `cancel_call` abort it and dropped the batch.
#[test]
fn no_answer_lost_a_batch_the_next_event_about_its_call_does_not_account_for() {
    let submitted = with(owned(-1.0), [batch(3.0, "root/1", "web", sqlite())]);
    let bitten = with(
        submitted.clone(),
        [cancel_call(3.0, "root/1"), error(3.0, "root/1", "ABORTED")],
    );
    let mended = with(
        submitted,
        [answers(3.0, "root/1", sqlite()), cancel_call(3.0, "root/1")],
    );
    bites(
        "no_answer_lost",
        ("root/1", 5),
        "neither delivered nor refused",
        &bitten,
        &mended,
    );
}

#[test]
fn no_answer_lost_a_batch_still_unaccounted_for_at_the_end() {
    let bitten = with(owned(-1.0), [batch(3.0, "root/1", "web", json!([]))]);
    let mended = with(
        bitten.clone(),
        [refused(3.0, "root/1", "web", "submit", "batch: expected 1 item")],
    );
    bites(
        "no_answer_lost",
        ("root/1", 5),
        "neither delivered nor refused",
        &bitten,
        &mended,
    );
}

/// The batch reached the model as other answers: a tool result with another
/// label, in the right shape. What was submitted was not delivered.
#[test]
fn no_answer_lost_a_tool_result_with_other_answers_than_the_batch() {
    let submitted = with(owned(-1.0), [batch(3.0, "root/1", "web", sqlite())]);
    let postgres = json!([{"id": "db", "selected": ["Postgres (Recommended)"]}]);
    bites(
        "no_answer_lost",
        ("root/1", 6),
        r#"the tool result does not carry the batch web submitted (seq 5): received [{"id":"db","selected":["Postgres (Recommended)"]}], submitted [{"id":"db","selected":["SQLite"]}]"#,
        &with(submitted.clone(), [answers(3.0, "root/1", postgres)]),
        &with(submitted, [answers(3.0, "root/1", sqlite())]),
    );
}

/// A legacy result's answer texts (SPEC §2.2) are the batch's labels.
#[test]
fn no_answer_lost_a_legacy_result_with_another_answer_text() {
    let text = json!({"answers": {"Deploy now?": "Yes (Recommended)"}}).to_string();
    bites(
        "no_answer_lost",
        ("root/1", 6),
        r#"received {"Deploy now?":"Yes (Recommended)"}, submitted {"Deploy now?":"No"}"#,
        &legacy(false, result_text(2.0, "root/1", &text, "answers")),
        &legacy(false, legacy_answers(2.0, &["Deploy now?"])),
    );
}

/// The late answer's items are the batch's, but the user message the agent
/// reads carries another label. (A message with no answers at all is not the
/// text SPEC §2.4 gives: `late_answer_reaches_caller` names it.)
#[test]
fn no_answer_lost_a_late_answer_whose_message_carries_other_answers() {
    let postgres = json!([{"id": "db", "selected": ["Postgres (Recommended)"]}]);
    bites(
        "no_answer_lost",
        ("root/1", 7),
        "in its user message, received",
        &late_answered(&late_message("root/1", &postgres)),
        &late_answered(&late_message("root/1", &sqlite())),
    );
}

#[test]
fn no_answer_lost_a_late_answer_whose_items_are_not_the_batch() {
    let postgres = json!([{"id": "db", "selected": ["Postgres (Recommended)"]}]);
    let message = late_message("root/1", &sqlite());
    let answered = |items: Value| {
        let late = json!({"t": 2.0, "event": "late_answer", "callId": "root/1", "agent": "root",
                          "answers": items, "message": message});
        with(
            pending_owned(),
            [
                batch(2.0, "root/1", "web", sqlite()),
                late,
                user_message(2.0, "root/1", &message),
            ],
        )
    };
    bites(
        "no_answer_lost",
        ("root/1", 7),
        "in its answers, received",
        &answered(postgres),
        &answered(sqlite()),
    );
}

// ---------------------------------------------------------------------------------
// delegated_never_offered

#[test]
fn delegated_never_offered_an_offer_of_a_live_childs_request() {
    let tree = vec![spawn(0.0, "root", None), spawn(0.0, "worker", Some("root"))];
    let bitten = with(
        tree.clone(),
        [
            request(1.0, "worker/1", 5.0),
            offer(1.0, "worker/1", "web"),
            error(1.0, "worker/1", "DELEGATED_CALLER"),
        ],
    );
    let mended = with(
        tree,
        [
            request(1.0, "worker/1", 5.0),
            error(1.0, "worker/1", "DELEGATED_CALLER"),
        ],
    );
    bites(
        "delegated_never_offered",
        ("worker/1", 4),
        "was offered",
        &bitten,
        &mended,
    );
}

#[test]
fn delegated_never_offered_learned_from_the_result_when_the_tree_did_not_say() {
    // The log never recorded the worker's owner: the checker learns of the
    // delegation from the DELEGATED_CALLER result, and names it there.
    let base = vec![spawn(0.0, "worker", None), request(1.0, "worker/1", 5.0)];
    let bitten = with(
        base.clone(),
        [
            offer(1.0, "worker/1", "web"),
            error(1.0, "worker/1", "DELEGATED_CALLER"),
        ],
    );
    let mended = with(base, [error(1.0, "worker/1", "DELEGATED_CALLER")]);
    bites(
        "delegated_never_offered",
        ("worker/1", 4),
        "was offered",
        &bitten,
        &mended,
    );
}

// ---------------------------------------------------------------------------------
// turn_cancel_settles_descendants

#[test]
fn turn_cancel_settles_descendants_a_call_settled_after_its_signal() {
    let signalled = with(owned(-1.0), [cancel(3.0, "root")]);
    let bitten = with(signalled.clone(), [error(4.0, "root/1", "ABORTED")]);
    let mended = with(signalled, [error(3.0, "root/1", "ABORTED")]);
    bites(
        "turn_cancel_settles_descendants",
        ("root/1", 5),
        "settled at seq 6",
        &bitten,
        &mended,
    );
}

#[test]
fn turn_cancel_settles_descendants_a_call_never_settled_after_its_signal() {
    let bitten = with(owned(-1.0), [cancel(3.0, "root")]);
    let mended = with(bitten.clone(), [error(3.0, "root/1", "ABORTED")]);
    bites(
        "turn_cancel_settles_descendants",
        ("root/1", 5),
        "still waiting",
        &bitten,
        &mended,
    );
}

#[test]
fn turn_cancel_settles_descendants_a_derived_turn_outlives_its_owners_stop() {
    // SPEC §1: a child's turn derives from its owner's at spawn, also once the
    // owner stopped (cancel-derived-turn.json as a log).
    let base = vec![
        spawn(0.0, "root", None),
        spawn(0.0, "worker", Some("root")),
        stop(1.0, "root"),
        request(2.0, "worker/1", -1.0),
        offer(2.0, "worker/1", "web"),
        accept(2.0, "worker/1", "web"),
        cancel(3.0, "root"),
    ];
    let mended = with(base.clone(), [error(3.0, "worker/1", "ABORTED")]);
    bites(
        "turn_cancel_settles_descendants",
        ("worker/1", 7),
        "still waiting",
        &base,
        &mended,
    );
}

// ---------------------------------------------------------------------------------
// answers_well_formed

fn settled_two(items: Value) -> Vec<Value> {
    vec![
        spawn(0.0, "root", None),
        request_with(0.0, "root/1", 5.0, TWO_QUESTIONS),
        offer(0.0, "root/1", "web"),
        accept(0.0, "root/1", "web"),
        batch(2.0, "root/1", "web", items.clone()),
        answers(2.0, "root/1", items),
    ]
}

#[test]
fn answers_well_formed_a_batch_with_too_few_items() {
    let good = json!([{"id": "db", "selected": ["SQLite"]}, {"id": "env", "selected": ["dev"]}]);
    let bitten = settled_two(json!([{"id": "db", "selected": ["SQLite"]}]));
    bites(
        "answers_well_formed",
        ("root/1", 6),
        "1 answer items for 2 questions",
        &bitten,
        &settled_two(good),
    );
}

#[test]
fn answers_well_formed_items_out_of_question_order() {
    let good = json!([{"id": "db", "selected": ["SQLite"]}, {"id": "env", "selected": ["dev"]}]);
    let swapped = json!([{"id": "env", "selected": ["dev"]}, {"id": "db", "selected": ["SQLite"]}]);
    bites(
        "answers_well_formed",
        ("root/1", 6),
        "out of question order",
        &settled_two(swapped),
        &settled_two(good),
    );
}

#[test]
fn answers_well_formed_a_label_that_is_no_option() {
    let good = json!([{"id": "db", "selected": ["SQLite"]}, {"id": "env", "selected": []}]);
    let bad = json!([{"id": "db", "selected": ["MySQL"]}, {"id": "env", "selected": []}]);
    bites(
        "answers_well_formed",
        ("root/1", 6),
        "\"MySQL\" is not an option",
        &settled_two(bad),
        &settled_two(good),
    );
}

#[test]
fn answers_well_formed_several_labels_for_a_single_select() {
    let good = json!([{"id": "db", "selected": ["SQLite"]}, {"id": "env", "selected": []}]);
    let bad = json!([{"id": "db", "selected": ["SQLite", "Postgres (Recommended)"]}, {"id": "env", "selected": []}]);
    bites(
        "answers_well_formed",
        ("root/1", 6),
        "several labels",
        &settled_two(bad),
        &settled_two(good),
    );
}

#[test]
fn answers_well_formed_a_legacy_result_for_other_question_texts() {
    bites(
        "answers_well_formed",
        ("root/1", 6),
        "Deploy later?",
        &legacy(false, legacy_answers(2.0, &["Deploy later?"])),
        &legacy(false, legacy_answers(2.0, &["Deploy now?"])),
    );
}

/// A batch SPEC §3.6 refuses (an unknown field) settled the call, delivered
/// in a well-formed shape: it had to be refused back, the call left open.
#[test]
fn answers_well_formed_a_batch_the_rules_refuse_delivered_anyway() {
    let delivered = |items: Value| {
        with(
            owned(-1.0),
            [
                batch(2.0, "root/1", "web", items),
                answers(2.0, "root/1", sqlite()),
            ],
        )
    };
    bites(
        "answers_well_formed",
        ("root/1", 6),
        "a batch from web that SPEC §3.6 refuses settled the call: batch[0].why: unknown field",
        &delivered(json!([{"id": "db", "selected": ["SQLite"], "why": "typo"}])),
        &delivered(sqlite()),
    );
}

#[test]
fn answers_well_formed_a_late_answer_with_a_label_that_is_no_option() {
    let answered = |items: Value| {
        let message = late_message("root/1", &items);
        with(
            pending_owned(),
            [
                batch(2.0, "root/1", "web", items.clone()),
                late(2.0, "root/1", items),
                user_message(2.0, "root/1", &message),
            ],
        )
    };
    let bad = answered(json!([{"id": "db", "selected": ["MySQL"]}]));
    bites(
        "answers_well_formed",
        ("root/1", 7),
        "is not an option",
        &bad,
        &answered(sqlite()),
    );
}

// ---------------------------------------------------------------------------------
// late_answer_reaches_caller (what the decided message says)

fn late_answered(message: &str) -> Vec<Value> {
    with(
        pending_owned(),
        [
            batch(2.0, "root/1", "web", sqlite()),
            late_with(2.0, "root/1", message),
            user_message(2.0, "root/1", message),
        ],
    )
}

#[test]
fn late_answer_reaches_caller_a_message_naming_another_call() {
    let good = late_message("root/1", &sqlite());
    let other = good.replace("root/1", "root/2");
    bites(
        "late_answer_reaches_caller",
        ("root/1", 7),
        "(its callId is \"root/2\"): expected {\"kind\":\"answer_to_pending_question\",\"tool\":\"ask_user_question\",\"callId\":\"root/1\"",
        &late_answered(&other),
        &late_answered(&good),
    );
}

#[test]
fn late_answer_reaches_caller_a_message_that_is_not_json() {
    let good = late_message("root/1", &sqlite());
    bites(
        "late_answer_reaches_caller",
        ("root/1", 7),
        "(it does not read as a JSON object with each key once): expected {",
        &late_answered("SQLite"),
        &late_answered(&good),
    );
}

/// `root/1` pending, its owner dead, withdrawn for `NO_ANSWERER` with
/// `message`, which reaches the agent.
fn withdrawn_with(message: &str) -> Vec<Value> {
    with(
        pending_owned(),
        [
            crash(2.0, "web"),
            decline(2.0, "root/1", "web", "dead"),
            withdraw(2.0, "root/1", "NO_ANSWERER", Some(message)),
            user_message(2.0, "root/1", message),
        ],
    )
}

#[test]
fn late_answer_reaches_caller_a_withdrawal_naming_another_call() {
    let good = withdrawn_message("root/1");
    let bad = good.replace("root/1", "root/2");
    bites(
        "late_answer_reaches_caller",
        ("root/1", 8),
        "the withdrawal's user message is not the exact text SPEC §2.4 gives (its callId is \"root/2\")",
        &withdrawn_with(&bad),
        &withdrawn_with(&good),
    );
}

/// SPEC §2.4 gives the withdrawal its message: a `NO_ANSWERER` withdrawal that
/// tells the agent a late answer's text (answers nobody gave) instead, or
/// another reason than its own, is named, with the text it had to be.
#[test]
fn late_answer_reaches_caller_a_withdrawal_whose_message_is_not_the_withdrawals() {
    let good = withdrawn_message("root/1");
    let expected = format!("expected {good}, got ");
    for (bad, why) in [
        (
            late_message("root/1", &sqlite()),
            "(its kind is \"answer_to_pending_question\"; it has no reason; it carries answers)",
        ),
        (
            good.replace("NO_ANSWERER", "ABORTED"),
            "(its reason is \"ABORTED\")",
        ),
    ] {
        let what = format!(
            "the withdrawal's user message is not the exact text SPEC §2.4 gives {why}: {expected}{bad}"
        );
        bites(
            "late_answer_reaches_caller",
            ("root/1", 8),
            &what,
            &withdrawn_with(&bad),
            &withdrawn_with(&good),
        );
    }
}

/// A late answer whose message is a withdrawal's carries no answers: it is not
/// the late answer's text (and `no_answer_lost` has no answers to compare).
#[test]
fn late_answer_reaches_caller_a_late_answer_whose_message_is_a_withdrawals() {
    bites(
        "late_answer_reaches_caller",
        ("root/1", 7),
        "(its kind is \"pending_question_withdrawn\"; it carries no questions; it carries no answers)",
        &late_answered(&withdrawn_message("root/1")),
        &late_answered(&late_message("root/1", &sqlite())),
    );
}

/// The late answer's message is the right JSON, not the exact text: written
/// with spaces, its keys in another order, its answer items written otherwise
/// (an unused custom text, a field of its own). Each is named by what differs.
#[test]
fn late_answer_reaches_caller_a_late_answer_message_written_otherwise() {
    let good = late_message("root/1", &sqlite());
    let value: Value = serde_json::from_str(&good).unwrap();
    let reordered = format!(
        r#"{{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"root/1","answers":{},"questions":{QUESTIONS}}}"#,
        value["answers"]
    );
    let item = r#"{"id":"db","selected":["SQLite"]}"#;
    for (bad, why) in [
        (
            serde_json::to_string_pretty(&value).unwrap(),
            "(it is that JSON, not written compactly as serde_json::to_string writes it)",
        ),
        (
            reordered,
            "(its keys are [\"kind\", \"tool\", \"callId\", \"answers\", \"questions\"], SPEC gives [\"kind\", \"tool\", \"callId\", \"questions\", \"answers\"])",
        ),
        (
            good.replace(item, r#"{"id":"db","selected":["SQLite"],"custom":""}"#),
            "(its answer items are not written as SPEC writes them: id, selected, then custom only when used)",
        ),
        (
            good.replace(item, r#"{"id":"db","selected":["SQLite"],"note":"x"}"#),
            "(its answer items are not written as SPEC writes them: id, selected, then custom only when used)",
        ),
    ] {
        bites(
            "late_answer_reaches_caller",
            ("root/1", 7),
            &format!("{why}: expected {good}, got {bad}"),
            &late_answered(&bad),
            &late_answered(&good),
        );
    }
}

// ---------------------------------------------------------------------------------
// timed_survive_loss_legacy_do_not

#[test]
fn timed_survive_loss_legacy_do_not_a_lost_legacy_call_goes_on() {
    let lost = vec![
        spawn(0.0, "root", None),
        legacy_request(0.0, "root/1", false),
        offer(0.0, "root/1", "web"),
        accept(0.0, "root/1", "web"),
        loss(1.0),
        restart(2.0),
        spawn(2.0, "root", None),
    ];
    let bitten = with(lost.clone(), [offer(2.0, "root/1", "web")]);
    bites(
        "timed_survive_loss_legacy_do_not",
        ("root/1", 8),
        "went on",
        &bitten,
        &lost,
    );
}

#[test]
fn timed_survive_loss_legacy_do_not_a_tool_result_after_the_loss() {
    let reoffered = with(
        owned(5.0),
        [
            loss(1.0),
            restart(2.0),
            spawn(2.0, "root", None),
            offer(2.0, "root/1", "web"),
            accept(2.0, "root/1", "web"),
        ],
    );
    let bitten = with(reoffered.clone(), [pending(5.0, "root/1")]);
    let message = late_message("root/1", &sqlite());
    let mended = with(
        reoffered,
        [
            batch(6.0, "root/1", "web", sqlite()),
            late(6.0, "root/1", sqlite()),
            user_message(6.0, "root/1", &message),
        ],
    );
    bites(
        "timed_survive_loss_legacy_do_not",
        ("root/1", 10),
        "tool result after the process loss",
        &bitten,
        &mended,
    );
}

#[test]
fn timed_survive_loss_legacy_do_not_an_open_timed_question_forgotten_at_the_restart() {
    let bitten = with(owned(30.0), [loss(1.0), restart(2.0), spawn(2.0, "root", None)]);
    let mended = with(
        bitten.clone(),
        [offer(2.0, "root/1", "web"), accept(2.0, "root/1", "web")],
    );
    bites(
        "timed_survive_loss_legacy_do_not",
        ("root/1", 5),
        "not taken up again",
        &bitten,
        &mended,
    );
}

// ---------------------------------------------------------------------------------
// pending_text_exact

#[test]
fn pending_text_exact_a_pending_text_marked_as_an_error() {
    let mut bad = pending(1.0, "root/1");
    bad["is_error"] = json!(true);
    bites(
        "pending_text_exact",
        ("root/1", 5),
        "marked as an error",
        &with(owned(1.0), [bad]),
        &pending_owned(),
    );
}

#[test]
fn pending_text_exact_a_pending_text_with_another_message() {
    let text = pending_text("root/1").replace("No answer yet.", "Not yet.");
    let bad = result_text(1.0, "root/1", &text, "pending");
    bites(
        "pending_text_exact",
        ("root/1", 5),
        "not the contract's",
        &with(owned(1.0), [bad]),
        &pending_owned(),
    );
}

// ---------------------------------------------------------------------------------
// pending_end_reaches_caller

#[test]
fn pending_end_reaches_caller_a_no_answerer_withdrawal_the_agent_is_not_told_of() {
    let died = with(
        pending_owned(),
        [crash(2.0, "web"), decline(2.0, "root/1", "web", "dead")],
    );
    let bitten = with(died.clone(), [withdraw(2.0, "root/1", "NO_ANSWERER", None)]);
    let mended = fix_no_answerer(with(died, [withdraw(2.0, "root/1", "NO_ANSWERER", None)]));
    bites(
        "pending_end_reaches_caller",
        ("root/1", 8),
        "without telling its agent",
        &bitten,
        &mended,
    );
}

#[test]
fn pending_end_reaches_caller_a_cancel_call_withdrawal_with_a_message() {
    let message = withdrawn_message("root/1");
    let cancelled = with(pending_owned(), [cancel_call(3.0, "root/1")]);
    let bitten = with(
        cancelled.clone(),
        [
            withdraw(3.0, "root/1", "cancel_call", Some(&message)),
            user_message(3.0, "root/1", &message),
        ],
    );
    let mended = with(cancelled, [withdraw(3.0, "root/1", "cancel_call", None)]);
    bites(
        "pending_end_reaches_caller",
        ("root/1", 7),
        "yet a user message was decided",
        &bitten,
        &mended,
    );
}

#[test]
fn pending_end_reaches_caller_a_user_message_nothing_decided() {
    let message = late_message("root/1", &sqlite());
    let bitten = with(pending_owned(), [user_message(2.0, "root/1", &message)]);
    bites(
        "pending_end_reaches_caller",
        ("root/1", 6),
        "no late answer or withdrawal decided",
        &bitten,
        &pending_owned(),
    );
}

#[test]
fn pending_end_reaches_caller_a_late_answer_that_never_arrives() {
    let message = late_message("root/1", &sqlite());
    let decided = with(
        pending_owned(),
        [
            batch(2.0, "root/1", "web", sqlite()),
            late(2.0, "root/1", sqlite()),
        ],
    );
    let mended = with(decided.clone(), [user_message(2.0, "root/1", &message)]);
    bites(
        "pending_end_reaches_caller",
        ("root/1", 7),
        "no user message reached root",
        &decided,
        &mended,
    );
}

#[test]
fn pending_end_reaches_caller_a_message_redelivered_after_a_restart_it_had_reached() {
    let message = late_message("root/1", &sqlite());
    let delivered = with(
        pending_owned(),
        [
            batch(2.0, "root/1", "web", sqlite()),
            late(2.0, "root/1", sqlite()),
            user_message(2.0, "root/1", &message),
            loss(3.0),
            restart(4.0),
            spawn(4.0, "root", None),
        ],
    );
    let bitten = with(delivered.clone(), [user_message(4.0, "root/1", &message)]);
    bites(
        "pending_end_reaches_caller",
        ("root/1", 12),
        "a second time",
        &bitten,
        &delivered,
    );
}

#[test]
fn pending_end_reaches_caller_owes_nothing_to_an_agent_stopped_before_a_loss() {
    // Decided, then the agent stopped, then the process died before delivery: a
    // stopped agent does not come back, so the message can never arrive, and is
    // not owed. Without the stop it is owed, and its loss breaks the invariant.
    let decided = with(
        pending_owned(),
        [
            batch(2.0, "root/1", "web", sqlite()),
            late(2.0, "root/1", sqlite()),
        ],
    );
    let stopped = with(decided.clone(), [stop(3.0, "root"), loss(4.0), restart(5.0)]);
    let unstopped = with(decided, [loss(4.0), restart(5.0), spawn(5.0, "root", None)]);
    bites(
        "pending_end_reaches_caller",
        ("root/1", 7),
        "no user message reached root",
        &unstopped,
        &stopped,
    );
}

// ---------------------------------------------------------------------------------
// cancel_call_settles

#[test]
fn cancel_call_settles_a_blocking_call_left_waiting() {
    let cancelled = with(owned(-1.0), [cancel_call(3.0, "root/1")]);
    let bitten = with(cancelled.clone(), [error(4.0, "root/1", "ABORTED")]);
    let mended = with(cancelled, [error(3.0, "root/1", "ABORTED")]);
    bites(
        "cancel_call_settles",
        ("root/1", 5),
        "still open after its cancel_call",
        &bitten,
        &mended,
    );
}

#[test]
fn cancel_call_settles_a_call_answered_after_its_cancel_call() {
    let cancelled = with(
        owned(-1.0),
        [cancel_call(3.0, "root/1"), batch(3.0, "root/1", "web", sqlite())],
    );
    let bitten = with(cancelled.clone(), [answers(3.0, "root/1", sqlite())]);
    let mut mended = owned(-1.0);
    mended.extend([
        cancel_call(3.0, "root/1"),
        error(3.0, "root/1", "ABORTED"),
        batch(3.0, "root/1", "web", sqlite()),
        refused(3.0, "root/1", "web", "submit", "settled"),
    ]);
    bites(
        "cancel_call_settles",
        ("root/1", 7),
        "closed by its answers result",
        &bitten,
        &mended,
    );
}

#[test]
fn cancel_call_settles_a_pending_call_withdrawn_for_another_reason() {
    let cancelled = with(pending_owned(), [cancel_call(3.0, "root/1")]);
    let bitten = with(
        cancelled.clone(),
        [withdraw(3.0, "root/1", "agent_stopped", None)],
    );
    let mended = with(cancelled, [withdraw(3.0, "root/1", "cancel_call", None)]);
    bites(
        "cancel_call_settles",
        ("root/1", 7),
        "a withdrawal (agent_stopped)",
        &bitten,
        &mended,
    );
}

// ---------------------------------------------------------------------------------
// stop_agent_settles

#[test]
fn stop_agent_settles_a_pending_call_its_stopped_agent_left_open() {
    let stopped = with(pending_owned(), [stop(3.0, "root")]);
    let bitten = with(stopped.clone(), [spawn(4.0, "other", None)]);
    let mended = with(
        stopped,
        [
            withdraw(3.0, "root/1", "agent_stopped", None),
            spawn(4.0, "other", None),
        ],
    );
    bites(
        "stop_agent_settles",
        ("root/1", 6),
        "still open after its agent's stop",
        &bitten,
        &mended,
    );
}

#[test]
fn stop_agent_settles_a_pending_call_withdrawn_for_another_reason() {
    let stopped = with(pending_owned(), [stop(3.0, "root")]);
    let bitten = with(stopped.clone(), [withdraw(3.0, "root/1", "cancel_call", None)]);
    let mended = with(stopped, [withdraw(3.0, "root/1", "agent_stopped", None)]);
    bites(
        "stop_agent_settles",
        ("root/1", 7),
        "a withdrawal (cancel_call)",
        &bitten,
        &mended,
    );
}

// ---------------------------------------------------------------------------------
// no_orphaned_wait

#[test]
fn no_orphaned_wait_a_request_never_offered() {
    let base = vec![spawn(0.0, "root", None), request(0.0, "root/1", -1.0)];
    let bitten = with(base.clone(), [spawn(1.0, "other", None)]);
    let mended = with(
        base,
        [
            offer(0.0, "root/1", "web"),
            accept(0.0, "root/1", "web"),
            spawn(1.0, "other", None),
        ],
    );
    bites(
        "no_orphaned_wait",
        ("root/1", 2),
        "nothing can answer it",
        &bitten,
        &mended,
    );
}

#[test]
fn no_orphaned_wait_a_decline_not_offered_on() {
    let declined = vec![
        spawn(0.0, "root", None),
        request(0.0, "root/1", -1.0),
        offer(0.0, "root/1", "web"),
        decline(0.5, "root/1", "web", "declined"),
    ];
    let bitten = with(declined.clone(), [spawn(1.0, "other", None)]);
    let mended = with(
        declined,
        [
            offer(0.5, "root/1", "terminal"),
            accept(0.5, "root/1", "terminal"),
            spawn(1.0, "other", None),
        ],
    );
    bites(
        "no_orphaned_wait",
        ("root/1", 4),
        "nothing can answer it",
        &bitten,
        &mended,
    );
}

#[test]
fn no_orphaned_wait_an_offeree_that_died_and_was_not_moved_past() {
    let offered = vec![
        spawn(0.0, "root", None),
        request(0.0, "root/1", -1.0),
        offer(0.0, "root/1", "web"),
    ];
    let bitten = with(offered.clone(), [crash(0.5, "web"), spawn(1.0, "other", None)]);
    let mended = with(
        offered,
        [
            crash(0.5, "web"),
            decline(0.5, "root/1", "web", "dead"),
            offer(0.5, "root/1", "terminal"),
            accept(0.5, "root/1", "terminal"),
            spawn(1.0, "other", None),
        ],
    );
    bites(
        "no_orphaned_wait",
        ("root/1", 4),
        "its offeree web died",
        &bitten,
        &mended,
    );
}

#[test]
fn no_orphaned_wait_an_offer_to_an_answerer_whose_death_was_handled() {
    let base = vec![
        spawn(0.0, "root", None),
        crash(0.0, "web"),
        request(1.0, "root/1", -1.0),
    ];
    let bitten = with(
        base.clone(),
        [offer(1.0, "root/1", "web"), spawn(2.0, "other", None)],
    );
    let mended = with(
        base,
        [
            offer(1.0, "root/1", "terminal"),
            accept(1.0, "root/1", "terminal"),
            spawn(2.0, "other", None),
        ],
    );
    bites(
        "no_orphaned_wait",
        ("root/1", 4),
        "whose death the broker had handled",
        &bitten,
        &mended,
    );
}

#[test]
fn no_orphaned_wait_an_offer_out_when_the_run_ended() {
    let bitten = vec![
        spawn(0.0, "root", None),
        request(0.0, "root/1", -1.0),
        offer(0.0, "root/1", "web"),
    ];
    let mended = with(
        bitten.clone(),
        [
            decline(1.0, "root/1", "web", "offer_timeout"),
            offer(1.0, "root/1", "terminal"),
            accept(1.0, "root/1", "terminal"),
        ],
    );
    bites(
        "no_orphaned_wait",
        ("root/1", 4),
        "never answered nor timed out when the run ended",
        &bitten,
        &mended,
    );
}

// ---------------------------------------------------------------------------------
// protocol_conformance: the branches its fixtures do not hold

/// Settlement only by the owner's batch: answers that follow no batch came
/// from no answerer (the broker settled the call with the recommended option
/// itself).
#[test]
fn protocol_conformance_answers_no_answerer_submitted() {
    bites(
        "protocol_conformance",
        ("root/1", 5),
        "the tool result carries answers no answerer submitted",
        &with(owned(-1.0), [answers(3.0, "root/1", sqlite())]),
        &with(
            owned(-1.0),
            [
                batch(3.0, "root/1", "web", sqlite()),
                answers(3.0, "root/1", sqlite()),
            ],
        ),
    );
}

#[test]
fn protocol_conformance_a_hold_from_a_dead_answerer() {
    let died = with(
        owned(5.0),
        [
            crash(1.0, "web"),
            decline(1.0, "root/1", "web", "dead"),
            offer(1.0, "root/1", "terminal"),
            accept(1.0, "root/1", "terminal"),
        ],
    );
    let bitten = with(died.clone(), [hold(2.0, "root/1", "web")]);
    let mended = with(died, [refused(2.0, "root/1", "web", "hold", "owner_dead")]);
    bites(
        "protocol_conformance",
        ("root/1", 9),
        "which had died",
        &bitten,
        &mended,
    );
}

#[test]
fn protocol_conformance_a_batch_from_a_dead_answerer_settles_the_call() {
    let died = with(
        owned(-1.0),
        [
            crash(1.0, "web"),
            decline(1.0, "root/1", "web", "dead"),
            offer(1.0, "root/1", "terminal"),
            accept(1.0, "root/1", "terminal"),
        ],
    );
    let bitten = with(
        died.clone(),
        [
            batch(2.0, "root/1", "web", sqlite()),
            answers(2.0, "root/1", sqlite()),
        ],
    );
    let mended = with(
        died,
        [
            batch(2.0, "root/1", "web", sqlite()),
            refused(2.0, "root/1", "web", "submit", "owner_dead"),
        ],
    );
    bites(
        "protocol_conformance",
        ("root/1", 10),
        "which had died, settled the call",
        &bitten,
        &mended,
    );
}

#[test]
fn protocol_conformance_a_message_handled_after_a_later_one_of_its_sender() {
    let with_mbox = |mut event: Value, mbox: u64| {
        event["mbox"] = json!(mbox);
        event
    };
    let log = |first: u64, second: u64| {
        vec![
            spawn(0.0, "root", None),
            request(0.0, "root/1", -1.0),
            offer(0.0, "root/1", "web"),
            with_mbox(accept(0.0, "root/1", "web"), first),
            with_mbox(batch(1.0, "root/1", "web", sqlite()), second),
            answers(1.0, "root/1", sqlite()),
        ]
    };
    bites(
        "protocol_conformance",
        ("root/1", 5),
        "handled after a later one",
        &log(5, 4),
        &log(4, 5),
    );
}

// ---------------------------------------------------------------------------------
// projection_matches_broker: terminal states (the open calls: violation_fixtures.rs)

fn against(log: &[Value], closed: &[(&str, &'static str)]) -> Vec<(String, Option<String>, u64, String)> {
    let events = events(log);
    let broker = BrokerStatus {
        open: Projection::fold(&events).open_calls(),
        closed: Some(closed.iter().map(|(c, s)| ((*c).to_owned(), *s)).collect()),
    };
    check(&events, Some(&broker), VIRTUAL_TOLERANCE_S)
        .into_iter()
        .map(|v| (v.invariant.to_owned(), v.call_id, v.seq, v.detail))
        .collect()
}

fn late_answered_call() -> Vec<Value> {
    let message = late_message("root/1", &sqlite());
    with(
        pending_owned(),
        [
            batch(2.0, "root/1", "web", sqlite()),
            late(2.0, "root/1", sqlite()),
            user_message(2.0, "root/1", &message),
        ],
    )
}

#[test]
fn projection_matches_broker_a_terminal_state_the_broker_saw_otherwise() {
    // The fold took the late answer for a withdrawal (or the broker did).
    let log = late_answered_call();
    let found = against(&log, &[("root/1", "withdrawn")]);
    assert_eq!(found.len(), 1, "{found:?}");
    let (name, call, seq, detail) = &found[0];
    assert_eq!(
        (name.as_str(), call.as_deref(), *seq),
        ("projection_matches_broker", Some("root/1"), 9)
    );
    assert!(
        detail.contains("closed it as withdrawn, the projection says late_answered"),
        "{detail}"
    );
    assert_eq!(against(&log, &[("root/1", "late_answered")]), []);
}

#[test]
fn projection_matches_broker_a_call_the_log_closed_and_the_broker_never_did() {
    let log = late_answered_call();
    let found = against(&log, &[]);
    let located: Vec<(&str, Option<&str>, u64)> = found
        .iter()
        .map(|(i, c, s, _)| (i.as_str(), c.as_deref(), *s))
        .collect();
    assert_eq!(located, [("projection_matches_broker", Some("root/1"), 9)]);
    assert!(
        found[0].3.contains("the broker never closed it"),
        "{}",
        found[0].3
    );
    // And one the broker closed that the log never named.
    let found = against(&log, &[("root/1", "late_answered"), ("root/7", "aborted")]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1.as_deref(), Some("root/7"));
    assert!(
        found[0].3.contains("the projection says nothing"),
        "{}",
        found[0].3
    );
}

#[test]
fn projection_matches_broker_compares_only_what_the_broker_of_now_closed() {
    // root/1 was answered before the process loss: the broker of now knows it
    // only from the log it refolded, so it is not compared; root/2, asked after
    // the restart, is.
    let answered = with(
        owned(5.0),
        [
            batch(1.0, "root/1", "web", sqlite()),
            answers(1.0, "root/1", sqlite()),
        ],
    );
    let restarted = with(answered, [loss(2.0), restart(3.0), spawn(3.0, "root", None)]);
    let log = with(
        restarted,
        [
            request(4.0, "root/2", -1.0),
            offer(4.0, "root/2", "web"),
            accept(4.0, "root/2", "web"),
            cancel(5.0, "root"),
            error(5.0, "root/2", "ABORTED"),
        ],
    );
    assert_eq!(against(&log, &[("root/2", "aborted")]), []);
    let found = against(&log, &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1.as_deref(), Some("root/2"));
}
