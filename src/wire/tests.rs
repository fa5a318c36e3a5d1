//! The adapters' checks, each shown to fire: a line that names what does not
//! exist, breaks a rule of PROTOCOL.md 3.3, or is not the shape, fails the run
//! with a reason naming it, and never panics. asksim's own state machines behind
//! the wire refuse lines asksim would never write.

use std::collections::VecDeque;

use super::*;
use crate::broker::{BrokerConfig, BrokerLimits};
use crate::effect::{Effect, Out};
use crate::event::EventKind;
use crate::protocol::{BrokerMsg, Registration, Request, Turn, TurnId};
use crate::tool::{Timeout, ToolConfig};

const HELLO: &str = r#"{"protocol":1,"do":[]}"#;

fn config() -> BrokerConfig {
    BrokerConfig {
        answerers: vec!["web".into(), "desk".into()],
        offer_timeout_s: 1.0,
        limits: BrokerLimits::default(),
    }
}

fn life() -> Life<'static> {
    Life {
        life: 1,
        scenario: "test",
        seed: 0,
    }
}

/// A peer that answers each line with the next of `replies`, whatever it says.
fn scripted(replies: &[&str]) -> Peer {
    let mut replies: VecDeque<String> = replies.iter().map(|r| r.to_string()).collect();
    let answer = move |_: &str| replies.pop_front().ok_or_else(|| "no more replies".to_owned());
    Peer::new(
        Box::new(Loopback(Box::new(answer))),
        "broker".into(),
        "scripted".into(),
    )
}

/// An outside broker that said hello and then replies `replies`, one per line.
fn broker(replies: &[&str]) -> OutsideBroker {
    let all: Vec<&str> = std::iter::once(HELLO).chain(replies.iter().copied()).collect();
    OutsideBroker::start(scripted(&all), &config(), &life(), 0).expect("hello is answered")
}

fn turn(agent: u64) -> Turn {
    Turn::root(TurnId { agent, n: 1 })
}

fn register(agent: u64, name: &str) -> BrokerMsg {
    BrokerMsg::Register(Box::new(Registration {
        agent,
        name: name.into(),
        owner: None,
        lineage: None,
        turn: turn(agent),
    }))
}

fn request(agent: u64, call_id: &str) -> BrokerMsg {
    let ask = ToolConfig::timed(Timeout::Window(5.0))
        .prepare(r#"{"questions":[{"id":"q","question":"Go?","header":"Go","options":[{"label":"Yes"},{"label":"No"}]}]}"#)
        .expect("valid arguments");
    BrokerMsg::Request(Box::new(Request {
        agent,
        call_id: call_id.into(),
        ask,
        turn: turn(agent),
    }))
}

/// Handles `msgs` in order; the failure of the last, which must fail.
fn fails(broker: &mut OutsideBroker, msgs: Vec<BrokerMsg>) -> String {
    let mut out = Out::new(0);
    let last = msgs.len() - 1;
    for (i, msg) in msgs.into_iter().enumerate() {
        let handled = broker.handle(msg, &mut out);
        out.drain().for_each(drop);
        match handled {
            Err(failure) if i == last => return failure.reason,
            Err(failure) => panic!("message {i} failed early: {failure}"),
            Ok(()) if i == last => panic!("the last message was taken"),
            Ok(()) => {}
        }
    }
    unreachable!()
}

const REGISTERED: &str = r#"{"do":[{"registered":{"agent":1,"error":null}}]}"#;
const OFFERED: &str = r#"{"do":[{"offer":{"answerer":"web","ticket":7,"callId":"root/1"}}]}"#;

#[test]
fn a_reply_naming_what_does_not_exist_fails_the_run() {
    let cases: [(&str, &str); 6] = [
        (
            r#"{"do":[{"offer":{"answerer":"web","ticket":7,"callId":"nobody/9"}}]}"#,
            "no call \"nobody/9\" was asked or restored",
        ),
        (
            r#"{"do":[{"offer":{"answerer":"pager","ticket":7,"callId":"root/1"}}]}"#,
            "no answerer \"pager\" in the waterfall",
        ),
        (
            r#"{"do":[{"accepted":{"answerer":"web","ticket":9}}]}"#,
            "no offer named ticket 9",
        ),
        (
            r#"{"do":[{"settled":{"agent":4,"callId":"root/1","result":{"answers":[]}}}]}"#,
            "no agent 4 was registered",
        ),
        (
            r#"{"do":[{"turn_fired":{"agent":1,"turn":"one"}}]}"#,
            "\"one\" is not a turn id",
        ),
        (
            r#"{"do":[{"withdraw":{"answerer":"pager","ticket":7}}]}"#,
            "no answerer \"pager\"",
        ),
    ];
    for (reply, reason) in cases {
        let mut outside = broker(&[REGISTERED, reply]);
        let why = fails(&mut outside, vec![register(1, "root"), request(1, "root/1")]);
        assert!(why.contains(reason), "{reply}: {why}");
        assert!(why.starts_with("a line that is not the protocol: "), "{why}");
    }
}

#[test]
fn a_ticket_names_one_call_and_a_timer_id_runs_once() {
    let second = r#"{"do":[{"offer":{"answerer":"web","ticket":7,"callId":"root/2"}}]}"#;
    let mut outside = broker(&[REGISTERED, OFFERED, second]);
    let why = fails(
        &mut outside,
        vec![register(1, "root"), request(1, "root/1"), request(1, "root/2")],
    );
    assert!(why.contains("ticket 7 names root/1 already, not root/2"), "{why}");
    let twice = r#"{"do":[{"start_timer":{"id":3,"after_ns":9}}]}"#;
    let mut outside = broker(&[
        REGISTERED,
        r#"{"do":[{"start_timer":{"id":3,"after_ns":5}}]}"#,
        twice,
    ]);
    let why = fails(
        &mut outside,
        vec![register(1, "root"), request(1, "root/1"), request(1, "root/2")],
    );
    assert!(why.contains("timer 3 started while it runs"), "{why}");
}

#[test]
fn a_reply_without_the_verdict_its_input_owes_fails_the_run() {
    let mut outside = broker(&[r#"{"do":[]}"#]);
    let why = fails(&mut outside, vec![register(1, "root")]);
    assert!(
        why.contains("the reply to register gives agent 1 no `registered`"),
        "{why}"
    );
    let accept = BrokerMsg::Accept {
        ticket: 7,
        answerer: 0,
    };
    let mut outside = broker(&[REGISTERED, OFFERED, r#"{"do":[{"cancel_timer":{"id":2}}]}"#]);
    let why = fails(
        &mut outside,
        vec![register(1, "root"), request(1, "root/1"), accept],
    );
    assert!(why.contains("neither `accepted` nor a refused accept"), "{why}");
    let hold = BrokerMsg::Hold {
        ticket: 7,
        answerer: 0,
    };
    let mut outside = broker(&[REGISTERED, OFFERED, r#"{"do":[]}"#]);
    let why = fails(
        &mut outside,
        vec![register(1, "root"), request(1, "root/1"), hold],
    );
    assert!(why.contains("neither `held` nor a refused hold"), "{why}");
}

#[test]
fn every_named_value_must_be_one_the_protocol_lists() {
    let cases: [(&str, &str); 6] = [
        (
            r#"{"do":[{"settled":{"agent":1,"callId":"root/1","result":{"ok":true}}}]}"#,
            "a tool result is",
        ),
        (
            r#"{"do":[{"settled":{"agent":1,"callId":"root/1","result":{"error":{"code":"OOPS"}}}}]}"#,
            "\"OOPS\" is not an error code",
        ),
        (
            r#"{"do":[{"withdrawn":{"agent":1,"callId":"root/1","reason":"bored","message":null}}]}"#,
            "\"bored\" is not a reason to withdraw",
        ),
        (
            r#"{"do":[{"refused":{"answerer":"web","ticket":7,"what":"decline","reason":"x"}}]}"#,
            "\"decline\" is not something an answerer sends",
        ),
        (
            r#"{"do":[{"offer":{"answerer":"web","ticket":7,"callId":"root/1"}},{"declined":{"answerer":"web","ticket":7,"reason":"busy"}}]}"#,
            "\"busy\" is not a reason to decline",
        ),
        (
            r#"{"do":[{"spawned":{"owner":1,"child":"c","error":"tired"}}]}"#,
            "\"tired\" is not a registration error",
        ),
    ];
    for (reply, reason) in cases {
        let mut outside = broker(&[REGISTERED, reply]);
        let why = fails(&mut outside, vec![register(1, "root"), request(1, "root/1")]);
        assert!(why.contains(reason), "{reply}: {why}");
    }
}

#[test]
fn hello_and_status_replies_are_checked() {
    for (reply, reason) in [
        (r#"{"do":[]}"#, "names no protocol version"),
        (
            r#"{"protocol":1,"do":[{"cancel_timer":{"id":1}}]}"#,
            "its `do` must be empty",
        ),
        (r#"{"protocol":7,"do":[]}"#, "it speaks protocol 7"),
        (r#"{"protocol":1}"#, "missing field `do`"),
    ] {
        let failure = OutsideBroker::start(scripted(&[reply]), &config(), &life(), 0).unwrap_err();
        assert!(failure.reason.contains(reason), "{reply}: {}", failure.reason);
    }
    for (reply, reason) in [
        (r#"{"do":[]}"#, "must carry `open`"),
        (r#"{"open":{"root/1":"asleep"},"do":[]}"#, "\"asleep\" is neither"),
    ] {
        let failure = broker(&[reply]).status(0).unwrap_err();
        assert!(failure.reason.contains(reason), "{reply}: {}", failure.reason);
    }
    let open = broker(&[r#"{"open":{"root/1":"pending"},"do":[]}"#])
        .status(0)
        .unwrap();
    assert_eq!(open.get("root/1"), Some(&"pending"));
}

/// A verdict writes the event asksim's broker writes, with the mailbox place of
/// the message it is about; a refused accept reaches the answerer as a withdraw.
#[test]
fn verdicts_write_events_and_deliver_nothing() {
    let mut outside = broker(&[
        REGISTERED,
        OFFERED,
        r#"{"do":[{"accepted":{"answerer":"web","ticket":7}}]}"#,
        r#"{"do":[{"refused":{"answerer":"desk","ticket":7,"what":"accept","reason":"offer_timeout"}}]}"#,
    ]);
    let mut out = Out::new(0);
    for msg in [register(1, "root"), request(1, "root/1")] {
        outside.handle(msg, &mut out).unwrap();
    }
    out.drain().for_each(drop);
    out.reset(0, Some(12));
    outside
        .handle(
            BrokerMsg::Accept {
                ticket: 7,
                answerer: 0,
            },
            &mut out,
        )
        .unwrap();
    let effects: Vec<Effect> = out.drain().collect();
    assert!(matches!(
        effects.as_slice(),
        [Effect::Record(EventKind::Accept { call_id, mbox: Some(12), .. })] if call_id == "root/1"
    ));
    out.reset(0, Some(13));
    outside
        .handle(
            BrokerMsg::Accept {
                ticket: 7,
                answerer: 1,
            },
            &mut out,
        )
        .unwrap();
    let effects: Vec<Effect> = out.drain().collect();
    assert!(matches!(
        effects.as_slice(),
        [
            Effect::Record(EventKind::Refused { what, reason, .. }),
            Effect::Send(crate::protocol::Envelope::Answerer(1, crate::protocol::AnswererInput::Broker(crate::protocol::AnswererMsg::Withdraw { ticket: 7 }))),
        ] if what == "accept" && reason == "offer_timeout"
    ));
}

#[test]
fn asksims_own_state_machines_refuse_lines_asksim_never_writes() {
    let mut broker = ActorBroker::new();
    assert!(
        broker
            .handle_line("hello")
            .unwrap_err()
            .contains("not a broker message")
    );
    let register = r#"{"t":0.0,"t_ns":0,"msg":"register","agent":1,"name":"r","owner":null,"lineage":null,"turn":["1.1"]}"#;
    assert_eq!(
        broker.handle_line(register).unwrap_err(),
        "a message before hello"
    );
    let hello = r#"{"t":0.0,"t_ns":0,"msg":"hello","protocol":1,"role":"broker","life":1,"scenario":"s","seed":0,"config":{"answerers":["web"],"offer_timeout_ns":1000000000,"limits":{"open_calls_max":10,"agents_per_tree_max":10}}}"#;
    assert_eq!(broker.handle_line(hello).unwrap(), HELLO);
    assert!(
        broker
            .handle_line(r#"{"t":0.0,"t_ns":0,"msg":"timer","id":4}"#)
            .unwrap_err()
            .contains("no timer 4 runs")
    );
    let bad_turn = register.replace(r#"["1.1"]"#, r#"["x"]"#);
    assert!(
        broker
            .handle_line(&bad_turn)
            .unwrap_err()
            .contains("is not a turn")
    );
    let accept = r#"{"t":0.0,"t_ns":0,"msg":"accept","ticket":1,"answerer":"pager"}"#;
    assert!(
        broker
            .handle_line(accept)
            .unwrap_err()
            .contains("no answerer \"pager\"")
    );
    let mut answerer = ActorAnswerer::new(crate::policy::Policy::recommended_after(1.0));
    let offer = r#"{"t":0.0,"t_ns":0,"msg":"withdraw","ticket":1}"#;
    assert_eq!(answerer.handle_line(offer).unwrap_err(), "a message before hello");
}

#[test]
fn a_command_line_splits_as_a_shell_splits_it_and_quotes_back() {
    let endpoint = Endpoint::parse("python3 'my broker.py' --bug \"late accept\"").unwrap();
    assert_eq!(
        endpoint,
        Endpoint::Process(vec![
            "python3".into(),
            "my broker.py".into(),
            "--bug".into(),
            "late accept".into()
        ])
    );
    assert_eq!(Endpoint::parse(&endpoint.shell_text()), Ok(endpoint));
    assert!(Endpoint::parse("  ").unwrap_err().contains("empty"));
    assert!(
        Endpoint::parse("python3 'b.py")
            .unwrap_err()
            .contains("does not split")
    );
}

/// PROTOCOL.md 3.3: only a `NO_ANSWERER` withdrawal carries a message (the exact
/// withdrawal message); a `not_restorable` one tells nobody, so a message there
/// is a line asksim never expects, and a `NO_ANSWERER` one without it leaves its
/// agent waiting for an answer that cannot come.
#[test]
fn only_a_no_answerer_withdrawal_carries_a_message() {
    let restore = || {
        BrokerMsg::Restore(Box::new(crate::protocol::Restored {
            agent: 1,
            agent_name: "root".into(),
            call_id: "root/1".into(),
            ask: None,
        }))
    };
    let told = r#"{"do":[{"withdrawn":{"agent":null,"callId":"root/1","reason":"not_restorable","message":"{\"kind\":\"pending_question_withdrawn\",\"tool\":\"ask_user_question\",\"callId\":\"root/1\",\"reason\":\"NO_ANSWERER\"}"}}]}"#;
    let mut outside = broker(&[REGISTERED, told]);
    let why = fails(&mut outside, vec![register(1, "root"), restore()]);
    assert!(
        why.contains("root/1 withdrawn for `not_restorable` with a message"),
        "{why}"
    );
    let untold =
        r#"{"do":[{"withdrawn":{"agent":null,"callId":"root/1","reason":"not_restorable","message":null}}]}"#;
    let mut outside = broker(&[REGISTERED, untold]);
    let mut out = Out::new(0);
    for msg in [register(1, "root"), restore()] {
        outside
            .handle(msg, &mut out)
            .expect("a withdrawal that tells nobody is taken");
    }
}
