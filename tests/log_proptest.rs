//! "Never panic" over arbitrary input (SPEC §4): `log::parse` on any text, and
//! `Projection::fold` on any sequence of well-typed events, however unlikely the
//! order (results before requests, late answers for unknown calls, losses without
//! restarts…). The fold's invariants that hold for every input are checked too.

use asksim::event::{Event, EventKind, RawQuestions};
use asksim::log::{LogHeader, parse, write_lines};
use asksim::projection::{Projection, QuestionState};
use asksim::protocol::Text;
use asksim::tool::{AnswerItem, ErrorCode, ResultKind, Schema};
use proptest::prelude::*;
use serde_json::{Value, json};

const AGENTS: &[&str] = &["root", "ops", "worker", "?"];
const CALL_IDS: &[&str] = &["root/1", "root/2", "ops/1", "worker/1", "root/x", "nobody", ""];
const ANSWERERS: &[&str] = &["web", "terminal"];
const RESULTS: &[&str] = &[
    r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#,
    r#"{"answers":{"Deploy now?":"Yes"}}"#,
    r#"{"pending":true,"callId":"root/1","message":"m"}"#,
    r#"{"error":{"code":"ABORTED","message":"m"}}"#,
    r#"{"error":{"code":"NO_ANSWERER","message":"m"}}"#,
    r#"{"error":{"code":"DELEGATED_CALLER","message":"m"}}"#,
    "",
    "not json",
];

fn pick(pool: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    proptest::sample::select(pool).prop_map(str::to_owned)
}

fn schema() -> impl Strategy<Value = Schema> {
    prop_oneof![Just(Schema::Legacy), Just(Schema::Timed)]
}

fn seconds() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        Just(Some(-1.0)),
        Just(Some(0.0)),
        (0.0f64..100.0).prop_map(Some),
    ]
}

fn small_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!([])),
        Just(
            json!([{"id": "db", "question": "Q?", "header": "H", "options": [{"label": "A"}, {"label": "B"}]}])
        ),
        any::<i64>().prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ]
}

fn answers() -> impl Strategy<Value = Vec<AnswerItem>> {
    proptest::collection::vec(
        (
            pick(&["db", "go", ""]),
            proptest::collection::vec(pick(&["A", "B"]), 0..3),
            proptest::option::of(".{0,6}"),
        )
            .prop_map(|(id, selected, custom)| AnswerItem { id, selected, custom }),
        0..3,
    )
}

fn text(s: String) -> Text {
    s.into()
}

fn kind() -> impl Strategy<Value = EventKind> {
    let agent = || pick(AGENTS).prop_map(text);
    let call = || pick(CALL_IDS).prop_map(text);
    let answerer = || pick(ANSWERERS).prop_map(text);
    let mbox = || proptest::option::of(0u64..100);
    prop_oneof![
        (
            agent(),
            proptest::option::of(agent()),
            proptest::option::of(pick(AGENTS))
        )
            .prop_map(|(agent, owner, lineage)| EventKind::Spawn {
                agent,
                owner,
                lineage: lineage.map(Into::into)
            }),
        (
            agent(),
            proptest::option::of(agent()),
            pick(&["LIMIT_EXCEEDED", "owner_not_live"])
        )
            .prop_map(|(agent, owner, reason)| EventKind::SpawnRefused { agent, owner, reason }),
        agent().prop_map(|agent| EventKind::Stop { agent }),
        (
            call(),
            agent(),
            schema(),
            any::<bool>(),
            small_json(),
            seconds(),
            seconds(),
            mbox()
        )
            .prop_map(
                |(call_id, agent, schema, keyed, questions, timeout, window_s, mbox)| {
                    EventKind::Request {
                        call_id,
                        agent,
                        schema,
                        keyed,
                        questions: RawQuestions::new(&questions.to_string()).unwrap(),
                        questions_text: None,
                        timeout,
                        window_s,
                        mbox,
                    }
                }
            ),
        (
            call(),
            agent(),
            pick(RESULTS),
            any::<bool>(),
            proptest::option::of(outcome())
        )
            .prop_map(|(call_id, agent, result, is_error, outcome)| EventKind::Result {
                call_id,
                agent,
                result,
                is_error,
                outcome,
            }),
        (call(), answerer()).prop_map(|(call_id, answerer)| EventKind::Offer { call_id, answerer }),
        (call(), answerer(), mbox()).prop_map(|(call_id, answerer, mbox)| EventKind::Accept {
            call_id,
            answerer,
            mbox
        }),
        (
            call(),
            answerer(),
            pick(&["declined", "offer_timeout", "dead"]),
            mbox()
        )
            .prop_map(|(call_id, answerer, reason, mbox)| EventKind::Decline {
                call_id,
                answerer,
                reason,
                mbox
            }),
        (call(), answerer(), mbox()).prop_map(|(call_id, answerer, mbox)| EventKind::Hold {
            call_id,
            answerer,
            mbox
        }),
        (call(), answerer(), small_json(), mbox()).prop_map(|(call_id, answerer, batch, mbox)| {
            EventKind::Answer {
                call_id,
                answerer,
                batch: batch.into(),
                mbox,
            }
        }),
        (
            call(),
            answerer(),
            pick(&["submit", "hold"]),
            pick(&["settled", "lost_on_restart", "owner_dead"])
        )
            .prop_map(|(call_id, answerer, what, reason)| EventKind::Refused {
                call_id,
                answerer,
                what,
                reason
            }),
        (call(), agent(), answers(), ".{0,8}").prop_map(|(call_id, agent, answers, message)| {
            EventKind::LateAnswer {
                call_id,
                agent,
                answers,
                message: message.into(),
            }
        }),
        (
            call(),
            agent(),
            pick(&["NO_ANSWERER", "cancel_call", "agent_stopped"]),
            proptest::option::of(".{0,8}")
        )
            .prop_map(|(call_id, agent, reason, message)| EventKind::Withdraw {
                call_id,
                agent,
                reason,
                message: message.map(Into::into)
            }),
        (call(), agent(), ".{0,8}").prop_map(|(call_id, agent, message)| EventKind::UserMessage {
            call_id,
            agent,
            message: message.into()
        }),
        agent().prop_map(|agent| EventKind::Cancel { agent }),
        call().prop_map(|call_id| EventKind::CancelCall { call_id }),
        (answerer(), mbox()).prop_map(|(answerer, mbox)| EventKind::Crash { answerer, mbox }),
        (0.0f64..10.0).prop_map(|restart_after| EventKind::ProcessLoss { restart_after }),
        Just(EventKind::restart()),
        small_json().prop_map(|what| EventKind::Dropped { what }),
        ".{0,8}".prop_map(|reason| EventKind::End { reason }),
    ]
}

fn outcome() -> impl Strategy<Value = ResultKind> {
    prop_oneof![
        Just(ResultKind::Answers),
        Just(ResultKind::Pending),
        Just(ResultKind::Error(ErrorCode::Aborted)),
        Just(ResultKind::Error(ErrorCode::NoAnswerer)),
    ]
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    proptest::collection::vec(kind(), 0..60).prop_map(|kinds| {
        kinds
            .into_iter()
            .enumerate()
            .map(|(i, kind)| Event {
                seq: i as u64 + 1,
                t: i as f64 * 0.5,
                kind,
            })
            .collect()
    })
}

/// Lines that look like a log: a header, then events, damaged or not.
fn loglike() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just(r#"{"format":"asksim-log","version":1,"stateVersion":1,"scenario":"s","seed":1}"#.to_owned()),
        Just(r#"{"seq":1,"t":0.0,"event":"spawn","agent":"root","owner":null,"lineage":null}"#.to_owned()),
        Just(r#"{"seq":2,"t":0.0,"event":"restart"}"#.to_owned()),
        Just(r#"{"seq":2,"t":0.0,"event":"process_loss","restart_after":1.0}"#.to_owned()),
        Just(r#"{"seq":3,"t":1e400,"event":"teleport"}"#.to_owned()),
        Just(r#"{"seq":-1,"t":null,"event":"restart"}"#.to_owned()),
        Just(r#"{"seq":18446744073709551615,"t":0,"event":"restart"}"#.to_owned()),
        Just(String::new()),
        "\\PC{0,40}",
        "[{}\\[\\]\",:0-9a-z ]{0,40}",
    ];
    proptest::collection::vec(line, 0..8).prop_map(|lines| lines.join("\n"))
}

fn check_fold(events: &[Event]) -> Projection {
    let p = Projection::fold(events);
    prop_assert_eq_fold(&p, events);
    p
}

fn prop_assert_eq_fold(p: &Projection, events: &[Event]) {
    assert_eq!(p.seq, events.last().map_or(0, |e| e.seq));
    // Only timed questions are answerable; open_calls lists exactly the open and
    // pending ones.
    for (id, q) in p.answerable() {
        assert_eq!(q.schema, Schema::Timed, "{id}");
    }
    for (id, q) in &p.questions {
        let listed = p.open_calls().get(&**id).copied();
        match q.state {
            QuestionState::Open => assert_eq!(listed, Some("waiting")),
            QuestionState::Pending => assert_eq!(listed, Some("pending")),
            _ => assert_eq!(listed, None),
        }
        if q.schema == Schema::Timed {
            assert_ne!(q.state, QuestionState::LostOnRestart, "{id}");
        }
    }
    // Right after a process loss nothing is open any more, and no legacy call is
    // answerable.
    if let Some(last) = events.last()
        && matches!(last.kind, EventKind::ProcessLoss { .. })
    {
        assert!(p.questions.values().all(|q| q.state != QuestionState::Open));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,300}") {
        let _ = parse(&text);
    }

    #[test]
    fn parse_never_panics_on_loglike_text(text in loglike()) {
        if let Err(asksim::log::LineError { line, .. }) = parse(&text) {
            prop_assert!(line >= 1 && line <= text.split('\n').count().max(1));
        }
    }

    #[test]
    fn fold_never_panics_on_arbitrary_events(events in events()) {
        let whole = check_fold(&events);
        // Folding in two halves is folding once.
        let mid = events.len() / 2;
        let mut halves = Projection::fold(&events[..mid]);
        for event in &events[mid..] {
            halves.apply(event);
        }
        prop_assert_eq!(halves, whole);
    }

    #[test]
    fn arbitrary_events_round_trip_through_a_log(events in events()) {
        let header = LogHeader::new("prop", 7);
        let mut bytes = Vec::new();
        write_lines(&mut bytes, &header, &events).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let (h, back) = parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(h, header);
        prop_assert_eq!(Projection::fold(&back), Projection::fold(&events));
    }
}

#[test]
fn times_and_windows_read_back_exactly() {
    // serde_json's default float parser is off by one ulp on some shortest
    // representations; a durable log must read back the exact values it wrote.
    let line = r#"{"seq":1,"t":56.485269700429924,"event":"request","callId":"root/1","agent":"root","schema":"timed","keyed":true,"questions":[],"timeout":56.485269700429924,"window_s":56.485269700429924}"#;
    let text = format!(
        "{}\n{line}\n",
        r#"{"format":"asksim-log","version":1,"stateVersion":1,"scenario":"s","seed":1}"#
    );
    let (header, events) = parse(&text).unwrap();
    assert_eq!(events[0].t, 56.485269700429924);
    let mut bytes = Vec::new();
    write_lines(&mut bytes, &header, &events).unwrap();
    assert_eq!(String::from_utf8(bytes).unwrap(), text);
}
