//! The `userQuestions` projection (SPEC §4) pinned on frozen logs in
//! `tests/fixtures/`: every callId's state, schema and agent, compared exactly.
//!
//! - `timed-loss.jsonl` and `legacy-loss.jsonl` were written by `asksim run --log`
//!   and frozen; `mixed-schemas.jsonl`, `legacy-beyond-limits.jsonl` and
//!   `schema-only.jsonl` are hand-written (see `tests/fixtures/README.md`).
//! - The fold tells timed from legacy calls by the recorded `schema` alone, and it
//!   uses none of the legacy tool's code: a log whose legacy questions the legacy
//!   tool would refuse today still folds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use asksim::event::{Event, EventKind};
use asksim::log::{LogHeader, read_file};
use asksim::projection::{AgentRecord, Projection, QuestionState};
use asksim::tool::{Schema, ToolConfig};
use serde_json::{Value, json};

use QuestionState::*;
use Schema::{Legacy, Timed};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load(name: &str) -> (LogHeader, Vec<Event>) {
    read_file(&fixture(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn fold(name: &str) -> Projection {
    Projection::fold(&load(name).1)
}

/// callId → (state, schema, agent): the projection's answer for every question.
fn states(projection: &Projection) -> BTreeMap<String, (QuestionState, Schema, String)> {
    projection
        .questions
        .iter()
        .map(|(id, q)| (id.to_string(), (q.state, q.schema, q.agent.to_string())))
        .collect()
}

fn expect(rows: &[(&str, QuestionState, Schema, &str)]) -> BTreeMap<String, (QuestionState, Schema, String)> {
    rows.iter()
        .map(|(id, state, schema, agent)| ((*id).to_owned(), (*state, *schema, (*agent).to_owned())))
        .collect()
}

fn answerable(projection: &Projection) -> Vec<&str> {
    projection.answerable().map(|(id, _)| id.as_str()).collect()
}

fn agent(owner: Option<&str>, lineage: Option<&str>, live: bool, calls_made: u64) -> AgentRecord {
    AgentRecord {
        owner: owner.map(Into::into),
        lineage: lineage.map(Into::into),
        live,
        calls_made,
        messages: Vec::new(),
        turn: 0,
        base_turn: 0,
        fired: 0,
    }
}

/// The questions a log's request recorded for `call_id`.
fn questions_in(events: &[Event], call_id: &str) -> Option<serde_json::Value> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Request {
            call_id: c,
            questions,
            ..
        } if c == call_id => Some(questions.value()),
        _ => None,
    })
}

fn pending_result(call_id: &str) -> String {
    json!({"pending": true, "callId": call_id, "message": asksim::tool::PENDING_MESSAGE}).to_string()
}

#[test]
fn timed_loss_fixture_folds_to_pinned_states() {
    let (header, events) = load("timed-loss.jsonl");
    assert_eq!(header.scenario, "fixture-timed-loss");
    assert_eq!(header.seed, 3);
    assert_eq!(events.len(), 30);
    let p = Projection::fold(&events);
    assert_eq!(
        states(&p),
        expect(&[
            ("ops/1", Withdrawn, Timed, "ops"),
            ("root/1", LateAnswered, Timed, "root"),
            ("root/2", LateAnswered, Timed, "root"),
        ])
    );
    // The three calls: timeout 2, timeout -1, and no timeout argument at all
    // (the configured default 20 s), as the requests recorded them.
    let windows: BTreeMap<&str, Option<f64>> = p
        .questions
        .iter()
        .map(|(id, q)| (id.as_str(), q.window_s()))
        .collect();
    assert_eq!(
        windows,
        BTreeMap::from([
            ("ops/1", Some(-1.0)),
            ("root/1", Some(2.0)),
            ("root/2", Some(20.0))
        ])
    );
    let request_timeout = events.iter().find_map(|e| match &e.kind {
        EventKind::Request { call_id, timeout, .. } if call_id == "root/2" => Some(*timeout),
        _ => None,
    });
    assert_eq!(request_timeout, Some(None), "root/2 was asked without a timeout");
    assert_eq!(p.questions["ops/1"].settled.as_deref(), Some("cancel_call"));
    assert_eq!(p.questions["ops/1"].seq, 24);
    assert_eq!(p.questions["root/1"].seq, 26);
    assert_eq!(p.questions["root/2"].seq, 28);
    assert_eq!(p.seq, 30);
    assert!(p.open_calls().is_empty());
    assert!(answerable(&p).is_empty());
    assert_eq!(
        without_messages(&p),
        BTreeMap::from([
            ("ops".to_owned(), agent(None, None, true, 1)),
            ("root".to_owned(), agent(None, None, true, 2)),
        ])
    );
    assert_eq!(
        message_calls(&p, "root"),
        ["root/1", "root/2"],
        "both late answers reached root"
    );
    assert!(
        p.agents["ops"].messages.is_empty(),
        "a cancel_call withdraws without a message"
    );
}

/// The agents without the messages they received.
fn without_messages(p: &Projection) -> BTreeMap<String, AgentRecord> {
    let mut agents: BTreeMap<String, AgentRecord> = p
        .agents
        .iter()
        .map(|(name, a)| (name.to_string(), a.clone()))
        .collect();
    agents.values_mut().for_each(|a| a.messages.clear());
    agents
}

/// The callIds of the user messages `agent` received, in order.
fn message_calls(p: &Projection, agent: &str) -> Vec<String> {
    p.agents[agent]
        .messages
        .iter()
        .map(|m| {
            serde_json::from_str::<serde_json::Value>(m).unwrap()["callId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn timed_loss_fixture_just_after_the_loss_has_every_open_timed_call_pending() {
    let (_, events) = load("timed-loss.jsonl");
    // Up to the process loss (seq 13): root/1 pending, ops/1 (-1) and root/2 (no
    // timeout argument) still in the foreground.
    let before = Projection::fold(&events[..12]);
    assert_eq!(
        before.open_calls(),
        BTreeMap::from([
            ("ops/1".to_owned(), "waiting"),
            ("root/1".to_owned(), "pending"),
            ("root/2".to_owned(), "waiting"),
        ])
    );
    let after = Projection::fold(&events[..14]);
    assert_eq!(
        states(&after),
        expect(&[
            ("ops/1", Pending, Timed, "ops"),
            ("root/1", Pending, Timed, "root"),
            ("root/2", Pending, Timed, "root"),
        ])
    );
    assert_eq!(answerable(&after), ["ops/1", "root/1", "root/2"]);
    // The loss itself is what moved ops/1 and root/2; root/1 was already pending.
    assert_eq!(after.questions["ops/1"].seq, 13);
    assert_eq!(after.questions["root/2"].seq, 13);
    assert_eq!(after.questions["root/1"].seq, 9);
    // A pending question keeps no copy of its pending text (it is the constant
    // message with its callId), only that its first result was pending.
    assert_eq!(after.questions["root/1"].settled, None);
    assert_eq!(
        after.questions["root/1"].first.map(|(kind, _)| kind),
        Some(asksim::tool::ResultKind::Pending)
    );
}

#[test]
fn legacy_loss_fixture_folds_to_pinned_states() {
    let (header, events) = load("legacy-loss.jsonl");
    assert_eq!(
        (header.scenario.as_str(), header.seed),
        ("fixture-legacy-loss", 4)
    );
    let p = Projection::fold(&events);
    assert_eq!(
        states(&p),
        expect(&[
            ("root/1", Answered, Legacy, "root"),
            ("root/2", LostOnRestart, Legacy, "root"),
            ("root/3", Answered, Legacy, "root"),
        ])
    );
    assert_eq!(p.questions["root/2"].settled.as_deref(), Some("process_loss"));
    assert_eq!(p.questions["root/2"].seq, 10);
    assert_eq!(
        p.questions["root/1"].settled.as_deref(),
        Some(r#"{"answers":{"Deploy now?":"Yes (Recommended)"}}"#)
    );
    assert!(p.questions.values().all(|q| q.window_s().is_none()));
    assert!(p.open_calls().is_empty());
    assert!(answerable(&p).is_empty());
    assert_eq!(
        p.agents,
        [("root".into(), agent(None, None, true, 3))]
            .into_iter()
            .collect()
    );
}

#[test]
fn mixed_schema_fixture_folds_to_pinned_states() {
    let (header, events) = load("mixed-schemas.jsonl");
    assert_eq!(
        (header.scenario.as_str(), header.seed),
        ("fixture-mixed-schemas", 11)
    );
    assert_eq!(events.len(), 76);
    let p = Projection::fold(&events);
    assert_eq!(
        states(&p),
        expect(&[
            ("lab/1", LateAnswered, Timed, "lab"),
            ("ops/1", LostOnRestart, Legacy, "ops"),
            ("ops/2", Answered, Legacy, "ops"),
            ("qa/1", Aborted, Legacy, "qa"),
            ("qa/2", Withdrawn, Timed, "qa"),
            ("qa/3", Pending, Timed, "qa"),
            ("root/1", Answered, Legacy, "root"),
            ("root/2", LateAnswered, Timed, "root"),
            ("root/3", Withdrawn, Timed, "root"),
            ("root/4", Open, Timed, "root"),
            ("worker/1", Errored, Timed, "worker"),
            ("worker/2", Answered, Timed, "worker"),
        ])
    );
    let settled = |id: &str| p.questions[id].settled.clone();
    assert_eq!(settled("ops/1").as_deref(), Some("process_loss"));
    assert_eq!(settled("qa/2").as_deref(), Some("NO_ANSWERER"));
    assert_eq!(settled("root/3").as_deref(), Some("cancel_call"));
    assert_eq!(settled("root/4"), None);
    assert_eq!(settled("qa/3"), None);
    assert_eq!(
        p.questions["qa/3"].first.map(|(kind, _)| kind),
        Some(asksim::tool::ResultKind::Pending)
    );
    let late: Value = serde_json::from_str(&settled("lab/1").unwrap()).unwrap();
    assert_eq!(
        late["answers"],
        json!([{"id": "go", "selected": [], "custom": "after lunch"}])
    );
    assert_eq!(
        p.open_calls(),
        BTreeMap::from([("qa/3".to_owned(), "pending"), ("root/4".to_owned(), "waiting")])
    );
    assert_eq!(answerable(&p), ["qa/3", "root/4"]);
    // Every agent was live at the loss and came back as a runtime root; the former
    // child carries its lineage; callId counters continued across the restart.
    assert_eq!(message_calls(&p, "lab"), ["lab/1"]);
    assert_eq!(message_calls(&p, "qa"), ["qa/2"]);
    assert_eq!(message_calls(&p, "root"), ["root/2"]);
    assert_eq!(
        without_messages(&p),
        BTreeMap::from([
            ("lab".to_owned(), agent(None, None, true, 1)),
            ("ops".to_owned(), agent(None, None, true, 2)),
            ("qa".to_owned(), agent(None, None, true, 3)),
            ("root".to_owned(), agent(None, None, true, 4)),
            ("worker".to_owned(), agent(None, Some("root"), true, 2)),
        ])
    );
}

#[test]
fn mixed_schema_fixture_at_the_restart_continues_timed_calls_only() {
    let (_, events) = load("mixed-schemas.jsonl");
    let restart = events
        .iter()
        .position(|e| matches!(e.kind, EventKind::Restart { .. }))
        .expect("a restart");
    let at_restart = Projection::fold(&events[..=restart]);
    let open_at_loss: BTreeMap<String, (QuestionState, Schema, String)> = states(&at_restart)
        .into_iter()
        .filter(|(_, (state, _, _))| matches!(state, Pending | LostOnRestart))
        .collect();
    assert_eq!(
        open_at_loss,
        expect(&[
            ("lab/1", Pending, Timed, "lab"),
            ("ops/1", LostOnRestart, Legacy, "ops"),
            ("root/2", Pending, Timed, "root"),
            ("root/3", Pending, Timed, "root"),
        ])
    );
    // What a restart re-offers: the timed ones, whatever their timeout argument
    // (-1, 3, none), and never the legacy one.
    assert_eq!(answerable(&at_restart), ["lab/1", "root/2", "root/3"]);
}

#[test]
fn the_fold_reads_the_recorded_schema_and_nothing_else() {
    let p = fold("schema-only.jsonl");
    // root/1: timed with "timeout":null and even "window_s":null; root/2: legacy
    // with a timeout and a window recorded. The schema alone decides.
    assert_eq!(
        states(&p),
        expect(&[
            ("root/1", Pending, Timed, "root"),
            ("root/2", LostOnRestart, Legacy, "root"),
            ("root/3", Pending, Timed, "root"),
            ("root/4", LostOnRestart, Legacy, "root"),
        ])
    );
    assert_eq!(answerable(&p), ["root/1", "root/3"]);
    assert_eq!(p.questions["root/1"].window_s(), None);
    assert_eq!(p.questions["root/2"].window_s(), Some(30.0));
}

#[test]
fn a_legacy_call_is_never_answerable_in_any_state() {
    let request = |schema: Schema, seq: u64| Event {
        seq,
        t: 0.0,
        kind: EventKind::Request {
            call_id: format!("a/{seq}").into(),
            agent: "a".into(),
            schema,
            keyed: schema == Timed,
            questions: asksim::event::RawQuestions::new("[]").unwrap(),
            questions_text: None,
            timeout: None,
            window_s: None,
            mbox: None,
        },
    };
    // Every prefix of a log with a legacy request, a (bogus) pending result for
    // it, and a process loss: the legacy call never becomes answerable; the timed
    // one with a null timeout is answerable from its request on.
    let events = [
        Event {
            seq: 1,
            t: 0.0,
            kind: EventKind::Spawn {
                agent: "a".into(),
                owner: None,
                lineage: None,
            },
        },
        request(Legacy, 2),
        request(Timed, 3),
        Event {
            seq: 4,
            t: 1.0,
            kind: EventKind::Result {
                call_id: "a/2".into(),
                agent: "a".into(),
                result: pending_result("a/2"),
                is_error: false,
                outcome: None,
            },
        },
        Event {
            seq: 5,
            t: 2.0,
            kind: EventKind::ProcessLoss { restart_after: 1.0 },
        },
        Event {
            seq: 6,
            t: 3.0,
            kind: EventKind::restart(),
        },
    ];
    for n in 0..=events.len() {
        let p = Projection::fold(&events[..n]);
        let ids = answerable(&p);
        assert!(!ids.contains(&"a/2"), "legacy a/2 answerable after {n} events");
        assert_eq!(ids.contains(&"a/3"), n >= 3, "timed a/3 after {n} events");
    }
}

#[test]
fn legacy_questions_the_legacy_tool_would_refuse_today_still_fold() {
    let (_, events) = load("legacy-beyond-limits.jsonl");
    // The legacy tool's current limits refuse both calls' questions…
    let legacy = ToolConfig::default();
    for event in &events {
        if let EventKind::Request {
            call_id, questions, ..
        } = &event.kind
        {
            let arguments = json!({ "questions": questions.value() }).to_string();
            assert!(
                legacy.prepare(&arguments).is_err(),
                "{call_id}: the legacy tool accepts {arguments}; the fixture no longer proves anything"
            );
            assert!(asksim::tool::legacy::prepare(&arguments).is_err());
        }
    }
    // …yet the log folds: the fold does not run the legacy tool's code.
    let p = Projection::fold(&events);
    assert_eq!(
        states(&p),
        expect(&[
            ("root/1", Answered, Legacy, "root"),
            ("root/2", LostOnRestart, Legacy, "root"),
        ])
    );
    assert_eq!(
        questions_in(&events, "root/1").unwrap()[0]["header"],
        json!("Deployment target")
    );
    assert_eq!(
        questions_in(&events, "root/2").unwrap().as_array().map(Vec::len),
        Some(5)
    );
    // The mixed log's ops/1 is such a question too (a 17-character header, one option).
    let mixed_events = load("mixed-schemas.jsonl").1;
    let mixed = Projection::fold(&mixed_events);
    let ops1_questions = questions_in(&mixed_events, "ops/1").unwrap();
    assert_eq!(ops1_questions[0]["header"], json!("Deployment target"));
    assert!(
        legacy
            .prepare(&json!({ "questions": ops1_questions }).to_string())
            .is_err()
    );
    assert_eq!(mixed.questions["ops/1"].state, LostOnRestart);
}

#[test]
fn the_projection_sources_use_no_legacy_tool_code() {
    // The fold, the log reader and the event shapes may name the `Schema` enum,
    // but never the legacy tool's module: removing it cannot change a replay.
    for file in ["src/projection.rs", "src/log.rs", "src/event.rs"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let code: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            !code.contains("legacy::") && !code.contains("tool::legacy"),
            "{file} uses the legacy tool's code"
        );
    }
}

#[test]
fn folding_is_the_same_event_by_event_as_all_at_once() {
    for name in [
        "timed-loss.jsonl",
        "legacy-loss.jsonl",
        "mixed-schemas.jsonl",
        "legacy-beyond-limits.jsonl",
        "schema-only.jsonl",
    ] {
        let (_, events) = load(name);
        let mut stepwise = Projection::default();
        for event in &events {
            stepwise.apply(event);
        }
        assert_eq!(stepwise, Projection::fold(&events), "{name}");
        // The projection survives its own serialisation (the snapshot cache).
        let text = serde_json::to_string(&stepwise).unwrap();
        let back: Projection = serde_json::from_str(&text).unwrap();
        assert_eq!(back, stepwise, "{name}");
    }
}

/// `fired-twice.jsonl`: `lead`'s turn 0 fires, then its turn 1; its child
/// `helper`, spawned in turn 0, asks once `lead` stopped (the log is cut after
/// the request, where the broker aborts it). Both fired turns are kept, so a
/// recovery knows `helper`'s turn fired (SPEC §4.1).
#[test]
fn every_fired_turn_of_an_agent_is_kept_not_only_its_last() {
    let (header, events) = load("fired-twice.jsonl");
    assert_eq!(header.scenario, "fixture-fired-twice");
    let p = Projection::fold(&events);
    assert_eq!(p.agents["lead"].fired, 2, "turn 1 fired last");
    assert_eq!(p.fired_before, BTreeMap::from([("lead".into(), vec![0])]));
    assert!(p.turn_fired("helper", 0), "derived from lead's turn 0");
    assert!(p.turn_fired("lead", 0) && p.turn_fired("lead", 1));
    assert!(!p.turn_fired("lead", 2));
    assert_eq!(p.questions["helper/1"].state, Open);
    // A restart of `lead` starts its turns again: what fired was another life's.
    let respawn: Event = serde_json::from_value(json!({"seq": 8, "t": 1.0, "event": "spawn",
        "agent": "lead", "owner": null, "lineage": null}))
    .unwrap();
    let again = Projection::fold(events.iter().chain([&respawn]));
    assert!(again.fired_before.is_empty() && !again.turn_fired("lead", 0));
}
